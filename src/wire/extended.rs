//! The extended query protocol: Parse prepares through the engine (with the
//! client's parameter types as hints), Describe reports the engine's
//! parameter and result types, Execute runs a portal and streams up to
//! max_rows of it, leaving the rest for the next Execute (PortalSuspended).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{FieldInfo, QueryResponse, Response, SendableRowStream, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Describe, Execute, PortalSuspended, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse};
use pgwire::messages::PgWireBackendMessage;

use super::errors::to_pgwire;
use super::interrupt::Interrupt;
use super::statement::{completion, Ran};
use super::utf8::InvalidText;
use super::{encode, Connection};
use crate::engine::cursor::CursorPlan;
use crate::engine::{Engine, Prepared};
use crate::error::{sqlstate, SqlError};
use crate::sql::plan::Plan;
use crate::txn::PlanView;
use crate::types::SqlType;

/// Parse: SQL text to a prepared statement, through the engine. One per
/// connection, for the connection's notes of invalid text and the
/// transaction it plans as (its block's own DDL included).
pub(crate) struct Parser {
    engine: Engine,
    invalid_text: Arc<InvalidText>,
    view: PlanView,
}

impl Parser {
    pub(crate) fn new(engine: Engine, invalid_text: Arc<InvalidText>, view: PlanView) -> Parser {
        Parser {
            engine,
            invalid_text,
            view,
        }
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        if let Some(invalid) = self.invalid_text.take(sql) {
            return Err(to_pgwire(invalid));
        }
        let hints: Vec<Option<SqlType>> = types
            .iter()
            .map(|t| t.as_ref().and_then(SqlType::from_pg_type))
            .collect();
        let mut statements = self.engine.prepare_in(sql, &hints, self.view.get()).await?;
        if statements.len() > 1 {
            return Err(to_pgwire(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            )));
        }
        // A FETCH returns its cursor's columns, which the session knows.
        if let Some(stmt) = statements.first_mut() {
            if let Plan::Cursor(CursorPlan::Fetch {
                name,
                moving: false,
                ..
            }) = stmt.plan.as_ref()
            {
                if let Some(columns) = self.view.cursor_columns(name) {
                    stmt.columns = columns;
                }
            }
        }
        // None (a comment, say) is an empty statement, as in PostgreSQL.
        Ok(statements.pop())
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.iter().map(SqlType::pg_type).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let format = format.unwrap_or(&Format::UnifiedText);
        Ok(encode::Described::new(stmt.columns.clone(), format)?.fields())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    /// A statement that returns no rows is described as PostgreSQL describes
    /// it: its parameters, then NoData. (pgwire sends an empty RowDescription
    /// when the statement has parameters, and pgJDBC then counts the rows of
    /// an `executeBatch` as 0.) Everything else is pgwire's.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            let portal = client.portal_store().get_portal(name);
            // A portal's result, from its statement's shared columns in the
            // Bind's formats, straight into a RowDescription (pgwire's
            // default builds a list of fields, then the message from a copy
            // of each: for every execution of a prepared statement that
            // libpq runs, as it describes each portal).
            if let Some(Entry::Value(portal)) = &portal {
                let described = encode::Described::new(
                    portal.statement.statement.columns.clone(),
                    &portal.result_column_format,
                )?;
                let message = if described.columns.is_empty() {
                    PgWireBackendMessage::NoData(NoData::new())
                } else {
                    PgWireBackendMessage::RowDescription(described.row_description())
                };
                return client.feed(message).await.map_err(Into::into);
            }
            // A cursor is a portal too, by its name (psycopg describes a
            // named cursor so after DECLARE); its rows come as text.
            if let (None, Some(columns)) = (portal, self.view.cursor_columns(name)) {
                let described = encode::Described::new(columns, &Format::UnifiedText)?;
                return client
                    .feed(PgWireBackendMessage::RowDescription(
                        described.row_description(),
                    ))
                    .await
                    .map_err(Into::into);
            }
        }
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &stmt).await?;
                if described.fields.is_empty() {
                    let oids = described.parameters.iter().map(|t| t.oid()).collect();
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(oids),
                        ))
                        .await?;
                    return client
                        .feed(PgWireBackendMessage::NoData(NoData::new()))
                        .await
                        .map_err(Into::into);
                }
            }
        }
        self._on_describe(client, message).await
    }

    /// pgwire's default buffers a portal's rows before sending them and
    /// derives the transaction status from the kinds of responses; this
    /// streams the rows and takes the status from the session.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                return client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await
                    .map_err(Into::into);
            }
            None => return Err(PgWireError::PortalNotFound(name.to_owned())),
        };
        let _busy = self.busy();
        client.set_state(PgWireConnectionState::QueryInProgress);
        // 0 (or a negative count) means all rows.
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        let done = self.execute_portal(client, &portal, max_rows).await;
        client.set_state(PgWireConnectionState::ReadyForQuery);
        done
    }

    /// Runs the portal's statement. keyclaim's `on_execute` does not come
    /// here; this serves pgwire's default Execute path, should it be used.
    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let interrupt = self.interrupt(self.cancel_signal().await).await;
        Ok(match self.start_portal(client, portal, &interrupt).await? {
            Ran::Rows {
                described,
                tag,
                rows,
            } => {
                let mut response = QueryResponse::new(Arc::new(described.fields()), rows);
                response.set_command_tag(&tag);
                Response::Query(response)
            }
            Ran::Done { tag } => Response::Execution(Tag::new(&tag)),
        })
    }
}

