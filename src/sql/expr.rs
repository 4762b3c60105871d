//! Expressions: compiled from sqlparser's AST against a scope (the table's
//! columns), typed, and evaluated per row.
//!
//! Untyped string literals and parameters take their type from the context,
//! as PostgreSQL's "unknown" type does: `id = '7'` compares integers, and
//! `id = $1` makes `$1` an integer parameter.

use std::borrow::Cow;
use std::cmp::Ordering;

use rust_decimal::Decimal;
use sqlparser::ast::{self, BinaryOperator, Spanned, UnaryOperator};

use crate::catalog::TableDef;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::{Array, SqlType, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Value),
    /// A quoted literal whose type is not known yet ('...' in PostgreSQL is
    /// "unknown"), with where it stands in the query for error cursors.
    Unknown(String, Loc),
    Param(usize),
    Column(usize),
    /// `EXCLUDED.col` in ON CONFLICT DO UPDATE: the row proposed for insertion.
    Excluded(usize),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    InList(Box<Expr>, Vec<Expr>, bool),
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Cast(Box<Expr>, SqlType),
    /// `ARRAY[a, b]` of the element type its items resolved to.
    Array(Vec<Expr>, SqlType),
    /// `left op ANY (array)`, or `ALL` when `all`: the comparison against
    /// each element of a one-dimensional array.
    Quantified {
        left: Box<Expr>,
        op: BinOp,
        array: Box<Expr>,
        all: bool,
    },
    Func(Func, Vec<Expr>),
    Case {
        operand: Option<Box<Expr>>,
        arms: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
}

/// A place in the query text (line, column), for error positions.
pub type Loc = sqlparser::tokenizer::Location;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Plus,
    Minus,
    Mul,
    Div,
    Mod,
    Concat,
}

impl BinOp {
    fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Now,
    GenRandomUuid,
    Lower,
    Upper,
    Length,
    OctetLength,
    Coalesce,
    Abs,
    Version,
    CurrentSchema,
    CurrentDatabase,
    CurrentUser,
    PgSleep,
    CurrentSetting,
    SetConfig,
    PgBackendPid,
    /// nextval, currval, setval, lastval, pg_get_serial_sequence: answered
    /// by the statement's environment (`engine::sequence` prepares them).
    Seq(SeqFunc),
    /// The advisory lock functions; the engine runs them (they act on the
    /// session and the store), as top-level items of a SELECT without FROM.
    Advisory(AdvisoryFn),
    /// `keyclaim.add_count_limit` / `keyclaim.drop_count_limit`: DDL the
    /// engine runs, as the only item of a SELECT without FROM.
    CountLimit(CountLimitOp),
}

/// What a `keyclaim.*_count_limit` call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountLimitOp {
    Add,
    Drop,
}

impl CountLimitOp {
    pub fn name(self) -> &'static str {
        match self {
            CountLimitOp::Add => "keyclaim.add_count_limit",
            CountLimitOp::Drop => "keyclaim.drop_count_limit",
        }
    }
}

impl Func {
    /// Whether two calls with the same arguments may give different answers
    /// or act on something (PostgreSQL's VOLATILE): such a call is made for
    /// every row, never once for a statement's key.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            Func::GenRandomUuid
                | Func::PgSleep
                | Func::SetConfig
                | Func::Seq(_)
                | Func::Advisory(_)
                | Func::CountLimit(_)
        )
    }

    /// The scalar function the fast path evaluates under `name` (lower
    /// case, unqualified); None for any other name.
    pub fn named(name: &str) -> Option<Func> {
        Some(match name {
            "now"
            | "current_timestamp"
            | "transaction_timestamp"
            | "statement_timestamp"
            | "clock_timestamp"
            | "localtimestamp" => Func::Now,
            "gen_random_uuid" | "uuid_generate_v4" => Func::GenRandomUuid,
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "octet_length" => Func::OctetLength,
            "coalesce" => Func::Coalesce,
            "abs" => Func::Abs,
            "version" => Func::Version,
            "current_schema" => Func::CurrentSchema,
            "current_database" | "current_catalog" => Func::CurrentDatabase,
            "current_user" | "session_user" | "user" => Func::CurrentUser,
            "pg_sleep" => Func::PgSleep,
            "current_setting" => Func::CurrentSetting,
            "set_config" => Func::SetConfig,
            "pg_backend_pid" => Func::PgBackendPid,
            "nextval" => Func::Seq(SeqFunc::NextVal),
            "currval" => Func::Seq(SeqFunc::CurrVal),
            "setval" => Func::Seq(SeqFunc::SetVal),
            "lastval" => Func::Seq(SeqFunc::LastVal),
            "pg_get_serial_sequence" => Func::Seq(SeqFunc::SerialSequence),
            "keyclaim.add_count_limit" => Func::CountLimit(CountLimitOp::Add),
            "keyclaim.drop_count_limit" => Func::CountLimit(CountLimitOp::Drop),
            _ => return None,
        })
    }
}

/// One of PostgreSQL's advisory lock functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdvisoryFn {
    pub op: AdvisoryOp,
    pub shared: bool,
    /// Transaction-level (`_xact_`): ends with the transaction.
    pub xact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvisoryOp {
    Lock,
    TryLock,
    Unlock,
    UnlockAll,
}

impl AdvisoryFn {
    pub fn parse(name: &str) -> Option<AdvisoryFn> {
        let (op, rest) = if let Some(r) = name.strip_prefix("pg_try_advisory_") {
            (AdvisoryOp::TryLock, r)
        } else if name == "pg_advisory_unlock_all" {
            return Some(AdvisoryFn {
                op: AdvisoryOp::UnlockAll,
                shared: false,
                xact: false,
            });
        } else if let Some(r) = name.strip_prefix("pg_advisory_unlock") {
            (AdvisoryOp::Unlock, r)
        } else if let Some(r) = name.strip_prefix("pg_advisory_") {
            (AdvisoryOp::Lock, r)
        } else {
            return None;
        };
        let (xact, rest) = match op {
            AdvisoryOp::Unlock => (false, rest),
            _ => match rest.strip_prefix("xact_") {
                Some(r) => (true, r),
                None => (false, rest),
            },
        };
        let rest = match op {
            AdvisoryOp::Unlock => rest,
            _ => rest.strip_prefix("lock")?,
        };
        let shared = match rest {
            "" => false,
            "_shared" => true,
            _ => return None,
        };
        Some(AdvisoryFn { op, shared, xact })
    }

    pub fn name(&self) -> String {
        match self.op {
            AdvisoryOp::UnlockAll => "pg_advisory_unlock_all".into(),
            op => format!(
                "pg_{}advisory_{}{}{}",
                if op == AdvisoryOp::TryLock {
                    "try_"
                } else {
                    ""
                },
                if self.xact { "xact_" } else { "" },
                if op == AdvisoryOp::Unlock {
                    "unlock"
                } else {
                    "lock"
                },
                if self.shared { "_shared" } else { "" }
            ),
        }
    }

    /// void for the waiting lock and unlock_all, boolean for the others.
    pub fn result_type(&self) -> SqlType {
        match self.op {
            AdvisoryOp::Lock | AdvisoryOp::UnlockAll => SqlType::Void,
            AdvisoryOp::TryLock | AdvisoryOp::Unlock => SqlType::Bool,
        }
    }
}

/// The sequence functions. Those that read or change a counter, or look up
/// the catalog, are prepared by the engine before the statement evaluates
/// anything (`Expr::sequence_calls`); evaluation then only reads what was
/// prepared, so it stays synchronous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqFunc {
    NextVal,
    CurrVal,
    SetVal,
    LastVal,
    SerialSequence,
}

