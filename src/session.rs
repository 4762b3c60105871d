//! Per-connection session state and the statements that only touch it:
//! SET / SHOW / RESET, BEGIN / COMMIT / ROLLBACK / SAVEPOINT, DISCARD.
//!
//! Until transactions land, statements inside BEGIN apply at statement time;
//! a ROLLBACK that cannot undo applied writes says so in a WARNING notice.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use sqlparser::ast::Statement;

use crate::engine::{Column, Executed};
use crate::error::SqlResult;

/// Where the connection stands with respect to a transaction block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxnState {
    #[default]
    Idle,
    /// Inside BEGIN; `wrote` once a statement applied a write.
    InBlock { wrote: bool },
    /// A statement failed inside the block: everything but ROLLBACK / COMMIT answers 25P02.
    Failed { wrote: bool },
}

#[derive(Debug, Clone, Default)]
pub struct Session {
    pub user: String,
    pub database: String,
    pub txn: TxnState,
    pub settings: BTreeMap<String, String>,
}

#[allow(unused_variables)]
impl Session {
    /// A new session from the startup message's parameters (user, database, options...).
    pub fn new(user: &str, database: &str, startup: &HashMap<String, String>) -> Session {
        todo!()
    }
    /// A setting's current value as SHOW prints it.
    pub fn setting(&self, name: &str) -> Option<String> {
        todo!()
    }
    /// statement_timeout as set in this session (None = 0 = off).
    pub fn statement_timeout(&self) -> Option<Duration> {
        todo!()
    }
    /// Called by the engine after a statement applied a write.
    pub fn note_write(&mut self) {
        todo!()
    }
    /// Called by the engine when a statement failed: inside a block the block becomes Failed.
    pub fn note_error(&mut self) {
        todo!()
    }
}

/// If `stmt` is a session statement, the columns it returns (SHOW returns one).
#[allow(unused_variables)]
pub fn describe(stmt: &Statement) -> Option<Vec<Column>> {
    todo!()
}

/// Runs `stmt` if it is a session statement; None if it is not one.
#[allow(unused_variables)]
pub fn execute(session: &mut Session, stmt: &Statement) -> Option<SqlResult<Executed>> {
    todo!()
}

/// 25P02 inside a failed block for anything but ROLLBACK / COMMIT / ROLLBACK TO.
#[allow(unused_variables)]
pub fn check_txn_state(session: &Session, stmt: &Statement) -> SqlResult<()> {
    todo!()
}
