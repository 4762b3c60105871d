//! Date and timestamp input (one literal parser for date, timestamp and
//! timestamptz, with PostgreSQL's error for each way it can fail) and
//! their ISO text output. The session time zone is UTC.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};

use super::{is_c_space, INVALID_TIME_ZONE_DISPLACEMENT_VALUE};
use crate::error::{sqlstate, SqlError, SqlResult};

/// What went wrong parsing a date/time, mapped to PostgreSQL's DateTimeParseError.
enum DtError {
    /// 22007 invalid input syntax.
    Syntax,
    /// 22008 date/time field value out of range; `hint` for month/day fields.
    Field { hint: bool },
    /// 22009 time zone displacement out of range.
    TzDisplacement,
    /// 22008 date/timestamp out of range.
    Range,
    /// infinity / -infinity, which chrono cannot hold.
    Infinite,
}

/// A parsed date/time literal before it becomes a date or timestamp.
struct DtParts {
    date: NaiveDate,
    /// Seconds since midnight plus microseconds (may reach 24:00:00 or :60).
    secs: i64,
    micros: i64,
    /// UTC offset in seconds, east positive.
    offset: Option<i64>,
}

/// PostgreSQL's earliest date: 4714-11-24 BC (Julian day 0).
fn min_pg_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(-4713, 11, 24).unwrap_or(NaiveDate::MIN)
}

fn dt_error(e: DtError, type_name: &str, s: &str) -> SqlError {
    match e {
        DtError::Syntax => SqlError::new(
            sqlstate::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type {type_name}: \"{s}\""),
        ),
        DtError::Field { hint } => {
            let err = SqlError::new(
                sqlstate::DATETIME_FIELD_OVERFLOW,
                format!("date/time field value out of range: \"{s}\""),
            );
            if hint {
                err.with_hint("Perhaps you need a different \"datestyle\" setting.")
            } else {
                err
            }
        }
        DtError::TzDisplacement => SqlError::new(
            INVALID_TIME_ZONE_DISPLACEMENT_VALUE,
            format!("time zone displacement out of range: \"{s}\""),
        ),
        DtError::Range => SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!(
                "{} out of range: \"{s}\"",
                if type_name == "date" {
                    "date"
                } else {
                    "timestamp"
                }
            ),
        ),
        DtError::Infinite => SqlError::unsupported(
            format!(
                "value \"{}\" is not supported for type {type_name}",
                s.trim()
            ),
            "keyclaim cannot store infinite dates or timestamps",
        ),
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// A small cursor over an ASCII-ish date/time literal.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn digits(&mut self) -> &[u8] {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        &self.b[start..self.i]
    }
    fn skip_spaces(&mut self) -> bool {
        let start = self.i;
        while self.peek().is_some_and(|c| is_c_space(c as char)) {
            self.i += 1;
        }
        self.i > start
    }
    fn word(&mut self) -> String {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'/' || c == b'_')
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.b[start..self.i]).to_ascii_lowercase()
    }
}

fn num(d: &[u8]) -> i64 {
    d.iter()
        .take(12)
        .fold(0i64, |acc, c| acc * 10 + (c - b'0') as i64)
}