impl SeqFunc {
    pub fn name(self) -> &'static str {
        match self {
            SeqFunc::NextVal => "nextval",
            SeqFunc::CurrVal => "currval",
            SeqFunc::SetVal => "setval",
            SeqFunc::LastVal => "lastval",
            SeqFunc::SerialSequence => "pg_get_serial_sequence",
        }
    }
}

/// What names resolve to while compiling.
pub struct Scope<'a> {
    pub table: Option<&'a TableDef>,
    /// The name (or alias) the table is referred to by.
    pub qualifier: Option<String>,
    /// Whether `EXCLUDED.col` is allowed (ON CONFLICT DO UPDATE).
    pub excluded: bool,
}

/// Parameter types discovered while compiling; None until something says.
#[derive(Debug, Default)]
pub struct Params {
    pub types: Vec<Option<SqlType>>,
}

impl Params {
    pub fn from_hints(hints: &[Option<SqlType>]) -> Params {
        Params {
            types: hints.to_vec(),
        }
    }

    /// Parameter `n` takes type `ty` unless it has one. Parameters have no
    /// typmod in PostgreSQL: one compared with a numeric(5,2) column is not
    /// rounded, and one written into it is rounded by the write's cast.
    pub(super) fn note(&mut self, n: usize, ty: &SqlType) {
        if self.types.len() <= n {
            self.types.resize(n + 1, None);
        }
        if self.types[n].is_none() {
            self.types[n] = Some(ty.without_numeric_typmod());
        }
    }

    fn get(&self, n: usize) -> Option<&SqlType> {
        self.types.get(n).and_then(|t| t.as_ref())
    }

    /// Final parameter types; unconstrained ones are text, as libpq clients expect.
    pub fn resolved(&self) -> Vec<SqlType> {
        self.types
            .iter()
            .map(|t| t.clone().unwrap_or(SqlType::Text))
            .collect()
    }
}

pub struct Compiler<'a> {
    pub scope: Scope<'a>,
    pub params: &'a mut Params,
}

fn unsupported_expr(e: &ast::Expr) -> SqlError {
    SqlError::unsupported(
        format!("expression not supported: {e}"),
        "keyclaim evaluates column references, literals, parameters, comparisons, AND/OR/NOT, IN, = ANY / <> ALL (array), ARRAY[...], BETWEEN, LIKE/ILIKE, IS NULL, arithmetic, ||, CASE, casts and the functions now(), gen_random_uuid(), lower, upper, length, coalesce, abs",
    )
    .beyond_fast_path()
}

