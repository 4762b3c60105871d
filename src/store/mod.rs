//! The storage contract: per-partition compare-and-set, as Cassandra /
//! ScyllaDB lightweight transactions offer it.
//!
//! Every conditional method maps to one CQL LWT and returns what an LWT
//! returns: applied, or not applied together with the partition's current
//! state (Cassandra returns the existing row when an LWT is not applied, so
//! the caller never needs an extra read). Reads that decide something are
//! SERIAL. Errors separate "certainly not applied" from "outcome unknown",
//! because the claim protocol treats them differently.
//!
//! Partitions:
//! - rows: one per (table id, encoded primary key), holding [`RowRecord`].
//! - claims: one per (constraint id, canonical key bytes), holding [`ClaimRecord`].
//! - catalog: one per table name, holding a serialized table definition.
//! - transaction records: one per transaction, holding its decision
//!   ([`TxnRecord`]); absent while undecided (docs/transactions.md).
//! - heartbeats: one per proxy process, the time it last said it was alive
//!   (plain writes: they decide only when to stop waiting, never safety).
//! - advisory locks: one per lock key, holding [`LockRecord`]: who holds
//!   the lock and in which mode (docs/advisory_locks.md).
//! - index entries: one partition per (index id, canonical key bytes),
//!   holding the primary keys of the rows that hold (or held) that key
//!   (`claims::index`), in key order.

pub mod cassandra;
pub mod counting;
pub mod faults;
pub mod layer;
pub mod memory;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use crate::catalog::TableDef;
use crate::types::{SqlType, Value};

/// A statement attempt's identity: a time-based UUID (v7) whose time part is its birth.
pub type TxnId = Uuid;

/// A point in time as keyclaim's clock tells it (`claims::clock`):
/// nanoseconds since the Unix epoch. 0 is before anything was stamped.
pub type Stamp = u64;

/// A row's claims: constraint id -> txn of the claim backing its key.
/// Shared, as a row's claims change only with its keys: a read of the row
/// copies none of them.
pub type Claims = Arc<BTreeMap<String, TxnId>>;

/// The state of one row partition. Deletes leave it dead, never absent.
#[derive(Debug, Clone, PartialEq)]
pub struct RowRecord {
    /// `__version`: the txn that last wrote this partition.
    pub version: TxnId,
    /// `__live`: false once deleted (or fenced from absent).
    pub live: bool,
    /// `__claims`: constraint id -> txn of the claim backing this row's key.
    pub claims: Claims,
    /// Data columns in table order; empty when dead.
    pub values: Vec<Value>,
    /// `__at`, `__by`: when the committed state above was committed, and
    /// by whom (the transaction whose intent it was, or the single
    /// statement's own attempt). 0 and nil for a state from before
    /// snapshots: older than any statement.
    pub at: Stamp,
    pub by: TxnId,
    /// `__prev`: the committed state this one replaced, shown to statements
    /// whose snapshot is older than `at` (docs/transactions.md §9).
    pub prev: Option<Box<Prior>>,
    /// `__intent`: an uncommitted write of a transaction, visible to others
    /// only once that transaction's record says committed. `version`,
    /// `live`, `claims` and `values` above stay the committed state.
    pub intent: Option<Box<Intent>>,
}

impl RowRecord {
    /// As stored: its values, and its intent's, in their slots
    /// (`catalog::layout`).
    pub fn to_slots(mut self, table: &TableDef) -> RowRecord {
        if !table.plain_layout() {
            self.values = table.to_slots(&self.values);
            if let Some(i) = self.intent.as_mut() {
                i.values = table.to_slots(&i.values);
            }
            if let Some(p) = self.prev.as_mut() {
                p.values = table.to_slots(&p.values);
            }
        }
        self
    }

