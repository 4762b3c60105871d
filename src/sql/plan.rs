//! Plans: what a statement will do, decided before it runs, so that
//! parameters and result columns can be described at Parse time.

use std::sync::Arc;

use sqlparser::ast::{self, Statement};

use super::check::Checks;

use super::expr::{BinOp, Compiler, Expr, Func, Params, Scope};
use super::locking::{self, LockStrength, LockWait};
use super::overriding::Overriding;
use crate::catalog::{Identity, TableDef, UniqueDef};
use crate::engine::Column;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::SqlType;

// A plan is built once per prepared statement and shared behind an Arc, so
// the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Plan {
    /// SET / SHOW / BEGIN ...: handled by `session::utility`.
    Utility(crate::session::Utility),
    CreateTable(super::ddl::CreateTable),
    CreateIndex(super::ddl::CreateIndex),
    DropTable {
        names: Vec<String>,
        if_exists: bool,
    },
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    CreateSequence(super::ddl::CreateSequence),
    AlterTable(super::alter::AlterTable),
    Truncate(super::ddl::Truncate),
    DropSequence {
        names: Vec<String>,
        if_exists: bool,
    },
    Select(SelectPlan),
    /// DECLARE or FETCH (`engine::cursor`).
    Cursor(crate::engine::cursor::CursorPlan),
    /// A read the query engine plans and runs (`engine::query`).
    Query(crate::engine::query::QueryPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

/// How rows are found.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every primary-key column pinned by `=`: one row read.
    Key(Vec<Expr>),
    /// Every column of unique constraint `n` pinned: one claim read, then the row.
    Unique(usize, Vec<Expr>),
    /// A single-column primary key in an `IN` list of constants or `= ANY`
    /// of a constant array: one row read per distinct key (an ORM's batch
    /// load), a few at a time.
    KeyList(Keys),
    /// A single-column unique key in such a list: a claim read and a row
    /// read per distinct key.
    UniqueList(usize, Keys),
    /// Every column of plain index `n` pinned: its entries under the key,
    /// page by page, and a row read per entry (`claims::index`).
    Index(usize, Vec<Expr>),
    /// A single-column plain index in an `IN` list or `= ANY`: the same
    /// for each distinct key.
    IndexList(usize, Keys),
    /// Anything else: a paged scan.
    Scan,
}

/// The keys of a key list, each evaluated without a row.
#[derive(Debug, Clone)]
pub enum Keys {
    /// `key IN (a, b, $1)`: each item is a key.
    Each(Vec<Expr>),
    /// `key = ANY ($1)`, `key = ANY ('{1,2}'::int[])`: each element of
    /// the array is a key.
    Elements(Expr),
}

impl Access {
    /// At most one row, read within the statement.
    pub fn is_point(&self) -> bool {
        matches!(self, Access::Key(_) | Access::Unique(..))
    }
}

#[derive(Debug, Clone)]
pub struct Source {
    pub table: Arc<TableDef>,
    pub access: Access,
    pub filter: Option<Expr>,
}

#[derive(Debug, Clone)]
pub enum Aggregate {
    CountStar,
    Count(Expr),
}

#[derive(Debug, Clone)]
pub enum Output {
    Rows(Vec<Expr>),
    Aggregates(Vec<Aggregate>),
}

#[derive(Debug, Clone)]
pub struct SortKey {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Debug)]
pub struct SelectPlan {
    pub source: Option<Source>,
    pub output: Output,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// `SELECT pg_sleep(n)`: sleep (cancellable) before answering.
    pub sleep: Option<Expr>,
    /// `SELECT set_config(name, value, is_local)`.
    pub set_config: Option<(Expr, Expr, Expr)>,
    /// `FOR UPDATE` and the like: lock the rows it returns.
    pub lock: Option<RowLock>,
    /// Items that are advisory lock calls (`SELECT pg_advisory_lock(1)`),
    /// by position; the engine runs them in order (no FROM then).
    pub advisory: Vec<usize>,
    /// `SELECT keyclaim.add_count_limit(...)` (or drop): the call and its
    /// arguments, the one item of a SELECT without FROM.
    pub count_limit: Option<(crate::sql::expr::CountLimitOp, Vec<Expr>)>,
}

/// The row lock a SELECT takes on the rows it returns: its clauses
/// combined as PostgreSQL combines them (the strongest strength, and NOWAIT
/// over SKIP LOCKED over waiting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLock {
    pub strength: LockStrength,
    pub wait: LockWait,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Pkey,
    Unique(usize),
}

#[derive(Debug)]
pub enum ConflictAction {
    Nothing,
    Update {
        sets: Vec<(usize, Expr)>,
        filter: Option<Expr>,
    },
}

#[derive(Debug)]
pub struct OnConflict {
    /// None: any constraint (only with DO NOTHING).
    pub targets: Option<Vec<Target>>,
    pub action: ConflictAction,
}

/// A query whose rows a write takes: the rows of `INSERT ... SELECT`, or
/// the rows an UPDATE or DELETE acts on when only a query can find them
/// (`FROM`, `USING`, subqueries). Planned as any SELECT is (the fast path
/// or the query engine), and run to the end before the write begins, so
/// that the write never sees its own rows.
#[derive(Debug)]
pub struct RowQuery {
    pub plan: Arc<Plan>,
    pub columns: Arc<Vec<Column>>,
}

/// Where an INSERT's rows come from.
#[derive(Debug)]
pub enum InsertRows {
    /// `VALUES` lists: one entry per table column for each row, None
    /// meaning DEFAULT.
    Values(Vec<Vec<Option<Expr>>>),
    /// `INSERT ... SELECT`: each row of the query gives the columns
    /// `targets`, in order; the others take their defaults.
    Query {
        query: RowQuery,
        targets: Vec<usize>,
    },
}

/// The rows of an UPDATE or DELETE found by a query (`engine::found`):
/// each query row holds the target's primary key, then, for an UPDATE,
/// the new values of columns `computed`, in order.
#[derive(Debug)]
pub struct FoundBy {
    pub query: RowQuery,
    pub computed: Vec<usize>,
}

#[derive(Debug)]
pub struct InsertPlan {
    pub table: Arc<TableDef>,
    pub rows: InsertRows,
    pub defaults: Vec<Option<Expr>>,
    pub checks: Checks,
    pub on_conflict: Option<OnConflict>,
    pub returning: Option<Vec<Expr>>,
}

#[derive(Debug)]
pub struct UpdatePlan {
    pub source: Source,
    pub sets: Vec<(usize, Expr)>,
    pub checks: Checks,
    pub returning: Option<Vec<Expr>>,
    /// Rows found by a query instead of by `source` (whose filter is then
    /// empty); the sets it computes read them as `Expr::Excluded`.
    pub found_by: Option<FoundBy>,
}

#[derive(Debug)]
pub struct DeletePlan {
    pub source: Source,
    pub returning: Option<Vec<Expr>>,
    /// Rows found by a query instead of by `source`.
    pub found_by: Option<FoundBy>,
}

