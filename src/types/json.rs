//! PostgreSQL's JSON lexer and recursive-descent parser (jsonapi.c), with its
//! error details, plus jsonb's normalised output and ordering.

use std::cmp::Ordering;

use super::numeric::decimal_parts;
use super::{STATEMENT_TOO_COMPLEX, UNTRANSLATABLE_CHARACTER};
use crate::error::{sqlstate, SqlError, SqlResult};

/// Nesting deeper than this is refused (PostgreSQL's limit is its stack
/// size, several thousand levels; ours keeps recursion off the edge of a
/// 2 MiB worker stack).
const MAX_DEPTH: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Null,
    Bool(bool),
    /// numeric_out text of the number (jsonb), or the raw token (json).
    Num(String),
    Str(String),
    Arr(Vec<Node>),
    /// jsonb: keys sorted by (length, bytes) and unique, last one wins.
    Obj(Vec<(String, Node)>),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    ObjStart,
    ObjEnd,
    ArrStart,
    ArrEnd,
    Comma,
    Colon,
    Str,
    Num,
    True,
    False,
    Null,
    End,
}

#[derive(Clone, Copy)]
enum Ctx {
    Value,
    String,
    ArrayNext,
    ObjectStart,
    ObjectLabel,
    ObjectNext,
    End,
}

fn syntax(detail: String) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        "invalid input syntax for type json",
    )
    .with_detail(detail)
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    tok: Tok,
    start: usize,
    end: usize,
    /// Decode strings (jsonb); json only validates.
    escapes: bool,
    strval: String,
}

