//! real and double precision: float4in/float8in (strtod's prefix, range
//! checks) and float4out/float8out, whose shortest digits come from Ryu
//! run on exact big integers (`BigNat`) to match PostgreSQL's copy of it.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::{is_c_space, out_of_range};
use crate::error::{SqlError, SqlResult};

/// The longest prefix of `t` that C's strtod reads as a number (decimal or
/// inf/infinity/nan with an optional sign); 0 when there is none.
fn float_prefix_len(t: &str) -> usize {
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let lower = t[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if lower.starts_with(word) {
            return i + word.len();
        }
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return 0;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    i
}

/// The number in float8in's input: leading whitespace skipped, only
/// whitespace after it. None for bad syntax.
fn float_token(s: &str) -> Option<&str> {
    let t = s.trim_start_matches(is_c_space);
    let n = float_prefix_len(t);
    if n == 0 {
        return None;
    }
    if !t[n..].chars().all(is_c_space) {
        return None;
    }
    Some(&t[..n])
}

/// Did the mantissa have a non-zero digit (so a zero result is an underflow)?
fn mantissa_nonzero(num: &str) -> bool {
    num.bytes()
        .take_while(|c| *c != b'e' && *c != b'E')
        .any(|c| (b'1'..=b'9').contains(&c))
}

pub(super) fn parse_float8(s: &str) -> SqlResult<f64> {
    let Some(num) = float_token(s) else {
        // strtod stops at the number; a range error is reported before trailing garbage.
        let t = s.trim_start_matches(is_c_space);
        let n = float_prefix_len(t);
        if n > 0 {
            check_float8_range(&t[..n])?;
        }
        return Err(SqlError::invalid_text("double precision", s));
    };
    check_float8_range(num)
}

fn check_float8_range(num: &str) -> SqlResult<f64> {
    let v: f64 = parse_float_literal(num);
    let is_special = num
        .bytes()
        .any(|c| c.is_ascii_alphabetic() && c != b'e' && c != b'E');
    if !is_special && (v.is_infinite() || (v == 0.0 && mantissa_nonzero(num))) {
        return Err(out_of_range(&format!(
            "\"{num}\" is out of range for type double precision"
        )));
    }
    Ok(v)
}

pub(super) fn parse_float4(s: &str) -> SqlResult<f32> {
    let t = s.trim_start_matches(is_c_space);
    let n = float_prefix_len(t);
    if n == 0 {
        return Err(SqlError::invalid_text("real", s));
    }
    let num = &t[..n];
    let v: f32 = parse_float_literal(num);
    let is_special = num
        .bytes()
        .any(|c| c.is_ascii_alphabetic() && c != b'e' && c != b'E');
    if !is_special && (v.is_infinite() || (v == 0.0 && mantissa_nonzero(num))) {
        // float4in quotes the whole original input here.
        return Err(out_of_range(&format!(
            "\"{s}\" is out of range for type real"
        )));
    }
    if !t[n..].chars().all(is_c_space) {
        return Err(SqlError::invalid_text("real", s));
    }
    Ok(v)
}

fn parse_float_literal<F: std::str::FromStr + From<f32>>(num: &str) -> F {
    let lower = num.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let neg = lower.starts_with('-');
    if unsigned.starts_with("nan") {
        return F::from(f32::NAN);
    }
    if unsigned.starts_with("inf") {
        return F::from(if neg {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        });
    }
    num.parse().unwrap_or_else(|_| F::from(f32::NAN))
}

/// PostgreSQL 12+ float output (float8out / float4out with the default
/// extra_float_digits = 1): Ryu's shortest digits, in fixed notation when the
/// decimal exponent is in [-4, `fixed_below`), otherwise `1.5e+20` style.
fn float_text(v: f64, digits: &str, exp: i32, fixed_below: i32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let neg = v.is_sign_negative();
    if v == 0.0 {
        return if neg { "-0" } else { "0" }.into();
    }
    let digits = digits.trim_end_matches('0');
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if (-4..fixed_below).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
    out
}

pub(super) fn float8_text(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return float_text(v, "0", 0, 15);
    }
    let bits = v.to_bits();
    let (digits, exp) = ryu_shortest(
        bits & ((1 << 52) - 1),
        ((bits >> 52) & 0x7ff) as u32,
        52,
        1023,
    );
    float_text(v, &digits, exp, 15)
}

