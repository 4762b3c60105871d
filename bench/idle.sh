#!/usr/bin/env bash
# Resident memory of idle client connections: N connections (default
# 10,000) that started up, ran one query (QUERY, default a point select
# from a 1,000-row table; QUERY= for none) and then send nothing, held by
# bench/idle.py.
# Prints keyclaim's resident set before and after, and the cost per
# connection.
#
#   bench/idle.sh
#   CONNECTIONS=2000 bench/idle.sh
#   BIN=/tmp/keyclaim-before bench/idle.sh   # an earlier build
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/server.sh
N="${CONNECTIONS:-10000}"
PORT="${KC_PORT:-55996}"
BIN="${BIN:-target/release/keyclaim}"
[ "$BIN" != target/release/keyclaim ] || cargo build --release --quiet
ulimit -n $((N + 1000))
KEYCLAIM_CONFIG=/dev/null KEYCLAIM_LISTEN="127.0.0.1:$PORT" KEYCLAIM_METRICS_LISTEN="" \
  KEYCLAIM_LOG_LEVEL=warn KEYCLAIM_SERVER_MAX_CONNECTIONS=$((N + 100)) "$BIN" >/tmp/idle-keyclaim.log 2>&1 &
KC_PID=$!
HOLDER=""
trap 'kill $KC_PID 2>/dev/null; [ -z "$HOLDER" ] || kill $HOLDER 2>/dev/null' EXIT
wait_ready "$PORT"
QUERY="${QUERY-SELECT * FROM idle_t WHERE id = 7}"
psql -q -h 127.0.0.1 -p "$PORT" -U keyclaim -d keyclaim \
  -c "CREATE TABLE idle_t (id integer PRIMARY KEY, v text)" \
  -c "INSERT INTO idle_t SELECT g, repeat('x', 100) FROM generate_series(1, 1000) g"
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
before=$(rss $KC_PID)
exec 3> >(python3 bench/idle.py 127.0.0.1 "$PORT" "$N" keyclaim keyclaim "$QUERY" > /tmp/idle-held.$$)
HOLDER=$!
for _ in $(seq 600); do grep -q ready /tmp/idle-held.$$ 2>/dev/null && break; sleep 0.5; done
grep -q ready /tmp/idle-held.$$ || { echo "the connections did not all start up"; exit 1; }
# Idle buffers are given back after a second without messages.
sleep 3
after=$(rss $KC_PID)
exec 3>&-
rm -f /tmp/idle-held.$$
awk -v b="$before" -v a="$after" -v n="$N" 'BEGIN {
  printf "keyclaim: %d idle connections: RSS %.1f MB -> %.1f MB, %.1f KB per connection\n", n, b/1024, a/1024, (a-b)/n }'