    /// As read: its values, and its intent's, in table order.
    pub fn from_slots(mut self, table: &TableDef) -> RowRecord {
        if !table.plain_layout() {
            self.values = table.from_slots(std::mem::take(&mut self.values));
            if let Some(i) = self.intent.as_mut() {
                i.values = table.from_slots(std::mem::take(&mut i.values));
            }
            if let Some(p) = self.prev.as_mut() {
                p.values = table.from_slots(std::mem::take(&mut p.values));
            }
        }
        self
    }

    /// A dead partition with no history: what an absent one stands for.
    pub fn dead(version: TxnId) -> RowRecord {
        RowRecord {
            version,
            live: false,
            claims: Claims::default(),
            values: Vec::new(),
            at: 0,
            by: Uuid::nil(),
            prev: None,
            intent: None,
        }
    }

    /// A live committed row with no intent and no history.
    pub fn live(version: TxnId, claims: BTreeMap<String, TxnId>, values: Vec<Value>) -> RowRecord {
        RowRecord {
            live: true,
            claims: Arc::new(claims),
            values,
            ..RowRecord::dead(version)
        }
    }

    /// The committed state, as the next one keeps it in `prev`.
    pub fn as_prior(&self) -> Box<Prior> {
        Box::new(Prior {
            live: self.live,
            values: if self.live {
                self.values.clone()
            } else {
                Vec::new()
            },
            at: self.at,
            by: self.by,
        })
    }

    /// This partition with a new committed state, committed at `at` by
    /// `by`: the current one becomes `prev`. Without an intent; the version
    /// is the caller's to set.
    pub fn succeeded(
        &self,
        live: bool,
        claims: impl Into<Claims>,
        values: Vec<Value>,
        at: Stamp,
        by: TxnId,
    ) -> RowRecord {
        RowRecord {
            version: self.version,
            live,
            claims: claims.into(),
            values,
            at,
            by,
            prev: Some(self.as_prior()),
            intent: None,
        }
    }
}

/// A committed state a row held before its current one (`__prev`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prior {
    pub live: bool,
    pub values: Vec<Value>,
    pub at: Stamp,
    pub by: TxnId,
}

/// A transaction's pending write to a row: what the row will be if the
/// transaction commits.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Intent {
    /// The transaction (a transaction id, `claims::is_transaction`).
    pub txn: TxnId,
    pub live: bool,
    pub claims: BTreeMap<String, TxnId>,
    pub values: Vec<Value>,
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    Committed,
    Aborted,
}

/// A transaction record: written once, `IF NOT EXISTS`, by whoever decides
/// first (the transaction's COMMIT or ROLLBACK, or a resolver aborting a
/// transaction whose proxy stopped renewing its heartbeat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnRecord {
    pub status: TxnStatus,
    /// A committed transaction's commit stamp, taken before its record was
    /// written; 0 for an abort.
    pub at: Stamp,
}

impl TxnRecord {
    pub fn aborted() -> TxnRecord {
        TxnRecord {
            status: TxnStatus::Aborted,
            at: 0,
        }
    }

    pub fn committed(at: Stamp) -> TxnRecord {
        TxnRecord {
            status: TxnStatus::Committed,
            at,
        }
    }
}

/// One claims partition: `owner` is the encoded primary key of the row that
/// holds (or is about to hold) the key; `txn` the attempt that made the claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRecord {
    pub owner: Vec<u8>,
    pub txn: TxnId,
}

/// A catalog entry: the serialized table definition and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogRecord {
    pub version: Uuid,
    pub definition: String,
}

/// One advisory lock partition: its holders, changed only by CAS on
/// `version` (a fresh UUID per write). A lock nobody holds keeps its
/// partition with no holders.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LockRecord {
    pub version: Uuid,
    /// Keyed by holder id (one per session: `claims::advisory::new_holder`).
    pub holders: BTreeMap<Uuid, LockHolder>,
}

/// What one session holds of one advisory lock.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct LockHolder {
    pub exclusive: bool,
    pub shared: bool,
    /// The fence: transactions of the holder that may still commit while
    /// it holds the lock. Whoever removes a holder it judged gone decides
    /// each of these aborted first (docs/advisory_locks.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub txns: Vec<TxnId>,
}