/// Parses `[Y]YYY-MM-DD` (also `/` or `.`), `MM-DD-YYYY` and `YYYYMMDD`,
/// optionally followed by `T` or spaces and `HH:MM[:SS[.ffffff]]`, a UTC
/// offset (`+HH`, `+HHMM`, `+HH:MM[:SS]`, `Z`, `UTC`, `GMT`) and `BC`/`AD`,
/// plus the special words epoch, now, today, tomorrow, yesterday.
fn parse_dt(s: &str) -> Result<DtParts, DtError> {
    let t = s.trim_matches(is_c_space);
    let special_day = |days: i64| -> Result<DtParts, DtError> {
        let today = Utc::now().date_naive();
        Ok(DtParts {
            date: today + Duration::days(days),
            secs: 0,
            micros: 0,
            offset: Some(0),
        })
    };
    match t.to_ascii_lowercase().as_str() {
        "epoch" => {
            return Ok(DtParts {
                date: NaiveDate::from_ymd_opt(1970, 1, 1).ok_or(DtError::Range)?,
                secs: 0,
                micros: 0,
                offset: Some(0),
            })
        }
        "infinity" | "+infinity" | "-infinity" => return Err(DtError::Infinite),
        "today" => return special_day(0),
        "tomorrow" => return special_day(1),
        "yesterday" => return special_day(-1),
        "now" => {
            let now = Utc::now().naive_utc();
            return Ok(DtParts {
                date: now.date(),
                secs: now.time().num_seconds_from_midnight() as i64,
                micros: (now.time().nanosecond() / 1000).min(999_999) as i64,
                offset: Some(0),
            });
        }
        _ => {}
    }

    let mut c = Cursor {
        b: t.as_bytes(),
        i: 0,
    };
    // Date.
    let d1 = c.digits().to_vec();
    let (year, month, day) = match c.peek() {
        Some(sep @ (b'-' | b'/' | b'.')) => {
            c.i += 1;
            let d2 = c.digits().to_vec();
            if c.peek() != Some(sep) {
                return Err(DtError::Syntax);
            }
            c.i += 1;
            let d3 = c.digits().to_vec();
            if d2.is_empty() || d2.len() > 2 || d3.is_empty() {
                return Err(DtError::Syntax);
            }
            if d1.len() >= 4 && d3.len() <= 2 {
                (num(&d1), num(&d2), num(&d3))
            } else if (1..=2).contains(&d1.len()) && d3.len() >= 4 {
                // DateStyle MDY.
                (num(&d3), num(&d1), num(&d2))
            } else {
                return Err(DtError::Syntax);
            }
        }
        _ if d1.len() == 8 => (num(&d1[..4]), num(&d1[4..6]), num(&d1[6..])),
        _ => return Err(DtError::Syntax),
    };

    // Time.
    let mut time: Option<(i64, i64, i64, i64)> = None;
    let before_sep = c.i;
    let had_t = matches!(c.peek(), Some(b'T' | b't'));
    if had_t {
        c.i += 1;
    } else {
        c.skip_spaces();
    }
    if c.peek().is_some_and(|ch| ch.is_ascii_digit()) {
        let h = c.digits().to_vec();
        if c.peek() != Some(b':') || h.len() > 2 {
            return Err(DtError::Syntax);
        }
        c.i += 1;
        let m = c.digits().to_vec();
        if m.is_empty() || m.len() > 2 {
            return Err(DtError::Syntax);
        }
        let (mut sec, mut micros) = (0, 0);
        if c.peek() == Some(b':') {
            c.i += 1;
            let sd = c.digits().to_vec();
            if sd.is_empty() || sd.len() > 2 {
                return Err(DtError::Syntax);
            }
            sec = num(&sd);
            if c.peek() == Some(b'.') {
                c.i += 1;
                let frac = c.digits();
                if !frac.is_empty() {
                    let f: f64 = format!("0.{}", String::from_utf8_lossy(frac))
                        .parse()
                        .map_err(|_| DtError::Syntax)?;
                    micros = (f * 1_000_000.0).round_ties_even() as i64;
                }
            }
        }
        time = Some((num(&h), num(&m), sec, micros));
    } else if had_t {
        return Err(DtError::Syntax);
    } else {
        c.i = before_sep;
    }

    // Time zone and era, in that order, each optional.
    let mut offset: Option<i64> = None;
    let mut bc = false;
    let mut seen_era = false;
    loop {
        c.skip_spaces();
        match c.peek() {
            None => break,
            Some(sign @ (b'+' | b'-')) if offset.is_none() && !seen_era => {
                c.i += 1;
                let hd = c.digits().to_vec();
                if hd.is_empty() {
                    return Err(DtError::Syntax);
                }
                let (mut hh, mut mm, mut ss) = (num(&hd), 0, 0);
                if c.peek() == Some(b':') {
                    c.i += 1;
                    let md = c.digits().to_vec();
                    if md.is_empty() {
                        return Err(DtError::Syntax);
                    }
                    mm = num(&md);
                    if c.peek() == Some(b':') {
                        c.i += 1;
                        let sd = c.digits().to_vec();
                        if sd.is_empty() {
                            return Err(DtError::Syntax);
                        }
                        ss = num(&sd);
                    }
                } else if hd.len() > 2 {
                    // +HHMM / +HMM.
                    mm = hh % 100;
                    hh /= 100;
                }
                if hh > 15 || mm > 59 || ss > 59 {
                    return Err(DtError::TzDisplacement);
                }
                let secs = hh * 3600 + mm * 60 + ss;
                offset = Some(if sign == b'-' { -secs } else { secs });
            }
            Some(ch) if ch.is_ascii_alphabetic() => {
                let w = c.word();
                match w.as_str() {
                    "bc" | "ad" if !seen_era => {
                        seen_era = true;
                        bc = w == "bc";
                    }
                    "z" | "zulu" | "utc" | "gmt" | "ut" | "etc/utc" | "etc/gmt"
                        if offset.is_none() && !seen_era =>
                    {
                        offset = Some(0);
                    }
                    _ => return Err(DtError::Syntax),
                }
            }
            Some(_) => return Err(DtError::Syntax),
        }
    }

    // Field ranges, in PostgreSQL's order.
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(DtError::Field { hint: true });
    }
    let (h, m, sec, micros) = time.unwrap_or((0, 0, 0, 0));
    if h > 24 || m > 59 || sec > 60 || (h == 24 && (m > 0 || sec > 0 || micros > 0)) {
        return Err(DtError::Field { hint: false });
    }
    if year == 0 {
        return Err(DtError::Field { hint: false });
    }
    let year = if bc { 1 - year } else { year };
    let year = i32::try_from(year).map_err(|_| DtError::Range)?;
    if day as u32 > days_in_month(year, month as u32) {
        return Err(DtError::Field { hint: false });
    }
    let date = NaiveDate::from_ymd_opt(year, month as u32, day as u32).ok_or(DtError::Range)?;
    Ok(DtParts {
        date,
        secs: h * 3600 + m * 60 + sec,
        micros,
        offset,
    })
}