impl Compiler<'_> {
    pub fn compile(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as E;
        Ok(match e {
            E::Identifier(id) => self.column(None, id)?,
            E::CompoundIdentifier(parts) if parts.len() == 2 => {
                self.column(Some(&parts[0]), &parts[1])?
            }
            // schema.table.column, as Prisma qualifies every column.
            E::CompoundIdentifier(parts)
                if parts.len() == 3 && super::plan::ident(&parts[0]) == "public" =>
            {
                self.column(Some(&parts[1]), &parts[2])?
            }
            E::Nested(inner) => self.compile(inner)?,
            E::Value(v) => literal(&v.value, v.span.start)?,
            E::TypedString(ts) => {
                let ty = SqlType::from_ast(&ts.data_type)?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                Expr::Literal(after_input(Value::parse_text(&ty, &text)?, &ty)?)
            }
            E::UnaryOp { op, expr } => {
                let inner = self.compile(expr)?;
                match op {
                    UnaryOperator::Not => Expr::Not(Box::new(inner)),
                    UnaryOperator::Minus => match inner {
                        Expr::Literal(v) => Expr::Literal(negate(&v)?),
                        other => Expr::Neg(Box::new(other)),
                    },
                    UnaryOperator::Plus => inner,
                    _ => return Err(unsupported_expr(e)),
                }
            }
            E::BinaryOp { left, op, right } => {
                let op = match op {
                    BinaryOperator::Eq => BinOp::Eq,
                    BinaryOperator::NotEq => BinOp::NotEq,
                    BinaryOperator::Lt => BinOp::Lt,
                    BinaryOperator::LtEq => BinOp::LtEq,
                    BinaryOperator::Gt => BinOp::Gt,
                    BinaryOperator::GtEq => BinOp::GtEq,
                    BinaryOperator::And => BinOp::And,
                    BinaryOperator::Or => BinOp::Or,
                    BinaryOperator::Plus => BinOp::Plus,
                    BinaryOperator::Minus => BinOp::Minus,
                    BinaryOperator::Multiply => BinOp::Mul,
                    BinaryOperator::Divide => BinOp::Div,
                    BinaryOperator::Modulo => BinOp::Mod,
                    BinaryOperator::StringConcat => BinOp::Concat,
                    _ => return Err(unsupported_expr(e)),
                };
                let l = self.compile(left)?;
                let r = self.compile(right)?;
                let (l, r) = if op == BinOp::Concat {
                    self.concat_operands(l, r)?
                } else if matches!(op, BinOp::And | BinOp::Or) {
                    (l, r)
                } else {
                    self.unify(l, r)?
                };
                if op.is_comparison() {
                    self.check_comparable(&l, op, self.type_of(&r), left)?;
                }
                Expr::Binary(op, Box::new(l), Box::new(r))
            }
            E::IsNull(inner) => Expr::IsNull(Box::new(self.compile(inner)?), false),
            E::IsNotNull(inner) => Expr::IsNull(Box::new(self.compile(inner)?), true),
            E::InList {
                expr,
                list,
                negated,
            } => {
                let mut target = self.compile(expr)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let item = self.compile(item)?;
                    let (t, i) = self.unify(target, item)?;
                    self.check_comparable(&t, BinOp::Eq, self.type_of(&i), expr)?;
                    target = t;
                    items.push(i);
                }
                Expr::InList(Box::new(target), items, *negated)
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let target = self.compile(expr)?;
                let low = self.compile(low)?;
                let high = self.compile(high)?;
                let (target, low) = self.unify(target, low)?;
                let (target, high) = self.unify(target, high)?;
                Expr::Between(Box::new(target), Box::new(low), Box::new(high), *negated)
            }
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => self.like(expr, pattern, *negated, false)?,
            E::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => self.like(expr, pattern, *negated, true)?,
            E::Cast {
                expr, data_type, ..
            } => {
                let ty = SqlType::from_ast(data_type)?;
                // `ARRAY[...]::int[]`: the items take the cast's element
                // type (so `ARRAY[]::int[]` is an empty integer array).
                let compiled = match (expr.as_ref(), ty.element()) {
                    (E::Array(a), Some(elem)) => self.array(&a.elem, Some(elem))?,
                    _ => self.compile(expr)?,
                };
                if let Some(from) = self.type_of(&compiled) {
                    if !castable(&from, &ty) {
                        return Err(SqlError::new(
                            crate::types::CANNOT_COERCE,
                            format!("cannot cast type {} to {}", from.pg_name(), ty.pg_name()),
                        )
                        .after(expr.span().end));
                    }
                }
                match compiled {
                    // A constant array is cast once, here, so that the
                    // planner sees a constant (`id = ANY('{1,2}'::int[])`).
                    Expr::Literal(v) if ty.element().is_some() => {
                        Expr::Literal(cast_explicit(&v, &ty)?)
                    }
                    Expr::Unknown(s, loc) => {
                        let v = Value::parse_text(&ty, &s).map_err(|e| e.at(loc))?;
                        Expr::Literal(after_input(v, &ty)?)
                    }
                    Expr::Param(n) => {
                        self.params.note(n, &ty);
                        Expr::Cast(Box::new(Expr::Param(n)), ty)
                    }
                    other => Expr::Cast(Box::new(other), ty),
                }
            }
            E::Function(f) => self.function(f)?,
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(o) => Some(Box::new(self.compile(o)?)),
                    None => None,
                };
                let mut arms = Vec::new();
                for cw in conditions {
                    arms.push((self.compile(&cw.condition)?, self.compile(&cw.result)?));
                }
                let otherwise = match else_result {
                    Some(e) => Some(Box::new(self.compile(e)?)),
                    None => None,
                };
                Expr::Case {
                    operand,
                    arms,
                    otherwise,
                }
            }
            E::Array(a) => self.array(&a.elem, None)?,
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.quantified(e, left, compare_op, right, false)?,
            E::AllOp {
                left,
                compare_op,
                right,
            } => self.quantified(e, left, compare_op, right, true)?,
            _ => return Err(unsupported_expr(e)),
        })
    }

    /// `ARRAY[...]`: its items resolved to one element type (`elem` when a
    /// cast gives it, else the items' common type), folded to a constant
    /// when every item is one.
    fn array(&mut self, items: &[ast::Expr], elem: Option<&SqlType>) -> SqlResult<Expr> {
        let mut compiled = Vec::with_capacity(items.len());
        for item in items {
            if let ast::Expr::Array(_) = item {
                return Err(SqlError::unsupported(
                    "multidimensional arrays are not supported",
                    "keyclaim supports one-dimensional arrays",
                ));
            }
            compiled.push((self.compile(item)?, item.span().start));
        }
        let elem = match elem {
            Some(elem) => elem.clone(),
            None => {
                if compiled.is_empty() {
                    return Err(SqlError::new(
                        sqlstate::INDETERMINATE_DATATYPE,
                        "cannot determine type of empty array",
                    )
                    .with_hint(
                        "Explicitly cast to the desired type, for example ARRAY[]::integer[].",
                    ));
                }
                self.common_type(&compiled)?.unwrap_or(SqlType::Text)
            }
        };
        let mut typed = Vec::with_capacity(compiled.len());
        for (item, _) in compiled {
            typed.push(self.coerce(item, Some(&elem))?);
        }
        if typed.iter().all(|e| matches!(e, Expr::Literal(_))) {
            let mut values = Vec::with_capacity(typed.len());
            for e in typed {
                let Expr::Literal(v) = e else { unreachable!() };
                values.push(v.cast_to(&elem)?);
            }
            return Ok(Expr::Literal(Array::value(elem, values)));
        }
        Ok(Expr::Array(typed, elem))
    }

    /// The type ARRAY[...] items resolve to, as PostgreSQL's
    /// select_common_type: numbers widen to the widest, text types to
    /// text; anything else must agree (42804 at the first that does not).
    fn common_type(&self, items: &[(Expr, Loc)]) -> SqlResult<Option<SqlType>> {
        let mut common: Option<SqlType> = None;
        for (item, loc) in items {
            let Some(t) = self.type_of(item) else {
                continue;
            };
            common = Some(match common {
                None => t,
                Some(c) if numeric_rank(&c).is_some() && numeric_rank(&t).is_some() => {
                    numeric_result(Some(c), Some(t)).unwrap_or(SqlType::Numeric(None))
                }
                Some(c) if is_string_type(&c) && is_string_type(&t) => {
                    if c == t {
                        c
                    } else {
                        SqlType::Text
                    }
                }
                Some(c) if c == t => c,
                Some(c) => {
                    return Err(SqlError::new(
                        sqlstate::DATATYPE_MISMATCH,
                        format!(
                            "ARRAY types {} and {} cannot be matched",
                            c.pg_name(),
                            t.pg_name()
                        ),
                    )
                    .at(*loc))
                }
            });
        }
        Ok(common)
    }

    /// `left op ANY (right)` / `left op ALL (right)`. An untyped literal
    /// or parameter on the right is an array of the left side's type
    /// (text when that is unknown too), as PostgreSQL resolves it; errors
    /// point at the operator, as PostgreSQL's do.
    fn quantified(
        &mut self,
        whole: &ast::Expr,
        left: &ast::Expr,
        op: &BinaryOperator,
        right: &ast::Expr,
        all: bool,
    ) -> SqlResult<Expr> {
        let op = match op {
            BinaryOperator::Eq => BinOp::Eq,
            BinaryOperator::NotEq => BinOp::NotEq,
            BinaryOperator::Lt => BinOp::Lt,
            BinaryOperator::LtEq => BinOp::LtEq,
            BinaryOperator::Gt => BinOp::Gt,
            BinaryOperator::GtEq => BinOp::GtEq,
            _ => return Err(unsupported_expr(whole)),
        };
        let l = self.compile(left)?;
        let r = self.compile(right)?;
        let elem = self.type_of(&l).unwrap_or(SqlType::Text);
        let r = match r {
            Expr::Unknown(s, loc) => {
                let ty = SqlType::array_of(elem.clone());
                let v = Value::parse_text(&ty, &s).map_err(|e| e.at(loc))?;
                // char(n) compares blank-padded, as `coerce` pads a literal.
                Expr::Literal(match elem {
                    SqlType::Char(_) => v.cast_to(&ty).unwrap_or(v),
                    _ => v,
                })
            }
            Expr::Param(n) => {
                self.params.note(n, &SqlType::array_of(elem.clone()));
                Expr::Param(n)
            }
            other => other,
        };
        let elem = match self.type_of(&r) {
            Some(SqlType::Array(elem)) => *elem,
            Some(_) => {
                return Err(SqlError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    "op ANY/ALL (array) requires array on right side",
                )
                .after(left.span().end))
            }
            None => elem,
        };
        let l = self.coerce(l, Some(&elem))?;
        self.check_comparable(&l, op, Some(elem), left)?;
        Ok(Expr::Quantified {
            left: Box::new(l),
            op,
            array: Box::new(r),
            all,
        })
    }

    fn like(
        &mut self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        negated: bool,
        case_insensitive: bool,
    ) -> SqlResult<Expr> {
        let expr = self.compile(expr)?;
        let pattern = match self.compile(pattern)? {
            Expr::Param(n) => {
                self.params.note(n, &SqlType::Text);
                Expr::Param(n)
            }
            p => p,
        };
        Ok(Expr::Like {
            expr: Box::new(expr),
            pattern: Box::new(pattern),
            negated,
            case_insensitive,
        })
    }

    fn column(&self, qualifier: Option<&ast::Ident>, name: &ast::Ident) -> SqlResult<Expr> {
        let col = super::plan::ident(name);
        let loc = qualifier.map(|q| q.span.start).unwrap_or(name.span.start);
        if let Some(q) = qualifier {
            let q = super::plan::ident(q);
            if self.scope.excluded && q == "excluded" {
                let t = self.scope.table.expect("excluded needs a table");
                return t.column(&col).map(Expr::Excluded).map_err(|e| e.at(loc));
            }
            if self.scope.qualifier.as_deref() != Some(q.as_str()) {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("missing FROM-clause entry for table \"{q}\""),
                )
                .at(loc));
            }
        }
        match self.scope.table {
            Some(t) => t.column(&col).map(Expr::Column),
            None => Err(SqlError::undefined_column(&col)),
        }
        .map_err(|e| e.at(loc))
    }

    /// `||` with an array on one side is array concatenation, and an
    /// untyped literal or parameter on the other side is an array too.
    fn concat_operands(&mut self, l: Expr, r: Expr) -> SqlResult<(Expr, Expr)> {
        let array = |t: Option<SqlType>| t.filter(|t| t.element().is_some());
        match (array(self.type_of(&l)), array(self.type_of(&r))) {
            (Some(t), None) if matches!(r, Expr::Unknown(..) | Expr::Param(_)) => {
                Ok((l, self.coerce(r, Some(&t))?))
            }
            (None, Some(t)) if matches!(l, Expr::Unknown(..) | Expr::Param(_)) => {
                Ok((self.coerce(l, Some(&t))?, r))
            }
            _ => Ok((l, r)),
        }
    }

    /// PostgreSQL has no comparison between the two sides' types (`text =
    /// integer`): 42883 at the operator, as its parser reports it, rather
    /// than a comparison that casts one side. A side whose type is not
    /// known yet is not checked here.
    fn check_comparable(
        &self,
        l: &Expr,
        op: BinOp,
        rt: Option<SqlType>,
        left: &ast::Expr,
    ) -> SqlResult<()> {
        let (Some(lt), Some(rt)) = (self.type_of(l), rt) else {
            return Ok(());
        };
        if comparable(&lt, &rt) {
            return Ok(());
        }
        // sqlparser keeps no span for the operator: it is the first token
        // after the left operand.
        Err(
            SqlError::no_operator(lt.pg_name(), comparison_symbol(op), rt.pg_name())
                .after(left.span().end),
        )
    }

    /// Give an untyped side (literal or parameter) the type of the other side.
    fn unify(&mut self, l: Expr, r: Expr) -> SqlResult<(Expr, Expr)> {
        let lt = self.type_of(&l);
        let rt = self.type_of(&r);
        Ok((self.coerce(l, rt.as_ref())?, self.coerce(r, lt.as_ref())?))
    }

    fn coerce(&mut self, e: Expr, ty: Option<&SqlType>) -> SqlResult<Expr> {
        let Some(ty) = ty else { return Ok(e) };
        let ty = &ty.without_modifier();
        Ok(match e {
            Expr::Unknown(s, loc) => {
                let v = Value::parse_text(ty, &s).map_err(|e| e.at(loc))?;
                // char(n) compares blank-padded: pad the literal as the
                // column's values are (a longer literal just never matches).
                let v = match ty {
                    SqlType::Char(_) => v.cast_to(ty).unwrap_or(v),
                    _ => v,
                };
                Expr::Literal(v)
            }
            Expr::Param(n) => {
                self.params.note(n, ty);
                Expr::Param(n)
            }
            other => other,
        })
    }

    /// The static type of an expression, None while unknown.
    pub fn type_of(&self, e: &Expr) -> Option<SqlType> {
        let table = self.scope.table;
        match e {
            Expr::Literal(v) => value_type(v),
            Expr::Unknown(..) => None,
            Expr::Param(n) => self.params.get(*n).cloned(),
            Expr::Column(i) | Expr::Excluded(i) => table.map(|t| t.columns[*i].ty.clone()),
            Expr::Not(_)
            | Expr::IsNull(..)
            | Expr::InList(..)
            | Expr::Between(..)
            | Expr::Quantified { .. }
            | Expr::Like { .. } => Some(SqlType::Bool),
            Expr::Array(_, elem) => Some(SqlType::array_of(elem.clone())),
            Expr::Neg(inner) => self.type_of(inner).map(|t| t.without_numeric_typmod()),
            Expr::Binary(op, l, r) => match op {
                op if op.is_comparison() => Some(SqlType::Bool),
                BinOp::And | BinOp::Or => Some(SqlType::Bool),
                BinOp::Concat => match (self.type_of(l), self.type_of(r)) {
                    (Some(t @ SqlType::Array(_)), _) | (_, Some(t @ SqlType::Array(_))) => Some(t),
                    _ => Some(SqlType::Text),
                },
                _ => numeric_result(self.type_of(l), self.type_of(r)),
            },
            Expr::Cast(_, ty) => Some(ty.clone()),
            Expr::Func(f, args) => match f {
                Func::Now => Some(SqlType::TimestampTz),
                Func::GenRandomUuid => Some(SqlType::Uuid),
                Func::Length | Func::OctetLength => Some(SqlType::Int4),
                Func::PgBackendPid => Some(SqlType::Int4),
                Func::Seq(SeqFunc::SerialSequence) => Some(SqlType::Text),
                Func::Seq(_) => Some(SqlType::Int8),
                Func::Coalesce | Func::Abs => args.iter().find_map(|a| self.type_of(a)),
                Func::Advisory(a) => Some(a.result_type()),
                Func::CountLimit(_) => Some(SqlType::Void),
                _ => Some(SqlType::Text),
            },
            Expr::Case {
                arms, otherwise, ..
            } => arms
                .iter()
                .map(|(_, r)| r)
                .chain(otherwise.as_deref())
                .find_map(|r| self.type_of(r)),
        }
    }

    fn function(&mut self, f: &ast::Function) -> SqlResult<Expr> {
        let name = f.name.to_string().to_ascii_lowercase();
        let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
        let args: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::None => Vec::new(),
            ast::FunctionArguments::List(list) => {
                let mut out = Vec::new();
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => out.push(e),
                        _ => {
                            return Err(SqlError::unsupported(
                                format!("function arguments not supported: {f}"),
                                "pass plain positional arguments",
                            ))
                        }
                    }
                }
                out
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported(
                    "subqueries are not supported",
                    "keyclaim runs single-table statements",
                ))
            }
        };
        let func = match Func::named(name) {
            Some(func) => func,
            None => match name {
            n if AdvisoryFn::parse(n).is_some() => {
                let a = AdvisoryFn::parse(n).expect("parsed");
                return self.advisory(a, f, &args);
            }
            "count" | "min" | "max" | "sum" | "avg" => {
                return Err(SqlError::new(
                    sqlstate::GROUPING_ERROR,
                    format!("aggregate functions are not allowed here: {name}"),
                ))
            }
            _ => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {name}() does not exist"),
                )
                .with_hint("keyclaim supports now(), gen_random_uuid(), lower, upper, length, coalesce, abs, version(), current_schema(), current_database(), current_user, current_setting, set_config, pg_sleep")
                .beyond_fast_path())
            }
            },
        };
        let mut compiled = Vec::with_capacity(args.len());
        for (i, a) in args.into_iter().enumerate() {
            // A sequence function's first argument names a relation:
            // 'name' or 'name'::regclass, as text.
            let a = match (func, a) {
                (
                    Func::Seq(_),
                    ast::Expr::Cast {
                        expr, data_type, ..
                    },
                ) if i == 0 && data_type.to_string().eq_ignore_ascii_case("regclass") => {
                    expr.as_ref()
                }
                _ => a,
            };
            compiled.push(self.compile(a)?);
        }
        if let Func::Seq(f) = func {
            let arity = match f {
                SeqFunc::LastVal => 0..=0,
                SeqFunc::NextVal | SeqFunc::CurrVal => 1..=1,
                SeqFunc::SetVal => 2..=3,
                SeqFunc::SerialSequence => 2..=2,
            };
            if !arity.contains(&compiled.len()) {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!(
                        "function {}() with {} arguments does not exist",
                        f.name(),
                        compiled.len()
                    ),
                ));
            }
        }
        if func == Func::Coalesce {
            let ty = compiled.iter().find_map(|a| self.type_of(a));
            let mut typed = Vec::with_capacity(compiled.len());
            for a in compiled {
                typed.push(self.coerce(a, ty.as_ref())?);
            }
            compiled = typed;
        }
        Ok(Expr::Func(func, compiled))
    }

    /// An advisory lock function's arguments, resolved as PostgreSQL's
    /// overloads resolve them: one bigint, or two integers (none for
    /// unlock_all); anything else is 42883 naming the argument types.
    fn advisory(
        &mut self,
        a: AdvisoryFn,
        f: &ast::Function,
        args: &[&ast::Expr],
    ) -> SqlResult<Expr> {
        let mut compiled = Vec::with_capacity(args.len());
        for e in args {
            compiled.push(self.compile(e)?);
        }
        let types: Vec<Option<SqlType>> = compiled.iter().map(|e| self.type_of(e)).collect();
        let int = |t: &Option<SqlType>, wide: bool| match t {
            None => true,
            Some(SqlType::Int2 | SqlType::Int4) => true,
            Some(SqlType::Int8) => wide,
            _ => false,
        };
        let target = match (a.op, types.as_slice()) {
            (AdvisoryOp::UnlockAll, []) => None,
            (AdvisoryOp::UnlockAll, _) => Some(None),
            (_, [t]) if int(t, true) => Some(Some(SqlType::Int8)),
            (_, [t, u]) if int(t, false) && int(u, false) => Some(Some(SqlType::Int4)),
            _ => Some(None),
        };
        let ty = match target {
            None => None,
            Some(Some(ty)) => Some(ty),
            Some(None) => {
                let names: Vec<&str> = types
                    .iter()
                    .map(|t| t.as_ref().map_or("unknown", |t| t.pg_name()))
                    .collect();
                let loc = f
                    .name
                    .0
                    .first()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.span.start);
                let e = SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {}({}) does not exist", a.name(), names.join(", ")),
                )
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.");
                return Err(match loc {
                    Some(l) => e.at(l),
                    None => e,
                });
            }
        };
        let mut typed = Vec::with_capacity(compiled.len());
        for e in compiled {
            typed.push(self.coerce(e, ty.as_ref())?);
        }
        Ok(Expr::Func(Func::Advisory(a), typed))
    }
}

