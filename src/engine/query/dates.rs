//! PostgreSQL's date/time field functions, with its result types and
//! errors, where DataFusion's differ (its `EXTRACT` of seconds drops the
//! fraction and is no numeric, its `date_trunc` of a date is a timestamp
//! without zone, and `AT TIME ZONE` converts the wrong way):
//!
//! - `pg_extract(unit, x)`: `EXTRACT(unit FROM x)` (`rules::postgres_operators`
//!   rewrites it), a numeric at PostgreSQL's scale (6 for `second` and a
//!   timestamp's `epoch`, 3 for `milliseconds`, else 0);
//! - `date_part(unit, x)`: the same as double precision, a date read as a
//!   timestamp;
//! - `date_trunc(unit, x)`: a timestamp (with zone for a date or a
//!   timestamptz) cut down to the unit;
//! - `timezone(zone, x)`: `x AT TIME ZONE zone`. Sessions are always in
//!   UTC (`session::settings`), and so are the zones accepted here.

use std::sync::Arc;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::{plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::row_fn::{map_rows, sql_err, text_of};
use crate::error::{sqlstate, SqlError, SqlResult};

/// The time zone Arrow timestamps with a zone carry in the engine.
const UTC: &str = "+00:00";

/// The name of the function `EXTRACT(unit FROM x)` becomes.
pub(crate) const EXTRACT: &str = "pg_extract";

/// The functions, to register with the engine (over DataFusion's own
/// `date_part` and `date_trunc`).
pub(crate) fn functions() -> Vec<ScalarUDF> {
    [
        Kind::Extract,
        Kind::DatePart,
        Kind::DateTrunc,
        Kind::TimeZone,
    ]
    .into_iter()
    .map(|kind| {
        // DataFusion's own under the same aliases, so that no copy of
        // them is left in the registry (a session state built from
        // another registers every function again, in any order).
        let aliases = match kind {
            Kind::DatePart => vec!["datepart".to_owned()],
            Kind::DateTrunc => vec!["datetrunc".to_owned()],
            Kind::Extract | Kind::TimeZone => Vec::new(),
        };
        ScalarUDF::from(DateFn {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
            aliases,
        })
    })
    .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Extract,
    DatePart,
    DateTrunc,
    TimeZone,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DateFn {
    kind: Kind,
    signature: Signature,
    aliases: Vec<String>,
}

/// A unit of `EXTRACT` / `date_trunc`, as PostgreSQL spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Dow,
    IsoDow,
    Doy,
    IsoYear,
    Epoch,
    Julian,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

impl Unit {
    fn named(name: &str) -> Option<Unit> {
        use Unit::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => Microseconds,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => Milliseconds,
            "second" | "seconds" | "s" | "sec" | "secs" => Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Hour,
            "day" | "days" | "d" => Day,
            "week" | "weeks" | "w" => Week,
            "month" | "months" | "mon" | "mons" => Month,
            "quarter" | "qtr" => Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => Year,
            "decade" | "decades" | "dec" | "decs" => Decade,
            "century" | "centuries" | "c" | "cent" => Century,
            "millennium" | "millennia" | "mil" | "mils" => Millennium,
            "dow" => Dow,
            "isodow" => IsoDow,
            "doy" => Doy,
            "isoyear" => IsoYear,
            "epoch" => Epoch,
            "julian" | "j" => Julian,
            "timezone" => Timezone,
            "timezone_h" | "timezone_hour" => TimezoneHour,
            "timezone_m" | "timezone_minute" => TimezoneMinute,
            _ => return None,
        })
    }
}

/// The kind of value a unit is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Date,
    Timestamp,
    TimestampTz,
}

impl Input {
    fn of(dt: &DataType) -> Option<Input> {
        match dt {
            DataType::Date32 | DataType::Date64 => Some(Input::Date),
            DataType::Timestamp(_, None) => Some(Input::Timestamp),
            DataType::Timestamp(_, Some(_)) => Some(Input::TimestampTz),
            _ => None,
        }
    }

