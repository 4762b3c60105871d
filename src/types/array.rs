//! One-dimensional arrays of the other types: the array types' OIDs and
//! names, PostgreSQL's array_in / array_out (text) and array_recv /
//! array_send (binary), comparison and key bytes.
//!
//! An array value keeps its element type, so an empty array or one of
//! NULLs still knows what it is an array of. PostgreSQL's arrays may have
//! several dimensions and lower bounds other than 1; keyclaim's do not, and
//! an input that has them is refused (0A000) rather than flattened.

use std::cmp::Ordering;

use bytes::{BufMut, BytesMut};
use postgres_types::{Kind, Type};
use serde::{Deserialize, Serialize};

use super::{bad_binary, is_c_space, SqlType, Value, INVALID_BINARY_REPRESENTATION};
use crate::error::{sqlstate, SqlError, SqlResult};

/// An array value: its element type and its elements, each NULL or a value
/// of that type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Array {
    pub elem: SqlType,
    pub items: Vec<Value>,
}

impl Array {
    /// The array value of these elements.
    pub fn value(elem: SqlType, items: Vec<Value>) -> Value {
        Value::Array(Box::new(Array { elem, items }))
    }
}

/// PostgreSQL's MAXDIM: how deep an array literal may nest before the
/// input is refused outright.
const MAXDIM: usize = 6;
const ARRAY_SUBSCRIPT_ERROR: &str = "2202E";

impl SqlType {
    /// The array type of `elem`. PostgreSQL has no arrays of arrays
    /// (`int[][]` is `int[]`), so an array's array type is itself.
    pub fn array_of(elem: SqlType) -> SqlType {
        match elem {
            SqlType::Array(_) => elem,
            other => SqlType::Array(Box::new(other)),
        }
    }

    /// The element type of an array type.
    pub fn element(&self) -> Option<&SqlType> {
        match self {
            SqlType::Array(elem) => Some(elem),
            _ => None,
        }
    }
}

/// The array type (OID) whose elements are `elem`.
pub(super) fn array_pg_type(elem: &SqlType) -> Type {
    match elem {
        SqlType::Bool => Type::BOOL_ARRAY,
        SqlType::Int2 => Type::INT2_ARRAY,
        SqlType::Int4 => Type::INT4_ARRAY,
        SqlType::Int8 => Type::INT8_ARRAY,
        SqlType::Float4 => Type::FLOAT4_ARRAY,
        SqlType::Float8 => Type::FLOAT8_ARRAY,
        SqlType::Numeric(_) => Type::NUMERIC_ARRAY,
        SqlType::Varchar(_) => Type::VARCHAR_ARRAY,
        SqlType::Char(_) => Type::BPCHAR_ARRAY,
        SqlType::Bytea => Type::BYTEA_ARRAY,
        SqlType::Uuid => Type::UUID_ARRAY,
        SqlType::Date => Type::DATE_ARRAY,
        SqlType::Timestamp => Type::TIMESTAMP_ARRAY,
        SqlType::TimestampTz => Type::TIMESTAMPTZ_ARRAY,
        SqlType::Json => Type::JSON_ARRAY,
        SqlType::Jsonb => Type::JSONB_ARRAY,
        SqlType::Oid => Type::OID_ARRAY,
        // No array is of void (nothing builds one); an array's element is
        // never an array (`array_of` flattens).
        SqlType::Text | SqlType::Void | SqlType::Array(_) => Type::TEXT_ARRAY,
    }
}

/// The array type's name as PostgreSQL prints it in messages ("integer[]").
pub(super) fn array_pg_name(elem: &SqlType) -> &'static str {
    match elem {
        SqlType::Bool => "boolean[]",
        SqlType::Int2 => "smallint[]",
        SqlType::Int4 => "integer[]",
        SqlType::Int8 => "bigint[]",
        SqlType::Float4 => "real[]",
        SqlType::Float8 => "double precision[]",
        SqlType::Numeric(_) => "numeric[]",
        SqlType::Varchar(_) => "character varying[]",
        SqlType::Char(_) => "character[]",
        SqlType::Bytea => "bytea[]",
        SqlType::Uuid => "uuid[]",
        SqlType::Date => "date[]",
        SqlType::Timestamp => "timestamp without time zone[]",
        SqlType::TimestampTz => "timestamp with time zone[]",
        SqlType::Json => "json[]",
        SqlType::Jsonb => "jsonb[]",
        SqlType::Oid => "oid[]",
        SqlType::Text | SqlType::Void | SqlType::Array(_) => "text[]",
    }
}

