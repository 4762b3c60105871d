//! INSERT, UPDATE and DELETE: evaluate rows, then write each one through the
//! claim protocol.
//!
//! An INSERT or UPDATE of many rows is all-or-nothing: on an error, or when
//! a cancel or statement_timeout asks it to stop (`crate::stop`: checked
//! before each row, and between claiming and committing one), the rows it
//! already wrote are undone, each by a CAS on the version this statement
//! wrote, so an undo never touches another's data. If an undo cannot be
//! confirmed the answer is 40003, never an error that would claim nothing
//! happened. A DELETE is not undone: it stops only before its first row,
//! and an error after it deleted rows answers 40003.

use std::collections::HashSet;

use tracing::warn;

use std::sync::Arc;

use super::ctx::StmtCtx;
use super::env::SessionEnv;
use super::read;
use crate::catalog::TableDef;
use crate::claims::{self, Change, IntentWrite, Logged, RowWrite, WriteError, WriteOutcome};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::check::Checks;
use crate::sql::expr::{EvalCtx, Expr};
use crate::sql::plan::{
    ConflictAction, DeletePlan, FoundBy, InsertPlan, OnConflict, Source, Target, UpdatePlan,
};
use crate::stop::{self, Stop};
use crate::store::{RowRecord, TxnId};
use crate::types::{failing_row, key_detail, Value};

/// The rows a statement wrote: how many, and what RETURNING produced.
pub struct Written {
    pub count: usize,
    pub returned: Vec<Vec<Value>>,
}

impl Written {
    /// Count one row's result and evaluate its RETURNING list.
    fn add(
        &mut self,
        result: SqlResult<Option<Vec<Value>>>,
        returning: &Option<Vec<Expr>>,
        w: &StmtCtx<'_>,
    ) -> SqlResult<()> {
        if let Some(row) = result? {
            self.count += 1;
            w.returning(returning, &row, &mut self.returned)?;
        }
        Ok(())
    }
}

/// A row an UPDATE or DELETE acts on: its key, what it was when found,
/// and, when a query found it, the values that query computed for its
/// columns (the sets read them as EXCLUDED; `FoundBy`).
pub(super) struct Candidate {
    pub pk: Vec<u8>,
    pub row: RowRecord,
    pub computed: Option<Vec<Value>>,
}

/// How to take back one write of this statement.
enum Undo {
    Inserted {
        pk: Vec<u8>,
        version: TxnId,
    },
    Updated {
        pk: Vec<u8>,
        version: TxnId,
        before: Vec<Value>,
    },
    /// The old row of a primary-key UPDATE, now dead at `version`.
    Retired {
        pk: Vec<u8>,
        version: TxnId,
        before: Vec<Value>,
    },
}

/// The keys of the rows an INSERT wrote so far, which its ON CONFLICT DO
/// UPDATE may not write a second time (21000). A one-row INSERT keeps
/// none: no later row of it can meet one (a set per statement was about 1 %
/// of a single-row INSERT's CPU).
struct Touched(Option<HashSet<Vec<u8>>>);

impl Touched {
    fn new(rows: usize) -> Touched {
        Touched((rows > 1).then(HashSet::new))
    }

    fn add(&mut self, pk: &[u8]) {
        if let Some(keys) = &mut self.0 {
            keys.insert(pk.to_vec());
        }
    }

    fn has(&self, pk: &[u8]) -> bool {
        self.0.as_ref().is_some_and(|keys| keys.contains(pk))
    }
}

fn ctx<'a>(
    row: Option<&'a [Value]>,
    excluded: Option<&'a [Value]>,
    params: &'a [Value],
    env: &'a SessionEnv,
) -> EvalCtx<'a> {
    EvalCtx {
        row,
        excluded,
        params,
        env,
    }
}

