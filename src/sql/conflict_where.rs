//! `INSERT ... ON CONFLICT (cols) WHERE predicate DO ...`, the inference
//! clause that names a partial unique index (what an upsert against a
//! soft-delete index sends), which sqlparser does not parse: the `WHERE
//! predicate` is taken out of the conflict target and carried as an
//! optimizer-hint comment after INSERT (`/*keyclaim+conflict_where ...*/`),
//! as `overriding` carries its clause; [`of`] reads it back.

use sqlparser::ast;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::is_word;

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
    // `ON CONFLICT (`, outside any parentheses (a join's ON is not it).
    let Some(on) = super::top_level(&tokens, &solid, |n| {
        at(n).is_some_and(|t| is_word(t, "on"))
            && at(n + 1).is_some_and(|c| is_word(c, "conflict"))
            && matches!(at(n + 2), Some(Token::LParen))
    }) else {
        return tokens;
    };
    // Its closing parenthesis, then `WHERE ... DO` at that level.
    let mut depth = 0i32;
    let Some(close) = (on + 2..solid.len()).find(|&n| {
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
    let Some(action) = super::top_level(&tokens, &solid[close..], |k| {
        at(close + k).is_some_and(|t| is_word(t, "do"))
    })
    .map(|k| close + k) else {
        return tokens;
    };
    let predicate: String = tokens[solid[close + 2]..solid[action]]
        .iter()
        .map(|t| t.token.to_string())
        .collect();
    let clause = (solid[close + 1], solid[action]);
    super::with_insert_hint(
        &tokens,
        solid[0],
        clause,
        &format!("{LABEL}{}", predicate.trim()),
    )
}

/// The predicate of an INSERT's conflict target, if it had one, as
/// written.
pub fn of(ins: &ast::Insert) -> Option<&str> {
    super::insert_hints(ins).find_map(|h| h.strip_prefix(LABEL))
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
