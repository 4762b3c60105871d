//! DataFusion's errors as PostgreSQL's: SQLSTATE, message, and where the
//! query text allows it, the cursor position PostgreSQL would give.
//!
//! DataFusion plans a rewritten text of the statement, so its own spans
//! do not point into what the client sent; the position is found instead
//! by looking for the name the error is about in the client's text.

use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, SchemaError};

use crate::error::{sqlstate, SqlError};

/// The client's statement text, for error positions.
pub(crate) struct Source<'a> {
    pub text: &'a str,
    /// Character offset of the statement in `text`.
    pub start: usize,
}

impl Source<'_> {
    /// The 1-based character position of the first whole-word occurrence of
    /// `word` (case-insensitive, outside quoted literals) from the statement on.
    pub fn find(&self, word: &str) -> Option<u32> {
        let first = self.occurrences(word).next()?;
        u32::try_from(first + 1).ok()
    }

    /// The 1-based character position of `symbol` (case-insensitive) where
    /// it is the next token after a whole-word occurrence of `word`: an
    /// operator after its left operand.
    pub fn find_after(&self, word: &str, symbol: &str) -> Option<u32> {
        let chars: Vec<char> = self.text.chars().collect();
        let symbol: Vec<char> = symbol.to_lowercase().chars().collect();
        let word_len = word.chars().count();
        self.occurrences(word).find_map(|at| {
            let mut i = at + word_len;
            while chars.get(i).is_some_and(|c| c.is_whitespace()) {
                i += 1;
            }
            let follows = chars.get(i..i + symbol.len())?;
            let matches = follows
                .iter()
                .zip(&symbol)
                .all(|(a, b)| a.to_lowercase().eq(std::iter::once(*b)));
            matches.then(|| u32::try_from(i + 1).ok()).flatten()
        })
    }

    /// The character offsets of whole-word occurrences of `word`
    /// (case-insensitive, outside quoted literals) from the statement on.
    fn occurrences(&self, word: &str) -> impl Iterator<Item = usize> + '_ {
        let chars: Vec<char> = self.text.chars().collect();
        let needle: Vec<char> = word.to_lowercase().chars().collect();
        let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
        let mut quoted = false;
        (self.start..chars.len()).filter(move |&i| {
            let c = chars[i];
            if c == '\'' {
                quoted = !quoted;
                return false;
            }
            !quoted
                && !needle.is_empty()
                && i + needle.len() <= chars.len()
                && (i == 0 || !is_word(chars[i - 1]))
                && chars[i + needle.len()..]
                    .first()
                    .is_none_or(|&n| !is_word(n))
                && chars[i..i + needle.len()]
                    .iter()
                    .zip(&needle)
                    .all(|(a, b)| a.to_lowercase().eq(std::iter::once(*b)))
        })
    }
}

/// A DataFusion error as the client's error; `src` locates names.
pub(crate) fn to_sql_error(e: DataFusionError, src: Option<&Source<'_>>) -> SqlError {
    let at = |err: SqlError, word: &str| match src.and_then(|s| s.find(word)) {
        Some(p) => err.with_position(p),
        None => err,
    };
    match e {
        DataFusionError::External(inner) => match inner.downcast::<SqlError>() {
            // A function of ours that has no form for its arguments
            // (`function generate_series(integer) does not exist`): at
            // the call, as PostgreSQL points to it.
            Ok(e)
                if matches!(
                    e.code,
                    sqlstate::UNDEFINED_FUNCTION | sqlstate::AMBIGUOUS_FUNCTION
                ) && e.position.is_none() =>
            {
                let name = e
                    .message
                    .strip_prefix("function ")
                    .and_then(|m| m.split('(').next())
                    .unwrap_or_default()
                    .to_string();
                at(*e, &name)
            }
            Ok(e) => *e,
            Err(other) => SqlError::internal(other.to_string()),
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            to_sql_error(*inner, src)
        }
        DataFusionError::Shared(inner) => to_sql_error(
            std::sync::Arc::try_unwrap(inner)
                .unwrap_or_else(|a| DataFusionError::Execution(a.to_string())),
            src,
        ),
        DataFusionError::Collection(mut list) if !list.is_empty() => {
            to_sql_error(list.remove(0), src)
        }
        DataFusionError::SchemaError(schema, _) => match *schema {
            SchemaError::FieldNotFound {
                field,
                valid_fields,
            } => match &field.relation {
                Some(r)
                    if !valid_fields
                        .iter()
                        .any(|v| v.relation.as_ref().map(|q| q.table()) == Some(r.table())) =>
                {
                    at(
                        SqlError::new(
                            sqlstate::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{}\"", r.table()),
                        ),
                        r.table(),
                    )
                }
                Some(r) => at(
                    SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!("column {}.{} does not exist", r.table(), field.name),
                    ),
                    &format!("{}.{}", r.table(), field.name),
                ),
                None => at(SqlError::undefined_column(&field.name), &field.name),
            },
            SchemaError::AmbiguousReference { field } => at(
                SqlError::new(
                    sqlstate::AMBIGUOUS_COLUMN,
                    format!("column reference \"{}\" is ambiguous", field.name),
                ),
                &field.name,
            ),
            other => SqlError::unsupported(other.to_string(), HINT),
        },
        DataFusionError::ArrowError(arrow, _) => arrow_error(*arrow),
        DataFusionError::Plan(msg) => plan_error(&msg, src),
        DataFusionError::Execution(msg) => execution_error(&msg),
        DataFusionError::NotImplemented(msg) => {
            SqlError::unsupported(format!("{} is not supported", first_line(&msg)), HINT)
        }
        DataFusionError::ResourcesExhausted(msg) => {
            SqlError::new("53200", format!("out of memory: {}", first_line(&msg)))
        }
        other => SqlError::internal(first_line(&other.to_string()).to_string()),
    }
}

