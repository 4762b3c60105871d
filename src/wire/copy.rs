//! COPY ... FROM STDIN: the client streams CopyData; each complete record
//! becomes a row written through the same prepared INSERT a client would
//! send, so every constraint holds as for INSERT. The rows are one
//! transaction: the client's block if it has one, else a block keyclaim
//! opens for the COPY and commits at CopyDone (or rolls back on an error
//! or CopyFail), so a COPY that fails leaves nothing, as in PostgreSQL.
//! Records are written as they arrive, so memory holds one record.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{stream, Sink, SinkExt};
use pgwire::api::copy::{send_copy_in_response, CopyHandler};
use pgwire::api::results::CopyResponse;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;

use super::errors::to_pgwire;
use super::Connection;
use crate::catalog::naming::quote_ident;
use crate::catalog::TableDef;
use crate::engine::Prepared;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::copy::CopyFrom;
use crate::types::{SqlType, Value};

/// A COPY FROM STDIN under way on a connection.
pub(crate) struct CopyIn {
    plan: CopyFrom,
    /// `INSERT INTO t (cols) VALUES ($1, ...)`, one execution a record.
    insert: Prepared,
    /// The columns the records hold, in order.
    names: Vec<String>,
    types: Vec<SqlType>,
    /// Bytes of a record not complete yet.
    pending: Vec<u8>,
    line: u64,
    rows: u64,
    /// keyclaim opened the block the rows are written in.
    own_block: bool,
    /// The first error: what is sent after stays unread, as in PostgreSQL.
    failed: Option<SqlError>,
    /// The text format's end marker `\.` was read.
    ended: bool,
}

