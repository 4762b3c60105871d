//! Sequence options in any order. PostgreSQL takes CREATE SEQUENCE's (and
//! an identity column's) options in any order, and pg_dump writes `START
//! WITH` before `INCREMENT BY`; sqlparser takes them only in the order
//! INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE. So each run of
//! options is put in that order, token by token, before parsing.
//!
//! pg_dump also names an identity column's sequence: `ALTER TABLE t ALTER
//! COLUMN id ADD GENERATED ... AS IDENTITY (SEQUENCE NAME public.t_id_seq
//! ...)`, an option sqlparser does not take. The name is carried on the
//! column's identifier instead, after a NUL no client can write there
//! ([`SEQUENCE_NAME_MARK`]; `sql::alter` takes it off). `ALTER [COLUMN]
//! c DROP IDENTITY [IF EXISTS]`, which sqlparser lacks too, travels the
//! same way as a DROP DEFAULT of `c` marked [`DROP_IDENTITY`].

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

fn keyword(t: &Token) -> Option<Keyword> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    }
}

/// The positions of `tokens` that are not whitespace, and the keyword
/// each one is (None: not an unquoted keyword).
fn solid_words(tokens: &[TokenWithSpan]) -> (Vec<usize>, Vec<Option<Keyword>>) {
    let solid = super::solid(tokens);
    let words = solid.iter().map(|&j| keyword(&tokens[j].token)).collect();
    (solid, words)
}

/// Where an option starting at `solid[n]` ranks in sqlparser's order.
fn rank(tokens: &[TokenWithSpan], solid: &[usize], n: usize) -> Option<u8> {
    let k = |i: usize| solid.get(i).and_then(|&j| keyword(&tokens[j].token));
    match k(n)? {
        Keyword::INCREMENT => Some(0),
        Keyword::MINVALUE => Some(1),
        Keyword::MAXVALUE => Some(2),
        Keyword::START => Some(3),
        Keyword::CACHE => Some(4),
        Keyword::CYCLE => Some(5),
        Keyword::NO => match k(n + 1)? {
            Keyword::MINVALUE => Some(1),
            Keyword::MAXVALUE => Some(2),
            Keyword::CYCLE => Some(5),
            _ => None,
        },
        _ => None,
    }
}

/// Separates a column's name from the sequence name its identity's
/// `SEQUENCE NAME` gave, on the column identifier of `ADD GENERATED`.
pub const SEQUENCE_NAME_MARK: char = '\0';

/// After [`SEQUENCE_NAME_MARK`] on a DROP DEFAULT's column: it was `DROP
/// IDENTITY` (followed by ` if exists` when it said so).
pub const DROP_IDENTITY: &str = "drop identity";

pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    in_sqlparser_order(carry_sequence_name(drop_identity(tokens)))
}

/// The column identifier at `tokens[j]`, folded as PostgreSQL folds it,
/// quoted, with [`SEQUENCE_NAME_MARK`] and `carried` after it.
fn carry_on_column(tokens: &mut [TokenWithSpan], j: usize, carried: &str) -> bool {
    let Token::Word(column) = &tokens[j].token else {
        return false;
    };
    let folded = match column.quote_style {
        Some(_) => column.value.clone(),
        None => column.value.to_lowercase(),
    };
    tokens[j].token = Token::Word(sqlparser::tokenizer::Word {
        value: format!("{folded}{SEQUENCE_NAME_MARK}{carried}"),
        quote_style: Some('"'),
        keyword: Keyword::NoKeyword,
    });
    true
}

/// `ALTER [COLUMN] c DROP IDENTITY [IF EXISTS]` as `ALTER COLUMN c' DROP
/// DEFAULT`, `c'` carrying [`DROP_IDENTITY`].
fn drop_identity(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let (solid, words) = solid_words(&tokens);
    let kw = |n: usize, k: Keyword| words.get(n) == Some(&Some(k));
    let Some(drop) =
        (2..solid.len()).find(|&n| kw(n, Keyword::DROP) && kw(n + 1, Keyword::IDENTITY))
    else {
        return tokens;
    };
    let if_exists = kw(drop + 2, Keyword::IF) && kw(drop + 3, Keyword::EXISTS);
    let carried = if if_exists {
        format!("{DROP_IDENTITY} if exists")
    } else {
        DROP_IDENTITY.to_owned()
    };
    if !carry_on_column(&mut tokens, solid[drop - 1], &carried) {
        return tokens;
    }
    // IDENTITY becomes DEFAULT; IF EXISTS goes.
    let span = tokens[solid[drop + 1]].span;
    tokens[solid[drop + 1]] = TokenWithSpan {
        token: Token::make_keyword("DEFAULT"),
        span,
    };
    if if_exists {
        tokens.drain(solid[drop + 1] + 1..=solid[drop + 3]);
    }
    tokens
}

