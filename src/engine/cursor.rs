//! DECLARE and FETCH: a cursor's query is planned as any SELECT (the fast
//! path or the query engine) and run at DECLARE; its rows stream from the
//! store as FETCH takes them (`session::cursors` keeps them). CLOSE is a
//! session statement (`session::utility`).
//!
//! What keyclaim refuses, with 0A000 and a hint: `SCROLL` and `BINARY`
//! cursors, and `WITH HOLD` inside a block (a held cursor would have to
//! keep the block's own writes readable after its COMMIT). Backward
//! movement answers PostgreSQL's 55000 for a cursor without SCROLL.

use std::sync::Arc;

use futures::StreamExt;
use sqlparser::ast::{self, FetchDirection, Statement};

use super::{Engine, Executed, Outcome, Prepared};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::session::Session;
use crate::stop::Stop;
use crate::types::{SqlType, Value};

/// A cursor statement, planned.
#[derive(Debug)]
pub enum CursorPlan {
    /// `DECLARE name CURSOR [WITH HOLD] FOR query`.
    Declare {
        name: String,
        hold: bool,
        query: Box<Prepared>,
    },
    /// `FETCH [FORWARD] [n | ALL] FROM name`: `count` rows (None: all);
    /// MOVE (`moving`) takes them without sending them.
    Fetch {
        name: String,
        count: Option<u64>,
        moving: bool,
    },
}

impl CursorPlan {
    /// The command word PostgreSQL names the statement by.
    pub fn command_word(&self) -> &'static str {
        match self {
            CursorPlan::Declare { .. } => "DECLARE CURSOR",
            CursorPlan::Fetch { moving: false, .. } => "FETCH",
            CursorPlan::Fetch { moving: true, .. } => "MOVE",
        }
    }
}

/// A cursor statement as parsed, before its query is planned.
pub(super) enum Parsed {
    Declare {
        name: String,
        hold: bool,
        query: Box<ast::Query>,
    },
    Fetch {
        name: String,
        count: Option<u64>,
        moving: bool,
    },
}

fn refused(what: &str, hint: &str) -> SqlError {
    SqlError::unsupported(format!("{what} is not supported"), hint)
}

/// The cursor statement `stmt` is, if it is one.
pub(super) fn parse(stmt: &Statement) -> Option<SqlResult<Parsed>> {
    Some(match stmt {
        Statement::Declare { stmts } => declare(stmts),
        Statement::Fetch {
            name,
            direction,
            into,
            ..
        } if into.as_ref().is_none_or(is_move) => {
            fetch_count(direction).map(|count| Parsed::Fetch {
                name: crate::sql::plan::ident(name),
                count,
                moving: into.is_some(),
            })
        }
        Statement::Fetch { into: Some(_), .. } => {
            Err(refused("FETCH ... INTO", "FETCH the rows to the client"))
        }
        _ => return None,
    })
}

/// The INTO target a MOVE was rewritten to (`sql::fetch`).
fn is_move(into: &ast::ObjectName) -> bool {
    matches!(into.0.as_slice(), [part] if part.as_ident().is_some_and(|i| i.value == crate::sql::fetch::MOVE_MARK))
}

fn declare(stmts: &[ast::Declare]) -> SqlResult<Parsed> {
    let [d] = stmts else {
        return Err(SqlError::syntax("DECLARE declares one cursor"));
    };
    let (Some(ast::DeclareType::Cursor), [name], Some(query)) =
        (&d.declare_type, d.names.as_slice(), &d.for_query)
    else {
        return Err(refused(
            "DECLARE of anything but a cursor",
            "DECLARE name CURSOR FOR query",
        ));
    };
    if d.scroll == Some(true) {
        return Err(refused(
            "a SCROLL cursor",
            "declare it NO SCROLL (the default) and FETCH forward",
        ));
    }
    if d.binary == Some(true) {
        return Err(refused(
            "a BINARY cursor",
            "declare it without BINARY; the extended protocol returns binary results",
        ));
    }
    if !query.locks.is_empty() {
        return Err(refused(
            "a cursor FOR UPDATE or FOR SHARE",
            "lock the rows with SELECT ... FOR UPDATE, then declare the cursor",
        ));
    }
    Ok(Parsed::Declare {
        name: crate::sql::plan::ident(name),
        hold: d.hold == Some(true),
        query: query.clone(),
    })
}

