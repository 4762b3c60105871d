//! Rewrites of the query text's syntax tree before DataFusion plans it,
//! each a small named rule, so that what DataFusion answers is what
//! PostgreSQL answers:
//!
//! - [`name_outputs`]: every unaliased select item gets the name PostgreSQL
//!   gives it (`count`, `?column?`, `int4`, the column's own name), where
//!   DataFusion would say `count(*)` or `t.a + Int64(1)`.
//! - [`int4_literals`]: an integer literal that fits in int4 is an int4, as
//!   in PostgreSQL (DataFusion reads every integer literal as int8, so
//!   `a + 1` of an int4 column would come back as bigint). Positional
//!   ORDER BY / GROUP BY references and LIMIT / OFFSET stay as they are.
//! - `from_functions::functions_in_from`: a function call in FROM is a
//!   subquery of one row, named as PostgreSQL names it.
//! - `system::empty_set_selects`: a select list that calls a
//!   set-returning catalog function whose set is always empty in
//!   keyclaim (`pg_partition_ancestors`) answers no rows.
//! - `subqueries::scalar_subqueries`: a scalar subquery that is a plain SELECT of
//!   one expression takes its value through `single_value` (DataFusion
//!   decorrelates only aggregated subqueries; the aggregate gives NULL for
//!   no row and 21000 for more than one, as PostgreSQL does).
//! - [`merged_outer_join_columns`]: not a rewrite but a refusal: DataFusion
//!   gives a `RIGHT` / `FULL` join's `USING` (or `NATURAL`) column the left
//!   side's value, NULL for a row only the right side has, where PostgreSQL
//!   merges both sides; such a join is refused (0A000) rather than answered
//!   wrong.
//! - [`any_literal_arrays`]: `x = ANY('{1,2}')` and `x <> ALL('{1,2}')`,
//!   whose untyped literal PostgreSQL reads as an array of x's type and
//!   DataFusion cannot read as a list at all, as the IN lists they mean.
//! - [`literal_array_casts`]: `'{a,b}'::text[]` is the array it spells,
//!   where DataFusion would make a one-element list of the text.
//! - [`text_type_casts`]: casts to `uuid`, `json` and `jsonb`, which
//!   DataFusion has no types for, are calls of `query::casts`' functions.
//! - [`catalog_syntax`]: what catalog queries (psql's, drivers') write in
//!   PostgreSQL's own spelling: `pg_catalog.`-qualified functions,
//!   `OPERATOR(pg_catalog.~)`, `COLLATE pg_catalog.default`, and casts to
//!   `regclass`, `regtype`, `oid`, `name` and `"char"`.
//! - [`regclass_names`]: a regclass is an OID to compare, and its
//!   relation's name where it is shown or cast to text.
//! - [`postgres_operators`]: `EXTRACT`, `AT TIME ZONE`, the JSON
//!   operators (`->`, `->>`, `#>`, `#>>`) and `LIKE ... ESCAPE` are calls
//!   of `query::dates`', `query::json`'s and `query::like`'s functions,
//!   which answer as PostgreSQL does.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg,
    FunctionArgExpr, FunctionArgumentClause, FunctionArgumentList, FunctionArguments, GroupByExpr,
    Ident, LimitClause, ObjectName, ObjectNamePart, OrderByKind, Query, Select, SelectItem,
    SetExpr, TrimWhereField, Value, VisitMut, VisitorMut,
};

use crate::error::SqlResult;

/// What marks a name made unique for DataFusion (`SELECT a, a`), which
/// PostgreSQL allows and DataFusion does not: the client sees the part
/// before it.
pub(crate) const UNIQUE_MARK: char = '\u{1}';

/// The name the client sees for a result field.
pub(crate) fn client_name(field_name: &str) -> &str {
    field_name.split(UNIQUE_MARK).next().unwrap_or(field_name)
}

