//! FETCH and MOVE as PostgreSQL writes them, in the form sqlparser reads:
//! its FETCH needs a direction and `FROM` / `IN`, where PostgreSQL takes
//! `FETCH name` (the next row), `FETCH FROM name` and `FETCH FORWARD
//! name`; and it has no MOVE, which is FETCH without the rows (its tag is
//! `MOVE n`). A MOVE becomes a FETCH `INTO` [`MOVE_MARK`], a target no
//! client can name (FETCH INTO a variable is PL/pgSQL's, refused here).

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

use super::is_word;

/// The FETCH INTO target a MOVE is rewritten to.
pub const MOVE_MARK: &str = "\0move";

/// Each statement of the query string on its own.
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    super::each_statement_naming(tokens, &["fetch", "move"], rewrite_statement)
}

fn rewrite_statement(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = super::solid(&tokens);
    let at = |n: usize| solid.get(n).map(|&j| &tokens[j].token);
    let moving = match at(0) {
        Some(t) if is_word(t, "fetch") => false,
        Some(t) if is_word(t, "move") => true,
        _ => return tokens,
    };
    let end = (1..)
        .find(|&k| matches!(at(k), None | Some(Token::SemiColon)))
        .unwrap_or(1);
    let words: Vec<&Token> = (1..end).filter_map(at).collect();
    // The direction: its tokens, as sqlparser reads them.
    let number = |t: &Token| matches!(t, Token::Number(..));
    let keyword = |t: &Token, list: &[&str]| list.iter().any(|w| is_word(t, w));
    let (mut direction, rest): (Vec<Token>, &[&Token]) = match words.as_slice() {
        [d, n, rest @ ..]
            if keyword(d, &["forward", "backward"]) && (number(n) || is_word(n, "all")) =>
        {
            (vec![(*d).clone(), (*n).clone()], rest)
        }
        [d, rest @ ..] if is_word(d, "forward") => (vec![word("NEXT")], rest),
        [d, rest @ ..] if is_word(d, "backward") => (vec![word("PRIOR")], rest),
        [d, n, rest @ ..] if keyword(d, &["absolute", "relative"]) && number(n) => {
            (vec![(*d).clone(), (*n).clone()], rest)
        }
        [d, rest @ ..] if keyword(d, &["next", "prior", "first", "last", "all"]) => {
            (vec![(*d).clone()], rest)
        }
        [n @ Token::Number(..), rest @ ..] => (vec![(*n).clone()], rest),
        rest => (vec![word("NEXT")], rest),
    };
    // Then FROM or IN, perhaps left out, and the cursor's name.
    let rest = match rest {
        [p, rest @ ..] if keyword(p, &["from", "in"]) => rest,
        rest => rest,
    };
    let [name] = rest else {
        return tokens;
    };
    if !matches!(name, Token::Word(_)) {
        return tokens;
    }
    let span = tokens[solid[0]].span;
    let mut out: Vec<TokenWithSpan> = tokens[..solid[0]].to_vec();
    let space = Token::Whitespace(Whitespace::Space);
    let mut push = |t: Token| {
        out.push(TokenWithSpan { token: t, span });
        out.push(TokenWithSpan {
            token: space.clone(),
            span,
        });
    };
    push(word("FETCH"));
    for t in direction.drain(..) {
        push(t);
    }
    push(word("FROM"));
    push((*name).clone());
    if moving {
        push(word("INTO"));
        push(Token::Word(Word {
            value: MOVE_MARK.to_owned(),
            quote_style: Some('"'),
            keyword: sqlparser::keywords::Keyword::NoKeyword,
        }));
    }
    if let Some(&end) = solid.get(end) {
        out.extend_from_slice(&tokens[end..]);
    }
    out
}

fn word(w: &str) -> Token {
    Token::make_keyword(w)
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{FetchDirection, Statement};

    /// (direction, cursor, whether a MOVE) of each statement of `sql`.
    fn read(sql: &str) -> Vec<(String, String, bool)> {
        crate::sql::parse(sql)
            .unwrap()
            .into_iter()
            .map(|stmt| match stmt {
                Statement::Fetch {
                    name,
                    direction,
                    into,
                    ..
                } => (direction.to_string(), name.value, into.is_some()),
                other => panic!("{sql}: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn fetch_and_move_read_as_postgresql_writes_them() {
        let next = FetchDirection::Next.to_string();
        assert_eq!(
            read("FETCH c; fetch from c; FETCH IN \"C\"; MOVE c; move forward c"),
            [
                (next.clone(), "c".to_owned(), false),
                (next.clone(), "c".to_owned(), false),
                (next.clone(), "C".to_owned(), false),
                (next.clone(), "c".to_owned(), true),
                (next, "c".to_owned(), true),
            ]
        );
        assert!(read("MOVE ALL IN c")[0].2);
        assert_eq!(read("FETCH FORWARD 5 c")[0].0, "FORWARD 5");
        assert_eq!(read("FETCH 3 FROM c")[0].0, "3");
        // Not a FETCH: left to sqlparser.
        assert!(crate::sql::parse("SELECT 1 FETCH FIRST 1 ROWS ONLY").is_ok());
        assert!(crate::sql::parse("FETCH").is_err());
    }
}
