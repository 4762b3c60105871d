//! Writes of a transaction: an intent beside the row's committed state,
//! claims made with the transaction's id, and what undoing, committing and
//! aborting them takes (docs/transactions.md).
//!
//! While a transaction is undecided only it sees its intents; other writers
//! wait for it (or abort it once its proxy is gone), readers pass over
//! them. Its COMMIT is one LWT on its record; folding intents into the
//! committed state afterwards is cleanup, done off the client's path.

use std::collections::{BTreeMap, HashMap, HashSet};

use uuid::Uuid;

use super::intents::{settle, Settled, Wait};
use super::resolve::{before_retry, release, KeyClaim};
use super::row::{keys_of, outcome_unknown, read, store_failure, KeyChange};
use super::slots;
use super::{new_txn, with_retries, ClaimConfig, ClaimStats, Event, RowWrite, WriteError};
use crate::catalog::TableDef;
use crate::store::{Cas, Intent, RowRecord, Stamp, Store, StoreError, TxnId};
use crate::types::Value;

/// What a transaction writes to one row.
#[derive(Debug, Clone)]
pub enum Change {
    Live(Vec<Value>),
    Dead,
}

/// One intent written: enough to take it back or to finish it.
#[derive(Debug, Clone)]
pub struct IntentWrite {
    /// The partition as written: committed state and this intent.
    pub record: RowRecord,
    /// This transaction's intent on the row before this write, if any.
    pub prior: Option<Intent>,
    /// Keys this write claimed.
    pub claimed: Vec<KeyClaim>,
    /// The row as the transaction saw it before, when live.
    pub before: Option<RowRecord>,
}

impl IntentWrite {
    /// The row as the transaction sees it after this write, when live.
    pub fn after(&self) -> Option<RowRecord> {
        let intent = self.record.intent.as_ref()?;
        intent
            .live
            .then(|| super::intents::own_view(&self.record, intent))
    }
}

/// Write row `pk` as an intent of transaction `w.own`, from the partition
/// as `observed` (an INSERT assumes it absent and lets the CAS say
/// otherwise) or as read now. `change` sees the
/// row as the transaction sees it (None when absent or dead) and says what
/// to write, or None to leave the row alone; it runs again on the current
/// row whenever the row changed under the write (a WHERE is re-checked, as
/// PostgreSQL re-checks it after waiting for a concurrent writer).
pub async fn write_intent(
    w: &RowWrite<'_>,
    pk: &[u8],
    observed: Option<Option<RowRecord>>,
    change: impl FnMut(Option<&RowRecord>) -> Result<Option<Change>, WriteError>,
) -> Result<Option<IntentWrite>, WriteError> {
    match write_or_lock(w, pk, observed, None, change).await? {
        Step::Written(write) => Ok(Some(write)),
        Step::Unchanged => Ok(None),
        Step::Held(_) | Step::Skipped => unreachable!("only a row lock holds or skips"),
    }
}

/// What a row lock does on meeting another transaction's undecided intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfBusy {
    /// Wait for it to be decided, as a write does (lock_timeout, age order).
    Wait,
    /// NOWAIT: fail at once with 55P03.
    Fail,
    /// SKIP LOCKED: leave the row alone.
    Skip,
}

/// How a row lock ended. The written variant is moved straight into the
/// transaction's log: boxing it would cost an allocation per row.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Locked {
    /// A lock intent was written (the row's values, unchanged): log it.
    Written(IntentWrite),
    /// The row is this transaction's already (its intent is on it), or,
    /// outside a transaction, no other transaction is writing it: held
    /// without a write. The row as it stands.
    Held(RowRecord),
    /// Absent, dead, or no longer passing `qualifies` once settled.
    Gone,
    /// Another transaction holds it (SKIP LOCKED).
    Skipped,
}

