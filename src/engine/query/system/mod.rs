//! pg_catalog and information_schema, live from keyclaim's catalog, and
//! the catalog functions clients call (`format_type`, `pg_get_indexdef`,
//! `::regclass`, `current_user`, ...).
//!
//! A query that reads a system relation or calls a catalog function is
//! planned again at each execution over a [`Snapshot`]: the relations its
//! transaction sees (its own uncommitted DDL included, as in PostgreSQL)
//! and the session's user, database and settings. The system relations
//! are in-memory tables built from the snapshot for that one execution,
//! sized by the number of relations, never by rows; the functions read
//! the same snapshot. OIDs come from `oids`: the same on every proxy.
//!
//! What is not there: keyclaim has no views, triggers, extensions,
//! inheritance, row security or comments, so their relations are empty.
//! PostgreSQL lists a foreign key's internal triggers in pg_trigger
//! (which psql's `\d` hides); keyclaim shows only their mark, the
//! relhastriggers of both tables.

mod functions;
mod information_schema;
pub(crate) mod oids;
mod pg_catalog;
pub(crate) mod pg_types;
mod table;

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::execution::session_state::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::sql::sqlparser::ast as df_ast;

use crate::catalog::{CheckDef, CountLimitDef, ForeignKeyDef, TableDef};
use crate::session::settings::Guc;

pub(crate) use functions::{is_system_function, REGCLASS, REGCLASS_OUT, REGTYPE, REGTYPE_OUT};

/// The schemas that hold system relations.
pub(crate) const PG_CATALOG: &str = "pg_catalog";
pub(crate) const INFORMATION_SCHEMA: &str = "information_schema";

/// What one execution of a system query sees.
pub(crate) use pg_catalog::elements_of;

pub(crate) struct Snapshot {
    /// The relations the statement's transaction sees, by name.
    pub relations: Vec<Arc<TableDef>>,
    pub user: String,
    pub database: String,
    /// Each setting keyclaim knows, with the session's value.
    pub settings: Vec<(&'static Guc, String)>,
    /// The advisory locks this proxy's sessions hold (pg_locks).
    pub locks: Vec<ShownLock>,
}

/// One advisory lock a session of this proxy holds, as pg_locks lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShownLock {
    pub key: crate::claims::advisory::LockKey,
    pub exclusive: bool,
}

impl Snapshot {
    /// What planning needs, before any execution: the shape of the
    /// system relations, none of their rows (result columns do not depend
    /// on what the catalog holds).
    pub fn for_planning() -> Snapshot {
        Snapshot::new(
            Vec::new(),
            String::new(),
            String::new(),
            Vec::new(),
            Vec::new(),
        )
    }

    pub fn new(
        mut relations: Vec<Arc<TableDef>>,
        user: String,
        database: String,
        settings: Vec<(&'static Guc, String)>,
        locks: Vec<ShownLock>,
    ) -> Snapshot {
        relations.sort_by(|a, b| a.name.cmp(&b.name));
        Snapshot {
            relations,
            user,
            database,
            settings,
            locks,
        }
    }

    /// The tables (not sequences).
    fn tables(&self) -> impl Iterator<Item = &TableDef> {
        self.relations
            .iter()
            .filter(|r| r.sequence.is_none())
            .map(|r| r.as_ref())
    }

    /// The relation named `name`.
    fn named(&self, name: &str) -> Option<&TableDef> {
        self.relations
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.as_ref())
    }

    /// The sequences.
    fn sequences(&self) -> impl Iterator<Item = &TableDef> {
        self.relations
            .iter()
            .filter(|r| r.sequence.is_some())
            .map(|r| r.as_ref())
    }

