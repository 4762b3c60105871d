//! The test harness: a keyclaim server in process, on 127.0.0.1 and a free
//! port, over a fresh embedded store; plus tokio-postgres clients for it.
//!
//! ```ignore
//! let server = common::start().await;
//! let client = server.connect().await;
//! let server = common::start_with(|c| c.server.max_connections = 1).await;
//! ```
#![allow(dead_code)] // each test binary uses a different part of it

pub mod raw;

use std::net::SocketAddr;
use std::sync::Arc;

use keyclaim::config::Config;
use keyclaim::engine::Engine;
use keyclaim::server::{RunningServer, Server};
use keyclaim::store::memory::MemoryStore;
use tokio_postgres::{Client, NoTls};

/// The user `connect` logs in as.
pub const USER: &str = "keyclaim";

pub struct TestServer {
    pub addr: SocketAddr,
    pub store: Arc<MemoryStore>,
    running: Option<RunningServer>,
}

/// A server with the default config (trust auth).
pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

/// A server with the default config changed by `configure`; the listen
/// address is always 127.0.0.1:0.
pub async fn start_with(configure: impl FnOnce(&mut Config)) -> TestServer {
    init_logging();
    let mut config = Config::default();
    configure(&mut config);
    config.server.listen = "127.0.0.1:0".into();
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(store.clone(), config.engine_config());
    let server = Server::bind(&config, engine)
        .await
        .expect("test server binds");
    let running = server.spawn();
    TestServer {
        addr: running.addr(),
        store,
        running: Some(running),
    }
}

/// `RUST_LOG=keyclaim=debug cargo test` shows the server's log.
fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

impl TestServer {
    /// A client config for this server, as `user`, without a password.
    pub fn client_config(&self, user: &str) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(self.addr.ip().to_string())
            .port(self.addr.port())
            .user(user)
            .dbname("keyclaim");
        config
    }

    /// A connected client as [`USER`]; panics if it cannot connect.
    pub async fn connect(&self) -> Client {
        self.connect_with(self.client_config(USER))
            .await
            .expect("test client connects")
    }

    /// Connects with `config`, driving the connection in a task of its own.
    pub async fn connect_with(
        &self,
        config: tokio_postgres::Config,
    ) -> Result<Client, tokio_postgres::Error> {
        let (client, connection) = config.connect(NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    /// A bare protocol client, started up as [`USER`], and its startup reply.
    pub async fn raw(&self) -> (raw::RawClient<tokio::net::TcpStream>, raw::Reply) {
        raw::RawClient::connect(self.addr, USER).await
    }

    /// Shuts the server down gracefully and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }
}