impl Plan {
    /// The statement's kind, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Plan::Utility(_) => "session",
            Plan::Select(_) | Plan::Query(_) | Plan::Cursor(_) => "select",
            Plan::Insert(_) => "insert",
            Plan::Update(_) => "update",
            Plan::Delete(_) => "delete",
            Plan::CreateTable(_)
            | Plan::CreateIndex(_)
            | Plan::DropTable { .. }
            | Plan::DropIndex { .. }
            | Plan::CreateSequence(_)
            | Plan::DropSequence { .. }
            | Plan::AlterTable(_)
            | Plan::Truncate(_) => "ddl",
        }
    }

    /// Whether it runs on the single-table path alone: no query engine
    /// plan reads its rows or finds the rows it writes.
    pub fn single_table(&self) -> bool {
        match self {
            Plan::Select(_) => true,
            Plan::Insert(i) => matches!(i.rows, InsertRows::Values(_)),
            Plan::Update(u) => u.found_by.is_none(),
            Plan::Delete(d) => d.found_by.is_none(),
            _ => false,
        }
    }

    /// Whether it may write more than one row (and so runs as a
    /// transaction of its own outside a block).
    pub fn may_write_many(&self) -> bool {
        if self.checks_foreign_keys() {
            // A row and the parent rows it locks, or the referencing rows
            // its removed key acts on (`engine::foreign_keys`).
            return true;
        }
        match self {
            Plan::Insert(i) => match &i.rows {
                InsertRows::Values(rows) => rows.len() > 1,
                InsertRows::Query { .. } => true,
            },
            Plan::Update(u) => !u.source.access.is_point() || u.found_by.is_some(),
            Plan::Delete(d) => !d.source.access.is_point() || d.found_by.is_some(),
            // A table and the sequences its serial columns own appear
            // together; so do a table and the back-pointers of its
            // foreign keys on the tables they reference.
            Plan::CreateTable(c) => !c.owned.is_empty() || !c.foreign_keys.is_empty(),
            // Checked for foreign keys once its drop is pending, and
            // taken back whole if one still references it.
            Plan::DropTable { .. } => true,
            // Its tables are emptied together or not at all.
            Plan::Truncate(_) => true,
            // The foreign keys that reference the table are renumbered
            // with it, and a serial column's sequence goes with it.
            // A rename moves the definition between two names, and the
            // foreign keys and sequences that name it follow.
            Plan::AlterTable(a) => a.ops.iter().any(|op| {
                matches!(
                    op,
                    super::alter::AlterOp::DropColumn { .. }
                        | super::alter::AlterOp::Rename { .. }
                        | super::alter::AlterOp::RenameColumn { .. }
                        | super::alter::AlterOp::AddIdentity { .. }
                        | super::alter::AlterOp::DropIdentity { .. }
                )
            }),
            _ => false,
        }
    }

    /// Whether its writes may add a reference (a row of a table with
    /// foreign keys) or remove a referenced key (an UPDATE or DELETE of a
    /// table that others, perhaps, reference): those are checked at the
    /// end of the statement, or at COMMIT when deferred.
    pub fn checks_foreign_keys(&self) -> bool {
        let removes_keys = |t: &TableDef| !t.referenced_by.is_empty();
        match self {
            Plan::Insert(i) => {
                !i.table.foreign_keys.is_empty()
                    || (removes_keys(&i.table)
                        && matches!(
                            i.on_conflict.as_ref().map(|oc| &oc.action),
                            Some(ConflictAction::Update { .. })
                        ))
            }
            Plan::Update(u) => {
                let set: Vec<usize> = u.sets.iter().map(|(c, _)| *c).collect();
                u.source.table.sets_key_columns(&set)
            }
            Plan::Delete(d) => removes_keys(&d.source.table),
            _ => false,
        }
    }

    /// Whether it locks the rows it reads (SELECT ... FOR UPDATE): it then
    /// writes, inside a block, and a READ ONLY block refuses it.
    pub fn locks_rows(&self) -> bool {
        matches!(self, Plan::Select(s) if s.lock.is_some())
    }

    /// The command word PostgreSQL names the statement by in errors.
    pub fn command_word(&self) -> &'static str {
        match self {
            Plan::Utility(_) => "SET",
            Plan::Select(s) => match s.lock.map(|l| l.strength) {
                None => "SELECT",
                Some(LockStrength::Update) => "SELECT FOR UPDATE",
                Some(LockStrength::NoKeyUpdate) => "SELECT FOR NO KEY UPDATE",
                Some(LockStrength::Share) => "SELECT FOR SHARE",
                Some(LockStrength::KeyShare) => "SELECT FOR KEY SHARE",
            },
            Plan::Query(_) => "SELECT",
            Plan::Cursor(c) => c.command_word(),
            Plan::Insert(_) => "INSERT",
            Plan::Update(_) => "UPDATE",
            Plan::Delete(_) => "DELETE",
            Plan::CreateTable(_) => "CREATE TABLE",
            Plan::CreateIndex(_) => "CREATE INDEX",
            Plan::DropTable { .. } => "DROP TABLE",
            Plan::DropIndex { .. } => "DROP INDEX",
            Plan::CreateSequence(_) => "CREATE SEQUENCE",
            Plan::AlterTable(a) => a.command_word(),
            Plan::Truncate(_) => "TRUNCATE TABLE",
            Plan::DropSequence { .. } => "DROP SEQUENCE",
        }
    }

    /// Whether a failed transaction block still accepts it.
    pub fn admission(&self) -> crate::txn::Admission {
        match self {
            Plan::Utility(u) => u.admission(),
            _ => crate::txn::Admission::Ordinary,
        }
    }

    /// The tables this plan was compiled against (to detect a stale plan after DDL).
    pub fn tables(&self) -> Vec<&Arc<TableDef>> {
        match self {
            Plan::Select(s) => s.source.iter().map(|s| &s.table).collect(),
            Plan::Query(q) => q.tables.iter().collect(),
            Plan::Cursor(crate::engine::cursor::CursorPlan::Declare { query, .. }) => {
                query.plan.tables()
            }
            Plan::Insert(i) => {
                let mut tables = vec![&i.table];
                if let InsertRows::Query { query, .. } = &i.rows {
                    tables.extend(query.plan.tables());
                }
                tables
            }
            Plan::Update(u) => std::iter::once(&u.source.table)
                .chain(u.found_by.iter().flat_map(|f| f.query.plan.tables()))
                .collect(),
            Plan::Delete(d) => std::iter::once(&d.source.table)
                .chain(d.found_by.iter().flat_map(|f| f.query.plan.tables()))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// PostgreSQL folds unquoted identifiers to lower case.
pub fn ident(id: &ast::Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

/// A table name, with an optional `public.` schema.
pub fn table_name(name: &ast::ObjectName) -> SqlResult<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(ident).unwrap_or_else(|| p.to_string()))
        .collect();
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == "public" => Ok(t.clone()),
        _ => Err(SqlError::unsupported(
            format!("schema-qualified name {name} is not supported"),
            "keyclaim keeps every table in schema public",
        )),
    }
}

/// Something that can look up tables while planning.
pub trait Tables {
    fn get(&self, name: &str) -> SqlResult<Arc<TableDef>>;
}

pub struct Planner<'a> {
    pub tables: &'a dyn Tables,
    pub params: Params,
}

pub struct Planned {
    pub plan: Plan,
    pub columns: Vec<Column>,
}

fn unsupported_statement() -> SqlError {
    SqlError::unsupported(
        "statement not supported",
        "keyclaim supports SELECT, INSERT, UPDATE, DELETE, CREATE TABLE, CREATE UNIQUE INDEX, DROP TABLE, DROP INDEX, SET, SHOW, BEGIN, COMMIT, ROLLBACK",
    )
}

