//! The engine's side of transaction blocks: minting the block's
//! transaction at its first write, taking back a failed statement's
//! writes, and deciding the transaction at COMMIT / ROLLBACK (or trimming
//! it at ROLLBACK TO) before the session's block state moves.

use tracing::{debug, info, warn};

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ddl, foreign_keys, Engine};
use crate::claims::intents::decide;
use crate::claims::now_ms;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::session::utility::SetPlan;
use crate::session::{utility, Session, Utility};
use crate::store::{StoreError, TxnRecord, TxnStatus};
use crate::txn::{Block, LogMark, Mode, OpenTxn, StmtTxn};

/// How long a transaction left undecided waits before this proxy decides
/// it, and the longest pause between tries while the store fails.
const SETTLE_FIRST_PAUSE: Duration = Duration::from_millis(50);
const SETTLE_MAX_PAUSE: Duration = Duration::from_secs(5);

impl Engine {
    /// The block's transaction, minted by its first write.
    pub(super) fn open_for_write(&self, session: &mut Session) -> OpenTxn {
        session
            .open
            .get_or_insert_with(|| OpenTxn::new(self.inner.peers.begin()))
            .clone()
    }

    /// A statement of the block failed, so the block has failed: as in
    /// PostgreSQL, what it did since its latest savepoint is aborted now
    /// (only ROLLBACK TO that savepoint could keep anything before it), and
    /// with no savepoint the whole transaction is, so that nobody waits on
    /// a block that can only roll back. A write whose outcome is unknown
    /// dooms the transaction: it can then only roll back.
    pub(super) async fn statement_failed(&self, session: &mut Session, error: &SqlError) {
        let Some(open) = session.open.clone() else {
            return;
        };
        if error.code == sqlstate::STATEMENT_COMPLETION_UNKNOWN {
            open.doom(error.message.clone());
        }
        match session.latest_savepoint_mark() {
            Some(mark) => self.undo_after(&open, mark).await,
            None => {
                session.open = None;
                self.abort(open).await;
            }
        }
    }

    /// Take back what the transaction did after `mark`: its rows' intents,
    /// then its catalog changes (DDL).
    async fn undo_after(&self, open: &OpenTxn, mark: LogMark) {
        let (kept, tail) = open.split_off(mark);
        let inner = &self.inner;
        let mut undone = Ok(());
        if !tail.rows.is_empty() {
            undone = crate::claims::undo(
                inner.store.as_ref(),
                &inner.claims,
                &inner.stats,
                open.id,
                &kept,
                &tail.rows,
            )
            .await;
        }
        if !tail.catalog.is_empty() && undone.is_ok() {
            undone = ddl::undo(&self.ddl(None, None, now_ms()), &tail).await;
        }
        if let Err(why) = undone {
            warn!(txn = %open.id, %why, "a transaction's undo was not confirmed; it can only roll back");
            open.doom(why);
        }
    }

    /// COMMIT, ROLLBACK and ROLLBACK TO act on the block's transaction
    /// first; then the session moves its block state (and settings).
    pub(super) async fn transaction_statement(
        &self,
        session: &mut Session,
        utility: &Utility,
    ) -> SqlResult<crate::engine::Executed> {
        let savepoint_mark = match utility {
            Utility::RollbackTo(name) => session.savepoint_advisory_mark(name),
            _ => None,
        };
        let done = self.transaction_statement_ends(session, utility).await;
        if let (Ok(_), Some(mark)) = (&done, savepoint_mark) {
            self.release_xact_locks_after(session, mark).await;
        }
        if !session.in_block() {
            // The transaction is over: its transaction-level advisory locks
            // go, as in PostgreSQL.
            self.release_xact_locks(session).await;
        }
        if let (Ok(_), Utility::Discard(sqlparser::ast::DiscardObject::ALL)) = (&done, utility) {
            // DISCARD ALL includes pg_advisory_unlock_all().
            self.discard_advisory_locks(session).await;
        }
        done
    }

