//! SQL types and values: PostgreSQL's input/output functions for the types
//! keyclaim stores, binary wire formats, comparisons, assignment casts, and
//! the canonical key bytes the claim protocol hashes uniqueness on.
//!
//! This file holds the two enums the crate passes around and the helpers
//! the submodules share; the methods live with their concern:
//!
//! - `sql_type`: `SqlType` from DDL (`from_ast`), type OIDs, names, typmods.
//! - `text`: `Value::parse_text` / `Value::to_text`, the input and output
//!   functions per type; boolean and integer input.
//! - `float`: real and double precision input and output (Ryu's shortest
//!   digits as PostgreSQL prints them).
//! - `numeric`: numeric input, output, limits and binary format.
//! - `bytea`: bytea and uuid input.
//! - `datetime`: the date/time literal parser and date/timestamp output.
//! - `json`: PostgreSQL's JSON parser; jsonb's normalised text and order.
//! - `binary`: `Value::decode_binary` / `Value::encode_binary`, the binary
//!   wire format.
//! - `cast`: `Value::cast_to`, assignment casts into a column's type.
//! - `compare`: `Value::sql_cmp`, SQL ordering across types.
//! - `key`: `Value::key_bytes`, `encode_key`, `decode_key`, `key_detail`.
//! - `array`: one-dimensional arrays of the other types: their OIDs and
//!   names, text and binary formats, order and key bytes.
//!
//! Unit tests sit beside the code they test, sharing `test_util` (helpers)
//! and `pg_cases` (expected outputs and errors from PostgreSQL itself).

mod array;
mod binary;
mod bytea;
mod cast;
mod compare;
mod datetime;
mod float;
mod json;
mod key;
mod numeric;
#[cfg(test)]
mod pg_cases;
mod sql_type;
#[cfg(test)]
mod test_util;
mod text;

pub use array::Array;
pub use json::{get_path as json_path, PathStep as JsonStep};
pub use key::{decode_key, encode_key, failing_row, key_detail};

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{sqlstate, SqlError};

/// A column type as declared in DDL.
///
/// Serde's derived form is `SqlType::serialize` / `SqlType::deserialize`
/// (`remote = "Self"`); the `Serialize` and `Deserialize` impls in
/// `sql_type` wrap it so that a numeric without a typmod keeps the bare
/// `"Numeric"` every catalog held before typmods were kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// `numeric(p, s)`; `None` is unconstrained `numeric`.
    Numeric(Option<NumericMod>),
    Text,
    /// `varchar(n)`; `None` is unbounded.
    Varchar(Option<u32>),
    /// `char(n)` (bpchar), blank-padded; `None` means `char(1)` when declared bare.
    Char(Option<u32>),
    Bytea,
    Uuid,
    Date,
    Timestamp,
    TimestampTz,
    Json,
    Jsonb,
    /// A function result that carries no value (`pg_advisory_lock`):
    /// shown as an empty text, sent as zero bytes. Never a column's type.
    Void,
    /// `oid`, a catalog row's 32-bit identifier: what the query engine's
    /// catalog columns and casts (`'int4'::regtype::oid`, `$1::oid[]`)
    /// produce, so that clients decode them as PostgreSQL sends them
    /// (asyncpg's type introspection binds an `oid[]`). Never a column's
    /// type; its values are `Value::Int8` in 0..=u32::MAX.
    Oid,
    /// A one-dimensional array of the element type, which is never itself
    /// an array (`SqlType::array_of`).
    Array(Box<SqlType>),
}

/// The precision and scale of `numeric(p, s)` (`numeric(p)` is scale 0):
/// PostgreSQL 15 allows precision 1..=1000 and scale -1000..=1000, a
/// negative scale rounding to tens, hundreds, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NumericMod {
    pub precision: u16,
    pub scale: i16,
}

/// A value in flight or at rest. `Null` is SQL NULL of any type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Value {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Decimal),
    /// text, varchar and char (char values are stored already padded).
    Text(String),
    Bytea(Vec<u8>),
    Uuid(Uuid),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
    TimestampTz(DateTime<Utc>),
    /// json and jsonb, kept as their text.
    Json(String),
    /// An array, boxed so that arrays do not make every value larger.
    Array(Box<Array>),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

// ---------------------------------------------------------------------------
// Helpers the submodules share.
// ---------------------------------------------------------------------------

/// SQLSTATEs used here that `error::sqlstate` does not name.
const INVALID_BINARY_REPRESENTATION: &str = "22P03";
const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
const UNTRANSLATABLE_CHARACTER: &str = "22P05";
const INVALID_TIME_ZONE_DISPLACEMENT_VALUE: &str = "22009";
pub(crate) const CANNOT_COERCE: &str = "42846";
const STATEMENT_TOO_COMPLEX: &str = "54001";

impl Value {
    fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int2(i) => Some(*i as i64),
            Value::Int4(i) => Some(*i as i64),
            Value::Int8(i) => Some(*i),
            _ => None,
        }
    }
}

fn bad_binary() -> SqlError {
    SqlError::new(
        INVALID_BINARY_REPRESENTATION,
        "incorrect binary data format in bind parameter",
    )
}

/// C `isspace` in the C locale, which PostgreSQL's input functions skip.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

fn out_of_range(msg: &str) -> SqlError {
    SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, msg)
}
