//! Advisory locks held across every proxy sharing a store
//! (docs/advisory_locks.md), written against the `Store` trait only.
//!
//! One partition per lock key lists its holders (one entry per session,
//! with the modes it holds), changed only by compare-and-set on the
//! partition's version. A holder lives while its session does (on its own
//! proxy) and while its proxy heartbeats (for the others); a holder judged
//! gone is removed by whoever needs the lock, which frees a dead proxy's
//! locks within one lease.
//!
//! **The fence.** A lease alone does not stop a holder that stalled past it
//! from writing on in a critical section another session now holds. So
//! every transaction of a holder that may commit is listed in its entry
//! (`LockHolder::txns`, written before the transaction's COMMIT record),
//! and whoever removes a holder it judged gone first decides each listed
//! transaction aborted. A commit that lands did so before the removal,
//! while the lock was held; after the removal, none can (its record is
//! decided, and a new registration finds the entry gone). Safety never
//! depends on clocks or the heartbeat; they only decide when to break.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::intents::{decide, Peers, DEADLOCK_TIMEOUT};
use super::{txn_birth_ms, with_retries, ClaimConfig, ClaimStats, Event};
use crate::catalog::store_error;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::stop::Stop;
use crate::store::{Cas, LockHolder, LockRecord, Store, StoreError, TxnId, TxnRecord};

/// An advisory lock key, as PostgreSQL keeps the two key spaces apart:
/// `pg_advisory_lock(bigint)` and `pg_advisory_lock(int, int)` never name
/// the same lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockKey {
    /// True for the `(int, int)` form.
    pub pair: bool,
    pub value: i64,
}

impl LockKey {
    pub fn bigint(key: i64) -> LockKey {
        LockKey {
            pair: false,
            value: key,
        }
    }

    pub fn pair(a: i32, b: i32) -> LockKey {
        LockKey {
            pair: true,
            value: (i64::from(a) << 32) | i64::from(b as u32),
        }
    }

    /// The partition key: the space (1 bigint, 2 pair, as PostgreSQL's
    /// objsubid), then the value.
    pub fn bytes(&self) -> [u8; 9] {
        let mut out = [0u8; 9];
        out[0] = if self.pair { 2 } else { 1 };
        out[1..].copy_from_slice(&self.value.to_be_bytes());
        out
    }
}

impl std::fmt::Display for LockKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pair {
            write!(f, "({}, {})", self.value >> 32, self.value as i32)
        } else {
            write!(f, "{}", self.value)
        }
    }
}

/// Shared or exclusive, with PostgreSQL's compatibility: many shared
/// holders, or one exclusive; a session never conflicts with itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Exclusive,
    Shared,
}

impl Mode {
    /// The lock type PostgreSQL names in its messages.
    pub fn pg_name(self) -> &'static str {
        match self {
            Mode::Exclusive => "ExclusiveLock",
            Mode::Shared => "ShareLock",
        }
    }

    fn conflicts_with(self, other: &LockHolder) -> bool {
        match self {
            Mode::Exclusive => other.exclusive || other.shared,
            Mode::Shared => other.exclusive,
        }
    }
}

/// The modes a session's entry should show for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    pub exclusive: bool,
    pub shared: bool,
}

impl Modes {
    pub fn with(self, mode: Mode) -> Modes {
        match mode {
            Mode::Exclusive => Modes {
                exclusive: true,
                ..self
            },
            Mode::Shared => Modes {
                shared: true,
                ..self
            },
        }
    }

    pub fn any(self) -> bool {
        self.exclusive || self.shared
    }

    fn has(self, mode: Mode) -> bool {
        match mode {
            Mode::Exclusive => self.exclusive,
            Mode::Shared => self.shared,
        }
    }

    fn of(entry: &LockHolder) -> Modes {
        Modes {
            exclusive: entry.exclusive,
            shared: entry.shared,
        }
    }
}

/// What a lock operation runs with.
pub struct LockCx<'a> {
    pub store: &'a dyn Store,
    pub cfg: &'a ClaimConfig,
    pub stats: &'a ClaimStats,
    pub peers: &'a Peers,
    pub stop: Option<&'a Stop>,
    /// From the statement's lock_timeout.
    pub deadline: Instant,
    /// The session's holder id ([`Peers::new_holder`]).
    pub holder: Uuid,
    /// Whether the session already holds an advisory lock, so that it may
    /// be in a cycle of waits (the age rule applies to it).
    pub holds: bool,
}

/// How an acquire ends when the lock is taken by another live session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfBusy {
    Wait,
    /// `pg_try_advisory_lock`: answer false at once.
    Give,
}

