//! TRUNCATE: every table named gets fresh storage, and its UNIQUE
//! constraints and count limits fresh claim ids, through a change of its
//! definition. The statement runs as a transaction (inside a block, as
//! part of it), so the tables are emptied together at its COMMIT or not
//! at all, and the storage the losing definitions name is removed when it
//! is decided (`ddl::finish`). RESTART IDENTITY gives each sequence the
//! tables own a fresh counter the same way.

use std::sync::Arc;

use super::ddl::{command, notice, Ddl};
use super::Executed;
use crate::catalog::{storage_id, store_error, TableDef};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::ddl::Truncate;

pub async fn truncate(ddl: &Ddl<'_>, plan: &Truncate) -> SqlResult<Executed> {
    let mut tables = named_tables(ddl, &plan.names).await?;
    let notices = referencing_tables(ddl, &mut tables, plan.cascade).await?;
    // Its rows are in a CQL table keyclaim did not create, which fresh
    // storage would not empty (a table CASCADE reaches included).
    if let Some(t) = tables.iter().find(|t| t.cql_table.is_some()) {
        return Err(SqlError::unsupported(
            format!(
                "TRUNCATE of the adopted table \"{}\" is not supported",
                t.name
            ),
            "truncate the CQL table itself (cqlsh TRUNCATE), then restart the proxies",
        ));
    }
    for t in &tables {
        empty(ddl, t).await?;
    }
    if plan.restart_identity {
        let mut owned = Vec::new();
        for t in &tables {
            owned.extend(ddl.owned_sequences(t, 0..t.columns.len()).await?);
        }
        for seq in owned {
            ddl.change(&seq, |current| {
                let mut next =
                    TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&seq))?);
                if let Some(s) = next.sequence.as_mut() {
                    s.counter = storage_id("seq");
                }
                Ok(Some(next))
            })
            .await?;
        }
    }
    Ok(command("TRUNCATE TABLE", notices))
}

/// The tables named, each once; 42P01 for a missing one, 42809 for a
/// sequence.
async fn named_tables(ddl: &Ddl<'_>, names: &[String]) -> SqlResult<Vec<Arc<TableDef>>> {
    let mut tables: Vec<Arc<TableDef>> = Vec::new();
    for name in names {
        let t = ddl
            .lookup(name)
            .await?
            .ok_or_else(|| SqlError::undefined_table(name))?;
        if t.sequence.is_some() {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a table"),
            ));
        }
        if !tables.iter().any(|x| x.name == t.name) {
            tables.push(t);
        }
    }
    Ok(tables)
}

/// A table whose foreign key references one being emptied must be emptied
/// too (else its rows would reference nothing): with CASCADE it joins
/// them, with a NOTICE; without, PostgreSQL's 0A000.
async fn referencing_tables(
    ddl: &Ddl<'_>,
    tables: &mut Vec<Arc<TableDef>>,
    cascade: bool,
) -> SqlResult<Vec<crate::engine::Notice>> {
    let mut notices = Vec::new();
    let mut i = 0;
    while i < tables.len() {
        let parent = tables[i].clone();
        for inbound in &parent.referenced_by {
            if tables.iter().any(|t| t.name == inbound.table) {
                continue;
            }
            let Some(child) = ddl.settled(&inbound.table).await? else {
                continue;
            };
            let references = child
                .foreign_key(&inbound.constraint)
                .is_some_and(|fk| fk.ref_table == parent.name);
            if !references {
                continue;
            }
            if !cascade {
                return Err(SqlError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    "cannot truncate a table referenced in a foreign key constraint",
                )
                .with_detail(format!(
                    "Table \"{}\" references \"{}\".",
                    child.name, parent.name
                ))
                .with_hint(format!(
                    "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                    child.name
                )));
            }
            notices.push(notice(
                "00000",
                format!("truncate cascades to table \"{}\"", child.name),
            ));
            tables.push(child);
        }
        i += 1;
    }
    Ok(notices)
}

/// Point the table at fresh, empty storage; its storage exists before the
/// catalog names it, and goes again if the change is not made.
async fn empty(ddl: &Ddl<'_>, table: &TableDef) -> SqlResult<()> {
    let fresh = fresh_storage(table);
    ddl.store.create_table(&fresh).await.map_err(store_error)?;
    let changed = ddl
        .change_naming(&fresh.id, &table.name, |current| {
            // Emptied by another transaction meanwhile, it is emptied
            // again: the rows it holds now are the ones to drop.
            let current = current.ok_or_else(|| SqlError::undefined_table(&table.name))?;
            Ok(Some(TableDef {
                id: fresh.id.clone(),
                uniques: fresh.uniques.clone(),
                count_limits: fresh.count_limits.clone(),
                ..TableDef::clone(current)
            }))
        })
        .await;
    if let Err(e) = changed {
        if e.code != sqlstate::STATEMENT_COMPLETION_UNKNOWN {
            ddl.store.drop_table(&fresh).await.map_err(store_error)?;
        }
        return Err(e);
    }
    Ok(())
}

/// The table with new storage ids for its rows and its claims.
fn fresh_storage(table: &TableDef) -> TableDef {
    let mut fresh = crate::sql::ddl::with_storage_ids(table.clone());
    for l in &mut fresh.count_limits {
        l.id = storage_id(&l.name);
    }
    fresh
}