/// The array type a client names by OID (Parse), if its element is one of
/// keyclaim's types.
pub(super) fn from_array_pg_type(ty: &Type) -> Option<SqlType> {
    match ty.kind() {
        // int2vector and oidvector are arrays to postgres-types, but have
        // formats of their own; PostgreSQL's array types are named `_elem`.
        Kind::Array(_) if !ty.name().starts_with('_') => None,
        Kind::Array(elem) => match SqlType::from_pg_type(elem)? {
            SqlType::Array(_) => None,
            elem => Some(SqlType::array_of(elem)),
        },
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Text input: array_in.
// ---------------------------------------------------------------------------

fn malformed(input: &str, detail: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("malformed array literal: \"{input}\""),
    )
    .with_detail(detail)
}

fn too_deep(depth: usize) -> SqlError {
    SqlError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!("number of array dimensions ({depth}) exceeds the maximum allowed ({MAXDIM})"),
    )
}

fn multidimensional() -> SqlError {
    SqlError::unsupported(
        "multidimensional arrays are not supported",
        "keyclaim supports one-dimensional arrays",
    )
}

fn lower_bound_unsupported() -> SqlError {
    SqlError::unsupported(
        "arrays with a lower bound other than 1 are not supported",
        "keyclaim's arrays are indexed from 1",
    )
}

/// array_in's parse states (PostgreSQL's ArrayParseState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NoLevel,
    LevelStarted,
    ElemStarted,
    QuotedElemStarted,
    QuotedElemCompleted,
    ElemDelimited,
    LevelCompleted,
    LevelDelimited,
}

/// What the brace structure of an array literal holds.
struct Braced {
    /// Dimensions (0 for `{}`).
    ndim: usize,
    /// Length of each dimension, outermost first.
    dims: Vec<usize>,
    /// The elements' texts in order, None for an unquoted NULL.
    items: Vec<Option<String>>,
}

/// PostgreSQL's `atoi` over the run of digits and signs at `from`: the
/// run's end and its value (0 where atoi would read none).
fn dimension_number(b: &[u8], from: usize) -> (usize, i64) {
    let mut end = from;
    while end < b.len() && (b[end].is_ascii_digit() || b[end] == b'-' || b[end] == b'+') {
        end += 1;
    }
    let run = &b[from..end];
    let (neg, digits) = match run.first() {
        Some(b'-') => (true, &run[1..]),
        Some(b'+') => (false, &run[1..]),
        _ => (false, run),
    };
    let mut n: i64 = 0;
    for d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    (end, if neg { -n } else { n })
}

/// PostgreSQL's array_in for a one-dimensional array of `elem`: the same
/// syntax, the same errors (22P02 `malformed array literal` with its
/// detail), every element through `elem`'s own input function.
pub(super) fn parse(elem: &SqlType, input: &str) -> SqlResult<Value> {
    let b = input.as_bytes();
    let skip_space = |mut p: usize| {
        while p < b.len() && is_c_space(b[p] as char) {
            p += 1;
        }
        p
    };
    // Explicit dimensions: `[1:3]={...}` or `[3]={...}`.
    let mut declared: Vec<(i64, i64)> = Vec::new();
    let mut p = skip_space(0);
    while b.get(p) == Some(&b'[') {
        p += 1;
        if declared.len() >= MAXDIM {
            return Err(too_deep(declared.len() + 1));
        }
        let (q, first) = dimension_number(b, p);
        if q == p {
            return Err(malformed(
                input,
                "\"[\" must introduce explicitly-specified array dimensions.",
            ));
        }
        let (q, lower, upper) = if b.get(q) == Some(&b':') {
            let (r, second) = dimension_number(b, q + 1);
            if r == q + 1 {
                return Err(malformed(input, "Missing array dimension value."));
            }
            (r, first, second)
        } else {
            (q, 1, first)
        };
        if b.get(q) != Some(&b']') {
            return Err(malformed(input, "Missing \"]\" after array dimensions."));
        }
        if upper < lower {
            return Err(SqlError::new(
                ARRAY_SUBSCRIPT_ERROR,
                "upper bound cannot be less than lower bound",
            ));
        }
        declared.push((lower, upper));
        p = skip_space(q + 1);
    }
    if declared.is_empty() {
        if b.get(p) != Some(&b'{') {
            return Err(malformed(
                input,
                "Array value must start with \"{\" or dimension information.",
            ));
        }
    } else {
        if b.get(p) != Some(&b'=') {
            return Err(malformed(input, "Missing \"=\" after array dimensions."));
        }
        p = skip_space(p + 1);
        if b.get(p) != Some(&b'{') {
            return Err(malformed(input, "Array contents must start with \"{\"."));
        }
    }
    let braced = braces(input, p)?;
    if !declared.is_empty() {
        let lengths: Vec<i64> = declared.iter().map(|(l, u)| u - l + 1).collect();
        let found: Vec<i64> = braced.dims.iter().map(|&d| d as i64).collect();
        if braced.ndim != declared.len() || lengths != found {
            return Err(malformed(
                input,
                "Specified array dimensions do not match array contents.",
            ));
        }
    }
    if braced.ndim > 1 {
        return Err(multidimensional());
    }
    if declared.iter().any(|(lower, _)| *lower != 1) {
        return Err(lower_bound_unsupported());
    }
    let mut items = Vec::with_capacity(braced.items.len());
    for item in braced.items {
        items.push(match item {
            None => Value::Null,
            Some(text) => Value::parse_text(elem, &text)?,
        });
    }
    Ok(Array::value(elem.clone(), items))
}