impl Planner<'_> {
    pub fn plan(&mut self, stmt: &Statement) -> SqlResult<Planned> {
        let no_rows = |plan| Planned {
            plan,
            columns: Vec::new(),
        };
        match stmt {
            Statement::Query(q) => self.select(q),
            Statement::Insert(i) => self.insert(i, None),
            Statement::Update(u) => self.update(u, None),
            Statement::Delete(d) => self.delete(d, None),
            Statement::CreateTable(ct) => {
                Ok(no_rows(Plan::CreateTable(super::ddl::create_table(ct)?)))
            }
            Statement::CreateIndex(ci) => {
                Ok(no_rows(Plan::CreateIndex(super::ddl::create_index(ci)?)))
            }
            Statement::AlterTable(at) => {
                Ok(no_rows(Plan::AlterTable(super::alter::alter_table(at)?)))
            }
            Statement::AlterIndex {
                name,
                operation: ast::AlterIndexOperation::RenameIndex { index_name },
            } => Ok(no_rows(Plan::AlterTable(super::alter::rename_index(
                name, index_name,
            )?))),
            Statement::Comment {
                object_type,
                object_name,
                comment,
                if_exists: false,
            } => Ok(no_rows(Plan::AlterTable(super::alter::comment(
                object_type,
                object_name,
                comment,
            )?))),
            Statement::CreateSequence {
                temporary: false,
                if_not_exists,
                name,
                data_type,
                sequence_options,
                owned_by,
            } => Ok(no_rows(Plan::CreateSequence(super::ddl::create_sequence(
                name,
                data_type.as_ref(),
                sequence_options,
                owned_by.as_ref(),
                *if_not_exists,
            )?))),
            Statement::Truncate(t) => Ok(no_rows(Plan::Truncate(super::ddl::truncate(t)?))),
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => {
                let names = names
                    .iter()
                    .map(table_name)
                    .collect::<SqlResult<Vec<_>>>()?;
                let if_exists = *if_exists;
                match object_type {
                    ast::ObjectType::Table => Ok(no_rows(Plan::DropTable { names, if_exists })),
                    ast::ObjectType::Index => Ok(no_rows(Plan::DropIndex { names, if_exists })),
                    ast::ObjectType::Sequence => {
                        Ok(no_rows(Plan::DropSequence { names, if_exists }))
                    }
                    _ => Err(unsupported_statement()),
                }
            }
            _ => Err(unsupported_statement()),
        }
    }

    /// Plan a write whose rows `query` gives or finds (`engine::found`
    /// planned it from the statement).
    pub fn plan_found(&mut self, stmt: &Statement, query: RowQuery) -> SqlResult<Planned> {
        match stmt {
            Statement::Insert(i) => self.insert(i, Some(query)),
            Statement::Update(u) => self.update(u, Some(query)),
            Statement::Delete(d) => self.delete(d, Some(query)),
            _ => Err(SqlError::internal("only a write takes rows from a query")),
        }
    }

    fn compiler<'s>(
        &'s mut self,
        table: Option<&'s TableDef>,
        qualifier: Option<String>,
        excluded: bool,
    ) -> Compiler<'s> {
        Compiler {
            scope: Scope {
                table,
                qualifier,
                excluded,
            },
            params: &mut self.params,
        }
    }

    fn select(&mut self, q: &ast::Query) -> SqlResult<Planned> {
        if q.with.is_some() {
            return Err(SqlError::unsupported(
                "WITH is not supported",
                "use a single-table SELECT",
            ));
        }
        // What PostgreSQL refuses to lock, it refuses with its own words.
        let lock_refused = |with: &str| {
            q.locks.first().map(|first| {
                let what = locking::clause(first).strength.clause();
                SqlError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("{what} is not allowed with {with}"),
                )
            })
        };
        let select = match q.body.as_ref() {
            ast::SetExpr::Select(s) => s,
            body => {
                if let ast::SetExpr::SetOperation { .. } = body {
                    if let Some(e) = lock_refused("UNION/INTERSECT/EXCEPT") {
                        return Err(e);
                    }
                }
                return Err(SqlError::unsupported(
                    "this form of query is not supported",
                    "keyclaim runs single-table SELECT ... FROM t WHERE ... ORDER BY ... LIMIT ...",
                ));
            }
        };
        let grouped =
            !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
        if select.distinct.is_some() || select.having.is_some() || grouped {
            let with = if select.distinct.is_some() {
                "DISTINCT clause"
            } else if grouped {
                "GROUP BY clause"
            } else {
                "HAVING clause"
            };
            return Err(lock_refused(with).unwrap_or_else(|| {
                SqlError::unsupported(
                    "DISTINCT, GROUP BY and HAVING are not supported",
                    "keyclaim supports count(*) over a filtered table; aggregate in the application",
                )
            }));
        }
        let joined = || {
            match q.locks.first() {
            Some(first) => SqlError::unsupported(
                format!(
                    "{} with joins or subqueries is not supported",
                    locking::clause(first).strength.clause()
                ),
                "lock each table's rows with a single-table SELECT ... FOR UPDATE, and join in the application",
            ),
            None => join_unsupported(),
        }
        };
        let (table, qualifier) = match select.from.as_slice() {
            [] => (None, None),
            [twj] if twj.joins.is_empty() => match &twj.relation {
                ast::TableFactor::Table { name, alias, .. } => {
                    let t = table_name(name)?;
                    let def = self.tables.get(&t)?;
                    let q = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(t);
                    (Some(def), Some(q))
                }
                _ => return Err(joined()),
            },
            _ => return Err(joined()),
        };
        let tdef = table.clone();
        let mut c = self.compiler(tdef.as_deref(), qualifier.clone(), false);
        let filter = match &select.selection {
            Some(e) => Some(c.compile(e)?),
            None => None,
        };

        // Projection.
        let mut exprs = Vec::new();
        let mut aggs = Vec::new();
        let mut columns = Vec::new();
        let mut sleep = None;
        let mut set_config = None;
        let mut advisory = Vec::new();
        let mut count_limit = None;
        for item in &select.projection {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    let t = tdef.as_deref().ok_or_else(|| {
                        SqlError::syntax("SELECT * with no tables specified is not valid")
                    })?;
                    all_columns(t, &mut exprs, &mut columns);
                }
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let alias = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => Some(ident(alias)),
                        _ => None,
                    };
                    if let Some(agg) = aggregate(e, &mut c)? {
                        columns.push(Column::computed(
                            alias.unwrap_or_else(|| "count".into()),
                            SqlType::Int8,
                        ));
                        aggs.push(agg);
                        continue;
                    }
                    let compiled = c.compile(e)?;
                    if let Expr::Func(Func::Advisory(a), _) = &compiled {
                        if tdef.is_some() {
                            return Err(SqlError::unsupported(
                                format!("{}() with FROM is not supported", a.name()),
                                format!("call it in a SELECT of its own: SELECT {}(...)", a.name()),
                            ));
                        }
                        advisory.push(exprs.len());
                    }
                    if let Expr::Func(Func::CountLimit(op), args) = &compiled {
                        if tdef.is_some() || select.projection.len() != 1 {
                            return Err(SqlError::unsupported(
                                format!(
                                    "{}() with FROM or other items is not supported",
                                    op.name()
                                ),
                                format!(
                                    "call it in a SELECT of its own: SELECT {}(...)",
                                    op.name()
                                ),
                            ));
                        }
                        count_limit = Some((*op, args.clone()));
                    }
                    if let Expr::Func(Func::PgSleep, args) = &compiled {
                        sleep = args.first().cloned();
                    }
                    if let Expr::Func(Func::SetConfig, args) = &compiled {
                        if args.len() == 3 {
                            set_config = Some((args[0].clone(), args[1].clone(), args[2].clone()));
                        }
                    }
                    let ty = match &compiled {
                        Expr::Func(Func::PgSleep, _) => SqlType::Text,
                        other => c.type_of(other).unwrap_or(SqlType::Text),
                    };
                    columns.push(
                        Column::computed(
                            alias.unwrap_or_else(|| column_name(e, tdef.as_deref())),
                            ty,
                        )
                        .from_origin(origin(&compiled, tdef.as_deref())),
                    );
                    exprs.push(compiled);
                }
                _ => {
                    return Err(SqlError::unsupported(
                        "select item not supported",
                        "list columns or expressions",
                    ))
                }
            }
        }
        if !aggs.is_empty() && !exprs.is_empty() {
            return Err(SqlError::new(
                sqlstate::GROUPING_ERROR,
                "column must appear in the GROUP BY clause or be used in an aggregate function",
            )
            .with_hint("keyclaim supports count(*) alone in a SELECT list"));
        }

        // ORDER BY over output positions, output names, or source expressions.
        let mut order_by = Vec::new();
        if let Some(ob) = &q.order_by {
            let ast::OrderByKind::Expressions(list) = &ob.kind else {
                return Err(SqlError::unsupported(
                    "ORDER BY ALL is not supported",
                    "name the columns",
                ));
            };
            for o in list {
                let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                let nulls_first = o.options.nulls_first.unwrap_or(desc);
                let expr = match &o.expr {
                    ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                        let n: usize = v.value.to_string().parse().unwrap_or(0);
                        exprs.get(n.wrapping_sub(1)).cloned().ok_or_else(|| {
                            SqlError::new(
                                sqlstate::INVALID_COLUMN_REFERENCE,
                                format!("ORDER BY position {n} is not in select list"),
                            )
                        })?
                    }
                    ast::Expr::Identifier(id)
                        if tdef
                            .as_ref()
                            .and_then(|t| t.column_index(&ident(id)))
                            .is_none() =>
                    {
                        let name = ident(id);
                        let pos = columns
                            .iter()
                            .position(|c| c.name == name)
                            .ok_or_else(|| SqlError::undefined_column(&name))?;
                        exprs
                            .get(pos)
                            .cloned()
                            .ok_or_else(|| SqlError::undefined_column(&name))?
                    }
                    other => c.compile(other)?,
                };
                order_by.push(SortKey {
                    expr,
                    desc,
                    nulls_first,
                });
            }
        }
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                let limit = match limit {
                    Some(e) => Some(bigint(&mut c, e)?),
                    None => None,
                };
                let offset = match offset {
                    Some(o) => Some(bigint(&mut c, &o.value)?),
                    None => None,
                };
                (limit, offset)
            }
            Some(ast::LimitClause::OffsetCommaLimit { .. }) => {
                return Err(SqlError::syntax("LIMIT #,# syntax is not supported"))
            }
        };
        let lock = row_lock(&q.locks, qualifier.as_deref(), !aggs.is_empty())?;
        let source = match table {
            Some(t) => Some(source(t, filter)),
            None => {
                if filter.is_some() {
                    return Err(SqlError::unsupported(
                        "WHERE without FROM is not supported",
                        "add FROM",
                    ));
                }
                None
            }
        };
        let output = if aggs.is_empty() {
            Output::Rows(exprs)
        } else {
            Output::Aggregates(aggs)
        };
        Ok(Planned {
            plan: Plan::Select(SelectPlan {
                source,
                output,
                order_by,
                limit,
                offset,
                sleep,
                set_config,
                lock,
                advisory,
                count_limit,
            }),
            columns,
        })
    }

    fn insert(&mut self, ins: &ast::Insert, query: Option<RowQuery>) -> SqlResult<Planned> {
        let name = match &ins.table {
            ast::TableObject::TableName(n) => table_name(n)?,
            _ => return Err(unsupported_statement()),
        };
        let table = self.tables.get(&name)?;
        let targets: Vec<usize> = if ins.columns.is_empty() {
            (0..table.visible().len()).collect()
        } else {
            let mut seen = Vec::new();
            for c in &ins.columns {
                let part = c.0.last().and_then(|p| p.as_ident());
                let col = part.map(ident).unwrap_or_default();
                let i = table.column_index(&col).ok_or_else(|| {
                    let e = SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!("column \"{col}\" of relation \"{name}\" does not exist"),
                    );
                    match part {
                        Some(p) => e.at(p.span.start),
                        None => e,
                    }
                })?;
                if seen.contains(&i) {
                    return Err(SqlError::new(
                        sqlstate::DUPLICATE_COLUMN,
                        format!("column \"{col}\" specified more than once"),
                    ));
                }
                seen.push(i);
            }
            seen
        };
        let t = table.clone();
        let overriding = super::overriding::of(ins);
        let rows = match query {
            Some(query) => {
                arity(ins, 0, query.columns.len(), targets.len())?;
                let targets = targets[..query.columns.len()].to_vec();
                if overriding == Some(Overriding::User)
                    && targets.iter().any(|&i| t.columns[i].identity.is_some())
                {
                    return Err(SqlError::unsupported(
                        "INSERT ... OVERRIDING USER VALUE with a query giving identity columns is not supported",
                        "leave the identity columns out of the column list",
                    ));
                }
                if let Some(&i) = targets.iter().find(|&&i| {
                    t.columns[i].identity == Some(Identity::Always)
                        && overriding != Some(Overriding::System)
                }) {
                    return Err(always_identity_insert(&t.columns[i].name));
                }
                InsertRows::Query { query, targets }
            }
            None => InsertRows::Values(self.values(ins, &t, &targets, overriding)?),
        };
        let defaults = compile_defaults(&t)?;
        let checks = Checks::compile(&t)?;
        let on_conflict = match &ins.on {
            None => None,
            Some(ast::OnInsert::OnConflict(oc)) => {
                let inferred_where = super::conflict_where::of(ins);
                Some(self.on_conflict(&t, oc, inferred_where)?)
            }
            Some(_) => return Err(unsupported_statement()),
        };
        let qualifier = Some(name.clone());
        let (returning, columns) = self.returning(&t, qualifier, ins.returning.as_deref())?;
        Ok(Planned {
            plan: Plan::Insert(InsertPlan {
                table,
                rows,
                defaults,
                checks,
                on_conflict,
                returning,
            }),
            columns,
        })
    }

    /// The rows of `INSERT ... VALUES` (or `DEFAULT VALUES`), compiled
    /// into the columns `targets` names.
    fn values(
        &mut self,
        ins: &ast::Insert,
        t: &Arc<TableDef>,
        targets: &[usize],
        overriding: Option<Overriding>,
    ) -> SqlResult<Vec<Vec<Option<Expr>>>> {
        let values: Vec<&[ast::Expr]> = match ins.source.as_deref().map(|q| q.body.as_ref()) {
            Some(ast::SetExpr::Values(v)) => v.rows.iter().map(|r| &r.content[..]).collect(),
            // INSERT INTO t DEFAULT VALUES: one row of defaults.
            None if ins.columns.is_empty() => vec![&[]],
            None => {
                return Err(SqlError::unsupported(
                    "INSERT without VALUES is not supported",
                    "use INSERT ... VALUES (...)",
                ))
            }
            // The engine plans every other source as a query.
            _ => {
                return Err(SqlError::internal(
                    "INSERT ... SELECT planned without its query",
                ))
            }
        };
        let qualifier = Some(t.name.clone());
        let mut rows = Vec::with_capacity(values.len());
        for (n, row) in values.iter().enumerate() {
            if !row.is_empty() {
                arity(ins, n, row.len(), targets.len())?;
            }
            let mut full: Vec<Option<Expr>> = vec![None; t.columns.len()];
            for (&i, e) in targets.iter().zip(row.iter()) {
                // OVERRIDING USER VALUE: an identity column takes its
                // sequence's value whatever is given.
                let ignored =
                    overriding == Some(Overriding::User) && t.columns[i].identity.is_some();
                if is_default_keyword(e) || ignored {
                    continue;
                }
                if t.columns[i].identity == Some(Identity::Always)
                    && overriding != Some(Overriding::System)
                {
                    return Err(always_identity_insert(&t.columns[i].name));
                }
                let mut c = self.compiler(Some(t), qualifier.clone(), false);
                let compiled = c.compile(e)?;
                let ty = t.columns[i].ty.clone();
                full[i] = Some(assign(&mut c, compiled, &ty)?);
            }
            rows.push(full);
        }
        Ok(rows)
    }

    fn on_conflict(
        &mut self,
        t: &Arc<TableDef>,
        oc: &ast::OnConflict,
        inferred_where: Option<&str>,
    ) -> SqlResult<OnConflict> {
        // The inference clause's WHERE: a partial index arbitrates when
        // it implies the index's predicate (and whole ones still do).
        let inferred_where = inferred_where.map(super::parse_expr).transpose()?;
        let arbitrates = |u: &UniqueDef| match (&u.predicate, &inferred_where) {
            (None, _) => true,
            (Some(p), Some(given)) => p.implied_by(t, given),
            (Some(_), None) => false,
        };
        let targets = match &oc.conflict_target {
            None => None,
            Some(ast::ConflictTarget::Columns(cols)) => {
                let mut idx = Vec::new();
                for c in cols {
                    idx.push(t.column(&ident(c))?);
                }
                idx.sort_unstable();
                let mut found = Vec::new();
                let mut pk = t.key_columns().to_vec();
                pk.sort_unstable();
                if pk == idx {
                    found.push(Target::Pkey);
                }
                for (n, u) in t.uniques.iter().enumerate().filter(|(_, u)| arbitrates(u)) {
                    let mut uc = u.columns.clone();
                    uc.sort_unstable();
                    if uc == idx {
                        found.push(Target::Unique(n));
                    }
                }
                if found.is_empty() {
                    return Err(no_matching_constraint());
                }
                Some(found)
            }
            Some(ast::ConflictTarget::OnConstraint(name)) => {
                let name = table_name(name)?;
                if t.row_id().is_none() && name == t.pkey_name {
                    Some(vec![Target::Pkey])
                } else if let Some(n) = t
                    .uniques
                    .iter()
                    .position(|u| u.name == name && u.is_whole())
                {
                    Some(vec![Target::Unique(n)])
                } else {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_OBJECT,
                        format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            t.name
                        ),
                    ));
                }
            }
        };
        let action = match &oc.action {
            ast::OnConflictAction::DoNothing => ConflictAction::Nothing,
            ast::OnConflictAction::DoUpdate(du) => {
                if targets.is_none() {
                    return Err(SqlError::syntax(
                        "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                    )
                    .with_hint("For example, ON CONFLICT (column_name)."));
                }
                let sets = self.assignments(t, &du.assignments, true)?;
                let filter = match &du.selection {
                    Some(e) => Some(
                        self.compiler(Some(t), Some(t.name.clone()), true)
                            .compile(e)?,
                    ),
                    None => None,
                };
                ConflictAction::Update { sets, filter }
            }
        };
        Ok(OnConflict { targets, action })
    }

    fn assignments(
        &mut self,
        t: &TableDef,
        list: &[ast::Assignment],
        excluded: bool,
    ) -> SqlResult<Vec<(usize, Expr)>> {
        let mut sets: Vec<(usize, Expr)> = Vec::new();
        for a in list {
            let i = assignment_target(t, a, &sets)?;
            let value = if is_default_keyword(&a.value) {
                self.default_of(t, i)?
            } else {
                self.compiler(Some(t), Some(t.name.clone()), excluded)
                    .compile(&a.value)?
            };
            let ty = t.columns[i].ty.clone();
            let mut c = self.compiler(Some(t), Some(t.name.clone()), excluded);
            sets.push((i, assign(&mut c, value, &ty)?));
        }
        Ok(sets)
    }

    /// The sets of an UPDATE whose rows a query finds: the query computes
    /// every value but DEFAULT (`computed_by_query`), which the row then
    /// carries as its EXCLUDED side.
    fn found_assignments(
        &mut self,
        t: &TableDef,
        list: &[ast::Assignment],
    ) -> SqlResult<(Sets, Vec<usize>)> {
        let mut sets: Vec<(usize, Expr)> = Vec::new();
        let mut computed = Vec::new();
        for a in list {
            let i = assignment_target(t, a, &sets)?;
            if computed_by_query(a) {
                sets.push((i, Expr::Excluded(i)));
                computed.push(i);
            } else {
                sets.push((i, self.default_of(t, i)?));
            }
        }
        Ok((sets, computed))
    }

    /// Column `i`'s default, compiled (NULL without one).
    fn default_of(&mut self, t: &TableDef, i: usize) -> SqlResult<Expr> {
        match &t.columns[i].default {
            Some(d) => self
                .compiler(Some(t), Some(t.name.clone()), false)
                .compile(&super::parse_expr(d)?),
            None => Ok(Expr::Literal(crate::types::Value::Null)),
        }
    }

    fn returning(
        &mut self,
        t: &TableDef,
        qualifier: Option<String>,
        items: Option<&[ast::SelectItem]>,
    ) -> SqlResult<(Option<Vec<Expr>>, Vec<Column>)> {
        let Some(items) = items else {
            return Ok((None, Vec::new()));
        };
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        let mut c = self.compiler(Some(t), qualifier, false);
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    all_columns(t, &mut exprs, &mut columns)
                }
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let compiled = c.compile(e)?;
                    let name = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                        _ => column_name(e, Some(t)),
                    };
                    columns.push(
                        Column::computed(name, c.type_of(&compiled).unwrap_or(SqlType::Text))
                            .from_origin(origin(&compiled, Some(t))),
                    );
                    exprs.push(compiled);
                }
                _ => {
                    return Err(SqlError::unsupported(
                        "RETURNING item not supported",
                        "list columns or *",
                    ))
                }
            }
        }
        Ok((Some(exprs), columns))
    }

    fn single_table(&mut self, twj: &ast::TableWithJoins) -> SqlResult<(Arc<TableDef>, String)> {
        if !twj.joins.is_empty() {
            return Err(join_unsupported());
        }
        match &twj.relation {
            ast::TableFactor::Table { name, alias, .. } => {
                let t = table_name(name)?;
                let def = self.tables.get(&t)?;
                let q = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(t);
                Ok((def, q))
            }
            _ => Err(join_unsupported()),
        }
    }

    fn update(&mut self, u: &ast::Update, query: Option<RowQuery>) -> SqlResult<Planned> {
        let (t, q) = self.single_table(&u.table)?;
        let (sets, filter, found_by) = match query {
            None => {
                if u.from.is_some() {
                    return Err(SqlError::internal(
                        "UPDATE ... FROM planned without its query",
                    ));
                }
                let sets = self.assignments(&t, &u.assignments, false)?;
                let filter = match &u.selection {
                    Some(e) => Some(self.compiler(Some(&t), Some(q.clone()), false).compile(e)?),
                    None => None,
                };
                (sets, filter, None)
            }
            Some(query) => {
                let (sets, computed) = self.found_assignments(&t, &u.assignments)?;
                (sets, None, Some(FoundBy { query, computed }))
            }
        };
        if u.from.is_some() {
            only_target_returned(u.returning.as_deref(), &q)?;
        }
        let (returning, columns) = self
            .returning(&t, Some(q), u.returning.as_deref())
            .map_err(|e| returning_beyond_target(e, u.from.is_some()))?;
        Ok(Planned {
            plan: Plan::Update(UpdatePlan {
                checks: Checks::compile(&t)?,
                source: source(t, filter),
                sets,
                returning,
                found_by,
            }),
            columns,
        })
    }

    fn delete(&mut self, d: &ast::Delete, query: Option<RowQuery>) -> SqlResult<Planned> {
        let from = match &d.from {
            ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
        };
        let [twj] = from.as_slice() else {
            return Err(join_unsupported());
        };
        let (t, q) = self.single_table(twj)?;
        let (filter, found_by) = match query {
            None => {
                if d.using.is_some() {
                    return Err(SqlError::internal(
                        "DELETE ... USING planned without its query",
                    ));
                }
                let filter = match &d.selection {
                    Some(e) => Some(self.compiler(Some(&t), Some(q.clone()), false).compile(e)?),
                    None => None,
                };
                (filter, None)
            }
            Some(query) => (
                None,
                Some(FoundBy {
                    query,
                    computed: Vec::new(),
                }),
            ),
        };
        if d.using.is_some() {
            only_target_returned(d.returning.as_deref(), &q)?;
        }
        let (returning, columns) = self
            .returning(&t, Some(q), d.returning.as_deref())
            .map_err(|e| returning_beyond_target(e, d.using.is_some()))?;
        Ok(Planned {
            plan: Plan::Delete(DeletePlan {
                source: source(t, filter),
                returning,
                found_by,
            }),
            columns,
        })
    }
}

