//! Table definitions and constraint names, kept in the store so that every
//! proxy sharing a store sees the same schema; this process caches them.

pub mod check;
pub mod count_limit;
pub mod entry;
pub mod foreign_key;
pub mod layout;
pub mod naming;
pub mod predicate;
pub mod row_id;
pub mod sequence;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{sqlstate, SqlError, SqlResult};
use crate::store::{CatalogRecord, RowRecord, Store, StoreError, TxnId, TxnStatus};
use crate::types::{SqlType, Value};
pub use check::CheckDef;
pub use count_limit::{ClaimOn, CountLimitDef};
pub use entry::{DefIntent, Entry};
pub use foreign_key::{ForeignKeyDef, Inbound, RefAction};
pub use layout::ColumnStorage;
pub use sequence::{Identity, SequenceDef};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub not_null: bool,
    /// The DEFAULT expression as SQL text, evaluated per row. A serial or
    /// identity column's is `nextval('its_sequence'::regclass)`.
    pub default: Option<String>,
    /// `GENERATED ... AS IDENTITY`: its default draws from the sequence the
    /// column owns, and ALWAYS refuses explicit values (428C9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// The hidden row id of a table without a primary key
    /// (`catalog::row_id`): no SQL shows or names it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// `COMMENT ON COLUMN`: what pg_description and col_description() show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Where its values are kept, if not as the plain layout says
    /// (`catalog::layout`).
    #[serde(default, skip_serializing_if = "ColumnStorage::is_plain")]
    pub storage: ColumnStorage,
}

/// A UNIQUE constraint or unique index, enforced through claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UniqueDef {
    /// The name errors report: `<table>_<cols>_key`, declared, or the index name.
    pub name: String,
    /// Storage id of its claims; fresh for every creation so that a dropped
    /// constraint's leftover claims never count for a new one.
    pub id: String,
    pub columns: Vec<usize>,
    pub nulls_not_distinct: bool,
    /// Created by CREATE UNIQUE INDEX (dropped with DROP INDEX) rather than
    /// declared in CREATE TABLE.
    pub is_index: bool,
    /// The primary key added to a table keyed by a hidden row id
    /// (`catalog::row_id`), which is enforced as a UNIQUE constraint is;
    /// the catalog shows it as the primary key, not as a constraint of
    /// its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub primary: bool,
    /// A partial unique index's WHERE: only the rows it covers hold a key
    /// (`catalog::predicate`). Such an index is never a lookup path, an
    /// ON CONFLICT arbiter or a foreign key's target, as in PostgreSQL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<predicate::Predicate>,
    /// Published, and claimed by every writer, but the rows that were
    /// there before it may hold no claim yet: no read goes by it until
    /// its build is done (`engine::ddl::add_unique`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub building: bool,
}

/// A non-unique index (`CREATE INDEX`): under each key its columns hold,
/// the rows that hold it or held it (`claims::index`). Every writer adds
/// its row's entry before the row; readers check each row they find, so
/// an entry left by an older state costs a read, never a wrong answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    pub name: String,
    pub columns: Vec<usize>,
    /// Storage id of its entries, fresh per creation. Empty for an index
    /// recorded by a build before entries were kept: never read or kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Published, and kept by every writer, but the rows written before it
    /// may lack entries: not read until its build is done (`engine::ddl`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub building: bool,
}

impl IndexDef {
    /// The entry key of a row with `values`; None when a column is NULL
    /// (no equality finds such a row, so it needs no entry).
    pub fn key_of(&self, values: &[Value]) -> Option<Vec<u8>> {
        let key: Vec<&Value> = self.columns.iter().map(|&i| &values[i]).collect();
        if key.iter().any(|v| v.is_null()) {
            return None;
        }
        Some(crate::types::encode_key(&key))
    }

    /// Whether writers keep its entries.
    pub fn kept(&self) -> bool {
        !self.id.is_empty()
    }

