//! DDL answers the truth when the store fails under it: `CREATE TABLE` and
//! `DROP TABLE` that answer ok took effect, those that answer 53000 did
//! not, and only 40003 may mean either (issue: a CREATE TABLE answered 53000
//! although its catalog entry had landed).
mod common;

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
            catalog_refresh: Some(Duration::from_millis(20)),
            ..EngineConfig::default()
        },
    )
    .await
}

async fn answer(c: &Client, sql: &str) -> String {
    match c.batch_execute(sql).await {
        Ok(()) => "ok".into(),
        Err(e) => e
            .as_db_error()
            .map(|d| {
                eprintln!(
                    "{sql}: {} {} ({:?})",
                    d.code().code(),
                    d.message(),
                    d.detail()
                );
                d.code().code().to_owned()
            })
            .unwrap_or_else(|| format!("client: {e}")),
    }
}

/// Whether table `name` exists, asked of a new proxy (no cached catalog)
/// on the fault-free store.
async fn exists(store: &Arc<dyn Store>, name: &str) -> bool {
    let p = proxy(store.clone()).await;
    let c = common::connect_to(p.addr()).await;
    let there = match answer(&c, &format!("SELECT * FROM {name}")).await.as_str() {
        "ok" => true,
        "42P01" => false,
        other => panic!("SELECT from {name} answered {other}"),
    };
    drop(c);
    p.shutdown().await;
    there
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_answers_match_what_happened_under_store_faults() {
    let test = common::TestStore::fresh().await;
    let faulty = Arc::new(FaultyStore::new(
        test.store.clone(),
        FaultConfig {
            applied_then_unknown: 250,
            lost_then_unknown: 250,
            unavailable: 100,
            read_unknown: 100,
            catalog: true,
            ..FaultConfig::none(11)
        },
    ));
    let bad = proxy(faulty.clone()).await;
    let cb = common::connect_to(bad.addr()).await;
    let mut seen = std::collections::BTreeMap::<String, u32>::new();
    for n in 0..60 {
        let name = format!("t{n}");
        let created = answer(
            &cb,
            &format!("CREATE TABLE {name} (id integer PRIMARY KEY)"),
        )
        .await;
        *seen.entry(format!("create {created}")).or_default() += 1;
        let there = exists(&test.store, &name).await;
        match created.as_str() {
            "ok" => assert!(
                there,
                "CREATE TABLE {name} answered ok, but there is no table"
            ),
            "53000" => assert!(
                !there,
                "CREATE TABLE {name} answered 53000, but the table exists"
            ),
            "40003" => {}
            other => panic!("CREATE TABLE {name} answered {other}"),
        }
        if !there {
            continue;
        }
        let dropped = answer(&cb, &format!("DROP TABLE {name}")).await;
        *seen.entry(format!("drop {dropped}")).or_default() += 1;
        let there = exists(&test.store, &name).await;
        match dropped.as_str() {
            "ok" => assert!(
                !there,
                "DROP TABLE {name} answered ok, but the table is there"
            ),
            "53000" => assert!(
                there,
                "DROP TABLE {name} answered 53000, but the table is gone"
            ),
            "40003" => {}
            other => panic!("DROP TABLE {name} answered {other}"),
        }
    }
    eprintln!("answers: {seen:?}; faults: {:?}", faulty.counts);
    assert!(seen.get("create ok").copied().unwrap_or(0) >= 5, "{seen:?}");
    bad.shutdown().await;
    test.cleanup().await;
}
