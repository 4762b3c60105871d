//! `VACUUM` and `ANALYZE` (pgbench runs `VACUUM ANALYZE t` after loading,
//! migration tools run ANALYZE): accepted, with nothing to do, since the
//! store keeps no dead tuples or planner statistics of keyclaim's. sqlparser
//! reads `VACUUM ANALYZE t` wrongly and most forms not at all, so they are
//! rewritten, token by token, into a SET of a setting no client can name
//! (as `set_constraints` does), whose values are the command and then the
//! tables named; [`plan`] reads it back.

use sqlparser::ast::Expr;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{SqlError, SqlResult};

/// The name VACUUM and ANALYZE are rewritten to set.
pub const MARK: &str = "\0maintenance";

/// Each statement of the query string on its own.
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| command(&t.token).is_some()) {
        return tokens;
    }
    super::each_statement(tokens, rewrite_statement)
}

/// The command tag a leading word starts: VACUUM, or ANALYZE (ANALYSE).
/// Every statement's tokens pass here: no allocation.
fn command(t: &Token) -> Option<&'static str> {
    let Token::Word(w) = t else { return None };
    if w.quote_style.is_some() {
        return None;
    }
    let is = |word: &str| w.value.eq_ignore_ascii_case(word);
    if is("vacuum") {
        Some("VACUUM")
    } else if is("analyze") || is("analyse") {
        Some("ANALYZE")
    } else {
        None
    }
}

fn is_option_word(t: &Token, tag: &str) -> bool {
    let Token::Word(w) = t else { return false };
    if w.quote_style.is_some() {
        return false;
    }
    let word = w.value.to_lowercase();
    match tag {
        "VACUUM" => ["full", "freeze", "verbose", "analyze", "analyse"].contains(&word.as_str()),
        _ => word == "verbose",
    }
}

fn rewrite_statement(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = super::solid(&tokens);
    let at = |n: usize| solid.get(n).map(|&j| &tokens[j].token);
    let Some(tag) = at(0).and_then(command) else {
        return tokens;
    };
    let mut n = 1;
    // `( option [value] [, ...] )`: skipped whole.
    if matches!(at(n), Some(Token::LParen)) {
        let mut depth = 0;
        loop {
            match at(n) {
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth -= 1,
                None => return tokens,
                _ => {}
            }
            n += 1;
            if depth == 0 {
                break;
            }
        }
    }
    while at(n).is_some_and(|t| is_option_word(t, tag)) {
        n += 1;
    }
    // Tables, perhaps qualified (the last part names it), each perhaps
    // with a column list, separated by commas.
    let mut names: Vec<String> = Vec::new();
    while let Some(Token::Word(_)) = at(n) {
        let Some(name) = super::qualified_name(&at, &mut n) else {
            return tokens;
        };
        names.push(name);
        if matches!(at(n), Some(Token::LParen)) {
            while !matches!(at(n), Some(Token::RParen)) {
                if at(n).is_none() {
                    return tokens;
                }
                n += 1;
            }
            n += 1;
        }
        if !matches!(at(n), Some(Token::Comma)) {
            break;
        }
        n += 1;
    }
    if !matches!(at(n), None | Some(Token::SemiColon)) {
        return tokens;
    }
    let values = std::iter::once(tag.to_owned()).chain(names);
    super::mark_set(&tokens, solid[0], MARK, values, solid.get(n).copied())
}

/// The command tag and the tables named, from the values [`rewrite`] set.
pub fn plan(values: &[Expr]) -> SqlResult<(&'static str, Vec<String>)> {
    let texts = super::marked_values(values);
    let Some((tag, tables)) = texts.split_first() else {
        return Err(SqlError::internal("VACUUM without a command"));
    };
    let tag = if *tag == "VACUUM" {
        "VACUUM"
    } else {
        "ANALYZE"
    };
    Ok((tag, tables.iter().map(|t| t.to_string()).collect()))
}

#[cfg(test)]
mod tests {
    use crate::session::utility::Utility;

    fn planned(sql: &str) -> Vec<(&'static str, Vec<String>)> {
        crate::sql::parse(sql)
            .unwrap()
            .iter()
            .map(|stmt| match Utility::plan(stmt) {
                Some(Ok(Utility::Maintenance { tag, tables })) => (tag, tables),
                other => panic!("{sql}: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn vacuum_and_analyze_parse_as_postgresql_writes_them() {
        assert_eq!(planned("VACUUM"), [("VACUUM", vec![])]);
        assert_eq!(
            planned("vacuum analyze pgbench_branches"),
            [("VACUUM", vec!["pgbench_branches".to_owned()])]
        );
        assert_eq!(
            planned("VACUUM (VERBOSE, ANALYZE) public.\"T\" (a, b), u; analyse"),
            [
                ("VACUUM", vec!["T".to_owned(), "u".to_owned()]),
                ("ANALYZE", vec![])
            ]
        );
        assert_eq!(
            planned("ANALYZE VERBOSE t"),
            [("ANALYZE", vec!["t".to_owned()])]
        );
        // Not VACUUM's grammar: left to sqlparser, which refuses it.
        assert!(crate::sql::parse("VACUUM t u").is_err());
        // A column or table named vacuum is not a command.
        assert!(crate::sql::parse("SELECT vacuum FROM analyze").is_ok());
    }
}
