//! What one statement's reads see (docs/transactions.md §9): its own
//! transaction's intents, and of every other row the newest committed
//! state stamped at or before the statement's snapshot, so that a
//! statement never sees part of a transaction, whenever it commits.
//!
//! A row keeps its committed state and the one before (`prev`); a
//! committed intent counts at its record's stamp. A transaction met
//! undecided stays invisible for the whole statement, its states already
//! folded elsewhere included (they carry its id in `by`): its stamp was
//! taken before its record landed, so it may be older than the snapshot.
//! Before it decides its first row, a statement may move its snapshot
//! forward, up to the moment of its first store read: every row is read
//! after that, so every transaction stamped before it has its intents in
//! place when the row is read. The first row therefore shows the newest
//! state committed before it was read, and a point read is never stale,
//! whatever the clocks. A row committed twice since the snapshot has lost
//! the state the statement needs: it answers 40001.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::intents::{folded, own_view, Decision};
use crate::catalog::store_error;
use crate::error::SqlError;
use crate::store::{RowRecord, Stamp, Store, StoreError, TxnId};

/// The version a state older than the row's current one is shown with:
/// never a partition's, so a writer handed it reads the row again
/// ([`unless_historic`]; a CAS based on it would not apply either), as
/// PostgreSQL re-checks a row updated since its snapshot.
pub const HISTORIC: TxnId = uuid::Uuid::max();

/// A row a writer was handed, unless it is an older state (then None: the
/// writer reads the row now, rather than spend a CAS that cannot apply).
pub fn unless_historic(observed: Option<Option<RowRecord>>) -> Option<Option<RowRecord>> {
    observed.filter(|r| r.as_ref().is_none_or(|r| r.version != HISTORIC))
}

pub struct ReadView {
    own: Option<TxnId>,
    state: Mutex<ViewState>,
}

struct ViewState {
    /// The snapshot; None shows the newest committed state (checks that
    /// must see every decided transaction).
    at: Option<Stamp>,
    /// Whether a row was decided under `at`: until then it may move
    /// forward, up to `first_fetch`.
    read_any: bool,
    /// When the statement's first store read was sent: every row it will
    /// decide was read from the store after this, so a snapshot no later
    /// than it finds in place every intent of a transaction stamped at or
    /// before it.
    first_fetch: Option<Stamp>,
    /// Transactions met: committed at a stamp, or None when invisible to
    /// this statement (undecided or aborted when first met).
    known: HashMap<TxnId, Option<Stamp>>,
}

/// Which state of a row a statement shows.
enum Choice {
    /// The intent, committed at this stamp.
    Intent(Stamp),
    Committed,
    Prev,
    TooOld,
}

impl ReadView {
    /// The view of a statement starting now, in transaction `own` if any.
    pub fn snapshot(own: Option<TxnId>, ahead: std::time::Duration) -> ReadView {
        ReadView::with(own, Some(super::clock::snapshot(ahead)))
    }

    /// A view of the newest committed state of every row.
    pub fn latest(own: Option<TxnId>) -> ReadView {
        ReadView::with(own, None)
    }

    fn with(own: Option<TxnId>, at: Option<Stamp>) -> ReadView {
        ReadView {
            own,
            state: Mutex::new(ViewState {
                at,
                read_any: false,
                first_fetch: None,
                known: HashMap::new(),
            }),
        }
    }

    /// Say that a store read of rows is about to be sent (before every
    /// row, scan page and claim read whose rows this view decides).
    pub fn fetching(&self) {
        let mut st = self.state.lock();
        if st.first_fetch.is_none() {
            st.first_fetch = Some(super::clock::now());
        }
    }

    /// A read that found no partition: absent at any time, but the
    /// snapshot may no longer move.
    pub fn mark_read(&self) {
        self.state.lock().read_any = true;
    }

