//! The listener: accepts connections up to `max_connections`, negotiates
//! TLS, serves each connection in its own task and span, and shuts down
//! gracefully: stop accepting, close idle connections, give running
//! statements a grace period, then close the rest.

mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, field, info, info_span, warn, Instrument};

use crate::config::{Config, StoreConfig, StoreKind};
use crate::engine::Engine;
use crate::store::cassandra::CassandraStore;
use crate::store::memory::MemoryStore;
use crate::store::Store;
use crate::wire::{Activity, ConnectionHandlers, Service};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}

/// The store `[store]` names; for Cassandra, connected and with its
/// keyspace and tables in place.
pub async fn open_store(config: &StoreConfig) -> Result<Arc<dyn Store>, ServerError> {
    match config.kind {
        StoreKind::Memory => {
            info!(
                store = "memory",
                "using the embedded in-memory store: it keeps nothing after keyclaim exits"
            );
            Ok(Arc::new(MemoryStore::new()))
        }
        StoreKind::Cassandra => Ok(Arc::new(
            CassandraStore::connect(config)
                .await
                .map_err(ServerError::Setup)?,
        )),
    }
}

/// Adopts the existing tables `[[store.adopt]]` lists, before serving.
pub async fn adopt_tables(engine: &Engine, config: &StoreConfig) -> Result<(), ServerError> {
    for entry in &config.adopt {
        engine.adopt(entry).await.map_err(|e| {
            let detail = e
                .detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            ServerError::Setup(format!(
                "[[store.adopt]] table \"{}\" ({}): {}{detail}",
                entry.table, entry.cql_table, e.message
            ))
        })?;
    }
    Ok(())
}

/// A bound listener, ready to [`run`](Server::run).
pub struct Server {
    listener: TcpListener,
    service: Service,
    tls: Option<TlsAcceptor>,
    limit: Arc<Semaphore>,
    grace: Duration,
}

impl Server {
    /// Binds `[server] listen` (port 0 picks a free port; see
    /// [`local_addr`](Server::local_addr)) and prepares TLS and auth.
    pub async fn bind(config: &Config, engine: Engine) -> Result<Server, ServerError> {
        let tls = match config.tls.enabled {
            true => Some(tls::load(&config.tls).map_err(ServerError::Setup)?),
            false => None,
        };
        let cert_pem = tls.as_ref().map(|t| t.cert_pem.as_slice());
        let service = Service::new(config, engine, cert_pem).map_err(ServerError::Setup)?;
        let bind_error = |source| ServerError::Bind {
            addr: config.server.listen.clone(),
            source,
        };
        let addr = config.listen_addr().map_err(bind_error)?;
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        Ok(Server {
            listener,
            service,
            tls: tls.map(|t| t.acceptor),
            limit: Arc::new(Semaphore::new(config.server.max_connections)),
            grace: Duration::from_millis(config.server.shutdown_grace_ms),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until `shutdown` resolves, then shuts down gracefully.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let Server {
            listener,
            service,
            tls,
            limit,
            grace,
        } = self;
        let (stop, stopping) = watch::channel(false);
        let mut connections = JoinSet::new();
        let mut next_id: u64 = 0;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        next_id += 1;
                        let permit = limit.clone().try_acquire_owned().ok();
                        if permit.is_none() {
                            info!(%peer, "max_connections reached: refusing a connection");
                        }
                        let (handlers, activity) = service.connection(permit.is_none());
                        let span = info_span!("connection", id = next_id, %peer, user = field::Empty);
                        let connection = Connection { socket, tls: tls.clone(), handlers, activity, permit };
                        connections.spawn(connection.serve(stopping.clone()).instrument(span));
                    }
                    // Running out of file descriptors, say: back off, keep serving.
                    Err(e) => {
                        warn!(cause = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        info!(
            open = connections.len(),
            "shutting down: accepting no more connections, closing idle ones"
        );
        stop.send_replace(true);
        let drained = tokio::time::timeout(grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            warn!(
                open = connections.len(),
                grace_ms = grace.as_millis() as u64,
                "grace period over: closing connections with statements still running"
            );
            connections.shutdown().await;
        }
        info!("stopped");
    }

    /// Runs in the background until [`RunningServer::shutdown`] (or until the
    /// handle is dropped).
    pub fn spawn(self) -> RunningServer {
        let addr = self.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(self.run(async {
            let _ = stopped.await;
        }));
        RunningServer {
            addr,
            stop: Some(stop),
            task,
        }
    }
}

/// A server running in a task of its own.
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Shuts down gracefully and waits until it has.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

struct Connection {
    socket: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: ConnectionHandlers,
    activity: Activity,
    /// Held for the connection's life; None for a refused connection.
    permit: Option<OwnedSemaphorePermit>,
}

impl Connection {
    async fn serve(self, mut stopping: watch::Receiver<bool>) {
        let Connection {
            socket,
            tls,
            handlers,
            mut activity,
            permit,
        } = self;
        debug!("connection opened");
        let closing = async {
            // An Err means the server is gone: close too.
            let _ = stopping.wait_for(|stop| *stop).await;
            activity.idle().await;
        };
        tokio::select! {
            served = crate::wire::serve(socket, tls, handlers) => {
                if let Err(e) = served {
                    debug!(cause = %e, "connection ended with an error");
                }
            }
            _ = closing => debug!("closing the connection for shutdown"),
        }
        drop(permit);
        debug!("connection closed");
    }
}
