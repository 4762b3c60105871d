//! Finding rows: a point read by primary key, a claim read by unique key,
//! the same for each item of a key list, a plain index's entries and a row
//! read for each, or a paged scan that streams and never holds the table
//! in memory.

use std::borrow::{Borrow, Cow};
use std::collections::BTreeSet;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::catalog::{store_error, TableDef};
use crate::claims::read_view::ReadView;
use crate::error::SqlResult;
use crate::sql::expr::{EvalCtx, Expr};
use crate::sql::plan::{Access, Keys, Source};
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
    let values = exprs
        .iter()
        .map(|e| e.operand(cx))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok(key_of(table, cols, &values))
}

/// The key bytes of `values` in the key's column types; None as for
/// `pinned_key`. A numeric typmod is left out: `WHERE k = 1.005` compares
/// with numeric(5,2)'s 1.01 unrounded, so it finds nothing.
fn key_of<V: Borrow<Value>>(table: &TableDef, cols: &[usize], values: &[V]) -> Option<Vec<u8>> {
    let mut typed = Vec::with_capacity(values.len());
    for (&c, v) in cols.iter().zip(values) {
        let v = v.borrow();
        if v.is_null() {
            return None;
        }
        typed.push(
            v.cast_cow(&table.columns[c].ty.without_numeric_typmod())
                .ok()?,
        );
    }
    Some(encode_key(&typed))
}

/// The values a key list names: each item's, or each element of the array.
fn listed_values(keys: &Keys, cx: &EvalCtx<'_>) -> SqlResult<Vec<Value>> {
    match keys {
        Keys::Each(items) => items.iter().map(|e| e.eval(cx)).collect(),
        Keys::Elements(array) => Ok(match array.eval(cx)? {
            Value::Array(a) => a.items,
            // NULL (or anything the filter will refuse): no keys.
            _ => Vec::new(),
        }),
    }
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

/// Reads of a key list in flight at once.
const LIST_READS: usize = 16;

/// Which key a point read goes by.
#[derive(Clone, Copy)]
enum By {
    Primary,
    Unique(usize),
}

/// The row holding `key`, filter not applied: by primary key one read;
/// by unique key the claim, then its owner row, counted only if backed.
async fn read_by(
    store: &dyn Store,
    view: &ReadView,
    t: &TableDef,
    by: By,
    key: Vec<u8>,
) -> SqlResult<Option<Found>> {
    let pk = match by {
        By::Primary => key,
        By::Unique(n) => {
            let u = &t.uniques[n];
            view.fetching();
            let Some(claim) = store.read_claim(&u.id, &key).await.map_err(store_error)? else {
                view.mark_read();
                return Ok(None);
            };
            let row = visible(store, view, t, &claim.owner).await?;
            // Only a backed claim means the row holds the key.
            return Ok(row
                .filter(|r| u.backed_by(&key, r))
                .map(|r| (claim.owner, r)));
        }
    };
    let row = visible(store, view, t, &pk).await?;
    Ok(row.map(|r| (pk, r)))
}

/// The primary key of the row holding unique key `unique` of `values`, as
/// this statement sees the rows (ON CONFLICT looks for its arbiter's
/// conflict this way).
pub(crate) async fn holder(
    store: &dyn Store,
    view: &ReadView,
    t: &TableDef,
    unique: usize,
    values: &[Value],
) -> SqlResult<Option<Vec<u8>>> {
    let Some(key) = t.uniques[unique].key_of(values) else {
        return Ok(None);
    };
    Ok(read_by(store, view, t, By::Unique(unique), key)
        .await?
        .map(|(pk, _)| pk))
}

/// The row whose columns `cols` (the primary key's or a UNIQUE
/// constraint's, in any order) hold `values`, as this statement sees the
/// rows: one row read, or a claim read and its owner row. None when no
/// live row does, or when the columns are no key (`values` are cast into
/// the columns' types; a value outside a type matches nothing).
pub(crate) async fn by_columns(
    store: &dyn Store,
    view: &ReadView,
    t: &TableDef,
    cols: &[usize],
    values: &[Value],
) -> SqlResult<Option<Found>> {
    // The values in the key's own column order.
    let in_order = |key_cols: &[usize]| -> Option<Vec<&Value>> {
        if key_cols.len() != cols.len() {
            return None;
        }
        key_cols
            .iter()
            .map(|k| cols.iter().position(|c| c == k).map(|j| &values[j]))
            .collect()
    };
    let stored_by = t.key_columns();
    if let Some(v) = in_order(&stored_by) {
        let Some(key) = key_of(t, &stored_by, &v) else {
            return Ok(None);
        };
        return read_by(store, view, t, By::Primary, key).await;
    }
    for (n, u) in t.uniques.iter().enumerate().filter(|(_, u)| u.is_whole()) {
        if let Some(v) = in_order(&u.columns) {
            let Some(key) = key_of(t, &u.columns, &v) else {
                return Ok(None);
            };
            return read_by(store, view, t, By::Unique(n), key).await;
        }
    }
    Ok(None)
}

/// Row `pk` as this statement sees it (`ReadView`); None when absent or dead.
async fn visible(
    store: &dyn Store,
    view: &ReadView,
    t: &TableDef,
    pk: &[u8],
) -> SqlResult<Option<RowRecord>> {
    view.fetching();
    let row = store.read_row(t, pk).await.map_err(store_error)?;
    view.visible(store, row, || store.read_row(t, pk)).await
}

/// The key a point access reads by, and its columns.
fn key_of_access<'t>(t: &'t TableDef, access: &Access) -> (By, Cow<'t, [usize]>) {
    match access {
        Access::Key(_) | Access::KeyList(_) => (By::Primary, t.key_columns()),
        Access::Unique(n, _) | Access::UniqueList(n, _) => {
            (By::Unique(*n), Cow::Borrowed(&t.uniques[*n].columns))
        }
        Access::Index(..) | Access::IndexList(..) | Access::Scan => {
            unreachable!("only keys are read by key")
        }
    }
}

