//! CREATE INDEX (not UNIQUE): a plain index (`claims::index`), published
//! so that every writer keeps its entries, then built over the rows
//! already there, and read by lookups only once built.

use std::time::{Duration, Instant};

use tracing::info;

use super::ddl::{command, hold_for_row_checks, index_name, Ddl};
use super::Executed;
use crate::catalog::{storage_id, store_error, IndexDef, TableDef};
use crate::claims::index::build_entries;
use crate::error::{SqlError, SqlResult};
use crate::sql::ddl::CreateIndex;
use crate::store::{RowRecord, Store, StoreResult};
use crate::types::Value;

/// Rows whose entries are added at once during a build.
const IN_FLIGHT: usize = 16;

/// CREATE INDEX: publish the index as building (every writer adds its
/// rows' entries from then on), give every row already there its entries
/// once every proxy keeps it, then mark it built. A failure takes it back
/// and removes its entries; nothing is left half-built.
///
/// Inside a block it is part of the block's pending change; on a table
/// others can write, the block holds it until it ends
/// (`hold_for_row_checks`), so that no row is written without its entry.
pub(super) async fn create(
    ddl: &Ddl<'_>,
    plan: &CreateIndex,
    table: &TableDef,
) -> SqlResult<Executed> {
    let mut cols = Vec::with_capacity(plan.columns.len());
    for c in &plan.columns {
        cols.push(table.column(c)?);
    }
    let name = match index_name(ddl, plan, table).await? {
        Ok(name) => name,
        Err(skipped) => return Ok(skipped),
    };
    hold_for_row_checks(ddl, &table.name, "CREATE INDEX").await?;
    let index = IndexDef {
        id: storage_id(&name),
        name,
        columns: cols,
        building: true,
    };
    let edit = |next: &mut TableDef, keep: bool| {
        next.indexes.retain(|i| i.id != index.id);
        if keep {
            next.indexes.push(index.clone());
        }
    };
    let index = &index;
    let built = ddl
        .publish_checked(&table.name, edit, |published| async move {
            build(ddl, &published, index).await
        })
        .await;
    let rows = match built {
        Ok(rows) => rows,
        Err(e) => {
            ddl.store.drop_index(&index.id).await.map_err(store_error)?;
            return Err(e);
        }
    };
    ddl.change(&table.name, |current| {
        let current = current.ok_or_else(|| SqlError::undefined_table(&table.name))?;
        let mut next = TableDef::clone(current);
        for i in next.indexes.iter_mut().filter(|i| i.id == index.id) {
            i.building = false;
        }
        Ok(Some(next))
    })
    .await?;
    info!(index = %index.name, table = %table.name, rows, "index built");
    Ok(command("CREATE INDEX", Vec::new()))
}

/// Give every row of `table` the entries of `index` for each state it has
/// (committed, the one before, a pending intent's), page by page, logging
/// progress. Entries of states no statement shows cost only reads.
async fn build(ddl: &Ddl<'_>, table: &TableDef, index: &IndexDef) -> SqlResult<u64> {
    let store = ddl.store;
    let mut rows = 0u64;
    let mut last_log = Instant::now();
    let mut cursor: Option<Vec<u8>> = None;
    loop {
        let page = store
            .scan_rows(table, cursor.as_deref(), ddl.page)
            .await
            .map_err(store_error)?;
        for chunk in page.rows.chunks(IN_FLIGHT) {
            let writes = chunk
                .iter()
                .map(|(pk, row)| row_entries(store, index, pk, row));
            futures::future::try_join_all(writes)
                .await
                .map_err(store_error)?;
        }
        rows += page.rows.len() as u64;
        if last_log.elapsed() > Duration::from_secs(5) {
            info!(table = %table.name, index = %index.name, rows, "building index");
            last_log = Instant::now();
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(rows),
        }
    }
}

/// The entries of `index` for each state row `pk` has.
async fn row_entries(
    store: &dyn Store,
    index: &IndexDef,
    pk: &[u8],
    row: &RowRecord,
) -> StoreResult<()> {
    let committed = row.live.then_some(row.values.as_slice());
    let prev = row.prev.as_ref().filter(|p| p.live);
    let intent = row.intent.as_ref().filter(|i| i.live);
    let states: Vec<&[Value]> = committed
        .into_iter()
        .chain(prev.map(|p| p.values.as_slice()))
        .chain(intent.map(|i| i.values.as_slice()))
        .collect();
    build_entries(store, index, pk, &states).await
}