    /// Every index of every table.
    fn indexes(&self) -> impl Iterator<Item = Index<'_>> {
        self.tables().flat_map(indexes_of)
    }

    /// Every constraint of every table.
    fn constraints(&self) -> impl Iterator<Item = Constraint<'_>> {
        self.tables().flat_map(|t| constraints_of(self, t))
    }

    /// What foreign key `fk` references, found through its own definition
    /// (the referenced table's `referenced_by` is only a hint); None when
    /// the snapshot has no such table or no unique index to match.
    fn reference<'a>(&'a self, fk: &'a ForeignKeyDef) -> Option<Reference<'a>> {
        let table = self.tables().find(|t| t.name == fk.ref_table)?;
        let index = indexes_of(table)
            .into_iter()
            .find(|i| i.unique && same_columns(i.columns, &fk.ref_columns))?;
        Some(Reference {
            def: fk,
            table,
            index,
        })
    }

    /// The tables PostgreSQL gives triggers: the referential-integrity
    /// triggers of a foreign key sit on its table and on the referenced
    /// one, so both have pg_class.relhastriggers.
    fn tables_with_triggers(&self) -> HashSet<&str> {
        self.constraints()
            .filter_map(|c| Some((c.table, c.reference?.table)))
            .flat_map(|(child, parent)| [child.name.as_str(), parent.name.as_str()])
            .collect()
    }

    /// The table (or sequence) with OID `oid`.
    fn table_by_oid(&self, oid: u32) -> Option<&TableDef> {
        self.relations
            .iter()
            .find(|r| oids::relation(r) == oid)
            .map(|r| &**r)
    }

    /// The relation (table, sequence or index) with OID `oid`.
    fn relation_name(&self, oid: u32) -> Option<String> {
        self.table_by_oid(oid)
            .map(|r| r.name.clone())
            .or_else(|| {
                self.indexes()
                    .find(|i| i.oid == oid)
                    .map(|i| i.name.to_string())
            })
            .or_else(|| system_relation(oid).map(|d| d.name.to_string()))
    }

    /// Whether relation `oid` is on the search path (public, pg_catalog);
    /// None for no relation.
    fn visible(&self, oid: u32) -> Option<bool> {
        if information_schema::RELATIONS.iter().any(|(_, o)| *o == oid) {
            return Some(false);
        }
        self.relation_name(oid).map(|_| true)
    }

    /// A relation as `regclass` prints it: its name, quoted if need be and
    /// qualified when not on the search path; `-` for OID 0 (a key's
    /// confrelid), the number for no relation.
    fn regclass_text(&self, oid: u32) -> String {
        if oid == 0 {
            return "-".into();
        }
        let Some(name) = self.relation_name(oid) else {
            return oid.to_string();
        };
        let name = crate::catalog::naming::quote_ident(&name);
        match self.visible(oid) {
            Some(false) => format!("{INFORMATION_SCHEMA}.{name}"),
            _ => name,
        }
    }

    /// The OID of the relation a name (possibly schema-qualified, possibly
    /// quoted) denotes, as `::regclass` reads it.
    fn relation_oid(&self, name: &str) -> Option<u32> {
        let parts = crate::catalog::naming::split_qualified(name).ok()?;
        let (schema, name) = match parts.as_slice() {
            [name] => (None, name.as_str()),
            [schema, name] => (Some(schema.as_str()), name.as_str()),
            _ => return None,
        };
        if schema.is_none_or(|s| s == PG_CATALOG || s == INFORMATION_SCHEMA) {
            if let Some(def) = system_relation_named(schema, name) {
                return Some(def.1);
            }
        }
        if schema.is_some_and(|s| s != "public") {
            return None;
        }
        self.named(name)
            .map(oids::relation)
            .or_else(|| self.indexes().find(|i| i.name == name).map(|i| i.oid))
    }
}

