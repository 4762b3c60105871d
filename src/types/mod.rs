//! SQL types and values: PostgreSQL's input/output functions for the types
//! keyclaim stores, binary wire formats, comparisons, assignment casts, and
//! the canonical key bytes the claim protocol hashes uniqueness on.
//!
//! This file holds the two enums the crate passes around and the helpers
//! the submodules share; the methods live with their concern:
//!
//! - `sql_type`: `SqlType` from DDL (`from_ast`), type OIDs, names, typmods.
//! - `float`: real and double precision input and output (Ryu's shortest
//!   digits as PostgreSQL prints them).
//! - `numeric`: numeric input, output, limits and binary format.
//! - `bytea`: bytea and uuid input.
//! - `datetime`: the date/time literal parser and date/timestamp output.
//! - `json`: PostgreSQL's JSON parser; jsonb's normalised text and order.
//!
//! Unit tests sit beside the code they test, sharing `test_util` (helpers)
//! and `pg_cases` (expected outputs and errors from PostgreSQL itself).

mod bytea;
mod datetime;
mod float;
mod json;
mod numeric;
#[cfg(test)]
mod pg_cases;
mod sql_type;
#[cfg(test)]
mod test_util;

use std::cmp::Ordering;
use std::fmt::Write as _;

use bytea::{parse_bytea, parse_uuid};
use bytes::{BufMut, BytesMut};
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use datetime::{date_text, parse_date, parse_timestamp, parse_timestamptz, timestamp_text};
use float::{float4_text, float8_text, parse_float4, parse_float8};
use numeric::{
    decode_numeric_binary, encode_numeric_binary, float_to_numeric, numeric_text, parse_numeric,
};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{sqlstate, SqlError, SqlResult};

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
    /// A function result that carries no value (`pg_advisory_lock`):
    /// shown as an empty text, sent as zero bytes. Never a column's type.
    Void,
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

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// PostgreSQL's input function for `ty` (what a text-format parameter or a
    /// quoted literal goes through). Errors: 22P02 / 22007 / 22003 / 22008 with
    /// PostgreSQL's exact message (e.g. `invalid input syntax for type integer: "x"`).
    pub fn parse_text(ty: &SqlType, s: &str) -> SqlResult<Value> {
        if s.contains('\0') {
            // What PostgreSQL's encoding check says before any input function runs.
            return Err(invalid_utf8(&[0]));
        }
        match ty {
            SqlType::Bool => parse_bool(s).map(Value::Bool),
            SqlType::Int2 => parse_int(s, "smallint", i16::MIN as i64, i16::MAX as i64)
                .map(|v| Value::Int2(v as i16)),
            SqlType::Int4 => parse_int(s, "integer", i32::MIN as i64, i32::MAX as i64)
                .map(|v| Value::Int4(v as i32)),
            SqlType::Int8 => parse_int(s, "bigint", i64::MIN, i64::MAX).map(Value::Int8),
            SqlType::Float4 => parse_float4(s).map(Value::Float4),
            SqlType::Float8 => parse_float8(s).map(Value::Float8),
            SqlType::Numeric => parse_numeric(s).map(Value::Numeric),
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) | SqlType::Void => {
                Ok(Value::Text(s.to_owned()))
            }
            SqlType::Bytea => parse_bytea(s).map(Value::Bytea),
            SqlType::Uuid => parse_uuid(s).map(Value::Uuid),
            SqlType::Date => parse_date(s).map(Value::Date),
            SqlType::Timestamp => parse_timestamp(s).map(Value::Timestamp),
            SqlType::TimestampTz => parse_timestamptz(s).map(Value::TimestampTz),
            SqlType::Json => {
                json::parse(s, false)?;
                Ok(Value::Json(s.to_owned()))
            }
            SqlType::Jsonb => {
                let node = json::parse(s, true)?;
                Ok(Value::Json(json::to_text(&node, false)))
            }
        }
    }

    /// Decode a binary-format parameter of type `ty`.
    pub fn decode_binary(ty: &SqlType, bytes: &[u8]) -> SqlResult<Value> {
        use postgres_types::{FromSql, Type};
        fn get<'a, T: FromSql<'a>>(ty: &Type, bytes: &'a [u8]) -> SqlResult<T> {
            T::from_sql(ty, bytes).map_err(|_| bad_binary())
        }
        let v = match ty {
            SqlType::Bool => Value::Bool(get(&Type::BOOL, bytes)?),
            SqlType::Int2 => Value::Int2(get(&Type::INT2, bytes)?),
            SqlType::Int4 => Value::Int4(get(&Type::INT4, bytes)?),
            SqlType::Int8 => Value::Int8(get(&Type::INT8, bytes)?),
            SqlType::Float4 => Value::Float4(get(&Type::FLOAT4, bytes)?),
            SqlType::Float8 => Value::Float8(get(&Type::FLOAT8, bytes)?),
            SqlType::Numeric => Value::Numeric(decode_numeric_binary(bytes)?),
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) | SqlType::Void => {
                Value::Text(utf8_text(bytes)?.to_owned())
            }
            SqlType::Bytea => Value::Bytea(bytes.to_vec()),
            SqlType::Uuid => Value::Uuid(get(&Type::UUID, bytes)?),
            SqlType::Date => Value::Date(get(&Type::DATE, bytes)?),
            SqlType::Timestamp => Value::Timestamp(get(&Type::TIMESTAMP, bytes)?),
            SqlType::TimestampTz => Value::TimestampTz(get(&Type::TIMESTAMPTZ, bytes)?),
            SqlType::Json => Value::parse_text(ty, utf8_text(bytes)?)?,
            SqlType::Jsonb => match bytes.split_first() {
                Some((1, rest)) => Value::parse_text(ty, utf8_text(rest)?)?,
                Some((version, _)) => {
                    return Err(SqlError::new(
                        INVALID_BINARY_REPRESENTATION,
                        format!("unsupported jsonb version number {version}"),
                    ))
                }
                None => return Err(bad_binary()),
            },
        };
        Ok(v)
    }

    /// PostgreSQL's output function (text format); None for NULL.
    pub fn to_text(&self) -> Option<String> {
        let s = match self {
            Value::Null => return None,
            Value::Bool(b) => if *b { "t" } else { "f" }.to_owned(),
            Value::Int2(v) => v.to_string(),
            Value::Int4(v) => v.to_string(),
            Value::Int8(v) => v.to_string(),
            Value::Float4(v) => float4_text(*v),
            Value::Float8(v) => float8_text(*v),
            Value::Numeric(d) => numeric_text(d),
            Value::Text(s) => s.clone(),
            Value::Bytea(b) => {
                let mut s = String::with_capacity(2 + 2 * b.len());
                s.push_str("\\x");
                for byte in b {
                    let _ = write!(s, "{byte:02x}");
                }
                s
            }
            Value::Uuid(u) => u.hyphenated().to_string(),
            Value::Date(d) => {
                let (mut s, bc) = date_text(*d);
                if bc {
                    s.push_str(" BC");
                }
                s
            }
            Value::Timestamp(ts) => timestamp_text(ts, false),
            Value::TimestampTz(ts) => timestamp_text(&ts.naive_utc(), true),
            Value::Json(s) => s.clone(),
        };
        Some(s)
    }

    /// Binary wire format for the given column type; false for NULL.
    pub fn encode_binary(&self, ty: &SqlType, out: &mut BytesMut) -> SqlResult<bool> {
        use postgres_types::{ToSql, Type};
        if self.is_null() {
            return Ok(false);
        }
        if *ty == SqlType::Void {
            // void_send: no bytes.
            return Ok(true);
        }
        let cast;
        let v = if self.fits(ty) {
            self
        } else {
            cast = self.cast_to(ty)?;
            &cast
        };
        fn put<T: ToSql>(v: &T, ty: &Type, out: &mut BytesMut) -> SqlResult<bool> {
            v.to_sql(ty, out)
                .map(|_| true)
                .map_err(|e| SqlError::internal(format!("cannot encode {ty} value: {e}")))
        }
        match v {
            Value::Null => Ok(false),
            Value::Bool(b) => put(b, &Type::BOOL, out),
            Value::Int2(i) => put(i, &Type::INT2, out),
            Value::Int4(i) => put(i, &Type::INT4, out),
            Value::Int8(i) => put(i, &Type::INT8, out),
            Value::Float4(f) => put(f, &Type::FLOAT4, out),
            Value::Float8(f) => put(f, &Type::FLOAT8, out),
            Value::Numeric(d) => {
                encode_numeric_binary(d, out);
                Ok(true)
            }
            Value::Text(s) => put(&s.as_str(), &ty.pg_type(), out),
            Value::Bytea(b) => put(&b.as_slice(), &Type::BYTEA, out),
            Value::Uuid(u) => put(u, &Type::UUID, out),
            Value::Date(d) => put(d, &Type::DATE, out),
            Value::Timestamp(ts) => put(ts, &Type::TIMESTAMP, out),
            Value::TimestampTz(ts) => put(ts, &Type::TIMESTAMPTZ, out),
            Value::Json(s) => {
                if *ty == SqlType::Jsonb {
                    out.put_u8(1);
                }
                out.extend_from_slice(s.as_bytes());
                Ok(true)
            }
        }
    }

    /// Assignment cast into a column of type `ty`, as PostgreSQL does on
    /// INSERT/UPDATE: integer range (22003 "smallint out of range"),
    /// varchar(n) length (22001 `value too long for type character varying(3)`),
    /// char(n) padding, text -> any type through `parse_text`, numeric
    /// widening, int <-> float <-> numeric.
    pub fn cast_to(&self, ty: &SqlType) -> SqlResult<Value> {
        use SqlType as T;
        use Value as V;
        let v = match (self, ty) {
            (V::Null, _) => V::Null,

            // Into the string types: length coercion, or I/O conversion first.
            (V::Text(s), T::Text | T::Varchar(_) | T::Char(_)) => coerce_string(s, ty)?,
            (V::Text(s), _) => Value::parse_text(ty, s)?,
            (V::Bool(b), T::Text | T::Varchar(_) | T::Char(_)) => {
                coerce_string(if *b { "true" } else { "false" }, ty)?
            }
            (other, T::Text | T::Varchar(_) | T::Char(_)) => {
                let text = other.to_text().unwrap_or_default();
                coerce_string(&text, ty)?
            }

            // Integers, floats and numeric.
            (V::Int2(_) | V::Int4(_) | V::Int8(_), _) if ty.is_numeric() => {
                let i = self.as_i64().unwrap_or_default();
                match ty {
                    T::Int2 | T::Int4 | T::Int8 => int_to(i, ty)?,
                    T::Float4 => V::Float4(i as f32),
                    T::Float8 => V::Float8(i as f64),
                    _ => V::Numeric(Decimal::from(i)),
                }
            }
            (V::Float4(f), T::Float4) => V::Float4(*f),
            (V::Float4(f), T::Float8) => V::Float8(*f as f64),
            (V::Float8(f), T::Float8) => V::Float8(*f),
            (V::Float8(f), T::Float4) => V::Float4(float8_to_float4(*f)?),
            (V::Float4(f), T::Int2 | T::Int4 | T::Int8) => float_to_int(*f as f64, ty)?,
            (V::Float8(f), T::Int2 | T::Int4 | T::Int8) => float_to_int(*f, ty)?,
            (V::Float4(f), T::Numeric) => V::Numeric(float_to_numeric(*f as f64, 6)?),
            (V::Float8(f), T::Numeric) => V::Numeric(float_to_numeric(*f, 15)?),
            (V::Numeric(d), T::Numeric) => V::Numeric(*d),
            (V::Numeric(d), T::Float4) => V::Float4(numeric_text(d).parse().unwrap_or(f32::NAN)),
            (V::Numeric(d), T::Float8) => V::Float8(numeric_text(d).parse().unwrap_or(f64::NAN)),
            (V::Numeric(d), T::Int2 | T::Int4 | T::Int8) => {
                let rounded = d.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
                match rounded.to_i64() {
                    Some(i) => int_to(i, ty)?,
                    None => return Err(int_out_of_range(ty)),
                }
            }

            // Same-type identities.
            (V::Bool(b), T::Bool) => V::Bool(*b),
            (V::Bytea(b), T::Bytea) => V::Bytea(b.clone()),
            (V::Uuid(u), T::Uuid) => V::Uuid(*u),
            (V::Json(s), T::Json) => V::Json(s.clone()),
            (V::Json(s), T::Jsonb) => Value::parse_text(ty, s)?,

            // Dates and timestamps (the session time zone is UTC).
            (V::Date(d), T::Date) => V::Date(*d),
            (V::Date(d), T::Timestamp) => V::Timestamp(d.and_time(NaiveTime::MIN)),
            (V::Date(d), T::TimestampTz) => V::TimestampTz(d.and_time(NaiveTime::MIN).and_utc()),
            (V::Timestamp(ts), T::Timestamp) => V::Timestamp(*ts),
            (V::Timestamp(ts), T::TimestampTz) => V::TimestampTz(ts.and_utc()),
            (V::Timestamp(ts), T::Date) => V::Date(ts.date()),
            (V::TimestampTz(ts), T::TimestampTz) => V::TimestampTz(*ts),
            (V::TimestampTz(ts), T::Timestamp) => V::Timestamp(ts.naive_utc()),
            (V::TimestampTz(ts), T::Date) => V::Date(ts.naive_utc().date()),

            (other, _) => {
                return Err(SqlError::new(
                    CANNOT_COERCE,
                    format!("cannot cast type {} to {}", other.type_name(), ty.pg_name()),
                ))
            }
        };
        Ok(v)
    }

    /// SQL comparison; None when either side is NULL or the types cannot be compared.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        use Value as V;
        if let (Some(a), Some(b)) = (self.as_num(), other.as_num()) {
            return Some(cmp_num(&a, &b));
        }
        if let (Some(a), Some(b)) = (self.as_instant(), other.as_instant()) {
            return Some(a.cmp(&b));
        }
        match (self, other) {
            (V::Bool(a), V::Bool(b)) => Some(a.cmp(b)),
            (V::Text(a), V::Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            (V::Bytea(a), V::Bytea(b)) => Some(a.cmp(b)),
            (V::Uuid(a), V::Uuid(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            (V::Json(a), V::Json(b)) => {
                let a = json::parse(a, true).ok()?;
                let b = json::parse(b, true).ok()?;
                Some(json::compare(&a, &b))
            }
            _ => None,
        }
    }

    /// Canonical bytes following PostgreSQL equality: 1.0 = 1.00, -0.0 = 0.0,
    /// integers of any width equal when numerically equal, timestamps in
    /// microseconds, text byte-equal. Two values are equal under the unique
    /// constraint iff their key bytes are equal.
    ///
    /// Every encoding starts with a one-byte type tag. char(n) values are
    /// stored blank-padded to n (see `cast_to`), so byte equality of the
    /// padded text is PostgreSQL's blank-insensitive bpchar equality.
    pub fn key_bytes(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.push(key_tag::NULL),
            Value::Bool(b) => {
                out.push(key_tag::BOOL);
                out.push(*b as u8);
            }
            Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
                out.push(key_tag::INT);
                let i = self.as_i64().unwrap_or_default();
                // Sign-flipped big endian: byte order follows numeric order.
                out.extend_from_slice(&((i as u64) ^ (1 << 63)).to_be_bytes());
            }
            Value::Float4(f) => float_key(*f as f64, out),
            Value::Float8(f) => float_key(*f, out),
            Value::Numeric(d) => {
                out.push(key_tag::NUMERIC);
                out.extend_from_slice(&d.normalize().serialize());
            }
            Value::Text(s) => {
                out.push(key_tag::TEXT);
                out.extend_from_slice(s.as_bytes());
            }
            Value::Bytea(b) => {
                out.push(key_tag::BYTEA);
                out.extend_from_slice(b);
            }
            Value::Uuid(u) => {
                out.push(key_tag::UUID);
                out.extend_from_slice(u.as_bytes());
            }
            Value::Date(d) => {
                out.push(key_tag::DATE);
                out.extend_from_slice(&d.num_days_from_ce().to_be_bytes());
            }
            Value::Timestamp(ts) => {
                out.push(key_tag::TIMESTAMP);
                out.extend_from_slice(&ts.and_utc().timestamp_micros().to_be_bytes());
            }
            Value::TimestampTz(ts) => {
                out.push(key_tag::TIMESTAMPTZ);
                out.extend_from_slice(&ts.timestamp_micros().to_be_bytes());
            }
            Value::Json(s) => match json::parse(s, true) {
                // jsonb equality: keys sorted and deduplicated, numbers by value.
                Ok(node) => {
                    out.push(key_tag::JSONB);
                    out.extend_from_slice(json::to_text(&node, true).as_bytes());
                }
                // json text jsonb cannot hold (e.g. \u0000): compare verbatim.
                Err(_) => {
                    out.push(key_tag::JSON_TEXT);
                    out.extend_from_slice(s.as_bytes());
                }
            },
        }
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
const CANNOT_COERCE: &str = "42846";
const STATEMENT_TOO_COMPLEX: &str = "54001";

mod key_tag {
    pub const NULL: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INT: u8 = 2;
    pub const FLOAT: u8 = 3;
    pub const NUMERIC: u8 = 4;
    pub const TEXT: u8 = 5;
    pub const BYTEA: u8 = 6;
    pub const UUID: u8 = 7;
    pub const DATE: u8 = 8;
    pub const TIMESTAMP: u8 = 9;
    pub const TIMESTAMPTZ: u8 = 10;
    pub const JSONB: u8 = 11;
    pub const JSON_TEXT: u8 = 12;
}

impl SqlType {
    fn is_numeric(&self) -> bool {
        matches!(
            self,
            SqlType::Int2
                | SqlType::Int4
                | SqlType::Int8
                | SqlType::Float4
                | SqlType::Float8
                | SqlType::Numeric
        )
    }
}

/// A number for cross-type comparison.
enum Num {
    I(i64),
    F(f64),
    D(Decimal),
}

impl Value {
    /// True when the value already has the representation of a `ty` column.
    fn fits(&self, ty: &SqlType) -> bool {
        matches!(
            (self, ty),
            (Value::Bool(_), SqlType::Bool)
                | (Value::Int2(_), SqlType::Int2)
                | (Value::Int4(_), SqlType::Int4)
                | (Value::Int8(_), SqlType::Int8)
                | (Value::Float4(_), SqlType::Float4)
                | (Value::Float8(_), SqlType::Float8)
                | (Value::Numeric(_), SqlType::Numeric)
                | (
                    Value::Text(_),
                    SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_)
                )
                | (Value::Bytea(_), SqlType::Bytea)
                | (Value::Uuid(_), SqlType::Uuid)
                | (Value::Date(_), SqlType::Date)
                | (Value::Timestamp(_), SqlType::Timestamp)
                | (Value::TimestampTz(_), SqlType::TimestampTz)
                | (Value::Json(_), SqlType::Json | SqlType::Jsonb)
        )
    }

    /// PostgreSQL's name for the value's type, for cast errors.
    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "unknown",
            Value::Bool(_) => "boolean",
            Value::Int2(_) => "smallint",
            Value::Int4(_) => "integer",
            Value::Int8(_) => "bigint",
            Value::Float4(_) => "real",
            Value::Float8(_) => "double precision",
            Value::Numeric(_) => "numeric",
            Value::Text(_) => "text",
            Value::Bytea(_) => "bytea",
            Value::Uuid(_) => "uuid",
            Value::Date(_) => "date",
            Value::Timestamp(_) => "timestamp without time zone",
            Value::TimestampTz(_) => "timestamp with time zone",
            Value::Json(_) => "json",
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int2(i) => Some(*i as i64),
            Value::Int4(i) => Some(*i as i64),
            Value::Int8(i) => Some(*i),
            _ => None,
        }
    }

    fn as_num(&self) -> Option<Num> {
        match self {
            Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => self.as_i64().map(Num::I),
            Value::Float4(f) => Some(Num::F(*f as f64)),
            Value::Float8(f) => Some(Num::F(*f)),
            Value::Numeric(d) => Some(Num::D(*d)),
            _ => None,
        }
    }

    /// Dates and timestamps as a UTC instant (a date is its midnight).
    fn as_instant(&self) -> Option<NaiveDateTime> {
        match self {
            Value::Date(d) => Some(d.and_time(NaiveTime::MIN)),
            Value::Timestamp(ts) => Some(*ts),
            Value::TimestampTz(ts) => Some(ts.naive_utc()),
            _ => None,
        }
    }
}

