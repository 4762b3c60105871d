//! The predicate of a partial UNIQUE index (`CREATE UNIQUE INDEX ... WHERE
//! deleted_at IS NULL`, what soft-delete apps declare): only the rows it
//! covers hold the index's key, so only they claim it (`UniqueDef::key_of`).
//!
//! The claim protocol decides from a row's values alone, with no session
//! around it, so a predicate is kept as the conditions such apps write,
//! over one column each and joined by AND: `c IS NULL`, `c IS NOT NULL`, a
//! boolean column, `NOT c`, `c = constant`, `c <> constant`. Anything
//! else is refused with 0A000 when the index is created.

use serde::{Deserialize, Serialize};
use sqlparser::ast::{self, BinaryOperator, UnaryOperator};

use super::TableDef;
use crate::error::{SqlError, SqlResult};
use crate::sql::plan::ident;
use crate::types::{SqlType, Value};

/// Conditions a row must all meet to be covered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Predicate(pub Vec<Condition>);

/// One condition on one column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    pub column: usize,
    pub test: Test,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Test {
    IsNull,
    IsNotNull,
    /// A boolean column on its own.
    IsTrue,
    /// `NOT c`.
    IsFalse,
    /// `c = constant`, the constant in the column's type.
    Equals(Value),
    NotEquals(Value),
}

fn unsupported(what: impl std::fmt::Display) -> SqlError {
    SqlError::unsupported(
        format!("a partial unique index on {what} is not supported"),
        "write its WHERE as conditions on one column each joined by AND: \
         c IS NULL, c IS NOT NULL, a boolean column, NOT c, c = constant or c <> constant",
    )
}

impl Predicate {
    /// The predicate `expr` declares on `table`.
    pub fn declare(table: &TableDef, expr: &ast::Expr) -> SqlResult<Predicate> {
        let mut conditions = Vec::new();
        collect(table, expr, &mut conditions)?;
        Ok(Predicate(conditions))
    }

    /// Whether `given` (an ON CONFLICT inference clause's WHERE) implies
    /// it: each of its conditions is one of the conditions `given` joins
    /// by AND (a conjunct it cannot read implies nothing, and is no
    /// obstacle either), as PostgreSQL's inference proves it.
    pub fn implied_by(&self, table: &TableDef, given: &ast::Expr) -> bool {
        let mut conjuncts = vec![given];
        let mut known = Vec::new();
        while let Some(e) = conjuncts.pop() {
            match e {
                ast::Expr::Nested(inner) => conjuncts.push(inner),
                ast::Expr::BinaryOp {
                    left,
                    op: ast::BinaryOperator::And,
                    right,
                } => {
                    conjuncts.push(left);
                    conjuncts.push(right);
                }
                other => {
                    if let Ok(p) = Predicate::declare(table, other) {
                        known.extend(p.0);
                    }
                }
            }
        }
        self.0.iter().all(|c| known.contains(c))
    }

    /// Whether a row with `values` is covered: every condition is true
    /// (a NULL makes a comparison unknown, which covers nothing).
    pub fn covers(&self, values: &[Value]) -> bool {
        self.0.iter().all(|c| {
            let v = &values[c.column];
            match &c.test {
                Test::IsNull => v.is_null(),
                Test::IsNotNull => !v.is_null(),
                Test::IsTrue => *v == Value::Bool(true),
                Test::IsFalse => *v == Value::Bool(false),
                Test::Equals(k) => !v.is_null() && same(v, k),
                Test::NotEquals(k) => !v.is_null() && !same(v, k),
            }
        })
    }

    /// The columns it reads.
    pub fn columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|c| c.column)
    }

    /// As `pg_get_indexdef` prints it after WHERE, `pretty` (what psql's
    /// `\d` shows: no parentheses it does not need) or not.
    pub fn render(&self, table: &TableDef, pretty: bool) -> String {
        let parts: Vec<String> = self.0.iter().map(|c| condition(table, c, pretty)).collect();
        match (parts.as_slice(), pretty) {
            ([one], _) => one.clone(),
            (many, true) => many.join(" AND "),
            (many, false) => format!("({})", many.join(" AND ")),
        }
    }
}

