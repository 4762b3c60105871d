//! `generate_series` as PostgreSQL types it: of integers (int4 when every
//! argument is, else int8), of numerics, and of timestamps by an interval
//! (a date counts as a timestamp with time zone, as PostgreSQL casts it).
//!
//! It gives the whole series as one list, which `from_functions` unnests
//! into rows (DataFusion's own generate_series gives int8 only, and its
//! table function takes constants only, no parameters). The list is held
//! in memory at once, so a series is limited to [`MAX_ROWS`] values, where
//! PostgreSQL streams any number.

use std::sync::Arc;

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::types::TimestampMicrosecondType;
use datafusion::arrow::array::{
    new_empty_array, Array, ArrayRef, Decimal128Array, Int32Array, Int64Array, ListArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::concat;
use datafusion::arrow::datatypes::{DataType, Field, IntervalMonthDayNano, IntervalUnit, TimeUnit};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::{sqlstate, SqlError};

/// The function's name: it replaces DataFusion's array function of that
/// name, which a select list would give a list where PostgreSQL gives rows.
pub(crate) const NAME: &str = "generate_series";

/// The most values one series holds.
pub(crate) const MAX_ROWS: i128 = 10_000_000;

/// The time zone timestamps with a zone are computed in (the engine's).
const UTC: &str = "+00:00";

/// What a call's argument types make of it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int4,
    Int8,
    /// Computed at scale `work` (every argument's), given at scale `out`
    /// (start's and step's: the values are sums of those).
    Numeric {
        work: i8,
        out: i8,
    },
    Timestamp {
        zoned: bool,
    },
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

fn is_int4(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16
    )
}

fn is_int8(t: &DataType) -> bool {
    matches!(t, DataType::Int64 | DataType::UInt32)
}

/// A decimal's scale, 0 for an integer; None for anything else.
fn scale(t: &DataType) -> Option<i8> {
    match t {
        DataType::Decimal32(_, s)
        | DataType::Decimal64(_, s)
        | DataType::Decimal128(_, s)
        | DataType::Decimal256(_, s) => Some(*s),
        t if is_int4(t) || is_int8(t) => Some(0),
        _ => None,
    }
}

/// Whether a timestamp argument has a zone; None when not a timestamp.
fn zoned(t: &DataType) -> Option<bool> {
    match t {
        DataType::Timestamp(_, tz) => Some(tz.is_some()),
        DataType::Date32 | DataType::Date64 => Some(true),
        _ => None,
    }
}

/// Which form a call takes, as PostgreSQL resolves it; a text argument is
/// an untyped literal that takes the others' type.
fn kind(args: &[DataType]) -> Option<Kind> {
    if !(2..=3).contains(&args.len()) {
        return None;
    }
    let typed: Vec<&DataType> = args.iter().filter(|t| !is_text(t)).collect();
    if typed.is_empty() {
        return None;
    }
    // Only smallints: PostgreSQL finds int4, int8 and numeric forms
    // equally good (`no_form`).
    let small = |t: &&DataType| matches!(t, DataType::Int8 | DataType::Int16 | DataType::UInt8);
    if typed.iter().all(small) {
        return None;
    }
    if typed.iter().all(|t| is_int4(t)) {
        return Some(Kind::Int4);
    }
    if typed.iter().all(|t| is_int4(t) || is_int8(t)) {
        return Some(Kind::Int8);
    }
    if typed.iter().all(|t| scale(t).is_some()) {
        let of = |t: Option<&DataType>| t.and_then(scale).unwrap_or(0).max(0);
        let work = args.iter().map(|t| of(Some(t))).max().unwrap_or(0);
        let out = of(args.first()).max(of(args.get(2)));
        return Some(Kind::Numeric { work, out });
    }
    if args.len() != 3 || !(is_text(&args[2]) || matches!(args[2], DataType::Interval(_))) {
        return None;
    }
    match (zoned(&args[0]), zoned(&args[1])) {
        (Some(a), Some(b)) => Some(Kind::Timestamp { zoned: a || b }),
        (Some(a), None) if is_text(&args[1]) => Some(Kind::Timestamp { zoned: a }),
        (None, Some(b)) if is_text(&args[0]) => Some(Kind::Timestamp { zoned: b }),
        _ => None,
    }
}

fn timestamp_type(zoned: bool) -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, zoned.then(|| UTC.into()))
}

