#!/usr/bin/env bash
# The query engine beside PostgreSQL on the same machine, in one run, the
# two taking turns on each point: a foreign-key join by primary key, a
# GROUP BY over a 100,000-row table, and a point select the engine plans
# (a CTE) beside the fast path's, at 1 and 8 clients, extended protocol.
# Prints a Markdown table with TPS and the keyclaim/PostgreSQL ratio.
#
#   bench/query.sh          # 10 s per point
#   SECONDS_PER_POINT=30 bench/query.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${SECONDS_PER_POINT:-10}"
KC_PORT="${KC_PORT:-55998}"
source bench/lib.sh
source bench/rounds.sh

DDL=(
  "CREATE TABLE bench_authors (id integer PRIMARY KEY, name text)"
  "CREATE TABLE bench_books (id integer PRIMARY KEY, author_id integer REFERENCES bench_authors (id), title text, price numeric(8,2))"
)
SEED=(
  "INSERT INTO bench_authors SELECT g, 'author ' || g FROM generate_series(1, 1000) g"
)
for from in $(seq 1 10000 99999); do
  SEED+=("INSERT INTO bench_books SELECT g, 1 + g % 1000, 'book ' || g, (g % 5000) / 100.0 FROM generate_series($from, $((from + 9999))) g")
done
psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "DROP TABLE IF EXISTS bench_books" -c "DROP TABLE IF EXISTS bench_authors"
for target in "$PG_PORT postgres postgres" "$KC_PORT keyclaim keyclaim"; do
  set -- $target
  for sql in "${DDL[@]}" "${SEED[@]}"; do
    psql -q -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -c "$sql"
  done
done

run() { # port user db script clients -> tps
  "$PGBENCH" -n -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -M extended -f "$4" -c "$5" -j "$(( $5 < 2 ? 1 : 2 ))" -T "$DURATION" 2>/dev/null \
    | awk '/^tps/ {print int($3)}'
}
echo "| workload | clients | PostgreSQL tps | keyclaim tps | keyclaim / PostgreSQL |"
echo "|---|---|---|---|---|"
for workload in ${WORKLOADS:-join_pk group_by select_pk_engine select_pk_books}; do
  for clients in 1 8; do
    pg=$(run "$PG_PORT" postgres postgres "bench/pgbench/$workload.sql" "$clients")
    kc=$(run "$KC_PORT" keyclaim keyclaim "bench/pgbench/$workload.sql" "$clients")
    ratio=$(ratio "$kc" "$pg")
    echo "| $workload | $clients | $pg | $kc | $ratio |"
  done
done