/// Lock row `pk` for `w.own` (SELECT ... FOR UPDATE), from the partition
/// as `observed` or as read now: as an UPDATE that changes nothing, an
/// intent of the transaction carrying the row's values as they stand, so
/// that other writers wait until it is decided while readers pass over it.
/// `qualifies` re-checks the WHERE on the row as it stands once settled (a
/// changed row, after a wait). Outside a transaction (`w.own` None) the
/// lock would end with the statement, so nothing is written: the row is
/// settled (waited for, per `if_busy`) and re-checked only.
pub async fn lock_row(
    w: &RowWrite<'_>,
    pk: &[u8],
    observed: Option<Option<RowRecord>>,
    if_busy: IfBusy,
    mut qualifies: impl FnMut(&RowRecord) -> Result<bool, WriteError>,
) -> Result<Locked, WriteError> {
    if w.own.is_none() {
        return settle_for_lock(w, pk, observed, if_busy, qualifies).await;
    }
    let step = write_or_lock(w, pk, observed, Some(if_busy), |view| match view {
        Some(cur) if qualifies(cur)? => Ok(Some(Change::Live(cur.values.clone()))),
        _ => Ok(None),
    })
    .await?;
    Ok(match step {
        Step::Written(write) => Locked::Written(write),
        Step::Held(row) => Locked::Held(row),
        Step::Unchanged => Locked::Gone,
        Step::Skipped => Locked::Skipped,
    })
}

/// A row lock outside a transaction: the row once no other transaction is
/// writing it.
async fn settle_for_lock(
    w: &RowWrite<'_>,
    pk: &[u8],
    mut observed: Option<Option<RowRecord>>,
    if_busy: IfBusy,
    mut qualifies: impl FnMut(&RowRecord) -> Result<bool, WriteError>,
) -> Result<Locked, WriteError> {
    // It writes nothing, so it holds nothing anyone waits for: it waits as
    // long as the lock timeout allows, whatever the holder's age.
    let mut wait = Wait::holding_nothing();
    loop {
        before_retry(w)?;
        let raw = match super::read_view::unless_historic(observed.take()) {
            Some(assumed) => assumed,
            None => read(w, pk).await?,
        };
        let Some(raw) = raw else {
            return Ok(Locked::Gone);
        };
        match settle(w, pk, raw).await? {
            Settled::Ready(view) if view.live && qualifies(&view)? => {
                return Ok(Locked::Held(view))
            }
            Settled::Ready(_) => return Ok(Locked::Gone),
            Settled::Busy(holder) => match if_busy {
                IfBusy::Wait => {
                    w.stats.bump(Event::Wait);
                    wait.once(w, &holder).await?;
                }
                IfBusy::Fail => return Err(not_available(w)),
                IfBusy::Skip => return Ok(Locked::Skipped),
            },
        }
    }
}

/// NOWAIT meeting a row another transaction holds.
fn not_available(w: &RowWrite<'_>) -> WriteError {
    WriteError::Sql(crate::error::SqlError::new(
        crate::error::sqlstate::LOCK_NOT_AVAILABLE,
        format!(
            "could not obtain lock on row in relation \"{}\"",
            w.table.name
        ),
    ))
}

/// How `write_or_lock` ended (large as [`Locked`] is, for its reason).
#[allow(clippy::large_enum_variant)]
enum Step {
    Written(IntentWrite),
    /// `change` left the row alone.
    Unchanged,
    /// A lock found this transaction's intent on the row: nothing to write.
    Held(RowRecord),
    /// A lock found another transaction's undecided intent (SKIP LOCKED).
    Skipped,
}