/// Take `mode` on `key` for the session, which keeps `keep` there besides
/// (its other modes on the key, as it holds them). `txns` is the session's
/// fence list (its transactions that may commit under the lock). Returns
/// false only for [`IfBusy::Give`] on a busy lock.
pub async fn acquire(
    cx: &LockCx<'_>,
    key: LockKey,
    mode: Mode,
    keep: Modes,
    txns: &[TxnId],
    if_busy: IfBusy,
) -> SqlResult<bool> {
    let bytes = key.bytes();
    let since = Instant::now();
    let mut backoff = Duration::from_millis(1);
    let mut waited = false;
    loop {
        let current = read(cx, &bytes).await?;
        let mut holders = current
            .as_ref()
            .map(|r| r.holders.clone())
            .unwrap_or_default();
        if holders
            .get(&cx.holder)
            .is_some_and(|e| Modes::of(e).has(mode))
        {
            // Ours already: a repeat after an unknown outcome that landed.
            return Ok(true);
        }
        let blockers: Vec<Uuid> = holders
            .iter()
            .filter(|(h, e)| **h != cx.holder && mode.conflicts_with(e))
            .map(|(h, _)| *h)
            .collect();
        let mut live = Vec::new();
        let mut broke = false;
        for b in blockers {
            if cx.peers.holder_may_be_alive(cx.store, &b).await {
                live.push(b);
            } else {
                // The fence: nothing the gone holder registered may commit
                // once its entry goes.
                let gone = holders.remove(&b).unwrap_or_default();
                fence(cx, &gone.txns).await?;
                broke = true;
                tracing::info!(%key, holder = %b, "broke the advisory lock of a holder that is gone");
            }
        }
        if live.is_empty() {
            let mut txns_kept = txns.to_vec();
            txns_kept.sort();
            txns_kept.dedup();
            let want = keep.with(mode);
            holders.insert(
                cx.holder,
                LockHolder {
                    exclusive: want.exclusive,
                    shared: want.shared,
                    txns: txns_kept,
                },
            );
        } else if !broke {
            if if_busy == IfBusy::Give {
                return Ok(false);
            }
            if !waited {
                cx.stats.bump(Event::Wait);
                waited = true;
            }
            wait_once(cx, key, &live, since, &mut backoff).await?;
            continue;
        }
        let taken = live.is_empty();
        if write(cx, &bytes, current.as_ref(), holders).await? && taken {
            return Ok(true);
        }
    }
}

/// Set the session's entry on `key` to `keep` (removing it when `keep` is
/// empty). Returns false when the entry was gone already: the lock was
/// broken while the session believed it held it.
pub async fn release(cx: &LockCx<'_>, key: LockKey, keep: Modes) -> SqlResult<bool> {
    let bytes = key.bytes();
    loop {
        let current = read(cx, &bytes).await?;
        let Some(rec) = &current else {
            return Ok(false);
        };
        let Some(mine) = rec.holders.get(&cx.holder) else {
            return Ok(false);
        };
        if Modes::of(mine) == keep {
            return Ok(true);
        }
        let mut holders = rec.holders.clone();
        if keep.any() {
            let entry = holders.get_mut(&cx.holder).expect("present");
            entry.exclusive = keep.exclusive;
            entry.shared = keep.shared;
        } else {
            holders.remove(&cx.holder);
        }
        if write(cx, &bytes, current.as_ref(), holders).await? {
            return Ok(true);
        }
    }
}

/// Register the session's transactions that may commit under its lock on
/// `key` (the fence; see the module docs). Returns false when the entry is
/// gone: the lock was lost, and those transactions must not commit.
pub async fn register(cx: &LockCx<'_>, key: LockKey, txns: &[TxnId]) -> SqlResult<bool> {
    let bytes = key.bytes();
    let mut want = txns.to_vec();
    want.sort();
    want.dedup();
    loop {
        let current = read(cx, &bytes).await?;
        let Some(rec) = &current else {
            return Ok(false);
        };
        let Some(mine) = rec.holders.get(&cx.holder) else {
            return Ok(false);
        };
        if want.iter().all(|t| mine.txns.contains(t)) && mine.txns.len() == want.len() {
            return Ok(true);
        }
        let mut holders = rec.holders.clone();
        holders.get_mut(&cx.holder).expect("present").txns = want.clone();
        if write(cx, &bytes, current.as_ref(), holders).await? {
            return Ok(true);
        }
    }
}