/// Apply every rule to a query.
pub(crate) fn rewrite(q: &mut Query) -> SqlResult<()> {
    merged_outer_join_columns(q)?;
    name_outputs(q);
    postgres_operators(q);
    any_literal_arrays(q);
    literal_array_casts(q)?;
    text_type_casts(q);
    int4_literals(q);
    super::system::skip_empty_selects(q);
    // After the select lists that are never evaluated are gone (psql's
    // `\d` has a generate_series over another FROM item's column in one);
    // the subqueries it makes name their items themselves.
    super::from_functions::lateral_key_arrays(q);
    super::from_functions::functions_in_from(q)?;
    super::system::empty_set_selects(q);
    super::lifted_ctes::lift_correlated_ctes(q);
    super::subqueries::exists_limits(q);
    super::subqueries::select_list_subqueries(q);
    super::subqueries::scalar_subqueries(q);
    regclass_names(q);
    catalog_syntax(q);
    Ok(())
}

/// Refuse a `RIGHT` or `FULL` join whose columns are merged (`USING`,
/// `NATURAL`), anywhere in the query: DataFusion answers its merged
/// column from the left side alone.
fn merged_outer_join_columns(q: &Query) -> SqlResult<()> {
    use datafusion::sql::sqlparser::ast::{
        JoinConstraint, JoinOperator, TableFactor, TableWithJoins, Visit, Visitor,
    };
    fn merged(twj: &TableWithJoins) -> bool {
        let nested = |f: &TableFactor| match f {
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => merged(table_with_joins),
            _ => false,
        };
        nested(&twj.relation)
            || twj.joins.iter().any(|j| {
                let constraint = match &j.join_operator {
                    JoinOperator::Right(c)
                    | JoinOperator::RightOuter(c)
                    | JoinOperator::FullOuter(c) => Some(c),
                    _ => None,
                };
                matches!(
                    constraint,
                    Some(JoinConstraint::Using(_) | JoinConstraint::Natural)
                ) || nested(&j.relation)
            })
    }
    fn body_merges(body: &SetExpr) -> bool {
        match body {
            SetExpr::Select(s) => s.from.iter().any(merged),
            SetExpr::SetOperation { left, right, .. } => body_merges(left) || body_merges(right),
            _ => false,
        }
    }
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            if body_merges(&q.body) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    if q.visit(&mut Finder).is_break() {
        return Err(crate::error::SqlError::unsupported(
            "RIGHT and FULL JOIN with USING or NATURAL are not supported",
            "write the join condition with ON, and COALESCE the two sides' columns where you want them merged",
        ));
    }
    Ok(())
}

/// `x = ANY('{1,NULL}')` is `x IN ('1', NULL)` and `x <> ALL('{1,NULL}')`
/// is `x NOT IN ('1', NULL)`, NULLs included (a miss against a NULL
/// element is NULL either way); the items are untyped literals, which
/// DataFusion reads as x's type as it does in `x = '1'`. Against the empty
/// array ANY is FALSE and ALL is TRUE, whatever x is. A literal that is
/// not an array is left for the planner to refuse.
pub(crate) fn any_literal_arrays(q: &mut Query) {
    struct Lists;
    impl VisitorMut for Lists {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let (left, right, negated) = match e {
                Expr::AnyOp {
                    left,
                    compare_op: BinaryOperator::Eq,
                    right,
                    ..
                } => (left, right, false),
                Expr::AllOp {
                    left,
                    compare_op: BinaryOperator::NotEq,
                    right,
                } => (left, right, true),
                _ => return ControlFlow::Continue(()),
            };
            let Expr::Value(v) = right.as_ref() else {
                return ControlFlow::Continue(());
            };
            let Value::SingleQuotedString(text) = &v.value else {
                return ControlFlow::Continue(());
            };
            let Ok(list) = array_items(text) else {
                return ControlFlow::Continue(());
            };
            *e = if list.is_empty() {
                Expr::value(Value::Boolean(negated))
            } else {
                Expr::InList {
                    expr: left.clone(),
                    list,
                    negated,
                }
            };
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Lists);
}