/// How many rows a FETCH takes; PostgreSQL's 55000 for a backward move.
fn fetch_count(direction: &FetchDirection) -> SqlResult<Option<u64>> {
    let number = |v: &ast::ValueWithSpan| -> SqlResult<i64> {
        match &v.value {
            ast::Value::Number(n, _) => n
                .parse::<i64>()
                .map_err(|_| SqlError::syntax(format!("invalid FETCH count {n}"))),
            other => Err(SqlError::syntax(format!("invalid FETCH count {other}"))),
        }
    };
    let forward = |n: i64| -> SqlResult<Option<u64>> {
        match u64::try_from(n) {
            Ok(0) => Err(refused(
                "FETCH 0 (the current row again)",
                "FETCH forward one or more rows",
            )),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(backward()),
        }
    };
    match direction {
        FetchDirection::Next => Ok(Some(1)),
        FetchDirection::Count { limit } => forward(number(limit)?),
        FetchDirection::Forward { limit: None } => Ok(Some(1)),
        FetchDirection::Forward { limit: Some(n) } => forward(number(n)?),
        FetchDirection::All | FetchDirection::ForwardAll => Ok(None),
        _ => Err(backward()),
    }
}

fn backward() -> SqlError {
    SqlError::new("55000", "cursor can only scan forward")
        .with_hint("Declare it with SCROLL option to enable backward scan.")
}

impl Engine {
    /// Plan a cursor statement: a DECLARE's query as any SELECT. A FETCH's
    /// result columns are its cursor's, known to the session (the wire
    /// layer fills them in where it describes one).
    pub(super) async fn plan_cursor(
        &self,
        parsed: Parsed,
        sql: String,
        hints: &[Option<SqlType>],
        own: Option<crate::store::TxnId>,
        source: &str,
    ) -> SqlResult<Prepared> {
        let (plan, param_types) = match parsed {
            Parsed::Declare { name, hold, query } => {
                let query =
                    Box::pin(self.plan(Statement::Query(query), hints, own, source)).await?;
                let param_types = query.param_types.clone();
                let query = Box::new(query);
                (CursorPlan::Declare { name, hold, query }, param_types)
            }
            Parsed::Fetch {
                name,
                count,
                moving,
            } => (
                CursorPlan::Fetch {
                    name,
                    count,
                    moving,
                },
                Vec::new(),
            ),
        };
        Ok(Prepared {
            sql,
            param_types,
            columns: Arc::default(),
            plan: Arc::new(crate::sql::plan::Plan::Cursor(plan)),
        })
    }

    /// Run a cursor statement: DECLARE runs its query and keeps its rows;
    /// FETCH streams the next of them.
    pub(super) async fn cursor_statement(
        &self,
        session: &mut Session,
        plan: &CursorPlan,
        params: Vec<Value>,
        stop: Option<&Stop>,
    ) -> SqlResult<Executed> {
        match plan {
            CursorPlan::Declare { name, hold, query } => {
                match (session.in_block(), hold) {
                    (false, false) => {
                        return Err(SqlError::new(
                            sqlstate::NO_ACTIVE_TRANSACTION,
                            "DECLARE CURSOR can only be used in transaction blocks",
                        ))
                    }
                    (true, true) => {
                        return Err(refused(
                            "DECLARE ... WITH HOLD inside a transaction block",
                            "declare it WITHOUT HOLD inside the block, or WITH HOLD outside one",
                        ))
                    }
                    _ => {}
                }
                let ran = Box::pin(self.execute_stages(session, query, params, stop)).await?;
                let Outcome::Rows { columns, rows, .. } = ran.outcome else {
                    return Err(SqlError::internal("a cursor's query returned no rows"));
                };
                session.cursors.declare(name, columns, rows, *hold)?;
                Ok(Executed::new(Outcome::Command {
                    tag: "DECLARE CURSOR".into(),
                }))
            }
            CursorPlan::Fetch {
                name,
                count,
                moving: false,
            } => {
                let (columns, rows) = session.cursors.fetch(name, *count)?;
                Ok(Executed::new(Outcome::Rows {
                    columns,
                    rows,
                    tag: "FETCH".into(),
                }))
            }
            CursorPlan::Fetch {
                name,
                count,
                moving: true,
            } => {
                let (_, mut rows) = session.cursors.fetch(name, *count)?;
                let mut moved = 0u64;
                while let Some(row) = rows.next().await {
                    row?;
                    moved += 1;
                }
                Ok(Executed::new(Outcome::Command {
                    tag: format!("MOVE {moved}"),
                }))
            }
        }
    }
}
