//! DDL answers the truth when the store fails under it: `CREATE TABLE` and
//! `DROP TABLE` that answer ok took effect, those that answer 53000 did
//! not, and only 40003 may mean either (issue: a CREATE TABLE answered 53000
//! although its catalog entry had landed). What an unknown outcome leaves
//! behind (storage no table uses) a sweep removes.
use crate::common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use keyclaim::catalog::{Entry, TableDef};
use keyclaim::engine::{sweep, EngineConfig};
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
    // What the unknown outcomes left behind goes, and only that: every
    // storage left is a table's.
    let (swept, problems) = common::sweep_storage_and_check(&test.store).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!(
        "answers: {seen:?}; faults: {:?}; storage no table used, swept: {swept}",
        faulty.counts
    );
    assert!(seen.get("create ok").copied().unwrap_or(0) >= 5, "{seen:?}");
    bad.shutdown().await;
    test.cleanup().await;
}

/// Storage id `<name>.<uuid v7>` made `ago`.
fn storage_made_ago(name: &str, ago: Duration) -> String {
    let t = (SystemTime::now() - ago)
        .duration_since(UNIX_EPOCH)
        .unwrap();
    let ts = uuid::Timestamp::from_unix(uuid::NoContext, t.as_secs(), t.subsec_nanos());
    format!("{name}.{}", uuid::Uuid::new_v7(ts).simple())
}

/// A sweep removes storage that no table can use once it is old enough,
/// and nothing else: not a table's storage, not storage of a table an open
/// block is creating (the block may still use it), not young storage (a
/// CREATE TABLE may be about to name it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_removes_only_storage_no_table_can_use() {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE kept (id integer PRIMARY KEY)")
        .await
        .unwrap();
    let holder = server.connect().await;
    holder
        .batch_execute("BEGIN; CREATE TABLE held (id integer PRIMARY KEY)")
        .await
        .unwrap();
    let store = &server.store;
    let kept = common::storage_of(store, "kept").await.unwrap();
    let def: TableDef = Entry::decode(
        &store
            .read_catalog("kept")
            .await
            .unwrap()
            .unwrap()
            .definition,
    )
    .unwrap()
    .committed
    .map(|d| TableDef::clone(&d))
    .unwrap();
    let old = Duration::from_secs(7200);
    let plant = |name: &str, ago: Duration| {
        let mut d = def.clone();
        d.name = name.into();
        d.id = storage_made_ago(name, ago);
        d
    };
    let planted = [
        plant("kept", old),
        plant("gone", old),
        plant("held", old),
        plant("young", Duration::from_secs(60)),
        // Storage ids keep the name the table had when they were made: an
        // entry under another name that names it keeps it too.
        plant("formerly", old),
    ];
    for d in &planted {
        store.create_table(d).await.unwrap();
    }
    let renamed = TableDef {
        name: "renamed".into(),
        ..planted[4].clone()
    };
    let entry = Entry {
        committed: Some(Arc::new(renamed)),
        intent: None,
    };
    let rec = keyclaim::store::CatalogRecord {
        version: uuid::Uuid::new_v4(),
        definition: entry.encode().unwrap(),
    };
    assert!(store
        .insert_catalog("renamed", rec)
        .await
        .unwrap()
        .applied());
    let ids: Vec<&str> = planted.iter().map(|d| d.id.as_str()).collect();

    let removed = server
        .engine
        .sweep_storage(sweep::ORPHAN_AGE)
        .await
        .unwrap();
    let left = store.table_storage().await.unwrap();
    assert_eq!(removed, 2, "{left:?}");
    assert!(left.contains(&kept), "the table's own storage stays");
    assert!(!left.iter().any(|s| s == ids[0] || s == ids[1]), "{left:?}");
    assert!(
        left.iter().any(|s| s == ids[2]),
        "an open block's table keeps its storage: {left:?}"
    );
    assert!(
        left.iter().any(|s| s == ids[3]),
        "young storage stays: {left:?}"
    );
    assert!(
        left.iter().any(|s| s == ids[4]),
        "storage an entry names under another name stays: {left:?}"
    );

    // The block ends: its table never existed, and nothing names the old storage.
    holder.batch_execute("ROLLBACK").await.unwrap();
    server
        .engine
        .sweep_storage(sweep::ORPHAN_AGE)
        .await
        .unwrap();
    let left = store.table_storage().await.unwrap();
    assert!(!left.iter().any(|s| s == ids[2]), "{left:?}");
    assert!(left.contains(&kept));
    client
        .batch_execute("INSERT INTO kept VALUES (1)")
        .await
        .unwrap();
    server.shutdown().await;
}