/// The brace structure from `start` (at a `{`) on, checked as PostgreSQL's
/// ArrayCount checks it, with the elements as ReadArrayStr reads them:
/// unquoted elements lose surrounding white space, quotes and backslashes
/// protect what they enclose, and an unquoted NULL is a NULL.
fn braces(input: &str, start: usize) -> SqlResult<Braced> {
    let b = input.as_bytes();
    let mut state = State::NoLevel;
    let mut level = 0usize;
    let mut ndim = 1usize;
    let mut in_quotes = false;
    let mut empty = true;
    // Elements seen at each level in the current sub-array, and in the
    // previous one (0: none yet), so sub-arrays must agree in length.
    let mut nelems = [1usize; MAXDIM];
    let mut nelems_last = [0usize; MAXDIM];
    let mut count = [0usize; MAXDIM];
    let mut items = Vec::new();
    // The element being read: its bytes, how many of them count (trailing
    // unquoted white space does not), whether white space is still leading,
    // and whether any part was quoted or escaped (then it is never NULL).
    let mut cur: Vec<u8> = Vec::new();
    let mut cur_end = 0usize;
    let mut leading = true;
    let mut protected = false;
    let mut i = start;
    loop {
        if matches!(state, State::ElemStarted | State::QuotedElemStarted) {
            empty = false;
        }
        let Some(&c) = b.get(i) else {
            return Err(malformed(input, "Unexpected end of input."));
        };
        let mut item_done = false;
        let mut finished = false;
        match c {
            b'\\' => {
                if !matches!(
                    state,
                    State::LevelStarted
                        | State::ElemStarted
                        | State::QuotedElemStarted
                        | State::ElemDelimited
                ) {
                    return Err(malformed(input, "Unexpected \"\\\" character."));
                }
                if state != State::QuotedElemStarted {
                    state = State::ElemStarted;
                }
                i += 1;
                let Some(&escaped) = b.get(i) else {
                    return Err(malformed(input, "Unexpected end of input."));
                };
                cur.push(escaped);
                cur_end = cur.len();
                leading = false;
                protected = true;
            }
            b'"' => {
                if !matches!(
                    state,
                    State::LevelStarted | State::QuotedElemStarted | State::ElemDelimited
                ) {
                    return Err(malformed(input, "Unexpected array element."));
                }
                in_quotes = !in_quotes;
                if in_quotes {
                    state = State::QuotedElemStarted;
                    leading = false;
                } else {
                    state = State::QuotedElemCompleted;
                    cur_end = cur.len();
                }
                protected = true;
            }
            b'{' if !in_quotes => {
                if !matches!(
                    state,
                    State::NoLevel | State::LevelStarted | State::LevelDelimited
                ) {
                    return Err(malformed(input, "Unexpected \"{\" character."));
                }
                state = State::LevelStarted;
                if level >= MAXDIM {
                    return Err(too_deep(level + 1));
                }
                count[level] = 0;
                level += 1;
                ndim = ndim.max(level);
            }
            b'}' if !in_quotes => {
                let allowed = matches!(
                    state,
                    State::ElemStarted | State::QuotedElemCompleted | State::LevelCompleted
                ) || (level == 1 && state == State::LevelStarted);
                if !allowed {
                    return Err(malformed(input, "Unexpected \"}\" character."));
                }
                state = State::LevelCompleted;
                if level == 0 {
                    return Err(malformed(input, "Unmatched \"}\" character."));
                }
                level -= 1;
                if nelems_last[level] != 0 && nelems[level] != nelems_last[level] {
                    return Err(malformed(
                        input,
                        "Multidimensional arrays must have sub-arrays with matching dimensions.",
                    ));
                }
                nelems_last[level] = nelems[level];
                nelems[level] = 1;
                if level == 0 {
                    item_done = true;
                    finished = true;
                } else {
                    count[level - 1] += 1;
                }
            }
            c if in_quotes => cur.push(c),
            b',' => {
                if !matches!(
                    state,
                    State::ElemStarted | State::QuotedElemCompleted | State::LevelCompleted
                ) {
                    return Err(malformed(input, "Unexpected \",\" character."));
                }
                state = if state == State::LevelCompleted {
                    State::LevelDelimited
                } else {
                    State::ElemDelimited
                };
                item_done = true;
                nelems[level - 1] += 1;
            }
            c if is_c_space(c as char) => {
                if !leading {
                    cur.push(c);
                }
            }
            c => {
                if !matches!(
                    state,
                    State::LevelStarted | State::ElemStarted | State::ElemDelimited
                ) {
                    return Err(malformed(input, "Unexpected array element."));
                }
                state = State::ElemStarted;
                cur.push(c);
                cur_end = cur.len();
                leading = false;
            }
        }
        i += 1;
        if item_done {
            count[ndim - 1] += 1;
            cur.truncate(cur_end);
            let text = String::from_utf8(std::mem::take(&mut cur))
                .map_err(|_| malformed(input, "Unexpected end of input."))?;
            items.push(if !protected && text.eq_ignore_ascii_case("NULL") {
                None
            } else {
                Some(text)
            });
            cur_end = 0;
            leading = true;
            protected = false;
        }
        if finished {
            break;
        }
    }
    if b[i..].iter().any(|&c| !is_c_space(c as char)) {
        return Err(malformed(input, "Junk after closing right brace."));
    }
    if empty {
        return Ok(Braced {
            ndim: 0,
            dims: Vec::new(),
            items: Vec::new(),
        });
    }
    Ok(Braced {
        ndim,
        dims: count[..ndim].to_vec(),
        items,
    })
}

