//! The embedded store: the same LWT primitives as Cassandra, in process.
//!
//! Rows are kept as stored rows, each value in its column's slot
//! (`catalog::layout`), and given back in table order.
//!
//! Each table's rows sit in one ordered map behind a short-held lock, so
//! every compare-and-set is linearizable and scans page in key order (as a
//! CQL token scan would, minus the hashing). Claims need no order: each
//! constraint's sit in a DashMap that shards them by hash. Nothing survives
//! the process.

use std::collections::{btree_map, BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use dashmap::DashMap;
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use uuid::Uuid;

use crate::catalog::TableDef;

use super::{
    Cas, CatalogRecord, ClaimRecord, ForeignTable, IndexPage, LockRecord, RowRecord, ScanPage,
    Store, StoreError, StoreResult, TxnId, TxnRecord,
};

/// A key as the maps keep it: a key of a few columns (a bigint's is 13
/// bytes) sits inline in the map's node, so a lookup compares bytes lying
/// side by side instead of following a pointer for every key it passes.
type Key = SmallVec<[u8; 24]>;

type RowMap = BTreeMap<Key, RowRecord>;

/// The store's hash maps: keys are users' values, so the hash is seeded
/// per process (as SipHash is) but cheaper on the short keys they hold.
type HashMap<K, V> = DashMap<K, V, ahash::RandomState>;

/// One constraint's claims, by key.
type ClaimMap = HashMap<Key, ClaimRecord>;

/// Counts of LWTs and reads, for benchmarks and tests.
#[derive(Debug, Default)]
pub struct OpCounts {
    pub lwts: AtomicU64,
    pub reads: AtomicU64,
    /// Plain writes: index entries (`claims::index`).
    pub writes: AtomicU64,
    /// Operations on catalog-namespace records (table definitions, the
    /// epoch, sequence counters), counted apart: the figures above are the
    /// per-row cost the claim protocol pins.
    pub catalog_ops: AtomicU64,
}

#[derive(Default)]
pub struct MemoryStore {
    rows: HashMap<String, Arc<RwLock<RowMap>>>,
    /// Claims by constraint, then by key: found from the borrowed name and
    /// bytes (no key built for a lookup), and a constraint's dropped at once.
    claims: HashMap<String, Arc<ClaimMap>>,
    catalog: Mutex<BTreeMap<String, CatalogRecord>>,
    txn_records: HashMap<TxnId, TxnRecord>,
    heartbeats: HashMap<u32, u64>,
    locks: HashMap<Vec<u8>, LockRecord>,
    index_entries: HashMap<(String, Vec<u8>), BTreeSet<Vec<u8>>>,
    pub counts: OpCounts,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn table(&self, table: &str) -> Arc<RwLock<RowMap>> {
        named(&self.rows, table)
    }

    fn claims_of(&self, constraint: &str) -> Arc<ClaimMap> {
        named(&self.claims, constraint)
    }

    fn lwt(&self) {
        self.counts.lwts.fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self) {
        self.counts.reads.fetch_add(1, Ordering::Relaxed);
    }
}

/// The shared map `name` stands for in `maps`, made empty on first use;
/// found from the borrowed name (a name is copied only when it is new).
fn named<T: Default>(maps: &HashMap<String, Arc<T>>, name: &str) -> Arc<T> {
    if let Some(m) = maps.get(name) {
        return m.clone();
    }
    maps.entry(name.to_owned()).or_default().clone()
}

/// Compare-and-set on one slot of a map: `expect` decides from the current
/// state; on success the slot becomes `new` (None removes it).
fn cas_slot<T: Clone>(
    slot: Option<&T>,
    expect: impl FnOnce(Option<&T>) -> bool,
) -> Result<(), Option<T>> {
    if expect(slot) {
        Ok(())
    } else {
        Err(slot.cloned())
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    async fn read_row(&self, table: &TableDef, pk: &[u8]) -> StoreResult<Option<RowRecord>> {
        self.read();
        let row = self.table(&table.id).read().get(pk).cloned();
        Ok(row.map(|r| r.from_slots(table)))
    }

    async fn insert_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        self.lwt();
        // Made ready before the lock is taken; one walk of the map finds
        // the slot and fills it.
        let row = row.to_slots(table);
        let t = self.table(&table.id);
        let mut map = t.write();
        match map.entry(Key::from_slice(pk)) {
            btree_map::Entry::Vacant(slot) => {
                slot.insert(row);
                Ok(Cas::Applied)
            }
            btree_map::Entry::Occupied(cur) => {
                Ok(Cas::NotApplied(Some(cur.get().clone().from_slots(table))))
            }
        }
    }

    async fn update_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        expected: TxnId,
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        self.lwt();
        let mut row = row.to_slots(table);
        let t = self.table(&table.id);
        let mut map = t.write();
        match map.get_mut(pk) {
            Some(cur) if cur.version == expected => {
                // A writer whose definition has fewer columns than the
                // row (it has not seen an ADD COLUMN yet) leaves the
                // slots it does not know as they were, as a CQL UPDATE
                // leaves the columns it does not name.
                if cur.live && row.live && cur.values.len() > row.values.len() {
                    row.values
                        .extend_from_slice(&cur.values[row.values.len()..]);
                }
                *cur = row;
                Ok(Cas::Applied)
            }
            cur => Ok(Cas::NotApplied(cur.map(|r| r.clone().from_slots(table)))),
        }
    }

    async fn scan_rows(
        &self,
        table: &TableDef,
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<ScanPage> {
        self.read();
        let t = self.table(&table.id);
        let map = t.read();
        let lower = match after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let rows: Vec<(Vec<u8>, RowRecord)> = map
            .range::<[u8], _>((lower, Bound::Unbounded))
            .take(limit)
            .map(|(k, v)| (k.to_vec(), v.clone()))
            .collect();
        let next = if rows.len() == limit {
            rows.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        // The layout is the table's: looked at once a page, not a row.
        let rows = match table.plain_layout() {
            true => rows,
            false => rows
                .into_iter()
                .map(|(k, v)| (k, v.from_slots(table)))
                .collect(),
        };
        Ok(ScanPage { rows, next })
    }

    async fn create_table(&self, table: &TableDef) -> StoreResult<()> {
        self.rows.entry(table.id.clone()).or_default();
        Ok(())
    }

    /// Rows stored before it have no slot for it: nothing to do.
    async fn add_column(&self, _table: &TableDef, _column: usize) -> StoreResult<()> {
        Ok(())
    }

    async fn drop_table(&self, table: &TableDef) -> StoreResult<()> {
        self.drop_storage(&table.id).await
    }

    async fn table_storage(&self) -> StoreResult<Vec<String>> {
        Ok(self.rows.iter().map(|t| t.key().clone()).collect())
    }

    async fn drop_storage(&self, id: &str) -> StoreResult<()> {
        self.rows.remove(id);
        Ok(())
    }

    async fn adopt_table(&self, name: &str) -> StoreResult<ForeignTable> {
        Err(StoreError::Unavailable(format!(
            "the embedded store has no existing tables to adopt ({name})"
        )))
    }

    async fn read_claim(&self, constraint: &str, key: &[u8]) -> StoreResult<Option<ClaimRecord>> {
        self.read();
        let claims = self.claims.get(constraint);
        Ok(claims.and_then(|c| c.get(key).map(|c| c.clone())))
    }

    async fn insert_claim(
        &self,
        constraint: &str,
        key: &[u8],
        claim: ClaimRecord,
    ) -> StoreResult<Cas<ClaimRecord>> {
        self.lwt();
        match self.claims_of(constraint).entry(Key::from_slice(key)) {
            dashmap::Entry::Occupied(cur) => Ok(Cas::NotApplied(Some(cur.get().clone()))),
            dashmap::Entry::Vacant(slot) => {
                slot.insert(claim);
                Ok(Cas::Applied)
            }
        }
    }

    async fn restamp_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
        new: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        self.lwt();
        match self.claims_of(constraint).entry(Key::from_slice(key)) {
            dashmap::Entry::Occupied(mut cur) if cur.get().txn == expected => {
                cur.get_mut().txn = new;
                Ok(Cas::Applied)
            }
            dashmap::Entry::Occupied(cur) => Ok(Cas::NotApplied(Some(cur.get().clone()))),
            dashmap::Entry::Vacant(_) => Ok(Cas::NotApplied(None)),
        }
    }

    async fn delete_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        self.lwt();
        match self.claims_of(constraint).entry(Key::from_slice(key)) {
            dashmap::Entry::Occupied(cur) if cur.get().txn == expected => {
                cur.remove();
                Ok(Cas::Applied)
            }
            dashmap::Entry::Occupied(cur) => Ok(Cas::NotApplied(Some(cur.get().clone()))),
            dashmap::Entry::Vacant(_) => Ok(Cas::NotApplied(None)),
        }
    }

    async fn drop_claims(&self, constraint: &str) -> StoreResult<()> {
        self.claims.remove(constraint);
        Ok(())
    }

    async fn add_index_entry(&self, index: &str, key: &[u8], pk: &[u8]) -> StoreResult<()> {
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        self.index_entries
            .entry((index.to_owned(), key.to_vec()))
            .or_default()
            .insert(pk.to_vec());
        Ok(())
    }

    async fn read_index(
        &self,
        index: &str,
        key: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<IndexPage> {
        self.read();
        let Some(entries) = self.index_entries.get(&(index.to_owned(), key.to_vec())) else {
            return Ok(IndexPage::default());
        };
        let lower = match after {
            Some(k) => Bound::Excluded(k.to_vec()),
            None => Bound::Unbounded,
        };
        let pks: Vec<Vec<u8>> = entries
            .range((lower, Bound::Unbounded))
            .take(limit)
            .cloned()
            .collect();
        let next = match pks.len() == limit {
            true => pks.last().cloned(),
            false => None,
        };
        Ok(IndexPage { pks, next })
    }

    async fn drop_index(&self, index: &str) -> StoreResult<()> {
        self.index_entries.retain(|(i, _), _| i != index);
        Ok(())
    }

    async fn read_catalog(&self, name: &str) -> StoreResult<Option<CatalogRecord>> {
        self.counts.catalog_ops.fetch_add(1, Ordering::Relaxed);
        Ok(self.catalog.lock().get(name).cloned())
    }

    async fn list_catalog(&self) -> StoreResult<Vec<(String, CatalogRecord)>> {
        Ok(self
            .catalog
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    async fn insert_catalog(
        &self,
        name: &str,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        let mut cat = self.catalog.lock();
        self.counts.catalog_ops.fetch_add(1, Ordering::Relaxed);
        match cas_slot(cat.get(name), |cur| cur.is_none()) {
            Ok(()) => {
                cat.insert(name.to_owned(), rec);
                Ok(Cas::Applied)
            }
            Err(cur) => Ok(Cas::NotApplied(cur)),
        }
    }

    async fn update_catalog(
        &self,
        name: &str,
        expected: Uuid,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        let mut cat = self.catalog.lock();
        self.counts.catalog_ops.fetch_add(1, Ordering::Relaxed);
        match cas_slot(cat.get(name), |cur| {
            cur.is_some_and(|c| c.version == expected)
        }) {
            Ok(()) => {
                cat.insert(name.to_owned(), rec);
                Ok(Cas::Applied)
            }
            Err(cur) => Ok(Cas::NotApplied(cur)),
        }
    }

    async fn delete_catalog(&self, name: &str, expected: Uuid) -> StoreResult<Cas<CatalogRecord>> {
        self.counts.catalog_ops.fetch_add(1, Ordering::Relaxed);
        let mut cat = self.catalog.lock();
        match cas_slot(cat.get(name), |cur| {
            cur.is_some_and(|c| c.version == expected)
        }) {
            Ok(()) => {
                cat.remove(name);
                Ok(Cas::Applied)
            }
            Err(cur) => Ok(Cas::NotApplied(cur)),
        }
    }

    async fn insert_txn_record(&self, txn: TxnId, rec: TxnRecord) -> StoreResult<Cas<TxnRecord>> {
        self.lwt();
        match self.txn_records.entry(txn) {
            dashmap::Entry::Occupied(cur) => Ok(Cas::NotApplied(Some(*cur.get()))),
            dashmap::Entry::Vacant(slot) => {
                slot.insert(rec);
                Ok(Cas::Applied)
            }
        }
    }

    async fn read_txn_record(&self, txn: TxnId) -> StoreResult<Option<TxnRecord>> {
        self.read();
        Ok(self.txn_records.get(&txn).map(|r| *r))
    }

    async fn write_heartbeat(&self, proxy: u32, at_ms: u64) -> StoreResult<()> {
        self.heartbeats.insert(proxy, at_ms);
        Ok(())
    }

    async fn read_heartbeat(&self, proxy: u32) -> StoreResult<Option<u64>> {
        Ok(self.heartbeats.get(&proxy).map(|h| *h))
    }

    async fn read_lock(&self, key: &[u8]) -> StoreResult<Option<LockRecord>> {
        self.read();
        Ok(self.locks.get(key).map(|r| r.clone()))
    }

    async fn insert_lock(&self, key: &[u8], rec: LockRecord) -> StoreResult<Cas<LockRecord>> {
        self.lwt();
        match self.locks.entry(key.to_vec()) {
            dashmap::Entry::Occupied(cur) => Ok(Cas::NotApplied(Some(cur.get().clone()))),
            dashmap::Entry::Vacant(slot) => {
                slot.insert(rec);
                Ok(Cas::Applied)
            }
        }
    }

    async fn update_lock(
        &self,
        key: &[u8],
        expected: Uuid,
        rec: LockRecord,
    ) -> StoreResult<Cas<LockRecord>> {
        self.lwt();
        match self.locks.get_mut(key) {
            Some(mut cur) if cur.version == expected => {
                *cur = rec;
                Ok(Cas::Applied)
            }
            Some(cur) => Ok(Cas::NotApplied(Some(cur.clone()))),
            None => Ok(Cas::NotApplied(None)),
        }
    }
}
