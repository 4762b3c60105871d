//! SELECT ... FOR UPDATE (and FOR NO KEY UPDATE, FOR SHARE, FOR KEY
//! SHARE, which take the same lock): row locks (docs/transactions.md,
//! "Row locks").
//!
//! The rows are found as any SELECT finds them, sorted (if ORDER BY asks),
//! and locked one by one in result order until LIMIT (plus OFFSET) rows are
//! held, so rows left out do not count against the LIMIT: inside a
//! block each lock is an intent of the block's transaction carrying the
//! row's values unchanged (`claims::lock_row`), so other writers wait for
//! the block to end; outside a block the lock would end with the statement,
//! so a row is only waited for. A row another transaction holds is waited
//! for, fails the statement (NOWAIT) or is left out (SKIP LOCKED); after a
//! wait the WHERE is checked again on the row as it then stands, and a row
//! that no longer passes is left out, as PostgreSQL does in READ COMMITTED.

use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};

use super::ctx::StmtCtx;
use super::select::{compare_keys, project};
use super::{read, Column, Outcome};
use crate::claims::{self, IfBusy, Locked, WriteError};
use crate::error::{SqlError, SqlResult};
use crate::sql::expr::{EvalCtx, Expr};
use crate::sql::locking::LockWait;
use crate::sql::plan::{RowLock, SelectPlan, Source};
use crate::stop::{self, Stop};
use crate::types::Value;

/// Run a locking SELECT of `exprs` from `source`; its rows come back
/// under the tag SELECT, all locked before the first is sent.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    ctx: &StmtCtx<'_>,
    plan: &SelectPlan,
    source: &Source,
    exprs: &[Expr],
    lock: RowLock,
    limit: Option<usize>,
    offset: usize,
    columns: Arc<Vec<Column>>,
) -> SqlResult<Outcome> {
    let mut found = read::rows(
        ctx.store.clone(),
        ctx.reads.clone(),
        source.clone(),
        ctx.params.clone(),
        ctx.env.clone(),
        ctx.scan_page,
    );
    // Sorted, every row is found before the first is locked; unsorted,
    // rows are locked as the scan finds them, and it stops at the LIMIT.
    if !plan.order_by.is_empty() {
        let mut keyed = Vec::new();
        while let Some((pk, row)) = found.try_next().await? {
            let c = eval_ctx(ctx, &row.values);
            let keys = plan
                .order_by
                .iter()
                .map(|k| k.expr.eval(&c))
                .collect::<SqlResult<Vec<_>>>()?;
            keyed.push((keys, (pk, row)));
        }
        keyed.sort_by(|a, b| compare_keys(&a.0, &b.0, &plan.order_by));
        found = stream::iter(keyed.into_iter().map(|(_, f)| Ok(f))).boxed();
    }
    let wanted = limit.map(|l| l.saturating_add(offset));
    let if_busy = match lock.wait {
        LockWait::Wait => IfBusy::Wait,
        LockWait::Skip => IfBusy::Skip,
        LockWait::Fail => IfBusy::Fail,
    };
    let w = ctx.row_write(&source.table);
    // Inside a block locks are writes: an interrupt stops them at a safe
    // point, and the block takes back what the statement locked.
    let _writing = ctx.open.as_ref().and(ctx.stop).map(Stop::writing);
    let mut held: Vec<Vec<Value>> = Vec::new();
    while wanted.is_none_or(|n| held.len() < n) {
        let Some((pk, row)) = found.try_next().await? else {
            break;
        };
        stop::check(ctx.stop)?;
        // A row found without an intent is the partition as read: lock
        // from it, without reading it again.
        let observed = row.intent.is_none().then_some(Some(row));
        let locked = claims::lock_row(&w, &pk, observed, if_busy, |cur| {
            Ok(qualifies(ctx, &source.filter, &cur.values)?)
        })
        .await
        .map_err(|e| match e {
            WriteError::Sql(e) => e,
            // A lock changes no key.
            other => SqlError::internal(format!("a row lock met a key conflict: {other:?}")),
        })?;
        match locked {
            Locked::Written(write) => {
                let values = write.after().map(|r| r.values).unwrap_or_default();
                ctx.logged(&w, &pk, write);
                held.push(values);
            }
            Locked::Held(row) => held.push(row.values),
            Locked::Gone | Locked::Skipped => {}
        }
    }
    // Projected now, so that an error fails the statement (and the block
    // takes back its locks) rather than the stream.
    let rows = held
        .iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
        .map(|values| project(exprs, Some(values), &ctx.params, &ctx.env))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok(Outcome::Rows {
        columns,
        rows: stream::iter(rows.into_iter().map(Ok)).boxed(),
        tag: "SELECT".into(),
    })
}

fn eval_ctx<'a>(ctx: &'a StmtCtx<'_>, row: &'a [Value]) -> EvalCtx<'a> {
    EvalCtx {
        row: Some(row),
        excluded: None,
        params: &ctx.params,
        env: ctx.env.as_ref(),
    }
}

fn qualifies(ctx: &StmtCtx<'_>, filter: &Option<Expr>, row: &[Value]) -> SqlResult<bool> {
    match filter {
        None => Ok(true),
        Some(f) => f.holds(&eval_ctx(ctx, row)),
    }
}
