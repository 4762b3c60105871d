//! CREATE TABLE and CREATE INDEX into table definitions, with PostgreSQL's
//! constraint names and errors.

use sqlparser::ast;

use super::expr::{Compiler, Params, Scope};
use super::plan::{ident, table_name};
use crate::catalog::row_id;
use crate::catalog::sequence::Options;
use crate::catalog::{
    naming, storage_id, ColumnDef, Identity, RefAction, SequenceDef, TableDef, UniqueDef,
};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::SqlType;

#[derive(Debug)]
pub struct CreateTable {
    /// Storage ids are fresh at execution; these are placeholders.
    pub def: TableDef,
    pub if_not_exists: bool,
    /// The sequences its serial and identity columns own, created with it;
    /// their names are chosen at execution (`<table>_<column>_seq`, or
    /// with a number if taken), and the column's default names them.
    pub owned: Vec<OwnedSequence>,
    /// Its FOREIGN KEYs, resolved against the referenced tables when it runs.
    pub foreign_keys: Vec<DeclaredForeignKey>,
}

/// A FOREIGN KEY as declared (CREATE TABLE, ALTER TABLE ... ADD): the
/// referenced side is resolved against the catalog when the statement runs
/// (`engine::foreign_keys::define`).
#[derive(Debug, Clone)]
pub struct DeclaredForeignKey {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub ref_table: String,
    /// Empty: the referenced table's primary key.
    pub ref_columns: Vec<String>,
    pub on_delete: RefAction,
    pub on_update: RefAction,
    pub deferrable: bool,
    pub initially_deferred: bool,
}

/// A FOREIGN KEY clause, declared on `columns` (a column's REFERENCES
/// names its own column).
pub fn foreign_key(
    fk: &ast::ForeignKeyConstraint,
    name: Option<String>,
    columns: Vec<String>,
) -> SqlResult<DeclaredForeignKey> {
    if matches!(
        fk.match_kind,
        Some(ast::ConstraintReferenceMatchKind::Full | ast::ConstraintReferenceMatchKind::Partial)
    ) {
        return Err(SqlError::unsupported(
            "MATCH FULL and MATCH PARTIAL foreign keys are not supported",
            "omit MATCH: keyclaim checks foreign keys as MATCH SIMPLE, PostgreSQL's default",
        ));
    }
    let action = |a: &Option<ast::ReferentialAction>| match a {
        None | Some(ast::ReferentialAction::NoAction) => RefAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => RefAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => RefAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => RefAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => RefAction::SetDefault,
    };
    let (mut deferrable, mut initially_deferred) = (false, false);
    if let Some(c) = &fk.characteristics {
        if c.enforced == Some(false) {
            return Err(SqlError::unsupported(
                "NOT ENFORCED foreign keys are not supported",
                "declare the foreign key without NOT ENFORCED",
            ));
        }
        initially_deferred = c.initially == Some(ast::DeferrableInitial::Deferred);
        deferrable = c.deferrable.unwrap_or(initially_deferred);
        if initially_deferred && !deferrable {
            return Err(SqlError::syntax(
                "constraint declared INITIALLY DEFERRED must be DEFERRABLE",
            ));
        }
    }
    Ok(DeclaredForeignKey {
        name,
        columns,
        ref_table: table_name(&fk.foreign_table)?,
        ref_columns: fk.referred_columns.iter().map(ident).collect(),
        on_delete: action(&fk.on_delete),
        on_update: action(&fk.on_update),
        deferrable,
        initially_deferred,
    })
}

/// A sequence a serial or identity column owns.
#[derive(Debug, Clone)]
pub struct OwnedSequence {
    pub column: usize,
    pub def: SequenceDef,
}

/// CREATE SEQUENCE.
#[derive(Debug)]
pub struct CreateSequence {
    pub name: String,
    pub def: SequenceDef,
    pub if_not_exists: bool,
}

