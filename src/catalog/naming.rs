//! Constraint names as PostgreSQL chooses them (ChooseConstraintName):
//! `<table>_pkey`, `<table>_<col1>_<col2>_key`, truncated to 63 bytes, with a
//! number appended when the name is taken.

use crate::error::{SqlError, SqlResult};

const NAMEDATALEN: usize = 63;

/// PostgreSQL's quote_ident (less its keyword list): a name as SQL text,
/// double-quoted unless it is lower case letters, digits and underscores.
pub fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_owned()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// The dotted parts of a name written in text (`'public.t'::regclass`,
/// `nextval('"My Seq"')`): folded to lower case unless double-quoted.
pub fn split_qualified(text: &str) -> SqlResult<Vec<String>> {
    let invalid = || SqlError::new("22P02", "invalid name syntax");
    let mut parts = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(invalid()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
        }
        if part.is_empty() {
            return Err(invalid());
        }
        parts.push(part);
        match chars.next() {
            None => return Ok(parts),
            Some('.') => continue,
            Some(_) => return Err(invalid()),
        }
    }
}

pub fn pkey_name(table: &str) -> String {
    choose(table, &[], "pkey", &[])
}

pub fn unique_name<'a>(
    table: &str,
    columns: &[&str],
    taken: impl IntoIterator<Item = &'a str>,
) -> String {
    let taken: Vec<&str> = taken.into_iter().collect();
    choose(table, columns, "key", &taken)
}

/// A FOREIGN KEY without a name: `<table>_<cols>_fkey`.
pub fn foreign_key_name<'a>(
    table: &str,
    columns: &[&str],
    taken: impl IntoIterator<Item = &'a str>,
) -> String {
    let taken: Vec<&str> = taken.into_iter().collect();
    choose(table, columns, "fkey", &taken)
}

/// A CHECK constraint without a name: `<table>_<column>_check` when it
/// reads one column, else `<table>_check`.
pub fn check_name<'a>(
    table: &str,
    columns: &[&str],
    taken: impl IntoIterator<Item = &'a str>,
) -> String {
    let taken: Vec<&str> = taken.into_iter().collect();
    choose(table, columns, "check", &taken)
}

/// CREATE UNIQUE INDEX without a name: `<table>_<cols>_idx`.
pub fn index_name<'a>(
    table: &str,
    columns: &[&str],
    taken: impl IntoIterator<Item = &'a str>,
) -> String {
    let taken: Vec<&str> = taken.into_iter().collect();
    choose(table, columns, "idx", &taken)
}

/// The `pass`-th candidate name for an object of `table`'s `column`
/// (`<table>_<column>_<label>`, then with 1, 2, ...), for callers that must
/// ask the catalog whether each is taken (a serial column's sequence).
pub fn candidate(table: &str, column: &str, label: &str, pass: usize) -> String {
    let suffix = if pass == 0 {
        label.to_owned()
    } else {
        format!("{label}{pass}")
    };
    make_name(table, column, &suffix)
}

/// PostgreSQL's makeObjectName + ChooseRelationName: shorten the longer of
/// table and column parts until `name1_name2_label` fits, then add 1, 2, ...
fn choose(table: &str, columns: &[&str], label: &str, taken: &[&str]) -> String {
    let cols = columns.join("_");
    let mut pass = 0;
    loop {
        let suffix = if pass == 0 {
            label.to_owned()
        } else {
            format!("{label}{pass}")
        };
        let name = make_name(table, &cols, &suffix);
        if !taken.contains(&name.as_str()) {
            return name;
        }
        pass += 1;
    }
}

fn make_name(name1: &str, name2: &str, label: &str) -> String {
    let overhead = label.len() + 1 + if name2.is_empty() { 0 } else { 1 };
    let mut l1 = name1.len();
    let mut l2 = name2.len();
    while l1 + l2 + overhead > NAMEDATALEN {
        if l1 > l2 {
            l1 -= 1;
        } else {
            l2 -= 1;
        }
    }
    let n1 = truncate(name1, l1);
    let n2 = truncate(name2, l2);
    if n2.is_empty() {
        format!("{n1}_{label}")
    } else {
        format!("{n1}_{n2}_{label}")
    }
}

fn truncate(s: &str, mut len: usize) -> &str {
    while !s.is_char_boundary(len) {
        len -= 1;
    }
    &s[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_postgres() {
        assert_eq!(pkey_name("users"), "users_pkey");
        assert_eq!(unique_name("users", &["email"], []), "users_email_key");
        assert_eq!(unique_name("t", &["a", "b"], []), "t_a_b_key");
        assert_eq!(unique_name("t", &["a"], ["t_a_key"]), "t_a_key1");
        assert_eq!(
            unique_name("t", &["a"], ["t_a_key", "t_a_key1"]),
            "t_a_key2"
        );
    }

    #[test]
    fn long_names_are_truncated_like_postgres() {
        let table = "a".repeat(40);
        let col = "b".repeat(40);
        let name = unique_name(&table, &[&col], []);
        assert_eq!(name.len(), 63);
        assert_eq!(name, format!("{}_{}_key", "a".repeat(29), "b".repeat(29)));
    }
}
