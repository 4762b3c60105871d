//! Which result columns of a planned query are plain columns of a
//! keyclaim table, for RowDescription's table OID and attnum (PostgreSQL's
//! `markTargetListOrigins`).
//!
//! A result column is followed down the logical plan by its position:
//! through projections that pass a column on (aliased or not), filters,
//! sorts, limits, subquery and table aliases, joins (to the side it comes
//! from), grouping by the column and DISTINCT, to the scan of a keyclaim
//! table. Anything else, an expression, an aggregate, a set operation, a
//! system relation, ends the trail: the column is computed (0 on the
//! wire). Only what is certain is named.

use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{Distinct, Expr, JoinConstraint, JoinType, LogicalPlan};

use super::provider::Table;
use crate::engine::ColumnOrigin;

/// Each result column's origin, in order.
pub(crate) fn of(plan: &LogicalPlan) -> Vec<Option<ColumnOrigin>> {
    (0..plan.schema().fields().len())
        .map(|i| origin(plan, i))
        .collect()
}

/// The origin of output column `i` of `plan`.
fn origin(plan: &LogicalPlan, i: usize) -> Option<ColumnOrigin> {
    match plan {
        LogicalPlan::TableScan(scan) => {
            let provider = source_as_provider(&scan.source).ok()?;
            let table = provider.downcast_ref::<Table>()?;
            let index = match &scan.projection {
                Some(p) => *p.get(i)?,
                None => i,
            };
            (index < table.def.visible().len())
                .then(|| ColumnOrigin::of(&table.def, index))
                .flatten()
        }
        LogicalPlan::Projection(p) => passed_on(p.expr.get(i)?, &p.input),
        LogicalPlan::Filter(f) => origin(&f.input, i),
        LogicalPlan::Sort(s) => origin(&s.input, i),
        LogicalPlan::Limit(l) => origin(&l.input, i),
        LogicalPlan::SubqueryAlias(a) => origin(&a.input, i),
        LogicalPlan::Repartition(r) => origin(&r.input, i),
        LogicalPlan::Distinct(Distinct::All(input)) => origin(input, i),
        LogicalPlan::Distinct(Distinct::On(d)) => passed_on(d.select_expr.get(i)?, &d.input),
        LogicalPlan::Window(w) => {
            (i < w.input.schema().fields().len()).then(|| origin(&w.input, i))?
        }
        LogicalPlan::Aggregate(a) => {
            // Grouping sets add a grouping id and make columns NULL per
            // set: not followed.
            if a.group_expr
                .iter()
                .any(|e| matches!(e, Expr::GroupingSet(_)))
            {
                return None;
            }
            passed_on(a.group_expr.get(i)?, &a.input)
        }
        LogicalPlan::Join(j) => {
            let left = j.left.schema().fields().len();
            match j.join_type {
                JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full => {
                    if i >= left {
                        return origin(&j.right, i - left);
                    }
                    // A USING column of a right or full join is PostgreSQL's
                    // merged column (the right one, or a COALESCE of both):
                    // not the left table's.
                    let merged = j.join_constraint == JoinConstraint::Using
                        && matches!(j.join_type, JoinType::Right | JoinType::Full)
                        && j.on.iter().any(|(l, _)| match l {
                            Expr::Column(c) => j.left.schema().index_of_column(c).ok() == Some(i),
                            _ => false,
                        });
                    if merged {
                        return None;
                    }
                    origin(&j.left, i)
                }
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => {
                    (i < left).then(|| origin(&j.left, i))?
                }
                JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
                    (i < j.right.schema().fields().len()).then(|| origin(&j.right, i))?
                }
            }
        }
        _ => None,
    }
}

/// The origin of an expression over `input` that passes a column on.
fn passed_on(e: &Expr, input: &LogicalPlan) -> Option<ColumnOrigin> {
    match e {
        Expr::Alias(a) => passed_on(&a.expr, input),
        Expr::Column(c) => origin(input, input.schema().index_of_column(c).ok()?),
        _ => None,
    }
}
