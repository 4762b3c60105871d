//! `Value::cast_to`: PostgreSQL's assignment casts into a column's type
//! (integer ranges, varchar/char lengths and padding, int/float/numeric
//! conversions, text through the input functions, dates and timestamps).

use std::borrow::Cow;

use chrono::NaiveTime;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use super::numeric::{fit_typmod, float_to_numeric, numeric_text};
use super::{out_of_range, SqlType, Value, CANNOT_COERCE};
use crate::error::{sqlstate, SqlError, SqlResult};

impl Value {
    /// [`Value::cast_to`], borrowing the value where the cast leaves it as
    /// it is (a bigint into bigint, text into text): a key read by a
    /// parameter then copies nothing.
    pub fn cast_cow(&self, ty: &SqlType) -> SqlResult<Cow<'_, Value>> {
        use SqlType as T;
        use Value as V;
        match (self, ty) {
            (V::Null, _)
            | (V::Bool(_), T::Bool)
            | (V::Int2(_), T::Int2)
            | (V::Int4(_), T::Int4)
            | (V::Int8(_), T::Int8)
            | (V::Text(_), T::Text | T::Varchar(None))
            | (V::Bytea(_), T::Bytea)
            | (V::Uuid(_), T::Uuid)
            | (V::Date(_), T::Date)
            | (V::Timestamp(_), T::Timestamp)
            | (V::TimestampTz(_), T::TimestampTz) => Ok(Cow::Borrowed(self)),
            _ => self.cast_to(ty).map(Cow::Owned),
        }
    }

    /// Assignment cast into a column of type `ty`, as PostgreSQL does on
    /// INSERT/UPDATE: integer range (22003 "smallint out of range"),
    /// varchar(n) length (22001 `value too long for type character varying(3)`),
    /// char(n) padding, text -> any type through `parse_text`, numeric
    /// widening, int <-> float <-> numeric, numeric(p, s) rounding and
    /// bounds (22003 "numeric field overflow").
    pub fn cast_to(&self, ty: &SqlType) -> SqlResult<Value> {
        use SqlType as T;
        use Value as V;
        let v = match (self, ty) {
            (V::Null, _) => V::Null,

            // Arrays: element by element.
            (V::Array(a), T::Array(elem)) => {
                let items = a
                    .items
                    .iter()
                    .map(|v| v.cast_to(elem))
                    .collect::<SqlResult<Vec<_>>>()?;
                super::Array::value((**elem).clone(), items)
            }

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

            // An OID is an integer in 0..=u32::MAX (PostgreSQL's int8 to
            // oid cast answers `OID out of range` beyond it).
            (V::Int2(_) | V::Int4(_) | V::Int8(_), T::Oid) => {
                let i = self.as_i64().unwrap_or_default();
                u32::try_from(i).map_err(|_| out_of_range("OID"))?;
                V::Int8(i)
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
            (V::Float4(f), T::Numeric(_)) => V::Numeric(float_to_numeric(*f as f64, 6)?),
            (V::Float8(f), T::Numeric(_)) => V::Numeric(float_to_numeric(*f, 15)?),
            (V::Numeric(d), T::Numeric(_)) => V::Numeric(*d),
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
        // numeric(p, s) rounds and bounds whatever an arm made.
        match (v, ty) {
            (V::Numeric(d), T::Numeric(m)) => Ok(V::Numeric(fit_typmod(d, *m)?)),
            (v, _) => Ok(v),
        }
    }
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
                | SqlType::Numeric(_)
        )
    }
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
            Value::Array(a) => super::array::array_pg_name(&a.elem),
        }
    }
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

#[cfg(test)]
mod tests {
    use crate::types::test_util::{
        assert_error, cast_err, cast_text, date, jsonb, num, numeric, parse, ts, tstz, ty,
    };
    use crate::types::{SqlType, Value};

