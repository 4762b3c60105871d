//! DDL: the catalog changes, plus building claims for a new unique index.
//!
//! Every change goes through [`Ddl::change`]: settle another transaction's
//! pending change on the entry (wait for it, or fold it once decided), then
//! write the new definition by compare-and-set. Outside a block the write
//! is the committed definition; inside one it is a pending change of the
//! block's transaction (`catalog::entry`), decided with its rows at COMMIT
//! and taken back at ROLLBACK (docs/transactions.md, section 10).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use tracing::{info, warn};

use super::{Executed, Notice, Outcome};
use crate::catalog::entry::{garbage, Garbage};
use crate::catalog::predicate::Predicate;
use crate::catalog::{
    naming, storage_id, store_error, Catalog, DefIntent, Entry, Inbound, SequenceDef, TableDef,
    UniqueDef,
};
use crate::claims::intents::{abort_if_gone, decision, Decision, Peers, Wait};
use crate::claims::{self, ClaimConfig, ClaimStats, RowWrite, WriteError};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::ddl::{
    nextval_default, with_storage_ids, CreateIndex, CreateSequence, CreateTable, DeclaredForeignKey,
};
use crate::store::{Store, TxnId, TxnStatus};
use crate::txn::{CatalogChange, OpenTxn, Tail};
use crate::types::Value;

/// What one DDL statement works with.
pub(crate) struct Ddl<'a> {
    pub catalog: &'a Catalog,
    pub store: &'a dyn Store,
    pub claims: &'a ClaimConfig,
    pub stats: &'a ClaimStats,
    /// Which transactions may still be running; None outside any session
    /// (adoption at startup), which waits for every undecided one.
    pub peers: Option<&'a Peers>,
    /// The block's transaction: the changes become its pending changes.
    /// None outside a block: they are committed as they are written.
    pub open: Option<&'a OpenTxn>,
    /// When waiting for another transaction's change gives up (55P03).
    pub deadline: Instant,
    /// When the writer was born, for ordering waits across transactions.
    pub born_ms: u64,
    /// Rows per store page when an index build scans.
    pub page: usize,
}

/// Waiting on a catalog entry acts on no table; the waiting helpers only
/// need something to name.
static NO_TABLE: TableDef = TableDef {
    name: String::new(),
    id: String::new(),
    columns: Vec::new(),
    primary_key: Vec::new(),
    pkey_name: String::new(),
    uniques: Vec::new(),
    cql_table: None,
    sequence: None,
    indexes: Vec::new(),
    foreign_keys: Vec::new(),
    count_limits: Vec::new(),
    checks: Vec::new(),
    dropped_slots: 0,
    comment: None,
    referenced_by: Vec::new(),
    wide_ints: false,
};

/// OWNER TO `role` (pg_dump writes it after each relation): the connected
/// `user` owns every relation already, and there is no other role.
pub(super) fn owner_is_user(role: &str, user: &str) -> SqlResult<()> {
    if role != user {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("role \"{role}\" does not exist"),
        ));
    }
    Ok(())
}

pub(super) fn command(tag: &str, notices: Vec<Notice>) -> Executed {
    Executed {
        outcome: Outcome::Command { tag: tag.into() },
        notices,
    }
}

pub(super) fn notice(code: &'static str, message: String) -> Notice {
    Notice {
        severity: "NOTICE",
        code,
        message,
    }
}

pub(super) fn write_error(e: WriteError) -> SqlError {
    match e {
        WriteError::Sql(e) => e,
        other => SqlError::internal(format!("{other:?}")),
    }
}