/// A column's DEFAULT as the catalog shows it (pg_get_expr of adbin,
/// information_schema's column_default): PostgreSQL stores a string
/// constant given to a text-like column coerced to the column's type, and
/// prints it with that cast (`'x'::character varying`); the rest as written.
/// None for an identity column, whose values come from its sequence.
fn shown_default(c: &crate::catalog::ColumnDef) -> Option<String> {
    use crate::types::SqlType;
    let written = c.default.as_ref().filter(|_| c.identity.is_none())?;
    let cast = match c.ty {
        SqlType::Text => "text",
        SqlType::Varchar(_) => "character varying",
        SqlType::Char(_) => "bpchar",
        SqlType::Json => "json",
        _ => return Some(written.clone()),
    };
    match crate::sql::parse_expr(written) {
        Ok(sqlparser::ast::Expr::Value(v)) => match v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => {
                Some(format!("'{}'::{cast}", s.replace('\'', "''")))
            }
            _ => Some(written.clone()),
        },
        _ => Some(written.clone()),
    }
}

/// One index as the catalog shows it: the primary key's, a UNIQUE
/// constraint's or unique index's, or a plain one.
struct Index<'a> {
    oid: u32,
    name: &'a str,
    table: &'a TableDef,
    columns: &'a [usize],
    unique: bool,
    primary: bool,
    nulls_not_distinct: bool,
    /// The OID of the constraint it backs (the primary key, a UNIQUE
    /// constraint); None for a unique or plain index of its own.
    constraint: Option<u32>,
    /// A partial unique index's WHERE.
    predicate: Option<&'a crate::catalog::predicate::Predicate>,
}

fn indexes_of(t: &TableDef) -> Vec<Index<'_>> {
    let mut out = Vec::new();
    if !t.primary_key.is_empty() {
        out.push(Index {
            oid: oids::pkey_index(t),
            name: &t.pkey_name,
            table: t,
            columns: &t.primary_key,
            unique: true,
            primary: true,
            nulls_not_distinct: false,
            constraint: Some(oids::pkey_constraint(t)),
            predicate: None,
        });
    }
    // A primary key added to a table keyed by a hidden row id is shown
    // once, as the primary key above.
    for u in t.uniques.iter().filter(|u| !u.primary) {
        out.push(Index {
            oid: oids::unique_index(u),
            name: &u.name,
            table: t,
            columns: &u.columns,
            unique: true,
            primary: false,
            nulls_not_distinct: u.nulls_not_distinct,
            constraint: (!u.is_index).then(|| oids::unique_constraint(u)),
            predicate: u.predicate.as_ref(),
        });
    }
    for i in &t.indexes {
        out.push(Index {
            oid: oids::plain_index(t, &i.name),
            name: &i.name,
            table: t,
            columns: &i.columns,
            unique: false,
            primary: false,
            nulls_not_distinct: false,
            constraint: None,
            predicate: None,
        });
    }
    out
}

/// Whether two lists of columns hold the same columns, in any order (a
/// foreign key may list a key's columns in another order).
fn same_columns(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().all(|c| b.contains(c))
}

/// A table's constraints as the catalog shows them (PRIMARY KEY, UNIQUE,
/// FOREIGN KEY).
struct Constraint<'a> {
    oid: u32,
    name: &'a str,
    table: &'a TableDef,
    columns: &'a [usize],
    /// pg_constraint.contype: `p`, `u`, `f`, or `c` for a CHECK constraint
    /// or a count limit.
    kind: &'static str,
    /// conindid: its index, or the referenced index a foreign key uses.
    index: u32,
    nulls_not_distinct: bool,
    /// A foreign key's other end.
    reference: Option<Reference<'a>>,
    /// A count limit's definition (kind `c`).
    limit: Option<&'a CountLimitDef>,
    /// A CHECK constraint's definition (kind `c`).
    check: Option<&'a CheckDef>,
}

/// What a foreign key references, resolved in the snapshot.
struct Reference<'a> {
    def: &'a ForeignKeyDef,
    table: &'a TableDef,
    /// The referenced table's unique index on the referenced columns, as
    /// PostgreSQL picks it: the first in creation order (the primary key's
    /// comes first).
    index: Index<'a>,
}

