//! Prepared statements: each statement is prepared once per process (the
//! claims and catalog ones at connect, a user table's on its first use) and
//! reused, so a request carries only a statement id and its values.

use std::borrow::Cow;
use std::sync::Arc;

use dashmap::DashMap;
use scylla::client::session::Session;
use scylla::frame::response::result::ColumnType;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;

use super::cql::{self, FixedCql, RowCql};
use super::errors::classify_prepare;
use crate::catalog::TableDef;
use crate::store::{StoreError, StoreResult};

/// A user table's statements.
pub struct TableStatements {
    /// The CQL type of each column, in table order (from the prepared
    /// INSERT): values are bound as the column stores them.
    pub column_types: Vec<ColumnType<'static>>,
    pub read: PreparedStatement,
    pub insert: PreparedStatement,
    pub update: PreparedStatement,
    pub scan_first: PreparedStatement,
    pub scan_after: PreparedStatement,
}

/// The claims and catalog statements.
pub struct FixedStatements {
    pub claim_read: PreparedStatement,
    pub claim_insert: PreparedStatement,
    pub claim_restamp: PreparedStatement,
    pub claim_delete: PreparedStatement,
    pub claim_keys_of: PreparedStatement,
    pub claim_drop: PreparedStatement,
    pub catalog_read: PreparedStatement,
    pub catalog_list: PreparedStatement,
    pub catalog_insert: PreparedStatement,
    pub catalog_update: PreparedStatement,
    pub catalog_delete: PreparedStatement,
    pub txn_insert: PreparedStatement,
    pub txn_read: PreparedStatement,
    pub heartbeat_write: PreparedStatement,
    pub heartbeat_read: PreparedStatement,
    pub lock_read: PreparedStatement,
    pub lock_insert: PreparedStatement,
    pub lock_update: PreparedStatement,
    pub index_add: PreparedStatement,
    pub index_read: PreparedStatement,
    pub index_keys_of: PreparedStatement,
    pub index_drop: PreparedStatement,
}

pub struct Statements {
    session: Arc<Session>,
    keyspace: String,
    /// The consistency of reads that decide (LOCAL_SERIAL or SERIAL).
    serial: Consistency,
    /// Keyed by table id and column layout: a recreated table (new id),
    /// or one whose columns were added, dropped or renamed, gets new
    /// statements.
    tables: DashMap<String, Arc<TableStatements>>,
    pub fixed: FixedStatements,
}

async fn prepare(
    session: &Session,
    text: String,
    serial: Option<Consistency>,
) -> StoreResult<PreparedStatement> {
    let mut stmt = session
        .prepare(text)
        .await
        .map_err(|e| classify_prepare(&e))?;
    if let Some(c) = serial {
        stmt.set_consistency(c);
    }
    Ok(stmt)
}

impl Statements {
    pub async fn new(
        session: Arc<Session>,
        keyspace: &str,
        serial: Consistency,
    ) -> StoreResult<Statements> {
        let FixedCql {
            claim_read,
            claim_insert,
            claim_restamp,
            claim_delete,
            claim_keys_of,
            claim_drop,
            catalog_read,
            catalog_list,
            catalog_insert,
            catalog_update,
            catalog_delete,
            txn_insert,
            txn_read,
            heartbeat_write,
            heartbeat_read,
            lock_read,
            lock_insert,
            lock_update,
            index_add,
            index_read,
            index_keys_of,
            index_drop,
        } = cql::fixed_cql(keyspace);
        let s = session.as_ref();
        let fixed = FixedStatements {
            claim_read: prepare(s, claim_read, Some(serial)).await?,
            claim_insert: prepare(s, claim_insert, None).await?,
            claim_restamp: prepare(s, claim_restamp, None).await?,
            claim_delete: prepare(s, claim_delete, None).await?,
            claim_keys_of: prepare(s, claim_keys_of, None).await?,
            claim_drop: prepare(s, claim_drop, None).await?,
            catalog_read: prepare(s, catalog_read, Some(serial)).await?,
            catalog_list: prepare(s, catalog_list, None).await?,
            catalog_insert: prepare(s, catalog_insert, None).await?,
            catalog_update: prepare(s, catalog_update, None).await?,
            catalog_delete: prepare(s, catalog_delete, None).await?,
            txn_insert: prepare(s, txn_insert, None).await?,
            txn_read: prepare(s, txn_read, Some(serial)).await?,
            heartbeat_write: prepare(s, heartbeat_write, None).await?,
            heartbeat_read: prepare(s, heartbeat_read, None).await?,
            lock_read: prepare(s, lock_read, Some(serial)).await?,
            lock_insert: prepare(s, lock_insert, None).await?,
            lock_update: prepare(s, lock_update, None).await?,
            index_add: prepare(s, index_add, None).await?,
            index_read: prepare(s, index_read, None).await?,
            index_keys_of: prepare(s, index_keys_of, None).await?,
            index_drop: prepare(s, index_drop, None).await?,
        };
        Ok(Statements {
            session,
            keyspace: keyspace.to_owned(),
            serial,
            tables: DashMap::new(),
            fixed,
        })
    }

