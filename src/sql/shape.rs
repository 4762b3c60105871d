//! A simple Query's shape: its text with the literal values of
//! comparisons, VALUES rows and IN lists turned into parameters, so that
//! statements that differ only in those values (what psycopg2, psycopg's
//! client-side cursors, Django and most scripts send) share one plan,
//! found without parsing (`engine::Engine::shaped_plan`).
//!
//! Only what cannot change the statement's meaning is replaced: a plain
//! string or unsigned number literal, standing alone as the right side of
//! a comparison (`= 5 AND`), as an item of a VALUES row or an IN list. A
//! literal anywhere else (a function's argument, `LIMIT 5`, `ORDER BY 1`,
//! `'x'::regclass`, `interval '1 day'`) stays in the text, as do texts the
//! scan is unsure of (escape and dollar-quoted strings, parameters, more
//! than one statement): those have no shape. A parameter takes the
//! literal's type as PostgreSQL types it (integer, bigint or numeric for a
//! number; unknown for a string, typed by where it stands), so the plan
//! is the literal's. Only statements of the single-table path keep a
//! shape's plan (`Plan::single_table`); the query engine plans its
//! statements with their literals.

use crate::types::SqlType;

/// Texts longer than this have no shape (the plan cache keeps none).
const MAX_TEXT: usize = 4096;

/// A statement text with its literal values taken out as parameters.
#[derive(Debug, PartialEq)]
pub struct Shape {
    /// The text with `$1`, `$2`, ... where the literals stood.
    pub text: String,
    /// Each parameter's type: the number literal's, or None (unknown) for
    /// a string.
    pub hints: Vec<Option<SqlType>>,
    /// Each literal's value as text (a string's quotes undone).
    pub values: Vec<String>,
}

impl Shape {
    /// `sql`'s shape; None when it has no literal to take out or when the
    /// scan cannot be sure what a literal means.
    pub fn of(sql: &str) -> Option<Shape> {
        if sql.len() > MAX_TEXT {
            return None;
        }
        let tokens = tokens(sql)?;
        if !shaped_statement(sql, &tokens) {
            return None;
        }
        let replaced = parameters(sql, &tokens);
        if replaced.is_empty() {
            return None;
        }
        let mut shape = Shape {
            text: String::with_capacity(sql.len()),
            hints: Vec::with_capacity(replaced.len()),
            values: Vec::with_capacity(replaced.len()),
        };
        let mut copied = 0;
        for (n, &i) in replaced.iter().enumerate() {
            let t = &tokens[i];
            shape.text.push_str(&sql[copied..t.start]);
            shape.text.push('$');
            shape.text.push_str(&(n + 1).to_string());
            copied = t.end;
            let literal = &sql[t.start..t.end];
            let (hint, value) = match t.kind {
                Kind::Number => (Some(number_type(literal)), literal.to_owned()),
                _ => (None, literal[1..literal.len() - 1].replace("''", "'")),
            };
            shape.hints.push(hint);
            shape.values.push(value);
        }
        shape.text.push_str(&sql[copied..]);
        Some(shape)
    }
}

/// A number literal's type, as PostgreSQL gives it: integer if it fits,
/// else bigint, else numeric; numeric with a point or an exponent.
fn number_type(literal: &str) -> SqlType {
    if literal.bytes().all(|b| b.is_ascii_digit()) {
        if literal.parse::<i32>().is_ok() {
            return SqlType::Int4;
        }
        if literal.parse::<i64>().is_ok() {
            return SqlType::Int8;
        }
    }
    SqlType::Numeric(None)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A keyword or identifier, quoted or not.
    Word,
    /// A plain string literal, `'...'`.
    String,
    /// An unsigned number literal.
    Number,
    /// An operator (`=`, `<>`, `::`, `||`, ...).
    Operator,
    /// One of `( ) , ; [ ] .`
    Punctuation,
}

#[derive(Debug)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

const OPERATOR_CHARS: &[u8] = b"+-*/<>=~!@#%^&|`?";

