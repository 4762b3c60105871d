//! One Store decorator for every concern that wraps store operations
//! (counting them for metrics, injecting faults in tests): a [`Layer`] sees
//! each LWT and each read as a future it may delay, run, or replace, and
//! [`Layered`] applies it to any store. DDL and catalog operations pass
//! through untouched, except sequence counters (`engine::sequence`), which
//! statements change as they run.

use std::ops::Deref;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use uuid::Uuid;

use super::{
    Cas, CatalogRecord, ClaimRecord, ForeignTable, IndexPage, LockRecord, RowRecord, ScanPage,
    Store, StoreResult, TxnId, TxnRecord,
};
use crate::catalog::TableDef;

/// What to do around the store's LWTs and reads. `op` names the operation,
/// `space` the table or constraint, `key` the partition. Each kind passes
/// through unless the layer says otherwise.
pub trait Layer: Send + Sync + 'static {
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<Cas<T>>>,
    ) -> BoxFuture<'a, StoreResult<Cas<T>>> {
        write
    }

    fn read<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        read: BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        read
    }

    /// A plain write (an index entry): no compare-and-set, idempotent.
    fn write<'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<()>>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        write
    }

    /// Whether catalog entries (DDL) pass through this layer too; sequence
    /// counters always do.
    fn wraps_catalog(&self) -> bool {
        false
    }
}

/// Whether a catalog-namespace record is a sequence counter.
fn is_counter(name: &str) -> bool {
    name.starts_with(crate::catalog::COUNTER_PREFIX)
}

impl<L: Layer> Layered<L> {
    fn wraps(&self, name: &str) -> bool {
        is_counter(name) || self.layer.wraps_catalog()
    }

    /// A catalog-namespace LWT, through the layer if it wraps that record.
    async fn catalog_lwt<'a>(
        &'a self,
        op: &'static str,
        name: &'a str,
        write: BoxFuture<'a, StoreResult<Cas<CatalogRecord>>>,
    ) -> StoreResult<Cas<CatalogRecord>> {
        match self.wraps(name) {
            true => self.layer.lwt(op, "", name.as_bytes(), write).await,
            false => write.await,
        }
    }
}

/// A store with a layer around its operations.
pub struct Layered<L> {
    inner: Arc<dyn Store>,
    layer: L,
}

impl<L> Layered<L> {
    pub fn wrap(inner: Arc<dyn Store>, layer: L) -> Layered<L> {
        Layered { inner, layer }
    }
}

/// The layer's own state (fault counts, say) reads through the store.
impl<L> Deref for Layered<L> {
    type Target = L;
    fn deref(&self) -> &L {
        &self.layer
    }
}

