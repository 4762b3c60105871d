//! keyclaim's SQL types and values as Arrow sees them, and back.
//!
//! Each column type has one Arrow type; the text family (varchar, char,
//! uuid, json, jsonb) travels as Utf8 with the SQL type in the field's
//! metadata, so a column passed through a join or a subquery comes back
//! out under its own type. numeric travels as a 128-bit decimal: a
//! `numeric(p, s)` column's at scale `s` (so that sums, minimums, products
//! and the like come out at the scales PostgreSQL shows them, `sum` of a
//! `numeric(10,2)` as `51.50`), with its typmod in the metadata too; an
//! unconstrained numeric at a fixed scale ([`NUMERIC_SCALE`]): Arrow has no
//! per-value scale, so such a value prints without trailing fractional
//! zeros.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
    Float64Builder, Int16Builder, Int32Builder, Int64Builder, ListArray, StringBuilder,
    TimestampMicrosecondBuilder, UInt32Builder,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef, TimeUnit};
use datafusion::common::ScalarValue;
use rust_decimal::Decimal;

use crate::catalog::TableDef;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::{Array, NumericMod, SqlType, Value};

/// The fractional digits a numeric keeps inside the engine.
pub(crate) const NUMERIC_SCALE: i8 = 10;
const NUMERIC_PRECISION: u8 = 38;
/// The field metadata key naming a text-family column's SQL type.
pub(super) const SQL_TYPE: &str = "keyclaim.type";
/// The time zone Arrow timestamps with a zone are kept in.
const UTC: &str = "+00:00";

fn unix_epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date")
}

/// The Arrow type a column of `ty` is read as.
pub(crate) fn arrow_type(ty: &SqlType) -> DataType {
    match ty {
        SqlType::Bool => DataType::Boolean,
        SqlType::Int2 => DataType::Int16,
        SqlType::Int4 => DataType::Int32,
        SqlType::Int8 => DataType::Int64,
        SqlType::Float4 => DataType::Float32,
        SqlType::Float8 => DataType::Float64,
        SqlType::Numeric(m) => DataType::Decimal128(NUMERIC_PRECISION, numeric_scale(m)),
        SqlType::Text
        | SqlType::Varchar(_)
        | SqlType::Char(_)
        | SqlType::Uuid
        | SqlType::Json
        | SqlType::Jsonb => DataType::Utf8,
        SqlType::Bytea => DataType::Binary,
        SqlType::Date => DataType::Date32,
        SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        SqlType::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
        // No column has it (only advisory lock functions return it).
        SqlType::Void => DataType::Null,
        SqlType::Oid => DataType::UInt32,
        SqlType::Array(elem) => DataType::List(list_field(elem)),
    }
}

/// The scale a numeric of typmod `m` is kept at in the engine: its own
/// scale, or [`NUMERIC_SCALE`] when it has none.
fn numeric_scale(m: &Option<NumericMod>) -> i8 {
    m.and_then(|m| i8::try_from(m.scale).ok())
        .filter(|s| (0..=28).contains(s))
        .unwrap_or(NUMERIC_SCALE)
}

/// The element field of an array of `elem`, tagged as a column of `elem`
/// would be, so an array of varchar or uuid keeps its element type.
fn list_field(elem: &SqlType) -> FieldRef {
    tagged(Field::new_list_field(arrow_type(elem), true), elem)
}

fn tagged(field: Field, ty: &SqlType) -> FieldRef {
    Arc::new(match type_tag(ty) {
        Some(tag) => field.with_metadata(HashMap::from([(SQL_TYPE.into(), tag)])),
        None => field,
    })
}

/// The name a text-family type is kept under in field metadata.
fn type_tag(ty: &SqlType) -> Option<String> {
    Some(match ty {
        SqlType::Varchar(None) => "varchar".into(),
        SqlType::Varchar(Some(n)) => format!("varchar({n})"),
        SqlType::Char(n) => format!("char({})", n.unwrap_or(1)),
        SqlType::Uuid => "uuid".into(),
        SqlType::Json => "json".into(),
        SqlType::Jsonb => "jsonb".into(),
        SqlType::Numeric(Some(m)) => format!("numeric({},{})", m.precision, m.scale),
        _ => return None,
    })
}