fn numeric_to_f64(d: &Decimal) -> f64 {
    // PostgreSQL converts numeric to float through its text form (correctly rounded).
    numeric_text(d).parse().unwrap_or(f64::NAN)
}

fn cmp_num(a: &Num, b: &Num) -> Ordering {
    match (a, b) {
        (Num::I(x), Num::I(y)) => x.cmp(y),
        (Num::I(x), Num::D(y)) => Decimal::from(*x).cmp(y),
        (Num::D(x), Num::I(y)) => x.cmp(&Decimal::from(*y)),
        (Num::D(x), Num::D(y)) => x.cmp(y),
        _ => {
            let to_f = |n: &Num| match n {
                Num::I(i) => *i as f64,
                Num::F(f) => *f,
                Num::D(d) => numeric_to_f64(d),
            };
            float_cmp(to_f(a), to_f(b))
        }
    }
}

/// PostgreSQL's float order: NaN equals itself and sorts above everything.
fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn float_key(f: f64, out: &mut Vec<u8>) {
    out.push(key_tag::FLOAT);
    let canonical = if f.is_nan() {
        f64::NAN
    } else if f == 0.0 {
        0.0
    } else {
        f
    };
    out.extend_from_slice(&canonical.to_bits().to_be_bytes());
}

fn bad_binary() -> SqlError {
    SqlError::new(
        INVALID_BINARY_REPRESENTATION,
        "incorrect binary data format in bind parameter",
    )
}

