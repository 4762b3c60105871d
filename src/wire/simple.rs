//! The simple query protocol: a query string of one or more statements, run
//! in order and stopped at the first error, each result streamed as it is
//! produced.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::portal::Format;
use pgwire::api::query::{send_ready_for_query, SimpleQueryHandler};
use pgwire::api::results::Response;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;

use super::errors::to_pgwire;
use super::interrupt::Interrupt;
use super::statement::{completion, Ran};
use super::Connection;
use crate::engine::Prepared;
use crate::sql::copy::Copy;
use crate::sql::shape::Shape;
use crate::types::Value;

/// Only semicolons and whitespace: PostgreSQL answers EmptyQueryResponse.
fn is_empty_query(query: &str) -> bool {
    query.chars().all(|c| c == ';' || c.is_whitespace())
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    /// pgwire's default sets the transaction status from the kinds of
    /// responses; keyclaim's comes from the session, which also knows about
    /// ROLLBACK TO and failed blocks.
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        // Refused as the message is read, before anything runs (a failed
        // block's 25P02 included), as PostgreSQL does.
        if let Some(invalid) = self.invalid_text.take(&query.query) {
            return Err(to_pgwire(invalid));
        }
        let _busy = self.busy();
        client.set_state(PgWireConnectionState::QueryInProgress);
        let done = self.do_query(client, &query.query).await;
        // A COPY FROM STDIN now reads CopyData; its end sends
        // ReadyForQuery (`wire::copy`).
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            return done.map(|_| ());
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        done?;
        let status = self.transaction_status().await;
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await
    }

    /// Sends every result itself, as it streams, so it returns no Responses.
    /// A statement error ends the query string with an ErrorResponse; only
    /// connection errors are returned.
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if is_empty_query(query) {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
            return Ok(Vec::new());
        }
        let cancel = self.cancel_signal().await;
        let outcome = async {
            // A text run before (as one statement): its plan, still good.
            let engine = &self.shared.engine;
            if let Some(kept) = engine.kept_plan(query, &[], self.view.get()).await? {
                let interrupt = self.interrupt(cancel.clone()).await;
                return self.run_simple(client, &kept, Vec::new(), &interrupt).await;
            }
            // A text like one run before but for its literal values: that
            // text's plan, the values as its parameters.
            if let Some(shape) = Shape::of(query) {
                let interrupt = self.interrupt(cancel.clone()).await;
                let shaped = engine.shaped_plan(&shape, self.view.get());
                if let Some((prepared, params)) = interrupt.guard(shaped).await? {
                    return self.run_simple(client, &prepared, params, &interrupt).await;
                }
            }
            // The whole string parses first, so a syntax error anywhere runs
            // nothing, as in PostgreSQL.
            let statements = crate::sql::parse(query)?;
            if statements.is_empty() {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
            }
            let count = statements.len();
            for (n, statement) in statements.into_iter().enumerate() {
                // statement_timeout applies to each statement on its own, and
                // is read as the statements before it left it.
                let interrupt = self.interrupt(cancel.clone()).await;
                if matches!(statement, sqlparser::ast::Statement::Copy { .. }) {
                    // Boxed: a rare statement's state stays out of every
                    // query's future.
                    match crate::sql::copy::copy(&statement)? {
                        Copy::To(plan) => {
                            Box::pin(self.copy_out(client, plan, &interrupt)).await?;
                            continue;
                        }
                        Copy::From(_) if n + 1 < count => {
                            return Err(to_pgwire(crate::error::SqlError::unsupported(
                                "COPY FROM STDIN followed by other statements in one query is not supported",
                                "send the COPY as a query of its own",
                            )));
                        }
                        Copy::From(plan) => return Box::pin(self.start_copy(client, plan)).await,
                    }
                }
                // Each is planned just before it runs, so it sees the tables
                // the statements before it created.
                let prepared = interrupt
                    .guard(engine.prepare_statement(statement, query, &[], self.view.get()))
                    .await?;
                if count == 1 {
                    engine.keep_plan(query, &[], &prepared);
                }
                self.run_simple(client, &prepared, Vec::new(), &interrupt).await?;
            }
            Ok(())
        }
        .await;
        match outcome {
            Ok(()) => Ok(Vec::new()),
            Err(PgWireError::UserError(info)) if !info.is_fatal() => {
                self.note_error().await;
                client
                    .feed(PgWireBackendMessage::ErrorResponse((*info).into()))
                    .await?;
                Ok(Vec::new())
            }
            Err(other) => Err(other),
        }
    }
}

impl Connection {
    async fn run_simple<C>(
        &self,
        client: &mut C,
        statement: &Prepared,
        params: Vec<Value>,
        interrupt: &Interrupt,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let ran = self
            .run(client, statement, params, &Format::UnifiedText, interrupt)
            .await?;
        let complete = match ran {
            Ran::Rows {
                described,
                tag,
                mut rows,
            } => {
                client
                    .feed(PgWireBackendMessage::RowDescription(
                        described.row_description(),
                    ))
                    .await?;
                let streaming = async {
                    let mut count = 0;
                    while let Some(row) = rows.next().await {
                        client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                        count += 1;
                    }
                    PgWireResult::Ok(count)
                };
                completion(&tag, interrupt.guard(streaming).await?)
            }
            Ran::Done { tag } => CommandComplete::new(tag),
        };
        client
            .feed(PgWireBackendMessage::CommandComplete(complete))
            .await?;
        self.after_statement(client).await
    }
}
