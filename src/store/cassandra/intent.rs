//! `__intent` as stored: a transaction's pending write to a row, as JSON
//! text. The shape is serde's own for `store::Intent` (`txn`, `live`,
//! `claims`, `values`, each value externally tagged: `{"Int4":7}`), with
//! two values spelled differently, because serde's form does not fit a
//! row partition:
//!
//! - `bytea` is base64, `{"Bytea":"AAEC"}`: serde writes a byte array as a
//!   JSON array of numbers, up to 4 characters a byte, and Cassandra
//!   refuses a mutation over `max_mutation_size` (16 MiB by default; the
//!   Paxos proposal of an LWT holds the whole write). As a number array, a
//!   5 MiB value in a transaction made an 18.7 MB proposal that the node
//!   could not apply: the LWT timed out, again on every retry, and the
//!   statement answered 40003 after 17 s.
//! - NaN and ±Infinity in `real` / `double precision` are their names,
//!   `{"Float8":"NaN"}`: JSON has no such numbers and serde writes `null`,
//!   which does not read back as a float.
//!
//! Reading accepts serde's own forms too.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Serialize, Serializer};
use uuid::Uuid;

use crate::store::{Intent, Prior, TxnId};
use crate::types::Value;

/// The intent as `__intent` stores it.
pub fn to_json(intent: &Intent) -> Result<String, serde_json::Error> {
    serde_json::to_string(&Stored(intent))
}

/// The intent [`to_json`] wrote.
pub fn from_json(text: &str) -> Result<Intent, String> {
    let read: Read = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(Intent {
        txn: read.txn,
        live: read.live,
        claims: read.claims,
        values: values_from_json(read.values)?,
    })
}

/// A row's previous committed state as `__prev` stores it: the same
/// shape as an intent's (`live`, `values`), with `at` and `by`.
pub fn prior_to_json(prior: &Prior) -> Result<String, serde_json::Error> {
    serde_json::to_string(&StoredPrior(prior))
}

/// The previous state [`prior_to_json`] wrote.
pub fn prior_from_json(text: &str) -> Result<Prior, String> {
    let read: ReadPrior = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(Prior {
        live: read.live,
        values: values_from_json(read.values)?,
        at: read.at,
        by: read.by,
    })
}

struct StoredPrior<'a>(&'a Prior);

impl Serialize for StoredPrior<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let values: Vec<StoredValue<'_>> = p.values.iter().map(StoredValue).collect();
        let mut st = s.serialize_struct("Prior", 4)?;
        st.serialize_field("live", &p.live)?;
        st.serialize_field("values", &values)?;
        st.serialize_field("at", &p.at)?;
        st.serialize_field("by", &p.by)?;
        st.end()
    }
}

#[derive(Deserialize)]
struct ReadPrior {
    live: bool,
    values: Vec<serde_json::Value>,
    at: u64,
    by: TxnId,
}

struct Stored<'a>(&'a Intent);

/// One value of an intent, in the stored form.
struct StoredValue<'a>(&'a Value);

impl Serialize for Stored<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let i = self.0;
        let values: Vec<StoredValue<'_>> = i.values.iter().map(StoredValue).collect();
        let mut st = s.serialize_struct("Intent", 4)?;
        st.serialize_field("txn", &i.txn)?;
        st.serialize_field("live", &i.live)?;
        st.serialize_field("claims", &i.claims)?;
        st.serialize_field("values", &values)?;
        st.end()
    }
}

impl Serialize for StoredValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let special = match self.0 {
            Value::Bytea(b) => Some(("Bytea", base64_encode(b))),
            Value::Float4(f) => float_name(f64::from(*f)).map(|n| ("Float4", n.to_owned())),
            Value::Float8(f) => float_name(*f).map(|n| ("Float8", n.to_owned())),
            _ => None,
        };
        match special {
            Some((tag, text)) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(tag, &text)?;
                m.end()
            }
            None => self.0.serialize(s),
        }
    }
}

#[derive(Deserialize)]
struct Read {
    txn: TxnId,
    live: bool,
    claims: BTreeMap<String, Uuid>,
    values: Vec<serde_json::Value>,
}

fn values_from_json(values: Vec<serde_json::Value>) -> Result<Vec<Value>, String> {
    values.into_iter().map(value_from_json).collect()
}

fn value_from_json(v: serde_json::Value) -> Result<Value, String> {
    if let Some((tag, serde_json::Value::String(text))) = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.iter().next())
    {
        let bad = || format!("a stored {tag} value {text:?}");
        match tag.as_str() {
            "Bytea" => return base64_decode(text).map(Value::Bytea).ok_or_else(bad),
            "Float4" => {
                return float_named(text)
                    .map(|f| Value::Float4(f as f32))
                    .ok_or_else(bad)
            }
            "Float8" => return float_named(text).map(Value::Float8).ok_or_else(bad),
            _ => {}
        }
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

fn float_name(f: f64) -> Option<&'static str> {
    match f {
        f if f.is_nan() => Some("NaN"),
        f if f == f64::INFINITY => Some("Infinity"),
        f if f == f64::NEG_INFINITY => Some("-Infinity"),
        _ => None,
    }
}

