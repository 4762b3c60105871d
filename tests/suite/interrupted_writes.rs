//! A write that fails or is interrupted must not leave the client told
//! "nothing happened" while its rows stay. A cancel request or
//! statement_timeout that arrives while a write is in flight lets it run to
//! a safe point; it undoes what it wrote and answers 57014 (or 40003 if the
//! undo cannot be confirmed). In most tests here the store's replies are
//! slow, so the interrupt always arrives after a row write has been sent.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use keyclaim::catalog::Catalog;
use keyclaim::claims;
use keyclaim::store::layer::{Layer, Layered};
use keyclaim::store::{Cas, ClaimRecord, StoreResult};
use keyclaim::types::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

/// Every LWT applies at once; its reply takes `delay` to come back.
struct SlowReplies {
    delay: Duration,
}

impl Layer for SlowReplies {
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<Cas<T>>>,
    ) -> BoxFuture<'a, StoreResult<Cas<T>>> {
        async move {
            let reply = write.await;
            tokio::time::sleep(self.delay).await;
            reply
        }
        .boxed()
    }

    fn write<'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<()>>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        async move {
            let reply = write.await;
            tokio::time::sleep(self.delay).await;
            reply
        }
        .boxed()
    }
}

const REPLY: Duration = Duration::from_millis(60);

async fn slow_server() -> (common::TestServer, Client) {
    let server = common::start_layered(
        |_| {},
        |store| Arc::new(Layered::wrap(store, SlowReplies { delay: REPLY })),
    )
    .await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id integer PRIMARY KEY, u text UNIQUE, n integer)")
        .await
        .unwrap();
    (server, client)
}

/// Runs `sql` with `statement_timeout` set to `timeout`, then turns the
/// timeout off again.
async fn within(client: &Client, timeout: &str, sql: &str) -> Result<u64, tokio_postgres::Error> {
    client
        .batch_execute(&format!("SET statement_timeout = '{timeout}'"))
        .await
        .unwrap();
    let result = client.execute(sql, &[]).await;
    client
        .batch_execute("SET statement_timeout = 0")
        .await
        .unwrap();
    result
}

async fn count(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

fn assert_canceled(result: Result<u64, tokio_postgres::Error>) {
    let e = result.expect_err("the statement was interrupted");
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::QUERY_CANCELED, "{db:?}");
}

/// One row: claim and commit take two slow replies. A timeout while the
/// claim's reply is on its way stops the statement before it commits: 57014,
/// no row, the key free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_timed_out_before_its_commit_writes_nothing() {
    let (_server, client) = slow_server().await;
    assert_canceled(within(&client, "30ms", "INSERT INTO t VALUES (1, 'a', 0)").await);
    assert_eq!(count(&client, "SELECT count(*) FROM t").await, 0);
    client
        .execute("INSERT INTO t VALUES (2, 'a', 0)", &[])
        .await
        .expect("the key is free again");
}

/// A timeout while the commit's reply is on its way (the row has landed)
/// comes too late: the statement finishes and says so, as PostgreSQL does
/// for a cancel that arrives as a statement completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_timed_out_during_its_commit_finishes() {
    let (_server, client) = slow_server().await;
    let n = within(&client, "90ms", "INSERT INTO t VALUES (1, 'a', 0)")
        .await
        .expect("a row already committed is not reported as canceled");
    assert_eq!(n, 1);
    assert_eq!(count(&client, "SELECT count(*) FROM t").await, 1);
}

/// Several rows: the timeout fires after some are written; none stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_multi_row_insert_leaves_none() {
    let (_server, client) = slow_server().await;
    assert_canceled(
        within(
            &client,
            "300ms",
            "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0), (4, 'd', 0), (5, 'e', 0)",
        )
        .await,
    );
    assert_eq!(count(&client, "SELECT count(*) FROM t").await, 0);
}