fn literal(v: &ast::Value, loc: Loc) -> SqlResult<Expr> {
    use ast::Value as V;
    Ok(match v {
        V::Number(n, _) => Expr::Literal(number(n).map_err(|e| e.at(loc))?),
        V::SingleQuotedString(s)
        | V::EscapedStringLiteral(s)
        | V::UnicodeStringLiteral(s)
        | V::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => {
            Expr::Unknown(s.clone(), loc)
        }
        V::Boolean(b) => Expr::Literal(Value::Bool(*b)),
        V::Null => Expr::Literal(Value::Null),
        V::Placeholder(p) => {
            let n: usize = p
                .strip_prefix('$')
                .and_then(|d| d.parse().ok())
                .filter(|n| *n >= 1)
                .ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"{p}\"")))?;
            Expr::Param(n - 1)
        }
        other => {
            return Err(SqlError::unsupported(
                format!("literal not supported: {other}"),
                "use numbers, 'strings', TRUE/FALSE or NULL",
            ))
        }
    })
}

/// A numeric literal as PostgreSQL types it: integer, bigint, or numeric.
fn number(n: &str) -> SqlResult<Value> {
    if let Ok(i) = n.parse::<i32>() {
        return Ok(Value::Int4(i));
    }
    if let Ok(i) = n.parse::<i64>() {
        return Ok(Value::Int8(i));
    }
    Value::parse_text(&SqlType::Numeric(None), n)
}

