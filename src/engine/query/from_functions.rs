//! Functions in FROM, as PostgreSQL runs them (`SELECT * FROM
//! current_schema()`, `FROM generate_series(1, 3) AS g(n)`, `FROM
//! unnest(ARRAY[1, 2]) AS u(x)`).
//!
//! DataFusion knows table functions of its own, with its own column names
//! and types and constant arguments only. Here each call in FROM becomes a
//! subquery of one row of select items instead, which DataFusion plans
//! like any other, parameters and all:
//!
//! - a scalar function `f(args)` is `(SELECT f(args) AS "f") AS "f"`;
//! - `generate_series(args)` is `(SELECT unnest(generate_series(args)))`,
//!   with `series`' function, which gives PostgreSQL's types;
//! - `unnest(a, b)` is `(SELECT unnest(a), unnest(b))`, whose shorter
//!   lists are padded with NULLs, as in PostgreSQL.
//!
//! WITH ORDINALITY numbers the rows with `row_number() OVER ()` around
//! that subquery. Arguments that name columns of other FROM items (an
//! implicit LATERAL in PostgreSQL) are refused: DataFusion cannot run that
//! join.
//!
//! The names follow PostgreSQL's: the relation is named after the function
//! unless aliased; a function of one column names its column after the
//! function, or after the alias (`AS s` names the column `s` too), unless
//! `AS t(c)` names it. The keywords PostgreSQL reads as function calls
//! without parentheses (`FROM current_user`) are calls here too.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, JoinOperator, ObjectName, ObjectNamePart, Query, Select, SelectItem,
    SetExpr, Statement, TableAlias, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::rules::{call, folded, name_parts, UNIQUE_MARK};
use crate::error::{sqlstate, SqlError, SqlResult};

/// The keywords PostgreSQL's grammar takes as function calls without
/// parentheses, in FROM as anywhere else.
const KEYWORD_FUNCTIONS: &[&str] = &[
    "current_user",
    "session_user",
    "current_role",
    "user",
    "current_catalog",
    "current_schema",
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
];

/// PostgreSQL's set-returning functions keyclaim does not run in FROM:
/// treated as scalar functions they would answer one row where
/// PostgreSQL answers many, so they are refused instead.
const UNSUPPORTED_SETS: &[&str] = &[
    "generate_subscripts",
    "regexp_matches",
    "regexp_split_to_table",
    "string_to_table",
    "json_each",
    "json_each_text",
    "jsonb_each",
    "jsonb_each_text",
    "json_array_elements",
    "json_array_elements_text",
    "jsonb_array_elements",
    "jsonb_array_elements_text",
    "json_object_keys",
    "jsonb_object_keys",
    "json_to_recordset",
    "jsonb_to_recordset",
    "json_populate_recordset",
    "jsonb_populate_recordset",
    "jsonb_path_query",
    "pg_get_keywords",
    "pg_options_to_table",
    "pg_show_all_settings",
    "pg_timezone_names",
    "pg_timezone_abbrevs",
    "pg_listening_channels",
    "pg_cursor",
    "pg_prepared_statement",
    "pg_lock_status",
    "aclexplode",
];

/// Whether a plain FROM item without arguments names one of the keyword
/// functions (`FROM current_user`): an unquoted single name.
pub(crate) fn is_keyword_function(name: &[(String, bool)]) -> bool {
    matches!(name, [(n, false)] if KEYWORD_FUNCTIONS.contains(&n.to_lowercase().as_str()))
}

