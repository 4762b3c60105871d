//! ALTER TABLE: each form is a change of the table's definition through
//! [`Ddl::change`], so it is transactional in a block and seen by other
//! proxies through the catalog epoch. Forms that must look at the rows
//! (ADD UNIQUE, SET NOT NULL) publish the new definition first, so that
//! writers check it, and then read every row, as a unique index is built.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::info;

use super::columns;
use super::ddl::{self, command, notice, write_error, Ddl};
use super::foreign_keys;
use super::Executed;
use crate::catalog::{
    naming, storage_id, store_error, CheckDef, ForeignKeyDef, TableDef, UniqueDef,
};
use crate::claims::{self, RowWrite};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::alter::{AlterOp, AlterTable};
use crate::sql::check::Checks;
use crate::sql::ddl::DeclaredForeignKey;
use crate::sql::expr::Env;
use crate::types::Value;

pub async fn alter_table(ddl: &Ddl<'_>, plan: &AlterTable, env: &dyn Env) -> SqlResult<Executed> {
    let name = &plan.table;
    if let [AlterOp::Rename { to, tag }] = plan.ops.as_slice() {
        return super::rename::rename(ddl, name, to, plan.if_exists, tag).await;
    }
    let Some(table) = ddl.lookup(name).await? else {
        if plan.if_exists {
            return Ok(command(
                "ALTER TABLE",
                vec![notice(
                    "00000",
                    format!("relation \"{name}\" does not exist, skipping"),
                )],
            ));
        }
        return Err(SqlError::undefined_table(name));
    };
    for op in &plan.ops {
        if let AlterOp::Owner { role: Some(r) } = op {
            ddl::owner_is_user(r, &env.user())?;
        }
    }
    let ops: Vec<AlterOp> = plan
        .ops
        .iter()
        .filter(|op| !matches!(op, AlterOp::Owner { .. }))
        .cloned()
        .collect();
    if ops.is_empty() {
        return Ok(command("ALTER TABLE", Vec::new()));
    }
    if table.sequence.is_some() {
        return Err(SqlError::new("42809", format!("\"{name}\" is not a table")));
    }
    let changes_columns = ops.iter().any(|op| {
        matches!(
            op,
            AlterOp::AddColumn(_)
                | AlterOp::DropColumn { .. }
                | AlterOp::RenameColumn { .. }
                | AlterOp::SetType { .. }
        )
    });
    if changes_columns && table.cql_table.is_some() {
        // Its columns are the CQL table's, which keyclaim did not create.
        return Err(SqlError::unsupported(
            format!("changing the columns of the adopted table \"{name}\" is not supported"),
            "change the CQL table and its [[store.adopt]] entry, then restart the proxies",
        ));
    }
    match ops.as_slice() {
        [AlterOp::AddUnique {
            name: given,
            columns,
            nulls_not_distinct,
        }] => add_unique(ddl, &table, given.as_deref(), columns, *nulls_not_distinct).await,
        [AlterOp::AddPrimaryKey {
            name: given,
            columns,
        }] => add_primary_key(ddl, &table, given.as_deref(), columns).await,
        [AlterOp::NotNull { column, set: true }] => set_not_null(ddl, &table, column).await,
        [AlterOp::AddForeignKey {
            declared,
            validated,
        }] => add_foreign_key(ddl, &table, declared, *validated).await,
        [AlterOp::AddCheck {
            name,
            expr,
            validated: true,
        }] => add_check(ddl, &table, name.clone(), expr, env).await,
        [AlterOp::Validate { name }] => validate(ddl, &table, name, env).await,
        [AlterOp::AddColumn(new)] => columns::add_column(ddl, &table, new, env).await,
        [AlterOp::DropColumn {
            column,
            if_exists,
            cascade,
        }] => columns::drop_column(ddl, &table, column, *if_exists, *cascade).await,
        [AlterOp::AddIdentity {
            column,
            identity,
            sequence,
            options,
        }] => {
            columns::add_identity(ddl, &table, column, *identity, sequence.as_deref(), options)
                .await
        }
        [AlterOp::DropIdentity { column, if_exists }] => {
            columns::drop_identity(ddl, &table, column, *if_exists).await
        }
        ops => {
            let retyped = set_types(ops);
            let mut checked = false;
            for (column, ty) in &retyped {
                checked |= columns::retype(&table, column, ty)? == columns::Retype::Checked;
            }
            if !checked {
                return change_definition(ddl, &table, ops).await;
            }
            if retyped.len() != ops.len() {
                return Err(SqlError::unsupported(
                    "ALTER COLUMN ... TYPE that checks the rows together with other changes is not supported",
                    "run the type change as an ALTER TABLE of its own",
                ));
            }
            columns::set_types_checked(ddl, &table, &retyped).await?;
            columns::retype_identity_sequences(ddl, &table, &retyped).await?;
            Ok(command("ALTER TABLE", Vec::new()))
        }
    }
}