fn negate(v: &Value) -> SqlResult<Value> {
    let overflow = |t: &str| {
        SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{t} out of range"),
        )
    };
    Ok(match v {
        Value::Null => Value::Null,
        Value::Int2(i) => Value::Int2(i.checked_neg().ok_or_else(|| overflow("smallint"))?),
        Value::Int4(i) => Value::Int4(i.checked_neg().ok_or_else(|| overflow("integer"))?),
        Value::Int8(i) => Value::Int8(i.checked_neg().ok_or_else(|| overflow("bigint"))?),
        Value::Float4(f) => Value::Float4(-f),
        Value::Float8(f) => Value::Float8(-f),
        Value::Numeric(d) => Value::Numeric(-*d),
        other => return Err(SqlError::no_prefix_operator("-", type_name(other))),
    })
}

/// A value's type as PostgreSQL names it in an error; a NULL is of type
/// unknown.
fn type_name(v: &Value) -> &'static str {
    value_type(v).map(|t| t.pg_name()).unwrap_or("unknown")
}

pub fn value_type(v: &Value) -> Option<SqlType> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(_) => SqlType::Bool,
        Value::Int2(_) => SqlType::Int2,
        Value::Int4(_) => SqlType::Int4,
        Value::Int8(_) => SqlType::Int8,
        Value::Float4(_) => SqlType::Float4,
        Value::Float8(_) => SqlType::Float8,
        Value::Numeric(_) => SqlType::Numeric(None),
        Value::Text(_) => SqlType::Text,
        Value::Bytea(_) => SqlType::Bytea,
        Value::Uuid(_) => SqlType::Uuid,
        Value::Date(_) => SqlType::Date,
        Value::Timestamp(_) => SqlType::Timestamp,
        Value::TimestampTz(_) => SqlType::TimestampTz,
        Value::Json(_) => SqlType::Jsonb,
        Value::Array(a) => SqlType::array_of(a.elem.clone()),
    })
}

fn is_string_type(t: &SqlType) -> bool {
    matches!(t, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_))
}

/// Whether PostgreSQL has a comparison operator between the two types
/// (numbers with numbers, text types with text types, dates with
/// timestamps, arrays with arrays of comparable elements, and any type
/// with itself).
pub(crate) fn comparable(a: &SqlType, b: &SqlType) -> bool {
    let datetime =
        |t: &SqlType| matches!(t, SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz);
    match (a, b) {
        (SqlType::Array(x), SqlType::Array(y)) => comparable(x, y),
        _ => {
            (numeric_rank(a).is_some() && numeric_rank(b).is_some())
                || (is_string_type(a) && is_string_type(b))
                || (datetime(a) && datetime(b))
                || (matches!(a, SqlType::Json | SqlType::Jsonb)
                    && matches!(b, SqlType::Json | SqlType::Jsonb))
                || a == b
        }
    }
}

/// Whether an explicit cast from `from` to `to` exists, as far as arrays
/// go: between arrays of castable elements, from an array to a text type
/// and from a text type to an array. Other casts are checked when they run.
fn castable(from: &SqlType, to: &SqlType) -> bool {
    match (from, to) {
        (SqlType::Array(a), SqlType::Array(b)) => castable(a, b),
        (SqlType::Array(_), other) | (other, SqlType::Array(_)) => is_string_type(other),
        _ => true,
    }
}

fn comparison_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Eq => "=",
        BinOp::NotEq => "<>",
        BinOp::Lt => "<",
        BinOp::LtEq => "<=",
        BinOp::Gt => ">",
        _ => ">=",
    }
}

/// Whether a comparison's operator holds for the ordering of its operands.
fn holds_for(op: BinOp, o: Ordering) -> bool {
    match op {
        BinOp::Eq => o == Ordering::Equal,
        BinOp::NotEq => o != Ordering::Equal,
        BinOp::Lt => o == Ordering::Less,
        BinOp::LtEq => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }
}

fn numeric_rank(t: &SqlType) -> Option<u8> {
    Some(match t {
        SqlType::Int2 => 1,
        SqlType::Int4 => 2,
        SqlType::Int8 => 3,
        SqlType::Numeric(_) => 4,
        SqlType::Float4 => 5,
        SqlType::Float8 => 6,
        _ => return None,
    })
}

/// An arithmetic operator's result type; its numeric has no typmod.
fn numeric_result(l: Option<SqlType>, r: Option<SqlType>) -> Option<SqlType> {
    let t = match (l, r) {
        (Some(l), Some(r)) => {
            let (lr, rr) = (numeric_rank(&l)?, numeric_rank(&r)?);
            // smallint + smallint is integer in PostgreSQL's operator set only
            // for mixed widths; same-width stays.
            if lr >= rr {
                l
            } else {
                r
            }
        }
        (Some(t), None) | (None, Some(t)) => t,
        (None, None) => return None,
    };
    Some(t.without_numeric_typmod())
}

/// What evaluation can see besides the row.
pub struct EvalCtx<'a> {
    pub row: Option<&'a [Value]>,
    pub excluded: Option<&'a [Value]>,
    pub params: &'a [Value],
    pub env: &'a dyn Env,
}

