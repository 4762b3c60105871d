//! PostgreSQL's text input and output functions: `Value::parse_text` and
//! `Value::to_text` dispatch per type to the family modules; boolean and
//! integer input live here, as does the UTF-8 check text must pass.

use std::fmt::Write as _;

use super::bytea::{parse_bytea, parse_uuid};
use super::datetime::{date_text, parse_date, parse_timestamp, parse_timestamptz, timestamp_text};
use super::float::{float4_text, float8_text, parse_float4, parse_float8};
use super::numeric::{numeric_text, parse_numeric};
use super::{is_c_space, json, out_of_range, SqlType, Value, CHARACTER_NOT_IN_REPERTOIRE};
use crate::error::{SqlError, SqlResult};

impl Value {
    /// PostgreSQL's input function for `ty` (what a text-format parameter or a
    /// quoted literal goes through). Errors: 22P02 / 22007 / 22003 / 22008 with
    /// PostgreSQL's exact message (e.g. `invalid input syntax for type integer: "x"`).
    /// Like PostgreSQL for those, it ignores a numeric(p, s) typmod, which
    /// `cast_to` applies afterwards.
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
            // oidin takes a negative int4 as the unsigned value of its bits.
            SqlType::Oid => parse_int(s, "oid", i32::MIN.into(), u32::MAX.into())
                .map(|v| Value::Int8(if v < 0 { v + (1 << 32) } else { v })),
            SqlType::Float4 => parse_float4(s).map(Value::Float4),
            SqlType::Float8 => parse_float8(s).map(Value::Float8),
            SqlType::Numeric(_) => parse_numeric(s).map(Value::Numeric),
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
            SqlType::Array(elem) => super::array::parse(elem, s),
        }
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
            Value::Array(a) => super::array::text(&a.items),
        };
        Some(s)
    }
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
pub(super) fn utf8_text(bytes: &[u8]) -> SqlResult<&str> {
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

#[cfg(test)]
mod tests {
    use chrono::{Duration, NaiveDate, TimeZone, Utc};
    use rust_decimal::Decimal;
    use uuid::Uuid;

    use crate::types::pg_cases::{PG_ERRORS, PG_OUTPUT};
    use crate::types::test_util::{
        assert_error, date, jsonb, key, parse, parse_err, text, tstz, ty,
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
        let e = parse_err(&SqlType::Numeric(None), "0.00000000000000000000000000001");
        assert_error(&e, "22003", "value overflows numeric format");
        assert!(e.detail.is_some());
        let e = parse_err(&SqlType::Numeric(None), "79228162514264337593543950336");
        assert_eq!(e.code, "22003");
        let e = parse_err(&SqlType::Numeric(None), "1e29");
        assert_eq!(e.code, "22003");
        for special in ["NaN", "Infinity", "-inf"] {
            let e = parse_err(&SqlType::Numeric(None), special);
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
}