/// The row holding `key`, if it also matches the source's filter.
async fn read_matching(
    store: &dyn Store,
    view: &ReadView,
    src: &Source,
    by: By,
    key: Vec<u8>,
    params: &[Value],
    env: &SessionEnv,
) -> SqlResult<Option<Found>> {
    Ok(match read_by(store, view, &src.table, by, key).await? {
        Some((pk, r)) if matches(src, &r, params, env)? => Some((pk, r)),
        _ => None,
    })
}

/// At most one row, by primary key or through a unique key's claim.
pub async fn point(
    store: &dyn Store,
    view: &ReadView,
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
    let (Access::Key(exprs) | Access::Unique(_, exprs)) = &src.access else {
        unreachable!("point() is for pinned keys")
    };
    let (by, cols) = key_of_access(t, &src.access);
    let Some(key) = pinned_key(t, &cols, exprs, &cx)? else {
        return Ok(None);
    };
    read_matching(store, view, src, by, key, params, env).await
}

/// What the reads of one source need, shared by those in flight.
#[derive(Clone)]
struct Reading {
    store: Arc<dyn Store>,
    view: Arc<ReadView>,
    src: Arc<Source>,
    params: Arc<Vec<Value>>,
    env: Arc<SessionEnv>,
}

/// The distinct keys, in columns `cols`, that a key list names; a value
/// outside the columns' types names none.
fn listed_keys(
    table: &TableDef,
    cols: &[usize],
    items: &Keys,
    cx: &EvalCtx<'_>,
) -> SqlResult<BTreeSet<Vec<u8>>> {
    Ok(listed_values(items, cx)?
        .into_iter()
        .filter_map(|v| key_of(table, cols, &[v]))
        .collect())
}

/// The rows of a key list (`key IN (...)`): each distinct key read once,
/// a few at a time, in key order (the order a scan would give).
fn listed(r: Reading) -> BoxStream<'static, SqlResult<Found>> {
    let (Access::KeyList(items) | Access::UniqueList(_, items)) = &r.src.access else {
        unreachable!("listed() is for key lists")
    };
    let (by, cols) = key_of_access(&r.src.table, &r.src.access);
    let cx = EvalCtx {
        row: None,
        excluded: None,
        params: &r.params,
        env: r.env.as_ref(),
    };
    let keys = match listed_keys(&r.src.table, &cols, items, &cx) {
        Ok(keys) => keys,
        Err(e) => return stream::once(async { Err(e) }).boxed(),
    };
    stream::iter(keys)
        .map(move |key| {
            let r = r.clone();
            async move {
                read_matching(
                    r.store.as_ref(),
                    &r.view,
                    &r.src,
                    by,
                    key,
                    &r.params,
                    &r.env,
                )
                .await
            }
        })
        .buffered(LIST_READS)
        .try_filter_map(|found| async move { Ok(found) })
        .boxed()
}

