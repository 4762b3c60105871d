//! The PostgreSQL protocol, through pgwire: startup and authentication,
//! simple and extended query, cancel requests, and the translation between
//! the engine's values and errors and protocol messages.
//!
//! pgwire's handlers are built per connection here ([`Service::connection`]),
//! so a connection's [`Session`] lives in its handler rather than in a map
//! keyed by connection.
//!
//! - `startup`: StartupHandler: session, authentication, ParameterStatus.
//! - `auth`: configured users and the password mechanisms.
//! - `statement`: one statement through the engine: interrupts, notices,
//!   transaction status, ParameterStatus after SET.
//! - `simple` / `extended`: the two query protocols.
//! - `encode`: RowDescription, DataRow and Bind parameter formats.
//! - `interrupt`: cancel requests and statement_timeout.
//! - `errors`: SqlError and pgwire errors as ErrorResponses.
//! - `socket`: one connection's message loop (pgwire's, with the guard).
//! - `utf8`: invalid UTF-8 in query text, seen on the raw bytes (22021).

mod auth;
mod copy;
mod copy_out;
mod cork;
mod encode;
mod errors;
mod extended;
mod interrupt;
mod simple;
mod socket;
mod startup;
mod statement;
mod utf8;

pub use socket::serve;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use pgwire::api::auth::AuthDriver;
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::api::{
    ClientInfo, ConnectionGuard, ConnectionHandle, ConnectionManager, ErrorHandler,
    PgWireServerHandlers,
};
use pgwire::error::PgWireError;
use pgwire::messages::response::TransactionStatus;
use tokio::sync::Notify;

use crate::config::Config;
use crate::engine::Engine;
use crate::session::Session;

/// What every connection of one server shares.
pub struct Service {
    shared: Arc<Shared>,
}

struct Shared {
    engine: Engine,
    auth: auth::Authenticator,
    driver: AuthDriver<startup::ReportedParameters>,
    cancels: Arc<ConnectionManager>,
    cancel_handler: Arc<DefaultCancelHandler>,
}

impl Service {
    /// `tls_cert_pem` is the server certificate when TLS is on (SCRAM binds
    /// to it for SCRAM-SHA-256-PLUS).
    pub fn new(
        config: &Config,
        engine: Engine,
        tls_cert_pem: Option<&[u8]>,
    ) -> Result<Service, String> {
        let cancels = Arc::new(ConnectionManager::new());
        let shared = Shared {
            auth: auth::Authenticator::new(&config.auth, tls_cert_pem)?,
            driver: AuthDriver::new(startup::ReportedParameters),
            cancel_handler: Arc::new(DefaultCancelHandler::new(cancels.clone())),
            cancels,
            engine,
        };
        Ok(Service {
            shared: Arc::new(shared),
        })
    }

    /// The handlers of one new connection, and a view of whether it is
    /// running a statement. `refused` connections only get to hear
    /// 53300 "sorry, too many clients already" (and may still cancel).
    pub fn connection(&self, refused: bool) -> (ConnectionHandlers, Activity) {
        let busy = Arc::new(BusyFlag::default());
        let invalid_text = Arc::new(utf8::InvalidText::default());
        let view = crate::txn::PlanView::default();
        let connection = Arc::new(Connection {
            parser: Arc::new(extended::Parser::new(
                self.shared.engine.clone(),
                invalid_text.clone(),
                view.clone(),
            )),
            invalid_text,
            view,
            stop: crate::stop::Stop::default(),
            shared: self.shared.clone(),
            refused,
            session: tokio::sync::Mutex::new(Session::default()),
            reported_from: parking_lot::Mutex::new(None),
            copy_in: tokio::sync::Mutex::new(None),
            cancel: OnceLock::new(),
            busy: busy.clone(),
        });
        let handlers = ConnectionHandlers {
            cancel: self.shared.cancel_handler.clone(),
            connection,
        };
        (handlers, Activity(busy))
    }
}

/// Whether a connection is in the middle of a statement; shutdown closes
/// a connection only between statements.
pub struct Activity(Arc<BusyFlag>);