/// `unnest(c.conkey) [WITH ORDINALITY] [AS] u[(v[, n])]`, an array of
/// attribute numbers of another FROM item's row (Django's constraint
/// introspection reads `conkey` so, in a subquery of each pg_constraint
/// row): PostgreSQL's implicit LATERAL, which DataFusion cannot run, is
/// here a join with the hidden relation of that array's elements
/// (`system::pg_catalog::ELEMENTS`), `u.owner = c.oid` added to the
/// WHERE. Only an item of the FROM list or of an inner join is rewritten
/// (the condition would change an outer join).
pub(crate) fn lateral_key_arrays(q: &mut Query) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_select(&mut self, s: &mut Select) -> ControlFlow<()> {
            let mut conditions = Vec::new();
            for twj in &mut s.from {
                conditions.extend(key_array(&mut twj.relation));
                for j in &mut twj.joins {
                    let inner = matches!(
                        j.join_operator,
                        JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_)
                    );
                    if inner {
                        conditions.extend(key_array(&mut j.relation));
                    }
                }
            }
            for c in conditions {
                s.selection = Some(match s.selection.take() {
                    Some(w) => Expr::BinaryOp {
                        left: Box::new(Expr::Nested(Box::new(w))),
                        op: BinaryOperator::And,
                        right: Box::new(c),
                    },
                    None => c,
                });
            }
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Rewrite);
}

/// One FROM item rewritten as [`lateral_key_arrays`] says; the condition
/// that ties it to its row.
fn key_array(t: &mut TableFactor) -> Option<Expr> {
    // `unnest(...)`, or `pg_catalog.unnest(...)`, a call by name.
    let (alias, array_exprs, with_ordinality): (_, Vec<&Expr>, _) = match t {
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset: false,
            with_ordinality,
            ..
        } => (alias, array_exprs.iter().collect(), with_ordinality),
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            with_ordinality,
            ..
        } if function_name(name).as_deref() == Some("unnest") => {
            let exprs = args
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            (alias, exprs, with_ordinality)
        }
        _ => return None,
    };
    // `row.array` each, of one row: a known array, and for an index's
    // keys perhaps their options beside them.
    let mut arrays = array_exprs.iter().map(|e| match e {
        Expr::CompoundIdentifier(p) if p.len() == 2 => Some((p[0].clone(), folded(&p[1]))),
        _ => None,
    });
    let (row, column) = arrays.next()??;
    let (relation, owner, has_option) = super::system::elements_of(&column)?;
    let with_option = match arrays.next() {
        None => false,
        Some(Some((r, c))) if has_option && c == "indoption" && folded(&r) == folded(&row) => true,
        Some(_) => return None,
    };
    if arrays.next().is_some() {
        return None;
    }
    let name = alias
        .as_ref()
        .map(|a| a.name.clone())
        .unwrap_or_else(|| Ident::new("unnest"));
    let mut given = alias
        .as_ref()
        .map(|a| a.columns.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_else(Vec::new)
        .into_iter();
    // PostgreSQL's names: the alias (or the function) for the element,
    // then the option's when `indoption` is unnested beside `indkey`, then
    // `ordinality` for the position, unless the alias lists names.
    let element = given.next().unwrap_or_else(|| name.clone());
    let option = with_option
        .then(|| given.next())
        .flatten()
        .unwrap_or_else(|| Ident::with_quote('"', format!("{relation} option")));
    let ordinality = given
        .next()
        .filter(|_| *with_ordinality)
        .unwrap_or_else(|| Ident::new("ordinality"));
    let owner_column = Ident::with_quote('"', format!("{relation} owner"));
    let names = if has_option {
        format!("{owner_column}, {element}, {option}, {ordinality}")
    } else {
        format!("{owner_column}, {element}, {ordinality}")
    };
    let sql = format!(
        "SELECT * FROM pg_catalog.{} AS {name} ({names})",
        Ident::with_quote('"', relation)
    );
    let mut parsed = Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?;
    let Some(Statement::Query(q)) = parsed.pop() else {
        return None;
    };
    let SetExpr::Select(mut select) = *q.body else {
        return None;
    };
    *t = select.from.pop()?.relation;
    Some(Expr::BinaryOp {
        left: Box::new(Expr::CompoundIdentifier(vec![name, owner_column])),
        op: BinaryOperator::Eq,
        right: Box::new(Expr::CompoundIdentifier(vec![row, Ident::new(owner)])),
    })
}

