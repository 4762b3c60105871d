//! Plans: what a statement will do, decided before it runs.

#[derive(Debug)]
pub enum Plan {
    /// SET / SHOW / BEGIN ...: handled by `session`.
    Session(sqlparser::ast::Statement),
}
