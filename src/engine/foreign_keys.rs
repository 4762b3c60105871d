//! FOREIGN KEY: defining one against the table it references, and keeping
//! it when a statement ends (or at COMMIT, when it is deferred).
//!
//! Kept the way PostgreSQL keeps it, on the transaction machinery
//! (docs/foreign_keys.md):
//! - a row that comes to reference a key **locks** the referenced row (an
//!   intent of its transaction carrying the row unchanged, as SELECT ...
//!   FOR KEY SHARE would), after checking it is live; so the referenced
//!   row cannot go while the reference is undecided, and a referenced row
//!   that is going (another transaction's undecided intent) is waited for;
//! - a write that removes a referenced key writes its own intent on that
//!   row first, then looks for the rows still referencing the key, as its
//!   transaction sees them: none may be committed (NO ACTION, RESTRICT), or
//!   each is deleted or changed in the same transaction (CASCADE, SET
//!   NULL). A reference being added meanwhile holds its lock on the row,
//!   so it is either seen here or waits for this transaction and then
//!   finds the key gone.
//!
//! Both run over the rows the statement (or, at COMMIT, the transaction)
//! wrote, taken from the transaction's log; the writes an action makes
//! are logged too and looked at in turn, which is how CASCADE recurses.

use std::collections::HashSet;
use std::sync::Arc;

use std::time::{Duration, Instant};

use tracing::info;

use super::ctx::StmtCtx;
use super::ddl::{write_error, Ddl};
use super::read;
use crate::catalog::{naming, store_error, Catalog, ForeignKeyDef, RefAction, TableDef};
use crate::claims::read_view::ReadView;
use crate::claims::{self, IfBusy, Locked, Logged, RowWrite, WriteError};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::check::Checks;
use crate::sql::ddl::DeclaredForeignKey;
use crate::sql::expr::{BinOp, Expr};
use crate::sql::plan::source;
use crate::store::RowRecord;
use crate::txn::{ConstraintModes, OpenTxn};
use crate::types::{encode_key, key_detail, SqlType, Value};

/// When a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// When a statement ends: immediate constraints, and every referential
    /// action.
    Statement,
    /// At COMMIT: deferred constraints (`DEFERRABLE INITIALLY DEFERRED`,
    /// or `SET CONSTRAINTS ... DEFERRED`).
    Commit,
    /// At `SET CONSTRAINTS ... IMMEDIATE`: the deferrable constraints now
    /// immediate, over everything the transaction wrote while they may
    /// have been deferred.
    Now,
}

impl Phase {
    /// Whether a check of a constraint (deferrable or not, deferred now or
    /// not, under `modes`) is due in this phase.
    fn due(self, deferrable: bool, deferred: bool) -> bool {
        match self {
            Phase::Statement => !deferred,
            Phase::Commit => deferred,
            Phase::Now => deferrable && !deferred,
        }
    }
}

/// A FOREIGN KEY declared on `child`, against `parent` (which is `child`
/// itself for a self-reference), with PostgreSQL's errors. `taken`: the
/// constraint names the child already uses.
pub(super) fn define(
    child: &TableDef,
    d: &DeclaredForeignKey,
    parent: &TableDef,
    taken: &[String],
) -> SqlResult<ForeignKeyDef> {
    if parent.sequence.is_some() {
        return Err(SqlError::new(
            "42809",
            format!("referenced relation \"{}\" is not a table", parent.name),
        ));
    }
    let column = |t: &TableDef, name: &str| {
        t.column_index(name).ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{name}\" referenced in foreign key constraint does not exist"),
            )
        })
    };
    let columns = d
        .columns
        .iter()
        .map(|c| column(child, c))
        .collect::<SqlResult<Vec<_>>>()?;
    let ref_columns = if d.ref_columns.is_empty() {
        if parent.primary_key.is_empty() {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!(
                    "there is no primary key for referenced table \"{}\"",
                    parent.name
                ),
            ));
        }
        parent.primary_key.clone()
    } else {
        d.ref_columns
            .iter()
            .map(|c| column(parent, c))
            .collect::<SqlResult<Vec<_>>>()?
    };
    if columns.len() != ref_columns.len() {
        return Err(SqlError::new(
            "42830",
            "number of referencing and referenced columns for foreign key disagree",
        ));
    }
    let same_set = |key: &[usize]| {
        key.len() == ref_columns.len() && key.iter().all(|k| ref_columns.contains(k))
    };
    let whole_key = parent
        .uniques
        .iter()
        .any(|u| u.is_whole() && same_set(&u.columns));
    if !same_set(&parent.primary_key) && !whole_key {
        return Err(SqlError::new(
            "42830",
            format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                parent.name
            ),
        ));
    }
    let name = match &d.name {
        Some(n) => n.clone(),
        None => naming::foreign_key_name(
            &child.name,
            &child.column_names(&columns),
            taken.iter().map(String::as_str),
        ),
    };
    for (&c, &p) in columns.iter().zip(&ref_columns) {
        let (ct, pt) = (&child.columns[c].ty, &parent.columns[p].ty);
        if !comparable(ct, pt) {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("foreign key constraint \"{name}\" cannot be implemented"),
            )
            .with_detail(format!(
                "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                child.columns[c].name,
                parent.columns[p].name,
                ct.pg_name(),
                pt.pg_name()
            )));
        }
    }
    Ok(ForeignKeyDef {
        name,
        columns,
        ref_table: parent.name.clone(),
        ref_columns,
        on_delete: d.on_delete,
        on_update: d.on_update,
        deferrable: d.deferrable,
        initially_deferred: d.initially_deferred,
        validated: true,
    })
}