    /// The row as this statement sees it; None when absent or dead to it.
    /// The raw intent stays on the row, so a writer handed it settles it
    /// itself (and a CAS from it still expects the partition's version);
    /// an older state comes with version [`HISTORIC`]. A committed intent
    /// counts only if it is still in place once the record is known
    /// (`intents::settle`): `reread` reads the row again.
    pub async fn visible<F, Fut>(
        &self,
        store: &dyn Store,
        row: Option<RowRecord>,
        reread: F,
    ) -> Result<Option<RowRecord>, SqlError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<RowRecord>, StoreError>>,
    {
        let Some(mut row) = row else {
            self.mark_read();
            return Ok(None);
        };
        loop {
            if let Some(intent) = &row.intent {
                if Some(intent.txn) == self.own {
                    self.mark_read();
                    let view = own_view(&row, intent);
                    return Ok(view.live.then(|| RowRecord {
                        intent: row.intent.clone(),
                        ..view
                    }));
                }
                let txn = intent.txn;
                if !self.state.lock().known.contains_key(&txn) {
                    let rec = store.read_txn_record(txn).await.map_err(store_error)?;
                    let decided = Decision::from(rec).committed_at();
                    self.state.lock().known.entry(txn).or_insert(decided);
                }
            }
            let view = match self.choose(&row) {
                Choice::TooOld => return Err(too_old()),
                Choice::Intent(at) => {
                    match reread().await.map_err(store_error)? {
                        Some(now) if now.version == row.version => {}
                        now => {
                            row = match now {
                                Some(now) => now,
                                None => return Ok(None),
                            };
                            continue;
                        }
                    }
                    RowRecord {
                        intent: row.intent.clone(),
                        ..folded(&row, Some(at))
                    }
                }
                Choice::Committed => row,
                Choice::Prev => {
                    let p = row.prev.as_deref().expect("chosen prev");
                    RowRecord {
                        live: p.live,
                        values: p.values.clone(),
                        claims: Default::default(),
                        at: p.at,
                        by: p.by,
                        prev: None,
                        intent: None,
                        version: HISTORIC,
                    }
                }
            };
            return Ok(view.live.then_some(view));
        }
    }

    /// Which state of `row` to show, once the record of its intent's
    /// transaction is known; marks the snapshot read.
    fn choose(&self, row: &RowRecord) -> Choice {
        let mut st = self.state.lock();
        // A state committed by a transaction this statement met undecided.
        let hidden = |st: &ViewState, by: &TxnId| st.known.get(by) == Some(&None);
        let shows = |st: &ViewState, at: Stamp, by: &TxnId| {
            st.at.is_none_or(|s| at <= s && !hidden(st, by))
        };
        let intent_at = row
            .intent
            .as_ref()
            .and_then(|i| st.known.get(&i.txn).copied().flatten());
        if !st.read_any {
            // Nothing decided yet: a later snapshot will do, as long as it
            // is no later than the first store read. The first row then
            // shows the newest state committed before it was read (a
            // point read is never stale, whatever the clocks).
            if let (Some(s), Some(fetched)) = (st.at, st.first_fetch) {
                let newest = match intent_at {
                    Some(at) => at,
                    None if !hidden(&st, &row.by) => row.at,
                    None => 0,
                };
                st.at = Some(s.max(newest.min(fetched)));
            }
        }
        let choice = match intent_at {
            Some(at) if st.at.is_none_or(|s| at <= s) => Choice::Intent(at),
            _ if shows(&st, row.at, &row.by) => Choice::Committed,
            _ if row.prev.as_ref().is_some_and(|p| shows(&st, p.at, &p.by)) => Choice::Prev,
            _ => return Choice::TooOld,
        };
        st.read_any = true;
        choice
    }
}

