//! The engine: one SQL statement from text to outcome, as named stages.
//!
//! `prepare` parses and plans (and so can describe parameters and result
//! columns before anything runs); `execute` checks the session state, runs the
//! plan against the store through the claim protocol, and hands back rows or
//! a command tag. The wire layer only translates between this and pgwire.

use std::sync::Arc;

mod adopt;
mod advisory;
mod alter;
mod columns;
mod count_limits;
mod ctx;
pub(crate) mod cursor;
mod ddl;
mod env;
mod foreign_keys;
mod found;
mod indexes;
mod lock;
mod plan_cache;
pub(crate) mod query;
mod read;
mod rename;
mod select;
pub mod sequence;
pub mod sweep;
mod truncate;
mod txn;
mod write;

use std::collections::HashMap;
use std::time::Instant;

use futures::stream::{BoxStream, StreamExt};
use futures::FutureExt;
use sqlparser::ast::Statement;

use crate::catalog::{Catalog, TableDef};
use crate::claims::intents::Peers;
use crate::claims::read_view::ReadView;
use crate::claims::{self, ClaimConfig, ClaimStats};
use crate::error::{SqlError, SqlResult};
use crate::session::{Session, Utility};
use crate::sql::expr::{EvalCtx, Expr, Loc, Params};
use crate::sql::plan::{table_name, Plan, Planner, Tables};
use crate::sql::shape::Shape;
use crate::stop::Stop;
use crate::store::{Store, TxnId};
use crate::txn::{Mode, OpenTxn};
use crate::types::{SqlType, Value};
use ctx::StmtCtx;
use env::SessionEnv;
use write::Written;

/// A result column: its name and type, and the table column it is, if
/// it is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    /// Sent in RowDescription, as PostgreSQL sends it, for drivers'
    /// `getTableName` / `getColumnName` and ORMs that map results back to
    /// tables; None (sent as 0) for anything computed.
    pub origin: Option<ColumnOrigin>,
}

/// Where a result column comes from: a table's OID (as pg_class shows it)
/// and the column's attnum (as pg_attribute shows it: from 1, in order,
/// with dropped columns' numbers left out: `catalog::layout`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ColumnOrigin {
    pub table_oid: u32,
    pub attnum: i16,
}

impl ColumnOrigin {
    /// Column `index` (from 0) of table `t`.
    pub fn of(t: &TableDef, index: usize) -> Option<ColumnOrigin> {
        Some(ColumnOrigin {
            table_oid: query::system::oids::relation(t),
            attnum: i16::try_from(t.attnum(index)).ok()?,
        })
    }
}

impl Column {
    /// A column computed by an expression: no table column.
    pub fn computed(name: impl Into<String>, ty: SqlType) -> Column {
        Column {
            name: name.into(),
            ty,
            origin: None,
        }
    }

    /// Column `index` (from 0) of table `t`, under its own name.
    pub fn of_table(t: &TableDef, index: usize) -> Column {
        let c = &t.columns[index];
        Column {
            name: c.name.clone(),
            ty: c.ty.clone(),
            origin: ColumnOrigin::of(t, index),
        }
    }

    /// This column, coming from `origin`.
    pub fn from_origin(mut self, origin: Option<ColumnOrigin>) -> Column {
        self.origin = origin;
        self
    }
}

/// Rows streamed to the client one at a time.
pub type RowStream = BoxStream<'static, SqlResult<Vec<Value>>>;

/// A parsed and planned statement, ready to bind and execute any number of times.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    /// Parameter types, inferred from the table's columns where the client sent none.
    pub param_types: Vec<SqlType>,
    /// Result columns; empty when the statement returns no rows. Shared
    /// with every execution's row stream, so running copies nothing.
    pub columns: Arc<Vec<Column>>,
    pub(crate) plan: Arc<crate::sql::plan::Plan>,
}

/// What a statement produced.
pub enum Outcome {
    /// A row set. `tag` is the command word(s) before the row count:
    /// "SELECT", or "INSERT 0" / "UPDATE" / "DELETE" for RETURNING.
    Rows {
        columns: Arc<Vec<Column>>,
        rows: RowStream,
        tag: String,
    },
    /// A complete command tag such as "INSERT 0 3" or "CREATE TABLE".
    Command { tag: String },
    /// BEGIN / START TRANSACTION.
    TxnStart { tag: String },
    /// COMMIT / ROLLBACK.
    TxnEnd { tag: String },
    /// DEALLOCATE name / ALL (None): the wire layer owns the client's
    /// prepared statements and removes them.
    Deallocate { name: Option<String> },
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Rows { columns, tag, .. } => f
                .debug_struct("Rows")
                .field("columns", columns)
                .field("tag", tag)
                .finish(),
            Outcome::Command { tag } => write!(f, "Command({tag})"),
            Outcome::TxnStart { tag } => write!(f, "TxnStart({tag})"),
            Outcome::TxnEnd { tag } => write!(f, "TxnEnd({tag})"),
            Outcome::Deallocate { name } => write!(f, "Deallocate({name:?})"),
        }
    }
}

/// An outcome plus the notices (WARNING, NOTICE) to send before it.
#[derive(Debug)]
pub struct Executed {
    pub outcome: Outcome,
    pub notices: Vec<Notice>,
}

