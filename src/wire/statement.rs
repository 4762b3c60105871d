//! One statement through the engine, shared by both query protocols: run it
//! under the connection's interrupts, send its notices, and afterwards bring
//! the client's transaction status and ParameterStatus values up to date.

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use pgwire::api::portal::Format;
use pgwire::api::results::{SendableRowStream, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::PgWireBackendMessage;

use super::errors::{notice, to_pgwire};
use super::interrupt::{signal, CancelSignal, Interrupt};
use super::{encode, Connection};
use crate::engine::{Outcome, Prepared};
use crate::error::{sqlstate, SqlError};
use crate::types::Value;

/// What a statement produced, ready for the wire.
pub(crate) enum Ran {
    /// Rows still to stream; `tag` is the command word(s) before the count.
    Rows {
        described: encode::Described,
        tag: String,
        rows: SendableRowStream,
    },
    /// A complete command tag.
    Done { tag: String },
}

/// The commands whose tag PostgreSQL ends with a row count ("SELECT 3",
/// "INSERT 0 3"); others, like SHOW, have none.
const COUNTED: &[&str] = &[
    "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "FETCH", "MOVE", "COPY",
];

pub(crate) fn completion(tag: &str, rows: usize) -> CommandComplete {
    let word = tag.split_whitespace().next().unwrap_or_default();
    if COUNTED.contains(&word) {
        Tag::new(tag).with_rows(rows).into()
    } else {
        Tag::new(tag).into()
    }
}

impl Connection {
    /// A fresh cancel signal for the query about to run: a cancel request
    /// from now on ends it.
    pub(crate) async fn cancel_signal(&self) -> Option<CancelSignal> {
        let (handle, _) = self.cancel.get()?;
        Some(signal(handle.start_query().await))
    }

    /// What may end the work of the protocol message about to run: `cancel`,
    /// and the session's statement_timeout from now.
    pub(crate) async fn interrupt(&self, cancel: Option<CancelSignal>) -> Interrupt {
        Interrupt::new(cancel, self.session.lock().await.statement_timeout())
    }

    /// Runs one statement under `interrupt`. The rows come back unsent: the
    /// caller streams them, under an interrupt of its own choosing.
    pub(crate) async fn run<C>(
        &self,
        client: &mut C,
        prepared: &Prepared,
        params: Vec<Value>,
        result_format: &Format,
        interrupt: &Interrupt,
    ) -> PgWireResult<Ran>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut session = self.session.lock().await;
        self.stop.reset();
        let engine = &self.shared.engine;
        let executed = interrupt
            .guard_write(
                &self.stop,
                engine.execute_until(&mut session, prepared, params, &self.stop),
            )
            .await;
        // Parse plans as the block's transaction from now on (or as none).
        self.view.set(session.open.as_ref().map(|o| o.id));
        let executed = executed?;
        for n in executed
            .notices
            .iter()
            .filter(|n| session.wants_notice(n.severity))
        {
            client
                .feed(PgWireBackendMessage::NoticeResponse(notice(n)))
                .await?;
        }
        drop(session);
        Ok(match executed.outcome {
            Outcome::Rows { columns, rows, tag } => {
                let described = encode::Described::new(columns, result_format)?;
                Ran::Rows {
                    rows: described.data_rows(rows),
                    described,
                    tag,
                }
            }
            Outcome::Deallocate { name: None } => Ran::Done {
                // pgwire's statement store cannot be listed, so the
                // statements stay; a client that prepares a name again
                // replaces it, which is what clients do after this.
                tag: "DEALLOCATE ALL".into(),
            },
            Outcome::Deallocate { name: Some(name) } => {
                let store = client.portal_store();
                if store.get_statement(&name).is_none() {
                    return Err(to_pgwire(SqlError::new(
                        sqlstate::UNDEFINED_PREPARED_STATEMENT,
                        format!("prepared statement \"{name}\" does not exist"),
                    )));
                }
                store.rm_statement(&name);
                Ran::Done {
                    tag: "DEALLOCATE".into(),
                }
            }
            Outcome::Command { tag } | Outcome::TxnStart { tag } | Outcome::TxnEnd { tag } => {
                // PostgreSQL's DISCARD ALL also closes every portal.
                if tag == "DISCARD ALL" {
                    client.portal_store().clear_portals();
                }
                Ran::Done { tag }
            }
        })
    }

    /// After a statement: the transaction status ReadyForQuery will carry,
    /// and ParameterStatus for each reported setting that changed (SET
    /// application_name, a ROLLBACK that undid a SET, ...).
    pub(crate) async fn after_statement<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.set_transaction_status(self.transaction_status().await);
        let changed: Vec<(&'static str, String)> = {
            let session = self.session.lock().await;
            // Reported settings change only with the settings: most
            // statements leave them as the last one did.
            let snapshot = session.settings_snapshot();
            let mut seen = self.reported_from.lock();
            if seen.as_ref().is_some_and(|(settings, local)| {
                Arc::ptr_eq(settings, &snapshot.0) && Arc::ptr_eq(local, &snapshot.1)
            }) {
                return Ok(());
            }
            let heard = seen
                .replace(snapshot)
                .map(|(settings, local)| crate::session::reported_in(&settings, &local))
                .unwrap_or_default();
            session
                .reported()
                .into_iter()
                .filter(|now| !heard.contains(now))
                .collect()
        };
        for (name, value) in changed {
            client
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                    name.to_owned(),
                    value,
                )))
                .await?;
        }
        Ok(())
    }

    /// A statement failed: a block it ran in is now failed.
    pub(crate) async fn note_error(&self) {
        self.session.lock().await.note_error();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_row_counting_commands_carry_a_count() {
        assert_eq!(completion("SELECT", 3).tag, "SELECT 3");
        assert_eq!(completion("INSERT 0", 2).tag, "INSERT 0 2");
        assert_eq!(completion("UPDATE", 0).tag, "UPDATE 0");
        assert_eq!(completion("SHOW", 1).tag, "SHOW");
    }
}