impl DtParts {
    /// Local date and time; None when outside chrono's range.
    fn local(&self) -> Option<NaiveDateTime> {
        self.date
            .and_time(NaiveTime::MIN)
            .checked_add_signed(Duration::seconds(self.secs))?
            .checked_add_signed(Duration::microseconds(self.micros))
    }
}

pub(super) fn parse_date(s: &str) -> SqlResult<NaiveDate> {
    let parts = parse_dt(s).map_err(|e| dt_error(e, "date", s))?;
    if parts.date < min_pg_date() {
        return Err(dt_error(DtError::Range, "date", s));
    }
    Ok(parts.date)
}

fn check_ts_range(ts: Option<NaiveDateTime>) -> Result<NaiveDateTime, DtError> {
    match ts {
        Some(ts) if ts >= min_pg_date().and_time(NaiveTime::MIN) => Ok(ts),
        _ => Err(DtError::Range),
    }
}

pub(super) fn parse_timestamp(s: &str) -> SqlResult<NaiveDateTime> {
    // timestamp without time zone ignores any zone in the input.
    parse_dt(s)
        .and_then(|p| check_ts_range(p.local()))
        .map_err(|e| dt_error(e, "timestamp", s))
}

pub(super) fn parse_timestamptz(s: &str) -> SqlResult<DateTime<Utc>> {
    let name = "timestamp with time zone";
    parse_dt(s)
        .and_then(|p| {
            let local = check_ts_range(p.local())?;
            // No zone given: the session TimeZone, which is UTC.
            let utc = local.checked_sub_signed(Duration::seconds(p.offset.unwrap_or(0)));
            check_ts_range(utc)
        })
        .map(|ts| ts.and_utc())
        .map_err(|e| dt_error(e, name, s))
}

/// `YYYY-MM-DD` (years past 9999 in full), and whether the date is BC.
pub(super) fn date_text(d: NaiveDate) -> (String, bool) {
    let y = d.year();
    let (year, bc) = if y <= 0 { (1 - y, true) } else { (y, false) };
    (format!("{year:04}-{:02}-{:02}", d.month(), d.day()), bc)
}

pub(super) fn timestamp_text(ts: &NaiveDateTime, with_tz: bool) -> String {
    let (mut s, bc) = date_text(ts.date());
    let t = ts.time();
    let _ = write!(s, " {:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
    let micros = (t.nanosecond() / 1000).min(999_999);
    if micros != 0 {
        let frac = format!("{micros:06}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    if with_tz {
        s.push_str("+00");
    }
    if bc {
        s.push_str(" BC");
    }
    s
}