    /// Whether lookups may go by it: kept, and built.
    pub fn usable(&self) -> bool {
        self.kept() && !self.building
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    pub name: String,
    /// Storage id of its rows, fresh per creation.
    pub id: String,
    pub columns: Vec<ColumnDef>,
    pub primary_key: Vec<usize>,
    pub pkey_name: String,
    pub uniques: Vec<UniqueDef>,
    /// An existing CQL table (`keyspace.table`) that keyclaim adopted
    /// instead of creating one; None for tables created through keyclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cql_table: Option<String>,
    /// Set when this relation is a sequence rather than a table: it then
    /// has no rows or storage, only a counter (`engine::sequence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<SequenceDef>,
    /// Its non-unique indexes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexDef>,
    /// Its FOREIGN KEY constraints (`catalog::foreign_key`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// The foreign keys of other tables (or its own) that may point here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referenced_by: Vec<Inbound>,
    /// Its count limits (`catalog::count_limit`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub count_limits: Vec<CountLimitDef>,
    /// Its CHECK constraints (`catalog::check`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckDef>,
    /// Slots up to here are taken, by columns or by dropped ones
    /// (`catalog::layout`); 0 until a column is dropped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_slots: u32,
    /// `COMMENT ON TABLE`: what pg_description and obj_description() show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Its integer columns are stored at 64 bits whatever their width (a
    /// CQL `bigint`), so a type change between integer widths converts no
    /// stored value: Cassandra cannot change a column's type, nor a key
    /// column's at all. Tables created before this was kept (false) and
    /// adopted ones have CQL `int` and `smallint` columns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide_ints: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ColumnDef {
    /// A nullable column with no default, as `name ty` declares it.
    pub fn new(name: &str, ty: SqlType) -> ColumnDef {
        ColumnDef {
            name: name.to_owned(),
            ty,
            not_null: false,
            default: None,
            identity: None,
            hidden: false,
            comment: None,
            storage: ColumnStorage::default(),
        }
    }
}

impl TableDef {
    /// A table of `columns` keyed by `primary_key`, with storage `id` and
    /// nothing else declared.
    pub fn new(name: &str, id: &str, columns: Vec<ColumnDef>, primary_key: Vec<usize>) -> TableDef {
        TableDef {
            name: name.to_owned(),
            id: id.to_owned(),
            columns,
            primary_key,
            pkey_name: format!("{name}_pkey"),
            uniques: Vec::new(),
            cql_table: None,
            sequence: None,
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            referenced_by: Vec::new(),
            count_limits: Vec::new(),
            checks: Vec::new(),
            dropped_slots: 0,
            comment: None,
            wide_ints: false,
        }
    }

    /// The column named `name`; never the hidden row id.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.visible().iter().position(|c| c.name == name)
    }

    pub fn column(&self, name: &str) -> SqlResult<usize> {
        self.column_index(name)
            .ok_or_else(|| SqlError::undefined_column(name))
    }

    /// The canonical key bytes of a row (its partition key: the primary
    /// key, or the hidden row id).
    pub fn pk_bytes(&self, values: &[Value]) -> Vec<u8> {
        let key: Vec<&Value> = self.key_columns().iter().map(|&i| &values[i]).collect();
        crate::types::encode_key(&key)
    }

    pub fn column_names(&self, cols: &[usize]) -> Vec<&str> {
        cols.iter()
            .map(|&i| self.columns[i].name.as_str())
            .collect()
    }

    /// Every constraint name in use on this table (for collision-free naming).
    pub fn constraint_names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.pkey_name.as_str())
            .filter(|n| !n.is_empty())
            .chain(self.uniques.iter().map(|u| u.name.as_str()))
            .chain(self.foreign_keys.iter().map(|f| f.name.as_str()))
            .chain(self.count_limits.iter().map(|l| l.name.as_str()))
            .chain(self.checks.iter().map(|c| c.name.as_str()))
    }

    /// Whether rows can be found by `cols` without a scan: they are the
    /// primary key's, a UNIQUE constraint's or a built plain index's.
    pub fn looks_up(&self, cols: &[usize]) -> bool {
        self.primary_key == cols
            || self
                .uniques
                .iter()
                .any(|u| u.is_whole() && u.columns == cols)
            || self.indexes.iter().any(|i| i.usable() && i.columns == cols)
    }

    /// The names of every index it has: its keys' and its plain indexes'.
    pub fn index_names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.pkey_name.as_str())
            .filter(|n| !n.is_empty())
            .chain(self.uniques.iter().map(|u| u.name.as_str()))
            .chain(self.indexes.iter().map(|i| i.name.as_str()))
    }
}