/// `'{a,b}'::T[]` (or `CAST('{a,b}' AS T[])`, the literal perhaps in
/// parentheses) is `ARRAY['a', 'b']::T[]`: PostgreSQL reads the literal as
/// an array of T, DataFusion would make it a one-element list of the whole
/// text (`unnest('{a,b}'::text[])` gave one row). Items are untyped
/// literals, cast into T as the array is; a malformed literal is
/// PostgreSQL's 22P02.
pub(crate) fn literal_array_casts(q: &mut Query) -> SqlResult<()> {
    struct Arrays(Option<crate::error::SqlError>);
    impl VisitorMut for Arrays {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let Expr::Cast {
                expr,
                data_type: DataType::Array(_),
                ..
            } = e
            else {
                return ControlFlow::Continue(());
            };
            let mut literal = expr.as_ref();
            while let Expr::Nested(inner) = literal {
                literal = inner;
            }
            let Expr::Value(v) = literal else {
                return ControlFlow::Continue(());
            };
            let Value::SingleQuotedString(text) = &v.value else {
                return ControlFlow::Continue(());
            };
            let elem = match array_items(text) {
                Ok(items) => items,
                Err(err) => {
                    self.0 = Some(err);
                    return ControlFlow::Break(());
                }
            };
            **expr = Expr::Array(datafusion::sql::sqlparser::ast::Array { elem, named: true });
            ControlFlow::Continue(())
        }
    }
    let mut arrays = Arrays(None);
    let _ = q.visit(&mut arrays);
    arrays.0.map_or(Ok(()), Err)
}

/// `x::uuid`, `x::json`, `x::jsonb` (and CAST) are calls of the functions
/// in `query::casts`: DataFusion has no such types.
pub(crate) fn text_type_casts(q: &mut Query) {
    struct Casts;
    impl VisitorMut for Casts {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let Expr::Cast {
                expr, data_type, ..
            } = e
            else {
                return ControlFlow::Continue(());
            };
            let ty = match data_type {
                DataType::Uuid => crate::types::SqlType::Uuid,
                DataType::JSON => crate::types::SqlType::Json,
                DataType::JSONB => crate::types::SqlType::Jsonb,
                _ => return ControlFlow::Continue(()),
            };
            if let Some(name) = super::casts::function_for(&ty) {
                *e = call(name, (**expr).clone());
            }
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Casts);
}

/// `EXTRACT(unit FROM x)`, `x AT TIME ZONE zone` and `doc -> key` (and
/// `->>`, `#>`, `#>>`) as calls of the functions that compute them as
/// PostgreSQL does (`query::dates`, `query::json`). After `name_outputs`,
/// which names them as PostgreSQL does (`extract`, `timezone`, `?column?`).
pub(crate) fn postgres_operators(q: &mut Query) {
    struct Operators;
    impl VisitorMut for Operators {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            use super::json::Op;
            let insensitive = matches!(e, Expr::ILike { .. });
            let replaced = match e {
                Expr::Extract { field, expr, .. } => {
                    let unit = Expr::value(Value::SingleQuotedString(field.to_string()));
                    call_with(
                        super::dates::EXTRACT,
                        vec![
                            FunctionArgExpr::Expr(unit),
                            FunctionArgExpr::Expr((**expr).clone()),
                        ],
                        Vec::new(),
                    )
                }
                Expr::AtTimeZone {
                    timestamp,
                    time_zone,
                } => call_with(
                    "timezone",
                    vec![
                        FunctionArgExpr::Expr((**time_zone).clone()),
                        FunctionArgExpr::Expr((**timestamp).clone()),
                    ],
                    Vec::new(),
                ),
                // DataFusion knows only the backslash as LIKE's escape.
                Expr::Like {
                    negated,
                    any: false,
                    expr,
                    pattern,
                    escape_char: Some(escape),
                }
                | Expr::ILike {
                    negated,
                    any: false,
                    expr,
                    pattern,
                    escape_char: Some(escape),
                } if escape.value != Value::SingleQuotedString("\\".into()) => {
                    let called = call_with(
                        super::like::function(insensitive),
                        vec![
                            FunctionArgExpr::Expr((**expr).clone()),
                            FunctionArgExpr::Expr((**pattern).clone()),
                            FunctionArgExpr::Expr(Expr::value(escape.value.clone())),
                        ],
                        Vec::new(),
                    );
                    if *negated {
                        Expr::UnaryOp {
                            op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
                            expr: Box::new(Expr::Nested(Box::new(called))),
                        }
                    } else {
                        called
                    }
                }
                // `generate_subscripts(a, 1)` in a select list, beside an
                // `unnest(a)` (SQLAlchemy's key reflection): the subscripts
                // 1..n, unnested in step with it.
                Expr::Function(f) if is_generate_subscripts(f) => {
                    let FunctionArguments::List(list) = &f.args else {
                        return ControlFlow::Continue(());
                    };
                    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(array)), FunctionArg::Unnamed(FunctionArgExpr::Expr(dim))] =
                        list.args.as_slice()
                    else {
                        return ControlFlow::Continue(());
                    };
                    let sql = format!(
                        "unnest(range(1, CAST(array_length({array}, {dim}) AS BIGINT) + 1))"
                    );
                    match parse_expr(&sql) {
                        Some(e) => e,
                        None => return ControlFlow::Continue(()),
                    }
                }
                // DataFusion's CASE drops its branches' field metadata, and
                // with it the json type: the whole is cast back (SQLAlchemy
                // reads identity options as a json object).
                Expr::Case {
                    conditions,
                    else_result,
                    ..
                } if conditions.iter().all(|c| gives_json(&c.result))
                    && else_result
                        .as_deref()
                        .is_none_or(|e| gives_json(e) || is_null(e)) =>
                {
                    let cast = super::casts::function_for(&crate::types::SqlType::Json)
                        .unwrap_or("pg_to_json");
                    call(cast, e.clone())
                }
                Expr::BinaryOp { left, op, right } => {
                    let op = match op {
                        BinaryOperator::Arrow => Op::Get,
                        BinaryOperator::LongArrow => Op::GetText,
                        BinaryOperator::HashArrow => Op::Path,
                        BinaryOperator::HashLongArrow => Op::PathText,
                        _ => return ControlFlow::Continue(()),
                    };
                    call_with(
                        op.function(),
                        vec![
                            FunctionArgExpr::Expr((**left).clone()),
                            FunctionArgExpr::Expr((**right).clone()),
                        ],
                        Vec::new(),
                    )
                }
                _ => return ControlFlow::Continue(()),
            };
            *e = replaced;
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Operators);
}