/// Rewrite every function call in the FROM items of `q` (its subqueries
/// included) into a subquery.
pub(crate) fn functions_in_from(q: &mut Query) -> SqlResult<()> {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = SqlError;
        fn post_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<SqlError> {
            match rewrite(t) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
    }
    match q.visit(&mut Rewrite) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// One FROM item that is a function call: what its subquery selects.
struct Call {
    /// The function's name, folded: the relation's and column's default.
    name: String,
    /// One select item per result column.
    items: Vec<Expr>,
    alias: Option<TableAlias>,
    /// WITH ORDINALITY: a bigint column numbering the rows from 1.
    ordinality: bool,
}

fn rewrite(t: &mut TableFactor) -> SqlResult<()> {
    let call = match t {
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            with_ordinality,
            ..
        } => {
            let function = function_name(name);
            let list = FunctionArgumentList {
                duplicate_treatment: None,
                args: std::mem::take(&mut args.args),
                clauses: Vec::new(),
            };
            let items = match function.as_deref() {
                Some("unnest") => {
                    if list.args.is_empty() {
                        return Err(SqlError::new(
                            sqlstate::UNDEFINED_FUNCTION,
                            "function unnest() does not exist",
                        )
                        .with_hint(NO_MATCH));
                    }
                    list.args
                        .into_iter()
                        .map(|a| {
                            Expr::Function(function_call(
                                ObjectName(vec![ObjectNamePart::Identifier(Ident::new(
                                    "unnest",
                                ))]),
                                FunctionArguments::List(FunctionArgumentList {
                                    duplicate_treatment: None,
                                    args: vec![a],
                                    clauses: Vec::new(),
                                }),
                            ))
                        })
                        .collect()
                }
                Some("generate_series") => {
                    let series = function_call(
                        ObjectName(vec![ObjectNamePart::Identifier(Ident::new(
                            super::series::NAME,
                        ))]),
                        FunctionArguments::List(list),
                    );
                    vec![call("unnest", Expr::Function(series))]
                }
                Some(set) if UNSUPPORTED_SETS.contains(&set) => {
                    return Err(SqlError::unsupported(
                        format!("set-returning function {set}() in FROM is not supported"),
                        "keyclaim runs generate_series() and unnest() in FROM, and functions of one value",
                    ))
                }
                _ => vec![Expr::Function(function_call(
                    name.clone(),
                    FunctionArguments::List(list),
                ))],
            };
            Call {
                name: last_name(name),
                items,
                alias: alias.take(),
                ordinality: *with_ordinality,
            }
        }
        TableFactor::Table {
            name,
            args: None,
            alias,
            with_ordinality,
            ..
        } if is_keyword_function(&parts_of(name)) => Call {
            name: last_name(name),
            items: vec![Expr::Function(function_call(
                name.clone(),
                FunctionArguments::None,
            ))],
            alias: alias.take(),
            ordinality: *with_ordinality,
        },
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset,
            with_ordinality,
            ..
        } => {
            if *with_offset {
                return Err(SqlError::syntax("syntax error at or near \"WITH\""));
            }
            Call {
                name: "unnest".into(),
                items: std::mem::take(array_exprs)
                    .into_iter()
                    .map(|a| call("unnest", a))
                    .collect(),
                alias: alias.take(),
                ordinality: *with_ordinality,
            }
        }
        _ => return Ok(()),
    };
    if call.items.iter().any(refers_to_columns) {
        return Err(SqlError::unsupported(
            "a function in FROM that refers to columns of other FROM items is not supported",
            "call it with constants or parameters, or join a series that covers every row's range and filter",
        ));
    }
    *t = subquery(call)?;
    Ok(())
}

/// Whether an expression names a column of its own query (LATERAL in
/// PostgreSQL, where a function's arguments may name columns of the FROM
/// items before it): DataFusion runs no such join. Its subqueries' names
/// are their own.
fn refers_to_columns(e: &Expr) -> bool {
    struct Find {
        depth: usize,
    }
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) if self.depth == 0 => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    e.visit(&mut Find { depth: 0 }).is_break()
}

const NO_MATCH: &str =
    "No function matches the given name and argument types. You might need to add explicit type casts.";

/// The name's parts, each with whether it was quoted.
fn parts_of(name: &ObjectName) -> Vec<(String, bool)> {
    name.0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(|i| (i.value.clone(), i.quote_style.is_some()))
                .unwrap_or_default()
        })
        .collect()
}

