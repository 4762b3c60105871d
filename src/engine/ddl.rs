//! DDL: the catalog changes, plus building claims for a new unique index.

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use tracing::info;

use super::{Executed, Notice, Outcome};
use crate::catalog::{naming, storage_id, store_error, Catalog, TableDef, UniqueDef};
use crate::claims::{self, ClaimConfig, ClaimStats, RowWrite, WriteError};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::ddl::{with_storage_ids, CreateIndex, CreateTable};
use crate::store::Store;
use crate::types::Value;

fn command(tag: &str, notices: Vec<Notice>) -> Executed {
    Executed {
        outcome: Outcome::Command { tag: tag.into() },
        notices,
    }
}

fn notice(code: &'static str, message: String) -> Notice {
    Notice {
        severity: "NOTICE",
        code,
        message,
    }
}

pub async fn create_table(
    catalog: &Catalog,
    store: &dyn Store,
    plan: &CreateTable,
) -> SqlResult<Executed> {
    let def = with_storage_ids(plan.def.clone());
    let name = def.name.clone();
    if catalog.lookup(&name).await?.is_none() {
        // The table's storage exists before the catalog makes it visible.
        store.create_table(&def).await.map_err(store_error)?;
        if catalog.create(def.clone()).await? {
            return Ok(command("CREATE TABLE", Vec::new()));
        }
        // Another proxy created it first: our storage is unused.
        store.drop_table(&def).await.map_err(store_error)?;
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
    Err(SqlError::new(
        sqlstate::DUPLICATE_TABLE,
        format!("relation \"{name}\" already exists"),
    ))
}

pub async fn drop_table(
    catalog: &Catalog,
    store: &dyn Store,
    names: &[String],
    if_exists: bool,
) -> SqlResult<Executed> {
    let mut notices = Vec::new();
    // Like PostgreSQL, check every name before dropping any.
    for name in names {
        if catalog.lookup(name).await?.is_none() {
            if !if_exists {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("table \"{name}\" does not exist"),
                ));
            }
            notices.push(notice(
                "00000",
                format!("table \"{name}\" does not exist, skipping"),
            ));
        }
    }
    for name in names {
        if let Some(def) = catalog.drop(name).await? {
            store.drop_table(&def).await.map_err(store_error)?;
            for u in &def.uniques {
                store.drop_claims(&u.id).await.map_err(store_error)?;
            }
        }
    }
    Ok(command("DROP TABLE", notices))
}

pub async fn drop_index(
    catalog: &Catalog,
    store: &dyn Store,
    names: &[String],
    if_exists: bool,
) -> SqlResult<Executed> {
    let mut notices = Vec::new();
    for name in names {
        let owner = catalog
            .all()
            .await?
            .into_iter()
            .find(|t| t.uniques.iter().any(|u| &u.name == name) || &t.pkey_name == name);
        let Some(table) = owner else {
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
        let mut dropped = None;
        catalog
            .alter(&table.name, |t| {
                let mut next = t.clone();
                dropped = next
                    .uniques
                    .iter()
                    .position(|u| &u.name == name)
                    .map(|i| next.uniques.remove(i));
                Ok(next)
            })
            .await?;
        if let Some(u) = dropped {
            store.drop_claims(&u.id).await.map_err(store_error)?;
        }
    }
    Ok(command("DROP INDEX", notices))
}

/// CREATE UNIQUE INDEX: publish the constraint (so concurrent writers claim
/// for it too), then claim every existing row's key. A collision undoes
/// everything and answers PostgreSQL's error; nothing is left half-built.
pub async fn create_index(
    catalog: &Catalog,
    store: &dyn Store,
    cfg: &ClaimConfig,
    stats: &ClaimStats,
    plan: &CreateIndex,
    page: usize,
) -> SqlResult<Executed> {
    let table = catalog.table(&plan.table).await?;
    let mut cols = Vec::with_capacity(plan.columns.len());
    for c in &plan.columns {
        cols.push(table.column(c)?);
    }
    let name = match &plan.name {
        Some(n) => n.clone(),
        None => {
            let col_names: Vec<&str> = plan.columns.iter().map(String::as_str).collect();
            naming::index_name(&table.name, &col_names, table.constraint_names())
        }
    };
    if catalog.lookup(&name).await?.is_some() || index_exists(catalog, &name).await? {
        if plan.if_not_exists {
            return Ok(command(
                "CREATE INDEX",
                vec![notice(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists, skipping"),
                )],
            ));
        }
        return Err(SqlError::new(
            sqlstate::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        ));
    }
    let unique = UniqueDef {
        name: name.clone(),
        id: storage_id(&name),
        columns: cols,
        nulls_not_distinct: plan.nulls_not_distinct,
        is_index: true,
    };
    add_unique(catalog, store, cfg, stats, &table.name, unique, page).await?;
    Ok(command("CREATE INDEX", Vec::new()))
}

/// Publish a unique constraint (so concurrent writers claim for it too),
/// then claim every existing row's key. A collision undoes everything and
/// answers PostgreSQL's error; nothing is left half-built. CREATE UNIQUE
/// INDEX and the adoption of existing CQL tables both build this way.
pub async fn add_unique(
    catalog: &Catalog,
    store: &dyn Store,
    cfg: &ClaimConfig,
    stats: &ClaimStats,
    table: &str,
    unique: UniqueDef,
    page: usize,
) -> SqlResult<()> {
    let published = catalog
        .alter(table, |t| {
            let mut next = t.clone();
            next.uniques.push(unique.clone());
            Ok(next)
        })
        .await?;
    let index = published.uniques.len() - 1;
    // Other proxies sharing the store learn of the new constraint within one
    // catalog refresh; rows they write after that claim its keys themselves.
    // Scan only then, so the scan sees every row written without a claim.
    if let Some(refresh) = catalog.refresh() {
        tokio::time::sleep(refresh * 2).await;
    }
    match backfill(store, cfg, stats, &published, index, page).await {
        Ok(rows) => {
            info!(index = %unique.name, table, rows, "unique index built");
            Ok(())
        }
        Err(e) => {
            catalog
                .alter(table, |t| {
                    let mut next = t.clone();
                    next.uniques.retain(|u| u.id != unique.id);
                    Ok(next)
                })
                .await?;
            store.drop_claims(&unique.id).await.map_err(store_error)?;
            Err(e)
        }
    }
}

async fn index_exists(catalog: &Catalog, name: &str) -> SqlResult<bool> {
    Ok(catalog
        .all()
        .await?
        .iter()
        .any(|t| t.pkey_name == name || t.uniques.iter().any(|u| u.name == name)))
}

/// Claim the new index's key for every live row, page by page, logging progress.
async fn backfill(
    store: &dyn Store,
    cfg: &ClaimConfig,
    stats: &ClaimStats,
    table: &TableDef,
    index: usize,
    page: usize,
) -> SqlResult<u64> {
    let u = &table.uniques[index];
    let w = RowWrite {
        store,
        cfg,
        stats,
        table,
        deadline: Instant::now() + cfg.lock_timeout,
        stop: None,
        own: None,
        peers: None,
        born_ms: claims::now_ms(),
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
                        .map_err(|e| match e {
                            WriteError::Sql(e) => e,
                            other => SqlError::internal(format!("{other:?}")),
                        })?
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
                    let keys = [claims::KeyClaim { unique: index, key }];
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
