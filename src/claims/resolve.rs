//! Taking claims, and deciding what an existing claim means.

use std::cmp::Ordering;
use std::time::Instant;

use futures::future::join_all;

use super::intents::{self, Decision, Settled, Wait};
use super::{new_txn, now_ms, txn_birth_ms, with_retries, Event, RowWrite, WriteError};
use crate::catalog::{store_error, ClaimOn};
use crate::error::{sqlstate, SqlError};
use crate::store::{Cas, ClaimRecord, RowRecord, TxnId};

/// One key a statement claims: what it is on (an index for
/// `TableDef::claim_on`: a UNIQUE constraint or a count limit), its key
/// bytes, and for a count limit the slot the key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    pub unique: usize,
    pub key: Vec<u8>,
    pub slot: Option<u32>,
}

impl KeyClaim {
    /// What the claim is on.
    pub fn on<'t>(&self, table: &'t crate::catalog::TableDef) -> ClaimOn<'t> {
        table.claim_on(self.unique)
    }

    /// The `__claims` entry of a row holding this key.
    pub fn entry(&self, table: &crate::catalog::TableDef) -> String {
        self.on(table).entry(self.slot)
    }
}

/// What an existing claim turned out to mean.
enum Resolution {
    /// Backed by another live row: a unique violation.
    Taken { owner: Vec<u8> },
    /// Backed by the very row this statement writes.
    ThisRow,
    /// Unbacked and within its lease: another statement is still writing.
    InFlight,
    /// Taken over (fenced and removed) or changed since: claim again now.
    Cleared,
}

/// What `claim_one` does about a claim another statement is still writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnBusy {
    /// Give up the key for now and say so (the parallel first pass).
    Report,
    /// Wait for it to commit, be released or expire (in key order only).
    Wait,
}

/// How a `claim_one` that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claimed {
    Ours,
    /// Held by a statement still in flight (`OnBusy::Report` only).
    Busy,
}

/// Claims every key for `owner` with `txn`. On failure releases what it took
/// and returns the first failure in constraint order.
pub(crate) async fn claim_all(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    owner: &[u8],
    txn: TxnId,
) -> Result<(), WriteError> {
    claim_more(w, Vec::new(), keys, owner, txn).await
}