/// Session facts functions need.
pub trait Env: Sync {
    fn setting(&self, name: &str) -> Option<String>;
    fn user(&self) -> String;
    fn database(&self) -> String;
    fn statement_time(&self) -> chrono::DateTime<chrono::Utc>;
    /// A sequence function, from what the engine prepared for the
    /// statement; where nothing was prepared, it is not supported there.
    fn sequence(&self, f: SeqFunc, _args: &[Value]) -> SqlResult<Value> {
        Err(sequence_unsupported(f))
    }
}

pub fn sequence_unsupported(f: SeqFunc) -> SqlError {
    SqlError::unsupported(
        format!("{}() is not supported here", f.name()),
        "keyclaim evaluates sequence functions in INSERT values, column defaults and SELECT without FROM",
    )
}

impl Expr {
    /// The sequence-function calls in this expression, in evaluation order
    /// (arguments first), for the engine to prepare.
    pub fn sequence_calls<'e>(&'e self, out: &mut Vec<(SeqFunc, &'e [Expr])>) {
        let mut each = |e: &'e Expr| e.sequence_calls(out);
        match self {
            Expr::Literal(_)
            | Expr::Unknown(..)
            | Expr::Param(_)
            | Expr::Column(_)
            | Expr::Excluded(_) => {}
            Expr::Not(a) | Expr::Neg(a) | Expr::IsNull(a, _) | Expr::Cast(a, _) => each(a),
            Expr::Binary(_, a, b) => {
                each(a);
                each(b);
            }
            Expr::InList(a, list, _) => {
                each(a);
                list.iter().for_each(each);
            }
            Expr::Array(items, _) => items.iter().for_each(each),
            Expr::Quantified { left, array, .. } => {
                each(left);
                each(array);
            }
            Expr::Between(a, b, c, _) => {
                each(a);
                each(b);
                each(c);
            }
            Expr::Like { expr, pattern, .. } => {
                each(expr);
                each(pattern);
            }
            Expr::Func(f, args) => {
                args.iter().for_each(&mut each);
                if let Func::Seq(s) = f {
                    out.push((*s, args));
                }
            }
            Expr::Case {
                operand,
                arms,
                otherwise,
            } => {
                operand.iter().for_each(|e| each(e));
                for (w, t) in arms {
                    each(w);
                    each(t);
                }
                otherwise.iter().for_each(|e| each(e));
            }
        }
    }
}

impl Expr {
    pub fn eval(&self, cx: &EvalCtx<'_>) -> SqlResult<Value> {
        Ok(match self {
            Expr::Literal(_) | Expr::Param(_) | Expr::Column(_) | Expr::Excluded(_) => {
                self.operand(cx)?.into_owned()
            }
            Expr::Unknown(s, _) => Value::Text(s.clone()),
            Expr::Not(inner) => match truth(&inner.eval(cx)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::Neg(inner) => negate(&inner.eval(cx)?)?,
            Expr::Binary(op, l, r) => binary(*op, l, r, cx)?,
            Expr::IsNull(inner, negated) => Value::Bool(inner.eval(cx)?.is_null() != *negated),
            Expr::InList(target, items, negated) => {
                let v = target.operand(cx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for item in items {
                    let iv = item.operand(cx)?;
                    match compare(&v, &iv)? {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!negated)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                }
            }
            Expr::Between(target, low, high, negated) => {
                let v = target.eval(cx)?;
                let lo = compare(&v, &low.eval(cx)?)?;
                let hi = compare(&v, &high.eval(cx)?)?;
                match (lo, hi) {
                    (Some(lo), Some(hi)) => {
                        Value::Bool((lo != Ordering::Less && hi != Ordering::Greater) != *negated)
                    }
                    _ => Value::Null,
                }
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let v = expr.eval(cx)?;
                let p = pattern.eval(cx)?;
                match (v.to_text(), p.to_text()) {
                    (Some(v), Some(p)) => {
                        let m = if *case_insensitive {
                            like(&v.to_lowercase(), &p.to_lowercase())?
                        } else {
                            like(&v, &p)?
                        };
                        Value::Bool(m != *negated)
                    }
                    _ => Value::Null,
                }
            }
            Expr::Cast(inner, ty) => cast_explicit(&inner.eval(cx)?, ty)?,
            Expr::Array(items, elem) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(item.eval(cx)?.cast_to(elem)?);
                }
                Array::value(elem.clone(), values)
            }
            Expr::Quantified {
                left,
                op,
                array,
                all,
            } => quantified(left, *op, array, *all, cx)?,
            Expr::Func(f, args) => func(*f, args, cx)?,
            Expr::Case {
                operand,
                arms,
                otherwise,
            } => {
                let subject = match operand {
                    Some(o) => Some(o.eval(cx)?),
                    None => None,
                };
                for (when, then) in arms {
                    let w = when.eval(cx)?;
                    let hit = match &subject {
                        Some(s) => compare(s, &w)? == Some(Ordering::Equal),
                        None => truth(&w)? == Some(true),
                    };
                    if hit {
                        return then.eval(cx);
                    }
                }
                match otherwise {
                    Some(o) => o.eval(cx)?,
                    None => Value::Null,
                }
            }
        })
    }

    /// The expression's value, borrowed where it is one already there (a
    /// literal, a parameter, a column of the row or of EXCLUDED): comparing
    /// or keying by it then copies nothing. `eval` finds these values here
    /// too, and copies them.
    pub fn operand<'a>(&'a self, cx: &EvalCtx<'a>) -> SqlResult<Cow<'a, Value>> {
        static NULL: Value = Value::Null;
        let at = |values: Option<&'a [Value]>, i: usize| {
            Cow::Borrowed(values.and_then(|r| r.get(i)).unwrap_or(&NULL))
        };
        Ok(match self {
            Expr::Literal(v) => Cow::Borrowed(v),
            Expr::Param(n) => Cow::Borrowed(cx.params.get(*n).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_PARAMETER,
                    format!("there is no parameter ${}", n + 1),
                )
            })?),
            Expr::Column(i) => at(cx.row, *i),
            Expr::Excluded(i) => at(cx.excluded, *i),
            _ => Cow::Owned(self.eval(cx)?),
        })
    }

    /// True iff the expression evaluates to TRUE (NULL and FALSE filter out).
    pub fn holds(&self, cx: &EvalCtx<'_>) -> SqlResult<bool> {
        Ok(truth(&self.eval(cx)?)? == Some(true))
    }

    /// True iff the expression evaluates to FALSE (a CHECK constraint's
    /// violation: NULL passes).
    pub fn fails(&self, cx: &EvalCtx<'_>) -> SqlResult<bool> {
        Ok(truth(&self.eval(cx)?)? == Some(false))
    }
}

/// A quoted literal of type `ty` once the input function has read it:
/// an array's elements are cast as the array is (`'{ab}'::varchar(1)[]`
/// truncates each), and a numeric typmod rounds, as PostgreSQL applies
/// it after the input function, so its errors carry no position.
fn after_input(v: Value, ty: &SqlType) -> SqlResult<Value> {
    match ty {
        SqlType::Array(_) | SqlType::Numeric(Some(_)) => cast_explicit(&v, ty),
        _ => Ok(v),
    }
}

/// An explicit `::type` cast: like assignment, but char/varchar truncate silently.
fn cast_explicit(v: &Value, ty: &SqlType) -> SqlResult<Value> {
    match (v, ty) {
        // An array's elements are cast as explicitly as the array.
        (Value::Array(a), SqlType::Array(elem)) => {
            let items = a
                .items
                .iter()
                .map(|item| cast_explicit(item, elem))
                .collect::<SqlResult<Vec<_>>>()?;
            Ok(Array::value((**elem).clone(), items))
        }
        (Value::Text(s), SqlType::Varchar(Some(n))) | (Value::Text(s), SqlType::Char(Some(n))) => {
            let cut: String = s.chars().take(*n as usize).collect();
            Value::Text(cut).cast_to(ty)
        }
        (v, SqlType::Text | SqlType::Varchar(None)) => {
            Ok(v.to_text().map(Value::Text).unwrap_or(Value::Null))
        }
        _ => v.cast_to(ty),
    }
}

