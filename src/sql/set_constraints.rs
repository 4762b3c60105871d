//! `SET CONSTRAINTS {ALL | name [, ...]} {DEFERRED | IMMEDIATE}` (Django
//! sends `SET CONSTRAINTS ALL IMMEDIATE` when its tests check constraints,
//! and after loading fixtures), which sqlparser does not parse: rewritten,
//! token by token, into a SET of a setting no client can name (its name
//! starts with a NUL byte, which the protocol cannot carry), whose values
//! are the mode and then the names; [`plan`] reads it back.

use sqlparser::ast::{Expr, Value};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Word};

use crate::error::{SqlError, SqlResult};

/// The name SET CONSTRAINTS is rewritten to set.
pub const MARK: &str = "\0set_constraints";

fn is_word(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k)
}

/// Each statement of the query string on its own: Django sends `ALTER
/// TABLE ... ADD COLUMN ... REFERENCES ...; SET CONSTRAINTS "name"
/// IMMEDIATE` as one string.
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens
        .iter()
        .any(|t| matches!(&t.token, Token::Word(w) if w.value.eq_ignore_ascii_case("constraints")))
    {
        return tokens;
    }
    super::each_statement(tokens, rewrite_statement)
}

fn rewrite_statement(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
        .collect();
    let at = |n: usize| solid.get(n).map(|&j| &tokens[j].token);
    let word = |n: usize, k: Keyword| at(n).is_some_and(|t| is_word(t, k));
    // sqlparser has no CONSTRAINTS keyword: the plain word.
    let constraints = matches!(at(1), Some(Token::Word(w))
        if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("constraints"));
    if !(word(0, Keyword::SET) && constraints) {
        return tokens;
    }
    // ALL, or names (perhaps qualified: the last part names it) separated
    // by commas; then the mode, then the end of the statement.
    let mut names: Vec<String> = Vec::new();
    let mut n = 2;
    if word(n, Keyword::ALL) {
        n += 1;
    } else {
        loop {
            let Some(name) = super::qualified_name(&at, &mut n) else {
                return tokens;
            };
            names.push(name);
            if !matches!(at(n), Some(Token::Comma)) {
                break;
            }
            n += 1;
        }
    }
    let mode = if word(n, Keyword::DEFERRED) {
        "DEFERRED"
    } else if word(n, Keyword::IMMEDIATE) {
        "IMMEDIATE"
    } else {
        return tokens;
    };
    if !matches!(at(n + 1), None | Some(Token::SemiColon)) {
        return tokens;
    }
    let span = tokens[solid[1]].span;
    let token = |token: Token| TokenWithSpan { token, span };
    let mut out: Vec<TokenWithSpan> = tokens[..solid[1]].to_vec();
    out.push(token(Token::Word(Word {
        value: MARK.to_owned(),
        quote_style: Some('"'),
        keyword: Keyword::NoKeyword,
    })));
    out.push(token(Token::Eq));
    out.push(token(Token::SingleQuotedString(mode.to_owned())));
    for name in names {
        out.push(token(Token::Comma));
        out.push(token(Token::SingleQuotedString(name)));
    }
    out.extend_from_slice(&tokens[solid[n] + 1..]);
    out
}

/// The names (None: ALL) and whether they become DEFERRED, from the values
/// [`rewrite`] set.
pub fn plan(values: &[Expr]) -> SqlResult<(Option<Vec<String>>, bool)> {
    let text = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let texts: Vec<String> = values.iter().filter_map(text).collect();
    let Some((mode, names)) = texts.split_first() else {
        return Err(SqlError::internal("SET CONSTRAINTS without a mode"));
    };
    let names = (!names.is_empty()).then(|| names.to_vec());
    Ok((names, mode == "DEFERRED"))
}

#[cfg(test)]
mod tests {
    use crate::session::utility::{SetPlan, Utility};

    fn planned(sql: &str) -> (Option<Vec<String>>, bool) {
        let stmt = crate::sql::parse(sql).unwrap().remove(0);
        match Utility::plan(&stmt) {
            Some(Ok(Utility::Set(SetPlan::Constraints { names, deferred }))) => (names, deferred),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn set_constraints_parses_as_postgresql_writes_it() {
        assert_eq!(planned("SET CONSTRAINTS ALL IMMEDIATE"), (None, false));
        assert_eq!(planned("set constraints all deferred;"), (None, true));
        assert_eq!(
            planned("SET CONSTRAINTS a, public.\"B\" DEFERRED"),
            (Some(vec!["a".into(), "B".into()]), true)
        );
        // After another statement in the same string, as Django sends it.
        let both =
            crate::sql::parse("ALTER TABLE t DROP COLUMN c; SET CONSTRAINTS \"k\" IMMEDIATE")
                .unwrap();
        assert!(matches!(
            Utility::plan(&both[1]),
            Some(Ok(Utility::Set(SetPlan::Constraints {
                deferred: false,
                ..
            })))
        ));
        assert!(crate::sql::parse("SET CONSTRAINTS ALL LATER").is_err());
        assert!(crate::sql::parse("SET CONSTRAINTS IMMEDIATE").is_err());
    }
}
