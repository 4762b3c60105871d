//! CHECK constraints: declared (named as PostgreSQL names them, checked as
//! it checks them), compiled for a plan, and printed back as
//! `pg_get_constraintdef` prints them.

use std::ops::ControlFlow;

use sqlparser::ast::{self, BinaryOperator as B, Spanned, UnaryOperator as U};

use super::expr::{Compiler, Env, EvalCtx, Expr, Params, Scope};
use super::plan::ident;
use crate::catalog::{naming, CheckDef, TableDef};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::{failing_row, SqlType, Value};

/// A CHECK constraint as declared on `table`, before it has a name taken
/// from the ones in `taken`.
pub fn declare<'a>(
    table: &TableDef,
    name: Option<String>,
    expr: &ast::Expr,
    validated: bool,
    taken: impl IntoIterator<Item = &'a str>,
) -> SqlResult<CheckDef> {
    let subquery = ast::visit_expressions(expr, |e| match e {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            ControlFlow::Break(e.span().start)
        }
        _ => ControlFlow::Continue(()),
    });
    if let ControlFlow::Break(mut at) = subquery {
        // PostgreSQL points at the subquery's opening parenthesis.
        at.column = at.column.saturating_sub(1).max(1);
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "cannot use subquery in check constraint",
        )
        .at(at));
    }
    let parameter = ast::visit_expressions(expr, |e| match e {
        ast::Expr::Value(v) if matches!(v.value, ast::Value::Placeholder(_)) => {
            ControlFlow::Break((v.value.to_string(), v.span.start))
        }
        _ => ControlFlow::Continue(()),
    });
    if let ControlFlow::Break((p, at)) = parameter {
        return Err(SqlError::new("42P02", format!("there is no parameter {p}")).at(at));
    }
    let mut params = Params::default();
    let compiled = compiler(table, &mut params).compile(expr)?;
    let ty = compiler(table, &mut params).type_of(&compiled);
    if let Some(ty) = ty.filter(|t| *t != SqlType::Bool) {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "argument of CHECK must be type boolean, not type {}",
                ty.pg_name()
            ),
        )
        .at(expr.span().start));
    }
    let columns = columns_read(table, expr);
    let name = name.unwrap_or_else(|| {
        let only = match columns.as_slice() {
            [c] => vec![table.columns[*c].name.as_str()],
            _ => Vec::new(),
        };
        naming::check_name(&table.name, &only, taken)
    });
    Ok(CheckDef {
        name,
        expr: unquoted(expr).to_string(),
        columns,
        validated,
    })
}