/// Decide each transaction aborted (or learn it committed: then it did
/// so while its holder held the lock).
async fn fence(cx: &LockCx<'_>, txns: &[TxnId]) -> SqlResult<()> {
    for t in txns {
        decide(cx.store, cx.cfg, cx.stats, *t, TxnRecord::aborted())
            .await
            .map_err(store_error)?;
        cx.stats.bump(Event::Fence);
    }
    Ok(())
}

async fn read(cx: &LockCx<'_>, key: &[u8]) -> SqlResult<Option<LockRecord>> {
    let (rec, _) = with_retries(cx.cfg, cx.stats, || cx.store.read_lock(key))
        .await
        .map_err(store_error)?;
    Ok(rec)
}

/// One CAS from `current` to `holders` with a fresh version. True when it
/// landed (a repeat after an unknown outcome recognises its own version);
/// false when the partition moved on (read it again).
async fn write(
    cx: &LockCx<'_>,
    key: &[u8],
    current: Option<&LockRecord>,
    holders: BTreeMap<Uuid, LockHolder>,
) -> SqlResult<bool> {
    let next = LockRecord {
        version: Uuid::now_v7(),
        holders,
    };
    let version = next.version;
    let answer = with_retries(cx.cfg, cx.stats, || {
        let next = next.clone();
        async move {
            match current {
                None => cx.store.insert_lock(key, next).await,
                Some(c) => cx.store.update_lock(key, c.version, next).await,
            }
        }
    })
    .await;
    match answer {
        Ok((Cas::Applied, _)) => Ok(true),
        Ok((Cas::NotApplied(Some(now)), _)) => Ok(now.version == version),
        Ok((Cas::NotApplied(None), _)) => Ok(false),
        // Unknown after retries: the caller reads again, which settles it
        // (its entry is there or not); a read that fails too ends the
        // statement, and the session puts its entry right later.
        Err(StoreError::Unknown(why)) => {
            cx.stats.bump(Event::Unknown);
            tracing::debug!(%why, "an advisory lock write's outcome is unknown; reading it back");
            Ok(false)
        }
        Err(e) => Err(store_error(e)),
    }
}

/// Wait once for live holders. `lock_timeout` bounds the wait (55P03),
/// a cancel or statement_timeout stops it, and a session that holds
/// advisory locks and has waited `DEADLOCK_TIMEOUT` for an *older* holder
/// gives way with 40P01 (the age order of docs/transactions.md, section
/// 7, with a session's age its holder id's birth): every cycle of waiting
/// sessions has a younger-waits-for-older edge, so none lasts.
async fn wait_once(
    cx: &LockCx<'_>,
    key: LockKey,
    live: &[Uuid],
    since: Instant,
    backoff: &mut Duration,
) -> SqlResult<()> {
    if Instant::now() >= cx.deadline {
        return Err(SqlError::new(
            sqlstate::LOCK_NOT_AVAILABLE,
            "canceling statement due to lock timeout",
        ));
    }
    crate::stop::check(cx.stop)?;
    let me = (txn_birth_ms(&cx.holder), cx.holder);
    let older = live.iter().any(|h| (txn_birth_ms(h), *h) < me);
    if cx.holds && older && since.elapsed() >= DEADLOCK_TIMEOUT {
        return Err(SqlError::new("40P01", "deadlock detected")
            .with_detail(format!(
                "this session waited for advisory lock {key}, held by an older session, longer than deadlock_timeout (1s)"
            ))
            .with_hint("See server log for query details."));
    }
    tokio::time::sleep(*backoff).await;
    *backoff = (*backoff * 2).min(Duration::from_millis(20));
    Ok(())
}

/// The error a session answers once a lock it held was lost (broken after
/// its proxy was silent for longer than the lease): none of its writes may
/// commit, since another session may now be inside the critical section.
pub fn lost(key: LockKey) -> SqlError {
    SqlError::new(
        "40001",
        format!("advisory lock {key} was lost: this session was silent for longer than the lease and another session may hold it"),
    )
    .with_detail("writes of a session that lost an advisory lock are refused until it releases the lock (pg_advisory_unlock or pg_advisory_unlock_all)")
    .with_hint("release the lock, take it again, and retry the work from the start")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_key_spaces_never_meet() {
        assert_ne!(LockKey::bigint(1).bytes(), LockKey::pair(0, 1).bytes());
        assert_eq!(LockKey::pair(-1, -2).to_string(), "(-1, -2)");
        assert_eq!(LockKey::bigint(-7).to_string(), "-7");
        assert_eq!(
            LockKey::pair(1, 2).bytes()[1..],
            0x0000_0001_0000_0002i64.to_be_bytes()
        );
    }
}