/// The tokens of `sql`, as PostgreSQL's scanner splits them; None for
/// anything this scan does not follow exactly.
fn tokens(sql: &str) -> Option<Vec<Token>> {
    let b = sql.as_bytes();
    // About one token in four bytes of SQL: room made once, not by doubling.
    let mut out = Vec::with_capacity(b.len() / 4 + 8);
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0c => {
                i += 1;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = comment_end(b, i)?;
                continue;
            }
            b'\'' => {
                i = quoted_end(b, i, b'\'')?;
                Kind::String
            }
            b'"' => {
                i = quoted_end(b, i, b'"')?;
                Kind::Word
            }
            b'0'..=b'9' => {
                i = number_end(b, i)?;
                Kind::Number
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number_end(b, i)?;
                Kind::Number
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80)
                {
                    i += 1;
                }
                // `E'...'`, `B'...'`, `X'...'`, `N'...'`: strings of their
                // own kinds; `$` inside a word: not followed here.
                if matches!(b.get(i), Some(b'\'') | Some(b'$')) {
                    return None;
                }
                Kind::Word
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                i += 2;
                Kind::Operator
            }
            c if OPERATOR_CHARS.contains(&c) => {
                while i < b.len()
                    && OPERATOR_CHARS.contains(&b[i])
                    && !b[i..].starts_with(b"--")
                    && !b[i..].starts_with(b"/*")
                {
                    i += 1;
                }
                Kind::Operator
            }
            b'(' | b')' | b',' | b';' | b'[' | b']' | b'.' => {
                i += 1;
                Kind::Punctuation
            }
            // Parameters, dollar quotes, `:name`, and anything else.
            _ => return None,
        };
        // Two string literals with a newline between are one string.
        if kind == Kind::String && out.last().is_some_and(|t: &Token| t.kind == Kind::String) {
            return None;
        }
        out.push(Token {
            kind,
            start,
            end: i,
        });
    }
    Some(out)
}

/// Past the end of a `/* */` comment (they nest) that starts at `i`.
fn comment_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// Past the closing quote of a literal or identifier quoted with `quote`
/// (doubled inside) that starts at `i`.
fn quoted_end(b: &[u8], mut i: usize, quote: u8) -> Option<usize> {
    i += 1;
    loop {
        let at = i + b.get(i..)?.iter().position(|&c| c == quote)?;
        if b.get(at + 1) == Some(&quote) {
            i = at + 2;
        } else {
            return Some(at + 1);
        }
    }
}

/// Past the end of a number literal at `i`: digits, a fraction, an
/// exponent. None if a letter or `_` follows (`1e`, `0x1F`, `1_000`,
/// `123abc`: read differently by PostgreSQL versions).
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(&mut i);
    if b.get(i) == Some(&b'.') && b.get(i + 1) != Some(&b'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(b.get(i), Some(b'e') | Some(b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+') | Some(b'-')) {
            j += 1;
        }
        if !b.get(j).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        i = j;
        digits(&mut i);
    }
    match b.get(i) {
        Some(&c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c >= 0x80 => None,
        _ => Some(i),
    }
}

/// The words a shaped statement starts with.
const SHAPED_COMMANDS: &[&str] = &["select", "insert", "update", "delete", "with"];

/// A statement whose literals may be shaped: one query or row write (a
/// semicolon only at its very end).
fn shaped_statement(sql: &str, tokens: &[Token]) -> bool {
    let Some((first, rest)) = tokens.split_first() else {
        return false;
    };
    let word = first.text(sql);
    first.kind == Kind::Word
        && SHAPED_COMMANDS.iter().any(|c| c.eq_ignore_ascii_case(word))
        && !rest
            .iter()
            .rev()
            .skip(1)
            .any(|t| t.is(sql, Kind::Punctuation, ";"))
}

/// The comparisons whose right side may be a parameter.
const COMPARISONS: &[&str] = &["=", "<>", "!=", "<", ">", "<=", ">="];