/// A connection's busy flag and the wake-up of whoever waits for it to
/// clear: a few words per connection (a watch channel took about 350
/// bytes of every idle connection).
#[derive(Default)]
struct BusyFlag {
    busy: AtomicBool,
    cleared: Notify,
}

impl Activity {
    /// Resolves once no statement is running (at once if none is).
    pub async fn idle(&mut self) {
        loop {
            let cleared = self.0.cleared.notified();
            tokio::pin!(cleared);
            // Registered before the flag is read, so a clearing between
            // the two is not missed.
            cleared.as_mut().enable();
            if !self.0.busy.load(Ordering::SeqCst) {
                return;
            }
            cleared.await;
        }
    }
}

/// One connection's state, and the pgwire handlers that use it.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    refused: bool,
    /// How an interrupt reaches the running statement's writes.
    stop: crate::stop::Stop,
    /// Query and Parse messages whose text was not UTF-8 (utf8::Utf8Guard).
    invalid_text: Arc<utf8::InvalidText>,
    parser: Arc<extended::Parser>,
    /// The transaction its statements are planned as, kept in step with
    /// the session's open block after every statement.
    view: crate::txn::PlanView,
    /// Locked while a statement runs; never contended, since pgwire handles
    /// one message of a connection at a time.
    session: tokio::sync::Mutex<Session>,
    /// The session's settings when they were last reported
    /// (`Session::settings_snapshot`): the values the client last heard
    /// are worked out from them when the settings change
    /// (`session::reported_in`), not kept for every connection.
    reported_from: parking_lot::Mutex<Option<(crate::session::Settings, crate::session::Settings)>>,
    /// Registered with the server's cancel registry once authenticated;
    /// the guard unregisters it when the connection ends.
    cancel: OnceLock<(Arc<ConnectionHandle>, ConnectionGuard)>,
    busy: Arc<BusyFlag>,
    /// A COPY FROM STDIN under way (`wire::copy`).
    copy_in: tokio::sync::Mutex<Option<copy::CopyIn>>,
}

/// A connection that ends inside a block rolls its transaction back, as
/// PostgreSQL does; its intents then vanish for everyone at once. Its
/// advisory locks go too (session and transaction level alike).
impl Drop for Connection {
    fn drop(&mut self) {
        let session = self.session.get_mut();
        let open = session.open.take();
        let locks = std::mem::take(&mut session.advisory);
        if open.is_none() && locks.holder.is_none() {
            return;
        }
        let engine = self.shared.engine.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Some(open) = open {
                    engine.abort(open).await;
                }
                engine.end_session(locks).await;
            });
        }
    }
}

/// Marks the connection busy until dropped.
struct Busy<'a>(&'a BusyFlag);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::SeqCst);
        self.0.cleared.notify_waiters();
    }
}

impl Connection {
    fn busy(&self) -> Busy<'_> {
        self.busy.busy.store(true, Ordering::SeqCst);
        Busy(&self.busy)
    }

    async fn transaction_status(&self) -> TransactionStatus {
        match self.session.lock().await.txn.status() {
            b'T' => TransactionStatus::Transaction,
            b'E' => TransactionStatus::Error,
            _ => TransactionStatus::Idle,
        }
    }
}

impl ErrorHandler for Connection {
    fn on_error<C: ClientInfo>(&self, client: &C, error: &mut PgWireError) {
        // Any error inside a block fails it, including the ones pgwire
        // raises before a statement runs (Parse, Bind, Describe). The
        // session is free here: the message that failed has been handled.
        if !error.is_fatal() {
            if let Ok(mut session) = self.session.try_lock() {
                session.note_error();
            }
        }
        errors::on_error(client, error);
    }
}

/// pgwire's view of one connection: every handler is the connection itself,
/// except cancel requests, which arrive on connections of their own.
pub struct ConnectionHandlers {
    connection: Arc<Connection>,
    cancel: Arc<DefaultCancelHandler>,
}

impl PgWireServerHandlers for ConnectionHandlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        self.connection.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        self.connection.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.connection.clone()
    }

    fn error_handler(&self) -> Arc<impl ErrorHandler> {
        self.connection.clone()
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        self.connection.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancel.clone()
    }
}