/// What a compare-and-set returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Cas<T> {
    Applied,
    /// Not applied; the partition's current state (None: absent).
    NotApplied(Option<T>),
}

impl<T> Cas<T> {
    pub fn applied(&self) -> bool {
        matches!(self, Cas::Applied)
    }
}

/// A store failure, classified as the claim protocol needs it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The operation certainly did not apply (e.g. Unavailable before Paxos began).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The operation may or may not have applied (write timeout, broken connection).
    #[error("store outcome unknown: {0}")]
    Unknown(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A page of a scan: rows in key order and where the next page starts.
#[derive(Debug, Clone)]
pub struct ScanPage {
    pub rows: Vec<(Vec<u8>, RowRecord)>,
    /// The last key of this page; None when the scan is complete.
    pub next: Option<Vec<u8>>,
}

/// A page of an index partition's entries: primary keys in key order and
/// where the next page starts.
#[derive(Debug, Clone, Default)]
pub struct IndexPage {
    pub pks: Vec<Vec<u8>>,
    /// The last key of this page; None when the partition is done.
    pub next: Option<Vec<u8>>,
}

/// The shape of an existing table a store found (see [`Store::adopt_table`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignTable {
    /// Column names and the SQL type each is served as.
    pub columns: Vec<(String, SqlType)>,
    /// Indexes into `columns`, in key order.
    pub primary_key: Vec<usize>,
}

