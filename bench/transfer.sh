#!/usr/bin/env bash
# A TPC-B-like transfer transaction (BEGIN; three UPDATEs by primary key;
# one INSERT; COMMIT), through keyclaim on the embedded store and against
# PostgreSQL on the same machine, in one run, at 1, 8 and 32 clients.
# Prints a Markdown table: TPS of each and the keyclaim/PostgreSQL ratio.
# (pgbench's own TPC-B needs tables without a primary key for its history;
# these tables give history one, which is all that differs. Transfers that
# fail with 40P01 or 40001 are retried, up to 10 times, as clients retry.)
#
#   bench/transfer.sh            # 10 s per point
#   SECONDS_PER_POINT=30 bench/transfer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${SECONDS_PER_POINT:-10}"
KC_PORT="${KC_PORT:-55998}"
source bench/lib.sh

DDL="CREATE TABLE bench_accounts (aid integer PRIMARY KEY, abalance bigint NOT NULL);
CREATE TABLE bench_tellers (tid integer PRIMARY KEY, tbalance bigint NOT NULL);
CREATE TABLE bench_branches (bid integer PRIMARY KEY, bbalance bigint NOT NULL);
CREATE TABLE bench_history (hid bigint PRIMARY KEY, tid integer, bid integer, aid integer, delta bigint);"
seed() { # port user db
  for t in "accounts aid abalance 10000" "tellers tid tbalance 100" "branches bid bbalance 10"; do
    set -- $t
    local sql="INSERT INTO bench_$1 VALUES"
    local sep=""
    for i in $(seq 1 "$4"); do sql="$sql$sep ($i, 0)"; sep=","; if (( i % 500 == 0 )); then
      psql -q -h 127.0.0.1 -p "$PORT" -U "$USER_" -d "$DB" -c "$sql"; sql="INSERT INTO bench_$1 VALUES"; sep=""; fi
    done
    if [[ -n "$sep" ]]; then psql -q -h 127.0.0.1 -p "$PORT" -U "$USER_" -d "$DB" -c "$sql"; fi
  done
}
psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "DROP TABLE IF EXISTS bench_accounts, bench_tellers, bench_branches, bench_history" -c "$DDL"
PORT=$PG_PORT USER_=postgres DB=postgres seed
psql -q -h 127.0.0.1 -p "$KC_PORT" -U keyclaim -d keyclaim -c "$DDL"
PORT=$KC_PORT USER_=keyclaim DB=keyclaim seed

run() { # port user db clients -> tps
  "$PGBENCH" -n --max-tries=10 -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -f bench/pgbench/transfer.sql -c "$4" -j "$(( $4 < 2 ? 1 : 2 ))" -T "$DURATION" 2>/dev/null \
    | awk '/^tps/ {print int($3)}'
}
echo "| workload | clients | PostgreSQL tps | keyclaim tps | keyclaim / PostgreSQL |"
echo "|---|---|---|---|---|"
for clients in 1 8 32; do
  pg=$(run "$PG_PORT" postgres postgres "$clients")
  kc=$(run "$KC_PORT" keyclaim keyclaim "$clients")
  ratio=$(awk -v a="$kc" -v b="$pg" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
  echo "| transfer | $clients | $pg | $kc | $ratio |"
done
# Every transfer moved the same delta through one account, teller and
# branch, and wrote it to history: the four sums agree on each side.
for side in "$PG_PORT postgres postgres" "$KC_PORT keyclaim keyclaim"; do
  set -- $side; P_=$1; U_=$2; D_=$3
  sums=$(for t in "accounts abalance" "tellers tbalance" "branches bbalance" "history delta"; do
    set -- $t; psql -qtA -h 127.0.0.1 -p "$P_" -U "$U_" -d "$D_" -c "SELECT $2 FROM bench_$1" 2>/dev/null | awk '{s+=$1} END {print s+0}'
  done | sort -u | wc -l)
  echo "balance sums agree on port $1: $([[ $sums == 1 ]] && echo yes || echo NO)"
done