impl Executed {
    pub fn new(outcome: Outcome) -> Self {
        Executed {
            outcome,
            notices: Vec::new(),
        }
    }
}

/// A NoticeResponse: severity ("WARNING", "NOTICE"), SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
}

/// Settings of the claim protocol and execution limits.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The lease L: an unbacked claim younger than this is waited on, older is fenced.
    pub lease: std::time::Duration,
    /// How long a statement waits on another's in-flight claim before 55P03.
    pub lock_timeout: std::time::Duration,
    /// Retries of one step after an unknown outcome before answering 40003.
    pub max_retries: u32,
    /// Rows fetched per store page when scanning.
    pub scan_page: usize,
    /// When the store is shared with other proxies: how often (at most) to
    /// check the catalog for their DDL. None: this process is the only one.
    pub catalog_refresh: Option<std::time::Duration>,
    /// The largest offset between the clocks of proxies sharing the store:
    /// a statement's snapshot reads this far ahead, twice (`claims::clock`).
    pub max_clock_offset: std::time::Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            lease: std::time::Duration::from_secs(5),
            lock_timeout: std::time::Duration::from_secs(30),
            max_retries: 5,
            scan_page: 256,
            catalog_refresh: None,
            max_clock_offset: std::time::Duration::ZERO,
        }
    }
}

/// The engine shared by every connection of one proxy process.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    catalog: Catalog,
    claims: ClaimConfig,
    stats: ClaimStats,
    scan_page: usize,
    /// This proxy's id and open transactions, and how others' are judged.
    peers: Arc<Peers>,
    /// This proxy's blocks of sequence values.
    sequences: sequence::Sequences,
    /// DataFusion, for the reads the fast path does not answer.
    query: query::QueryEngine,
    /// The advisory locks each session of this proxy holds, by its holder
    /// id, as of its last statement: what pg_locks lists.
    shown_locks: dashmap::DashMap<uuid::Uuid, Vec<query::ShownLock>>,
    /// When this proxy last swept storage no table uses.
    sweeps: sweep::Sweeps,
    /// Plans by statement text, for texts sent again.
    plans: plan_cache::PlanCache,
}

/// Tables resolved before planning, so the planner itself never waits.
struct Resolved(HashMap<String, Arc<TableDef>>);

impl Tables for Resolved {
    fn get(&self, name: &str) -> SqlResult<Arc<TableDef>> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| SqlError::undefined_table(name))
    }
}

impl Engine {
    pub fn new(store: Arc<dyn Store>, config: EngineConfig) -> Engine {
        // Every store operation is counted per statement, for metrics.
        let store: Arc<dyn Store> = Arc::new(crate::store::counting::CountingStore::new(store));
        let peers = Arc::new(Peers::new(config.lease));
        let engine = Engine {
            inner: Arc::new(Inner {
                catalog: Catalog::new(store.clone(), config.catalog_refresh)
                    .waiting_for_holders(peers.clone(), config.lock_timeout),
                sequences: sequence::Sequences::new(store.clone()),
                store,
                claims: ClaimConfig {
                    lease: config.lease,
                    lock_timeout: config.lock_timeout,
                    max_retries: config.max_retries,
                    max_clock_offset: config.max_clock_offset,
                },
                stats: ClaimStats::default(),
                scan_page: config.scan_page.max(1),
                peers,
                query: query::QueryEngine::new(),
                shown_locks: dashmap::DashMap::new(),
                sweeps: sweep::Sweeps::default(),
                plans: plan_cache::PlanCache::default(),
            }),
        };
        engine.keep_heartbeat();
        engine
    }