/// Two values of one column's type, equal as their keys are.
fn same(a: &Value, b: &Value) -> bool {
    crate::types::encode_key(&[a]) == crate::types::encode_key(&[b])
}

fn collect(table: &TableDef, e: &ast::Expr, out: &mut Vec<Condition>) -> SqlResult<()> {
    let column = |e: &ast::Expr| -> SqlResult<Option<usize>> {
        match e {
            ast::Expr::Identifier(id) => table.column(&ident(id)).map(Some),
            ast::Expr::CompoundIdentifier(ids) if !ids.is_empty() => {
                table.column(&ident(&ids[ids.len() - 1])).map(Some)
            }
            _ => Ok(None),
        }
    };
    let mut push = |column: usize, test: Test| out.push(Condition { column, test });
    match e {
        ast::Expr::Nested(inner) => return collect(table, inner, out),
        ast::Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            collect(table, left, out)?;
            return collect(table, right, out);
        }
        ast::Expr::IsNull(x) | ast::Expr::IsNotNull(x) => {
            let c = column(x)?.ok_or_else(|| unsupported(e))?;
            let test = match e {
                ast::Expr::IsNull(_) => Test::IsNull,
                _ => Test::IsNotNull,
            };
            push(c, test);
        }
        ast::Expr::IsTrue(x) | ast::Expr::IsFalse(x) => {
            let c = boolean(table, column(x)?, e)?;
            push(
                c,
                if matches!(e, ast::Expr::IsTrue(_)) {
                    Test::IsTrue
                } else {
                    Test::IsFalse
                },
            );
        }
        ast::Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => {
            let c = boolean(table, column(expr)?, e)?;
            push(c, Test::IsFalse);
        }
        ast::Expr::BinaryOp { left, op, right }
            if matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) =>
        {
            let (c, constant) = match (column(left)?, column(right)?) {
                (Some(c), None) => (c, right.as_ref()),
                (None, Some(c)) => (c, left.as_ref()),
                _ => return Err(unsupported(e)),
            };
            let value = constant_of(table, c, constant).ok_or_else(|| unsupported(e))??;
            push(
                c,
                match op {
                    BinaryOperator::Eq => Test::Equals(value),
                    _ => Test::NotEquals(value),
                },
            );
        }
        other => {
            let c = column(other)?.ok_or_else(|| unsupported(e))?;
            let c = boolean(table, Some(c), e)?;
            push(c, Test::IsTrue);
        }
    }
    Ok(())
}

/// A boolean column, or 0A000.
fn boolean(table: &TableDef, c: Option<usize>, e: &ast::Expr) -> SqlResult<usize> {
    match c {
        Some(c) if table.columns[c].ty == SqlType::Bool => Ok(c),
        _ => Err(unsupported(e)),
    }
}

/// A literal (optionally negated or cast) in column `c`'s type; None when
/// `e` is not a literal, Some(Err) when it does not fit the type.
fn constant_of(table: &TableDef, c: usize, e: &ast::Expr) -> Option<SqlResult<Value>> {
    let (text, negated) = match e {
        ast::Expr::Value(v) => (literal(&v.value)?, false),
        ast::Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            ast::Expr::Value(v) => (literal(&v.value)?, true),
            _ => return None,
        },
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => {
            return constant_of(table, c, expr)
        }
        _ => return None,
    };
    let text = if negated { format!("-{text}") } else { text };
    let ty = table.columns[c].ty.without_numeric_typmod();
    Some(Value::Text(text).cast_to(&ty))
}

