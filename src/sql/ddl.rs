//! CREATE TABLE and CREATE INDEX into table definitions, with PostgreSQL's
//! constraint names and errors.

use sqlparser::ast;

use super::expr::{Compiler, Params, Scope};
use super::plan::{ident, table_name};
use crate::catalog::{naming, storage_id, ColumnDef, TableDef, UniqueDef};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::SqlType;

#[derive(Debug)]
pub struct CreateTable {
    /// Storage ids are fresh at execution; these are placeholders.
    pub def: TableDef,
    pub if_not_exists: bool,
}

#[derive(Debug)]
pub struct CreateIndex {
    pub name: Option<String>,
    pub table: String,
    pub columns: Vec<String>,
    pub if_not_exists: bool,
    pub nulls_not_distinct: bool,
}

fn unsupported_option(what: &str) -> SqlError {
    SqlError::unsupported(
        format!("{what} is not supported"),
        "keyclaim enforces PRIMARY KEY, UNIQUE and NOT NULL; use DEFAULT for generated values",
    )
}

/// A declared key: its columns, optional name, and NULLS NOT DISTINCT.
struct Key {
    name: Option<String>,
    columns: Vec<String>,
    nulls_not_distinct: bool,
}

fn index_columns(cols: &[ast::IndexColumn]) -> SqlResult<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(id) => Ok(ident(id)),
            other => Err(SqlError::unsupported(
                format!("index expression {other} is not supported"),
                "index plain columns",
            )),
        })
        .collect()
}

pub fn create_table(ct: &ast::CreateTable) -> SqlResult<CreateTable> {
    if ct.temporary || ct.or_replace || ct.query.is_some() || ct.like.is_some() {
        return Err(unsupported_option("this form of CREATE TABLE"));
    }
    let name = table_name(&ct.name)?;
    let mut columns: Vec<ColumnDef> = Vec::new();
    let mut pkeys: Vec<Key> = Vec::new();
    let mut uniques: Vec<Key> = Vec::new();
    for col in &ct.columns {
        let cname = ident(&col.name);
        if columns.iter().any(|c| c.name == cname) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{cname}\" specified more than once"),
            ));
        }
        let ty = SqlType::from_ast(&col.data_type)?;
        let mut def = ColumnDef {
            name: cname.clone(),
            ty: ty.clone(),
            not_null: false,
            default: None,
        };
        for opt in &col.options {
            let cname_opt = opt.name.as_ref().map(ident);
            match &opt.option {
                ast::ColumnOption::Null => {}
                ast::ColumnOption::NotNull => def.not_null = true,
                ast::ColumnOption::Default(e) => {
                    check_default(e, &ty)?;
                    def.default = Some(e.to_string());
                }
                ast::ColumnOption::PrimaryKey(_) => pkeys.push(Key {
                    name: cname_opt,
                    columns: vec![cname.clone()],
                    nulls_not_distinct: false,
                }),
                ast::ColumnOption::Unique(u) => uniques.push(Key {
                    name: cname_opt,
                    columns: vec![cname.clone()],
                    nulls_not_distinct: u.nulls_distinct == ast::NullsDistinctOption::NotDistinct,
                }),
                ast::ColumnOption::ForeignKey(_) => {
                    return Err(unsupported_option("REFERENCES (foreign keys)"))
                }
                ast::ColumnOption::Check(_) => return Err(unsupported_option("CHECK")),
                other => return Err(unsupported_option(&format!("column option {other}"))),
            }
        }
        columns.push(def);
    }
    for c in &ct.constraints {
        match c {
            ast::TableConstraint::PrimaryKey(pk) => pkeys.push(Key {
                name: pk.name.as_ref().map(ident),
                columns: index_columns(&pk.columns)?,
                nulls_not_distinct: false,
            }),
            ast::TableConstraint::Unique(u) => uniques.push(Key {
                name: u.name.as_ref().map(ident),
                columns: index_columns(&u.columns)?,
                nulls_not_distinct: u.nulls_distinct == ast::NullsDistinctOption::NotDistinct,
            }),
            ast::TableConstraint::ForeignKey(_) => return Err(unsupported_option("FOREIGN KEY")),
            ast::TableConstraint::Check(_) => return Err(unsupported_option("CHECK")),
            other => return Err(unsupported_option(&format!("constraint {other}"))),
        }
    }
    let pk =
        match pkeys.len() {
            0 => return Err(SqlError::unsupported(
                format!("table \"{name}\" has no PRIMARY KEY"),
                "declare a PRIMARY KEY: keyclaim stores each row in its own partition, keyed by it",
            )),
            1 => pkeys.remove(0),
            _ => {
                return Err(SqlError::new(
                    sqlstate::INVALID_TABLE_DEFINITION,
                    format!("multiple primary keys for table \"{name}\" are not allowed"),
                ))
            }
        };
    let resolve = |cols: &[String]| -> SqlResult<Vec<usize>> {
        cols.iter()
            .map(|c| {
                columns.iter().position(|d| &d.name == c).ok_or_else(|| {
                    SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!("column \"{c}\" named in key does not exist"),
                    )
                })
            })
            .collect()
    };
    let pk_cols = resolve(&pk.columns)?;
    let pkey_name = pk.name.clone().unwrap_or_else(|| naming::pkey_name(&name));
    let mut def = TableDef {
        name: name.clone(),
        id: String::new(),
        columns: columns.clone(),
        primary_key: pk_cols.clone(),
        pkey_name,
        uniques: Vec::new(),
        cql_table: None,
    };
    for &i in &pk_cols {
        def.columns[i].not_null = true;
    }
    for key in uniques {
        let cols = resolve(&key.columns)?;
        let uname = match key.name {
            Some(n) => {
                if def.constraint_names().any(|c| c == n) {
                    return Err(SqlError::new(
                        sqlstate::DUPLICATE_TABLE,
                        format!("relation \"{n}\" already exists"),
                    ));
                }
                n
            }
            None => {
                let col_names: Vec<&str> = key.columns.iter().map(String::as_str).collect();
                naming::unique_name(&name, &col_names, def.constraint_names())
            }
        };
        def.uniques.push(UniqueDef {
            name: uname,
            id: String::new(),
            columns: cols,
            nulls_not_distinct: key.nulls_not_distinct,
            is_index: false,
        });
    }
    Ok(CreateTable {
        def,
        if_not_exists: ct.if_not_exists,
    })
}

