//! The Cassandra / ScyllaDB store: the `Store` primitives as CQL
//! lightweight transactions, through the scylla driver.
//!
//! - [`connect`]: the driver session, the keyspace, `--check`.
//! - [`cql`]: the text of every statement (pure, tested).
//! - [`statements`]: prepared once, cached per table.
//! - [`values`]: SQL values to CQL and back, result rows by column name.
//! - [`errors`]: driver errors to "certainly not applied" / "unknown".
//! - [`intent`]: a row's pending transaction write as `__intent` stores it.
//! - [`reach`]: fail at once when no quorum of replicas is reachable.
//!
//! Every conditional method is exactly one LWT. Where Cassandra answers a
//! failed LWT without the row (a failed `IF __version = ?` returns only the
//! version), the store reads the row at SERIAL to answer as the trait
//! promises; ScyllaDB returns the row and needs no read.

pub mod adopt;
pub mod connect;
pub mod cql;
pub mod errors;
pub mod intent;
pub mod reach;
pub mod statements;
pub mod values;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::frame::response::result::ColumnType;
use scylla::response::query_result::QueryResult;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, MaybeUnset, Row};
use tracing::info;
use uuid::Uuid;

use self::cql::non_key_columns;
use self::errors::{classify, classify_pager};
use self::statements::{Statements, TableStatements};
use self::values::{to_cql_as, Named};
use super::{
    Cas, CatalogRecord, ClaimRecord, ForeignTable, IndexPage, Intent, LockRecord, Prior, RowRecord,
    ScanPage, Store, StoreError, StoreResult, TxnId, TxnRecord, TxnStatus,
};
use crate::catalog::TableDef;
use crate::config::StoreConfig;
use crate::types::{decode_key, Value};

/// One bound value: a value, NULL (`Set(None)`), or unset (leaves the
/// column alone and writes no tombstone).
type Bind = MaybeUnset<Option<CqlValue>>;

fn set(v: Option<CqlValue>) -> Bind {
    MaybeUnset::Set(v)
}

fn uuid(u: Uuid) -> Bind {
    set(Some(CqlValue::Uuid(u)))
}

fn blob(b: &[u8]) -> Bind {
    set(Some(CqlValue::Blob(b.to_vec())))
}

fn text(s: &str) -> Bind {
    set(Some(CqlValue::Text(s.to_owned())))
}

pub struct CassandraStore {
    session: Arc<Session>,
    keyspace: String,
    stmts: Statements,
    reach: reach::Reach,
}

/// The rows of a result with their column names.
struct Rows {
    names: Vec<String>,
    rows: Vec<Row>,
}

impl Rows {
    fn iter(&self) -> impl Iterator<Item = Named<'_>> {
        self.rows.iter().map(|r| Named {
            names: &self.names,
            values: &r.columns,
        })
    }

    fn first(&self) -> Option<Named<'_>> {
        self.iter().next()
    }
}

fn rows_of(result: QueryResult) -> StoreResult<Rows> {
    let bad = |e: &dyn std::fmt::Display| StoreError::Unknown(format!("unreadable result: {e}"));
    // Plain writes answer with no rows at all.
    if !result.is_rows() {
        return Ok(Rows {
            names: Vec::new(),
            rows: Vec::new(),
        });
    }
    let rows = result.into_rows_result().map_err(|e| bad(&e))?;
    let names = rows
        .column_specs()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let rows = rows
        .rows::<Row>()
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    Ok(Rows { names, rows })
}

/// An LWT's answer: applied, or not together with what came back.
fn lwt_answer(rows: &Rows) -> StoreResult<Option<Named<'_>>> {
    let first = rows
        .first()
        .ok_or_else(|| StoreError::Unknown("an LWT returned no [applied] row".into()))?;
    Ok(if first.applied()? { None } else { Some(first) })
}

/// The key's values, typed, from its canonical bytes.
fn key_values(table: &TableDef, pk: &[u8]) -> StoreResult<Vec<Value>> {
    let types: Vec<_> = table
        .key_columns()
        .iter()
        .map(|&i| table.columns[i].ty.clone())
        .collect();
    decode_key(&types, pk).map_err(|e| StoreError::Unavailable(e.message))
}

