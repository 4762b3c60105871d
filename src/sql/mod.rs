//! SQL: parse (sqlparser, PostgreSQL dialect), plan into keyclaim's small set
//! of operations, and evaluate expressions.
pub mod ddl;
pub mod expr;
pub mod plan;

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::{SqlError, SqlResult};

/// Parse SQL text into statements (PostgreSQL dialect); errors are 42601.
pub fn parse(sql: &str) -> SqlResult<Vec<Statement>> {
    Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| {
        let msg = e.to_string();
        let msg = msg
            .strip_prefix("sql parser error: ")
            .unwrap_or(&msg)
            .to_owned();
        SqlError::syntax(format!("syntax error: {msg}"))
    })
}

/// Parse one expression (a stored DEFAULT).
pub fn parse_expr(text: &str) -> SqlResult<sqlparser::ast::Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))
}