fn from_tag(tag: &str) -> Option<SqlType> {
    let number = |s: &str| s.trim_end_matches(')').parse::<u32>().ok();
    Some(match tag {
        "varchar" => SqlType::Varchar(None),
        "uuid" => SqlType::Uuid,
        "json" => SqlType::Json,
        "jsonb" => SqlType::Jsonb,
        t if t.starts_with("varchar(") => SqlType::Varchar(Some(number(&t[8..])?)),
        t if t.starts_with("char(") => SqlType::Char(Some(number(&t[5..])?)),
        t if t.starts_with("numeric(") => {
            let (p, s) = t[8..].trim_end_matches(')').split_once(',')?;
            SqlType::Numeric(Some(NumericMod {
                precision: p.parse().ok()?,
                scale: s.parse().ok()?,
            }))
        }
        _ => return None,
    })
}

/// The field metadata key marking a list as a PostgreSQL vector type.
const VECTOR: &str = "keyclaim.vector";

/// `field`, a list, marked as the vector type `name` (`int2vector`,
/// `oidvector`): a list inside the engine (`unnest(indkey)`), and its
/// space-separated text to the client, as PostgreSQL sends it (`1 2`;
/// SQLAlchemy splits `indoption`).
pub(crate) fn vector_field(field: Field, name: &str) -> Field {
    field.with_metadata(HashMap::from([(VECTOR.to_owned(), name.to_owned())]))
}

/// Whether a result field is a vector type's (see [`vector_field`]).
pub(crate) fn is_vector(field: &Field) -> bool {
    field.metadata().contains_key(VECTOR) && matches!(field.data_type(), DataType::List(_))
}

/// A vector's value as PostgreSQL's text for it: its items, space-separated.
pub(crate) fn vector_text(s: ScalarValue) -> SqlResult<Value> {
    let ScalarValue::List(list) = s else {
        return Ok(Value::Null);
    };
    if datafusion::arrow::array::Array::is_null(list.as_ref(), 0) {
        return Ok(Value::Null);
    }
    let items = list.value(0);
    let mut words = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        let item = ScalarValue::try_from_array(&items, i)
            .map_err(|e| SqlError::internal(e.to_string()))?;
        words.push(item.to_string());
    }
    Ok(Value::Text(words.join(" ")))
}

/// A table's columns as an Arrow schema.
pub(crate) fn table_schema(t: &TableDef) -> SchemaRef {
    let fields: Vec<FieldRef> = t
        .visible()
        .iter()
        .map(|c| tagged(Field::new(c.name.clone(), arrow_type(&c.ty), true), &c.ty))
        .collect();
    Arc::new(Schema::new(fields))
}

/// The SQL type a field's metadata names, if the field can be one: a cast
/// keeps its operand's metadata, and `price::text` is text, `code::numeric`
/// and `price::numeric(4,1)` are not the column's type.
fn tagged_type(field: &Field) -> Option<SqlType> {
    let ty = field.metadata().get(SQL_TYPE).and_then(|t| from_tag(t))?;
    let fits = match ty {
        SqlType::Numeric(_) => arrow_type(&ty) == *field.data_type(),
        _ => !field.data_type().is_numeric(),
    };
    fits.then_some(ty)
}