/// `write_intent`, or with `lock` a row lock with that policy for a busy
/// row: `change` then only says whether the row qualifies (its values
/// unchanged), and a row carrying this transaction's intent is held as it is.
async fn write_or_lock(
    w: &RowWrite<'_>,
    pk: &[u8],
    mut observed: Option<Option<RowRecord>>,
    lock: Option<IfBusy>,
    mut change: impl FnMut(Option<&RowRecord>) -> Result<Option<Change>, WriteError>,
) -> Result<Step, WriteError> {
    let own = w.own.expect("write_intent runs inside a transaction");
    let mut wait = Wait::default();
    loop {
        before_retry(w)?;
        let raw = match super::read_view::unless_historic(observed.take()) {
            Some(assumed) => assumed,
            None => read(w, pk).await?,
        };
        let (view, prior) = match &raw {
            None => (None, None),
            Some(r) => match settle(w, pk, r.clone()).await? {
                Settled::Busy(holder) => match lock.unwrap_or(IfBusy::Wait) {
                    IfBusy::Wait => {
                        w.stats.bump(Event::Wait);
                        wait.once(w, &holder).await?;
                        continue;
                    }
                    IfBusy::Fail => return Err(not_available(w)),
                    IfBusy::Skip => return Ok(Step::Skipped),
                },
                Settled::Ready(view) => {
                    let prior = r.intent.as_deref().filter(|i| i.txn == own).cloned();
                    (Some(view), prior)
                }
            },
        };
        let live_view = view.as_ref().filter(|v| v.live);
        let Some(next) = change(live_view)? else {
            return Ok(Step::Unchanged);
        };
        if let (Some(_), Some(_), Some(held)) = (lock, &prior, live_view) {
            return Ok(Step::Held(held.clone()));
        }
        let (live, values) = match next {
            Change::Live(values) => (true, values),
            Change::Dead => (false, Vec::new()),
        };
        let mut keys = KeyChange::of(w.table, live_view, live.then_some(values.as_slice()));
        if lock.is_some() {
            // A lock changes nothing: a row that holds no slot yet (written
            // before its table had the limit) takes none.
            keys.unplaced.clear();
        } else if live {
            let before = live_view.map(|v| v.values.as_slice());
            super::index::add_entries(w, pk, before, &values).await?;
        }
        let changed =
            match slots::claim_with_slots(w, &keys.changed, &keys.unplaced, &values, pk, own).await
            {
                Ok(changed) => changed,
                // The row changed under us: look again.
                Err(WriteError::ThisRow) => continue,
                Err(e) => return Err(e),
            };
        let mut new_keys = keys.new;
        new_keys.extend(changed.iter().filter(|k| k.slot.is_some()).cloned());
        let mut claims = BTreeMap::new();
        for k in &new_keys {
            let entry = k.entry(w.table);
            if changed.contains(k) {
                claims.insert(entry, own);
            } else if let Some(txn) = keys.carried.get(&entry) {
                claims.insert(entry, *txn);
            }
        }
        // The committed state stays; an intent of another transaction,
        // decided, is folded into it (that is what `view` is then).
        let committed = match (&raw, &prior) {
            (None, _) => RowRecord::dead(Uuid::nil()),
            (Some(r), Some(_)) => RowRecord {
                intent: None,
                ..r.clone()
            },
            (Some(_), None) => view.clone().expect("a partition was read"),
        };
        let record = RowRecord {
            version: new_txn(),
            intent: Some(Box::new(Intent {
                txn: own,
                live,
                claims,
                values,
            })),
            ..committed
        };
        let result = with_retries(w.cfg, w.stats, || {
            let record = record.clone();
            let expected = raw.as_ref().map(|r| r.version);
            async move {
                match expected {
                    None => w.store.insert_row(w.table, pk, record).await,
                    Some(v) => w.store.update_row(w.table, pk, v, record).await,
                }
            }
        })
        .await;
        match result {
            Ok((Cas::Applied, _)) => {}
            Ok((Cas::NotApplied(Some(cur)), _)) if cur.version == record.version => {}
            // A retry that finds the row moved on: the first try may have
            // landed. The transaction cannot know what it wrote.
            Ok((Cas::NotApplied(_), true)) | Err(StoreError::Unknown(_)) => {
                w.stats.bump(Event::Unknown);
                return Err(outcome_unknown());
            }
            Ok((Cas::NotApplied(now), false)) => {
                release(w, &changed, own, None).await;
                w.stats.bump(Event::Restart);
                observed = Some(now);
                continue;
            }
            Err(e) => {
                release(w, &changed, own, None).await;
                return Err(store_failure(e));
            }
        }
        return Ok(Step::Written(IntentWrite {
            record,
            prior,
            claimed: changed,
            before: live_view.cloned(),
        }));
    }
}

