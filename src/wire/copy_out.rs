//! COPY ... TO STDOUT: the rows of a query (`SELECT cols FROM t`, or the
//! statement's own query) run as any query runs, under the connection's
//! interrupts and in its transaction, and go out as COPY records (text or
//! CSV, written by `sql::copy::Records`), one CopyData each, as they
//! stream: memory holds one row. An error mid-way ends the COPY with an
//! ErrorResponse, as PostgreSQL's does.

use std::borrow::Cow;
use std::fmt::Debug;

use bytes::Bytes;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::portal::Format;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::data::DataRow;
use pgwire::messages::PgWireBackendMessage;

use super::errors::to_pgwire;
use super::interrupt::Interrupt;
use super::statement::{completion, Ran};
use super::Connection;
use crate::catalog::naming::quote_ident;
use crate::error::{SqlError, SqlResult};
use crate::sql::copy::{CopySource, CopyTo};

impl Connection {
    pub(crate) async fn copy_out<C>(
        &self,
        client: &mut C,
        plan: CopyTo,
        interrupt: &Interrupt,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sql = self.copy_query(&plan.source).await?;
        let statement = crate::sql::parse(&sql)?.remove(0);
        let prepared = interrupt
            .guard(
                self.shared
                    .engine
                    .prepare_statement(statement, &sql, &[], self.view.get()),
            )
            .await?;
        if prepared.plan.kind() != "select" || prepared.plan.locks_rows() {
            return Err(to_pgwire(SqlError::unsupported(
                "COPY of a query other than a plain SELECT is not supported",
                "run the statement, then COPY (SELECT ...) TO STDOUT what it wrote",
            )));
        }
        let ran = self
            .run(
                client,
                &prepared,
                Vec::new(),
                &Format::UnifiedText,
                interrupt,
            )
            .await?;
        let Ran::Rows {
            described,
            mut rows,
            ..
        } = ran
        else {
            return Err(to_pgwire(SqlError::internal("a SELECT returns rows")));
        };
        let records = &plan.records;
        client
            .send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                0,
                described.columns.len() as i16,
                vec![0; described.columns.len()],
            )))
            .await?;
        if records.header {
            let names = records.record(described.columns.iter().map(|c| Some(c.name.as_str())));
            client
                .feed(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(
                    names,
                ))))
                .await?;
        }
        let streaming = async {
            let mut count = 0;
            while let Some(row) = rows.next().await {
                let row = row?;
                let line = records.record(text_fields(&row).iter().map(|f| f.as_deref()));
                client
                    .feed(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(
                        line,
                    ))))
                    .await?;
                count += 1;
            }
            PgWireResult::Ok(count)
        };
        let count = interrupt.guard(streaming).await?;
        client
            .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
            .await?;
        client
            .feed(PgWireBackendMessage::CommandComplete(completion(
                "COPY", count,
            )))
            .await?;
        self.after_statement(client).await
    }

    /// The query a COPY TO runs: its own, or `SELECT cols FROM t` once the
    /// table and columns are found (`copy_columns`).
    async fn copy_query(&self, source: &CopySource) -> SqlResult<String> {
        let (table, columns) = match source {
            CopySource::Query(q) => return Ok(q.clone()),
            CopySource::Table { table, columns } => (table, columns),
        };
        let (t, names) = self.copy_columns(table, columns, "from").await?;
        let quoted: Vec<String> = names.iter().map(|n| quote_ident(n)).collect();
        Ok(format!(
            "SELECT {} FROM {}",
            quoted.join(", "),
            quote_ident(&t.name)
        ))
    }
}

/// A text-format DataRow's fields (None is NULL): each an Int32 length
/// (-1 for NULL) and that many bytes.
fn text_fields(row: &DataRow) -> Vec<Option<Cow<'_, str>>> {
    let mut out = Vec::with_capacity(row.field_count.max(0) as usize);
    let mut data: &[u8] = &row.data;
    for _ in 0..row.field_count {
        let Some((len, rest)) = data.split_first_chunk::<4>() else {
            break;
        };
        let len = i32::from_be_bytes(*len);
        if len < 0 {
            out.push(None);
            data = rest;
            continue;
        }
        let (field, rest) = rest.split_at((len as usize).min(rest.len()));
        out.push(Some(String::from_utf8_lossy(field)));
        data = rest;
    }
    out
}