/// What a serial or identity column's default says: PostgreSQL's text.
/// The sequence `e` draws from when it is `nextval` of a constant name
/// (`nextval('public.t_id_seq'::regclass)`, as pg_dump writes it).
pub fn nextval_of(e: &ast::Expr) -> Option<String> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    let name = f.name.to_string().to_ascii_lowercase();
    if name != "nextval" && name != "pg_catalog.nextval" {
        return None;
    }
    let ast::FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
        return None;
    };
    let mut arg = arg;
    while let ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) = arg {
        arg = expr;
    }
    match arg {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => crate::engine::sequence::relation_name(s).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// A column DEFAULT as the catalog keeps it: as written, except that a
/// `nextval` of a constant name takes the form PostgreSQL shows
/// (`nextval('t_id_seq'::regclass)`), the one serial columns have.
pub fn default_text(e: &ast::Expr) -> String {
    match nextval_of(e) {
        Some(seq) => nextval_default(&seq),
        None => e.to_string(),
    }
}

pub fn nextval_default(sequence: &str) -> String {
    format!(
        "nextval('{}'::regclass)",
        naming::quote_ident(sequence).replace('\'', "''")
    )
}

/// `serial`, `bigserial`, `smallserial` (and their `serialN` spellings):
/// the integer type they stand for.
pub(super) fn serial_type(dt: &ast::DataType) -> Option<SqlType> {
    let ast::DataType::Custom(name, mods) = dt else {
        return None;
    };
    if !mods.is_empty() || name.0.len() != 1 {
        return None;
    }
    let n = name.0[0].as_ident()?.value.to_ascii_lowercase();
    match n.as_str() {
        "serial" | "serial4" => Some(SqlType::Int4),
        "bigserial" | "serial8" => Some(SqlType::Int8),
        "smallserial" | "serial2" => Some(SqlType::Int2),
        _ => None,
    }
}

/// An integer in a sequence option (`START WITH -5`).
fn option_int(e: &ast::Expr) -> SqlResult<i64> {
    let bad = || SqlError::syntax(format!("syntax error at or near \"{e}\""));
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse().map_err(|_| bad()),
            _ => Err(bad()),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => option_int(expr).map(|v| -v),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Plus,
            expr,
        } => option_int(expr),
        _ => Err(bad()),
    }
}

/// CREATE SEQUENCE's (or an identity column's) options.
pub fn sequence_options(ty: Option<SqlType>, opts: &[ast::SequenceOptions]) -> SqlResult<Options> {
    let mut o = Options {
        ty,
        ..Options::default()
    };
    for opt in opts {
        match opt {
            ast::SequenceOptions::IncrementBy(e, _) => o.increment = Some(option_int(e)?),
            ast::SequenceOptions::MinValue(e) => {
                o.min = Some(e.as_ref().map(option_int).transpose()?)
            }
            ast::SequenceOptions::MaxValue(e) => {
                o.max = Some(e.as_ref().map(option_int).transpose()?)
            }
            ast::SequenceOptions::StartWith(e, _) => o.start = Some(option_int(e)?),
            ast::SequenceOptions::Cache(e) => o.cache = Some(option_int(e)?),
            ast::SequenceOptions::Cycle(no) => o.cycle = Some(!no),
        }
    }
    Ok(o)
}

pub fn create_sequence(
    name: &ast::ObjectName,
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
    owned_by: Option<&ast::ObjectName>,
    if_not_exists: bool,
) -> SqlResult<CreateSequence> {
    let ty = data_type.map(SqlType::from_ast).transpose()?;
    let mut def = sequence_options(ty, options)?.define()?;
    if let Some(owner) = owned_by {
        let parts: Vec<String> = owner
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(ident))
            .collect();
        def.owned_by = match parts.as_slice() {
            [none] if none.eq_ignore_ascii_case("none") => None,
            [t, c] | [_, t, c] => Some((t.clone(), c.clone())),
            _ => {
                return Err(SqlError::syntax(
                    "invalid OWNED BY option: specify OWNED BY table.column or OWNED BY NONE",
                ))
            }
        };
    }
    Ok(CreateSequence {
        name: table_name(name)?,
        def,
        if_not_exists,
    })
}

#[derive(Debug)]
pub struct CreateIndex {
    /// UNIQUE: enforced through claims; else a plain index, recorded.
    pub unique: bool,
    pub concurrently: bool,
    pub name: Option<String>,
    pub table: String,
    pub columns: Vec<String>,
    pub if_not_exists: bool,
    pub nulls_not_distinct: bool,
    /// A partial UNIQUE index's WHERE (`catalog::predicate`).
    pub predicate: Option<ast::Expr>,
}

fn unsupported_option(what: &str) -> SqlError {
    SqlError::unsupported(
        format!("{what} is not supported"),
        "keyclaim enforces PRIMARY KEY, UNIQUE, FOREIGN KEY, CHECK and NOT NULL; use DEFAULT for generated values",
    )
}