impl Connection {
    /// The first Execute of a portal: bind its parameters and run it.
    async fn start_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        interrupt: &Interrupt,
    ) -> PgWireResult<Ran>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let params = encode::parameters(portal)?;
        let prepared = &portal.statement.statement;
        let format = &portal.result_column_format;
        self.run(client, prepared, params, format, interrupt).await
    }

    /// One Execute: runs the portal the first time, then sends up to
    /// `max_rows` of its rows. A cancel request or statement_timeout ends
    /// this Execute's work, as PostgreSQL times each Execute on its own.
    async fn execute_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        max_rows: usize,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let interrupt = self.interrupt(self.cancel_signal().await).await;
        let state = portal.state();
        let mut state = state.lock().await;
        if let PortalExecutionState::Initial = *state {
            match self.start_portal(client, portal, &interrupt).await? {
                Ran::Rows { tag, rows, .. } => {
                    // An Execute sends no RowDescription (a Describe
                    // did, if the client wanted one): the response's
                    // fields are never read, so none are built.
                    let mut response = QueryResponse::new(no_fields(), rows);
                    response.set_command_tag(&tag);
                    *state = PortalExecutionState::Suspended(response);
                }
                Ran::Done { tag } => {
                    client
                        .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                            tag,
                        )))
                        .await?;
                    return self.after_statement(client).await;
                }
            }
        }
        let message = match &mut *state {
            PortalExecutionState::Suspended(response) => {
                let tag = response.command_tag().to_owned();
                let sending = send_rows(client, response.data_rows(), max_rows);
                match interrupt.guard(sending).await {
                    Ok(Some(sent)) => {
                        *state = PortalExecutionState::Finished;
                        PgWireBackendMessage::CommandComplete(completion(&tag, sent))
                    }
                    Ok(None) => PgWireBackendMessage::PortalSuspended(PortalSuspended::new()),
                    Err(e) => {
                        *state = PortalExecutionState::Finished;
                        return Err(e);
                    }
                }
            }
            // Executing a portal that has run out of rows returns no more.
            _ => PgWireBackendMessage::CommandComplete(CommandComplete::new("SELECT 0".into())),
        };
        client.feed(message).await?;
        self.after_statement(client).await
    }
}

/// The fields of a portal's suspended response, which keyclaim's Execute
/// never sends: one shared empty list.
fn no_fields() -> Arc<Vec<FieldInfo>> {
    static NONE: std::sync::LazyLock<Arc<Vec<FieldInfo>>> = std::sync::LazyLock::new(Arc::default);
    NONE.clone()
}

/// Streams up to `max_rows` rows (0: all). Some(count) once the rows ran
/// out, None if more remain.
async fn send_rows<C>(
    client: &mut C,
    rows: &mut SendableRowStream,
    max_rows: usize,
) -> PgWireResult<Option<usize>>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let mut sent = 0;
    while max_rows == 0 || sent < max_rows {
        match rows.next().await {
            Some(row) => {
                client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                sent += 1;
            }
            None => return Ok(Some(sent)),
        }
    }
    // PostgreSQL suspends after max_rows even if none are left; so do we.
    Ok(None)
}