impl Connection {
    /// Start COPY FROM STDIN: resolve the columns, open a block if the
    /// client has none, and ask for the data.
    pub(crate) async fn start_copy<C>(&self, client: &mut C, plan: CopyFrom) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.session.lock().await.txn.is_failed() {
            return Err(to_pgwire(crate::txn::in_failed_block()));
        }
        let engine = &self.shared.engine;
        let view = self.view.get();
        let (table, names) = self.copy_columns(&plan.table, &plan.columns, "to").await?;
        let quoted: Vec<String> = names.iter().map(|n| quote_ident(n)).collect();
        let markers: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            quote_ident(&table.name),
            quoted.join(", "),
            markers.join(", ")
        );
        let insert = engine.prepare_in(&sql, &[], view).await?.remove(0);
        let own_block = !self.session.lock().await.txn.in_block();
        if own_block {
            self.session_statement("BEGIN").await?;
        }
        let columns = names.len();
        // Each field is read as its column's own type (a varchar's length,
        // a numeric's scale), as PostgreSQL's input functions read it.
        let types = names
            .iter()
            .filter_map(|n| table.column_index(n))
            .map(|i| table.columns[i].ty.clone())
            .collect();
        *self.copy_in.lock().await = Some(CopyIn {
            types,
            plan,
            insert,
            names,
            pending: Vec::new(),
            line: 0,
            rows: 0,
            own_block,
            failed: None,
            ended: false,
        });
        client.set_state(PgWireConnectionState::CopyInProgress(false));
        send_copy_in_response(client, CopyResponse::new(0, columns, stream::empty())).await
    }

    /// The table a COPY names and the columns it copies (every column
    /// users see when it lists none), with PostgreSQL's errors: 42P01,
    /// 42809 for a sequence (`direction`: COPY FROM copies "to" it, COPY
    /// TO "from" it), 42703 for a missing column, 42701 for one twice.
    pub(crate) async fn copy_columns(
        &self,
        table: &str,
        columns: &[String],
        direction: &str,
    ) -> SqlResult<(Arc<TableDef>, Vec<String>)> {
        let table = self
            .shared
            .engine
            .table(table, self.view.get())
            .await?
            .ok_or_else(|| SqlError::undefined_table(table))?;
        if table.sequence.is_some() {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("cannot copy {direction} sequence \"{}\"", table.name),
            ));
        }
        let names: Vec<String> = match columns.is_empty() {
            true => table.visible().iter().map(|c| c.name.clone()).collect(),
            false => columns.to_vec(),
        };
        for (n, name) in names.iter().enumerate() {
            if table.column_index(name).is_none() {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    ),
                ));
            }
            if names[..n].contains(name) {
                return Err(SqlError::new(
                    sqlstate::DUPLICATE_COLUMN,
                    format!("column \"{name}\" specified more than once"),
                ));
            }
        }
        Ok((table, names))
    }

    /// A session statement keyclaim runs for the COPY (BEGIN, COMMIT,
    /// ROLLBACK).
    async fn session_statement(&self, sql: &str) -> SqlResult<()> {
        let engine = &self.shared.engine;
        let mut session = self.session.lock().await;
        for p in engine.prepare(sql, &[]).await? {
            engine.execute(&mut session, &p, Vec::new()).await?;
        }
        self.view.set(session.open.as_ref().map(|o| o.id));
        Ok(())
    }

    /// One record: its fields typed and written; an error is kept with
    /// PostgreSQL's CONTEXT for the line.
    async fn copy_record(&self, copy: &mut CopyIn, record: Vec<u8>) {
        copy.line += 1;
        let line = match String::from_utf8(record) {
            Ok(l) => l,
            Err(_) => {
                copy.failed = Some(
                    SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\"")
                        .with_context(format!("COPY {}, line {}", copy.plan.table, copy.line)),
                );
                return;
            }
        };
        // The end marker, in either format (in CSV only unquoted, which a
        // line of just `\.` is).
        if line.trim_end_matches('\r') == "\\." {
            copy.ended = true;
            return;
        }
        if copy.plan.records.header && copy.line == 1 {
            return;
        }
        match self.write_record(copy, &line).await {
            Ok(()) => copy.rows += 1,
            Err(e) => copy.failed = Some(e),
        }
    }

    async fn write_record(&self, copy: &CopyIn, line: &str) -> SqlResult<()> {
        let at = format!("COPY {}, line {}", copy.plan.table, copy.line);
        let whole = || format!("{at}: \"{}\"", line.trim_end_matches('\r'));
        let fields = copy
            .plan
            .records
            .fields(line)
            .map_err(|e| e.with_context(whole()))?;
        if fields.len() > copy.names.len() {
            return Err(
                SqlError::new("22P04", "extra data after last expected column")
                    .with_context(whole()),
            );
        }
        if let Some(missing) = copy.names.get(fields.len()) {
            return Err(
                SqlError::new("22P04", format!("missing data for column \"{missing}\""))
                    .with_context(whole()),
            );
        }
        let mut values = Vec::with_capacity(fields.len());
        for ((field, ty), name) in fields.iter().zip(&copy.types).zip(&copy.names) {
            values.push(match field {
                None => Value::Null,
                // The column's own type (a varchar's length included) is
                // checked here, as PostgreSQL's input function does.
                Some(text) => Value::parse_text(ty, text)
                    .and_then(|v| v.cast_to(ty))
                    .map_err(|e| e.with_context(format!("{at}, column {name}: \"{text}\"")))?,
            });
        }
        let engine = &self.shared.engine;
        let mut session = self.session.lock().await;
        engine
            .execute(&mut session, &copy.insert, values)
            .await
            .map_err(|e| e.with_context(at))?;
        Ok(())
    }

    /// The COPY is over with `failed`: its block rolls back if keyclaim
    /// opened it, else the client's block is failed.
    async fn abandon_copy(&self, copy: &CopyIn) {
        if copy.own_block {
            let _ = self.session_statement("ROLLBACK").await;
        } else {
            self.note_error().await;
        }
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.copy_in.lock().await;
        let Some(copy) = guard.as_mut() else {
            return Ok(());
        };
        if copy.failed.is_some() || copy.ended {
            return Ok(());
        }
        copy.pending.extend_from_slice(&data.data);
        while let Some(end) = copy.plan.records.record_end(&copy.pending) {
            let mut record: Vec<u8> = copy.pending.drain(..=end).collect();
            record.pop();
            self.copy_record(copy, record).await;
            if copy.failed.is_some() || copy.ended {
                copy.pending.clear();
                break;
            }
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(mut copy) = self.copy_in.lock().await.take() else {
            return Ok(());
        };
        // A last record without its newline.
        if copy.failed.is_none() && !copy.ended && !copy.pending.is_empty() {
            let record = std::mem::take(&mut copy.pending);
            self.copy_record(&mut copy, record).await;
        }
        if let Some(e) = copy.failed.take() {
            self.abandon_copy(&copy).await;
            self.after_statement(client).await?;
            return Err(to_pgwire(e));
        }
        if copy.own_block {
            if let Err(e) = self.session_statement("COMMIT").await {
                self.after_statement(client).await?;
                return Err(to_pgwire(e));
            }
        }
        client
            .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                format!("COPY {}", copy.rows),
            )))
            .await?;
        self.after_statement(client).await
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(copy) = self.copy_in.lock().await.take() {
            self.abandon_copy(&copy).await;
        }
        if let Err(e) = self.after_statement(client).await {
            return e;
        }
        to_pgwire(SqlError::new(
            sqlstate::QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
        ))
    }
}
