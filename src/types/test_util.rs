//! Helpers the types unit tests share: a type from its DDL name, parse and
//! print shortcuts that panic with the input on failure, hex, key bytes.

use bytes::BytesMut;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::SqlError;
use crate::types::{NumericMod, SqlType, Value};

/// The SqlType for a type name as written in DDL.
pub(super) fn ty(sql: &str) -> SqlType {
    SqlType::from_ast(&data_type(sql)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

pub(super) fn data_type(sql: &str) -> sqlparser::ast::DataType {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_data_type())
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

pub(super) fn from_ast_err(sql: &str) -> SqlError {
    SqlType::from_ast(&data_type(sql)).expect_err(sql)
}

pub(super) fn parse(t: &SqlType, s: &str) -> Value {
    Value::parse_text(t, s).unwrap_or_else(|e| panic!("{t:?} {s:?}: {e}"))
}

pub(super) fn text(v: &Value) -> String {
    v.to_text().expect("not null")
}

pub(super) fn parse_err(t: &SqlType, s: &str) -> SqlError {
    match Value::parse_text(t, s) {
        Ok(v) => panic!("{t:?} {s:?} parsed as {v:?}"),
        Err(e) => e,
    }
}

pub(super) fn cast_err(v: Value, t: &SqlType) -> SqlError {
    match v.cast_to(t) {
        Ok(r) => panic!("{v:?} -> {t:?} gave {r:?}"),
        Err(e) => e,
    }
}

pub(super) fn cast_text(v: Value, t: &SqlType) -> String {
    text(
        &v.cast_to(t)
            .unwrap_or_else(|e| panic!("{v:?} -> {t:?}: {e}")),
    )
}

pub(super) fn binary(v: &Value, t: &SqlType) -> Vec<u8> {
    let mut out = BytesMut::new();
    assert!(
        v.encode_binary(t, &mut out).unwrap(),
        "{v:?} encoded as NULL"
    );
    out.to_vec()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(super) fn key(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    v.key_bytes(&mut out);
    out
}

pub(super) fn num(s: &str) -> Value {
    parse(&SqlType::Numeric(None), s)
}

/// `numeric(precision, scale)`.
pub(super) fn numeric(precision: u16, scale: i16) -> SqlType {
    SqlType::Numeric(Some(NumericMod { precision, scale }))
}

pub(super) fn ts(s: &str) -> Value {
    parse(&SqlType::Timestamp, s)
}

pub(super) fn tstz(s: &str) -> Value {
    parse(&SqlType::TimestampTz, s)
}

pub(super) fn date(s: &str) -> Value {
    parse(&SqlType::Date, s)
}

pub(super) fn jsonb(s: &str) -> Value {
    parse(&SqlType::Jsonb, s)
}

pub(super) fn assert_error(e: &SqlError, code: &str, message: &str) {
    assert_eq!((e.code, e.message.as_str()), (code, message), "{e:?}");
}
