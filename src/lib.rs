//! keyclaim: a PostgreSQL-wire proxy that enforces PRIMARY KEY and UNIQUE on
//! a store that only offers per-partition compare-and-set (Cassandra /
//! ScyllaDB lightweight transactions, or the embedded in-memory store).
//!
//! The map, in the order a request travels:
//!
//! - [`server`]: TCP listener, connection limit, TLS, graceful shutdown.
//! - [`wire`]: each connection's message loop (pgwire's, with a guard that
//!   finds invalid UTF-8 in the raw bytes, output corked until the client
//!   is owed an answer in `wire::cork`, and buffers given back when idle),
//!   pgwire handlers (startup and
//!   auth, simple and extended query, COPY FROM STDIN in `wire::copy`,
//!   COPY TO STDOUT in `wire::copy_out`), parameter decoding, result
//!   descriptions that share the prepared statement's columns and row
//!   encoding (`wire::encode`), and the one place errors become
//!   ErrorResponses.
//! - [`session`]: one connection's settings and transaction block; session
//!   statements (SET, SHOW, BEGIN, COMMIT, SAVEPOINT, DISCARD, DEALLOCATE)
//!   as typed plans in `session::utility`; the advisory locks it holds,
//!   with PostgreSQL's counts, in `session::advisory`; its SQL cursors
//!   and their row streams in `session::cursors`.
//! - [`txn`]: the transaction context every statement runs in (implicit or
//!   the explicit block), admitted in one place (25P02), with its lock
//!   deadline from the session's lock_timeout; the open transaction's log
//!   of intents, which savepoints mark (design: docs/transactions.md).
//! - [`stop`]: cancel and statement_timeout reach a write only at its safe
//!   points, so an interrupted write is undone rather than cut off.
//! - [`engine`]: one statement as named stages: parse, plan, admit, bind,
//!   run, each stage given one statement context (`engine::ctx`); plans
//!   kept by statement text for texts sent again, and by shape for simple
//!   queries that differ only in their literal values (`engine::plan_cache`);
//!   `engine::txn` mints, commits, aborts and trims transactions;
//!   `engine::ddl` changes the catalog (waiting for another block's pending
//!   change, folding decided ones, removing storage nothing names);
//!   `engine::alter` runs ALTER TABLE as changes of a definition, its
//!   column forms (ADD, DROP, RENAME, SET DATA TYPE) in `engine::columns`;
//!   `engine::rename` moves a table's or sequence's definition to a new
//!   name (what names it following) and renames indexes;
//!   `engine::indexes` publishes a plain index (CREATE INDEX), builds its
//!   entries over the rows already there and marks it built;
//!   `engine::truncate` empties tables by pointing them at fresh storage;
//!   `engine::cursor` plans DECLARE's query as any SELECT and runs
//!   DECLARE and FETCH;
//!   `engine::sweep` removes storage no catalog entry names (left by an
//!   unknown outcome or a dead proxy), after later DDL;
//!   `engine::found` plans and runs the query a write takes its rows from
//!   (`INSERT ... SELECT`, `UPDATE ... FROM`, `DELETE ... USING`,
//!   subqueries in UPDATE and DELETE) before the write stage;
//!   `engine::sequence` keeps sequence counters (blocks of values reserved
//!   by compare-and-set) and prepares a statement's sequence functions;
//!   `engine::advisory` runs the `pg_advisory_*` functions and fences the
//!   commits of sessions that hold advisory locks
//!   (design: docs/advisory_locks.md);
//!   `engine::count_limits` runs `keyclaim.add_count_limit` /
//!   `drop_count_limit` and gives a table's rows their slots when it gets
//!   a limit (design: docs/count_limits.md);
//!   `engine::query` is the query engine (Apache DataFusion) for the reads
//!   the fast path does not answer (joins, aggregates, subqueries, CTEs, set
//!   operations, windows, expressions the single-table evaluator lacks):
//!   syntax rules that make its answers PostgreSQL's, comparisons
//!   PostgreSQL has no operator for refused before type coercion
//!   (`query::comparisons`), casts of fractions to integers that round
//!   (`query::rounding_casts`), parameters of the types their client
//!   declared (`query::declared`),
//!   table providers that read through the statement's `ReadView` and turn
//!   key filters into point reads, and their scans (`query::scan`), which
//!   read by key the keys a hash join's build side names (a lookup join);
//!   a plan optimized once and bound at each execution where its
//!   optimization does not depend on the time; Arrow type mapping, error mapping,
//!   subquery rewrites DataFusion can decorrelate (`query::subqueries`,
//!   and `query::lifted_ctes` for a correlated subquery's own WITH),
//!   functions in FROM as one-row subqueries (`query::from_functions`,
//!   with PostgreSQL's generate_series in `query::series`), PostgreSQL's
//!   date/time field functions (`query::dates`: EXTRACT, date_part,
//!   date_trunc, AT TIME ZONE), JSON operators (`query::json`) and LIKE
//!   with any ESCAPE (`query::like`), computed row by row
//!   (`query::row_fn`), the table
//!   column each result column is, for RowDescription (`query::origins`),
//!   and pg_catalog / information_schema with the catalog functions,
//!   built per execution from a snapshot of the catalog (`query::system`;
//!   `unnest` of a catalog row's key array runs as a join with a hidden
//!   relation of its elements, `query::from_functions`); a sequence read
//!   as a table is one row of its counter (`query::sequence_table`).
//! - [`sql`]: parsing, planning, expression evaluation; `sql::copy` reads
//!   COPY's options and reads and writes its text and CSV formats; what
//!   sqlparser misreads or lacks is rewritten token by token before it
//!   parses: `sql::maintenance` (VACUUM, ANALYZE), `sql::alter_sequence`,
//!   `sql::fetch` (FETCH without a direction, MOVE), `sql::overriding`
//!   (INSERT ... OVERRIDING), `sql::conflict_where` (ON CONFLICT (cols)
//!   WHERE ...) and `sql::sequence_options` (options in any order, an
//!   identity's SEQUENCE NAME, DROP IDENTITY); `sql::shape` finds a simple query's shape
//!   (its comparison, VALUES and IN-list literals as parameters) by
//!   scanning its text, without parsing it.
//! - [`catalog`]: table definitions and constraint names, kept in the store;
//!   each proxy caches them and re-reads after DDL elsewhere (catalog epoch).
//!   An entry may carry a block's pending change (`catalog::entry`), seen
//!   by others once its transaction commits: DDL is transactional; a
//!   change checked against rows marks it exclusive, and other sessions'
//!   lookups of the table wait for the block. A
//!   sequence is a relation there too (`catalog::sequence`). A table
//!   without a primary key keys its rows by a hidden row id
//!   (`catalog::row_id`). A column's
//!   slot in stored rows and its storage name (`catalog::layout`) let
//!   columns be added, dropped, renamed and retyped between integer
//!   widths without rewriting rows; CHECK
//!   constraints are `catalog::check` (declared, compiled and printed by
//!   `sql::check`); a partial unique index's WHERE is
//!   `catalog::predicate`, decided from a row's values alone. What a claim
//!   is on, a UNIQUE constraint or a count limit's slot, is
//!   `catalog::count_limit::ClaimOn`.
//! - [`claims`]: the lease-and-verify claim protocol (design: claims.md),
//!   with its exhaustive model check beside it (`claims::model`, tests only);
//!   `claims::intents` (transaction ids, what an intent means to whoever
//!   meets it, heartbeats, age-ordered waits), `claims::read_view` (what
//!   one statement's reads see: each row as of the statement's snapshot,
//!   from commit stamps given by `claims::clock` and the previous state a
//!   row keeps), `claims::txn_write`
//!   (writing, undoing and finishing a transaction's intents) and
//!   `claims::index` (a plain index's entries, added by every writer
//!   before its row, so a lookup that checks each row it finds is exact),
//!   `claims::advisory` (advisory lock partitions: acquire, release,
//!   break a gone holder after fencing its transactions, register a
//!   holder's transaction before its COMMIT) and `claims::slots` (a row
//!   joining a group of a count limit takes one of its slots; a full group
//!   is refused only once two reads of every slot agree); `claims::wakeups`
//!   cuts a writer's poll short when the transaction it waits for is this
//!   proxy's and closes.
//! - [`store`]: the `Store` trait (LWT primitives, and plain writes and
//!   reads of index entries), the embedded `memory`
//!   store, `cassandra` (Cassandra / ScyllaDB through the scylla driver:
//!   session, CQL text, prepared statements, values, error mapping,
//!   `reach`, which fails a request at once when no quorum of replicas is
//!   reachable, adoption of existing tables), and `layer`, one decorator for what wraps
//!   store operations: `counting` (LWTs and reads per statement, for
//!   metrics) and `faults` (seeded fault injection, for tests).
//! - [`metrics`]: the Prometheus endpoint and per-statement accounting.
//! - [`types`]: SQL types and values, one file per concern: `sql_type`
//!   (DDL types, OIDs, typmods), `text` (input and output functions) with
//!   `float`, `numeric`, `bytea`, `datetime` and `json` for their families,
//!   `binary` (wire format), `cast`, `compare`, `key` (key bytes) and
//!   `array` (one-dimensional arrays: OIDs, text and binary formats).
//! - [`error`]: the error type every failure becomes, with its SQLSTATE.
//! - [`config`]: the TOML config with `KEYCLAIM_*` env overrides.
#![deny(clippy::print_stdout)]
// SqlError carries every ErrorResponse field PostgreSQL sends; it travels
// by value on the error path only, where its size costs nothing measurable.
#![allow(clippy::result_large_err)]

/// mimalloc rather than the system's malloc, for every program built on
/// keyclaim (the server, its benchmarks and tests): statements allocate and
/// free many small values, often on different worker threads
/// (docs/performance.md says what it bought).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod catalog;
pub mod claims;
pub mod config;
pub mod engine;
pub mod error;
pub mod metrics;
pub mod server;
pub mod session;
pub mod sql;
pub mod stop;
pub mod store;
pub mod txn;
pub mod types;
pub mod wire;

/// What `SELECT version()` answers: a PostgreSQL-looking string that clients
/// parse for a server version (`server.server_version`), naming keyclaim.
pub fn version_string() -> String {
    format!(
        "PostgreSQL {} (keyclaim {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit",
        session::settings::server_version().0,
        env!("CARGO_PKG_VERSION")
    )
}