// ---------------------------------------------------------------------------
// Text output: array_out.
// ---------------------------------------------------------------------------

/// PostgreSQL's array_out: `{1,2,NULL}`, an element quoted (with `"` and
/// `\` escaped) when it is empty, the word NULL, or holds a brace, the
/// delimiter, a quote, a backslash or white space.
pub(super) fn text(items: &[Value]) -> String {
    let mut out = String::with_capacity(2 + 4 * items.len());
    out.push('{');
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        match item.to_text() {
            None => out.push_str("NULL"),
            Some(text) => push_element(&text, &mut out),
        }
    }
    out.push('}');
    out
}

fn push_element(text: &str, out: &mut String) {
    let quote = text.is_empty()
        || text.eq_ignore_ascii_case("NULL")
        || text
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || is_c_space(c));
    if !quote {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

// ---------------------------------------------------------------------------
// Binary: array_recv / array_send.
// ---------------------------------------------------------------------------

fn too_large() -> SqlError {
    SqlError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        "array size exceeds the maximum allowed",
    )
}

fn insufficient_data() -> SqlError {
    SqlError::new(
        sqlstate::PROTOCOL_VIOLATION,
        "insufficient data left in message",
    )
}

/// Reads big-endian 32-bit integers off the front of a buffer.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn i32(&mut self) -> SqlResult<i32> {
        let (head, rest) = self
            .0
            .split_first_chunk::<4>()
            .ok_or_else(insufficient_data)?;
        self.0 = rest;
        Ok(i32::from_be_bytes(*head))
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
}

/// PostgreSQL's array_recv for an array of `elem`, one-dimensional.
pub(super) fn decode_binary(elem: &SqlType, bytes: &[u8]) -> SqlResult<Value> {
    let mut r = Reader(bytes);
    let ndim = r.i32()?;
    if ndim < 0 {
        return Err(SqlError::new(
            INVALID_BINARY_REPRESENTATION,
            format!("invalid number of dimensions: {ndim}"),
        ));
    }
    if ndim as usize > MAXDIM {
        return Err(too_deep(ndim as usize));
    }
    let flags = r.i32()?;
    if flags != 0 && flags != 1 {
        return Err(SqlError::new(
            INVALID_BINARY_REPRESENTATION,
            "invalid array flags",
        ));
    }
    let element_oid = r.i32()? as u32;
    let expected = elem.pg_type();
    if element_oid != expected.oid() {
        let named = Type::from_oid(element_oid)
            .map(|t| t.name().to_string())
            .unwrap_or_else(|| "???".into());
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "binary data has array element type {element_oid} ({named}) instead of expected {} ({})",
                expected.oid(),
                expected.name()
            ),
        ));
    }
    let mut dims = Vec::with_capacity(ndim as usize);
    for _ in 0..ndim {
        let len = r.i32()?;
        let lower = r.i32()?;
        dims.push((len, lower));
    }
    let nitems = dims
        .iter()
        .try_fold(1usize, |n, (len, _)| {
            usize::try_from(*len)
                .ok()
                .and_then(|len| n.checked_mul(len))
        })
        .ok_or_else(too_large)?;
    if ndim == 0 || nitems == 0 {
        if !r.0.is_empty() {
            return Err(bad_binary());
        }
        return Ok(Array::value(elem.clone(), Vec::new()));
    }
    if ndim > 1 {
        return Err(multidimensional());
    }
    if dims[0].1 != 1 {
        return Err(lower_bound_unsupported());
    }
    // Each element takes at least its 4-byte length: a count the buffer
    // cannot hold is refused before anything is allocated for it.
    if nitems > r.0.len() / 4 {
        return Err(insufficient_data());
    }
    let mut items = Vec::with_capacity(nitems);
    for n in 0..nitems {
        let len = r.i32()?;
        if len == -1 {
            items.push(Value::Null);
            continue;
        }
        if len < -1 || len as usize > r.0.len() {
            return Err(SqlError::new(
                INVALID_BINARY_REPRESENTATION,
                "insufficient data left in message",
            ));
        }
        let item = r.bytes(len as usize);
        items.push(Value::decode_binary(elem, item).map_err(|e| {
            if e.code == INVALID_BINARY_REPRESENTATION {
                SqlError::new(
                    INVALID_BINARY_REPRESENTATION,
                    format!("improper binary format in array element {}", n + 1),
                )
            } else {
                e
            }
        })?);
    }
    if !r.0.is_empty() {
        return Err(bad_binary());
    }
    Ok(Array::value(elem.clone(), items))
}