    /// Tell other proxies this one is alive, every quarter lease, for as
    /// long as the engine exists: their writers wait for this proxy's open
    /// transactions meanwhile, and abort them once it falls silent.
    fn keep_heartbeat(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            loop {
                let Some(inner) = weak.upgrade() else { return };
                let every = inner.peers.heartbeat_every();
                let beat = inner
                    .store
                    .write_heartbeat(inner.peers.proxy, crate::claims::now_ms());
                if let Err(e) = beat.await {
                    tracing::debug!(cause = %e, "heartbeat not written");
                }
                drop(inner);
                tokio::time::sleep(every).await;
            }
        });
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Serve an existing CQL table and enforce its declared UNIQUE
    /// constraints (`[[store.adopt]]`); repeating it is harmless.
    pub async fn adopt(&self, entry: &crate::config::AdoptConfig) -> SqlResult<()> {
        let ddl = self.ddl(None, None, claims::now_ms());
        adopt::adopt(&ddl, entry).await
    }

    /// A DDL statement's context: inside a block, `open` is the block's
    /// transaction and the changes become its pending changes.
    fn ddl<'a>(
        &'a self,
        open: Option<&'a OpenTxn>,
        deadline: Option<Instant>,
        born_ms: u64,
    ) -> ddl::Ddl<'a> {
        let inner = &self.inner;
        ddl::Ddl {
            catalog: &inner.catalog,
            store: inner.store.as_ref(),
            claims: &inner.claims,
            stats: &inner.stats,
            peers: Some(&inner.peers),
            open,
            deadline: deadline.unwrap_or_else(|| Instant::now() + inner.claims.lock_timeout),
            born_ms,
            page: inner.scan_page,
        }
    }

    /// Removes storage at least `min_age` old that no table uses (see
    /// [`sweep`]); how many it removed.
    pub async fn sweep_storage(&self, min_age: std::time::Duration) -> SqlResult<usize> {
        sweep::sweep(self.inner.store.as_ref(), &self.inner.catalog, min_age).await
    }

    /// Starts a sweep in the background when this proxy's is due: DDL that
    /// makes or removes storage is when leftovers are worth looking for.
    fn sweep_soon(&self) {
        if !self.inner.sweeps.due() {
            return;
        }
        let engine = self.clone();
        tokio::spawn(async move {
            if let Err(e) = engine.sweep_storage(sweep::ORPHAN_AGE).await {
                tracing::warn!(cause = %e.message, "the sweep for storage no table uses stopped");
            }
        });
    }

    /// Protocol counters (conflicts, waits, fences, retries, unknown outcomes).
    pub fn stats(&self) -> &ClaimStats {
        &self.inner.stats
    }

    /// Parse and plan every statement in `sql`, outside any transaction.
    /// `hints` are the parameter types the client sent in Parse (None where
    /// it sent 0 / unspecified).
    /// Table `name` as transaction `own` sees it (COPY resolves its
    /// columns with it).
    pub async fn table(&self, name: &str, own: Option<TxnId>) -> SqlResult<Option<Arc<TableDef>>> {
        self.inner.catalog.lookup(name, own).await
    }

    pub async fn prepare(&self, sql: &str, hints: &[Option<SqlType>]) -> SqlResult<Vec<Prepared>> {
        self.prepare_in(sql, hints, None).await
    }

    /// As [`prepare`](Self::prepare), seeing the tables as transaction
    /// `own` (the connection's open block, if any) sees them: its own
    /// uncommitted DDL included.
    pub async fn prepare_in(
        &self,
        sql: &str,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
    ) -> SqlResult<Vec<Prepared>> {
        if let Some(kept) = self.kept_plan(sql, hints, own).await? {
            return Ok(vec![kept]);
        }
        let statements = crate::sql::parse(sql)?;
        let mut out = Vec::with_capacity(statements.len());
        for stmt in statements {
            out.push(self.prepare_statement(stmt, sql, hints, own).await?);
        }
        if let [one] = out.as_slice() {
            self.keep_plan(sql, hints, one);
        }
        Ok(out)
    }

    /// The plan of `sql` (one statement, parameter types `hints`) kept from
    /// an earlier planning, if the tables it uses are still as it saw them
    /// from transaction `own`.
    pub async fn kept_plan(
        &self,
        sql: &str,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
    ) -> SqlResult<Option<Prepared>> {
        let kept = self.kept(sql, hints, own).await?;
        if kept.is_some() {
            crate::metrics::plan_found("text");
        }
        Ok(kept)
    }

    /// The plan kept for `sql` with `hints`, if still good from `own`.
    async fn kept(
        &self,
        sql: &str,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
    ) -> SqlResult<Option<Prepared>> {
        let Some(kept) = self.inner.plans.get(sql, hints) else {
            return Ok(None);
        };
        Ok((!self.is_stale(&kept, own).await?).then_some(kept))
    }

    /// Keeps `prepared`, the plan of `sql` (one statement, with parameter
    /// types `hints`), for the next time the same text comes.
    pub fn keep_plan(&self, sql: &str, hints: &[Option<SqlType>], prepared: &Prepared) {
        self.inner.plans.put(sql, hints, prepared);
    }

    /// The plan of a simple Query's shape, kept or made now, with its
    /// parameters' values; None sends the text the ordinary way, which
    /// also reports any error as the client's text has it (a shape that
    /// does not plan, a literal its parameter's type does not read).
    /// Never an error of its own, so a shape changes no answer.
    pub async fn shaped_plan(
        &self,
        shape: &Shape,
        own: Option<TxnId>,
    ) -> SqlResult<Option<(Prepared, Vec<Value>)>> {
        let plans = &self.inner.plans;
        let (text, hints) = (shape.text.as_str(), shape.hints.as_slice());
        if plans.refused(text, hints) {
            return Ok(None);
        }
        let prepared = match self.kept(text, hints, own).await {
            Ok(Some(kept)) => {
                crate::metrics::plan_found("shape");
                kept
            }
            Ok(None) => {
                let planned = async {
                    let mut statements = crate::sql::parse(text)?;
                    match (statements.pop(), statements.is_empty()) {
                        (Some(stmt), true) => Box::pin(self.plan(stmt, hints, own, text)).await,
                        _ => Err(SqlError::syntax("not one statement")),
                    }
                };
                match planned.await {
                    // Only single-table plans: the query engine types
                    // text-family parameters by their context
                    // (`query::declared`), and its statements have not
                    // been checked against PostgreSQL through shapes, so
                    // they are planned with their literals.
                    Ok(prepared)
                        if prepared.plan.single_table() && plans.put(text, hints, &prepared) =>
                    {
                        crate::metrics::plan_found("planned");
                        prepared
                    }
                    Err(e) if e.is_transient() => return Ok(None),
                    Ok(_) | Err(_) => {
                        plans.refuse(text, hints);
                        return Ok(None);
                    }
                }
            }
            Err(_) => return Ok(None),
        };
        let values = shape
            .values
            .iter()
            .zip(&prepared.param_types)
            .map(|(value, ty)| Value::parse_text(ty, value).ok())
            .collect::<Option<Vec<Value>>>();
        Ok(values.map(|values| (prepared, values)))
    }

    /// Plan one statement already parsed from `source` (the text the client
    /// sent, against which error positions are reported), with the tables
    /// as transaction `own` sees them.
    ///
    /// Not an async fn, which would hold the statement twice (its argument
    /// and the planning future's).
    pub fn prepare_statement<'a>(
        &'a self,
        stmt: Statement,
        source: &'a str,
        hints: &'a [Option<SqlType>],
        own: Option<TxnId>,
    ) -> impl std::future::Future<Output = SqlResult<Prepared>> + 'a {
        let kind = statement_kind(&stmt);
        let started = Instant::now();
        self.plan(stmt, hints, own, source).map(move |planned| {
            if planned.is_ok() {
                crate::metrics::plan_found("planned");
            }
            planned.map_err(|e| {
                // Refused while planned (an unknown table, a catalog the
                // store did not answer for): a statement all the same, so
                // the metrics show the failures a store outage causes.
                crate::metrics::statement(kind, e.code, started.elapsed(), Default::default());
                e.locate(source)
            })
        })
    }

    async fn plan(
        &self,
        stmt: Statement,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
        source: &str,
    ) -> SqlResult<Prepared> {
        let sql = stmt.to_string();
        if let Statement::Query(q) = &stmt {
            if query::routes(q) {
                // Boxed: DataFusion's planning futures are large, and a
                // statement's future lives on a runtime worker's stack.
                return Box::pin(self.plan_query(&stmt, sql, hints, own, source)).await;
            }
        }
        if let Some(cursor) = cursor::parse(&stmt) {
            return Box::pin(self.plan_cursor(cursor?, sql, hints, own, source)).await;
        }
        if let Some(utility) = Utility::plan(&stmt) {
            let utility = utility?;
            return Ok(Prepared {
                sql,
                param_types: Vec::new(),
                columns: Arc::new(utility.columns()),
                plan: Arc::new(Plan::Utility(utility)),
            });
        }
        let needs = found::needs(&stmt, false)?;
        let planned = match self.plan_one_table(&stmt, hints, own, source, needs).await {
            // The single-table evaluator lacks one of the statement's
            // expressions (`EXTRACT`, `->>`, `date_trunc`, ...): the query
            // engine runs the query, or finds the write's rows and computes
            // its values. A locking SELECT stays the fast path's.
            Err(e) if e.beyond_fast_path => match &stmt {
                Statement::Query(q) if q.locks.is_empty() => {
                    return Box::pin(self.plan_query(&stmt, sql, hints, own, source)).await;
                }
                _ => match found::needs(&stmt, true)? {
                    Some(needs) => {
                        let planned = self.plan_one_table(&stmt, hints, own, source, Some(needs));
                        Box::pin(planned).await
                    }
                    None => Err(e),
                },
            },
            planned => planned,
        };
        // The text goes with the plan (moved, not copied: a simple query
        // with literals is planned at every execution).
        planned.map(|mut prepared| {
            prepared.sql = sql;
            prepared
        })
    }

    /// Plan a statement on one table (a write may take its rows from a
    /// query, `needs`, planned first); the caller gives it its text.
    async fn plan_one_table(
        &self,
        stmt: &Statement,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
        source: &str,
        needs: Option<found::Needs>,
    ) -> SqlResult<Prepared> {
        let mut tables = HashMap::new();
        let referenced = referenced_tables(stmt)?;
        let target = referenced.first().map(|(name, _)| name.clone());
        for (name, loc) in referenced {
            let def = self
                .inner
                .catalog
                .table(&name, own)
                .await
                .map_err(|e| e.at(loc))?;
            if def.sequence.is_some() {
                // Read, it is the query engine's (one row of its counter).
                let reading = statement_kind(stmt) == "select";
                let e = sequence_as_table(&name, reading);
                return Err(if reading { e.beyond_fast_path() } else { e });
            }
            tables.insert(name, def);
        }
        // Find: a write that takes its rows from a query has it planned
        // first; its parameters' types are the statement's.
        let mut hints = hints.to_vec();
        let row_query = match (needs, target.and_then(|t| tables.get(&t))) {
            (Some(needs), Some(target)) => {
                let (query, types) =
                    Box::pin(self.plan_row_query(needs, stmt, target, &hints, own, source)).await?;
                hints.resize(hints.len().max(types.len()), None);
                for (hint, ty) in hints.iter_mut().zip(types) {
                    hint.get_or_insert(ty);
                }
                Some(query)
            }
            _ => None,
        };
        let mut planner = Planner {
            tables: &Resolved(tables),
            params: Params::from_hints(&hints),
        };
        let planned = match row_query {
            Some(query) => planner.plan_found(stmt, query)?,
            None => planner.plan(stmt)?,
        };
        Ok(Prepared {
            sql: String::new(),
            param_types: planner.params.resolved(),
            columns: Arc::new(planned.columns),
            plan: Arc::new(planned.plan),
        })
    }

    /// Plan a query for the query engine: its tables as transaction `own`
    /// sees them, resolved first so that planning never waits.
    async fn plan_query(
        &self,
        stmt: &Statement,
        sql: String,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
        source: &str,
    ) -> SqlResult<Prepared> {
        use sqlparser::ast::Spanned;
        let start = stmt.span().start;
        let src = query::Source {
            text: source,
            start: offset_of(source, start.line, start.column),
        };
        self.plan_query_text(sql, hints, own, &src).await
    }

    /// Plan query text `sql` for the query engine, its errors located in
    /// `src` (the client's text, from which `sql` was printed or built).
    async fn plan_query_text(
        &self,
        sql: String,
        hints: &[Option<SqlType>],
        own: Option<TxnId>,
        src: &query::Source<'_>,
    ) -> SqlResult<Prepared> {
        let parsed = self.inner.query.parse(&sql)?;
        let mut defs = Vec::with_capacity(parsed.tables.len());
        for name in &parsed.tables {
            let def =
                self.inner
                    .catalog
                    .table(name, own)
                    .await
                    .map_err(|e| match src.find(name) {
                        Some(p) if e.code == crate::error::sqlstate::UNDEFINED_TABLE => {
                            e.with_position(p)
                        }
                        _ => e,
                    })?;
            defs.push(def);
        }
        let (plan, columns, param_types) = self.inner.query.plan(parsed, defs, hints, src).await?;
        Ok(Prepared {
            sql,
            param_types,
            columns: Arc::new(columns),
            plan: Arc::new(Plan::Query(plan)),
        })
    }

    /// Run one prepared statement with bound parameters.
    pub async fn execute(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        params: Vec<Value>,
    ) -> SqlResult<Executed> {
        self.run(session, prepared, params, None).await
    }

    /// As [`execute`](Self::execute), with `stop` to interrupt its writes
    /// at their safe points (`crate::stop`).
    pub async fn execute_until(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        params: Vec<Value>,
        stop: &Stop,
    ) -> SqlResult<Executed> {
        self.run(session, prepared, params, Some(stop)).await
    }

    async fn run(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        params: Vec<Value>,
        stop: Option<&Stop>,
    ) -> SqlResult<Executed> {
        let started = Instant::now();
        let (result, counter) =
            crate::metrics::counting(self.execute_stages(session, prepared, params, stop)).await;
        self.show_locks(session);
        let kind = prepared.plan.kind();
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => {
                session.note_error();
                // A table dropped by another proxy shows as a store error
                // (Cassandra: "unconfigured table"): look at the catalog
                // epoch before the next statement rather than after the
                // refresh interval.
                if e.code == crate::error::sqlstate::INSUFFICIENT_RESOURCES {
                    self.inner.catalog.recheck();
                }
                e.code
            }
        };
        match result {
            // Rows still to stream: recorded once they are all sent, with
            // the reads the stream makes (a scan pages as it goes).
            Ok(Executed {
                outcome: Outcome::Rows { columns, rows, tag },
                notices,
            }) => {
                let rows = crate::metrics::CountedRows::new(rows, counter, kind, started);
                Ok(Executed {
                    outcome: Outcome::Rows {
                        columns,
                        rows: Box::pin(rows),
                        tag,
                    },
                    notices,
                })
            }
            other => {
                crate::metrics::statement(kind, outcome, started.elapsed(), counter.ops());
                other
            }
        }
    }

    /// One statement, top to bottom: admit it into the transaction, run a
    /// session statement against the session, else re-plan if the catalog
    /// moved, bind, and run the plan in the statement's context.
    async fn execute_stages(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        params: Vec<Value>,
        stop: Option<&Stop>,
    ) -> SqlResult<Executed> {
        let inner = &self.inner;
        // Admit: the one 25P02 check, and the statement's transaction context.
        let txn = session.admit(prepared.plan.admission(), inner.claims.lock_timeout)?;
        if let Plan::Utility(utility) = prepared.plan.as_ref() {
            // Deciding or trimming a transaction must not be cut off
            // halfway by an interrupt (`crate::stop`).
            let _writing = stop.map(Stop::writing);
            // Boxed, as every rare stage below: the common statement's
            // future (moved and polled for every message) stays small.
            return Box::pin(self.transaction_statement(session, utility)).await;
        }
        if let Plan::Cursor(cursor) = prepared.plan.as_ref() {
            return Box::pin(self.cursor_statement(session, cursor, params, stop)).await;
        }
        // Re-plan if DDL changed a table since this statement was prepared
        // (or the tables look different from inside this block).
        let own = session.open.as_ref().map(|o| o.id);
        let fresh;
        let prepared = if self.is_stale(prepared, own).await? {
            let hints: Vec<Option<SqlType>> =
                prepared.param_types.iter().cloned().map(Some).collect();
            fresh = Box::pin(self.plan(
                crate::sql::parse(&prepared.sql)?.remove(0),
                &hints,
                own,
                &prepared.sql,
            ))
            .await?;
            &fresh
        } else {
            prepared
        };
        // A READ ONLY block writes nothing.
        if txn.mode == Mode::Explicit
            && (prepared.plan.kind() != "select" || prepared.plan.locks_rows())
            && session.setting("transaction_read_only").as_deref() == Some("on")
        {
            return Err(SqlError::new(
                "25006",
                format!(
                    "cannot execute {} in a read-only transaction",
                    prepared.plan.command_word()
                ),
            ));
        }
        // Bind.
        let params = Arc::new(check_params(prepared, params)?);
        // A session holding advisory locks writes only under their fence
        // (engine::advisory): never once it lost one, and always through a
        // transaction record that whoever breaks its lock can abort.
        let writes = matches!(prepared.plan.kind(), "insert" | "update" | "delete");
        let fenced = session.advisory.holds_any();
        if fenced && (writes || prepared.plan.kind() == "ddl" || prepared.plan.locks_rows()) {
            self.check_not_lost(session)?;
        }
        // Inside a block, rows are written as intents of its transaction;
        // so are the rows of a statement that may write many, as a
        // transaction of its own, so that it is seen whole or not at all.
        let own_transaction =
            txn.mode == Mode::Implicit && (prepared.plan.may_write_many() || (fenced && writes));
        let open = match (txn.mode, prepared.plan.kind()) {
            _ if own_transaction => Some(OpenTxn::new(inner.peers.begin())),
            (Mode::Explicit, "insert" | "update" | "delete" | "ddl") => {
                Some(self.open_for_write(session))
            }
            // Row locks are intents of the block's transaction.
            (Mode::Explicit, _) if prepared.plan.locks_rows() => Some(self.open_for_write(session)),
            (Mode::Explicit, _) => session.open.clone(),
            (Mode::Implicit, _) => None,
        };
        let cx = self.stmt_ctx(session, txn, open, params, stop);
        // Where the transaction's log stood: the statement's writes follow.
        let logged_before = cx.open.as_ref().map_or(0, OpenTxn::rows_logged);
        let executed = async {
            // Find: the rows a write takes from a query, all of them.
            let found = self
                .find(&prepared.plan, &cx, &prepared.param_types)
                .await?;
            // Draw sequence values and do setval before anything is
            // evaluated; like PostgreSQL's, they stay whatever the
            // statement's fate.
            self.prepare_sequences(prepared, &found, &cx).await?;
            // Run.
            let executed = self.run_plan(session, prepared, &found, &cx).await?;
            // Keep the foreign keys its writes touch (the deferred ones at
            // COMMIT).
            if prepared.plan.checks_foreign_keys() {
                if let Some(open) = &cx.open {
                    open.note_foreign_keys();
                }
                let phase = foreign_keys::Phase::Statement;
                let modes = &session.constraints;
                Box::pin(foreign_keys::enforce(
                    &cx,
                    &inner.catalog,
                    logged_before,
                    phase,
                    modes,
                ))
                .await?;
            }
            Ok(executed)
        }
        .await;
        session.sequences = cx.env.sequences.lock().values.clone();
        let _writing = stop.map(Stop::writing);
        if txn.mode == Mode::Implicit {
            // The statement's own transaction ends: so do its
            // transaction-level advisory locks.
            self.release_xact_locks(session).await;
        }
        if own_transaction {
            let open = cx.open.clone().expect("a statement's own transaction");
            return match executed {
                Ok(done) => Box::pin(self.commit_fenced(session, open))
                    .await
                    .map(|()| done),
                Err(e) => {
                    Box::pin(self.abort(open)).await;
                    Err(e)
                }
            };
        }
        if let (Err(e), Some(_)) = (&executed, &cx.open) {
            Box::pin(self.statement_failed(session, e)).await;
        }
        executed
    }

    /// One statement's context in `session`: its transaction `txn`, the
    /// open transaction it writes in (if any), its bound parameters.
    fn stmt_ctx<'a>(
        &'a self,
        session: &Session,
        txn: crate::txn::StmtTxn,
        open: Option<OpenTxn>,
        params: Arc<Vec<Value>>,
        stop: Option<&'a Stop>,
    ) -> StmtCtx<'a> {
        let inner = &self.inner;
        StmtCtx {
            store: &inner.store,
            claims: &inner.claims,
            stats: &inner.stats,
            scan_page: inner.scan_page,
            txn,
            env: Arc::new(SessionEnv::new(session)),
            params,
            stop,
            reads: Arc::new(ReadView::snapshot(
                open.as_ref().map(|o| o.id),
                inner.claims.max_clock_offset,
            )),
            open,
            peers: &inner.peers,
        }
    }

    /// The sequence-function stage: for the expressions a statement
    /// evaluates before it writes (INSERT values and defaults, SELECT
    /// without FROM), draw and look up what they need.
    async fn prepare_sequences(
        &self,
        prepared: &Prepared,
        found: &found::Found,
        cx: &StmtCtx<'_>,
    ) -> SqlResult<()> {
        let exprs: Vec<&Expr> = match prepared.plan.as_ref() {
            Plan::Insert(p) => found
                .insert_rows(p)
                .iter()
                .flat_map(|row| {
                    row.iter()
                        .enumerate()
                        .filter_map(|(i, e)| e.as_ref().or(p.defaults[i].as_ref()))
                })
                .collect(),
            Plan::Select(s) if s.source.is_none() => match &s.output {
                crate::sql::plan::Output::Rows(exprs) => exprs.iter().collect(),
                crate::sql::plan::Output::Aggregates(_) => Vec::new(),
            },
            _ => return Ok(()),
        };
        let eval = crate::sql::expr::EvalCtx {
            row: None,
            excluded: None,
            params: &cx.params,
            env: cx.env.as_ref(),
        };
        let mut into = std::mem::take(&mut *cx.env.sequences.lock());
        let done = sequence::prepare(
            &self.inner.sequences,
            &self.inner.catalog,
            cx.open.as_ref().map(|o| o.id),
            &exprs,
            &eval,
            &mut into,
        )
        .await;
        *cx.env.sequences.lock() = into;
        done
    }

    async fn run_plan(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        found: &found::Found,
        cx: &StmtCtx<'_>,
    ) -> SqlResult<Executed> {
        let ddl = || self.ddl(cx.open.as_ref(), Some(cx.txn.lock_deadline), cx.txn.born_ms);
        let columns = prepared.columns.clone();
        let executed = match prepared.plan.as_ref() {
            Plan::Utility(_) | Plan::Cursor(_) => unreachable!("handled above"),
            Plan::Select(s) if !s.advisory.is_empty() => {
                Box::pin(self.advisory_select(session, s, cx, columns)).await?
            }
            Plan::Select(s) if s.count_limit.is_some() => {
                let (op, args) = s.count_limit.as_ref().expect("matched");
                let ecx = EvalCtx {
                    row: None,
                    excluded: None,
                    params: &cx.params,
                    env: cx.env.as_ref(),
                };
                let args = args
                    .iter()
                    .map(|a| a.eval(&ecx))
                    .collect::<SqlResult<_>>()?;
                Box::pin(count_limits::call(&ddl(), *op, args, session.in_block())).await?;
                Executed::new(Outcome::Rows {
                    columns,
                    // A void result: an empty text, as PostgreSQL sends it.
                    rows: futures::stream::iter(vec![Ok(vec![Value::Text(String::new())])]).boxed(),
                    tag: "SELECT".into(),
                })
            }
            Plan::Select(s) => {
                if let Some(args) = &s.set_config {
                    set_config(session, args, &cx.params, &cx.env)?;
                }
                Executed::new(select::run(cx, s, columns).await?)
            }
            Plan::Query(q) => Executed::new(
                Box::pin(self.run_query(cx, q, columns, &prepared.param_types)).await?,
            ),
            Plan::Insert(p) => {
                let w = cx.insert(p, found.insert_rows(p)).await?;
                written("INSERT 0", w, columns, p.returning.is_some())
            }
            Plan::Update(p) => {
                let w = cx.update(p, found.rows()).await?;
                written("UPDATE", w, columns, p.returning.is_some())
            }
            Plan::Delete(p) => {
                let w = cx.delete(p, found.rows()).await?;
                written("DELETE", w, columns, p.returning.is_some())
            }
            Plan::CreateTable(p) => {
                self.sweep_soon();
                Box::pin(ddl::create_table(&ddl(), p)).await?
            }
            Plan::CreateIndex(p) => Box::pin(ddl::create_index(&ddl(), p)).await?,
            Plan::DropTable { names, if_exists } => {
                self.sweep_soon();
                Box::pin(ddl::drop_table(&ddl(), names, *if_exists)).await?
            }
            Plan::DropIndex { names, if_exists } => {
                Box::pin(ddl::drop_index(&ddl(), names, *if_exists)).await?
            }
            Plan::CreateSequence(p) => Box::pin(ddl::create_sequence(&ddl(), p)).await?,
            Plan::AlterTable(p) => Box::pin(alter::alter_table(&ddl(), p, cx.env.as_ref())).await?,
            Plan::Truncate(p) => {
                self.sweep_soon();
                Box::pin(truncate::truncate(&ddl(), p)).await?
            }
            Plan::DropSequence { names, if_exists } => {
                Box::pin(ddl::drop_sequence(&ddl(), names, *if_exists)).await?
            }
        };
        Ok(executed)
    }

    /// Run a query-engine plan in the statement's context; a query of the
    /// system catalog over a snapshot taken for this execution.
    async fn run_query(
        &self,
        cx: &StmtCtx<'_>,
        q: &query::QueryPlan,
        columns: Arc<Vec<Column>>,
        param_types: &[SqlType],
    ) -> SqlResult<Outcome> {
        let snap = if q.reads_system() {
            let own = cx.open.as_ref().map(|o| o.id);
            Some(self.snapshot(own, &cx.env).await?)
        } else {
            None
        };
        // Boxed: DataFusion's futures are large.
        Box::pin(self.inner.query.run(cx, q, snap, columns, param_types)).await
    }

    /// What the system catalog shows a statement of transaction `own`:
    /// the relations it sees, and its session's user, database and
    /// settings.
    async fn snapshot(
        &self,
        own: Option<TxnId>,
        env: &SessionEnv,
    ) -> SqlResult<Arc<query::Snapshot>> {
        use crate::sql::expr::Env;
        let relations = self.inner.catalog.all(own).await?;
        let settings = crate::session::settings::GUCS
            .iter()
            .map(|g| (g, env.setting(g.name).unwrap_or_default()))
            .collect();
        let locks = self
            .inner
            .shown_locks
            .iter()
            .flat_map(|e| e.value().clone())
            .collect();
        Ok(Arc::new(query::Snapshot::new(
            relations,
            env.user(),
            env.database(),
            settings,
            locks,
        )))
    }

    /// Whether a table this plan used was dropped, recreated or changed
    /// since, as transaction `own` sees the tables.
    async fn is_stale(&self, prepared: &Prepared, own: Option<TxnId>) -> SqlResult<bool> {
        for t in prepared.plan.tables() {
            match self.inner.catalog.lookup(&t.name, own).await? {
                // Any change of the definition (a CHECK, a NOT NULL, a
                // default) re-plans: plans compile what they enforce.
                Some(now) if Arc::ptr_eq(&now, t) || *now == **t => {}
                _ => return Ok(true),
            }
        }
        Ok(false)
    }
}