pub(super) fn float4_text(v: f32) -> String {
    if !v.is_finite() || v == 0.0 {
        return float_text(v as f64, "0", 0, 6);
    }
    let bits = v.to_bits() as u64;
    let (digits, exp) = ryu_shortest(
        bits & ((1 << 23) - 1),
        ((bits >> 23) & 0xff) as u32,
        23,
        127,
    );
    float_text(v as f64, &digits, exp, 6)
}

/// The digits PostgreSQL's copy of Ryu (d2s.c / f2s.c) prints for a finite,
/// non-zero float, and the decimal exponent of the first digit.
///
/// PostgreSQL builds Ryu without STRICTLY_SHORTEST, so both ends of the
/// rounding interval are excluded: a value whose shortest candidate lies
/// exactly halfway to its neighbour gets one more digit than Rust's `{}`
/// (or Python's repr) would print. This is Ryu's digit-removal loop run on
/// exact big integers instead of Ryu's precomputed 128-bit tables.
fn ryu_shortest(
    ieee_mantissa: u64,
    ieee_exponent: u32,
    mantissa_bits: u32,
    bias: i32,
) -> (String, i32) {
    // Two extra bits so the interval bounds are integers.
    let (e2, m2) = if ieee_exponent == 0 {
        (1 - bias - mantissa_bits as i32 - 2, ieee_mantissa)
    } else {
        (
            ieee_exponent as i32 - bias - mantissa_bits as i32 - 2,
            (1u64 << mantissa_bits) | ieee_mantissa,
        )
    };
    let mv = 4 * m2;
    let mp = mv + 2;
    let mm_shift = u64::from(ieee_mantissa != 0 || ieee_exponent <= 1);
    let mm = mv - 1 - mm_shift;
    // value = x * 2^e2; as exact integers at a scale of 10^e10.
    let (mut vr, mut vp, mut vm, e10) = if e2 >= 0 {
        let s = e2 as u32;
        (
            BigNat::from(mv).shl(s),
            BigNat::from(mp).shl(s),
            BigNat::from(mm).shl(s),
            0,
        )
    } else {
        let mut p = BigNat::from(1);
        let mut k = -e2;
        while k >= 13 {
            p.mul_small(1_220_703_125); // 5^13
            k -= 13;
        }
        p.mul_small(5u32.pow(k as u32));
        (p.mul(mv), p.mul(mp), p.mul(mm), e2)
    };
    // The upper bound is excluded: the largest integer below it.
    vp.sub_one();
    let mut removed = 0;
    let mut last_removed: u32 = 0;
    let mut vr_trailing_zeros = true;
    // Remove nine digits at a time while even that leaves the bounds apart
    // (then every single step in between would have too), then one by one.
    loop {
        let mut p9 = vp.clone();
        p9.div_small(1_000_000_000);
        let mut m9 = vm.clone();
        m9.div_small(1_000_000_000);
        if p9.cmp(&m9) != Ordering::Greater {
            break;
        }
        let r = vr.div_small(1_000_000_000);
        vr_trailing_zeros &= last_removed == 0 && r % 100_000_000 == 0;
        last_removed = r / 100_000_000;
        vp = p9;
        vm = m9;
        removed += 9;
    }
    loop {
        let mut p10 = vp.clone();
        p10.div_small(10);
        let mut m10 = vm.clone();
        m10.div_small(10);
        if p10.cmp(&m10) != Ordering::Greater {
            break;
        }
        vr_trailing_zeros &= last_removed == 0;
        last_removed = vr.div_small(10);
        vp = p10;
        vm = m10;
        removed += 1;
    }
    if vr_trailing_zeros && last_removed == 5 && vr.is_even() {
        // Round half to even when the exact value is ...50...0.
        last_removed = 4;
    }
    // The lower bound is excluded too.
    let round_up = vr.cmp(&vm) == Ordering::Equal || last_removed >= 5;
    if round_up {
        vr.add_one();
    }
    let digits = vr.to_decimal_string();
    let exp = e10 + removed + digits.len() as i32 - 1;
    (digits, exp)
}