fn truth(v: &Value) -> SqlResult<Option<bool>> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        Value::Text(s) => match Value::parse_text(&SqlType::Bool, s)? {
            Value::Bool(b) => Ok(Some(b)),
            _ => Ok(None),
        },
        other => Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "argument of WHERE must be type boolean, not type {}",
                value_type(other).map(|t| t.pg_name()).unwrap_or("unknown")
            ),
        )),
    }
}

/// Compare two values; text against a typed value parses the text first.
fn compare(a: &Value, b: &Value) -> SqlResult<Option<Ordering>> {
    if a.is_null() || b.is_null() {
        return Ok(None);
    }
    if let Some(o) = a.sql_cmp(b) {
        return Ok(Some(o));
    }
    match (a, b) {
        (Value::Text(s), other) | (other, Value::Text(s)) if !matches!(other, Value::Text(_)) => {
            let ty = value_type(other).expect("not null");
            let parsed = Value::parse_text(&ty, s)?;
            Ok(if matches!(a, Value::Text(_)) {
                parsed.sql_cmp(other)
            } else {
                other.sql_cmp(&parsed)
            })
        }
        _ => Err(SqlError::no_operator(type_name(a), "=", type_name(b))),
    }
}

/// `left op ANY/ALL (array)` with PostgreSQL's NULL rules: a NULL array
/// gives NULL; an empty array gives false for ANY and true for ALL (even
/// against NULL); otherwise a NULL left side or a NULL comparison with
/// no deciding element gives NULL.
fn quantified(
    left: &Expr,
    op: BinOp,
    array: &Expr,
    all: bool,
    cx: &EvalCtx<'_>,
) -> SqlResult<Value> {
    let v = left.eval(cx)?;
    let items = match array.eval(cx)? {
        Value::Null => return Ok(Value::Null),
        Value::Array(a) => a.items,
        // Compiling refuses what is no array; this is the same refusal
        // should a value slip past it.
        other => {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!(
                    "op ANY/ALL (array) requires array on right side, not {}",
                    value_type(&other).map(|t| t.pg_name()).unwrap_or("unknown")
                ),
            ))
        }
    };
    if items.is_empty() {
        return Ok(Value::Bool(all));
    }
    if v.is_null() {
        return Ok(Value::Null);
    }
    let mut saw_null = false;
    for item in &items {
        match compare(&v, item)? {
            None => saw_null = true,
            // ANY is decided by the first element that holds, ALL by the
            // first that does not.
            Some(o) if holds_for(op, o) != all => return Ok(Value::Bool(!all)),
            Some(_) => {}
        }
    }
    Ok(if saw_null {
        Value::Null
    } else {
        Value::Bool(all)
    })
}

fn binary(op: BinOp, l: &Expr, r: &Expr, cx: &EvalCtx<'_>) -> SqlResult<Value> {
    match op {
        BinOp::And => {
            let a = truth(&l.eval(cx)?)?;
            if a == Some(false) {
                return Ok(Value::Bool(false));
            }
            let b = truth(&r.eval(cx)?)?;
            Ok(match (a, b) {
                (_, Some(false)) => Value::Bool(false),
                (Some(true), Some(true)) => Value::Bool(true),
                _ => Value::Null,
            })
        }
        BinOp::Or => {
            let a = truth(&l.eval(cx)?)?;
            if a == Some(true) {
                return Ok(Value::Bool(true));
            }
            let b = truth(&r.eval(cx)?)?;
            Ok(match (a, b) {
                (_, Some(true)) => Value::Bool(true),
                (Some(false), Some(false)) => Value::Bool(false),
                _ => Value::Null,
            })
        }
        op if op.is_comparison() => {
            let (a, b) = (l.operand(cx)?, r.operand(cx)?);
            Ok(match compare(&a, &b)? {
                None => Value::Null,
                Some(o) => Value::Bool(holds_for(op, o)),
            })
        }
        BinOp::Concat => {
            let (a, b) = (l.eval(cx)?, r.eval(cx)?);
            if let Some(v) = concat_arrays(&a, &b)? {
                return Ok(v);
            }
            Ok(match (a.to_text(), b.to_text()) {
                (Some(a), Some(b)) => Value::Text(a + &b),
                _ => Value::Null,
            })
        }
        _ => arithmetic(op, l.eval(cx)?, r.eval(cx)?),
    }
}

/// `||` with an array: PostgreSQL's array_cat (a NULL side leaves the
/// other), array_append and array_prepend. None when neither side is an
/// array.
fn concat_arrays(a: &Value, b: &Value) -> SqlResult<Option<Value>> {
    Ok(Some(match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            let items = x
                .items
                .iter()
                .cloned()
                .chain(
                    y.items
                        .iter()
                        .map(|v| v.cast_to(&x.elem))
                        .collect::<SqlResult<Vec<_>>>()?,
                )
                .collect();
            Array::value(x.elem.clone(), items)
        }
        (Value::Array(x), Value::Null) | (Value::Null, Value::Array(x)) => Value::Array(x.clone()),
        (Value::Array(x), v) => {
            let mut items = x.items.clone();
            items.push(v.cast_to(&x.elem)?);
            Array::value(x.elem.clone(), items)
        }
        (v, Value::Array(y)) => {
            let mut items = vec![v.cast_to(&y.elem)?];
            items.extend(y.items.iter().cloned());
            Array::value(y.elem.clone(), items)
        }
        _ => return Ok(None),
    }))
}

fn arithmetic(op: BinOp, a: Value, b: Value) -> SqlResult<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let ty = numeric_result(value_type(&a), value_type(&b))
        .ok_or_else(|| SqlError::no_operator(type_name(&a), symbol(op), type_name(&b)))?;
    let (a, b) = (a.cast_to(&ty)?, b.cast_to(&ty)?);
    let div0 = || SqlError::new(sqlstate::DIVISION_BY_ZERO, "division by zero");
    let out_of_range = |name: &str| {
        SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{name} out of range"),
        )
    };
    macro_rules! int_op {
        ($x:expr, $y:expr, $ctor:path, $name:expr) => {{
            let (x, y) = ($x, $y);
            let r = match op {
                BinOp::Plus => x.checked_add(y),
                BinOp::Minus => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div => {
                    if y == 0 {
                        return Err(div0());
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y == 0 {
                        return Err(div0());
                    }
                    x.checked_rem(y)
                }
            };
            $ctor(r.ok_or_else(|| out_of_range($name))?)
        }};
    }
    Ok(match (a, b) {
        (Value::Int2(x), Value::Int2(y)) => int_op!(x, y, Value::Int2, "smallint"),
        (Value::Int4(x), Value::Int4(y)) => int_op!(x, y, Value::Int4, "integer"),
        (Value::Int8(x), Value::Int8(y)) => int_op!(x, y, Value::Int8, "bigint"),
        (Value::Numeric(x), Value::Numeric(y)) => {
            let r: Option<Decimal> = match op {
                BinOp::Plus => x.checked_add(y),
                BinOp::Minus => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div => {
                    if y.is_zero() {
                        return Err(div0());
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y.is_zero() {
                        return Err(div0());
                    }
                    x.checked_rem(y)
                }
            };
            Value::Numeric(r.ok_or_else(|| out_of_range("numeric"))?)
        }
        (Value::Float4(x), Value::Float4(y)) => {
            Value::Float4(float_op(op, x as f64, y as f64)? as f32)
        }
        (Value::Float8(x), Value::Float8(y)) => Value::Float8(float_op(op, x, y)?),
        _ => return Err(SqlError::internal("arithmetic on mismatched values")),
    })
}

fn float_op(op: BinOp, x: f64, y: f64) -> SqlResult<f64> {
    Ok(match op {
        BinOp::Plus => x + y,
        BinOp::Minus => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(SqlError::new(
                    sqlstate::DIVISION_BY_ZERO,
                    "division by zero",
                ));
            }
            x / y
        }
        _ => x % y,
    })
}