/// The character offset of a 1-based line and column in `text` (0 when
/// unknown).
fn offset_of(text: &str, line: u64, column: u64) -> usize {
    if line == 0 {
        return 0;
    }
    let before: usize = text
        .split('\n')
        .take((line as usize).saturating_sub(1))
        .map(|l| l.chars().count() + 1)
        .sum();
    before + (column as usize).saturating_sub(1)
}

/// Bound parameters must match the statement: count, and each one's type.
fn check_params(prepared: &Prepared, params: Vec<Value>) -> SqlResult<Vec<Value>> {
    if params.len() != prepared.param_types.len() {
        return Err(SqlError::new(
            crate::error::sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but prepared statement \"\" requires {}",
                params.len(),
                prepared.param_types.len()
            ),
        ));
    }
    params
        .into_iter()
        .zip(&prepared.param_types)
        .map(|(v, ty)| v.cast_to(ty))
        .collect()
}

/// `SELECT set_config(name, value, is_local)`: the session checks and applies it.
fn set_config(
    session: &mut Session,
    (name, value, local): &(Expr, Expr, Expr),
    params: &[Value],
    env: &SessionEnv,
) -> SqlResult<()> {
    let cx = EvalCtx {
        row: None,
        excluded: None,
        params,
        env,
    };
    let text = |e: &Expr| -> SqlResult<String> { Ok(e.eval(&cx)?.to_text().unwrap_or_default()) };
    let local = matches!(local.eval(&cx)?.cast_to(&SqlType::Bool)?, Value::Bool(true));
    session.set_config(&text(name)?, &text(value)?, local)?;
    Ok(())
}

