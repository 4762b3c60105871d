//! COPY ... FROM STDIN: the statement's options, and the text and CSV
//! formats it reads, as PostgreSQL's COPY reads them (`wire::copy` runs
//! it).

use sqlparser::ast;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::plan::{ident, table_name};
use crate::error::{sqlstate, SqlError, SqlResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Csv,
}

/// How COPY's records are written, read and written alike.
#[derive(Debug, Clone)]
pub struct Records {
    pub format: Format,
    /// CSV: the first line names the columns (skipped when read).
    pub header: bool,
    pub delimiter: char,
    /// What a NULL is written as: `\N` in text, an unquoted empty field
    /// in CSV.
    pub null: String,
    pub quote: char,
    pub escape: char,
}

/// `COPY t [(cols)] FROM STDIN [WITH (...)]`.
#[derive(Debug, Clone)]
pub struct CopyFrom {
    pub table: String,
    /// The columns named; empty: every column, in order.
    pub columns: Vec<String>,
    pub records: Records,
}

/// What `COPY ... TO STDOUT` writes out.
#[derive(Debug, Clone)]
pub enum CopySource {
    /// A table's columns (empty: every column, in order).
    Table { table: String, columns: Vec<String> },
    /// `COPY (query) TO STDOUT`: the query's text.
    Query(String),
}

/// `COPY {t [(cols)] | (query)} TO STDOUT [WITH (...)]`.
#[derive(Debug, Clone)]
pub struct CopyTo {
    pub source: CopySource,
    pub records: Records,
}

/// The COPY statements keyclaim runs.
#[derive(Debug, Clone)]
pub enum Copy {
    From(CopyFrom),
    To(CopyTo),
}

/// COPY's boolean options written `ON` / `OFF` (`WITH (FREEZE ON)`, as
/// pgbench -i sends it), which sqlparser takes only as TRUE / FALSE.
pub fn rewrite(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    // Every statement's tokens pass here: no allocation.
    let is = |t: &Token, word: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    let mut in_copy = false;
    let mut first = true;
    let mut boolean_option = false;
    for t in tokens.iter_mut() {
        match &t.token {
            Token::Whitespace(_) => continue,
            Token::SemiColon => {
                first = true;
                in_copy = false;
                boolean_option = false;
                continue;
            }
            _ => {}
        }
        if first {
            in_copy = is(&t.token, "copy");
            first = false;
        }
        if in_copy && boolean_option {
            if is(&t.token, "on") {
                t.token = Token::make_keyword("TRUE");
            } else if is(&t.token, "off") {
                t.token = Token::make_keyword("FALSE");
            }
        }
        boolean_option = in_copy && (is(&t.token, "freeze") || is(&t.token, "header"));
    }
    tokens
}

fn unsupported(what: &str) -> SqlError {
    SqlError::unsupported(
        format!("{what} is not supported"),
        "keyclaim runs COPY table [(columns)] FROM STDIN in text or CSV format (psql's \\copy, pg_dump's data)",
    )
}

/// The COPY statement keyclaim runs, or 0A000 for the other forms.
pub fn copy(stmt: &ast::Statement) -> SqlResult<Copy> {
    let ast::Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        ..
    } = stmt
    else {
        return Err(unsupported("this statement"));
    };
    let records = records(options, legacy_options)?;
    if *to {
        if !matches!(target, ast::CopyTarget::Stdout) {
            return Err(SqlError::unsupported(
                "COPY to a file or a program is not supported",
                "COPY TO instructs the server to write a file, and keyclaim has none of the client's. You may want a client-side facility such as psql's \\copy.",
            ));
        }
        let source = match source {
            ast::CopySource::Table {
                table_name: name,
                columns,
            } => CopySource::Table {
                table: table_name(name)?,
                columns: columns.iter().map(ident).collect(),
            },
            ast::CopySource::Query(q) => CopySource::Query(q.to_string()),
        };
        return Ok(Copy::To(CopyTo { source, records }));
    }
    let ast::CopySource::Table {
        table_name: name,
        columns,
    } = source
    else {
        return Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            "COPY FROM does not take a query",
        ));
    };
    if !matches!(target, ast::CopyTarget::Stdin) {
        return Err(SqlError::unsupported(
            "COPY from a file or a program is not supported",
            "COPY FROM instructs the server to read a file, and keyclaim has none of the client's. You may want a client-side facility such as psql's \\copy.",
        ));
    }
    Ok(Copy::From(CopyFrom {
        table: table_name(name)?,
        columns: columns.iter().map(ident).collect(),
        records,
    }))
}