    fn pg_name(self) -> &'static str {
        match self {
            Input::Date => "date",
            Input::Timestamp => "timestamp without time zone",
            Input::TimestampTz => "timestamp with time zone",
        }
    }

    fn arrow(self) -> DataType {
        match self {
            Input::Date => DataType::Date32,
            Input::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            Input::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
        }
    }
}

/// The unit named by `text`, checked against what `input` has, with
/// PostgreSQL's errors.
fn unit(text: &str, input: Input, truncating: bool) -> SqlResult<Unit> {
    let text = text.to_ascii_lowercase();
    let Some(unit) = Unit::named(&text) else {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "unit \"{text}\" not recognized for type {}",
                input.pg_name()
            ),
        ));
    };
    use Unit::*;
    let not_recognized = || {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "unit \"{text}\" not recognized for type {}",
                input.pg_name()
            ),
        )
    };
    let supported = match (truncating, input) {
        // date_trunc does not know the units that are no span of time.
        (true, _) => {
            if matches!(
                unit,
                Dow | IsoDow
                    | Doy
                    | IsoYear
                    | Epoch
                    | Julian
                    | Timezone
                    | TimezoneHour
                    | TimezoneMinute
            ) {
                return Err(not_recognized());
            }
            true
        }
        (false, Input::Date) => !matches!(
            unit,
            Microseconds
                | Milliseconds
                | Second
                | Minute
                | Hour
                | Timezone
                | TimezoneHour
                | TimezoneMinute
        ),
        (false, Input::Timestamp) => !matches!(unit, Timezone | TimezoneHour | TimezoneMinute),
        (false, Input::TimestampTz) => true,
    };
    if !supported {
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("unit \"{text}\" not supported for type {}", input.pg_name()),
        ));
    }
    if unit == Julian && input != Input::Date {
        return Err(SqlError::unsupported(
            format!("unit \"julian\" of a {} is not supported", input.pg_name()),
            "extract the julian day of the value cast to date",
        ));
    }
    Ok(unit)
}

/// The scale PostgreSQL gives `EXTRACT(unit FROM x)`.
fn extract_scale(unit: Unit, input: Input) -> i8 {
    match (unit, input) {
        (Unit::Second, _) => 6,
        (Unit::Epoch, Input::Date) => 0,
        (Unit::Epoch, _) => 6,
        (Unit::Milliseconds, _) => 3,
        _ => 0,
    }
}

fn epoch() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(1970, 1, 1)
        .expect("a valid date")
        .and_hms_opt(0, 0, 0)
        .expect("a valid time")
}

/// PostgreSQL's year of a date: 1 BC is year -1 (chrono's year 0).
fn pg_year(year: i32) -> i64 {
    let y = i64::from(year);
    if y <= 0 {
        y - 1
    } else {
        y
    }
}

/// The value of `unit` in `t`, as a decimal mantissa at `extract_scale`.
fn field(unit: Unit, t: NaiveDateTime, input: Input) -> SqlResult<i128> {
    use Unit::*;
    let micros_of_minute =
        i128::from(t.second()) * 1_000_000 + i128::from(t.nanosecond() / 1_000 % 1_000_000);
    let year = pg_year(t.year());
    let v: i64 = match unit {
        Microseconds | Milliseconds | Second => return Ok(micros_of_minute),
        Minute => t.minute().into(),
        Hour => t.hour().into(),
        Day => t.day().into(),
        Week => t.iso_week().week().into(),
        Month => t.month().into(),
        Quarter => ((t.month() - 1) / 3 + 1).into(),
        Year => year,
        Decade => {
            if year >= 0 {
                year / 10
            } else {
                -((8 - (year - 1)) / 10)
            }
        }
        Century => {
            if year > 0 {
                (year + 99) / 100
            } else {
                -((99 - (year - 1)) / 100)
            }
        }
        Millennium => {
            if year > 0 {
                (year + 999) / 1000
            } else {
                -((999 - (year - 1)) / 1000)
            }
        }
        Dow => t.weekday().num_days_from_sunday().into(),
        IsoDow => t.weekday().number_from_monday().into(),
        Doy => t.ordinal().into(),
        IsoYear => pg_year(t.iso_week().year()),
        Epoch => {
            let micros = (t - epoch()).num_microseconds().ok_or_else(out_of_range)?;
            return Ok(match input {
                Input::Date => i128::from(micros / 1_000_000),
                _ => i128::from(micros),
            });
        }
        Julian => i64::from(t.date().num_days_from_ce()) + 1_721_425,
        Timezone | TimezoneHour | TimezoneMinute => 0,
    };
    Ok(i128::from(v))
}

