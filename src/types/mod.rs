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
//!
//! Unit tests sit beside the code they test, sharing `test_util` (helpers)
//! and `pg_cases` (expected outputs and errors from PostgreSQL itself).

mod binary;
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
mod text;

use std::cmp::Ordering;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use numeric::{float_to_numeric, numeric_text};
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

    use uuid::Uuid;

    use super::test_util::{
        assert_error, cast_err, cast_text, date, jsonb, key, num, parse, text, ts, tstz, ty,
    };
    use crate::types::{SqlType, Value};

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
