//! numeric: numeric_in with PostgreSQL's limits, numeric_out, float to
//! numeric, and numeric's base-10000 binary format. Values are held in
//! rust_decimal, so some that PostgreSQL accepts are refused here.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use rust_decimal::Decimal;

use super::float::float8_text;
use super::{bad_binary, is_c_space, out_of_range, NumericMod, INVALID_BINARY_REPRESENTATION};
use crate::error::{SqlError, SqlResult};

/// PostgreSQL's limits: digits before the point and the display scale.
const PG_NUMERIC_MAX_INT_DIGITS: usize = 131_072;
const PG_NUMERIC_MAX_DSCALE: i64 = 16_383;

fn numeric_overflow() -> SqlError {
    out_of_range("value overflows numeric format")
}

/// A value PostgreSQL accepts but rust_decimal (96-bit mantissa, scale <= 28) cannot hold.
fn numeric_too_precise() -> SqlError {
    numeric_overflow().with_detail(
        "keyclaim stores numeric values with at most 28 digits after the decimal point and 28 significant digits",
    )
}

fn numeric_special_unsupported(s: &str) -> SqlError {
    SqlError::unsupported(
        format!("numeric value \"{s}\" is not supported"),
        "keyclaim's numeric has no NaN or Infinity; use double precision for those",
    )
}

/// `d` as a value of `numeric(m)`: as it is without a typmod.
pub(super) fn fit_typmod(d: Decimal, m: Option<NumericMod>) -> SqlResult<Decimal> {
    match m {
        Some(m) => apply_typmod(&d, m),
        None => Ok(d),
    }
}

/// PostgreSQL's apply_typmod, what every value written or cast into
/// `numeric(p, s)` goes through: rounded half away from zero to the scale,
/// refused (22003) when more digits than `p - s` are left before the point,
/// then padded to the scale (`7` is `7.00` in `numeric(5,2)`).
fn apply_typmod(d: &Decimal, m: NumericMod) -> SqlResult<Decimal> {
    let scale = i64::from(m.scale);
    let (mantissa, exp) = round_half_away(d.mantissa(), i64::from(d.scale()), scale);
    let max_digits = i64::from(m.precision) - scale;
    if integer_digits(mantissa, exp) > max_digits {
        return Err(field_overflow(m, max_digits));
    }
    padded(mantissa, exp, scale.max(0))
}

/// `mantissa * 10^-exp` rounded to `scale` fraction digits (a negative
/// scale rounds to a multiple of `10^-scale`), half away from zero as
/// PostgreSQL's round_var does: the new mantissa and exponent, the exponent
/// never below 0. A value with no more fraction digits is left as it is.
fn round_half_away(mantissa: i128, exp: i64, scale: i64) -> (i128, i64) {
    if exp <= scale {
        return (mantissa, exp);
    }
    let dropped = exp - scale;
    // A Decimal's mantissa is below 10^29: dropping more digits than an
    // i128 can count rounds it to 0.
    let Some(unit) = u32::try_from(dropped)
        .ok()
        .and_then(|n| 10i128.checked_pow(n))
    else {
        return (0, scale.max(0));
    };
    let (units, rest) = (mantissa / unit, mantissa % unit);
    let units = if rest.abs() >= unit / 2 {
        units + mantissa.signum()
    } else {
        units
    };
    // A negative scale keeps the dropped places as zeros before the point
    // (fewer than `dropped`, so the power fits).
    let zeros = u32::try_from(-scale).unwrap_or(0);
    (units.saturating_mul(10i128.pow(zeros)), scale.max(0))
}

/// PostgreSQL's count of digits before the point of `mantissa * 10^-exp`,
/// the place of its first significant digit (0.05 has -1); zero has none
/// and fits any field.
fn integer_digits(mantissa: i128, exp: i64) -> i64 {
    match mantissa.unsigned_abs().checked_ilog10() {
        Some(log) => i64::from(log) + 1 - exp,
        None => i64::MIN,
    }
}

