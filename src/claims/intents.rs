//! Transactions in the claim protocol (docs/transactions.md): transaction
//! ids, what an intent on a row means to whoever meets it, and when a
//! transaction's proxy counts as gone.
//!
//! A row's committed state is what everyone sees, unless it carries an
//! intent whose transaction record says committed; an intent of an
//! undecided transaction is waited for by writers and passed over by
//! readers. Deciding is one `IF NOT EXISTS` on the record, so a resolver
//! that aborts a transaction whose proxy stopped heartbeating fences it:
//! its COMMIT can no longer land. Safety never depends on the heartbeat.

use std::time::{Duration, Instant};

use dashmap::DashSet;
use uuid::Uuid;

use super::resolve::before_retry;
use super::wakeups::Wakeups;
use super::{now_ms, with_retries, RowWrite, WriteError};
use crate::catalog::store_error;
use crate::error::SqlError;
use crate::store::{Cas, Intent, RowRecord, Stamp, Store, TxnId, TxnRecord, TxnStatus};

/// The UUID version nibble that marks a transaction id. Statement attempts
/// are UUIDv7; a transaction id is a v7 with this version, so every claim
/// and intent says which kind of writer made it, with no extra column.
const TRANSACTION_VERSION: u8 = 8;

/// A fresh transaction id minted by proxy `proxy`: the v7 time (its birth)
/// and the proxy's id in the last four bytes, so a resolver can find the
/// proxy's heartbeat.
pub fn new_transaction_id(proxy: u32) -> TxnId {
    let mut bytes = *Uuid::now_v7().as_bytes();
    bytes[6] = (bytes[6] & 0x0f) | (TRANSACTION_VERSION << 4);
    bytes[12..16].copy_from_slice(&proxy.to_be_bytes());
    Uuid::from_bytes(bytes)
}

/// Whether `id` names a transaction (else a single-statement attempt,
/// whose row is its own record).
pub fn is_transaction(id: &TxnId) -> bool {
    id.as_bytes()[6] >> 4 == TRANSACTION_VERSION
}

/// The proxy that minted transaction `id`.
pub fn proxy_of(id: &TxnId) -> u32 {
    let b = id.as_bytes();
    u32::from_be_bytes([b[12], b[13], b[14], b[15]])
}

/// What this proxy knows about transactions: its own id, which of its
/// transactions are open, and how long a silent proxy is given.
pub struct Peers {
    pub proxy: u32,
    open: DashSet<TxnId>,
    /// Writers waiting for one of this proxy's open transactions to close
    /// (`Peers::pause_for`).
    closed: Wakeups<TxnId>,
    /// Advisory lock holders (sessions) of this proxy that still exist.
    holders: DashSet<Uuid>,
    lease: Duration,
}

impl Peers {
    pub fn new(lease: Duration) -> Peers {
        Peers {
            proxy: rand::random(),
            open: DashSet::new(),
            closed: Wakeups::default(),
            holders: DashSet::new(),
            lease,
        }
    }

    /// A new transaction of this proxy, open until [`Peers::close`].
    pub fn begin(&self) -> TxnId {
        let id = new_transaction_id(self.proxy);
        self.open.insert(id);
        id
    }

    /// The transaction is no longer open here (decided, or being
    /// aborted): whoever waits for it looks at its rows again now.
    pub fn close(&self, id: &TxnId) {
        self.open.remove(id);
        self.closed.wake(id);
    }

    /// A waiter's pause before it looks at `holder`'s row again: `pause`,
    /// cut short when `holder` is a transaction of this proxy and closes,
    /// so a row's next writer follows its commit at once rather than after
    /// a poll interval (a queue of writers on one hot row, as in pgbench's
    /// TPC-B, otherwise moves one poll per commit). Another proxy's
    /// transaction is polled: nothing tells this proxy when it ends.
    pub async fn pause_for(&self, holder: &TxnId, pause: Duration) {
        if proxy_of(holder) != self.proxy || !is_transaction(holder) {
            tokio::time::sleep(pause).await;
            return;
        }
        // Registered before the check below, so a close in between wakes it.
        let watch = self.closed.watch(holder);
        if self.open.contains(holder) {
            watch.pause(pause).await;
        } else {
            // Closed already: look again at once.
            self.closed.forget(holder);
        }
    }

