//! The test harness: a keyclaim server in process, on 127.0.0.1 and a free
//! port, over a fresh embedded store; plus tokio-postgres clients for it.
//!
//! With `KEYCLAIM_TEST_CASSANDRA=host:port` the store is Cassandra instead:
//! each test server gets a fresh keyspace, dropped when the server is. On a
//! cluster, name several nodes (`host:port,host:port,...`) and say how the
//! keyspaces replicate: `KEYCLAIM_TEST_CASSANDRA_DC` (the local datacenter:
//! NetworkTopologyStrategy in it) and `KEYCLAIM_TEST_CASSANDRA_RF` (default 1).
//!
//! ```ignore
//! let server = common::start().await;
//! let client = server.connect().await;
//! let server = common::start_with(|c| c.server.max_connections = 1).await;
//! ```

pub mod history;
pub mod process;
pub mod proxies;
pub mod raw;

use std::net::SocketAddr;
use std::sync::Arc;

use keyclaim::config::{Config, StoreKind};
use keyclaim::engine::Engine;
use keyclaim::server::{RunningServer, Server};
use keyclaim::store::cassandra::CassandraStore;
use keyclaim::store::memory::MemoryStore;
use keyclaim::store::Store;
use tokio_postgres::{Client, NoTls};

/// The real PostgreSQL the differential tests compare with, from
/// `KEYCLAIM_TEST_PG` (`host=... port=... user=...`; .ci/run starts one).
pub struct TestPostgres {
    pub host: String,
    pub port: String,
    pub user: String,
}

/// The PostgreSQL `KEYCLAIM_TEST_PG` names, if it is set.
pub fn test_postgres() -> Option<TestPostgres> {
    let spec = std::env::var("KEYCLAIM_TEST_PG").ok()?;
    let get = |k: &str| {
        spec.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .map(str::to_owned)
    };
    Some(TestPostgres {
        host: get("host").unwrap_or_else(|| "127.0.0.1".into()),
        port: get("port").unwrap_or_else(|| "5432".into()),
        user: get("user").unwrap_or_else(|| "postgres".into()),
    })
}

/// Where two transcripts (PostgreSQL's, keyclaim's) first differ.
pub fn first_difference(a: &str, b: &str) -> String {
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  postgres: {x}\n  keyclaim: {y}", n + 1);
        }
    }
    format!(
        "one transcript is longer: postgres {} lines, keyclaim {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

/// The user `connect` logs in as.
pub const USER: &str = "keyclaim";

/// The Cassandra node (or nodes, comma-separated) the suites run against, if any.
pub const CASSANDRA_ENV: &str = "KEYCLAIM_TEST_CASSANDRA";

/// The nodes `KEYCLAIM_TEST_CASSANDRA` names, if it is set.
pub fn cassandra_nodes() -> Option<Vec<String>> {
    let nodes = std::env::var(CASSANDRA_ENV).ok()?;
    Some(nodes.split(',').map(|n| n.trim().to_owned()).collect())
}

/// A store for one test: embedded, or a fresh Cassandra keyspace that is
/// dropped with this value (or by [`TestStore::cleanup`]).
pub struct TestStore {
    pub store: Arc<dyn Store>,
    cassandra: Option<Arc<CassandraStore>>,
}

/// Points `config` at the test Cassandra when there is one.
pub fn configure_store(config: &mut Config) {
    if let Some(nodes) = cassandra_nodes() {
        config.store.kind = StoreKind::Cassandra;
        config.store.contact_points = nodes;
        config.store.local_datacenter = std::env::var("KEYCLAIM_TEST_CASSANDRA_DC").ok();
        config.store.replication_factor = env_or("KEYCLAIM_TEST_CASSANDRA_RF", 1) as u32;
        let id = uuid::Uuid::new_v4().simple().to_string();
        config.store.keyspace = format!("kc_test_{}", &id[..20]);
        // A short refresh keeps index builds (which wait for it) quick.
        config.store.catalog_refresh_ms = 50;
    }
}

impl TestStore {
    /// The store `config.store` names (see [`configure_store`]).
    pub async fn open(config: &Config) -> TestStore {
        match config.store.kind {
            StoreKind::Memory => TestStore {
                store: Arc::new(MemoryStore::new()),
                cassandra: None,
            },
            StoreKind::Cassandra => {
                let c = Arc::new(
                    CassandraStore::connect(&config.store)
                        .await
                        .expect("test Cassandra store connects"),
                );
                TestStore {
                    store: c.clone(),
                    cassandra: Some(c),
                }
            }
        }
    }

    /// A fresh store of the kind the environment asks for.
    pub async fn fresh() -> TestStore {
        let mut config = Config::default();
        configure_store(&mut config);
        TestStore::open(&config).await
    }

    pub fn on_cassandra(&self) -> bool {
        self.cassandra.is_some()
    }

    /// The Cassandra store, when the tests run on one.
    pub fn cassandra(&self) -> Option<&Arc<CassandraStore>> {
        self.cassandra.as_ref()
    }

    /// Drops the test keyspace now, on this runtime. A cluster busy with
    /// schema changes (or Cassandra 4.0-rc1's schema merge errors) may
    /// refuse for a while: tried three times, then left behind with a note,
    /// since what a test checks is not its cleanup.
    pub async fn cleanup(mut self) {
        if let Some(c) = self.cassandra.take() {
            for attempt in 1..=3 {
                match drop_keyspace(c.session(), c.keyspace()).await {
                    Ok(()) => return,
                    Err(e) if attempt == 3 => eprintln!("left behind: {e}"),
                    Err(_) => tokio::time::sleep(std::time::Duration::from_secs(5)).await,
                }
            }
        }
    }
}

async fn drop_keyspace(
    session: &scylla::client::session::Session,
    keyspace: &str,
) -> Result<(), String> {
    // A schema change flushes the schema tables (and, with auto_snapshot,
    // snapshots the keyspace): on a slow disk it has taken longer than the
    // store's 10 s request timeout, failing a test that had passed.
    let mut drop = scylla::statement::unprepared::Statement::new(format!(
        "DROP KEYSPACE IF EXISTS {keyspace}"
    ));
    drop.set_request_timeout(Some(std::time::Duration::from_secs(120)));
    session
        .query_unpaged(drop, ())
        .await
        .map(|_| ())
        .map_err(|e| format!("dropping the test keyspace {keyspace}: {e}"))
}

impl Drop for TestStore {
    /// A test that ends without `cleanup` still leaves no keyspace behind.
    /// Its runtime may be blocked here, so the drop runs on a runtime and
    /// driver session of its own.
    fn drop(&mut self) {
        let Some(c) = self.cassandra.take() else {
            return;
        };
        let keyspace = c.keyspace().to_owned();
        let Some(nodes) = cassandra_nodes() else {
            return;
        };
        // Never panic here: this may run while a failed test unwinds.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let session = scylla::client::session_builder::SessionBuilder::new()
                    .known_nodes(nodes)
                    .build()
                    .await
                    .map_err(|e| e.to_string())?;
                drop_keyspace(&session, &keyspace).await
            })
        });
        if let Ok(Err(e)) = cleanup.join() {
            eprintln!("{e}");
        }
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub store: Arc<dyn Store>,
    /// The server's engine, for its claim protocol counters.
    pub engine: Engine,
    running: Option<RunningServer>,
    test_store: Option<TestStore>,
}