impl Ddl<'_> {
    fn own(&self) -> Option<TxnId> {
        self.open.map(|o| o.id)
    }

    /// The table as this statement's transaction sees it.
    pub(super) async fn lookup(&self, name: &str) -> SqlResult<Option<Arc<TableDef>>> {
        self.catalog.lookup(name, self.own()).await
    }

    pub(super) fn waiter<'t>(&'t self, table: &'t TableDef) -> RowWrite<'t> {
        RowWrite {
            store: self.store,
            cfg: self.claims,
            stats: self.stats,
            table,
            deadline: self.deadline,
            stop: None,
            own: self.own(),
            peers: self.peers,
            born_ms: self.born_ms,
        }
    }

    /// Once a changed definition is published: wait until every proxy
    /// sharing the store uses it (the change announced, then two catalog
    /// refreshes), so that rows written from then on follow it. A block's
    /// change is seen by nobody else: no wait.
    pub(super) async fn everyone_knows(&self) -> SqlResult<()> {
        if let (Some(refresh), None) = (self.catalog.refresh(), self.open) {
            self.catalog.announced(self.deadline).await?;
            tokio::time::sleep(refresh * 2).await;
        }
        Ok(())
    }

    /// A change that rows must satisfy (a unique index, a foreign key, NOT
    /// NULL, a count limit): publish it (`edit(def, true)`), so that every
    /// writer keeps it; once every proxy uses it, `check` the rows against
    /// the published definition; if that fails, take the change back
    /// (`edit(def, false)`) and answer the check's error.
    pub(super) async fn publish_checked<T, Fut>(
        &self,
        table: &str,
        edit: impl Fn(&mut TableDef, bool),
        check: impl FnOnce(Arc<TableDef>) -> Fut,
    ) -> SqlResult<T>
    where
        Fut: std::future::Future<Output = SqlResult<T>>,
    {
        let change = |keep: bool| {
            let edit = &edit;
            move |current: Option<&Arc<TableDef>>| {
                let mut next =
                    TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(table))?);
                edit(&mut next, keep);
                Ok(Some(next))
            }
        };
        let published = self
            .change(table, change(true))
            .await?
            .expect("a table the change keeps");
        let checked = match self.everyone_knows().await {
            Ok(()) => check(published).await,
            Err(e) => Err(e),
        };
        if checked.is_err() {
            self.change(table, change(false)).await?;
        }
        checked
    }

    /// The sequences `table`'s columns own: each one a column's default
    /// draws from whose OWNED BY names that table and column (serial and
    /// identity columns, or `ALTER SEQUENCE ... OWNED BY`). A sequence a
    /// default merely names stays with its owner, as in PostgreSQL.
    pub(super) async fn owned_sequences(
        &self,
        table: &TableDef,
        columns: impl Iterator<Item = usize>,
    ) -> SqlResult<Vec<String>> {
        let mut out = Vec::new();
        for i in columns {
            let column = &table.columns[i];
            let Some(seq) = super::sequence::drawn_sequence(column) else {
                continue;
            };
            let owner = self
                .lookup(&seq)
                .await?
                .and_then(|d| d.sequence.as_ref().and_then(|s| s.owned_by.clone()));
            if owner == Some((table.name.clone(), column.name.clone())) && !out.contains(&seq) {
                out.push(seq);
            }
        }
        Ok(out)
    }

    /// A relation name for `table`'s `column` with `label` that no relation
    /// this transaction sees has (PostgreSQL's ChooseRelationName).
    pub(super) async fn free_name(
        &self,
        table: &str,
        column: &str,
        label: &str,
    ) -> SqlResult<String> {
        let mut pass = 0;
        loop {
            let name = naming::candidate(table, column, label, pass);
            if self.lookup(&name).await?.is_none() {
                return Ok(name);
            }
            pass += 1;
        }
    }

    /// [`Ddl::change`] for a change that names `storage`, which the
    /// statement has just made: refused (53000, nothing applied) once that
    /// storage is too old to name safely (see `engine::sweep`).
    pub async fn change_naming(
        &self,
        storage: &str,
        name: &str,
        change: impl FnMut(Option<&Arc<TableDef>>) -> SqlResult<Option<TableDef>>,
    ) -> SqlResult<Option<Arc<TableDef>>> {
        super::sweep::check_fresh(storage)?;
        self.change(name, change).await
    }

    /// Change table `name` from what this transaction sees (None: absent)
    /// to what `change` makes of it (None: dropped); returns the result.
    /// Another transaction's pending change on the entry is waited for, as
    /// PostgreSQL's DDL waits for the lock of a concurrent one.
    pub async fn change(
        &self,
        name: &str,
        mut change: impl FnMut(Option<&Arc<TableDef>>) -> SqlResult<Option<TableDef>>,
    ) -> SqlResult<Option<Arc<TableDef>>> {
        let mut wait = Wait::default();
        loop {
            let (version, entry) = match self.catalog.entry(name).await? {
                Some((v, e)) => (Some(v), e),
                None => (None, Entry::default()),
            };
            if let Some(version) = version {
                if self
                    .settle_foreign(name, version, &entry, &mut wait)
                    .await?
                {
                    continue;
                }
            }
            let next = change(entry.visible(self.own(), false).as_ref())?.map(Arc::new);
            let written = match self.open {
                None => next.clone().map(Entry::committed),
                Some(open) => Some(Entry {
                    committed: entry.committed.clone(),
                    intent: Some(DefIntent {
                        txn: open.id,
                        def: next.clone(),
                        // A table held exclusively stays held.
                        exclusive: entry.intent.as_ref().is_some_and(|i| i.exclusive),
                    }),
                }),
            };
            if self.catalog.write(name, version, written.as_ref()).await? {
                if let Some(open) = self.open {
                    open.push_catalog(CatalogChange {
                        name: name.to_owned(),
                        before: entry.intent.clone(),
                        after: next.clone(),
                    });
                }
                return Ok(next);
            }
        }
    }

    /// Another transaction's pending change on the entry: folded once it
    /// is decided, else waited for once. False when there is none.
    async fn settle_foreign(
        &self,
        name: &str,
        version: uuid::Uuid,
        entry: &Entry,
        wait: &mut Wait,
    ) -> SqlResult<bool> {
        let Some(intent) = entry.foreign_intent(self.own()) else {
            return Ok(false);
        };
        let w = self.waiter(&NO_TABLE);
        let committed = match decision(&w, intent.txn).await.map_err(write_error)? {
            Decision::Committed(_) => Some(true),
            Decision::Aborted => Some(false),
            Decision::Undecided => abort_if_gone(&w, intent.txn)
                .await
                .map_err(write_error)?
                .map(|rec| rec.status == TxnStatus::Committed),
        };
        match committed {
            Some(committed) => {
                self.fold(name, version, entry, committed, &[]).await?;
            }
            None => wait.once(&w, &intent.txn).await.map_err(write_error)?,
        }
        Ok(true)
    }

    /// Point table `name` back at a foreign key that references it
    /// (`catalog::foreign_key`). A pointer is a hint that costs nothing
    /// when stale, so it goes on the committed definition at once, outside
    /// any block, and every proxy must know it before the foreign key can
    /// hold a row: a write elsewhere that removes a referenced key looks
    /// for referencing rows only where the pointers say. In a transaction
    /// its COMMIT waits for that; outside one the caller waits
    /// ([`Ddl::everyone_knows`]) before relying on the constraint. The
    /// block's own pending definition of the table gets the pointer too.
    pub(super) async fn point_back(&self, name: &str, inbound: &Inbound) -> SqlResult<()> {
        let mut wait = Wait::default();
        loop {
            let Some((version, entry)) = self.settled_entry(name, &mut wait).await? else {
                return Err(SqlError::undefined_table(name));
            };
            let with = |d: &Arc<TableDef>| -> Option<Arc<TableDef>> {
                if d.referenced_by.contains(inbound) {
                    return None;
                }
                let mut d = TableDef::clone(d);
                d.referenced_by.push(inbound.clone());
                Some(Arc::new(d))
            };
            let committed = entry.committed.as_ref().and_then(with);
            let pending = entry
                .intent
                .as_ref()
                .and_then(|i| i.def.as_ref())
                .and_then(with);
            if committed.is_none() && pending.is_none() {
                return Ok(());
            }
            let next = Entry {
                committed: committed.clone().or_else(|| entry.committed.clone()),
                intent: entry.intent.as_ref().map(|i| DefIntent {
                    txn: i.txn,
                    def: pending.clone().or_else(|| i.def.clone()),
                    exclusive: i.exclusive,
                }),
            };
            if !self.catalog.write(name, Some(version), Some(&next)).await? {
                continue;
            }
            if let (Some(open), Some(after)) = (self.open, pending) {
                open.push_catalog(CatalogChange {
                    name: name.to_owned(),
                    before: entry.intent.clone(),
                    after: Some(after),
                });
            }
            if let (Some(open), Some(_)) = (self.open, committed) {
                open.announce_before_commit();
            }
            return Ok(());
        }
    }

    /// Table `name` as this transaction sees it once no other
    /// transaction's change of it is pending (waiting for one that is).
    pub(super) async fn settled(&self, name: &str) -> SqlResult<Option<Arc<TableDef>>> {
        let entry = self.settled_entry(name, &mut Wait::default()).await?;
        Ok(entry.and_then(|(_, e)| e.visible(self.own(), false)))
    }

    /// Entry `name` and its version once no other transaction's change of
    /// it is pending (waiting for one that is, with `wait`).
    async fn settled_entry(
        &self,
        name: &str,
        wait: &mut Wait,
    ) -> SqlResult<Option<(uuid::Uuid, Entry)>> {
        loop {
            let Some((version, entry)) = self.catalog.entry(name).await? else {
                return Ok(None);
            };
            if !self.settle_foreign(name, version, &entry, wait).await? {
                return Ok(Some((version, entry)));
            }
        }
    }

    /// Fold a decided pending change into the entry, then remove what no
    /// definition uses any more: the loser's storage and claims, and those
    /// of `also` (definitions the transaction had along the way). False if
    /// the entry had moved on.
    async fn fold(
        &self,
        name: &str,
        version: uuid::Uuid,
        entry: &Entry,
        committed: bool,
        also: &[Arc<TableDef>],
    ) -> SqlResult<bool> {
        let next = entry.folded(committed);
        if !self
            .catalog
            .write(name, Some(version), next.as_ref())
            .await?
        {
            return Ok(false);
        }
        let winner = next.and_then(|e| e.committed);
        let gone = entry
            .committed
            .iter()
            .chain(entry.intent.iter().filter_map(|i| i.def.as_ref()))
            .chain(also);
        self.remove(garbage(gone, &winner.iter().collect::<Vec<_>>()))
            .await;
        Ok(true)
    }

    /// Remove storage nothing uses. Best effort: what is left costs space,
    /// never correctness (no definition names it). What a catalog entry
    /// still names stays (a rename moved it there); when the catalog
    /// cannot be read, everything stays.
    async fn remove(&self, g: Garbage) {
        if g.is_empty() {
            return;
        }
        let g = match self.catalog.every_definition().await {
            Ok(named) => g.unless_named_by(&named),
            Err(e) => {
                warn!(cause = %e.message, "storage a decided change left behind was not removed: the catalog could not be read");
                return;
            }
        };
        for t in &g.tables {
            if let Err(e) = self.store.drop_table(t).await {
                warn!(table = %t.name, id = %t.id, cause = %e, "storage of a dropped table was not removed");
            }
        }
        for id in &g.claims {
            if let Err(e) = self.store.drop_claims(id).await {
                warn!(constraint = %id, cause = %e, "claims of a dropped constraint were not removed");
            }
        }
        for id in &g.indexes {
            if let Err(e) = self.store.drop_index(id).await {
                warn!(index = %id, cause = %e, "entries of a dropped index were not removed");
            }
        }
        for id in &g.counters {
            if let Err(e) = super::sequence::Sequences::remove(self.store, id).await {
                warn!(counter = %id, cause = %e, "the counter of a dropped sequence was not removed");
            }
        }
    }
}

