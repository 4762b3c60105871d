# Sourced by the bench scripts: pgbench, and starting, waiting for and
# seeding the servers they measure. Defines functions only.
PGBENCH="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)/pgbench"

# start_keyclaim BINARY PORT: runs a keyclaim build on PORT with the
# built-in defaults (its metrics endpoint on, as by default, on PORT + 1000
# so that two builds can run side by side) and prints its pid.
start_keyclaim() {
  KEYCLAIM_CONFIG=/dev/null KEYCLAIM_LISTEN="127.0.0.1:$2" KEYCLAIM_METRICS_LISTEN="127.0.0.1:$(($2 + 1000))" \
    KEYCLAIM_LOG_LEVEL=warn "$1" >/dev/null 2>&1 &
  echo $!
}

# wait_ready PORT: waits up to 10 s for keyclaim on PORT to answer.
wait_ready() {
  for _ in $(seq 100); do
    psql -h 127.0.0.1 -p "$1" -U keyclaim -d keyclaim -c 'SELECT 1' >/dev/null 2>&1 && return
    sleep 0.1
  done
}

# users_table PORT USER DB: a fresh bench_users table, seeded with up to
# 10,000 rows (bench/pgbench/seed.sql) as the point workloads expect.
users_table() {
  psql -q -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -c "SET client_min_messages = warning" \
    -c "DROP TABLE IF EXISTS bench_users" \
    -c "CREATE TABLE bench_users (id bigint PRIMARY KEY, email text UNIQUE, name text)"
  "$PGBENCH" -n -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -f bench/pgbench/seed.sql -c 4 -t 5000 >/dev/null 2>&1
}