/// The outcome of a write: a tag, or the RETURNING rows under that tag.
fn written(tag: &str, w: Written, columns: Arc<Vec<Column>>, returning: bool) -> Executed {
    if returning {
        let rows: Vec<SqlResult<Vec<Value>>> = w.returned.into_iter().map(Ok).collect();
        Executed::new(Outcome::Rows {
            columns,
            rows: futures::stream::iter(rows).boxed(),
            tag: tag.into(),
        })
    } else {
        Executed::new(Outcome::Command {
            tag: format!("{tag} {}", w.count),
        })
    }
}

/// A sequence named where a table belongs: a locking read is not
/// supported (the query engine reads one otherwise); writing one is
/// PostgreSQL's 42809.
fn sequence_as_table(name: &str, reading: bool) -> SqlError {
    if reading {
        SqlError::unsupported(
            format!("reading sequence \"{name}\" as a table is not supported"),
            "use currval(), nextval() or setval()",
        )
    } else {
        SqlError::new("42809", format!("cannot change sequence \"{name}\""))
    }
}

/// The kind a statement is counted under in the metrics, before it has a
/// plan (`Plan::kind` once it has one).
fn statement_kind(stmt: &Statement) -> &'static str {
    match stmt {
        Statement::Query(_) => "select",
        Statement::Insert(_) => "insert",
        Statement::Update(_) => "update",
        Statement::Delete(_) => "delete",
        Statement::CreateTable(_)
        | Statement::CreateIndex(_)
        | Statement::CreateSequence { .. }
        | Statement::AlterTable(_)
        | Statement::Comment { .. }
        | Statement::Drop { .. } => "ddl",
        _ => "session",
    }
}