    /// The table's statements, prepared on first use. Two statements that
    /// race to prepare both succeed; one result is kept.
    pub async fn table(&self, def: &TableDef) -> StoreResult<Arc<TableStatements>> {
        let key = cache_key(def);
        if let Some(hit) = self.tables.get(key.as_ref()) {
            return Ok(hit.clone());
        }
        let RowCql {
            read,
            insert,
            update,
            scan_first,
            scan_after,
        } = cql::row_cql(&self.keyspace, def);
        let s = self.session.as_ref();
        self.add_hidden_columns(def).await?;
        let (read, insert, update, scan_first, scan_after) = futures::try_join!(
            prepare(s, read, Some(self.serial)),
            prepare(s, insert, None),
            prepare(s, update, None),
            prepare(s, scan_first, None),
            prepare(s, scan_after, None),
        )?;
        let column_types = insert
            .get_variable_col_specs()
            .iter()
            .take(def.columns.len())
            .map(|c| c.typ().clone())
            .collect();
        let stmts = Arc::new(TableStatements {
            column_types,
            read,
            insert,
            update,
            scan_first,
            scan_after,
        });
        self.tables.insert(key.into_owned(), stmts.clone());
        Ok(stmts)
    }

    /// Tables created by an older keyclaim lack the hidden columns added
    /// since (`__intent` with transactions; `__at`, `__by`, `__prev` with
    /// snapshots): add them (checked once per table and process). Tables
    /// made by this version have them, so the check is one schema read,
    /// not DDL. Two processes may both find one missing; the second ALTER
    /// is refused with "already exists", which is success too.
    async fn add_hidden_columns(&self, def: &TableDef) -> StoreResult<()> {
        let (ks, table) = cql::schema_names(&self.keyspace, def);
        let present = super::adopt::read_columns(&self.session, &ks, &table).await?;
        let mut added = false;
        for (column, ty) in cql::HIDDEN {
            if present.iter().any(|c| c.name == column) {
                continue;
            }
            let alter = cql::add_hidden_column(&cql::table_ref(&self.keyspace, def), column, ty);
            match self.session.query_unpaged(alter, ()).await {
                Ok(_) => added = true,
                Err(e) if cql::is_existing_column_error(&e.to_string()) => {}
                Err(e) => return Err(super::errors::classify(&e, false)),
            }
        }
        if added {
            self.session
                .await_schema_agreement()
                .await
                .map_err(|e| StoreError::Unknown(format!("schema agreement: {e}")))?;
        }
        Ok(())
    }

    pub fn forget(&self, def: &TableDef) {
        self.tables.remove(cache_key(def).as_ref());
    }
}

/// What a table's statements depend on: its storage and its columns'.
/// A plain table's is its id, borrowed: this runs for every row
/// operation.
fn cache_key(def: &TableDef) -> Cow<'_, str> {
    if def.plain_layout() {
        return Cow::Borrowed(&def.id);
    }
    let columns: Vec<String> = (0..def.columns.len())
        .map(|i| {
            format!(
                "{}:{:?}",
                def.storage_name(i),
                def.columns[i].storage.missing.is_some()
            )
        })
        .collect();
    Cow::Owned(format!("{}|{}", def.id, columns.join(",")))
}
