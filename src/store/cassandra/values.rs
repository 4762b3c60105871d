//! SQL values to CQL values and back, and reading result rows by column
//! name (what an LWT returns depends on the server: see `Named`).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate};
use rust_decimal::Decimal;
use scylla::frame::response::result::{ColumnType, NativeType};
use scylla::value::{CqlDate, CqlDecimal, CqlTimestamp, CqlTimeuuid, CqlValue};
use uuid::Uuid;

use super::cql::{AT, BY, CLAIMS, INTENT, LIVE, PREV, VERSION};
use crate::catalog::TableDef;
use crate::store::{RowRecord, StoreError, StoreResult};
use crate::types::{encode_key, SqlType, Value};

const EPOCH: NaiveDate = NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date");
/// CQL `date` counts days with the epoch at 2^31.
const CQL_DATE_EPOCH: i64 = 1 << 31;

/// The CQL value a column stores for `v` (None: NULL). Matches `cql::cql_type`.
pub fn to_cql(v: &Value) -> Option<CqlValue> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => CqlValue::Boolean(*b),
        Value::Int2(i) => CqlValue::SmallInt(*i),
        Value::Int4(i) => CqlValue::Int(*i),
        Value::Int8(i) => CqlValue::BigInt(*i),
        Value::Float4(f) => CqlValue::Float(*f),
        Value::Float8(f) => CqlValue::Double(*f),
        Value::Numeric(d) => CqlValue::Decimal(decimal_to_cql(d)),
        Value::Text(s) | Value::Json(s) => CqlValue::Text(s.clone()),
        Value::Bytea(b) => CqlValue::Blob(b.clone()),
        Value::Uuid(u) => CqlValue::Uuid(*u),
        Value::Date(d) => {
            let days = (*d - EPOCH).num_days() + CQL_DATE_EPOCH;
            CqlValue::Date(CqlDate(days as u32))
        }
        Value::Timestamp(ts) => CqlValue::BigInt(ts.and_utc().timestamp_micros()),
        Value::TimestampTz(ts) => CqlValue::BigInt(ts.timestamp_micros()),
        // An array is kept as its text form, which reads back exactly.
        Value::Array(_) => CqlValue::Text(v.to_text().unwrap_or_default()),
    })
}

/// The CQL value for `v` in a column of CQL type `col`: as [`to_cql`] for
/// tables keyclaim created; adopted tables may hold CQL `timestamp`
/// (milliseconds), `timeuuid` or `ascii` where keyclaim would not.
pub fn to_cql_as(v: &Value, col: &ColumnType<'_>) -> Option<CqlValue> {
    let native = match col {
        ColumnType::Native(n) => n,
        _ => return to_cql(v),
    };
    Some(match (native, v) {
        (NativeType::Timestamp, Value::Timestamp(ts)) => {
            CqlValue::Timestamp(CqlTimestamp(ts.and_utc().timestamp_millis()))
        }
        (NativeType::Timestamp, Value::TimestampTz(ts)) => {
            CqlValue::Timestamp(CqlTimestamp(ts.timestamp_millis()))
        }
        (NativeType::Timeuuid, Value::Uuid(u)) => CqlValue::Timeuuid(CqlTimeuuid::from(*u)),
        (NativeType::Ascii, Value::Text(s)) => CqlValue::Ascii(s.clone()),
        // Integers of any width in a table whose integers are 64 bits
        // (`TableDef::wide_ints`).
        (NativeType::BigInt, Value::Int2(i)) => CqlValue::BigInt(i64::from(*i)),
        (NativeType::BigInt, Value::Int4(i)) => CqlValue::BigInt(i64::from(*i)),
        _ => return to_cql(v),
    })
}

