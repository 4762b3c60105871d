//! `Value::sql_cmp`: SQL ordering, across numeric types (integers, floats
//! with PostgreSQL's NaN order, numeric) and across dates and timestamps.

use std::cmp::Ordering;

use chrono::{NaiveDateTime, NaiveTime};
use rust_decimal::Decimal;

use super::numeric::numeric_text;
use super::{json, Value};

impl Value {
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
            (V::Array(a), V::Array(b)) => super::array::compare(&a.items, &b.items),
            _ => None,
        }
    }
}

/// A number for cross-type comparison.
enum Num {
    I(i64),
    F(f64),
    D(Decimal),
}

impl Value {
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

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use crate::types::test_util::{date, num, parse, ts, tstz};
    use crate::types::{SqlType, Value};

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
}