/// A DEFAULT must be a constant expression we can evaluate (no columns).
fn check_default(e: &ast::Expr, _ty: &SqlType) -> SqlResult<()> {
    let mut params = Params::default();
    let mut c = Compiler {
        scope: Scope {
            table: None,
            qualifier: None,
            excluded: false,
        },
        params: &mut params,
    };
    c.compile(e).map(|_| ()).map_err(|err| {
        if err.code == sqlstate::UNDEFINED_COLUMN {
            SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "cannot use column reference in DEFAULT expression",
            )
        } else {
            err
        }
    })
}

pub fn create_index(ci: &ast::CreateIndex) -> SqlResult<CreateIndex> {
    if !ci.unique {
        return Err(SqlError::unsupported(
            "non-unique indexes are not supported",
            "keyclaim builds UNIQUE indexes (CREATE UNIQUE INDEX); other filters scan",
        ));
    }
    if ci.predicate.is_some() || !ci.include.is_empty() {
        return Err(SqlError::unsupported(
            "partial indexes and INCLUDE are not supported",
            "index plain columns: CREATE UNIQUE INDEX name ON t (a, b)",
        ));
    }
    Ok(CreateIndex {
        name: ci.name.as_ref().map(table_name).transpose()?,
        table: table_name(&ci.table_name)?,
        columns: index_columns(&ci.columns)?,
        if_not_exists: ci.if_not_exists,
        nulls_not_distinct: ci.nulls_distinct == Some(false),
    })
}

/// Give a planned definition fresh storage ids for its table and constraints.
pub fn with_storage_ids(mut def: TableDef) -> TableDef {
    def.id = storage_id(&def.name);
    for u in &mut def.uniques {
        u.id = storage_id(&u.name);
    }
    def
}
