//! The query engine: every SELECT the fast planner (`sql::plan`) does not
//! answer, planned and run by Apache DataFusion.
//!
//! Which queries come here is decided on the syntax alone ([`routes`]):
//! joins, several FROM items, subqueries in FROM or in expressions, WITH,
//! set operations, VALUES, table functions, DISTINCT, GROUP BY / HAVING,
//! window functions, and aggregates other than `count`. Everything else
//! (point reads, key lists, single-table scans, count) stays on the fast
//! path, whose cost does not change.
//!
//! A query is parsed again by DataFusion's parser from the statement's
//! text, rewritten so its answer is PostgreSQL's (`rules`), planned
//! against keyclaim's tables (`provider`) once at prepare time, and on
//! each execution bound, optimised, and streamed. The scans read through
//! the statement's `ReadView`, so a query inside a transaction block sees
//! the block's own writes and no one else's uncommitted ones.

mod aggregates;
mod casts;
mod comparisons;
mod dates;
mod declared;
mod errors;
mod from_functions;
mod json;
mod lifted_ctes;
mod like;
mod origins;
mod provider;
mod rounding_casts;
mod row_fn;
mod rules;
mod scan;
mod sequence_table;
mod series;
mod subqueries;
pub(crate) mod system;
mod types;

use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemoryCatalogProviderList,
    MemorySchemaProvider, SchemaProvider, TableProvider,
};
use datafusion::common::config::Dialect;
use datafusion::common::ScalarValue;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::SessionConfig;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast as df_ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use futures::stream::{self, StreamExt};
use futures::FutureExt;
use sqlparser::ast;

use super::ctx::StmtCtx;
use super::{Column, Outcome};
use crate::catalog::TableDef;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::expr::{Func, SeqFunc};
use crate::types::{SqlType, Value};
pub(crate) use errors::Source;
use provider::{ScanCtx, Table};
pub(crate) use system::{ShownLock, Snapshot};

