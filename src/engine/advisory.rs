//! The advisory lock functions (`SELECT pg_advisory_lock(42)` and family)
//! against the session's counts and the store's lock partitions, and the
//! fence that keeps a session that lost a lock from committing
//! (docs/advisory_locks.md; the protocol is `claims::advisory`).
//!
//! A session that holds no advisory lock pays nothing here: every hook
//! below returns at once on `AdvisoryLocks::holds_any`.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;

use super::ctx::StmtCtx;
use super::query::ShownLock;
use super::{Column, Engine, Executed, Notice, Outcome};
use crate::claims::advisory::{self, IfBusy, LockCx, LockKey, Mode, Modes};
use crate::claims::intents::decide;
use crate::error::{SqlError, SqlResult};
use crate::session::advisory::AdvisoryLocks;
use crate::session::Session;
use crate::sql::expr::{AdvisoryFn, AdvisoryOp};
use crate::sql::expr::{EvalCtx, Expr, Func};
use crate::sql::plan::{Output, SelectPlan};
use crate::stop::Stop;
use crate::store::{TxnId, TxnRecord};
use crate::txn::OpenTxn;
use crate::types::Value;

/// PostgreSQL's WARNING for an unlock of a lock the session does not hold.
fn not_owned(mode: Mode) -> Notice {
    Notice {
        severity: "WARNING",
        code: "01000",
        message: format!("you don't own a lock of type {}", mode.pg_name()),
    }
}

/// The lock key from the function's (already typed) arguments; None for
/// a NULL argument (the functions are STRICT: NULL in, NULL out).
fn key_of(args: &[Value]) -> SqlResult<Option<LockKey>> {
    if args.iter().any(Value::is_null) {
        return Ok(None);
    }
    let int8 = |v: &Value| -> SqlResult<i64> {
        match v.cast_to(&crate::types::SqlType::Int8)? {
            Value::Int8(i) => Ok(i),
            _ => Err(SqlError::internal("an advisory lock key is not a bigint")),
        }
    };
    Ok(Some(match args {
        [k] => LockKey::bigint(int8(k)?),
        [a, b] => {
            let (a, b) = (int8(a)?, int8(b)?);
            let int4 = |i: i64| {
                i32::try_from(i).map_err(|_| SqlError::new("22003", "integer out of range"))
            };
            LockKey::pair(int4(a)?, int4(b)?)
        }
        _ => return Err(SqlError::internal("an advisory lock call with bad arity")),
    }))
}