/// The format options, from both spellings.
fn records(
    options: &[ast::CopyOption],
    legacy_options: &[ast::CopyLegacyOption],
) -> SqlResult<Records> {
    let mut format = Format::Text;
    let mut header = false;
    let mut delimiter = None;
    let mut null = None;
    let mut quote = '"';
    let mut escape = None;
    for o in options {
        match o {
            ast::CopyOption::Format(f) => {
                format = match f.value.to_lowercase().as_str() {
                    "text" => Format::Text,
                    "csv" => Format::Csv,
                    "binary" => return Err(unsupported("COPY in binary format")),
                    other => {
                        return Err(SqlError::new(
                            "22023",
                            format!("COPY format \"{other}\" not recognized"),
                        ))
                    }
                }
            }
            ast::CopyOption::Header(h) => header = *h,
            ast::CopyOption::Delimiter(d) => delimiter = Some(*d),
            ast::CopyOption::Null(n) => null = Some(n.clone()),
            ast::CopyOption::Quote(q) => quote = *q,
            ast::CopyOption::Escape(e) => escape = Some(*e),
            ast::CopyOption::Freeze(_) | ast::CopyOption::Encoding(_) => {}
            other => return Err(unsupported(&format!("COPY option {other}"))),
        }
    }
    for o in legacy_options {
        match o {
            ast::CopyLegacyOption::Csv(csv) => {
                format = Format::Csv;
                for o in csv {
                    match o {
                        ast::CopyLegacyCsvOption::Header => header = true,
                        ast::CopyLegacyCsvOption::Quote(q) => quote = *q,
                        ast::CopyLegacyCsvOption::Escape(e) => escape = Some(*e),
                        other => return Err(unsupported(&format!("COPY option {other}"))),
                    }
                }
            }
            ast::CopyLegacyOption::Header => header = true,
            ast::CopyLegacyOption::Delimiter(d) => delimiter = Some(*d),
            ast::CopyLegacyOption::Null(n) => null = Some(n.clone()),
            ast::CopyLegacyOption::Binary => return Err(unsupported("COPY in binary format")),
            other => return Err(unsupported(&format!("COPY option {other}"))),
        }
    }
    if header && format == Format::Text {
        return Err(SqlError::new(
            "0A000",
            "COPY HEADER available only in CSV mode",
        ));
    }
    Ok(Records {
        format,
        header,
        delimiter: delimiter.unwrap_or(match format {
            Format::Text => '\t',
            Format::Csv => ',',
        }),
        null: null.unwrap_or_else(|| match format {
            Format::Text => "\\N".into(),
            Format::Csv => String::new(),
        }),
        quote,
        escape: escape.unwrap_or(quote),
    })
}

impl Records {
    /// Where the next record ends in `data` (the index of its newline),
    /// None while it is incomplete: in CSV a quoted field may hold
    /// newlines.
    pub fn record_end(&self, data: &[u8]) -> Option<usize> {
        if self.format == Format::Text {
            return data.iter().position(|&b| b == b'\n');
        }
        let (quote, escape) = (self.quote as u8, self.escape as u8);
        let mut quoted = false;
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            if quoted && b == escape && escape != quote && data.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            if b == quote {
                quoted = !quoted;
            } else if b == b'\n' && !quoted {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// The fields of one record (its newline taken off); None is NULL.
    pub fn fields(&self, line: &str) -> SqlResult<Vec<Option<String>>> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        match self.format {
            Format::Text => Ok(line
                .split(self.delimiter)
                .map(|f| (f != self.null).then(|| unescape_text(f)))
                .collect()),
            Format::Csv => self.csv_fields(line),
        }
    }

    fn csv_fields(&self, line: &str) -> SqlResult<Vec<Option<String>>> {
        let mut out = Vec::new();
        let mut chars = line.chars().peekable();
        let mut field = String::new();
        let (mut quoted, mut any_quote) = (false, false);
        while let Some(c) = chars.next() {
            if quoted && c == self.escape && chars.peek() == Some(&self.quote) {
                chars.next();
                field.push(self.quote);
            } else if c == self.quote {
                quoted = !quoted;
                any_quote = true;
            } else if c == self.delimiter && !quoted {
                out.push(self.csv_value(std::mem::take(&mut field), any_quote));
                any_quote = false;
            } else {
                field.push(c);
            }
        }
        if quoted {
            return Err(SqlError::new("22P04", "unterminated CSV quoted field"));
        }
        out.push(self.csv_value(field, any_quote));
        Ok(out)
    }

    /// An unquoted field equal to the NULL string is NULL; a quoted one
    /// never is.
    fn csv_value(&self, field: String, quoted: bool) -> Option<String> {
        (quoted || field != self.null).then_some(field)
    }

    /// One record as COPY TO writes it, its newline included: each field
    /// (None is NULL) escaped as PostgreSQL's CopyAttributeOutText /
    /// CopyAttributeOutCSV escape it.
    pub fn record<'a>(&self, fields: impl ExactSizeIterator<Item = Option<&'a str>>) -> String {
        let mut out = String::new();
        let alone = fields.len() == 1;
        for (n, field) in fields.enumerate() {
            if n > 0 {
                out.push(self.delimiter);
            }
            match (field, self.format) {
                (None, _) => out.push_str(&self.null),
                (Some(f), Format::Text) => self.escape_text(f, &mut out),
                (Some(f), Format::Csv) => self.quote_csv(f, alone, &mut out),
            }
        }
        out.push('\n');
        out
    }

