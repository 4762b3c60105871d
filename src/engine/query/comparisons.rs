//! Comparisons PostgreSQL has no operator for (`text = integer`) are
//! refused with its 42883, as the single-table planner refuses them
//! (`sql::expr::comparable` is the one rule for both). DataFusion would
//! coerce one side to the other's type and compare; so the check runs on
//! the plan as SQL planning leaves it, before type coercion, where every
//! operand still has the type the query gave it.

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};

use super::errors::Source;
use crate::error::{SqlError, SqlResult};
use crate::types::SqlType;

/// The first comparison in `plan` (subqueries included) between types
/// PostgreSQL cannot compare, as its error.
pub(super) fn check(plan: &LogicalPlan, src: Option<&Source<'_>>) -> SqlResult<()> {
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        let schema = merge_schema(&node.inputs());
        node.apply_expressions(|e| {
            e.apply(|e| {
                found = refused(e, &schema, src);
                Ok(match found {
                    Some(_) => TreeNodeRecursion::Stop,
                    None => TreeNodeRecursion::Continue,
                })
            })
        })
    });
    found.map_or(Ok(()), Err)
}

fn refused(e: &Expr, schema: &DFSchema, src: Option<&Source<'_>>) -> Option<SqlError> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (symbol, written) = comparison_symbol(op)?;
            let (lt, rt) = incomparable(left, right, schema)?;
            let at = src.and_then(|s| {
                let left = operand_text(left)?;
                written.iter().find_map(|w| s.find_after(&left, w))
            });
            Some(no_operator(&lt, symbol, &rt, at))
        }
        Expr::InList(InList { expr, list, .. }) => {
            let (lt, rt) = list
                .iter()
                .find_map(|item| incomparable(expr, item, schema))?;
            let at = src.and_then(|s| s.find_after(&operand_text(expr)?, "in"));
            Some(no_operator(&lt, "=", &rt, at))
        }
        _ => None,
    }
}

/// The two operands' types, if PostgreSQL has no comparison between them.
fn incomparable(left: &Expr, right: &Expr, schema: &DFSchema) -> Option<(SqlType, SqlType)> {
    let (lt, rt) = (pg_type(left, schema)?, pg_type(right, schema)?);
    (!crate::sql::expr::comparable(&lt, &rt)).then_some((lt, rt))
}

/// PostgreSQL's error, at the operator (`at`, where the client's text
/// shows it after its left operand).
fn no_operator(lt: &SqlType, symbol: &str, rt: &SqlType, at: Option<u32>) -> SqlError {
    let err = SqlError::no_operator(lt.pg_name(), symbol, rt.pg_name());
    match at {
        Some(p) => err.with_position(p),
        None => err,
    }
}

/// The SQL type an operand has as the query wrote it; None for what
/// PostgreSQL would still resolve from the other side (a string literal,
/// NULL, a parameter) or what keyclaim does not map.
fn pg_type(e: &Expr, schema: &DFSchema) -> Option<SqlType> {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(n)), _) => Some(match i32::try_from(*n) {
            Ok(_) => SqlType::Int4,
            Err(_) => SqlType::Int8,
        }),
        Expr::Literal(v, _) if v.is_null() => None,
        Expr::Literal(
            ScalarValue::Utf8(_) | ScalarValue::Utf8View(_) | ScalarValue::LargeUtf8(_),
            _,
        ) => None,
        Expr::Placeholder(_) => None,
        e => {
            let (_, field) = e.to_field(schema).ok()?;
            super::types::sql_type(&field).ok()
        }
    }
}

/// How the operand reads in the client's text, where it is a column or a
/// number.
fn operand_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Column(c) => Some(c.name.clone()),
        Expr::Literal(ScalarValue::Int64(Some(n)), _) => Some(n.to_string()),
        _ => None,
    }
}

/// The operator as PostgreSQL names it, and as a query may write it.
fn comparison_symbol(op: &Operator) -> Option<(&'static str, &'static [&'static str])> {
    Some(match op {
        Operator::Eq => ("=", &["="]),
        Operator::NotEq => ("<>", &["<>", "!="]),
        Operator::Lt => ("<", &["<"]),
        Operator::LtEq => ("<=", &["<="]),
        Operator::Gt => (">", &[">"]),
        Operator::GtEq => (">=", &[">="]),
        _ => return None,
    })
}
