//! Adopting a CQL table that already holds data (`[[store.adopt]]`): its
//! rows are served, the declared UNIQUE constraints hold from then on, and
//! data that already breaks one is refused as CREATE UNIQUE INDEX refuses
//! it. Needs a Cassandra node (`KEYCLAIM_TEST_CASSANDRA`); without one the
//! tests say so and pass, since the embedded store has no existing tables.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;

use common::TestStore;
use keyclaim::config::AdoptConfig;
use keyclaim::engine::{Engine, EngineConfig};
use keyclaim::session::Session;
use scylla::client::session::Session as Cql;
use tokio_postgres::error::SqlState;

/// A keyspace of "existing" tables, written with plain CQL as an
/// application would have before keyclaim.
struct Legacy {
    keyspace: String,
}

impl Legacy {
    async fn new(cql: &Cql, statements: &[&str]) -> Legacy {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let keyspace = format!("kc_legacy_{}", &id[..16]);
        run(
            cql,
            &format!(
                "CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
            ),
        )
        .await;
        for s in statements {
            run(cql, &s.replace("ks.", &format!("{keyspace}."))).await;
        }
        cql.await_schema_agreement().await.unwrap();
        Legacy { keyspace }
    }

    fn table(&self, t: &str) -> String {
        format!("{}.{t}", self.keyspace)
    }

    async fn drop(self, cql: &Cql) {
        run(cql, &format!("DROP KEYSPACE {}", self.keyspace)).await;
    }
}

/// A fresh test store, its CQL session, and a legacy keyspace made there by
/// `statements`. None, after saying so, without a Cassandra node: the test
/// is then skipped.
async fn with_legacy(statements: &[&str]) -> Option<(TestStore, Arc<Cql>, Legacy)> {
    let test = TestStore::fresh().await;
    let Some(cassandra) = test.cassandra() else {
        eprintln!("skipped: adoption needs KEYCLAIM_TEST_CASSANDRA");
        return None;
    };
    let cql = cassandra.session().clone();
    let legacy = Legacy::new(&cql, statements).await;
    Some((test, cql, legacy))
}

async fn run(cql: &Cql, text: &str) {
    cql.query_unpaged(text, ())
        .await
        .unwrap_or_else(|e| panic!("{text}: {e}"));
}

const USERS: &[&str] = &[
    "CREATE TABLE ks.users (id int PRIMARY KEY, email text, org int, handle text, created timestamp)",
    "INSERT INTO ks.users (id, email, org, handle, created) VALUES (1, 'a@x', 1, 'ann', '2024-01-02 03:04:05.678+0000')",
    "INSERT INTO ks.users (id, email, org, handle) VALUES (2, 'b@x', 1, 'bob')",
    "INSERT INTO ks.users (id, org, handle) VALUES (3, 2, 'ann')",
];

fn adopt_users(legacy: &Legacy) -> AdoptConfig {
    AdoptConfig {
        table: "users".into(),
        cql_table: legacy.table("users"),
        unique: vec![vec!["email".into()], vec!["org".into(), "handle".into()]],
    }
}

