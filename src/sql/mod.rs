//! SQL: parse (sqlparser, PostgreSQL dialect), plan into keyclaim's small set
//! of operations, and evaluate expressions.
pub mod alter;
pub mod alter_sequence;
pub mod check;
pub mod conflict_where;
pub mod copy;
pub mod ddl;
pub mod expr;
pub mod fetch;
pub mod locking;
pub mod maintenance;
pub mod overriding;
pub mod plan;
mod sequence_options;
pub mod set_constraints;
pub mod shape;
mod time_zone;

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{TokenWithSpan, Tokenizer};

use crate::error::{SqlError, SqlResult};

/// Parse SQL text into statements (PostgreSQL dialect); errors are 42601.
/// Row-locking strengths sqlparser lacks are carried through
/// (`locking::rewrite`), a time zone given as an interval is turned into
/// the zone PostgreSQL makes of it (`time_zone::rewrite`), and sequence
/// options are put in the order sqlparser takes (`sequence_options`).
pub fn parse(sql: &str) -> SqlResult<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    Tokenizer::new(&dialect, sql)
        .with_unescape(true)
        .tokenize_with_location()
        .map_err(ParserError::from)
        .and_then(|tokens| {
            Parser::new(&dialect)
                .with_tokens_with_locations(rewrite(tokens))
                .parse_statements()
        })
        .map_err(|e| syntax_error(sql, &e.to_string()))
}

/// What sqlparser lacks, rewritten token by token before it parses.
fn rewrite(
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Vec<sqlparser::tokenizer::TokenWithSpan> {
    let tokens = time_zone::rewrite(locking::rewrite(tokens));
    let tokens = set_constraints::rewrite(sequence_options::rewrite(tokens));
    let tokens = alter_sequence::rewrite(maintenance::rewrite(tokens));
    let tokens = overriding::rewrite(conflict_where::rewrite(tokens));
    copy::rewrite(fetch::rewrite(tokens))
}

/// Each statement of a query string (its tokens up to and including a
/// `;`) rewritten on its own by `rewrite_statement`: a string may hold
/// several (Django sends `ALTER TABLE ...; SET CONSTRAINTS ...` as one).
fn each_statement(
    tokens: Vec<TokenWithSpan>,
    rewrite_statement: impl Fn(Vec<TokenWithSpan>) -> Vec<TokenWithSpan>,
) -> Vec<TokenWithSpan> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut statement = Vec::new();
    for t in tokens {
        let end = matches!(t.token, sqlparser::tokenizer::Token::SemiColon);
        statement.push(t);
        if end {
            out.extend(rewrite_statement(std::mem::take(&mut statement)));
        }
    }
    out.extend(rewrite_statement(statement));
    out
}

/// Each statement rewritten by `rewrite_statement`, when the query string
/// has one of `words` at all (most have none: they pass untouched).
fn each_statement_naming(
    tokens: Vec<TokenWithSpan>,
    words: &[&str],
    rewrite_statement: impl Fn(Vec<TokenWithSpan>) -> Vec<TokenWithSpan>,
) -> Vec<TokenWithSpan> {
    if !tokens
        .iter()
        .any(|t| words.iter().any(|w| is_word(&t.token, w)))
    {
        return tokens;
    }
    each_statement(tokens, rewrite_statement)
}

/// Whether `t` is the unquoted word `word` (any case).
fn is_word(t: &sqlparser::tokenizer::Token, word: &str) -> bool {
    matches!(t, sqlparser::tokenizer::Token::Word(w)
        if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// The positions of a statement's tokens that are not whitespace.
fn solid(tokens: &[TokenWithSpan]) -> Vec<usize> {
    (0..tokens.len())
        .filter(|&j| !matches!(tokens[j].token, sqlparser::tokenizer::Token::Whitespace(_)))
        .collect()
}

/// The first position `n` (past the first word) of a statement's solid
/// tokens, outside any parentheses and before its `;`, where `found(n)`.
fn top_level(
    tokens: &[TokenWithSpan],
    solid: &[usize],
    found: impl Fn(usize) -> bool,
) -> Option<usize> {
    use sqlparser::tokenizer::Token;
    let mut depth = 0i32;
    for n in 1..solid.len() {
        match tokens[solid[n]].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon => return None,
            _ if depth == 0 && found(n) => return Some(n),
            _ => {}
        }
    }
    None
}

/// An INSERT's tokens with `tokens[from..to]` taken out and `hint`
/// carried as an optimizer-hint comment right after its INSERT at
/// `tokens[insert]` (`/*keyclaim+hint*/`), which sqlparser keeps in
/// `Insert::optimizer_hints` (where `overriding` and `conflict_where`
/// read theirs back).
fn with_insert_hint(
    tokens: &[TokenWithSpan],
    insert: usize,
    (from, to): (usize, usize),
    hint: &str,
) -> Vec<TokenWithSpan> {
    use sqlparser::tokenizer::{Token, Whitespace};
    let span = tokens[insert].span;
    let mut out: Vec<TokenWithSpan> = tokens[..=insert].to_vec();
    out.push(TokenWithSpan {
        token: Token::Whitespace(Whitespace::Space),
        span,
    });
    out.push(TokenWithSpan {
        token: Token::Whitespace(Whitespace::MultiLineComment(format!(
            "{INSERT_HINT}+{hint}"
        ))),
        span,
    });
    out.extend_from_slice(&tokens[insert + 1..from]);
    out.extend_from_slice(&tokens[to..]);
    out
}

/// The prefix of the hints [`with_insert_hint`] carries.
const INSERT_HINT: &str = "keyclaim";

/// The hints [`with_insert_hint`] carried on `ins`.
fn insert_hints(ins: &sqlparser::ast::Insert) -> impl Iterator<Item = &str> {
    ins.optimizer_hints
        .iter()
        .filter(|h| h.prefix == INSERT_HINT)
        .map(|h| h.text.as_str())
}

/// A statement sqlparser lacks, carried through as `SET "<mark>" =
/// 'value', ...` (a setting no client can name): the tokens before
/// `start` (leading whitespace), the SET, then the tokens from `rest` on
/// (the statement's end). [`marked_values`] reads the values back.
fn mark_set(
    tokens: &[TokenWithSpan],
    start: usize,
    mark: &str,
    values: impl IntoIterator<Item = String>,
    rest: Option<usize>,
) -> Vec<TokenWithSpan> {
    use sqlparser::tokenizer::{Token, Whitespace, Word};
    let span = tokens[start].span;
    let token = |token: Token| TokenWithSpan { token, span };
    let mut out: Vec<TokenWithSpan> = tokens[..start].to_vec();
    out.push(token(Token::make_keyword("SET")));
    out.push(token(Token::Whitespace(Whitespace::Space)));
    out.push(token(Token::Word(Word {
        value: mark.to_owned(),
        quote_style: Some('"'),
        keyword: sqlparser::keywords::Keyword::NoKeyword,
    })));
    out.push(token(Token::Eq));
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(token(Token::Comma));
        }
        out.push(token(Token::SingleQuotedString(v)));
    }
    if let Some(rest) = rest {
        out.extend_from_slice(&tokens[rest..]);
    }
    out
}