/// The SQL type a result field is sent as.
pub(crate) fn sql_type(field: &Field) -> SqlResult<SqlType> {
    Ok(match field.data_type() {
        DataType::Boolean => SqlType::Bool,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => SqlType::Int2,
        DataType::Int32 | DataType::UInt16 => SqlType::Int4,
        // UInt64 is what DataFusion's row_number, rank and dense_rank
        // return, which PostgreSQL types bigint.
        DataType::Int64 | DataType::UInt64 => SqlType::Int8,
        // Only the catalog's OIDs are 32-bit unsigned in the engine.
        DataType::UInt32 => SqlType::Oid,
        DataType::Float16 | DataType::Float32 => SqlType::Float4,
        DataType::Float64 => SqlType::Float8,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => tagged_type(field).unwrap_or(SqlType::Numeric(None)),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
            tagged_type(field).unwrap_or(SqlType::Text)
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => SqlType::Bytea,
        DataType::Date32 | DataType::Date64 => SqlType::Date,
        DataType::Timestamp(_, None) => SqlType::Timestamp,
        DataType::Timestamp(_, Some(_)) => SqlType::TimestampTz,
        // A vector (`int2vector`, `oidvector`) goes out as its text.
        DataType::List(_) if is_vector(field) => SqlType::Text,
        // An array (array_agg, the catalog's name[] and oid[] columns) is
        // an array of its element's type.
        DataType::List(elem) | DataType::LargeList(elem) => match sql_type(elem)? {
            SqlType::Array(_) => {
                return Err(SqlError::unsupported(
                    "multidimensional arrays are not supported",
                    "keyclaim supports one-dimensional arrays",
                ))
            }
            elem => SqlType::array_of(elem),
        },
        other => {
            return Err(SqlError::unsupported(
                format!("a result of type {other} is not supported"),
                "cast the expression to a column type keyclaim supports",
            ))
        }
    })
}