/// The key's values bound as its columns store them.
fn key_binds(table: &TableDef, stmts: &TableStatements, pk: &[u8]) -> StoreResult<Vec<Bind>> {
    Ok(key_values(table, pk)?
        .iter()
        .zip(table.key_columns().iter())
        .map(|(v, &i)| set(to_cql_as(v, &stmts.column_types[i])))
        .collect())
}

/// A value as its column stores it (values arrive already of the column's
/// type; the cast only guards the wire type against a mismatch).
fn column_value(
    table: &TableDef,
    stmts: &TableStatements,
    i: usize,
    v: &Value,
) -> Option<CqlValue> {
    let cast = v.cast_to(&table.columns[i].ty);
    let v = cast.as_ref().unwrap_or(v);
    match &stmts.column_types[i] {
        // An added column (`cql::column_type`): NULL is a tuple of null.
        ColumnType::Tuple(elements) => Some(CqlValue::Tuple(vec![elements
            .first()
            .and_then(|t| to_cql_as(v, t))])),
        t => to_cql_as(v, t),
    }
}

fn claims_map(claims: &BTreeMap<String, TxnId>) -> Option<CqlValue> {
    if claims.is_empty() {
        return None;
    }
    Some(CqlValue::Map(
        claims
            .iter()
            .map(|(k, v)| (CqlValue::Text(k.clone()), CqlValue::Uuid(*v)))
            .collect(),
    ))
}

fn claim_of(named: &Named<'_>) -> StoreResult<Option<ClaimRecord>> {
    match (named.blob("owner")?, named.uuid("txn")?) {
        (Some(owner), Some(txn)) => Ok(Some(ClaimRecord { owner, txn })),
        _ => Ok(None),
    }
}

fn catalog_of(named: &Named<'_>) -> StoreResult<Option<CatalogRecord>> {
    match (named.uuid("version")?, named.text("definition")?) {
        (Some(version), Some(definition)) => Ok(Some(CatalogRecord {
            version,
            definition,
        })),
        (Some(version), None) => Ok(Some(CatalogRecord {
            version,
            definition: String::new(),
        })),
        _ => Ok(None),
    }
}

impl CassandraStore {
    /// Connects, creates the keyspace and keyclaim's tables when missing,
    /// and prepares the fixed statements.
    pub async fn connect(cfg: &StoreConfig) -> Result<CassandraStore, String> {
        let session = Arc::new(connect::session(cfg).await?);
        connect::ensure_schema(&session, cfg).await?;
        let stmts = Statements::new(
            session.clone(),
            &cfg.keyspace,
            connect::serial_read(cfg.serial_consistency),
        )
        .await
        .map_err(|e| e.to_string())?;
        info!(
            store = "cassandra",
            keyspace = %cfg.keyspace,
            nodes = %cfg.contact_points.join(","),
            "connected to Cassandra"
        );
        Ok(CassandraStore {
            session,
            keyspace: cfg.keyspace.clone(),
            stmts,
            reach: reach::Reach::new(cfg),
        })
    }

    /// The driver session (for tools and tests that also speak CQL).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The prepared statements (for tests that check how they route).
    pub fn statements(&self) -> &Statements {
        &self.stmts
    }

    async fn run(
        &self,
        stmt: &PreparedStatement,
        values: impl SerializeRow,
        lwt: bool,
    ) -> StoreResult<Rows> {
        self.reach.check(&self.session)?;
        let result = self
            .session
            .execute_unpaged(stmt, values)
            .await
            .map_err(|e| classify(&e, lwt))?;
        rows_of(result)
    }

    /// An LWT on the claims table: applied, or the claim there now.
    async fn claim_lwt(
        &self,
        stmt: &PreparedStatement,
        binds: Vec<Bind>,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let rows = self.run(stmt, binds, true).await?;
        match lwt_answer(&rows)? {
            None => Ok(Cas::Applied),
            Some(current) => Ok(Cas::NotApplied(claim_of(&current)?)),
        }
    }

    async fn run_ddl(&self, text: String) -> StoreResult<()> {
        self.session
            .query_unpaged(text, ())
            .await
            .map_err(|e| classify(&e, false))?;
        self.session
            .await_schema_agreement()
            .await
            .map_err(|e| StoreError::Unknown(format!("schema agreement: {e}")))?;
        Ok(())
    }
}