/// The catalog side of a decided transaction: fold each entry it changed
/// and remove the storage its losing definitions used. Run before its rows
/// are finished, so that nobody sees its rows without its tables.
pub(crate) async fn finish(ddl: &Ddl<'_>, txn: TxnId, log: &[CatalogChange], committed: bool) {
    let mut names: Vec<&str> = log.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let also: Vec<Arc<TableDef>> = log
            .iter()
            .filter(|c| c.name == name)
            .flat_map(|c| c.defs().cloned())
            .collect();
        loop {
            let entry = match ddl.catalog.entry(name).await {
                Ok(Some((version, entry))) => (version, entry),
                Ok(None) => break,
                Err(e) => {
                    warn!(%txn, table = name, cause = %e, "a decided transaction's catalog entry was not tidied; whoever meets it will");
                    break;
                }
            };
            let (version, entry) = entry;
            if entry.intent.as_ref().map(|i| i.txn) != Some(txn) {
                break;
            }
            match ddl.fold(name, version, &entry, committed, &also).await {
                Ok(true) => break,
                Ok(false) => continue,
                Err(e) => {
                    warn!(%txn, table = name, cause = %e, "a decided transaction's catalog entry was not tidied; whoever meets it will");
                    break;
                }
            }
        }
    }
}

/// ROLLBACK TO (or a failed statement): put each entry the tail changed
/// back to its pending change at the savepoint, and remove the storage
/// only the undone changes used.
pub(crate) async fn undo(ddl: &Ddl<'_>, tail: &Tail) -> Result<(), String> {
    let mut done: Vec<&str> = Vec::new();
    // Removed once every entry is put back: a rename the tail undoes
    // moves a definition back to an entry restored later in the loop.
    let mut left: Vec<Garbage> = Vec::new();
    for change in &tail.catalog {
        let name = change.name.as_str();
        if done.contains(&name) {
            continue;
        }
        done.push(name);
        // The earliest undone change of the entry says what it was before.
        let restore = change.before.clone();
        let Some((version, entry)) = ddl.catalog.entry(name).await.map_err(|e| e.message)? else {
            return Err(format!("the catalog entry of {name} is gone"));
        };
        let next = match (&entry.committed, &restore) {
            (None, None) => None,
            (committed, restore) => Some(Entry {
                committed: committed.clone(),
                intent: restore.clone(),
            }),
        };
        if !ddl
            .catalog
            .write(name, Some(version), next.as_ref())
            .await
            .map_err(|e| e.message)?
        {
            return Err(format!(
                "the catalog entry of {name} changed under its transaction"
            ));
        }
        let mut kept: Vec<&Arc<TableDef>> = entry.committed.iter().collect();
        kept.extend(restore.iter().filter_map(|r| r.def.as_ref()));
        kept.extend(
            tail.catalog_kept
                .iter()
                .filter(|c| c.name == name)
                .flat_map(|c| c.defs()),
        );
        let gone = tail
            .catalog
            .iter()
            .filter(|c| c.name == name)
            .flat_map(|c| c.defs());
        left.push(garbage(gone, &kept));
    }
    for g in left {
        ddl.remove(g).await;
    }
    Ok(())
}