/// The LWT primitives. Implementations must be linearizable per partition.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short name for logs: "memory", "cassandra".
    fn kind(&self) -> &'static str;

    // Tables ---------------------------------------------------------------

    /// Make room for a new table's rows before it becomes visible in the
    /// catalog (CQL: CREATE TABLE, then wait for schema agreement).
    async fn create_table(&self, table: &TableDef) -> StoreResult<()>;
    /// Make room for column `column` of `table`, added by ALTER TABLE
    /// (`catalog::layout`); done again, it succeeds.
    async fn add_column(&self, table: &TableDef, column: usize) -> StoreResult<()>;
    /// Remove a dropped table's rows (CQL: DROP TABLE).
    async fn drop_table(&self, table: &TableDef) -> StoreResult<()>;
    /// The storage ids of the rows tables `create_table` made and nothing
    /// dropped yet, for finding those no catalog entry names
    /// (`engine::sweep`). Tables of older builds may be missing.
    async fn table_storage(&self) -> StoreResult<Vec<String>>;
    /// Remove the rows table of storage id `id`: `drop_table` knowing only
    /// the id (of storage no definition names).
    async fn drop_storage(&self, id: &str) -> StoreResult<()>;
    /// Make a table that exists in the store but was not created through
    /// keyclaim (`TableDef::cql_table`) usable by the claim protocol: read
    /// its shape and add the hidden columns. Idempotent. (No default: a
    /// wrapper that forgot to pass it on would refuse adoption silently.)
    async fn adopt_table(&self, name: &str) -> StoreResult<ForeignTable>;

    // Rows -----------------------------------------------------------------
    //
    // `pk` is the canonical encoding of the primary key (`TableDef::pk_bytes`);
    // `types::decode_key` turns it back into the key's typed values.

    /// SERIAL read of one row partition.
    async fn read_row(&self, table: &TableDef, pk: &[u8]) -> StoreResult<Option<RowRecord>>;
    /// `INSERT ... IF NOT EXISTS`.
    async fn insert_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>>;
    /// `UPDATE ... IF __version = expected`.
    async fn update_row(
        &self,
        table: &TableDef,
        pk: &[u8],
        expected: TxnId,
        row: RowRecord,
    ) -> StoreResult<Cas<RowRecord>>;
    /// A page of row partitions (live and dead) with keys after `after`, at most `limit`.
    async fn scan_rows(
        &self,
        table: &TableDef,
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<ScanPage>;

    // Claims ---------------------------------------------------------------

    /// SERIAL read of a claim.
    async fn read_claim(&self, constraint: &str, key: &[u8]) -> StoreResult<Option<ClaimRecord>>;
    /// `INSERT INTO claims ... IF NOT EXISTS`.
    async fn insert_claim(
        &self,
        constraint: &str,
        key: &[u8],
        claim: ClaimRecord,
    ) -> StoreResult<Cas<ClaimRecord>>;
    /// `UPDATE claims SET txn = new IF txn = expected` (re-stamping on restart).
    async fn restamp_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
        new: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>>;
    /// `DELETE FROM claims ... IF txn = expected`.
    async fn delete_claim(
        &self,
        constraint: &str,
        key: &[u8],
        expected: TxnId,
    ) -> StoreResult<Cas<ClaimRecord>>;
    /// Drops every claim of a constraint (DROP INDEX / DROP TABLE).
    async fn drop_claims(&self, constraint: &str) -> StoreResult<()>;

    // Index entries --------------------------------------------------------
    //
    // A plain index (`catalog::IndexDef`) lists, under each key, the rows
    // that may hold it; readers check every row they find (`claims::index`).

    /// Plain write (not an LWT) of entry `pk` under `key` of index
    /// `index`. Idempotent.
    async fn add_index_entry(&self, index: &str, key: &[u8], pk: &[u8]) -> StoreResult<()>;
    /// A page of the entries under `key` of index `index` with primary keys
    /// after `after`, at most `limit`, in key order.
    async fn read_index(
        &self,
        index: &str,
        key: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<IndexPage>;
    /// Drops every entry of an index (DROP INDEX / DROP TABLE).
    async fn drop_index(&self, index: &str) -> StoreResult<()>;

    // Catalog --------------------------------------------------------------

    async fn read_catalog(&self, name: &str) -> StoreResult<Option<CatalogRecord>>;
    async fn list_catalog(&self) -> StoreResult<Vec<(String, CatalogRecord)>>;
    /// `INSERT ... IF NOT EXISTS`.
    async fn insert_catalog(
        &self,
        name: &str,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>>;
    /// `UPDATE ... IF version = expected`.
    async fn update_catalog(
        &self,
        name: &str,
        expected: Uuid,
        rec: CatalogRecord,
    ) -> StoreResult<Cas<CatalogRecord>>;
    /// `DELETE ... IF version = expected`.
    async fn delete_catalog(&self, name: &str, expected: Uuid) -> StoreResult<Cas<CatalogRecord>>;

    // Transactions -------------------------------------------------------------

    /// `INSERT INTO txn_records ... IF NOT EXISTS`: the one decision of a
    /// transaction. Not applied returns the decision already taken.
    async fn insert_txn_record(&self, txn: TxnId, rec: TxnRecord) -> StoreResult<Cas<TxnRecord>>;
    /// SERIAL read of a transaction record; None while undecided.
    async fn read_txn_record(&self, txn: TxnId) -> StoreResult<Option<TxnRecord>>;
    /// Plain write of a proxy's heartbeat (milliseconds since the epoch).
    async fn write_heartbeat(&self, proxy: u32, at_ms: u64) -> StoreResult<()>;
    /// The proxy's last heartbeat, if it ever wrote one.
    async fn read_heartbeat(&self, proxy: u32) -> StoreResult<Option<u64>>;

    // Advisory locks -------------------------------------------------------
    //
    // `key` is `claims::advisory::LockKey::bytes`.

    /// SERIAL read of an advisory lock partition.
    async fn read_lock(&self, key: &[u8]) -> StoreResult<Option<LockRecord>>;
    /// `INSERT ... IF NOT EXISTS`.
    async fn insert_lock(&self, key: &[u8], rec: LockRecord) -> StoreResult<Cas<LockRecord>>;
    /// `UPDATE ... IF version = expected`.
    async fn update_lock(
        &self,
        key: &[u8],
        expected: Uuid,
        rec: LockRecord,
    ) -> StoreResult<Cas<LockRecord>>;
}
