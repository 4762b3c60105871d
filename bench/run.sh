#!/usr/bin/env bash
# pgbench through keyclaim and against PostgreSQL on the same machine, in one
# run, the two taking turns on each point: unique-key inserts and point
# selects by unique key (simple protocol, the key in a string literal; and
# prepared, the key built from a parameter: `'seed' || $1::text || '@example.com'`),
# point selects by primary key (prepared, extended and simple protocol), and
# updates by primary key, at 1, 8 and 32 clients. Prints a Markdown table with TPS and
# the keyclaim/PostgreSQL ratio.
#
# Each point runs ROUNDS times (default 3, taking turns on who goes first);
# the table has the median tps of each and the range of one round's ratio.
#
#   bench/run.sh            # 10 s per round, 3 rounds a point
#   SECONDS_PER_POINT=30 ROUNDS=5 bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${SECONDS_PER_POINT:-10}"
KC_PORT="${KC_PORT:-55999}"
source bench/lib.sh
source bench/rounds.sh

users_table "$PG_PORT" postgres postgres
users_table "$KC_PORT" keyclaim keyclaim

run() { # port user db script clients mode -> tps
  "$PGBENCH" -n -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -M "$6" -f "$4" -c "$5" -j "$(( $5 < 2 ? 1 : 2 ))" -T "$DURATION" 2>/dev/null \
    | awk '/^tps/ {print int($3)}'
}
echo "| workload | mode | clients | PostgreSQL tps | keyclaim tps | keyclaim / PostgreSQL | one round's ratio |"
echo "|---|---|---|---|---|---|---|"
pg() { run "$PG_PORT" postgres postgres "bench/pgbench/$workload.sql" "$clients" "$mode"; }
kc() { run "$KC_PORT" keyclaim keyclaim "bench/pgbench/$workload.sql" "$clients" "$mode"; }
for point in ${POINTS:-insert_unique:simple insert_unique_param:prepared select_unique:simple select_unique_param:prepared select_pk:prepared select_pk:extended select_pk:simple update_pk:prepared}; do
  workload=${point%%:*}
  mode=${point##*:}
  for clients in 1 8 32; do
    read -r pg_tps kc_tps median_ratio spread <<<"$(alternate pg kc)"
    echo "| $workload | $mode | $clients | $pg_tps | $kc_tps | $median_ratio | $spread |"
  done
done
