//! A `WITH` inside a correlated scalar subquery, lifted to the statement.
//!
//! DataFusion plans no correlated subquery that has a `WITH` of its own.
//! asyncpg's type introspection (every array type but `text[]` goes
//! through it) computes a domain's base type so:
//!
//! ```sql
//! (WITH RECURSIVE typebases(oid, depth) AS (
//!     SELECT t2.typbasetype, 0 FROM pg_type t2 WHERE t2.oid = t.oid
//!     UNION ALL
//!     SELECT t2.typbasetype, tb.depth + 1 FROM pg_type t2, typebases tb
//!     WHERE tb.oid = t2.oid AND t2.typbasetype != 0
//! ) SELECT oid FROM typebases ORDER BY depth DESC LIMIT 1)
//! ```
//!
//! where only the anchor names the outer row, by one equality. The same
//! rows come from computing the CTE once for every value of the anchor's
//! inner column, each row carrying the value it started from (the
//! recursive member passes it on), and keeping those that started from
//! the outer row's:
//!
//! ```sql
//! WITH RECURSIVE kc_lifted_1(oid, depth, kc_start) AS (
//!     SELECT t2.typbasetype, 0, t2.oid FROM pg_type t2
//!     UNION ALL
//!     SELECT t2.typbasetype, tb.depth + 1, tb.kc_start FROM ...)
//! ... (SELECT oid FROM kc_lifted_1 typebases
//!      WHERE typebases.kc_start = t.oid ORDER BY depth DESC LIMIT 1)
//! ```
//!
//! which the scalar-subquery rewrites (`subqueries`) then decorrelate. The
//! cost differs: the CTE runs over the anchor's whole table once, where
//! PostgreSQL runs it per outer row. Only that shape is lifted: one CTE,
//! read once by the subquery's one SELECT and at most once by its
//! recursive member, no other outer column, no nested subquery.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Cte, Expr, Ident, ObjectName, ObjectNamePart, Query, Select, SelectItem,
    SetExpr, SetOperator, TableAlias, TableAliasColumnDef, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut, With,
};

use super::rules::folded;
use super::subqueries::{
    aggregates, and, conjuncts, correlation, from_names, references, ungrouped,
};

/// The column each lifted CTE row carries its starting value in.
const START: &str = "kc_start";