fn float_named(name: &str) -> Option<f64> {
    match name {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 (RFC 4648, with padding).
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.as_bytes();
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let quads = text.len() / 4;
    for (q, quad) in text.chunks(4).enumerate() {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && q + 1 != quads) {
            return None;
        }
        let mut n = 0u32;
        for (i, &c) in quad[..4 - pad].iter().enumerate() {
            n |= sextet(c)? << (18 - 6 * i);
        }
        for i in 0..3 - pad {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(values: Vec<Value>) -> Intent {
        Intent {
            txn: Uuid::now_v7(),
            live: true,
            claims: BTreeMap::from([("u".to_owned(), Uuid::now_v7())]),
            values,
        }
    }

    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float8(a), Value::Float8(b)) => a.to_bits() == b.to_bits(),
            (Value::Float4(a), Value::Float4(b)) => a.to_bits() == b.to_bits(),
            _ => a == b,
        }
    }

    #[test]
    fn every_value_round_trips() {
        use crate::types::SqlType;
        let ts = Value::parse_text(&SqlType::TimestampTz, "2024-01-02 03:04:05.000006+00").unwrap();
        let values = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int2(-3),
            Value::Int4(7),
            Value::Int8(i64::MIN),
            Value::Float4(1.5),
            Value::Float4(-0.0),
            Value::Float8(1e300),
            Value::Float8(f64::NAN),
            Value::Float8(f64::INFINITY),
            Value::Float4(f32::NEG_INFINITY),
            Value::Float4(f32::NAN),
            Value::Numeric("1.50".parse().unwrap()),
            Value::Text("{\"Bytea\":\"AA==\"} \u{0}é".into()),
            Value::Bytea(Vec::new()),
            Value::Bytea(vec![0]),
            Value::Bytea(vec![0xff, 0xfe]),
            Value::Bytea((0..=255).collect()),
            Value::Uuid(Uuid::now_v7()),
            Value::parse_text(&SqlType::Date, "2024-02-29").unwrap(),
            Value::parse_text(&SqlType::Timestamp, "2024-01-02 03:04:05.000001").unwrap(),
            ts,
            Value::Json(r#"{"a": [1, 2]}"#.into()),
        ];
        let i = intent(values);
        let json = to_json(&i).unwrap();
        assert!(json.contains(r#"{"Float8":"NaN"}"#), "{json}");
        assert!(json.contains(r#"{"Float4":"-Infinity"}"#), "{json}");
        assert!(json.contains(r#"{"Bytea":"//4="}"#), "{json}");
        let back = from_json(&json).unwrap();
        assert_eq!(
            (back.txn, back.live, &back.claims),
            (i.txn, i.live, &i.claims)
        );
        assert_eq!(back.values.len(), i.values.len());
        for (b, v) in back.values.iter().zip(&i.values) {
            assert!(same(b, v), "{v:?} read back as {b:?}");
        }
    }

    #[test]
    fn other_values_keep_serdes_form() {
        let plain = intent(vec![
            Value::Int4(1),
            Value::Float8(-0.5),
            Value::Text("x".into()),
            Value::Null,
        ]);
        assert_eq!(
            to_json(&plain).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
        // serde's own form of every value reads back (bytea as an array).
        let mut old = plain.clone();
        old.values.push(Value::Bytea(vec![1, 2, 3]));
        let json = serde_json::to_string(&old).unwrap();
        assert!(json.contains(r#"{"Bytea":[1,2,3]}"#), "{json}");
        assert_eq!(from_json(&json).unwrap(), old);
        // serde's null for a non-finite float is no value.
        let nan = r#"{"txn":"0192f0c4-a1b2-7c3d-8e9f-001122334455","live":true,"claims":{},"values":[{"Float8":null}]}"#;
        assert!(from_json(nan).is_err());
    }

    #[test]
    fn a_previous_state_round_trips() {
        let p = Prior {
            live: true,
            values: vec![
                Value::Int4(3),
                Value::Bytea(vec![0xff]),
                Value::Float8(f64::NAN),
            ],
            at: u64::MAX - 1,
            by: Uuid::now_v7(),
        };
        let json = prior_to_json(&p).unwrap();
        assert!(json.contains(r#"{"Bytea":"/w=="}"#), "{json}");
        let back = prior_from_json(&json).unwrap();
        assert_eq!((back.live, back.at, back.by), (p.live, p.at, p.by));
        assert_eq!(back.values[..2], p.values[..2]);
        assert!(matches!(back.values[2], Value::Float8(f) if f.is_nan()));
    }

    #[test]
    fn bytea_is_base64_at_four_thirds() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        for n in 0..70usize {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&bytes)), Some(bytes));
        }
        for bad in ["Zg=", "Z===", "Zg==Zg==", "Zm9*", "===="] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
        let big = intent(vec![Value::Bytea(vec![0xab; 3 << 20])]);
        let len = to_json(&big).unwrap().len();
        assert!(len < (4 << 20) + 200, "{len} characters for 3 MiB");
    }
}