pub async fn create_table(ddl: &Ddl<'_>, plan: &CreateTable) -> SqlResult<Executed> {
    let mut def = with_storage_ids(plan.def.clone());
    let name = def.name.clone();
    if ddl.lookup(&name).await?.is_none() {
        // The sequences its serial and identity columns own, named as
        // PostgreSQL names them; the statement is one transaction, so they
        // appear with the table or not at all.
        let mut owned = Vec::new();
        for o in &plan.owned {
            let column = def.columns[o.column].name.clone();
            let seq_name = ddl.free_name(&name, &column, "seq").await?;
            def.columns[o.column].default = Some(nextval_default(&seq_name));
            owned.push(sequence_relation(&seq_name, &o.def));
        }
        define_foreign_keys(ddl, &mut def, &plan.foreign_keys).await?;
        // The table's storage exists before the catalog makes it visible.
        ddl.store.create_table(&def).await.map_err(store_error)?;
        let created = ddl
            .change_naming(&def.id, &name, |current| match current {
                Some(_) => Err(exists(&name)),
                None => Ok(Some(def.clone())),
            })
            .await;
        let created = match created {
            Ok(_) => create_all(ddl, &owned).await,
            Err(e) => Err(e),
        };
        // The tables it references point back at it.
        let created = match created {
            Ok(()) => point_back_all(ddl, &def).await,
            Err(e) => Err(e),
        };
        match created {
            Ok(()) => return Ok(command("CREATE TABLE", Vec::new())),
            // Not created (another transaction created it first, or the
            // store refused): our storage is unused. Unless the entry's
            // outcome is unknown (40003): then it may name this storage,
            // which must stay.
            Err(e) => {
                if ddl.open.is_none() && e.code != sqlstate::STATEMENT_COMPLETION_UNKNOWN {
                    ddl.store.drop_table(&def).await.map_err(store_error)?;
                }
                if e.code != sqlstate::DUPLICATE_TABLE || !plan.if_not_exists {
                    return Err(e);
                }
            }
        }
    }
    if plan.if_not_exists {
        return Ok(command(
            "CREATE TABLE",
            vec![notice(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists, skipping"),
            )],
        ));
    }
    Err(exists(&name))
}

