//! keyclaim's integration tests, one binary: each module is a suite that
//! used to be a test binary of its own. Linking DataFusion into 38 binaries
//! took most of a clean build's time and about 15 GB of disk; one binary
//! links once. `cargo test --test suite <module>::` runs one suite.
//!
//! tests/metrics.rs stays a binary of its own: it installs the process's
//! global metrics recorder and checks exact counts, which the other suites'
//! statements would add to.

mod common;

mod adopt;
mod advisory_locks;
mod arrays;
mod cluster;
mod concurrency;
mod copy;
mod count_limits;
mod crash;
mod crash_process;
mod ddl_faults;
mod differential;
mod foreign_keys;
mod history;
mod interrupted_writes;
mod lwt_cost;
mod many_proxies;
mod orms;
mod pgbench;
mod plain_indexes;
mod query_engine;
mod row_locks;
mod sequences;
mod store_conformance;
mod takeover;
mod transactional_ddl;
mod transactions;
mod transfers;
mod wire_abuse;
mod wire_auth;
mod wire_protocol;
mod wire_row_description;
mod wire_server;
mod wire_session;
mod wire_sql;
mod write_queries;
