//! Writing one row: INSERT, UPDATE and DELETE as the protocol prescribes.

use std::collections::BTreeMap;
use std::time::Instant;

use super::intents::{settle, Settled, Wait};
use super::resolve::{before_retry, release, restamp_all, KeyClaim};
use super::slots;
use super::{clock, new_txn, with_retries, ClaimConfig, ClaimStats, Event};
use crate::catalog::{store_error, ClaimOn, TableDef};
use crate::error::{sqlstate, SqlError};
use crate::store::{Cas, RowRecord, Store, StoreError, TxnId};
use crate::types::Value;

/// Everything one row write needs.
pub struct RowWrite<'a> {
    pub store: &'a dyn Store,
    pub cfg: &'a ClaimConfig,
    pub stats: &'a ClaimStats,
    pub table: &'a TableDef,
    pub deadline: Instant,
    /// The statement's stop state; None where nothing may stop the write
    /// (an undo, an index build).
    pub stop: Option<&'a crate::stop::Stop>,
    /// The transaction this write belongs to, when it runs in an explicit
    /// block (it writes intents and sees its own); None for a statement of
    /// its own, whose row is its own record.
    pub own: Option<TxnId>,
    /// Which transactions may still be running (`intents::Peers`). None
    /// for writes outside any session (index builds): they treat every
    /// undecided transaction as running, and wait for it.
    pub peers: Option<&'a super::intents::Peers>,
    /// When the writer began (its transaction's birth, or the statement's
    /// start): waits are ordered by it across transactions.
    pub born_ms: u64,
}

/// Why a row write did not happen. It travels on the error path only,
/// where the size of its SQL error (every ErrorResponse field) costs
/// nothing measurable, as for `SqlResult` (lib.rs).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum WriteError {
    /// A live row of another holds the key. `unique` is None for the primary key.
    Duplicate {
        unique: Option<usize>,
        owner: Vec<u8>,
    },
    /// A key is backed by the very row being written (it changed under us).
    ThisRow,
    Sql(SqlError),
}

impl From<SqlError> for WriteError {
    fn from(e: SqlError) -> Self {
        WriteError::Sql(e)
    }
}

/// A write that landed: the row before and after, and the version written.
#[derive(Debug, Clone)]
pub struct WriteOutcome {
    pub before: Option<RowRecord>,
    pub after: RowRecord,
}

pub(super) fn outcome_unknown() -> WriteError {
    WriteError::Sql(SqlError::completion_unknown(
        "the store did not confirm the write, and retries found the row changed since",
    ))
}

pub(super) fn store_failure(e: StoreError) -> WriteError {
    WriteError::Sql(store_error(e))
}

/// The claim keys a row with `values` and `__claims` `claims` holds: one
/// per unique constraint that applies, and one per count limit whose slot
/// it has taken.
pub fn keys_of(
    table: &TableDef,
    values: &[Value],
    claims: &BTreeMap<String, TxnId>,
) -> Vec<KeyClaim> {
    table
        .claims_on()
        .filter_map(|(i, on)| {
            let key = on.key_of(values, claims)?;
            let slot = match on {
                ClaimOn::Slot(l) => l.slot_in(claims),
                ClaimOn::Unique(_) => None,
            };
            Some(KeyClaim {
                unique: i,
                key,
                slot,
            })
        })
        .collect()
}

/// What a write of one row claims: the keys the row held (`old`), those it
/// holds after (`new`, the slots it keeps included), those of them it must
/// claim (`changed`), the `__claims` entries it carries over, and the count
/// limits whose group it joins without a slot (`unplaced`, to search).
pub(super) struct KeyChange {
    pub old: Vec<KeyClaim>,
    pub new: Vec<KeyClaim>,
    pub changed: Vec<KeyClaim>,
    pub carried: BTreeMap<String, TxnId>,
    pub unplaced: Vec<usize>,
}