/// An UPDATE of several rows, keys included, interrupted midway: every row
/// keeps its old values and keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canceled_multi_row_update_changes_nothing() {
    let (_server, client) = slow_server().await;
    client
        .batch_execute("INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0), (4, 'd', 0)")
        .await
        .unwrap();
    let cancel = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(250)).await;
        cancel.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    assert_canceled(
        client
            .execute("UPDATE t SET u = u || '2', n = n + 1", &[])
            .await,
    );
    canceller.await.unwrap();
    assert_eq!(
        count(&client, "SELECT count(*) FROM t WHERE n = 0").await,
        4
    );
    for key in ["a", "b", "c", "d"] {
        let n: i64 = client
            .query_one("SELECT count(*) FROM t WHERE u = $1", &[&key])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1, "key {key}");
    }
    // The new keys were released with the undo.
    client
        .execute("INSERT INTO t VALUES (9, 'a2', 0)", &[])
        .await
        .expect("a key the undone update claimed is free");
}

/// A DELETE is not undone: interrupted before its first row it deletes
/// nothing and answers 57014; once it has deleted a row it finishes. Either
/// way the answer matches what happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_delete_answers_what_it_did() {
    let (_server, client) = slow_server().await;
    client
        .batch_execute("INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0)")
        .await
        .unwrap();
    let result = within(&client, "30ms", "DELETE FROM t").await;
    let left = count(&client, "SELECT count(*) FROM t").await;
    match result {
        Ok(n) => assert_eq!((n, left), (3, 0)),
        Err(e) => {
            let db = e.as_db_error().expect("a server error");
            assert_eq!(db.code(), &SqlState::QUERY_CANCELED, "{db:?}");
            assert_eq!(left, 3);
        }
    }
}

/// A multi-row INSERT whose later row waits out its lock timeout (another
/// statement holds the key, in flight) still undoes its earlier rows: the
/// undo gets a lock timeout of its own rather than the spent one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_timeout_on_a_later_row_undoes_the_earlier_ones() {
    let server = common::start_with(|c| {
        c.claims.lease_ms = 3_600_000;
        c.claims.lock_timeout_ms = 100;
    })
    .await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id integer PRIMARY KEY, u text UNIQUE, n integer)")
        .await
        .unwrap();
    // Row 99's INSERT has claimed 'x' and not committed yet.
    let table = Catalog::new(server.store.clone(), None)
        .table("t", None)
        .await
        .unwrap();
    let other = [Value::Int4(99), Value::Text("x".into()), Value::Int4(0)];
    let unique = &table.uniques[0];
    let claim = ClaimRecord {
        owner: table.pk_bytes(&other),
        txn: claims::new_txn(),
    };
    server
        .store
        .insert_claim(&unique.id, &unique.key_of(&other).unwrap(), claim)
        .await
        .unwrap();
    let e = client
        .execute("INSERT INTO t VALUES (1, 'a', 0), (2, 'x', 0)", &[])
        .await
        .expect_err("'x' stays taken past the lock timeout");
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::LOCK_NOT_AVAILABLE, "{db:?}");
    assert_eq!(count(&client, "SELECT count(*) FROM t").await, 0);
}

/// A statement that writes many rows is a transaction of its own: another
/// session sees none of its rows or all of them, never some.
#[tokio::test]
async fn a_multi_row_write_is_never_seen_in_part() {
    let (server, client) = slow_server().await;
    let reader = server.connect().await;
    let insert = tokio::spawn(async move {
        client
            .execute(
                "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0), (4, 'd', 0), (5, 'e', 0)",
                &[],
            )
            .await
            .unwrap();
        client
    });
    let mut seen = std::collections::BTreeSet::new();
    while !insert.is_finished() {
        let n: i64 = reader
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        seen.insert(n);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let client = insert.await.unwrap();
    let n: i64 = reader
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 5);
    assert!(seen.iter().all(|n| *n == 0 || *n == 5), "{seen:?}");
    // An UPDATE of many rows likewise.
    let update = tokio::spawn(async move {
        client
            .execute("UPDATE t SET n = 1 WHERE n = 0", &[])
            .await
            .unwrap()
    });
    let mut seen = std::collections::BTreeSet::new();
    while !update.is_finished() {
        let n: i64 = reader
            .query_one("SELECT count(*) FROM t WHERE n = 1", &[])
            .await
            .unwrap()
            .get(0);
        seen.insert(n);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(update.await.unwrap(), 5);
    assert!(seen.iter().all(|n| *n == 0 || *n == 5), "{seen:?}");
}
