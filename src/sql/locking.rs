//! Row-locking clauses: `FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE
//! [OF t] [NOWAIT | SKIP LOCKED]`.
//!
//! sqlparser knows only `FOR UPDATE` and `FOR SHARE`. Before parsing, the
//! token stream's `FOR NO KEY UPDATE` and `FOR KEY SHARE` become `FOR
//! UPDATE` and `FOR SHARE` with the strength kept in the clause's `OF`
//! name, as a first part that no client can send (a quoted identifier
//! holding a NUL, which the protocol's strings cannot carry):
//! `FOR UPDATE OF "\0no key update"` or `... OF "\0no key update".t`. The
//! statement prints back to text that parses to the same clause, so a plan
//! made again from that text (after DDL) keeps the strength.

use sqlparser::ast::{self, LockClause, LockType, NonBlock};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Word};

/// How strongly a row is locked, weakest first (PostgreSQL's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockStrength {
    KeyShare,
    Share,
    NoKeyUpdate,
    Update,
}

impl LockStrength {
    /// As PostgreSQL names it in messages: `FOR NO KEY UPDATE`.
    pub fn clause(self) -> &'static str {
        match self {
            LockStrength::KeyShare => "FOR KEY SHARE",
            LockStrength::Share => "FOR SHARE",
            LockStrength::NoKeyUpdate => "FOR NO KEY UPDATE",
            LockStrength::Update => "FOR UPDATE",
        }
    }

    /// The marker that carries a strength sqlparser has no word for.
    fn marker(self) -> Option<&'static str> {
        match self {
            LockStrength::KeyShare => Some("\0key share"),
            LockStrength::NoKeyUpdate => Some("\0no key update"),
            LockStrength::Share | LockStrength::Update => None,
        }
    }
}

/// What to do about a row another transaction holds, in PostgreSQL's order
/// of precedence when clauses disagree (the larger wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockWait {
    /// Wait for it (within lock_timeout).
    Wait,
    /// SKIP LOCKED: leave the row out.
    Skip,
    /// NOWAIT: fail at once with 55P03.
    Fail,
}

/// One locking clause as written: its strength, its `OF` name (parts,
/// each with where it stands) and its wait policy.
pub struct Clause<'a> {
    pub strength: LockStrength,
    pub of: Option<&'a [ast::ObjectNamePart]>,
    pub wait: LockWait,
}

/// Read a parsed clause, taking the strength marker back out of `OF`.
pub fn clause(lock: &LockClause) -> Clause<'_> {
    let mut strength = match lock.lock_type {
        LockType::Update => LockStrength::Update,
        LockType::Share => LockStrength::Share,
    };
    let mut of = lock.of.as_ref().map(|name| name.0.as_slice());
    if let Some([first, rest @ ..]) = of {
        let marked = [LockStrength::KeyShare, LockStrength::NoKeyUpdate]
            .into_iter()
            .find(|s| {
                first.as_ident().is_some_and(|i| {
                    i.quote_style.is_some() && Some(i.value.as_str()) == s.marker()
                })
            });
        if let Some(s) = marked {
            strength = s;
            of = (!rest.is_empty()).then_some(rest);
        }
    }
    let wait = match lock.nonblock {
        None => LockWait::Wait,
        Some(NonBlock::SkipLocked) => LockWait::Skip,
        Some(NonBlock::Nowait) => LockWait::Fail,
    };
    Clause { strength, of, wait }
}

fn is_keyword(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none())
}

/// Rewrite `FOR NO KEY UPDATE` and `FOR KEY SHARE` into what sqlparser
/// parses, with the strength marked in `OF` (see the module's note).
pub fn rewrite(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    // The next token that is not whitespace, at or after `from`.
    let next = |from: usize| {
        (from..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
    };
    while i < tokens.len() {
        out.push(tokens[i].clone());
        if !is_keyword(&tokens[i].token, Keyword::FOR) {
            i += 1;
            continue;
        }
        let a = next(i + 1);
        let b = a.and_then(|a| next(a + 1));
        let c = b.and_then(|b| next(b + 1));
        let at = |j: Option<usize>, k: Keyword| j.is_some_and(|j| is_keyword(&tokens[j].token, k));
        let (strength, word) =
            if at(a, Keyword::NO) && at(b, Keyword::KEY) && at(c, Keyword::UPDATE) {
                (LockStrength::NoKeyUpdate, c)
            } else if at(a, Keyword::KEY) && at(b, Keyword::SHARE) {
                (LockStrength::KeyShare, b)
            } else {
                i += 1;
                continue;
            };
        let word = word.expect("matched above");
        let span = tokens[word].span;
        let token = |t: Token| TokenWithSpan { token: t, span };
        let marker = Token::Word(Word {
            value: strength.marker().expect("a marked strength").into(),
            quote_style: Some('"'),
            keyword: Keyword::NoKeyword,
        });
        out.push(tokens[word].clone());
        match next(word + 1) {
            // `OF t` follows: the marker becomes its first part.
            Some(of) if is_keyword(&tokens[of].token, Keyword::OF) => {
                out.push(tokens[of].clone());
                out.push(token(marker));
                out.push(token(Token::Period));
                i = of + 1;
            }
            _ => {
                out.push(token(Token::make_keyword("OF")));
                out.push(token(marker));
                i = word + 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locks(sql: &str) -> Vec<(LockStrength, Option<String>, LockWait)> {
        let stmt = crate::sql::parse(sql).unwrap().remove(0);
        let ast::Statement::Query(q) = &stmt else {
            panic!("{stmt:?}")
        };
        let decoded = q
            .locks
            .iter()
            .map(|l| {
                let c = clause(l);
                let of = c.of.map(|parts| {
                    parts
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(".")
                });
                (c.strength, of, c.wait)
            })
            .collect();
        // What the statement prints parses back to the same clauses.
        let again = crate::sql::parse(&stmt.to_string()).unwrap().remove(0);
        assert_eq!(again, stmt);
        decoded
    }

    #[test]
    fn every_strength_parses_and_survives_printing() {
        use LockStrength::*;
        use LockWait::*;
        assert_eq!(
            locks("SELECT * FROM t FOR UPDATE"),
            vec![(Update, None, Wait)]
        );
        assert_eq!(
            locks("select * from t for no key update skip locked limit 1"),
            vec![(NoKeyUpdate, None, Skip)]
        );
        assert_eq!(
            locks("SELECT * FROM t FOR KEY SHARE OF t NOWAIT"),
            vec![(KeyShare, Some("t".into()), Fail)]
        );
        assert_eq!(
            locks("SELECT * FROM t FOR SHARE OF t FOR NO KEY\n UPDATE OF public.t"),
            vec![
                (Share, Some("t".into()), Wait),
                (NoKeyUpdate, Some("public.t".into()), Wait)
            ]
        );
    }

    #[test]
    fn only_locking_clauses_are_rewritten() {
        // A column named key, and FOR elsewhere, are left alone.
        let stmt = crate::sql::parse("SELECT key FROM t WHERE key = 'for'").unwrap();
        assert_eq!(stmt[0].to_string(), "SELECT key FROM t WHERE key = 'for'");
        let e = crate::sql::parse("SELECT * FROM t FOR NO KEY SHARE").unwrap_err();
        assert_eq!(e.code, "42601");
    }
}
