//! Several proxies share one store; each caches the catalog. DDL on one must
//! bind the others within one catalog refresh (the catalog epoch). Two
//! engines on one store are two proxies as far as the catalog is concerned:
//! each has its own cache. On Cassandra with `KEYCLAIM_TEST_CASSANDRA`.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::TestStore;
use keyclaim::engine::{Engine, EngineConfig};
use keyclaim::error::SqlError;
use keyclaim::session::Session;
use keyclaim::types::Value;

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
        Proxy::with_config(
            test,
            EngineConfig {
                catalog_refresh: Some(refresh),
                ..EngineConfig::default()
            },
        )
    }

    /// Two proxies with a 300 ms lease: each aborts the other's
    /// transactions that long after it dies.
    fn two_with_short_lease(test: &TestStore) -> (Proxy, Proxy) {
        let config = EngineConfig {
            catalog_refresh: Some(REFRESH),
            lease: Duration::from_millis(300),
            lock_timeout: Duration::from_secs(20),
            ..EngineConfig::default()
        };
        (
            Proxy::with_config(test, config.clone()),
            Proxy::with_config(test, config),
        )
    }

    fn with_config(test: &TestStore, config: EngineConfig) -> Proxy {
        Proxy {
            engine: Engine::new(test.store.clone(), config),
            session: Session::new("keyclaim", "keyclaim", &HashMap::new()),
        }
    }

    /// Dies as a killed process does: no ROLLBACK, no heartbeat from now on.
    fn die(self) {
        std::mem::forget(self.session);
        drop(self.engine);
    }

    /// Runs each statement of `sql` in turn, planned as the session's
    /// open block (if any) sees the tables, as the wire layer does.
    async fn run(&mut self, sql: &str) -> Result<(), SqlError> {
        for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
            let own = self.session.open.as_ref().map(|o| o.id);
            for p in self.engine.prepare_in(statement, &[], own).await? {
                self.engine
                    .execute(&mut self.session, &p, Vec::new())
                    .await?;
            }
        }
        Ok(())
    }

    /// The rows one query answers.
    async fn rows(&mut self, sql: &str) -> Vec<Vec<Value>> {
        use futures::StreamExt;
        let own = self.session.open.as_ref().map(|o| o.id);
        let p = self
            .engine
            .prepare_in(sql, &[], own)
            .await
            .unwrap()
            .remove(0);
        let done = self
            .engine
            .execute(&mut self.session, &p, Vec::new())
            .await
            .unwrap();
        let keyclaim::engine::Outcome::Rows { rows, .. } = done.outcome else {
            panic!("{sql}: rows expected");
        };
        rows.map(|r| r.expect(sql)).collect().await
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

/// A table without a primary key: rows from two proxies never collide
/// (each is keyed by its own hidden row id), and a primary key added on
/// one proxy binds the other's writes once the ALTER TABLE returns.
#[tokio::test]
async fn a_primary_key_added_elsewhere_to_a_table_without_one_binds_every_writer() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (Proxy::new(&test), Proxy::new(&test));
    a.run("CREATE TABLE h (id int, v text)").await.unwrap();
    for n in 1..=5 {
        a.run(&format!("INSERT INTO h VALUES ({n}, 'a')"))
            .await
            .unwrap();
        b.run(&format!("INSERT INTO h VALUES ({}, 'b')", n + 5))
            .await
            .unwrap();
    }
    // The same values twice is two rows: nothing keys them but the row id.
    b.run("INSERT INTO h VALUES (11, 'b'), (11, 'b')")
        .await
        .unwrap();
    let count = |rows: Vec<Vec<Value>>| rows[0][0].clone();
    assert_eq!(
        count(a.rows("SELECT count(*) FROM h").await),
        Value::Int8(12)
    );
    // A duplicate fails the build and leaves nothing.
    assert_eq!(
        a.code_of("ALTER TABLE h ADD PRIMARY KEY (id)").await,
        "23505"
    );
    assert_eq!(
        b.code_of("INSERT INTO h VALUES (12, 'b'), (12, 'b')").await,
        "ok"
    );
    b.run("DELETE FROM h WHERE id IN (11, 12)").await.unwrap();
    a.run("ALTER TABLE h ADD PRIMARY KEY (id)").await.unwrap();
    assert_eq!(
        b.code_of("INSERT INTO h VALUES (3, 'again')").await,
        "23505"
    );
    assert_eq!(
        b.code_of("INSERT INTO h (v) VALUES ('no id')").await,
        "23502"
    );
    assert_eq!(b.code_of("INSERT INTO h VALUES (13, 'b')").await, "ok");
    assert_eq!(a.code_of("INSERT INTO h VALUES (13, 'a')").await, "23505");
    assert_eq!(
        b.rows("SELECT v FROM h WHERE id = 7").await,
        vec![vec![Value::Text("b".into())]]
    );
    test.cleanup().await;
}