const HINT: &str =
    "keyclaim's query engine cannot run this query; rewrite it or run the parts separately";

fn first_line(msg: &str) -> &str {
    msg.lines().next().unwrap_or(msg)
}

fn arrow_error(e: ArrowError) -> SqlError {
    match e {
        ArrowError::DivideByZero => division_by_zero(),
        ArrowError::ArithmeticOverflow(_) => {
            SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
        }
        ArrowError::ExternalError(inner) => match inner.downcast::<SqlError>() {
            Ok(e) => *e,
            Err(other) => SqlError::internal(other.to_string()),
        },
        ArrowError::CastError(msg) => cast_error(&msg),
        other => execution_error(&other.to_string()),
    }
}

fn division_by_zero() -> SqlError {
    SqlError::new(sqlstate::DIVISION_BY_ZERO, "division by zero")
}

/// `Cannot cast string 'x' to value of Int32 type`.
fn cast_error(msg: &str) -> SqlError {
    let quoted = msg.split('\'').nth(1);
    let ty = msg
        .split("value of ")
        .nth(1)
        .and_then(|s| s.split(' ').next());
    let pg = match ty {
        Some("Int16") => "smallint",
        Some("Int32") => "integer",
        Some("Int64") => "bigint",
        Some("Float32") => "real",
        Some("Float64") => "double precision",
        Some(t) if t.starts_with("Decimal") => "numeric",
        Some("Boolean") => "boolean",
        Some("Date32") => "date",
        _ => "",
    };
    match (quoted, pg) {
        (Some(input), ty) if !ty.is_empty() => SqlError::invalid_text(ty, input),
        _ => SqlError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            first_line(msg).to_string(),
        ),
    }
}

fn execution_error(msg: &str) -> SqlError {
    if msg.contains("Divide by zero") || msg.contains("Division by zero") {
        division_by_zero()
    } else if msg.contains("more than one row") {
        SqlError::new(
            sqlstate::CARDINALITY_VIOLATION,
            "more than one row returned by a subquery used as an expression",
        )
    } else if msg.contains("Cannot cast") {
        cast_error(msg)
    } else if msg.contains("Overflow") || msg.contains("overflow") {
        SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
    } else {
        SqlError::internal(first_line(msg).to_string())
    }
}

fn plan_error(msg: &str, src: Option<&Source<'_>>) -> SqlError {
    let at = |err: SqlError, word: &str| match src.and_then(|s| s.find(word)) {
        Some(p) => err.with_position(p),
        None => err,
    };
    if let Some(rest) = msg.strip_prefix("Invalid function '") {
        let name = rest.split('\'').next().unwrap_or_default();
        let args = src.and_then(|s| call_arguments(s, name));
        return at(
            SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", args.unwrap_or_default()),
            )
            .with_hint(
                "No function matches the given name and argument types. You might need to add explicit type casts.",
            ),
            name,
        );
    }
    if msg.contains("must appear in the GROUP BY clause") {
        // `... column "t.b" must appear ...` or `HAVING clause references: t.b must appear ...`
        let column = msg
            .split("column \"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .or_else(|| {
                msg.split("references: ")
                    .nth(1)
                    .and_then(|s| s.split(" must").next())
            })
            .unwrap_or_default()
            .to_string();
        let bare = column.rsplit('.').next().unwrap_or(&column).to_string();
        let err = SqlError::new(
            sqlstate::GROUPING_ERROR,
            format!("column \"{column}\" must appear in the GROUP BY clause or be used in an aggregate function"),
        );
        return match src.and_then(|s| s.find(&column).or_else(|| s.find(&bare))) {
            Some(p) => err.with_position(p),
            None => err,
        };
    }
    if msg.contains("Divide by zero") {
        return division_by_zero();
    }
    if let Some((left, op, right)) = msg
        .split("comparison operation ")
        .nth(1)
        .and_then(comparison_operands)
    {
        return SqlError::no_operator(&left, op, &right);
    }
    SqlError::unsupported(first_line(msg).to_string(), HINT)
}