impl<'a> Parser<'a> {
    fn token_text(&self) -> &'a str {
        &self.src[self.start..self.end]
    }

    fn char_at(&self, i: usize) -> &'a str {
        let len = self.src[i..].chars().next().map_or(1, char::len_utf8);
        &self.src[i..i + len]
    }

    /// json_lex: advance to the next token.
    fn lex(&mut self) -> SqlResult<()> {
        while self.pos < self.b.len() && matches!(self.b[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        self.start = self.pos;
        let Some(&c) = self.b.get(self.pos) else {
            self.tok = Tok::End;
            self.end = self.pos;
            return Ok(());
        };
        let single = match c {
            b'{' => Some(Tok::ObjStart),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrStart),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(t) = single {
            self.tok = t;
            self.pos += 1;
            self.end = self.pos;
            return Ok(());
        }
        match c {
            b'"' => self.lex_string(),
            b'-' => self.lex_number(self.pos + 1),
            b'0'..=b'9' => self.lex_number(self.pos),
            _ => {
                let mut p = self.pos;
                while p < self.b.len() && is_alnum(self.b[p]) {
                    p += 1;
                }
                if p == self.pos {
                    let ch = self.char_at(self.pos);
                    return Err(syntax(format!("Token \"{ch}\" is invalid.")));
                }
                self.end = p;
                self.pos = p;
                self.tok = match self.token_text() {
                    "true" => Tok::True,
                    "false" => Tok::False,
                    "null" => Tok::Null,
                    other => return Err(syntax(format!("Token \"{other}\" is invalid."))),
                };
                Ok(())
            }
        }
    }

    fn lex_number(&mut self, mut s: usize) -> SqlResult<()> {
        let b = self.b;
        let mut error = false;
        if s < b.len() && b[s] == b'0' {
            s += 1;
        } else if s < b.len() && b[s].is_ascii_digit() {
            while s < b.len() && b[s].is_ascii_digit() {
                s += 1;
            }
        } else {
            error = true;
        }
        if s < b.len() && b[s] == b'.' {
            s += 1;
            if s == b.len() || !b[s].is_ascii_digit() {
                error = true;
            } else {
                while s < b.len() && b[s].is_ascii_digit() {
                    s += 1;
                }
            }
        }
        if s < b.len() && (b[s] == b'e' || b[s] == b'E') {
            s += 1;
            if s < b.len() && (b[s] == b'+' || b[s] == b'-') {
                s += 1;
            }
            if s == b.len() || !b[s].is_ascii_digit() {
                error = true;
            } else {
                while s < b.len() && b[s].is_ascii_digit() {
                    s += 1;
                }
            }
        }
        while s < b.len() && is_alnum(b[s]) {
            s += 1;
            error = true;
        }
        self.end = s;
        self.pos = s;
        if error {
            return Err(syntax(format!(
                "Token \"{}\" is invalid.",
                self.token_text()
            )));
        }
        self.tok = Tok::Num;
        Ok(())
    }

    fn lex_string(&mut self) -> SqlResult<()> {
        let b = self.b;
        let mut s = self.start;
        let mut hi_surrogate: Option<u32> = None;
        self.strval.clear();
        let low_surrogate = || syntax("Unicode low surrogate must follow a high surrogate.".into());
        loop {
            s += 1;
            if s >= b.len() {
                self.end = s;
                return Err(syntax(format!(
                    "Token \"{}\" is invalid.",
                    &self.src[self.start..s]
                )));
            }
            let c = b[s];
            if c == b'"' {
                break;
            }
            if c < 32 {
                return Err(syntax(format!(
                    "Character with value 0x{c:02x} must be escaped."
                )));
            }
            if c == b'\\' {
                s += 1;
                if s >= b.len() {
                    return Err(syntax(format!(
                        "Token \"{}\" is invalid.",
                        &self.src[self.start..s]
                    )));
                }
                if b[s] == b'u' {
                    let mut ch: u32 = 0;
                    for _ in 0..4 {
                        s += 1;
                        if s >= b.len() {
                            return Err(syntax(format!(
                                "Token \"{}\" is invalid.",
                                &self.src[self.start..s]
                            )));
                        }
                        match (b[s] as char).to_digit(16) {
                            Some(v) => ch = ch * 16 + v,
                            None => {
                                return Err(syntax(
                                    "\"\\u\" must be followed by four hexadecimal digits.".into(),
                                ))
                            }
                        }
                    }
                    if self.escapes {
                        if (0xD800..=0xDBFF).contains(&ch) {
                            if hi_surrogate.is_some() {
                                return Err(syntax(
                                    "Unicode high surrogate must not follow a high surrogate."
                                        .into(),
                                ));
                            }
                            hi_surrogate = Some(ch);
                            continue;
                        } else if (0xDC00..=0xDFFF).contains(&ch) {
                            let Some(hi) = hi_surrogate.take() else {
                                return Err(low_surrogate());
                            };
                            ch = 0x10000 + ((hi - 0xD800) << 10) + (ch - 0xDC00);
                        }
                        if hi_surrogate.is_some() {
                            return Err(low_surrogate());
                        }
                        if ch == 0 {
                            return Err(SqlError::new(
                                UNTRANSLATABLE_CHARACTER,
                                "unsupported Unicode escape sequence",
                            )
                            .with_detail("\\u0000 cannot be converted to text."));
                        }
                        self.strval.push(char::from_u32(ch).unwrap_or('\u{FFFD}'));
                    }
                } else if self.escapes {
                    if hi_surrogate.is_some() {
                        return Err(low_surrogate());
                    }
                    let decoded = match b[s] {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => {
                            return Err(syntax(format!(
                                "Escape sequence \"\\{}\" is invalid.",
                                self.char_at(s)
                            )))
                        }
                    };
                    self.strval.push(decoded);
                } else if !b"\"\\/bfnrt".contains(&b[s]) {
                    return Err(syntax(format!(
                        "Escape sequence \"\\{}\" is invalid.",
                        self.char_at(s)
                    )));
                }
            } else if self.escapes {
                if hi_surrogate.is_some() {
                    return Err(low_surrogate());
                }
                let ch = self.char_at(s);
                self.strval.push_str(ch);
                s += ch.len() - 1;
            }
        }
        if hi_surrogate.is_some() {
            return Err(low_surrogate());
        }
        self.end = s + 1;
        self.pos = s + 1;
        self.tok = Tok::Str;
        Ok(())
    }

    fn report(&self, ctx: Ctx) -> SqlError {
        if self.tok == Tok::End {
            return syntax("The input string ended unexpectedly.".into());
        }
        let t = self.token_text();
        syntax(match ctx {
            Ctx::Value => format!("Expected JSON value, but found \"{t}\"."),
            Ctx::String => format!("Expected string, but found \"{t}\"."),
            Ctx::ArrayNext => format!("Expected \",\" or \"]\", but found \"{t}\"."),
            Ctx::ObjectStart => format!("Expected string or \"}}\", but found \"{t}\"."),
            Ctx::ObjectLabel => format!("Expected \":\", but found \"{t}\"."),
            Ctx::ObjectNext => format!("Expected \",\" or \"}}\", but found \"{t}\"."),
            Ctx::End => format!("Expected end of input, but found \"{t}\"."),
        })
    }

    fn expect(&mut self, ctx: Ctx, tok: Tok) -> SqlResult<()> {
        if self.tok == tok {
            self.lex()
        } else {
            Err(self.report(ctx))
        }
    }

    /// One JSON value from the current token, iteratively (an explicit
    /// stack rather than recursion), following pg_parse_json's order of
    /// lexing and its error contexts.
    fn value(&mut self) -> SqlResult<Node> {
        enum Frame {
            Arr(Vec<Node>),
            /// Pairs so far and the key whose value is being parsed.
            Obj(Vec<(String, Node)>, String),
        }
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            let mut node = match self.tok {
                Tok::ObjStart => {
                    self.enter(stack.len())?;
                    self.lex()?;
                    match self.tok {
                        Tok::Str => {
                            let key = self.field_key()?;
                            stack.push(Frame::Obj(Vec::new(), key));
                            continue;
                        }
                        Tok::ObjEnd => {
                            self.lex()?;
                            Node::Obj(Vec::new())
                        }
                        _ => return Err(self.report(Ctx::ObjectStart)),
                    }
                }
                Tok::ArrStart => {
                    self.enter(stack.len())?;
                    self.lex()?;
                    if self.tok != Tok::ArrEnd {
                        stack.push(Frame::Arr(Vec::new()));
                        continue;
                    }
                    self.lex()?;
                    Node::Arr(Vec::new())
                }
                _ => self.scalar()?,
            };
            // Attach the finished value to its container, closing
            // containers until one expects another member.
            loop {
                match stack.last_mut() {
                    None => return Ok(node),
                    Some(Frame::Arr(elems)) => {
                        elems.push(node);
                        if self.tok == Tok::Comma {
                            self.lex()?;
                            break;
                        }
                        self.expect(Ctx::ArrayNext, Tok::ArrEnd)?;
                        let Some(Frame::Arr(elems)) = stack.pop() else {
                            unreachable!("top frame is an array")
                        };
                        node = Node::Arr(elems);
                    }
                    Some(Frame::Obj(pairs, key)) => {
                        pairs.push((std::mem::take(key), node));
                        if self.tok == Tok::Comma {
                            self.lex()?;
                            *key = self.field_key()?;
                            break;
                        }
                        self.expect(Ctx::ObjectNext, Tok::ObjEnd)?;
                        let Some(Frame::Obj(pairs, _)) = stack.pop() else {
                            unreachable!("top frame is an object")
                        };
                        node = self.finish_object(pairs);
                    }
                }
            }
        }
    }

    fn scalar(&mut self) -> SqlResult<Node> {
        let node = match self.tok {
            Tok::Str => Node::Str(std::mem::take(&mut self.strval)),
            Tok::Num => Node::Num(self.token_text().to_owned()),
            Tok::True => Node::Bool(true),
            Tok::False => Node::Bool(false),
            Tok::Null => Node::Null,
            _ => return Err(self.report(Ctx::Value)),
        };
        self.lex()?;
        match node {
            // jsonb stores numbers as numeric.
            Node::Num(raw) if self.escapes => Ok(Node::Num(
                decimal_parts(&raw)
                    .ok_or_else(|| syntax(format!("Token \"{raw}\" is invalid.")))?
                    .pg_text()?,
            )),
            other => Ok(other),
        }
    }

    /// Entering a container below `depth` open ones.
    fn enter(&self, depth: usize) -> SqlResult<()> {
        if depth >= MAX_DEPTH {
            return Err(
                SqlError::new(STATEMENT_TOO_COMPLEX, "stack depth limit exceeded").with_detail(
                    format!("keyclaim accepts JSON nested at most {MAX_DEPTH} levels deep"),
                ),
            );
        }
        Ok(())
    }

    /// An object member's key and the colon after it.
    fn field_key(&mut self) -> SqlResult<String> {
        if self.tok != Tok::Str {
            return Err(self.report(Ctx::String));
        }
        let key = std::mem::take(&mut self.strval);
        self.lex()?;
        self.expect(Ctx::ObjectLabel, Tok::Colon)?;
        Ok(key)
    }

    fn finish_object(&self, mut pairs: Vec<(String, Node)>) -> Node {
        if self.escapes {
            // jsonb: order keys by length then bytes; the last duplicate wins.
            pairs.sort_by(|a, b| key_order(&a.0, &b.0));
            let mut unique: Vec<(String, Node)> = Vec::with_capacity(pairs.len());
            for pair in pairs {
                match unique.last_mut() {
                    Some(last) if last.0 == pair.0 => *last = pair,
                    _ => unique.push(pair),
                }
            }
            pairs = unique;
        }
        Node::Obj(pairs)
    }
}

fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Parse `s` as json (`escapes` false: validate only, strings not decoded)
/// or jsonb (`escapes` true: strings decoded, numbers as numeric, objects
/// normalised).
pub(super) fn parse(s: &str, escapes: bool) -> SqlResult<Node> {
    let mut p = Parser {
        src: s,
        b: s.as_bytes(),
        pos: 0,
        tok: Tok::End,
        start: 0,
        end: 0,
        escapes,
        strval: String::new(),
    };
    p.lex()?;
    let node = p.value()?;
    if p.tok != Tok::End {
        return Err(p.report(Ctx::End));
    }
    Ok(node)
}

/// One step of a JSON path (`->`, `#>`): an object's key, or an array's
/// index (negative: from the end).
#[derive(Debug, Clone, PartialEq)]
pub enum PathStep {
    Key(String),
    Index(i64),
}

/// What `doc -> step -> ...` (`#>`) finds in the JSON text `doc`: None when
/// the path leads nowhere. `as_text`: as `->>` (`#>>`) gives it, a string
/// without its quotes and a JSON null as None. The element is printed as
/// jsonb prints it.
pub fn get_path(doc: &str, path: &[PathStep], as_text: bool) -> SqlResult<Option<String>> {
    let root = parse(doc, true)?;
    Ok(walk(&root, path).and_then(|found| shown(found, as_text)))
}