/// A CHECK constraint added on one proxy binds the others' writes once
/// the ALTER TABLE returns, statements they prepared before included
/// (their plans compile the constraints, so the change re-plans them).
#[tokio::test]
async fn a_check_added_elsewhere_binds_every_writer_and_their_prepared_statements() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (Proxy::new(&test), Proxy::new(&test));
    a.run("CREATE TABLE t (id int PRIMARY KEY, n int)")
        .await
        .unwrap();
    b.run("INSERT INTO t VALUES (1, 5)").await.unwrap();
    let prepared = b
        .engine
        .prepare_in("INSERT INTO t VALUES ($1, $2)", &[], None)
        .await
        .unwrap()
        .remove(0);
    let insert = |id: i32, n: i32| vec![Value::Int4(id), Value::Int4(n)];
    assert_eq!(a.code_of("ALTER TABLE t ADD CHECK (n > 10)").await, "23514");
    a.run("ALTER TABLE t ADD CONSTRAINT n_small CHECK (n < 10)")
        .await
        .unwrap();
    let refused = b
        .engine
        .execute(&mut b.session, &prepared, insert(2, 50))
        .await
        .unwrap_err();
    assert_eq!(refused.code, "23514", "{refused:?}");
    assert_eq!(refused.constraint.as_deref(), Some("n_small"));
    assert_eq!(b.code_of("UPDATE t SET n = 11 WHERE id = 1").await, "23514");
    b.engine
        .execute(&mut b.session, &prepared, insert(2, 9))
        .await
        .unwrap();
    // Dropped: b's prepared statement writes what the constraint refused.
    a.run("ALTER TABLE t DROP CONSTRAINT n_small")
        .await
        .unwrap();
    tokio::time::sleep(REFRESH * 3).await;
    b.engine
        .execute(&mut b.session, &prepared, insert(3, 50))
        .await
        .unwrap();
    // NOT VALID keeps the row it does not like, and VALIDATE finds it.
    a.run("ALTER TABLE t ADD CONSTRAINT n_small CHECK (n < 10) NOT VALID")
        .await
        .unwrap();
    tokio::time::sleep(REFRESH * 3).await;
    assert_eq!(b.code_of("INSERT INTO t VALUES (4, 40)").await, "23514");
    assert_eq!(
        a.code_of("ALTER TABLE t VALIDATE CONSTRAINT n_small").await,
        "23514"
    );
    b.run("DELETE FROM t WHERE id = 3").await.unwrap();
    a.run("ALTER TABLE t VALIDATE CONSTRAINT n_small")
        .await
        .unwrap();
    test.cleanup().await;
}

/// Columns added, renamed and dropped on one proxy: the other proxy's
/// rows, written before and after, read as PostgreSQL would show them,
/// and a write from a proxy that has not seen the ADD COLUMN yet keeps
/// the value another proxy gave the new column.
#[tokio::test]
async fn columns_added_and_dropped_elsewhere_keep_every_row_readable() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (
        Proxy::new(&test),
        Proxy::with_refresh(&test, Duration::from_secs(3600)),
    );
    a.run("CREATE TABLE t (id int PRIMARY KEY, x text, y int)")
        .await
        .unwrap();
    // b caches the definition without z.
    b.run("INSERT INTO t VALUES (1, 'a', 1)").await.unwrap();
    a.run("ALTER TABLE t ADD COLUMN z int NOT NULL DEFAULT 5")
        .await
        .unwrap();
    a.run("INSERT INTO t VALUES (2, 'b', 2, 20); UPDATE t SET z = 10 WHERE id = 1")
        .await
        .unwrap();
    // b still writes with the old definition: z stays as a set it.
    b.run("UPDATE t SET y = 100 WHERE id = 1").await.unwrap();
    let seen = a.rows("SELECT id, x, y, z FROM t ORDER BY id").await;
    assert_eq!(
        seen,
        vec![
            vec![
                Value::Int4(1),
                Value::Text("a".into()),
                Value::Int4(100),
                Value::Int4(10)
            ],
            vec![
                Value::Int4(2),
                Value::Text("b".into()),
                Value::Int4(2),
                Value::Int4(20)
            ],
        ]
    );
    a.run("ALTER TABLE t DROP COLUMN x; ALTER TABLE t RENAME COLUMN y TO w")
        .await
        .unwrap();
    a.run("INSERT INTO t (id, w) VALUES (3, 3)").await.unwrap();
    let mut c = Proxy::new(&test);
    assert_eq!(c.code_of("SELECT x FROM t").await, "42703");
    let rows = c.rows("SELECT id, w, z FROM t ORDER BY id").await;
    assert_eq!(
        rows,
        vec![
            vec![Value::Int4(1), Value::Int4(100), Value::Int4(10)],
            vec![Value::Int4(2), Value::Int4(2), Value::Int4(20)],
            vec![Value::Int4(3), Value::Int4(3), Value::Int4(5)],
        ]
    );
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

