//! `SELECT keyclaim.add_count_limit(table, columns, max_rows [, name])`
//! and `SELECT keyclaim.drop_count_limit(table, name)`: declaring a count
//! limit ("at most max_rows live rows per group of columns"), and giving
//! every row a table already has its slot when it gets one. How a limit
//! is kept is `claims::slots` (design: docs/count_limits.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use tracing::info;

use super::ddl::{self, write_error, Ddl};
use crate::catalog::{storage_id, store_error, CountLimitDef, TableDef};
use crate::claims::{self, RowWrite};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::expr::CountLimitOp;
use crate::types::Value;

/// The most rows a limit may allow: a refusal reads every slot of the
/// group twice, so a limit is for groups of modest size.
pub const MAX_ROWS: i64 = 100_000;

/// Run one call, with its arguments evaluated.
pub(super) async fn call(
    ddl: &Ddl<'_>,
    op: CountLimitOp,
    args: Vec<Value>,
    in_block: bool,
) -> SqlResult<()> {
    if in_block || ddl.open.is_some() {
        return Err(SqlError::new(
            sqlstate::ACTIVE_TRANSACTION,
            format!("{}() cannot run inside a transaction block", op.name()),
        )
        .with_hint("Call it outside BEGIN ... COMMIT: it checks every row of the table."));
    }
    match (op, args.as_slice()) {
        (CountLimitOp::Add, [table, columns, max_rows]) => {
            add(ddl, &text(table)?, &names(columns)?, count(max_rows)?, None).await
        }
        (CountLimitOp::Add, [table, columns, max_rows, name]) => {
            let name = text(name)?;
            add(ddl, &text(table)?, &names(columns)?, count(max_rows)?, Some(name)).await
        }
        (CountLimitOp::Drop, [table, name]) => drop(ddl, &text(table)?, &text(name)?).await,
        (op, _) => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {}() does not exist with {} arguments", op.name(), args.len()),
        )
        .with_hint(match op {
            CountLimitOp::Add => "keyclaim.add_count_limit(table text, columns text[], max_rows integer [, name text])",
            CountLimitOp::Drop => "keyclaim.drop_count_limit(table text, name text)",
        })),
    }
}

fn null_argument() -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        "the arguments of a count limit call must not be null",
    )
}

fn text(v: &Value) -> SqlResult<String> {
    if v.is_null() {
        return Err(null_argument());
    }
    let name = v.to_text().unwrap_or_default();
    Ok(name.strip_prefix("public.").unwrap_or(&name).to_owned())
}

fn names(v: &Value) -> SqlResult<Vec<String>> {
    let items = match v {
        Value::Array(a) => a.items.iter().map(text).collect::<SqlResult<Vec<_>>>()?,
        Value::Null => return Err(null_argument()),
        other => vec![text(other)?],
    };
    if items.is_empty() {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "a count limit needs at least one column",
        ));
    }
    Ok(items)
}

fn count(v: &Value) -> SqlResult<u32> {
    let n = match v.cast_to(&crate::types::SqlType::Int8)? {
        Value::Int8(n) => n,
        _ => return Err(null_argument()),
    };
    if !(0..=MAX_ROWS).contains(&n) {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("max_rows must be between 0 and {MAX_ROWS}, not {n}"),
        ));
    }
    Ok(n as u32)
}

async fn table(ddl: &Ddl<'_>, name: &str) -> SqlResult<Arc<TableDef>> {
    match ddl.lookup(name).await? {
        Some(t) if t.sequence.is_none() => Ok(t),
        Some(_) => Err(SqlError::new(
            sqlstate::WRONG_OBJECT_TYPE,
            format!("\"{name}\" is not a table"),
        )),
        None => Err(SqlError::undefined_table(name)),
    }
}

/// Publish the limit (so that every writer keeps it), then, once every
/// proxy knows it, give each row the table has a slot; a group with more
/// rows than the limit allows takes the limit back and fails as adding a
/// CHECK constraint that existing rows violate does.
async fn add(
    ddl: &Ddl<'_>,
    name: &str,
    columns: &[String],
    max_rows: u32,
    given: Option<String>,
) -> SqlResult<()> {
    let table = table(ddl, name).await?;
    let mut cols = Vec::with_capacity(columns.len());
    for c in columns {
        cols.push(table.column_index(c).ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{c}\" of relation \"{name}\" does not exist"),
            )
        })?);
    }
    let limit_name = given.unwrap_or_else(|| format!("{name}_{}_limit", columns.join("_")));
    if table.constraint_names().any(|n| n == limit_name) {
        return Err(ddl::constraint_exists(&limit_name, name));
    }
    let limit = CountLimitDef {
        id: storage_id(&limit_name),
        name: limit_name,
        columns: cols,
        limit: max_rows,
    };
    let change = |next: &mut TableDef, keep: bool| {
        next.count_limits.retain(|l| l.id != limit.id);
        if keep {
            next.count_limits.push(limit.clone());
        }
    };
    let placed = ddl
        .publish_checked(name, change, |published| {
            let limit = &limit;
            async move { place_rows(ddl, &published, limit).await }
        })
        .await;
    match placed {
        Ok(rows) => {
            info!(limit = %limit.name, table = name, rows, max_rows, "count limit added");
            Ok(())
        }
        Err(e) => {
            let _ = ddl.store.drop_claims(&limit.id).await;
            Err(e)
        }
    }
}

