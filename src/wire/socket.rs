//! One client connection from accept to close: TLS negotiation, then
//! pgwire's message loop, with [`Utf8Guard`] between the socket and
//! pgwire's framing (pgwire's `process_socket` offers no place for it).
//!
//! The loop is pgwire's own (`process_socket_messages`), built from its
//! public parts: `negotiate_tls`, `process_message`, `process_error`.

use std::io;
use std::time::Duration;

use futures::StreamExt;
use pgwire::api::PgWireConnectionState;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireServerHandlers};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use pgwire::tokio::TlsAcceptor;
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use super::errors::fatal;
use super::utf8::Utf8Guard;
use super::ConnectionHandlers;
use crate::engine::Prepared;

/// A client that has not finished startup within this long is dropped (as
/// pgwire does).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

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
        negotiated = negotiate_tls::<Prepared>(socket, tls) => negotiated?,
    };
    // None: a direct TLS connection without TLS configured.
    let Some(framed) = negotiated else {
        return Ok(());
    };
    let connection = handlers.connection.clone();
    let parts = framed.into_parts();
    let guard = Utf8Guard::new(parts.io, parts.read_buf, connection.invalid_text.clone());
    let mut guarded = FramedParts::new::<PgWireBackendMessage>(guard, parts.codec);
    guarded.write_buf = parts.write_buf;
    let mut socket = Framed::from_parts(guarded);

    // Every handler but cancel and copy is the connection itself (named
    // concretely: process_message needs its statement type).
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();
    // Whether the client has had ReadyForQuery and owes the next command:
    // only then does a session sit idle in a transaction.
    let mut awaiting_command = false;
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
                None => socket.next().await,
                Some(limit) => match tokio::time::timeout(limit, socket.next()).await {
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
                },
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
        let processed = process_message(
            msg,
            &mut socket,
            connection.clone(),
            connection.clone(),
            connection.clone(),
            copy_handler.clone(),
            cancel_handler.clone(),
        )
        .await;
        if let Err(mut e) = processed {
            connection.on_error(&socket, &mut e);
            let fatal = e.is_fatal();
            process_error(&mut socket, e, wait_for_sync).await?;
            if fatal {
                break;
            }
        }
        if is_cancel_request {
            break;
        }
    }
    Ok(())
}