/// The function a name calls when it is one keyclaim runs as a set
/// (unqualified or in pg_catalog); None when qualified by another schema.
fn function_name(name: &ObjectName) -> Option<String> {
    match name_parts(name).as_slice() {
        [n] => Some(n.clone()),
        [schema, n] if schema == "pg_catalog" => Some(n.clone()),
        _ => None,
    }
}

fn last_name(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(folded)
        .unwrap_or_default()
}

fn function_call(name: ObjectName, args: FunctionArguments) -> Function {
    Function {
        name,
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args,
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    }
}

/// The subquery a call becomes, under the relation and column names
/// PostgreSQL gives it.
fn subquery(c: Call) -> SqlResult<TableFactor> {
    let relation = c
        .alias
        .as_ref()
        .map_or_else(|| c.name.clone(), |a| folded(&a.name));
    let given: Vec<String> = c
        .alias
        .as_ref()
        .map(|a| a.columns.iter().map(|col| folded(&col.name)).collect())
        .unwrap_or_default();
    let count = c.items.len();
    let available = count + usize::from(c.ordinality);
    if given.len() > available {
        return Err(SqlError::new(
            sqlstate::INVALID_COLUMN_REFERENCE,
            format!(
                "table \"{relation}\" has {available} columns available but {} columns specified",
                given.len()
            ),
        ));
    }
    let name = |i: usize| match given.get(i) {
        Some(name) => name.clone(),
        None if i == count => "ordinality".into(),
        None if count == 1 && c.alias.is_some() => relation.clone(),
        None => c.name.clone(),
    };
    // `unnest(a, b)` has two columns named unnest, which DataFusion would
    // not allow: the client sees the name before the mark.
    let mut seen = HashSet::new();
    let names: Vec<Ident> = (0..available)
        .map(|i| {
            let name = name(i);
            let mut unique = name.clone();
            let mut n = 0;
            while !seen.insert(unique.clone()) {
                n += 1;
                unique = format!("{name}{UNIQUE_MARK}{n}");
            }
            Ident::with_quote('"', unique)
        })
        .collect();
    let projection = c
        .items
        .into_iter()
        .zip(&names)
        .map(|(expr, alias)| SelectItem::ExprWithAlias {
            expr,
            alias: alias.clone(),
        })
        .collect();
    let mut query = parse_query("SELECT 1")?;
    if let SetExpr::Select(s) = query.body.as_mut() {
        s.projection = projection;
    }
    if c.ordinality {
        query = numbered(query, &names)?;
    }
    Ok(TableFactor::Derived {
        lateral: false,
        subquery: Box::new(query),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::with_quote('"', relation),
            columns: Vec::new(),
            at: None,
        }),
        sample: None,
    })
}

/// `inner`'s rows with their numbers, from 1 in the order it gives them:
/// `SELECT "a", row_number() OVER () AS "ordinality" FROM (inner)`.
/// `names` are inner's columns and then the number's.
fn numbered(inner: Query, names: &[Ident]) -> SqlResult<Query> {
    let mut outer =
        parse_query("SELECT CAST(row_number() OVER () AS BIGINT) FROM (SELECT 1) AS \"numbered\"")?;
    let SetExpr::Select(s) = outer.body.as_mut() else {
        return Err(SqlError::internal("a numbering SELECT did not parse"));
    };
    let Some(SelectItem::UnnamedExpr(number)) = s.projection.pop() else {
        return Err(SqlError::internal("a numbering SELECT did not parse"));
    };
    if let Some(TableFactor::Derived { subquery, .. }) = s.from.first_mut().map(|f| &mut f.relation)
    {
        **subquery = inner;
    }
    let (last, columns) = names
        .split_last()
        .ok_or_else(|| SqlError::internal("a numbered function without columns"))?;
    s.projection = columns
        .iter()
        .map(|n| SelectItem::UnnamedExpr(Expr::Identifier(n.clone())))
        .chain(std::iter::once(SelectItem::ExprWithAlias {
            expr: number,
            alias: last.clone(),
        }))
        .collect();
    Ok(outer)
}