/// One column of rows as an Arrow array of `ty`'s Arrow type.
pub(crate) fn column_array<'a>(
    ty: &SqlType,
    values: impl ExactSizeIterator<Item = &'a Value>,
) -> SqlResult<ArrayRef> {
    fn bad(ty: &SqlType, v: &Value) -> SqlError {
        SqlError::internal(format!(
            "a stored {v:?} in a column of type {}",
            ty.pg_name()
        ))
    }
    let n = values.len();
    macro_rules! build {
        ($builder:expr, $($pat:pat => $e:expr),+) => {{
            let mut b = $builder;
            for v in values {
                match v {
                    Value::Null => b.append_null(),
                    $($pat => b.append_value($e),)+
                    other => return Err(bad(ty, other)),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match ty {
        SqlType::Bool => build!(BooleanBuilder::with_capacity(n), Value::Bool(x) => *x),
        SqlType::Int2 => build!(Int16Builder::with_capacity(n), Value::Int2(x) => *x),
        SqlType::Int4 => build!(Int32Builder::with_capacity(n), Value::Int4(x) => *x),
        SqlType::Int8 => build!(Int64Builder::with_capacity(n), Value::Int8(x) => *x),
        SqlType::Float4 => build!(Float32Builder::with_capacity(n), Value::Float4(x) => *x),
        SqlType::Float8 => build!(Float64Builder::with_capacity(n), Value::Float8(x) => *x),
        SqlType::Numeric(m) => {
            let scale = numeric_scale(m);
            let b = Decimal128Builder::with_capacity(n)
                .with_precision_and_scale(NUMERIC_PRECISION, scale)
                .map_err(|e| SqlError::internal(e.to_string()))?;
            build!(b, Value::Numeric(d) => decimal_to_i128(d, scale)?)
        }
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => {
            build!(StringBuilder::with_capacity(n, n * 16), Value::Text(s) => s)
        }
        SqlType::Json | SqlType::Jsonb => {
            build!(StringBuilder::with_capacity(n, n * 16), Value::Json(s) => s)
        }
        SqlType::Uuid => {
            build!(StringBuilder::with_capacity(n, n * 36), Value::Uuid(u) => u.to_string())
        }
        SqlType::Bytea => build!(BinaryBuilder::with_capacity(n, n * 16), Value::Bytea(b) => b),
        SqlType::Date => {
            build!(Date32Builder::with_capacity(n), Value::Date(d) => (*d - unix_epoch()).num_days() as i32)
        }
        SqlType::Timestamp => build!(
            TimestampMicrosecondBuilder::with_capacity(n),
            Value::Timestamp(t) => t.and_utc().timestamp_micros()
        ),
        SqlType::TimestampTz => build!(
            TimestampMicrosecondBuilder::with_capacity(n).with_timezone(UTC),
            Value::TimestampTz(t) => t.timestamp_micros()
        ),
        SqlType::Void => Arc::new(datafusion::arrow::array::NullArray::new(n)) as ArrayRef,
        SqlType::Oid => {
            build!(UInt32Builder::with_capacity(n), Value::Int8(x) => u32::try_from(*x).map_err(|_| bad(ty, &Value::Int8(*x)))?)
        }
        SqlType::Array(elem) => {
            // The rows' elements in one child array, each row a slice of it.
            let mut offsets = Vec::with_capacity(n + 1);
            let mut present = Vec::with_capacity(n);
            let mut items: Vec<&Value> = Vec::new();
            offsets.push(0i32);
            for v in values {
                match v {
                    Value::Null => present.push(false),
                    Value::Array(a) => {
                        items.extend(a.items.iter());
                        present.push(true);
                    }
                    other => return Err(bad(ty, other)),
                }
                offsets.push(i32::try_from(items.len()).map_err(|_| {
                    SqlError::new(
                        sqlstate::PROGRAM_LIMIT_EXCEEDED,
                        "array size exceeds the maximum allowed",
                    )
                })?);
            }
            let child = column_array(elem, items.into_iter())?;
            let list = ListArray::try_new(
                list_field(elem),
                OffsetBuffer::new(offsets.into()),
                child,
                Some(NullBuffer::from(present)),
            )
            .map_err(|e| SqlError::internal(e.to_string()))?;
            Arc::new(list) as ArrayRef
        }
    })
}

/// A numeric as the engine's 128-bit integer at `scale`.
fn decimal_to_i128(d: &Decimal, scale: i8) -> SqlResult<i128> {
    let mut d = *d;
    d.rescale(scale as u32);
    if d.scale() != scale as u32 {
        return Err(out_of_range());
    }
    Ok(d.mantissa())
}

fn out_of_range() -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric field overflow",
    )
}

/// A value as DataFusion's scalar of its own Arrow type.
pub(crate) fn to_scalar(v: &Value, ty: &SqlType) -> SqlResult<ScalarValue> {
    let dt = arrow_type(ty);
    if v.is_null() {
        return ScalarValue::try_from(&dt).map_err(|e| SqlError::internal(e.to_string()));
    }
    let array = column_array(ty, std::iter::once(v))?;
    ScalarValue::try_from_array(&array, 0).map_err(|e| SqlError::internal(e.to_string()))
}

/// The SQL type a scalar of Arrow type `dt` is read as (None: no counterpart).
pub(crate) fn sql_type_of(dt: &DataType) -> Option<SqlType> {
    sql_type(&Field::new("", dt.clone(), true)).ok()
}

/// A result cell as the value of `ty`, the column's SQL type.
pub(crate) fn from_scalar(s: ScalarValue, ty: &SqlType) -> SqlResult<Value> {
    use ScalarValue as S;
    if s.is_null() {
        return Ok(Value::Null);
    }
    let micros = |v: i64, unit: TimeUnit| match unit {
        TimeUnit::Second => v.saturating_mul(1_000_000),
        TimeUnit::Millisecond => v.saturating_mul(1_000),
        TimeUnit::Microsecond => v,
        TimeUnit::Nanosecond => v / 1_000,
    };
    let timestamp = |v: i64, unit: TimeUnit| -> SqlResult<DateTime<Utc>> {
        DateTime::from_timestamp_micros(micros(v, unit)).ok_or_else(|| {
            SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
        })
    };
    let v = match s {
        S::Boolean(Some(b)) => Value::Bool(b),
        S::Int8(Some(x)) => Value::Int2(x.into()),
        S::Int16(Some(x)) => Value::Int2(x),
        S::UInt8(Some(x)) => Value::Int2(x.into()),
        S::Int32(Some(x)) => Value::Int4(x),
        S::UInt16(Some(x)) => Value::Int4(x.into()),
        S::Int64(Some(x)) => Value::Int8(x),
        S::UInt32(Some(x)) => Value::Int8(x.into()),
        S::UInt64(Some(x)) => Value::Int8(i64::try_from(x).map_err(|_| {
            SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range")
        })?),
        S::Float32(Some(x)) => Value::Float4(x),
        S::Float64(Some(x)) => Value::Float8(x),
        S::Decimal128(Some(m), _, scale) => Value::Numeric(numeric(m, scale, ty)?),
        S::Decimal64(Some(m), _, scale) => Value::Numeric(numeric(m.into(), scale, ty)?),
        S::Decimal32(Some(m), _, scale) => Value::Numeric(numeric(m.into(), scale, ty)?),
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => match ty {
            SqlType::Json | SqlType::Jsonb => Value::Json(s),
            SqlType::Uuid => Value::parse_text(ty, &s)?,
            _ => Value::Text(s),
        },
        S::Binary(Some(b)) | S::LargeBinary(Some(b)) | S::BinaryView(Some(b)) => Value::Bytea(b),
        S::Date32(Some(d)) => Value::Date(unix_epoch() + chrono::Duration::days(d.into())),
        S::Date64(Some(ms)) => Value::Date(timestamp(ms, TimeUnit::Millisecond)?.date_naive()),
        S::TimestampSecond(Some(v), tz) => stamp(timestamp(v, TimeUnit::Second)?, tz.is_some()),
        S::TimestampMillisecond(Some(v), tz) => {
            stamp(timestamp(v, TimeUnit::Millisecond)?, tz.is_some())
        }
        S::TimestampMicrosecond(Some(v), tz) => {
            stamp(timestamp(v, TimeUnit::Microsecond)?, tz.is_some())
        }
        S::TimestampNanosecond(Some(v), tz) => {
            stamp(timestamp(v, TimeUnit::Nanosecond)?, tz.is_some())
        }
        // An array's elements as values of its element type; one sent as
        // text (a column whose type is not an array) becomes its text form
        // in the cast below.
        S::List(list) => {
            let elem = match ty {
                SqlType::Array(elem) => (**elem).clone(),
                _ => sql_type_of(&list.value_type()).unwrap_or(SqlType::Text),
            };
            let items = list.value(0);
            let values = (0..items.len())
                .map(|i| {
                    let s = ScalarValue::try_from_array(&items, i)
                        .map_err(|e| SqlError::internal(e.to_string()))?;
                    from_scalar(s, &elem)
                })
                .collect::<SqlResult<Vec<_>>>()?;
            Array::value(elem, values)
        }
        other => {
            return Err(SqlError::unsupported(
                format!("a result of type {} is not supported", other.data_type()),
                "cast the expression to a column type keyclaim supports",
            ))
        }
    };
    // numeric(p, s) has shaped the value already (`numeric`): a cast
    // would round what a UNION's other side brings.
    if matches!((&v, ty), (Value::Numeric(_), SqlType::Numeric(Some(_)))) {
        return Ok(v);
    }
    // A value whose Arrow type differs from the column's (an integer in a
    // numeric column of a UNION, say) takes the column's type.
    if matches!(
        (&v, ty),
        (
            Value::Text(_),
            SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_)
        )
    ) {
        return Ok(v);
    }
    v.cast_to(ty)
}

fn stamp(t: DateTime<Utc>, zoned: bool) -> Value {
    if zoned {
        Value::TimestampTz(t)
    } else {
        Value::Timestamp(t.naive_utc())
    }
}

/// A decimal out of the engine, for a result field of type `ty`. One at
/// the engine's own scale is a stored numeric (or the sum, min or max of
/// some): PostgreSQL would print it at its input's scale, which Arrow does
/// not keep, so it prints with the scale of its column's typmod when the
/// field carries one, else without trailing zeros. Padded, never rounded:
/// a UNION gives the other side's values the first side's field. Any other
/// scale is the literal's, the computation's or the cast's.
fn numeric(mantissa: i128, scale: i8, ty: &SqlType) -> SqlResult<Decimal> {
    if !(0..=28).contains(&scale) {
        return Err(out_of_range());
    }
    let d =
        Decimal::try_from_i128_with_scale(mantissa, scale as u32).map_err(|_| out_of_range())?;
    if scale != NUMERIC_SCALE {
        return Ok(d);
    }
    let mut d = d.normalize();
    if let SqlType::Numeric(Some(m)) = ty {
        let shown = u32::try_from(m.scale).unwrap_or(0);
        if d.scale() < shown {
            d.rescale(shown);
        }
    }
    Ok(d)
}