/// RETURNING reads the written table's row only: one that names a table of
/// `FROM` / `USING` is refused as unsupported, not as PostgreSQL's error
/// for a table that is not there.
fn returning_beyond_target(e: SqlError, joined: bool) -> SqlError {
    if joined
        && matches!(
            e.code,
            sqlstate::UNDEFINED_TABLE | sqlstate::UNDEFINED_COLUMN
        )
    {
        returning_joined()
    } else {
        e
    }
}

/// With `FROM` / `USING`, a bare `*` in RETURNING lists the joined
/// tables' columns too, and `other.*` theirs: refused, as the written
/// table's row is all RETURNING reads.
fn only_target_returned(items: Option<&[ast::SelectItem]>, target: &str) -> SqlResult<()> {
    for item in items.into_iter().flatten() {
        let other = match item {
            ast::SelectItem::Wildcard(_) => true,
            ast::SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                _,
            ) => n.0.last().and_then(|p| p.as_ident()).map(ident).as_deref() != Some(target),
            _ => false,
        };
        if other {
            return Err(returning_joined());
        }
    }
    Ok(())
}

fn returning_joined() -> SqlError {
    SqlError::unsupported(
        "RETURNING columns of tables in FROM or USING is not supported",
        "return the written table's columns (t.* or by name), and read the others with a SELECT",
    )
}