fn invalid_utf8(bytes: &[u8]) -> SqlError {
    let shown: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
    SqlError::new(
        CHARACTER_NOT_IN_REPERTOIRE,
        format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            shown.join(" ")
        ),
    )
}

/// Text received in binary format must be valid UTF-8 without NUL bytes.
fn utf8_text(bytes: &[u8]) -> SqlResult<&str> {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.contains('\0') => Err(invalid_utf8(&[0])),
        Ok(s) => Ok(s),
        Err(e) => {
            let at = e.valid_up_to();
            let len = e.error_len().unwrap_or(bytes.len() - at).max(1);
            Err(invalid_utf8(&bytes[at..(at + len).min(bytes.len())]))
        }
    }
}

/// C `isspace` in the C locale, which PostgreSQL's input functions skip.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

fn out_of_range(msg: &str) -> SqlError {
    SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, msg)
}

fn int_out_of_range(ty: &SqlType) -> SqlError {
    out_of_range(match ty {
        SqlType::Int2 => "smallint out of range",
        SqlType::Int4 => "integer out of range",
        _ => "bigint out of range",
    })
}

fn int_to(i: i64, ty: &SqlType) -> SqlResult<Value> {
    match ty {
        SqlType::Int2 => i16::try_from(i)
            .map(Value::Int2)
            .map_err(|_| int_out_of_range(ty)),
        SqlType::Int4 => i32::try_from(i)
            .map(Value::Int4)
            .map_err(|_| int_out_of_range(ty)),
        _ => Ok(Value::Int8(i)),
    }
}

/// float -> integer: round half to even (`rint`), then PostgreSQL's range test.
fn float_to_int(f: f64, ty: &SqlType) -> SqlResult<Value> {
    let r = f.round_ties_even();
    let fits = match ty {
        SqlType::Int2 => (-32768.0..32768.0).contains(&r),
        SqlType::Int4 => (-2147483648.0..2147483648.0).contains(&r),
        _ => (-9223372036854775808.0..9223372036854775808.0).contains(&r),
    };
    if !fits {
        return Err(int_out_of_range(ty));
    }
    int_to(r as i64, ty)
}

fn float8_to_float4(f: f64) -> SqlResult<f32> {
    let r = f as f32;
    if r.is_infinite() && !f.is_infinite() {
        return Err(out_of_range("value out of range: overflow"));
    }
    if r == 0.0 && f != 0.0 {
        return Err(out_of_range("value out of range: underflow"));
    }
    Ok(r)
}

/// Varchar(n) / char(n) length coercion of an assignment.
fn coerce_string(s: &str, ty: &SqlType) -> SqlResult<Value> {
    let (max, padded) = match ty {
        SqlType::Varchar(Some(n)) => (*n as usize, false),
        SqlType::Char(n) => (n.unwrap_or(1) as usize, true),
        _ => return Ok(Value::Text(s.to_owned())),
    };
    match s.char_indices().nth(max) {
        Some((cut, _)) => {
            // Too long: fine only when the excess is all spaces, then truncated.
            if s[cut..].bytes().all(|b| b == b' ') {
                Ok(Value::Text(s[..cut].to_owned()))
            } else {
                Err(SqlError::new(
                    sqlstate::STRING_DATA_RIGHT_TRUNCATION,
                    format!(
                        "value too long for type {}({max})",
                        if padded {
                            "character"
                        } else {
                            "character varying"
                        }
                    ),
                ))
            }
        }
        None if padded => {
            let len = s.chars().count();
            let mut out = String::with_capacity(s.len() + max - len);
            out.push_str(s);
            out.extend(std::iter::repeat_n(' ', max - len));
            Ok(Value::Text(out))
        }
        None => Ok(Value::Text(s.to_owned())),
    }
}

