//! Counts every store operation of a statement (see `metrics::counting`),
//! whatever the store: LWTs and reads per statement are the cost users see.

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use super::{
    Cas, CatalogRecord, ClaimRecord, ForeignTable, RowRecord, ScanPage, Store, StoreResult, TxnId,
};
use crate::catalog::TableDef;
use crate::metrics::{note_lwt, note_read};

pub struct CountingStore {
    inner: Arc<dyn Store>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn Store>) -> CountingStore {
        CountingStore { inner }
    }
}

#[async_trait]
impl Store for CountingStore {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn create_table(&self, table: &TableDef) -> StoreResult<()> {
        self.inner.create_table(table).await
    }

    async fn drop_table(&self, table: &TableDef) -> StoreResult<()> {
        self.inner.drop_table(table).await
    }

    async fn adopt_table(&self, name: &str) -> StoreResult<ForeignTable> {
        self.inner.adopt_table(name).await
    }

    async fn read_row(&self, table: &TableDef, pk: &[u8]) -> StoreResult<Option<RowRecord>> {
        note_read();
        self.inner.read_row(table, pk).await
    }

    async fn insert_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        note_lwt();
        self.inner.insert_row(table, pk, row).await
    }

    async fn update_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        expected: TxnId,
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        note_lwt();
        self.inner.update_row(table, pk, expected, row).await
    }

    async fn scan_rows(
        &self,
        table: &TableDef,
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<ScanPage> {
        note_read();
        self.inner.scan_rows(table, after, limit).await
    }

    async fn read_claim(&self, constraint: &str, key: &[u8]) -> StoreResult<Option<ClaimRecord>> {
        note_read();
        self.inner.read_claim(constraint, key).await
    }

    async fn insert_claim(
        &self,
        constraint: &str,
        key: &[u8],
        claim: ClaimRecord,
    ) -> StoreResult<Cas<ClaimRecord>> {
        note_lwt();
        self.inner.insert_claim(constraint, key, claim).await
    }

    async fn restamp_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
        new: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        note_lwt();
        self.inner
            .restamp_claim(constraint, key, expected, new)
            .await
    }

    async fn delete_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        note_lwt();
        self.inner.delete_claim(constraint, key, expected).await
    }

    async fn drop_claims(&self, constraint: &str) -> StoreResult<()> {
        self.inner.drop_claims(constraint).await
    }

    async fn read_catalog(&self, name: &str) -> StoreResult<Option<CatalogRecord>> {
        self.inner.read_catalog(name).await
    }

    async fn list_catalog(&self) -> StoreResult<Vec<(String, CatalogRecord)>> {
        self.inner.list_catalog().await
    }

    async fn insert_catalog(
        &self,
        name: &str,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        self.inner.insert_catalog(name, rec).await
    }

    async fn update_catalog(
        &self,
        name: &str,
        expected: Uuid,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        self.inner.update_catalog(name, expected, rec).await
    }

    async fn delete_catalog(&self, name: &str, expected: Uuid) -> StoreResult<Cas<CatalogRecord>> {
        self.inner.delete_catalog(name, expected).await
    }
}