    /// A new advisory lock holder (a session), alive until
    /// [`Peers::holder_gone`]. Its id carries its birth (its age in waits)
    /// and this proxy's id, as a transaction id does.
    pub fn new_holder(&self) -> Uuid {
        let mut bytes = *Uuid::now_v7().as_bytes();
        bytes[12..16].copy_from_slice(&self.proxy.to_be_bytes());
        let id = Uuid::from_bytes(bytes);
        self.holders.insert(id);
        id
    }

    pub fn holder_gone(&self, id: &Uuid) {
        self.holders.remove(id);
    }

    /// Whether an advisory lock holder may still be alive: ours while its
    /// session exists; another proxy's while that proxy heartbeats.
    pub async fn holder_may_be_alive(&self, store: &dyn Store, holder: &Uuid) -> bool {
        if proxy_of(holder) == self.proxy {
            return self.holders.contains(holder);
        }
        self.proxy_may_be_alive(store, holder).await
    }

    /// The lease, which liveness is judged by.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How often to write the heartbeat: well inside the lease.
    pub fn heartbeat_every(&self) -> Duration {
        (self.lease / 4).max(Duration::from_millis(10))
    }

    /// Whether an undecided transaction may still be running: ours while
    /// a session has it open; another proxy's while that proxy heartbeats.
    pub async fn may_be_running(&self, store: &dyn Store, txn: &TxnId) -> bool {
        if proxy_of(txn) == self.proxy {
            return self.open.contains(txn);
        }
        self.proxy_may_be_alive(store, txn).await
    }

    /// Whether the proxy that minted `id` (a transaction or a lock holder)
    /// has heartbeaten within the lease.
    async fn proxy_may_be_alive(&self, store: &dyn Store, id: &Uuid) -> bool {
        let txn = id;
        match store.read_heartbeat(proxy_of(id)).await {
            Ok(Some(at)) => now_ms().saturating_sub(at) < self.lease.as_millis() as u64,
            Ok(None) => {
                // A proxy that has not written its first heartbeat yet is
                // given one lease from the transaction's birth.
                now_ms().saturating_sub(super::txn_birth_ms(txn)) < self.lease.as_millis() as u64
            }
            // Unreachable store: do not abort on a guess; the wait's own
            // deadline bounds it.
            Err(_) => true,
        }
    }
}

/// A transaction's state as a reader or writer meets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Committed at this stamp.
    Committed(Stamp),
    Aborted,
    Undecided,
}

impl From<Option<TxnRecord>> for Decision {
    fn from(rec: Option<TxnRecord>) -> Decision {
        match rec {
            Some(TxnRecord {
                status: TxnStatus::Committed,
                at,
            }) => Decision::Committed(at),
            Some(_) => Decision::Aborted,
            None => Decision::Undecided,
        }
    }
}

impl Decision {
    /// When it committed; None while it may not have.
    pub fn committed_at(self) -> Option<Stamp> {
        match self {
            Decision::Committed(at) => Some(at),
            _ => None,
        }
    }
}

/// Read a transaction's record (SERIAL, retried).
pub async fn decision(w: &RowWrite<'_>, txn: TxnId) -> Result<Decision, WriteError> {
    let (rec, _) = with_retries(w.cfg, w.stats, || w.store.read_txn_record(txn))
        .await
        .map_err(|e| WriteError::Sql(store_error(e)))?;
    Ok(rec.into())
}

/// Decide `txn` as `rec` says unless it is decided already; returns the
/// record that stands.
pub async fn decide(
    store: &dyn Store,
    cfg: &super::ClaimConfig,
    stats: &super::ClaimStats,
    txn: TxnId,
    rec: TxnRecord,
) -> Result<TxnRecord, crate::store::StoreError> {
    let (cas, _) = with_retries(cfg, stats, || store.insert_txn_record(txn, rec)).await?;
    Ok(match cas {
        Cas::Applied => rec,
        Cas::NotApplied(Some(existing)) => existing,
        // A record never goes away while anything names it; treat an
        // answer without one as not knowing.
        Cas::NotApplied(None) => {
            return Err(crate::store::StoreError::Unknown(
                "a transaction record was neither written nor found".into(),
            ))
        }
    })
}