/// The words that may follow a comparison's literal right side: where
/// the expression ends.
const AFTER_COMPARISON: &[&str] = &[
    "and",
    "or",
    "where",
    "order",
    "group",
    "having",
    "limit",
    "offset",
    "returning",
    "for",
    "then",
    "union",
    "intersect",
    "except",
];

/// What a parenthesis opened.
#[derive(Clone, Copy, PartialEq)]
enum Paren {
    /// A row of VALUES.
    Row,
    /// The list of an IN.
    InList,
    /// Anything else: a call's arguments, a subquery, grouping.
    Other,
}

/// The indexes of the literal tokens that become parameters.
fn parameters(sql: &str, tokens: &[Token]) -> Vec<usize> {
    let mut replaced = Vec::new();
    let mut parens: Vec<Paren> = Vec::new();
    // Inside the list of rows after VALUES, at this depth of parentheses.
    let mut rows_at: Option<usize> = None;
    for (i, t) in tokens.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| &tokens[p]);
        let next = tokens.get(i + 1);
        match t.kind {
            Kind::Punctuation if t.text(sql) == "(" => {
                let paren = if rows_at == Some(parens.len()) {
                    Paren::Row
                } else if prev.is_some_and(|p| p.is_word(sql, "in")) {
                    Paren::InList
                } else {
                    Paren::Other
                };
                parens.push(paren);
            }
            Kind::Punctuation if t.text(sql) == ")" => {
                parens.pop();
                // The rows go on only with a comma.
                if rows_at == Some(parens.len())
                    && !next.is_some_and(|n| n.is(sql, Kind::Punctuation, ","))
                {
                    rows_at = None;
                }
            }
            Kind::Word if t.is_word(sql, "values") => rows_at = Some(parens.len()),
            Kind::String | Kind::Number => {
                let item = matches!(parens.last(), Some(Paren::Row | Paren::InList))
                    && prev.is_some_and(|p| {
                        p.is(sql, Kind::Punctuation, "(") || p.is(sql, Kind::Punctuation, ",")
                    })
                    && next.is_some_and(|n| {
                        n.is(sql, Kind::Punctuation, ")") || n.is(sql, Kind::Punctuation, ",")
                    });
                let compared = prev.is_some_and(|p| {
                    p.kind == Kind::Operator && COMPARISONS.contains(&p.text(sql))
                }) && match next {
                    None => true,
                    Some(n) if n.kind == Kind::Punctuation => {
                        matches!(n.text(sql), ")" | "," | ";")
                    }
                    Some(n) => AFTER_COMPARISON.iter().any(|w| n.is_word(sql, w)),
                };
                if item || compared {
                    replaced.push(i);
                }
            }
            _ => {}
        }
    }
    replaced
}

