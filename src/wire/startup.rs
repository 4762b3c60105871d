//! Startup: the connection limit, the session from the startup packet,
//! authentication, the ParameterStatus values, and cancel registration.

use std::collections::HashMap;
use std::fmt::Debug;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthOutcome,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, METADATA_DATABASE, METADATA_USER};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::errors::fatal;
use super::Connection;
use crate::session::Session;

/// The session's reported settings, left in the connection's extensions
/// for [`ReportedParameters`], which pgwire asks without the connection at
/// hand, once, when the client is authenticated; taken then, so an idle
/// connection does not keep them.
struct Reported(parking_lot::Mutex<Option<HashMap<String, String>>>);

/// ParameterStatus at startup: the values the session starts with.
pub(crate) struct ReportedParameters;

impl ServerParameterProvider for ReportedParameters {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        client
            .session_extensions()
            .get::<Reported>()
            .and_then(|r| r.0.lock().take())
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let driver = &self.shared.driver;
        let outcome = match message {
            PgWireFrontendMessage::Startup(startup) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                if self.refused {
                    return Err(fatal("53300", "sorry, too many clients already"));
                }
                self.open_session(client).await?;
                match self.shared.auth.mechanism(client.is_secure()) {
                    Some(mechanism) => driver.begin_authentication(client, mechanism).await?,
                    None => AuthOutcome::Authenticated {
                        identity: None,
                        final_message: None,
                    },
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                driver.advance_authentication(client, message).await?
            }
            _ => return Ok(()),
        };
        if let AuthOutcome::Authenticated { final_message, .. } = outcome {
            driver
                .complete_authentication(client, final_message)
                .await?;
            self.register_cancel(client);
            tracing::info!("connection ready");
        }
        Ok(())
    }
}

impl Connection {
    /// The session from the startup packet. It exists before authentication
    /// because ParameterStatus, sent on success, reports its settings.
    async fn open_session<C: ClientInfo>(&self, client: &C) -> PgWireResult<()> {
        let metadata = client.metadata();
        let user = metadata
            .get(METADATA_USER)
            .ok_or(PgWireError::UserNameRequired)?;
        // PostgreSQL's default database is the user's name.
        let database = metadata.get(METADATA_DATABASE).unwrap_or(user);
        tracing::Span::current().record("user", user.as_str());
        let mut session = Session::new(user, database, metadata);
        session.cursors = crate::session::cursors::Cursors::sharing(self.view.cursors());
        *self.reported_from.lock() = Some(session.settings_snapshot());
        let reported = session
            .reported()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        client
            .session_extensions()
            .insert(Reported(parking_lot::Mutex::new(Some(reported))));
        *self.session.lock().await = session;
        Ok(())
    }

    /// Makes the (pid, secret key) pgwire sent in BackendKeyData cancel this
    /// connection's statements.
    fn register_cancel<C: ClientInfo>(&self, client: &C) {
        let (pid, secret) = client.pid_and_secret_key();
        let registration = self.shared.cancels.register(pid, secret);
        // Authentication completes once per connection, so this is the only set.
        let _ = self.cancel.set(registration);
    }
}