    /// `cast_cow` borrows only where the cast gives the value back
    /// unchanged: for every pair of these values and types it answers
    /// what `cast_to` does, the error included.
    #[test]
    fn cast_cow_answers_as_cast_to() {
        let values = [
            Value::Null,
            Value::Bool(true),
            Value::Int2(7),
            Value::Int4(70_000),
            Value::Int8(1 << 40),
            Value::Text("abcd ".into()),
            Value::Text("12".into()),
            Value::Bytea(vec![1, 2]),
            Value::Uuid(uuid::Uuid::nil()),
            date("2024-02-29"),
            ts("2024-02-29 10:00:00"),
            tstz("2024-02-29 10:00:00+00"),
            num("1.005"),
            Value::Float8(1.5),
        ];
        let types = [
            "boolean",
            "smallint",
            "integer",
            "bigint",
            "text",
            "varchar",
            "varchar(3)",
            "char(4)",
            "bytea",
            "uuid",
            "date",
            "timestamp",
            "timestamptz",
            "numeric(5,2)",
            "numeric",
            "double precision",
        ];
        for v in &values {
            for t in types.map(ty) {
                let cow = v.cast_cow(&t).map(|c| c.into_owned());
                match (cow, v.cast_to(&t)) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{v:?} as {t:?}"),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{v:?} as {t:?}"),
                    (a, b) => panic!("{v:?} as {t:?}: {a:?} against {b:?}"),
                }
            }
        }
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
        let to_num = |f: f64| cast_text(Value::Float8(f), &T::Numeric(None));
        assert_eq!(to_num(0.1), "0.1");
        assert_eq!(to_num(1.0 / 3.0), "0.333333333333333");
        assert_eq!(to_num(1e20), "100000000000000000000");
        assert_eq!(to_num(1.5e-5), "0.000015");
        assert_eq!(to_num(100.0), "100");
        assert_eq!(to_num(-0.0), "0");
        assert_eq!(
            cast_text(Value::Float4((1.0f64 / 3.0) as f32), &T::Numeric(None)),
            "0.333333"
        );
        assert_eq!(
            cast_text(Value::Float4(123456789.123), &T::Numeric(None)),
            "123457000"
        );
        assert_eq!(
            cast_err(Value::Float8(f64::NAN), &T::Numeric(None)).code,
            "0A000"
        );
        assert_eq!(
            cast_err(Value::Float8(1e300), &T::Numeric(None)).code,
            "22003"
        );
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
            cast_text(Value::Int8(i64::MAX), &T::Numeric(None)),
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
        assert_eq!(num("1.50").cast_to(&T::Numeric(None)).unwrap(), num("1.50"));
    }

    #[test]
    fn cast_into_numeric_typmod_as_postgres() {
        // `select '<value>'::numeric::numeric(<typmod>)` in PostgreSQL 15.
        let rounded: &[(&str, (u16, i16), &str)] = &[
            ("7", (5, 2), "7.00"),
            ("1.005", (5, 2), "1.01"),
            ("-1.005", (5, 2), "-1.01"),
            ("1.239", (5, 2), "1.24"),
            ("1.0049", (5, 2), "1.00"),
            ("-0.004", (5, 2), "0.00"),
            ("999.994", (5, 2), "999.99"),
            ("0.5", (3, 0), "1"),
            ("2.5", (3, 0), "3"),
            ("-2.5", (3, 0), "-3"),
            ("7.5", (1, 0), "8"),
            ("0.994", (2, 2), "0.99"),
            ("1250", (4, -2), "1300"),
            ("-1249.99", (4, -2), "-1200"),
            ("49.99", (4, -2), "0"),
            ("50", (4, -2), "100"),
            ("999949.99", (4, -2), "999900"),
            ("0.00099", (2, 5), "0.00099"),
            ("0.000994", (2, 5), "0.00099"),
            ("12345678901234567890.5", (28, 0), "12345678901234567891"),
            ("0.000000001", (1, -28), "0"),
        ];
        for (input, (p, s), expected) in rounded {
            assert_eq!(
                cast_text(num(input), &numeric(*p, *s)),
                *expected,
                "{input}"
            );
        }
        let overflows: &[(&str, (u16, i16), &str)] = &[
            ("999.995", (5, 2), "10^3"),
            ("-999.995", (5, 2), "10^3"),
            ("123456.5", (5, 2), "10^3"),
            ("999.5", (3, 0), "10^3"),
            ("0.995", (2, 2), "1"),
            ("-0.995", (2, 2), "1"),
            ("999950", (4, -2), "10^6"),
            ("0.001", (2, 5), "10^-3"),
            ("0.0009995", (2, 5), "10^-3"),
        ];
        for (input, (p, s), bound) in overflows {
            let e = cast_err(num(input), &numeric(*p, *s));
            assert_error(&e, "22003", "numeric field overflow");
            assert_eq!(
                e.detail.as_deref(),
                Some(format!("A field with precision {p}, scale {s} must round to an absolute value less than {bound}.").as_str()),
                "{input}"
            );
        }
        // Every way into the column: integers, floats, text.
        let t = numeric(5, 2);
        assert_eq!(cast_text(Value::Int4(7), &t), "7.00");
        assert_eq!(cast_text(Value::Float8(1.23456), &t), "1.23");
        assert_eq!(cast_text(Value::Float4(2.5), &t), "2.50");
        assert_eq!(cast_text(Value::Text("2.345".into()), &t), "2.35");
        assert_eq!(cast_err(Value::Int8(1000), &t).code, "22003");
        assert_eq!(Value::Null.cast_to(&t).unwrap(), Value::Null);
        // An array's elements, each.
        let a = ty("numeric(5,2)[]");
        assert_eq!(
            cast_text(parse(&a, "{1.005,7,NULL}"), &a),
            "{1.01,7.00,NULL}"
        );
        // PostgreSQL's results a Decimal cannot hold: keyclaim's limit.
        for (input, (p, s)) in [
            ("79228162514264337593543950335", (29, -1)),
            ("50000000000000000000000000000", (1, -29)),
        ] {
            let e = cast_err(num(input), &numeric(p, s));
            assert_eq!(e.code, "22003", "{input}");
            assert!(e.detail.unwrap().starts_with("keyclaim stores"), "{input}");
        }
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
                T::Numeric(None),
                "cannot cast type timestamp without time zone to numeric",
            ),
        ];
        for (v, t, message) in cases {
            assert_error(&cast_err(v, &t), "42846", message);
        }
    }
}
