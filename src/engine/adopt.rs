//! Adopting existing CQL tables (`[[store.adopt]]`): register each in the
//! catalog pointing at its CQL table, then build its UNIQUE constraints as
//! CREATE UNIQUE INDEX builds an index: publish, claim every row's key,
//! and refuse (23505, naming a duplicated key) if the data already breaks it.

use tracing::info;

use super::ddl::{add_unique, Ddl};
use crate::catalog::{naming, storage_id, ColumnDef, Entry, TableDef, UniqueDef};
use crate::config::AdoptConfig;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::store::StoreError;

/// Adoption runs at startup, outside any transaction (`ddl.open` is None).
pub(crate) async fn adopt(ddl: &Ddl<'_>, entry: &AdoptConfig) -> SqlResult<()> {
    let catalog = ddl.catalog;
    let mut def = match catalog.lookup(&entry.table, None).await? {
        Some(def) if def.cql_table.as_deref() == Some(entry.cql_table.as_str()) => def,
        Some(_) => {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_TABLE,
                format!(
                    "relation \"{}\" already exists and is not the CQL table {}",
                    entry.table, entry.cql_table
                ),
            ))
        }
        None => register(ddl, entry).await?,
    };
    for columns in &entry.unique {
        let cols = columns
            .iter()
            .map(|c| def.column(c))
            .collect::<SqlResult<Vec<usize>>>()?;
        if def.uniques.iter().any(|u| u.columns == cols) {
            continue;
        }
        let names: Vec<&str> = columns.iter().map(String::as_str).collect();
        let name = naming::unique_name(&def.name, &names, def.constraint_names());
        info!(table = %def.name, constraint = %name, "adopting: claiming the keys of existing rows");
        let unique = UniqueDef {
            id: storage_id(&name),
            name,
            columns: cols,
            nulls_not_distinct: false,
            is_index: false,
            primary: false,
            predicate: None,
            building: false,
        };
        add_unique(ddl, &def.name, unique).await?;
        def = catalog.table(&entry.table, None).await?;
    }
    Ok(())
}

/// Reads the CQL table's shape (adding the hidden columns) and publishes it.
async fn register(ddl: &Ddl<'_>, entry: &AdoptConfig) -> SqlResult<std::sync::Arc<TableDef>> {
    let foreign = ddl
        .store
        .adopt_table(&entry.cql_table)
        .await
        .map_err(|e| match e {
            // The table cannot be served as it is: say why, not "unavailable".
            StoreError::Unavailable(why) => SqlError::new(sqlstate::FEATURE_NOT_SUPPORTED, why),
            e => crate::catalog::store_error(e),
        })?;
    let columns = foreign
        .columns
        .iter()
        .enumerate()
        .map(|(i, (name, ty))| ColumnDef {
            not_null: foreign.primary_key.contains(&i),
            ..ColumnDef::new(name, ty.clone())
        })
        .collect();
    let def = TableDef {
        pkey_name: naming::pkey_name(&entry.table),
        cql_table: Some(entry.cql_table.clone()),
        ..TableDef::new(
            &entry.table,
            &storage_id(&entry.table),
            columns,
            foreign.primary_key.clone(),
        )
    };
    // Another proxy adopting at the same moment wins; use its entry.
    ddl.catalog
        .write(&entry.table, None, Some(&Entry::committed(def.into())))
        .await?;
    info!(table = %entry.table, cql_table = %entry.cql_table, "adopted an existing CQL table");
    ddl.catalog.table(&entry.table, None).await
}