    fn escape_text(&self, field: &str, out: &mut String) {
        for c in field.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if c == self.delimiter => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }

    /// Quoted when it holds the delimiter, the quote, a line break, is
    /// the NULL string, or is a record's only field and reads `\.` (the
    /// end marker).
    fn quote_csv(&self, field: &str, alone: bool, out: &mut String) {
        let needs = field == self.null
            || (alone && field == "\\.")
            || field
                .chars()
                .any(|c| c == self.delimiter || c == self.quote || c == '\n' || c == '\r');
        if !needs {
            out.push_str(field);
            return;
        }
        out.push(self.quote);
        for c in field.chars() {
            if c == self.quote || c == self.escape {
                out.push(self.escape);
            }
            out.push(c);
        }
        out.push(self.quote);
    }
}

/// A text-format field's backslash escapes: `\t`, `\n`, `\\`, octal and
/// `\x` hex bytes, as PostgreSQL's COPY reads them.
fn unescape_text(field: &str) -> String {
    if !field.contains('\\') {
        return field.to_owned();
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('x') => {
                let mut n = 0u32;
                let mut digits = 0;
                while digits < 2 {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            n = n * 16 + d;
                            chars.next();
                            digits += 1;
                        }
                        None => break,
                    }
                }
                match digits {
                    0 => out.push('x'),
                    _ => out.push(char::from_u32(n).unwrap_or('?')),
                }
            }
            Some(d @ '0'..='7') => {
                let mut n = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            n = n * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(n).unwrap_or('?'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(sql: &str) -> Records {
        match copy(&crate::sql::parse(sql).unwrap()[0]).unwrap() {
            Copy::From(f) => f.records,
            Copy::To(t) => t.records,
        }
    }

    #[test]
    fn text_fields_unescape_and_read_nulls() {
        let p = plan("COPY t FROM STDIN");
        assert_eq!(
            p.fields("1\ta\\tb\\\\c\t\\N\t\\101").unwrap(),
            vec![
                Some("1".into()),
                Some("a\tb\\c".into()),
                None,
                Some("A".into())
            ]
        );
    }

    #[test]
    fn csv_fields_quote_and_tell_empty_from_null() {
        let p = plan("COPY t FROM STDIN WITH (FORMAT csv, HEADER true)");
        assert!(p.header);
        assert_eq!(
            p.fields("1,\"a,\"\"b\"\"\",,\"\"").unwrap(),
            vec![
                Some("1".into()),
                Some("a,\"b\"".into()),
                None,
                Some("".into())
            ]
        );
        let data = b"1,\"two\nlines\"\n2,x\n";
        let end = p.record_end(data).unwrap();
        assert_eq!(&data[..end], b"1,\"two\nlines\"");
        assert!(p.fields("1,\"open").is_err());
    }

    #[test]
    fn records_are_written_as_postgresql_writes_them() {
        let text = plan("COPY t TO STDOUT");
        assert_eq!(
            text.record([Some("1"), Some("a\tb\\c\nd"), None].into_iter()),
            "1\ta\\tb\\\\c\\nd\t\\N\n"
        );
        let csv = plan("COPY t TO STDOUT WITH (FORMAT csv)");
        assert_eq!(
            csv.record([Some("1"), Some("a,\"b\""), None, Some(""), Some("\\.")].into_iter()),
            "1,\"a,\"\"b\"\"\",,\"\",\\.\n"
        );
        assert_eq!(csv.record([Some("\\.")].into_iter()), "\"\\.\"\n");
        // What is written reads back the same.
        let line = csv.record([Some("x\ny"), None, Some("")].into_iter());
        let end = csv.record_end(line.as_bytes()).unwrap();
        assert_eq!(
            csv.fields(&line[..end]).unwrap(),
            vec![Some("x\ny".into()), None, Some("".into())]
        );
    }

    #[test]
    fn other_forms_are_refused() {
        for sql in [
            "COPY t TO '/tmp/x'",
            "COPY t FROM '/etc/passwd'",
            "COPY t FROM STDIN WITH (FORMAT binary)",
            "COPY t TO STDOUT WITH (FORMAT binary)",
        ] {
            assert!(copy(&crate::sql::parse(sql).unwrap()[0]).is_err(), "{sql}");
        }
        assert!(matches!(
            copy(&crate::sql::parse("COPY (SELECT 1) TO STDOUT").unwrap()[0]),
            Ok(Copy::To(CopyTo {
                source: CopySource::Query(_),
                ..
            }))
        ));
    }
}