/// The SQL value of a column of type `ty` read back.
pub fn from_cql(ty: &SqlType, v: Option<&CqlValue>) -> StoreResult<Value> {
    let Some(v) = v else {
        return Ok(Value::Null);
    };
    let bad = || corrupt(format!("a {ty:?} column holds {v:?}"));
    Ok(match (ty, v) {
        (SqlType::Bool, CqlValue::Boolean(b)) => Value::Bool(*b),
        (SqlType::Int2, CqlValue::SmallInt(i)) => Value::Int2(*i),
        (SqlType::Int4, CqlValue::Int(i)) => Value::Int4(*i),
        (SqlType::Int8, CqlValue::BigInt(i)) => Value::Int8(*i),
        // A narrower column stored at 64 bits (`TableDef::wide_ints`);
        // a value wider than it (written under a newer definition, read
        // under an older one) keeps its width.
        (SqlType::Int2 | SqlType::Int4, CqlValue::BigInt(i)) => {
            Value::Int8(*i).cast_to(ty).unwrap_or(Value::Int8(*i))
        }
        (SqlType::Float4, CqlValue::Float(f)) => Value::Float4(*f),
        (SqlType::Float8, CqlValue::Double(f)) => Value::Float8(*f),
        (SqlType::Numeric(_), CqlValue::Decimal(d)) => {
            Value::Numeric(decimal_from_cql(d).ok_or_else(bad)?)
        }
        (
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_),
            CqlValue::Text(s) | CqlValue::Ascii(s),
        ) => Value::Text(s.clone()),
        (SqlType::Json | SqlType::Jsonb, CqlValue::Text(s)) => Value::Json(s.clone()),
        (SqlType::Array(_), CqlValue::Text(s)) => Value::parse_text(ty, s).map_err(|_| bad())?,
        (SqlType::Bytea, CqlValue::Blob(b)) => Value::Bytea(b.clone()),
        (SqlType::Uuid, CqlValue::Uuid(u)) => Value::Uuid(*u),
        (SqlType::Uuid, CqlValue::Timeuuid(u)) => Value::Uuid((*u).into()),
        (SqlType::TimestampTz, CqlValue::Timestamp(CqlTimestamp(ms))) => {
            Value::TimestampTz(DateTime::from_timestamp_millis(*ms).ok_or_else(bad)?)
        }
        (SqlType::Timestamp, CqlValue::Timestamp(CqlTimestamp(ms))) => Value::Timestamp(
            DateTime::from_timestamp_millis(*ms)
                .ok_or_else(bad)?
                .naive_utc(),
        ),
        (SqlType::Date, CqlValue::Date(CqlDate(days))) => {
            let since = i64::from(*days) - CQL_DATE_EPOCH;
            Value::Date(
                EPOCH
                    .checked_add_signed(chrono::TimeDelta::days(since))
                    .ok_or_else(bad)?,
            )
        }
        (SqlType::Timestamp, CqlValue::BigInt(us)) => Value::Timestamp(
            DateTime::from_timestamp_micros(*us)
                .ok_or_else(bad)?
                .naive_utc(),
        ),
        (SqlType::TimestampTz, CqlValue::BigInt(us)) => {
            Value::TimestampTz(DateTime::from_timestamp_micros(*us).ok_or_else(bad)?)
        }
        _ => return Err(bad()),
    })
}

/// rust_decimal (96-bit mantissa, scale 0..=28) as CQL decimal (varint
/// mantissa, 32-bit scale): always exact.
fn decimal_to_cql(d: &Decimal) -> CqlDecimal {
    let bytes = d.mantissa().to_be_bytes();
    // The shortest two's complement: drop leading bytes that only repeat the sign.
    let mut start = 0;
    while start < bytes.len() - 1 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    CqlDecimal::from_signed_be_bytes_and_exponent(bytes[start..].to_vec(), d.scale() as i32)
}

/// CQL decimal to rust_decimal; None when it does not fit (only data that
/// keyclaim did not write can be that large).
fn decimal_from_cql(d: &CqlDecimal) -> Option<Decimal> {
    let (bytes, scale) = d.as_signed_be_bytes_slice_and_exponent();
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut wide = [fill; 16];
    wide[16 - bytes.len()..].copy_from_slice(bytes);
    let mantissa = i128::from_be_bytes(wide);
    Decimal::try_from_i128_with_scale(mantissa, u32::try_from(scale).ok()?).ok()
}

