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