impl Engine {
    fn lock_cx<'a>(
        &'a self,
        locks: &AdvisoryLocks,
        stop: Option<&'a Stop>,
        deadline: Instant,
    ) -> LockCx<'a> {
        let inner = &self.inner;
        LockCx {
            store: inner.store.as_ref(),
            cfg: &inner.claims,
            stats: &inner.stats,
            peers: &inner.peers,
            stop,
            deadline,
            holder: locks.holder.unwrap_or_default(),
            holds: locks.held.values().any(|h| h.modes().any()),
        }
    }

    /// Run one advisory lock function; its value, and a WARNING if any.
    pub(super) async fn advisory_call(
        &self,
        session: &mut Session,
        f: AdvisoryFn,
        args: Vec<Value>,
        stop: Option<&Stop>,
        deadline: Instant,
    ) -> SqlResult<(Value, Option<Notice>)> {
        // An interrupt must not drop a lock write halfway (it would leave
        // an entry the session does not know it has): it is seen at the
        // wait's safe points instead (`crate::stop`).
        let _writing = stop.map(Stop::writing);
        let mode = if f.shared {
            Mode::Shared
        } else {
            Mode::Exclusive
        };
        if f.op == AdvisoryOp::UnlockAll {
            self.unlock_all(session, stop, deadline).await?;
            return Ok((Value::Text(String::new()), None));
        }
        let Some(key) = key_of(&args)? else {
            return Ok((Value::Null, None));
        };
        match f.op {
            AdvisoryOp::Lock | AdvisoryOp::TryLock => {
                let got = self
                    .lock(session, key, mode, f.xact, f.op, stop, deadline)
                    .await?;
                Ok(match f.op {
                    AdvisoryOp::Lock => (Value::Text(String::new()), None),
                    _ => (Value::Bool(got), None),
                })
            }
            AdvisoryOp::Unlock => {
                let released = self.unlock(session, key, mode, stop, deadline).await?;
                let notice = (!released).then(|| not_owned(mode));
                Ok((Value::Bool(released), notice))
            }
            AdvisoryOp::UnlockAll => unreachable!("handled above"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn lock(
        &self,
        session: &mut Session,
        key: LockKey,
        mode: Mode,
        xact: bool,
        op: AdvisoryOp,
        stop: Option<&Stop>,
        deadline: Instant,
    ) -> SqlResult<bool> {
        let locks = &mut session.advisory;
        if locks.held.get(&key).is_some_and(|h| h.lost) {
            return Err(advisory::lost(key));
        }
        let keep = locks.modes(&key);
        let has = match mode {
            Mode::Exclusive => keep.exclusive,
            Mode::Shared => keep.shared,
        };
        if !has {
            if locks.holder.is_none() {
                locks.holder = Some(self.inner.peers.new_holder());
            }
            let open = session.open.as_ref().map(|o| o.id);
            let txns = session.advisory.fence_list(open);
            let cx = self.lock_cx(&session.advisory, stop, deadline);
            let if_busy = if op == AdvisoryOp::TryLock {
                IfBusy::Give
            } else {
                IfBusy::Wait
            };
            let got = advisory::acquire(&cx, key, mode, keep, &txns, if_busy).await;
            match got {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    // The entry may have landed after all (an unknown
                    // outcome): put it back to what the session holds.
                    let put_right = self
                        .release_entry(&mut session.advisory, key, keep, stop, deadline)
                        .await;
                    if let Err(why) = put_right {
                        tracing::warn!(%key, cause = %why.message, "an advisory lock entry could not be put right; the session's end or its proxy's lease clears it");
                    }
                    return Err(e);
                }
            }
        }
        *session
            .advisory
            .held
            .entry(key)
            .or_default()
            .count(mode, xact) += 1;
        if xact {
            session.advisory.xact_log.push((key, mode));
        }
        Ok(true)
    }

    /// `pg_advisory_unlock[_shared]`: a session-level lock only, as in
    /// PostgreSQL. False when not held, or when it was lost meanwhile.
    async fn unlock(
        &self,
        session: &mut Session,
        key: LockKey,
        mode: Mode,
        stop: Option<&Stop>,
        deadline: Instant,
    ) -> SqlResult<bool> {
        let Some(held) = session.advisory.held.get(&key) else {
            return Ok(false);
        };
        let before = held.modes();
        let mut next = held.clone();
        let count = next.count(mode, false);
        if *count == 0 {
            return Ok(false);
        }
        *count -= 1;
        let after = next.modes();
        let lost = next.lost;
        if lost && after == Modes::default() {
            // Letting go of a lost lock: nothing to release, and the session
            // did not hold it any more.
            session.advisory.held.remove(&key);
            session.advisory.tidy();
            return Ok(false);
        }
        if after != before && !lost {
            let present = self
                .release_entry(&mut session.advisory, key, after, stop, deadline)
                .await?;
            if !present {
                // It was broken while the session believed it held it.
                session.advisory.held.remove(&key);
                session.advisory.tidy();
                return Ok(false);
            }
        }
        session.advisory.held.insert(key, next);
        session.advisory.tidy();
        Ok(true)
    }

    /// Set the session's entry on `key` to `keep`. Before the entry goes
    /// altogether, the session's transactions whose COMMIT outcome stayed
    /// unknown are settled (decided, aborted unless they committed): the
    /// entry is their fence, and a lock must not be let go while a write
    /// made under it may still commit.
    async fn release_entry(
        &self,
        locks: &mut AdvisoryLocks,
        key: LockKey,
        keep: Modes,
        stop: Option<&Stop>,
        deadline: Instant,
    ) -> SqlResult<bool> {
        let done = async {
            if !keep.any() && !locks.undecided.is_empty() {
                self.settle(locks).await?;
            }
            let cx = self.lock_cx(locks, stop, deadline);
            advisory::release(&cx, key, keep).await
        }
        .await;
        // Unconfirmed: the entry may show more than the session holds; it
        // is put right at the next release or the session's end.
        let stray = done.is_err();
        if stray || locks.held.contains_key(&key) {
            locks.held.entry(key).or_default().stray = stray;
        }
        done
    }

    /// Decide each transaction on the session's undecided list (aborted,
    /// unless it committed); those the store does not answer for stay.
    async fn settle(&self, locks: &mut AdvisoryLocks) -> SqlResult<()> {
        let inner = &self.inner;
        let mut left = Vec::new();
        let mut failed = None;
        for t in std::mem::take(&mut locks.undecided) {
            let decided = decide(
                inner.store.as_ref(),
                &inner.claims,
                &inner.stats,
                t,
                TxnRecord::aborted(),
            )
            .await;
            if let Err(e) = decided {
                left.push(t);
                failed = Some(e);
            }
        }
        locks.undecided = left;
        match failed {
            Some(e) => Err(crate::catalog::store_error(e)),
            None => Ok(()),
        }
    }

    /// After a COMMIT of a lock holder answered 40003: settle it at once if
    /// the store answers now, else keep it on the fence list.
    pub(super) async fn settle_unknown_commit(&self, session: &mut Session, txn: TxnId) {
        session.advisory.undecided.push(txn);
        if let Err(e) = self.settle(&mut session.advisory).await {
            tracing::warn!(%txn, cause = %e.message, "a lock holder's transaction with an unknown outcome stays on its fence list");
        }
    }

    /// `pg_advisory_unlock_all()`: every session-level lock.
    async fn unlock_all(
        &self,
        session: &mut Session,
        stop: Option<&Stop>,
        deadline: Instant,
    ) -> SqlResult<()> {
        let keys: Vec<LockKey> = session.advisory.held.keys().copied().collect();
        let mut failed = None;
        for key in keys {
            let held = session.advisory.held.get_mut(&key).expect("listed");
            let before = held.modes();
            let stray = held.stray;
            held.session_exclusive = 0;
            held.session_shared = 0;
            if held.xact_exclusive + held.xact_shared == 0 {
                held.lost = false;
            }
            let after = held.modes();
            if after != before || stray {
                let released = self
                    .release_entry(&mut session.advisory, key, after, stop, deadline)
                    .await;
                if let Err(e) = released {
                    failed = Some(e);
                }
            }
        }
        session.advisory.tidy();
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The transaction ended (COMMIT, ROLLBACK, or the end of a statement
    /// outside a block): its transaction-level locks go.
    pub(super) async fn release_xact_locks(&self, session: &mut Session) {
        session.advisory.xact_log.clear();
        let keys = session.advisory.xact_keys();
        if keys.is_empty() {
            return;
        }
        let deadline = Instant::now() + self.inner.claims.lock_timeout;
        for key in keys {
            let held = session.advisory.held.get_mut(&key).expect("listed");
            held.xact_exclusive = 0;
            held.xact_shared = 0;
            if held.session_exclusive + held.session_shared == 0 {
                held.lost = false;
            }
            let after = held.modes();
            let released = self
                .release_entry(&mut session.advisory, key, after, None, deadline)
                .await;
            if let Err(e) = released {
                tracing::warn!(%key, cause = %e.message, "a transaction-level advisory lock was not released; the session's end or its proxy's lease frees it");
            }
        }
        session.advisory.tidy();
    }

    /// ROLLBACK TO a savepoint: the transaction-level locks taken after it
    /// go (each count taken since is given back).
    pub(super) async fn release_xact_locks_after(&self, session: &mut Session, mark: usize) {
        let locks = &mut session.advisory;
        if mark >= locks.xact_log.len() {
            return;
        }
        let undone = locks.xact_log.split_off(mark);
        let mut changed = std::collections::BTreeMap::new();
        for (key, mode) in undone {
            let held = locks.held.entry(key).or_default();
            changed.entry(key).or_insert_with(|| held.modes());
            let count = held.count(mode, true);
            *count = count.saturating_sub(1);
        }
        let deadline = Instant::now() + self.inner.claims.lock_timeout;
        for (key, before) in changed {
            let after = session.advisory.modes(&key);
            if after == before {
                continue;
            }
            let released = self
                .release_entry(&mut session.advisory, key, after, None, deadline)
                .await;
            if let Err(e) = released {
                tracing::warn!(%key, cause = %e.message, "an advisory lock taken after a savepoint was not released; the transaction's end frees it");
            }
        }
        session.advisory.tidy();
    }

    /// Before a transaction of a session holding advisory locks commits:
    /// refuse if a lock was lost, else list the transaction in each lock's
    /// entry (the fence), so that whoever breaks the lock aborts it first.
    /// No store round trip for a session without advisory locks.
    pub(super) async fn fence_commit(
        &self,
        session: &mut Session,
        open: &OpenTxn,
    ) -> SqlResult<()> {
        if !session.advisory.holds_any() || open.is_empty() {
            return Ok(());
        }
        if let Some(key) = session.advisory.lost() {
            return Err(advisory::lost(key));
        }
        let txns = session.advisory.fence_list(Some(open.id));
        let deadline = Instant::now() + self.inner.claims.lock_timeout;
        let keys: Vec<LockKey> = session
            .advisory
            .held
            .iter()
            .filter(|(_, h)| h.modes().any())
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            let cx = self.lock_cx(&session.advisory, None, deadline);
            if !advisory::register(&cx, key, &txns).await? {
                if let Some(h) = session.advisory.held.get_mut(&key) {
                    h.lost = true;
                }
                tracing::warn!(%key, "a session lost an advisory lock; its transaction is refused");
                return Err(advisory::lost(key));
            }
        }
        Ok(())
    }

    /// Refuse a write of a session that lost a lock, before it runs.
    pub(super) fn check_not_lost(&self, session: &Session) -> SqlResult<()> {
        match session.advisory.lost() {
            Some(key) => Err(advisory::lost(key)),
            None => Ok(()),
        }
    }

    /// A connection ended: its locks go (with retries, since a proxy that
    /// lives on would otherwise keep them), then its holder id.
    pub async fn end_session(&self, mut locks: AdvisoryLocks) {
        let Some(holder) = locks.holder else { return };
        let keys: Vec<LockKey> = locks.held.keys().copied().collect();
        for key in keys {
            for attempt in 0..20u32 {
                let deadline = Instant::now() + self.inner.claims.lock_timeout;
                let released = self
                    .release_entry(&mut locks, key, Modes::default(), None, deadline)
                    .await;
                match released {
                    Ok(_) => break,
                    Err(e) => {
                        tracing::debug!(%key, cause = %e.message, attempt, "releasing a closed session's advisory lock");
                        tokio::time::sleep(self.inner.peers.lease() / 2).await;
                    }
                }
            }
        }
        self.inner.peers.holder_gone(&holder);
        self.inner.shown_locks.remove(&holder);
    }

    /// Publish what advisory locks `session` holds now, for pg_locks (a
    /// session that never took one costs nothing).
    pub(super) fn show_locks(&self, session: &Session) {
        let Some(holder) = session.advisory.holder else {
            return;
        };
        let shown: Vec<ShownLock> = session
            .advisory
            .held
            .iter()
            .flat_map(|(key, held)| {
                let modes = held.modes();
                [(modes.exclusive, true), (modes.shared, false)]
                    .into_iter()
                    .filter(|(held, _)| *held)
                    .map(|(_, exclusive)| ShownLock {
                        key: *key,
                        exclusive,
                    })
            })
            .collect();
        self.inner.shown_locks.insert(holder, shown);
    }
}

impl Engine {
    /// DISCARD ALL: every session-level advisory lock goes.
    pub(super) async fn discard_advisory_locks(&self, session: &mut Session) {
        let deadline = Instant::now() + self.inner.claims.lock_timeout;
        if let Err(e) = self.unlock_all(session, None, deadline).await {
            tracing::warn!(cause = %e.message, "DISCARD ALL could not release every advisory lock; the session's end frees them");
        }
    }

    /// `SELECT pg_advisory_lock(1), ...`: each item in order, advisory
    /// calls run against the session and the store.
    pub(super) async fn advisory_select(
        &self,
        session: &mut Session,
        plan: &SelectPlan,
        cx: &StmtCtx<'_>,
        columns: Arc<Vec<Column>>,
    ) -> SqlResult<Executed> {
        let Output::Rows(exprs) = &plan.output else {
            return Err(SqlError::internal("an advisory call among aggregates"));
        };
        let ecx = EvalCtx {
            row: None,
            excluded: None,
            params: &cx.params,
            env: cx.env.as_ref(),
        };
        let mut row = Vec::with_capacity(exprs.len());
        let mut notices = Vec::new();
        for (i, e) in exprs.iter().enumerate() {
            match e {
                Expr::Func(Func::Advisory(f), args) if plan.advisory.contains(&i) => {
                    let mut vals = Vec::with_capacity(args.len());
                    for a in args {
                        vals.push(a.eval(&ecx)?);
                    }
                    let (v, notice) = self
                        .advisory_call(session, *f, vals, cx.stop, cx.txn.lock_deadline)
                        .await?;
                    row.push(v);
                    notices.extend(notice);
                }
                other => row.push(other.eval(&ecx)?),
            }
        }
        Ok(Executed {
            outcome: Outcome::Rows {
                columns,
                rows: futures::stream::iter(vec![Ok(row)]).boxed(),
                tag: "SELECT".into(),
            },
            notices,
        })
    }
}