fn corrupt(what: String) -> StoreError {
    // Reached only after the request ran: for an LWT, whether it applied
    // is not known from here.
    StoreError::Unknown(format!("unexpected data in the store: {what}"))
}

/// One result row, read by column name. Cassandra answers a failed LWT with
/// `[applied]` plus either the whole row (IF NOT EXISTS) or only the columns
/// its conditions name; ScyllaDB always sends the whole row. Asking by name
/// handles all of them, and tells which columns were sent at all.
pub struct Named<'r> {
    pub names: &'r [String],
    pub values: &'r [Option<CqlValue>],
}

impl Named<'_> {
    pub fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    pub fn get(&self, name: &str) -> Option<&CqlValue> {
        let i = self.names.iter().position(|n| n == name)?;
        self.values.get(i)?.as_ref()
    }

    pub fn uuid(&self, name: &str) -> StoreResult<Option<Uuid>> {
        match self.get(name) {
            None => Ok(None),
            Some(CqlValue::Uuid(u)) => Ok(Some(*u)),
            Some(CqlValue::Timeuuid(u)) => Ok(Some((*u).into())),
            Some(v) => Err(corrupt(format!("{name} holds {v:?}"))),
        }
    }

    pub fn blob(&self, name: &str) -> StoreResult<Option<Vec<u8>>> {
        match self.get(name) {
            None => Ok(None),
            Some(CqlValue::Blob(b)) => Ok(Some(b.clone())),
            Some(v) => Err(corrupt(format!("{name} holds {v:?}"))),
        }
    }

    /// A JSON column (`__intent`, `__prev`) read by `parse`.
    fn json<T>(&self, name: &str, parse: fn(&str) -> Result<T, String>) -> StoreResult<Option<T>> {
        self.text(name)?
            .map(|json| parse(&json).map_err(|e| corrupt(format!("{name}: {e}"))))
            .transpose()
    }

    pub fn text(&self, name: &str) -> StoreResult<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(CqlValue::Text(s) | CqlValue::Ascii(s)) => Ok(Some(s.clone())),
            Some(v) => Err(corrupt(format!("{name} holds {v:?}"))),
        }
    }

    pub fn applied(&self) -> StoreResult<bool> {
        match self.get("[applied]") {
            Some(CqlValue::Boolean(b)) => Ok(*b),
            other => Err(corrupt(format!("[applied] is {other:?}"))),
        }
    }

    /// Column `i`'s value. An added column's is a one-element tuple; no
    /// cell means the row was stored before the column was added.
    fn column(&self, table: &TableDef, i: usize) -> StoreResult<Value> {
        let c = &table.columns[i];
        let cell = self.get(table.storage_name(i));
        match (&c.storage.missing, cell) {
            (None, cell) => from_cql(&c.ty, cell),
            (Some(missing), None) => Ok(missing.clone()),
            (Some(_), Some(CqlValue::Tuple(inner))) => {
                from_cql(&c.ty, inner.first().and_then(Option::as_ref))
            }
            (Some(_), Some(other)) => Err(corrupt(format!(
                "the added column {} holds {other:?}",
                c.name
            ))),
        }
    }

    /// Whether this row carries a whole row partition (not just `[applied]`
    /// and the condition's columns).
    pub fn has_row(&self, table: &TableDef) -> bool {
        self.has(LIVE) && (0..table.columns.len()).all(|i| self.has(table.storage_name(i)))
    }

    /// The row partition this row shows, with its key bytes; None when the
    /// partition is absent (ScyllaDB fills a not-applied LWT on a missing
    /// partition with nulls, key included: a stored row always has its key).
    ///
    /// A row written before its table was adopted has neither `__version`
    /// nor `__live`: it is live, at version nil (which CAS spells `IF
    /// __version = null`), until keyclaim first writes it.
    pub fn row(&self, table: &TableDef) -> StoreResult<Option<(Vec<u8>, RowRecord)>> {
        let key_columns = table.key_columns();
        let mut key = Vec::with_capacity(key_columns.len());
        for &i in key_columns.iter() {
            let c = &table.columns[i];
            match from_cql(&c.ty, self.get(table.storage_name(i)))? {
                Value::Null => return Ok(None),
                v => key.push(v),
            }
        }
        let version = self.uuid(VERSION)?.unwrap_or(Uuid::nil());
        let live = match self.get(LIVE) {
            Some(CqlValue::Boolean(b)) => *b,
            None => true,
            Some(v) => return Err(corrupt(format!("{LIVE} holds {v:?}"))),
        };
        let pk = encode_key(&key.iter().collect::<Vec<_>>());
        let mut claims = BTreeMap::new();
        if let Some(CqlValue::Map(entries)) = self.get(CLAIMS) {
            for (k, v) in entries {
                match (k, v) {
                    (CqlValue::Text(k), CqlValue::Uuid(v)) => {
                        claims.insert(k.clone(), *v);
                    }
                    other => return Err(corrupt(format!("{CLAIMS} holds {other:?}"))),
                }
            }
        }
        let intent = self.json(INTENT, super::intent::from_json)?.map(|mut i| {
            i.values = table.from_slots(i.values);
            Box::new(i)
        });
        let values = if live {
            (0..table.columns.len())
                .map(|i| self.column(table, i))
                .collect::<StoreResult<_>>()?
        } else {
            Vec::new()
        };
        // A row from before commit stamps: older than any snapshot.
        let at = match self.get(AT) {
            Some(CqlValue::BigInt(at)) => *at as u64,
            None => 0,
            Some(v) => return Err(corrupt(format!("{AT} holds {v:?}"))),
        };
        let by = self.uuid(BY)?.unwrap_or(Uuid::nil());
        let prev = self
            .json(PREV, super::intent::prior_from_json)?
            .map(|mut p| {
                p.values = table.from_slots(p.values);
                Box::new(p)
            });
        Ok(Some((
            pk,
            RowRecord {
                version,
                live,
                claims: claims.into(),
                values,
                at,
                by,
                prev,
                intent,
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(ty: SqlType, text: &str) {
        let v = Value::parse_text(&ty, text).unwrap();
        let cql = to_cql(&v);
        let back = from_cql(&ty, cql.as_ref()).unwrap();
        assert_eq!(back, v, "{ty:?} {text}");
    }

    #[test]
    fn every_type_round_trips_through_cql() {
        round_trip(SqlType::Bool, "t");
        round_trip(SqlType::Int2, "-32768");
        round_trip(SqlType::Int4, "2147483647");
        round_trip(SqlType::Int8, "-9223372036854775808");
        round_trip(SqlType::Float4, "1.5");
        round_trip(SqlType::Float8, "-1e300");
        round_trip(SqlType::Numeric(None), "123.4500");
        round_trip(SqlType::Numeric(None), "-0.0000000000000000000000000001");
        round_trip(SqlType::Numeric(None), "79228162514264337593543950335");
        round_trip(SqlType::Numeric(None), "-128");
        round_trip(SqlType::Numeric(None), "128");
        round_trip(SqlType::Numeric(None), "0");
        round_trip(SqlType::Text, "héllo");
        round_trip(SqlType::Char(Some(3)), "ab ");
        round_trip(SqlType::Bytea, "\\x00ff10");
        round_trip(SqlType::Uuid, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        round_trip(SqlType::Date, "2024-02-29");
        round_trip(SqlType::Date, "0001-01-01");
        round_trip(SqlType::Date, "1969-12-31");
        round_trip(SqlType::Timestamp, "2024-01-02 03:04:05.000001");
        round_trip(SqlType::TimestampTz, "1960-01-02 03:04:05.123456+00");
        round_trip(SqlType::Jsonb, r#"{"a": [1, 2]}"#);
        assert_eq!(from_cql(&SqlType::Int4, None).unwrap(), Value::Null);
        assert!(to_cql(&Value::Null).is_none());
    }

    #[test]
    fn decimals_use_the_shortest_mantissa() {
        let d = |s: &str| decimal_to_cql(&s.parse().unwrap());
        assert_eq!(
            d("0").as_signed_be_bytes_slice_and_exponent(),
            (&[0u8][..], 0)
        );
        assert_eq!(
            d("-1").as_signed_be_bytes_slice_and_exponent(),
            (&[0xffu8][..], 0)
        );
        assert_eq!(
            d("1.28").as_signed_be_bytes_slice_and_exponent(),
            (&[0u8, 0x80][..], 2)
        );
        assert_eq!(
            d("-1.29").as_signed_be_bytes_slice_and_exponent(),
            (&[0xffu8, 0x7f][..], 2)
        );
    }

    #[test]
    fn integers_of_any_width_go_in_and_out_of_a_bigint_column() {
        let big = ColumnType::Native(NativeType::BigInt);
        assert_eq!(
            to_cql_as(&Value::Int2(-3), &big),
            Some(CqlValue::BigInt(-3))
        );
        assert_eq!(to_cql_as(&Value::Int4(7), &big), Some(CqlValue::BigInt(7)));
        let stored = CqlValue::BigInt(7);
        assert_eq!(
            from_cql(&SqlType::Int2, Some(&stored)).unwrap(),
            Value::Int2(7)
        );
        assert_eq!(
            from_cql(&SqlType::Int4, Some(&stored)).unwrap(),
            Value::Int4(7)
        );
        // Wider than the column (a newer definition wrote it): kept whole.
        let wide = CqlValue::BigInt(1 << 40);
        assert_eq!(
            from_cql(&SqlType::Int4, Some(&wide)).unwrap(),
            Value::Int8(1 << 40)
        );
    }

    #[test]
    fn adopted_column_types_convert_both_ways() {
        let ts = Value::parse_text(&SqlType::TimestampTz, "2024-01-02 03:04:05.678+00").unwrap();
        let cql = to_cql_as(&ts, &ColumnType::Native(NativeType::Timestamp)).unwrap();
        assert_eq!(cql, CqlValue::Timestamp(CqlTimestamp(1704164645678)));
        assert_eq!(from_cql(&SqlType::TimestampTz, Some(&cql)).unwrap(), ts);
        let u = Value::Uuid(Uuid::now_v1(&[1, 2, 3, 4, 5, 6]));
        let cql = to_cql_as(&u, &ColumnType::Native(NativeType::Timeuuid)).unwrap();
        assert!(matches!(cql, CqlValue::Timeuuid(_)));
        assert_eq!(from_cql(&SqlType::Uuid, Some(&cql)).unwrap(), u);
        let a = to_cql_as(
            &Value::Text("x".into()),
            &ColumnType::Native(NativeType::Ascii),
        );
        assert_eq!(a, Some(CqlValue::Ascii("x".into())));
        // keyclaim's own columns keep their mapping.
        assert_eq!(
            to_cql_as(&Value::Int4(1), &ColumnType::Native(NativeType::Int)),
            Some(CqlValue::Int(1))
        );
    }

    #[test]
    fn rows_from_before_adoption_are_live_at_version_nil() {
        use crate::catalog::ColumnDef;
        let table = TableDef {
            cql_table: Some("ks.t".into()),
            ..TableDef::new(
                "t",
                "t.1",
                vec![ColumnDef {
                    not_null: true,
                    ..ColumnDef::new("id", SqlType::Int4)
                }],
                vec![0],
            )
        };
        let names = ["id".to_owned(), VERSION.to_owned(), LIVE.to_owned()];
        let old = [Some(CqlValue::Int(1)), None, None];
        let named = Named {
            names: &names,
            values: &old,
        };
        let (_, row) = named.row(&table).unwrap().unwrap();
        assert_eq!(row.version, Uuid::nil());
        assert!(row.live);
        assert_eq!(row.values, vec![Value::Int4(1)]);
        // No key: no partition (ScyllaDB's answer for a missing one).
        let none = [None, None, None];
        let named = Named {
            names: &names,
            values: &none,
        };
        assert!(named.row(&table).unwrap().is_none());
    }

    #[test]
    fn a_mismatched_column_is_reported() {
        assert!(from_cql(&SqlType::Int4, Some(&CqlValue::Text("x".into()))).is_err());
    }
}
