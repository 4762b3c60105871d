//! SQL: parse (sqlparser, PostgreSQL dialect), plan into keyclaim's small set
//! of operations, and evaluate expressions.
pub mod plan;