/// `Utf8 = Int32` split at its operator, each operand type as PostgreSQL
/// names it (an Arrow type may hold spaces: `Decimal128(5, 2)`).
fn comparison_operands(ops: &str) -> Option<(String, &str, String)> {
    let words: Vec<&str> = ops.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.chars().all(|c| "=<>!~".contains(c)))?;
    let name = |words: &[&str]| arrow_type_name(&words.join(" ")).to_owned();
    Some((name(&words[..at]), words[at], name(&words[at + 1..])))
}

/// An Arrow type as PostgreSQL names it; an unknown one as Arrow does.
fn arrow_type_name(t: &str) -> &str {
    match t {
        "Utf8" | "Utf8View" | "LargeUtf8" => "text",
        "Int16" => "smallint",
        "Int32" => "integer",
        "Int64" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Boolean" => "boolean",
        "Date32" => "date",
        t if t.starts_with("Decimal") => "numeric",
        t => t,
    }
}

/// The PostgreSQL type names of a call's literal arguments in the
/// client's text (`foo(1, 'a')`: `integer, unknown`); None when an
/// argument is not a literal.
fn call_arguments(src: &Source<'_>, name: &str) -> Option<String> {
    let at = src.find(name)? as usize - 1;
    let rest: String = src.text.chars().skip(at + name.chars().count()).collect();
    let rest = rest.trim_start().strip_prefix('(')?;
    let inner = rest.split(')').next()?;
    if inner.trim().is_empty() {
        return Some(String::new());
    }
    inner
        .split(',')
        .map(|a| {
            let a = a.trim();
            if a.starts_with('\'') {
                Some("unknown")
            } else if a.parse::<i32>().is_ok() {
                Some("integer")
            } else if a.parse::<i64>().is_ok() {
                Some("bigint")
            } else if a.parse::<f64>().is_ok() {
                Some("numeric")
            } else if a.eq_ignore_ascii_case("true") || a.eq_ignore_ascii_case("false") {
                Some("boolean")
            } else {
                None
            }
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_as_whole_words_outside_literals() {
        let s = Source {
            text: "SELECT 'ab', xab, ab FROM t",
            start: 0,
        };
        assert_eq!(s.find("ab"), Some(19));
        assert_eq!(s.find("AB"), Some(19));
        assert_eq!(s.find("zz"), None);
    }

    #[test]
    fn an_operator_is_found_after_its_left_operand() {
        let s = Source {
            text: "SELECT name FROM t WHERE 'name =' = name AND t.name  <> 5 OR name in (1)",
            start: 0,
        };
        // Not the select list's `name`, nor the one in a literal.
        assert_eq!(s.find_after("name", "<>"), Some(54));
        assert_eq!(s.find_after("name", "IN"), Some(67));
        assert_eq!(s.find_after("name", ">"), None);
    }

    #[test]
    fn errors_take_postgres_codes() {
        let e = to_sql_error(
            DataFusionError::ArrowError(Box::new(ArrowError::DivideByZero), None),
            None,
        );
        assert_eq!((e.code, e.message.as_str()), ("22012", "division by zero"));
        let e = to_sql_error(
            DataFusionError::Execution("Scalar subquery returned more than one row".into()),
            None,
        );
        assert_eq!(e.code, "21000");
        let src = Source {
            text: "SELECT nosuch(1, 'x')",
            start: 0,
        };
        let e = to_sql_error(
            DataFusionError::Plan("Invalid function 'nosuch'.\nDid you mean 'nullif'?".into()),
            Some(&src),
        );
        assert_eq!(
            (e.code, e.message.as_str(), e.position),
            (
                "42883",
                "function nosuch(integer, unknown) does not exist",
                Some(8)
            )
        );
    }
}