/// The SET DATA TYPE changes among `ops`: each column with its new type.
fn set_types(ops: &[AlterOp]) -> Vec<(&str, &crate::types::SqlType)> {
    ops.iter()
        .filter_map(|op| match op {
            AlterOp::SetType { column, ty } => Some((column.as_str(), ty)),
            _ => None,
        })
        .collect()
}

/// Column `column` of `t`, or PostgreSQL's 42703 naming the relation.
pub(super) fn column_of(t: &TableDef, column: &str) -> SqlResult<usize> {
    t.column_index(column).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                t.name
            ),
        )
    })
}

fn identity_column(t: &TableDef, column: &str) -> SqlError {
    SqlError::new(
        sqlstate::SYNTAX_ERROR,
        format!(
            "column \"{column}\" of relation \"{}\" is an identity column",
            t.name
        ),
    )
}

/// The forms that change only the definition, applied together in one
/// change: all of them or none.
async fn change_definition(
    ddl: &Ddl<'_>,
    table: &TableDef,
    ops: &[AlterOp],
) -> SqlResult<Executed> {
    let mut notices = Vec::new();
    let mut dropped: Vec<UniqueDef> = Vec::new();
    ddl.change(&table.name, |current| {
        let mut next = TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
        notices.clear();
        dropped.clear();
        for op in ops {
            match op {
                AlterOp::Comment { column, text } => match column {
                    None => next.comment = text.clone(),
                    Some(c) => {
                        let i = column_of(&next, c)?;
                        next.columns[i].comment = text.clone();
                    }
                },
                AlterOp::Default { column, default } => {
                    let i = column_of(&next, column)?;
                    if next.columns[i].identity.is_some() {
                        let e = identity_column(&next, column);
                        return Err(match default {
                            Some(_) => e,
                            None => e.with_hint(
                                "Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.",
                            ),
                        });
                    }
                    next.columns[i].default = default.clone();
                }
                AlterOp::NotNull { column, set: false } => {
                    let i = column_of(&next, column)?;
                    if next.columns[i].identity.is_some() {
                        return Err(identity_column(&next, column));
                    }
                    if next.primary_key.contains(&i) {
                        return Err(SqlError::new(
                            "42P16",
                            format!("column \"{column}\" is in a primary key"),
                        ));
                    }
                    next.columns[i].not_null = false;
                }
                AlterOp::DropConstraint { name, if_exists } => {
                    // A primary key added to a table keyed by a hidden row
                    // id goes as the UNIQUE constraint it is enforced as.
                    if next.row_id().is_some() && next.pkey_name == *name {
                        next.primary_key.clear();
                        next.pkey_name.clear();
                    }
                    if next.pkey_name == *name {
                        return Err(SqlError::unsupported(
                            "dropping a table's primary key is not supported",
                            "keyclaim keys every row by its primary key; create a new table with the key you want and copy the rows",
                        ));
                    }
                    let fk = next.foreign_keys.iter().position(|f| &f.name == name);
                    let check = next.checks.iter().position(|c| &c.name == name);
                    match next.uniques.iter().position(|u| &u.name == name && !u.is_index) {
                        Some(i) => dropped.push(next.uniques.remove(i)),
                        None if check.is_some() => {
                            next.checks.remove(check.expect("found"));
                        }
                        // The referenced table's pointer stays, a hint
                        // that now leads nowhere (`catalog::foreign_key`).
                        None if fk.is_some() => {
                            next.foreign_keys.remove(fk.expect("found"));
                        }
                        None if *if_exists => notices.push(notice(
                            "00000",
                            format!(
                                "constraint \"{name}\" of relation \"{}\" does not exist, skipping",
                                next.name
                            ),
                        )),
                        None => {
                            return Err(SqlError::new(
                                sqlstate::UNDEFINED_OBJECT,
                                format!(
                                    "constraint \"{name}\" of relation \"{}\" does not exist",
                                    next.name
                                ),
                            ))
                        }
                    }
                }
                AlterOp::AddCheck {
                    name,
                    expr,
                    validated: false,
                } => {
                    let check = declare_check(&next, name.clone(), expr, false)?;
                    next.checks.push(check);
                }
                AlterOp::RenameColumn { from, to } => columns::rename_column(&mut next, from, to)?,
                AlterOp::SetType { column, ty } => {
                    columns::set_type(&mut next, column, ty)?;
                }
                AlterOp::AddUnique { .. }
                | AlterOp::NotNull { set: true, .. }
                | AlterOp::AddForeignKey { .. }
                | AlterOp::AddPrimaryKey { .. }
                | AlterOp::AddCheck { .. }
                | AlterOp::Validate { .. }
                | AlterOp::AddColumn(_)
                | AlterOp::DropColumn { .. }
                | AlterOp::Owner { .. }
                | AlterOp::AddIdentity { .. }
                | AlterOp::DropIdentity { .. }
                | AlterOp::Rename { .. } => unreachable!("planned to run alone"),
            }
        }
        Ok(Some(next))
    })
    .await?;
    columns::retype_identity_sequences(ddl, table, &set_types(ops)).await?;
    // A renamed column's sequence names it as its owner anew.
    for op in ops {
        if let AlterOp::RenameColumn { from, to } = op {
            follow_renamed_column(ddl, table, from, to).await?;
        }
    }
    // A dropped constraint's claims go now; in a block, once it commits.
    if ddl.open.is_none() {
        for u in dropped {
            ddl.store.drop_claims(&u.id).await.map_err(store_error)?;
        }
    }
    Ok(command(crate::sql::alter::command_word(ops), notices))
}

