//! The transaction context: what a statement runs inside.
//!
//! Every statement runs in a transaction, as in PostgreSQL: an *implicit*
//! one of its own outside a block, or the connection's *explicit* block
//! between BEGIN and COMMIT / ROLLBACK. The session owns the block state
//! ([`Block`]); each statement gets a [`StmtTxn`] made from it by
//! [`Block::admit`], the one place that refuses work in a failed block
//! (25P02). The design this grows into (intents, transaction records,
//! snapshots) is docs/transactions.md.
//!
//! A block's writes are intents of one transaction ([`OpenTxn`], minted at
//! the block's first write): invisible to other sessions until COMMIT
//! decides the transaction record, gone at ROLLBACK; ROLLBACK TO a
//! savepoint, or a failed statement, takes back the tail of its log.
//! DDL is not transactional yet and applies when it runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::claims::Logged;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::store::TxnId;

/// Where the connection stands with respect to a transaction block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Block {
    /// No block: each statement is its own (implicit) transaction.
    #[default]
    Idle,
    /// Inside BEGIN; `wrote` once a statement applied a write.
    InBlock { wrote: bool },
    /// A statement failed inside the block: everything but ROLLBACK /
    /// COMMIT / ROLLBACK TO answers 25P02.
    Failed { wrote: bool },
}

/// What a statement is, as far as admission into a block goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// ROLLBACK, COMMIT (which rolls a failed block back) and ROLLBACK TO:
    /// the only statements a failed block accepts.
    EndsFailure,
    /// Anything else.
    Ordinary,
}

/// Whether the statement runs in its own transaction or in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Implicit,
    Explicit,
}

/// The transaction context of one statement.
#[derive(Debug, Clone, Copy)]
pub struct StmtTxn {
    pub mode: Mode,
    /// When waiting for another's claim gives up (55P03): the session's
    /// lock_timeout, or the configured one when the session has none.
    pub lock_deadline: Instant,
    /// When the writer was born, for ordering waits across transactions:
    /// the open transaction's birth, else now.
    pub born_ms: u64,
}

/// The open transaction of a block: its id and the log of its writes.
/// Shared by handle, so the session can be snapshotted for a statement
/// without copying the log.
#[derive(Debug, Clone)]
pub struct OpenTxn {
    pub id: TxnId,
    log: Arc<parking_lot::Mutex<TxnLog>>,
}

#[derive(Debug, Default)]
struct TxnLog {
    entries: Vec<Logged>,
    /// Why the transaction can no longer commit (a write or an undo whose
    /// outcome is unknown), if it cannot.
    doomed: Option<String>,
}

impl OpenTxn {
    pub fn new(id: TxnId) -> OpenTxn {
        OpenTxn {
            id,
            log: Arc::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.log.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push(&self, entry: Logged) {
        self.log.lock().entries.push(entry);
    }

    /// The whole log.
    pub fn entries(&self) -> Vec<Logged> {
        self.log.lock().entries.clone()
    }

    /// Cut the log at `mark`: (what stays, what was after it).
    pub fn split_off(&self, mark: usize) -> (Vec<Logged>, Vec<Logged>) {
        let mut log = self.log.lock();
        let at = mark.min(log.entries.len());
        let tail = log.entries.split_off(at);
        (log.entries.clone(), tail)
    }

    pub fn doom(&self, why: String) {
        self.log.lock().doomed.get_or_insert(why);
    }

    pub fn doomed(&self) -> Option<String> {
        self.log.lock().doomed.clone()
    }
}

impl Block {
    /// True inside BEGIN, failed or not.
    pub fn in_block(&self) -> bool {
        *self != Block::Idle
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Block::Failed { .. })
    }

    /// Whether a statement of the block applied a write.
    pub fn wrote(&self) -> bool {
        matches!(
            self,
            Block::InBlock { wrote: true } | Block::Failed { wrote: true }
        )
    }

    /// Admit a statement: 25P02 in a failed block unless it ends the
    /// failure; otherwise the statement's transaction context, with its
    /// lock deadline from `lock_timeout`.
    pub fn admit(
        &self,
        admission: Admission,
        lock_timeout: Duration,
        born_ms: u64,
    ) -> SqlResult<StmtTxn> {
        if self.is_failed() && admission == Admission::Ordinary {
            return Err(in_failed_block());
        }
        Ok(StmtTxn {
            mode: if self.in_block() {
                Mode::Explicit
            } else {
                Mode::Implicit
            },
            lock_deadline: Instant::now() + lock_timeout,
            born_ms,
        })
    }

    /// A statement applied a write.
    pub fn note_write(&mut self) {
        *self = match *self {
            Block::Idle => Block::Idle,
            Block::InBlock { .. } => Block::InBlock { wrote: true },
            Block::Failed { .. } => Block::Failed { wrote: true },
        };
    }

    /// A statement failed: inside a block the block fails. Idempotent, so
    /// the wire layer may call it for errors raised before a statement runs.
    pub fn note_error(&mut self) {
        if let Block::InBlock { wrote } = *self {
            *self = Block::Failed { wrote };
        }
    }

    /// The status byte ReadyForQuery carries: 'I', 'T' or 'E'.
    pub fn status(&self) -> u8 {
        match self {
            Block::Idle => b'I',
            Block::InBlock { .. } => b'T',
            Block::Failed { .. } => b'E',
        }
    }
}

fn in_failed_block() -> SqlError {
    SqlError::new(
        sqlstate::IN_FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Duration = Duration::from_secs(1);

    #[test]
    fn a_failed_block_admits_only_what_ends_it() {
        let mut b = Block::InBlock { wrote: false };
        assert_eq!(
            b.admit(Admission::Ordinary, L, 0).unwrap().mode,
            Mode::Explicit
        );
        b.note_error();
        b.note_error();
        assert_eq!(b, Block::Failed { wrote: false });
        assert_eq!(
            b.admit(Admission::Ordinary, L, 0).unwrap_err().code,
            sqlstate::IN_FAILED_TRANSACTION
        );
        assert!(b.admit(Admission::EndsFailure, L, 0).is_ok());
        assert_eq!(b.status(), b'E');
    }

    #[test]
    fn outside_a_block_statements_are_implicit_and_errors_change_nothing() {
        let mut b = Block::Idle;
        b.note_error();
        b.note_write();
        assert_eq!(b, Block::Idle);
        let t = b.admit(Admission::Ordinary, L, 0).unwrap();
        assert_eq!(t.mode, Mode::Implicit);
        assert!(t.lock_deadline > Instant::now());
    }

    #[test]
    fn writes_are_remembered_through_failure() {
        let mut b = Block::InBlock { wrote: false };
        b.note_write();
        b.note_error();
        assert!(b.wrote());
        assert_eq!(b, Block::Failed { wrote: true });
    }
}