/// The values a [`mark_set`] statement set, as text.
fn marked_values(values: &[sqlparser::ast::Expr]) -> Vec<&str> {
    use sqlparser::ast::{Expr, Value};
    values
        .iter()
        .filter_map(|e| match e {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => Some(s.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A name, perhaps qualified (its last part names it), at token `*n` of
/// those `at` numbers, as PostgreSQL folds it; `*n` moves past it. None
/// when no name is there, or a qualified one is cut short.
fn qualified_name<'t>(
    at: &impl Fn(usize) -> Option<&'t sqlparser::tokenizer::Token>,
    n: &mut usize,
) -> Option<String> {
    use sqlparser::tokenizer::Token;
    let Some(Token::Word(w)) = at(*n) else {
        return None;
    };
    let mut name = folded(w);
    *n += 1;
    while matches!(at(*n), Some(Token::Period)) {
        let Some(Token::Word(w)) = at(*n + 1) else {
            return None;
        };
        name = folded(w);
        *n += 2;
    }
    Some(name)
}

/// An identifier as PostgreSQL folds it: quoted as written, else lower
/// case.
fn folded(w: &sqlparser::tokenizer::Word) -> String {
    match w.quote_style {
        Some(_) => w.value.clone(),
        None => w.value.to_lowercase(),
    }
}

/// sqlparser says `Expected: X, found: TOKEN at Line: L, Column: C`;
/// PostgreSQL says `syntax error at or near "TOKEN"` with the position, or
/// `syntax error at end of input`. Clients (psql) draw the caret from it.
fn syntax_error(sql: &str, message: &str) -> SqlError {
    let Some(found) = message.split("found: ").nth(1) else {
        let msg = message
            .strip_prefix("sql parser error: ")
            .unwrap_or(message);
        return SqlError::syntax(format!("syntax error: {msg}"));
    };
    let (token, place) = match found.rsplit_once(" at Line: ") {
        Some((t, p)) => (t, Some(p)),
        None => (found, None),
    };
    if token == "EOF" {
        let end = sql
            .trim_end()
            .trim_end_matches(';')
            .trim_end()
            .chars()
            .count() as u32;
        return SqlError::syntax("syntax error at end of input").with_position(end + 1);
    }
    let location = place.and_then(|p| {
        let (line, col) = p.split_once(", Column: ")?;
        Some(sqlparser::tokenizer::Location {
            line: line.trim().parse().ok()?,
            column: col.trim().parse().ok()?,
        })
    });
    let err = SqlError::syntax(format!("syntax error at or near \"{token}\""));
    match location {
        Some(loc) => err.at(loc).locate(sql),
        // Some sqlparser errors carry no location: point at the token's
        // first occurrence, which is where it stands in simple statements.
        None => match sql.find(token) {
            Some(byte) => err.with_position(sql[..byte].chars().count() as u32 + 1),
            None => err,
        },
    }
}

/// Parse one expression (a stored DEFAULT).
pub fn parse_expr(text: &str) -> SqlResult<sqlparser::ast::Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn syntax_errors_read_like_postgres() {
        let e = parse("SELEC 1").unwrap_err();
        assert_eq!(e.code, "42601");
        assert_eq!(e.message, "syntax error at or near \"SELEC\"");
        assert_eq!(e.position, Some(1));
        let e = parse("SELECT 1,\n  FROM").unwrap_err();
        assert_eq!(e.message, "syntax error at or near \"FROM\"");
        assert_eq!(e.position, Some(13));
        let e = parse("SELECT * FROM").unwrap_err();
        assert_eq!(e.message, "syntax error at end of input");
        assert_eq!(e.position, Some(14));
    }
}
