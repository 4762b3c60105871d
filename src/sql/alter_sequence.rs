//! `ALTER SEQUENCE`, which sqlparser does not parse: rewritten, token by
//! token, into a SET of a setting no client can name (as `maintenance`
//! does), whose values are the sequence's name, whether `IF EXISTS` was
//! given, and the change; [`plan`] reads it back.
//!
//! keyclaim runs `RESTART [[WITH] n]` (what test fixtures and data loads
//! send; the counter is set as `setval(name, n, false)` sets it) and
//! `OWNED BY` (what pg_dump writes). Other changes (INCREMENT, MINVALUE,
//! MAXVALUE, START, CACHE, CYCLE, AS, RENAME, ...) answer 0A000 with a
//! hint.

use sqlparser::ast::Expr;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::is_word;

use crate::error::{SqlError, SqlResult};

/// The name ALTER SEQUENCE is rewritten to set.
pub const MARK: &str = "\0alter_sequence";

/// What ALTER SEQUENCE asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterSequence {
    pub name: String,
    pub if_exists: bool,
    pub change: Change,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// RESTART: at the sequence's start value, or at `n`.
    Restart(Option<i64>),
    /// OWNED BY table.column (dropped with the table, as a serial
    /// column's sequence is), or OWNED BY NONE: what pg_dump writes after
    /// a serial column's sequence.
    OwnedBy(Option<(String, String)>),
    /// Anything else, as written (for the error).
    Unsupported(String),
}

/// Each statement of the query string on its own.
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    super::each_statement_naming(tokens, &["sequence"], rewrite_statement)
}

fn rewrite_statement(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = super::solid(&tokens);
    let at = |n: usize| solid.get(n).map(|&j| &tokens[j].token);
    if !(at(0).is_some_and(|t| is_word(t, "alter"))
        && at(1).is_some_and(|t| is_word(t, "sequence")))
    {
        return tokens;
    }
    let mut n = 2;
    let if_exists =
        at(n).is_some_and(|t| is_word(t, "if")) && at(n + 1).is_some_and(|t| is_word(t, "exists"));
    if if_exists {
        n += 2;
    }
    let Some(name) = super::qualified_name(&at, &mut n) else {
        return tokens;
    };
    // The change: every token up to the statement's end.
    let end = (n..)
        .find(|&k| matches!(at(k), None | Some(Token::SemiColon)))
        .unwrap_or(n);
    let change: Vec<&Token> = (n..end).filter_map(at).collect();
    let values = match change.as_slice() {
        [r] if is_word(r, "restart") => vec!["restart".to_owned()],
        [r, Token::Number(v, _)] if is_word(r, "restart") => vec!["restart".to_owned(), v.clone()],
        [r, w, Token::Number(v, _)] if is_word(r, "restart") && is_word(w, "with") => {
            vec!["restart".to_owned(), v.clone()]
        }
        [o, b, owner @ ..] if is_word(o, "owned") && is_word(b, "by") && !owner.is_empty() => vec![
            "owned_by".to_owned(),
            owner.iter().map(|t| t.to_string()).collect::<String>(),
        ],
        other => vec![
            "unsupported".to_owned(),
            other
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" "),
        ],
    };
    let flag = if if_exists { "if_exists" } else { "" };
    let values = [name, flag.to_owned()].into_iter().chain(values);
    super::mark_set(&tokens, solid[0], MARK, values, solid.get(end).copied())
}

/// The ALTER SEQUENCE that [`rewrite`] turned into these values.
pub fn plan(values: &[Expr]) -> SqlResult<AlterSequence> {
    let texts = super::marked_values(values);
    let change = match texts.as_slice() {
        [_, _, "restart"] => Change::Restart(None),
        [_, _, "restart", n] => Change::Restart(Some(n.parse().map_err(|_| {
            SqlError::new(
                "22003",
                format!("value \"{n}\" is out of range for type bigint"),
            )
        })?)),
        [_, _, "owned_by", owner] if owner.eq_ignore_ascii_case("none") => Change::OwnedBy(None),
        [_, _, "owned_by", owner] => {
            let parts = crate::catalog::naming::split_qualified(owner)?;
            match parts.as_slice() {
                [table, column] => Change::OwnedBy(Some((table.clone(), column.clone()))),
                [schema, table, column] if schema == "public" => {
                    Change::OwnedBy(Some((table.clone(), column.clone())))
                }
                _ => {
                    return Err(
                        SqlError::syntax(format!("invalid OWNED BY option: {owner}"))
                            .with_hint("Specify OWNED BY table.column or OWNED BY NONE."),
                    )
                }
            }
        }
        [_, _, "unsupported", what] => Change::Unsupported((*what).to_owned()),
        _ => return Err(SqlError::internal("ALTER SEQUENCE without a change")),
    };
    Ok(AlterSequence {
        name: texts[0].to_owned(),
        if_exists: texts[1] == "if_exists",
        change,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(sql: &str) -> AlterSequence {
        match crate::sql::parse(sql).unwrap().as_slice() {
            [sqlparser::ast::Statement::Set(sqlparser::ast::Set::SingleAssignment {
                values,
                ..
            })] => plan(values).unwrap(),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn alter_sequence_reads_as_postgresql_writes_it() {
        let restart = |name: &str, if_exists, at| AlterSequence {
            name: name.to_owned(),
            if_exists,
            change: Change::Restart(at),
        };
        assert_eq!(
            planned("ALTER SEQUENCE s RESTART"),
            restart("s", false, None)
        );
        assert_eq!(
            planned("alter sequence if exists public.\"S\" restart with 10;"),
            restart("S", true, Some(10))
        );
        assert_eq!(
            planned("ALTER SEQUENCE s RESTART 7"),
            restart("s", false, Some(7))
        );
        assert_eq!(
            planned("ALTER SEQUENCE s INCREMENT BY 2").change,
            Change::Unsupported("INCREMENT BY 2".to_owned())
        );
        // Not ALTER SEQUENCE: left alone.
        assert!(crate::sql::parse("SELECT sequence FROM t").is_ok());
    }
}
