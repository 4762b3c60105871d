//! Scalar subqueries in the shapes DataFusion can decorrelate.
//!
//! DataFusion turns a correlated scalar subquery into a join only when it
//! is aggregated and its correlation is equalities between an inner and
//! an outer column. PostgreSQL runs any; what clients send (psql's `\d`,
//! ORMs' counts and lookups) is mostly a plain lookup by key, which these
//! rewrites bring into that shape, each exact:
//!
//! - `EXISTS` and `ARRAY(SELECT ...)` in a select list become a count
//!   and an array_agg;
//! - the value of a one-expression SELECT is taken through `single_value`
//!   (NULL for no row, 21000 for more than one, as PostgreSQL answers);
//! - one with `[ORDER BY ...] LIMIT 1` (the "latest related row" of
//!   Django's `Subquery(qs[:1])` and SQLAlchemy's `scalar_subquery()`) is
//!   `first_value(x ORDER BY ...)` of the rows it would take the first of,
//!   and so is one limited by a parameter (`LIMIT $1`, psycopg 3's), whose
//!   value `kc_first_row_limit` checks when the query runs;
//! - `EXISTS (... LIMIT n)` for a constant n of 1 or more is `EXISTS
//!   (...)` (Django's `Exists()` adds `LIMIT 1`);
//! - one whose select list names outer columns looks each inner column
//!   up on its own, guarded by a count (`outer_columns_in_select`);
//! - where the subquery's WHERE equates an outer column with an inner
//!   one, the outer column's other uses there become the inner one;
//! - conditions on outer columns alone move out of the subquery:
//!   `(SELECT x FROM t WHERE k = o.k AND o.flag)` is
//!   `CASE WHEN o.flag THEN (SELECT x FROM t WHERE k = o.k) END`, since a
//!   subquery that finds no row is NULL too. One difference remains:
//!   the subquery is then computed for every outer row, so a row the
//!   condition excludes, for which it would find several rows, answers
//!   21000 where PostgreSQL never looks (README, "Known gaps").
//!
//! Outer columns are told by their qualifier: a name qualified by no
//! relation of the subquery's FROM. Unqualified names are left alone.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, CastKind, DataType, Expr, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, GroupByExpr, LimitClause, OrderByKind, Query, Select, SelectItem, SetExpr,
    TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};

use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::aggregates::SINGLE_VALUE;
use super::row_fn::{map_rows, sql_err};
use super::rules::{call, call_with, folded};
use crate::error::SqlError;

/// Whether an expression computes an aggregate or a window function.
pub(super) fn aggregates(e: &Expr) -> bool {
    let mut found = false;
    let _ = e.visit(&mut FindAggregate(&mut found));
    found
}

struct FindAggregate<'a>(&'a mut bool);

impl Visitor for FindAggregate<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e {
            let name = f.name.to_string().to_lowercase();
            if f.over.is_some()
                || name == "count"
                || name == SINGLE_VALUE
                || super::AGGREGATES.contains(&name.as_str())
            {
                *self.0 = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        // A nested subquery's aggregates are its own.
        ControlFlow::Continue(())
    }
}

/// Whether a subquery is one plain SELECT: no ORDER BY, LIMIT, WITH,
/// grouping or DISTINCT, and a FROM.
fn plain_select(sub: &mut Query) -> Option<&mut Select> {
    if sub.order_by.is_some()
        || sub.limit_clause.is_some()
        || sub.fetch.is_some()
        || sub.with.is_some()
    {
        return None;
    }
    let SetExpr::Select(s) = sub.body.as_mut() else {
        return None;
    };
    ungrouped(s).then_some(s.as_mut())
}

/// Whether a SELECT reads a FROM without grouping: no GROUP BY, HAVING,
/// DISTINCT or named window.
pub(super) fn ungrouped(s: &Select) -> bool {
    matches!(&s.group_by, GroupByExpr::Expressions(g, _) if g.is_empty())
        && s.having.is_none()
        && s.distinct.is_none()
        && s.named_window.is_empty()
        && !s.from.is_empty()
}