impl UniqueDef {
    /// The claim key of a row for this constraint; None when a NULL makes it
    /// exempt (NULLS DISTINCT, PostgreSQL's default), or a partial index's
    /// predicate does not cover it.
    pub fn key_of(&self, values: &[Value]) -> Option<Vec<u8>> {
        if values.is_empty() || self.predicate.as_ref().is_some_and(|p| !p.covers(values)) {
            return None;
        }
        let key: Vec<&Value> = self.columns.iter().map(|&i| &values[i]).collect();
        if !self.nulls_not_distinct && key.iter().any(|v| v.is_null()) {
            return None;
        }
        Some(crate::types::encode_key(&key))
    }

    /// Whether every row with its columns set holds a key of it: not a
    /// partial index. Only such a constraint finds rows, arbitrates ON
    /// CONFLICT or is a foreign key's target.
    pub fn is_whole(&self) -> bool {
        self.predicate.is_none()
    }

    /// Whether a read may find rows through its claims: whole, and built
    /// (a claim missing during the build would hide a row).
    pub fn finds_rows(&self) -> bool {
        self.is_whole() && !self.building
    }

    /// Whether `row` backs a claim on `key` (claims.md, rule 1): it is live
    /// and holds that key. Only a backed claim means the key is taken.
    pub fn backed_by(&self, key: &[u8], row: &RowRecord) -> bool {
        row.live && self.key_of(&row.values).as_deref() == Some(key)
    }
}

/// Fresh storage ids: readable prefix, unique suffix.
pub fn storage_id(name: &str) -> String {
    format!("{name}.{}", Uuid::now_v7().simple())
}

/// 53000: the store could not serve the statement, and nothing of it
/// stayed (callers whose write may have landed answer 40003 instead).
pub fn store_error(e: StoreError) -> SqlError {
    let (message, cause) = match &e {
        StoreError::Unavailable(why) => ("the store is unavailable", why),
        StoreError::Unknown(why) => ("the store did not answer in time", why),
    };
    SqlError::new(
        sqlstate::INSUFFICIENT_RESOURCES,
        format!("{message}; the statement was not applied"),
    )
    .with_detail(cause.clone())
    .with_hint("retry when the store is reachable")
}

/// One bump of the epoch (see [`Catalog::bump_epoch`]).
async fn try_bump_epoch(store: &dyn Store) -> Result<(), StoreError> {
    let rec = CatalogRecord {
        version: Uuid::now_v7(),
        definition: String::new(),
    };
    let before = store.read_catalog(EPOCH_ENTRY).await?.map(|r| r.version);
    let written = match before {
        None => store.insert_catalog(EPOCH_ENTRY, rec).await,
        Some(v) => store.update_catalog(EPOCH_ENTRY, v, rec).await,
    };
    match written {
        Ok(_) => Ok(()),
        Err(StoreError::Unknown(why)) => {
            let now = store.read_catalog(EPOCH_ENTRY).await?.map(|r| r.version);
            if now != before {
                Ok(())
            } else {
                Err(StoreError::Unknown(why))
            }
        }
        Err(e) => Err(e),
    }
}

/// How many times a DDL tries to announce its change to other proxies.
const EPOCH_ATTEMPTS: u32 = 5;

/// The catalog entry every DDL re-stamps with a fresh version, so that other
/// proxies sharing the store notice DDL with one small read. Not a valid SQL
/// table name (a NUL byte), so no table can take it.
pub const EPOCH_ENTRY: &str = "\0epoch";

/// The prefix of sequence counter records (`engine::sequence`), which live
/// in the catalog's namespace but are no relations.
pub const COUNTER_PREFIX: &str = "\0seq:";