#[tokio::test]
async fn an_adopted_table_is_served_and_constrained() {
    let Some((probe, cql, legacy)) = with_legacy(USERS).await else {
        return;
    };
    let entry = adopt_users(&legacy);
    let server = common::start_with(|c| c.store.adopt = vec![entry]).await;
    let client = server.connect().await;

    let rows = client
        .query(
            "SELECT id, email, handle, created::text FROM users ORDER BY id",
            &[],
        )
        .await
        .unwrap();
    let got: Vec<(i32, Option<String>, String, Option<String>)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                1,
                Some("a@x".into()),
                "ann".into(),
                Some("2024-01-02 03:04:05.678+00".into())
            ),
            (2, Some("b@x".into()), "bob".into(), None),
            (3, None, "ann".into(), None),
        ]
    );

    // Keys of rows written before adoption are taken.
    let e = client
        .execute(
            "INSERT INTO users (id, email, org, handle) VALUES (4, 'a@x', 9, 'x')",
            &[],
        )
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code(), &SqlState::UNIQUE_VIOLATION);
    assert_eq!(db.constraint(), Some("users_email_key"));
    assert_eq!(db.detail(), Some("Key (email)=(a@x) already exists."));
    let e = client
        .execute(
            "INSERT INTO users (id, email, org, handle) VALUES (4, 'd@x', 2, 'ann')",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.as_db_error().unwrap().constraint(),
        Some("users_org_handle_key")
    );
    let e = client
        .execute("INSERT INTO users (id, handle) VALUES (2, 'y')", &[])
        .await
        .unwrap_err();
    assert_eq!(e.as_db_error().unwrap().constraint(), Some("users_pkey"));

    // The first keyclaim write to an old row stamps a version; the value it
    // gave up is free again.
    let n = client
        .execute("UPDATE users SET email = 'z@x' WHERE id = 1", &[])
        .await
        .unwrap();
    assert_eq!(n, 1);
    let stamped = cql
        .query_unpaged(
            format!(
                "SELECT \"__version\" FROM {} WHERE id = 1",
                legacy.table("users")
            ),
            (),
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row::<(Option<uuid::Uuid>,)>()
        .unwrap();
    assert!(stamped.0.is_some_and(|v| !v.is_nil()));
    client
        .execute(
            "INSERT INTO users (id, email, org, handle) VALUES (5, 'a@x', 3, 'c')",
            &[],
        )
        .await
        .unwrap();
    // Deleting an old row frees its keys too.
    client
        .execute("DELETE FROM users WHERE id = 2", &[])
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO users (id, email, org, handle) VALUES (6, 'b@x', 1, 'bob')",
            &[],
        )
        .await
        .unwrap();

    // Its storage is the CQL table: TRUNCATE (which points a table at
    // fresh storage) and column changes are refused, and leave it whole.
    for sql in [
        "TRUNCATE users",
        "ALTER TABLE users ADD COLUMN extra int",
        "ALTER TABLE users DROP COLUMN handle",
        "ALTER TABLE users RENAME COLUMN handle TO nick",
    ] {
        let e = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(
            e.as_db_error().unwrap().code(),
            &SqlState::FEATURE_NOT_SUPPORTED,
            "{sql}"
        );
    }
    let n: i64 = client
        .query_one("SELECT count(*) FROM users", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 4);

    // DROP TABLE forgets the adoption but leaves the CQL table and its data.
    client.batch_execute("DROP TABLE users").await.unwrap();
    let left = cql
        .query_unpaged(format!("SELECT id FROM {}", legacy.table("users")), ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .rows_num();
    assert_eq!(left, 5, "rows 1, 3, 5, 6, and 2 (dead)");
    server.shutdown().await;
    legacy.drop(&cql).await;
    probe.cleanup().await;
}

#[tokio::test]
async fn existing_duplicates_are_refused_as_postgres_refuses_an_index() {
    let Some((test, cql, legacy)) = with_legacy(&[
        "CREATE TABLE ks.dups (id int PRIMARY KEY, email text)",
        "INSERT INTO ks.dups (id, email) VALUES (1, 'a@x')",
        "INSERT INTO ks.dups (id, email) VALUES (2, 'a@x')",
        "INSERT INTO ks.dups (id, email) VALUES (3, 'b@x')",
    ])
    .await
    else {
        return;
    };
    let engine = Engine::new(test.store.clone(), EngineConfig::default());
    let entry = AdoptConfig {
        table: "dups".into(),
        cql_table: legacy.table("dups"),
        unique: vec![vec!["email".into()]],
    };
    let e = engine.adopt(&entry).await.unwrap_err();
    assert_eq!(e.code, "23505");
    assert_eq!(
        e.message,
        "could not create unique index \"dups_email_key\""
    );
    assert_eq!(
        e.detail.as_deref(),
        Some("Key (email)=(a@x) is duplicated.")
    );
    // The table is served without the constraint that does not hold; once
    // the data is fixed, adopting again builds it.
    let mut session = Session::new("keyclaim", "keyclaim", &HashMap::new());
    for p in engine
        .prepare("DELETE FROM dups WHERE id = 2", &[])
        .await
        .unwrap()
    {
        engine.execute(&mut session, &p, Vec::new()).await.unwrap();
    }
    engine.adopt(&entry).await.unwrap();
    let p = engine
        .prepare("INSERT INTO dups VALUES (4, 'b@x')", &[])
        .await
        .unwrap()
        .remove(0);
    let e = engine
        .execute(&mut session, &p, Vec::new())
        .await
        .unwrap_err();
    assert_eq!(e.code, "23505");
    legacy.drop(&cql).await;
    test.cleanup().await;
}

#[tokio::test]
async fn tables_keyclaim_cannot_manage_are_refused_with_reasons() {
    let Some((test, cql, legacy)) = with_legacy(&[
        "CREATE TABLE ks.events (day date, seq int, tags set<text>, PRIMARY KEY ((day), seq))",
    ])
    .await
    else {
        return;
    };
    let engine = Engine::new(test.store.clone(), EngineConfig::default());
    let entry = AdoptConfig {
        table: "events".into(),
        cql_table: legacy.table("events"),
        unique: Vec::new(),
    };
    let e = engine.adopt(&entry).await.unwrap_err();
    assert_eq!(e.code, "0A000");
    assert!(
        e.message.contains("seq is a clustering column"),
        "{}",
        e.message
    );
    assert!(e.message.contains("set<text>"), "{}", e.message);
    legacy.drop(&cql).await;
    test.cleanup().await;
}