/// Whether a SELECT goes to the query engine rather than the fast planner.
/// A locking SELECT never does: the fast planner answers it, or refuses it
/// in PostgreSQL's words.
pub(crate) fn routes(q: &ast::Query) -> bool {
    if !q.locks.is_empty() {
        return false;
    }
    if reads_system(q) {
        return true;
    }
    if q.with.is_some() {
        return true;
    }
    let ast::SetExpr::Select(s) = q.body.as_ref() else {
        return true;
    };
    let plain_table = |t: &ast::TableWithJoins| {
        t.joins.is_empty()
            && matches!(&t.relation, ast::TableFactor::Table { name, args: None, .. }
                if !keyword_function(name))
    };
    if s.from.len() > 1 || !s.from.iter().all(plain_table) {
        return true;
    }
    let grouped = !matches!(&s.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    if s.distinct.is_some() || s.having.is_some() || grouped || !s.named_window.is_empty() {
        return true;
    }
    ast::visit_expressions(q, |e| {
        if needs_engine(e) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// Whether a FROM item's name is a keyword PostgreSQL reads as a function
/// call (`FROM current_user`), not a table.
fn keyword_function(name: &ast::ObjectName) -> bool {
    let parts: Vec<(String, bool)> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(|i| (i.value.clone(), i.quote_style.is_some()))
                .unwrap_or_default()
        })
        .collect();
    from_functions::is_keyword_function(&parts)
}

/// Whether a query reads pg_catalog or information_schema, calls a
/// catalog function or casts to a catalog type: the fast path knows none.
fn reads_system(q: &ast::Query) -> bool {
    let folded = |i: &ast::Ident| {
        if i.quote_style.is_some() {
            i.value.clone()
        } else {
            i.value.to_lowercase()
        }
    };
    let parts = |n: &ast::ObjectName| -> Vec<String> {
        n.0.iter()
            .map(|p| p.as_ident().map(folded).unwrap_or_default())
            .collect()
    };
    let relation = ast::visit_relations(q, |name| {
        let system = match parts(name).as_slice() {
            [name] => system::is_system_relation(None, name),
            [schema, name] => system::is_system_relation(Some(schema), name),
            _ => false,
        };
        if system {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if relation.is_break() {
        return true;
    }
    let catalog_type = |dt: &ast::DataType| match dt {
        ast::DataType::Regclass => true,
        ast::DataType::Custom(name, _) => matches!(
            parts(name).last().map(String::as_str),
            Some("regclass" | "regtype" | "oid" | "regproc" | "regnamespace" | "regrole" | "name")
        ),
        _ => false,
    };
    // Sequence functions are the fast path's alone (with their
    // `'name'::regclass` arguments).
    let sequences = ast::visit_expressions(q, |e| match e {
        ast::Expr::Function(f)
            if parts(&f.name).last().is_some_and(
                |n| matches!(Func::named(n), Some(Func::Seq(s)) if s != SeqFunc::SerialSequence),
            ) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    if sequences.is_break() {
        return false;
    }
    ast::visit_expressions(q, |e| {
        let system = match e {
            ast::Expr::Function(f) => match parts(&f.name).as_slice() {
                // set_config changes the session, which only the fast
                // path can do (pg_dump's scripts call it qualified).
                [schema, name] if schema == "pg_catalog" => {
                    !matches!(Func::named(name), Some(Func::SetConfig))
                }
                [name] => system::is_system_function(name) && Func::named(name).is_none(),
                _ => false,
            },
            ast::Expr::Cast { data_type, .. } => catalog_type(data_type),
            ast::Expr::BinaryOp {
                op: ast::BinaryOperator::PGCustomBinaryOperator(_),
                ..
            } => true,
            _ => false,
        };
        if system {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// Aggregates the fast path does not compute (it counts, nothing else).
pub(crate) const AGGREGATES: &[&str] = &[
    "sum",
    "avg",
    "min",
    "max",
    "string_agg",
    "array_agg",
    "bool_and",
    "bool_or",
    "every",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "bit_and",
    "bit_or",
    "first_value",
    "last_value",
];

fn needs_engine(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => true,
        ast::Expr::Function(f) => {
            let name = f.name.to_string().to_lowercase();
            let distinct = matches!(&f.args, ast::FunctionArguments::List(l)
                if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct));
            f.over.is_some()
                || f.filter.is_some()
                || AGGREGATES.contains(&name.as_str())
                || (name == "count" && distinct)
        }
        _ => false,
    }
}

/// How close to the end of its stack a recursive walk of a query (the
/// parser's, the rewrites' visitors, DataFusion's planner) may run before
/// it moves to a new segment, and that segment's size. The crates' own
/// red zone (128 KiB) is smaller than one frame of sqlparser's expression
/// visitor in an unoptimized build (139 KiB), which then overflowed a
/// worker's stack on a nested catalog query.
const RED_ZONE: usize = 512 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// A query planned by DataFusion, ready to bind and run any number of times.
#[derive(Debug)]
pub struct QueryPlan {
    logical: LogicalPlan,
    /// The plan optimized once, parameters still placeholders, for a
    /// query whose optimization does not depend on when it runs (no
    /// `now()`, `current_date`, ...; `optimized_once`); each execution
    /// binds it and plans only its physical form.
    optimized: Option<LogicalPlan>,
    /// The tables it reads (to re-plan after DDL).
    pub(crate) tables: Vec<Arc<TableDef>>,
    /// DataFusion's type for each `$n`, to bind the values as.
    params: Vec<Option<DataType>>,
    /// A query of the system catalog is planned again at each execution,
    /// over that execution's snapshot (`system`): this is what it plans.
    system: Option<df_ast::Statement>,
}

impl QueryPlan {
    /// Whether it reads the system catalog (and so needs a snapshot).
    pub(crate) fn reads_system(&self) -> bool {
        self.system.is_some()
    }
}

/// A query parsed by DataFusion's parser, with the tables it names.
pub(crate) struct Parsed {
    stmt: df_ast::Statement,
    /// The tables it reads (CTE names excluded), as keyclaim names them;
    /// system relations are not among them.
    pub tables: Vec<String>,
    /// Whether it reads system relations or calls catalog functions.
    pub system: bool,
}

/// The engine's shared setup: configuration and function registry, cloned
/// for each statement.
pub(crate) struct QueryEngine {
    state: SessionState,
}

impl QueryEngine {
    pub fn new() -> QueryEngine {
        recursive::set_minimum_stack_size(RED_ZONE);
        recursive::set_stack_allocation_size(STACK_SEGMENT);
        let mut config = SessionConfig::new()
            // One stream per scan: the machine is small and rows come
            // from the store in pages anyway.
            .with_target_partitions(1)
            .with_information_schema(false);
        let options = config.options_mut();
        options.sql_parser.dialect = Dialect::PostgreSQL;
        // 1.5 is a numeric, as in PostgreSQL, not a float8.
        options.sql_parser.parse_float_as_decimal = true;
        options.sql_parser.map_string_types_to_utf8view = false;
        // PostgreSQL sorts NULL above every value: last ascending.
        options.sql_parser.default_null_ordering = "nulls_max".into();
        options.execution.time_zone = Some("+00:00".into());
        let mut state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build();
        for udaf in aggregates::postgres_aggregates() {
            // Replaces DataFusion's own of the same name.
            let _ = state.register_udaf(udaf);
        }
        let series = datafusion::logical_expr::ScalarUDF::from(series::GenerateSeries::new());
        let _ = state.register_udf(Arc::new(series));
        let _ = state.register_udf(Arc::new(subqueries::first_row_limit_function()));
        // PostgreSQL's date/time field functions and JSON operators;
        // `date_part` and `date_trunc` replace DataFusion's own.
        let functions = casts::functions()
            .into_iter()
            .chain(dates::functions())
            .chain(json::functions())
            .chain(like::functions());
        for function in functions {
            let _ = state.register_udf(Arc::new(function));
        }
        // After DataFusion's type coercion, which adds casts of its own.
        state.add_analyzer_rule(Arc::new(rounding_casts::RoundingCasts));
        QueryEngine { state }
    }

    /// Parse a query's text with DataFusion's parser and apply the rules.
    pub fn parse(&self, text: &str) -> SqlResult<Parsed> {
        let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, text)
            .map_err(|e| SqlError::syntax(e.to_string()))?;
        let (1, Some(mut stmt)) = (stmts.len(), stmts.pop()) else {
            return Err(SqlError::internal("a query did not parse as one statement"));
        };
        let df_ast::Statement::Query(q) = &mut stmt else {
            return Err(SqlError::internal("a query did not parse as a query"));
        };
        rules::rewrite(q)?;
        let wrapped = DfStatement::Statement(Box::new(stmt.clone()));
        let (refs, _ctes) = datafusion::sql::resolve::resolve_table_references(&wrapped, true)
            .map_err(|e| errors::to_sql_error(e, None))?;
        let mut tables = Vec::new();
        let mut system = false;
        for r in refs {
            if r.catalog().is_none() && system::is_system_relation(r.schema(), r.table()) {
                system = true;
                continue;
            }
            let name = match (r.catalog(), r.schema()) {
                (None, None | Some("public")) => r.table().to_string(),
                _ => {
                    return Err(SqlError::unsupported(
                        format!("schema-qualified name {r} is not supported"),
                        "keyclaim keeps every table in schema public",
                    ))
                }
            };
            if !tables.contains(&name) {
                tables.push(name);
            }
        }
        if !system {
            system = df_ast::visit_expressions(&stmt, |e| match e {
                df_ast::Expr::Function(f)
                    if system::is_system_function(&f.name.to_string().to_lowercase()) =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            })
            .is_break();
        }
        Ok(Parsed {
            stmt,
            tables,
            system,
        })
    }

    /// Plan a parsed query over `defs` (its tables); the result columns
    /// and parameter types come out with it. `hints` are the client's
    /// parameter types. A query of the system catalog is planned over the
    /// system relations' shape only: each execution plans it again.
    pub async fn plan(
        &self,
        parsed: Parsed,
        defs: Vec<Arc<TableDef>>,
        hints: &[Option<SqlType>],
        src: &Source<'_>,
    ) -> SqlResult<(QueryPlan, Vec<Column>, Vec<SqlType>)> {
        let mut parsed = parsed;
        declared::declare(&mut parsed.stmt, hints);
        let system = parsed.system.then(|| parsed.stmt.clone());
        let snap = parsed.system.then(|| Arc::new(Snapshot::for_planning()));
        let logical = self
            .logical(parsed.stmt, &defs, snap.as_ref(), Some(src))
            .await?;
        // The catalog's own columns are typed as keyclaim shows them, not
        // always as PostgreSQL's; its queries are not checked.
        if system.is_none() {
            comparisons::check(&logical, Some(src))?;
        }
        let columns = logical
            .schema()
            .fields()
            .iter()
            .zip(origins::of(&logical))
            .map(|(f, origin)| {
                let name = rules::client_name(f.name());
                Ok(Column::computed(name, types::sql_type(f)?).from_origin(origin))
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let mut found = logical
            .get_parameter_types()
            .map_err(|e| errors::to_sql_error(e, Some(src)))?;
        let optimized = match system {
            None => self.optimized_once(&logical),
            Some(_) => None,
        };
        // The optimized plan too: type coercion types LIMIT's and OFFSET's
        // parameters (bigint, as in PostgreSQL) with a cast.
        for (id, ty) in implied_parameters(&logical)
            .into_iter()
            .chain(optimized.iter().flat_map(implied_parameters))
        {
            let known = found.entry(id).or_insert(None);
            if known.is_none() {
                *known = Some(ty);
            }
        }
        let count = found
            .keys()
            .filter_map(|k| k.trim_start_matches('$').parse::<usize>().ok())
            .max()
            .unwrap_or(0)
            .max(hints.len());
        let params: Vec<Option<DataType>> = (1..=count)
            .map(|n| found.get(&format!("${n}")).cloned().flatten())
            .collect();
        let param_types = params
            .iter()
            .enumerate()
            .map(|(i, dt)| {
                hints
                    .get(i)
                    .cloned()
                    .flatten()
                    .or_else(|| dt.as_ref().and_then(types::sql_type_of))
                    .unwrap_or(SqlType::Text)
            })
            .collect();
        Ok((
            QueryPlan {
                logical,
                optimized,
                tables: defs,
                params,
                system,
            },
            columns,
            param_types,
        ))
    }

    /// DataFusion's logical plan of a statement over keyclaim's tables
    /// `defs` and, with a snapshot, the system relations and functions.
    async fn logical(
        &self,
        stmt: df_ast::Statement,
        defs: &[Arc<TableDef>],
        snap: Option<&Arc<Snapshot>>,
        src: Option<&Source<'_>>,
    ) -> SqlResult<LogicalPlan> {
        let df_error = |e| errors::to_sql_error(e, None);
        let public = Arc::new(MemorySchemaProvider::new());
        for def in defs {
            public
                .register_table(def.name.clone(), relation(def))
                .map_err(df_error)?;
        }
        let mut state = self.state.clone();
        let schemas = match snap {
            Some(snap) => system::schemas(&mut state, public, snap).map_err(df_error)?,
            None => vec![("public", public as Arc<dyn SchemaProvider>)],
        };
        let catalog = Arc::new(MemoryCatalogProvider::new());
        for (name, schema) in schemas {
            catalog.register_schema(name, schema).map_err(df_error)?;
        }
        let catalogs = Arc::new(MemoryCatalogProviderList::new());
        catalogs.register_catalog("datafusion".into(), catalog);
        let state = SessionStateBuilder::new_from_existing(state)
            .with_catalog_list(catalogs)
            .build();
        let planning = state.statement_to_plan(DfStatement::Statement(Box::new(stmt)));
        AssertUnwindSafe(planning)
            .catch_unwind()
            .await
            .map_err(|_| panicked())?
            .map_err(|e| errors::to_sql_error(e, src))
    }

    /// Run a planned query in the statement's context: its rows stream as
    /// the client takes them. `snap` is what a query of the system catalog
    /// sees in this execution.
    pub(crate) async fn run(
        &self,
        cx: &StmtCtx<'_>,
        plan: &QueryPlan,
        snap: Option<Arc<Snapshot>>,
        columns: Arc<Vec<Column>>,
        param_types: &[SqlType],
    ) -> SqlResult<Outcome> {
        let mut state = self.state.clone();
        state.config_mut().set_extension(Arc::new(ScanCtx {
            store: cx.store.clone(),
            reads: cx.reads.clone(),
            env: cx.env.clone(),
            page: cx.scan_page,
        }));
        let df_error = |e| errors::to_sql_error(e, None);
        let logical = match (&plan.system, &snap) {
            (Some(stmt), Some(_)) => {
                Box::pin(self.logical(stmt.clone(), &plan.tables, snap.as_ref(), None)).await?
            }
            // The prepared plan's functions read an empty snapshot.
            (Some(_), None) => {
                return Err(SqlError::internal(
                    "a system query ran without a catalog snapshot",
                ))
            }
            (None, _) => plan.logical.clone(),
        };
        let bound = |logical: LogicalPlan| match cx.params.is_empty() {
            true => Ok(logical),
            false => {
                let values = bind(&cx.params, param_types, &plan.params)?;
                logical
                    .with_param_values(values)
                    .and_then(fold_limit_casts)
                    .map_err(df_error)
            }
        };
        // A system query has no plan optimized once (`plan`).
        let (logical, optimized) = match &plan.optimized {
            Some(optimized) => (logical, Some(bound(optimized.clone())?)),
            None => (bound(logical)?, None),
        };
        let planning = async {
            match &optimized {
                Some(optimized) => {
                    let planner = state.query_planner().clone();
                    planner.create_physical_plan(optimized, &state).await
                }
                None => {
                    // now() and current_date are simplified to this
                    // execution's start time, which DataFusion marks only
                    // when asked to.
                    state.mark_start_execution();
                    state.create_physical_plan(&logical).await
                }
            }
        };
        let physical = AssertUnwindSafe(planning)
            .catch_unwind()
            .await
            .map_err(|_| panicked())?
            .map_err(df_error)?;
        let batches = execute_stream(physical, state.task_ctx()).map_err(df_error)?;
        // Each column's type, and whether it is a vector sent as its text.
        let vectors = logical
            .schema()
            .fields()
            .iter()
            .map(|f| types::is_vector(f));
        let types: Arc<Vec<(SqlType, bool)>> =
            Arc::new(columns.iter().map(|c| c.ty.clone()).zip(vectors).collect());
        let rows = batches
            .map(move |batch| {
                let rows: Vec<SqlResult<Vec<Value>>> = match batch {
                    Ok(batch) => (0..batch.num_rows())
                        .map(|r| {
                            batch
                                .columns()
                                .iter()
                                .zip(types.iter())
                                .map(|(array, (ty, vector))| {
                                    let s =
                                        ScalarValue::try_from_array(array, r).map_err(df_error)?;
                                    if *vector {
                                        types::vector_text(s)
                                    } else {
                                        types::from_scalar(s, ty)
                                    }
                                })
                                .collect()
                        })
                        .collect(),
                    Err(e) => vec![Err(df_error(e))],
                };
                stream::iter(rows)
            })
            .flatten();
        // A panic ends the stream with this statement's error.
        let rows = AssertUnwindSafe(rows)
            .catch_unwind()
            .map(|r| r.unwrap_or_else(|_| Err(panicked())));
        Ok(Outcome::Rows {
            columns,
            rows: rows.boxed(),
            tag: "SELECT".into(),
        })
    }
}

impl QueryEngine {
    /// `logical` analyzed and optimized now, to be bound and run any
    /// number of times; None where that would not give each execution the
    /// plan it would make itself: a function whose value depends on the
    /// execution (`now()`, `current_date`, which the optimizer folds to
    /// the execution's start) or an optimization that fails here (it
    /// fails again, with its error, when run).
    fn optimized_once(&self, logical: &LogicalPlan) -> Option<LogicalPlan> {
        if !all_functions_immutable(logical) {
            return None;
        }
        self.state.optimize(logical).ok()
    }
}

/// Whether every scalar function the plan calls (subqueries included)
/// gives the same answer for the same arguments at any time.
fn all_functions_immutable(plan: &LogicalPlan) -> bool {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{Expr, Volatility};
    let mut immutable = true;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e {
                    if f.func.signature().volatility != Volatility::Immutable {
                        immutable = false;
                        return Ok(TreeNodeRecursion::Stop);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    immutable
}

/// A relation of keyclaim's as DataFusion reads it: a table, or a sequence
/// (its one row of counter state).
fn relation(def: &Arc<TableDef>) -> Arc<dyn TableProvider> {
    match &def.sequence {
        Some(seq) => Arc::new(sequence_table::SequenceTable::new(seq.clone())),
        None => Arc::new(Table::new(def.clone())),
    }
}

/// The types of parameters DataFusion leaves untyped where PostgreSQL
/// does not: one under a cast takes the cast's type
/// (`generate_series(1, $1::integer)`), and in `x = ANY($n)` (or
/// `x <> ALL($n)`), planned as `array_has($n, x)`, `$n` is an array of x's
/// type, so a client learns to send an array.
fn implied_parameters(plan: &LogicalPlan) -> Vec<(String, DataType)> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{expr::Placeholder, Cast, Expr, ExprSchemable};
    let mut out = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        let inputs = node.inputs();
        node.apply_expressions(|e| {
            e.apply(|e| {
                match e {
                    Expr::Cast(Cast { expr, field }) => {
                        if let Expr::Placeholder(Placeholder { id, .. }) = expr.as_ref() {
                            out.push((id.clone(), field.data_type().clone()));
                        }
                    }
                    Expr::ScalarFunction(f) if f.name() == "array_has" => {
                        if let [Expr::Placeholder(Placeholder { id, .. }), needle] =
                            f.args.as_slice()
                        {
                            // The needle's type against the node's input (its
                            // own schema where it has none).
                            let elem = inputs
                                .iter()
                                .map(|i| i.schema())
                                .chain(inputs.is_empty().then(|| node.schema()))
                                .find_map(|schema| needle.get_type(schema.as_ref()).ok());
                            if let Some(elem) = elem {
                                let list =
                                    datafusion::arrow::datatypes::Field::new_list_field(elem, true);
                                out.push((id.clone(), DataType::List(Arc::new(list))));
                            }
                        }
                    }
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    out
}

/// LIMIT and OFFSET take only a literal. In a plan optimized before its
/// parameters were bound, type coercion cast their parameter
/// (`CAST($1 AS Int64)`), which binding leaves a cast literal: folded here.
fn fold_limit_casts(plan: LogicalPlan) -> datafusion::common::Result<LogicalPlan> {
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::{Cast, Expr};
    let fold = |e: &mut Option<Box<Expr>>| -> bool {
        let Some(Expr::Cast(Cast { expr, field })) = e.as_deref() else {
            return false;
        };
        let Expr::Literal(value, _) = expr.as_ref() else {
            return false;
        };
        match value.cast_to(field.data_type()) {
            Ok(folded) => {
                *e = Some(Box::new(Expr::Literal(folded, None)));
                true
            }
            Err(_) => false,
        }
    };
    plan.transform_up_with_subqueries(|node| match node {
        LogicalPlan::Limit(mut limit) => {
            let skip = fold(&mut limit.skip);
            let fetch = fold(&mut limit.fetch);
            let node = LogicalPlan::Limit(limit);
            Ok(match skip || fetch {
                true => Transformed::yes(node),
                false => Transformed::no(node),
            })
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

/// What a panic inside DataFusion becomes: an error for this statement,
/// never a dropped connection.
fn panicked() -> SqlError {
    SqlError::internal("the query engine failed on this query")
}

/// Bound parameters as DataFusion's scalars of the types it planned them as.
fn bind(
    params: &[Value],
    types: &[SqlType],
    planned: &[Option<DataType>],
) -> SqlResult<Vec<ScalarValue>> {
    params
        .iter()
        .zip(types)
        .enumerate()
        .map(|(i, (v, ty))| {
            let s = types::to_scalar(v, ty)?;
            match planned.get(i).cloned().flatten() {
                Some(dt) if dt != s.data_type() => s.cast_to(&dt).map_err(|_| {
                    SqlError::new(
                        sqlstate::DATATYPE_MISMATCH,
                        format!("parameter ${} does not fit its place in the query", i + 1),
                    )
                }),
                _ => Ok(s),
            }
        })
        .collect()
}

impl Default for QueryEngine {
    fn default() -> Self {
        QueryEngine::new()
    }
}
