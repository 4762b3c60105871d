//! `INSERT ... ON CONFLICT (cols) WHERE predicate DO ...`, the inference
//! clause that names a partial unique index (what an upsert against a
//! soft-delete index sends), which sqlparser does not parse: the `WHERE
//! predicate` is taken out of the conflict target and carried as an
//! optimizer-hint comment after INSERT (`/*keyclaim+conflict_where ...*/`),
//! as `overriding` carries its clause; [`of`] reads it back.

use sqlparser::ast;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use super::is_word;

const HINT: &str = "keyclaim";
const LABEL: &str = "conflict_where ";

/// Each statement of the query string on its own.
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    super::each_statement_naming(tokens, &["conflict"], rewrite_statement)
}

fn rewrite_statement(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = super::solid(&tokens);
    let at = |n: usize| solid.get(n).map(|&j| &tokens[j].token);
    if !at(0).is_some_and(|t| is_word(t, "insert")) {
        return tokens;
    }
    // `ON CONFLICT (`, outside any parentheses.
    let mut depth = 0i32;
    let mut open = None;
    for n in 1..solid.len() {
        match at(n) {
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => depth -= 1,
            Some(Token::SemiColon) => break,
            Some(t) if depth == 0 && is_word(t, "on") => {
                if at(n + 1).is_some_and(|c| is_word(c, "conflict"))
                    && matches!(at(n + 2), Some(Token::LParen))
                {
                    open = Some(n + 2);
                }
                break;
            }
            _ => {}
        }
    }
    let Some(open) = open else {
        return tokens;
    };
    // Its closing parenthesis, then `WHERE ... DO` at that level.
    let mut depth = 0i32;
    let Some(close) = (open..solid.len()).find(|&n| {
        match at(n) {
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => depth -= 1,
            _ => {}
        }
        depth == 0
    }) else {
        return tokens;
    };
    if !at(close + 1).is_some_and(|t| is_word(t, "where")) {
        return tokens;
    }
    let mut depth = 0i32;
    let Some(action) = (close + 2..solid.len()).find(|&n| {
        match at(n) {
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => depth -= 1,
            _ => {}
        }
        depth == 0 && at(n).is_some_and(|t| is_word(t, "do"))
    }) else {
        return tokens;
    };
    let predicate: String = tokens[solid[close + 2]..solid[action]]
        .iter()
        .map(|t| t.token.to_string())
        .collect();
    let (insert, from, to) = (solid[0], solid[close + 1], solid[action]);
    let span = tokens[insert].span;
    let mut out: Vec<TokenWithSpan> = tokens[..=insert].to_vec();
    out.push(TokenWithSpan {
        token: Token::Whitespace(Whitespace::Space),
        span,
    });
    out.push(TokenWithSpan {
        token: Token::Whitespace(Whitespace::MultiLineComment(format!(
            "{HINT}+{LABEL}{}",
            predicate.trim()
        ))),
        span,
    });
    out.extend_from_slice(&tokens[insert + 1..from]);
    out.extend_from_slice(&tokens[to..]);
    out
}

/// The predicate of an INSERT's conflict target, if it had one, as
/// written.
pub fn of(ins: &ast::Insert) -> Option<&str> {
    ins.optimizer_hints
        .iter()
        .filter(|h| h.prefix == HINT)
        .find_map(|h| h.text.strip_prefix(LABEL))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> (Option<String>, String) {
        match crate::sql::parse(sql).unwrap().as_slice() {
            [ast::Statement::Insert(ins)] => (
                of(ins).map(str::to_owned),
                ins.on.as_ref().map(|o| o.to_string()).unwrap_or_default(),
            ),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn the_inference_predicate_is_carried() {
        let (p, on) = read(
            "INSERT INTO m (email) VALUES ('a') ON CONFLICT (email) WHERE (deleted_at IS NULL) DO UPDATE SET n = 1 WHERE m.n > 0",
        );
        assert_eq!(p.as_deref(), Some("(deleted_at IS NULL)"));
        assert_eq!(
            on.trim(),
            "ON CONFLICT(email) DO UPDATE SET n = 1 WHERE m.n > 0"
        );
        let (p, _) = read(
            "insert into m (email) values ('a') on conflict (email, org) where a and b = 'do' do nothing",
        );
        assert_eq!(p.as_deref(), Some("a and b = 'do'"));
        assert_eq!(
            read("INSERT INTO m VALUES (1) ON CONFLICT (id) DO NOTHING").0,
            None
        );
        assert_eq!(read("INSERT INTO m (\"conflict\") VALUES (1)").0, None);
    }
}
