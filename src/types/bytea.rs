//! bytea input (hex and escape formats) and uuid input.

use uuid::Uuid;

use crate::error::{sqlstate, SqlError, SqlResult};

pub(super) fn parse_bytea(s: &str) -> SqlResult<Vec<u8>> {
    let b = s.as_bytes();
    if let Some(hex) = s.strip_prefix("\\x") {
        let mut out = Vec::with_capacity(hex.len() / 2);
        let mut chars = hex.chars();
        let hex_digit = |c: char| -> SqlResult<u8> {
            c.to_digit(16).map(|v| v as u8).ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("invalid hexadecimal digit: \"{c}\""),
                )
            })
        };
        while let Some(c) = chars.next() {
            if matches!(c, ' ' | '\n' | '\t' | '\r') {
                continue;
            }
            let hi = hex_digit(c)?;
            let Some(c2) = chars.next() else {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "invalid hexadecimal data: odd number of digits",
                ));
            };
            out.push(hi << 4 | hex_digit(c2)?);
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && (b'0'..=b'7').contains(&b[i + 2])
            && (b'0'..=b'7').contains(&b[i + 3])
        {
            out.push((b[i + 1] - b'0') << 6 | (b[i + 2] - b'0') << 3 | (b[i + 3] - b'0'));
            i += 4;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            return Err(SqlError::new(
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "invalid input syntax for type bytea",
            ));
        }
    }
    Ok(out)
}

/// uuid_in: optional braces, 32 hex digits, a hyphen allowed after any group of four.
pub(super) fn parse_uuid(s: &str) -> SqlResult<Uuid> {
    let err = || SqlError::invalid_text("uuid", s);
    let b = s.as_bytes();
    let mut i = 0;
    let braces = b.first() == Some(&b'{');
    if braces {
        i = 1;
    }
    let mut out = [0u8; 16];
    for (k, byte) in out.iter_mut().enumerate() {
        let (Some(h), Some(l)) = (b.get(i), b.get(i + 1)) else {
            return Err(err());
        };
        let (Some(h), Some(l)) = ((*h as char).to_digit(16), (*l as char).to_digit(16)) else {
            return Err(err());
        };
        *byte = (h << 4 | l) as u8;
        i += 2;
        if b.get(i) == Some(&b'-') && k % 2 == 1 && k < 15 {
            i += 1;
        }
    }
    if braces {
        if b.get(i) != Some(&b'}') {
            return Err(err());
        }
        i += 1;
    }
    if i != b.len() {
        return Err(err());
    }
    Ok(Uuid::from_bytes(out))
}