/// A statement whose snapshot is older than every state a row kept.
pub fn too_old() -> SqlError {
    SqlError::new(
        "40001",
        "could not serialize access due to concurrent update",
    )
    .with_detail(
        "A row this statement read was committed twice since the statement began; \
         keyclaim keeps one earlier state of a row.",
    )
    .with_hint("Retry the statement.")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::claims::{clock, intents};
    use crate::store::memory::MemoryStore;
    use crate::store::{Intent, Prior, TxnRecord};
    use crate::types::Value;

    fn state(n: i32, at: Stamp, by: TxnId) -> RowRecord {
        RowRecord {
            at,
            by,
            ..RowRecord::live(uuid::Uuid::now_v7(), BTreeMap::new(), vec![Value::Int4(n)])
        }
    }

    /// `row` committed again as `n` at `at` by `by`.
    fn then(row: &RowRecord, n: i32, at: Stamp, by: TxnId) -> RowRecord {
        RowRecord {
            version: uuid::Uuid::now_v7(),
            ..row.succeeded(true, BTreeMap::new(), vec![Value::Int4(n)], at, by)
        }
    }

    fn with_intent(row: &RowRecord, txn: TxnId, n: i32) -> RowRecord {
        RowRecord {
            intent: Some(Box::new(Intent {
                txn,
                live: true,
                claims: BTreeMap::new(),
                values: vec![Value::Int4(n)],
            })),
            ..row.clone()
        }
    }

    async fn shown(view: &ReadView, store: &MemoryStore, row: &RowRecord) -> Result<i32, String> {
        let r = row.clone();
        let seen = view
            .visible(store, Some(row.clone()), || {
                let r = r.clone();
                async move { Ok(Some(r)) }
            })
            .await
            .map_err(|e| e.code.to_string())?;
        match seen.map(|r| r.values[0].clone()) {
            Some(Value::Int4(n)) => Ok(n),
            other => Err(format!("{other:?}")),
        }
    }

    fn view() -> ReadView {
        ReadView::snapshot(None, Duration::ZERO)
    }

    #[tokio::test]
    async fn a_row_committed_after_the_snapshot_shows_its_previous_state() {
        let store = MemoryStore::new();
        let a = state(1, 1, TxnId::nil());
        let b = state(2, 1, TxnId::nil());
        let v = view();
        assert_eq!(shown(&v, &store, &a).await, Ok(1));
        let later = clock::now();
        let b2 = then(&b, 20, later, uuid::Uuid::now_v7());
        assert_eq!(shown(&v, &store, &b2).await, Ok(2));
        // Committed twice since: nothing old enough is left.
        let b3 = then(&b2, 30, clock::now(), uuid::Uuid::now_v7());
        assert_eq!(shown(&v, &store, &b3).await, Err("40001".into()));
        // A newer statement sees the newest.
        assert_eq!(shown(&view(), &store, &b3).await, Ok(30));
    }

    #[tokio::test]
    async fn the_first_row_read_shows_its_newest_state_and_fixes_the_snapshot() {
        let store = MemoryStore::new();
        let v = view();
        // Committed after the snapshot was taken, twice, then read: the
        // first row moves the snapshot up to when it was read.
        let a = state(1, 1, TxnId::nil());
        let a2 = then(&a, 2, clock::now(), uuid::Uuid::now_v7());
        let a3 = then(&a2, 3, clock::now(), uuid::Uuid::now_v7());
        v.fetching();
        // Stamped after the read was sent: not shown, and no further move.
        let a4 = then(&a3, 4, clock::now(), uuid::Uuid::now_v7());
        assert_eq!(shown(&v, &store, &a4).await, Ok(3));
        // Later rows are read at that snapshot.
        v.fetching();
        let b = state(5, 1, TxnId::nil());
        let b2 = then(&b, 6, clock::now(), uuid::Uuid::now_v7());
        assert_eq!(shown(&v, &store, &b2).await, Ok(5));
    }

    #[tokio::test]
    async fn a_transaction_met_undecided_stays_invisible_where_it_was_folded() {
        let store = MemoryStore::new();
        let t = intents::new_transaction_id(7);
        // T stamps its commit before the reader's snapshot, but its record
        // lands after the reader met it undecided.
        let t_at = clock::now();
        let v = view();
        let a = with_intent(&state(1, 1, TxnId::nil()), t, 10);
        assert_eq!(shown(&v, &store, &a).await, Ok(1));
        store
            .insert_txn_record(t, TxnRecord::committed(t_at))
            .await
            .unwrap();
        // Its write to another row, already folded: still invisible.
        let b = then(&state(2, 1, TxnId::nil()), 20, t_at, t);
        assert_eq!(shown(&v, &store, &b).await, Ok(2));
        // And its intent elsewhere, now committed, too.
        let c = with_intent(&state(3, 1, TxnId::nil()), t, 30);
        assert_eq!(shown(&v, &store, &c).await, Ok(3));
        // A statement that meets it decided sees all of it.
        let w = view();
        assert_eq!(shown(&w, &store, &a).await, Ok(10));
        assert_eq!(shown(&w, &store, &b).await, Ok(20));
    }

    #[tokio::test]
    async fn an_older_state_is_shown_with_a_version_no_cas_expects() {
        let store = MemoryStore::new();
        let v = view();
        v.mark_read();
        let row = then(&state(1, 1, TxnId::nil()), 2, clock::now(), TxnId::nil());
        let seen = v
            .visible(&store, Some(row.clone()), || async { Ok(None) })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(seen.values, vec![Value::Int4(1)]);
        assert_eq!(seen.version, HISTORIC);
        // A deleted row's earlier life is shown to an older snapshot too.
        let dead = RowRecord {
            prev: Some(Box::new(Prior {
                live: true,
                values: vec![Value::Int4(9)],
                at: 1,
                by: TxnId::nil(),
            })),
            at: clock::now(),
            ..RowRecord::dead(uuid::Uuid::now_v7())
        };
        assert_eq!(shown(&v, &store, &dead).await, Ok(9));
        // A writer handed it reads the row afresh.
        assert_eq!(unless_historic(Some(Some(seen))), None);
        assert!(unless_historic(Some(Some(row.clone()))).is_some());
        assert_eq!(unless_historic(Some(None)), Some(None));
        // The latest view shows what stands.
        assert_eq!(
            shown(&ReadView::latest(None), &store, &dead).await,
            Err("None".into())
        );
    }
}