/// The node `path` leads to from `at`.
fn walk<'a>(at: &'a Node, path: &[PathStep]) -> Option<&'a Node> {
    let Some((step, rest)) = path.split_first() else {
        return Some(at);
    };
    let index = |items: &'a [Node], i: i64| {
        let i = if i < 0 { items.len() as i64 + i } else { i };
        usize::try_from(i).ok().and_then(|i| items.get(i))
    };
    let next = match (at, step) {
        (Node::Obj(pairs), PathStep::Key(k)) => pairs
            .iter()
            .rev()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v),
        (Node::Arr(items), PathStep::Index(i)) => index(items, *i),
        // A path element given as text is an array's index (`#> '{a,0}'`).
        (Node::Arr(items), PathStep::Key(k)) => {
            k.trim().parse::<i64>().ok().and_then(|i| index(items, i))
        }
        // jsonb keeps a scalar as an array of one: `-> 0` is the scalar.
        (Node::Null | Node::Bool(_) | Node::Num(_) | Node::Str(_), PathStep::Index(0 | -1)) => {
            Some(at)
        }
        _ => None,
    };
    walk(next?, rest)
}

fn shown(node: &Node, as_text: bool) -> Option<String> {
    match (node, as_text) {
        (Node::Null, true) => None,
        (Node::Str(s), true) => Some(s.clone()),
        _ => Some(to_text(node, false)),
    }
}

/// jsonb's output function; `canonical` also strips trailing fraction
/// zeros from numbers so that equal jsonb values print identically.
pub(super) fn to_text(node: &Node, canonical: bool) -> String {
    let mut out = String::new();
    write(node, canonical, &mut out);
    out
}

fn write(node: &Node, canonical: bool, out: &mut String) {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Num(n) if canonical => out.push_str(&canonical_number(n)),
        Node::Num(n) => out.push_str(n),
        Node::Str(s) => escape(s, out),
        Node::Arr(elems) => {
            out.push('[');
            for (i, e) in elems.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(e, canonical, out);
            }
            out.push(']');
        }
        Node::Obj(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                escape(k, out);
                out.push_str(": ");
                write(v, canonical, out);
            }
            out.push('}');
        }
    }
}

/// PostgreSQL's escape_json.
fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// numeric_out text without trailing fraction zeros: 1.50 -> 1.5, 2.0 -> 2.
fn canonical_number(n: &str) -> String {
    if n.contains('.') {
        n.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        n.to_owned()
    }
}

/// Compare two numeric_out strings by value.
fn cmp_numbers(a: &str, b: &str) -> Ordering {
    let (a, b) = (canonical_number(a), canonical_number(b));
    let (an, bn) = (a.starts_with('-'), b.starts_with('-'));
    let split = |s: &str| -> (String, String) {
        let s = s.trim_start_matches('-');
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        (i.to_owned(), f.to_owned())
    };
    let magnitude = |x: &str, y: &str| {
        let ((xi, xf), (yi, yf)) = (split(x), split(y));
        xi.len()
            .cmp(&yi.len())
            .then_with(|| xi.cmp(&yi))
            .then_with(|| xf.cmp(&yf))
    };
    match (an, bn) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => magnitude(&a, &b),
        (true, true) => magnitude(&b, &a),
    }
}