/// `mantissa * 10^-exp` shown with `scale` (at least `exp`) fraction
/// digits, if a Decimal can hold that many.
fn padded(mantissa: i128, exp: i64, scale: i64) -> SqlResult<Decimal> {
    let mantissa = u32::try_from(scale - exp)
        .ok()
        .and_then(|extra| 10i128.checked_pow(extra))
        .and_then(|p| mantissa.checked_mul(p))
        .ok_or_else(numeric_too_precise)?;
    let scale = u32::try_from(scale).map_err(|_| numeric_too_precise())?;
    Decimal::try_from_i128_with_scale(mantissa, scale).map_err(|_| numeric_too_precise())
}

fn field_overflow(m: NumericMod, max_digits: i64) -> SqlError {
    // PostgreSQL shows 10^0 as 1.
    let bound = match max_digits {
        0 => "1".to_owned(),
        n => format!("10^{n}"),
    };
    out_of_range("numeric field overflow").with_detail(format!(
        "A field with precision {}, scale {} must round to an absolute value less than {bound}.",
        m.precision, m.scale
    ))
}

/// A decimal number split PostgreSQL's way: sign, digits (integer and fraction
/// parts concatenated), the number of fraction digits, and the exponent.
pub(super) struct DecimalParts {
    neg: bool,
    digits: String,
    frac_len: usize,
    exp: i64,
}

impl DecimalParts {
    /// numeric_in's display scale: fraction digits minus exponent, at least 0.
    fn dscale(&self) -> i64 {
        (self.frac_len as i64 - self.exp).max(0)
    }

    /// PostgreSQL's numeric_out text for this value (no -0), or overflow.
    pub(super) fn pg_text(&self) -> SqlResult<String> {
        if self.exp.abs() >= i64::from(i32::MAX / 2) {
            return Err(numeric_overflow());
        }
        let dscale = self.dscale();
        // Position of the decimal point within `digits`, counted from the left.
        let point = self.digits.len() as i64 - self.frac_len as i64 + self.exp;
        let first_nonzero = self.digits.bytes().position(|c| c != b'0');
        if let Some(f) = first_nonzero {
            if point - f as i64 > PG_NUMERIC_MAX_INT_DIGITS as i64 {
                return Err(numeric_overflow());
            }
        }
        if dscale > PG_NUMERIC_MAX_DSCALE {
            return Err(numeric_overflow());
        }
        let d = self.digits.as_bytes();
        let mut int_part = String::new();
        let mut frac_part = String::new();
        // Integer digits from the first significant one (none for zero).
        for pos in first_nonzero.map_or(point, |f| (f as i64).min(point))..point {
            int_part.push(if pos >= 0 && (pos as usize) < d.len() {
                d[pos as usize] as char
            } else {
                '0'
            });
        }
        for k in 0..dscale {
            let pos = point + k;
            frac_part.push(if pos >= 0 && (pos as usize) < d.len() {
                d[pos as usize] as char
            } else {
                '0'
            });
        }
        let int_part = int_part.trim_start_matches('0');
        let mut out = String::new();
        if self.neg && first_nonzero.is_some() {
            out.push('-');
        }
        out.push_str(if int_part.is_empty() { "0" } else { int_part });
        if !frac_part.is_empty() {
            out.push('.');
            out.push_str(&frac_part);
        }
        Ok(out)
    }