/// `EXISTS (...)` and `ARRAY(SELECT ...)` in a select list, which
/// DataFusion runs only in WHERE (EXISTS) or not at all (ARRAY), as
/// aggregated scalar subqueries: `(SELECT count(*) ...) > 0` and
/// `coalesce((SELECT array_agg(x ORDER BY ...) ...), '{}')`.
pub(crate) fn select_list_subqueries(q: &mut Query) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_select(&mut self, s: &mut Select) -> ControlFlow<()> {
            for item in &mut s.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    let _ = VisitMut::visit(e, &mut InList);
                }
            }
            ControlFlow::Continue(())
        }
    }
    struct InList;
    impl VisitorMut for InList {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            match e {
                Expr::Exists { subquery, negated } => {
                    let negated = *negated;
                    let mut sub = subquery.clone();
                    let Some(s) = plain_select(&mut sub) else {
                        return ControlFlow::Continue(());
                    };
                    s.projection = vec![SelectItem::UnnamedExpr(call_with(
                        "count",
                        vec![FunctionArgExpr::Wildcard],
                        Vec::new(),
                    ))];
                    *e = Expr::BinaryOp {
                        left: Box::new(Expr::Subquery(sub)),
                        op: if negated {
                            BinaryOperator::Eq
                        } else {
                            BinaryOperator::Gt
                        },
                        right: Box::new(Expr::value(Value::Number("0".into(), false))),
                    };
                }
                Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("array") => {
                    let FunctionArguments::Subquery(sub) = &f.args else {
                        return ControlFlow::Continue(());
                    };
                    let mut sub = sub.clone();
                    let order = sub.order_by.take();
                    let Some(s) = plain_select(&mut sub) else {
                        return ControlFlow::Continue(());
                    };
                    let [SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. }] =
                        s.projection.as_mut_slice()
                    else {
                        return ControlFlow::Continue(());
                    };
                    let by = match order.map(|o| o.kind) {
                        Some(OrderByKind::Expressions(by)) => {
                            vec![FunctionArgumentClause::OrderBy(by)]
                        }
                        _ => Vec::new(),
                    };
                    let agg = call_with("array_agg", vec![FunctionArgExpr::Expr(x.clone())], by);
                    s.projection = vec![SelectItem::UnnamedExpr(agg)];
                    let empty = call_with("make_array", Vec::new(), Vec::new());
                    let coalesce = call_with(
                        "coalesce",
                        vec![
                            FunctionArgExpr::Expr(Expr::Subquery(sub)),
                            FunctionArgExpr::Expr(empty),
                        ],
                        Vec::new(),
                    );
                    *e = coalesce;
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Rewrite);
}

