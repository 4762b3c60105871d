//! One client connection from accept to close: TLS negotiation, then
//! pgwire's message loop, with [`Utf8Guard`] between the socket and
//! pgwire's framing (pgwire's `process_socket` offers no place for it).
//!
//! The loop is pgwire's own (`process_socket_messages`), built from its
//! public parts: `negotiate_tls`, `process_message`, `process_error`. It
//! adds two things PostgreSQL does: output is corked ([`Corked`]) while the
//! client is not yet owed an answer, and a connection that sits idle gives
//! its buffers back ([`IDLE_AFTER`]).

use std::io;
use std::pin::Pin;
use std::time::Duration;

use bytes::BytesMut;
use futures::SinkExt;
use futures::StreamExt;
use pgwire::api::PgWireConnectionState;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireServerHandlers};
use pgwire::error::PgWireError;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{
    negotiate_tls, process_error, process_message, MaybeTls, PgWireMessageServerCodec,
};
use pgwire::tokio::TlsAcceptor;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::codec::{Framed, FramedParts};

use super::cork::Corked;
use super::errors::fatal;
use super::utf8::Utf8Guard;
use super::ConnectionHandlers;
use crate::engine::Prepared;

/// A client that has not finished startup within this long is dropped (as
/// pgwire does).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection that has had no message for this long gives back its read
/// and write buffers, so thousands of idle clients cost little memory; the
/// next message grows them again.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// Messages PostgreSQL answers lazily: their replies wait for the Sync or
/// Flush that follows (or for more output than the cork holds).
fn answered_lazily(msg: &PgWireFrontendMessage) -> bool {
    matches!(
        msg,
        PgWireFrontendMessage::Parse(_)
            | PgWireFrontendMessage::Bind(_)
            | PgWireFrontendMessage::Describe(_)
            | PgWireFrontendMessage::Execute(_)
            | PgWireFrontendMessage::Close(_)
    )
}

type Socket = Framed<Corked<Utf8Guard<MaybeTls>>, PgWireMessageServerCodec<Prepared>>;

/// Gives a connection's buffers back once it has had no message for
/// [`IDLE_AFTER`]. One timer per connection, reset about once a second
/// while messages come (not once per message), and stopped while idle.
struct Idle {
    timer: Pin<Box<Sleep>>,
    /// A message came since the timer was last reset.
    active: bool,
    /// False once the buffers are given back, until the next message.
    armed: bool,
}

impl Idle {
    fn new() -> Idle {
        Idle {
            timer: Box::pin(tokio::time::sleep(IDLE_AFTER)),
            active: false,
            armed: true,
        }
    }

    fn note_message(&mut self) {
        self.active = true;
        if !self.armed {
            self.armed = true;
            self.timer.as_mut().reset(Instant::now() + IDLE_AFTER);
        }
    }
}

/// The next message, giving the connection's buffers back while none
/// comes.
async fn next_message(
    socket: &mut Socket,
    idle: &mut Idle,
) -> Option<Result<PgWireFrontendMessage, PgWireError>> {
    loop {
        if !idle.armed {
            let msg = socket.next().await;
            idle.note_message();
            return msg;
        }
        tokio::select! {
            biased;
            msg = socket.next() => {
                idle.note_message();
                return msg;
            }
            () = idle.timer.as_mut() => {
                if std::mem::take(&mut idle.active) {
                    idle.timer.as_mut().reset(Instant::now() + IDLE_AFTER);
                } else {
                    release_idle_memory(socket);
                    idle.armed = false;
                }
            }
        }
    }
}

fn release_idle_memory(socket: &mut Socket) {
    if socket.read_buffer().is_empty() {
        *socket.read_buffer_mut() = BytesMut::new();
    }
    if socket.write_buffer().is_empty() {
        *socket.write_buffer_mut() = BytesMut::new();
    }
    let corked = socket.get_mut();
    corked.release_idle_memory();
    corked.get_mut().release_idle_memory();
}

/// Serves one client connection until it closes.
pub async fn serve(
    socket: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: ConnectionHandlers,
) -> io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        // Boxed, as a message's work is below: only the connection's
        // idle state stays in its task.
        negotiated = Box::pin(negotiate_tls::<Prepared>(socket, tls)) => negotiated?,
    };
    // None: a direct TLS connection without TLS configured.
    let Some(framed) = negotiated else {
        return Ok(());
    };
    let connection = handlers.connection.clone();
    let parts = framed.into_parts();
    // Only the bytes, not the framing's 8 KB buffers: buffers grow with
    // the messages, so a connection that idles never held large ones
    // (memory given back after a burst of connections would stay with the
    // allocator, counted in the process's resident set).
    let (read, written) = (
        BytesMut::from(&parts.read_buf[..]),
        BytesMut::from(&parts.write_buf[..]),
    );
    // Dropped now: left in `parts`, they would live as long as the
    // connection.
    drop((parts.read_buf, parts.write_buf));
    let guard = Utf8Guard::new(parts.io, read, connection.invalid_text.clone());
    let mut guarded = FramedParts::new::<PgWireBackendMessage>(Corked::new(guard), parts.codec);
    guarded.write_buf = written;
    let mut socket = Framed::from_parts(guarded);
    release_idle_memory(&mut socket);

    // Every handler but cancel and copy is the connection itself (named
    // concretely: process_message needs its statement type).
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();
    // Whether the client has had ReadyForQuery and owes the next command:
    // only then does a session sit idle in a transaction.
    let mut awaiting_command = false;
    let mut idle = Idle::new();
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let msg = if starting {
            tokio::select! {
                _ = &mut startup_timeout => None,
                msg = socket.next() => msg,
            }
        } else {
            let idle_limit = match awaiting_command {
                true => connection
                    .session
                    .lock()
                    .await
                    .idle_in_transaction_timeout(),
                false => None,
            };
            match idle_limit {
                None => next_message(&mut socket, &mut idle).await,
                Some(limit) => {
                    match tokio::time::timeout(limit, next_message(&mut socket, &mut idle)).await {
                        Ok(msg) => msg,
                        // As PostgreSQL: FATAL, and the connection ends; the
                        // block's transaction rolls back with it.
                        Err(_) => {
                            let e = fatal(
                                "25P03",
                                "terminating connection due to idle-in-transaction timeout",
                            );
                            process_error(&mut socket, e, false).await?;
                            break;
                        }
                    }
                }
            }
        };
        let Some(Ok(msg)) = msg else {
            break;
        };
        awaiting_command = matches!(
            msg,
            PgWireFrontendMessage::Query(_) | PgWireFrontendMessage::Sync(_)
        );
        // Terminate: the client is leaving; close rather than wait for it.
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let wait_for_sync = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        let is_cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        let lazy = answered_lazily(&msg);
        socket.get_mut().set_corked(lazy);
        // Boxed: a message's work is kilobytes of future, which inline
        // would stay allocated in the connection's task while it idles.
        let processed = Box::pin(process_message(
            msg,
            &mut socket,
            connection.clone(),
            connection.clone(),
            connection.clone(),
            copy_handler.clone(),
            cancel_handler.clone(),
        ))
        .await;
        let mut fatal = false;
        if let Err(mut e) = processed {
            connection.on_error(&socket, &mut e);
            fatal = e.is_fatal();
            process_error(&mut socket, e, wait_for_sync).await?;
        }
        if !lazy || fatal {
            socket.get_mut().set_corked(false);
            socket.flush().await?;
        }
        if fatal {
            break;
        }
        if is_cancel_request {
            break;
        }
    }
    Ok(())
}