/// A server with the default config (trust auth).
pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

/// A server with the default config changed by `configure`; the listen
/// address is always 127.0.0.1:0.
pub async fn start_with(configure: impl FnOnce(&mut Config)) -> TestServer {
    start_layered(configure, |store| store).await
}

/// As [`start_with`], with the engine's store wrapped by `layer` (a fault or
/// latency injector; `TestServer::store` stays the bare store).
pub async fn start_layered(
    configure: impl FnOnce(&mut Config),
    layer: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>,
) -> TestServer {
    init_logging();
    let mut config = Config::default();
    configure_store(&mut config);
    configure(&mut config);
    config.server.listen = "127.0.0.1:0".into();
    let test_store = TestStore::open(&config).await;
    let store = test_store.store.clone();
    let engine = Engine::new(layer(store.clone()), config.engine_config());
    keyclaim::server::adopt_tables(&engine, &config.store)
        .await
        .expect("the configured tables are adopted");
    let server = Server::bind(&config, engine.clone())
        .await
        .expect("test server binds");
    let running = server.spawn();
    TestServer {
        addr: running.addr(),
        store,
        engine,
        running: Some(running),
        test_store: Some(test_store),
    }
}

/// `RUST_LOG=keyclaim=debug cargo test` shows the server's log.
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A client config for the proxy at `addr`, as `user`, without a password.
pub fn client_config(addr: SocketAddr, user: &str) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    config
        .host(addr.ip().to_string())
        .port(addr.port())
        .user(user)
        .dbname("keyclaim");
    config
}