impl Kind {
    /// The type of the series' values.
    fn item(self) -> DataType {
        match self {
            Kind::Int4 => DataType::Int32,
            Kind::Int8 => DataType::Int64,
            Kind::Numeric { out, .. } => DataType::Decimal128(38, out),
            Kind::Timestamp { zoned } => timestamp_type(zoned),
        }
    }

    /// The types the arguments are cast to.
    fn arguments(self, given: &[DataType]) -> Vec<DataType> {
        given
            .iter()
            .enumerate()
            .map(|(i, t)| match self {
                Kind::Int4 => DataType::Int32,
                Kind::Int8 => DataType::Int64,
                // Read as they are (their scales matter), an untyped
                // literal as a numeric.
                Kind::Numeric { .. } if is_text(t) => DataType::Decimal128(38, 10),
                Kind::Numeric { .. } => t.clone(),
                Kind::Timestamp { .. } if i == 2 => DataType::Interval(IntervalUnit::MonthDayNano),
                Kind::Timestamp { zoned } => timestamp_type(zoned),
            })
            .collect()
    }
}

/// PostgreSQL's name for an argument type, for the error a call of no
/// form gets.
fn pg_name(t: &DataType) -> String {
    match t {
        t if is_text(t) => "unknown".into(),
        t => super::types::sql_type_of(t)
            .map(|s| s.pg_name().to_string())
            .unwrap_or_else(|| t.to_string()),
    }
}

/// The error for a call of no form: none matches, or (untyped literals,
/// smallints) several do and PostgreSQL picks none.
fn no_form(args: &[DataType]) -> SqlError {
    let names: Vec<String> = args.iter().map(pg_name).collect();
    let call = format!("{NAME}({})", names.join(", "));
    let small = |t: &DataType| {
        is_text(t) || matches!(t, DataType::Int8 | DataType::Int16 | DataType::UInt8)
    };
    if (2..=3).contains(&args.len()) && args.iter().all(small) {
        return SqlError::new(
            sqlstate::AMBIGUOUS_FUNCTION,
            format!("function {call} is not unique"),
        )
        .with_hint(
            "Could not choose a best candidate function. You might need to add explicit type casts.",
        );
    }
    SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function {call} does not exist"),
    )
    .with_hint(
        "No function matches the given name and argument types. You might need to add explicit type casts.",
    )
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct GenerateSeries {
    signature: Signature,
}

impl GenerateSeries {
    pub fn new() -> GenerateSeries {
        GenerateSeries {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for GenerateSeries {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, given: &[DataType]) -> DfResult<Vec<DataType>> {
        // A call of no form keeps its types: return_type reports it, in
        // PostgreSQL's words (an error here would lose them).
        Ok(kind(given).map_or_else(|| given.to_vec(), |k| k.arguments(given)))
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        let k = kind(args).ok_or_else(|| external(no_form(args)))?;
        Ok(DataType::List(Arc::new(Field::new_list_field(
            k.item(),
            true,
        ))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let types: Vec<DataType> = args.args.iter().map(|a| a.data_type()).collect();
        let k = kind(&types).ok_or_else(|| external(SqlError::internal("generate_series")))?;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let rows = if scalar { 1 } else { args.number_rows };
        let mut lengths = Vec::with_capacity(rows);
        let mut parts = Vec::with_capacity(rows);
        for r in 0..rows {
            let row = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, r))
                .collect::<DfResult<Vec<_>>>()?;
            let part = series(k, &row).map_err(external)?;
            lengths.push(part.len());
            parts.push(part);
        }
        let item = k.item();
        let values = match parts.len() {
            0 => new_empty_array(&item),
            1 => parts.remove(0),
            _ => {
                let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
                concat(&refs)?
            }
        };
        let list = ListArray::try_new(
            Arc::new(Field::new_list_field(item, true)),
            OffsetBuffer::from_lengths(lengths),
            values,
            None,
        )?;
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::List(Arc::new(list))));
        }
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

fn zero_step() -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        "step size cannot equal zero",
    )
}

fn too_long() -> SqlError {
    SqlError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!("generate_series would return more than {MAX_ROWS} rows"),
    )
    .with_hint("generate the series in smaller ranges")
}

