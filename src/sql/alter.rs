//! ALTER TABLE, the forms that change a table's definition without
//! rewriting its rows: constraints added (UNIQUE, built as CREATE UNIQUE
//! INDEX builds; FOREIGN KEY and CHECK, checked against the rows unless
//! NOT VALID) validated and dropped, column defaults, NOT NULL set
//! (checked against the rows) and dropped. Other forms answer 0A000 with a hint.

use sqlparser::ast;

use super::ddl::check_default;
use super::plan::{ident, table_name};
use crate::error::{SqlError, SqlResult};
use crate::types::SqlType;

#[derive(Debug, Clone)]
pub struct AlterTable {
    pub table: String,
    pub if_exists: bool,
    pub ops: Vec<AlterOp>,
}

#[derive(Debug, Clone)]
pub enum AlterOp {
    /// `COMMENT ON TABLE t` (no column) or `COMMENT ON COLUMN t.c`: the
    /// text, or None (`IS NULL`) to remove it.
    Comment {
        column: Option<String>,
        text: Option<String>,
    },
    /// ADD [CONSTRAINT name] PRIMARY KEY (cols), on a table keyed by a
    /// hidden row id (`catalog::row_id`).
    AddPrimaryKey {
        name: Option<String>,
        columns: Vec<String>,
    },
    AddUnique {
        name: Option<String>,
        columns: Vec<String>,
        nulls_not_distinct: bool,
    },
    DropConstraint {
        name: String,
        if_exists: bool,
    },
    /// SET DEFAULT (the expression as SQL text) or DROP DEFAULT (None).
    Default {
        column: String,
        default: Option<String>,
    },
    NotNull {
        column: String,
        set: bool,
    },
    /// ADD [CONSTRAINT name] FOREIGN KEY [NOT VALID]: checked against the
    /// rows unless NOT VALID (`validated` false).
    AddForeignKey {
        declared: super::ddl::DeclaredForeignKey,
        validated: bool,
    },
    /// ADD [CONSTRAINT name] CHECK (expr) [NOT VALID]: checked against the
    /// rows unless NOT VALID (`validated` false).
    AddCheck {
        name: Option<String>,
        expr: Box<ast::Expr>,
        validated: bool,
    },
    /// VALIDATE CONSTRAINT name: check the rows a NOT VALID constraint
    /// has not been checked against.
    Validate {
        name: String,
    },
    /// ADD [COLUMN] [IF NOT EXISTS]: the rows there already read its
    /// missing value (`catalog::layout`).
    AddColumn(Box<NewColumn>),
    /// DROP [COLUMN] [IF EXISTS] c: with the constraints and indexes that
    /// use it, as PostgreSQL drops them.
    DropColumn {
        column: String,
        if_exists: bool,
        /// CASCADE: other tables' foreign keys on it are dropped too.
        cascade: bool,
    },
    /// RENAME [COLUMN] a TO b.
    RenameColumn {
        from: String,
        to: String,
    },
    /// OWNER TO role: keyclaim has one role, the connected user, which owns
    /// everything; None names the current user (CURRENT_USER, ...).
    Owner {
        role: Option<String>,
    },
    /// ALTER [COLUMN] c ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY
    /// [(options)]: a sequence is made for it (named `sequence`, as
    /// pg_dump names it, or as PostgreSQL chooses), which it draws from.
    AddIdentity {
        column: String,
        identity: crate::catalog::Identity,
        sequence: Option<String>,
        options: crate::catalog::sequence::Options,
    },
    /// ALTER [COLUMN] c DROP IDENTITY [IF EXISTS]: the column keeps its
    /// values and loses its default; its sequence is dropped.
    DropIdentity {
        column: String,
        if_exists: bool,
    },
    /// RENAME TO: the relation named (a table, a sequence or an index,
    /// whichever ALTER names it, as in PostgreSQL) takes the name `to`;
    /// `tag` is the statement's command word.
    Rename {
        to: String,
        tag: &'static str,
    },
    /// ALTER [COLUMN] c [SET DATA] TYPE t: only changes that every stored
    /// value already satisfies (a longer varchar, text).
    SetType {
        column: String,
        ty: SqlType,
    },
}