/// The constraints of `t`: the indexes that back one, its foreign keys
/// whose referenced table the snapshot has, its count limits, then its
/// CHECK constraints.
fn constraints_of<'a>(s: &'a Snapshot, t: &'a TableDef) -> Vec<Constraint<'a>> {
    let keys = indexes_of(t).into_iter().filter_map(|i| {
        Some(Constraint {
            oid: i.constraint?,
            name: i.name,
            table: i.table,
            columns: i.columns,
            kind: if i.primary { "p" } else { "u" },
            index: i.oid,
            nulls_not_distinct: i.nulls_not_distinct,
            reference: None,
            limit: None,
            check: None,
        })
    });
    let foreign = t.foreign_keys.iter().filter_map(|fk| {
        let reference = s.reference(fk)?;
        Some(Constraint {
            oid: oids::foreign_key(t, &fk.name),
            name: &fk.name,
            table: t,
            columns: &fk.columns,
            kind: "f",
            index: reference.index.oid,
            nulls_not_distinct: false,
            reference: Some(reference),
            limit: None,
            check: None,
        })
    });
    // A CHECK constraint, or a count limit, which shows as one: the
    // nearest kind PostgreSQL has (`\d` lists it under "Check
    // constraints:").
    let check_kind = |oid, name, columns, limit, check| Constraint {
        oid,
        name,
        table: t,
        columns,
        kind: "c",
        index: 0,
        nulls_not_distinct: false,
        reference: None,
        limit,
        check,
    };
    let limits = t.count_limits.iter().map(|l| {
        check_kind(
            oids::count_limit(t, &l.name),
            &l.name,
            &l.columns,
            Some(l),
            None,
        )
    });
    let checks = t
        .checks
        .iter()
        .map(|c| check_kind(oids::check(t, &c.name), &c.name, &c.columns, None, Some(c)));
    keys.chain(foreign).chain(limits).chain(checks).collect()
}

/// Whether a relation name, as written (schema if qualified), is a system
/// relation. Unqualified, only pg_catalog's count: PostgreSQL searches
/// pg_catalog before public, information_schema not at all.
pub(crate) fn is_system_relation(schema: Option<&str>, name: &str) -> bool {
    system_relation_named(schema, name).is_some()
}

/// The definition and OID of a system relation named so.
fn system_relation_named(schema: Option<&str>, name: &str) -> Option<(&'static table::Def, u32)> {
    match schema {
        None | Some(PG_CATALOG) => pg_catalog::RELATIONS
            .iter()
            .chain(pg_catalog::ELEMENTS)
            .find(|(d, _)| d.name == name)
            .map(|(d, oid)| (*d, *oid)),
        Some(INFORMATION_SCHEMA) => information_schema::RELATIONS
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(d, oid)| (*d, *oid)),
        _ => None,
    }
}

/// The system relation with OID `oid`.
fn system_relation(oid: u32) -> Option<&'static table::Def> {
    pg_catalog::RELATIONS
        .iter()
        .chain(information_schema::RELATIONS)
        .find(|(_, o)| *o == oid)
        .map(|(d, _)| *d)
}

/// Whether a relation (as written) is a system relation that is always
/// empty in keyclaim.
fn always_empty(schema: Option<&str>, name: &str) -> bool {
    match schema {
        None | Some(PG_CATALOG) => pg_catalog::EMPTY.contains(&name),
        Some(INFORMATION_SCHEMA) => information_schema::EMPTY.contains(&name),
        _ => false,
    }
}

