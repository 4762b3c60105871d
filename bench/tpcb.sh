#!/usr/bin/env bash
# pgbench's own TPC-B-like run, unmodified, through keyclaim on the
# embedded store and against PostgreSQL on the same machine, in one run:
# `pgbench -i -s $SCALE` on each (tables created without primary keys,
# COPY, VACUUM ANALYZE, ALTER TABLE ADD PRIMARY KEY), then the default
# script (BEGIN; UPDATE an account; SELECT it; UPDATE a teller and a
# branch; INSERT a history row; END) at 1, 8 and 32 clients. Transactions
# that fail with 40P01 or 40001 are retried (--max-tries=10), as clients
# retry. Prints a Markdown table (TPS of each and the keyclaim/PostgreSQL
# ratio), then checks the balance invariant on both sides: the account,
# teller, branch and history sums agree.
#
#   bench/tpcb.sh                     # scale 1, 10 s per point
#   SCALE=10 SECONDS_PER_POINT=30 bench/tpcb.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${SECONDS_PER_POINT:-10}"
SCALE="${SCALE:-1}"
KC_PORT="${KC_PORT:-55998}"
source bench/lib.sh
source bench/rounds.sh

PG_SIDE="$PG_PORT postgres postgres"
KC_SIDE="$KC_PORT keyclaim keyclaim"
for side in "$PG_SIDE" "$KC_SIDE"; do
  set -- $side
  "$PGBENCH" -i -q -s "$SCALE" -h 127.0.0.1 -p "$1" -U "$2" -d "$3" >/dev/null 2>&1
done

run() { # port user db clients -> tps (-n: the history keeps every run's rows)
  "$PGBENCH" -n --max-tries=10 -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -c "$4" -j "$(( $4 < 2 ? 1 : 2 ))" -T "$DURATION" 2>/dev/null \
    | awk '/^tps/ {print int($3)}'
}
echo "| clients | PostgreSQL tps | keyclaim tps | keyclaim / PostgreSQL |"
echo "|---|---|---|---|"
for clients in 1 8 32; do
  pg=$(run $PG_SIDE "$clients")
  kc=$(run $KC_SIDE "$clients")
  ratio=$(ratio "$kc" "$pg")
  echo "| $clients | $pg | $kc | $ratio |"
done
for side in "$PG_SIDE" "$KC_SIDE"; do
  set -- $side
  sums=$(psql -qtA -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(delta) FROM pgbench_history)")
  distinct=$(echo "$sums" | tr '|' '\n' | sort -u | wc -l)
  echo "balance sums agree on port $1: $([[ $distinct == 1 ]] && echo "yes ($sums)" || echo "NO ($sums)")"
done
