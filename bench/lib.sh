# Shared by the pgbench scripts: a release build of keyclaim on $KC_PORT
# and a throwaway PostgreSQL on $PG_PORT, both stopped on exit; pgbench is
# PostgreSQL's own ($PGBENCH).
source bench/server.sh
cargo build --release --quiet
# KC_BIN: another build to measure (default: the one just built).
KC_BIN="${KC_BIN:-target/release/keyclaim}"
PG_SPEC="$(scripts/pg-for-tests)"
PG_PORT="$(echo "$PG_SPEC" | sed -E 's/.*port=([0-9]+).*/\1/')"
KEYCLAIM_LISTEN="127.0.0.1:$KC_PORT" KEYCLAIM_LOG_LEVEL=warn "$KC_BIN" &
KC_PID=$!
trap 'kill $KC_PID 2>/dev/null; scripts/pg-for-tests stop' EXIT
wait_ready "$KC_PORT"
