//! The binary wire format: `Value::decode_binary` for binary-format
//! parameters and `Value::encode_binary` for binary-format results.

use bytes::{BufMut, BytesMut};

use super::numeric::{decode_numeric_binary, encode_numeric_binary};
use super::text::utf8_text;
use super::{bad_binary, SqlType, Value, INVALID_BINARY_REPRESENTATION};
use crate::error::{SqlError, SqlResult};

impl Value {
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
            SqlType::Oid => Value::Int8(get::<u32>(&Type::OID, bytes)?.into()),
            SqlType::Float4 => Value::Float4(get(&Type::FLOAT4, bytes)?),
            SqlType::Float8 => Value::Float8(get(&Type::FLOAT8, bytes)?),
            SqlType::Numeric(_) => Value::Numeric(decode_numeric_binary(bytes)?),
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
            SqlType::Array(elem) => super::array::decode_binary(elem, bytes)?,
        };
        Ok(v)
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
        if *ty == SqlType::Oid {
            // oidsend: 4 bytes, unsigned.
            let Value::Int8(oid) = self.cast_to(ty)? else {
                return Err(SqlError::internal("an oid that is not an integer"));
            };
            out.put_u32(u32::try_from(oid).map_err(|_| SqlError::internal("an oid out of range"))?);
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
            Value::Array(a) => {
                super::array::encode_binary(&a.elem, &a.items, out)?;
                Ok(true)
            }
        }
    }
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
                | (Value::Numeric(_), SqlType::Numeric(_))
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
        ) || matches!((self, ty), (Value::Array(a), SqlType::Array(elem)) if a.elem == **elem)
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use bytes::BytesMut;

    use crate::types::pg_cases::PG_OUTPUT;
    use crate::types::test_util::{assert_error, binary, hex, key, parse, text, ty, unhex};
    use crate::types::{SqlType, Value};

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
    fn an_oid_is_four_unsigned_bytes_and_reads_negative_text_as_its_bits() {
        // oidsend / oidin in PostgreSQL: encode(oidsend(4294967295), 'hex')
        // is ffffffff, and '-1'::oid is 4294967295.
        let max = Value::parse_text(&SqlType::Oid, "-1").expect("oidin");
        assert_eq!(max, Value::Int8(u32::MAX.into()));
        let mut out = BytesMut::new();
        assert!(max.encode_binary(&SqlType::Oid, &mut out).expect("oidsend"));
        assert_eq!(hex(&out), "ffffffff");
        assert_eq!(
            Value::decode_binary(&SqlType::Oid, &out).expect("oidrecv"),
            max
        );
        assert!(Value::parse_text(&SqlType::Oid, "4294967296").is_err());
        assert!(Value::Int8(1 << 32)
            .encode_binary(&SqlType::Oid, &mut out)
            .is_err());
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
        let e =
            Value::decode_binary(&SqlType::Numeric(None), &unhex("00000000c0000000")).unwrap_err();
        assert_eq!(e.code, "0A000");
        let e = Value::decode_binary(&SqlType::Numeric(None), &unhex("00010000000000002710"))
            .unwrap_err();
        assert_error(&e, "22P03", "invalid digit in external \"numeric\" value");
        let e = Value::decode_binary(&SqlType::Numeric(None), &unhex("000100000000")).unwrap_err();
        assert_eq!(e.code, "22P03");
        // numeric_recv truncates digits hidden by dscale.
        let v = Value::decode_binary(&SqlType::Numeric(None), &unhex("000200000000000100011388"))
            .unwrap();
        assert_eq!(text(&v), "1.5");
        let v = Value::decode_binary(&SqlType::Numeric(None), &unhex("000200000000000000011388"))
            .unwrap();
        assert_eq!(text(&v), "1");
        // Binary text is not length-checked (cast_to does that).
        let v = Value::decode_binary(&SqlType::Varchar(Some(1)), b"abc").unwrap();
        assert_eq!(v, Value::Text("abc".into()));
        // Infinite timestamps do not fit.
        let e = Value::decode_binary(&SqlType::Timestamp, &i64::MAX.to_be_bytes()).unwrap_err();
        assert_eq!(e.code, "22P03");
    }
}
