//! `ALTER SEQUENCE`, which sqlparser does not parse: rewritten, token by
//! token, into a SET of a setting no client can name (as `maintenance`
//! does), whose values are the sequence's name, whether `IF EXISTS` was
//! given, and each option as `key` or `key=value`; [`plan`] reads it back.
//!
//! keyclaim takes PostgreSQL's options in any order: `AS type`,
//! `INCREMENT [BY] n`, `[NO] MINVALUE`, `[NO] MAXVALUE`, `START [WITH]
//! n`, `CACHE n`, `[NO] CYCLE` (changes of the definition), `RESTART
//! [[WITH] n]` (the counter, set as `setval(name, n, false)` sets it) and
//! `OWNED BY`; and, alone, `RENAME TO` and `OWNER TO`. Anything else
//! (SET SCHEMA, SET LOGGED, ...) answers 0A000 with a hint.

use sqlparser::ast::Expr;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::is_word;

use crate::catalog::sequence::Options;
use crate::error::{SqlError, SqlResult};
use crate::types::SqlType;

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
    /// Options, each at most once.
    Alter {
        /// What the definition changes (None: stays).
        options: Box<Options>,
        /// RESTART: at the sequence's start value (None), or at `n`.
        restart: Option<Option<i64>>,
        /// OWNED BY table.column, or NONE: what pg_dump writes after a
        /// serial column's sequence.
        owned_by: Option<Option<(String, String)>>,
    },
    /// RENAME TO name.
    Rename(String),
    /// OWNER TO role.
    Owner(String),
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
    let values = options(&change).unwrap_or_else(|| {
        let text = change.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        vec![format!("unsupported={}", text.join(" "))]
    });
    let flag = if if_exists { "if_exists" } else { "" };
    let values = [name, flag.to_owned()].into_iter().chain(values);
    super::mark_set(&tokens, solid[0], MARK, values, solid.get(end).copied())
}

/// The options of `change`, each as `key` or `key=value`; None for what
/// keyclaim does not take.
fn options(change: &[&Token]) -> Option<Vec<String>> {
    let word = |k: usize, w: &str| change.get(k).is_some_and(|t| is_word(t, w));
    // A signed integer at `*k`, past it.
    let number = |k: &mut usize| -> Option<String> {
        let minus = matches!(change.get(*k), Some(Token::Minus));
        let at = *k + usize::from(minus);
        match change.get(at) {
            Some(Token::Number(v, _)) => {
                *k = at + 1;
                Some(format!("{}{v}", if minus { "-" } else { "" }))
            }
            _ => None,
        }
    };
    let text = |from: usize, to: usize| {
        change[from..to]
            .iter()
            .map(|t| t.to_string())
            .collect::<String>()
    };
    let mut out = Vec::new();
    let mut k = 0;
    while k < change.len() {
        let option = if word(k, "restart") {
            k += 1 + usize::from(word(k + 1, "with"));
            match number(&mut k) {
                Some(v) => format!("restart={v}"),
                None => "restart".to_owned(),
            }
        } else if word(k, "owned") && word(k + 1, "by") {
            let from = k + 2;
            k = from;
            while k < change.len()
                && (k == from
                    || matches!(change[k], Token::Period)
                    || matches!(change[k - 1], Token::Period))
            {
                k += 1;
            }
            format!("owned_by={}", text(from, k))
        } else if word(k, "as") {
            let Some(Token::Word(ty)) = change.get(k + 1) else {
                return None;
            };
            k += 2;
            format!("as={}", super::folded(ty))
        } else if word(k, "increment") {
            k += 1 + usize::from(word(k + 1, "by"));
            format!("increment={}", number(&mut k)?)
        } else if word(k, "start") {
            k += 1 + usize::from(word(k + 1, "with"));
            format!("start={}", number(&mut k)?)
        } else if word(k, "minvalue") || word(k, "maxvalue") || word(k, "cache") {
            let key = change[k].to_string().to_lowercase();
            k += 1;
            format!("{key}={}", number(&mut k)?)
        } else if word(k, "no") && (word(k + 1, "minvalue") || word(k + 1, "maxvalue")) {
            k += 2;
            format!("{}=", change[k - 1].to_string().to_lowercase())
        } else if word(k, "cycle") || (word(k, "no") && word(k + 1, "cycle")) {
            let cycle = word(k, "cycle");
            k += if cycle { 1 } else { 2 };
            format!("cycle={cycle}")
        } else if k == 0
            && change.len() == 3
            && (word(0, "rename") || word(0, "owner"))
            && word(1, "to")
        {
            let Token::Word(name) = change[2] else {
                return None;
            };
            k = 3;
            format!(
                "{}={}",
                change[0].to_string().to_lowercase(),
                super::folded(name)
            )
        } else {
            return None;
        };
        out.push(option);
    }
    Some(out)
}