/// A SELECT that inner-joins a relation keyclaim keeps empty returns no
/// row, so its select list is never evaluated: the items holding
/// subqueries become NULL (psql's `\d` asks for row-security policies
/// and publications with correlated subqueries DataFusion cannot plan).
pub(crate) fn skip_empty_selects(q: &mut df_ast::Query) {
    struct Skip;
    impl df_ast::VisitorMut for Skip {
        type Break = ();
        fn post_visit_select(&mut self, s: &mut df_ast::Select) -> ControlFlow<()> {
            if !s.from.iter().any(joins_empty) {
                return ControlFlow::Continue(());
            }
            for item in &mut s.projection {
                if let df_ast::SelectItem::UnnamedExpr(e)
                | df_ast::SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    if has_subquery(e) {
                        *e = df_ast::Expr::value(df_ast::Value::Null);
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = df_ast::VisitMut::visit(q, &mut Skip);
}

/// Whether a FROM item inner-joins an always-empty system relation.
fn joins_empty(t: &df_ast::TableWithJoins) -> bool {
    let empty = |f: &df_ast::TableFactor| match f {
        df_ast::TableFactor::Table {
            name, args: None, ..
        } => {
            let parts: Vec<String> = name
                .0
                .iter()
                .map(|p| {
                    p.as_ident()
                        .map(|i| i.value.to_lowercase())
                        .unwrap_or_default()
                })
                .collect();
            match parts.as_slice() {
                [n] => always_empty(None, n),
                [schema, n] => always_empty(Some(schema), n),
                _ => false,
            }
        }
        _ => false,
    };
    empty(&t.relation)
        || t.joins.iter().any(|j| {
            matches!(
                j.join_operator,
                df_ast::JoinOperator::Join(_) | df_ast::JoinOperator::Inner(_)
            ) && empty(&j.relation)
        })
}

fn has_subquery(e: &df_ast::Expr) -> bool {
    df_ast::visit_expressions(e, |e| match e {
        df_ast::Expr::Subquery(_)
        | df_ast::Expr::Exists { .. }
        | df_ast::Expr::InSubquery { .. } => ControlFlow::Break(()),
        df_ast::Expr::Function(f) if matches!(f.args, df_ast::FunctionArguments::Subquery(_)) => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The set-returning catalog functions whose set is always empty in
/// keyclaim: PostgreSQL's pg_partition_ancestors answers no row for a
/// relation that is no partition, and keyclaim has none (psql adds the
/// relation itself with `UNION ALL VALUES (...)`).
const EMPTY_SETS: &[&str] = &["pg_partition_ancestors"];

/// A SELECT whose select list calls a set-returning function of
/// [`EMPTY_SETS`] answers no rows, as PostgreSQL's does: it runs a select
/// list once per row of its set-returning functions. The function stays,
/// for its type, and the SELECT keeps its rows only if pg_inherits, where
/// PostgreSQL finds a partition's ancestors, has any: keyclaim keeps it
/// empty. (A `WHERE false`, or any condition DataFusion can fold, would
/// be simpler, but its optimizer then drops the SELECT from a `UNION ALL`
/// inside `IN (...)` and loses the union's column.) Run after functions
/// in FROM became SELECTs of their call, it covers `FROM
/// pg_partition_ancestors(...)` too.
pub(crate) fn empty_set_selects(q: &mut df_ast::Query) {
    struct Empty;
    impl df_ast::VisitorMut for Empty {
        type Break = ();
        fn post_visit_select(&mut self, s: &mut df_ast::Select) -> ControlFlow<()> {
            if s.projection.iter().any(calls_empty_set) {
                s.selection = match (s.selection.take(), any_inheritance()) {
                    (Some(own), Some(any)) => Some(df_ast::Expr::BinaryOp {
                        left: Box::new(any),
                        op: df_ast::BinaryOperator::And,
                        right: Box::new(own),
                    }),
                    (own, any) => any.or(own),
                };
            }
            ControlFlow::Continue(())
        }
    }
    let _ = df_ast::VisitMut::visit(q, &mut Empty);
}

/// `EXISTS (SELECT 1 FROM pg_catalog.pg_inherits)`.
fn any_inheritance() -> Option<df_ast::Expr> {
    use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};
    let sql = "SELECT 1 WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_inherits)";
    match Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?.pop()? {
        df_ast::Statement::Query(q) => match *q.body {
            df_ast::SetExpr::Select(s) => s.selection,
            _ => None,
        },
        _ => None,
    }
}

/// Whether a select item calls a function of [`EMPTY_SETS`] itself (not
/// in a subquery, which is a SELECT of its own).
fn calls_empty_set(item: &df_ast::SelectItem) -> bool {
    struct Find {
        depth: usize,
    }
    impl df_ast::Visitor for Find {
        type Break = ();
        fn pre_visit_query(&mut self, _: &df_ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &df_ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &df_ast::Expr) -> ControlFlow<()> {
            let empty = match e {
                df_ast::Expr::Function(f) => super::rules::name_parts(&f.name)
                    .last()
                    .is_some_and(|n| EMPTY_SETS.contains(&n.as_str())),
                _ => false,
            };
            if empty && self.depth == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    df_ast::Visit::visit(item, &mut Find { depth: 0 }).is_break()
}

/// A schema whose system relations are built from the snapshot when
/// planning asks for them, so a query pays only for the relations it
/// reads. For `public`, `user` holds keyclaim's own tables, which
/// pg_catalog's names come before (PostgreSQL's search path).
struct SystemSchema {
    relations: &'static [(&'static table::Def, u32)],
    /// Relations it has that are listed nowhere (`pg_catalog::ELEMENTS`).
    hidden: &'static [(&'static table::Def, u32)],
    rows: fn(&str, &Snapshot) -> Vec<Vec<table::Cell>>,
    snap: Arc<Snapshot>,
    user: Option<Arc<dyn SchemaProvider>>,
}

impl std::fmt::Debug for SystemSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemSchema")
            .field("relations", &self.relations.len())
            .finish()
    }
}

impl SystemSchema {
    fn def(&self, name: &str) -> Option<&'static table::Def> {
        self.relations
            .iter()
            .chain(self.hidden)
            .find(|(d, _)| d.name == name)
            .map(|(d, _)| *d)
    }
}

#[async_trait]
impl SchemaProvider for SystemSchema {
    fn table_names(&self) -> Vec<String> {
        let own = self.relations.iter().map(|(d, _)| d.name.to_string());
        let user = self.user.iter().flat_map(|u| u.table_names());
        own.chain(user).collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(def) = self.def(name) {
            return Ok(Some(Arc::new(def.table((self.rows)(name, &self.snap))?)));
        }
        match &self.user {
            Some(user) => user.table(name).await,
            None => Ok(None),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.def(name).is_some() || self.user.as_ref().is_some_and(|u| u.table_exist(name))
    }
}

/// Make the snapshot's system relations and catalog functions visible to
/// one planning: the schemas to plan with, `public` (pg_catalog's
/// relations, then keyclaim's tables in `user`), `pg_catalog` and
/// `information_schema`.
pub(crate) fn schemas(
    state: &mut SessionState,
    user: Arc<dyn SchemaProvider>,
    snap: &Arc<Snapshot>,
) -> DfResult<Vec<(&'static str, Arc<dyn SchemaProvider>)>> {
    for udf in functions::udfs(snap) {
        state.register_udf(udf)?;
    }
    let schema = |relations: &'static [(&'static table::Def, u32)],
                  hidden: &'static [(&'static table::Def, u32)],
                  rows,
                  user|
     -> Arc<dyn SchemaProvider> {
        Arc::new(SystemSchema {
            relations,
            hidden,
            rows,
            snap: snap.clone(),
            user,
        })
    };
    Ok(vec![
        (
            "public",
            schema(
                pg_catalog::RELATIONS,
                pg_catalog::ELEMENTS,
                pg_catalog::rows,
                Some(user),
            ),
        ),
        (
            PG_CATALOG,
            schema(
                pg_catalog::RELATIONS,
                pg_catalog::ELEMENTS,
                pg_catalog::rows,
                None,
            ),
        ),
        (
            INFORMATION_SCHEMA,
            schema(
                information_schema::RELATIONS,
                &[],
                information_schema::rows,
                None,
            ),
        ),
    ])
}