/// A query of fixed text, whose parts are replaced.
fn parse_query(text: &str) -> SqlResult<Query> {
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, text)
        .ok()
        .and_then(|mut s| s.pop());
    match parsed {
        Some(Statement::Query(q)) => Ok(*q),
        _ => Err(SqlError::internal("a fixed query did not parse")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String, String> {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let Statement::Query(q) = &mut stmt else {
            panic!("not a query")
        };
        functions_in_from(q).map_err(|e| format!("{} {}", e.code, e.message))?;
        Ok(stmt.to_string())
    }

    #[test]
    fn scalar_functions_are_one_row_named_after_the_function_or_alias() {
        assert_eq!(
            rewritten("SELECT * FROM current_schema()").unwrap(),
            "SELECT * FROM (SELECT current_schema() AS \"current_schema\") AS \"current_schema\""
        );
        assert_eq!(
            rewritten("SELECT * FROM pg_catalog.upper('a') AS U").unwrap(),
            "SELECT * FROM (SELECT pg_catalog.upper('a') AS \"u\") AS \"u\""
        );
        assert_eq!(
            rewritten("SELECT x FROM version() AS v(x)").unwrap(),
            "SELECT x FROM (SELECT version() AS \"x\") AS \"v\""
        );
        assert_eq!(
            rewritten("SELECT * FROM current_user").unwrap(),
            "SELECT * FROM (SELECT current_user AS \"current_user\") AS \"current_user\""
        );
        // A quoted name is a table, as in PostgreSQL.
        assert_eq!(
            rewritten("SELECT * FROM \"user\"").unwrap(),
            "SELECT * FROM \"user\""
        );
    }

    #[test]
    fn sets_unnest_a_list_per_column() {
        assert_eq!(
            rewritten("SELECT n FROM generate_series(1, 5) AS g(n)").unwrap(),
            format!(
                "SELECT n FROM (SELECT unnest({}(1, 5)) AS \"n\") AS \"g\"",
                super::super::series::NAME
            )
        );
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY[1], ARRAY['a']) AS t(x)").unwrap(),
            "SELECT * FROM (SELECT unnest(ARRAY[1]) AS \"x\", unnest(ARRAY['a']) AS \"unnest\") AS \"t\""
        );
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY[1], ARRAY['a'])").unwrap(),
            "SELECT * FROM (SELECT unnest(ARRAY[1]) AS \"unnest\", unnest(ARRAY['a']) AS \"unnest\u{1}1\") AS \"unnest\""
        );
        // Nested queries too.
        assert_eq!(
            rewritten("SELECT (SELECT max(u) FROM unnest(ARRAY[1]) u)").unwrap(),
            "SELECT (SELECT max(u) FROM (SELECT unnest(ARRAY[1]) AS \"u\") AS \"u\")"
        );
    }

    #[test]
    fn ordinality_numbers_the_rows() {
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY[1]) WITH ORDINALITY AS t(a)").unwrap(),
            "SELECT * FROM (SELECT \"a\", CAST(row_number() OVER () AS BIGINT) AS \"ordinality\" \
             FROM (SELECT unnest(ARRAY[1]) AS \"a\") AS \"numbered\") AS \"t\""
        );
    }

    #[test]
    fn too_many_column_names_and_ordinality_are_refused() {
        assert_eq!(
            rewritten("SELECT * FROM generate_series(1, 3) AS g(a, b)").unwrap_err(),
            "42P10 table \"g\" has 1 columns available but 2 columns specified"
        );
        assert_eq!(
            rewritten("SELECT * FROM upper('a') WITH ORDINALITY AS u(a, b, c)").unwrap_err(),
            "42P10 table \"u\" has 2 columns available but 3 columns specified"
        );
        assert!(rewritten("SELECT * FROM t, generate_series(1, t.n)")
            .unwrap_err()
            .starts_with("0A000"));
        assert!(rewritten("SELECT * FROM json_each('{}')")
            .unwrap_err()
            .starts_with("0A000"));
    }
}
