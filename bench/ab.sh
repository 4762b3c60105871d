#!/usr/bin/env bash
# This build against an earlier one, in one run, on the embedded store:
# pgbench unique-key inserts, updates by primary key (prepared), and
# point selects by unique key (simple
# protocol: their keys sit inside string literals) and by primary key
# (prepared and extended protocol) at 1, 8 and 32 clients, the two builds
# taking turns on each point. Prints a Markdown table with both TPS and the
# ratio this / earlier. Each point runs ROUNDS times (default 3, taking
# turns on who goes first): the medians, and the range of one round's ratio.
#
#   bench/ab.sh                 # against the build before transactions
#   BASE=<rev> SECONDS_PER_POINT=20 bench/ab.sh
#   BASE_BIN=/tmp/keyclaim-before bench/ab.sh   # a binary kept from before
#   NEW_BIN=/tmp/keyclaim-after BASE_BIN=... bench/ab.sh   # two kept binaries
#   POINTS="select_pk:prepared insert_unique:simple" bench/ab.sh   # some points only
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${BASE:-fbf9b61}"
DURATION="${SECONDS_PER_POINT:-10}"
NEW_PORT=55997
OLD_PORT=55998
source bench/server.sh
source bench/rounds.sh

# NEW_BIN: the build to measure, if not this tree's (built here).
NEW_BIN="${NEW_BIN:-target/release/keyclaim}"
[ "$NEW_BIN" != target/release/keyclaim ] || cargo build --release --quiet
trap 'kill $NEW_PID $OLD_PID 2>/dev/null' EXIT
# BASE_BIN: an earlier build's binary, kept from before a change (a copy of
# target/release/keyclaim); otherwise BASE is checked out and built.
OLD_BIN="${BASE_BIN:-target/ab-base/release/keyclaim}"
if [ -z "${BASE_BIN:-}" ]; then
  # The earlier build's sources, checked out once and kept for later runs.
  TREE="$PWD/target/ab-base/tree"
  [ -d "$TREE" ] || git worktree add --quiet --detach "$TREE" "$BASE"
  git -C "$TREE" checkout --quiet --detach "$BASE"
  CARGO_TARGET_DIR="$PWD/target/ab-base" cargo build --release --quiet --manifest-path "$TREE/Cargo.toml" --bin keyclaim
else
  BASE="$(basename "$BASE_BIN")"
fi

# Each with its metrics endpoint on (as by default: recording a statement's
# metrics is part of its cost).
NEW_PID=$(start_keyclaim "$NEW_BIN" $NEW_PORT)
OLD_PID=$(start_keyclaim "$OLD_BIN" $OLD_PORT)
for port in $NEW_PORT $OLD_PORT; do
  wait_ready "$port"
  users_table "$port" keyclaim keyclaim
done

run() { # port script clients mode -> tps
  "$PGBENCH" -n -h 127.0.0.1 -p "$1" -U keyclaim -d keyclaim -M "$4" -f "$2" -c "$3" -j "$(( $3 < 2 ? 1 : 2 ))" -T "$DURATION" 2>/dev/null \
    | awk '/^tps/ {print int($3)}'
}
echo "| workload | mode | clients | earlier ($BASE) tps | this build tps | this / earlier | one round's ratio |"
echo "|---|---|---|---|---|---|---|"
old() { run $OLD_PORT "bench/pgbench/$workload.sql" "$clients" "$mode"; }
new() { run $NEW_PORT "bench/pgbench/$workload.sql" "$clients" "$mode"; }
for point in ${POINTS:-insert_unique:simple update_pk:prepared select_unique:simple select_pk:prepared select_pk:extended}; do
  workload=${point%%:*}
  mode=${point##*:}
  for clients in 1 8 32; do
    read -r old_tps new_tps median_ratio spread <<<"$(alternate old new)"
    echo "| $workload | $mode | $clients | $old_tps | $new_tps | $median_ratio | $spread |"
  done
done
