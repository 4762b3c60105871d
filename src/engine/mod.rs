//! The engine: one SQL statement from text to outcome, as named stages.
//!
//! `prepare` parses and plans (and so can describe parameters and result
//! columns before anything runs); `execute` checks the session state, runs the
//! plan against the store through the claim protocol, and hands back rows or
//! a command tag. The wire layer only translates between this and pgwire.

use std::sync::Arc;

use futures::stream::BoxStream;

use crate::error::SqlResult;
use crate::types::{SqlType, Value};

/// A result column: its name and type.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
}

/// Rows streamed to the client one at a time.
pub type RowStream = BoxStream<'static, SqlResult<Vec<Value>>>;

/// A parsed and planned statement, ready to bind and execute any number of times.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    /// Parameter types, inferred from the table's columns where the client sent none.
    pub param_types: Vec<SqlType>,
    /// Result columns; empty when the statement returns no rows.
    pub columns: Vec<Column>,
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
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            lease: std::time::Duration::from_secs(5),
            lock_timeout: std::time::Duration::from_secs(30),
            max_retries: 5,
            scan_page: 256,
        }
    }
}

/// The engine shared by every connection of one proxy process.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn crate::store::Store>,
    #[allow(dead_code)]
    config: EngineConfig,
}

impl Engine {
    pub fn new(store: Arc<dyn crate::store::Store>, config: EngineConfig) -> Engine {
        Engine {
            inner: Arc::new(Inner { store, config }),
        }
    }

    pub fn store(&self) -> &Arc<dyn crate::store::Store> {
        &self.inner.store
    }

    /// Parse and plan every statement in `sql`. `hints` are the parameter
    /// types the client sent in Parse (None where it sent 0 / unspecified).
    pub async fn prepare(
        &self,
        sql: &str,
        hints: &[Option<SqlType>],
    ) -> SqlResult<Vec<Prepared>> {
        let _ = hints;
        let statements = crate::sql::parse(sql)?;
        let mut out = Vec::with_capacity(statements.len());
        for stmt in statements {
            let columns = match crate::session::describe(&stmt) {
                Some(cols) => cols,
                None => {
                    return Err(crate::error::SqlError::unsupported(
                        "statement not supported yet",
                        "keyclaim supports SELECT, INSERT, UPDATE, DELETE, CREATE TABLE, CREATE UNIQUE INDEX, DROP",
                    ))
                }
            };
            out.push(Prepared {
                sql: stmt.to_string(),
                param_types: Vec::new(),
                columns,
                plan: Arc::new(crate::sql::plan::Plan::Session(stmt)),
            });
        }
        Ok(out)
    }

    /// Run one prepared statement with bound parameters.
    pub async fn execute(
        &self,
        session: &mut crate::session::Session,
        prepared: &Prepared,
        params: Vec<Value>,
    ) -> SqlResult<Executed> {
        let _ = params;
        match prepared.plan.as_ref() {
            crate::sql::plan::Plan::Session(stmt) => {
                crate::session::check_txn_state(session, stmt)?;
                match crate::session::execute(session, stmt) {
                    Some(result) => result,
                    None => Err(crate::error::SqlError::internal("not a session statement")),
                }
            }
        }
    }
}