/// Just enough unsigned big-integer arithmetic for `ryu_shortest`.
#[derive(Clone, PartialEq, Eq)]
struct BigNat(Vec<u32>);

impl BigNat {
    fn from(v: u64) -> BigNat {
        let mut n = BigNat(vec![v as u32, (v >> 32) as u32]);
        n.trim();
        n
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn shl(mut self, bits: u32) -> BigNat {
        let (words, bits) = ((bits / 32) as usize, bits % 32);
        if bits > 0 {
            let mut carry = 0u32;
            for w in self.0.iter_mut() {
                let next = *w >> (32 - bits);
                *w = (*w << bits) | carry;
                carry = next;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        let mut v = vec![0u32; words];
        v.extend_from_slice(&self.0);
        let mut n = BigNat(v);
        n.trim();
        n
    }

    fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for w in self.0.iter_mut() {
            let t = *w as u64 * m as u64 + carry;
            *w = t as u32;
            carry = t >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul(&self, m: u64) -> BigNat {
        let (lo, hi) = (m as u32, (m >> 32) as u32);
        let mut a = self.clone();
        a.mul_small(lo);
        let mut b = self.clone();
        b.mul_small(hi);
        let b = b.shl(32);
        // a + b
        let mut out = Vec::with_capacity(a.0.len().max(b.0.len()) + 1);
        let mut carry = 0u64;
        for i in 0..a.0.len().max(b.0.len()) {
            let t = *a.0.get(i).unwrap_or(&0) as u64 + *b.0.get(i).unwrap_or(&0) as u64 + carry;
            out.push(t as u32);
            carry = t >> 32;
        }
        if carry != 0 {
            out.push(carry as u32);
        }
        let mut n = BigNat(out);
        n.trim();
        n
    }

    /// Divide in place; returns the remainder.
    fn div_small(&mut self, d: u32) -> u32 {
        let mut rem = 0u64;
        for w in self.0.iter_mut().rev() {
            let cur = (rem << 32) | *w as u64;
            *w = (cur / d as u64) as u32;
            rem = cur % d as u64;
        }
        self.trim();
        rem as u32
    }

    fn sub_one(&mut self) {
        for w in self.0.iter_mut() {
            if *w == 0 {
                *w = u32::MAX;
            } else {
                *w -= 1;
                break;
            }
        }
        self.trim();
    }

    fn add_one(&mut self) {
        for w in self.0.iter_mut() {
            if *w == u32::MAX {
                *w = 0;
            } else {
                *w += 1;
                return;
            }
        }
        self.0.push(1);
    }

    fn is_even(&self) -> bool {
        self.0.first().is_none_or(|w| w % 2 == 0)
    }

    fn cmp(&self, other: &BigNat) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    fn to_decimal_string(&self) -> String {
        let mut n = self.clone();
        let mut digits = Vec::new();
        while !n.0.is_empty() {
            digits.push(b'0' + n.div_small(10) as u8);
        }
        if digits.is_empty() {
            digits.push(b'0');
        }
        digits.reverse();
        String::from_utf8(digits).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use crate::types::test_util::{key, parse, text};
    use crate::types::{SqlType, Value};

    #[test]
    fn float_output_is_shortest_round_trip() {
        // Every f64 / f32 printed reads back to itself.
        let mut x: u64 = 0x9E3779B97F4A7C15;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            let s = text(&Value::Float8(f));
            let back = parse(&SqlType::Float8, &s);
            assert_eq!(key(&back), key(&Value::Float8(f)), "{f:e} -> {s}");
            let g = f32::from_bits(x as u32);
            let s = text(&Value::Float4(g));
            let back = parse(&SqlType::Float4, &s);
            assert_eq!(key(&back), key(&Value::Float4(g)), "{g:e} -> {s}");
        }
    }
}
