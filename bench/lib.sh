# Shared by the pgbench scripts: a release build of keyclaim on $KC_PORT
# and a throwaway PostgreSQL on $PG_PORT, both stopped on exit; pgbench is
# PostgreSQL's own ($PGBENCH).
PGBENCH="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)/pgbench"
cargo build --release --quiet
PG_SPEC="$(scripts/pg-for-tests)"
PG_PORT="$(echo "$PG_SPEC" | sed -E 's/.*port=([0-9]+).*/\1/')"
KEYCLAIM_LISTEN="127.0.0.1:$KC_PORT" KEYCLAIM_LOG_LEVEL=warn target/release/keyclaim &
KC_PID=$!
trap 'kill $KC_PID 2>/dev/null; scripts/pg-for-tests stop' EXIT
for _ in $(seq 50); do psql -h 127.0.0.1 -p "$KC_PORT" -U keyclaim -d keyclaim -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
