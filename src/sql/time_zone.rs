//! `SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE` (what Sequelize sends
//! at connect), which sqlparser does not parse: rewritten, token by token,
//! into `SET TIME ZONE '<+00>-00'`, the POSIX zone PostgreSQL makes of an
//! interval (and shows as TimeZone). keyclaim keeps timestamps in UTC, so
//! a zero offset is accepted and any other is refused as any zone but UTC
//! is (`session::settings`).

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

fn is_word(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k)
}

/// PostgreSQL's name for a fixed offset: `+05:30` is `<+05:30>-05:30`
/// (POSIX counts west as positive), `+00:00` is `<+00>-00`.
fn posix_zone(offset: &str) -> Option<String> {
    let (sign, rest) = match offset.trim().chars().next()? {
        '+' => ('+', &offset.trim()[1..]),
        '-' => ('-', &offset.trim()[1..]),
        _ => ('+', offset.trim()),
    };
    let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    if h > 15 || m > 59 {
        return None;
    }
    let flip = if sign == '+' { '-' } else { '+' };
    Some(if m == 0 {
        format!("<{sign}{h:02}>{flip}{h:02}")
    } else {
        format!("<{sign}{h:02}:{m:02}>{flip}{h:02}:{m:02}")
    })
}

pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
        .collect();
    let word = |n: usize, k: Keyword| solid.get(n).is_some_and(|&j| is_word(&tokens[j].token, k));
    // SET [LOCAL | SESSION] TIME ZONE INTERVAL 'x' HOUR TO MINUTE
    let mut n = 0;
    if !word(n, Keyword::SET) {
        return tokens;
    }
    n += 1;
    if word(n, Keyword::LOCAL) || word(n, Keyword::SESSION) {
        n += 1;
    }
    if !(word(n, Keyword::TIME) && word(n + 1, Keyword::ZONE) && word(n + 2, Keyword::INTERVAL)) {
        return tokens;
    }
    let value = n + 3;
    let Some(Token::SingleQuotedString(offset)) = solid.get(value).map(|&j| &tokens[j].token)
    else {
        return tokens;
    };
    if !(word(value + 1, Keyword::HOUR)
        && word(value + 2, Keyword::TO)
        && word(value + 3, Keyword::MINUTE))
    {
        return tokens;
    }
    let Some(zone) = posix_zone(offset) else {
        return tokens;
    };
    let (interval, last) = (solid[n + 2], solid[value + 3]);
    let mut out: Vec<TokenWithSpan> = tokens[..interval].to_vec();
    out.push(TokenWithSpan {
        token: Token::SingleQuotedString(zone),
        span: tokens[solid[value]].span,
    });
    out.extend_from_slice(&tokens[last + 1..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_posix_zones() {
        assert_eq!(posix_zone("+00:00").as_deref(), Some("<+00>-00"));
        assert_eq!(posix_zone("+05:30").as_deref(), Some("<+05:30>-05:30"));
        assert_eq!(posix_zone("-08:00").as_deref(), Some("<-08>+08"));
        assert_eq!(posix_zone("bogus"), None);
    }

    #[test]
    fn the_statement_parses_after_the_rewrite() {
        for sql in [
            "SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE",
            "set local time zone interval '+00:00' hour to minute;",
        ] {
            let parsed = crate::sql::parse(sql).unwrap();
            assert!(
                parsed[0].to_string().contains("'<+00>-00'"),
                "{}",
                parsed[0]
            );
        }
    }
}
