//! One error type for everything a client can see.
//!
//! Every variant carries the SQLSTATE PostgreSQL would use, so the wire layer
//! turns it into an ErrorResponse without guessing. The text is what the
//! client sees; internal causes are logged where they happen, never leaked.

use std::fmt;

/// SQLSTATE codes keyclaim answers with (PostgreSQL's errcodes.txt).
pub mod sqlstate {
    pub const SYNTAX_ERROR: &str = "42601";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const AMBIGUOUS_FUNCTION: &str = "42725";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const GROUPING_ERROR: &str = "42803";
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    pub const INDETERMINATE_DATATYPE: &str = "42P18";
    pub const UNIQUE_VIOLATION: &str = "23505";
    pub const FOREIGN_KEY_VIOLATION: &str = "23503";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const CHECK_VIOLATION: &str = "23514";
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    pub const STRING_DATA_RIGHT_TRUNCATION: &str = "22001";
    pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    pub const DATETIME_FIELD_OVERFLOW: &str = "22008";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    pub const INVALID_ROW_COUNT_IN_LIMIT: &str = "2201W";
    pub const INVALID_ROW_COUNT_IN_OFFSET: &str = "2201X";
    pub const CARDINALITY_VIOLATION: &str = "21000";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const IN_FAILED_TRANSACTION: &str = "25P02";
    pub const NO_ACTIVE_TRANSACTION: &str = "25P01";
    pub const ACTIVE_TRANSACTION: &str = "25001";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const QUERY_CANCELED: &str = "57014";
    pub const STATEMENT_COMPLETION_UNKNOWN: &str = "40003";
    pub const INSUFFICIENT_RESOURCES: &str = "53000";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const UNDEFINED_PREPARED_STATEMENT: &str = "26000";
    pub const INTERNAL_ERROR: &str = "XX000";
    pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
    pub const UNRECOGNIZED_PARAMETER: &str = "42704";
}

/// An error as the client sees it: PostgreSQL's ErrorResponse fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SqlError {
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    pub schema: Option<String>,
    pub table: Option<String>,
    pub column: Option<String>,
    pub constraint: Option<String>,
    pub datatype: Option<String>,
    /// 1-based character position in the query text, for the client's cursor.
    pub position: Option<u32>,
    /// Where it happened, beyond the statement (PostgreSQL's CONTEXT:
    /// `COPY t, line 3, column n: "x"`).
    pub context: Option<String>,
    /// Where in the query text the error is, until `locate` turns it into
    /// a `position` against that text.
    pub location: Option<Place>,
    /// Not a field the client sees: the single-table evaluator lacks an
    /// expression or function of the statement, which the query engine
    /// may run (`engine::plan` sends the statement there instead).
    pub beyond_fast_path: bool,
}

/// A place in the query text: 1-based line and column, and whether the
/// error is at the first token from there on rather than at it (`after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub line: u32,
    pub column: u32,
    pub skips_space: bool,
}

impl Place {
    fn new(loc: sqlparser::tokenizer::Location, skips_space: bool) -> Option<Place> {
        Some(Place {
            line: u32::try_from(loc.line).ok().filter(|l| *l > 0)?,
            column: u32::try_from(loc.column).ok()?,
            skips_space,
        })
    }
}

pub type SqlResult<T> = Result<T, SqlError>;

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError {
            code,
            message: message.into(),
            ..Default::default()
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_table(mut self, table: impl Into<String>) -> Self {
        self.schema = Some("public".into());
        self.table = Some(table.into());
        self
    }

    pub fn with_column(mut self, column: impl Into<String>) -> Self {
        self.column = Some(column.into());
        self
    }

    pub fn with_constraint(mut self, constraint: impl Into<String>) -> Self {
        self.constraint = Some(constraint.into());
        self
    }

    pub fn with_position(mut self, position: u32) -> Self {
        self.position = Some(position);
        self
    }

    /// Remember where in the query the error is (from a sqlparser span).
    pub fn at(mut self, loc: sqlparser::tokenizer::Location) -> Self {
        if self.location.is_none() {
            self.location = Place::new(loc, false);
        }
        self
    }

    /// Remember that the error is at the first token after `end`, the end
    /// of a sqlparser span: an operator, which sqlparser keeps no span for,
    /// follows its left operand.
    pub fn after(mut self, end: sqlparser::tokenizer::Location) -> Self {
        if self.location.is_none() {
            self.location = Place::new(end, true);
        }
        self
    }

    /// Resolve a line/column location into PostgreSQL's 1-based character
    /// position in `sql`, the text the client sent.
    pub fn locate(mut self, sql: &str) -> Self {
        if let (None, Some(place)) = (self.position, self.location) {
            let before: usize = sql
                .split('\n')
                .take((place.line as usize).saturating_sub(1))
                .map(|l| l.chars().count() + 1)
                .sum();
            let mut at = before + place.column as usize;
            if place.skips_space {
                at += sql
                    .chars()
                    .skip(at.saturating_sub(1))
                    .take_while(|c| c.is_whitespace())
                    .count();
            }
            self.position = u32::try_from(at).ok();
        }
        self
    }

    /// Mark the error as the fast path's lack (see `beyond_fast_path`).
    pub fn beyond_fast_path(mut self) -> Self {
        self.beyond_fast_path = true;
        self
    }

    /// An error of the moment (the store, the system, an interrupt, a
    /// lock) rather than of the statement: it may succeed when sent again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.code.get(..2),
            Some("08" | "40" | "53" | "55" | "57" | "58" | "XX")
        )
    }

    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new(sqlstate::SYNTAX_ERROR, message)
    }

    /// 40003: the store did not let us establish whether the statement's
    /// writes took effect; `detail` says why.
    pub fn completion_unknown(detail: impl Into<String>) -> Self {
        Self::new(
            sqlstate::STATEMENT_COMPLETION_UNKNOWN,
            "the outcome of this statement is unknown",
        )
        .with_detail(detail)
        .with_hint("read the rows to see whether the writes took effect")
    }

    /// 0A000 with a hint saying what keyclaim does support instead.
    pub fn unsupported(what: impl Into<String>, hint: impl Into<String>) -> Self {
        Self::new(sqlstate::FEATURE_NOT_SUPPORTED, what).with_hint(hint)
    }

    /// 42883: PostgreSQL has no `op` for these operand types, named as
    /// PostgreSQL names them (`text = integer`).
    pub fn no_operator(left: &str, op: &str, right: &str) -> Self {
        Self::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("operator does not exist: {left} {op} {right}"),
        )
        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
    }

    /// 42883 for a prefix operator (`- text`); PostgreSQL's hint speaks
    /// of one argument.
    pub fn no_prefix_operator(op: &str, operand: &str) -> Self {
        Self::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("operator does not exist: {op} {operand}"),
        )
        .with_hint("No operator matches the given name and argument type. You might need to add an explicit type cast.")
    }

    pub fn undefined_table(name: &str) -> Self {
        Self::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )
    }

    pub fn undefined_column(name: &str) -> Self {
        Self::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{name}\" does not exist"),
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(sqlstate::INTERNAL_ERROR, message)
    }

    pub fn invalid_text(type_name: &str, input: &str) -> Self {
        Self::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type {type_name}: \"{input}\""),
        )
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for SqlError {}