fn out_of_range() -> SqlError {
    SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
}

/// `t` cut down to `unit`.
fn truncate(unit: Unit, t: NaiveDateTime) -> SqlResult<NaiveDateTime> {
    use Unit::*;
    let date = t.date();
    let day = |d: NaiveDate| d.and_hms_opt(0, 0, 0).ok_or_else(out_of_range);
    let first_of = |year: i32, month: u32| {
        NaiveDate::from_ymd_opt(year, month, 1)
            .ok_or_else(out_of_range)
            .and_then(day)
    };
    let micros = i64::from(t.nanosecond() / 1_000 % 1_000_000);
    let whole_second = t.with_nanosecond(0).ok_or_else(out_of_range)?;
    // PostgreSQL's years of the decade, century and millennium (chrono's
    // year 0 is 1 BC).
    let year = t.year();
    Ok(match unit {
        Microseconds => whole_second + Duration::microseconds(micros),
        Milliseconds => whole_second + Duration::microseconds(micros / 1_000 * 1_000),
        Second => whole_second,
        Minute => whole_second.with_second(0).ok_or_else(out_of_range)?,
        Hour => date.and_hms_opt(t.hour(), 0, 0).ok_or_else(out_of_range)?,
        Day => day(date)?,
        Week => day(date - Duration::days(date.weekday().num_days_from_monday().into()))?,
        Month => first_of(year, t.month())?,
        Quarter => first_of(year, (t.month() - 1) / 3 * 3 + 1)?,
        Year => first_of(year, 1)?,
        Decade => first_of(year - year.rem_euclid(10), 1)?,
        Century => first_of(
            if year > 0 {
                (year - 1) / 100 * 100 + 1
            } else {
                -((99 - year) / 100 * 100)
            },
            1,
        )?,
        Millennium => first_of(
            if year > 0 {
                (year - 1) / 1000 * 1000 + 1
            } else {
                -((999 - year) / 1000 * 1000)
            },
            1,
        )?,
        Dow | IsoDow | Doy | IsoYear | Epoch | Julian | Timezone | TimezoneHour
        | TimezoneMinute => unreachable!("refused by `unit`"),
    })
}

/// A date or timestamp scalar as a date-time (a date at midnight; a
/// timestamp with zone as its UTC time, the session's zone).
fn date_time(s: &ScalarValue) -> SqlResult<Option<NaiveDateTime>> {
    let micros = |v: Option<i64>, per_second: i64| {
        v.map(|v| match per_second {
            1 => v.checked_mul(1_000_000),
            1_000 => v.checked_mul(1_000),
            1_000_000 => Some(v),
            _ => Some(v / 1_000),
        })
    };
    let from_micros = |m: Option<Option<i64>>| -> SqlResult<Option<NaiveDateTime>> {
        match m {
            None => Ok(None),
            Some(m) => m
                .and_then(|m| epoch().checked_add_signed(Duration::microseconds(m)))
                .map(Some)
                .ok_or_else(out_of_range),
        }
    };
    match s {
        ScalarValue::Date32(d) => Ok(d.map(|d| epoch() + Duration::days(d.into()))),
        ScalarValue::Date64(ms) => from_micros(micros(*ms, 1_000)),
        ScalarValue::TimestampSecond(v, _) => from_micros(micros(*v, 1)),
        ScalarValue::TimestampMillisecond(v, _) => from_micros(micros(*v, 1_000)),
        ScalarValue::TimestampMicrosecond(v, _) => from_micros(micros(*v, 1_000_000)),
        ScalarValue::TimestampNanosecond(v, _) => from_micros(micros(*v, 1_000_000_000)),
        other if other.is_null() => Ok(None),
        other => Err(SqlError::internal(format!(
            "a date/time function of a {}",
            other.data_type()
        ))),
    }
}