/// Whether an expression's value is of type json: a `json_build_*` call,
/// a cast to json (as `text_type_casts` writes it), or a subquery of one.
fn gives_json(e: &Expr) -> bool {
    match e {
        Expr::Nested(inner) => gives_json(inner),
        Expr::Function(f) => matches!(
            name_parts(&f.name).last().map(String::as_str),
            Some("json_build_object" | "json_build_array" | "pg_to_json")
        ),
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => matches!(s.projection.as_slice(),
                [SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. }] if gives_json(x)),
            _ => false,
        },
        _ => false,
    }
}

fn is_null(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if v.value == Value::Null)
}

fn is_generate_subscripts(f: &Function) -> bool {
    matches!(name_parts(&f.name).as_slice(), [n] if n == "generate_subscripts")
        || matches!(name_parts(&f.name).as_slice(), [s, n] if s == "pg_catalog" && n == "generate_subscripts")
}

/// An expression of DataFusion's dialect, from its text.
fn parse_expr(sql: &str) -> Option<Expr> {
    use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .ok()?
        .parse_expr()
        .ok()
}

/// The items of array literal `text` (`'{a,NULL,"b c"}'`) as untyped
/// literals (NULL for a NULL item), read as PostgreSQL's array_in reads
/// it; its 22P02 when malformed.
fn array_items(text: &str) -> SqlResult<Vec<Expr>> {
    let text_array = crate::types::SqlType::array_of(crate::types::SqlType::Text);
    let crate::types::Value::Array(array) = crate::types::Value::parse_text(&text_array, text)?
    else {
        return Err(crate::error::SqlError::internal(
            "an array literal read as no array",
        ));
    };
    Ok(array
        .items
        .into_iter()
        .map(|item| match item {
            crate::types::Value::Text(s) => Expr::value(Value::SingleQuotedString(s)),
            _ => Expr::value(Value::Null),
        })
        .collect())
}