// --- booleans and integers -------------------------------------------------

fn parse_bool(s: &str) -> SqlResult<bool> {
    let t = s.trim_matches(is_c_space).to_ascii_lowercase();
    let prefix_of = |word: &str| !t.is_empty() && word.starts_with(t.as_str());
    let v = match t.as_bytes().first() {
        Some(b't') if prefix_of("true") => Some(true),
        Some(b'f') if prefix_of("false") => Some(false),
        Some(b'y') if prefix_of("yes") => Some(true),
        Some(b'n') if prefix_of("no") => Some(false),
        // A lone 'o' is ambiguous between on and off.
        Some(b'o') if t.len() >= 2 && prefix_of("on") => Some(true),
        Some(b'o') if t.len() >= 2 && prefix_of("off") => Some(false),
        Some(b'1') if t.len() == 1 => Some(true),
        Some(b'0') if t.len() == 1 => Some(false),
        _ => None,
    };
    v.ok_or_else(|| SqlError::invalid_text("boolean", s))
}

/// PostgreSQL's pg_strtoint16/32/64: whitespace, optional sign, decimal digits.
fn parse_int(s: &str, type_name: &str, min: i64, max: i64) -> SqlResult<i64> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i] as char) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return Err(SqlError::invalid_text(type_name, s));
    }
    let limit: u128 = if neg {
        min.unsigned_abs() as u128
    } else {
        max as u128
    };
    let mut mag: u128 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        mag = mag * 10 + (b[i] - b'0') as u128;
        if mag > limit {
            return Err(out_of_range(&format!(
                "value \"{s}\" is out of range for type {type_name}"
            )));
        }
        i += 1;
    }
    while i < b.len() && is_c_space(b[i] as char) {
        i += 1;
    }
    if i != b.len() {
        return Err(SqlError::invalid_text(type_name, s));
    }
    let mag = mag as i128;
    Ok((if neg { -mag } else { mag }) as i64)
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

/// The inverse of [`encode_key`] for a key of columns typed `types`: the
/// canonical value of each column (numerics normalized, -0.0 as 0.0, jsonb
/// in its canonical text). Stores that keep keys in typed columns (CQL
/// partition keys) bind these. Bytes that `encode_key` could not have made
/// for these types answer an internal error: they come from the store.
pub fn decode_key(types: &[SqlType], bytes: &[u8]) -> SqlResult<Vec<Value>> {
    let corrupt =
        || SqlError::internal(format!("key bytes do not match the key's types {types:?}"));
    let mut rest = bytes;
    let mut out = Vec::with_capacity(types.len());
    for ty in types {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(corrupt)?;
        let len = u32::from_be_bytes(*len) as usize;
        if tail.len() < len {
            return Err(corrupt());
        }
        let (one, tail) = tail.split_at(len);
        rest = tail;
        let (&tag, body) = one.split_first().ok_or_else(corrupt)?;
        out.push(decode_one(ty, tag, body).ok_or_else(corrupt)?);
    }
    if !rest.is_empty() {
        return Err(corrupt());
    }
    Ok(out)
}

fn decode_one(ty: &SqlType, tag: u8, body: &[u8]) -> Option<Value> {
    let be8 = || body.try_into().ok().map(u64::from_be_bytes);
    let v = match (tag, ty) {
        (key_tag::NULL, _) if body.is_empty() => Value::Null,
        (key_tag::BOOL, SqlType::Bool) => match body {
            [0] => Value::Bool(false),
            [1] => Value::Bool(true),
            _ => return None,
        },
        (key_tag::INT, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => {
            let i = (be8()? ^ (1 << 63)) as i64;
            match ty {
                SqlType::Int2 => Value::Int2(i16::try_from(i).ok()?),
                SqlType::Int4 => Value::Int4(i32::try_from(i).ok()?),
                _ => Value::Int8(i),
            }
        }
        (key_tag::FLOAT, SqlType::Float4) => Value::Float4(f64::from_bits(be8()?) as f32),
        (key_tag::FLOAT, SqlType::Float8) => Value::Float8(f64::from_bits(be8()?)),
        (key_tag::NUMERIC, SqlType::Numeric) => {
            Value::Numeric(Decimal::deserialize(body.try_into().ok()?))
        }
        (key_tag::TEXT, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_)) => {
            Value::Text(String::from_utf8(body.to_vec()).ok()?)
        }
        (key_tag::BYTEA, SqlType::Bytea) => Value::Bytea(body.to_vec()),
        (key_tag::UUID, SqlType::Uuid) => Value::Uuid(Uuid::from_slice(body).ok()?),
        (key_tag::DATE, SqlType::Date) => {
            let days = i32::from_be_bytes(body.try_into().ok()?);
            Value::Date(NaiveDate::from_num_days_from_ce_opt(days)?)
        }
        (key_tag::TIMESTAMP, SqlType::Timestamp) => {
            let micros = be8()? as i64;
            Value::Timestamp(DateTime::from_timestamp_micros(micros)?.naive_utc())
        }
        (key_tag::TIMESTAMPTZ, SqlType::TimestampTz) => {
            Value::TimestampTz(DateTime::from_timestamp_micros(be8()? as i64)?)
        }
        (key_tag::JSONB | key_tag::JSON_TEXT, SqlType::Json | SqlType::Jsonb) => {
            Value::Json(String::from_utf8(body.to_vec()).ok()?)
        }
        _ => return None,
    };
    Some(v)
}

