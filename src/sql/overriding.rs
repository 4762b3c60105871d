//! `INSERT ... OVERRIDING {SYSTEM | USER} VALUE`, which sqlparser does not
//! parse: the clause is taken out of the statement and carried as an
//! optimizer-hint comment after INSERT (`/*keyclaim+overriding system*/`,
//! `sql::with_insert_hint`); [`of`] reads it back. pg_dump's INSERT output of identity columns sends SYSTEM.

use sqlparser::ast;
use sqlparser::tokenizer::TokenWithSpan;

use super::is_word;

/// What an INSERT's OVERRIDING clause asks of its identity columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overriding {
    /// SYSTEM VALUE: a GENERATED ALWAYS column takes the value given.
    System,
    /// USER VALUE: the values given for identity columns are ignored; the
    /// columns take their sequences' values.
    User,
}

/// Each statement of the query string on its own.
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    super::each_statement_naming(tokens, &["overriding"], rewrite_statement)
}

fn rewrite_statement(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = super::solid(&tokens);
    let at = |n: usize| solid.get(n).map(|&j| &tokens[j].token);
    if !at(0).is_some_and(|t| is_word(t, "insert")) {
        return tokens;
    }
    // The clause, outside any parentheses (a column list may name a
    // column `overriding`).
    let Some(n) = super::top_level(&tokens, &solid, |n| {
        at(n).is_some_and(|t| is_word(t, "overriding"))
    }) else {
        return tokens;
    };
    let kind = match at(n + 1) {
        Some(k) if is_word(k, "system") => "system",
        Some(k) if is_word(k, "user") => "user",
        _ => return tokens,
    };
    if !at(n + 2).is_some_and(|v| is_word(v, "value")) {
        return tokens;
    }
    let clause = (solid[n], solid[n + 2] + 1);
    super::with_insert_hint(&tokens, solid[0], clause, &format!("overriding {kind}"))
}

/// The OVERRIDING clause of an INSERT, if it had one.
pub fn of(ins: &ast::Insert) -> Option<Overriding> {
    super::insert_hints(ins).find_map(|h| match h {
        "overriding system" => Some(Overriding::System),
        "overriding user" => Some(Overriding::User),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> Option<Overriding> {
        match crate::sql::parse(sql).unwrap().as_slice() {
            [ast::Statement::Insert(ins)] => of(ins),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn overriding_reads_as_postgresql_writes_it() {
        assert_eq!(
            read("INSERT INTO t (id, a) OVERRIDING SYSTEM VALUE VALUES (1, 2)"),
            Some(Overriding::System)
        );
        assert_eq!(
            read("insert into t overriding user value select 1, 2"),
            Some(Overriding::User)
        );
        assert_eq!(read("INSERT INTO t (overriding) VALUES (1)"), None);
        assert_eq!(read("INSERT INTO t VALUES (1)"), None);
    }
}