impl Token {
    fn text<'a>(&self, sql: &'a str) -> &'a str {
        &sql[self.start..self.end]
    }

    fn is(&self, sql: &str, kind: Kind, text: &str) -> bool {
        self.kind == kind && self.text(sql) == text
    }

    /// An unquoted word, in any case.
    fn is_word(&self, sql: &str, word: &str) -> bool {
        self.kind == Kind::Word && self.text(sql).eq_ignore_ascii_case(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(sql: &str) -> Option<String> {
        Shape::of(sql).map(|s| s.text)
    }

    #[test]
    fn comparisons_rows_and_in_lists_become_parameters() {
        let s = Shape::of("SELECT * FROM t WHERE id = 5 AND email = 'o''neil@x'").unwrap();
        assert_eq!(s.text, "SELECT * FROM t WHERE id = $1 AND email = $2");
        assert_eq!(s.hints, vec![Some(SqlType::Int4), None]);
        assert_eq!(s.values, vec!["5".to_string(), "o'neil@x".to_string()]);
        assert_eq!(
            text("INSERT INTO t VALUES (1, 'a', lower('B'), -2), (3.5, 'c', now(), 4);").unwrap(),
            "INSERT INTO t VALUES ($1, $2, lower('B'), -2), ($3, $4, now(), $5);"
        );
        assert_eq!(
            text("update t set n = 7, s = 'x' where id in (1, 2) returning *").unwrap(),
            "update t set n = $1, s = $2 where id in ($3, $4) returning *"
        );
        assert_eq!(
            text("SELECT a FROM (VALUES (1, 'x')) v(a, b) WHERE a <> 2").unwrap(),
            "SELECT a FROM (VALUES ($1, $2)) v(a, b) WHERE a <> $3"
        );
        assert_eq!(
            text("INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET n = 2").unwrap(),
            "INSERT INTO t VALUES ($1) ON CONFLICT (id) DO UPDATE SET n = $2"
        );
    }

    #[test]
    fn number_literals_are_typed_as_postgresql_types_them() {
        let hints = |sql: &str| Shape::of(sql).unwrap().hints;
        assert_eq!(
            hints("SELECT 1 FROM t WHERE a = 2147483647 OR a = 2147483648 OR a = 99999999999999999999 OR a = 1.5 OR a = .5 OR a = 1e3"),
            vec![
                Some(SqlType::Int4),
                Some(SqlType::Int8),
                Some(SqlType::Numeric(None)),
                Some(SqlType::Numeric(None)),
                Some(SqlType::Numeric(None)),
                Some(SqlType::Numeric(None)),
            ]
        );
    }

    #[test]
    fn literals_whose_meaning_depends_on_where_they_stand_stay() {
        for sql in [
            "SELECT 1",
            "SELECT 'a' FROM t",
            "SELECT * FROM t ORDER BY 1, 2",
            "SELECT * FROM t GROUP BY 1 LIMIT 5 OFFSET 10",
            "SELECT * FROM t WHERE a = 'x'::int",
            "SELECT * FROM t WHERE a = 'x' || 'y'",
            "SELECT * FROM t WHERE a = 5 + 1",
            "SELECT * FROM t WHERE a = -5",
            "SELECT * FROM t WHERE ts > interval '1 day'",
            "SELECT * FROM t WHERE a = ANY('{1,2}')",
            "SELECT * FROM t WHERE a BETWEEN 1 AND 5",
            "SELECT nextval('s')",
            "SELECT * FROM t WHERE a = 'x' COLLATE \"C\"",
        ] {
            assert_eq!(text(sql), None, "{sql}");
        }
    }

    #[test]
    fn texts_the_scan_is_unsure_of_have_no_shape() {
        for sql in [
            // Not a query or row write.
            "SET search_path = 'a'",
            "SHOW x",
            "EXPLAIN SELECT * FROM t WHERE a = 1",
            // More than one statement.
            "SELECT * FROM t WHERE a = 1; SELECT 2",
            // Strings of other kinds, parameters, dollar quotes.
            "SELECT * FROM t WHERE a = E'x\\n'",
            "SELECT * FROM t WHERE a = $1",
            "SELECT * FROM t WHERE a = $$x$$",
            "SELECT * FROM t WHERE a = 'x'\n'y'",
            // Numbers PostgreSQL versions read differently.
            "SELECT * FROM t WHERE a = 0x1F",
            "SELECT * FROM t WHERE a = 1_000",
            // Unterminated.
            "SELECT * FROM t WHERE a = 'x",
            "SELECT * FROM t WHERE a = 1 /* x",
        ] {
            assert_eq!(text(sql), None, "{sql}");
        }
    }

    #[test]
    fn comments_and_quoted_names_are_not_literals() {
        assert_eq!(
            text("SELECT * FROM \"t = 5\" -- = 6\nWHERE /* a = 7 /* nested */ */ a = 8").unwrap(),
            "SELECT * FROM \"t = 5\" -- = 6\nWHERE /* a = 7 /* nested */ */ a = $1"
        );
        assert_eq!(
            text("SELECT * FROM t WHERE \"naïve\" = 'é'").unwrap(),
            "SELECT * FROM t WHERE \"naïve\" = $1"
        );
    }
}