/// How many values `start, start + step, ...` has up to `stop`.
fn count(start: i128, stop: i128, step: i128) -> Result<i128, SqlError> {
    if step == 0 {
        return Err(zero_step());
    }
    let n = if (step > 0 && start <= stop) || (step < 0 && start >= stop) {
        (stop - start) / step + 1
    } else {
        0
    };
    if n > MAX_ROWS {
        return Err(too_long());
    }
    Ok(n)
}

fn int(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int32(n) => n.map(i64::from),
        ScalarValue::Int64(n) => *n,
        _ => None,
    }
}

/// A decimal's (or integer's) digits at scale `to`.
fn decimal(v: &ScalarValue, to: i8) -> Result<Option<i128>, SqlError> {
    let (m, s) = match v {
        ScalarValue::Decimal128(Some(m), _, s) => (*m, *s),
        ScalarValue::Decimal64(Some(m), _, s) => (i128::from(*m), *s),
        ScalarValue::Decimal32(Some(m), _, s) => (i128::from(*m), *s),
        v => match int(v).or_else(|| match v {
            ScalarValue::Int16(n) => n.map(i64::from),
            ScalarValue::Int8(n) => n.map(i64::from),
            ScalarValue::UInt8(n) => n.map(i64::from),
            ScalarValue::UInt16(n) => n.map(i64::from),
            ScalarValue::UInt32(n) => n.map(i64::from),
            _ => None,
        }) {
            Some(n) => (i128::from(n), 0),
            None => return Ok(None),
        },
    };
    let up = u32::try_from(i32::from(to) - i32::from(s))
        .ok()
        .and_then(|d| 10i128.checked_pow(d))
        .and_then(|f| m.checked_mul(f));
    up.map(Some).ok_or_else(|| {
        SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            "numeric field overflow",
        )
    })
}

/// One call's series; empty when an argument is NULL (the function is
/// strict).
fn series(k: Kind, args: &[ScalarValue]) -> Result<ArrayRef, SqlError> {
    let empty = || new_empty_array(&k.item());
    match k {
        Kind::Int4 | Kind::Int8 => {
            let step = match args.get(2) {
                Some(s) => int(s),
                None => Some(1),
            };
            let (Some(start), Some(stop), Some(step)) = (int(&args[0]), int(&args[1]), step) else {
                return Ok(empty());
            };
            let (start, step) = (i128::from(start), i128::from(step));
            let n = count(start, i128::from(stop), step)?;
            // Every value lies between start and stop: none overflows.
            let values = (0..n).map(move |i| start + i * step);
            Ok(if k == Kind::Int4 {
                Arc::new(Int32Array::from_iter_values(values.map(|v| v as i32)))
            } else {
                Arc::new(Int64Array::from_iter_values(values.map(|v| v as i64)))
            })
        }
        Kind::Numeric { work, out } => {
            let step = match args.get(2) {
                Some(s) => decimal(s, work)?,
                None => decimal(&ScalarValue::Int64(Some(1)), work)?,
            };
            let (Some(start), Some(stop), Some(step)) =
                (decimal(&args[0], work)?, decimal(&args[1], work)?, step)
            else {
                return Ok(empty());
            };
            let n = count(start, stop, step)?;
            // Start and step have at most `out` digits after the point:
            // so has every sum of them.
            let down = 10i128.pow(u32::try_from(work - out).unwrap_or(0));
            let values = (0..n).map(move |i| (start + i * step) / down);
            let array = Decimal128Array::from_iter_values(values)
                .with_precision_and_scale(38, out)
                .map_err(|e| SqlError::internal(e.to_string()))?;
            Ok(Arc::new(array))
        }
        Kind::Timestamp { zoned } => {
            let stamp = |v: &ScalarValue| match v {
                ScalarValue::TimestampMicrosecond(t, _) => *t,
                _ => None,
            };
            let step = match &args[2] {
                ScalarValue::IntervalMonthDayNano(s) => *s,
                _ => None,
            };
            let (Some(start), Some(stop), Some(step)) = (stamp(&args[0]), stamp(&args[1]), step)
            else {
                return Ok(empty());
            };
            let values = timestamps(start, stop, step)?;
            let array = TimestampMicrosecondArray::from(values);
            Ok(Arc::new(if zoned {
                array.with_timezone(UTC)
            } else {
                array
            }))
        }
    }
}

