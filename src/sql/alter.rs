//! ALTER TABLE, the forms that change a table's definition without
//! rewriting its rows: constraints added (UNIQUE, built as CREATE UNIQUE
//! INDEX builds; FOREIGN KEY and CHECK, checked against the rows unless
//! NOT VALID) validated and dropped, column defaults, NOT NULL set
//! (checked against the rows) and dropped. Other forms answer 0A000 with a hint.

use sqlparser::ast;

use super::ddl::check_default;
use super::plan::{ident, table_name};
use crate::error::{SqlError, SqlResult};

#[derive(Debug, Clone)]
pub struct AlterTable {
    pub table: String,
    pub if_exists: bool,
    pub ops: Vec<AlterOp>,
}

#[derive(Debug, Clone)]
pub enum AlterOp {
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
    /// ADD [CONSTRAINT name] FOREIGN KEY: checked against the rows.
    AddForeignKey(super::ddl::DeclaredForeignKey),
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
}

impl AlterOp {
    /// Whether it must look at the table's rows (so it runs alone).
    pub fn checks_rows(&self) -> bool {
        matches!(
            self,
            AlterOp::AddUnique { .. }
                | AlterOp::NotNull { set: true, .. }
                | AlterOp::AddForeignKey(_)
                | AlterOp::AddCheck {
                    validated: true,
                    ..
                }
                | AlterOp::Validate { .. }
        )
    }
}

fn unsupported(what: impl std::fmt::Display) -> SqlError {
    SqlError::unsupported(
        format!("ALTER TABLE ... {what} is not supported"),
        "keyclaim's ALTER TABLE adds and drops UNIQUE, FOREIGN KEY and CHECK constraints, sets and drops column defaults and NOT NULL; for anything else create a new table and copy the rows",
    )
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
                constraint: ast::TableConstraint::ForeignKey(fk),
                not_valid: false,
            } => AlterOp::AddForeignKey(super::ddl::foreign_key(
                fk,
                fk.name.as_ref().map(ident),
                fk.columns.iter().map(ident).collect(),
            )?),
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
                            default: Some(value.to_string()),
                        }
                    }
                    ast::AlterColumnOperation::DropDefault => AlterOp::Default {
                        column,
                        default: None,
                    },
                    ast::AlterColumnOperation::SetNotNull => AlterOp::NotNull { column, set: true },
                    ast::AlterColumnOperation::DropNotNull => {
                        AlterOp::NotNull { column, set: false }
                    }
                    other => return Err(unsupported(format!("ALTER COLUMN {other}"))),
                }
            }
            other => return Err(unsupported(other)),
        });
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