/// `ALTER [COLUMN] c ADD GENERATED ... AS IDENTITY ( ... SEQUENCE NAME n
/// ... )`: the `SEQUENCE NAME n` option taken out, and `n` carried on `c`'s
/// identifier (quoted, so that it is kept as written).
fn carry_sequence_name(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let (solid, words) = solid_words(&tokens);
    let kw = |n: usize, k: Keyword| words.get(n) == Some(&Some(k));
    let Some(add) =
        (1..solid.len()).find(|&n| kw(n, Keyword::ADD) && kw(n + 1, Keyword::GENERATED))
    else {
        return tokens;
    };
    let paren = |n: usize| {
        solid
            .get(n)
            .is_some_and(|&j| matches!(tokens[j].token, Token::LParen))
    };
    let Some(open) = (add..solid.len()).find(|&n| kw(n, Keyword::IDENTITY) && paren(n + 1)) else {
        return tokens;
    };
    let Some(at) = (open + 2..solid.len())
        .take_while(|&n| !matches!(tokens[solid[n]].token, Token::RParen))
        .find(|&n| kw(n, Keyword::SEQUENCE) && kw(n + 1, Keyword::NAME))
    else {
        return tokens;
    };
    // The name: words joined by periods.
    let mut end = at + 2;
    let mut name = String::new();
    while let Some(Token::Word(w)) = solid.get(end).map(|&j| &tokens[j].token) {
        name.push_str(&w.to_string());
        end += 1;
        if matches!(
            solid.get(end).map(|&j| &tokens[j].token),
            Some(Token::Period)
        ) {
            name.push('.');
            end += 1;
        } else {
            break;
        }
    }
    if name.is_empty()
        || name.ends_with('.')
        || !carry_on_column(&mut tokens, solid[add - 1], &name)
    {
        return tokens;
    }
    let (from, to) = (solid[at], solid[end - 1]);
    tokens.drain(from..=to);
    tokens
}

fn in_sqlparser_order(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let (solid, words) = solid_words(&tokens);
    let kw = |n: usize, k: Keyword| words.get(n) == Some(&Some(k));
    let is_sequence = kw(0, Keyword::CREATE) && kw(1, Keyword::SEQUENCE);
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut copied = 0; // tokens[..copied] are in `out`
    let mut n = 0;
    while n < solid.len() {
        // A run of options starts at an option keyword inside CREATE
        // SEQUENCE, or right after `IDENTITY (`.
        // (Not the sequence's own name: `CREATE SEQUENCE cache ...`.)
        let named = n >= 1 && (kw(n - 1, Keyword::SEQUENCE) || kw(n - 1, Keyword::EXISTS));
        let starts = rank(&tokens, &solid, n).is_some()
            && ((is_sequence && !named)
                || (n >= 2
                    && kw(n - 2, Keyword::IDENTITY)
                    && matches!(tokens[solid[n - 1]].token, Token::LParen)));
        if !starts {
            n += 1;
            continue;
        }
        // The options: each from its keyword to the next option's.
        let mut options: Vec<(u8, usize, usize)> = Vec::new(); // (rank, first solid, end solid)
        let mut m = n;
        while let Some(r) = rank(&tokens, &solid, m) {
            let mut end = m + 1;
            while end < solid.len()
                && rank(&tokens, &solid, end).is_none()
                && !matches!(tokens[solid[end]].token, Token::RParen | Token::SemiColon)
                && !kw(end, Keyword::OWNED)
            {
                end += 1;
            }
            // `NO MINVALUE`: the second word is part of the option.
            options.push((r, m, end));
            m = end;
        }
        let in_order = options.windows(2).all(|w| w[0].0 <= w[1].0);
        if !in_order {
            out.extend_from_slice(&tokens[copied..solid[n]]);
            let mut sorted = options.clone();
            sorted.sort_by_key(|o| o.0);
            for (i, (_, first, end)) in sorted.iter().enumerate() {
                if i > 0 {
                    out.push(TokenWithSpan {
                        token: Token::Whitespace(Whitespace::Space),
                        span: tokens[solid[*first]].span,
                    });
                }
                out.extend_from_slice(&tokens[solid[*first]..=solid[end - 1]]);
            }
            copied = solid[m - 1] + 1;
        }
        n = m;
    }
    out.extend_from_slice(&tokens[copied..]);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_parse_in_any_order() {
        for (sql, expect) in [
            (
                "CREATE SEQUENCE s START WITH 10 INCREMENT BY 5 NO CYCLE CACHE 3",
                "CREATE SEQUENCE s INCREMENT BY 5 START WITH 10 CACHE 3 NO CYCLE",
            ),
            (
                "CREATE SEQUENCE public.t_id_seq AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1",
                "CREATE SEQUENCE public.t_id_seq AS INTEGER INCREMENT BY 1 NO MINVALUE NO MAXVALUE START WITH 1 CACHE 1",
            ),
            (
                "CREATE TABLE t (id int GENERATED BY DEFAULT AS IDENTITY (START WITH 1 INCREMENT BY 1) PRIMARY KEY)",
                "CREATE TABLE t (id INT GENERATED BY DEFAULT AS IDENTITY ( INCREMENT BY 1 START WITH 1 ) PRIMARY KEY)",
            ),
            (
                "CREATE SEQUENCE cache START 5 INCREMENT 2",
                "CREATE SEQUENCE cache INCREMENT 2 START 5",
            ),
        ] {
            let parsed = crate::sql::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
            assert_eq!(parsed[0].to_string(), expect);
        }
    }

    #[test]
    fn an_identity_sequence_name_rides_on_the_column() {
        let sql = "ALTER TABLE ONLY t ALTER COLUMN Id ADD GENERATED BY DEFAULT AS IDENTITY (\n SEQUENCE NAME public.\"T_seq\"\n START WITH 1\n INCREMENT BY 1\n CACHE 1)";
        let parsed = crate::sql::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        let text = parsed[0].to_string();
        assert!(
            text.ends_with(
                "ADD GENERATED BY DEFAULT AS IDENTITY ( INCREMENT BY 1 START WITH 1 CACHE 1 )"
            ),
            "{text}"
        );
        let sqlparser::ast::Statement::AlterTable(at) = &parsed[0] else {
            panic!("{text}");
        };
        let plan = crate::sql::alter::alter_table(at).unwrap();
        let [crate::sql::alter::AlterOp::AddIdentity {
            column, sequence, ..
        }] = plan.ops.as_slice()
        else {
            panic!("{plan:?}");
        };
        assert_eq!(
            (column.as_str(), sequence.as_deref()),
            ("id", Some("T_seq"))
        );
    }
}