/// The rows a plain index lists under the keys of `src`'s access (one for
/// `Index`, each distinct one of `IndexList`, in key order), page by page,
/// each read as this statement sees it and kept if it matches the whole
/// filter: an entry left by an older state of its row finds a row that
/// no longer holds the key, which the filter leaves out (`claims::index`).
fn indexed(r: Reading, page: usize) -> BoxStream<'static, SqlResult<Found>> {
    let n = match &r.src.access {
        Access::Index(n, _) | Access::IndexList(n, _) => *n,
        _ => unreachable!("indexed() is for plain indexes"),
    };
    let cols = r.src.table.indexes[n].columns.clone();
    let cx = EvalCtx {
        row: None,
        excluded: None,
        params: &r.params,
        env: r.env.as_ref(),
    };
    let keys = match &r.src.access {
        Access::Index(_, exprs) => {
            pinned_key(&r.src.table, &cols, exprs, &cx).map(|k| k.into_iter().collect())
        }
        Access::IndexList(_, items) => listed_keys(&r.src.table, &cols, items, &cx),
        _ => unreachable!(),
    };
    let keys = match keys {
        Ok(keys) => keys,
        Err(e) => return stream::once(async { Err(e) }).boxed(),
    };
    stream::iter(keys)
        .map(move |key| {
            let r = r.clone();
            stream::try_unfold(Some(None::<Vec<u8>>), move |cursor| {
                let (r, key) = (r.clone(), key.clone());
                async move {
                    let Some(after) = cursor else {
                        return Ok(None);
                    };
                    let id = &r.src.table.indexes[n].id;
                    r.view.fetching();
                    let entries = r
                        .store
                        .read_index(id, &key, after.as_deref(), page)
                        .await
                        .map_err(store_error)?;
                    if entries.pks.is_empty() {
                        r.view.mark_read();
                    }
                    let reads = entries
                        .pks
                        .into_iter()
                        .map(|pk| read_entry(r.clone(), (n, key.clone()), pk));
                    let hits: Vec<SqlResult<Found>> = stream::iter(reads)
                        .buffered(LIST_READS)
                        .filter_map(|found| async move { found.transpose() })
                        .collect()
                        .await;
                    Ok(Some((stream::iter(hits), entries.next.map(Some))))
                }
            })
            .try_flatten()
        })
        .flatten()
        .boxed()
}

/// The row an entry under `key` of index `n` names, if it still holds
/// that key and matches the source's filter. (A row that moved from one
/// listed key to another is found under its new key only, once.)
async fn read_entry(
    r: Reading,
    (n, key): (usize, Vec<u8>),
    pk: Vec<u8>,
) -> SqlResult<Option<Found>> {
    let row = visible(r.store.as_ref(), &r.view, &r.src.table, &pk).await?;
    let holds =
        |row: &RowRecord| r.src.table.indexes[n].key_of(&row.values).as_deref() == Some(&key);
    Ok(match row {
        Some(row) if row.live && holds(&row) && matches(&r.src, &row, &r.params, &r.env)? => {
            Some((pk, row))
        }
        _ => None,
    })
}

/// Every live row matching the source, streamed page by page.
pub fn rows(
    store: Arc<dyn Store>,
    view: Arc<ReadView>,
    src: Source,
    params: Arc<Vec<Value>>,
    env: Arc<SessionEnv>,
    page: usize,
) -> BoxStream<'static, SqlResult<Found>> {
    match src.access {
        Access::Key(_) | Access::Unique(..) => {
            return stream::once(
                async move { point(store.as_ref(), &view, &src, &params, &env).await },
            )
            .map_ok(|found| stream::iter(found.map(Ok)))
            .try_flatten()
            .boxed();
        }
        Access::KeyList(_) | Access::UniqueList(..) | Access::Index(..) | Access::IndexList(..) => {
            let by_index = matches!(src.access, Access::Index(..) | Access::IndexList(..));
            let r = Reading {
                store,
                view,
                src: Arc::new(src),
                params,
                env,
            };
            return match by_index {
                true => indexed(r, page),
                false => listed(r),
            };
        }
        Access::Scan => {}
    }
    let src = Arc::new(src);
    stream::try_unfold(Some(None::<Vec<u8>>), move |cursor| {
        let store = store.clone();
        let view = view.clone();
        let src = src.clone();
        let params = params.clone();
        let env = env.clone();
        async move {
            let Some(after) = cursor else {
                return Ok(None);
            };
            view.fetching();
            let page = store
                .scan_rows(&src.table, after.as_deref(), page)
                .await
                .map_err(store_error)?;
            let mut hits = Vec::new();
            for (pk, row) in page.rows {
                let reread = || store.read_row(&src.table, &pk);
                let visible = view.visible(store.as_ref(), Some(row), reread).await;
                let Some(row) = visible? else {
                    continue;
                };
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

/// The rows with primary keys `keys` (encoded, in their columns' types) as
/// this statement sees them, a few reads at a time, in the order given;
/// absent and dead ones left out. The rows a query found for an UPDATE or
/// DELETE are read again this way, for the versions their writes go by.
pub async fn by_keys(
    store: &dyn Store,
    view: &ReadView,
    t: &TableDef,
    keys: Vec<Vec<u8>>,
) -> SqlResult<Vec<Found>> {
    stream::iter(keys)
        .map(|key| read_by(store, view, t, By::Primary, key))
        .buffered(LIST_READS)
        .try_filter_map(|found| async move { Ok(found) })
        .try_collect()
        .await
}

/// Collect the matching rows first (UPDATE and DELETE must not see their own writes).
pub async fn collect(
    store: Arc<dyn Store>,
    view: Arc<ReadView>,
    src: Source,
    params: Arc<Vec<Value>>,
    env: Arc<SessionEnv>,
    page: usize,
) -> SqlResult<Vec<Found>> {
    rows(store, view, src, params, env, page)
        .try_collect()
        .await
}