/// DDL in a block is a pending change of its transaction: other proxies
/// keep the committed catalog until it commits, then see all of it.
#[tokio::test]
async fn ddl_in_a_block_reaches_other_proxies_at_commit() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (Proxy::new(&test), Proxy::new(&test));
    a.run(
        "CREATE TABLE old (id int PRIMARY KEY);
         INSERT INTO old VALUES (1);
         BEGIN;
         CREATE TABLE t (id int PRIMARY KEY, k text UNIQUE);
         INSERT INTO t VALUES (1, 'x');
         DROP TABLE old",
    )
    .await
    .unwrap();
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'y')").await, "42P01");
    assert_eq!(b.code_of("INSERT INTO old VALUES (2)").await, "ok");
    a.run("COMMIT").await.unwrap();
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'x')").await, "23505");
    assert_eq!(b.code_of("INSERT INTO t VALUES (2, 'y')").await, "ok");
    assert_eq!(b.code_of("INSERT INTO old VALUES (3)").await, "42P01");
    test.cleanup().await;
}

/// A proxy that dies inside a block of DDL leaves none of it visible; a
/// CREATE of the same name on another proxy waits for it, aborts its
/// transaction once its proxy has been silent for a lease, and proceeds.
#[tokio::test]
async fn a_proxy_that_dies_inside_a_ddl_block_leaves_nothing() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = Proxy::two_with_short_lease(&test);
    a.run(
        "BEGIN;
         CREATE TABLE t (id int PRIMARY KEY, k text UNIQUE);
         INSERT INTO t VALUES (1, 'x')",
    )
    .await
    .unwrap();
    a.die();
    assert_eq!(b.code_of("SELECT * FROM t").await, "42P01");
    let started = std::time::Instant::now();
    b.run("CREATE TABLE t (id int PRIMARY KEY, k text)")
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    b.run("INSERT INTO t VALUES (1, 'x'), (2, 'x')")
        .await
        .unwrap();
    test.cleanup().await;
}

/// An index build waits for transactions writing the table, as
/// PostgreSQL's does; one whose proxy died is aborted once its lease has
/// passed, instead of holding the build up until the lock timeout.
#[tokio::test]
async fn an_index_build_aborts_a_dead_proxys_transaction() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = Proxy::two_with_short_lease(&test);
    b.run("CREATE TABLE t (id int PRIMARY KEY, k text); INSERT INTO t VALUES (1, 'x')")
        .await
        .unwrap();
    tokio::time::sleep(REFRESH * 2).await;
    a.run("BEGIN; INSERT INTO t VALUES (2, 'x'); UPDATE t SET k = 'y' WHERE id = 1")
        .await
        .unwrap();
    // Dies with the block open.
    a.die();
    let started = std::time::Instant::now();
    b.run("CREATE UNIQUE INDEX t_k ON t (k)").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(b.code_of("INSERT INTO t VALUES (3, 'x')").await, "23505");
    assert_eq!(b.code_of("INSERT INTO t VALUES (3, 'y')").await, "ok");
    test.cleanup().await;
}