/// Give every live row of `table` that belongs to a group of `limit` a
/// slot, page by page, logging progress: each such row is written again
/// with its values unchanged, which takes the slot as any write does.
async fn place_rows(ddl: &Ddl<'_>, table: &TableDef, limit: &CountLimitDef) -> SqlResult<u64> {
    let (store, cfg, page) = (ddl.store, ddl.claims, ddl.page);
    let w = RowWrite {
        born_ms: claims::now_ms(),
        ..ddl.waiter(table)
    };
    let mut rows = 0u64;
    let mut last_log = Instant::now();
    let mut cursor: Option<Vec<u8>> = None;
    loop {
        let batch = store
            .scan_rows(table, cursor.as_deref(), page)
            .await
            .map_err(store_error)?;
        futures::stream::iter(batch.rows.iter().map(Ok::<_, SqlError>))
            .try_for_each_concurrent(16, |(pk, row)| {
                let w = RowWrite {
                    deadline: Instant::now() + cfg.lock_timeout,
                    ..w
                };
                async move {
                    let placed = |cur: &crate::store::RowRecord| {
                        limit.group_of(&cur.values).is_none()
                            || limit.slot_in(&cur.claims).is_some()
                    };
                    // A row an open transaction writes is waited for, as
                    // PostgreSQL's ADD CONSTRAINT waits for writers.
                    let observed = (row.intent.is_none()).then(|| Some(row.clone()));
                    claims::update_row(&w, pk, observed, |cur| {
                        Ok((!placed(cur)).then(|| cur.values.clone()))
                    })
                    .await
                    .map_err(|e| violated(write_error(e), limit, table, &row.values))?;
                    Ok(())
                }
            })
            .await?;
        rows += batch.rows.len() as u64;
        if last_log.elapsed() > Duration::from_secs(5) {
            info!(table = %table.name, limit = %limit.name, rows, "adding count limit");
            last_log = Instant::now();
        }
        match batch.next {
            Some(next) => cursor = Some(next),
            None => return Ok(rows),
        }
    }
}

/// A full group met while placing existing rows: PostgreSQL's words for a
/// CHECK constraint that existing rows violate.
fn violated(e: SqlError, limit: &CountLimitDef, table: &TableDef, row: &[Value]) -> SqlError {
    if e.code != sqlstate::CHECK_VIOLATION {
        return e;
    }
    let detail = limit.group_of(row).map(|group| {
        format!(
            "{} has more than {} rows.",
            crate::types::key_detail(&table.column_names(&limit.columns), &group),
            limit.limit
        )
    });
    SqlError::new(
        sqlstate::CHECK_VIOLATION,
        format!(
            "count limit \"{}\" of relation \"{}\" is violated by some row",
            limit.name, table.name
        ),
    )
    .with_detail(detail.or(e.detail).unwrap_or_default())
    .with_table(&table.name)
    .with_constraint(limit.name.clone())
}

/// Take the limit off the table; its slot claims go with it.
async fn drop(ddl: &Ddl<'_>, name: &str, limit_name: &str) -> SqlResult<()> {
    let table = table(ddl, name).await?;
    let Some(limit) = table.count_limits.iter().find(|l| l.name == limit_name) else {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("count limit \"{limit_name}\" of relation \"{name}\" does not exist"),
        ));
    };
    let id = limit.id.clone();
    ddl.change(name, |current| {
        let mut next = TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(name))?);
        next.count_limits.retain(|l| l.id != id);
        Ok(Some(next))
    })
    .await?;
    // The limit is gone from here on; claims left behind by a failed drop
    // are never read again (a new limit gets a new id).
    if let Err(e) = ddl.store.drop_claims(&id).await {
        tracing::warn!(limit = limit_name, table = name, error = %e, "a dropped count limit's slot claims were not removed");
    }
    info!(limit = limit_name, table = name, "count limit dropped");
    Ok(())
}