/// Lift every correlated subquery's `WITH` of the shape above to the
/// front of the statement's own `WITH` (before the CTEs that may read
/// them through the subquery).
pub(crate) fn lift_correlated_ctes(q: &mut Query) {
    struct Lift {
        lifted: Vec<Cte>,
        recursive: bool,
    }
    impl VisitorMut for Lift {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Subquery(sub) = e {
                let name = format!("kc_lifted_{}", self.lifted.len() + 1);
                if let Some((cte, recursive)) = lift(sub, &name) {
                    self.lifted.push(cte);
                    self.recursive |= recursive;
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut lift_all = Lift {
        lifted: Vec::new(),
        recursive: false,
    };
    let _ = q.visit(&mut lift_all);
    if lift_all.lifted.is_empty() {
        return;
    }
    let with = q.with.get_or_insert_with(|| With {
        with_token: AttachedToken::empty(),
        recursive: false,
        cte_tables: Vec::new(),
    });
    with.recursive |= lift_all.recursive;
    lift_all.lifted.append(&mut with.cte_tables);
    with.cte_tables = lift_all.lifted;
}

/// The subquery's CTE, lifted and renamed `name`, and whether it is
/// recursive; the subquery then reads it by the outer value. None (and
/// the subquery unchanged) for any other shape.
fn lift(sub: &mut Query, name: &str) -> Option<(Cte, bool)> {
    let with = sub.with.as_ref()?;
    let [cte] = with.cte_tables.as_slice() else {
        return None;
    };
    let cte_name = folded(&cte.alias.name);
    if nests_queries(&cte.query) {
        return None;
    }
    let mut cte = cte.clone();
    let (anchor, recursive) = members(&mut cte.query)?;
    let (start, outer) = take_correlation(anchor)?;
    anchor.projection.push(SelectItem::ExprWithAlias {
        expr: start,
        alias: Ident::new(START),
    });
    if let Some(member) = recursive {
        let by = reads(member, &cte_name, name)?;
        let inner = from_names(member)?;
        let outer_in_where = member
            .selection
            .as_ref()
            .is_some_and(|w| references(w, &inner).0);
        if projects_outer(member, &inner) || outer_in_where {
            return None;
        }
        member.projection.push(SelectItem::ExprWithAlias {
            expr: Expr::CompoundIdentifier(vec![by, Ident::new(START)]),
            alias: Ident::new(START),
        });
    }
    if !cte.alias.columns.is_empty() {
        cte.alias.columns.push(TableAliasColumnDef {
            name: Ident::new(START),
            data_type: None,
        });
    }
    cte.alias.name = Ident::new(name);
    let SetExpr::Select(body) = sub.body.as_mut() else {
        return None;
    };
    let by = reads(body, &cte_name, name)?;
    let filter = Expr::BinaryOp {
        left: Box::new(Expr::CompoundIdentifier(vec![by, Ident::new(START)])),
        op: BinaryOperator::Eq,
        right: Box::new(outer),
    };
    let mut parts = Vec::new();
    if let Some(w) = body.selection.take() {
        conjuncts(w, &mut parts);
    }
    parts.push(filter);
    body.selection = and(parts);
    let recursive = sub.with.take().is_some_and(|w| w.recursive);
    Some((cte, recursive))
}

/// A CTE's anchor and, if it has one, its recursive member: `anchor` or
/// `anchor UNION [ALL] member`, each one SELECT.
fn members(q: &mut Query) -> Option<(&mut Select, Option<&mut Select>)> {
    if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() || q.with.is_some() {
        return None;
    }
    match q.body.as_mut() {
        SetExpr::Select(anchor) => Some((anchor, None)),
        SetExpr::SetOperation {
            op: SetOperator::Union,
            left,
            right,
            ..
        } => match (left.as_mut(), right.as_mut()) {
            (SetExpr::Select(anchor), SetExpr::Select(member)) => Some((anchor, Some(member))),
            _ => None,
        },
        _ => None,
    }
}

/// Takes the anchor's one correlation, `inner = outer`, out of its WHERE:
/// (the inner side, the outer side). None unless that is the only place
/// the anchor names an outer column.
fn take_correlation(anchor: &mut Select) -> Option<(Expr, Expr)> {
    let inner = from_names(anchor)?;
    let names_outer = |e: &Expr| references(e, &inner).0;
    if projects_outer(anchor, &inner) || groups(anchor) {
        return None;
    }
    let mut parts = Vec::new();
    conjuncts(anchor.selection.clone()?, &mut parts);
    let mut found = None;
    let mut kept = Vec::new();
    for p in parts {
        if !names_outer(&p) {
            kept.push(p);
            continue;
        }
        let (by, outer) = correlation(&p, &inner)?;
        if found.replace((by.clone(), outer.clone())).is_some() {
            return None;
        }
    }
    anchor.selection = and(kept);
    found
}

/// Points a SELECT's one read of the CTE `old` at `new`, keeping the name
/// it is read by (its alias, else `old`), which it returns. None if the
/// SELECT reads it other than once, as one FROM relation.
fn reads(s: &mut Select, old: &str, new: &str) -> Option<Ident> {
    let mut by = None;
    for twj in &mut s.from {
        let factors =
            std::iter::once(&mut twj.relation).chain(twj.joins.iter_mut().map(|j| &mut j.relation));
        for factor in factors {
            let TableFactor::Table { name, alias, .. } = factor else {
                continue;
            };
            let [ObjectNamePart::Identifier(table)] = name.0.as_slice() else {
                continue;
            };
            if folded(table) != old {
                continue;
            }
            let alias = alias.get_or_insert_with(|| TableAlias {
                explicit: true,
                name: table.clone(),
                columns: Vec::new(),
                at: None,
            });
            if by.replace(alias.name.clone()).is_some() {
                return None;
            }
            *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(new))]);
        }
    }
    by
}