/// An UPDATE's SET list: each column set, and its value.
type Sets = Vec<(usize, Expr)>;

/// The column an UPDATE assignment sets, checked as PostgreSQL checks
/// it: the column exists, is set once (`sets` holds those set before), and
/// a GENERATED ALWAYS identity takes only DEFAULT.
fn assignment_target(
    t: &TableDef,
    a: &ast::Assignment,
    sets: &[(usize, Expr)],
) -> SqlResult<usize> {
    let col = match &a.target {
        ast::AssignmentTarget::ColumnName(n) => {
            n.0.last()
                .and_then(|p| p.as_ident())
                .map(ident)
                .unwrap_or_default()
        }
        ast::AssignmentTarget::Tuple(_) => {
            return Err(SqlError::unsupported(
                "tuple assignment is not supported",
                "assign columns one by one",
            ))
        }
    };
    let i = t.column_index(&col).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{col}\" of relation \"{}\" does not exist", t.name),
        )
    })?;
    if sets.iter().any(|(j, _)| *j == i) {
        return Err(SqlError::syntax(format!(
            "multiple assignments to same column \"{col}\""
        )));
    }
    if t.columns[i].identity == Some(Identity::Always) && !is_default_keyword(&a.value) {
        return Err(always_identity(
            &col,
            format!("column \"{col}\" can only be updated to DEFAULT"),
        ));
    }
    Ok(i)
}

