//! Writes that take their rows from a query: `INSERT ... SELECT` (and a
//! `VALUES` list only a query can compute, with subqueries or `ORDER BY`),
//! `UPDATE ... FROM`, `DELETE ... USING`, and UPDATE or DELETE with
//! subqueries.
//!
//! An INSERT's query is planned as any SELECT is (the fast path or the
//! query engine). For an UPDATE or DELETE the engine plans a query built
//! from the statement, a *finder*, that returns each target row's primary
//! key and, for an UPDATE, the values its SET list computes there.
//!
//! The query runs to the end before the write begins, so the write never
//! sees its own rows (as PostgreSQL's snapshot would not). Then the write
//! proceeds as any other: each found row is read again by key, for the
//! version its write goes by, and written through the claim protocol in the
//! statement's transaction (a write that takes its rows from a query may
//! write many, so outside a block it runs as a transaction of its own).

use std::collections::HashSet;
use std::ops::ControlFlow;

use futures::TryStreamExt;
use sqlparser::ast::{self, Statement};

use super::ctx::StmtCtx;
use super::write::Candidate;
use super::{query, read, select, Engine, Outcome};
use crate::catalog::naming::quote_ident;
use crate::catalog::TableDef;
use crate::error::{SqlError, SqlResult};
use crate::sql::expr::Expr;
use crate::sql::plan::{
    computed_by_query, table_name, FoundBy, InsertPlan, InsertRows, Plan, RowQuery,
};
use crate::types::{encode_key, SqlType, Value};

/// The rows a write's query returned, all of them.
pub(crate) type QueryRows = Vec<Vec<Value>>;

/// The query a write needs, if the fast planner cannot find its rows.
pub(super) enum Needs {
    /// `INSERT ... SELECT`: the statement's own query.
    Source(Box<ast::Query>),
    /// UPDATE or DELETE: a finder built over the target table.
    Finder,
}

/// Which query, if any, a write takes its rows from. `computed`: the fast
/// path lacks an expression of the statement, so the query engine must
/// compute its VALUES, or find its rows and compute its SET list.
pub(super) fn needs(stmt: &Statement, computed: bool) -> SqlResult<Option<Needs>> {
    Ok(match stmt {
        Statement::Insert(i) => {
            let Some(q) = i.source.as_deref() else {
                return Ok(None);
            };
            let shaped = q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some();
            match q.body.as_ref() {
                ast::SetExpr::Values(v) if !shaped => {
                    let items = || v.rows.iter().flat_map(|r| &r.content);
                    if computed || items().any(subquery) {
                        Some(Needs::Source(Box::new(values_as_selects(v)?)))
                    } else {
                        None
                    }
                }
                _ => Some(Needs::Source(Box::new(q.clone()))),
            }
        }
        Statement::Update(u) => {
            let values = u.assignments.iter().map(|a| &a.value);
            (computed || u.from.is_some() || u.selection.iter().chain(values).any(subquery))
                .then_some(Needs::Finder)
        }
        Statement::Delete(d) => {
            (computed || d.using.is_some() || d.selection.as_ref().is_some_and(subquery))
                .then_some(Needs::Finder)
        }
        _ => None,
    })
}

