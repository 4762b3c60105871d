//! Several proxies share one store; each caches the catalog. DDL on one must
//! bind the others within one catalog refresh (the catalog epoch). Two
//! engines on one store are two proxies as far as the catalog is concerned:
//! each has its own cache. On Cassandra with `KEYCLAIM_TEST_CASSANDRA`.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::TestStore;
use keyclaim::engine::{Engine, EngineConfig};
use keyclaim::error::SqlError;
use keyclaim::session::Session;

const REFRESH: Duration = Duration::from_millis(50);

struct Proxy {
    engine: Engine,
    session: Session,
}

impl Proxy {
    fn new(test: &TestStore) -> Proxy {
        Proxy::with_refresh(test, REFRESH)
    }

    fn with_refresh(test: &TestStore, refresh: Duration) -> Proxy {
        let config = EngineConfig {
            catalog_refresh: Some(refresh),
            ..EngineConfig::default()
        };
        Proxy {
            engine: Engine::new(test.store.clone(), config),
            session: Session::new("keyclaim", "keyclaim", &HashMap::new()),
        }
    }

    async fn run(&mut self, sql: &str) -> Result<(), SqlError> {
        for p in self.engine.prepare(sql, &[]).await? {
            self.engine
                .execute(&mut self.session, &p, Vec::new())
                .await?;
        }
        Ok(())
    }

    async fn code_of(&mut self, sql: &str) -> &'static str {
        match self.run(sql).await {
            Ok(()) => "ok",
            Err(e) => e.code,
        }
    }
}

#[tokio::test]
async fn a_table_recreated_elsewhere_is_used_as_recreated() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (Proxy::new(&test), Proxy::new(&test));
    a.run("CREATE TABLE t (id int PRIMARY KEY, k text)")
        .await
        .unwrap();
    // b caches the first definition.
    b.run("INSERT INTO t VALUES (1, 'x'), (2, 'x')")
        .await
        .unwrap();
    a.run("DROP TABLE t").await.unwrap();
    a.run("CREATE TABLE t (id int PRIMARY KEY, k text UNIQUE)")
        .await
        .unwrap();
    tokio::time::sleep(REFRESH * 2).await;
    // The new table: empty, and its UNIQUE holds for b's writes too.
    assert_eq!(b.code_of("INSERT INTO t VALUES (1, 'y')").await, "ok");
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'y')").await, "23505");
    a.run("DROP TABLE t").await.unwrap();
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(b.code_of("INSERT INTO t VALUES (3, 'z')").await, "42P01");
    test.cleanup().await;
}

#[tokio::test]
async fn a_unique_index_built_elsewhere_binds_every_writer() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (Proxy::new(&test), Proxy::new(&test));
    a.run("CREATE TABLE t (id int PRIMARY KEY, k text)")
        .await
        .unwrap();
    b.run("INSERT INTO t VALUES (1, 'x')").await.unwrap();
    // The build waits until every proxy has seen the index, so b's next
    // write claims its key without b being told anything.
    a.run("CREATE UNIQUE INDEX t_k_idx ON t (k)").await.unwrap();
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'x')").await, "23505");
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'y')").await, "ok");
    assert_eq!(a.code_of("INSERT INTO t VALUES (3, 'y')").await, "23505");
    test.cleanup().await;
}

/// A proxy that runs into a table another proxy dropped (Cassandra answers
/// "unconfigured table") re-reads the catalog at once, not after its refresh
/// interval: the next statement uses the table as it is now.
#[tokio::test]
async fn a_store_error_from_a_dropped_table_refreshes_the_catalog_at_once() {
    common::init_logging();
    let test = TestStore::fresh().await;
    if !test.on_cassandra() {
        // The embedded store has no per-table storage to go missing.
        return;
    }
    let mut a = Proxy::new(&test);
    let mut b = Proxy::with_refresh(&test, Duration::from_secs(3600));
    a.run("CREATE TABLE t (id int PRIMARY KEY, k text)")
        .await
        .unwrap();
    b.run("INSERT INTO t VALUES (1, 'x')").await.unwrap();
    a.run("DROP TABLE t").await.unwrap();
    a.run("CREATE TABLE t (id int PRIMARY KEY, k text UNIQUE)")
        .await
        .unwrap();
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'x')").await, "53000");
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'x')").await, "ok");
    assert_eq!(b.code_of("INSERT INTO t VALUES (3, 'x')").await, "23505");
    test.cleanup().await;
}