/// The catalog of one proxy: the store is the truth, this is a cache.
///
/// Several proxies may share a store. Each DDL bumps [`EPOCH_ENTRY`]; a proxy
/// reads it at most once per `refresh` before using its cache, and forgets
/// the whole cache when it changed (DDL is rare; a cold cache costs one read
/// per table). With `refresh` None the process is alone and never checks.
///
/// An entry may carry a transaction's pending change ([`entry::Entry`]):
/// its own transaction sees it, everybody else the committed definition
/// until the transaction's record says committed. An entry whose change
/// belongs to an undecided transaction serves others from the store each
/// time (one entry and one record read), so that they learn the decision
/// even if the transaction's proxy dies before it tidies the entry up.
pub struct Catalog {
    store: Arc<dyn Store>,
    cache: DashMap<String, Cached>,
    refresh: Option<Duration>,
    /// When the epoch was last read, and what it was.
    epoch: Mutex<(Option<Instant>, Option<Uuid>)>,
    /// A change of ours landed but the epoch bump that announces it has
    /// not yet (a background task keeps trying).
    unannounced: Arc<AtomicBool>,
    /// How to wait for a transaction that holds a table exclusively; None:
    /// no waiting (tools reading a catalog outside any engine).
    holders: Option<Holders>,
}

/// What waiting for an exclusive holder needs: who may still be running,
/// and how long to wait (`claims.lock_timeout_ms`).
struct Holders {
    peers: Arc<crate::claims::intents::Peers>,
    timeout: Duration,
}

/// A cached entry, and the decision of another transaction's change on it
/// once known (final, so the entry then serves everyone).
#[derive(Clone)]
struct Cached {
    entry: Entry,
    decided: Option<bool>,
}

impl Cached {
    /// What this cached entry shows a reader of transaction `own`; None when
    /// it cannot tell without the store (an undecided change of another).
    fn serves(&self, own: Option<TxnId>) -> Option<Option<Arc<TableDef>>> {
        match (self.entry.foreign_intent(own), self.decided) {
            (None, _) => Some(self.entry.visible(own, false)),
            (Some(_), Some(committed)) => Some(self.entry.visible(own, committed)),
            (Some(_), None) => None,
        }
    }
}

impl Catalog {
    pub fn new(store: Arc<dyn Store>, refresh: Option<Duration>) -> Catalog {
        Catalog {
            store,
            cache: DashMap::new(),
            refresh,
            epoch: Mutex::new((None, None)),
            unannounced: Arc::new(AtomicBool::new(false)),
            holders: None,
        }
    }

    /// Statements looking up a table that another transaction holds
    /// exclusively wait for it (`entry::DefIntent::exclusive`), aborting it
    /// once its proxy is gone, up to `timeout` (then 55P03).
    pub fn waiting_for_holders(
        mut self,
        peers: Arc<crate::claims::intents::Peers>,
        timeout: Duration,
    ) -> Catalog {
        self.holders = Some(Holders { peers, timeout });
        self
    }

    /// How long other proxies may keep using a definition after it changed.
    pub fn refresh(&self) -> Option<Duration> {
        self.refresh
    }

    /// Check the epoch at the next lookup, however recent the last check.
    pub fn recheck(&self) {
        self.epoch.lock().0 = None;
    }

    /// Forget the cache if another proxy did DDL since we last looked.
    async fn check_epoch(&self) -> SqlResult<()> {
        let Some(refresh) = self.refresh else {
            return Ok(());
        };
        let due = self
            .epoch
            .lock()
            .0
            .is_none_or(|checked| checked.elapsed() >= refresh);
        if !due {
            return Ok(());
        }
        // Taken before the read: a DDL that lands during it is caught next time.
        let started = Instant::now();
        let now = self
            .store
            .read_catalog(EPOCH_ENTRY)
            .await
            .map_err(store_error)?
            .map(|r| r.version);
        let mut epoch = self.epoch.lock();
        if epoch.1 != now {
            self.cache.clear();
        }
        *epoch = (Some(started), now);
        Ok(())
    }

