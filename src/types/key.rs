//! Canonical key bytes: `Value::key_bytes` follows PostgreSQL equality so
//! that equal values under a unique constraint have equal bytes;
//! `encode_key` / `decode_key` for composite keys, and `key_detail` for
//! the unique-violation message.

use chrono::{DateTime, Datelike, NaiveDate};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::{json, SqlType, Value};
use crate::error::{SqlError, SqlResult};

impl Value {
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
            Value::Array(a) => {
                out.push(key_tag::ARRAY);
                super::array::key_bytes(&a.items, out);
            }
        }
    }
}

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
    pub const ARRAY: u8 = 13;
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

/// Canonical bytes of a (possibly composite) key: a length-prefixed tuple.
pub fn encode_key<V: std::borrow::Borrow<Value>>(values: &[V]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * values.len());
    for v in values {
        push_prefixed(v.borrow(), &mut out);
    }
    out
}

/// Appends `value`'s key bytes to `out` after their length (4 bytes, big
/// endian). The value is written in place after room for the length, which
/// is filled in once it is known: one buffer, no copy per value.
pub(super) fn push_prefixed(value: &Value, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    value.key_bytes(out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
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
        (key_tag::NUMERIC, SqlType::Numeric(_)) => {
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
        (key_tag::ARRAY, SqlType::Array(elem)) => {
            let mut rest = body;
            let mut items = Vec::new();
            while !rest.is_empty() {
                let (len, tail) = rest.split_first_chunk::<4>()?;
                let len = u32::from_be_bytes(*len) as usize;
                if tail.len() < len {
                    return None;
                }
                let (one, tail) = tail.split_at(len);
                rest = tail;
                let (&tag, body) = one.split_first()?;
                items.push(decode_one(elem, tag, body)?);
            }
            super::Array::value((**elem).clone(), items)
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

/// The DETAIL of a constraint a whole row violates (NOT NULL, CHECK):
/// `Failing row contains (1, a, null).`
pub fn failing_row(values: &[Value]) -> String {
    let vals: Vec<String> = values
        .iter()
        .map(|v| v.to_text().unwrap_or_else(|| "null".into()))
        .collect();
    format!("Failing row contains ({}).", vals.join(", "))
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::{decode_key, encode_key, key_detail};
    use crate::types::test_util::{date, jsonb, key, num, parse, text, ts, tstz};
    use crate::types::{SqlType, Value};

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
            (SqlType::Numeric(None), num("123.4500")),
            (SqlType::Numeric(None), num("-0.000001")),
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
            (
                SqlType::array_of(SqlType::Int4),
                parse(&SqlType::array_of(SqlType::Int4), "{1,NULL,-3}"),
            ),
            (
                SqlType::array_of(SqlType::Text),
                parse(&SqlType::array_of(SqlType::Text), "{}"),
            ),
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
        assert_eq!(text(&one(SqlType::Numeric(None), num("1.500"))), "1.5");
        assert_eq!(text(&one(SqlType::Numeric(None), num("1e2"))), "100");
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