/// jbvType order: null < string < numeric < bool < array < object.
fn rank(n: &Node) -> u8 {
    match n {
        Node::Null => 0,
        Node::Str(_) => 1,
        Node::Num(_) => 2,
        Node::Bool(_) => 3,
        Node::Arr(_) => 0x10,
        Node::Obj(_) => 0x11,
    }
}

/// jsonb's btree order (compareJsonbContainers). A top-level scalar is a
/// one-element "raw scalar" array: it sorts after `[]`, before other arrays.
pub(super) fn compare(a: &Node, b: &Node) -> Ordering {
    let scalar = |n: &Node| !matches!(n, Node::Arr(_) | Node::Obj(_));
    match (a, b) {
        (x, y) if scalar(x) && scalar(y) => compare_inner(x, y),
        (x, Node::Arr(elems)) if scalar(x) => {
            if elems.is_empty() {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Node::Arr(elems), y) if scalar(y) => {
            if elems.is_empty() {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        // A raw scalar begins as an array, which sorts below an object.
        (x, Node::Obj(_)) if scalar(x) => Ordering::Less,
        (Node::Obj(_), y) if scalar(y) => Ordering::Greater,
        _ => compare_inner(a, b),
    }
}

fn compare_inner(a: &Node, b: &Node) -> Ordering {
    match (a, b) {
        (Node::Null, Node::Null) => Ordering::Equal,
        (Node::Str(x), Node::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Node::Num(x), Node::Num(y)) => cmp_numbers(x, y),
        (Node::Bool(x), Node::Bool(y)) => x.cmp(y),
        (Node::Arr(x), Node::Arr(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|(p, q)| compare_inner(p, q))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }),
        (Node::Obj(x), Node::Obj(y)) => x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|((kx, vx), (ky, vy))| {
                    kx.as_bytes()
                        .cmp(ky.as_bytes())
                        .then_with(|| compare_inner(vx, vy))
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }),
        _ => rank(a).cmp(&rank(b)),
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use crate::types::test_util::{assert_error, jsonb, key, parse, parse_err, text};
    use crate::types::SqlType;

    #[test]
    fn jsonb_ordering_matches_postgres() {
        use Ordering::*;
        // Each pair checked against PostgreSQL's jsonb comparison operators.
        let cases: &[(&str, &str, Ordering)] = &[
            ("{\"a\":1.0}", "{\"a\":1}", Equal),
            ("1", "[]", Greater),
            ("null", "[]", Greater),
            ("1", "[1]", Less),
            ("{\"b\":1}", "{\"aa\":1}", Greater),
            ("true", "1", Greater),
            ("\"a\"", "1", Less),
            ("null", "\"a\"", Less),
            ("{}", "[]", Greater),
            ("[1,2]", "[3]", Greater),
            ("[1,2]", "[1,3]", Less),
            ("{\"a\":1,\"b\":2}", "{\"c\":0}", Greater),
            ("{\"a\":2}", "{\"a\":10}", Less),
            ("[\"b\"]", "[1]", Less),
            ("[[1]]", "[{}]", Less),
            ("\"b\"", "\"ab\"", Greater),
            ("-1.5", "-1.25", Less),
            ("100", "99.999", Greater),
            ("0.0", "-0", Equal),
            ("{\"a\":[1,2]}", "{\"a\":[1,2.0]}", Equal),
            ("false", "true", Less),
            ("[null]", "[false]", Less),
            ("1", "{}", Less),
        ];
        for (a, b, expected) in cases {
            assert_eq!(jsonb(a).sql_cmp(&jsonb(b)), Some(*expected), "{a} vs {b}");
            assert_eq!(
                jsonb(b).sql_cmp(&jsonb(a)),
                Some(expected.reverse()),
                "{b} vs {a}"
            );
            assert_eq!(
                key(&jsonb(a)) == key(&jsonb(b)),
                *expected == Equal,
                "{a} vs {b} key"
            );
        }
    }

    #[test]
    fn json_nesting_limit() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let v = jsonb(&nested(1000));
        assert_eq!(text(&v).len(), 2000);
        assert_eq!(v.sql_cmp(&v), Some(Ordering::Equal));
        assert_eq!(key(&v).len(), 2001);
        parse(&SqlType::Json, &nested(1000));
        for t in [SqlType::Json, SqlType::Jsonb] {
            let e = parse_err(&t, &nested(100_000));
            assert_error(&e, "54001", "stack depth limit exceeded");
        }
    }
}