/// PostgreSQL's folding of an identifier.
pub(super) fn folded(id: &Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

/// The name PostgreSQL gives an unaliased expression (`FigureColname`),
/// with its strength: 2 for a real name, 1 for a fallback (a cast's type,
/// `case`), 0 for none (`?column?`).
fn figure_name(e: &Expr) -> (String, u8) {
    match e {
        Expr::Identifier(id) => (folded(id), 2),
        Expr::CompoundIdentifier(parts) => (parts.last().map(folded).unwrap_or_default(), 2),
        Expr::Function(f) => {
            let name = f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(folded)
                .unwrap_or_default();
            (name, 2)
        }
        Expr::Nested(inner) => figure_name(inner),
        Expr::Cast {
            expr, data_type, ..
        } => {
            let inner = figure_name(expr);
            if inner.1 > 1 {
                inner
            } else {
                (type_name(data_type), 1)
            }
        }
        Expr::TypedString(t) => (type_name(&t.data_type), 1),
        Expr::Case { else_result, .. } => {
            let inner = else_result.as_deref().map(figure_name).unwrap_or_default();
            if inner.1 > 1 {
                inner
            } else {
                ("case".into(), 1)
            }
        }
        Expr::Exists { negated: false, .. } => ("exists".into(), 2),
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(SelectItem::ExprWithAlias { alias, .. }) => (folded(alias), 2),
                Some(SelectItem::UnnamedExpr(e)) => figure_name(e),
                _ => Default::default(),
            },
            _ => Default::default(),
        },
        Expr::Array(_) => ("array".into(), 2),
        Expr::Interval(_) => ("interval".into(), 1),
        Expr::Extract { .. } => ("extract".into(), 2),
        Expr::Substring { .. } => ("substring".into(), 2),
        Expr::Position { .. } => ("position".into(), 2),
        Expr::Ceil { .. } => ("ceil".into(), 2),
        Expr::Floor { .. } => ("floor".into(), 2),
        Expr::Overlay { .. } => ("overlay".into(), 2),
        Expr::Trim { trim_where, .. } => {
            let name = match trim_where {
                Some(TrimWhereField::Leading) => "ltrim",
                Some(TrimWhereField::Trailing) => "rtrim",
                _ => "btrim",
            };
            (name.into(), 2)
        }
        Expr::AtTimeZone { .. } => ("timezone".into(), 2),
        Expr::Collate { expr, .. } => figure_name(expr),
        _ => Default::default(),
    }
}

/// A type's internal name, as PostgreSQL names a cast column.
fn type_name(dt: &DataType) -> String {
    use DataType as D;
    match dt {
        D::Int(_) | D::Integer(_) | D::Int4(_) => "int4",
        D::SmallInt(_) | D::Int2(_) => "int2",
        D::BigInt(_) | D::Int8(_) => "int8",
        D::Real | D::Float4 => "float4",
        D::Double(_) | D::DoublePrecision | D::Float8 => "float8",
        D::Numeric(_) | D::Decimal(_) | D::Dec(_) => "numeric",
        D::Text => "text",
        D::Varchar(_) | D::CharacterVarying(_) | D::CharVarying(_) => "varchar",
        D::Char(_) | D::Character(_) => "bpchar",
        D::Bool | D::Boolean => "bool",
        D::Date => "date",
        D::Timestamp(_, tz) => match tz {
            datafusion::sql::sqlparser::ast::TimezoneInfo::WithTimeZone
            | datafusion::sql::sqlparser::ast::TimezoneInfo::Tz => "timestamptz",
            _ => "timestamp",
        },
        D::Uuid => "uuid",
        D::Bytea => "bytea",
        D::JSON => "json",
        D::JSONB => "jsonb",
        D::Interval { .. } => "interval",
        other => return other.to_string().to_lowercase(),
    }
    .into()
}

/// Call `f` on each SELECT whose select list names a query's columns: the
/// body's, or each branch of a set operation.
fn each_select(body: &mut SetExpr, f: &mut impl FnMut(&mut Select)) {
    match body {
        SetExpr::Select(s) => f(s),
        SetExpr::SetOperation { left, right, .. } => {
            each_select(left, f);
            each_select(right, f);
        }
        _ => {}
    }
}

/// Alias each unaliased select item of every SELECT in `q` (subqueries
/// and CTEs included) with PostgreSQL's name for it.
pub(crate) fn name_outputs(q: &mut Query) {
    struct Namer;
    impl VisitorMut for Namer {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            each_select(&mut q.body, &mut |s| name_select(&mut s.projection));
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Namer);
}