/// The committed state a row shows once its intent's transaction is
/// decided: the intent's when it committed (at `committed`), the previous
/// committed state kept as `prev`; the row's own otherwise. The version
/// stays the partition's (what a CAS must expect).
pub fn folded(row: &RowRecord, committed: Option<Stamp>) -> RowRecord {
    match (&row.intent, committed) {
        (Some(intent), Some(at)) => {
            let (claims, values) = match intent.live {
                true => (intent.claims.clone(), intent.values.clone()),
                false => Default::default(),
            };
            row.succeeded(intent.live, claims, values, at, intent.txn)
        }
        _ => RowRecord {
            intent: None,
            ..row.clone()
        },
    }
}

/// A row's state as a writer of transaction `own` sees it: its own intent.
pub fn own_view(row: &RowRecord, intent: &Intent) -> RowRecord {
    RowRecord {
        live: intent.live,
        claims: intent.claims.clone().into(),
        values: intent.values.clone(),
        intent: None,
        ..row.clone()
    }
}

/// What a writer finds on a row.
pub enum Settled {
    /// No undecided intent of another transaction: the row as it stands for
    /// this writer (committed, folded, or this transaction's own intent),
    /// with the partition's version.
    Ready(RowRecord),
    /// An intent of another transaction that may still commit.
    Busy(TxnId),
}

/// Settle a row for a writer: look up the record of an intent it carries;
/// abort the transaction if its proxy is gone.
///
/// A committed decision is read after the row, and the transaction may have
/// replaced that intent (ROLLBACK TO, a later statement) before it
/// committed: the row is read again, and only an intent still in place
/// when the record already said committed is taken as the committed state.
pub async fn settle(
    w: &RowWrite<'_>,
    pk: &[u8],
    mut row: RowRecord,
) -> Result<Settled, WriteError> {
    loop {
        let Some(intent) = &row.intent else {
            return Ok(Settled::Ready(row));
        };
        if Some(intent.txn) == w.own {
            return Ok(Settled::Ready(own_view(&row, intent)));
        }
        let txn = intent.txn;
        let committed = match decision(w, txn).await? {
            Decision::Undecided => match abort_if_gone(w, txn).await? {
                Some(rec) => Decision::from(Some(rec)),
                None => return Ok(Settled::Busy(txn)),
            },
            decided => decided,
        };
        let Some(at) = committed.committed_at() else {
            return Ok(Settled::Ready(folded(&row, None)));
        };
        match super::row::read(w, pk).await? {
            Some(now) if now.version == row.version => {
                return Ok(Settled::Ready(folded(&row, Some(at))))
            }
            Some(now) => row = now,
            None => return Ok(Settled::Ready(RowRecord::dead(row.version))),
        }
    }
}

/// If `txn`'s proxy is gone, abort it (or learn that it committed after
/// all): the record that stands. None while it may still be running.
pub async fn abort_if_gone(w: &RowWrite<'_>, txn: TxnId) -> Result<Option<TxnRecord>, WriteError> {
    let Some(peers) = w.peers else {
        return Ok(None);
    };
    if peers.may_be_running(w.store, &txn).await {
        return Ok(None);
    }
    let rec = decide(w.store, w.cfg, w.stats, txn, TxnRecord::aborted())
        .await
        .map_err(|e| WriteError::Sql(store_error(e)))?;
    if rec.status == TxnStatus::Aborted {
        tracing::info!(%txn, "aborted a transaction whose proxy stopped heartbeating");
    }
    Ok(Some(rec))
}

/// Waiting for another writer: how long, and when a wait may be a deadlock.
pub struct Wait {
    since: Instant,
    backoff: Duration,
    /// Whether the waiter may hold something another waits for; one that
    /// holds nothing (a row lock outside a transaction) is in no cycle.
    holds: bool,
}