fn literal(v: &ast::Value) -> Option<String> {
    match v {
        ast::Value::Number(n, _) => Some(n.clone()),
        ast::Value::SingleQuotedString(s) => Some(s.clone()),
        ast::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One condition as PostgreSQL deparses it: parenthesised unless
/// `pretty`, a string or negative constant with its type, a varchar column
/// compared as text.
fn condition(table: &TableDef, c: &Condition, pretty: bool) -> String {
    let col = &table.columns[c.column];
    let name = super::naming::quote_ident(&col.name);
    let wrap = |s: String| match pretty {
        true => s,
        false => format!("({s})"),
    };
    let compared = |k: &Value, op: &str| {
        let text = k.to_text().unwrap_or_default();
        let (lhs, constant) = match &col.ty {
            SqlType::Varchar(_) | SqlType::Char(_) => (
                format!("{}::text", wrap(name.clone())),
                quoted(&text, "text"),
            ),
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Numeric(_) | SqlType::Bool
                if !text.starts_with('-') =>
            {
                (name.clone(), text)
            }
            ty => (name.clone(), quoted(&text, ty.pg_name())),
        };
        wrap(format!("{lhs} {op} {constant}"))
    };
    match &c.test {
        Test::IsNull => wrap(format!("{name} IS NULL")),
        Test::IsNotNull => wrap(format!("{name} IS NOT NULL")),
        Test::IsTrue => name,
        Test::IsFalse => wrap(format!("NOT {name}")),
        Test::Equals(k) => compared(k, "="),
        Test::NotEquals(k) => compared(k, "<>"),
    }
}

fn quoted(text: &str, ty: &str) -> String {
    format!("'{}'::{ty}", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnDef;

    fn table() -> TableDef {
        let columns = vec![
            ColumnDef::new("id", SqlType::Int4),
            ColumnDef::new("email", SqlType::Varchar(Some(100))),
            ColumnDef::new("deleted_at", SqlType::Timestamp),
            ColumnDef::new("active", SqlType::Bool),
            ColumnDef::new("org", SqlType::Int4),
        ];
        TableDef::new("member", "member.1", columns, vec![0])
    }

    fn declare(sql: &str) -> SqlResult<Predicate> {
        Predicate::declare(&table(), &crate::sql::parse_expr(sql).unwrap())
    }

    fn row(deleted: bool, active: Option<bool>, org: i32) -> Vec<Value> {
        vec![
            Value::Int4(1),
            Value::Text("ann@x".into()),
            match deleted {
                true => Value::Text("2024-01-01".into())
                    .cast_to(&SqlType::Timestamp)
                    .unwrap(),
                false => Value::Null,
            },
            active.map_or(Value::Null, Value::Bool),
            Value::Int4(org),
        ]
    }

    #[test]
    fn only_the_rows_it_covers_are_covered() {
        let live = declare("deleted_at IS NULL").unwrap();
        assert!(live.covers(&row(false, None, 1)));
        assert!(!live.covers(&row(true, None, 1)));
        let p = declare("(active) AND org <> 2 AND deleted_at IS NULL").unwrap();
        assert!(p.covers(&row(false, Some(true), 1)));
        assert!(!p.covers(&row(false, Some(true), 2)));
        // NULL is not true: not covered.
        assert!(!p.covers(&row(false, None, 1)));
        assert!(declare("NOT active")
            .unwrap()
            .covers(&row(false, Some(false), 1)));
        assert!(declare("org = '1'").unwrap().covers(&row(false, None, 1)));
    }

    #[test]
    fn it_prints_as_postgres_deparses_it() {
        let t = table();
        let both = |sql: &str| {
            let p = declare(sql).unwrap();
            (p.render(&t, false), p.render(&t, true))
        };
        assert_eq!(
            both("deleted_at IS NULL"),
            ("(deleted_at IS NULL)".into(), "deleted_at IS NULL".into())
        );
        // What PostgreSQL 15 prints for the same index, both ways.
        assert_eq!(
            both("active AND email = 'a' AND org <> -1 AND NOT active AND org = 5"),
            (
                "(active AND ((email)::text = 'a'::text) AND (org <> '-1'::integer) \
                 AND (NOT active) AND (org = 5))"
                    .to_string(),
                "active AND email::text = 'a'::text AND org <> '-1'::integer \
                 AND NOT active AND org = 5"
                    .to_string()
            )
        );
    }

    #[test]
    fn what_it_cannot_decide_from_a_row_is_refused() {
        for sql in [
            "lower(email) = 'x'",
            "deleted_at IS NULL OR org = 1",
            "org > 1",
            "email",
            "org = id",
        ] {
            let e = declare(sql).unwrap_err();
            assert_eq!(e.code, "0A000", "{sql}");
        }
        assert_eq!(declare("nope IS NULL").unwrap_err().code, "42703");
        assert_eq!(declare("org = 'x'").unwrap_err().code, "22P02");
    }
}