/// The constant row count of a `LIMIT n` without OFFSET, if that is all
/// a query limits itself by.
fn constant_limit(q: &Query) -> Option<u64> {
    match &q.limit_clause {
        Some(LimitClause::LimitOffset {
            limit: Some(Expr::Value(v)),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() && q.fetch.is_none() => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `EXISTS (q LIMIT n)` with n >= 1 is `EXISTS (q)`: the LIMIT (and its
/// ORDER BY) cannot change whether a row exists.
pub(crate) fn exists_limits(q: &mut Query) {
    struct Strip;
    impl VisitorMut for Strip {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Exists { subquery, .. } = e {
                if constant_limit(subquery).is_some_and(|n| n >= 1) {
                    subquery.limit_clause = None;
                    subquery.order_by = None;
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Strip);
}

/// How a subquery is limited to its first row: by `LIMIT 1`, or by a
/// `LIMIT $n` whose value planning does not know (psycopg 3 binds
/// SQLAlchemy's `.limit(1)` so), guarded by `FIRST_ROW_LIMIT` of it.
enum FirstRow {
    Constant,
    Parameter(Box<Expr>),
}

fn first_row_limit(q: &Query) -> Option<FirstRow> {
    if constant_limit(q) == Some(1) {
        return Some(FirstRow::Constant);
    }
    // A parameter, cast or not (SQLAlchemy on psycopg 3 writes
    // `LIMIT %(param_1)s::INTEGER`).
    fn parameter(e: &Expr) -> bool {
        match e {
            Expr::Value(v) => matches!(v.value, Value::Placeholder(_)),
            Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => parameter(inner),
            _ => false,
        }
    }
    match &q.limit_clause {
        Some(LimitClause::LimitOffset {
            limit: Some(limit),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() && q.fetch.is_none() && parameter(limit) => {
            Some(FirstRow::Parameter(Box::new(limit.clone())))
        }
        _ => None,
    }
}

/// The function that checks a parameter LIMIT folded into `first_value`:
/// true for 1, false for 0 (no row: NULL, as PostgreSQL answers), 2201W
/// for a negative limit, and 0A000 for any other (the query would need
/// every row).
pub(crate) const FIRST_ROW_LIMIT: &str = "kc_first_row_limit";

/// `(SELECT x FROM ... [ORDER BY k] LIMIT 1)` as `(SELECT first_value(x
/// [ORDER BY k]) FROM ...)`, an aggregate DataFusion decorrelates: the
/// first row's value, NULL for none, as PostgreSQL answers. ORDER BY a
/// select-list position or alias means that item. For `LIMIT $n`, the
/// condition the value then holds under: `kc_first_row_limit($n)`.
fn limit_one_as_first_value(sub: &mut Query) -> Option<Expr> {
    if sub.with.is_some() {
        return None;
    }
    let limit = first_row_limit(sub)?;
    let order = sub.order_by.clone();
    let SetExpr::Select(s) = sub.body.as_mut() else {
        return None;
    };
    let plain = ungrouped(s);
    let (alias, item) = match s.projection.as_slice() {
        [SelectItem::UnnamedExpr(x)] => (None, x.clone()),
        [SelectItem::ExprWithAlias { expr, alias }] => (Some(folded(alias)), expr.clone()),
        _ => return None,
    };
    if !plain || aggregates(&item) {
        return None;
    }
    // DataFusion runs an uncorrelated one as it is.
    let inner = from_names(s)?;
    let correlated = references(&item, &inner).0
        || s.selection
            .as_ref()
            .is_some_and(|w| references(w, &inner).0);
    if !correlated {
        return None;
    }
    let by = match order.map(|o| o.kind) {
        None => Vec::new(),
        Some(OrderByKind::Expressions(mut by)) => {
            for o in &mut by {
                let is_item = match &o.expr {
                    Expr::Value(v) => matches!(&v.value, Value::Number(n, _) if n == "1"),
                    Expr::Identifier(id) => alias.as_deref() == Some(folded(id).as_str()),
                    _ => false,
                };
                if is_item {
                    o.expr = item.clone();
                }
            }
            vec![FunctionArgumentClause::OrderBy(by)]
        }
        Some(_) => return None,
    };
    let first = call_with("first_value", vec![FunctionArgExpr::Expr(item)], by);
    s.projection = vec![match alias {
        Some(_) => match s.projection.pop() {
            Some(SelectItem::ExprWithAlias { alias, .. }) => {
                SelectItem::ExprWithAlias { expr: first, alias }
            }
            _ => SelectItem::UnnamedExpr(first),
        },
        None => SelectItem::UnnamedExpr(first),
    }];
    sub.order_by = None;
    sub.limit_clause = None;
    match limit {
        FirstRow::Constant => None,
        FirstRow::Parameter(n) => Some(call(
            FIRST_ROW_LIMIT,
            Expr::Cast {
                kind: CastKind::DoubleColon,
                expr: n,
                data_type: DataType::BigInt(None),
                array: false,
                format: None,
            },
        )),
    }
}

/// `(SELECT f(o.x, i.y) FROM F WHERE P)`, whose select list names outer
/// columns (DataFusion decorrelates none such), as `CASE WHEN (SELECT
/// count(*) FROM F WHERE P) > 0 THEN f(o.x, (SELECT i.y FROM F WHERE P))
/// END`: each inner column a lookup of its own. The same answer: NULL for
/// no row, the row's value for one, 21000 (from the lookups) for more.
/// SQLAlchemy's column reflection builds its identity options so.
fn outer_columns_in_select(sub: &Query) -> Option<Expr> {
    let mut base = sub.clone();
    let s = plain_select(&mut base)?;
    let item = match s.projection.as_slice() {
        [SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. }] => x.clone(),
        _ => return None,
    };
    let inner = from_names(s)?;
    if !references(&item, &inner).0 || aggregates(&item) {
        return None;
    }
    // Conditions on outer columns alone guard the whole (DataFusion
    // decorrelates no filter that names no inner column).
    let mut parts = Vec::new();
    if let Some(selection) = s.selection.take() {
        conjuncts(selection, &mut parts);
    }
    let (guards, kept): (Vec<Expr>, Vec<Expr>) = parts
        .into_iter()
        .partition(|p| references(p, &inner) == (true, false));
    s.selection = and(kept);
    let select_of = |x: Expr| -> Expr {
        let mut q = base.clone();
        if let SetExpr::Select(s) = q.body.as_mut() {
            s.projection = vec![SelectItem::UnnamedExpr(x)];
        }
        Expr::Subquery(Box::new(q))
    };
    struct Lookups<'a, F: Fn(Expr) -> Expr> {
        inner: &'a HashSet<String>,
        select_of: F,
    }
    impl<F: Fn(Expr) -> Expr> VisitorMut for Lookups<'_, F> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let inner = match e {
                // PostgreSQL resolves an unqualified name in the subquery first.
                Expr::Identifier(_) => true,
                Expr::CompoundIdentifier(_) => {
                    qualified(e).is_some_and(|(q, _)| self.inner.contains(&q))
                }
                _ => false,
            };
            if inner {
                *e = (self.select_of)(e.clone());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            // A nested subquery's names are its own.
            ControlFlow::Break(())
        }
    }
    let mut value = item;
    let flow = VisitMut::visit(
        &mut value,
        &mut Lookups {
            inner: &inner,
            select_of: &select_of,
        },
    );
    if flow.is_break() {
        return None;
    }
    let count = select_of(call_with(
        "count",
        vec![FunctionArgExpr::Wildcard],
        Vec::new(),
    ));
    let found = Expr::BinaryOp {
        left: Box::new(count),
        op: BinaryOperator::Gt,
        right: Box::new(Expr::value(Value::Number("0".into(), false))),
    };
    let condition = match and(guards) {
        Some(guard) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(guard))),
            op: BinaryOperator::And,
            right: Box::new(found),
        },
        None => found,
    };
    Some(when(condition, value))
}

/// `CASE WHEN condition THEN result END`: NULL where the condition does
/// not hold.
fn when(condition: Expr, result: Expr) -> Expr {
    Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen { condition, result }],
        else_result: None,
    }
}

