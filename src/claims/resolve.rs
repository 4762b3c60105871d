//! Taking claims, and deciding what an existing claim means.

use std::time::{Duration, Instant};

use futures::future::join_all;

use super::{new_txn, now_ms, txn_birth_ms, with_retries, Event, RowWrite, WriteError};
use crate::catalog::store_error;
use crate::error::{sqlstate, SqlError};
use crate::store::{Cas, ClaimRecord, RowRecord, TxnId};

/// One key a statement claims: the constraint (index into `TableDef::uniques`) and its key bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    pub unique: usize,
    pub key: Vec<u8>,
}

/// What an existing claim turned out to mean.
enum Resolution {
    /// Backed by another live row: a unique violation.
    Taken { owner: Vec<u8> },
    /// Backed by the very row this statement writes.
    ThisRow,
    /// Cleared (taken over or released) or waited on: claim again.
    Again,
}

/// Claims every key for `owner` with `txn`, in parallel. On failure releases
/// what it took and returns the first failure in constraint order.
pub(crate) async fn claim_all(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    owner: &[u8],
    txn: TxnId,
    deadline: Instant,
) -> Result<(), WriteError> {
    let wound = keys.len() > 1;
    let results = join_all(
        keys.iter()
            .map(|k| claim_one(w, k, owner, txn, wound, deadline)),
    )
    .await;
    let mut first_err = None;
    let mut taken = Vec::new();
    for (k, r) in keys.iter().zip(results) {
        match r {
            Ok(()) => taken.push(k.clone()),
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
    }
    match first_err {
        None => Ok(()),
        Some(e) => {
            release(w, &taken, txn, None).await;
            Err(e)
        }
    }
}

/// `INSERT claim IF NOT EXISTS`, resolving whatever is there until it is ours.
async fn claim_one(
    w: &RowWrite<'_>,
    k: &KeyClaim,
    owner: &[u8],
    txn: TxnId,
    wound: bool,
    deadline: Instant,
) -> Result<(), WriteError> {
    let constraint = &w.table.uniques[k.unique];
    let mut backoff = Duration::from_millis(1);
    loop {
        let claim = ClaimRecord {
            owner: owner.to_vec(),
            txn,
        };
        let (cas, _) = with_retries(w.cfg, w.stats, || {
            w.store.insert_claim(&constraint.id, &k.key, claim.clone())
        })
        .await
        .map_err(|e| WriteError::Sql(store_error(e)))?;
        let existing = match cas {
            Cas::Applied => return Ok(()),
            // Ours: made by this attempt for this row (an index build claims
            // many rows with one txn, so the owner must match too).
            Cas::NotApplied(Some(existing)) if existing.txn == txn && existing.owner == owner => {
                return Ok(())
            }
            Cas::NotApplied(Some(existing)) => existing,
            Cas::NotApplied(None) => continue,
        };
        match resolve(w, k, &existing, owner, txn, wound, deadline).await? {
            Resolution::Taken { owner } => {
                w.stats.bump(Event::Conflict);
                return Err(WriteError::Duplicate {
                    unique: Some(k.unique),
                    owner,
                });
            }
            Resolution::ThisRow => return Err(WriteError::ThisRow),
            Resolution::Again => {
                if Instant::now() >= deadline {
                    return Err(WriteError::Sql(lock_timeout()));
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(20));
            }
        }
    }
}

/// Read the owner row (SERIAL) and decide: backed, in flight, or stale.
async fn resolve(
    w: &RowWrite<'_>,
    k: &KeyClaim,
    existing: &ClaimRecord,
    my_owner: &[u8],
    my_txn: TxnId,
    wound: bool,
    deadline: Instant,
) -> Result<Resolution, WriteError> {
    let constraint = &w.table.uniques[k.unique];
    let (row, _) = with_retries(w.cfg, w.stats, || {
        w.store.read_row(w.table, &existing.owner)
    })
    .await
    .map_err(|e| WriteError::Sql(store_error(e)))?;
    let backed = row
        .as_ref()
        .is_some_and(|r| r.live && constraint.key_of(&r.values).as_deref() == Some(&k.key[..]));
    if backed {
        return Ok(if existing.owner == my_owner {
            Resolution::ThisRow
        } else {
            Resolution::Taken {
                owner: existing.owner.clone(),
            }
        });
    }
    let holder_birth = txn_birth_ms(&existing.txn);
    let expired = now_ms().saturating_sub(holder_birth) >= w.cfg.lease.as_millis() as u64;
    // Wound-wait: a multi-key statement may take over a younger statement's
    // in-flight claim at once; everyone else waits for the lease.
    let wounds = wound && holder_birth > txn_birth_ms(&my_txn);
    if !expired && !wounds {
        w.stats.bump(Event::Wait);
        if Instant::now() >= deadline {
            return Err(WriteError::Sql(lock_timeout()));
        }
        return Ok(Resolution::Again);
    }
    if !fence(w, &existing.owner, row).await? {
        return Ok(Resolution::Again);
    }
    // The holder can no longer commit; its claim is stale. Remove it only if
    // it is still the one we judged (IF txn = X), then claim again.
    let _ = w
        .store
        .delete_claim(&constraint.id, &k.key, existing.txn)
        .await;
    Ok(Resolution::Again)
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
    let backed_by_row = |k: &KeyClaim| {
        row.is_some_and(|r| {
            r.live && w.table.uniques[k.unique].key_of(&r.values).as_deref() == Some(&k.key[..])
        })
    };
    let deletes = keys.iter().filter(|k| !backed_by_row(k)).map(|k| {
        w.store
            .delete_claim(&w.table.uniques[k.unique].id, &k.key, txn)
    });
    join_all(deletes).await;
}

/// Move our claims from `old` to `new` txn after a restart; a claim that was
/// taken over meanwhile is claimed afresh.
pub(crate) async fn restamp_all(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    owner: &[u8],
    old: TxnId,
    new: TxnId,
    deadline: Instant,
) -> Result<(), WriteError> {
    let mut lost = Vec::new();
    for k in keys {
        let id = &w.table.uniques[k.unique].id;
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
        return Ok(());
    }
    let kept: Vec<KeyClaim> = keys.iter().filter(|k| !lost.contains(k)).cloned().collect();
    if let Err(e) = claim_all(w, &lost, owner, new, deadline).await {
        release(w, &kept, new, None).await;
        return Err(e);
    }
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