/// The sequence column `from` of `table` owned (OWNED BY), owned by the
/// column under its new name `to`.
async fn follow_renamed_column(
    ddl: &Ddl<'_>,
    table: &TableDef,
    from: &str,
    to: &str,
) -> SqlResult<()> {
    let Some(i) = table.column_index(from) else {
        return Ok(());
    };
    for seq in ddl.owned_sequences(table, std::iter::once(i)).await? {
        ddl.change(&seq, |current| {
            let mut next = TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&seq))?);
            if let Some(owner) = next.sequence.as_mut().and_then(|s| s.owned_by.as_mut()) {
                owner.1 = to.to_owned();
            }
            Ok(Some(next))
        })
        .await?;
    }
    Ok(())
}

/// ADD [CONSTRAINT name] UNIQUE (cols): built as CREATE UNIQUE INDEX builds.
async fn add_unique(
    ddl: &Ddl<'_>,
    table: &TableDef,
    given: Option<&str>,
    columns: &[String],
    nulls_not_distinct: bool,
) -> SqlResult<Executed> {
    let name = given.map(str::to_owned).unwrap_or_else(|| {
        let names: Vec<&str> = columns.iter().map(String::as_str).collect();
        naming::unique_name(&table.name, &names, table.index_names())
    });
    let key = Key {
        name,
        nulls_not_distinct,
        primary: false,
    };
    add_key(ddl, table, key, columns, "ALTER TABLE ... ADD UNIQUE").await
}

