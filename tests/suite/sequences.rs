//! Sequences across proxies: a serial key never repeats, whatever the store
//! does (unknown outcomes, lost writes, unavailability) and however proxies
//! come and go; ids stay in order within one proxy.
use crate::common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use keyclaim::engine::EngineConfig;
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use keyclaim::store::Store;
use tokio_postgres::Client;

async fn proxy(store: Arc<dyn Store>) -> keyclaim::server::RunningServer {
    common::proxy(
        store,
        EngineConfig {
            catalog_refresh: Some(Duration::from_millis(50)),
            max_retries: 2,
            ..EngineConfig::default()
        },
    )
    .await
}

/// Inserts `n` rows, returning the ids it was told and every SQLSTATE.
async fn insert_rows(c: Client, n: usize) -> (Vec<i64>, Vec<String>) {
    let (mut ids, mut codes) = (Vec::new(), Vec::new());
    for i in 0..n {
        match c
            .query_one(
                "INSERT INTO items (v) VALUES ($1) RETURNING id",
                &[&format!("v{i}")],
            )
            .await
        {
            Ok(row) => ids.push(row.get(0)),
            Err(e) => codes.push(
                e.as_db_error()
                    .map(|d| d.code().code().to_owned())
                    .unwrap_or_else(|| format!("client: {e}")),
            ),
        }
    }
    (ids, codes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_keys_never_repeat_across_proxies_and_faults() {
    let test = common::TestStore::fresh().await;
    let faulty: Arc<dyn Store> = Arc::new(FaultyStore::new(
        test.store.clone(),
        FaultConfig {
            applied_then_unknown: 10,
            lost_then_unknown: 10,
            unavailable: 5,
            read_unknown: 5,
            ..FaultConfig::none(7)
        },
    ));
    let setup = proxy(test.store.clone()).await;
    common::connect_to(setup.addr())
        .await
        .batch_execute("CREATE TABLE items (id bigserial PRIMARY KEY, v text)")
        .await
        .unwrap();
    let mut ids: Vec<i64> = Vec::new();
    let mut codes: Vec<String> = Vec::new();
    // Two rounds: the first round's proxies stop with values left in their
    // blocks; the second round's start afresh on the same counter.
    for _round in 0..2 {
        let mut proxies = Vec::new();
        for _ in 0..3 {
            proxies.push(proxy(faulty.clone()).await);
        }
        let mut tasks = Vec::new();
        for p in &proxies {
            for _ in 0..3 {
                tasks.push(tokio::spawn(insert_rows(
                    common::connect_to(p.addr()).await,
                    40,
                )));
            }
        }
        for t in tasks {
            let (i, c) = t.await.unwrap();
            ids.extend(i);
            codes.extend(c);
        }
        for p in proxies {
            p.shutdown().await;
        }
    }
    // A repeated id would meet the primary key: 23505 may never happen.
    assert!(
        !codes.iter().any(|c| c == "23505"),
        "an id was handed out twice: {codes:?}"
    );
    let told: HashSet<i64> = ids.iter().copied().collect();
    assert_eq!(told.len(), ids.len(), "an id was returned twice");
    assert!(ids.len() > 300, "too few inserts succeeded: {codes:?}");
    // Every id a client was told is in the table, once.
    let c = common::connect_to(setup.addr()).await;
    let stored: Vec<i64> = c
        .query("SELECT id FROM items", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let stored: HashSet<i64> = stored.into_iter().collect();
    assert!(told.is_subset(&stored));
    setup.shutdown().await;
    test.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_proxy_hands_out_ids_in_order_and_another_takes_a_fresh_block() {
    let test = common::TestStore::fresh().await;
    let (a, b) = (
        proxy(test.store.clone()).await,
        proxy(test.store.clone()).await,
    );
    let (ca, cb) = (
        common::connect_to(a.addr()).await,
        common::connect_to(b.addr()).await,
    );
    ca.batch_execute("CREATE SEQUENCE s").await.unwrap();
    let mut from_a = Vec::new();
    for _ in 0..5 {
        let v: i64 = ca
            .query_one("SELECT nextval('s')", &[])
            .await
            .unwrap()
            .get(0);
        from_a.push(v);
    }
    assert_eq!(from_a, vec![1, 2, 3, 4, 5]);
    // The other proxy's block starts after this one's.
    let v: i64 = cb
        .query_one("SELECT nextval('s')", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 1 + keyclaim::engine::sequence::BLOCK);
    // currval and lastval are the session's own.
    let (cur, last): (i64, i64) = {
        let r = cb
            .query_one("SELECT currval('s'), lastval()", &[])
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!((cur, last), (v, v));
    assert_eq!(
        common::sqlstate_of(&ca, "SELECT lastval() + currval('nosuch')").await,
        "42P01"
    );
    // setval on one proxy: the next value there follows it.
    ca.query_one("SELECT setval('s', 1000)", &[]).await.unwrap();
    let v: i64 = ca
        .query_one("SELECT nextval('s')", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 1001);
    // SELECT * FROM s shows the counter: the last value some proxy
    // reserved (this one's block ends BLOCK values after 1001).
    let (last, called): (i64, bool) = {
        let r = cb
            .query_one("SELECT last_value, is_called FROM s", &[])
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(
        (last, called),
        (1000 + keyclaim::engine::sequence::BLOCK, true)
    );
    // ALTER SEQUENCE RESTART on the other proxy: the counter restarts;
    // this proxy uses up the block it holds first, as a PostgreSQL session
    // uses up its cached values (and then follows the restart).
    cb.batch_execute("ALTER SEQUENCE s RESTART WITH 5000")
        .await
        .unwrap();
    let v: i64 = cb
        .query_one("SELECT nextval('s')", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 5000);
    // RESTART in a block would roll back in PostgreSQL; a counter cannot.
    cb.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        common::sqlstate_of(&cb, "ALTER SEQUENCE s RESTART").await,
        "0A000"
    );
    cb.batch_execute("ROLLBACK").await.unwrap();
    // INCREMENT BY on the other proxy: once this proxy learns of it (a
    // catalog refresh), it gives up the block it reserved under the old
    // step and draws by the new one from where the counter stands.
    cb.batch_execute("ALTER SEQUENCE s INCREMENT BY 3")
        .await
        .unwrap();
    let mut v = nextval(&ca).await;
    for _ in 0..50 {
        if v > 5000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        v = nextval(&ca).await;
    }
    assert!(
        v > 5000 + keyclaim::engine::sequence::BLOCK,
        "{v}: not from a block after the other proxy's"
    );
    assert_eq!(nextval(&ca).await, v + 3);
    assert_eq!(
        common::sqlstate_of(&cb, "ALTER SEQUENCE s SET SCHEMA other").await,
        "0A000"
    );
    a.shutdown().await;
    b.shutdown().await;
    test.cleanup().await;
}

async fn nextval(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT nextval('s')", &[])
        .await
        .unwrap()
        .get(0)
}