/// PostgreSQL's array_send: header (dimensions, null flag, element OID,
/// length and lower bound 1), then each element in its own binary format.
pub(super) fn encode_binary(elem: &SqlType, items: &[Value], out: &mut BytesMut) -> SqlResult<()> {
    let has_null = items.iter().any(Value::is_null);
    out.put_i32(if items.is_empty() { 0 } else { 1 });
    out.put_i32(has_null as i32);
    out.put_u32(elem.pg_type().oid());
    if !items.is_empty() {
        let len = i32::try_from(items.len()).map_err(|_| too_large())?;
        out.put_i32(len);
        out.put_i32(1);
    }
    for item in items {
        let at = out.len();
        out.put_i32(-1);
        if item.encode_binary(elem, out)? {
            let len = (out.len() - at - 4) as i32;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        } else {
            out.truncate(at + 4);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Comparison and key bytes.
// ---------------------------------------------------------------------------

/// PostgreSQL's array order: element by element, a NULL element equal to
/// another NULL and above every value; then the shorter array first. None
/// when two elements cannot be compared.
pub(super) fn compare(a: &[Value], b: &[Value]) -> Option<Ordering> {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.sql_cmp(y)?,
        };
        if o != Ordering::Equal {
            return Some(o);
        }
    }
    Some(a.len().cmp(&b.len()))
}

/// Key bytes of an array: each element's, length-prefixed, so equal
/// arrays (as `compare` sees them) have equal bytes.
pub(super) fn key_bytes(items: &[Value], out: &mut Vec<u8>) {
    for item in items {
        super::key::push_prefixed(item, out);
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::Array;
    use crate::types::test_util::{assert_error, hex, parse, parse_err, text, ty, unhex};
    use crate::types::{SqlType, Value};

    fn int4s(items: &[Option<i32>]) -> Value {
        Array::value(
            SqlType::Int4,
            items
                .iter()
                .map(|i| i.map_or(Value::Null, Value::Int4))
                .collect(),
        )
    }

    fn texts(items: &[Option<&str>]) -> Value {
        Array::value(
            SqlType::Text,
            items
                .iter()
                .map(|s| s.map_or(Value::Null, |s| Value::Text(s.into())))
                .collect(),
        )
    }

    #[test]
    fn array_types_from_ddl_names() {
        assert_eq!(ty("int[]"), SqlType::array_of(SqlType::Int4));
        assert_eq!(ty("integer[3]"), SqlType::array_of(SqlType::Int4));
        assert_eq!(ty("int[][]"), SqlType::array_of(SqlType::Int4));
        assert_eq!(ty("text[]"), SqlType::array_of(SqlType::Text));
        assert_eq!(
            ty("varchar(5)[]"),
            SqlType::array_of(SqlType::Varchar(Some(5)))
        );
        assert_eq!(ty("_int8"), SqlType::array_of(SqlType::Int8));
        assert_eq!(ty("pg_catalog._text"), SqlType::array_of(SqlType::Text));
    }

    #[test]
    fn array_type_oids_and_names() {
        use postgres_types::Type;
        let cases = [
            (SqlType::Int2, 1005, "smallint[]"),
            (SqlType::Int4, 1007, "integer[]"),
            (SqlType::Int8, 1016, "bigint[]"),
            (SqlType::Text, 1009, "text[]"),
            (SqlType::Varchar(None), 1015, "character varying[]"),
            (SqlType::Bool, 1000, "boolean[]"),
            (SqlType::Float4, 1021, "real[]"),
            (SqlType::Float8, 1022, "double precision[]"),
            (SqlType::Numeric(None), 1231, "numeric[]"),
            (SqlType::Uuid, 2951, "uuid[]"),
            (SqlType::Date, 1182, "date[]"),
            (SqlType::Timestamp, 1115, "timestamp without time zone[]"),
            (SqlType::TimestampTz, 1185, "timestamp with time zone[]"),
            (SqlType::Bytea, 1001, "bytea[]"),
            (SqlType::Json, 199, "json[]"),
            (SqlType::Jsonb, 3807, "jsonb[]"),
            (SqlType::Char(None), 1014, "character[]"),
        ];
        for (elem, oid, name) in cases {
            let t = SqlType::array_of(elem.clone());
            assert_eq!(t.pg_type().oid(), oid, "{elem:?}");
            assert_eq!(t.pg_name(), name);
            let back = SqlType::from_pg_type(&Type::from_oid(oid).unwrap());
            assert_eq!(back, Some(t.clone()), "{oid}");
            assert_eq!(t.element(), Some(&elem));
        }
        assert_eq!(SqlType::from_pg_type(&Type::OID_ARRAY), None);
        assert_eq!(SqlType::from_pg_type(&Type::INT2_VECTOR), None);
    }

    #[test]
    fn text_input_as_postgres_reads_it() {
        let int4 = ty("int[]");
        let text_t = ty("text[]");
        assert_eq!(parse(&int4, "{1,2,NULL}"), int4s(&[Some(1), Some(2), None]));
        assert_eq!(parse(&int4, " { 1 , 2 } "), int4s(&[Some(1), Some(2)]));
        assert_eq!(parse(&int4, "{}"), int4s(&[]));
        assert_eq!(parse(&int4, "{ }"), int4s(&[]));
        assert_eq!(parse(&int4, "[1:2]={1,2}"), int4s(&[Some(1), Some(2)]));
        assert_eq!(parse(&int4, "[2]={7,8}"), int4s(&[Some(7), Some(8)]));
        let cases: &[(&str, &[Option<&str>])] = &[
            ("{a,b}", &[Some("a"), Some("b")]),
            ("{a b}", &[Some("a b")]),
            ("{ a b }", &[Some("a b")]),
            ("{\"a\" }", &[Some("a")]),
            ("{ \"a\" , b }", &[Some("a"), Some("b")]),
            ("{\" a \"}", &[Some(" a ")]),
            ("{a\\,b}", &[Some("a,b")]),
            ("{\\\\}", &[Some("\\")]),
            ("{a\\ }", &[Some("a ")]),
            ("{ab\\\"c}", &[Some("ab\"c")]),
            ("{\"a\\\"b\\\\c\"}", &[Some("a\"b\\c")]),
            ("{\\\"a}", &[Some("\"a")]),
            (
                "{null,\"null\",Null ,NU\\LL}",
                &[None, Some("null"), None, Some("NULL")],
            ),
            ("{\"\"}", &[Some("")]),
            ("{\"{}\",\",\"}", &[Some("{}"), Some(",")]),
            ("{é,\"ü ü\"}", &[Some("é"), Some("ü ü")]),
        ];
        for (input, expected) in cases {
            assert_eq!(parse(&text_t, input), texts(expected), "{input}");
        }
    }

    #[test]
    fn text_input_errors_match_postgres() {
        let t = ty("text[]");
        // From PostgreSQL 15: SELECT '<input>'::text[].
        let cases: &[(&str, &str)] = &[
            ("{a,b", "Unexpected end of input."),
            (
                "1,2",
                "Array value must start with \"{\" or dimension information.",
            ),
            (
                "",
                "Array value must start with \"{\" or dimension information.",
            ),
            (
                " ",
                "Array value must start with \"{\" or dimension information.",
            ),
            ("{", "Unexpected end of input."),
            (
                "}",
                "Array value must start with \"{\" or dimension information.",
            ),
            ("{a,,b}", "Unexpected \",\" character."),
            ("{,a}", "Unexpected \",\" character."),
            ("{a,}", "Unexpected \"}\" character."),
            ("{\"a\"b}", "Unexpected array element."),
            ("{a\"b\"}", "Unexpected array element."),
            ("{a}x", "Junk after closing right brace."),
            ("{a\\", "Unexpected end of input."),
            ("{\"a", "Unexpected end of input."),
            ("{{a},b}", "Unexpected array element."),
            ("{a,{b}}", "Unexpected \"{\" character."),
            (
                "{{a},{b,c}}",
                "Multidimensional arrays must have sub-arrays with matching dimensions.",
            ),
            ("{}}", "Junk after closing right brace."),
            ("{a}}", "Junk after closing right brace."),
            (
                "[1:3]={1,2}",
                "Specified array dimensions do not match array contents.",
            ),
            ("[1:2]{1,2}", "Missing \"=\" after array dimensions."),
            (
                "[x]={1}",
                "\"[\" must introduce explicitly-specified array dimensions.",
            ),
            ("[1:]={1}", "Missing array dimension value."),
            ("[1={1}", "Missing \"]\" after array dimensions."),
            ("[1]=1", "Array contents must start with \"{\"."),
            ("{\"}", "Unexpected end of input."),
            ("{{}}", "Unexpected \"}\" character."),
            ("{a\"}", "Unexpected array element."),
            ("{\"a\"  \"b\"}", "Unexpected array element."),
        ];
        for (input, detail) in cases {
            let e = parse_err(&t, input);
            assert_error(
                &e,
                "22P02",
                &format!("malformed array literal: \"{input}\""),
            );
            assert_eq!(e.detail.as_deref(), Some(*detail), "{input}");
        }
        // An element goes through its type's input function.
        assert_error(
            &parse_err(&ty("int[]"), "{1,x}"),
            "22P02",
            "invalid input syntax for type integer: \"x\"",
        );
        assert_error(
            &parse_err(&ty("int2[]"), "{99999}"),
            "22003",
            "value \"99999\" is out of range for type smallint",
        );
        assert_error(
            &parse_err(&t, "[2:1]={}"),
            "2202E",
            "upper bound cannot be less than lower bound",
        );
        // What keyclaim does not hold is refused, not flattened.
        assert_eq!(parse_err(&t, "{{1,2},{3,4}}").code, "0A000");
        assert_eq!(parse_err(&t, "[2:3]={1,2}").code, "0A000");
        assert_eq!(parse_err(&t, &"{".repeat(7)).code, "54000");
    }

    #[test]
    fn text_output_quotes_as_postgres() {
        let v = texts(&[
            Some("a"),
            Some("b c"),
            Some(""),
            Some("NULL"),
            Some("x\"y"),
            Some("a\\b"),
            Some("{}"),
            Some(","),
            None,
            Some("tab\there"),
            Some("null"),
            Some("é"),
        ]);
        assert_eq!(
            text(&v),
            r#"{a,"b c","","NULL","x\"y","a\\b","{}",",",NULL,"tab	here","null",é}"#
        );
        assert_eq!(text(&int4s(&[])), "{}");
        assert_eq!(text(&int4s(&[Some(1), None, Some(-3)])), "{1,NULL,-3}");
        // Elements print with their own output functions.
        let cases: &[(&str, &str, &str)] = &[
            ("numeric[]", "{1.50,2}", "{1.50,2}"),
            ("boolean[]", "{true,f}", "{t,f}"),
            ("date[]", "{2024-01-02}", "{2024-01-02}"),
            (
                "timestamp[]",
                "{\"2024-01-02 03:04:05\"}",
                "{\"2024-01-02 03:04:05\"}",
            ),
            ("bytea[]", "{\"\\\\x0102\"}", "{\"\\\\x0102\"}"),
            (
                "uuid[]",
                "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}",
                "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            ),
            ("jsonb[]", "{\"{\\\"a\\\":1}\"}", "{\"{\\\"a\\\": 1}\"}"),
            ("float8[]", "{1.5,NaN,Infinity}", "{1.5,NaN,Infinity}"),
        ];
        for (type_sql, input, expected) in cases {
            let t = ty(type_sql);
            let v = parse(&t, input);
            assert_eq!(text(&v), *expected, "{type_sql} {input}");
            // The output reads back to the same value.
            assert_eq!(
                text(&parse(&t, expected)),
                *expected,
                "{type_sql} {expected} round trip"
            );
        }
    }

    #[test]
    fn text_round_trips_any_element() {
        let t = ty("text[]");
        let awkward = [
            "", " ", "a", "NULL", "null", "\"", "\\", "{", "}", ",", "a b", " lead", "trail ",
            "\t", "x\\\"y", "é ü", "[1]", "=",
        ];
        let v = texts(&awkward.iter().map(|s| Some(*s)).collect::<Vec<_>>());
        assert_eq!(parse(&t, &text(&v)), v);
    }

    #[test]
    fn binary_matches_postgres_send() {
        // encode(array_send('{1,NULL,3}'::int4[]), 'hex') from PostgreSQL.
        let t = ty("int4[]");
        let v = int4s(&[Some(1), None, Some(3)]);
        let expected =
            "00000001000000010000001700000003000000010000000400000001ffffffff0000000400000003";
        let mut out = BytesMut::new();
        assert!(v.encode_binary(&t, &mut out).unwrap());
        assert_eq!(hex(&out), expected);
        assert_eq!(Value::decode_binary(&t, &unhex(expected)).unwrap(), v);
        // The empty array: no dimensions.
        let mut out = BytesMut::new();
        int4s(&[]).encode_binary(&t, &mut out).unwrap();
        assert_eq!(hex(&out), "000000000000000000000017");
        assert_eq!(Value::decode_binary(&t, &out).unwrap(), int4s(&[]));
        // text[]: element OID 25, elements as their bytes.
        let t = ty("text[]");
        let v = texts(&[Some("a"), Some("")]);
        let mut out = BytesMut::new();
        v.encode_binary(&t, &mut out).unwrap();
        assert_eq!(
            hex(&out),
            "0000000100000000000000190000000200000001000000016100000000"
        );
        assert_eq!(Value::decode_binary(&t, &out).unwrap(), v);
    }

    #[test]
    fn binary_round_trips() {
        for (type_sql, input) in [
            ("int2[]", "{1,-2,NULL}"),
            ("int8[]", "{9223372036854775807}"),
            ("text[]", "{\"a b\",NULL,\"\"}"),
            ("varchar[]", "{x}"),
            ("boolean[]", "{t,f}"),
            ("real[]", "{1.5,NaN}"),
            ("float8[]", "{-0,Infinity}"),
            ("numeric[]", "{1.50,-123456.789}"),
            ("uuid[]", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"),
            ("date[]", "{2024-01-02,NULL}"),
            ("timestamp[]", "{\"2024-01-02 03:04:05.5\"}"),
            ("timestamptz[]", "{\"2024-01-02 03:04:05+00\"}"),
            ("bytea[]", "{\"\\\\x00ff\"}"),
            ("json[]", "{\"{\\\"a\\\":1}\"}"),
            ("jsonb[]", "{\"[1, 2]\"}"),
        ] {
            let t = ty(type_sql);
            let v = parse(&t, input);
            let mut out = BytesMut::new();
            v.encode_binary(&t, &mut out).unwrap();
            let back = Value::decode_binary(&t, &out)
                .unwrap_or_else(|e| panic!("{type_sql} {input}: {e:?}"));
            assert_eq!(text(&back), text(&v), "{type_sql} {input}");
        }
    }

    #[test]
    fn binary_errors() {
        let t = ty("int4[]");
        let err = |bytes: &str| Value::decode_binary(&t, &unhex(bytes)).unwrap_err();
        assert_error(&err("000000"), "08P01", "insufficient data left in message");
        assert_error(
            &err("ffffffff0000000000000017"),
            "22P03",
            "invalid number of dimensions: -1",
        );
        assert_error(
            &err("000000000000000200000017"),
            "22P03",
            "invalid array flags",
        );
        assert_error(
            &err("000000010000000000000014000000010000000100000008000000000000000a"),
            "42804",
            "binary data has array element type 20 (int8) instead of expected 23 (int4)",
        );
        // Two dimensions, and a lower bound of 0.
        let two = "0000000200000000000000170000000100000001000000010000000100000004000000010000000400000002";
        assert_eq!(err(two).code, "0A000");
        assert_eq!(
            err("00000001000000000000001700000001000000000000000400000001").code,
            "0A000"
        );
        // An element longer than what is left, or of the wrong width.
        assert_error(
            &err("000000010000000000000017000000010000000100000008000000"),
            "22P03",
            "insufficient data left in message",
        );
        assert_error(
            &err("0000000100000000000000170000000100000001000000020001"),
            "22P03",
            "improper binary format in array element 1",
        );
        // A count the message cannot hold allocates nothing.
        assert_eq!(
            err("0000000100000000000000177fffffff00000001").code,
            "08P01"
        );
        // Trailing bytes.
        assert_eq!(err("00000000000000000000001700").code, "22P03");
    }

    #[test]
    fn comparison_and_keys() {
        use std::cmp::Ordering::*;
        let a = int4s(&[Some(1), Some(2)]);
        let b = int4s(&[Some(1), Some(3)]);
        let n = int4s(&[Some(1), None]);
        assert_eq!(a.sql_cmp(&b), Some(Less));
        assert_eq!(n.sql_cmp(&n), Some(Equal));
        assert_eq!(a.sql_cmp(&n), Some(Less));
        assert_eq!(int4s(&[Some(1)]).sql_cmp(&a), Some(Less));
        let wide = Array::value(SqlType::Int8, vec![Value::Int8(1), Value::Int8(2)]);
        assert_eq!(a.sql_cmp(&wide), Some(Equal));
        let mut ka = Vec::new();
        a.key_bytes(&mut ka);
        let mut kw = Vec::new();
        wide.key_bytes(&mut kw);
        assert_eq!(ka, kw);
        let mut kb = Vec::new();
        b.key_bytes(&mut kb);
        assert_ne!(ka, kb);
        assert_eq!(a.sql_cmp(&texts(&[Some("1")])), None);
    }

    #[test]
    fn casts_between_arrays() {
        let v = parse(&ty("int4[]"), "{1,NULL}");
        assert_eq!(
            v.cast_to(&ty("int8[]")).unwrap(),
            Array::value(SqlType::Int8, vec![Value::Int8(1), Value::Null])
        );
        assert_eq!(text(&v.cast_to(&SqlType::Text).unwrap()), "{1,NULL}");
        assert_eq!(
            Value::Text("{3}".into()).cast_to(&ty("int2[]")).unwrap(),
            Array::value(SqlType::Int2, vec![Value::Int2(3)])
        );
        assert_error(
            &Value::Int4(5).cast_to(&ty("int[]")).unwrap_err(),
            "42846",
            "cannot cast type integer to integer[]",
        );
        assert_error(
            &v.cast_to(&SqlType::Int4).unwrap_err(),
            "42846",
            "cannot cast type integer[] to integer",
        );
        assert_error(
            &parse(&ty("int8[]"), "{3000000000}")
                .cast_to(&ty("int4[]"))
                .unwrap_err(),
            "22003",
            "integer out of range",
        );
    }
}