/// Connects with `config`, driving the connection in a task of its own.
pub async fn connect_with(config: tokio_postgres::Config) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// The first column of every row `sql` returns.
#[allow(dead_code)]
pub async fn column<T>(client: &Client, sql: &str) -> Vec<T>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    client
        .query(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A proxy of its own (listening on 127.0.0.1:0) over `store` with the
/// engine settings `engine`, as tests with several proxies run them.
#[allow(dead_code)]
pub async fn proxy(store: Arc<dyn Store>, engine: keyclaim::engine::EngineConfig) -> RunningServer {
    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".into();
    Server::bind(&config, Engine::new(store, engine))
        .await
        .expect("proxy binds")
        .spawn()
}

/// A connected client as [`USER`] of the proxy at `addr` (one a test runs
/// itself); panics if it cannot connect.
pub async fn connect_to(addr: SocketAddr) -> Client {
    connect_with(client_config(addr, USER))
        .await
        .expect("test client connects")
}

impl TestServer {
    /// A client config for this server, as `user`, without a password.
    pub fn client_config(&self, user: &str) -> tokio_postgres::Config {
        client_config(self.addr, user)
    }

    /// A connected client as [`USER`]; panics if it cannot connect.
    pub async fn connect(&self) -> Client {
        connect_to(self.addr).await
    }

    /// Connects with `config`, driving the connection in a task of its own.
    pub async fn connect_with(
        &self,
        config: tokio_postgres::Config,
    ) -> Result<Client, tokio_postgres::Error> {
        connect_with(config).await
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
        if let Some(store) = self.test_store.take() {
            store.cleanup().await;
        }
    }
}

/// A number from the environment (a test's scale or seed), or `default`.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The SQLSTATE `sql` fails with (it must fail).
#[allow(dead_code)]
pub async fn sqlstate_of(client: &Client, sql: &str) -> String {
    let e = client.batch_execute(sql).await.unwrap_err();
    e.as_db_error()
        .unwrap_or_else(|| panic!("{sql}: {e}"))
        .code()
        .code()
        .to_owned()
}

/// Runs `sql` on a task of its own (to wait for a holder); its result, an
/// error as its SQLSTATE.
#[allow(dead_code)]
pub fn spawned(
    client: Client,
    sql: &'static str,
) -> tokio::task::JoinHandle<(Client, Result<(), String>)> {
    tokio::spawn(async move {
        let r = client.batch_execute(sql).await.map_err(|e| {
            e.as_db_error()
                .map(|d| d.code().code().to_owned())
                .unwrap_or_else(|| e.to_string())
        });
        (client, r)
    })
}

/// An engine over a fresh embedded store with one session, for the tests
/// that count the store operations a statement costs (`lwt_cost`,
/// `query_engine`); each adds the counting method it needs.
pub struct Counter {
    pub store: Arc<MemoryStore>,
    pub engine: Engine,
    pub session: keyclaim::session::Session,
}

impl Counter {
    pub fn new() -> Counter {
        let store = Arc::new(MemoryStore::new());
        let engine = Engine::new(store.clone(), keyclaim::engine::EngineConfig::default());
        let session = keyclaim::session::Session::new(
            "keyclaim",
            "keyclaim",
            &std::collections::HashMap::new(),
        );
        Counter {
            store,
            engine,
            session,
        }
    }
}

/// The storage table `name`'s committed definition names, if any (read
/// from the store, past any proxy).
pub async fn storage_of(store: &Arc<dyn Store>, name: &str) -> Option<String> {
    let rec = store.read_catalog(name).await.unwrap()?;
    let entry = keyclaim::catalog::Entry::decode(&rec.definition).ok()?;
    entry.committed.map(|d| d.id.clone())
}

/// Sweeps the storage no table uses, whatever its age (an engine of its
/// own: run it when no DDL is running), then what is still wrong between
/// the store's tables and its catalog: storage no table uses, and tables
/// whose storage is gone. How many the sweep removed, and those problems.
pub async fn sweep_storage_and_check(store: &Arc<dyn Store>) -> (usize, Vec<String>) {
    let engine = Engine::new(store.clone(), keyclaim::engine::EngineConfig::default());
    let swept = engine
        .sweep_storage(std::time::Duration::ZERO)
        .await
        .unwrap();
    let left = store.table_storage().await.unwrap();
    let mut problems = Vec::new();
    for id in &left {
        let table = id.rsplit_once('.').map_or(id.as_str(), |(t, _)| t);
        if storage_of(store, table).await.as_ref() != Some(id) {
            problems.push(format!("storage {id} is left with no table using it"));
        }
    }
    for (name, _) in store.list_catalog().await.unwrap() {
        if let Some(id) = storage_of(store, &name).await {
            if !left.contains(&id) {
                problems.push(format!("table {name} lost its storage {id}"));
            }
        }
    }
    (swept, problems)
}

/// The transaction of each intent on a row of table `name`, with its
/// record (None while undecided), read from the store past any proxy.
pub async fn intents(
    store: &Arc<dyn Store>,
    name: &str,
) -> Vec<(keyclaim::store::TxnId, Option<keyclaim::store::TxnRecord>)> {
    let rec = store.read_catalog(name).await.unwrap().unwrap();
    let table: keyclaim::catalog::TableDef = serde_json::from_str(&rec.definition).unwrap();
    let mut found = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .scan_rows(&table, after.as_deref(), 1000)
            .await
            .unwrap();
        for (_, row) in page.rows {
            if let Some(intent) = row.intent {
                found.push((intent.txn, store.read_txn_record(intent.txn).await.unwrap()));
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return found,
        }
    }
}

/// Waits (up to `limit`) until no row of table `name` carries an intent
/// that `counts` (given its transaction's record, None while undecided);
/// panics naming those left, and `what` they are.
pub async fn await_no_intents(
    store: &Arc<dyn Store>,
    name: &str,
    limit: std::time::Duration,
    what: &str,
    counts: impl Fn(&Option<keyclaim::store::TxnRecord>) -> bool,
) {
    let waited = std::time::Instant::now();
    loop {
        let mut left = intents(store, name).await;
        left.retain(|(_, rec)| counts(rec));
        if left.is_empty() {
            return;
        }
        assert!(
            waited.elapsed() < limit,
            "{what} stayed for {limit:?}: {left:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