fn name_select(items: &mut [SelectItem]) {
    let mut seen: HashSet<String> = HashSet::new();
    for item in items.iter_mut() {
        let name = match item {
            SelectItem::UnnamedExpr(e) => {
                let (name, _) = figure_name(e);
                let name = if name.is_empty() {
                    "?column?".to_string()
                } else {
                    name
                };
                // A plain column keeps DataFusion's own naming (and its
                // qualifier for ORDER BY); unless it repeats a name.
                if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                    && !seen.contains(&name)
                {
                    seen.insert(name);
                    continue;
                }
                name
            }
            SelectItem::ExprWithAlias { alias, .. } => {
                let name = folded(alias);
                if seen.insert(name.clone()) {
                    continue;
                }
                name
            }
            _ => continue,
        };
        let mut unique = name.clone();
        let mut n = 0;
        while !seen.insert(unique.clone()) {
            n += 1;
            unique = format!("{name}{UNIQUE_MARK}{n}");
        }
        let expr = match std::mem::replace(item, SelectItem::Wildcard(Default::default())) {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => unreachable!("matched above"),
        };
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', unique),
        };
    }
}

/// Whether `e` is a bare integer literal (a position or a count).
fn is_number(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::Number(..)))
}

fn set_long(e: &mut Expr, long: bool) {
    if let Expr::Value(v) = e {
        if let Value::Number(_, l) = &mut v.value {
            *l = long;
        }
    }
}

/// Integer literals that fit in int4 become `CAST(n AS integer)`.
pub(crate) fn int4_literals(q: &mut Query) {
    // The `long` flag of a number literal (a MySQL `1L`, which PostgreSQL
    // never parses) marks the literals to leave alone while rewriting.
    struct Protect;
    impl VisitorMut for Protect {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            if let Some(ob) = &mut q.order_by {
                if let OrderByKind::Expressions(list) = &mut ob.kind {
                    for o in list.iter_mut().filter(|o| is_number(&o.expr)) {
                        set_long(&mut o.expr, true);
                    }
                }
            }
            match &mut q.limit_clause {
                Some(LimitClause::LimitOffset { limit, offset, .. }) => {
                    if let Some(l) = limit.as_mut().filter(|l| is_number(l)) {
                        set_long(l, true);
                    }
                    if let Some(o) = offset.as_mut().filter(|o| is_number(&o.value)) {
                        set_long(&mut o.value, true);
                    }
                }
                Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
                    set_long(offset, true);
                    set_long(limit, true);
                }
                None => {}
            }
            each_select(&mut q.body, &mut |s| {
                if let GroupByExpr::Expressions(list, _) = &mut s.group_by {
                    for e in list.iter_mut().filter(|e| is_number(e)) {
                        set_long(e, true);
                    }
                }
            });
            ControlFlow::Continue(())
        }
    }
    struct Cast;
    impl VisitorMut for Cast {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let fits = matches!(e, Expr::Value(v)
                if matches!(&v.value, Value::Number(n, false) if n.parse::<i32>().is_ok()));
            if fits {
                let literal = e.clone();
                *e = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(literal),
                    data_type: DataType::Integer(None),
                    array: false,
                    format: None,
                };
            }
            ControlFlow::Continue(())
        }
    }
    struct Release;
    impl VisitorMut for Release {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            set_long(e, false);
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Protect);
    let _ = q.visit(&mut Cast);
    let _ = q.visit(&mut Release);
}

/// The parts of a dotted name, each folded.
pub(super) fn name_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| p.as_ident().map(folded).unwrap_or_default())
        .collect()
}

/// The last part of a possibly `pg_catalog.`-qualified name, folded; None
/// when qualified by another schema.
fn catalog_name(name: &ObjectName) -> Option<String> {
    match name_parts(name).as_slice() {
        [name] => Some(name.clone()),
        [schema, name] if schema == "pg_catalog" => Some(name.clone()),
        _ => None,
    }
}