/// The detail line of a unique violation: `Key (a, b)=(1, x) already exists.`
pub fn key_detail(columns: &[&str], values: &[&Value]) -> String {
    let vals: Vec<String> = values
        .iter()
        .map(|v| v.to_text().unwrap_or_else(|| "null".into()))
        .collect();
    format!("Key ({})=({})", columns.join(", "), vals.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    use bytes::BytesMut;
    use chrono::{Duration, NaiveDate, TimeZone, Utc};
    use rust_decimal::Decimal;
    use uuid::Uuid;

    use super::pg_cases::{PG_ERRORS, PG_OUTPUT};
    use super::test_util::{
        assert_error, binary, cast_err, cast_text, date, hex, jsonb, key, num, parse, parse_err,
        text, ts, tstz, ty, unhex,
    };
    use crate::types::{SqlType, Value};

    #[test]
    fn input_output_matches_postgres() {
        for (type_sql, input, expected) in PG_OUTPUT {
            let t = ty(type_sql);
            let v = parse(&t, input);
            assert_eq!(text(&v), *expected, "{type_sql} {input:?}");
            // The output is valid input that reads back to the same value.
            let again = parse(&t, expected);
            assert_eq!(
                text(&again),
                *expected,
                "{type_sql} {expected:?} round trip"
            );
            assert_eq!(key(&again), key(&v), "{type_sql} {input:?} key");
        }
    }

    #[test]
    fn input_errors_match_postgres() {
        for (type_sql, input, code, message, detail, hint) in PG_ERRORS {
            let e = parse_err(&ty(type_sql), input);
            assert_eq!(
                (
                    e.code,
                    e.message.as_str(),
                    e.detail.as_deref(),
                    e.hint.as_deref()
                ),
                (*code, *message, *detail, *hint),
                "{type_sql} {input:?}"
            );
        }
    }

    #[test]
    fn binary_round_trips() {
        for (type_sql, input, expected) in PG_OUTPUT {
            let t = ty(type_sql);
            let v = parse(&t, input);
            let bytes = binary(&v, &t);
            let back = Value::decode_binary(&t, &bytes)
                .unwrap_or_else(|e| panic!("{type_sql} {input:?}: {e}"));
            assert_eq!(text(&back), *expected, "{type_sql} {input:?}");
            assert_eq!(key(&back), key(&v), "{type_sql} {input:?}");
        }
    }

    #[test]
    fn binary_encodings_match_postgres_send_functions() {
        // encode(<type>send(...), 'hex') from PostgreSQL.
        let cases: &[(&str, &str, &str)] = &[
            ("numeric", "1.50", "000200000000000200011388"),
            ("numeric", "0.00", "0000000000000002"),
            ("numeric", "-123456.789", "0003000140000003000c0d801ed2"),
            ("numeric", "10000", "00010001000000000001"),
            ("numeric", "0.0001", "0001ffff000000040001"),
            (
                "numeric",
                "79228162514264337593543950335",
                "00080007000000000007240c0659059210f1172f112b014f",
            ),
            (
                "numeric",
                "0.0000000000000000000000000001",
                "0001fff90000001c0001",
            ),
            ("numeric", "1e20", "00010005000000000001"),
            ("numeric", "12345678.9", "000300010000000104d2162e2328"),
            ("timestamp", "2024-01-02 03:04:05.5", "0002b0ec851d9460"),
            (
                "timestamptz",
                "2024-01-02 03:04:05.5+00",
                "0002b0ec851d9460",
            ),
            ("date", "2024-01-02", "0000223f"),
            ("date", "0001-01-01 BC", "fff4da8b"),
            ("jsonb", "{\"a\":1}", "017b2261223a20317d"),
            ("json", "{\"a\":1}", "7b2261223a317d"),
            ("char(4)", "ab", "61622020"),
            ("real", "1.5", "3fc00000"),
            ("double precision", "NaN", "7ff8000000000000"),
            ("boolean", "true", "01"),
            ("smallint", "-2", "fffe"),
        ];
        for (type_sql, input, expected) in cases {
            let t = ty(type_sql);
            let v = parse(&t, input).cast_to(&t).unwrap();
            assert_eq!(hex(&binary(&v, &t)), *expected, "{type_sql} {input}");
            let back = Value::decode_binary(&t, &unhex(expected)).unwrap();
            assert_eq!(
                back.sql_cmp(&v),
                Some(Ordering::Equal),
                "{type_sql} {input}"
            );
            assert_eq!(text(&back), text(&v), "{type_sql} {input}");
        }
    }

    #[test]
    fn encode_binary_null_and_conversions() {
        let mut out = BytesMut::new();
        assert!(!Value::Null.encode_binary(&SqlType::Int4, &mut out).unwrap());
        assert!(out.is_empty());
        // A value of another type is cast to the column type first.
        assert_eq!(
            hex(&binary(&Value::Int2(7), &SqlType::Int8)),
            "0000000000000007"
        );
        // Text is sent as stored: char(n) values are padded by cast_to, not here.
        assert_eq!(
            hex(&binary(&Value::Text("ab".into()), &SqlType::Char(Some(3)))),
            "6162"
        );
        assert_eq!(
            binary(&Value::Json("{\"a\": 1}".into()), &SqlType::Jsonb),
            b"\x01{\"a\": 1}".to_vec()
        );
        let e = Value::Bool(true)
            .encode_binary(&SqlType::Int4, &mut out)
            .unwrap_err();
        assert_eq!(e.code, "42846");
    }

    #[test]
    fn decode_binary_errors() {
        let e = Value::decode_binary(&SqlType::Int4, &[0, 0, 1]).unwrap_err();
        assert_error(
            &e,
            "22P03",
            "incorrect binary data format in bind parameter",
        );
        let e = Value::decode_binary(&SqlType::Int8, &[0; 4]).unwrap_err();
        assert_eq!(e.code, "22P03");
        let e = Value::decode_binary(&SqlType::Uuid, &[0; 15]).unwrap_err();
        assert_eq!(e.code, "22P03");
        let e = Value::decode_binary(&SqlType::Text, b"a\xffb").unwrap_err();
        assert_error(
            &e,
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0xff",
        );
        let e = Value::decode_binary(&SqlType::Varchar(None), b"a\0").unwrap_err();
        assert_error(
            &e,
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        );
        let e = Value::decode_binary(&SqlType::Jsonb, b"\x02{}").unwrap_err();
        assert_error(&e, "22P03", "unsupported jsonb version number 2");
        let e = Value::decode_binary(&SqlType::Json, b"{").unwrap_err();
        assert_error(&e, "22P02", "invalid input syntax for type json");
        // Numeric: NaN, bad digit, truncated.
        let e = Value::decode_binary(&SqlType::Numeric, &unhex("00000000c0000000")).unwrap_err();
        assert_eq!(e.code, "0A000");
        let e =
            Value::decode_binary(&SqlType::Numeric, &unhex("00010000000000002710")).unwrap_err();
        assert_error(&e, "22P03", "invalid digit in external \"numeric\" value");
        let e = Value::decode_binary(&SqlType::Numeric, &unhex("000100000000")).unwrap_err();
        assert_eq!(e.code, "22P03");
        // numeric_recv truncates digits hidden by dscale.
        let v =
            Value::decode_binary(&SqlType::Numeric, &unhex("000200000000000100011388")).unwrap();
        assert_eq!(text(&v), "1.5");
        let v =
            Value::decode_binary(&SqlType::Numeric, &unhex("000200000000000000011388")).unwrap();
        assert_eq!(text(&v), "1");
        // Binary text is not length-checked (cast_to does that).
        let v = Value::decode_binary(&SqlType::Varchar(Some(1)), b"abc").unwrap();
        assert_eq!(v, Value::Text("abc".into()));
        // Infinite timestamps do not fit.
        let e = Value::decode_binary(&SqlType::Timestamp, &i64::MAX.to_be_bytes()).unwrap_err();
        assert_eq!(e.code, "22P03");
    }

    #[test]
    fn to_text_of_constructed_values() {
        assert_eq!(Value::Null.to_text(), None);
        assert_eq!(text(&Value::Bool(true)), "t");
        assert_eq!(text(&Value::Bool(false)), "f");
        assert_eq!(text(&Value::Float8(1e20)), "1e+20");
        assert_eq!(text(&Value::Float4(0.1)), "0.1");
        assert_eq!(text(&Value::Float8(-0.0)), "-0");
        assert_eq!(text(&Value::Float8(f64::NAN)), "NaN");
        assert_eq!(text(&Value::Float8(f64::NEG_INFINITY)), "-Infinity");
        assert_eq!(text(&Value::Float8(123456789012345.0)), "123456789012345");
        assert_eq!(
            text(&Value::Float8(1234567890123456.0)),
            "1.234567890123456e+15"
        );
        assert_eq!(text(&Value::Numeric(Decimal::new(150, 2))), "1.50");
        assert_eq!(text(&Value::Numeric(Decimal::new(-0, 2))), "0.00");
        let mut negzero = Decimal::new(0, 1);
        negzero.set_sign_negative(true);
        assert_eq!(text(&Value::Numeric(negzero)), "0.0");
        assert_eq!(text(&Value::Bytea(vec![0x0a, 0x0b])), "\\x0a0b");
        assert_eq!(text(&Value::Bytea(vec![])), "\\x");
        let u = Uuid::from_u128(0xA0EEBC999C0B4EF8BB6D6BB9BD380A11);
        assert_eq!(
            text(&Value::Uuid(u)),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        );
        let d = NaiveDate::from_ymd_opt(2024, 1, 2).unwrap();
        assert_eq!(text(&Value::Date(d)), "2024-01-02");
        let t = d.and_hms_micro_opt(3, 4, 5, 500_000).unwrap();
        assert_eq!(text(&Value::Timestamp(t)), "2024-01-02 03:04:05.5");
        assert_eq!(
            text(&Value::TimestampTz(t.and_utc())),
            "2024-01-02 03:04:05.5+00"
        );
        let t = d.and_hms_opt(3, 4, 5).unwrap();
        assert_eq!(text(&Value::Timestamp(t)), "2024-01-02 03:04:05");
        // Sub-microsecond precision is not shown.
        let t = d.and_hms_nano_opt(3, 4, 5, 1_000_999).unwrap();
        assert_eq!(text(&Value::Timestamp(t)), "2024-01-02 03:04:05.001");
        let tz = Utc.with_ymd_and_hms(2024, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(text(&Value::TimestampTz(tz)), "2024-01-02 03:04:05+00");
        assert_eq!(text(&Value::Json("{\"a\":1}".into())), "{\"a\":1}");
        assert_eq!(text(&Value::Text("x ".into())), "x ");
    }

    #[test]
    fn parse_text_edge_cases() {
        // Text types keep the input as is; length is cast_to's business.
        assert_eq!(
            parse(&SqlType::Varchar(Some(1)), "abc "),
            Value::Text("abc ".into())
        );
        assert_eq!(
            parse(&SqlType::Char(Some(5)), "ab"),
            Value::Text("ab".into())
        );
        // NUL never gets past PostgreSQL's encoding check.
        let e = parse_err(&SqlType::Text, "a\0b");
        assert_error(
            &e,
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        );
        // json keeps its text, jsonb normalises.
        assert_eq!(
            parse(&SqlType::Json, "{\"b\":1, \"a\":2}"),
            Value::Json("{\"b\":1, \"a\":2}".into())
        );
        assert_eq!(
            jsonb("{\"b\":1, \"a\":2}"),
            Value::Json("{\"a\": 2, \"b\": 1}".into())
        );
        // Values rust_decimal cannot hold are refused, not rounded.
        let e = parse_err(&SqlType::Numeric, "0.00000000000000000000000000001");
        assert_error(&e, "22003", "value overflows numeric format");
        assert!(e.detail.is_some());
        let e = parse_err(&SqlType::Numeric, "79228162514264337593543950336");
        assert_eq!(e.code, "22003");
        let e = parse_err(&SqlType::Numeric, "1e29");
        assert_eq!(e.code, "22003");
        for special in ["NaN", "Infinity", "-inf"] {
            let e = parse_err(&SqlType::Numeric, special);
            assert_eq!(e.code, "0A000", "{special}");
        }
        for special in ["infinity", "-infinity"] {
            assert_eq!(parse_err(&SqlType::Date, special).code, "0A000");
            assert_eq!(parse_err(&SqlType::Timestamp, special).code, "0A000");
            assert_eq!(parse_err(&SqlType::TimestampTz, special).code, "0A000");
        }
        // now / today / tomorrow / yesterday are read from the clock.
        let today = Utc::now().date_naive();
        let Value::Date(d) = date("today") else {
            panic!()
        };
        assert!((d - today).num_days().abs() <= 1);
        let Value::Date(d2) = date("tomorrow") else {
            panic!()
        };
        assert_eq!(d2 - d, Duration::days(1));
        let Value::TimestampTz(now) = tstz("now") else {
            panic!()
        };
        assert!((Utc::now() - now).num_seconds().abs() < 60);
        // Years chrono cannot represent.
        assert_error(
            &parse_err(&SqlType::Date, "300000-01-01"),
            "22008",
            "date out of range: \"300000-01-01\"",
        );
    }

    #[test]
    fn cast_string_lengths() {
        let v3 = SqlType::Varchar(Some(3));
        let c3 = SqlType::Char(Some(3));
        let c = ty("char");
        let t = |s: &str| Value::Text(s.into());
        assert_error(
            &cast_err(t("abcd"), &v3),
            "22001",
            "value too long for type character varying(3)",
        );
        assert_eq!(cast_text(t("ab   "), &v3), "ab ");
        assert_eq!(cast_text(t("ab"), &v3), "ab");
        assert_error(
            &cast_err(t("abcd"), &c3),
            "22001",
            "value too long for type character(3)",
        );
        assert_eq!(cast_text(t("a"), &c3), "a  ");
        assert_eq!(cast_text(t(""), &c3), "   ");
        assert_eq!(cast_text(t("abc  "), &c3), "abc");
        assert_error(
            &cast_err(t("ab"), &c),
            "22001",
            "value too long for type character(1)",
        );
        assert_eq!(cast_text(t("a "), &c), "a");
        assert_eq!(cast_text(t("x"), &c), "x");
        // Lengths count characters, not bytes.
        assert_eq!(cast_text(t("éé"), &c3), "éé ");
        assert_eq!(cast_text(t("ééé"), &v3), "ééé");
        assert_error(
            &cast_err(t("éééé"), &v3),
            "22001",
            "value too long for type character varying(3)",
        );
        assert_eq!(cast_text(t("long text"), &SqlType::Text), "long text");
        assert_eq!(
            cast_text(t("long text"), &SqlType::Varchar(None)),
            "long text"
        );
        // Other types go through their output function first.
        assert_eq!(cast_text(Value::Bool(true), &SqlType::Text), "true");
        assert_error(
            &cast_err(Value::Bool(false), &v3),
            "22001",
            "value too long for type character varying(3)",
        );
        assert_eq!(cast_text(num("1.50"), &SqlType::Text), "1.50");
        assert_eq!(cast_text(Value::Float8(1e20), &SqlType::Text), "1e+20");
        assert_eq!(cast_text(date("2024-01-02"), &SqlType::Text), "2024-01-02");
        assert_eq!(cast_text(Value::Bytea(vec![10]), &SqlType::Text), "\\x0a");
        assert_eq!(cast_text(jsonb("{\"a\":1}"), &SqlType::Text), "{\"a\": 1}");
        assert_eq!(cast_text(Value::Int4(42), &c3), "42 ");
        assert_error(
            &cast_err(Value::Int4(1234), &c3),
            "22001",
            "value too long for type character(3)",
        );
    }

    #[test]
    fn cast_numbers() {
        use SqlType as T;
        assert_error(
            &cast_err(Value::Int4(40000), &T::Int2),
            "22003",
            "smallint out of range",
        );
        assert_error(
            &cast_err(Value::Int8(40_000_000_000), &T::Int4),
            "22003",
            "integer out of range",
        );
        assert_eq!(Value::Int2(-5).cast_to(&T::Int8).unwrap(), Value::Int8(-5));
        assert_eq!(
            Value::Int8(-32768).cast_to(&T::Int2).unwrap(),
            Value::Int2(-32768)
        );
        // numeric rounds half away from zero, floats half to even.
        assert_eq!(num("2.5").cast_to(&T::Int2).unwrap(), Value::Int2(3));
        assert_eq!(num("-2.5").cast_to(&T::Int2).unwrap(), Value::Int2(-3));
        assert_eq!(num("2.4999").cast_to(&T::Int4).unwrap(), Value::Int4(2));
        assert_eq!(
            Value::Float8(2.5).cast_to(&T::Int2).unwrap(),
            Value::Int2(2)
        );
        assert_eq!(
            Value::Float8(3.5).cast_to(&T::Int2).unwrap(),
            Value::Int2(4)
        );
        assert_eq!(
            Value::Float8(-2.5).cast_to(&T::Int2).unwrap(),
            Value::Int2(-2)
        );
        assert_eq!(
            Value::Float4(0.5).cast_to(&T::Int8).unwrap(),
            Value::Int8(0)
        );
        assert_error(
            &cast_err(num("1e19"), &T::Int8),
            "22003",
            "bigint out of range",
        );
        assert_error(
            &cast_err(num("32767.5"), &T::Int2),
            "22003",
            "smallint out of range",
        );
        assert_error(
            &cast_err(Value::Float8(f64::NAN), &T::Int8),
            "22003",
            "bigint out of range",
        );
        assert_error(
            &cast_err(Value::Float8(1e10), &T::Int4),
            "22003",
            "integer out of range",
        );
        assert_error(
            &cast_err(Value::Float8(9223372036854775808.0), &T::Int8),
            "22003",
            "bigint out of range",
        );
        assert_eq!(
            Value::Float8(-9223372036854775808.0)
                .cast_to(&T::Int8)
                .unwrap(),
            Value::Int8(i64::MIN)
        );
        // float -> numeric goes through %.15g (%.6g for real), as in PostgreSQL.
        let to_num = |f: f64| cast_text(Value::Float8(f), &T::Numeric);
        assert_eq!(to_num(0.1), "0.1");
        assert_eq!(to_num(1.0 / 3.0), "0.333333333333333");
        assert_eq!(to_num(1e20), "100000000000000000000");
        assert_eq!(to_num(1.5e-5), "0.000015");
        assert_eq!(to_num(100.0), "100");
        assert_eq!(to_num(-0.0), "0");
        assert_eq!(
            cast_text(Value::Float4((1.0f64 / 3.0) as f32), &T::Numeric),
            "0.333333"
        );
        assert_eq!(
            cast_text(Value::Float4(123456789.123), &T::Numeric),
            "123457000"
        );
        assert_eq!(cast_err(Value::Float8(f64::NAN), &T::Numeric).code, "0A000");
        assert_eq!(cast_err(Value::Float8(1e300), &T::Numeric).code, "22003");
        // Widening to floats and numeric.
        assert_eq!(
            cast_text(Value::Int8(12345678901234567), &T::Float8),
            "1.2345678901234568e+16"
        );
        assert_eq!(
            cast_text(Value::Int4(16777217), &T::Float4),
            "1.6777216e+07"
        );
        assert_eq!(cast_text(num("1.5"), &T::Float8), "1.5");
        assert_eq!(cast_text(num("0.1"), &T::Float4), "0.1");
        assert_eq!(
            cast_text(Value::Int8(i64::MAX), &T::Numeric),
            "9223372036854775807"
        );
        assert_eq!(
            cast_text(Value::Float4(0.1), &T::Float8),
            "0.10000000149011612"
        );
        assert_error(
            &cast_err(Value::Float8(1e300), &T::Float4),
            "22003",
            "value out of range: overflow",
        );
        assert_error(
            &cast_err(Value::Float8(1e-300), &T::Float4),
            "22003",
            "value out of range: underflow",
        );
        assert_eq!(
            cast_text(Value::Float8(f64::INFINITY), &T::Float4),
            "Infinity"
        );
        assert_eq!(num("1.50").cast_to(&T::Numeric).unwrap(), num("1.50"));
    }

    #[test]
    fn cast_other_types() {
        use SqlType as T;
        assert_eq!(Value::Null.cast_to(&T::Int4).unwrap(), Value::Null);
        assert_eq!(Value::Null.cast_to(&T::Char(Some(3))).unwrap(), Value::Null);
        // Text goes through the input function.
        assert_eq!(
            Value::Text("12".into()).cast_to(&T::Int4).unwrap(),
            Value::Int4(12)
        );
        assert_error(
            &cast_err(Value::Text("x".into()), &T::Uuid),
            "22P02",
            "invalid input syntax for type uuid: \"x\"",
        );
        assert_eq!(
            cast_text(Value::Text("2024-01-02".into()), &T::Date),
            "2024-01-02"
        );
        assert_eq!(
            cast_text(Value::Text("{\"b\":1,\"a\":2}".into()), &T::Jsonb),
            "{\"a\": 2, \"b\": 1}"
        );
        // Dates and timestamps, in UTC.
        assert_eq!(cast_text(ts("2024-01-02 03:04:05"), &T::Date), "2024-01-02");
        assert_eq!(
            cast_text(tstz("2024-01-02 23:04:05+00"), &T::Date),
            "2024-01-02"
        );
        assert_eq!(
            cast_text(date("2024-01-02"), &T::Timestamp),
            "2024-01-02 00:00:00"
        );
        assert_eq!(
            cast_text(date("2024-01-02"), &T::TimestampTz),
            "2024-01-02 00:00:00+00"
        );
        assert_eq!(
            cast_text(tstz("2024-01-02 03:04:05+02"), &T::Timestamp),
            "2024-01-02 01:04:05"
        );
        assert_eq!(
            cast_text(ts("2024-01-02 03:04:05"), &T::TimestampTz),
            "2024-01-02 03:04:05+00"
        );
        // json <-> jsonb.
        assert_eq!(
            cast_text(Value::Json("{\"b\":1,\"a\":2}".into()), &T::Jsonb),
            "{\"a\": 2, \"b\": 1}"
        );
        assert_eq!(
            cast_text(jsonb("{\"b\":1,\"a\":2}"), &T::Json),
            "{\"a\": 2, \"b\": 1}"
        );
        // Identities.
        let u = parse(&T::Uuid, "a0eebc999c0b4ef8bb6d6bb9bd380a11");
        assert_eq!(u.cast_to(&T::Uuid).unwrap(), u);
        assert_eq!(
            Value::Bytea(vec![1]).cast_to(&T::Bytea).unwrap(),
            Value::Bytea(vec![1])
        );
        assert_eq!(
            Value::Bool(true).cast_to(&T::Bool).unwrap(),
            Value::Bool(true)
        );
        // No assignment cast.
        let cases = [
            (
                Value::Bool(true),
                T::Int4,
                "cannot cast type boolean to integer",
            ),
            (
                Value::Int4(1),
                T::Bool,
                "cannot cast type integer to boolean",
            ),
            (Value::Int4(1), T::Date, "cannot cast type integer to date"),
            (u.clone(), T::Bytea, "cannot cast type uuid to bytea"),
            (
                date("2024-01-02"),
                T::Int8,
                "cannot cast type date to bigint",
            ),
            (
                Value::Bytea(vec![]),
                T::Jsonb,
                "cannot cast type bytea to jsonb",
            ),
            (jsonb("1"), T::Int4, "cannot cast type json to integer"),
            (
                ts("2024-01-02"),
                T::Numeric,
                "cannot cast type timestamp without time zone to numeric",
            ),
        ];
        for (v, t, message) in cases {
            assert_error(&cast_err(v, &t), "42846", message);
        }
    }

    #[test]
    fn sql_cmp_semantics() {
        use Ordering::*;
        let cmp = |a: &Value, b: &Value| a.sql_cmp(b);
        assert_eq!(cmp(&Value::Int2(1), &Value::Int8(1)), Some(Equal));
        assert_eq!(cmp(&Value::Int4(-1), &Value::Int8(1)), Some(Less));
        assert_eq!(cmp(&Value::Int4(1), &num("1.00")), Some(Equal));
        assert_eq!(cmp(&num("1.0"), &num("1.00")), Some(Equal));
        assert_eq!(cmp(&num("1.5"), &Value::Int8(1)), Some(Greater));
        assert_eq!(cmp(&Value::Float8(1.0), &Value::Int4(1)), Some(Equal));
        assert_eq!(cmp(&Value::Float4(0.5), &Value::Float8(0.5)), Some(Equal));
        assert_eq!(cmp(&num("0.1"), &Value::Float8(0.1)), Some(Equal));
        assert_eq!(cmp(&Value::Float8(-0.0), &Value::Float8(0.0)), Some(Equal));
        // NaN is equal to itself and above everything, infinity included.
        let nan = Value::Float8(f64::NAN);
        assert_eq!(cmp(&nan, &nan), Some(Equal));
        assert_eq!(cmp(&nan, &Value::Float8(f64::INFINITY)), Some(Greater));
        assert_eq!(cmp(&Value::Int8(i64::MAX), &nan), Some(Less));
        assert_eq!(cmp(&Value::Float4(f32::NAN), &nan), Some(Equal));
        // Text is compared byte-wise (C collation).
        let t = |s: &str| Value::Text(s.into());
        assert_eq!(cmp(&t("B"), &t("a")), Some(Less));
        assert_eq!(cmp(&t("a"), &t("ab")), Some(Less));
        assert_eq!(cmp(&t("é"), &t("z")), Some(Greater));
        assert_eq!(cmp(&Value::Bool(false), &Value::Bool(true)), Some(Less));
        assert_eq!(
            cmp(&Value::Bytea(vec![1, 2]), &Value::Bytea(vec![1])),
            Some(Greater)
        );
        let u1 = parse(&SqlType::Uuid, "00000000-0000-0000-0000-0000000000ff");
        let u2 = parse(&SqlType::Uuid, "00000000-0000-0000-0000-000000000100");
        assert_eq!(cmp(&u1, &u2), Some(Less));
        // Dates promote to timestamps; timestamps compare with timestamptz in UTC.
        assert_eq!(
            cmp(&date("2024-01-02"), &ts("2024-01-02 00:00:00")),
            Some(Equal)
        );
        assert_eq!(
            cmp(&date("2024-01-02"), &ts("2024-01-02 00:00:01")),
            Some(Less)
        );
        // 23:00 at -02 is 01:00 UTC the next day.
        assert_eq!(
            cmp(&date("2024-01-03"), &tstz("2024-01-02 23:00:00-02")),
            Some(Less)
        );
        assert_eq!(
            cmp(&date("2024-01-03"), &tstz("2024-01-02 23:00:00+00")),
            Some(Greater)
        );
        assert_eq!(
            cmp(&ts("2024-01-02 01:00"), &tstz("2024-01-02 03:00+02")),
            Some(Equal)
        );
        assert_eq!(cmp(&date("0001-01-01 BC"), &date("0001-01-01")), Some(Less));
        // NULL and unrelated types.
        assert_eq!(cmp(&Value::Null, &Value::Null), None);
        assert_eq!(cmp(&Value::Int4(1), &Value::Null), None);
        assert_eq!(cmp(&Value::Int4(1), &t("1")), None);
        assert_eq!(cmp(&Value::Bool(true), &Value::Int4(1)), None);
        assert_eq!(cmp(&date("2024-01-02"), &t("2024-01-02")), None);
        assert_eq!(cmp(&u1, &Value::Bytea(vec![])), None);
    }

    #[test]
    fn key_bytes_follow_postgres_equality() {
        let same = |a: &Value, b: &Value| assert_eq!(key(a), key(b), "{a:?} = {b:?}");
        let differ = |a: &Value, b: &Value| assert_ne!(key(a), key(b), "{a:?} <> {b:?}");
        same(&num("1.0"), &num("1.00"));
        same(&num("1"), &num("1.000"));
        same(&num("-0"), &num("0.00"));
        same(&num("-0.0"), &num("0"));
        same(&num("1e2"), &num("100.0"));
        differ(&num("1.01"), &num("1.1"));
        differ(&num("-1"), &num("1"));
        same(&Value::Float8(-0.0), &Value::Float8(0.0));
        same(&Value::Float8(f64::NAN), &Value::Float8(-f64::NAN));
        same(&Value::Float8(f64::NAN), &parse(&SqlType::Float8, "NaN"));
        same(&Value::Float4(-0.0), &Value::Float4(0.0));
        differ(&Value::Float8(f64::INFINITY), &Value::Float8(f64::NAN));
        differ(&Value::Float8(1.0), &Value::Float8(1.0000000000000002));
        // Integers of any width are equal when numerically equal.
        same(&Value::Int2(7), &Value::Int8(7));
        same(&Value::Int4(-1), &Value::Int8(-1));
        differ(&Value::Int4(1), &Value::Int4(-1));
        // Distinct types never collide.
        differ(&Value::Int4(1), &num("1"));
        differ(&Value::Int4(1), &Value::Float8(1.0));
        differ(&Value::Text("a".into()), &Value::Bytea(b"a".to_vec()));
        differ(&Value::Text("{}".into()), &Value::Json("{}".into()));
        differ(&date("2024-01-02"), &ts("2024-01-02"));
        differ(&ts("2024-01-02"), &tstz("2024-01-02"));
        differ(&Value::Null, &Value::Text(String::new()));
        // Text is byte-equal; char(n) values are compared padded.
        differ(&Value::Text("a".into()), &Value::Text("a ".into()));
        differ(&Value::Text("a".into()), &Value::Text("A".into()));
        let c3 = SqlType::Char(Some(3));
        same(
            &Value::Text("ab".into()).cast_to(&c3).unwrap(),
            &Value::Text("ab ".into()).cast_to(&c3).unwrap(),
        );
        same(
            &Value::Text("ab".into()).cast_to(&c3).unwrap(),
            &parse(&c3, "ab   ").cast_to(&c3).unwrap(),
        );
        // Timestamps by microsecond; timestamptz by instant.
        same(
            &ts("2024-01-02 03:04:05.5"),
            &ts("2024-01-02T03:04:05.500000"),
        );
        same(
            &tstz("2024-01-02 03:04:05+02"),
            &tstz("2024-01-02 01:04:05Z"),
        );
        differ(
            &ts("2024-01-02 03:04:05.000001"),
            &ts("2024-01-02 03:04:05"),
        );
        same(&date("2024-01-02"), &date("20240102"));
        // uuid / bytea / bool.
        same(
            &parse(&SqlType::Uuid, "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}"),
            &parse(&SqlType::Uuid, "a0eebc999c0b4ef8bb6d6bb9bd380a11"),
        );
        same(
            &parse(&SqlType::Bytea, "\\x41"),
            &parse(&SqlType::Bytea, "A"),
        );
        same(&Value::Bool(true), &parse(&SqlType::Bool, "yes"));
        differ(&Value::Bool(true), &Value::Bool(false));
        // jsonb: key order, duplicate keys, whitespace, escapes and numeric scale don't matter.
        same(
            &jsonb("{\"a\":1,\"b\":[1,2]}"),
            &jsonb("{ \"b\" : [1, 2.0], \"a\" : 1.00 }"),
        );
        same(&jsonb("{\"a\":0,\"a\":1}"), &jsonb("{\"a\":1}"));
        same(&jsonb("\"\\u00e9\""), &jsonb("\"é\""));
        differ(&jsonb("{\"a\":1}"), &jsonb("{\"a\":\"1\"}"));
        differ(&jsonb("[1,2]"), &jsonb("[2,1]"));
        // json text jsonb cannot hold still gets a key.
        differ(
            &Value::Json("\"\\u0000\"".into()),
            &Value::Json("\"\\u0001\"".into()),
        );
        // The composite key is length-prefixed per column.
        let a = encode_key(&[&Value::Text("ab".into()), &Value::Text("c".into())]);
        let b = encode_key(&[&Value::Text("a".into()), &Value::Text("bc".into())]);
        assert_ne!(a, b);
        assert_eq!(
            encode_key(&[&num("1.0"), &Value::Int2(2)]),
            encode_key(&[&num("1"), &Value::Int8(2)])
        );
    }

    #[test]
    fn decode_key_inverts_encode_key_for_every_type() {
        let c3 = SqlType::Char(Some(3));
        let cases: Vec<(SqlType, Value)> = vec![
            (SqlType::Bool, Value::Bool(true)),
            (SqlType::Bool, Value::Bool(false)),
            (SqlType::Int2, Value::Int2(i16::MIN)),
            (SqlType::Int4, Value::Int4(-7)),
            (SqlType::Int8, Value::Int8(i64::MAX)),
            (SqlType::Float4, Value::Float4(1.5)),
            (SqlType::Float4, Value::Float4(f32::INFINITY)),
            (SqlType::Float8, Value::Float8(-2.25e300)),
            (SqlType::Numeric, num("123.4500")),
            (SqlType::Numeric, num("-0.000001")),
            (SqlType::Text, Value::Text("héllo wörld".into())),
            (SqlType::Varchar(Some(4)), Value::Text(String::new())),
            (c3.clone(), Value::Text("ab".into()).cast_to(&c3).unwrap()),
            (SqlType::Bytea, Value::Bytea(vec![0, 255, 1])),
            (SqlType::Uuid, Value::Uuid(Uuid::from_u128(0x1234))),
            (SqlType::Date, date("2024-02-29")),
            (SqlType::Date, date("0001-01-01")),
            (SqlType::Timestamp, ts("2024-01-02 03:04:05.000001")),
            (SqlType::Timestamp, ts("1900-01-01 00:00:00")),
            (SqlType::TimestampTz, tstz("2024-01-02 03:04:05.5+02")),
            (SqlType::Jsonb, jsonb(r#"{"b": 1, "a": [true, null]}"#)),
            (SqlType::Json, Value::Json(r#"{"a": "\u0000"}"#.into())),
        ];
        for (ty, v) in &cases {
            let bytes = encode_key(&[v]);
            let back = decode_key(std::slice::from_ref(ty), &bytes)
                .unwrap_or_else(|e| panic!("{ty:?} {v:?}: {e}"));
            assert_eq!(back.len(), 1);
            // Round trip to the same key: same value under the constraint.
            assert_eq!(encode_key(&[&back[0]]), bytes, "{ty:?} {v:?} -> {back:?}");
        }
        // Exact values where the canonical form is the value itself.
        for (ty, v) in &cases[..8] {
            let back = decode_key(std::slice::from_ref(ty), &encode_key(&[v])).unwrap();
            assert_eq!(&back[0], v);
        }
        // A composite key decodes column by column.
        let types: Vec<SqlType> = cases.iter().map(|(t, _)| t.clone()).collect();
        let values: Vec<&Value> = cases.iter().map(|(_, v)| v).collect();
        let bytes = encode_key(&values);
        assert_eq!(
            encode_key(
                &decode_key(&types, &bytes)
                    .unwrap()
                    .iter()
                    .collect::<Vec<_>>()
            ),
            bytes
        );
    }

    #[test]
    fn decode_key_gives_canonical_forms() {
        let one = |ty: SqlType, v: Value| decode_key(&[ty], &encode_key(&[&v])).unwrap().remove(0);
        assert_eq!(text(&one(SqlType::Numeric, num("1.500"))), "1.5");
        assert_eq!(text(&one(SqlType::Numeric, num("1e2"))), "100");
        let z = one(SqlType::Float8, Value::Float8(-0.0));
        assert!(matches!(z, Value::Float8(f) if f == 0.0 && f.is_sign_positive()));
        assert!(
            matches!(one(SqlType::Float8, Value::Float8(f64::NAN)), Value::Float8(f) if f.is_nan())
        );
        // Integers come back in the column's width.
        assert_eq!(one(SqlType::Int2, Value::Int8(7)), Value::Int2(7));
        assert_eq!(one(SqlType::Int8, Value::Int2(-7)), Value::Int8(-7));
        assert_eq!(
            text(&one(SqlType::Jsonb, jsonb(r#"{"b":1,"a":2}"#))),
            r#"{"a": 2, "b": 1}"#
        );
    }

    #[test]
    fn decode_key_rejects_bytes_of_other_types() {
        let k = encode_key(&[&Value::Int4(1)]);
        assert!(decode_key(&[SqlType::Text], &k).is_err());
        assert!(decode_key(&[SqlType::Int2], &encode_key(&[&Value::Int8(1 << 40)])).is_err());
        assert!(decode_key(&[SqlType::Int4, SqlType::Int4], &k).is_err());
        assert!(decode_key(&[], &k).is_err());
        assert!(decode_key(&[SqlType::Int4], &k[..k.len() - 1]).is_err());
        assert!(decode_key(&[SqlType::Bool], &encode_key(&[&Value::Bool(true)])[..5]).is_err());
    }

    #[test]
    fn key_detail_line() {
        assert_eq!(
            key_detail(&["a", "b"], &[&Value::Int4(1), &Value::Text("x".into())]),
            "Key (a, b)=(1, x)"
        );
        assert_eq!(key_detail(&["a"], &[&Value::Null]), "Key (a)=(null)");
    }
}
