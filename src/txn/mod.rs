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
//! Its DDL is logged the same way: each change of a catalog entry, with the
//! entry's pending change before it (docs/transactions.md, section 10).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::catalog::{DefIntent, TableDef};
use crate::claims::Logged;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::store::TxnId;

/// Where the connection stands with respect to a transaction block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Block {
    /// No block: each statement is its own (implicit) transaction.
    #[default]
    Idle,
    /// Inside BEGIN.
    InBlock,
    /// A statement failed inside the block: everything but ROLLBACK /
    /// COMMIT / ROLLBACK TO answers 25P02.
    Failed,
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

/// Where a transaction's log stood: what a savepoint marks, and what
/// ROLLBACK TO takes the log back to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogMark {
    rows: usize,
    catalog: usize,
}

/// One change of a catalog entry by the transaction (DDL in a block).
#[derive(Debug, Clone)]
pub struct CatalogChange {
    /// The table name: the catalog entry changed.
    pub name: String,
    /// The entry's pending change before this one (the transaction's own;
    /// None if it had none): what undoing this change puts back.
    pub before: Option<DefIntent>,
    /// The definition the transaction sees after it (None: dropped).
    pub after: Option<Arc<TableDef>>,
}

impl CatalogChange {
    /// Every definition this change names (storage an undo or a decision
    /// may leave unused).
    pub fn defs(&self) -> impl Iterator<Item = &Arc<TableDef>> {
        self.before
            .iter()
            .filter_map(|b| b.def.as_ref())
            .chain(self.after.iter())
    }
}

/// What ROLLBACK TO (or a failed statement) takes back: the log's tail.
#[derive(Debug, Default)]
pub struct Tail {
    pub rows: Vec<Logged>,
    /// What stays of the catalog log, and what goes.
    pub catalog_kept: Vec<CatalogChange>,
    pub catalog: Vec<CatalogChange>,
}

#[derive(Debug, Default)]
struct TxnLog {
    entries: Vec<Logged>,
    catalog: Vec<CatalogChange>,
    /// Why the transaction can no longer commit (a write or an undo whose
    /// outcome is unknown), if it cannot.
    doomed: Option<String>,
    /// It published a change that every proxy must know before its own
    /// changes become visible (a referenced table's pointer to a foreign
    /// key it adds): COMMIT waits for that first.
    announce: bool,
    /// It wrote rows of tables with foreign keys: COMMIT checks the
    /// deferred ones.
    foreign_keys: bool,
}

impl OpenTxn {
    pub fn new(id: TxnId) -> OpenTxn {
        OpenTxn {
            id,
            log: Arc::default(),
        }
    }

    /// Nothing written: no row and no catalog entry.
    pub fn is_empty(&self) -> bool {
        let log = self.log.lock();
        log.entries.is_empty() && log.catalog.is_empty()
    }

    pub fn mark(&self) -> LogMark {
        let log = self.log.lock();
        LogMark {
            rows: log.entries.len(),
            catalog: log.catalog.len(),
        }
    }

    pub fn push(&self, entry: Logged) {
        self.log.lock().entries.push(entry);
    }

    pub fn push_catalog(&self, change: CatalogChange) {
        self.log.lock().catalog.push(change);
    }

    /// The whole log of rows.
    pub fn entries(&self) -> Vec<Logged> {
        self.log.lock().entries.clone()
    }

    /// How many row writes the log holds.
    pub fn rows_logged(&self) -> usize {
        self.log.lock().entries.len()
    }

    /// The row writes logged from position `from` on.
    pub fn entries_since(&self, from: usize) -> Vec<Logged> {
        let log = self.log.lock();
        log.entries.get(from..).unwrap_or_default().to_vec()
    }

    /// COMMIT must wait until every proxy knows what this transaction
    /// published outside itself.
    pub fn announce_before_commit(&self) {
        self.log.lock().announce = true;
    }

    pub fn must_announce(&self) -> bool {
        self.log.lock().announce
    }

    /// It wrote rows whose foreign keys COMMIT may have to check.
    pub fn note_foreign_keys(&self) {
        self.log.lock().foreign_keys = true;
    }

    pub fn wrote_foreign_keys(&self) -> bool {
        self.log.lock().foreign_keys
    }

    /// The whole log of catalog changes.
    pub fn catalog(&self) -> Vec<CatalogChange> {
        self.log.lock().catalog.clone()
    }