/// Give `def` (a table being created) the foreign keys `declared`,
/// resolved against the tables they reference (itself included).
pub(super) async fn define_foreign_keys(
    ddl: &Ddl<'_>,
    def: &mut TableDef,
    declared: &[DeclaredForeignKey],
) -> SqlResult<()> {
    for d in declared {
        let parent = if d.ref_table == def.name {
            Arc::new(def.clone())
        } else {
            ddl.lookup(&d.ref_table)
                .await?
                .ok_or_else(|| SqlError::undefined_table(&d.ref_table))?
        };
        let taken: Vec<String> = def.constraint_names().map(str::to_owned).collect();
        if let Some(name) = d.name.as_ref().filter(|n| taken.contains(n)) {
            return Err(constraint_exists(name, &def.name));
        }
        let fk = super::foreign_keys::define(def, d, &parent, &taken)?;
        if fk.ref_table == def.name {
            def.referenced_by.push(fk.inbound(&def.name));
        }
        def.foreign_keys.push(fk);
    }
    Ok(())
}

/// 42710: a constraint name the table uses already.
pub(super) fn constraint_exists(name: &str, table: &str) -> SqlError {
    SqlError::new(
        "42710",
        format!("constraint \"{name}\" for relation \"{table}\" already exists"),
    )
}

/// Point each table `def`'s foreign keys reference (other than itself)
/// back at them.
pub(super) async fn point_back_all(ddl: &Ddl<'_>, def: &TableDef) -> SqlResult<()> {
    for fk in def.foreign_keys.iter().filter(|f| f.ref_table != def.name) {
        ddl.point_back(&fk.ref_table, &fk.inbound(&def.name))
            .await?;
    }
    Ok(())
}

/// Sequence relation `name` for `def`, with a fresh counter.
pub(super) fn sequence_relation(name: &str, def: &SequenceDef) -> TableDef {
    let mut seq = def.clone();
    seq.counter = storage_id("seq");
    TableDef {
        name: name.to_owned(),
        id: name.to_owned(),
        sequence: Some(seq),
        ..NO_TABLE.clone()
    }
}

/// Create each relation in `defs` (42P07 if a name is taken).
pub(super) async fn create_all(ddl: &Ddl<'_>, defs: &[TableDef]) -> SqlResult<()> {
    for def in defs {
        ddl.change(&def.name, |current| match current {
            Some(_) => Err(exists(&def.name)),
            None => Ok(Some(def.clone())),
        })
        .await?;
    }
    Ok(())
}

pub async fn create_sequence(ddl: &Ddl<'_>, plan: &CreateSequence) -> SqlResult<Executed> {
    let name = &plan.name;
    if let Some((table, column)) = &plan.def.owned_by {
        let t = ddl
            .lookup(table)
            .await?
            .ok_or_else(|| SqlError::undefined_table(table))?;
        if t.column_index(column).is_none() {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{column}\" of relation \"{table}\" does not exist"),
            ));
        }
    }
    match create_all(ddl, &[sequence_relation(name, &plan.def)]).await {
        Ok(()) => Ok(command("CREATE SEQUENCE", Vec::new())),
        Err(e) if e.code == sqlstate::DUPLICATE_TABLE && plan.if_not_exists => Ok(command(
            "CREATE SEQUENCE",
            vec![notice(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists, skipping"),
            )],
        )),
        Err(e) => Err(e),
    }
}

/// The relations a DROP TABLE or DROP SEQUENCE names, each checked
/// before any is dropped, as PostgreSQL does: absent ones skipped with a
/// NOTICE under IF EXISTS (else 42P01), one of the other kind 42809.
async fn to_drop(
    ddl: &Ddl<'_>,
    names: &[String],
    if_exists: bool,
    sequences: bool,
) -> SqlResult<(Vec<Arc<TableDef>>, Vec<Notice>)> {
    let kind = if sequences { "sequence" } else { "table" };
    let (mut found, mut notices) = (Vec::new(), Vec::new());
    for name in names {
        match ddl.lookup(name).await? {
            None if if_exists => notices.push(notice(
                "00000",
                format!("{kind} \"{name}\" does not exist, skipping"),
            )),
            None => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("{kind} \"{name}\" does not exist"),
                ))
            }
            Some(def) if def.sequence.is_some() != sequences => return Err(wrong_kind(name, kind)),
            Some(def) => found.push(def),
        }
    }
    Ok((found, notices))
}