    fn to_decimal(&self) -> SqlResult<Decimal> {
        if self.exp.abs() >= i64::from(i32::MAX / 2) {
            return Err(numeric_overflow());
        }
        let scale = self.frac_len as i64 - self.exp;
        let dscale = scale.max(0);
        let sig = self.digits.trim_start_matches('0');
        if sig.is_empty() {
            if dscale > PG_NUMERIC_MAX_DSCALE {
                return Err(numeric_overflow());
            }
            if dscale > 28 {
                return Err(numeric_too_precise());
            }
            return Ok(Decimal::new(0, dscale as u32));
        }
        // Digits before the point, for PostgreSQL's own limits first.
        let int_digits = sig.len() as i64 - scale;
        if int_digits > PG_NUMERIC_MAX_INT_DIGITS as i64 || dscale > PG_NUMERIC_MAX_DSCALE {
            return Err(numeric_overflow());
        }
        let total = sig.len() as i64 + (-scale).max(0);
        if dscale > 28 || total > 29 {
            return Err(numeric_too_precise());
        }
        let mut mantissa: i128 = sig.parse().map_err(|_| numeric_too_precise())?;
        for _ in 0..(-scale).max(0) {
            mantissa *= 10;
        }
        if mantissa >= 1i128 << 96 {
            return Err(numeric_too_precise());
        }
        let mut d = Decimal::try_from_i128_with_scale(
            if self.neg { -mantissa } else { mantissa },
            dscale as u32,
        )
        .map_err(|_| numeric_too_precise())?;
        if d.is_zero() {
            d.set_sign_positive(true);
        }
        Ok(d)
    }
}

/// Scan numeric_in's `[+-]digits[.digits][e[+-]digits]` (`.5` and `5.`
/// allowed); None unless all of `t` matches. JSON numbers, already checked
/// by the stricter JSON lexer, go through here too.
pub(super) fn decimal_parts(t: &str) -> Option<DecimalParts> {
    let b = t.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut digits = String::new();
    while i < b.len() && b[i].is_ascii_digit() {
        digits.push(b[i] as char);
        i += 1;
    }
    let mut frac_len = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            digits.push(b[i] as char);
            frac_len += 1;
            i += 1;
        }
    }
    if digits.is_empty() {
        return None;
    }
    let mut exp: i64 = 0;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let eneg = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            exp = exp.saturating_mul(10).saturating_add((b[i] - b'0') as i64);
            i += 1;
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return None;
    }
    Some(DecimalParts {
        neg,
        digits,
        frac_len,
        exp,
    })
}

pub(super) fn parse_numeric(s: &str) -> SqlResult<Decimal> {
    let t = s.trim_matches(is_c_space);
    let lower = t.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "nan" | "infinity" | "+infinity" | "-infinity" | "inf" | "+inf" | "-inf"
    ) {
        return Err(numeric_special_unsupported(t));
    }
    match decimal_parts(t) {
        Some(parts) => parts.to_decimal(),
        None => Err(SqlError::invalid_text("numeric", s)),
    }
}

pub(super) fn numeric_text(d: &Decimal) -> String {
    if d.is_zero() && d.is_sign_negative() {
        let mut z = *d;
        z.set_sign_positive(true);
        return z.to_string();
    }
    d.to_string()
}

/// float -> numeric as PostgreSQL does it: `%.{digits}g`, then numeric_in.
pub(super) fn float_to_numeric(f: f64, digits: usize) -> SqlResult<Decimal> {
    if !f.is_finite() {
        return Err(numeric_special_unsupported(&float8_text(f)));
    }
    if f == 0.0 {
        return Ok(Decimal::ZERO);
    }
    let sci = format!("{:.*e}", digits - 1, f);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let all: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sig = all.trim_end_matches('0');
    let sig = if sig.is_empty() { "0" } else { sig };
    DecimalParts {
        neg,
        digits: sig.to_owned(),
        frac_len: sig.len() - 1,
        exp,
    }
    .to_decimal()
}

