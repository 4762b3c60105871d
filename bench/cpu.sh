#!/usr/bin/env bash
# The server's CPU time per statement, PostgreSQL's backend against
# keyclaim on the embedded store, in one run: one pgbench client runs N
# statements of each workload, and the server's user and system time
# (from /proc) is divided by N. A single client waits for every answer, so
# its rate is the sum of the client's, the kernel's and the server's time
# per statement; this shows the server's share, which varies far less from
# run to run than a rate on a shared machine. With BASE_BIN, an earlier
# keyclaim binary is measured too. Each point runs ROUNDS times (default
# 3), the sides taking turns on who goes first; the medians are printed.
#
#   bench/cpu.sh                                  # 30,000 statements a point
#   STATEMENTS=100000 BASE_BIN=/tmp/keyclaim-before bench/cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N="${STATEMENTS:-30000}"
KC_PORT="${KC_PORT:-55999}"
BASE_PORT=55996
source bench/lib.sh
source bench/rounds.sh

sides="pg kc"
if [ -n "${BASE_BIN:-}" ]; then
  BASE_PID=$(start_keyclaim "$BASE_BIN" $BASE_PORT)
  trap 'kill $KC_PID $BASE_PID 2>/dev/null; scripts/pg-for-tests stop' EXIT
  wait_ready $BASE_PORT
  sides="pg base kc"
fi
PG_MAIN="$(head -1 "${KEYCLAIM_TEST_PG_DATA:-/tmp/keyclaim-test-pg}/postmaster.pid")"
TICK="$(getconf CLK_TCK)"

# side -> "port user db pid fields": PostgreSQL's backend for the pgbench
# connection is a child of the postmaster, its time counted there (cutime,
# cstime) once it exits; keyclaim's is its own (utime, stime).
conn() {
  case $1 in
    pg) echo "$PG_PORT postgres postgres $PG_MAIN 16 17" ;;
    kc) echo "$KC_PORT keyclaim keyclaim $KC_PID 14 15" ;;
    base) echo "$BASE_PORT keyclaim keyclaim $BASE_PID 14 15" ;;
  esac
}
for side in $sides; do
  read -r port user db _ _ _ <<<"$(conn "$side")"
  users_table "$port" "$user" "$db"
done

cpu() { # pid fields -> "user system" in clock ticks
  awk -v u="$2" -v s="$3" '{print $u, $s}' "/proc/$1/stat"
}
measure() { # side script mode -> "tps user_us system_us"
  local port user db pid uf sf u0 s0 u1 s1 tps
  read -r port user db pid uf sf <<<"$(conn "$1")"
  read -r u0 s0 <<<"$(cpu "$pid" "$uf" "$sf")"
  tps=$("$PGBENCH" -n -h 127.0.0.1 -p "$port" -U "$user" -M "$3" -f "bench/pgbench/$2.sql" -c 1 -t "$N" "$db" 2>/dev/null |
    awk '/^tps/ {print int($3)}')
  sleep 0.3 # PostgreSQL's backend exits and is counted
  read -r u1 s1 <<<"$(cpu "$pid" "$uf" "$sf")"
  echo "$tps $(((u1 - u0) * 1000000 / TICK / N)) $(((s1 - s0) * 1000000 / TICK / N))"
}

# Each point runs ROUNDS times (bench/rounds.sh), the sides taking turns
# on who goes first; the table has each side's median.
echo "| workload | mode | side | tps (1 client) | server user µs / statement | server system µs / statement |"
echo "|---|---|---|---|---|---|"
for point in ${POINTS:-select_pk:prepared select_pk:extended select_pk:simple insert_unique:simple}; do
  workload=${point%%:*}
  mode=${point##*:}
  declare -A tps=() user=() sys=()
  order="$sides"
  for _ in $(seq "$ROUNDS"); do
    for side in $order; do
      read -r t u s <<<"$(measure "$side" "$workload" "$mode")"
      tps[$side]+="$t "
      user[$side]+="$u "
      sys[$side]+="$s "
    done
    order="$(echo "$order" | awk '{for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : "")}')"
  done
  for side in $sides; do
    # shellcheck disable=SC2086 # the lists are words
    echo "| $workload | $mode | $side | $(median ${tps[$side]}) | $(median ${user[$side]}) | $(median ${sys[$side]}) |"
  done
  unset tps user sys
done