/// A declared key: its columns, optional name, and NULLS NOT DISTINCT.
struct Key {
    name: Option<String>,
    columns: Vec<String>,
    nulls_not_distinct: bool,
}

pub(super) fn index_columns(cols: &[ast::IndexColumn]) -> SqlResult<Vec<String>> {
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

/// 42P16: a table has one primary key at most.
pub fn multiple_primary_keys(table: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TABLE_DEFINITION,
        format!("multiple primary keys for table \"{table}\" are not allowed"),
    )
}

pub fn create_table(ct: &ast::CreateTable) -> SqlResult<CreateTable> {
    if ct.temporary || ct.or_replace || ct.query.is_some() || ct.like.is_some() {
        return Err(unsupported_option("this form of CREATE TABLE"));
    }
    let name = table_name(&ct.name)?;
    let mut columns: Vec<ColumnDef> = Vec::new();
    let mut owned: Vec<OwnedSequence> = Vec::new();
    let mut pkeys: Vec<Key> = Vec::new();
    let mut uniques: Vec<Key> = Vec::new();
    let mut foreign_keys: Vec<DeclaredForeignKey> = Vec::new();
    // Column constraints first, then the table's, as PostgreSQL names them.
    let mut checks: Vec<(Option<String>, &ast::Expr)> = Vec::new();
    for col in &ct.columns {
        let cname = ident(&col.name);
        if columns.iter().any(|c| c.name == cname) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{cname}\" specified more than once"),
            ));
        }
        let serial = serial_type(&col.data_type);
        let ty = match &serial {
            Some(ty) => ty.clone(),
            None => SqlType::from_ast(&col.data_type)?,
        };
        let mut def = ColumnDef {
            name: cname.clone(),
            ty: ty.clone(),
            not_null: serial.is_some(),
            default: None,
            identity: None,
            hidden: false,
            comment: None,
            storage: Default::default(),
        };
        if serial.is_some() {
            let mut seq = Options {
                ty: Some(ty.clone()),
                ..Options::default()
            }
            .define()?;
            seq.owned_by = Some((table_name(&ct.name)?, cname.clone()));
            owned.push(OwnedSequence {
                column: columns.len(),
                def: seq,
            });
        }
        for opt in &col.options {
            let cname_opt = opt.name.as_ref().map(ident);
            match &opt.option {
                ast::ColumnOption::Null => {}
                ast::ColumnOption::NotNull => def.not_null = true,
                ast::ColumnOption::Default(e) => {
                    if serial.is_some() {
                        return Err(default_clash("multiple default values", &cname, &name));
                    }
                    if def.identity.is_some() {
                        return Err(default_clash("both default and identity", &cname, &name));
                    }
                    check_default(e)?;
                    def.default = Some(default_text(e));
                }
                ast::ColumnOption::Generated {
                    generated_as,
                    sequence_options: options,
                    generation_expr: None,
                    ..
                } => {
                    if serial.is_some() || def.default.is_some() {
                        return Err(default_clash("both default and identity", &cname, &name));
                    }
                    if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
                        return Err(SqlError::new(
                            "22023",
                            "identity column type must be smallint, integer, or bigint",
                        ));
                    }
                    def.identity = Some(match generated_as {
                        ast::GeneratedAs::ByDefault => Identity::ByDefault,
                        _ => Identity::Always,
                    });
                    def.not_null = true;
                    let mut seq =
                        sequence_options(Some(ty.clone()), options.as_deref().unwrap_or(&[]))?
                            .define()?;
                    seq.owned_by = Some((name.clone(), cname.clone()));
                    owned.push(OwnedSequence {
                        column: columns.len(),
                        def: seq,
                    });
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
                ast::ColumnOption::ForeignKey(fk) => {
                    foreign_keys.push(foreign_key(fk, cname_opt, vec![cname.clone()])?)
                }
                ast::ColumnOption::Check(c) => {
                    checks.push((c.name.as_ref().map(ident).or(cname_opt), &c.expr))
                }
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
            ast::TableConstraint::ForeignKey(fk) => foreign_keys.push(foreign_key(
                fk,
                fk.name.as_ref().map(ident),
                fk.columns.iter().map(ident).collect(),
            )?),
            ast::TableConstraint::Check(c) => checks.push((c.name.as_ref().map(ident), &c.expr)),
            other => return Err(unsupported_option(&format!("constraint {other}"))),
        }
    }
    if pkeys.len() > 1 {
        return Err(multiple_primary_keys(&name));
    }
    let pk = pkeys.pop();
    // No primary key: rows are keyed by a hidden row id (`catalog::row_id`).
    if pk.is_none() {
        if columns.iter().any(|c| c.name == row_id::ROW_ID) {
            return Err(SqlError::unsupported(
                format!("column name \"{}\" is reserved", row_id::ROW_ID),
                "keyclaim keys the rows of a table without a PRIMARY KEY by a hidden column of that name; rename the column or declare a PRIMARY KEY",
            ));
        }
        columns.push(row_id::column());
    }
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
    let (pk_cols, pkey_name) = match &pk {
        Some(pk) => (
            resolve(&pk.columns)?,
            pk.name.clone().unwrap_or_else(|| naming::pkey_name(&name)),
        ),
        None => (Vec::new(), String::new()),
    };
    let mut def = TableDef {
        pkey_name,
        wide_ints: true,
        ..TableDef::new(&name, "", columns.clone(), pk_cols.clone())
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
            primary: false,
            predicate: None,
            building: false,
        });
    }
    for (name, expr) in checks {
        if let Some(n) = name
            .as_ref()
            .filter(|n| def.constraint_names().any(|c| c == *n))
        {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_OBJECT,
                format!("check constraint \"{n}\" already exists"),
            ));
        }
        let taken: Vec<String> = def.constraint_names().map(str::to_owned).collect();
        let check =
            super::check::declare(&def, name, expr, true, taken.iter().map(String::as_str))?;
        def.checks.push(check);
    }
    Ok(CreateTable {
        def,
        if_not_exists: ct.if_not_exists,
        owned,
        foreign_keys,
    })
}