/// A column ALTER TABLE ... ADD COLUMN adds.
#[derive(Debug, Clone)]
pub struct NewColumn {
    pub name: String,
    pub ty: SqlType,
    pub not_null: bool,
    /// Its DEFAULT: also the value the rows there already read.
    pub default: Option<ast::Expr>,
    pub if_not_exists: bool,
    /// Its column CHECK constraints (name, expression).
    pub checks: Vec<(Option<String>, ast::Expr)>,
    /// REFERENCES: a foreign key on it (what Django's AddField of a
    /// ForeignKey sends).
    pub references: Option<super::ddl::DeclaredForeignKey>,
}

impl AlterOp {
    /// Whether it must look at the table's rows (so it runs alone).
    pub fn checks_rows(&self) -> bool {
        matches!(
            self,
            AlterOp::AddUnique { .. }
                | AlterOp::AddPrimaryKey { .. }
                | AlterOp::NotNull { set: true, .. }
                | AlterOp::AddForeignKey { .. }
                | AlterOp::AddCheck {
                    validated: true,
                    ..
                }
                | AlterOp::Validate { .. }
                | AlterOp::AddColumn(_)
                | AlterOp::DropColumn { .. }
                | AlterOp::AddIdentity { .. }
                | AlterOp::DropIdentity { .. }
        )
    }
}

/// ADD COLUMN's column: a type, NULL / NOT NULL, a DEFAULT and CHECK
/// constraints. Keys and references are added with ADD CONSTRAINT.
fn new_column(c: &ast::ColumnDef, if_not_exists: bool) -> SqlResult<NewColumn> {
    let name = ident(&c.name);
    if super::ddl::serial_type(&c.data_type).is_some() {
        return Err(SqlError::unsupported(
            "ALTER TABLE ... ADD COLUMN of a serial column is not supported",
            "add an integer column, then fill it with UPDATE",
        ));
    }
    let mut out = NewColumn {
        ty: SqlType::from_ast(&c.data_type)?,
        name,
        not_null: false,
        default: None,
        if_not_exists,
        checks: Vec::new(),
        references: None,
    };
    for opt in &c.options {
        match &opt.option {
            ast::ColumnOption::Null => {}
            ast::ColumnOption::NotNull => out.not_null = true,
            ast::ColumnOption::Default(e) => {
                check_default(e)?;
                out.default = Some(e.clone());
            }
            ast::ColumnOption::ForeignKey(fk) if out.references.is_none() => {
                out.references = Some(super::ddl::foreign_key(
                    fk,
                    opt.name.as_ref().map(ident),
                    vec![out.name.clone()],
                )?)
            }
            ast::ColumnOption::Check(k) => out.checks.push((
                k.name.as_ref().or(opt.name.as_ref()).map(ident),
                (*k.expr).clone(),
            )),
            other => {
                return Err(SqlError::unsupported(
                    format!("ALTER TABLE ... ADD COLUMN with {other} is not supported"),
                    "add the column, then the constraint with ALTER TABLE ... ADD CONSTRAINT",
                ))
            }
        }
    }
    Ok(out)
}

fn unsupported(what: impl std::fmt::Display) -> SqlError {
    SqlError::unsupported(
        format!("ALTER TABLE ... {what} is not supported"),
        "keyclaim's ALTER TABLE renames tables, adds, drops and renames columns, makes varchar columns longer, adds and drops UNIQUE, FOREIGN KEY and CHECK constraints, sets and drops column defaults and NOT NULL; for anything else create a new table and copy the rows",
    )
}

impl AlterTable {
    pub fn command_word(&self) -> &'static str {
        command_word(&self.ops)
    }
}

/// The command tag of these changes: COMMENT for a comment, else ALTER
/// TABLE.
pub fn command_word(ops: &[AlterOp]) -> &'static str {
    match ops {
        [AlterOp::Comment { .. }] => "COMMENT",
        [AlterOp::Rename { tag, .. }] => tag,
        _ => "ALTER TABLE",
    }
}