/// The expression with its identifiers quoted only where PostgreSQL's
/// quote_ident would quote them (`"quantity"` is `quantity`), as
/// pg_get_constraintdef prints them.
fn unquoted(expr: &ast::Expr) -> ast::Expr {
    let mut out = expr.clone();
    let _ = ast::visit_expressions_mut(&mut out, |e| {
        let idents: Vec<&mut ast::Ident> = match e {
            ast::Expr::Identifier(id) => vec![id],
            ast::Expr::CompoundIdentifier(parts) => parts.iter_mut().collect(),
            _ => Vec::new(),
        };
        for id in idents {
            if id.quote_style == Some('"') && naming::quote_ident(&id.value) == id.value {
                id.quote_style = None;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

fn compiler<'a>(table: &'a TableDef, params: &'a mut Params) -> Compiler<'a> {
    Compiler {
        scope: Scope {
            table: Some(table),
            qualifier: Some(table.name.clone()),
            excluded: false,
        },
        params,
    }
}

/// The table's columns an expression names, in the order they first
/// appear (as PostgreSQL's conkey lists them).
fn columns_read(table: &TableDef, expr: &ast::Expr) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let _ = ast::visit_expressions(expr, |e| {
        let name = match e {
            ast::Expr::Identifier(id) => Some(id),
            ast::Expr::CompoundIdentifier(parts) => parts.last(),
            _ => None,
        };
        if let Some(i) = name.and_then(|n| table.column_index(&ident(n))) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// A table's CHECK constraints compiled for one plan, in name order (the
/// order PostgreSQL checks them in, so the first violated is reported).
#[derive(Debug, Default, Clone)]
pub struct Checks(Vec<(String, Expr)>);

impl Checks {
    pub fn compile(table: &TableDef) -> SqlResult<Checks> {
        let mut out = Vec::with_capacity(table.checks.len());
        for c in &table.checks {
            let mut params = Params::default();
            let e = compiler(table, &mut params).compile(&super::parse_expr(&c.expr)?)?;
            out.push((c.name.clone(), e));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Checks(out))
    }

    /// The first constraint `values` violate, with PostgreSQL's 23514.
    pub fn verify(&self, table: &TableDef, values: &[Value], env: &dyn Env) -> SqlResult<()> {
        let cx = EvalCtx {
            row: Some(values),
            excluded: None,
            params: &[],
            env,
        };
        for (name, e) in &self.0 {
            if e.fails(&cx)? {
                return Err(violation(table, name, values));
            }
        }
        Ok(())
    }
}

/// 23514 for a row, as PostgreSQL's ExecConstraints words it.
fn violation(table: &TableDef, name: &str, values: &[Value]) -> SqlError {
    SqlError::new(
        sqlstate::CHECK_VIOLATION,
        format!(
            "new row for relation \"{}\" violates check constraint \"{name}\"",
            table.name
        ),
    )
    .with_detail(failing_row(&values[..table.visible().len()]))
    .with_table(&table.name)
    .with_constraint(name.to_owned())
}

/// 23514 for a CHECK constraint that an existing row violates, when it is
/// added or validated.
pub fn violated_by_some_row(table: &str, name: &str) -> SqlError {
    SqlError::new(
        sqlstate::CHECK_VIOLATION,
        format!("check constraint \"{name}\" of relation \"{table}\" is violated by some row"),
    )
    .with_table(table)
    .with_constraint(name.to_owned())
}

/// `pg_get_constraintdef` of a CHECK constraint: `pretty` with only the
/// parentheses precedence needs (what psql's `\d` shows), else with
/// every operation in its own, as PostgreSQL's deparser writes them.
/// The expression is the one declared; of PostgreSQL's implicit casts
/// only a constant's to the type of the column it is compared with is
/// spelled (`price > 0::numeric`, `name = 'a'::text`).
pub fn constraintdef(table: &TableDef, c: &CheckDef, pretty: bool) -> String {
    let mut def = format!("CHECK ({})", expression(table, c, pretty));
    if !c.validated {
        def.push_str(" NOT VALID");
    }
    def
}

/// The expression alone, as `pg_get_expr(conbin)` shows it.
pub fn expression(table: &TableDef, c: &CheckDef, pretty: bool) -> String {
    match super::parse_expr(&c.expr) {
        Ok(e) => Printer { pretty, table }.expr(&e, Parent::Top),
        Err(_) => c.expr.clone(),
    }
}

/// The `check_clause` information_schema shows: the expression in
/// parentheses.
pub fn check_clause(table: &TableDef, c: &CheckDef) -> String {
    format!("({})", expression(table, c, false))
}

/// Where an expression is printed, for deciding its parentheses.
#[derive(Clone, Copy, PartialEq)]
enum Parent {
    Top,
    /// An operand of AND, OR or NOT.
    Bool(Logic),
    /// An operand of another operator; `left` when it is the left one.
    Op {
        arithmetic: Option<u8>,
        left: bool,
    },
    /// An argument of a function, a cast, a list.
    Other,
}

#[derive(Clone, Copy, PartialEq)]
enum Logic {
    And,
    Or,
    Not,
}

struct Printer<'t> {
    pretty: bool,
    table: &'t TableDef,
}

/// The priority of an arithmetic operator: `*`, `/`, `%` bind tighter
/// than `+` and `-`; None for the others.
fn arithmetic(op: &B) -> Option<u8> {
    match op {
        B::Plus | B::Minus => Some(1),
        B::Multiply | B::Divide | B::Modulo => Some(2),
        _ => None,
    }
}

impl Printer<'_> {
    fn expr(&self, e: &ast::Expr, parent: Parent) -> String {
        use ast::Expr as E;
        match e {
            E::Nested(inner) => self.expr(inner, parent),
            E::BinaryOp {
                op: op @ (B::And | B::Or),
                ..
            } => {
                let logic = if *op == B::And { Logic::And } else { Logic::Or };
                let mut operands = Vec::new();
                flatten(e, op, &mut operands);
                let parts: Vec<String> = operands
                    .iter()
                    .map(|o| self.expr(o, Parent::Bool(logic)))
                    .collect();
                let text = parts.join(if logic == Logic::And { " AND " } else { " OR " });
                self.wrap(text, self.bool_bare(logic, parent))
            }
            E::UnaryOp { op: U::Not, expr } => {
                let text = format!("NOT {}", self.expr(expr, Parent::Bool(Logic::Not)));
                self.wrap(text, self.bool_bare(Logic::Not, parent))
            }
            E::UnaryOp {
                op: U::Minus,
                expr: inner,
            } if matches!(**inner, E::Value(_)) => negative_constant(inner),
            E::BinaryOp { left, op, right } => {
                let own = arithmetic(op);
                let side = |e: &ast::Expr, other: &ast::Expr, left: bool| {
                    if self.is_varchar(e) && is_string(other) {
                        return if self.pretty {
                            format!("{e}::text")
                        } else {
                            format!("({e})::text")
                        };
                    }
                    self.constant_as(e, other).unwrap_or_else(|| {
                        self.expr(
                            e,
                            Parent::Op {
                                arithmetic: own,
                                left,
                            },
                        )
                    })
                };
                let text = format!(
                    "{} {op} {}",
                    side(left, right, true),
                    side(right, left, false)
                );
                let bare = match parent {
                    Parent::Top | Parent::Bool(_) => true,
                    Parent::Other => false,
                    Parent::Op {
                        arithmetic: Some(p),
                        left,
                    } => match own {
                        Some(o) if o > p => true,
                        Some(o) if o == p => left,
                        _ => false,
                    },
                    Parent::Op { .. } => false,
                };
                self.wrap(text, bare && self.pretty)
            }
            E::Between {
                expr: x,
                negated,
                low,
                high,
            } => {
                // PostgreSQL keeps BETWEEN as the two comparisons it means.
                let (low_op, high_op, join) = if *negated {
                    (B::Lt, B::Gt, B::Or)
                } else {
                    (B::GtEq, B::LtEq, B::And)
                };
                let compare = |op, bound: &ast::Expr| E::BinaryOp {
                    left: x.clone(),
                    op,
                    right: Box::new(bound.clone()),
                };
                let both = E::BinaryOp {
                    left: Box::new(compare(low_op, low)),
                    op: join,
                    right: Box::new(compare(high_op, high)),
                };
                self.expr(&both, parent)
            }
            E::InList {
                expr: x,
                list,
                negated,
            } if !self.is_varchar(x) => {
                // And IN as `= ANY (ARRAY[...])`, NOT IN as `<> ALL`.
                let items: Vec<String> = list
                    .iter()
                    .map(|i| {
                        self.constant_as(i, x)
                            .unwrap_or_else(|| self.expr(i, Parent::Other))
                    })
                    .collect();
                let text = format!(
                    "{} {} (ARRAY[{}])",
                    self.expr(
                        x,
                        Parent::Op {
                            arithmetic: None,
                            left: true
                        }
                    ),
                    if *negated { "<> ALL" } else { "= ANY" },
                    items.join(", ")
                );
                self.wrap(
                    text,
                    self.pretty && matches!(parent, Parent::Bool(_) | Parent::Top),
                )
            }
            E::IsNull(x) | E::IsNotNull(x) => {
                let not = if matches!(e, E::IsNotNull(_)) {
                    " NOT"
                } else {
                    ""
                };
                let text = format!("{} IS{not} NULL", self.expr(x, Parent::Other));
                self.wrap(
                    text,
                    self.pretty && matches!(parent, Parent::Bool(_) | Parent::Top),
                )
            }
            // A string constant cast to a type (pg_dump writes its CHECKs
            // so): the type as PostgreSQL names it, `''::text`.
            E::Cast {
                kind: ast::CastKind::DoubleColon,
                expr: inner,
                data_type,
                ..
            } if matches!(&**inner, E::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_))) => {
                match SqlType::from_ast(data_type) {
                    Ok(ty) => format!("{inner}::{}", ty.pg_name()),
                    Err(_) => e.to_string(),
                }
            }
            other => other.to_string(),
        }
    }

    /// A constant compared with a numeric or text column, with the cast
    /// PostgreSQL makes of it: `(0)::numeric` (`0::numeric` pretty),
    /// `'a'::text`.
    fn constant_as(&self, e: &ast::Expr, other: &ast::Expr) -> Option<String> {
        let ast::Expr::Value(v) = e else {
            return None;
        };
        let ast::Expr::Identifier(id) = other else {
            return None;
        };
        let column = &self.table.columns[self.table.column_index(&ident(id))?];
        match (&v.value, &column.ty) {
            (ast::Value::Number(n, _), SqlType::Numeric(_)) if !n.contains(['.', 'e', 'E']) => {
                Some(if self.pretty {
                    format!("{n}::numeric")
                } else {
                    format!("({n})::numeric")
                })
            }
            (ast::Value::SingleQuotedString(_), SqlType::Text | SqlType::Varchar(_)) => {
                Some(format!("{v}::text"))
            }
            _ => None,
        }
    }

    /// Whether `e` is a varchar column (compared as text, with a cast).
    fn is_varchar(&self, e: &ast::Expr) -> bool {
        let ast::Expr::Identifier(id) = e else {
            return false;
        };
        self.table
            .column_index(&ident(id))
            .is_some_and(|i| matches!(self.table.columns[i].ty, SqlType::Varchar(_)))
    }

    /// Whether AND / OR / NOT needs no parentheses of its own where it is.
    fn bool_bare(&self, own: Logic, parent: Parent) -> bool {
        self.pretty
            && match parent {
                Parent::Top => true,
                Parent::Bool(p) => match own {
                    Logic::Not | Logic::And => matches!(p, Logic::And | Logic::Or),
                    Logic::Or => p == Logic::Or,
                },
                _ => false,
            }
    }

    /// In parentheses unless `bare`.
    fn wrap(&self, text: String, bare: bool) -> String {
        if bare {
            text
        } else {
            format!("({text})")
        }
    }
}

fn is_string(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)))
}

/// The operands of a chain of one operator (`a AND b AND c`), which
/// PostgreSQL keeps as one node.
fn flatten<'e>(e: &'e ast::Expr, op: &B, out: &mut Vec<&'e ast::Expr>) {
    match e {
        ast::Expr::BinaryOp { left, op: o, right } if o == op => {
            flatten(left, op, out);
            flatten(right, op, out);
        }
        ast::Expr::Nested(inner) if matches!(&**inner, ast::Expr::BinaryOp { op: o, .. } if o == op) => {
            flatten(inner, op, out)
        }
        other => out.push(other),
    }
}

/// A negative number constant, as PostgreSQL prints one: `'-1'::integer`.
fn negative_constant(v: &ast::Expr) -> String {
    let text = v.to_string();
    let ty = if text.parse::<i32>().is_ok() {
        "integer"
    } else if text.parse::<i64>().is_ok() {
        "bigint"
    } else {
        "numeric"
    };
    format!("'-{text}'::{ty}")
}