/// Whether an UPDATE whose rows a query finds has the query compute this
/// assignment's value (every one but `DEFAULT`, which is the table's).
pub fn computed_by_query(a: &ast::Assignment) -> bool {
    !is_default_keyword(&a.value)
}

/// Row `row` of an INSERT's source, of `exprs` items for `targets`
/// columns: more items than columns is an error; fewer is one too when the
/// columns were listed, while without a list the first columns take them
/// (the rest their defaults), as in PostgreSQL. Each error points where
/// PostgreSQL's does: at the first item, or column, left over.
fn arity(ins: &ast::Insert, row: usize, exprs: usize, targets: usize) -> SqlResult<()> {
    use sqlparser::ast::Spanned;
    if exprs > targets {
        let item = ins.source.as_deref().and_then(|q| match q.body.as_ref() {
            ast::SetExpr::Values(v) => v.rows.get(row)?.content.get(targets).map(|e| e.span()),
            ast::SetExpr::Select(s) => s.projection.get(targets).map(|i| i.span()),
            _ => None,
        });
        let e = SqlError::syntax("INSERT has more expressions than target columns");
        return Err(match item {
            Some(span) => e.at(span.start),
            None => e,
        });
    }
    if exprs < targets && !ins.columns.is_empty() {
        let e = SqlError::syntax("INSERT has more target columns than expressions");
        return Err(match ins.columns.get(exprs) {
            Some(c) => e.at(c.span().start),
            None => e,
        });
    }
    Ok(())
}

/// 428C9: an explicit value for a GENERATED ALWAYS identity column.
fn always_identity_insert(column: &str) -> SqlError {
    always_identity(
        column,
        format!("cannot insert a non-DEFAULT value into column \"{column}\""),
    )
    .with_hint("Use OVERRIDING SYSTEM VALUE to override.")
}

/// `*`: every column of the table, in order.
fn all_columns(t: &TableDef, exprs: &mut Vec<Expr>, columns: &mut Vec<Column>) {
    for i in 0..t.visible().len() {
        exprs.push(Expr::Column(i));
        columns.push(Column::of_table(t, i));
    }
}

/// The table column a result column is, when it is a plain reference to
/// one (RowDescription names it, as PostgreSQL's does).
fn origin(e: &Expr, t: Option<&TableDef>) -> Option<crate::engine::ColumnOrigin> {
    match (e, t) {
        (Expr::Column(i), Some(t)) => crate::engine::ColumnOrigin::of(t, *i),
        _ => None,
    }
}

/// The locking clauses of a SELECT from `from` (its table's name or alias;
/// None without FROM), checked as PostgreSQL checks them, clause by clause:
/// no aggregates, and `OF` naming the table by its unqualified name.
/// Without a table there is nothing to lock.
fn row_lock(
    clauses: &[ast::LockClause],
    from: Option<&str>,
    aggregates: bool,
) -> SqlResult<Option<RowLock>> {
    let mut lock: Option<RowLock> = None;
    for c in clauses.iter().map(locking::clause) {
        let what = c.strength.clause();
        if aggregates {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("{what} is not allowed with aggregate functions"),
            ));
        }
        if let Some(parts) = c.of {
            let at = parts
                .first()
                .and_then(|p| p.as_ident())
                .map(|i| i.span.start);
            let located = |e: SqlError| match at {
                Some(loc) => e.at(loc),
                None => e,
            };
            let [name] = parts else {
                return Err(located(SqlError::syntax(format!(
                    "{what} must specify unqualified relation names"
                ))));
            };
            let name = name
                .as_ident()
                .map(ident)
                .unwrap_or_else(|| name.to_string());
            if from != Some(name.as_str()) {
                return Err(located(SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("relation \"{name}\" in {what} clause not found in FROM clause"),
                )));
            }
        }
        lock = Some(match lock {
            None => RowLock {
                strength: c.strength,
                wait: c.wait,
            },
            Some(l) => RowLock {
                strength: l.strength.max(c.strength),
                wait: l.wait.max(c.wait),
            },
        });
    }
    Ok(lock.filter(|_| from.is_some()))
}

fn join_unsupported() -> SqlError {
    SqlError::unsupported(
        "joins and multi-table statements are not supported",
        "keyclaim runs single-table statements; join in the application",
    )
}

fn no_matching_constraint() -> SqlError {
    SqlError::new(
        sqlstate::INVALID_COLUMN_REFERENCE,
        "there is no unique or exclusion constraint matching the ON CONFLICT specification",
    )
}

/// 428C9: a GENERATED ALWAYS identity column given a value.
fn always_identity(column: &str, message: String) -> SqlError {
    SqlError::new("428C9", message).with_detail(format!(
        "Column \"{column}\" is an identity column defined as GENERATED ALWAYS."
    ))
}

pub fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// An expression assigned into a column of type `ty`: parameters take the
/// column's type, quoted literals go through the type's input function now
/// (so a bad one is reported where it stands, as PostgreSQL does); the value
/// is cast into the column at execution.
fn assign(c: &mut Compiler<'_>, e: Expr, ty: &SqlType) -> SqlResult<Expr> {
    Ok(match e {
        Expr::Param(n) => {
            c.params.note(n, ty);
            Expr::Param(n)
        }
        Expr::Unknown(s, loc) => {
            Expr::Literal(crate::types::Value::parse_text(ty, &s).map_err(|e| e.at(loc))?)
        }
        other => other,
    })
}

fn bigint(c: &mut Compiler<'_>, e: &ast::Expr) -> SqlResult<Expr> {
    let compiled = c.compile(e)?;
    assign(c, compiled, &SqlType::Int8)
}

fn aggregate(e: &ast::Expr, c: &mut Compiler<'_>) -> SqlResult<Option<Aggregate>> {
    let ast::Expr::Function(f) = e else {
        return Ok(None);
    };
    if !f.name.to_string().eq_ignore_ascii_case("count") {
        return Ok(None);
    }
    let ast::FunctionArguments::List(list) = &f.args else {
        return Ok(None);
    };
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)] => {
            Ok(Some(Aggregate::CountStar))
        }
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(inner))] => {
            Ok(Some(Aggregate::Count(c.compile(inner)?)))
        }
        _ => Ok(None),
    }
}

