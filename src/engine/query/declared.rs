//! Parameters of the types their client declared.
//!
//! PostgreSQL types a parameter whose type came with the statement (a
//! Parse message's parameter types) as declared wherever it stands.
//! DataFusion types a bare placeholder by its context, and a `VALUES` list
//! or a `UNION` branch of placeholders comes out as text: `SELECT v::int
//! FROM (VALUES ($1)) t(v)` with a numeric 0.5 would read the text '0.5'
//! and answer 0 where PostgreSQL answers 1. So each declared parameter of
//! a number, boolean or date type is written as a cast to its type, which
//! is what PostgreSQL's typed parameter is.
//!
//! Left bare: parameters of LIMIT, OFFSET and FETCH (DataFusion reads
//! those itself), and of the types whose Arrow form differs from what
//! DataFusion would make of the SQL type (text-family types carry
//! keyclaim's metadata; timestamps another unit): those are typed by their
//! context, as before.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, ExactNumberInfo, Expr, Fetch, LimitClause, Query, Statement, Value,
    VisitMut, VisitorMut,
};

use crate::types::SqlType;

/// Casts each parameter of `stmt` that `hints` declares to its type.
pub(super) fn declare(stmt: &mut Statement, hints: &[Option<SqlType>]) {
    if hints.iter().flatten().all(|h| ast_type(h).is_none()) {
        return;
    }
    let _ = stmt.visit(&mut Declare {
        hints,
        limits: Vec::new(),
    });
}

struct Declare<'a> {
    hints: &'a [Option<SqlType>],
    /// Each query's LIMIT / OFFSET and FETCH, taken out while its other
    /// expressions are visited.
    limits: Vec<(Option<LimitClause>, Option<Fetch>)>,
}

impl VisitorMut for Declare<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        self.limits.push((q.limit_clause.take(), q.fetch.take()));
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if let Some((limit, fetch)) = self.limits.pop() {
            q.limit_clause = limit;
            q.fetch = fetch;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let Expr::Value(v) = e else {
            return ControlFlow::Continue(());
        };
        let Value::Placeholder(p) = &v.value else {
            return ControlFlow::Continue(());
        };
        let declared = p
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| self.hints.get(i))
            .and_then(Option::as_ref)
            .and_then(ast_type);
        if let Some(data_type) = declared {
            let placeholder = std::mem::replace(e, Expr::Value(Value::Null.into()));
            *e = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(placeholder),
                data_type,
                array: false,
                format: None,
            };
        }
        ControlFlow::Continue(())
    }
}

/// The SQL type DataFusion reads as the Arrow type keyclaim gives `ty`
/// (`types::arrow_type`); None for the types left to their context.
fn ast_type(ty: &SqlType) -> Option<DataType> {
    Some(match ty {
        SqlType::Bool => DataType::Boolean,
        SqlType::Int2 => DataType::SmallInt(None),
        SqlType::Int4 => DataType::Int(None),
        SqlType::Int8 => DataType::BigInt(None),
        SqlType::Float4 => DataType::Real,
        SqlType::Float8 => DataType::DoublePrecision,
        // DataFusion's NUMERIC is keyclaim's unconstrained numeric:
        // Decimal128(38, 10).
        SqlType::Numeric(None) => DataType::Numeric(ExactNumberInfo::None),
        SqlType::Date => DataType::Date,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn declared(sql: &str, hints: &[Option<SqlType>]) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        declare(&mut stmt, hints);
        stmt.to_string()
    }

    #[test]
    fn declared_parameters_are_cast_to_their_types_but_limits_stay_bare() {
        assert_eq!(
            declared(
                "SELECT v FROM (VALUES ($1), ($2)) AS t(v) WHERE v > $3 LIMIT $4 OFFSET $5",
                &[
                    Some(SqlType::Numeric(None)),
                    None,
                    Some(SqlType::Int4),
                    Some(SqlType::Int8),
                    Some(SqlType::Int8),
                ]
            ),
            "SELECT v FROM (VALUES (CAST($1 AS NUMERIC)), ($2)) AS t (v) \
             WHERE v > CAST($3 AS INT) LIMIT $4 OFFSET $5"
        );
        // Text-family and timestamp parameters are typed by their context.
        assert_eq!(
            declared(
                "SELECT $1 UNION ALL SELECT $2",
                &[Some(SqlType::Varchar(None)), Some(SqlType::Timestamp)]
            ),
            "SELECT $1 UNION ALL SELECT $2"
        );
        assert_eq!(
            declared(
                "SELECT (SELECT $1 FROM t LIMIT $2)",
                &[Some(SqlType::Bool), Some(SqlType::Int8)]
            ),
            "SELECT (SELECT CAST($1 AS BOOLEAN) FROM t LIMIT $2)"
        );
    }
}