/// The parameter types a write's query plans with: the client's, and for
/// a parameter that stands alone as a value written into a column (`SET n
/// = $1`, `INSERT INTO t (n) SELECT $1`), the column's type, as PostgreSQL
/// infers it (the query's select list alone says nothing of it).
fn written_parameters(
    stmt: &Statement,
    t: &TableDef,
    hints: &[Option<SqlType>],
) -> Vec<Option<SqlType>> {
    let mut pairs: Vec<(&ast::Expr, Option<usize>)> = Vec::new();
    match stmt {
        Statement::Update(u) => {
            for a in &u.assignments {
                if let ast::AssignmentTarget::ColumnName(name) = &a.target {
                    let column = name.0.last().and_then(|p| p.as_ident());
                    let col = column.and_then(|c| t.column_index(&crate::sql::plan::ident(c)));
                    pairs.push((&a.value, col));
                }
            }
        }
        Statement::Insert(i) => {
            let targets: Vec<Option<usize>> = if i.columns.is_empty() {
                (0..t.visible().len()).map(Some).collect()
            } else {
                i.columns
                    .iter()
                    .map(|c| {
                        let c = c.0.last().and_then(|p| p.as_ident())?;
                        t.column_index(&crate::sql::plan::ident(c))
                    })
                    .collect()
            };
            if let Some(q) = &i.source {
                select_items(&q.body, &targets, &mut pairs);
            }
        }
        _ => {}
    }
    let mut hints = hints.to_vec();
    for (e, col) in pairs {
        let (ast::Expr::Value(v), Some(col)) = (e, col) else {
            continue;
        };
        let ast::Value::Placeholder(p) = &v.value else {
            continue;
        };
        let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        if hints.len() < n {
            hints.resize(n, None);
        }
        hints[n - 1].get_or_insert_with(|| t.columns[col].ty.clone());
    }
    hints
}

/// Each item of every SELECT (or VALUES row) of a query body, with the
/// column it is written into.
fn select_items<'a>(
    body: &'a ast::SetExpr,
    targets: &[Option<usize>],
    out: &mut Vec<(&'a ast::Expr, Option<usize>)>,
) {
    match body {
        ast::SetExpr::Select(s) => {
            for (item, &col) in s.projection.iter().zip(targets) {
                if let ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    out.push((e, col));
                }
            }
        }
        ast::SetExpr::Values(v) => {
            for row in &v.rows {
                out.extend(row.content.iter().zip(targets.iter().copied()));
            }
        }
        ast::SetExpr::SetOperation { left, right, .. } => {
            select_items(left, targets, out);
            select_items(right, targets, out);
        }
        ast::SetExpr::Query(q) => select_items(&q.body, targets, out),
        _ => {}
    }
}

/// A VALUES list with subqueries as `SELECT ... UNION ALL SELECT ...`,
/// which the query engine computes (it does not evaluate a scalar subquery
/// inside VALUES).
fn values_as_selects(v: &ast::Values) -> SqlResult<ast::Query> {
    let mut selects = Vec::with_capacity(v.rows.len());
    for row in &v.rows {
        if row.content.iter().any(crate::sql::plan::is_default_keyword) {
            return Err(SqlError::unsupported(
                "DEFAULT in a VALUES list the query engine computes is not supported",
                "list the columns that take values, and leave the others out",
            ));
        }
        let items: Vec<String> = row.content.iter().map(ToString::to_string).collect();
        selects.push(format!("SELECT {}", items.join(", ")));
    }
    match crate::sql::parse(&selects.join(" UNION ALL "))?.pop() {
        Some(Statement::Query(q)) => Ok(*q),
        _ => Err(SqlError::internal("a VALUES list did not print as a query")),
    }
}