/// One entry of a transaction's log of writes.
#[derive(Debug, Clone)]
pub struct Logged {
    pub table: std::sync::Arc<TableDef>,
    pub pk: Vec<u8>,
    pub write: IntentWrite,
}

/// Per row of `log`, its first and its last write.
fn per_row(log: &[Logged]) -> Vec<(&Logged, &Logged)> {
    let mut order: Vec<(String, Vec<u8>)> = Vec::new();
    let mut rows: HashMap<(String, Vec<u8>), (usize, usize)> = HashMap::new();
    for (i, e) in log.iter().enumerate() {
        let key = (e.table.id.clone(), e.pk.clone());
        rows.entry(key.clone())
            .and_modify(|(_, last)| *last = i)
            .or_insert_with(|| {
                order.push(key);
                (i, i)
            });
    }
    order
        .into_iter()
        .map(|k| {
            let (first, last) = rows[&k];
            (&log[first], &log[last])
        })
        .collect()
}

/// The keys the rows of `log` need as they stand after it, each with the
/// row that needs it.
fn needed_keys(log: &[Logged]) -> HashMap<(String, Vec<u8>), Vec<u8>> {
    let mut needed = HashMap::new();
    for (_, last) in per_row(log) {
        if let Some(after) = last.write.after() {
            for k in keys_of(&last.table, &after.values, &after.claims) {
                let id = k.on(&last.table).id().to_owned();
                needed.insert((id, k.key), last.pk.clone());
            }
        }
    }
    needed
}

/// Take back the writes `undone` (the tail of a transaction's log after a
/// savepoint or a failed statement), leaving `kept`. Each row goes back to
/// the intent it had before its first undone write, by CAS on the version
/// its last undone write left. Err: something could not be confirmed, and
/// the transaction must not commit.
pub async fn undo(
    store: &dyn Store,
    cfg: &ClaimConfig,
    stats: &ClaimStats,
    own: TxnId,
    kept: &[Logged],
    undone: &[Logged],
) -> Result<(), String> {
    let mut failure = None;
    for (first, last) in per_row(undone) {
        let restored = RowRecord {
            version: new_txn(),
            intent: first.write.prior.clone().map(Box::new),
            ..last.write.record.clone()
        };
        let expected = last.write.record.version;
        let result = with_retries(cfg, stats, || {
            store.update_row(&last.table, &last.pk, expected, restored.clone())
        })
        .await;
        match result {
            Ok((Cas::Applied, _)) => {}
            Ok((Cas::NotApplied(Some(cur)), _)) if cur.version == restored.version => {}
            // Moved on: only a resolver that aborted this transaction
            // writes over its intents, and then nothing of it is visible.
            Ok((Cas::NotApplied(_), false)) => {}
            Ok((Cas::NotApplied(_), true)) | Err(_) => {
                failure.get_or_insert_with(|| {
                    format!(
                        "undoing a write to table {} was not confirmed",
                        last.table.name
                    )
                });
            }
        }
    }
    let repointed = release_unneeded(store, own, kept, undone).await;
    failure.or(repointed.err()).map_or(Ok(()), Err)
}

