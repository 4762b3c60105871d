#!/usr/bin/env bash
# pgbench through keyclaim and against PostgreSQL on the same machine, in one
# run: unique-key inserts and point selects by unique key at 1, 8 and 32
# clients. Prints a Markdown table with TPS and the keyclaim/PostgreSQL ratio.
#
#   bench/run.sh            # 10 s per point
#   SECONDS_PER_POINT=30 bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${SECONDS_PER_POINT:-10}"
KC_PORT="${KC_PORT:-55999}"
source bench/lib.sh

DDL="CREATE TABLE bench_users (id bigint PRIMARY KEY, email text UNIQUE, name text)"
psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "DROP TABLE IF EXISTS bench_users" -c "$DDL"
psql -q -h 127.0.0.1 -p "$KC_PORT" -U keyclaim -d keyclaim -c "$DDL"

run() { # port user db script clients -> tps
  "$PGBENCH" -n -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -f "$4" -c "$5" -j "$(( $5 < 2 ? 1 : 2 ))" -T "$DURATION" 2>/dev/null \
    | awk '/^tps/ {print int($3)}'
}
for port_user in "$PG_PORT postgres postgres" "$KC_PORT keyclaim keyclaim"; do
  set -- $port_user
  "$PGBENCH" -n -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -f bench/pgbench/seed.sql -c 4 -t 5000 >/dev/null 2>&1
done

echo "| workload | clients | PostgreSQL tps | keyclaim tps | keyclaim / PostgreSQL |"
echo "|---|---|---|---|---|"
for workload in insert_unique select_unique; do
  for clients in 1 8 32; do
    pg=$(run "$PG_PORT" postgres postgres "bench/pgbench/$workload.sql" "$clients")
    kc=$(run "$KC_PORT" keyclaim keyclaim "bench/pgbench/$workload.sql" "$clients")
    ratio=$(awk -v a="$kc" -v b="$pg" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    echo "| $workload | $clients | $pg | $kc | $ratio |"
  done
done
