//! CHECK constraints: a boolean expression every row written must not
//! make false (NULL passes, as in PostgreSQL). Kept as SQL text and
//! compiled per plan (`sql::check`); nothing about them touches the
//! claim protocol, since a row alone decides whether it passes.

use serde::{Deserialize, Serialize};

/// A CHECK constraint of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckDef {
    /// The name errors report: declared, or `<table>_<column>_check` when
    /// the expression reads one column, else `<table>_check`.
    pub name: String,
    /// The expression as SQL text, as declared (sqlparser's rendering).
    pub expr: String,
    /// The columns it reads, in the order they first appear
    /// (pg_constraint.conkey).
    pub columns: Vec<usize>,
    /// False while `NOT VALID`: enforced on every write, but the rows that
    /// were there when it was added have not been checked.
    #[serde(default = "validated", skip_serializing_if = "is_validated")]
    pub validated: bool,
}

fn validated() -> bool {
    true
}

fn is_validated(v: &bool) -> bool {
    *v
}