/// DROP SEQUENCE: a sequence a column's default or identity draws from
/// cannot go (2BP01).
pub async fn drop_sequence(
    ddl: &Ddl<'_>,
    names: &[String],
    if_exists: bool,
) -> SqlResult<Executed> {
    let (dropping, notices) = to_drop(ddl, names, if_exists, true).await?;
    let tables = ddl.catalog.all(ddl.own()).await?;
    for def in &dropping {
        let name = &def.name;
        let user = tables
            .iter()
            .filter(|t| t.sequence.is_none())
            .find_map(|t| {
                t.columns
                    .iter()
                    .find(|c| super::sequence::drawn_sequence(c).as_deref() == Some(name.as_str()))
                    .map(|c| (t, c))
            });
        if let Some((table, column)) = user {
            return Err(SqlError::new(
                "2BP01",
                format!("cannot drop sequence {name} because other objects depend on it"),
            )
            .with_detail(format!(
                "default value for column {} of table {} depends on sequence {name}",
                column.name, table.name
            ))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
    }
    for def in dropping {
        drop_relation(ddl, &def.name).await?;
    }
    Ok(command("DROP SEQUENCE", notices))
}

/// Drop relation `name` from the catalog; outside a block its storage (or
/// counter) goes at once, in a block once the transaction commits.
/// Drop relation `name`; the definition dropped.
pub(super) async fn drop_relation(ddl: &Ddl<'_>, name: &str) -> SqlResult<Option<Arc<TableDef>>> {
    let mut dropped = None;
    ddl.change(name, |current| {
        dropped = current.cloned();
        Ok(None)
    })
    .await?;
    if let (Some(def), None) = (&dropped, ddl.open) {
        ddl.remove(garbage([def], &[])).await;
    }
    Ok(dropped)
}

/// 2BP01 when a foreign key of a table that stays references `table`.
async fn still_referenced(ddl: &Ddl<'_>, table: &TableDef, dropping: &[String]) -> SqlResult<()> {
    let mut dependents = Vec::new();
    for inbound in &table.referenced_by {
        if dropping.contains(&inbound.table) || inbound.table == table.name {
            continue;
        }
        let Some(child) = ddl.settled(&inbound.table).await? else {
            continue;
        };
        if child
            .foreign_key(&inbound.constraint)
            .is_some_and(|fk| fk.ref_table == table.name)
        {
            dependents.push(format!(
                "constraint {} on table {} depends on table {}",
                inbound.constraint, child.name, table.name
            ));
        }
    }
    if dependents.is_empty() {
        return Ok(());
    }
    Err(SqlError::new(
        "2BP01",
        format!(
            "cannot drop table {} because other objects depend on it",
            table.name
        ),
    )
    .with_detail(dependents.join("\n"))
    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."))
}

/// 42809: DROP TABLE of a sequence, DROP SEQUENCE of a table.
fn wrong_kind(name: &str, wanted: &str) -> SqlError {
    let (is, other) = if wanted == "table" {
        ("sequence", "SEQUENCE")
    } else {
        ("table", "TABLE")
    };
    SqlError::new("42809", format!("\"{name}\" is not a {wanted}"))
        .with_hint(format!("Use DROP {other} to remove a {is}."))
}

fn exists(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::DUPLICATE_TABLE,
        format!("relation \"{name}\" already exists"),
    )
}

pub async fn drop_table(ddl: &Ddl<'_>, names: &[String], if_exists: bool) -> SqlResult<Executed> {
    let (dropping, notices) = to_drop(ddl, names, if_exists, false).await?;
    let mut owned: Vec<String> = Vec::new();
    for def in &dropping {
        owned.extend(ddl.owned_sequences(def, 0..def.columns.len()).await?);
    }
    for def in &dropping {
        let dropped = drop_relation(ddl, &def.name).await?;
        // Checked once its drop is pending, against the pointers of the
        // definition it replaced: a foreign key added meanwhile either
        // pointed back before that (and is seen here) or waits for this
        // drop and then finds its table gone.
        if let Some(dropped) = dropped {
            still_referenced(ddl, &dropped, names).await?;
        }
    }
    // The sequences its serial and identity columns owned go with it. Outside
    // a block they go after the table: a crash in between leaves a sequence
    // nothing uses, never a table whose default names a missing one.
    for seq in owned {
        if ddl
            .lookup(&seq)
            .await?
            .is_some_and(|d| d.sequence.is_some())
        {
            drop_relation(ddl, &seq).await?;
        }
    }
    Ok(command("DROP TABLE", notices))
}

pub async fn drop_index(ddl: &Ddl<'_>, names: &[String], if_exists: bool) -> SqlResult<Executed> {
    let mut notices = Vec::new();
    for name in names {
        let Some(table) = index_owner(ddl, name).await? else {
            if !if_exists {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("index \"{name}\" does not exist"),
                ));
            }
            notices.push(notice(
                "00000",
                format!("index \"{name}\" does not exist, skipping"),
            ));
            continue;
        };
        let declared = table.pkey_name == *name
            || table.uniques.iter().any(|u| &u.name == name && !u.is_index);
        if declared {
            return Err(SqlError::new(
                "2BP01",
                format!(
                    "cannot drop index {name} because constraint {name} on table {} requires it",
                    table.name
                ),
            )
            .with_hint(format!(
                "You can drop constraint {name} on table {} instead.",
                table.name
            )));
        }
        let (mut dropped, mut entries) = (None, None);
        ddl.change(&table.name, |current| {
            let current = current.ok_or_else(|| SqlError::undefined_table(&table.name))?;
            let mut next = TableDef::clone(current);
            dropped = next
                .uniques
                .iter()
                .position(|u| &u.name == name)
                .map(|i| next.uniques.remove(i));
            entries = next
                .indexes
                .iter()
                .position(|i| &i.name == name)
                .map(|i| next.indexes.remove(i))
                .filter(|i| i.kept());
            Ok(Some(next))
        })
        .await?;
        // In a block the claims and entries go once the transaction commits.
        if ddl.open.is_none() {
            if let Some(u) = dropped {
                ddl.store.drop_claims(&u.id).await.map_err(store_error)?;
            }
            if let Some(i) = entries {
                ddl.store.drop_index(&i.id).await.map_err(store_error)?;
            }
        }
    }
    Ok(command("DROP INDEX", notices))
}