/// The output column name PostgreSQL gives an unaliased expression.
fn column_name(e: &ast::Expr, _t: Option<&TableDef>) -> String {
    match e {
        ast::Expr::Identifier(id) => ident(id),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident)
            .unwrap_or_else(|| "?column?".into()),
        ast::Expr::Cast {
            expr, data_type, ..
        } => match expr.as_ref() {
            ast::Expr::Identifier(_)
            | ast::Expr::CompoundIdentifier(_)
            | ast::Expr::Function(_)
            | ast::Expr::Array(_) => column_name(expr, _t),
            _ => cast_type_name(data_type),
        },
        ast::Expr::Nested(inner) => column_name(inner, _t),
        ast::Expr::Array(_) => "array".into(),
        _ => "?column?".into(),
    }
}

/// `SELECT 1::int` is named after the type's internal name (int4), and
/// `SELECT '{1}'::int[]` after its element type's.
fn cast_type_name(dt: &ast::DataType) -> String {
    match SqlType::from_ast(dt) {
        Ok(t) => match t.element().cloned().unwrap_or(t) {
            SqlType::Bool => "bool",
            SqlType::Int2 => "int2",
            SqlType::Int4 => "int4",
            SqlType::Int8 => "int8",
            SqlType::Float4 => "float4",
            SqlType::Float8 => "float8",
            SqlType::Numeric(_) => "numeric",
            SqlType::Text => "text",
            SqlType::Varchar(_) => "varchar",
            SqlType::Char(_) => "bpchar",
            SqlType::Bytea => "bytea",
            SqlType::Uuid => "uuid",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp",
            SqlType::TimestampTz => "timestamptz",
            SqlType::Json => "json",
            SqlType::Jsonb => "jsonb",
            SqlType::Void => "void",
            SqlType::Oid => "oid",
            SqlType::Array(_) => "array",
        }
        .into(),
        Err(_) => "?column?".into(),
    }
}

/// Compile every column's DEFAULT once per plan.
pub fn compile_defaults(t: &TableDef) -> SqlResult<Vec<Option<Expr>>> {
    let mut params = Params::default();
    t.columns
        .iter()
        .map(|col| match &col.default {
            None => Ok(None),
            Some(text) => {
                let mut c = Compiler {
                    scope: Scope {
                        table: None,
                        qualifier: None,
                        excluded: false,
                    },
                    params: &mut params,
                };
                Ok(Some(c.compile(&super::parse_expr(text)?)?))
            }
        })
        .collect()
}

/// Choose the access path: a pinned primary key, else a pinned unique key,
/// else a single-column primary or unique key in an `IN` list or `= ANY`
/// of an array, else the same of a built plain index, else a scan. The filter is kept whole: the access only
/// narrows which rows are read.
pub fn source(table: Arc<TableDef>, filter: Option<Expr>) -> Source {
    let mut pinned: Vec<Option<Expr>> = vec![None; table.columns.len()];
    let mut listed: Vec<Option<Keys>> = vec![None; table.columns.len()];
    if let Some(f) = &filter {
        pin(f, &mut pinned, &mut listed);
    }
    let take =
        |cols: &[usize]| -> Option<Vec<Expr>> { cols.iter().map(|&i| pinned[i].clone()).collect() };
    let list = |cols: &[usize]| match cols {
        [c] => listed[*c].clone(),
        _ => None,
    };
    let uniques = || {
        table
            .uniques
            .iter()
            .enumerate()
            .filter(|(_, u)| u.finds_rows())
    };
    let indexes = || table.indexes.iter().enumerate().filter(|(_, i)| i.usable());
    let key = table.key_columns();
    let access = if let Some(exprs) = take(&key) {
        Access::Key(exprs)
    } else if let Some((n, exprs)) = uniques().find_map(|(n, u)| take(&u.columns).map(|e| (n, e))) {
        Access::Unique(n, exprs)
    } else if let Some(items) = list(&key) {
        Access::KeyList(items)
    } else if let Some((n, items)) = uniques().find_map(|(n, u)| list(&u.columns).map(|i| (n, i))) {
        Access::UniqueList(n, items)
    } else if let Some((n, exprs)) = indexes().find_map(|(n, i)| take(&i.columns).map(|e| (n, e))) {
        Access::Index(n, exprs)
    } else if let Some((n, items)) = indexes().find_map(|(n, i)| list(&i.columns).map(|l| (n, l))) {
        Access::IndexList(n, items)
    } else {
        Access::Scan
    };
    Source {
        table,
        access,
        filter,
    }
}

/// The columns the top-level conjuncts of a filter pin to one constant
/// (`col = c`), or to a list of constants (`col IN (c1, c2)`, `col = ANY
/// (array)` of a constant array).
fn pin(e: &Expr, pinned: &mut [Option<Expr>], listed: &mut [Option<Keys>]) {
    match e {
        Expr::Binary(BinOp::And, l, r) => {
            pin(l, pinned, listed);
            pin(r, pinned, listed);
        }
        Expr::Binary(BinOp::Eq, l, r) => match (l.as_ref(), r.as_ref()) {
            (Expr::Column(i), v) | (v, Expr::Column(i)) if is_constant(v) => {
                pinned[*i] = Some(v.clone());
            }
            _ => {}
        },
        Expr::InList(target, items, false) => {
            if let Expr::Column(i) = target.as_ref() {
                if items.iter().all(is_constant) {
                    listed[*i] = Some(Keys::Each(items.clone()));
                }
            }
        }
        Expr::Quantified {
            left,
            op: BinOp::Eq,
            array,
            all: false,
        } => {
            if let Expr::Column(i) = left.as_ref() {
                if is_constant(array) {
                    listed[*i] = Some(Keys::Elements(array.as_ref().clone()));
                }
            }
        }
        _ => {}
    }
}