/// What a cast to a catalog type becomes: a call of the function that
/// reads the name (`regclass`, `regtype`), or a cast to the type that
/// stands for it in the engine.
enum CatalogCast {
    Call(&'static str),
    To(DataType),
}

fn catalog_cast(dt: &DataType) -> Option<CatalogCast> {
    use super::system::{REGCLASS, REGTYPE};
    let name = match dt {
        DataType::Regclass => return Some(CatalogCast::Call(REGCLASS)),
        DataType::Custom(name, modifiers) if modifiers.is_empty() => catalog_name(name)?,
        _ => return None,
    };
    Some(match name.as_str() {
        "regclass" => CatalogCast::Call(REGCLASS),
        "regtype" => CatalogCast::Call(REGTYPE),
        "oid" | "regproc" | "regprocedure" | "regnamespace" | "regrole" | "regoper"
        | "regoperator" | "regconfig" | "xid" | "cid" => {
            CatalogCast::To(DataType::IntUnsigned(None))
        }
        "name" | "char" | "text" => CatalogCast::To(DataType::Text),
        _ => return None,
    })
}

/// Whether an expression is of type regclass: a cast to it, or a catalog
/// function that returns one.
fn is_regclass(e: &Expr) -> bool {
    match e {
        Expr::Nested(inner) => is_regclass(inner),
        Expr::Cast { data_type, .. } => {
            matches!(catalog_cast(data_type), Some(CatalogCast::Call(f)) if f == super::system::REGCLASS)
        }
        Expr::Function(f) => matches!(
            catalog_name(&f.name).as_deref(),
            Some("to_regclass" | "pg_partition_ancestors")
        ),
        _ => false,
    }
}

/// Whether an expression is a cast to regtype.
fn is_regtype(e: &Expr) -> bool {
    match e {
        Expr::Nested(inner) => is_regtype(inner),
        Expr::Cast { data_type, .. } => {
            matches!(catalog_cast(data_type), Some(CatalogCast::Call(f)) if f == super::system::REGTYPE)
        }
        _ => false,
    }
}

/// Whether a cast is to text (or `name`).
fn is_text(dt: &DataType) -> bool {
    matches!(dt, DataType::Text | DataType::Varchar(_))
        || matches!(catalog_cast(dt), Some(CatalogCast::To(DataType::Text)))
}

/// The engine keeps a regclass as its OID, which is what comparisons
/// need (`c.oid = 't'::regclass`, `confrelid IN (...)`); PostgreSQL
/// prints it as its relation's name. So a regclass the client sees (a
/// select item of the query's own result) or casts to text becomes the
/// name. One difference remains: ordering by such a result column orders
/// by name, where PostgreSQL orders a regclass by OID.
pub(crate) fn regclass_names(q: &mut Query) {
    let name = |e: &mut Expr| {
        let regclass = std::mem::replace(e, Expr::value(Value::Null));
        *e = call(super::system::REGCLASS_OUT, regclass);
    };
    each_select(&mut q.body, &mut |s| {
        for item in &mut s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                if is_regclass(e) {
                    name(e);
                }
            }
        }
    });
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(q, |e| {
        if let Expr::Cast {
            expr, data_type, ..
        } = e
        {
            if is_text(data_type) && is_regclass(expr) {
                let mut inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
                name(&mut inner);
                *e = inner;
            } else if is_text(data_type) && is_regtype(expr) {
                // `elemtype::regtype::text` (asyncpg's type introspection)
                // is the type's name.
                let inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
                *e = call(super::system::REGTYPE_OUT, inner);
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The operator `OPERATOR(pg_catalog.~)` names.
fn custom_operator(parts: &[String]) -> Option<BinaryOperator> {
    let op = match parts {
        [op] => op,
        [schema, op] if schema == "pg_catalog" => op,
        _ => return None,
    };
    Some(match op.as_str() {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "||" => BinaryOperator::StringConcat,
        _ => return None,
    })
}

/// A call of `name` on one argument.
pub(super) fn call(name: &str, arg: Expr) -> Expr {
    call_with(name, vec![FunctionArgExpr::Expr(arg)], Vec::new())
}

/// A call of `name` on `args`, with `clauses` (an aggregate's ORDER BY).
pub(super) fn call_with(
    name: &str,
    args: Vec<FunctionArgExpr>,
    clauses: Vec<FunctionArgumentClause>,
) -> Expr {
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(FunctionArg::Unnamed).collect(),
            clauses,
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// Rewrite the catalog spellings of PostgreSQL into what DataFusion plans.
pub(crate) fn catalog_syntax(q: &mut Query) {
    struct Catalog;
    impl VisitorMut for Catalog {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f) if f.name.0.len() == 2 => {
                    if let Some(name) = catalog_name(&f.name) {
                        f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]);
                    }
                }
                Expr::BinaryOp { op, .. } => {
                    if let BinaryOperator::PGCustomBinaryOperator(parts) = op {
                        if let Some(known) = custom_operator(parts) {
                            *op = known;
                        }
                    }
                }
                Expr::Collate { expr, .. } => {
                    let inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
                    *e = inner;
                }
                Expr::Cast {
                    expr, data_type, ..
                } => match catalog_cast(data_type) {
                    Some(CatalogCast::Call(f)) => {
                        let inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
                        *e = call(f, inner);
                    }
                    Some(CatalogCast::To(dt)) => *data_type = dt,
                    // `$1::oid[]` (asyncpg's type introspection): an array
                    // of what the element becomes.
                    None => {
                        if let DataType::Array(ArrayElemTypeDef::SquareBracket(elem, _)) = data_type
                        {
                            if let Some(CatalogCast::To(dt)) = catalog_cast(elem) {
                                **elem = dt;
                            }
                        }
                    }
                },
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Catalog);
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let datafusion::sql::sqlparser::ast::Statement::Query(q) = &mut stmt else {
            panic!("not a query")
        };
        rewrite(q).unwrap();
        stmt.to_string()
    }

    #[test]
    fn outputs_take_postgres_names() {
        assert_eq!(
            rewritten(
                "SELECT count(*), a + 1, t.b, 1::int, x::text, CASE WHEN a THEN 1 END FROM t"
            ),
            "SELECT count(*) AS \"count\", a + CAST(1 AS INTEGER) AS \"?column?\", t.b, \
             CAST(1 AS INTEGER)::INT AS \"int4\", x::TEXT AS \"x\", \
             CASE WHEN a THEN CAST(1 AS INTEGER) END AS \"case\" FROM t"
        );
    }

    #[test]
    fn a_regclass_shows_as_a_name_and_compares_as_an_oid() {
        assert_eq!(
            rewritten("SELECT c::regclass AS t, c::regclass::text FROM x WHERE c = 't'::regclass"),
            "SELECT regclassout(regclass(c)) AS t, regclassout(regclass(c)) AS \"c\" \
             FROM x WHERE c = regclass('t')"
        );
    }

    #[test]
    fn a_tables_partition_ancestors_are_no_rows() {
        assert_eq!(
            rewritten(
                "SELECT x FROM t WHERE x IN (SELECT pg_partition_ancestors('t') UNION ALL VALUES (1))"
            ),
            "SELECT x FROM t WHERE x IN (SELECT pg_partition_ancestors('t') AS \"pg_partition_ancestors\" \
             WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_inherits) UNION ALL VALUES (CAST(1 AS INTEGER)))"
        );
        let from =
            rewritten("SELECT * FROM pg_partition_ancestors('t') WITH ORDINALITY AS a(r, n)");
        assert!(from.contains("WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_inherits)"));
    }

    #[test]
    fn repeated_names_are_made_unique_for_datafusion() {
        let sql = rewritten("SELECT a, a, sum(b), sum(c) FROM t");
        assert_eq!(
            sql,
            "SELECT a, a AS \"a\u{1}1\", sum(b) AS \"sum\", sum(c) AS \"sum\u{1}1\" FROM t"
        );
        assert_eq!(client_name("sum\u{1}1"), "sum");
    }

    #[test]
    fn functions_in_from_take_int4_arguments() {
        assert_eq!(
            rewritten("SELECT * FROM generate_series(1, 3) AS g, unnest(ARRAY[2]) AS u"),
            "SELECT * FROM (SELECT unnest(generate_series(CAST(1 AS INTEGER), CAST(3 AS INTEGER))) AS \"g\") AS \"g\", \
             (SELECT unnest(ARRAY[CAST(2 AS INTEGER)]) AS \"u\") AS \"u\""
        );
    }

    #[test]
    fn positions_and_counts_stay_int8() {
        assert_eq!(
            rewritten("SELECT a FROM t GROUP BY 1 ORDER BY 1 LIMIT 2 OFFSET 3"),
            "SELECT a FROM t GROUP BY 1 ORDER BY 1 LIMIT 2 OFFSET 3"
        );
        assert_eq!(
            rewritten(
                "SELECT (SELECT b FROM u ORDER BY 1 LIMIT 1) AS x FROM t WHERE a = 5000000000"
            ),
            "SELECT (SELECT b FROM u ORDER BY 1 LIMIT 1) AS x FROM t WHERE a = 5000000000"
        );
    }
}