/// numeric_recv: PostgreSQL's base-10000 external format, validated.
pub(super) fn decode_numeric_binary(bytes: &[u8]) -> SqlResult<Decimal> {
    if bytes.len() < 8 {
        return Err(bad_binary());
    }
    let u16_at = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
    let ndigits = u16_at(0) as usize;
    let weight = i16::from_be_bytes([bytes[2], bytes[3]]) as i64;
    let sign = u16_at(4);
    let dscale = u16_at(6);
    if bytes.len() != 8 + 2 * ndigits {
        return Err(bad_binary());
    }
    let neg = match sign {
        0x0000 => false,
        0x4000 => true,
        0xC000 => return Err(numeric_special_unsupported("NaN")),
        0xD000 => return Err(numeric_special_unsupported("Infinity")),
        0xF000 => return Err(numeric_special_unsupported("-Infinity")),
        _ => {
            return Err(SqlError::new(
                INVALID_BINARY_REPRESENTATION,
                "invalid sign in external \"numeric\" value",
            ))
        }
    };
    if dscale & 0xC000 != 0 {
        return Err(SqlError::new(
            INVALID_BINARY_REPRESENTATION,
            "invalid scale in external \"numeric\" value",
        ));
    }
    let mut digits = String::with_capacity(ndigits * 4);
    for k in 0..ndigits {
        let g = u16_at(8 + 2 * k);
        if g >= 10000 {
            return Err(SqlError::new(
                INVALID_BINARY_REPRESENTATION,
                "invalid digit in external \"numeric\" value",
            ));
        }
        let _ = write!(digits, "{g:04}");
    }
    if digits.is_empty() {
        digits.push('0');
    }
    // digits * 10000^(weight - ndigits + 1), truncated to dscale fraction
    // digits as numeric_recv does.
    let exp = 4 * (weight - ndigits as i64 + 1);
    let point = digits.len() as i64 + exp;
    let d = digits.as_bytes();
    let digit_at = |pos: i64| -> char {
        if pos >= 0 && (pos as usize) < d.len() {
            d[pos as usize] as char
        } else {
            '0'
        }
    };
    let first_nonzero = d
        .iter()
        .position(|c| *c != b'0')
        .map_or(point, |p| p as i64);
    let mut kept = String::new();
    for pos in first_nonzero.min(point)..point + dscale as i64 {
        kept.push(digit_at(pos));
    }
    if kept.len() < dscale as usize {
        kept.insert_str(0, &"0".repeat(dscale as usize - kept.len()));
    }
    if kept.is_empty() {
        kept.push('0');
    }
    DecimalParts {
        neg,
        digits: kept,
        frac_len: dscale as usize,
        exp: 0,
    }
    .to_decimal()
}

/// numeric_send: base-10000 digit groups aligned on the decimal point.
pub(super) fn encode_numeric_binary(d: &Decimal, out: &mut BytesMut) {
    let scale = d.scale() as usize;
    let digits = d.mantissa().unsigned_abs().to_string();
    let (int_part, frac_part) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let mut int_digits = String::new();
    int_digits.extend(std::iter::repeat_n('0', (4 - int_part.len() % 4) % 4));
    int_digits.push_str(int_part);
    let mut frac_digits = String::new();
    frac_digits.extend(std::iter::repeat_n('0', scale - frac_part.len()));
    frac_digits.push_str(frac_part);
    frac_digits.extend(std::iter::repeat_n('0', (4 - frac_digits.len() % 4) % 4));
    let all = format!("{int_digits}{frac_digits}");
    let mut groups: Vec<u16> = all
        .as_bytes()
        .chunks(4)
        .map(|c| c.iter().fold(0u16, |acc, b| acc * 10 + (b - b'0') as u16))
        .collect();
    let mut weight = (int_digits.len() / 4) as i16 - 1;
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    let neg = d.is_sign_negative() && !d.is_zero();
    if groups.is_empty() {
        weight = 0;
    }
    out.put_u16(groups.len() as u16);
    out.put_i16(weight);
    out.put_u16(if neg { 0x4000 } else { 0 });
    out.put_u16(scale as u16);
    for g in groups {
        out.put_u16(g);
    }
}
