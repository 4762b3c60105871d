//! SQL types and values: PostgreSQL's input/output functions for the types
//! keyclaim stores, binary wire formats, comparisons, assignment casts, and
//! the canonical key bytes the claim protocol hashes uniqueness on.

use std::cmp::Ordering;

use bytes::BytesMut;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{SqlError, SqlResult};

/// A column type as declared in DDL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
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
}

// The functions below are the contract the rest of the crate uses. Their
// bodies live in this file; see the unit tests at the bottom.
#[allow(unused_variables)]
impl SqlType {
    /// From a sqlparser DataType; unsupported types answer 0A000 with a hint
    /// listing the supported ones.
    pub fn from_ast(dt: &sqlparser::ast::DataType) -> SqlResult<SqlType> {
        todo!()
    }
    /// The PostgreSQL type (OID) for RowDescription / ParameterDescription.
    pub fn pg_type(&self) -> postgres_types::Type {
        todo!()
    }
    /// From a client-sent parameter type OID (Parse message); None if not one of ours.
    pub fn from_pg_type(ty: &postgres_types::Type) -> Option<SqlType> {
        todo!()
    }
    /// Name as PostgreSQL prints it in messages: "integer", "character varying", "timestamp without time zone", ...
    pub fn pg_name(&self) -> &'static str {
        todo!()
    }
    /// pg_attribute.atttypmod for RowDescription (-1 when none).
    pub fn type_modifier(&self) -> i32 {
        todo!()
    }
}

#[allow(unused_variables)]
impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// PostgreSQL's input function for `ty` (what a text-format parameter or a
    /// quoted literal goes through). Errors: 22P02 / 22007 / 22003 / 22008 with
    /// PostgreSQL's exact message (e.g. `invalid input syntax for type integer: "x"`).
    pub fn parse_text(ty: &SqlType, s: &str) -> SqlResult<Value> {
        todo!()
    }
    /// Decode a binary-format parameter of type `ty`.
    pub fn decode_binary(ty: &SqlType, bytes: &[u8]) -> SqlResult<Value> {
        todo!()
    }
    /// PostgreSQL's output function (text format); None for NULL.
    pub fn to_text(&self) -> Option<String> {
        todo!()
    }
    /// Binary wire format for the given column type; false for NULL.
    pub fn encode_binary(&self, ty: &SqlType, out: &mut BytesMut) -> SqlResult<bool> {
        todo!()
    }
    /// Assignment cast into a column of type `ty`, as PostgreSQL does on
    /// INSERT/UPDATE: integer range (22003 "smallint out of range"),
    /// varchar(n) length (22001 `value too long for type character varying(3)`),
    /// char(n) padding, text -> any type through `parse_text`, numeric
    /// widening, int <-> float <-> numeric.
    pub fn cast_to(&self, ty: &SqlType) -> SqlResult<Value> {
        todo!()
    }
    /// SQL comparison; None when either side is NULL or the types cannot be compared.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        todo!()
    }
    /// Canonical bytes following PostgreSQL equality: 1.0 = 1.00, -0.0 = 0.0,
    /// integers of any width equal when numerically equal, timestamps in
    /// microseconds, text byte-equal. Two values are equal under the unique
    /// constraint iff their key bytes are equal.
    pub fn key_bytes(&self, out: &mut Vec<u8>) {
        todo!()
    }
}

/// Canonical bytes of a (possibly composite) key: a length-prefixed tuple.
pub fn encode_key(values: &[&Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        let mut one = Vec::new();
        v.key_bytes(&mut one);
        out.extend_from_slice(&(one.len() as u32).to_be_bytes());
        out.extend_from_slice(&one);
    }
    out
}

/// The detail line of a unique violation: `Key (a, b)=(1, x) already exists.`
pub fn key_detail(columns: &[&str], values: &[&Value]) -> String {
    let vals: Vec<String> = values
        .iter()
        .map(|v| v.to_text().unwrap_or_else(|| "null".into()))
        .collect();
    format!("Key ({})=({})", columns.join(", "), vals.join(", "))
}

#[allow(dead_code)]
fn _unused(_: SqlError) {}