/// A column given two ways to fill itself (42601, PostgreSQL's words).
fn default_clash(what: &str, column: &str, table: &str) -> SqlError {
    SqlError::new(
        sqlstate::SYNTAX_ERROR,
        format!("{what} specified for column \"{column}\" of table \"{table}\""),
    )
}

/// A DEFAULT must be a constant expression we can evaluate (no columns).
pub(super) fn check_default(e: &ast::Expr) -> SqlResult<()> {
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
    // A partial UNIQUE index is enforced on the rows its predicate covers
    // (`catalog::predicate`); a plain index lists every row, so its
    // predicate and INCLUDE change nothing.
    if ci.unique && !ci.include.is_empty() {
        return Err(SqlError::unsupported(
            "INCLUDE on a unique index is not supported",
            "index plain columns: CREATE UNIQUE INDEX name ON t (a, b)",
        ));
    }
    Ok(CreateIndex {
        unique: ci.unique,
        concurrently: ci.concurrently,
        name: ci.name.as_ref().map(table_name).transpose()?,
        table: table_name(&ci.table_name)?,
        columns: index_columns(&ci.columns)?,
        if_not_exists: ci.if_not_exists,
        nulls_not_distinct: ci.nulls_distinct == Some(false),
        predicate: ci.predicate.clone().filter(|_| ci.unique),
    })
}

/// Give a planned definition fresh storage ids for its table and constraints.
pub fn with_storage_ids(mut def: TableDef) -> TableDef {
    def.id = storage_id(&def.name);
    for u in &mut def.uniques {
        u.id = storage_id(&u.name);
    }
    for i in &mut def.indexes {
        if i.kept() {
            i.id = storage_id(&i.name);
        }
    }
    def
}

/// TRUNCATE [TABLE] [ONLY] t [, ...] [RESTART | CONTINUE IDENTITY]
/// [CASCADE | RESTRICT] (`engine::truncate`).
#[derive(Debug, Clone)]
pub struct Truncate {
    pub names: Vec<String>,
    /// RESTART IDENTITY: the sequences the tables own start over.
    pub restart_identity: bool,
    /// CASCADE: tables whose foreign keys reference these are emptied too.
    pub cascade: bool,
}

pub fn truncate(t: &ast::Truncate) -> SqlResult<Truncate> {
    if t.partitions.is_some() || t.on_cluster.is_some() {
        return Err(unsupported_option("this form of TRUNCATE"));
    }
    Ok(Truncate {
        names: t
            .table_names
            .iter()
            .map(|n| table_name(&n.name))
            .collect::<SqlResult<_>>()?,
        restart_identity: matches!(t.identity, Some(ast::TruncateIdentityOption::Restart)),
        cascade: matches!(t.cascade, Some(ast::CascadeOption::Cascade)),
    })
}