/// CREATE UNIQUE INDEX: publish the constraint (so concurrent writers claim
/// for it too), then claim every existing row's key. A collision undoes
/// everything and answers PostgreSQL's error; nothing is left half-built.
///
/// Inside a block it is part of the block's pending change; on a table
/// others can write, the block holds it exclusively (`hold_for_row_checks`).
pub async fn create_index(ddl: &Ddl<'_>, plan: &CreateIndex) -> SqlResult<Executed> {
    let table = ddl
        .lookup(&plan.table)
        .await?
        .ok_or_else(|| SqlError::undefined_table(&plan.table))?;
    if table.sequence.is_some() {
        return Err(SqlError::new(
            "42809",
            format!("cannot create index on relation \"{}\"", plan.table),
        )
        .with_detail("This operation is not supported for sequences."));
    }
    if plan.concurrently && ddl.open.is_some() {
        return Err(SqlError::new(
            sqlstate::ACTIVE_TRANSACTION,
            "CREATE INDEX CONCURRENTLY cannot run inside a transaction block",
        ));
    }
    if !plan.unique {
        return super::indexes::create(ddl, plan, &table).await;
    }
    hold_for_row_checks(ddl, &plan.table, "CREATE UNIQUE INDEX").await?;
    let mut cols = Vec::with_capacity(plan.columns.len());
    for c in &plan.columns {
        cols.push(table.column(c)?);
    }
    let name = match index_name(ddl, plan, &table).await? {
        Ok(name) => name,
        Err(skipped) => return Ok(skipped),
    };
    let unique = UniqueDef {
        name: name.clone(),
        id: storage_id(&name),
        columns: cols,
        nulls_not_distinct: plan.nulls_not_distinct,
        is_index: true,
        primary: false,
        predicate: match &plan.predicate {
            Some(e) => Some(Predicate::declare(&table, e)?),
            None => None,
        },
        building: false,
    };
    add_unique(ddl, &table.name, unique).await?;
    Ok(command("CREATE INDEX", Vec::new()))
}

/// A change checked against a table's rows (a unique index, a foreign
/// key, a validated CHECK, NOT NULL) inside a block, on a table created
/// before the block: the block holds the table exclusively until it ends,
/// as PostgreSQL's ALTER TABLE holds its ACCESS EXCLUSIVE lock. Other
/// sessions' statements on the table wait (`Catalog::lookup`), so none
/// writes a row the check has not seen, or one the change, once
/// committed, would refuse. The hold is the block's pending change of the
/// entry, marked exclusive; every proxy learns of it within one catalog
/// refresh, which is waited out before the rows are checked. A table the
/// block created is seen by nobody else: nothing to hold.
pub(super) async fn hold_for_row_checks(ddl: &Ddl<'_>, table: &str, what: &str) -> SqlResult<()> {
    let Some(open) = ddl.open else {
        return Ok(());
    };
    let mut wait = Wait::default();
    loop {
        let Some((version, entry)) = ddl.settled_entry(table, &mut wait).await? else {
            return Err(SqlError::undefined_table(table));
        };
        let own = entry.intent.as_ref().filter(|i| i.txn == open.id);
        if entry.committed.is_none() || own.is_some_and(|i| i.exclusive) {
            return Ok(());
        }
        let def = entry.visible(ddl.own(), false);
        let held = Entry {
            committed: entry.committed.clone(),
            intent: Some(DefIntent {
                txn: open.id,
                def: def.clone(),
                exclusive: true,
            }),
        };
        if ddl.catalog.write(table, Some(version), Some(&held)).await? {
            open.push_catalog(CatalogChange {
                name: table.to_owned(),
                before: entry.intent.clone(),
                after: def,
            });
            break;
        }
    }
    info!(
        table,
        statement = what,
        "holding the table exclusively until the transaction ends"
    );
    if let Some(refresh) = ddl.catalog.refresh() {
        ddl.catalog.announced(ddl.deadline).await?;
        tokio::time::sleep(refresh * 2).await;
    }
    Ok(())
}

/// The name an index gets: as given, or PostgreSQL's `<table>_<cols>_idx`
/// (a number added while a relation or index has it); 42P07 if a given
/// name is taken (a NOTICE and nothing done with IF NOT EXISTS).
pub(super) async fn index_name(
    ddl: &Ddl<'_>,
    plan: &CreateIndex,
    table: &TableDef,
) -> SqlResult<Result<String, Executed>> {
    let name = match &plan.name {
        Some(n) => n.clone(),
        None => {
            let col_names: Vec<&str> = plan.columns.iter().map(String::as_str).collect();
            naming::index_name(&table.name, &col_names, table.index_names())
        }
    };
    if ddl.lookup(&name).await?.is_some() || index_exists(ddl, &name).await? {
        if plan.if_not_exists {
            return Ok(Err(command(
                "CREATE INDEX",
                vec![notice(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists, skipping"),
                )],
            )));
        }
        return Err(SqlError::new(
            sqlstate::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        ));
    }
    Ok(Ok(name))
}