/// 23505 exactly as PostgreSQL words it, for the row whose values collided.
pub fn duplicate(table: &TableDef, target: Target, values: &[Value]) -> SqlError {
    let (name, cols) = match target {
        Target::Pkey => (&table.pkey_name, &table.primary_key),
        Target::Unique(n) => (&table.uniques[n].name, &table.uniques[n].columns),
    };
    let vals: Vec<&Value> = cols.iter().map(|&i| &values[i]).collect();
    SqlError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{name}\""),
    )
    .with_detail(format!(
        "{} already exists.",
        key_detail(&table.column_names(cols), &vals)
    ))
    .with_table(&table.name)
    .with_constraint(name.clone())
}

/// Cast each value into its column's type, then check NOT NULL (23502)
/// and the CHECK constraints (23514), in PostgreSQL's order.
pub(super) fn conform(
    table: &TableDef,
    checks: &Checks,
    values: Vec<Value>,
    env: &SessionEnv,
) -> SqlResult<Vec<Value>> {
    let mut out = Vec::with_capacity(values.len());
    for (v, col) in values.into_iter().zip(&table.columns) {
        let v = v.cast_to(&col.ty).map_err(|e| {
            if e.code == "42846" {
                SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!(
                        "column \"{}\" is of type {} but expression is of another type",
                        col.name,
                        col.ty.pg_name()
                    ),
                )
                .with_hint("You will need to rewrite or cast the expression.")
            } else {
                e
            }
        })?;
        out.push(v);
    }
    for (v, col) in out.iter().zip(&table.columns) {
        if v.is_null() && col.not_null {
            return Err(SqlError::new(
                sqlstate::NOT_NULL_VIOLATION,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    col.name, table.name
                ),
            )
            .with_detail(failing_row(&out[..table.visible().len()]))
            .with_table(&table.name)
            .with_column(col.name.clone()));
        }
    }
    checks.verify(table, &out, env)?;
    Ok(out)
}

fn apply_sets(
    table: &TableDef,
    checks: &Checks,
    sets: &[(usize, Expr)],
    current: &[Value],
    excluded: Option<&[Value]>,
    params: &[Value],
    env: &SessionEnv,
) -> SqlResult<Vec<Value>> {
    let c = ctx(Some(current), excluded, params, env);
    let mut next = current.to_vec();
    for (i, e) in sets {
        next[*i] = e.eval(&c)?;
    }
    conform(table, checks, next, env)
}

/// Whether a conflict on `target` is handled by this ON CONFLICT clause.
fn arbiter(oc: &Option<OnConflict>, target: Target) -> Option<&OnConflict> {
    oc.as_ref()
        .filter(|oc| oc.targets.as_ref().is_none_or(|ts| ts.contains(&target)))
}

