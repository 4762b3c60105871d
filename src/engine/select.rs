//! SELECT: find rows, filter, sort, limit, project; stream when unsorted.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt, TryStreamExt};

use super::ctx::StmtCtx;
use super::env::SessionEnv;
use super::{read, Column, Outcome, RowStream};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::expr::{EvalCtx, Expr};
use crate::sql::plan::{Aggregate, Output, SelectPlan, SortKey};
use crate::types::Value;

fn cx<'a>(row: Option<&'a [Value]>, params: &'a [Value], env: &'a SessionEnv) -> EvalCtx<'a> {
    EvalCtx {
        row,
        excluded: None,
        params,
        env,
    }
}

pub fn project(
    exprs: &[Expr],
    row: Option<&[Value]>,
    params: &[Value],
    env: &SessionEnv,
) -> SqlResult<Vec<Value>> {
    let c = cx(row, params, env);
    exprs.iter().map(|e| e.eval(&c)).collect()
}

/// LIMIT / OFFSET as row counts (negative is an error, as in PostgreSQL).
fn count_arg(
    e: &Option<Expr>,
    params: &[Value],
    env: &SessionEnv,
    what: &str,
) -> SqlResult<Option<usize>> {
    let Some(e) = e else { return Ok(None) };
    let v = e.eval(&cx(None, params, env))?;
    if v.is_null() {
        return Ok(None);
    }
    let n = match v.cast_to(&crate::types::SqlType::Int8)? {
        Value::Int8(n) => n,
        _ => 0,
    };
    if n < 0 {
        let code = if what == "LIMIT" {
            sqlstate::INVALID_ROW_COUNT_IN_LIMIT
        } else {
            sqlstate::INVALID_ROW_COUNT_IN_OFFSET
        };
        return Err(SqlError::new(code, format!("{what} must not be negative")));
    }
    Ok(Some(n as usize))
}

pub(crate) async fn run(
    ctx: &StmtCtx<'_>,
    plan: &SelectPlan,
    columns: Arc<Vec<Column>>,
) -> SqlResult<Outcome> {
    let (store, params, env, page) = (
        ctx.store.clone(),
        ctx.params.clone(),
        ctx.env.clone(),
        ctx.scan_page,
    );
    if let Some(secs) = &plan.sleep {
        let s = secs.eval(&cx(None, &params, &env))?;
        let s = match s.cast_to(&crate::types::SqlType::Float8)? {
            Value::Float8(f) if f > 0.0 => f,
            _ => 0.0,
        };
        tokio::time::sleep(Duration::from_secs_f64(s.min(86_400.0))).await;
    }
    let limit = count_arg(&plan.limit, &params, &env, "LIMIT")?;
    let offset = count_arg(&plan.offset, &params, &env, "OFFSET")?.unwrap_or(0);
    let Some(source) = &plan.source else {
        // SELECT without FROM: one row.
        let rows: Vec<SqlResult<Vec<Value>>> = match &plan.output {
            Output::Rows(exprs) => vec![project(exprs, None, &params, &env)],
            Output::Aggregates(aggs) => vec![Ok(aggs.iter().map(|_| Value::Int8(1)).collect())],
        };
        let rows = rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX));
        return Ok(rows_outcome(
            columns,
            stream::iter(rows.collect::<Vec<_>>()).boxed(),
        ));
    };
    // A locking SELECT locks its rows before answering.
    if let (Some(lock), Output::Rows(exprs)) = (plan.lock, &plan.output) {
        let run = super::lock::run(ctx, plan, source, exprs, lock, limit, offset, columns);
        return run.await;
    }
    // A point lookup reads now, within the statement; scans stream as the
    // client takes rows.
    let found = if source.access.is_point() {
        let one = read::point(store.as_ref(), &ctx.reads, source, &params, &env).await?;
        stream::iter(one.map(Ok)).boxed()
    } else {
        read::rows(
            store,
            ctx.reads.clone(),
            source.clone(),
            params.clone(),
            env.clone(),
            page,
        )
    };
    match &plan.output {
        Output::Aggregates(aggs) => {
            let mut counts = vec![0i64; aggs.len()];
            let mut found = found;
            while let Some((_, row)) = found.try_next().await? {
                for (n, agg) in aggs.iter().enumerate() {
                    let counted = match agg {
                        Aggregate::CountStar => true,
                        Aggregate::Count(e) => {
                            !e.eval(&cx(Some(&row.values), &params, &env))?.is_null()
                        }
                    };
                    counts[n] += counted as i64;
                }
            }
            let row: Vec<Value> = counts.into_iter().map(Value::Int8).collect();
            let rows: Vec<SqlResult<Vec<Value>>> = std::iter::once(Ok(row))
                .skip(offset)
                .take(limit.unwrap_or(usize::MAX))
                .collect();
            Ok(rows_outcome(columns, stream::iter(rows).boxed()))
        }
        Output::Rows(exprs) if plan.order_by.is_empty() => {
            let exprs = Arc::new(exprs.clone());
            let rows = found
                .skip(offset)
                .take(limit.unwrap_or(usize::MAX))
                .map(move |r| {
                    r.and_then(|(_, row)| project(&exprs, Some(&row.values), &params, &env))
                });
            Ok(rows_outcome(columns, rows.boxed()))
        }
        Output::Rows(exprs) => {
            let sorted = sort(
                found,
                &plan.order_by,
                &params,
                &env,
                limit.map(|l| l + offset),
            )
            .await?;
            let out: Vec<SqlResult<Vec<Value>>> = sorted
                .into_iter()
                .skip(offset)
                .take(limit.unwrap_or(usize::MAX))
                .map(|row| project(exprs, Some(&row), &params, &env))
                .collect();
            Ok(rows_outcome(columns, stream::iter(out).boxed()))
        }
    }
}

fn rows_outcome(columns: Arc<Vec<Column>>, rows: RowStream) -> Outcome {
    Outcome::Rows {
        columns,
        rows,
        tag: "SELECT".into(),
    }
}

/// Sort the source rows by the ORDER BY keys. With a LIMIT only the first
/// `keep` rows are kept at any time, so memory stays bounded by the limit.
async fn sort(
    mut found: futures::stream::BoxStream<'static, SqlResult<read::Found>>,
    keys: &[SortKey],
    params: &[Value],
    env: &SessionEnv,
    keep: Option<usize>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    let cmp =
        |a: &(Vec<Value>, Vec<Value>), b: &(Vec<Value>, Vec<Value>)| compare_keys(&a.0, &b.0, keys);
    while let Some((_, row)) = found.try_next().await? {
        let c = cx(Some(&row.values), params, env);
        let k = keys
            .iter()
            .map(|k| k.expr.eval(&c))
            .collect::<SqlResult<Vec<_>>>()?;
        rows.push((k, row.values));
        if let Some(keep) = keep {
            if rows.len() >= keep.max(1) * 2 + 64 {
                rows.sort_by(cmp);
                rows.truncate(keep);
            }
        }
    }
    rows.sort_by(cmp);
    if let Some(keep) = keep {
        rows.truncate(keep);
    }
    Ok(rows.into_iter().map(|(_, v)| v).collect())
}

pub(super) fn compare_keys(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if k.nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if k.nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, false) => {
                let o = x.sql_cmp(y).unwrap_or(Ordering::Equal);
                if k.desc {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}