/// A date-time as a microsecond timestamp scalar, with zone or without.
fn timestamp(t: Option<NaiveDateTime>, zoned: bool) -> SqlResult<ScalarValue> {
    let micros = match t {
        Some(t) => Some((t - epoch()).num_microseconds().ok_or_else(out_of_range)?),
        None => None,
    };
    Ok(ScalarValue::TimestampMicrosecond(
        micros,
        zoned.then(|| UTC.into()),
    ))
}

/// The one time zone keyclaim's sessions know, by any of its names.
fn check_zone(zone: &str) -> SqlResult<()> {
    let known = crate::session::settings::UTC_NAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(zone.trim()));
    if known {
        Ok(())
    } else {
        Err(SqlError::unsupported(
            format!("time zone \"{zone}\" is not supported"),
            "keyclaim keeps every session in UTC: use AT TIME ZONE 'UTC'",
        ))
    }
}

impl DateFn {
    /// The kind of date/time the function is given (after its unit or zone).
    fn args(&self, given: &[DataType]) -> DfResult<Input> {
        let name = self.name();
        match given {
            [text, value] => match Input::of(value) {
                Some(input)
                    if matches!(
                        text,
                        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
                    ) =>
                {
                    Ok(input)
                }
                _ => plan_err!("function {name}({text}, {value}) does not exist"),
            },
            _ => plan_err!("function {name} takes two arguments"),
        }
    }

    /// The input kind the function computes on, given the argument's.
    fn computes_on(&self, input: Input) -> Input {
        match (self.kind, input) {
            // PostgreSQL reads a date as a timestamp for date_part, and as
            // a timestamp with time zone for date_trunc and AT TIME ZONE.
            (Kind::DatePart, Input::Date) => Input::Timestamp,
            (Kind::DateTrunc | Kind::TimeZone, Input::Date) => Input::TimestampTz,
            (_, input) => input,
        }
    }
}