/// A block that adds a constraint to a table created before it holds the
/// table on every proxy until it ends: another proxy's write waits, then
/// meets the committed constraint; a holder whose proxy dies is aborted
/// once it has been silent for a lease, and the waiter proceeds.
#[tokio::test]
async fn a_constraint_added_in_a_block_holds_the_table_on_every_proxy() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = Proxy::two_with_short_lease(&test);
    a.run(
        "CREATE TABLE t (id int PRIMARY KEY, k text);
         INSERT INTO t VALUES (1, 'x');
         BEGIN;
         ALTER TABLE t ADD CONSTRAINT t_k UNIQUE (k)",
    )
    .await
    .unwrap();
    let held = std::time::Duration::from_millis(400);
    let started = std::time::Instant::now();
    let (answer, ()) = tokio::join!(b.code_of("INSERT INTO t VALUES (2, 'x')"), async {
        tokio::time::sleep(held).await;
        a.run("COMMIT").await.unwrap();
    });
    assert_eq!(answer, "23505");
    assert!(started.elapsed() >= held, "the write waited for the block");

    a.run("BEGIN; ALTER TABLE t ADD CONSTRAINT small CHECK (id < 10)")
        .await
        .unwrap();
    a.die();
    let started = std::time::Instant::now();
    // Not held until the lock timeout (20 s), and the CHECK never was.
    assert_eq!(b.code_of("INSERT INTO t VALUES (20, 'z')").await, "ok");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(b.code_of("INSERT INTO t VALUES (30, 'w')").await, "ok");
    test.cleanup().await;
}

/// A table renamed on one proxy is found under its new name on another,
/// with its rows, its keys, the foreign keys that reference it and its
/// storage: only the name moved.
#[tokio::test]
async fn a_table_renamed_elsewhere_keeps_its_rows_keys_and_references() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = (Proxy::new(&test), Proxy::new(&test));
    a.run(
        "CREATE TABLE parent (id int PRIMARY KEY, email text UNIQUE);
         CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent);
         INSERT INTO parent VALUES (1, 'a@x'), (2, 'b@x');
         INSERT INTO child VALUES (10, 1)",
    )
    .await
    .unwrap();
    let storage = common::storage_of(&test.store, "parent").await;
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(b.rows("SELECT id FROM parent").await.len(), 2);
    a.run("ALTER TABLE parent RENAME TO owner").await.unwrap();
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(b.code_of("SELECT * FROM parent").await, "42P01");
    assert_eq!(
        b.rows("SELECT id FROM owner ORDER BY id").await,
        vec![vec![Value::Int4(1)], vec![Value::Int4(2)]]
    );
    assert_eq!(
        b.code_of("INSERT INTO owner VALUES (3, 'a@x')").await,
        "23505"
    );
    assert_eq!(
        b.code_of("INSERT INTO child VALUES (11, 99)").await,
        "23503"
    );
    assert_eq!(b.code_of("INSERT INTO child VALUES (11, 2)").await, "ok");
    assert_eq!(b.code_of("DELETE FROM owner WHERE id = 1").await, "23503");
    assert_eq!(common::storage_of(&test.store, "owner").await, storage);
    assert_eq!(common::storage_of(&test.store, "parent").await, None);
    test.cleanup().await;
}

/// A proxy that dies inside a block that renamed a table leaves the table
/// under its old name with every row: the proxy that folds the aborted
/// rename (here, by creating a table of the new name) removes nothing the
/// old name still uses.
#[tokio::test]
async fn a_proxy_that_dies_inside_a_rename_leaves_the_table_whole() {
    common::init_logging();
    let test = TestStore::fresh().await;
    let (mut a, mut b) = Proxy::two_with_short_lease(&test);
    a.run(
        "CREATE TABLE t (id int PRIMARY KEY, k text UNIQUE);
         INSERT INTO t VALUES (1, 'x'), (2, 'y');
         BEGIN;
         ALTER TABLE t RENAME TO u",
    )
    .await
    .unwrap();
    a.die();
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(b.rows("SELECT id FROM t").await.len(), 2);
    b.run("CREATE TABLE u (id int PRIMARY KEY)").await.unwrap();
    assert_eq!(b.rows("SELECT id FROM t").await.len(), 2);
    assert_eq!(b.code_of("INSERT INTO t VALUES (3, 'x')").await, "23505");
    assert_eq!(b.rows("SELECT id FROM u").await.len(), 0);
    test.cleanup().await;
}
