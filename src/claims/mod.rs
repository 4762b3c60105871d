//! The lease-and-verify claim protocol (shared/design/claims.md), written
//! against the `Store` trait only.
//!
//! A claim `(constraint, key) -> owner` means "taken" only while it is
//! *backed*: the owner row is live and holds that key. Every row write is a
//! compare-and-set from the exact version the writer observed, so a fence
//! (a version change) stops any writer that observed the row before it.
//! Safety never depends on clocks or the lease; the lease only decides when
//! an unbacked claim is old enough to take over.

pub mod advisory;
pub mod clock;
pub mod index;
pub mod intents;
#[cfg(test)]
mod model;
pub mod read_view;
mod resolve;
mod row;
mod slots;
mod txn_write;
pub mod wakeups;

pub(crate) use resolve::lock_timeout;
pub use resolve::KeyClaim;
pub use row::{
    delete_row, insert_row, keys_of, restore_row, update_row, RowWrite, WriteError, WriteOutcome,
};
pub use txn_write::{
    finish, lock_row, undo, write_intent, Change, IfBusy, IntentWrite, Locked, Logged,
};

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use uuid::Uuid;

use crate::store::{StoreError, TxnId};

/// Protocol settings (from `[claims]` in the config).
#[derive(Debug, Clone)]
pub struct ClaimConfig {
    pub lease: Duration,
    pub lock_timeout: Duration,
    pub max_retries: u32,
    /// The largest offset between proxies' clocks (`clock`).
    pub max_clock_offset: Duration,
}

/// Counters users watch: conflicts, waits, fences, retries, unknown outcomes.
/// Each event also goes to the metrics registry (`keyclaim_claim_events_total`).
#[derive(Debug, Default)]
pub struct ClaimStats {
    pub conflicts: AtomicU64,
    pub waits: AtomicU64,
    pub fences: AtomicU64,
    pub retries: AtomicU64,
    pub restarts: AtomicU64,
    pub unknown: AtomicU64,
}

/// Something the protocol did that operators want to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A key was found held by another live row (a unique violation).
    Conflict,
    /// A statement waited on another's unfinished claim.
    Wait,
    /// A row was fenced so an expired or younger claim could be taken over.
    Fence,
    /// A store step was retried after an unknown outcome.
    Retry,
    /// An attempt restarted with a new txn (fenced, or the row moved on).
    Restart,
    /// An outcome stayed unknown after retries (answered 40003 or kept claims).
    Unknown,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Conflict => "conflict",
            Event::Wait => "wait",
            Event::Fence => "fence",
            Event::Retry => "retry",
            Event::Restart => "restart",
            Event::Unknown => "unknown_outcome",
        }
    }
}

impl ClaimStats {
    pub fn bump(&self, event: Event) {
        let counter = match event {
            Event::Conflict => &self.conflicts,
            Event::Wait => &self.waits,
            Event::Fence => &self.fences,
            Event::Retry => &self.retries,
            Event::Restart => &self.restarts,
            Event::Unknown => &self.unknown,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("keyclaim_claim_events_total", "event" => event.name()).increment(1);
    }
}

/// A fresh txn id for one attempt of one statement: time-ordered (UUIDv7),
/// so its time part is its birth.
pub fn new_txn() -> TxnId {
    Uuid::now_v7()
}

/// Milliseconds since the epoch at which a txn was born: the first 48
/// bits of a v7 id, and of a transaction id (a v7 marked as v8).
pub fn txn_birth_ms(txn: &TxnId) -> u64 {
    match txn.get_version_num() {
        7 | 8 => {
            let b = txn.as_bytes();
            u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
        }
        _ => txn
            .get_timestamp()
            .map(|ts| {
                let (secs, nanos) = ts.to_unix();
                secs * 1000 + u64::from(nanos) / 1_000_000
            })
            .unwrap_or(0),
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Retry an idempotent store step after unknown outcomes, up to `max` times.
/// The step must be safe to repeat with the same txn (rule: retries reuse the txn).
pub(crate) async fn with_retries<T, F, Fut>(
    cfg: &ClaimConfig,
    stats: &ClaimStats,
    mut step: F,
) -> Result<(T, bool), StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut retried = false;
    let mut attempt = 0;
    loop {
        match step().await {
            Ok(v) => return Ok((v, retried)),
            Err(StoreError::Unknown(_)) if attempt < cfg.max_retries => {
                stats.bump(Event::Retry);
                retried = true;
                attempt += 1;
                // Jittered: writers that met one timeout together (Paxos
                // contention on a real cluster) must not retry together.
                let ceiling = 5u64 << attempt.min(6);
                let pause = rand::Rng::gen_range(&mut rand::thread_rng(), 1..=ceiling);
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            // Once any try's outcome was unknown, a later "certainly not
            // applied" is only about that later try: the first may have
            // landed, so the step as a whole stays unknown (found by the
            // model check: treating it as not applied released claims that
            // backed a committed row).
            Err(StoreError::Unavailable(why)) if retried => {
                return Err(StoreError::Unknown(format!(
                    "after an unknown outcome: {why}"
                )))
            }
            Err(e) => return Err(e),
        }
    }
}

/// Row `pk` as it stands once no undecided transaction is writing it
/// (waiting for one that is, within `w.deadline`); None when absent or dead.
/// Index builds read rows this way, so that a transaction's row gets the
/// new index's claim whatever it commits.
pub async fn settled_row(
    w: &RowWrite<'_>,
    pk: &[u8],
    row: crate::store::RowRecord,
) -> Result<Option<crate::store::RowRecord>, WriteError> {
    Ok(row::settled(w, pk, row).await?.filter(|r| r.live))
}

/// Claim keys for an existing row (index builds): the same claim step writes use.
pub async fn claim_keys(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    owner: &[u8],
    txn: TxnId,
) -> Result<(), WriteError> {
    resolve::claim_all(w, keys, owner, txn).await
}