/// Whether PostgreSQL has an equality between the two types for a
/// foreign key: numbers with numbers, strings with strings, else the same.
fn comparable(a: &SqlType, b: &SqlType) -> bool {
    use SqlType::*;
    let number = |t: &SqlType| matches!(t, Int2 | Int4 | Int8 | Numeric(_) | Float4 | Float8);
    let string = |t: &SqlType| matches!(t, Text | Varchar(_) | Char(_));
    (number(a) && number(b))
        || (string(a) && string(b))
        || (matches!((a, b), (Timestamp | TimestampTz, Timestamp | TimestampTz)))
        || std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// One row's change over the writes looked at: as the transaction saw it
/// before the first, and after the last (None: absent or dead).
struct RowChange {
    table: Arc<TableDef>,
    before: Option<RowRecord>,
    after: Option<RowRecord>,
}

/// The writes of `entries` per row, in the order each row was first written.
fn changes(entries: &[Logged]) -> Vec<RowChange> {
    let mut out: Vec<RowChange> = Vec::new();
    let mut at: std::collections::HashMap<(&str, &[u8]), usize> = Default::default();
    for e in entries {
        let after = e.write.after();
        match at.get(&(e.table.id.as_str(), e.pk.as_slice())) {
            Some(&i) => out[i].after = after,
            None => {
                at.insert((e.table.id.as_str(), e.pk.as_slice()), out.len());
                out.push(RowChange {
                    table: e.table.clone(),
                    before: e.write.before.clone(),
                    after,
                });
            }
        }
    }
    out
}

/// Keep every foreign key the transaction's writes from log position
/// `from` on touch, for `phase`: a reference added must find its key (and
/// locks the row holding it), a key removed must be referenced no more
/// (or its referencing rows follow it, per the constraint's action).
pub(super) async fn enforce(
    cx: &StmtCtx<'_>,
    catalog: &Catalog,
    mut from: usize,
    phase: Phase,
    modes: &ConstraintModes,
) -> SqlResult<()> {
    let Some(open) = cx.open.as_ref() else {
        return Ok(());
    };
    let mut locked: HashSet<(String, Vec<u8>)> = HashSet::new();
    loop {
        let entries = open.entries_since(from);
        if entries.is_empty() {
            return Ok(());
        }
        from += entries.len();
        for change in changes(&entries) {
            if !change.table.referenced_by.is_empty() {
                removed_keys(cx, catalog, &change, phase, modes).await?;
            }
            for fk in &change.table.foreign_keys {
                if phase.due(fk.deferrable, modes.deferred(fk)) {
                    reference(cx, catalog, &change, fk, &mut locked).await?;
                }
            }
        }
    }
}

/// What a check reads rows through: the transaction's own writes, and
/// every other transaction as decided now. Not the statement's view, which
/// keeps a transaction it met undecided invisible for the whole statement:
/// a key removed after waiting for a transaction that then committed a
/// reference must see that reference.
fn fresh_view(cx: &StmtCtx<'_>) -> ReadView {
    ReadView::latest(cx.open.as_ref().map(|o| o.id))
}

/// The key bytes of `values` once cast into columns `cols` of `t`; None
/// when a value does not fit (it then matches nothing there).
fn typed_key(t: &TableDef, cols: &[usize], values: &[Value]) -> Option<Vec<u8>> {
    let typed = values
        .iter()
        .zip(cols)
        // Into the type without its typmod: a value compares as it is,
        // unrounded, as PostgreSQL's equality compares it.
        .map(|(v, &c)| v.cast_to(&t.columns[c].ty.without_numeric_typmod()).ok())
        .collect::<Option<Vec<Value>>>()?;
    Some(encode_key(&typed.iter().collect::<Vec<_>>()))
}

/// Child side: a row whose reference is new (inserted, or its referencing
/// columns changed) must find the referenced row live, and locks it.
async fn reference(
    cx: &StmtCtx<'_>,
    catalog: &Catalog,
    change: &RowChange,
    fk: &ForeignKeyDef,
    locked: &mut HashSet<(String, Vec<u8>)>,
) -> SqlResult<()> {
    let Some(key) = change.after.as_ref().and_then(|a| fk.key_of(&a.values)) else {
        return Ok(()); // gone, or a NULL in the reference (MATCH SIMPLE)
    };
    if change.before.as_ref().and_then(|b| fk.key_of(&b.values)) == Some(key.clone()) {
        return Ok(()); // the reference it had, already kept
    }
    let own = cx.open.as_ref().map(|o| o.id);
    let parent = catalog.table(&fk.ref_table, own).await?;
    let (w, reads) = (cx.row_write(&parent), fresh_view(cx));
    let found = lock_referenced(&reads, &w, cx.open.as_ref(), &parent, fk, &key, locked);
    if !found.await? {
        return Err(not_present(&change.table, fk, &key));
    }
    Ok(())
}

/// Lock the row of `parent` holding `key` in the referenced columns, for
/// the open transaction (`w.own`; outside one the row is only waited for
/// while another transaction writes it); false when no live row holds it.
/// `locked`: the keys (by referenced table) this check holds already.
async fn lock_referenced(
    reads: &ReadView,
    w: &RowWrite<'_>,
    open: Option<&OpenTxn>,
    parent: &TableDef,
    fk: &ForeignKeyDef,
    key: &[Value],
    locked: &mut HashSet<(String, Vec<u8>)>,
) -> SqlResult<bool> {
    let Some(want) = typed_key(parent, &fk.ref_columns, key) else {
        return Ok(false);
    };
    let holds = |row: &RowRecord| {
        let held: Vec<Value> = fk
            .ref_columns
            .iter()
            .map(|&c| row.values[c].clone())
            .collect();
        row.live && typed_key(parent, &fk.ref_columns, &held).as_deref() == Some(want.as_slice())
    };
    // This check holds the row with that key already.
    let held = (parent.id.clone(), want.clone());
    if locked.contains(&held) {
        return Ok(true);
    }
    // A unique key may move to another row between finding it and locking
    // the row: look again a few times.
    for _ in 0..3 {
        let found = read::by_columns(w.store, reads, parent, &fk.ref_columns, key);
        let Some((pk, row)) = found.await? else {
            return Ok(false);
        };
        // A row found without an intent is the partition as read: lock
        // from it, without reading it again (as SELECT ... FOR UPDATE does).
        let observed = row.intent.is_none().then_some(Some(row));
        let lock = claims::lock_row(w, &pk, observed, IfBusy::Wait, |cur| Ok(holds(cur))).await;
        match lock.map_err(|e| lock_error(e, parent))? {
            Locked::Written(write) => {
                if let Some(open) = open {
                    open.push(Logged {
                        table: Arc::new(parent.clone()),
                        pk: pk.clone(),
                        write,
                    });
                }
            }
            Locked::Held(_) => {}
            Locked::Gone => continue,
            Locked::Skipped => unreachable!("a waiting lock skips nothing"),
        }
        locked.insert(held);
        return Ok(true);
    }
    Ok(false)
}

fn lock_error(e: WriteError, t: &TableDef) -> SqlError {
    match e {
        WriteError::Sql(e) => e,
        other => SqlError::internal(format!(
            "a foreign key's lock on \"{}\" met a key conflict: {other:?}",
            t.name
        )),
    }
}

/// Parent side: for each foreign key that may reference `change`'s table,
/// a key the row held and holds no more.
async fn removed_keys(
    cx: &StmtCtx<'_>,
    catalog: &Catalog,
    change: &RowChange,
    phase: Phase,
    modes: &ConstraintModes,
) -> SqlResult<()> {
    let Some(before) = &change.before else {
        return Ok(()); // inserted: it removed no key
    };
    let parent = &change.table;
    let own = cx.open.as_ref().map(|o| o.id);
    for inbound in &parent.referenced_by {
        // The pointer names the referenced columns: a row that keeps them
        // (a lock, an update of other columns) removed no key, and needs
        // no look at the child. (An older pointer names none.)
        let kept = |a: &RowRecord| {
            !inbound.columns.is_empty()
                && inbound
                    .columns
                    .iter()
                    .all(|&c| a.values.get(c) == before.values.get(c))
        };
        if change.after.as_ref().is_some_and(kept) {
            continue;
        }
        // Read afresh: the pointer is a hint, the child's definition the
        // truth, and a cached one may predate the constraint.
        let Some(child) = catalog.lookup_fresh(&inbound.table, own).await? else {
            continue;
        };
        let Some(fk) = child.foreign_key(&inbound.constraint) else {
            continue;
        };
        if fk.ref_table != parent.name {
            continue;
        }
        let Some(old) = fk.ref_key_of(&before.values) else {
            continue;
        };
        let new = change.after.as_ref().and_then(|a| fk.ref_key_of(&a.values));
        if new
            .as_deref()
            .and_then(|n| typed_key(parent, &fk.ref_columns, n))
            == typed_key(parent, &fk.ref_columns, &old)
        {
            continue; // the key stays
        }
        let action = match change.after {
            Some(_) => fk.on_update,
            None => fk.on_delete,
        };
        // Only NO ACTION waits when deferred; the actions and RESTRICT act
        // when the statement ends.
        let no_action = action == RefAction::NoAction;
        if !phase.due(no_action && fk.deferrable, no_action && modes.deferred(fk)) {
            continue;
        }
        // When the key is the row's primary key and the row is gone, no
        // other row can hold it: no read needed to know.
        let row_was_the_key = change.after.is_none()
            && parent.row_id().is_none()
            && fk.ref_columns.len() == parent.primary_key.len()
            && parent
                .primary_key
                .iter()
                .all(|k| fk.ref_columns.contains(k));
        if action == RefAction::NoAction
            && !row_was_the_key
            && read::by_columns(
                cx.store.as_ref(),
                &fresh_view(cx),
                parent,
                &fk.ref_columns,
                &old,
            )
            .await?
            .is_some()
        {
            continue; // another row holds the key now: still referenced rightly
        }
        let referencing = referencing_rows(cx, &child, fk, &old).await?;
        if referencing.is_empty() {
            continue;
        }
        match action {
            RefAction::NoAction | RefAction::Restrict => {
                return Err(still_referenced(parent, &child, fk, &old));
            }
            RefAction::Cascade if change.after.is_none() => {
                cascade_delete(cx, &child, fk, &old, referencing).await?
            }
            RefAction::Cascade => {
                let new = new.unwrap_or_default();
                follow(cx, &child, fk, &old, referencing, &new).await?
            }
            RefAction::SetNull => {
                let nulls = vec![Value::Null; fk.columns.len()];
                follow(cx, &child, fk, &old, referencing, &nulls).await?
            }
            RefAction::SetDefault => {
                let defaults = column_defaults(cx, &child, &fk.columns)?;
                // Defaults equal to the key that goes would leave the rows
                // referencing it, unchanged (PostgreSQL's ri_set re-checks).
                if typed_key(&child, &fk.columns, &defaults) == typed_key(&child, &fk.columns, &old)
                {
                    return Err(still_referenced(parent, &child, fk, &old));
                }
                follow(cx, &child, fk, &old, referencing, &defaults).await?
            }
        }
    }
    Ok(())
}

/// Whether `row` of the child references `old` through `fk`.
fn references(
    child: &TableDef,
    fk: &ForeignKeyDef,
    old: &Option<Vec<u8>>,
    row: &RowRecord,
) -> bool {
    row.live
        && old.is_some()
        && fk
            .key_of(&row.values)
            .and_then(|k| typed_key(child, &fk.columns, &k))
            == *old
}

/// The rows of `child` referencing `old` through `fk`, as the transaction
/// sees them: by key when the referencing columns are the child's key,
/// by a plain index on them, else a scan.
async fn referencing_rows(
    cx: &StmtCtx<'_>,
    child: &Arc<TableDef>,
    fk: &ForeignKeyDef,
    old: &[Value],
) -> SqlResult<Vec<read::Found>> {
    let Some(typed) = old
        .iter()
        .zip(&fk.columns)
        .map(|(v, &c)| {
            v.cast_to(&child.columns[c].ty.without_numeric_typmod())
                .ok()
        })
        .collect::<Option<Vec<Value>>>()
    else {
        return Ok(Vec::new()); // no child value can equal it
    };
    let is_key =
        |key: &[usize]| key.len() == fk.columns.len() && key.iter().all(|k| fk.columns.contains(k));
    if is_key(&child.primary_key)
        || child
            .uniques
            .iter()
            .any(|u| u.is_whole() && is_key(&u.columns))
    {
        let found = read::by_columns(
            cx.store.as_ref(),
            &fresh_view(cx),
            child,
            &fk.columns,
            &typed,
        )
        .await?;
        return Ok(found.into_iter().collect());
    }
    let filter = fk
        .columns
        .iter()
        .zip(typed)
        .map(|(&c, v)| {
            Expr::Binary(
                BinOp::Eq,
                Box::new(Expr::Column(c)),
                Box::new(Expr::Literal(v)),
            )
        })
        .reduce(|a, b| Expr::Binary(BinOp::And, Box::new(a), Box::new(b)));
    // By a plain index on the referencing columns if the child has one
    // built, else a scan.
    let src = source(child.clone(), filter);
    read::collect(
        cx.store.clone(),
        Arc::new(fresh_view(cx)),
        src,
        cx.params.clone(),
        cx.env.clone(),
        cx.scan_page,
    )
    .await
}

/// ON DELETE CASCADE: delete the referencing rows (still referencing the
/// key when written).
async fn cascade_delete(
    cx: &StmtCtx<'_>,
    child: &TableDef,
    fk: &ForeignKeyDef,
    old: &[Value],
    rows: Vec<read::Found>,
) -> SqlResult<()> {
    let w = cx.row_write(child);
    let old = typed_key(child, &fk.columns, old);
    for (pk, _) in rows {
        cx.put_delete(&w, &pk, None, |cur| Ok(references(child, fk, &old, cur)))
            .await
            .map_err(|e| cx.write_error(child, e, &[]))?;
    }
    Ok(())
}

/// SET DEFAULT's values: each referencing column's DEFAULT (NULL where
/// it has none), computed as an INSERT computes it. The rows then
/// reference those values, which the check of new references looks up
/// in turn (PostgreSQL's 23503 when no parent row holds them).
fn column_defaults(cx: &StmtCtx<'_>, child: &TableDef, columns: &[usize]) -> SqlResult<Vec<Value>> {
    let defaults = crate::sql::plan::compile_defaults(child)?;
    let ecx = crate::sql::expr::EvalCtx {
        row: None,
        excluded: None,
        params: &[],
        env: cx.env.as_ref(),
    };
    columns
        .iter()
        .map(|&c| {
            let Some(e) = &defaults[c] else {
                return Ok(Value::Null);
            };
            let mut draws = Vec::new();
            e.sequence_calls(&mut draws);
            if !draws.is_empty() {
                // Drawn before a statement runs (`engine::sequence`), which
                // cannot know how many rows an action will reach.
                return Err(SqlError::unsupported(
                    format!(
                        "ON DELETE / ON UPDATE SET DEFAULT of column \"{}\", whose default draws from a sequence, is not supported",
                        child.columns[c].name
                    ),
                    "give the column a constant default, or use SET NULL",
                ));
            }
            e.eval(&ecx)
        })
        .collect()
}

/// ON UPDATE CASCADE, SET NULL, SET DEFAULT: set the referencing columns of the rows
/// still referencing the key to `to`.
async fn follow(
    cx: &StmtCtx<'_>,
    child: &TableDef,
    fk: &ForeignKeyDef,
    old: &[Value],
    rows: Vec<read::Found>,
    to: &[Value],
) -> SqlResult<()> {
    let w = cx.row_write(child);
    let checks = Checks::compile(child)?;
    let old = typed_key(child, &fk.columns, old);
    for (pk, _) in rows {
        let mut attempted: Vec<Value> = Vec::new();
        let written = cx
            .put_update(&w, &pk, None, |cur| {
                if !references(child, fk, &old, cur) {
                    return Ok(None);
                }
                let mut next = cur.values.clone();
                for (&c, v) in fk.columns.iter().zip(to) {
                    next[c] = v.clone();
                }
                attempted = next.clone();
                Ok(Some(super::write::conform(child, &checks, next, &cx.env)?))
            })
            .await;
        written.map_err(|e| cx.write_error(child, e, &attempted))?;
    }
    Ok(())
}

/// The first referencing key among `child`'s rows that no row of
/// `parent` holds (ALTER TABLE ... ADD FOREIGN KEY, once every proxy
/// checks the constraint), None when every reference finds its key. Rows
/// are read once no undecided transaction is writing them, as an index
/// build reads them; in a block each referenced row is locked, as a new
/// reference locks it.
pub(super) async fn unreferenced(
    ddl: &Ddl<'_>,
    child: &TableDef,
    fk: &ForeignKeyDef,
    parent: &TableDef,
) -> SqlResult<Option<Vec<Value>>> {
    let reads = ReadView::latest(ddl.open.map(|o| o.id));
    let lock_timeout = ddl.claims.lock_timeout;
    let fresh = |t| RowWrite {
        deadline: Instant::now() + lock_timeout,
        born_ms: claims::now_ms(),
        ..ddl.waiter(t)
    };
    let mut locked = HashSet::new();
    let (mut cursor, mut rows, mut last_log) = (None::<Vec<u8>>, 0u64, Instant::now());
    loop {
        let batch = ddl
            .store
            .scan_rows(child, cursor.as_deref(), ddl.page)
            .await
            .map_err(store_error)?;
        for (pk, row) in &batch.rows {
            let row = match row.intent {
                None => row.live.then(|| row.clone()),
                Some(_) => claims::settled_row(&fresh(child), pk, row.clone())
                    .await
                    .map_err(write_error)?,
            };
            let Some(key) = row.and_then(|r| fk.key_of(&r.values)) else {
                continue;
            };
            if locked.len() > 100_000 {
                locked.clear(); // a bound on memory; only repeats a check
            }
            let w = fresh(parent);
            let found = lock_referenced(&reads, &w, ddl.open, parent, fk, &key, &mut locked);
            if !found.await? {
                return Ok(Some(key));
            }
        }
        rows += batch.rows.len() as u64;
        if last_log.elapsed() > Duration::from_secs(5) {
            info!(table = %child.name, constraint = %fk.name, rows, "checking a foreign key");
            last_log = Instant::now();
        }
        match batch.next {
            Some(next) => cursor = Some(next),
            None => return Ok(None),
        }
    }
}

/// 23503 for a reference whose key no row holds, as PostgreSQL words it.
pub(super) fn not_present(child: &TableDef, fk: &ForeignKeyDef, key: &[Value]) -> SqlError {
    SqlError::new(
        sqlstate::FOREIGN_KEY_VIOLATION,
        format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            child.name, fk.name
        ),
    )
    .with_detail(format!(
        "{} is not present in table \"{}\".",
        key_detail(
            &child.column_names(&fk.columns),
            &key.iter().collect::<Vec<_>>()
        ),
        fk.ref_table
    ))
    .with_table(&child.name)
    .with_constraint(fk.name.clone())
}

/// 23503 for a removed key that rows still reference.
fn still_referenced(
    parent: &TableDef,
    child: &TableDef,
    fk: &ForeignKeyDef,
    key: &[Value],
) -> SqlError {
    SqlError::new(
        sqlstate::FOREIGN_KEY_VIOLATION,
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            parent.name, fk.name, child.name
        ),
    )
    .with_detail(format!(
        "{} is still referenced from table \"{}\".",
        key_detail(&parent.column_names(&fk.ref_columns), &key.iter().collect::<Vec<_>>()),
        child.name
    ))
    .with_table(&child.name)
    .with_constraint(fk.name.clone())
}