/// Release the claims `undone` made that the rows of `kept` do not need.
/// A claim a kept row needs but an undone write had moved to another row
/// of the transaction (it freed the value, then reused it) is pointed back.
///
/// A row the undo puts back to an earlier write needs that write's claims
/// again, whatever the undone writes claimed: while the row held another
/// value, a statement of the transaction that then failed may have taken
/// the unbacked claim over and released it, and a failed statement is not
/// in the log (found by the model check, `model::found`).
async fn release_unneeded(
    store: &dyn Store,
    own: TxnId,
    kept: &[Logged],
    undone: &[Logged],
) -> Result<(), String> {
    let needed = needed_keys(kept);
    let mut seen = HashSet::new();
    let mut result = Ok(());
    let lost =
        || Err("a unique value the transaction still needs could not be claimed again".into());
    for e in undone {
        for k in &e.write.claimed {
            let id = k.on(&e.table).id().to_owned();
            let key = (id, k.key.clone());
            if !seen.insert(key.clone()) {
                continue;
            }
            let _ = store.delete_claim(&key.0, &key.1, own).await;
            if let Some(owner) = needed.get(&key) {
                if !claim_again(store, own, &key, owner).await {
                    result = lost();
                }
            }
        }
    }
    // The rows the undo restores, by each of their constraints: the keys
    // `needed` names them for are theirs to hold again.
    let restored: HashSet<(&str, &[u8])> = per_row(undone)
        .into_iter()
        .flat_map(|(_, last)| {
            let pk = last.pk.as_slice();
            last.table.claims_on().map(move |(_, on)| (on.id(), pk))
        })
        .collect();
    for (key, owner) in &needed {
        if restored.contains(&(key.0.as_str(), owner.as_slice()))
            && seen.insert(key.clone())
            && !claim_again(store, own, key, owner).await
        {
            result = lost();
        }
    }
    result
}

/// Make sure `key` is claimed for row `owner`: claim it for the
/// transaction, or find a claim naming that row already (the transaction's,
/// or the committed row's own). False when it names another row or the
/// store did not say.
async fn claim_again(
    store: &dyn Store,
    own: TxnId,
    (constraint, key): &(String, Vec<u8>),
    owner: &[u8],
) -> bool {
    let claim = crate::store::ClaimRecord {
        owner: owner.to_vec(),
        txn: own,
    };
    match store.insert_claim(constraint, key, claim).await {
        Ok(Cas::Applied) => true,
        Ok(Cas::NotApplied(Some(held))) => held.owner == owner,
        _ => false,
    }
}

/// After the transaction is decided: fold its intents into the committed
/// state (or drop them), and remove the claims nothing needs any more.
/// Best effort: whatever is left is settled by whoever meets it, since the
/// record decides.
pub async fn finish(store: &dyn Store, own: TxnId, log: &[Logged], committed_at: Option<Stamp>) {
    let committed = committed_at.is_some();
    for (_, last) in per_row(log) {
        let record = &last.write.record;
        let folded = RowRecord {
            version: new_txn(),
            ..super::intents::folded(record, committed_at)
        };
        let landed = store
            .update_row(&last.table, &last.pk, record.version, folded.clone())
            .await;
        if committed && matches!(landed, Ok(Cas::Applied)) {
            // Claims of keys the committed row held before and holds no more.
            let live_keys = |r: &RowRecord| match r.live {
                true => keys_of(&last.table, &r.values, &r.claims),
                false => Vec::new(),
            };
            let after = live_keys(&folded);
            for k in live_keys(record).into_iter().filter(|k| !after.contains(k)) {
                let id = k.on(&last.table).id();
                if let Some(txn) = record.claims.get(&k.entry(&last.table)) {
                    let _ = store.delete_claim(id, &k.key, *txn).await;
                }
            }
        }
    }
    // Claims the final rows need are theirs already; the rest go.
    let needed = if committed {
        needed_keys(log)
    } else {
        HashMap::new()
    };
    let mut seen = HashSet::new();
    for e in log {
        for k in &e.write.claimed {
            let key = (k.on(&e.table).id().to_owned(), k.key.clone());
            if !needed.contains_key(&key) && seen.insert(key.clone()) {
                let _ = store.delete_claim(&key.0, &key.1, own).await;
            }
        }
    }
}