/// Timestamps (microseconds) from `start` by `step` while not past
/// `stop`, each the previous plus the step, as PostgreSQL adds them
/// (Jan 31 + 1 month is Feb 29, then Mar 29).
fn timestamps(start: i64, stop: i64, step: IntervalMonthDayNano) -> Result<Vec<i64>, SqlError> {
    // PostgreSQL orders intervals by their span with 30-day months.
    const DAY: i128 = 86_400_000_000;
    let span = i128::from(step.months) * 30 * DAY
        + i128::from(step.days) * DAY
        + i128::from(step.nanoseconds) / 1_000;
    if span == 0 {
        return Err(zero_step());
    }
    let tz: Tz = UTC
        .parse()
        .map_err(|_| SqlError::internal("the UTC time zone"))?;
    let mut out = Vec::new();
    let mut at = start;
    while (span > 0 && at <= stop) || (span < 0 && at >= stop) {
        if out.len() as i128 >= MAX_ROWS {
            return Err(too_long());
        }
        out.push(at);
        match TimestampMicrosecondType::add_month_day_nano(at, step, tz) {
            Some(next) => at = next,
            None => break,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_follow_postgres_resolution() {
        use DataType as D;
        assert_eq!(kind(&[D::Int32, D::Int32]), Some(Kind::Int4));
        assert_eq!(kind(&[D::Int32, D::Int64, D::Int32]), Some(Kind::Int8));
        assert_eq!(kind(&[D::Int32, D::Utf8]), Some(Kind::Int4));
        assert_eq!(
            kind(&[D::Decimal128(2, 1), D::Int32, D::Decimal128(3, 2)]),
            Some(Kind::Numeric { work: 2, out: 2 })
        );
        assert_eq!(
            kind(&[D::Date32, D::Utf8, D::Utf8]),
            Some(Kind::Timestamp { zoned: true })
        );
        assert_eq!(
            kind(&[timestamp_type(false), D::Utf8, D::Utf8]),
            Some(Kind::Timestamp { zoned: false })
        );
        assert_eq!(kind(&[D::Int32]), None);
        assert_eq!(kind(&[D::Utf8, D::Utf8]), None);
        assert_eq!(kind(&[D::Float64, D::Int32]), None);
        assert_eq!(kind(&[D::Int16, D::Int16]), None);
        assert_eq!(no_form(&[D::Int16, D::Utf8]).code, "42725");
        assert_eq!(
            no_form(&[D::Int32]).message,
            "function generate_series(integer) does not exist"
        );
    }

    #[test]
    fn integer_series_stop_before_overflow_and_refuse_a_zero_step() {
        let max = i128::from(i32::MAX);
        assert_eq!(count(1, max, max).unwrap(), 1);
        assert_eq!(count(max - 1, max, 1).unwrap(), 2);
        assert_eq!(count(3, 1, 1).unwrap(), 0);
        assert_eq!(count(3, 1, -1).unwrap(), 3);
        assert_eq!(count(1, 3, 0).unwrap_err().code, "22023");
        assert_eq!(count(0, MAX_ROWS, 1).unwrap_err().code, "54000");
    }

    #[test]
    fn timestamps_add_the_step_to_the_previous_value() {
        let day = 86_400_000_000i64;
        let month = IntervalMonthDayNano::new(1, 0, 0);
        // 2024-01-31 to 2024-04-01 by a month: Jan 31, Feb 29, Mar 29.
        let jan31 = 19_753 * day;
        let apr1 = jan31 + 61 * day;
        let got = timestamps(jan31, apr1, month).unwrap();
        assert_eq!(got, [jan31, jan31 + 29 * day, jan31 + 58 * day]);
        let back = IntervalMonthDayNano::new(0, -1, 0);
        assert_eq!(timestamps(0, day, back).unwrap(), Vec::<i64>::new());
        let zero = IntervalMonthDayNano::new(1, -30, 0);
        assert_eq!(timestamps(0, day, zero).unwrap_err().code, "22023");
    }

    #[test]
    fn numeric_series_keep_start_and_step_scale() {
        let k = Kind::Numeric { work: 2, out: 1 };
        let got = series(
            k,
            &[
                ScalarValue::Decimal128(Some(15), 2, 1),
                ScalarValue::Decimal128(Some(355), 3, 2),
                ScalarValue::Int32(Some(1)),
            ],
        )
        .unwrap();
        let got = got.as_any().downcast_ref::<Decimal128Array>().unwrap();
        assert_eq!(got.values().to_vec(), [15, 25, 35]);
        assert_eq!(got.scale(), 1);
    }
}