#[async_trait]
impl Store for CassandraStore {
    fn kind(&self) -> &'static str {
        "cassandra"
    }

    async fn create_table(&self, table: &TableDef) -> StoreResult<()> {
        if table.cql_table.is_some() {
            return Ok(());
        }
        self.run_ddl(cql::create_rows_table(&self.keyspace, table))
            .await
    }

    async fn add_column(&self, table: &TableDef, column: usize) -> StoreResult<()> {
        match self
            .run_ddl(cql::add_column(&self.keyspace, table, column))
            .await
        {
            Err(e) if cql::is_existing_column_error(&e.to_string()) => Ok(()),
            other => other,
        }
    }

    /// An adopted table leaves keyclaim's catalog but keeps its CQL table
    /// and data: it belonged to someone before keyclaim.
    async fn drop_table(&self, table: &TableDef) -> StoreResult<()> {
        self.stmts.forget(table);
        if table.cql_table.is_some() {
            return Ok(());
        }
        self.drop_storage(&table.id).await
    }

    async fn table_storage(&self) -> StoreResult<Vec<String>> {
        let keyspace = cql::schema_keyspace(&self.keyspace);
        let tables: Vec<(String, Option<String>)> =
            adopt::schema_rows(&self.session, cql::STORAGE_TABLES, (keyspace,)).await?;
        Ok(tables
            .into_iter()
            .filter_map(|(_, comment)| {
                Some(comment?.strip_prefix(cql::STORAGE_COMMENT)?.to_owned())
            })
            .collect())
    }

    async fn drop_storage(&self, id: &str) -> StoreResult<()> {
        self.run_ddl(cql::drop_storage_table(&self.keyspace, id))
            .await
    }

    async fn adopt_table(&self, name: &str) -> StoreResult<ForeignTable> {
        adopt::adopt(&self.session, &self.keyspace, name).await
    }

    async fn read_row(&self, table: &TableDef, pk: &[u8]) -> StoreResult<Option<RowRecord>> {
        let stmts = self.stmts.table(table).await?;
        let key = key_binds(table, &stmts, pk)?;
        let rows = self.run(&stmts.read, key, false).await?;
        match rows.first() {
            Some(named) => Ok(named.row(table)?.map(|(_, r)| r)),
            None => Ok(None),
        }
    }

    async fn insert_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        let stmts = self.stmts.table(table).await?;
        let mut key = key_binds(table, &stmts, pk)?;
        let mut binds: Vec<Bind> = Vec::with_capacity(table.columns.len() + 3);
        let key_columns = table.key_columns();
        for i in 0..table.columns.len() {
            // The key columns hold the canonical key, so equal keys share a partition.
            let bind = if let Some(k) = key_columns.iter().position(|&p| p == i) {
                std::mem::replace(&mut key[k], MaybeUnset::Unset)
            } else {
                let added = table.columns[i].storage.missing.is_some();
                match row.values.get(i).filter(|_| row.live) {
                    Some(v) if !v.is_null() || added => set(column_value(table, &stmts, i, v)),
                    // Nothing to overwrite in a new partition: no tombstone.
                    _ => MaybeUnset::Unset,
                }
            };
            binds.push(bind);
        }
        binds.push(uuid(row.version));
        binds.push(set(Some(CqlValue::Boolean(row.live))));
        binds.push(match claims_map(&row.claims) {
            Some(m) => set(Some(m)),
            None => MaybeUnset::Unset,
        });
        binds.push(match intent_text(table, &stmts, &row)? {
            Some(t) => set(Some(t)),
            None => MaybeUnset::Unset,
        });
        binds.extend(history_binds(table, &row)?);
        let rows = self.run(&stmts.insert, binds, true).await?;
        match lwt_answer(&rows)? {
            None => Ok(Cas::Applied),
            Some(current) => Ok(Cas::NotApplied(current.row(table)?.map(|(_, r)| r))),
        }
    }

    async fn update_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        expected: TxnId,
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>> {
        let stmts = self.stmts.table(table).await?;
        let mut binds: Vec<Bind> = non_key_columns(table)
            .map(|i| match row.values.get(i).filter(|_| row.live) {
                Some(v) => set(column_value(table, &stmts, i, v)),
                // Dead rows keep no data.
                None => set(None),
            })
            .collect();
        binds.push(uuid(row.version));
        binds.push(set(Some(CqlValue::Boolean(row.live))));
        binds.push(set(claims_map(&row.claims)));
        // None clears it: a CAS that folds or drops an intent writes none.
        binds.push(set(intent_text(table, &stmts, &row)?));
        binds.extend(history_binds(table, &row)?);
        binds.extend(key_binds(table, &stmts, pk)?);
        // Rows from before adoption have no version: nil, `IF __version = null`.
        binds.push(match expected.is_nil() {
            true => set(None),
            false => uuid(expected),
        });
        let rows = self.run(&stmts.update, binds, true).await?;
        let Some(current) = lwt_answer(&rows)? else {
            return Ok(Cas::Applied);
        };
        if current.has_row(table) {
            return Ok(Cas::NotApplied(current.row(table)?.map(|(_, r)| r)));
        }
        // Cassandra sends `[applied]` alone for a missing partition, and
        // adds `__version` for an existing one: then read the row the
        // condition did not bring back.
        if !current.has(cql::VERSION) {
            return Ok(Cas::NotApplied(None));
        }
        Ok(Cas::NotApplied(self.read_row(table, pk).await?))
    }

    async fn scan_rows(
        &self,
        table: &TableDef,
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<ScanPage> {
        let stmts = self.stmts.table(table).await?;
        let limit_bind = set(Some(CqlValue::Int(limit.min(i32::MAX as usize) as i32)));
        // Pages follow the token order: each page starts after the token
        // of the last key of the one before. (Two keys sharing one 64-bit
        // Murmur3 token across a page boundary would skip the second: at
        // 2^-64 per pair of keys, accepted for a cursor that is just a key.)
        let rows = match after {
            None => self.run(&stmts.scan_first, vec![limit_bind], false).await?,
            Some(after) => {
                let mut binds = key_binds(table, &stmts, after)?;
                binds.push(limit_bind);
                self.run(&stmts.scan_after, binds, false).await?
            }
        };
        let mut page = Vec::with_capacity(rows.rows.len());
        for named in rows.iter() {
            page.extend(named.row(table)?);
        }
        let next = if rows.rows.len() >= limit {
            page.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        Ok(ScanPage { rows: page, next })
    }

    async fn read_claim(&self, constraint: &str, key: &[u8]) -> StoreResult<Option<ClaimRecord>> {
        let rows = self
            .run(
                &self.stmts.fixed.claim_read,
                vec![text(constraint), blob(key)],
                false,
            )
            .await?;
        match rows.first() {
            Some(named) => claim_of(&named),
            None => Ok(None),
        }
    }

    async fn insert_claim(
        &self,
        constraint: &str,
        key: &[u8],
        claim: ClaimRecord,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let binds = vec![
            text(constraint),
            blob(key),
            blob(&claim.owner),
            uuid(claim.txn),
        ];
        self.claim_lwt(&self.stmts.fixed.claim_insert, binds).await
    }

    async fn restamp_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
        new: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let binds = vec![
            uuid(new),
            text(constraint),
            blob(key),
            uuid(expected),
            blob(&[]),
        ];
        self.claim_lwt(&self.stmts.fixed.claim_restamp, binds).await
    }

    async fn delete_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>> {
        let binds = vec![text(constraint), blob(key), uuid(expected), blob(&[])];
        self.claim_lwt(&self.stmts.fixed.claim_delete, binds).await
    }

    /// A constraint's claims are spread over the whole claims table (the
    /// constraint is only part of each partition key), so this is a paged
    /// full scan of that table, filtered, then a delete per claim: O(all
    /// claims) work, done only by DROP INDEX / DROP TABLE. The constraint
    /// id is never reused and is already out of the catalog, so a plain
    /// delete cannot race with a claim that still counts.
    async fn drop_claims(&self, constraint: &str) -> StoreResult<()> {
        let pager = self
            .session
            .execute_iter(
                self.stmts.fixed.claim_keys_of.clone(),
                vec![text(constraint)],
            )
            .await
            .map_err(|e| classify_pager(&e))?;
        let keys = pager
            .rows_stream::<(Vec<u8>,)>()
            .map_err(|e| StoreError::Unknown(format!("unreadable claims: {e}")))?;
        keys.map_err(|e| StoreError::Unknown(format!("scanning claims: {e}")))
            .try_for_each_concurrent(16, |(key,)| async move {
                self.run(
                    &self.stmts.fixed.claim_drop,
                    vec![text(constraint), blob(&key)],
                    false,
                )
                .await
                .map(|_| ())
            })
            .await
    }

    async fn add_index_entry(&self, index: &str, key: &[u8], pk: &[u8]) -> StoreResult<()> {
        let binds = vec![text(index), blob(key), blob(pk)];
        self.run(&self.stmts.fixed.index_add, binds, false).await?;
        Ok(())
    }

    async fn read_index(
        &self,
        index: &str,
        key: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<IndexPage> {
        let binds = vec![
            text(index),
            blob(key),
            blob(after.unwrap_or_default()),
            set(Some(CqlValue::Int(limit.min(i32::MAX as usize) as i32))),
        ];
        let rows = self.run(&self.stmts.fixed.index_read, binds, false).await?;
        let pks = rows
            .iter()
            .map(|named| {
                named
                    .blob("pk")?
                    .ok_or_else(|| StoreError::Unknown("an index entry without a key".into()))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let next = match pks.len() == limit {
            true => pks.last().cloned(),
            false => None,
        };
        Ok(IndexPage { pks, next })
    }

    async fn drop_index(&self, index: &str) -> StoreResult<()> {
        let pager = self
            .session
            .execute_iter(self.stmts.fixed.index_keys_of.clone(), vec![text(index)])
            .await
            .map_err(|e| classify_pager(&e))?;
        let keys = pager
            .rows_stream::<(Vec<u8>,)>()
            .map_err(|e| StoreError::Unknown(format!("unreadable index entries: {e}")))?;
        // A key comes once per entry under it; deleting its partition again
        // is harmless.
        keys.map_err(|e| StoreError::Unknown(format!("scanning index entries: {e}")))
            .try_for_each_concurrent(16, |(key,)| async move {
                self.run(
                    &self.stmts.fixed.index_drop,
                    vec![text(index), blob(&key)],
                    false,
                )
                .await
                .map(|_| ())
            })
            .await
    }

    async fn read_catalog(&self, name: &str) -> StoreResult<Option<CatalogRecord>> {
        let rows = self
            .run(&self.stmts.fixed.catalog_read, vec![text(name)], false)
            .await?;
        match rows.first() {
            Some(named) => catalog_of(&named),
            None => Ok(None),
        }
    }

    async fn list_catalog(&self) -> StoreResult<Vec<(String, CatalogRecord)>> {
        let pager = self
            .session
            .execute_iter(self.stmts.fixed.catalog_list.clone(), ())
            .await
            .map_err(|e| classify_pager(&e))?;
        let rows = pager
            .rows_stream::<(String, Uuid, Option<String>)>()
            .map_err(|e| StoreError::Unknown(format!("unreadable catalog: {e}")))?;
        rows.map(|r| {
            r.map(|(name, version, definition)| {
                (
                    name,
                    CatalogRecord {
                        version,
                        definition: definition.unwrap_or_default(),
                    },
                )
            })
            .map_err(|e| StoreError::Unknown(format!("reading the catalog: {e}")))
        })
        .try_collect()
        .await
    }

    async fn insert_catalog(
        &self,
        name: &str,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        let binds = vec![text(name), uuid(rec.version), text(&rec.definition)];
        let rows = self
            .run(&self.stmts.fixed.catalog_insert, binds, true)
            .await?;
        match lwt_answer(&rows)? {
            None => Ok(Cas::Applied),
            Some(current) => Ok(Cas::NotApplied(catalog_of(&current)?)),
        }
    }

    async fn update_catalog(
        &self,
        name: &str,
        expected: Uuid,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>> {
        let binds = vec![
            uuid(rec.version),
            text(&rec.definition),
            text(name),
            uuid(expected),
        ];
        let rows = self
            .run(&self.stmts.fixed.catalog_update, binds, true)
            .await?;
        self.catalog_answer(name, &rows).await
    }

    async fn delete_catalog(&self, name: &str, expected: Uuid) -> StoreResult<Cas<CatalogRecord>> {
        let binds = vec![text(name), uuid(expected)];
        let rows = self
            .run(&self.stmts.fixed.catalog_delete, binds, true)
            .await?;
        self.catalog_answer(name, &rows).await
    }

    async fn insert_txn_record(&self, txn: TxnId, rec: TxnRecord) -> StoreResult<Cas<TxnRecord>> {
        let binds = vec![
            uuid(txn),
            text(status_text(rec.status)),
            set(Some(CqlValue::BigInt(rec.at as i64))),
        ];
        let rows = self.run(&self.stmts.fixed.txn_insert, binds, true).await?;
        match lwt_answer(&rows)? {
            None => Ok(Cas::Applied),
            Some(current) => Ok(Cas::NotApplied(txn_record_of(&current)?)),
        }
    }

    async fn read_txn_record(&self, txn: TxnId) -> StoreResult<Option<TxnRecord>> {
        let rows = self
            .run(&self.stmts.fixed.txn_read, vec![uuid(txn)], false)
            .await?;
        match rows.first() {
            Some(named) => txn_record_of(&named),
            None => Ok(None),
        }
    }

    async fn write_heartbeat(&self, proxy: u32, at_ms: u64) -> StoreResult<()> {
        let binds = vec![
            set(Some(CqlValue::BigInt(at_ms as i64))),
            set(Some(CqlValue::BigInt(i64::from(proxy)))),
        ];
        self.run(&self.stmts.fixed.heartbeat_write, binds, false)
            .await?;
        Ok(())
    }

    async fn read_heartbeat(&self, proxy: u32) -> StoreResult<Option<u64>> {
        let binds = vec![set(Some(CqlValue::BigInt(i64::from(proxy))))];
        let rows = self
            .run(&self.stmts.fixed.heartbeat_read, binds, false)
            .await?;
        Ok(rows.first().and_then(|named| match named.get("at") {
            Some(CqlValue::BigInt(at)) => Some(*at as u64),
            _ => None,
        }))
    }

    async fn read_lock(&self, key: &[u8]) -> StoreResult<Option<LockRecord>> {
        let rows = self
            .run(&self.stmts.fixed.lock_read, vec![blob(key)], false)
            .await?;
        match rows.first() {
            Some(named) => lock_of(&named),
            None => Ok(None),
        }
    }

    async fn insert_lock(&self, key: &[u8], rec: LockRecord) -> StoreResult<Cas<LockRecord>> {
        let binds = vec![blob(key), uuid(rec.version), holders_text(&rec)?];
        let rows = self.run(&self.stmts.fixed.lock_insert, binds, true).await?;
        match lwt_answer(&rows)? {
            None => Ok(Cas::Applied),
            Some(current) => Ok(Cas::NotApplied(lock_of(&current)?)),
        }
    }

    async fn update_lock(
        &self,
        key: &[u8],
        expected: Uuid,
        rec: LockRecord,
    ) -> StoreResult<Cas<LockRecord>> {
        let binds = vec![
            uuid(rec.version),
            holders_text(&rec)?,
            blob(key),
            uuid(expected),
        ];
        let rows = self.run(&self.stmts.fixed.lock_update, binds, true).await?;
        let Some(current) = lwt_answer(&rows)? else {
            return Ok(Cas::Applied);
        };
        // A failed `IF version = ?` answers with the version only; the
        // holders come from a read.
        if current.has("holders") || current.uuid("version")?.is_none() {
            return Ok(Cas::NotApplied(lock_of(&current)?));
        }
        Ok(Cas::NotApplied(self.read_lock(key).await?))
    }
}

/// An advisory lock partition as read, or as a not-applied LWT returned it.
fn lock_of(named: &Named<'_>) -> StoreResult<Option<LockRecord>> {
    let Some(version) = named.uuid("version")? else {
        return Ok(None);
    };
    let holders = match named.text("holders")? {
        Some(text) => serde_json::from_str(&text).map_err(|e| {
            StoreError::Unknown(format!("unexpected data in the store: lock holders: {e}"))
        })?,
        None => BTreeMap::new(),
    };
    Ok(Some(LockRecord { version, holders }))
}

fn holders_text(rec: &LockRecord) -> StoreResult<Bind> {
    serde_json::to_string(&rec.holders)
        .map(|t| text(&t))
        .map_err(|e| StoreError::Unavailable(format!("lock holders do not serialize: {e}")))
}

fn status_text(status: TxnStatus) -> &'static str {
    match status {
        TxnStatus::Committed => "committed",
        TxnStatus::Aborted => "aborted",
    }
}

fn txn_record_of(named: &Named<'_>) -> StoreResult<Option<TxnRecord>> {
    // A record from before commit stamps has none: older than any snapshot.
    let at = match named.get("at") {
        Some(CqlValue::BigInt(at)) => *at as u64,
        _ => 0,
    };
    Ok(match named.text("status")?.as_deref() {
        Some("committed") => Some(TxnRecord::committed(at)),
        Some("aborted") => Some(TxnRecord::aborted()),
        None => None,
        Some(other) => {
            return Err(StoreError::Unknown(format!(
                "unexpected data in the store: a transaction status {other}"
            )))
        }
    })
}

/// `__at`, `__by` and `__prev` as stored: the committed state's stamp and
/// writer, and the state before it (JSON, as an intent's values are).
fn history_binds(table: &TableDef, row: &RowRecord) -> StoreResult<[Bind; 3]> {
    let prev = match row.prev.as_deref() {
        Some(p) => {
            let stored = Prior {
                values: match table.plain_layout() {
                    true => p.values.clone(),
                    false => table.to_slots(&p.values),
                },
                ..p.clone()
            };
            let json = intent::prior_to_json(&stored).map_err(|e| {
                StoreError::Unavailable(format!("a previous row state does not serialize: {e}"))
            })?;
            Some(CqlValue::Text(json))
        }
        None => None,
    };
    Ok([
        set(Some(CqlValue::BigInt(row.at as i64))),
        uuid(row.by),
        set(prev),
    ])
}

/// `__intent` as stored (see [`intent`]), or None.
///
/// An intent holds the values its row will have once folded. An adopted
/// table may store a column with less precision than its SQL type (CQL
/// `timestamp` keeps milliseconds), so there each value is taken through
/// its column's CQL type and back first; a transaction then reads its own
/// write as everyone reads it after COMMIT.
fn intent_text(
    table: &TableDef,
    stmts: &TableStatements,
    row: &RowRecord,
) -> StoreResult<Option<CqlValue>> {
    let Some(i) = row.intent.as_ref() else {
        return Ok(None);
    };
    let stored;
    let i = if !table.plain_layout() {
        // As stored: each value in its column's slot.
        stored = Intent {
            values: table.to_slots(&i.values),
            ..Intent::clone(i)
        };
        &stored
    } else if table.cql_table.is_some() {
        let values = i
            .values
            .iter()
            .enumerate()
            .map(|(c, v)| match table.columns.get(c) {
                Some(col) if !v.is_null() => {
                    values::from_cql(&col.ty, column_value(table, stmts, c, v).as_ref())
                }
                _ => Ok(v.clone()),
            })
            .collect::<StoreResult<_>>()?;
        stored = Intent {
            txn: i.txn,
            live: i.live,
            claims: i.claims.clone(),
            values,
        };
        &stored
    } else {
        &**i
    };
    intent::to_json(i)
        .map(|t| Some(CqlValue::Text(t)))
        .map_err(|e| StoreError::Unavailable(format!("an intent does not serialize: {e}")))
}

impl CassandraStore {
    /// A catalog CAS's answer; Cassandra's not-applied answer carries only
    /// the version, so the definition is read when it did not come back.
    async fn catalog_answer(&self, name: &str, rows: &Rows) -> StoreResult<Cas<CatalogRecord>> {
        let Some(current) = lwt_answer(rows)? else {
            return Ok(Cas::Applied);
        };
        if current.has("definition") || current.uuid("version")?.is_none() {
            return Ok(Cas::NotApplied(catalog_of(&current)?));
        }
        Ok(Cas::NotApplied(self.read_catalog(name).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LockHolder;

    /// The holders column is JSON keyed by holder id; what is written
    /// reads back the same, and a holder with no transactions stays short.
    #[test]
    fn lock_holders_round_trip_through_their_text() {
        let (a, b, t) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let rec = LockRecord {
            version: Uuid::now_v7(),
            holders: BTreeMap::from([
                (
                    a,
                    LockHolder {
                        exclusive: true,
                        shared: false,
                        txns: vec![t],
                    },
                ),
                (
                    b,
                    LockHolder {
                        exclusive: false,
                        shared: true,
                        txns: Vec::new(),
                    },
                ),
            ]),
        };
        let text = serde_json::to_string(&rec.holders).unwrap();
        assert!(text.contains(&a.to_string()), "{text}");
        assert!(!text.contains(&format!(
            "\"{b}\":{{\"exclusive\":false,\"shared\":true,\"txns\""
        )));
        let back: BTreeMap<Uuid, LockHolder> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, rec.holders);
        assert!(matches!(
            holders_text(&rec),
            Ok(MaybeUnset::Set(Some(CqlValue::Text(_))))
        ));
    }
}