/// Take each plain one-expression scalar subquery's value through
/// `single_value` (or `first_value`, for one limited to its first row).
pub(crate) fn scalar_subqueries(q: &mut Query) {
    struct Single;
    impl VisitorMut for Single {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let Expr::Subquery(sub) = e else {
                return ControlFlow::Continue(());
            };
            if let Some(cases) = outer_columns_in_select(sub) {
                *e = cases;
                return ControlFlow::Continue(());
            }
            if let Some(guard) = limit_one_as_first_value(sub) {
                // The first row's value while the limit is 1, none for 0.
                let sub = std::mem::replace(e, Expr::value(Value::Null));
                *e = when(guard, sub);
                return ControlFlow::Continue(());
            }
            let Some(s) = plain_select(sub) else {
                return ControlFlow::Continue(());
            };
            if s.projection.len() != 1 {
                return ControlFlow::Continue(());
            }
            let item = match &mut s.projection[0] {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => return ControlFlow::Continue(()),
            };
            // Only a subquery that is NULL on no row may have conditions
            // moved out of it (a count is 0 there, not NULL).
            let single = !aggregates(item);
            if single {
                let inner = std::mem::replace(item, Expr::value(Value::Null));
                *item = call(SINGLE_VALUE, inner);
            }
            let hoisted = decorrelate(s, single);
            if let Some(condition) = hoisted {
                let sub = std::mem::replace(e, Expr::value(Value::Null));
                *e = when(condition, sub);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = q.visit(&mut Single);
}

/// The names a SELECT's FROM gives its relations (aliases, else table
/// names), folded; None if some relation cannot be named so.
pub(super) fn from_names(s: &Select) -> Option<HashSet<String>> {
    let mut names = HashSet::new();
    for twj in &s.from {
        for factor in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
            match factor {
                TableFactor::Table { alias: Some(a), .. }
                | TableFactor::Derived { alias: Some(a), .. } => {
                    names.insert(folded(&a.name));
                }
                TableFactor::Table {
                    name, alias: None, ..
                } => {
                    let last = name.0.last()?.as_ident()?;
                    names.insert(folded(last));
                }
                _ => return None,
            }
        }
    }
    Some(names)
}

/// The split of a conjunction into its conjuncts.
pub(super) fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            conjuncts(*inner, out)
        }
        other => out.push(other),
    }
}

pub(super) fn and(items: Vec<Expr>) -> Option<Expr> {
    items.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    })
}

/// A qualified column's (qualifier, column), folded; a schema before the
/// relation (`pg_catalog.pg_attribute.attname`, as SQLAlchemy writes
/// catalog columns) is left out.
pub(super) fn qualified(e: &Expr) -> Option<(String, String)> {
    match e {
        Expr::CompoundIdentifier(parts) if matches!(parts.len(), 2 | 3) => {
            let n = parts.len();
            Some((folded(&parts[n - 2]), folded(&parts[n - 1])))
        }
        _ => None,
    }
}