impl Default for Wait {
    fn default() -> Self {
        Wait {
            since: Instant::now(),
            backoff: Duration::from_millis(1),
            holds: true,
        }
    }
}

/// PostgreSQL's deadlock_timeout default: how long a younger waiter waits
/// for an older holder before it gives way.
pub const DEADLOCK_TIMEOUT: Duration = Duration::from_secs(1);

impl Wait {
    /// A wait of a waiter that holds nothing: no age rule, only the lock
    /// timeout bounds it.
    pub fn holding_nothing() -> Wait {
        Wait {
            holds: false,
            ..Wait::default()
        }
    }

    /// Wait once for `holder`. Across transactions key order cannot be
    /// imposed, so waits are ordered by age instead: a waiter may wait for
    /// a younger holder as long as its lock timeout allows, but one that
    /// has waited `DEADLOCK_TIMEOUT` for an older holder is aborted with
    /// 40P01. Every cycle of waits has a younger-waits-for-older edge, so
    /// none lasts, and the oldest transaction never gives way. Waits among
    /// single statements keep the key order (`resolve`) and no age rule.
    pub async fn once(&mut self, w: &RowWrite<'_>, holder: &TxnId) -> Result<(), WriteError> {
        before_retry(w)?;
        let across_transactions = w.own.is_some() || is_transaction(holder);
        // Ties within a millisecond are broken by id, so of two
        // transactions exactly one is the older.
        let me = (w.born_ms, w.own.unwrap_or(Uuid::max()));
        let holder_older = (super::txn_birth_ms(holder), *holder) < me;
        if self.holds
            && across_transactions
            && holder_older
            && self.since.elapsed() >= DEADLOCK_TIMEOUT
        {
            return Err(WriteError::Sql(deadlock()));
        }
        match w.peers {
            Some(peers) => peers.pause_for(holder, self.backoff).await,
            None => tokio::time::sleep(self.backoff).await,
        }
        self.back_off();
        Ok(())
    }

    /// Sleep before looking again, backing off from 1 ms to 20 ms.
    pub async fn pause(&mut self) {
        tokio::time::sleep(self.backoff).await;
        self.back_off();
    }

    fn back_off(&mut self) {
        self.backoff = (self.backoff * 2).min(Duration::from_millis(20));
    }

    /// How long this wait has lasted.
    pub fn waited(&self) -> Duration {
        self.since.elapsed()
    }
}

pub fn deadlock() -> SqlError {
    SqlError::new("40P01", "deadlock detected")
        .with_detail("a transaction waited for an older one longer than deadlock_timeout (1s)")
        .with_hint("See server log for query details.")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait for one of this proxy's transactions ends when it closes,
    /// not when the pause runs out; one for a transaction already closed
    /// does not wait, and leaves nothing registered.
    #[tokio::test]
    async fn a_wait_for_an_own_transaction_ends_when_it_closes() {
        use std::sync::Arc;
        let peers = Arc::new(Peers::new(Duration::from_secs(1)));
        let holder = peers.begin();
        let waiter = tokio::spawn({
            let peers = peers.clone();
            async move { peers.pause_for(&holder, Duration::from_secs(600)).await }
        });
        while peers.closed.is_empty() {
            tokio::task::yield_now().await;
        }
        peers.close(&holder);
        tokio::time::timeout(Duration::from_secs(60), waiter)
            .await
            .expect("the wait ends at the close, not after its pause")
            .unwrap();
        assert!(peers.closed.is_empty());
        tokio::time::timeout(
            Duration::from_secs(60),
            peers.pause_for(&holder, Duration::from_secs(600)),
        )
        .await
        .expect("a closed transaction is not waited for");
        assert!(peers.closed.is_empty());
    }

    #[test]
    fn transaction_ids_carry_their_kind_proxy_and_birth() {
        let id = new_transaction_id(0xdead_beef);
        assert!(is_transaction(&id));
        assert!(!is_transaction(&super::super::new_txn()));
        assert_eq!(proxy_of(&id), 0xdead_beef);
        let born = super::super::txn_birth_ms(&id);
        assert!(now_ms().abs_diff(born) < 5_000, "{born}");
    }
}