#[async_trait]
impl<L: Layer> Store for Layered<L> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn create_table(&self, table: &TableDef) -> StoreResult<()> {
        self.inner.create_table(table).await
    }

    async fn add_column(&self, table: &TableDef, column: usize) -> StoreResult<()> {
        self.inner.add_column(table, column).await
    }

    async fn drop_table(&self, table: &TableDef) -> StoreResult<()> {
        self.inner.drop_table(table).await
    }

    async fn table_storage(&self) -> StoreResult<Vec<String>> {
        self.inner.table_storage().await
    }

    async fn drop_storage(&self, id: &str) -> StoreResult<()> {
        self.inner.drop_storage(id).await
    }

    async fn adopt_table(&self, name: &str) -> StoreResult<ForeignTable> {
        self.inner.adopt_table(name).await
    }

    async fn read_row(&self, table: &TableDef, pk: &[u8]) -> StoreResult<Option<RowRecord>> {
        let read = self.inner.read_row(table, pk);
        self.layer.read("read_row", &table.id, pk, read).await
    }

    async fn insert_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        let write = self.inner.insert_row(table, pk, row);
        self.layer.lwt("insert_row", &table.id, pk, write).await
    }

    async fn update_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        expected: TxnId,
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        let write = self.inner.update_row(table, pk, expected, row);
        self.layer.lwt("update_row", &table.id, pk, write).await
    }

    async fn scan_rows(
        &self,
        table: &TableDef,
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<ScanPage> {
        let read = self.inner.scan_rows(table, after, limit);
        self.layer
            .read("scan_rows", &table.id, after.unwrap_or_default(), read)
            .await
    }

    async fn read_claim(&self, constraint: &str, key: &[u8]) -> StoreResult<Option<ClaimRecord>> {
        let read = self.inner.read_claim(constraint, key);
        self.layer.read("read_claim", constraint, key, read).await
    }

    async fn insert_claim(
        &self,
        constraint: &str,
        key: &[u8],
        claim: ClaimRecord,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let write = self.inner.insert_claim(constraint, key, claim);
        self.layer.lwt("insert_claim", constraint, key, write).await
    }

    async fn restamp_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
        new: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let write = self.inner.restamp_claim(constraint, key, expected, new);
        self.layer
            .lwt("restamp_claim", constraint, key, write)
            .await
    }

    async fn delete_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let write = self.inner.delete_claim(constraint, key, expected);
        self.layer.lwt("delete_claim", constraint, key, write).await
    }

    async fn drop_claims(&self, constraint: &str) -> StoreResult<()> {
        self.inner.drop_claims(constraint).await
    }

    async fn add_index_entry(&self, index: &str, key: &[u8], pk: &[u8]) -> StoreResult<()> {
        let write = self.inner.add_index_entry(index, key, pk);
        self.layer.write("add_index_entry", index, key, write).await
    }

    async fn read_index(
        &self,
        index: &str,
        key: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<IndexPage> {
        let read = self.inner.read_index(index, key, after, limit);
        self.layer.read("read_index", index, key, read).await
    }

    async fn drop_index(&self, index: &str) -> StoreResult<()> {
        self.inner.drop_index(index).await
    }

    async fn read_catalog(&self, name: &str) -> StoreResult<Option<CatalogRecord>> {
        let read = self.inner.read_catalog(name);
        match self.wraps(name) {
            true => {
                self.layer
                    .read("read_catalog", "", name.as_bytes(), read)
                    .await
            }
            false => read.await,
        }
    }

    async fn list_catalog(&self) -> StoreResult<Vec<(String, CatalogRecord)>> {
        self.inner.list_catalog().await
    }

    async fn insert_catalog(
        &self,
        name: &str,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        let write = self.inner.insert_catalog(name, rec);
        self.catalog_lwt("insert_catalog", name, write).await
    }

    async fn update_catalog(
        &self,
        name: &str,
        expected: Uuid,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        let write = self.inner.update_catalog(name, expected, rec);
        self.catalog_lwt("update_catalog", name, write).await
    }

    async fn delete_catalog(&self, name: &str, expected: Uuid) -> StoreResult<Cas<CatalogRecord>> {
        let write = self.inner.delete_catalog(name, expected);
        self.catalog_lwt("delete_catalog", name, write).await
    }

    async fn insert_txn_record(&self, txn: TxnId, rec: TxnRecord) -> StoreResult<Cas<TxnRecord>> {
        let write = self.inner.insert_txn_record(txn, rec);
        self.layer
            .lwt("insert_txn_record", "txn_records", txn.as_bytes(), write)
            .await
    }

    async fn read_txn_record(&self, txn: TxnId) -> StoreResult<Option<TxnRecord>> {
        let read = self.inner.read_txn_record(txn);
        self.layer
            .read("read_txn_record", "txn_records", txn.as_bytes(), read)
            .await
    }

    // A heartbeat is delayed with the rest of a stalled proxy's traffic (so
    // a frozen proxy looks silent, as one under SIGSTOP does) and may fail
    // like any read.
    async fn write_heartbeat(&self, proxy: u32, at_ms: u64) -> StoreResult<()> {
        let key = proxy.to_be_bytes();
        let write = self.inner.write_heartbeat(proxy, at_ms);
        self.layer
            .read("write_heartbeat", "heartbeats", &key, write)
            .await
    }

    async fn read_heartbeat(&self, proxy: u32) -> StoreResult<Option<u64>> {
        let key = proxy.to_be_bytes();
        let read = self.inner.read_heartbeat(proxy);
        self.layer
            .read("read_heartbeat", "heartbeats", &key, read)
            .await
    }

    async fn read_lock(&self, key: &[u8]) -> StoreResult<Option<LockRecord>> {
        let read = self.inner.read_lock(key);
        self.layer
            .read("read_lock", "advisory_locks", key, read)
            .await
    }

    async fn insert_lock(&self, key: &[u8], rec: LockRecord) -> StoreResult<Cas<LockRecord>> {
        let write = self.inner.insert_lock(key, rec);
        self.layer
            .lwt("insert_lock", "advisory_locks", key, write)
            .await
    }

    async fn update_lock(
        &self,
        key: &[u8],
        expected: Uuid,
        rec: LockRecord,
    ) -> StoreResult<Cas<LockRecord>> {
        let write = self.inner.update_lock(key, expected, rec);
        self.layer
            .lwt("update_lock", "advisory_locks", key, write)
            .await
    }
}