    /// Cut the log at `mark`: (the rows that stay, what was after it).
    pub fn split_off(&self, mark: LogMark) -> (Vec<Logged>, Tail) {
        let mut log = self.log.lock();
        let (rows_at, catalog_at) = (
            mark.rows.min(log.entries.len()),
            mark.catalog.min(log.catalog.len()),
        );
        let rows = log.entries.split_off(rows_at);
        let catalog = log.catalog.split_off(catalog_at);
        let tail = Tail {
            rows,
            catalog_kept: log.catalog.clone(),
            catalog,
        };
        (log.entries.clone(), tail)
    }

    pub fn doom(&self, why: String) {
        self.log.lock().doomed.get_or_insert(why);
    }

    pub fn doomed(&self) -> Option<String> {
        self.log.lock().doomed.clone()
    }
}

/// SET CONSTRAINTS in the open block: which deferrable constraints are
/// checked when a statement ends (immediate) and which at COMMIT
/// (deferred), where the block changed that. Dropped with the block, and
/// restored with the settings by ROLLBACK TO, as PostgreSQL restores it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConstraintModes {
    /// SET CONSTRAINTS ALL: true for DEFERRED.
    all: Option<bool>,
    /// SET CONSTRAINTS name, ...: by constraint name.
    named: std::collections::BTreeMap<String, bool>,
}

impl ConstraintModes {
    /// Whether `fk` is checked at COMMIT now.
    pub fn deferred(&self, fk: &crate::catalog::ForeignKeyDef) -> bool {
        fk.deferrable
            && self
                .named
                .get(&fk.name)
                .copied()
                .or(self.all)
                .unwrap_or(fk.initially_deferred)
    }

    /// SET CONSTRAINTS `names` (None: ALL) DEFERRED or IMMEDIATE. A later
    /// ALL overrides what names said before it, as in PostgreSQL.
    pub fn set(&mut self, names: Option<&[String]>, deferred: bool) {
        match names {
            None => {
                self.all = Some(deferred);
                self.named.clear();
            }
            Some(names) => {
                for n in names {
                    self.named.insert(n.clone(), deferred);
                }
            }
        }
    }
}

/// What the Parse and Describe handlers, which run without the session,
/// see of it: which transaction a connection plans its statements as (its
/// open block's, once it has one, so that it sees its own DDL), and the
/// result columns of its open cursors (to describe a FETCH, or a portal
/// named after a cursor).
#[derive(Debug, Clone, Default)]
pub struct PlanView {
    own: Arc<parking_lot::Mutex<Option<TxnId>>>,
    cursors: crate::session::cursors::CursorShapes,
}

impl PlanView {
    pub fn get(&self) -> Option<TxnId> {
        *self.own.lock()
    }

    pub fn set(&self, own: Option<TxnId>) {
        *self.own.lock() = own;
    }

    /// The cursors' result columns, which the session keeps up to date.
    pub fn cursors(&self) -> crate::session::cursors::CursorShapes {
        self.cursors.clone()
    }

    /// The result columns of open cursor `name`.
    pub fn cursor_columns(&self, name: &str) -> Option<Arc<Vec<crate::engine::Column>>> {
        self.cursors.lock().get(name).cloned()
    }
}

impl Block {
    /// True inside BEGIN, failed or not.
    pub fn in_block(&self) -> bool {
        *self != Block::Idle
    }

    pub fn is_failed(&self) -> bool {
        *self == Block::Failed
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

    /// A statement failed: inside a block the block fails. Idempotent, so
    /// the wire layer may call it for errors raised before a statement runs.
    pub fn note_error(&mut self) {
        if *self == Block::InBlock {
            *self = Block::Failed;
        }
    }

    /// The status byte ReadyForQuery carries: 'I', 'T' or 'E'.
    pub fn status(&self) -> u8 {
        match self {
            Block::Idle => b'I',
            Block::InBlock => b'T',
            Block::Failed => b'E',
        }
    }
}

pub(crate) fn in_failed_block() -> SqlError {
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
        let mut b = Block::InBlock;
        assert_eq!(
            b.admit(Admission::Ordinary, L, 0).unwrap().mode,
            Mode::Explicit
        );
        b.note_error();
        b.note_error();
        assert_eq!(b, Block::Failed);
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
        assert_eq!(b, Block::Idle);
        let t = b.admit(Admission::Ordinary, L, 0).unwrap();
        assert_eq!(t.mode, Mode::Implicit);
        assert!(t.lock_deadline > Instant::now());
    }
}