/// How an expression refers to columns: (outer, inner or unqualified).
pub(super) fn references(e: &Expr, inner: &HashSet<String>) -> (bool, bool) {
    struct Refs<'a> {
        inner: &'a HashSet<String>,
        outer: bool,
        local: bool,
    }
    impl Visitor for Refs<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(_) => self.local = true,
                Expr::CompoundIdentifier(_) => match qualified(e) {
                    Some((q, _)) if !self.inner.contains(&q) => self.outer = true,
                    _ => self.local = true,
                },
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                    // Its own names are not ours to judge.
                    self.local = true;
                    return ControlFlow::Break(());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut r = Refs {
        inner,
        outer: false,
        local: false,
    };
    let _ = e.visit(&mut r);
    (r.outer, r.local)
}

/// An equality of an inner column (qualified by a relation in `inner`)
/// with an outer one: (the inner side, the outer side).
pub(super) fn correlation<'e>(
    p: &'e Expr,
    inner: &HashSet<String>,
) -> Option<(&'e Expr, &'e Expr)> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = p
    else {
        return None;
    };
    let side = |e: &Expr| qualified(e).map(|(q, _)| inner.contains(&q));
    match (side(left), side(right)) {
        (Some(true), Some(false)) => Some((left, right)),
        (Some(false), Some(true)) => Some((right, left)),
        _ => None,
    }
}

/// Bring a subquery's WHERE into a shape DataFusion decorrelates; the
/// conditions on outer columns alone come back, to guard its value with.
fn decorrelate(s: &mut Select, may_hoist: bool) -> Option<Expr> {
    let inner = from_names(s)?;
    let selection = s.selection.take()?;
    let mut parts = Vec::new();
    conjuncts(selection, &mut parts);
    // Outer columns equated with inner ones, and which parts are such
    // equations.
    let mut same: HashMap<(String, String), Expr> = HashMap::new();
    let mut equations = Vec::with_capacity(parts.len());
    for p in &parts {
        let equation = correlation(p, &inner);
        if let Some((by, outer)) = equation {
            if let Some(outer) = qualified(outer) {
                same.entry(outer).or_insert_with(|| by.clone());
            }
        }
        equations.push(equation.is_some());
    }
    let mut kept = Vec::new();
    let mut hoisted = Vec::new();
    for (mut p, is_equation) in parts.into_iter().zip(equations) {
        if !is_equation && !same.is_empty() {
            let _ = VisitMut::visit(
                &mut p,
                &mut Substitute {
                    same: &same,
                    inner: &inner,
                },
            );
        }
        match references(&p, &inner) {
            (true, false) if may_hoist => hoisted.push(p),
            _ => kept.push(p),
        }
    }
    s.selection = and(kept);
    and(hoisted).map(|c| Expr::Nested(Box::new(c)))
}

/// Replaces outer columns by the inner columns they are equated with.
struct Substitute<'a> {
    same: &'a HashMap<(String, String), Expr>,
    inner: &'a HashSet<String>,
}

impl VisitorMut for Substitute<'_> {
    type Break = ();
    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(key) = qualified(e) {
            if !self.inner.contains(&key.0) {
                if let Some(by) = self.same.get(&key) {
                    *e = by.clone();
                }
            }
        }
        ControlFlow::Continue(())
    }
    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// `kc_first_row_limit(n)` (`FIRST_ROW_LIMIT`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct FirstRowLimit {
    signature: Signature,
}

pub(crate) fn first_row_limit_function() -> ScalarUDF {
    ScalarUDF::from(FirstRowLimit {
        signature: Signature::exact(vec![ArrowType::Int64], Volatility::Immutable),
    })
}

impl ScalarUDFImpl for FirstRowLimit {
    fn name(&self) -> &str {
        FIRST_ROW_LIMIT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[ArrowType]) -> DfResult<ArrowType> {
        Ok(ArrowType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        map_rows(
            &args.args,
            args.number_rows,
            &ArrowType::Boolean,
            |row| match row.first() {
                Some(ScalarValue::Int64(Some(1))) => Ok(ScalarValue::Boolean(Some(true))),
                Some(ScalarValue::Int64(Some(0))) => Ok(ScalarValue::Boolean(Some(false))),
                Some(ScalarValue::Int64(Some(n))) if *n < 0 => Err(sql_err(SqlError::new(
                    "2201W",
                    "LIMIT must not be negative",
                ))),
                _ => Err(sql_err(SqlError::unsupported(
                    "a correlated subquery limited by a parameter runs only with a limit of 0 or 1",
                    "write the limit in the query's text, or aggregate the subquery",
                ))),
            },
        )
    }
}