/// The tables a statement reads or writes, with where each is named, to
/// resolve before planning.
fn referenced_tables(stmt: &Statement) -> SqlResult<Vec<(String, Loc)>> {
    use sqlparser::ast;
    let named = |name: &ast::ObjectName| -> SqlResult<(String, Loc)> {
        let loc = name
            .0
            .first()
            .and_then(|p| p.as_ident())
            .map(|i| i.span.start)
            .unwrap_or(Loc { line: 0, column: 0 });
        Ok((table_name(name)?, loc))
    };
    let from_relation = |twj: &ast::TableWithJoins| -> SqlResult<Option<(String, Loc)>> {
        match &twj.relation {
            ast::TableFactor::Table { name, .. } => named(name).map(Some),
            _ => Ok(None),
        }
    };
    let mut names = Vec::new();
    match stmt {
        Statement::Query(q) => {
            if let ast::SetExpr::Select(s) = q.body.as_ref() {
                for twj in &s.from {
                    names.extend(from_relation(twj)?);
                }
            }
        }
        Statement::Insert(i) => {
            if let ast::TableObject::TableName(n) = &i.table {
                names.push(named(n)?);
            }
        }
        Statement::Update(u) => names.extend(from_relation(&u.table)?),
        Statement::Delete(d) => {
            let (ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f)) = &d.from;
            for twj in f {
                names.extend(from_relation(twj)?);
            }
        }
        _ => {}
    }
    Ok(names)
}
