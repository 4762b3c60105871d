//! ALTER TABLE's column forms: ADD COLUMN, DROP COLUMN, RENAME COLUMN and
//! SET DATA TYPE. No row is rewritten: a stored row keeps each value in
//! its column's slot (`catalog::layout`), so a column added reads its
//! missing value in the rows stored before it, a dropped one leaves its
//! slot unread, and a renamed one keeps its storage name. Each is a change
//! of the definition, transactional in a block and seen by other proxies
//! through the catalog epoch.

use std::ops::ControlFlow;

use sqlparser::ast;

use super::alter::column_of;
use super::ddl::{self, command, notice, Ddl};
use super::Executed;
use crate::catalog::{storage_id, store_error, ColumnDef, ColumnStorage, TableDef};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::alter::NewColumn;
use crate::sql::expr::{Compiler, Env, EvalCtx, Params, Scope};
use crate::sql::plan::ident;
use crate::types::{SqlType, Value};

fn column_exists(t: &TableDef, column: &str) -> SqlError {
    SqlError::new(
        sqlstate::DUPLICATE_COLUMN,
        format!(
            "column \"{column}\" of relation \"{}\" already exists",
            t.name
        ),
    )
}

/// ADD COLUMN: the store makes room for it (a CQL column), then the
/// definition gets it. The rows already there read its DEFAULT, computed
/// once (PostgreSQL's attmissingval), or NULL; where that breaks its NOT
/// NULL or a CHECK, the rows are looked at as for ADD CONSTRAINT.
pub async fn add_column(
    ddl: &Ddl<'_>,
    table: &TableDef,
    new: &NewColumn,
    env: &dyn Env,
) -> SqlResult<Executed> {
    if table.column_index(&new.name).is_some() {
        if new.if_not_exists {
            let skip = format!(
                "column \"{}\" of relation \"{}\" already exists, skipping",
                new.name, table.name
            );
            return Ok(command(
                "ALTER TABLE",
                vec![notice(sqlstate::DUPLICATE_COLUMN, skip)],
            ));
        }
        return Err(column_exists(table, &new.name));
    }
    let missing = missing_value(new, env)?;
    let column = ColumnDef {
        name: new.name.clone(),
        ty: new.ty.clone(),
        not_null: new.not_null,
        default: new.default.as_ref().map(crate::sql::ddl::default_text),
        identity: None,
        hidden: false,
        comment: None,
        storage: ColumnStorage {
            missing: Some(missing.clone()),
            name: Some(storage_id(&new.name)),
            ..ColumnStorage::default()
        },
    };
    let mut with = table.clone();
    let i = with.push_column(column.clone());
    let taken: Vec<String> = with.constraint_names().map(str::to_owned).collect();
    let mut checks = Vec::new();
    for (name, expr) in &new.checks {
        let taken = taken.iter().map(String::as_str).chain(
            checks
                .iter()
                .map(|c: &crate::catalog::CheckDef| c.name.as_str()),
        );
        checks.push(crate::sql::check::declare(
            &with,
            name.clone(),
            expr,
            true,
            taken,
        )?);
    }
    with.checks.extend(checks.iter().cloned());
    // REFERENCES: every row there holds NULL, which references nothing,
    // so the foreign key holds for them; the referenced table points back
    // at it first, as for a table created with one.
    let fk = match &new.references {
        None => None,
        Some(_) if !missing.is_null() => {
            return Err(SqlError::unsupported(
                "ALTER TABLE ... ADD COLUMN with REFERENCES and a DEFAULT is not supported",
                "add the column, then the foreign key with ALTER TABLE ... ADD CONSTRAINT",
            ))
        }
        Some(declared) => {
            ddl::define_foreign_keys(ddl, &mut with, std::slice::from_ref(declared)).await?;
            let fk = with.foreign_keys.last().cloned().expect("defined");
            ddl::point_back_all(ddl, &with).await?;
            ddl.everyone_knows().await?;
            Some(fk)
        }
    };
    ddl.store.add_column(&with, i).await.map_err(store_error)?;
    let edit = |next: &mut TableDef, add: bool| {
        next.columns.retain(|c| c.name != column.name);
        next.checks
            .retain(|c| !checks.iter().any(|k| k.name == c.name));
        if let Some(fk) = &fk {
            next.foreign_keys.retain(|f| f.name != fk.name);
            next.referenced_by.retain(|b| *b != fk.inbound(&table.name));
        }
        if add {
            next.push_column(column.clone());
            next.checks.extend(checks.iter().cloned());
            if let Some(fk) = &fk {
                next.foreign_keys.push(fk.clone());
                if fk.ref_table == table.name {
                    next.referenced_by.push(fk.inbound(&table.name));
                }
            }
        }
    };
    // What the rows there read must satisfy it: NOT NULL, and the CHECKs
    // on a row holding only the missing value (else on every row).
    let mut lone = vec![Value::Null; with.columns.len()];
    lone[i] = missing.clone();
    let breaks_not_null = new.not_null && missing.is_null();
    let row_dependent = checks.iter().any(|c| c.columns != [i]);
    // Only the column's own CHECKs: the table's others hold for its rows
    // already, and would not on a row of NULLs.
    let own = TableDef {
        checks: checks.clone(),
        ..with.clone()
    };
    let lone_fails = crate::sql::check::Checks::compile(&own)?
        .verify(&own, &lone, env)
        .is_err();
    if !breaks_not_null && !row_dependent && !lone_fails {
        ddl.change(&table.name, |current| {
            let mut next =
                TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
            edit(&mut next, true);
            Ok(Some(next))
        })
        .await?;
        return Ok(command("ALTER TABLE", Vec::new()));
    }
    ddl::hold_for_row_checks(ddl, &table.name, "ALTER TABLE ... ADD COLUMN").await?;
    let checks = &checks;
    ddl.publish_checked(&table.name, edit, |published| async move {
        if breaks_not_null {
            super::alter::refuse_nulls(ddl, &published, &new.name).await?;
        }
        for c in checks {
            super::alter::violations(ddl, published.clone(), &c.name, env).await?;
        }
        Ok(())
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// The value the rows there read: the DEFAULT, computed once, as
/// PostgreSQL computes a non-volatile one; a volatile one would differ
/// per row, which only a rewrite gives.
fn missing_value(new: &NewColumn, env: &dyn Env) -> SqlResult<Value> {
    let Some(default) = &new.default else {
        return Ok(Value::Null);
    };
    let volatile = ast::visit_expressions(default, |e| match e {
        ast::Expr::Function(f)
            if [
                "gen_random_uuid",
                "nextval",
                "random",
                "clock_timestamp",
                "uuid_generate_v4",
            ]
            .contains(&f.name.to_string().to_lowercase().as_str()) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    if volatile.is_break() {
        return Err(SqlError::unsupported(
            format!(
                "ALTER TABLE ... ADD COLUMN with the volatile DEFAULT {default} is not supported"
            ),
            "add the column without it, then SET DEFAULT, and fill the rows there with UPDATE",
        ));
    }
    let mut params = Params::default();
    let expr = Compiler {
        scope: Scope {
            table: None,
            qualifier: None,
            excluded: false,
        },
        params: &mut params,
    }
    .compile(default)?;
    let v = expr.eval(&EvalCtx {
        row: None,
        excluded: None,
        params: &[],
        env,
    })?;
    v.cast_to(&new.ty)
}

/// DROP COLUMN, with the UNIQUE constraints, indexes, foreign keys, count
/// limits and CHECK constraints that use it, as PostgreSQL drops them;
/// while another table's foreign key references it, refused (2BP01), or
/// with CASCADE that foreign key is dropped too. The
/// columns after it keep their slots; every column number in the table's
/// definition, and in the foreign keys that reference the table, moves
/// down by one.
pub async fn drop_column(
    ddl: &Ddl<'_>,
    table: &TableDef,
    column: &str,
    if_exists: bool,
    cascade: bool,
) -> SqlResult<Executed> {
    let i = match column_of(table, column) {
        Ok(i) => i,
        Err(_) if if_exists => {
            let skip = format!(
                "column \"{column}\" of relation \"{}\" does not exist, skipping",
                table.name
            );
            return Ok(command("ALTER TABLE", vec![notice("00000", skip)]));
        }
        Err(e) => return Err(e),
    };
    if table.primary_key.contains(&i) {
        return Err(SqlError::unsupported(
            "dropping a primary key column is not supported",
            "keyclaim keys every row by its primary key; create a new table with the key you want and copy the rows",
        ));
    }
    // Other tables' foreign keys on the column: (table, constraint).
    let mut dependents: Vec<(String, String)> = Vec::new();
    for inbound in table
        .referenced_by
        .iter()
        .filter(|b| b.columns.contains(&i))
    {
        let Some(child) = ddl.settled(&inbound.table).await? else {
            continue;
        };
        if child
            .foreign_key(&inbound.constraint)
            .is_some_and(|fk| fk.ref_table == table.name && fk.ref_columns.contains(&i))
            && child.name != table.name
        {
            dependents.push((child.name.clone(), inbound.constraint.clone()));
        }
    }
    let mut notices = Vec::new();
    if cascade {
        for (child, constraint) in &dependents {
            notices.push(notice(
                "00000",
                format!("drop cascades to constraint {constraint} on table {child}"),
            ));
        }
    } else if !dependents.is_empty() {
        let detail: Vec<String> = dependents
            .iter()
            .map(|(child, constraint)| {
                format!(
                    "constraint {constraint} on table {child} depends on column {column} of table {}",
                    table.name
                )
            })
            .collect();
        return Err(SqlError::new(
            "2BP01",
            format!(
                "cannot drop column {column} of table {} because other objects depend on it",
                table.name
            ),
        )
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    let owned = ddl.owned_sequences(table, std::iter::once(i)).await?.pop();
    ddl.change(&table.name, |current| {
        let mut next =
            TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
        let i = column_of(&next, column)?;
        without_column(&mut next, i);
        Ok(Some(next))
    })
    .await?;
    // The tables whose foreign keys reference this one number its columns.
    let children: Vec<String> = table
        .referenced_by
        .iter()
        .map(|b| b.table.clone())
        .filter(|c| *c != table.name)
        .collect();
    for child in children {
        ddl.change(&child, |current| {
            let Some(current) = current else {
                return Ok(None);
            };
            let mut next = TableDef::clone(current);
            next.foreign_keys.retain(|f| {
                !(f.ref_table == table.name
                    && dependents
                        .iter()
                        .any(|(c, k)| *c == current.name && *k == f.name))
            });
            for fk in next
                .foreign_keys
                .iter_mut()
                .filter(|f| f.ref_table == table.name)
            {
                renumber(&mut fk.ref_columns, i);
            }
            Ok(Some(next))
        })
        .await?;
    }
    if let Some(seq) = owned {
        if ddl
            .lookup(&seq)
            .await?
            .is_some_and(|d| d.sequence.is_some())
        {
            ddl.change(&seq, |_| Ok(None)).await?;
        }
    }
    Ok(command("ALTER TABLE", notices))
}

/// Column `i` out of the definition, with what uses it.
fn without_column(t: &mut TableDef, i: usize) {
    let slots: Vec<usize> = (0..t.columns.len()).map(|j| t.slot(j)).collect();
    t.dropped_slots = t.slot_count() as u32;
    t.columns.remove(i);
    for (j, c) in t.columns.iter_mut().enumerate() {
        let slot = slots[if j < i { j } else { j + 1 }];
        c.storage.slot = (slot != j).then_some(slot as u32);
    }
    let reads = |u: &crate::catalog::UniqueDef| {
        u.columns.contains(&i)
            || u.predicate
                .as_ref()
                .is_some_and(|p| p.columns().any(|c| c == i))
    };
    t.uniques.retain(|u| !reads(u));
    t.indexes.retain(|x| !x.columns.contains(&i));
    t.foreign_keys.retain(|f| !f.columns.contains(&i));
    t.count_limits.retain(|l| !l.columns.contains(&i));
    t.checks.retain(|c| !c.columns.contains(&i));
    let name = t.name.clone();
    renumber(&mut t.primary_key, i);
    for u in &mut t.uniques {
        renumber(&mut u.columns, i);
        if let Some(p) = &mut u.predicate {
            for c in &mut p.0 {
                c.column -= usize::from(c.column > i);
            }
        }
    }
    for x in &mut t.indexes {
        renumber(&mut x.columns, i);
    }
    for f in &mut t.foreign_keys {
        renumber(&mut f.columns, i);
        if f.ref_table == name {
            renumber(&mut f.ref_columns, i);
        }
    }
    for l in &mut t.count_limits {
        renumber(&mut l.columns, i);
    }
    for c in &mut t.checks {
        renumber(&mut c.columns, i);
    }
    t.referenced_by.retain(|b| !b.columns.contains(&i));
    for b in &mut t.referenced_by {
        renumber(&mut b.columns, i);
    }
}

/// Column numbers after the dropped column `i` move down by one.
fn renumber(columns: &mut [usize], i: usize) {
    for c in columns.iter_mut().filter(|c| **c > i) {
        *c -= 1;
    }
}

/// RENAME COLUMN: the definition's name changes, the stored one stays;
/// CHECK expressions that name it are rewritten.
pub fn rename_column(next: &mut TableDef, from: &str, to: &str) -> SqlResult<()> {
    let i = next
        .column_index(from)
        .ok_or_else(|| SqlError::undefined_column(from))?;
    if next.column_index(to).is_some() {
        return Err(column_exists(next, to));
    }
    let c = &mut next.columns[i];
    if c.storage.name.is_none() {
        c.storage.name = Some(c.name.clone());
    }
    c.name = to.to_owned();
    for check in next.checks.iter_mut().filter(|k| k.columns.contains(&i)) {
        let mut expr = crate::sql::parse_expr(&check.expr)?;
        let _ = ast::visit_expressions_mut(&mut expr, |e| {
            let id = match e {
                ast::Expr::Identifier(id) => Some(id),
                ast::Expr::CompoundIdentifier(parts) => parts.last_mut(),
                _ => None,
            };
            if let Some(id) = id.filter(|id| ident(id) == from) {
                *id = ast::Ident::new(to);
                if crate::catalog::naming::quote_ident(to) != to {
                    id.quote_style = Some('"');
                }
            }
            ControlFlow::<()>::Continue(())
        });
        check.expr = expr.to_string();
    }
    Ok(())
}

/// How SET DATA TYPE changes a column. No row is rewritten, so only
/// changes whose stored values read as values of the new type are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retype {
    /// Every stored value fits the new type (a longer varchar, text, a
    /// wider integer, a numeric of more digits): the definition changes.
    Definition,
    /// A stored value may not fit (a shorter varchar, a narrower
    /// integer): the change is published, so that writers keep it, then
    /// every row is checked, as SET NOT NULL checks them (PostgreSQL's
    /// 22001 or 22003 if one does not fit).
    Checked,
}

fn integer(ty: &SqlType) -> Option<u8> {
    match ty {
        SqlType::Int2 => Some(2),
        SqlType::Int4 => Some(4),
        SqlType::Int8 => Some(8),
        _ => None,
    }
}

/// How column `column` of `table` becomes `ty`, or 0A000 where stored
/// values would have to be converted.
pub fn retype(table: &TableDef, column: &str, ty: &SqlType) -> SqlResult<Retype> {
    use SqlType as T;
    let i = column_of(table, column)?;
    let from = &table.columns[i].ty;
    let refuse = |hint: &str| {
        SqlError::unsupported(
            format!(
                "ALTER COLUMN ... TYPE from {} to {} is not supported",
                from.pg_name(),
                ty.pg_name()
            ),
            hint,
        )
    };
    Ok(match (from, ty) {
        _ if from == ty => Retype::Definition,
        (T::Varchar(Some(n)), T::Varchar(Some(m))) if m >= n => Retype::Definition,
        (T::Varchar(_) | T::Text, T::Varchar(None) | T::Text) => Retype::Definition,
        (T::Varchar(_) | T::Text, T::Varchar(Some(_))) => Retype::Checked,
        (T::Numeric(Some(a)), T::Numeric(Some(b)))
            if a.scale == b.scale && b.precision >= a.precision =>
        {
            Retype::Definition
        }
        (T::Numeric(_), T::Numeric(None)) => Retype::Definition,
        _ => match (integer(from), integer(ty)) {
            (Some(_), Some(_)) if !table.wide_ints => return Err(refuse(
                "this table was created by an earlier keyclaim, which stored its integers at their own width; create a new table and copy the rows",
            )),
            (Some(a), Some(b)) if b >= a => Retype::Definition,
            (Some(_), Some(_)) => Retype::Checked,
            _ => return Err(refuse(
                "keyclaim changes a column's type only where stored values need no conversion (varchar lengths, text, integer widths, numeric precision); add a column of the new type, copy with UPDATE, then drop the old one",
            )),
        },
    })
}

/// SET DATA TYPE in `next`, the definition only (see [`retype`]). A value
/// stored as an integer of another width reads cast to the new one
/// (`ColumnStorage::retyped`).
pub fn set_type(next: &mut TableDef, column: &str, ty: &SqlType) -> SqlResult<Retype> {
    let how = retype(next, column, ty)?;
    let i = column_of(next, column)?;
    let c = &mut next.columns[i];
    if integer(&c.ty).is_some() && c.ty != *ty {
        c.storage.retyped = true;
    }
    // One that does not fit is for the check to find in the rows that
    // read it.
    if let Some(m) = c.storage.missing.take() {
        c.storage.missing = Some(m.cast_to(ty).unwrap_or(m));
    }
    c.ty = ty.clone();
    Ok(how)
}

/// SET DATA TYPE of `changes` where some need their rows checked
/// ([`Retype::Checked`]): published, then every row read; a value that
/// does not fit takes the change back and answers its cast's error.
pub async fn set_types_checked(
    ddl: &Ddl<'_>,
    table: &TableDef,
    changes: &[(&str, &SqlType)],
) -> SqlResult<()> {
    ddl::hold_for_row_checks(ddl, &table.name, "ALTER TABLE ... ALTER COLUMN ... TYPE").await?;
    // The caller found each change possible ([`retype`]) on `table`, so
    // the edit below does not fail.
    let edit = |next: &mut TableDef, keep: bool| {
        for (column, ty) in changes {
            let (Some(i), Some(was)) = (next.column_index(column), table.column_index(column))
            else {
                continue;
            };
            if keep {
                let _ = set_type(next, column, ty);
            } else {
                next.columns[i].ty = table.columns[was].ty.clone();
                next.columns[i].storage = table.columns[was].storage.clone();
            }
        }
    };
    ddl.publish_checked(&table.name, edit, |published| async move {
        let at: Vec<(usize, &SqlType)> = changes
            .iter()
            .map(|(column, ty)| Ok((column_of(&published, column)?, *ty)))
            .collect::<SqlResult<_>>()?;
        let does_not_fit = |values: &[Value]| {
            for &(i, ty) in &at {
                if let Some(v) = values.get(i) {
                    v.cast_to(ty)?;
                }
            }
            Ok(false)
        };
        super::alter::any_row(ddl, &published, "checking ALTER COLUMN TYPE", does_not_fit)
            .await
            .map(|_| ())
    })
    .await
}

/// An identity column's sequence takes the column's new type, as in
/// PostgreSQL (its bounds follow where they were the old type's).
pub async fn retype_identity_sequences(
    ddl: &Ddl<'_>,
    table: &TableDef,
    changes: &[(&str, &SqlType)],
) -> SqlResult<()> {
    for (column, ty) in changes {
        let Some(i) = table.column_index(column) else {
            continue;
        };
        if table.columns[i].identity.is_none() || table.columns[i].ty == **ty {
            continue;
        }
        let options = crate::catalog::sequence::Options {
            ty: Some((*ty).clone()),
            ..Default::default()
        };
        for seq in ddl.owned_sequences(table, std::iter::once(i)).await? {
            ddl.change(&seq, |current| {
                let mut next =
                    TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&seq))?);
                if let Some(s) = next.sequence.as_mut() {
                    *s = s.altered(&options)?;
                }
                Ok(Some(next))
            })
            .await?;
        }
    }
    Ok(())
}

/// ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY: a sequence owned by
/// the column (named `sequence`, or as PostgreSQL chooses) is made, then
/// the column draws from it, both in the statement's transaction.
pub async fn add_identity(
    ddl: &Ddl<'_>,
    table: &TableDef,
    column: &str,
    identity: crate::catalog::Identity,
    sequence: Option<&str>,
    options: &crate::catalog::sequence::Options,
) -> SqlResult<Executed> {
    let i = column_of(table, column)?;
    let c = &table.columns[i];
    let refuse = |what: &str| {
        SqlError::new(
            sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("column \"{column}\" of relation \"{}\" {what}", table.name),
        )
    };
    if c.identity.is_some() {
        return Err(refuse("is already an identity column"));
    }
    if c.default.is_some() {
        return Err(refuse("already has a default value"));
    }
    if !c.not_null {
        return Err(refuse(
            "must be declared NOT NULL before identity can be added",
        ));
    }
    if !matches!(c.ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "identity column type must be smallint, integer, or bigint",
        ));
    }
    let name = match sequence {
        Some(s) => s.to_owned(),
        None => ddl.free_name(&table.name, column, "seq").await?,
    };
    let mut def = crate::catalog::sequence::Options {
        ty: Some(c.ty.clone()),
        ..options.clone()
    }
    .define()?;
    def.owned_by = Some((table.name.clone(), column.to_owned()));
    ddl::create_all(ddl, &[ddl::sequence_relation(&name, &def)]).await?;
    ddl.change(&table.name, |current| {
        let mut next =
            TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
        let i = column_of(&next, column)?;
        next.columns[i].identity = Some(identity);
        next.columns[i].default = Some(crate::sql::ddl::nextval_default(&name));
        Ok(Some(next))
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// DROP IDENTITY [IF EXISTS]: the column keeps its values and loses its
/// identity and default; the sequence it owned is dropped with them, in
/// the statement's transaction.
pub async fn drop_identity(
    ddl: &Ddl<'_>,
    table: &TableDef,
    column: &str,
    if_exists: bool,
) -> SqlResult<Executed> {
    let i = column_of(table, column)?;
    if table.columns[i].identity.is_none() {
        let message = format!(
            "column \"{column}\" of relation \"{}\" is not an identity column",
            table.name
        );
        if if_exists {
            return Ok(command(
                "ALTER TABLE",
                vec![notice("00000", format!("{message}, skipping"))],
            ));
        }
        return Err(SqlError::new(
            sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
            message,
        ));
    }
    let owned = ddl.owned_sequences(table, std::iter::once(i)).await?;
    ddl.change(&table.name, |current| {
        let mut next =
            TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
        let i = column_of(&next, column)?;
        next.columns[i].identity = None;
        next.columns[i].default = None;
        Ok(Some(next))
    })
    .await?;
    for seq in owned {
        ddl::drop_relation(ddl, &seq).await?;
    }
    Ok(command("ALTER TABLE", Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::NumericMod;

    fn table(wide_ints: bool) -> TableDef {
        let columns = vec![
            ColumnDef::new("i", SqlType::Int4),
            ColumnDef::new("v", SqlType::Varchar(Some(8))),
            ColumnDef::new(
                "n",
                SqlType::Numeric(Some(NumericMod {
                    precision: 6,
                    scale: 2,
                })),
            ),
            ColumnDef {
                storage: ColumnStorage {
                    missing: Some(Value::Int2(7)),
                    ..ColumnStorage::default()
                },
                ..ColumnDef::new("a", SqlType::Int2)
            },
        ];
        TableDef {
            wide_ints,
            ..TableDef::new("t", "t.1", columns, vec![0])
        }
    }

    #[test]
    fn only_changes_that_convert_no_stored_value_are_made() {
        let t = table(true);
        let how = |c: &str, ty: SqlType| retype(&t, c, &ty).map_err(|e| e.code);
        let numeric = |precision, scale| SqlType::Numeric(Some(NumericMod { precision, scale }));
        assert_eq!(how("i", SqlType::Int8), Ok(Retype::Definition));
        assert_eq!(how("i", SqlType::Int2), Ok(Retype::Checked));
        assert_eq!(how("i", SqlType::Int4), Ok(Retype::Definition));
        assert_eq!(how("v", SqlType::Varchar(Some(9))), Ok(Retype::Definition));
        assert_eq!(how("v", SqlType::Text), Ok(Retype::Definition));
        assert_eq!(how("v", SqlType::Varchar(Some(7))), Ok(Retype::Checked));
        assert_eq!(how("n", numeric(9, 2)), Ok(Retype::Definition));
        assert_eq!(how("n", SqlType::Numeric(None)), Ok(Retype::Definition));
        // Stored values would have to be converted.
        assert_eq!(how("n", numeric(9, 3)), Err("0A000"));
        assert_eq!(how("n", numeric(5, 2)), Err("0A000"));
        assert_eq!(how("i", SqlType::Text), Err("0A000"));
        assert_eq!(how("v", SqlType::Int4), Err("0A000"));
        assert_eq!(how("i", SqlType::Numeric(None)), Err("0A000"));
        assert_eq!(how("x", SqlType::Int8), Err(sqlstate::UNDEFINED_COLUMN));
        // A table whose integers are stored at their own width.
        let old = table(false);
        assert_eq!(
            retype(&old, "i", &SqlType::Int8).map_err(|e| e.code),
            Err("0A000")
        );
    }

    #[test]
    fn an_integer_column_retyped_reads_its_stored_values_cast() {
        let mut t = table(true);
        let stored = t.to_slots(&[Value::Int4(1), Value::Null, Value::Null, Value::Int2(3)]);
        set_type(&mut t, "i", &SqlType::Int8).unwrap();
        set_type(&mut t, "a", &SqlType::Int8).unwrap();
        assert!(t.columns[0].storage.retyped);
        assert_eq!(t.columns[3].storage.missing, Some(Value::Int8(7)));
        let read = t.from_slots(stored);
        assert_eq!((&read[0], &read[3]), (&Value::Int8(1), &Value::Int8(3)));
        // A varchar made longer keeps its layout plain.
        let mut plain = TableDef::new(
            "p",
            "p.1",
            vec![ColumnDef::new("v", SqlType::Varchar(Some(2)))],
            vec![0],
        );
        set_type(&mut plain, "v", &SqlType::Text).unwrap();
        assert!(plain.plain_layout());
    }
}