    async fn transaction_statement_ends(
        &self,
        session: &mut Session,
        utility: &Utility,
    ) -> SqlResult<crate::engine::Executed> {
        match (utility, session.txn) {
            (Utility::Commit { .. }, Block::InBlock) => {
                if let Err(e) = self.commit(session).await {
                    // The block is over either way, as in PostgreSQL.
                    let _ = utility::execute(session, &Utility::Rollback { chain: false });
                    return Err(e);
                }
            }
            (Utility::Rollback { .. }, Block::InBlock)
            | (Utility::Commit { .. } | Utility::Rollback { .. }, Block::Failed) => {
                if let Some(open) = session.open.take() {
                    self.abort(open).await;
                }
            }
            (Utility::Set(SetPlan::Constraints { names, deferred }), Block::InBlock) => {
                return self
                    .set_constraints(session, utility, names.as_deref(), *deferred)
                    .await;
            }
            (Utility::Maintenance { tag, tables }, block) => {
                if *tag == "VACUUM" && block != Block::Idle {
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_TRANSACTION,
                        "VACUUM cannot run inside a transaction block",
                    ));
                }
                let own = session.open.as_ref().map(|o| o.id);
                for name in tables {
                    self.inner.catalog.table(name, own).await?;
                }
            }
            (Utility::AlterSequence(alter), block) => {
                // Its catalog changes are the block's, rolled back with it.
                let open = match block {
                    Block::InBlock => Some(self.open_for_write(session)),
                    _ => session.open.clone(),
                };
                let skipped = self
                    .alter_sequence(alter, block, open.as_ref(), &session.user)
                    .await?;
                let mut done = utility::execute(session, utility)?;
                done.notices.extend(skipped);
                return Ok(done);
            }
            (Utility::RollbackTo(name), Block::InBlock | Block::Failed) => {
                if let (Some(mark), Some(open)) = (session.savepoint_mark(name), &session.open) {
                    self.undo_after(open, mark).await;
                }
            }
            _ => {}
        }
        utility::execute(session, utility)
    }

    /// Decide the block's transaction committed: one LWT on its record.
    async fn commit(&self, session: &mut Session) -> SqlResult<()> {
        match session.open.take() {
            Some(open) => self.commit_fenced(session, open).await,
            None => Ok(()),
        }
    }

    /// Commit a transaction of `session`, under the fence of its advisory
    /// locks when it holds any (`engine::advisory`): refused, and rolled
    /// back, once one of them was lost.
    pub(super) async fn commit_fenced(
        &self,
        session: &mut Session,
        open: OpenTxn,
    ) -> SqlResult<()> {
        let ready = match self.before_commit(session, &open).await {
            Ok(()) => self.fence_commit(session, &open).await,
            Err(e) => Err(e),
        };
        if let Err(e) = ready {
            self.abort(open).await;
            return Err(e);
        }
        let id = open.id;
        let committed = self.commit_open(open).await;
        if let Err(e) = &committed {
            if e.code == sqlstate::STATEMENT_COMPLETION_UNKNOWN && session.advisory.holds_any() {
                // It may still commit: settled now, or kept on the fence
                // list until it is.
                self.settle_unknown_commit(session, id).await;
            }
        }
        committed
    }

    /// What must hold before a transaction may commit: every proxy knows
    /// what it published outside itself (a referenced table's pointer to
    /// its new foreign key), and its deferred foreign keys are kept.
    async fn before_commit(&self, session: &Session, open: &OpenTxn) -> SqlResult<()> {
        if open.must_announce() {
            self.ddl(None, None, now_ms()).everyone_knows().await?;
        }
        self.check_foreign_keys(session, open, foreign_keys::Phase::Commit)
            .await
    }

    /// Check the foreign keys due in `phase` over everything transaction
    /// `open` of `session` wrote.
    async fn check_foreign_keys(
        &self,
        session: &Session,
        open: &OpenTxn,
        phase: foreign_keys::Phase,
    ) -> SqlResult<()> {
        if !open.wrote_foreign_keys() {
            return Ok(());
        }
        let lock_timeout = session
            .lock_timeout()
            .unwrap_or(self.inner.claims.lock_timeout);
        let txn = StmtTxn {
            mode: Mode::Explicit,
            lock_deadline: Instant::now() + lock_timeout,
            born_ms: crate::claims::txn_birth_ms(&open.id),
        };
        let cx = self.stmt_ctx(session, txn, Some(open.clone()), Arc::default(), None);
        let modes = &session.constraints;
        foreign_keys::enforce(&cx, &self.inner.catalog, 0, phase, modes).await
    }

    /// SET CONSTRAINTS in a block: the names must be deferrable constraints;
    /// the modes change; what becomes IMMEDIATE is checked now over what
    /// the block wrote, as PostgreSQL fires its pending checks.
    async fn set_constraints(
        &self,
        session: &mut Session,
        utility: &Utility,
        names: Option<&[String]>,
        deferred: bool,
    ) -> SqlResult<crate::engine::Executed> {
        if let Some(names) = names {
            let own = session.open.as_ref().map(|o| o.id);
            let tables = self.inner.catalog.all(own).await?;
            for name in names {
                let fk = tables.iter().find_map(|t| t.foreign_key(name));
                let other = tables
                    .iter()
                    .any(|t| t.constraint_names().any(|c| c == name));
                match fk {
                    Some(fk) if fk.deferrable => {}
                    _ if fk.is_some() || other => {
                        return Err(SqlError::new(
                            "42809",
                            format!("constraint \"{name}\" is not deferrable"),
                        ))
                    }
                    _ => {
                        return Err(SqlError::new(
                            "42704",
                            format!("constraint \"{name}\" does not exist"),
                        ))
                    }
                }
            }
        }
        let executed = utility::execute(session, utility)?;
        if let (false, Some(open)) = (deferred, session.open.clone()) {
            self.check_foreign_keys(session, &open, foreign_keys::Phase::Now)
                .await?;
        }
        Ok(executed)
    }

    /// Commit a transaction: a block's at COMMIT, or a statement's own when
    /// it writes many rows. Whatever the answer, the transaction is decided
    /// or left for whoever meets it to decide, never half visible.
    pub(super) async fn commit_open(&self, open: OpenTxn) -> SqlResult<()> {
        let inner = &self.inner;
        if let Some(why) = open.doomed() {
            self.abort(open).await;
            return Err(SqlError::new(
                sqlstate::STATEMENT_COMPLETION_UNKNOWN,
                "the transaction was rolled back: the outcome of one of its writes is unknown",
            )
            .with_detail(why));
        }
        if open.is_empty() {
            inner.peers.close(&open.id);
            return Ok(());
        }
        // Stamped once every write is in place, before the record lands:
        // a statement that began before this point never shows it.
        let at = crate::claims::clock::now();
        let decided = self.decide(&open, TxnRecord::committed(at)).await;
        inner.peers.close(&open.id);
        match decided {
            Ok(rec) if rec.status == TxnStatus::Committed => {
                self.finish(open, rec).await;
                Ok(())
            }
            Ok(rec) => {
                self.finish(open, rec).await;
                Err(SqlError::new(
                    "40001",
                    "could not serialize access: the transaction was aborted while it stalled",
                )
                .with_detail(
                    "another session found this transaction's proxy silent for longer than the lease and aborted it",
                )
                .with_hint("retry the transaction"))
            }
            Err(StoreError::Unavailable(why)) => {
                // Certainly not decided: abort it so that nobody waits.
                self.abort_decided(open).await;
                Err(crate::catalog::store_error(StoreError::Unavailable(why)))
            }
            // Settled in the background (or by whoever meets it first):
            // either way it ends wholly committed or wholly aborted.
            Err(StoreError::Unknown(why)) => {
                self.settle_later(open);
                Err(SqlError::completion_unknown(format!(
                    "the store did not confirm the transaction's commit: {why}"
                )))
            }
        }
    }

    /// Roll the block's transaction back: decide its record aborted (so
    /// nobody waits on its intents), then clean up off the client's path.
    pub async fn abort(&self, open: OpenTxn) {
        self.inner.peers.close(&open.id);
        if open.is_empty() {
            return;
        }
        self.abort_decided(open).await;
    }

    async fn abort_decided(&self, open: OpenTxn) {
        match self.decide(&open, TxnRecord::aborted()).await {
            Ok(rec) => self.finish(open, rec).await,
            Err(e) => {
                warn!(txn = %open.id, cause = %e, "could not record a rollback; retrying in the background");
                self.settle_later(open);
            }
        }
    }

    /// A transaction whose decision could not be recorded (its rollback's
    /// record write failed, or its commit's outcome is unknown) is no longer
    /// open here, so any writer that meets it may abort it; this proxy does
    /// so itself, in the background, until a record stands (finding
    /// `committed` if the commit landed after all), then cleans up as
    /// `finish` does. Rows nobody writes again then do not keep it
    /// undecided. It is the resolver's own step (`abort_if_gone`), so the
    /// model check's `AbortOther` on a transaction that answered covers it.
    fn settle_later(&self, open: OpenTxn) {
        let engine = self.clone();
        tokio::spawn(async move {
            let mut pause = SETTLE_FIRST_PAUSE;
            loop {
                tokio::time::sleep(pause).await;
                match engine.decide(&open, TxnRecord::aborted()).await {
                    Ok(rec) => {
                        info!(txn = %open.id, status = ?rec.status, "settled a transaction whose decision had not been recorded");
                        engine.finish(open, rec).await;
                        return;
                    }
                    Err(e) => {
                        debug!(txn = %open.id, cause = %e, "a transaction is still not settled");
                        pause = (pause * 2).min(SETTLE_MAX_PAUSE);
                    }
                }
            }
        });
    }

    /// One LWT on the transaction's record; the decision that stands.
    async fn decide(&self, open: &OpenTxn, rec: TxnRecord) -> Result<TxnRecord, StoreError> {
        let inner = &self.inner;
        decide(
            inner.store.as_ref(),
            &inner.claims,
            &inner.stats,
            open.id,
            rec,
        )
        .await
    }

    /// After the decision: its catalog entries are tidied before the
    /// client hears the answer (so a dropped table's storage is gone and a
    /// created one is plain for every proxy); its rows' intents are folded
    /// or dropped in the background.
    async fn finish(&self, open: OpenTxn, decided: TxnRecord) {
        let committed = decided.status == TxnStatus::Committed;
        let changes = open.catalog();
        if !changes.is_empty() {
            ddl::finish(
                &self.ddl(None, None, now_ms()),
                open.id,
                &changes,
                committed,
            )
            .await;
        }
        let store = self.inner.store.clone();
        let log = open.entries();
        tokio::spawn(async move {
            let at = committed.then_some(decided.at);
            crate::claims::finish(store.as_ref(), open.id, &log, at).await;
        });
    }
}