/// Publish a unique constraint (so concurrent writers claim for it too),
/// then claim every existing row's key. A collision undoes everything and
/// answers PostgreSQL's error; nothing is left half-built. CREATE UNIQUE
/// INDEX and the adoption of existing CQL tables both build this way.
///
/// A primary key added to a table keyed by a hidden row id
/// (`UniqueDef::primary`) also becomes the table's declared primary key
/// and makes its columns NOT NULL, which every row is checked for first.
pub async fn add_unique(ddl: &Ddl<'_>, table: &str, unique: UniqueDef) -> SqlResult<()> {
    let nullable: Vec<usize> = match unique.primary {
        false => Vec::new(),
        true => {
            let t = ddl
                .lookup(table)
                .await?
                .ok_or_else(|| SqlError::undefined_table(table))?;
            let nullable = |&&c: &&usize| !t.columns[c].not_null;
            unique.columns.iter().filter(nullable).copied().collect()
        }
    };
    let building = UniqueDef {
        building: true,
        ..unique.clone()
    };
    let alter = |next: &mut TableDef, keep: bool| {
        next.uniques.retain(|u| u.id != unique.id);
        if keep {
            next.uniques.push(building.clone());
        }
        if unique.primary {
            for &c in &nullable {
                next.columns[c].not_null = keep;
            }
            (next.primary_key, next.pkey_name) = match keep {
                true => (unique.columns.clone(), unique.name.clone()),
                false => (Vec::new(), String::new()),
            };
        }
    };
    let nullable = &nullable;
    // Other proxies sharing the store learn of the new constraint within one
    // catalog refresh; rows they write after that claim its keys themselves.
    // Scan only then, so the scan sees every row written without a claim.
    // (A block's table is seen by nobody else: no wait.)
    let built = ddl
        .publish_checked(table, alter, |published| async move {
            for &c in nullable {
                let column = &published.columns[c].name;
                super::alter::refuse_nulls(ddl, &published, column).await?;
            }
            backfill(ddl, &published, published.uniques.len() - 1).await
        })
        .await;
    match built {
        Ok(rows) => {
            // Every row holds its claim: reads may go by it now.
            ddl.change(table, |current| {
                let current = current.ok_or_else(|| SqlError::undefined_table(table))?;
                let mut next = TableDef::clone(current);
                for u in next.uniques.iter_mut().filter(|u| u.id == unique.id) {
                    u.building = false;
                }
                Ok(Some(next))
            })
            .await?;
            info!(index = %unique.name, table, rows, "unique index built");
            Ok(())
        }
        Err(e) => {
            ddl.store
                .drop_claims(&unique.id)
                .await
                .map_err(store_error)?;
            Err(e)
        }
    }
}

/// The table with an index named `name`, as this transaction sees it.
pub(super) async fn index_owner(ddl: &Ddl<'_>, name: &str) -> SqlResult<Option<Arc<TableDef>>> {
    Ok(ddl
        .catalog
        .all(ddl.own())
        .await?
        .into_iter()
        .find(|t| t.index_names().any(|n| n == name)))
}

pub(super) async fn index_exists(ddl: &Ddl<'_>, name: &str) -> SqlResult<bool> {
    Ok(index_owner(ddl, name).await?.is_some())
}

/// Claim the new index's key for every live row, page by page, logging progress.
async fn backfill(ddl: &Ddl<'_>, table: &TableDef, index: usize) -> SqlResult<u64> {
    let (store, cfg, page) = (ddl.store, ddl.claims, ddl.page);
    let u = &table.uniques[index];
    // A block building an index on its own new table sees its own rows; a
    // transaction whose proxy has gone silent is aborted, as any writer
    // that meets it does.
    let w = RowWrite {
        deadline: Instant::now() + cfg.lock_timeout,
        born_ms: claims::now_ms(),
        ..ddl.waiter(table)
    };
    let txn = claims::new_txn();
    let mut rows = 0u64;
    let mut last_log = Instant::now();
    let mut cursor: Option<Vec<u8>> = None;
    loop {
        let batch = store
            .scan_rows(table, cursor.as_deref(), page)
            .await
            .map_err(store_error)?;
        // A row an open transaction is writing is waited for, as
        // PostgreSQL's CREATE INDEX waits for writers, and claimed as that
        // transaction leaves it: its commit cannot bring in a key without
        // the new index's claim.
        let mut claims = Vec::new();
        for (pk, row) in batch.rows.iter() {
            let row = match row.intent {
                None => row.live.then(|| row.clone()),
                Some(_) => {
                    let w = RowWrite {
                        deadline: Instant::now() + cfg.lock_timeout,
                        ..w
                    };
                    claims::settled_row(&w, pk, row.clone())
                        .await
                        .map_err(write_error)?
                }
            };
            if let Some(r) = row {
                if let Some(key) = u.key_of(&r.values) {
                    claims.push((pk.clone(), r.values, key));
                }
            }
        }
        futures::stream::iter(claims.into_iter().map(Ok::<_, SqlError>))
            .try_for_each_concurrent(16, |(pk, values, key)| {
                let w = &w;
                async move {
                    let keys = [claims::KeyClaim {
                        unique: index,
                        key,
                        slot: None,
                    }];
                    match claims::claim_keys(w, &keys, &pk, txn).await {
                        Ok(()) | Err(WriteError::ThisRow) => Ok(()),
                        Err(WriteError::Duplicate { .. }) => Err(duplicated(table, index, &values)),
                        Err(WriteError::Sql(e)) => Err(e),
                    }
                }
            })
            .await?;
        rows += batch.rows.len() as u64;
        if last_log.elapsed() > Duration::from_secs(5) {
            info!(table = %table.name, index = %u.name, rows, "building unique index");
            last_log = Instant::now();
        }
        match batch.next {
            Some(next) => cursor = Some(next),
            None => return Ok(rows),
        }
    }
}

fn duplicated(table: &TableDef, index: usize, values: &[Value]) -> SqlError {
    let u = &table.uniques[index];
    let vals: Vec<&Value> = u.columns.iter().map(|&i| &values[i]).collect();
    SqlError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("could not create unique index \"{}\"", u.name),
    )
    .with_detail(format!(
        "{} is duplicated.",
        crate::types::key_detail(&table.column_names(&u.columns), &vals)
    ))
    .with_table(&table.name)
    .with_constraint(u.name.clone())
}