impl KeyChange {
    /// From the row as it stands (`before`; None when absent or dead) to
    /// `after`'s values (None when the write deletes it).
    pub(super) fn of(
        table: &TableDef,
        before: Option<&RowRecord>,
        after: Option<&[Value]>,
    ) -> KeyChange {
        let old = before
            .map(|b| keys_of(table, &b.values, &b.claims))
            .unwrap_or_default();
        let carried = match (before, after) {
            (Some(b), Some(values)) => slots::carried(table, b, values),
            _ => BTreeMap::new(),
        };
        let (new, unplaced) = match after {
            Some(values) => (
                keys_of(table, values, &carried),
                slots::unplaced(table, values, &carried),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let changed = new.iter().filter(|k| !old.contains(k)).cloned().collect();
        KeyChange {
            old,
            new,
            changed,
            carried,
            unplaced,
        }
    }

    /// The keys the row holds no more.
    pub(super) fn replaced(&self) -> Vec<&KeyClaim> {
        self.old.iter().filter(|k| !self.new.contains(k)).collect()
    }
}

fn claims_map(table: &TableDef, keys: &[KeyClaim], txn: TxnId) -> BTreeMap<String, TxnId> {
    keys.iter().map(|k| (k.entry(table), txn)).collect()
}

/// INSERT row `pk` with `values`: claim every unique key, then commit the
/// row by CAS from the state observed before claiming (absent at first).
pub async fn insert_row(
    w: &RowWrite<'_>,
    pk: &[u8],
    values: Vec<Value>,
) -> Result<WriteOutcome, WriteError> {
    let change = KeyChange::of(w.table, None, Some(&values));
    super::index::add_entries(w, pk, None, &values).await?;
    let mut txn = new_txn();
    // The dead partition the row replaces, as observed; None: absent.
    let mut replaced: Option<RowRecord> = None;
    let absent = RowRecord::dead(TxnId::nil());
    let mut keys =
        slots::claim_with_slots(w, &change.changed, &change.unplaced, &values, pk, txn).await?;
    stop_before_commit(w, &keys, txn).await?;
    loop {
        let claims = claims_map(w.table, &keys, txn);
        let base = replaced.as_ref().unwrap_or(&absent);
        let row = RowRecord {
            version: txn,
            ..base.succeeded(true, claims, values.clone(), clock::now(), txn)
        };
        let expected = replaced.as_ref().map(|r| r.version);
        let commit = with_retries(w.cfg, w.stats, || {
            let row = row.clone();
            async move {
                match expected {
                    None => w.store.insert_row(w.table, pk, row).await,
                    Some(v) => w.store.update_row(w.table, pk, v, row).await,
                }
            }
        })
        .await;
        let (cas, retried) = match commit {
            Ok(r) => r,
            Err(StoreError::Unknown(_)) => {
                // The commit may have landed: keep our claims, they may back it.
                w.stats.bump(Event::Unknown);
                return Err(outcome_unknown());
            }
            Err(e) => {
                release(w, &keys, txn, None).await;
                return Err(store_failure(e));
            }
        };
        let current = match cas {
            Cas::Applied => {
                return Ok(WriteOutcome {
                    before: None,
                    after: row,
                })
            }
            Cas::NotApplied(cur) => cur,
        };
        if let Some(cur) = &current {
            if cur.live && cur.version == txn {
                return Ok(WriteOutcome {
                    before: None,
                    after: row,
                });
            }
        }
        if retried {
            // Our first try may have landed and been overwritten since.
            release(w, &keys, txn, current.as_ref()).await;
            w.stats.bump(Event::Unknown);
            return Err(outcome_unknown());
        }
        // A row a transaction is writing: wait until it is decided, and
        // go on from the row as it then stands.
        let current = match current {
            Some(cur) if cur.intent.is_some() => settled(w, pk, cur).await?,
            other => other,
        };
        match current {
            Some(cur) if cur.live => {
                release(w, &keys, txn, Some(&cur)).await;
                w.stats.bump(Event::Conflict);
                return Err(WriteError::Duplicate {
                    unique: None,
                    owner: pk.to_vec(),
                });
            }
            // Dead at a version we had not observed before claiming: it may
            // be a fence against us. Never overwrite it with this attempt;
            // restart with a new txn that has observed it.
            other => {
                if Instant::now() >= w.deadline {
                    release(w, &keys, txn, None).await;
                    return Err(WriteError::Sql(super::resolve::lock_timeout()));
                }
                w.stats.bump(Event::Restart);
                let next = new_txn();
                keys = restamp_all(w, &keys, pk, txn, next, &values).await?;
                txn = next;
                replaced = other;
            }
        }
    }
}

/// Undo of a row this statement retired (a primary-key UPDATE moved it):
/// make row `pk` live again with `values`, only if it is still dead at
/// `version`, the version this statement wrote. Ok(false): the row moved on
/// since (another writer's now; nothing of ours to undo).
///
/// Only for rows without unique keys: taking their claims again could meet
/// a stale claim naming this very row, whose takeover fences the row and
/// would read as "moved on" (moves are refused on tables with UNIQUE).
pub async fn restore_row(
    w: &RowWrite<'_>,
    pk: &[u8],
    values: Vec<Value>,
    version: TxnId,
) -> Result<bool, WriteError> {
    if !keys_of(w.table, &values, &BTreeMap::new()).is_empty() || !w.table.count_limits.is_empty() {
        return Err(WriteError::Sql(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "restoring a row with unique keys is not supported",
        )));
    }
    // The state it replaces is this statement's own dead one, whose
    // predecessor is not kept: older snapshots find no state of this row.
    let txn = new_txn();
    let row = RowRecord {
        at: clock::now(),
        by: txn,
        ..RowRecord::live(txn, BTreeMap::new(), values)
    };
    match commit(w, pk, version, &row).await {
        Committed::Yes => Ok(true),
        Committed::No(_) => Ok(false),
        Committed::Unknown(_) => Err(outcome_unknown()),
        Committed::Failed(e) => Err(e),
    }
}

/// UPDATE row `pk`: observe it, compute the new values, claim the keys that
/// change, commit by CAS on the observed version. `compute` returns None when
/// the row no longer qualifies (the WHERE re-checked on the current row).
pub async fn update_row(
    w: &RowWrite<'_>,
    pk: &[u8],
    mut observed: Option<Option<RowRecord>>,
    mut compute: impl FnMut(&RowRecord) -> Result<Option<Vec<Value>>, SqlError>,
) -> Result<Option<WriteOutcome>, WriteError> {
    loop {
        let Some(current) = observe(w, pk, observed.take()).await? else {
            return Ok(None);
        };
        let Some(values) = compute(&current)? else {
            return Ok(None);
        };
        super::index::add_entries(w, pk, Some(&current.values), &values).await?;
        let txn = new_txn();
        let change = KeyChange::of(w.table, Some(&current), Some(&values));
        let replaced = change.replaced();
        let changed =
            match slots::claim_with_slots(w, &change.changed, &change.unplaced, &values, pk, txn)
                .await
            {
                Ok(changed) => changed,
                // The row changed under us: observe again.
                Err(WriteError::ThisRow) => continue,
                Err(e) => return Err(e),
            };
        stop_before_commit(w, &changed, txn).await?;
        let mut claims = (*current.claims).clone();
        for k in &replaced {
            claims.remove(&k.entry(w.table));
        }
        claims.extend(claims_map(w.table, &changed, txn));
        let row = RowRecord {
            version: txn,
            ..current.succeeded(true, claims, values, clock::now(), txn)
        };
        match commit(w, pk, current.version, &row).await {
            Committed::Yes => {
                cleanup(w, pk, &replaced, &current).await;
                return Ok(Some(WriteOutcome {
                    before: Some(current),
                    after: row,
                }));
            }
            Committed::No(now) => {
                release(w, &changed, txn, now.as_ref()).await;
                w.stats.bump(Event::Restart);
                observed = Some(now);
            }
            Committed::Unknown(now) => {
                if let Some(now) = now {
                    release(w, &changed, txn, now.as_ref()).await;
                }
                return Err(outcome_unknown());
            }
            Committed::Failed(e) => {
                release(w, &changed, txn, None).await;
                return Err(e);
            }
        }
    }
}

/// DELETE row `pk`: mark it dead by CAS on the observed version, then clean
/// up its claims (`IF txn = __claims[c]`, so never another's claim).
pub async fn delete_row(
    w: &RowWrite<'_>,
    pk: &[u8],
    mut observed: Option<Option<RowRecord>>,
    mut qualifies: impl FnMut(&RowRecord) -> Result<bool, SqlError>,
) -> Result<Option<WriteOutcome>, WriteError> {
    loop {
        let Some(current) = observe(w, pk, observed.take()).await? else {
            return Ok(None);
        };
        if !qualifies(&current)? {
            return Ok(None);
        }
        let txn = new_txn();
        let row = RowRecord {
            version: txn,
            ..current.succeeded(false, BTreeMap::new(), Vec::new(), clock::now(), txn)
        };
        match commit(w, pk, current.version, &row).await {
            Committed::Yes => {
                let keys = keys_of(w.table, &current.values, &current.claims);
                cleanup(w, pk, &keys.iter().collect::<Vec<_>>(), &current).await;
                return Ok(Some(WriteOutcome {
                    before: Some(current),
                    after: row,
                }));
            }
            Committed::No(now) => observed = Some(now),
            Committed::Unknown(_) => return Err(outcome_unknown()),
            Committed::Failed(e) => return Err(e),
        }
    }
}

/// A safe point between claiming and committing: if the statement was
/// asked to stop, release the claims and stop before anything is written.
async fn stop_before_commit(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    txn: TxnId,
) -> Result<(), WriteError> {
    if let Err(e) = crate::stop::check(w.stop) {
        release(w, keys, txn, None).await;
        return Err(e.into());
    }
    Ok(())
}

enum Committed {
    Yes,
    /// Not applied; the row as it is now.
    No(Option<RowRecord>),
    /// Unknown after retries; the row as the last retry saw it, if any.
    Unknown(Option<Option<RowRecord>>),
    Failed(WriteError),
}

/// `UPDATE row IF __version = expected`, retried with the same txn; a retry
/// that finds its own version knows the first try landed.
async fn commit(w: &RowWrite<'_>, pk: &[u8], expected: TxnId, row: &RowRecord) -> Committed {
    let result = with_retries(w.cfg, w.stats, || {
        w.store.update_row(w.table, pk, expected, row.clone())
    })
    .await;
    match result {
        Ok((Cas::Applied, _)) => Committed::Yes,
        Ok((Cas::NotApplied(Some(cur)), _)) if cur.version == row.version => Committed::Yes,
        Ok((Cas::NotApplied(cur), true)) => {
            w.stats.bump(Event::Unknown);
            Committed::Unknown(Some(cur))
        }
        Ok((Cas::NotApplied(cur), false)) => Committed::No(cur),
        Err(StoreError::Unknown(_)) => {
            w.stats.bump(Event::Unknown);
            Committed::Unknown(None)
        }
        Err(e) => Committed::Failed(store_failure(e)),
    }
}

/// Best-effort removal of claims a committed write replaced.
async fn cleanup(w: &RowWrite<'_>, pk: &[u8], keys: &[&KeyClaim], before: &RowRecord) {
    for k in keys {
        let id = k.on(w.table).id();
        let txn = match before.claims.get(&k.entry(w.table)) {
            Some(txn) => *txn,
            // A unique index built after the row was written claimed its key
            // without stamping `__claims`: find the claim, and remove it only
            // if it still names this row (IF txn = what we read, so a claim
            // someone took over meanwhile is never touched).
            None => match w.store.read_claim(id, &k.key).await {
                Ok(Some(c)) if c.owner == pk => c.txn,
                _ => continue,
            },
        };
        let _ = w.store.delete_claim(id, &k.key, txn).await;
    }
}

/// The row as this attempt observes it: what an earlier not-applied LWT
/// returned, or a SERIAL read; None when absent or dead. Bounded by the
/// statement's deadline, since every restart comes back here.
async fn observe(
    w: &RowWrite<'_>,
    pk: &[u8],
    returned: Option<Option<RowRecord>>,
) -> Result<Option<RowRecord>, WriteError> {
    before_retry(w)?;
    let current = match super::read_view::unless_historic(returned) {
        Some(r) => r,
        None => read(w, pk).await?,
    };
    let current = match current {
        Some(row) => settled(w, pk, row).await?,
        None => None,
    };
    Ok(current.filter(|r| r.live))
}

/// The row as it stands once no undecided transaction is writing it:
/// waits for one that is (or aborts it once its proxy is gone), reading
/// the row again after each wait. The version stays the partition's, so a
/// CAS from it overwrites a decided intent, folded or dropped.
pub(crate) async fn settled(
    w: &RowWrite<'_>,
    pk: &[u8],
    mut row: RowRecord,
) -> Result<Option<RowRecord>, WriteError> {
    let mut wait = Wait::default();
    loop {
        match settle(w, pk, row).await? {
            Settled::Ready(view) => return Ok(Some(view)),
            Settled::Busy(holder) => {
                w.stats.bump(Event::Wait);
                wait.once(w, &holder).await?;
                match read(w, pk).await? {
                    Some(next) => row = next,
                    None => return Ok(None),
                }
            }
        }
    }
}

pub(super) async fn read(w: &RowWrite<'_>, pk: &[u8]) -> Result<Option<RowRecord>, WriteError> {
    with_retries(w.cfg, w.stats, || w.store.read_row(w.table, pk))
        .await
        .map(|(r, _)| r)
        .map_err(store_failure)
}