/// The ALTER SEQUENCE that [`rewrite`] turned into these values.
pub fn plan(values: &[Expr]) -> SqlResult<AlterSequence> {
    let texts = super::marked_values(values);
    let [name, flag, given @ ..] = texts.as_slice() else {
        return Err(SqlError::internal("ALTER SEQUENCE without a name"));
    };
    let mut options = Options::default();
    let (mut restart, mut owned_by) = (None, None);
    let mut change = None;
    let mut seen: Vec<&str> = Vec::new();
    for given in given {
        let (key, value) = given.split_once('=').unwrap_or((given, ""));
        if seen.contains(&key) {
            return Err(SqlError::syntax("conflicting or redundant options"));
        }
        seen.push(key);
        let int = || -> SqlResult<i64> {
            value.parse().map_err(|_| {
                SqlError::new(
                    "22003",
                    format!("value \"{value}\" is out of range for type bigint"),
                )
            })
        };
        let bound = || match value {
            "" => Ok(None),
            _ => int().map(Some),
        };
        match key {
            "restart" if value.is_empty() => restart = Some(None),
            "restart" => restart = Some(Some(int()?)),
            "owned_by" => owned_by = Some(owner(value)?),
            "as" => options.ty = Some(sequence_type(value)?),
            "increment" => options.increment = Some(int()?),
            "start" => options.start = Some(int()?),
            "cache" => options.cache = Some(int()?),
            "minvalue" => options.min = Some(bound()?),
            "maxvalue" => options.max = Some(bound()?),
            "cycle" => options.cycle = Some(value == "true"),
            "rename" => change = Some(Change::Rename(value.to_owned())),
            "owner" => change = Some(Change::Owner(value.to_owned())),
            _ => change = Some(Change::Unsupported(value.to_owned())),
        }
    }
    Ok(AlterSequence {
        name: name.to_string(),
        if_exists: *flag == "if_exists",
        change: change.unwrap_or(Change::Alter {
            options: Box::new(options),
            restart,
            owned_by,
        }),
    })
}

/// OWNED BY's `table.column` or NONE.
fn owner(written: &str) -> SqlResult<Option<(String, String)>> {
    if written.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let parts = crate::catalog::naming::split_qualified(written)?;
    match parts.as_slice() {
        [table, column] => Ok(Some((table.clone(), column.clone()))),
        [schema, table, column] if schema == "public" => Ok(Some((table.clone(), column.clone()))),
        _ => Err(
            SqlError::syntax(format!("invalid OWNED BY option: {written}"))
                .with_hint("Specify OWNED BY table.column or OWNED BY NONE."),
        ),
    }
}

/// AS's type (its name folded): any type PostgreSQL knows, which CREATE SEQUENCE's checks
/// then limit to the integers (22023); 42704 for a name it does not know.
fn sequence_type(written: &str) -> SqlResult<SqlType> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(written)
        .and_then(|mut p| p.parse_data_type())
        .ok()
        .and_then(|dt| SqlType::from_ast(&dt).ok())
        .ok_or_else(|| {
            SqlError::new(
                crate::error::sqlstate::UNDEFINED_OBJECT,
                format!("type \"{written}\" does not exist"),
            )
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
            change: Change::Alter {
                options: Box::default(),
                restart: Some(at),
                owned_by: None,
            },
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
        let Change::Alter {
            options, owned_by, ..
        } = planned(
            "ALTER SEQUENCE s AS integer INCREMENT BY -2 NO MAXVALUE MINVALUE -9 cycle OWNED BY t.id",
        )
        .change
        else {
            panic!("not an option list")
        };
        assert_eq!(options.ty, Some(SqlType::Int4));
        assert_eq!(options.increment, Some(-2));
        assert_eq!((options.max, options.min), (Some(None), Some(Some(-9))));
        assert_eq!(options.cycle, Some(true));
        assert_eq!(owned_by, Some(Some(("t".to_owned(), "id".to_owned()))));
        assert_eq!(
            planned("ALTER SEQUENCE s RENAME TO \"New\"").change,
            Change::Rename("New".to_owned())
        );
        assert_eq!(
            planned("ALTER SEQUENCE s SET SCHEMA other").change,
            Change::Unsupported("SET SCHEMA other".to_owned())
        );
        let err = |sql: &str| match crate::sql::parse(sql).unwrap().as_slice() {
            [sqlparser::ast::Statement::Set(sqlparser::ast::Set::SingleAssignment {
                values,
                ..
            })] => plan(values).unwrap_err(),
            other => panic!("{sql}: {other:?}"),
        };
        assert_eq!(err("ALTER SEQUENCE s CACHE 2 CACHE 3").code, "42601");
        assert_eq!(err("ALTER SEQUENCE s AS nope").code, "42704");
        // Not ALTER SEQUENCE: left alone.
        assert!(crate::sql::parse("SELECT sequence FROM t").is_ok());
    }
}