/// ADD [CONSTRAINT name] PRIMARY KEY (cols): only a table keyed by a
/// hidden row id has none (`catalog::row_id`). Its rows stay where they
/// are; the key is enforced through claims as a UNIQUE constraint is,
/// built as ADD UNIQUE builds one, after its columns are found free of
/// NULLs.
async fn add_primary_key(
    ddl: &Ddl<'_>,
    table: &TableDef,
    given: Option<&str>,
    columns: &[String],
) -> SqlResult<Executed> {
    if table.row_id().is_none() || !table.primary_key.is_empty() {
        return Err(crate::sql::ddl::multiple_primary_keys(&table.name));
    }
    let key = Key {
        name: given.map_or_else(|| naming::pkey_name(&table.name), str::to_owned),
        nulls_not_distinct: false,
        primary: true,
    };
    add_key(ddl, table, key, columns, "ALTER TABLE ... ADD PRIMARY KEY").await
}

/// What ADD UNIQUE and ADD PRIMARY KEY add.
struct Key {
    name: String,
    nulls_not_distinct: bool,
    primary: bool,
}

async fn add_key(
    ddl: &Ddl<'_>,
    table: &TableDef,
    key: Key,
    columns: &[String],
    what: &str,
) -> SqlResult<Executed> {
    ddl::hold_for_row_checks(ddl, &table.name, what).await?;
    let mut cols = Vec::with_capacity(columns.len());
    for c in columns {
        cols.push(column_of(table, c)?);
    }
    let name = key.name;
    if ddl.lookup(&name).await?.is_some() || ddl::index_exists(ddl, &name).await? {
        return Err(SqlError::new(
            sqlstate::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        ));
    }
    let unique = UniqueDef {
        id: storage_id(&name),
        name,
        columns: cols,
        nulls_not_distinct: key.nulls_not_distinct,
        is_index: false,
        primary: key.primary,
        predicate: None,
        building: false,
    };
    ddl::add_unique(ddl, &table.name, unique).await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// ADD [CONSTRAINT name] FOREIGN KEY [NOT VALID]: the referenced table
/// points back at it, it is published (so writers keep it), and once every
/// proxy keeps it every row is checked (unless NOT VALID); a reference
/// whose key is missing takes the constraint back and answers PostgreSQL's
/// 23503.
async fn add_foreign_key(
    ddl: &Ddl<'_>,
    table: &TableDef,
    declared: &DeclaredForeignKey,
    validated: bool,
) -> SqlResult<Executed> {
    if validated {
        let what = "ALTER TABLE ... ADD FOREIGN KEY";
        ddl::hold_for_row_checks(ddl, &table.name, what).await?;
    }
    let taken: Vec<String> = table.constraint_names().map(str::to_owned).collect();
    if let Some(name) = declared.name.as_ref().filter(|n| taken.contains(n)) {
        return Err(ddl::constraint_exists(name, &table.name));
    }
    let parent = match ddl.lookup(&declared.ref_table).await? {
        Some(p) => p,
        None => return Err(SqlError::undefined_table(&declared.ref_table)),
    };
    let fk = ForeignKeyDef {
        validated,
        ..foreign_keys::define(table, declared, &parent, &taken)?
    };
    let inbound = fk.inbound(&table.name);
    let self_reference = fk.ref_table == table.name;
    if !self_reference {
        ddl.point_back(&fk.ref_table, &inbound).await?;
    }
    let change = |next: &mut TableDef, add: bool| {
        next.foreign_keys.retain(|f| f.name != fk.name);
        if add {
            next.foreign_keys.push(fk.clone());
            if self_reference && !next.referenced_by.contains(&inbound) {
                next.referenced_by.push(inbound.clone());
            }
        }
    };
    ddl.publish_checked(&table.name, change, |published| {
        let fk = &fk;
        async move {
            if !validated {
                return Ok(());
            }
            let parent = if self_reference {
                published.clone()
            } else {
                parent
            };
            every_reference_found(ddl, &published, fk, &parent).await
        }
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// PostgreSQL's 23503 for the first row of `child` whose reference through
/// `fk` finds no row of `parent`.
async fn every_reference_found(
    ddl: &Ddl<'_>,
    child: &TableDef,
    fk: &ForeignKeyDef,
    parent: &TableDef,
) -> SqlResult<()> {
    match foreign_keys::unreferenced(ddl, child, fk, parent).await? {
        None => Ok(()),
        Some(key) => Err(foreign_keys::not_present(child, fk, &key)),
    }
}

/// SET NOT NULL: publish it (so writers check it), then read every row; a
/// NULL found takes the change back and answers PostgreSQL's 23502.
async fn set_not_null(ddl: &Ddl<'_>, table: &TableDef, column: &str) -> SqlResult<Executed> {
    let i = column_of(table, column)?;
    let set = |next: &mut TableDef, on: bool| next.columns[i].not_null = on;
    if table.columns[i].not_null {
        return Ok(command("ALTER TABLE", Vec::new()));
    }
    ddl.publish_checked(&table.name, set, |published| async move {
        refuse_nulls(ddl, &published, column).await
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// Every row of `table` checked for a NULL in `column`, about to be NOT
/// NULL: PostgreSQL's 23502 if one holds it.
pub(super) async fn refuse_nulls(ddl: &Ddl<'_>, table: &TableDef, column: &str) -> SqlResult<()> {
    let i = column_of(table, column)?;
    let null = |values: &[Value]| Ok(values.get(i).is_none_or(Value::is_null));
    if !any_row(ddl, table, "checking NOT NULL", null).await? {
        return Ok(());
    }
    Err(SqlError::new(
        sqlstate::NOT_NULL_VIOLATION,
        format!(
            "column \"{column}\" of relation \"{}\" contains null values",
            table.name
        ),
    )
    .with_table(&table.name)
    .with_column(column))
}

/// A CHECK constraint declared on `table`, its name free there (42710).
fn declare_check(
    table: &TableDef,
    name: Option<String>,
    expr: &sqlparser::ast::Expr,
    validated: bool,
) -> SqlResult<CheckDef> {
    if let Some(n) = name
        .as_ref()
        .filter(|n| table.constraint_names().any(|c| c == *n))
    {
        return Err(ddl::constraint_exists(n, &table.name));
    }
    crate::sql::check::declare(table, name, expr, validated, table.constraint_names())
}

/// ADD [CONSTRAINT name] CHECK (expr): publish it (so writers check it),
/// then read every row; a row that makes it false takes it back and
/// answers PostgreSQL's 23514.
async fn add_check(
    ddl: &Ddl<'_>,
    table: &TableDef,
    name: Option<String>,
    expr: &sqlparser::ast::Expr,
    env: &dyn Env,
) -> SqlResult<Executed> {
    ddl::hold_for_row_checks(ddl, &table.name, "ALTER TABLE ... ADD CHECK").await?;
    let check = declare_check(table, name, expr, true)?;
    let edit = |next: &mut TableDef, add: bool| {
        next.checks.retain(|c| c.name != check.name);
        if add {
            next.checks.push(check.clone());
        }
    };
    ddl.publish_checked(&table.name, edit, |published| {
        violations(ddl, published, &check.name, env)
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// VALIDATE CONSTRAINT: a NOT VALID CHECK constraint or foreign key is
/// kept by every writer already; read the rows, and mark it validated if
/// none breaks it. Any other constraint is valid: nothing to do.
async fn validate(
    ddl: &Ddl<'_>,
    table: &TableDef,
    name: &str,
    env: &dyn Env,
) -> SqlResult<Executed> {
    let Some(check) = table.checks.iter().find(|c| c.name == name) else {
        if let Some(fk) = table.foreign_key(name) {
            return validate_foreign_key(ddl, table, fk).await;
        }
        if table.constraint_names().any(|c| c == name) {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!(
                    "constraint \"{name}\" of relation \"{}\" is not a foreign key or check constraint",
                    table.name
                ),
            ));
        }
        return Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!(
                "constraint \"{name}\" of relation \"{}\" does not exist",
                table.name
            ),
        ));
    };
    if check.validated {
        return Ok(command("ALTER TABLE", Vec::new()));
    }
    violations(ddl, Arc::new(table.clone()), name, env).await?;
    ddl.change(&table.name, |current| {
        let mut next =
            TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
        for c in next.checks.iter_mut().filter(|c| c.name == name) {
            c.validated = true;
        }
        Ok(Some(next))
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// VALIDATE CONSTRAINT of a foreign key: every row's reference looked up
/// (and, in a block, its referenced row locked, as ADD FOREIGN KEY does),
/// then the constraint marked validated.
async fn validate_foreign_key(
    ddl: &Ddl<'_>,
    table: &TableDef,
    fk: &ForeignKeyDef,
) -> SqlResult<Executed> {
    if fk.validated {
        return Ok(command("ALTER TABLE", Vec::new()));
    }
    let parent = if fk.ref_table == table.name {
        Arc::new(table.clone())
    } else {
        ddl.lookup(&fk.ref_table)
            .await?
            .ok_or_else(|| SqlError::undefined_table(&fk.ref_table))?
    };
    every_reference_found(ddl, table, fk, &parent).await?;
    ddl.change(&table.name, |current| {
        let mut next =
            TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(&table.name))?);
        for f in next.foreign_keys.iter_mut().filter(|f| f.name == fk.name) {
            f.validated = true;
        }
        Ok(Some(next))
    })
    .await?;
    Ok(command("ALTER TABLE", Vec::new()))
}

/// 23514 if a row of `table` makes its CHECK constraint `name` false.
pub(super) async fn violations(
    ddl: &Ddl<'_>,
    table: Arc<TableDef>,
    name: &str,
    env: &dyn Env,
) -> SqlResult<()> {
    let only = TableDef {
        checks: table
            .checks
            .iter()
            .filter(|c| c.name == name)
            .cloned()
            .collect(),
        ..TableDef::clone(&table)
    };
    let checks = Checks::compile(&only)?;
    let fails = |values: &[Value]| {
        Ok(match checks.verify(&only, values, env) {
            Ok(()) => false,
            Err(e) if e.code == sqlstate::CHECK_VIOLATION => true,
            Err(e) => return Err(e),
        })
    };
    if any_row(ddl, &table, "checking a CHECK constraint", fails).await? {
        return Err(crate::sql::check::violated_by_some_row(&table.name, name));
    }
    Ok(())
}

/// Whether a live row makes `pred` true, waiting for rows that open
/// transactions are writing, as an index build does; progress in the log
/// as `what`.
pub(super) async fn any_row(
    ddl: &Ddl<'_>,
    table: &TableDef,
    what: &str,
    pred: impl Fn(&[Value]) -> SqlResult<bool>,
) -> SqlResult<bool> {
    let lock_timeout = ddl.claims.lock_timeout;
    let w = RowWrite {
        deadline: Instant::now() + lock_timeout,
        born_ms: claims::now_ms(),
        ..ddl.waiter(table)
    };
    let (mut cursor, mut rows, mut last_log) = (None::<Vec<u8>>, 0u64, Instant::now());
    loop {
        let batch = ddl
            .store
            .scan_rows(table, cursor.as_deref(), ddl.page)
            .await
            .map_err(store_error)?;
        for (pk, row) in &batch.rows {
            let row = match row.intent {
                None => row.live.then(|| row.clone()),
                Some(_) => {
                    let w = RowWrite {
                        deadline: Instant::now() + lock_timeout,
                        ..w
                    };
                    claims::settled_row(&w, pk, row.clone())
                        .await
                        .map_err(write_error)?
                }
            };
            if let Some(row) = row {
                if pred(&row.values)? {
                    return Ok(true);
                }
            }
        }
        rows += batch.rows.len() as u64;
        if last_log.elapsed() > Duration::from_secs(5) {
            info!(table = %table.name, rows, "{what}");
            last_log = Instant::now();
        }
        match batch.next {
            Some(next) => cursor = Some(next),
            None => return Ok(false),
        }
    }
}