fn symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Plus => "+",
        BinOp::Minus => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Mod => "%",
        _ => "?",
    }
}

/// One element of a LIKE pattern.
#[derive(Clone, Copy, PartialEq)]
enum LikeToken {
    /// `%`: any run of characters.
    Any,
    /// `_`: one character.
    One,
    Char(char),
    /// A lone backslash at the end: an error once matching reaches it
    /// with text left, as in PostgreSQL (which checks no sooner).
    BadEscape,
}

/// SQL LIKE with `%` and `_` and backslash escapes, in O(n·m) time as
/// PostgreSQL matches: on a mismatch only the latest `%` takes one more
/// character (earlier ones never need to), so no pattern backtracks
/// exponentially. A pattern that ends in a lone backslash is PostgreSQL's
/// 22025 once the match gets that far.
pub fn like(s: &str, pattern: &str) -> SqlResult<bool> {
    like_escaped(s, pattern, Some('\\'))
}

/// [`like`] with `escape` as the escape character (`LIKE ... ESCAPE`; None:
/// `ESCAPE ''`, no escape character).
pub fn like_escaped(s: &str, pattern: &str, escape: Option<char>) -> SqlResult<bool> {
    let mut p = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        p.push(match c {
            c if Some(c) == escape => chars.next().map_or(LikeToken::BadEscape, LikeToken::Char),
            '%' => LikeToken::Any,
            '_' => LikeToken::One,
            c => LikeToken::Char(c),
        });
    }
    let s: Vec<char> = s.chars().collect();
    let (mut si, mut pi) = (0, 0);
    // Where to resume after the latest `%`: (pattern after it, text start).
    let mut resume: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(LikeToken::One) => (si, pi) = (si + 1, pi + 1),
            Some(LikeToken::Char(c)) if *c == s[si] => (si, pi) = (si + 1, pi + 1),
            Some(LikeToken::Any) => {
                pi += 1;
                resume = Some((pi, si));
            }
            Some(LikeToken::BadEscape) => {
                return Err(SqlError::new(
                    "22025",
                    "LIKE pattern must not end with escape character",
                ))
            }
            _ => match resume {
                Some((after, start)) => {
                    resume = Some((after, start + 1));
                    (si, pi) = (start + 1, after);
                }
                None => return Ok(false),
            },
        }
    }
    Ok(p[pi..].iter().all(|t| *t == LikeToken::Any))
}

fn func(f: Func, args: &[Expr], cx: &EvalCtx<'_>) -> SqlResult<Value> {
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(a.eval(cx)?);
    }
    let arity = |n: usize| -> SqlResult<()> {
        if vals.len() == n {
            Ok(())
        } else {
            Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {f:?} with {} arguments does not exist",
                    vals.len()
                )
                .to_lowercase(),
            ))
        }
    };
    let text_fn = |v: &Value, g: fn(&str) -> Value| -> Value {
        match v.to_text() {
            Some(s) => g(&s),
            None => Value::Null,
        }
    };
    Ok(match f {
        Func::Now => Value::TimestampTz(cx.env.statement_time()),
        Func::GenRandomUuid => Value::Uuid(uuid::Uuid::new_v4()),
        Func::Lower => {
            arity(1)?;
            text_fn(&vals[0], |s| Value::Text(s.to_lowercase()))
        }
        Func::Upper => {
            arity(1)?;
            text_fn(&vals[0], |s| Value::Text(s.to_uppercase()))
        }
        // length(bytea) counts bytes, as octet_length does for both.
        Func::Length | Func::OctetLength => {
            arity(1)?;
            match &vals[0] {
                Value::Bytea(b) => Value::Int4(b.len() as i32),
                v if f == Func::OctetLength => text_fn(v, |s| Value::Int4(s.len() as i32)),
                v => text_fn(v, |s| Value::Int4(s.chars().count() as i32)),
            }
        }
        Func::Coalesce => vals
            .into_iter()
            .find(|v| !v.is_null())
            .unwrap_or(Value::Null),
        Func::Abs => {
            arity(1)?;
            match &vals[0] {
                Value::Null => Value::Null,
                v if v.sql_cmp(&Value::Int4(0)) == Some(Ordering::Less) => negate(v)?,
                v => v.clone(),
            }
        }
        Func::Version => Value::Text(crate::version_string()),
        Func::CurrentSchema => Value::Text("public".into()),
        Func::CurrentDatabase => Value::Text(cx.env.database()),
        Func::CurrentUser => Value::Text(cx.env.user()),
        Func::PgBackendPid => Value::Int4(std::process::id() as i32),
        Func::CurrentSetting => {
            let name = vals.first().and_then(|v| v.to_text()).unwrap_or_default();
            match cx.env.setting(&name) {
                Some(s) => Value::Text(s),
                None => {
                    return Err(SqlError::new(
                        sqlstate::UNRECOGNIZED_PARAMETER,
                        format!("unrecognized configuration parameter \"{name}\""),
                    ))
                }
            }
        }
        Func::Seq(f) => cx.env.sequence(f, &vals)?,
        // set_config and pg_sleep act on the session / the clock; the engine
        // handles them before evaluation reaches here.
        Func::SetConfig | Func::PgSleep => {
            vals.get(1).cloned().unwrap_or(Value::Text(String::new()))
        }
        Func::Advisory(a) => {
            return Err(SqlError::unsupported(
                format!(
                    "{}() is supported only as an item of a SELECT without FROM",
                    a.name()
                ),
                format!("call it on its own: SELECT {}(...)", a.name()),
            ))
        }
        Func::CountLimit(op) => {
            return Err(SqlError::unsupported(
                format!(
                    "{}() is supported only as the one item of a SELECT without FROM",
                    op.name()
                ),
                format!("call it on its own: SELECT {}(...)", op.name()),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::like;

    fn matches(s: &str, p: &str) -> bool {
        like(s, p).unwrap()
    }

    #[test]
    fn like_patterns() {
        assert!(matches("hello", "h%"));
        assert!(matches("hello", "%llo"));
        assert!(matches("hello", "h_llo"));
        assert!(!matches("hello", "h_lo"));
        assert!(matches("50%", "50\\%"));
        assert!(!matches("50x", "50\\%"));
        assert!(matches("", "%"));
        assert!(matches("abcabd", "%ab_"));
        assert!(matches("aXbXc", "a%b%c"));
        assert!(!matches("aXbXc", "a%c%b"));
        assert!(matches("mississippi", "%iss%pi"));
        assert!(!matches("mississippi", "%iss%pix"));
        assert!(matches("a_b", "a\\_b"));
        assert!(!matches("axb", "a\\_b"));
        assert!(matches("%%", "%\\%"));
        assert!(!matches("", "_"));
        assert!(matches("abc", "%%%c"));
        assert_eq!(like("ab", "a\\").unwrap_err().code, "22025");
        assert!(!matches("a", "a\\"));
        assert!(!matches("b", "a\\"));
    }

    /// Backtracking over every `%` took seconds on 60 characters and
    /// would not finish on these; the match is linear per `%`.
    #[test]
    fn like_does_not_backtrack_exponentially() {
        let text = "a".repeat(20_000);
        let pattern = format!("{}b", "%a".repeat(30));
        assert!(!matches(&text, &pattern));
        assert!(matches(&format!("{text}b"), &pattern));
    }
}