/// Claims `keys` for `owner` with `txn` while already holding `held` (with
/// the same txn). On failure releases all of them.
///
/// All keys are tried at once and none is waited for, so an uncontended
/// statement pays one round trip. If another statement is still writing one
/// of the keys, the rest are taken one at a time in the global key order
/// (`claim_in_order`); waiting only ever happens there, which is what keeps
/// two multi-key statements from waiting on each other forever.
async fn claim_more(
    w: &RowWrite<'_>,
    mut held: Vec<KeyClaim>,
    keys: &[KeyClaim],
    owner: &[u8],
    txn: TxnId,
) -> Result<(), WriteError> {
    // A lone key can be waited for at once: nothing else is held meanwhile.
    let on_busy = if keys.len() == 1 && held.is_empty() {
        OnBusy::Wait
    } else {
        OnBusy::Report
    };
    // A lone key (the common INSERT) is awaited as it is: joining one
    // future costs a list of it and the join's bookkeeping.
    let results = match keys {
        [k] => vec![claim_one(w, k, owner, txn, on_busy).await],
        _ => join_all(keys.iter().map(|k| claim_one(w, k, owner, txn, on_busy))).await,
    };
    let mut busy = Vec::new();
    let mut first_err = None;
    for (k, r) in keys.iter().zip(results) {
        match r {
            Ok(Claimed::Ours) => held.push(k.clone()),
            Ok(Claimed::Busy) => busy.push(k.clone()),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        release(w, &held, txn, None).await;
        return Err(e);
    }
    if busy.is_empty() {
        return Ok(());
    }
    claim_in_order(w, held, busy, owner, txn).await
}

/// The contended path of `claim_all`. Keep only the held keys ordered before
/// the first busy one, release the others, then claim the rest one by one in
/// key order, waiting for each. A waiting statement then holds only keys
/// ordered before the one it waits for, so every chain of waits climbs the
/// order and none can close into a cycle: no deadlock, and no need to fence a
/// live statement (wound-wait did that, and could starve the older one).
async fn claim_in_order(
    w: &RowWrite<'_>,
    held: Vec<KeyClaim>,
    busy: Vec<KeyClaim>,
    owner: &[u8],
    txn: TxnId,
) -> Result<(), WriteError> {
    let order = |a: &KeyClaim, b: &KeyClaim| key_order(w, a, b);
    let first_busy = busy.iter().min_by(|a, b| order(a, b)).cloned();
    let Some(first_busy) = first_busy else {
        return Ok(());
    };
    let (mut kept, after): (Vec<KeyClaim>, Vec<KeyClaim>) = held
        .into_iter()
        .partition(|k| order(k, &first_busy) == Ordering::Less);
    release(w, &after, txn, None).await;
    let mut rest: Vec<KeyClaim> = busy.into_iter().chain(after).collect();
    rest.sort_by(order);
    for k in rest {
        if let Err(e) = claim_one(w, &k, owner, txn, OnBusy::Wait).await {
            release(w, &kept, txn, None).await;
            return Err(e);
        }
        kept.push(k);
    }
    Ok(())
}

/// The one order every proxy takes contended claims in: by constraint
/// storage id, then key bytes (ids are stable across catalog versions,
/// positions in `uniques` are not).
fn key_order(w: &RowWrite<'_>, a: &KeyClaim, b: &KeyClaim) -> Ordering {
    let id = |k: &KeyClaim| k.on(w.table).id();
    (id(a), &a.key).cmp(&(id(b), &b.key))
}

/// `INSERT claim IF NOT EXISTS`, resolving whatever is there until it is
/// ours, or until it is busy and `on_busy` says to report that.
pub(super) async fn claim_one(
    w: &RowWrite<'_>,
    k: &KeyClaim,
    owner: &[u8],
    txn: TxnId,
    on_busy: OnBusy,
) -> Result<Claimed, WriteError> {
    let constraint = k.on(w.table);
    let mut wait = Wait::default();
    loop {
        let claim = ClaimRecord {
            owner: owner.to_vec(),
            txn,
        };
        let (cas, _) = with_retries(w.cfg, w.stats, || {
            w.store.insert_claim(constraint.id(), &k.key, claim.clone())
        })
        .await
        .map_err(|e| WriteError::Sql(store_error(e)))?;
        let existing = match cas {
            Cas::Applied => return Ok(Claimed::Ours),
            // Ours: made by this attempt for this row (an index build claims
            // many rows with one txn, so the owner must match too).
            Cas::NotApplied(Some(existing)) if existing.txn == txn && existing.owner == owner => {
                return Ok(Claimed::Ours)
            }
            Cas::NotApplied(Some(existing)) => existing,
            Cas::NotApplied(None) => continue,
        };
        match resolve(w, k, &existing, owner).await? {
            Resolution::Taken { owner } => {
                w.stats.bump(Event::Conflict);
                return Err(WriteError::Duplicate {
                    unique: Some(k.unique),
                    owner,
                });
            }
            Resolution::ThisRow => return Err(WriteError::ThisRow),
            Resolution::InFlight if on_busy == OnBusy::Report => return Ok(Claimed::Busy),
            Resolution::InFlight => {
                w.stats.bump(Event::Wait);
                // The lock timeout, a cancel or statement_timeout end a
                // wait, as in PostgreSQL; across transactions, so does
                // waiting too long for an older holder (40P01).
                wait.once(w, &existing.txn).await?;
            }
            Resolution::Cleared => before_retry(w)?,
        }
    }
}

/// What the owner row, as this writer sees it, says of a claim.
enum Backing {
    /// It holds the key: the claim stands (`Taken` or `ThisRow`).
    Backed(Resolution),
    /// An undecided transaction is writing it.
    InFlight,
    /// It does not hold the key; the row as read (for a fence).
    Unbacked(Option<RowRecord>),
}

/// Read the owner row (SERIAL) and see whether it backs the claim.
async fn backing(
    w: &RowWrite<'_>,
    k: &KeyClaim,
    existing: &ClaimRecord,
    my_owner: &[u8],
) -> Result<Backing, WriteError> {
    let constraint = k.on(w.table);
    let (row, _) = with_retries(w.cfg, w.stats, || {
        w.store.read_row(w.table, &existing.owner)
    })
    .await
    .map_err(|e| WriteError::Sql(store_error(e)))?;
    // The owner row as this writer sees it: an undecided transaction still
    // writing it makes the claim in flight, whoever made the claim.
    let view = match &row {
        Some(r) => match own_intent(w, r) {
            Some(mine) => {
                let committed = RowRecord {
                    intent: None,
                    ..r.clone()
                };
                if constraint.backed_by(&k.key, &committed) && !constraint.backed_by(&k.key, &mine)
                {
                    return Err(WriteError::Sql(reused_key()));
                }
                Some(mine)
            }
            None => match intents::settle(w, &existing.owner, r.clone()).await? {
                Settled::Ready(view) => Some(view),
                Settled::Busy(_) => return Ok(Backing::InFlight),
            },
        },
        None => None,
    };
    let backed = view
        .as_ref()
        .is_some_and(|r| constraint.backed_by(&k.key, r));
    if !backed {
        return Ok(Backing::Unbacked(row));
    }
    Ok(Backing::Backed(if existing.owner == my_owner {
        Resolution::ThisRow
    } else {
        Resolution::Taken {
            owner: existing.owner.clone(),
        }
    }))
}

/// Read the owner row (SERIAL) and decide: backed, in flight, or stale.
async fn resolve(
    w: &RowWrite<'_>,
    k: &KeyClaim,
    existing: &ClaimRecord,
    my_owner: &[u8],
) -> Result<Resolution, WriteError> {
    let constraint = k.on(w.table);
    let row = match backing(w, k, existing, my_owner).await? {
        Backing::Backed(resolution) => return Ok(resolution),
        Backing::InFlight => return Ok(Resolution::InFlight),
        Backing::Unbacked(row) => row,
    };
    if intents::is_transaction(&existing.txn) {
        return transaction_claim(w, k, existing, my_owner).await;
    }
    let holder_birth = txn_birth_ms(&existing.txn);
    let expired = now_ms().saturating_sub(holder_birth) >= w.cfg.lease.as_millis() as u64;
    if !expired {
        return Ok(Resolution::InFlight);
    }
    if !fence(w, &existing.owner, row).await? {
        return Ok(Resolution::Cleared);
    }
    // The holder can no longer commit; its claim is stale. Remove it only if
    // it is still the one we judged (IF txn = X), then claim again.
    let _ = w
        .store
        .delete_claim(constraint.id(), &k.key, existing.txn)
        .await;
    Ok(Resolution::Cleared)
}

/// An unbacked claim made by a transaction: stale once the transaction is
/// decided (its record, not a fence, stops it), in flight while it may
/// still be running, aborted once its proxy is gone. A transaction's own
/// claim naming a row that no longer backs it is simply taken back.
///
/// The owner row was read before the record: a transaction that wrote the
/// row (backing the claim) and committed in between would look committed
/// and unbacked. So a committed decision is checked against the row read
/// again after it; a decided transaction writes no more, so that reading
/// is final for its part (found by the model check, `model::found`).
async fn transaction_claim(
    w: &RowWrite<'_>,
    k: &KeyClaim,
    existing: &ClaimRecord,
    my_owner: &[u8],
) -> Result<Resolution, WriteError> {
    let constraint = k.on(w.table);
    let committed = if Some(existing.txn) == w.own {
        Some(false)
    } else {
        match intents::decision(w, existing.txn).await? {
            Decision::Committed(_) => Some(true),
            Decision::Aborted => Some(false),
            Decision::Undecided => intents::abort_if_gone(w, existing.txn)
                .await?
                .map(|rec| rec.status == crate::store::TxnStatus::Committed),
        }
    };
    match committed {
        None => return Ok(Resolution::InFlight),
        Some(true) => match backing(w, k, existing, my_owner).await? {
            Backing::Backed(resolution) => return Ok(resolution),
            Backing::InFlight => return Ok(Resolution::InFlight),
            Backing::Unbacked(_) => {}
        },
        Some(false) => {}
    }
    let _ = w
        .store
        .delete_claim(constraint.id(), &k.key, existing.txn)
        .await;
    Ok(Resolution::Cleared)
}

/// The row as this writer's own transaction has written it, if it has.
fn own_intent(w: &RowWrite<'_>, row: &RowRecord) -> Option<RowRecord> {
    let intent = row.intent.as_ref()?;
    (Some(intent.txn) == w.own).then(|| intents::own_view(row, intent))
}

/// Whether `e` is [`reused_key`]'s error.
pub(super) fn is_reused_key(e: &SqlError) -> bool {
    e.code == sqlstate::FEATURE_NOT_SUPPORTED && e.message == reused_key().message
}

/// A transaction that freed a unique value (deleted or changed the row
/// holding it) and wants it for another row before it commits.
fn reused_key() -> SqlError {
    SqlError::unsupported(
        "a transaction cannot give a unique value to another row before it commits the change that freed it",
        "COMMIT the DELETE or UPDATE that frees the value first, then write the new row",
    )
}

/// Fence row `owner`: change its version by CAS from the state just read, so
/// that any statement that observed it before can never commit. Returns
/// false if the row moved on (re-resolve).
pub(crate) async fn fence(
    w: &RowWrite<'_>,
    owner: &[u8],
    observed: Option<RowRecord>,
) -> Result<bool, WriteError> {
    let f = new_txn();
    let (cas, _) = with_retries(w.cfg, w.stats, || {
        let store = w.store;
        let table = w.table;
        let observed = observed.clone();
        async move {
            match observed {
                None => store.insert_row(table, owner, RowRecord::dead(f)).await,
                Some(r) => {
                    let expected = r.version;
                    let fenced = RowRecord { version: f, ..r };
                    store.update_row(table, owner, expected, fenced).await
                }
            }
        }
    })
    .await
    .map_err(|e| WriteError::Sql(store_error(e)))?;
    let applied = match cas {
        Cas::Applied => true,
        // A retried fence that landed the first time sees its own version.
        Cas::NotApplied(Some(cur)) => cur.version == f,
        Cas::NotApplied(None) => false,
    };
    if applied {
        w.stats.bump(Event::Fence);
    }
    Ok(applied)
}

/// Release claims made with `txn` (`DELETE IF txn = T`), except those `row`
/// backs. Best effort: a claim left behind is unbacked and resolved later.
pub(crate) async fn release(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    txn: TxnId,
    row: Option<&RowRecord>,
) {
    // Kept if the row's committed state or an intent on it holds the key:
    // keeping a claim is always safe, an unbacked one is resolved later.
    let backed_by_row = |k: &KeyClaim| {
        row.is_some_and(|r| {
            let on = k.on(w.table);
            on.backed_by(&k.key, r)
                || r.intent.as_ref().is_some_and(|i| {
                    i.live && on.key_of(&i.values, &i.claims).as_deref() == Some(&k.key[..])
                })
        })
    };
    let deletes = keys
        .iter()
        .filter(|k| !backed_by_row(k))
        .map(|k| w.store.delete_claim(k.on(w.table).id(), &k.key, txn));
    join_all(deletes).await;
}

/// Move our claims from `old` to `new` txn after a restart; a claim that was
/// taken over meanwhile is claimed afresh, and a lost slot of a count limit
/// is taken again wherever one is free (for the row of `values`). The keys
/// now held, all with `new`.
pub(crate) async fn restamp_all(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    owner: &[u8],
    old: TxnId,
    new: TxnId,
    values: &[crate::types::Value],
) -> Result<Vec<KeyClaim>, WriteError> {
    let mut lost = Vec::new();
    for k in keys {
        let id = k.on(w.table).id();
        let (cas, _) = with_retries(w.cfg, w.stats, || {
            w.store.restamp_claim(id, &k.key, old, new)
        })
        .await
        .map_err(|e| WriteError::Sql(store_error(e)))?;
        match cas {
            Cas::Applied => {}
            Cas::NotApplied(Some(cur)) if cur.txn == new => {}
            Cas::NotApplied(_) => lost.push(k.clone()),
        }
    }
    if lost.is_empty() {
        return Ok(keys.to_vec());
    }
    let mut held: Vec<KeyClaim> = keys.iter().filter(|k| !lost.contains(k)).cloned().collect();
    let (lost_slots, lost): (Vec<KeyClaim>, Vec<KeyClaim>) =
        lost.into_iter().partition(|k| k.slot.is_some());
    let unplaced: Vec<usize> = lost_slots.iter().map(|k| k.unique).collect();
    match super::slots::place(w, &unplaced, values, owner, new).await {
        Ok(placed) => held.extend(placed),
        Err(e) => {
            release(w, &held, new, None).await;
            return Err(e);
        }
    }
    let all: Vec<KeyClaim> = held.iter().chain(&lost).cloned().collect();
    claim_more(w, held, &lost, owner, new).await?;
    Ok(all)
}

/// Before a write tries again (a claim after a wait or a takeover, a row
/// after a restart): past the statement's lock deadline it fails with
/// 55P03, and a requested stop stops it.
pub(crate) fn before_retry(w: &RowWrite<'_>) -> Result<(), WriteError> {
    if Instant::now() >= w.deadline {
        return Err(WriteError::Sql(lock_timeout()));
    }
    crate::stop::check(w.stop)?;
    Ok(())
}

pub(crate) fn lock_timeout() -> SqlError {
    SqlError::new(
        sqlstate::LOCK_NOT_AVAILABLE,
        "canceling statement due to lock timeout",
    )
    .with_hint(
        "another statement holds a claim on the same key; raise claims.lock_timeout_ms or retry",
    )
}