    /// Tell other proxies the catalog changed. Any newer epoch will do, so
    /// a lost race means another DDL bumped it after ours: done either way,
    /// and so is a write whose outcome is unknown once the epoch reads
    /// differently. The change itself has landed by now, so the statement
    /// answers that it did whatever the store does next: a bump that fails
    /// a few times is left to a background task that keeps trying, and
    /// DDL that needs every proxy to know first waits for it
    /// ([`Catalog::announced`]).
    async fn bump_epoch(&self) {
        if self.refresh.is_none() {
            return;
        }
        for attempt in 0..EPOCH_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
            }
            if try_bump_epoch(self.store.as_ref()).await.is_ok() {
                return;
            }
        }
        if self.unannounced.swap(true, Ordering::SeqCst) {
            return; // a task is at it already; one bump announces both
        }
        tracing::warn!("the catalog epoch could not be bumped; other proxies see this DDL once a background retry succeeds");
        let (store, flag) = (self.store.clone(), self.unannounced.clone());
        tokio::spawn(async move {
            let mut wait = Duration::from_millis(100);
            loop {
                tokio::time::sleep(wait).await;
                if try_bump_epoch(store.as_ref()).await.is_ok() {
                    flag.store(false, Ordering::SeqCst);
                    return;
                }
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        });
    }

    /// Wait until every change this proxy made is announced to the others
    /// (55P03 at `deadline`): what a unique index build needs before it
    /// counts on other proxies' writers to claim for it.
    pub async fn announced(&self, deadline: Instant) -> SqlResult<()> {
        while self.unannounced.load(Ordering::SeqCst) {
            if Instant::now() >= deadline {
                return Err(SqlError::new(
                    sqlstate::LOCK_NOT_AVAILABLE,
                    "could not tell the other proxies about the catalog change in time",
                )
                .with_hint("the store is not accepting writes to the catalog epoch; retry when it is reachable"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// The table's definition as transaction `own` sees it; 42P01 if absent.
    pub async fn table(&self, name: &str, own: Option<TxnId>) -> SqlResult<Arc<TableDef>> {
        self.lookup(name, own)
            .await?
            .ok_or_else(|| SqlError::undefined_table(name))
    }

    /// The table's definition as transaction `own` (None: a statement
    /// outside any block) sees it.
    pub async fn lookup(&self, name: &str, own: Option<TxnId>) -> SqlResult<Option<Arc<TableDef>>> {
        self.check_epoch().await?;
        if let Some(shown) = self.cache.get(name).and_then(|hit| hit.serves(own)) {
            return Ok(shown);
        }
        // Made only if the table is held: lookups are on every statement's path.
        let mut wait: Option<crate::claims::intents::Wait> = None;
        loop {
            let Some((version, entry)) = self.entry(name).await? else {
                return Ok(None);
            };
            let Some(intent) = entry.foreign_intent(own) else {
                return Ok(entry.visible(own, false));
            };
            let Some(committed) = self.decision(intent.txn).await? else {
                match (&self.holders, intent.exclusive) {
                    (Some(h), true) => {
                        let wait = wait.get_or_insert_with(Default::default);
                        if wait.waited() >= h.timeout {
                            return Err(crate::claims::lock_timeout());
                        }
                        let store = self.store.as_ref();
                        if h.peers.may_be_running(store, &intent.txn).await {
                            wait.pause().await;
                        } else {
                            // Its proxy is gone: abort it (or learn it
                            // decided); a failed attempt is tried again.
                            let aborted = crate::store::TxnRecord::aborted();
                            let _ = store.insert_txn_record(intent.txn, aborted).await;
                        }
                        continue;
                    }
                    _ => return Ok(entry.visible(own, false)),
                }
            };
            // The change counts only if it is still the one in place now
            // that its decision is known: its transaction may have replaced
            // it (ROLLBACK TO, a later statement) before deciding.
            match self.read(name).await? {
                Some((now, _)) if now == version => {
                    self.cache.insert(
                        name.to_owned(),
                        Cached {
                            entry: entry.clone(),
                            decided: Some(committed),
                        },
                    );
                    return Ok(entry.visible(own, committed));
                }
                _ => continue,
            }
        }
    }

    /// As [`lookup`](Self::lookup), read from the store rather than the
    /// cache: for what must not act on a definition another proxy has
    /// replaced since (the tables referencing a key that goes).
    pub async fn lookup_fresh(
        &self,
        name: &str,
        own: Option<TxnId>,
    ) -> SqlResult<Option<Arc<TableDef>>> {
        self.cache.remove(name);
        self.lookup(name, own).await
    }

    /// Whether transaction `txn` committed; None while undecided.
    async fn decision(&self, txn: TxnId) -> SqlResult<Option<bool>> {
        let rec = self.store.read_txn_record(txn).await.map_err(store_error)?;
        Ok(rec.map(|r| r.status == TxnStatus::Committed))
    }

    async fn read(&self, name: &str) -> SqlResult<Option<(Uuid, Entry)>> {
        let Some(rec) = self.store.read_catalog(name).await.map_err(store_error)? else {
            return Ok(None);
        };
        let entry = Entry::decode(&rec.definition)
            .map_err(|e| SqlError::internal(format!("corrupt catalog entry {name}: {e}")))?;
        Ok(Some((rec.version, entry)))
    }

    /// The entry as the store has it now (what DDL changes), cached.
    pub async fn entry(&self, name: &str) -> SqlResult<Option<(Uuid, Entry)>> {
        let read = self.read(name).await?;
        match &read {
            Some((_, entry)) => {
                self.cache.insert(
                    name.to_owned(),
                    Cached {
                        entry: entry.clone(),
                        decided: None,
                    },
                );
            }
            None => {
                self.cache.remove(name);
            }
        }
        Ok(read)
    }

    /// Replace the entry at `expected` (None: absent) with `next` (None:
    /// remove it), by compare-and-set; false when the entry had moved on.
    pub async fn write(
        &self,
        name: &str,
        expected: Option<Uuid>,
        next: Option<&Entry>,
    ) -> SqlResult<bool> {
        let version = Uuid::now_v7();
        let record = |e: &Entry| -> SqlResult<CatalogRecord> {
            Ok(CatalogRecord {
                version,
                definition: e
                    .encode()
                    .map_err(|e| SqlError::internal(format!("catalog encoding: {e}")))?,
            })
        };
        let store = &self.store;
        let written = match (expected, next) {
            (None, None) => return Ok(true),
            (None, Some(e)) => store.insert_catalog(name, record(e)?).await,
            (Some(v), Some(e)) => store.update_catalog(name, v, record(e)?).await,
            (Some(v), None) => store.delete_catalog(name, v).await,
        };
        let applied = match written {
            Ok(cas) => cas.applied(),
            // Whether it landed is read back: our version is fresh, so the
            // entry carries it only if our write is the one in place (a
            // removal: the entry is gone). Not landed: the caller reads the
            // entry again and decides afresh, as after a lost race.
            Err(StoreError::Unknown(why)) => match store.read_catalog(name).await {
                Ok(now) => match next {
                    Some(_) => now.is_some_and(|r| r.version == version),
                    None => now.is_none(),
                },
                Err(_) => {
                    self.cache.remove(name);
                    return Err(SqlError::completion_unknown(format!(
                        "the outcome of the catalog change to \"{name}\" is unknown: {why}"
                    )));
                }
            },
            Err(e) => return Err(store_error(e)),
        };
        if !applied {
            self.cache.remove(name);
            return Ok(false);
        }
        match next {
            Some(e) => {
                self.cache.insert(
                    name.to_owned(),
                    Cached {
                        entry: e.clone(),
                        decided: None,
                    },
                );
            }
            None => {
                self.cache.remove(name);
            }
        }
        self.bump_epoch().await;
        Ok(true)
    }

    /// Every relation's entry, as the store has it now.
    async fn entries(&self) -> SqlResult<Vec<Entry>> {
        let mut out = Vec::new();
        for (name, rec) in self.store.list_catalog().await.map_err(store_error)? {
            // The epoch and sequence counters are records, not relations.
            if name.starts_with('\0') {
                continue;
            }
            out.push(
                Entry::decode(&rec.definition)
                    .map_err(|e| SqlError::internal(format!("corrupt catalog entry: {e}")))?,
            );
        }
        Ok(out)
    }

    /// Every definition any entry holds, committed or pending, whoever's
    /// transaction it is: what storage is still named.
    pub async fn every_definition(&self) -> SqlResult<Vec<Arc<TableDef>>> {
        let mut out = Vec::new();
        for entry in self.entries().await? {
            out.extend(entry.committed.clone());
            out.extend(entry.intent.and_then(|i| i.def));
        }
        Ok(out)
    }

    /// All tables as transaction `own` sees them (for DROP INDEX, which
    /// names an index, not a table).
    pub async fn all(&self, own: Option<TxnId>) -> SqlResult<Vec<Arc<TableDef>>> {
        let mut out = Vec::new();
        for entry in self.entries().await? {
            let committed = match entry.foreign_intent(own) {
                Some(intent) => self.decision(intent.txn).await? == Some(true),
                None => false,
            };
            out.extend(entry.visible(own, committed));
        }
        Ok(out)
    }
}