/// Whether a query has a subquery anywhere in it.
fn nests_queries(q: &Query) -> bool {
    struct Nested(bool);
    impl Visitor for Nested {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(
                e,
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
            ) {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut nested = Nested(false);
    let _ = q.visit(&mut nested);
    nested.0
}

/// Whether a SELECT's list names a column of no relation of its FROM
/// (`inner`), or is a wildcard, whose columns are not known here.
fn projects_outer(s: &Select, inner: &HashSet<String>) -> bool {
    s.projection.iter().any(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            references(e, inner).0
        }
        _ => true,
    })
}

/// Whether a SELECT groups, aggregates or names a window (or has no FROM):
/// its rows could not carry the values they started from.
fn groups(s: &Select) -> bool {
    !ungrouped(s)
        || s.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => aggregates(e),
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn lifted(sql: &str) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .pop()
            .expect("one statement");
        let datafusion::sql::sqlparser::ast::Statement::Query(q) = &mut stmt else {
            panic!("not a query");
        };
        lift_correlated_ctes(q);
        stmt.to_string()
    }

    #[test]
    fn a_recursive_cte_correlated_by_its_anchor_is_computed_once_per_start() {
        assert_eq!(
            lifted(
                "SELECT t.oid, (WITH RECURSIVE b(oid, depth) AS (SELECT t2.typbasetype, 0 \
                 FROM pg_type t2 WHERE t2.oid = t.oid UNION ALL SELECT t2.typbasetype, \
                 b.depth + 1 FROM pg_type t2, b WHERE b.oid = t2.oid) SELECT oid FROM b \
                 ORDER BY depth DESC LIMIT 1) FROM pg_type t"
            ),
            "WITH RECURSIVE kc_lifted_1 (oid, depth, kc_start) AS (SELECT t2.typbasetype, 0, \
             t2.oid AS kc_start FROM pg_type t2 UNION ALL SELECT t2.typbasetype, \
             b.depth + 1, b.kc_start AS kc_start FROM pg_type t2, kc_lifted_1 AS b \
             WHERE b.oid = t2.oid) SELECT t.oid, (SELECT oid FROM kc_lifted_1 AS b WHERE \
             b.kc_start = t.oid ORDER BY depth DESC LIMIT 1) FROM pg_type t"
        );
    }

    #[test]
    fn a_lifted_cte_goes_before_the_statements_own() {
        let text = lifted(
            "WITH o AS (SELECT 1 AS k) SELECT (WITH c AS (SELECT x.v FROM t x WHERE \
             x.k = o.k AND x.v > 0) SELECT count(*) FROM c) FROM o",
        );
        assert_eq!(
            text,
            "WITH kc_lifted_1 AS (SELECT x.v, x.k AS kc_start FROM t x WHERE x.v > 0), \
             o AS (SELECT 1 AS k) SELECT (SELECT count(*) FROM kc_lifted_1 AS c WHERE \
             c.kc_start = o.k) FROM o"
        );
    }

    #[test]
    fn other_shapes_stay_as_they_are() {
        for sql in [
            // The recursive member names the outer row.
            "SELECT (WITH RECURSIVE b AS (SELECT x.a FROM t x WHERE x.k = o.k UNION ALL \
             SELECT y.a FROM t y, b WHERE y.k = b.a AND y.z = o.z) SELECT a FROM b LIMIT 1) FROM o",
            // The anchor aggregates.
            "SELECT (WITH c AS (SELECT max(x.a) AS m FROM t x WHERE x.k = o.k) SELECT m FROM c) FROM o",
            // A correlation that is not an equality.
            "SELECT (WITH c AS (SELECT x.a FROM t x WHERE x.k < o.k) SELECT count(*) FROM c) FROM o",
            // Two CTEs.
            "SELECT (WITH c AS (SELECT x.a FROM t x WHERE x.k = o.k), d AS (SELECT 1 AS one) \
             SELECT count(*) FROM c, d) FROM o",
            // A nested subquery in the CTE.
            "SELECT (WITH c AS (SELECT x.a FROM t x WHERE x.k = o.k AND x.a IN (SELECT 1)) \
             SELECT count(*) FROM c) FROM o",
        ] {
            let after = lifted(sql);
            assert!(!after.contains("kc_lifted"), "{after}");
        }
    }
}