impl ScalarUDFImpl for DateFn {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Extract => EXTRACT,
            Kind::DatePart => "date_part",
            Kind::DateTrunc => "date_trunc",
            Kind::TimeZone => "timezone",
        }
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, given: &[DataType]) -> DfResult<Vec<DataType>> {
        let input = self.args(given)?;
        Ok(vec![DataType::Utf8, self.computes_on(input).arrow()])
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        plan_err!("{} has its return field from its arguments", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let input = self.args(&types)?;
        let input = self.computes_on(input);
        let constant = args
            .scalar_arguments
            .first()
            .and_then(|s| s.and_then(text_of));
        let dt = match self.kind {
            Kind::Extract => {
                let Some(text) = constant else {
                    return plan_err!("EXTRACT takes a unit, not an expression");
                };
                let unit = unit(text, input, false).map_err(sql_err)?;
                DataType::Decimal128(38, extract_scale(unit, input))
            }
            Kind::DatePart => DataType::Float64,
            Kind::DateTrunc => input.arrow(),
            Kind::TimeZone => match input {
                Input::TimestampTz => Input::Timestamp.arrow(),
                _ => Input::TimestampTz.arrow(),
            },
        };
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), dt, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let out = args.return_field.data_type().clone();
        let input = self.computes_on(
            args.arg_fields
                .get(1)
                .and_then(|f| Input::of(f.data_type()))
                .unwrap_or(Input::Timestamp),
        );
        let kind = self.kind;
        map_rows(&args.args, args.number_rows, &out, |row| {
            let [text, value] = row else {
                return plan_err!("a date/time function takes two arguments");
            };
            let (Some(text), Some(t)) = (text_of(text), date_time(value).map_err(sql_err)?) else {
                return ScalarValue::try_from(&out);
            };
            let result = match kind {
                Kind::Extract | Kind::DatePart => {
                    let unit = unit(text, input, false).map_err(sql_err)?;
                    let mantissa = field(unit, t, input).map_err(sql_err)?;
                    let scale = extract_scale(unit, input);
                    if kind == Kind::Extract {
                        ScalarValue::Decimal128(Some(mantissa), 38, scale)
                    } else {
                        ScalarValue::Float64(Some(mantissa as f64 / 10f64.powi(scale.into())))
                    }
                }
                Kind::DateTrunc => {
                    let unit = unit(text, input, true).map_err(sql_err)?;
                    let cut = truncate(unit, t).map_err(sql_err)?;
                    timestamp(Some(cut), input == Input::TimestampTz).map_err(sql_err)?
                }
                Kind::TimeZone => {
                    check_zone(text).map_err(sql_err)?;
                    timestamp(Some(t), input != Input::TimestampTz).map_err(sql_err)?
                }
            };
            Ok(result)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap()
    }

    #[test]
    fn fields_as_postgres_gives_them() {
        let t = at("2024-01-02 00:00:01.5");
        let ts = Input::Timestamp;
        assert_eq!(field(Unit::Epoch, t, ts).unwrap(), 1_704_153_601_500_000);
        assert_eq!(field(Unit::Milliseconds, t, ts).unwrap(), 1_500_000);
        let d = at("2024-01-07 00:00:00");
        assert_eq!(field(Unit::Dow, d, Input::Date).unwrap(), 0);
        assert_eq!(field(Unit::IsoDow, d, Input::Date).unwrap(), 7);
        assert_eq!(field(Unit::Decade, d, Input::Date).unwrap(), 202);
        assert_eq!(field(Unit::Century, d, Input::Date).unwrap(), 21);
        assert_eq!(field(Unit::Millennium, d, Input::Date).unwrap(), 3);
        assert_eq!(
            field(Unit::Julian, at("2024-01-02 00:00:00"), Input::Date).unwrap(),
            2_460_312
        );
        assert_eq!(
            field(Unit::Epoch, at("2024-01-02 00:00:00"), Input::Date).unwrap(),
            1_704_153_600
        );
    }

    #[test]
    fn truncation_as_postgres_does_it() {
        let t = at("2024-05-03 10:00:01.23456");
        assert_eq!(
            truncate(Unit::Week, at("2024-01-03 10:00:00")).unwrap(),
            at("2024-01-01 00:00:00")
        );
        assert_eq!(
            truncate(Unit::Quarter, t).unwrap(),
            at("2024-04-01 00:00:00")
        );
        assert_eq!(
            truncate(Unit::Decade, t).unwrap(),
            at("2020-01-01 00:00:00")
        );
        assert_eq!(
            truncate(Unit::Century, t).unwrap(),
            at("2001-01-01 00:00:00")
        );
        assert_eq!(
            truncate(Unit::Millennium, t).unwrap(),
            at("2001-01-01 00:00:00")
        );
        assert_eq!(
            truncate(Unit::Milliseconds, t).unwrap(),
            at("2024-05-03 10:00:01.234")
        );
    }

    #[test]
    fn units_refused_in_postgres_words() {
        let e = unit("hour", Input::Date, false).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("0A000", "unit \"hour\" not supported for type date")
        );
        let e = unit("foo", Input::Timestamp, true).unwrap_err();
        assert_eq!(e.code, "22023");
        assert_eq!(
            e.message,
            "unit \"foo\" not recognized for type timestamp without time zone"
        );
    }
}