/// How this statement writes a row: through the single-row protocol (the
/// row is its own record), or, inside a transaction block, as an intent of
/// the open transaction, logged so that ROLLBACK TO and a failed statement
/// can take it back.
impl StmtCtx<'_> {
    async fn put_insert(
        &self,
        w: &RowWrite<'_>,
        pk: &[u8],
        values: Vec<Value>,
    ) -> Result<WriteOutcome, WriteError> {
        if self.open.is_none() {
            return claims::insert_row(w, pk, values).await;
        }
        let written = claims::write_intent(w, pk, Some(None), |view| match view {
            Some(_) => Err(WriteError::Duplicate {
                unique: None,
                owner: pk.to_vec(),
            }),
            None => Ok(Some(Change::Live(values.clone()))),
        })
        .await?;
        Ok(self.logged(w, pk, written.expect("an insert always writes")))
    }

    pub(super) async fn put_update(
        &self,
        w: &RowWrite<'_>,
        pk: &[u8],
        observed: Option<Option<RowRecord>>,
        mut compute: impl FnMut(&RowRecord) -> Result<Option<Vec<Value>>, SqlError>,
    ) -> Result<Option<WriteOutcome>, WriteError> {
        if self.open.is_none() {
            return claims::update_row(w, pk, observed, compute).await;
        }
        // The rows a statement found are views (its own intents folded
        // in), not partitions: read the partition to write from.
        let written = claims::write_intent(w, pk, None, |view| match view {
            None => Ok(None),
            Some(cur) => Ok(compute(cur)?.map(Change::Live)),
        })
        .await?;
        Ok(written.map(|x| self.logged(w, pk, x)))
    }

    pub(super) async fn put_delete(
        &self,
        w: &RowWrite<'_>,
        pk: &[u8],
        observed: Option<Option<RowRecord>>,
        mut qualifies: impl FnMut(&RowRecord) -> Result<bool, SqlError>,
    ) -> Result<Option<WriteOutcome>, WriteError> {
        if self.open.is_none() {
            return claims::delete_row(w, pk, observed, qualifies).await;
        }
        let written = claims::write_intent(w, pk, None, |view| match view {
            None => Ok(None),
            Some(cur) => Ok(qualifies(cur)?.then_some(Change::Dead)),
        })
        .await?;
        Ok(written.map(|x| self.logged(w, pk, x)))
    }

    /// Log an intent in the open transaction; the outcome as the
    /// single-row protocol reports it.
    pub(super) fn logged(&self, w: &RowWrite<'_>, pk: &[u8], write: IntentWrite) -> WriteOutcome {
        let after = write
            .after()
            .unwrap_or_else(|| RowRecord::dead(write.record.version));
        let outcome = WriteOutcome {
            before: write.before.clone(),
            after: RowRecord {
                version: write.record.version,
                ..after
            },
        };
        if let Some(open) = &self.open {
            open.push(Logged {
                table: self.table_arc(w.table),
                pk: pk.to_vec(),
                write,
            });
        }
        outcome
    }

    /// The statement's own handle on a table it writes.
    fn table_arc(&self, table: &TableDef) -> Arc<TableDef> {
        Arc::new(table.clone())
    }

    /// The rows an UPDATE or DELETE acts on, all found before any is
    /// written: by the plan's source, or, when a query found them, the
    /// rows that query returned (`found`), read again by key.
    async fn candidates(
        &self,
        source: &Source,
        found: Option<(&FoundBy, &[Vec<Value>])>,
    ) -> SqlResult<Vec<Candidate>> {
        if let Some((by, rows)) = found {
            return self.found_candidates(&source.table, by, rows).await;
        }
        let found = read::collect(
            self.store.clone(),
            self.reads.clone(),
            source.clone(),
            self.params.clone(),
            self.env.clone(),
            self.scan_page,
        )
        .await?;
        Ok(found
            .into_iter()
            .map(|(pk, row)| Candidate {
                pk,
                row,
                computed: None,
            })
            .collect())
    }

    fn returning(
        &self,
        exprs: &Option<Vec<Expr>>,
        row: &[Value],
        out: &mut Vec<Vec<Value>>,
    ) -> SqlResult<()> {
        if let Some(exprs) = exprs {
            out.push(super::select::project(
                exprs,
                Some(row),
                &self.params,
                &self.env,
            )?);
        }
        Ok(())
    }

    /// Insert `rows` (the plan's VALUES, or the rows its query gave:
    /// `InsertRows`), each an entry per column, None meaning DEFAULT.
    pub async fn insert(
        &self,
        plan: &InsertPlan,
        rows: &[Vec<Option<Expr>>],
    ) -> SqlResult<Written> {
        let t = plan.table.as_ref();
        let w = self.row_write(t);
        let _writing = self.stop.map(Stop::writing);
        let mut undo = Vec::new();
        let mut touched = Touched::new(rows.len());
        let mut written = Written {
            count: 0,
            returned: Vec::new(),
        };
        for row in rows {
            let result = async {
                stop::check(self.stop)?;
                let values = self.build_row(plan, row)?;
                self.insert_one(&w, plan, values, &mut touched, &mut undo)
                    .await
            }
            .await;
            if let Err(e) = written.add(result, &plan.returning, self) {
                return Err(self.abandon(t, undo, e).await);
            }
        }
        Ok(written)
    }

    fn build_row(&self, plan: &InsertPlan, row: &[Option<Expr>]) -> SqlResult<Vec<Value>> {
        let c = ctx(None, None, &self.params, &self.env);
        let mut values = Vec::with_capacity(row.len());
        for (i, e) in row.iter().enumerate() {
            values.push(match e.as_ref().or(plan.defaults[i].as_ref()) {
                Some(e) => e.eval(&c)?,
                None => Value::Null,
            });
        }
        conform(&plan.table, &plan.checks, values, &self.env)
    }

    /// One proposed row: insert it, or apply ON CONFLICT. Returns the row
    /// written (for RETURNING), or None when nothing was written.
    async fn insert_one(
        &self,
        w: &RowWrite<'_>,
        plan: &InsertPlan,
        values: Vec<Value>,
        touched: &mut Touched,
        undo: &mut Vec<Undo>,
    ) -> SqlResult<Option<Vec<Value>>> {
        let t = w.table;
        let pk = t.pk_bytes(&values);
        loop {
            let (target, owner) = match self.put_insert(w, &pk, values.clone()).await {
                Ok(o) => {
                    touched.add(&pk);
                    undo.push(Undo::Inserted {
                        pk,
                        version: o.after.version,
                    });
                    return Ok(Some(o.after.values));
                }
                Err(WriteError::Duplicate {
                    unique: Some(n),
                    owner,
                }) => {
                    // PostgreSQL looks for conflicts on the arbiter first: one
                    // there is handled (DO UPDATE on that row) whatever else
                    // conflicts. Otherwise it checks the primary key first: if
                    // our row's key is taken too, that is the violation it
                    // reports.
                    let target = Target::Unique(n);
                    if arbiter(&plan.on_conflict, target).is_some() {
                        (target, owner)
                    } else if self.live(w, &pk).await? {
                        (Target::Pkey, pk.clone())
                    } else {
                        (target, owner)
                    }
                }
                // The primary key is taken (by another row, or by this very
                // row holding our unique values already).
                Err(e @ (WriteError::Duplicate { unique: None, .. } | WriteError::ThisRow)) => {
                    match self.arbiter_conflict(w, plan, &values).await? {
                        Some(found) => found,
                        None => match e {
                            WriteError::Duplicate { owner, .. } => (Target::Pkey, owner),
                            _ => (Target::Pkey, pk.clone()),
                        },
                    }
                }
                Err(WriteError::Sql(e)) => return Err(e),
            };
            let Some(oc) = arbiter(&plan.on_conflict, target) else {
                return Err(duplicate(t, target, &values));
            };
            let ConflictAction::Update { sets, filter } = &oc.action else {
                return Ok(None);
            };
            if touched.has(&owner) {
                return Err(SqlError::new(
                    sqlstate::CARDINALITY_VIOLATION,
                    "ON CONFLICT DO UPDATE command cannot affect row a second time",
                )
                .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values."));
            }
            let mut filtered_out = false;
            let updated = self
                .put_update(w, &owner, None, |cur| {
                    let c = ctx(Some(&cur.values), Some(&values), &self.params, &self.env);
                    if let Some(f) = filter {
                        if !f.holds(&c)? {
                            filtered_out = true;
                            return Ok(None);
                        }
                    }
                    let next = apply_sets(
                        t,
                        &plan.checks,
                        sets,
                        &cur.values,
                        Some(&values),
                        &self.params,
                        &self.env,
                    )?;
                    if t.pk_bytes(&next) != owner {
                        return Err(pk_change_in_upsert());
                    }
                    Ok(Some(next))
                })
                .await;
            match updated {
                Ok(Some(o)) => {
                    touched.add(&owner);
                    let before = o.before.map(|b| b.values).unwrap_or_default();
                    undo.push(Undo::Updated {
                        pk: owner,
                        version: o.after.version,
                        before,
                    });
                    return Ok(Some(o.after.values));
                }
                Ok(None) if filtered_out => return Ok(None),
                // The conflicting row went away meanwhile: try the insert again.
                Ok(None) => continue,
                Err(e) => return Err(self.write_error(t, e, &values)),
            }
        }
    }

    /// A conflict on the ON CONFLICT clause's unique targets, when the row's
    /// primary key is not among them: PostgreSQL looks for those first, so a
    /// row found there is the one DO UPDATE (or DO NOTHING) acts on, even
    /// though the primary key is taken too.
    async fn arbiter_conflict(
        &self,
        w: &RowWrite<'_>,
        plan: &InsertPlan,
        values: &[Value],
    ) -> SqlResult<Option<(Target, Vec<u8>)>> {
        let Some(targets) = plan.on_conflict.as_ref().and_then(|oc| oc.targets.as_ref()) else {
            return Ok(None);
        };
        if targets.contains(&Target::Pkey) {
            return Ok(None);
        }
        for target in targets {
            let Target::Unique(n) = *target else { continue };
            let found = read::holder(w.store, &self.reads, w.table, n, values).await?;
            if let Some(owner) = found {
                return Ok(Some((*target, owner)));
            }
        }
        Ok(None)
    }

    async fn live(&self, w: &RowWrite<'_>, pk: &[u8]) -> SqlResult<bool> {
        let row = w
            .store
            .read_row(w.table, pk)
            .await
            .map_err(crate::catalog::store_error)?;
        Ok(row.is_some_and(|r| r.live))
    }

    pub(super) fn write_error(&self, t: &TableDef, e: WriteError, values: &[Value]) -> SqlError {
        match e {
            // Slots are searched, never reported taken (`claims::slots`).
            WriteError::Duplicate {
                unique: Some(n), ..
            } if n >= t.uniques.len() => {
                SqlError::internal("a count limit's slot was reported as a duplicate key")
            }
            WriteError::Duplicate { unique, .. } => duplicate(
                t,
                unique.map(Target::Unique).unwrap_or(Target::Pkey),
                values,
            ),
            WriteError::ThisRow => duplicate(t, Target::Pkey, values),
            WriteError::Sql(e) => e,
        }
    }

    /// Update the rows the plan finds, or those its query found (`found`).
    pub async fn update(
        &self,
        plan: &UpdatePlan,
        found: Option<&[Vec<Value>]>,
    ) -> SqlResult<Written> {
        let t = plan.source.table.as_ref();
        let w = self.row_write(t);
        let found = plan.found_by.as_ref().zip(found);
        let candidates = self.candidates(&plan.source, found).await?;
        let _writing = self.stop.map(Stop::writing);
        let mut undo = Vec::new();
        let mut written = Written {
            count: 0,
            returned: Vec::new(),
        };
        for candidate in candidates {
            let result = async {
                stop::check(self.stop)?;
                self.update_one(&w, plan, candidate, &mut undo).await
            }
            .await;
            if let Err(e) = written.add(result, &plan.returning, self) {
                return Err(self.abandon(t, undo, e).await);
            }
        }
        Ok(written)
    }

    fn qualifies(&self, plan_filter: &Option<Expr>, row: &[Value]) -> SqlResult<bool> {
        match plan_filter {
            None => Ok(true),
            Some(f) => f.holds(&ctx(Some(row), None, &self.params, &self.env)),
        }
    }

    async fn update_one(
        &self,
        w: &RowWrite<'_>,
        plan: &UpdatePlan,
        candidate: Candidate,
        undo: &mut Vec<Undo>,
    ) -> SqlResult<Option<Vec<Value>>> {
        let Candidate { pk, row, computed } = candidate;
        let computed = computed.as_deref();
        let t = w.table;
        let filter = &plan.source.filter;
        let next = apply_sets(
            t,
            &plan.checks,
            &plan.sets,
            &row.values,
            computed,
            &self.params,
            &self.env,
        )?;
        let new_pk = t.pk_bytes(&next);
        if new_pk != pk {
            return self.move_row(w, filter, pk, row, new_pk, next, undo).await;
        }
        let mut values_for_error = next;
        let result = self
            .put_update(w, &pk, Some(Some(row)), |cur| {
                if !self.qualifies(filter, &cur.values)? {
                    return Ok(None);
                }
                let next = apply_sets(
                    t,
                    &plan.checks,
                    &plan.sets,
                    &cur.values,
                    computed,
                    &self.params,
                    &self.env,
                )?;
                if t.pk_bytes(&next) != pk {
                    return Err(pk_change_in_upsert());
                }
                values_for_error = next.clone();
                Ok(Some(next))
            })
            .await;
        match result {
            Ok(Some(o)) => {
                undo.push(Undo::Updated {
                    pk,
                    version: o.after.version,
                    before: o.before.map(|b| b.values).unwrap_or_default(),
                });
                Ok(Some(o.after.values))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(self.write_error(t, e, &values_for_error)),
        }
    }

    /// An UPDATE that changes the primary key moves the row to another
    /// partition: insert the new row first (IF NOT EXISTS), then retire the
    /// old one by CAS on the version this statement observed. Whatever
    /// fails, the old row is never gone without the new one in place.
    ///
    /// With UNIQUE constraints this would need a claim to name two rows at
    /// once (the old row holds the key until the new one does), which the
    /// protocol cannot express safely; such moves are refused.
    #[allow(clippy::too_many_arguments)]
    async fn move_row(
        &self,
        w: &RowWrite<'_>,
        filter: &Option<Expr>,
        pk: Vec<u8>,
        row: RowRecord,
        new_pk: Vec<u8>,
        next: Vec<Value>,
        undo: &mut Vec<Undo>,
    ) -> SqlResult<Option<Vec<Value>>> {
        let t = w.table;
        if !t.uniques.is_empty() || !t.count_limits.is_empty() {
            let what = match t.uniques.is_empty() {
                true => "count limits",
                false => "UNIQUE constraints",
            };
            return Err(SqlError::unsupported(
                format!(
                    "changing the primary key of a row in a table with {what} is not supported"
                ),
                "DELETE the row and INSERT it with its new key",
            ));
        }
        let inserted = self
            .put_insert(w, &new_pk, next.clone())
            .await
            .map_err(|e| self.write_error(t, e, &next))?;
        let version = row.version;
        let retired = self
            .put_delete(w, &pk, Some(Some(row)), |cur| {
                Ok(cur.version == version && self.qualifies(filter, &cur.values)?)
            })
            .await;
        match retired {
            Ok(Some(deleted)) => {
                undo.push(Undo::Inserted {
                    pk: new_pk,
                    version: inserted.after.version,
                });
                let before = deleted.before.map(|b| b.values).unwrap_or_default();
                undo.push(Undo::Retired {
                    pk,
                    version: deleted.after.version,
                    before,
                });
                Ok(Some(inserted.after.values))
            }
            // The old row changed or went away meanwhile: take the new one
            // back (only the version we wrote) and let the client retry.
            other => {
                let mine = inserted.after.version;
                if let Err(e) = self
                    .put_delete(w, &new_pk, None, |cur| Ok(cur.version == mine))
                    .await
                {
                    warn!(table = %t.name, cause = ?e, "could not take back a moved row");
                }
                match other {
                    Err(e) => Err(self.write_error(t, e, &next)),
                    _ => Err(SqlError::new(
                        "40001",
                        "could not serialize access due to concurrent update",
                    )
                    .with_hint("the row changed while its primary key was being updated; retry")),
                }
            }
        }
    }

    /// Delete the rows the plan finds, or those its query found (`found`).
    pub async fn delete(
        &self,
        plan: &DeletePlan,
        found: Option<&[Vec<Value>]>,
    ) -> SqlResult<Written> {
        let t = plan.source.table.as_ref();
        let w = self.row_write(t);
        let found = plan.found_by.as_ref().zip(found);
        let candidates = self.candidates(&plan.source, found).await?;
        let _writing = self.stop.map(Stop::writing);
        // A DELETE is not undone, so it may stop only before its first row;
        // after that it finishes, out of the interrupt's reach.
        let unstoppable = RowWrite { stop: None, ..w };
        let mut written = Written {
            count: 0,
            returned: Vec::new(),
        };
        for Candidate { pk, row, .. } in candidates {
            let w = if written.count == 0 { &w } else { &unstoppable };
            let deleted = self.delete_one(w, plan, pk, row, &mut written).await;
            if let Err(e) = deleted {
                return Err(match written.count {
                    // In a transaction the engine takes back the deletes.
                    _ if self.open.is_some() => e,
                    0 => e,
                    n => failed_after(
                        &e,
                        &format!("it had deleted {n} row(s), which stay deleted"),
                    ),
                });
            }
        }
        Ok(written)
    }

    async fn delete_one(
        &self,
        w: &RowWrite<'_>,
        plan: &DeletePlan,
        pk: Vec<u8>,
        row: RowRecord,
        written: &mut Written,
    ) -> SqlResult<()> {
        stop::check(w.stop)?;
        let filter = &plan.source.filter;
        let deleted = self
            .put_delete(w, &pk, Some(Some(row)), |cur| {
                self.qualifies(filter, &cur.values)
            })
            .await
            .map_err(|e| self.write_error(w.table, e, &[]))?;
        if let Some(o) = deleted {
            written.count += 1;
            if let Some(before) = &o.before {
                self.returning(&plan.returning, &before.values, &mut written.returned)?;
            }
        }
        Ok(())
    }

    /// A failed statement's answer: undo what it wrote, and answer `error`,
    /// or 40003 if the undo could not be confirmed (the writes may stay).
    async fn abandon(&self, table: &TableDef, undo: Vec<Undo>, error: SqlError) -> SqlError {
        // In a transaction the engine takes back the statement's intents.
        if self.open.is_some() {
            return error;
        }
        match self.rollback(table, undo).await {
            Ok(()) => error,
            Err(cause) => failed_after(
                &error,
                &format!("writing rows, and undoing them could not be confirmed: {cause}"),
            ),
        }
    }

    /// Undo this statement's writes, newest first. Each undo is conditional
    /// on the version this statement wrote: a row someone else wrote since
    /// is theirs, and nothing of ours is left to undo there. The undo gets a
    /// lock timeout of its own (the statement's may be what ran out) and no
    /// stop state (the interrupt that caused it must not stop it). Err: the
    /// first undo that failed.
    async fn rollback(&self, table: &TableDef, undo: Vec<Undo>) -> Result<(), String> {
        if undo.is_empty() {
            return Ok(());
        }
        let w = RowWrite {
            deadline: std::time::Instant::now() + self.claims.lock_timeout,
            stop: None,
            ..self.row_write(table)
        };
        let mut first_failure = None;
        for u in undo.into_iter().rev() {
            let result = self.undo_one(&w, u).await;
            if let Err(e) = result {
                let cause = match e {
                    WriteError::Sql(e) => format!("{} ({})", e.message, e.code),
                    WriteError::Duplicate { .. } | WriteError::ThisRow => {
                        "a key the row held has been taken since".to_owned()
                    }
                };
                warn!(table = %table.name, %cause, "could not undo a write of a failed statement");
                first_failure.get_or_insert(cause);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }

    async fn undo_one(&self, w: &RowWrite<'_>, undo: Undo) -> Result<(), WriteError> {
        match undo {
            Undo::Inserted { pk, version } => {
                claims::delete_row(w, &pk, None, |cur| Ok(cur.version == version)).await?;
            }
            Undo::Updated {
                pk,
                version,
                before,
            } => {
                claims::update_row(w, &pk, None, |cur| {
                    Ok((cur.version == version).then(|| before.clone()))
                })
                .await?;
            }
            Undo::Retired {
                pk,
                version,
                before,
            } => {
                claims::restore_row(w, &pk, before, version).await?;
            }
        }
        Ok(())
    }
}

/// 40003 for a statement that failed with `error` after `what` had
/// happened: its writes may stay.
fn failed_after(error: &SqlError, what: &str) -> SqlError {
    SqlError::completion_unknown(format!(
        "The statement failed ({}: {}) after {what}.",
        error.code, error.message
    ))
}

fn pk_change_in_upsert() -> SqlError {
    SqlError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        "changing the primary key of a row that changed concurrently is not supported",
    )
    .with_hint("retry the statement")
}
