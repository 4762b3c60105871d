//! Finding rows: a point read by primary key, a claim read by unique key,
//! or a paged scan that streams and never holds the table in memory.

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::catalog::{store_error, TableDef};
use crate::error::SqlResult;
use crate::sql::expr::{EvalCtx, Expr};
use crate::sql::plan::{Access, Source};
use crate::store::{RowRecord, Store};
use crate::types::{encode_key, Value};

use super::env::SessionEnv;

/// A row found: its primary-key bytes and its record.
pub type Found = (Vec<u8>, RowRecord);

/// Evaluate pinned key expressions into the key's column types. None when the
/// key cannot match anything (a NULL, or a value outside the column's type).
fn pinned_key(
    table: &TableDef,
    cols: &[usize],
    exprs: &[Expr],
    cx: &EvalCtx<'_>,
) -> SqlResult<Option<Vec<u8>>> {
    let mut values = Vec::with_capacity(exprs.len());
    for (&c, e) in cols.iter().zip(exprs) {
        let v = e.eval(cx)?;
        if v.is_null() {
            return Ok(None);
        }
        match v.cast_to(&table.columns[c].ty) {
            Ok(v) => values.push(v),
            Err(_) => return Ok(None),
        }
    }
    let refs: Vec<&Value> = values.iter().collect();
    Ok(Some(encode_key(&refs)))
}

fn matches(src: &Source, row: &RowRecord, params: &[Value], env: &SessionEnv) -> SqlResult<bool> {
    if !row.live {
        return Ok(false);
    }
    match &src.filter {
        None => Ok(true),
        Some(f) => f.holds(&EvalCtx {
            row: Some(&row.values),
            excluded: None,
            params,
            env,
        }),
    }
}

/// At most one row, by primary key or through a unique key's claim.
pub async fn point(
    store: &dyn Store,
    src: &Source,
    params: &[Value],
    env: &SessionEnv,
) -> SqlResult<Option<Found>> {
    let cx = EvalCtx {
        row: None,
        excluded: None,
        params,
        env,
    };
    let t = &src.table;
    let pk = match &src.access {
        Access::Key(exprs) => match pinned_key(t, &t.primary_key, exprs, &cx)? {
            Some(pk) => pk,
            None => return Ok(None),
        },
        Access::Unique(n, exprs) => {
            let u = &t.uniques[*n];
            let Some(key) = pinned_key(t, &u.columns, exprs, &cx)? else {
                return Ok(None);
            };
            let Some(claim) = store.read_claim(&u.id, &key).await.map_err(store_error)? else {
                return Ok(None);
            };
            // Only a backed claim means the row holds the key.
            let row = store.read_row(t, &claim.owner).await.map_err(store_error)?;
            return Ok(match row {
                Some(r) if r.live && u.key_of(&r.values).as_deref() == Some(&key[..]) => {
                    matches(src, &r, params, env)?.then_some((claim.owner, r))
                }
                _ => None,
            });
        }
        Access::Scan => unreachable!("point() is for pinned keys"),
    };
    let row = store.read_row(t, &pk).await.map_err(store_error)?;
    Ok(match row {
        Some(r) if matches(src, &r, params, env)? => Some((pk, r)),
        _ => None,
    })
}

/// Every live row matching the source, streamed page by page.
pub fn rows(
    store: Arc<dyn Store>,
    src: Source,
    params: Arc<Vec<Value>>,
    env: Arc<SessionEnv>,
    page: usize,
) -> BoxStream<'static, SqlResult<Found>> {
    if !matches!(src.access, Access::Scan) {
        return stream::once(async move { point(store.as_ref(), &src, &params, &env).await })
            .map_ok(|found| stream::iter(found.map(Ok)))
            .try_flatten()
            .boxed();
    }
    let src = Arc::new(src);
    stream::try_unfold(Some(None::<Vec<u8>>), move |cursor| {
        let store = store.clone();
        let src = src.clone();
        let params = params.clone();
        let env = env.clone();
        async move {
            let Some(after) = cursor else {
                return Ok(None);
            };
            let page = store
                .scan_rows(&src.table, after.as_deref(), page)
                .await
                .map_err(store_error)?;
            let mut hits = Vec::new();
            for (pk, row) in page.rows {
                if matches(&src, &row, &params, &env)? {
                    hits.push(Ok((pk, row)));
                }
            }
            Ok(Some((stream::iter(hits), page.next.map(Some))))
        }
    })
    .try_flatten()
    .boxed()
}

/// Collect the matching rows first (UPDATE and DELETE must not see their own writes).
pub async fn collect(
    store: Arc<dyn Store>,
    src: Source,
    params: Arc<Vec<Value>>,
    env: Arc<SessionEnv>,
    page: usize,
) -> SqlResult<Vec<Found>> {
    rows(store, src, params, env, page).try_collect().await
}