/// `COMMENT ON {TABLE t | COLUMN t.c} IS 'text' | NULL`: a change of the
/// table's definition, as ALTER TABLE makes one; other objects 0A000.
pub fn comment(
    object_type: &ast::CommentObject,
    name: &ast::ObjectName,
    text: &Option<String>,
) -> SqlResult<AlterTable> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(ident).unwrap_or_else(|| p.to_string()))
        .collect();
    let (table, column) = match (object_type, parts.as_slice()) {
        (ast::CommentObject::Table, [.., t]) => (t.clone(), None),
        (ast::CommentObject::Column, [.., t, c]) => (t.clone(), Some(c.clone())),
        (ast::CommentObject::Column, _) => {
            return Err(SqlError::syntax("column name must be qualified"))
        }
        (other, _) => {
            return Err(SqlError::unsupported(
                format!("COMMENT ON {other} is not supported"),
                "keyclaim keeps comments on tables and columns",
            ))
        }
    };
    Ok(AlterTable {
        table,
        if_exists: false,
        ops: vec![AlterOp::Comment {
            column,
            text: text.clone(),
        }],
    })
}

pub fn alter_table(at: &ast::AlterTable) -> SqlResult<AlterTable> {
    let mut ops = Vec::new();
    for op in &at.operations {
        ops.push(match op {
            ast::AlterTableOperation::AddConstraint {
                constraint: ast::TableConstraint::Unique(u),
                not_valid: false,
            } => AlterOp::AddUnique {
                name: u.name.as_ref().map(ident),
                columns: super::ddl::index_columns(&u.columns)?,
                nulls_not_distinct: u.nulls_distinct == ast::NullsDistinctOption::NotDistinct,
            },
            ast::AlterTableOperation::AddConstraint {
                constraint: ast::TableConstraint::PrimaryKey(pk),
                not_valid: false,
            } => AlterOp::AddPrimaryKey {
                name: pk.name.as_ref().map(ident),
                columns: super::ddl::index_columns(&pk.columns)?,
            },
            ast::AlterTableOperation::AddConstraint {
                constraint: ast::TableConstraint::ForeignKey(fk),
                not_valid,
            } => AlterOp::AddForeignKey {
                declared: super::ddl::foreign_key(
                    fk,
                    fk.name.as_ref().map(ident),
                    fk.columns.iter().map(ident).collect(),
                )?,
                validated: !not_valid,
            },
            ast::AlterTableOperation::AddConstraint {
                constraint: ast::TableConstraint::Check(c),
                not_valid,
            } => AlterOp::AddCheck {
                name: c.name.as_ref().map(ident),
                expr: c.expr.clone(),
                validated: !not_valid,
            },
            ast::AlterTableOperation::ValidateConstraint { name } => {
                AlterOp::Validate { name: ident(name) }
            }
            ast::AlterTableOperation::AddColumn {
                if_not_exists,
                column_def,
                column_position: None,
                ..
            } => AlterOp::AddColumn(Box::new(new_column(column_def, *if_not_exists)?)),
            ast::AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                drop_behavior,
                ..
            } if column_names.len() == 1 => AlterOp::DropColumn {
                column: ident(&column_names[0]),
                if_exists: *if_exists,
                cascade: *drop_behavior == Some(ast::DropBehavior::Cascade),
            },
            ast::AlterTableOperation::OwnerTo { new_owner } => AlterOp::Owner {
                role: match new_owner {
                    ast::Owner::Ident(i) => Some(ident(i)),
                    _ => None,
                },
            },
            ast::AlterTableOperation::RenameTable {
                table_name: ast::RenameTableNameKind::To(to),
            } => AlterOp::Rename {
                to: table_name(to)?,
                tag: "ALTER TABLE",
            },
            ast::AlterTableOperation::RenameColumn {
                old_column_name,
                new_column_name,
            } => AlterOp::RenameColumn {
                from: ident(old_column_name),
                to: ident(new_column_name),
            },
            ast::AlterTableOperation::DropConstraint {
                if_exists,
                name,
                drop_behavior: None | Some(ast::DropBehavior::Restrict),
            } => AlterOp::DropConstraint {
                name: ident(name),
                if_exists: *if_exists,
            },
            ast::AlterTableOperation::AlterColumn { column_name, op } => {
                let column = ident(column_name);
                match op {
                    ast::AlterColumnOperation::SetDefault { value } => {
                        check_default(value)?;
                        AlterOp::Default {
                            column,
                            default: Some(super::ddl::default_text(value)),
                        }
                    }
                    ast::AlterColumnOperation::DropDefault => {
                        let mark = super::sequence_options::SEQUENCE_NAME_MARK;
                        match column.split_once(mark) {
                            Some((c, carried)) => AlterOp::DropIdentity {
                                column: c.to_owned(),
                                if_exists: carried != super::sequence_options::DROP_IDENTITY,
                            },
                            None => AlterOp::Default {
                                column,
                                default: None,
                            },
                        }
                    }
                    ast::AlterColumnOperation::SetNotNull => AlterOp::NotNull { column, set: true },
                    ast::AlterColumnOperation::SetDataType {
                        data_type, using, ..
                    } if using
                        .as_ref()
                        .is_none_or(|u| is_own_cast(u, &column, data_type)) =>
                    {
                        AlterOp::SetType {
                            column,
                            ty: SqlType::from_ast(data_type)?,
                        }
                    }
                    ast::AlterColumnOperation::AddGenerated {
                        generated_as,
                        sequence_options,
                    } => {
                        let (column, sequence) =
                            match column.split_once(super::sequence_options::SEQUENCE_NAME_MARK) {
                                Some((c, s)) => (
                                    c.to_owned(),
                                    Some(crate::engine::sequence::relation_name(s)?),
                                ),
                                None => (column, None),
                            };
                        AlterOp::AddIdentity {
                            column,
                            identity: match generated_as {
                                Some(ast::GeneratedAs::ByDefault) => {
                                    crate::catalog::Identity::ByDefault
                                }
                                _ => crate::catalog::Identity::Always,
                            },
                            sequence,
                            options: super::ddl::sequence_options(
                                None,
                                sequence_options.as_deref().unwrap_or(&[]),
                            )?,
                        }
                    }
                    ast::AlterColumnOperation::DropNotNull => {
                        AlterOp::NotNull { column, set: false }
                    }
                    other => return Err(unsupported(format!("ALTER COLUMN {other}"))),
                }
            }
            other => return Err(unsupported(other)),
        });
    }
    if let Some(to) = at.operations.iter().find_map(|op| match op {
        ast::AlterTableOperation::RenameTable {
            table_name: ast::RenameTableNameKind::To(to),
        } if at.operations.len() > 1 => Some(to),
        _ => None,
    }) {
        // PostgreSQL's grammar has RENAME TO only alone: the comma after
        // the new name is where it stops.
        use sqlparser::ast::Spanned;
        return Err(SqlError::syntax("syntax error at or near \",\"").at(to.span().end));
    }
    if ops.len() > 1 && ops.iter().any(AlterOp::checks_rows) {
        return Err(SqlError::unsupported(
            "ALTER TABLE that adds a constraint or SET NOT NULL together with other changes is not supported",
            "run each of them as an ALTER TABLE of its own",
        ));
    }
    Ok(AlterTable {
        table: table_name(&at.name)?,
        if_exists: at.if_exists,
        ops,
    })
}

/// `ALTER INDEX name RENAME TO to` (any relation, as in PostgreSQL).
pub fn rename_index(name: &ast::ObjectName, to: &ast::ObjectName) -> SqlResult<AlterTable> {
    Ok(AlterTable {
        table: table_name(name)?,
        if_exists: false,
        ops: vec![AlterOp::Rename {
            to: table_name(to)?,
            tag: "ALTER INDEX",
        }],
    })
}

/// Whether a `USING` expression is the column cast to the new type
/// (`USING ("title"::varchar(300))`, what knex's `.alter()` sends), which
/// is what a type change without USING does.
fn is_own_cast(using: &ast::Expr, column: &str, data_type: &ast::DataType) -> bool {
    let mut e = using;
    while let ast::Expr::Nested(inner) = e {
        e = inner;
    }
    match e {
        ast::Expr::Cast {
            expr,
            data_type: to,
            ..
        } => {
            let mut inner = expr.as_ref();
            while let ast::Expr::Nested(i) = inner {
                inner = i;
            }
            matches!(inner, ast::Expr::Identifier(id) if ident(id) == column)
                && to.to_string() == data_type.to_string()
        }
        _ => false,
    }
}