/// A value the statement fixes before it reads: no column of the row and
/// nothing volatile, so evaluating it once (to read that key) is what
/// evaluating it for every row would give. `lower($1)`, `'a' || $1`, `$1 +
/// 1`, `now()` qualify; `random()`-like and sequence functions do not. The
/// same test serves the array of `= ANY` (`$1::int[]`, `ARRAY[...]`). The
/// read row is still checked against the whole filter.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Literal(_) | Expr::Unknown(..) | Expr::Param(_) => true,
        Expr::Column(_) | Expr::Excluded(_) => false,
        Expr::Not(x) | Expr::Neg(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => is_constant(x),
        Expr::Binary(_, l, r) => is_constant(l) && is_constant(r),
        Expr::InList(x, items, _) => is_constant(x) && items.iter().all(is_constant),
        Expr::Between(x, lo, hi, _) => is_constant(x) && is_constant(lo) && is_constant(hi),
        Expr::Like { expr, pattern, .. } => is_constant(expr) && is_constant(pattern),
        Expr::Array(items, _) => items.iter().all(is_constant),
        Expr::Quantified { left, array, .. } => is_constant(left) && is_constant(array),
        Expr::Func(f, args) => !f.is_volatile() && args.iter().all(is_constant),
        Expr::Case {
            operand,
            arms,
            otherwise,
        } => {
            operand.as_deref().is_none_or(is_constant)
                && arms.iter().all(|(w, t)| is_constant(w) && is_constant(t))
                && otherwise.as_deref().is_none_or(is_constant)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    struct Fixed(HashMap<String, Arc<TableDef>>);

    impl Tables for Fixed {
        fn get(&self, name: &str) -> SqlResult<Arc<TableDef>> {
            self.0
                .get(name)
                .cloned()
                .ok_or_else(|| SqlError::undefined_table(name))
        }
    }

    fn tables() -> Fixed {
        let mut m = HashMap::new();
        for ddl in [
            "CREATE TABLE users (id integer PRIMARY KEY, email text UNIQUE, name text)",
            "CREATE TABLE m (org integer, member integer, seat integer, PRIMARY KEY (org, member), UNIQUE (org, seat))",
        ] {
            let stmt = crate::sql::parse(ddl).unwrap().remove(0);
            let Statement::CreateTable(ct) = stmt else { unreachable!() };
            let def = super::super::ddl::create_table(&ct).unwrap().def;
            m.insert(def.name.clone(), Arc::new(def));
        }
        Fixed(m)
    }

    fn access(sql: &str) -> Access {
        let t = tables();
        let mut p = Planner {
            tables: &t,
            params: Params::default(),
        };
        let stmt = crate::sql::parse(sql).unwrap().remove(0);
        match p.plan(&stmt).unwrap().plan {
            Plan::Select(s) => s.source.unwrap().access,
            Plan::Update(u) => u.source.access,
            Plan::Delete(d) => d.source.access,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pinned_primary_key_reads_one_row() {
        assert!(matches!(
            access("SELECT * FROM users WHERE id = 1"),
            Access::Key(_)
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE 1 = id AND name = 'x'"),
            Access::Key(_)
        ));
        assert!(matches!(
            access("UPDATE users SET name = 'x' WHERE id = $1"),
            Access::Key(_)
        ));
        assert!(matches!(
            access("SELECT * FROM m WHERE org = 1 AND member = 2"),
            Access::Key(_)
        ));
    }

    #[test]
    fn pinned_unique_key_reads_the_claim() {
        assert!(matches!(
            access("SELECT * FROM users WHERE email = 'a'"),
            Access::Unique(0, _)
        ));
        assert!(matches!(
            access("DELETE FROM m WHERE seat = 3 AND org = 1"),
            Access::Unique(0, _)
        ));
    }

    #[test]
    fn a_key_pinned_to_an_expression_without_columns_is_read_by_key() {
        assert!(matches!(
            access("SELECT * FROM users WHERE email = lower($1)"),
            Access::Unique(0, _)
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE email = 'seed' || $1 || '@example.com'"),
            Access::Unique(0, _)
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE id = $1 + 1"),
            Access::Key(_)
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE id IN ($1 + 1, abs($2))"),
            Access::KeyList(_)
        ));
        // A column of the row, or a volatile function: every row is looked at.
        assert!(matches!(
            access("SELECT * FROM users WHERE id = length(name)"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE email = gen_random_uuid()::text"),
            Access::Scan
        ));
    }

    #[test]
    fn anything_else_scans() {
        assert!(matches!(
            access("SELECT * FROM users WHERE name = 'a'"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE id = 1 OR id = 2"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM m WHERE org = 1"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE id > 1"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE id NOT IN (1, 2)"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM users WHERE id IN (1, length(name))"),
            Access::Scan
        ));
        assert!(matches!(
            access("SELECT * FROM m WHERE org IN (1, 2)"),
            Access::Scan
        ));
    }

    #[test]
    fn in_lists_on_single_column_keys_read_each_key() {
        match access("SELECT * FROM users WHERE id IN (3, 1, $1) AND name <> 'x'") {
            Access::KeyList(Keys::Each(items)) => assert_eq!(items.len(), 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            access("DELETE FROM users WHERE email IN ('a', 'b')"),
            Access::UniqueList(0, _)
        ));
        // A pinned key still wins over a list.
        assert!(matches!(
            access("SELECT * FROM users WHERE id IN (1, 2) AND email = 'a'"),
            Access::Unique(0, _)
        ));
    }

    #[test]
    fn any_of_an_array_on_single_column_keys_reads_each_key() {
        for sql in [
            "SELECT * FROM users WHERE id = ANY($1)",
            "SELECT * FROM users WHERE id = ANY($1::int[])",
            "SELECT * FROM users WHERE id = ANY('{1,2}') AND name <> 'x'",
            "SELECT * FROM users WHERE id = ANY('{1,2}'::bigint[])",
            "SELECT * FROM users WHERE id = ANY(ARRAY[1, 2])",
            "SELECT * FROM users WHERE id = ANY(ARRAY[1, $1])",
            "SELECT * FROM users WHERE id = SOME(ARRAY[1, 2]::int[])",
            "UPDATE users SET name = 'x' WHERE id = ANY($1)",
            "DELETE FROM users WHERE id = ANY($1)",
        ] {
            assert!(
                matches!(access(sql), Access::KeyList(Keys::Elements(_))),
                "{sql}"
            );
        }
        assert!(matches!(
            access("SELECT * FROM users WHERE email = ANY($1)"),
            Access::UniqueList(0, Keys::Elements(_))
        ));
        // Not a key list: another operator, ALL, a non-key or composite
        // key column, an array computed from the row.
        for sql in [
            "SELECT * FROM users WHERE id <> ANY($1)",
            "SELECT * FROM users WHERE id = ALL($1)",
            "SELECT * FROM users WHERE id > ANY($1)",
            "SELECT * FROM users WHERE name = ANY($1)",
            "SELECT * FROM m WHERE org = ANY($1)",
            "SELECT * FROM users WHERE id = ANY(ARRAY[id, 1])",
            "SELECT * FROM users WHERE id = ANY($1) OR name = 'x'",
        ] {
            assert!(matches!(access(sql), Access::Scan), "{sql}");
        }
    }

    #[test]
    fn any_parameters_are_arrays_of_the_left_side() {
        let t = tables();
        let mut p = Planner {
            tables: &t,
            params: Params::default(),
        };
        let stmt = crate::sql::parse(
            "SELECT name FROM users WHERE id = ANY($1) AND email <> ALL($2) AND $3 = ANY($4)",
        )
        .unwrap()
        .remove(0);
        p.plan(&stmt).unwrap();
        assert_eq!(
            p.params.resolved(),
            vec![
                SqlType::array_of(SqlType::Int4),
                SqlType::array_of(SqlType::Text),
                SqlType::Text,
                SqlType::array_of(SqlType::Text),
            ]
        );
    }

    fn lock(sql: &str) -> SqlResult<Option<RowLock>> {
        let t = tables();
        let mut p = Planner {
            tables: &t,
            params: Params::default(),
        };
        let stmt = crate::sql::parse(sql).unwrap().remove(0);
        match p.plan(&stmt)?.plan {
            Plan::Select(s) => Ok(s.lock),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn locking_clauses_combine_as_in_postgres() {
        use LockStrength::*;
        use LockWait::*;
        let l = |strength, wait| Ok(Some(RowLock { strength, wait }));
        assert_eq!(lock("SELECT * FROM users FOR KEY SHARE"), l(KeyShare, Wait));
        assert_eq!(
            lock("SELECT * FROM users u FOR SHARE OF u SKIP LOCKED FOR NO KEY UPDATE NOWAIT"),
            l(NoKeyUpdate, Fail)
        );
        assert_eq!(
            lock("SELECT id FROM users FOR UPDATE SKIP LOCKED FOR SHARE OF users"),
            l(Update, Skip)
        );
        assert_eq!(lock("SELECT * FROM users"), Ok(None));
    }

    #[test]
    fn locking_clauses_are_checked_as_in_postgres() {
        let e = |sql| {
            let e = lock(sql).unwrap_err();
            (e.code, e.message)
        };
        assert_eq!(
            e("SELECT count(*) FROM users FOR KEY SHARE"),
            (
                "0A000",
                "FOR KEY SHARE is not allowed with aggregate functions".into()
            )
        );
        assert_eq!(
            e("SELECT * FROM users u FOR UPDATE OF users"),
            (
                "42P01",
                "relation \"users\" in FOR UPDATE clause not found in FROM clause".into()
            )
        );
        assert_eq!(
            e("SELECT * FROM users FOR NO KEY UPDATE OF public.users"),
            (
                "42601",
                "FOR NO KEY UPDATE must specify unqualified relation names".into()
            )
        );
    }

    #[test]
    fn parameters_take_column_types() {
        let t = tables();
        let mut p = Planner {
            tables: &t,
            params: Params::default(),
        };
        let stmt =
            crate::sql::parse("SELECT name FROM users WHERE id = $1 AND email LIKE $2 LIMIT $3")
                .unwrap()
                .remove(0);
        p.plan(&stmt).unwrap();
        assert_eq!(
            p.params.resolved(),
            vec![SqlType::Int4, SqlType::Text, SqlType::Int8]
        );
    }
}