/// Whether an expression holds a subquery.
fn subquery(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |e| match e {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The finder of an UPDATE or DELETE on `t`: `SELECT` the target's
/// primary key (and, for an UPDATE, each value its SET list computes,
/// `computed_by_query`) `FROM` the target and the statement's `FROM` /
/// `USING` items, `WHERE` its condition.
pub(super) fn finder(stmt: &Statement, t: &TableDef) -> SqlResult<String> {
    let (target, joined, selection, computed): (_, Vec<&ast::TableWithJoins>, _, Vec<&ast::Expr>) =
        match stmt {
            Statement::Update(u) => {
                let from = match &u.from {
                    Some(ast::UpdateTableFromKind::AfterSet(f))
                    | Some(ast::UpdateTableFromKind::BeforeSet(f)) => f.iter().collect(),
                    None => Vec::new(),
                };
                let computed = u
                    .assignments
                    .iter()
                    .filter(|a| computed_by_query(a))
                    .map(|a| &a.value)
                    .collect();
                (&u.table, from, &u.selection, computed)
            }
            Statement::Delete(d) => {
                let (ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f)) =
                    &d.from;
                let [target] = f.as_slice() else {
                    return Err(SqlError::internal("a DELETE names one table"));
                };
                let using = d.using.iter().flatten().collect();
                (target, using, &d.selection, Vec::new())
            }
            _ => return Err(SqlError::internal("only UPDATE and DELETE have finders")),
        };
    let ast::TableFactor::Table { name, alias, .. } = &target.relation else {
        return Err(SqlError::internal("a write's target is a table"));
    };
    // The finder selects the rows' keys, and a hidden row id is no column
    // the query engine shows.
    if t.row_id().is_some() {
        return Err(SqlError::unsupported(
            format!(
                "{} with a join or a subquery on table \"{}\", which has no primary key, is not supported",
                if matches!(stmt, Statement::Update(_)) { "UPDATE" } else { "DELETE" },
                t.name
            ),
            "keyclaim finds such rows by key, and the hidden key of a table created without a primary key is no column a query can name; write the condition without a join or subquery",
        ));
    }
    // The target, always under a name its key columns are qualified by.
    let qualifier = match alias {
        Some(a) => crate::sql::plan::ident(&a.name),
        None => table_name(name)?,
    };
    let mut items: Vec<String> = t
        .primary_key
        .iter()
        .map(|&i| {
            format!(
                "{}.{}",
                quote_ident(&qualifier),
                quote_ident(&t.columns[i].name)
            )
        })
        .collect();
    items.extend(computed.iter().map(|e| format!("({e})")));
    let mut from = vec![format!("{name} AS {}", quote_ident(&qualifier))];
    from.extend(joined.iter().map(|j| j.to_string()));
    let mut sql = format!("SELECT {} FROM {}", items.join(", "), from.join(", "));
    if let Some(w) = selection {
        sql.push_str(&format!(" WHERE {w}"));
    }
    Ok(sql)
}

/// What the find stage gives a write.
pub(super) enum Found {
    /// Nothing: the plan finds its own rows, or writes its VALUES.
    Nothing,
    /// The rows of `INSERT ... SELECT`, each an entry per column (None
    /// meaning DEFAULT).
    Inserted(Vec<Vec<Option<Expr>>>),
    /// The rows a finder returned.
    Rows(QueryRows),
}

impl Found {
    /// An INSERT's rows: its VALUES, or the rows its query gave.
    pub fn insert_rows<'a>(&'a self, plan: &'a InsertPlan) -> &'a [Vec<Option<Expr>>] {
        match (&plan.rows, self) {
            (InsertRows::Values(rows), _) => rows,
            (InsertRows::Query { .. }, Found::Inserted(rows)) => rows,
            (InsertRows::Query { .. }, _) => &[],
        }
    }

    /// The rows an UPDATE's or DELETE's finder returned.
    pub fn rows(&self) -> Option<&[Vec<Value>]> {
        match self {
            Found::Rows(rows) => Some(rows),
            _ => None,
        }
    }
}

/// Each row of an INSERT's query put into its target columns (the others
/// take their defaults).
fn into_columns(plan: &InsertPlan, targets: &[usize], rows: QueryRows) -> Vec<Vec<Option<Expr>>> {
    rows.into_iter()
        .map(|row| {
            let mut full = vec![None; plan.table.columns.len()];
            for (&i, v) in targets.iter().zip(row) {
                full[i] = Some(Expr::Literal(v));
            }
            full
        })
        .collect()
}

/// The query a plan takes or finds its rows with.
pub(super) fn row_query(plan: &Plan) -> Option<&RowQuery> {
    match plan {
        Plan::Insert(p) => match &p.rows {
            InsertRows::Query { query, .. } => Some(query),
            InsertRows::Values(_) => None,
        },
        Plan::Update(p) => p.found_by.as_ref().map(|f| &f.query),
        Plan::Delete(p) => p.found_by.as_ref().map(|f| &f.query),
        _ => None,
    }
}

impl Engine {
    /// Plan the query a write needs (`needs`): the INSERT's own, or the
    /// finder over `target`. Returns it with the parameter types it found.
    pub(super) async fn plan_row_query(
        &self,
        needs: Needs,
        stmt: &Statement,
        target: &TableDef,
        hints: &[Option<SqlType>],
        own: Option<crate::store::TxnId>,
        source: &str,
    ) -> SqlResult<(RowQuery, Vec<SqlType>)> {
        let hints = written_parameters(stmt, target, hints);
        let prepared = match needs {
            Needs::Source(q) => {
                let stmt = Statement::Query(q);
                Box::pin(self.plan(stmt, &hints, own, source)).await?
            }
            Needs::Finder => {
                use sqlparser::ast::Spanned;
                let sql = finder(stmt, target)?;

                // The finder's errors point into the client's text, where
                // the names they are about stand.
                let start = stmt.span().start;
                let src = query::Source {
                    text: source,
                    start: super::offset_of(source, start.line, start.column),
                };
                Box::pin(self.plan_query_text(sql, &hints, own, &src)).await?
            }
        };
        Ok((
            RowQuery {
                plan: prepared.plan,
                columns: prepared.columns,
            },
            prepared.param_types,
        ))
    }

    /// The find stage: run the query a write takes its rows from to the
    /// end, before anything is drawn or written.
    pub(super) async fn find(
        &self,
        plan: &Plan,
        cx: &StmtCtx<'_>,
        param_types: &[SqlType],
    ) -> SqlResult<Found> {
        let Some(query) = row_query(plan) else {
            return Ok(Found::Nothing);
        };
        let columns = query.columns.clone();
        let outcome = match query.plan.as_ref() {
            // Boxed: a statement's future stays small when it finds nothing.
            Plan::Select(s) => Box::pin(select::run(cx, s, columns)).await?,
            Plan::Query(q) => Box::pin(self.run_query(cx, q, columns, param_types)).await?,
            _ => return Err(SqlError::internal("a write's query is a SELECT")),
        };
        let Outcome::Rows { rows, .. } = outcome else {
            return Err(SqlError::internal("a write's query returned no rows"));
        };
        let rows: QueryRows = rows.try_collect().await?;
        Ok(match plan {
            Plan::Insert(p) => match &p.rows {
                InsertRows::Query { targets, .. } => {
                    Found::Inserted(into_columns(p, targets, rows))
                }
                InsertRows::Values(_) => Found::Nothing,
            },
            _ => Found::Rows(rows),
        })
    }
}

impl StmtCtx<'_> {
    /// The rows a finder found, read again by key, each once (a row the
    /// join matched several times is written once, with the values of its
    /// first match, as PostgreSQL writes it once).
    pub(super) async fn found_candidates(
        &self,
        t: &TableDef,
        by: &FoundBy,
        rows: &[Vec<Value>],
    ) -> SqlResult<Vec<Candidate>> {
        let width = t.primary_key.len();
        let mut seen = HashSet::new();
        let mut keys = Vec::new();
        let mut computed = std::collections::HashMap::new();
        for row in rows {
            let mut key = Vec::with_capacity(width);
            for (&c, v) in t.primary_key.iter().zip(row) {
                key.push(v.cast_to(&t.columns[c].ty)?);
            }
            let refs: Vec<&Value> = key.iter().collect();
            let pk = encode_key(&refs);
            if !seen.insert(pk.clone()) {
                continue;
            }
            let mut values = vec![Value::Null; t.columns.len()];
            for (&i, v) in by.computed.iter().zip(&row[width..]) {
                values[i] = v.clone();
            }
            computed.insert(pk.clone(), values);
            keys.push(pk);
        }
        let found = read::by_keys(self.store.as_ref(), &self.reads, t, keys).await?;
        Ok(found
            .into_iter()
            .map(|(pk, row)| Candidate {
                computed: computed.remove(&pk),
                pk,
                row,
            })
            .collect())
    }
}
