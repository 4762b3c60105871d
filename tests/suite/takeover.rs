//! A claim left behind by a statement whose proxy died: younger than the
//! lease it is waited on, older it is fenced and taken over; a claim backed
//! by a live row is a real duplicate whatever its age.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use keyclaim::catalog::TableDef;
use keyclaim::engine::{Engine, EngineConfig};
use keyclaim::session::Session;
use keyclaim::store::memory::MemoryStore;
use keyclaim::store::{ClaimRecord, Store};
use keyclaim::types::{encode_key, Value};

async fn setup(
    lease: Duration,
    lock_timeout: Duration,
) -> (Arc<MemoryStore>, Engine, Session, TableDef) {
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(
        store.clone(),
        EngineConfig {
            lease,
            lock_timeout,
            ..EngineConfig::default()
        },
    );
    let mut session = Session::new("keyclaim", "keyclaim", &HashMap::new());
    run(
        &engine,
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, k text UNIQUE)",
    )
    .await
    .unwrap();
    let rec = store.read_catalog("t").await.unwrap().unwrap();
    let def: TableDef = serde_json::from_str(&rec.definition).unwrap();
    (store, engine, session, def)
}

async fn run(
    engine: &Engine,
    session: &mut Session,
    sql: &str,
) -> Result<(), keyclaim::error::SqlError> {
    for p in engine.prepare(sql, &[]).await? {
        engine.execute(session, &p, Vec::new()).await?;
    }
    Ok(())
}

/// Leave a claim on `k` for row `owner` as a crashed statement would.
async fn orphan_claim(store: &MemoryStore, def: &TableDef, k: &str, owner: i32) {
    let key = encode_key(&[&Value::Text(k.into())]);
    let claim = ClaimRecord {
        owner: encode_key(&[&Value::Int4(owner)]),
        txn: uuid::Uuid::now_v7(),
    };
    assert!(store
        .insert_claim(&def.uniques[0].id, &key, claim)
        .await
        .unwrap()
        .applied());
}

#[tokio::test]
async fn an_orphaned_claim_is_taken_over_after_the_lease() {
    let (store, engine, mut session, def) =
        setup(Duration::from_millis(200), Duration::from_secs(10)).await;
    orphan_claim(&store, &def, "x", 99).await;
    run(&engine, &mut session, "INSERT INTO t VALUES (1, 'x')")
        .await
        .unwrap();
    assert_eq!(engine.stats().fences.load(Ordering::Relaxed), 1);
    assert!(engine.stats().waits.load(Ordering::Relaxed) >= 1);
    // The fenced owner can never commit: its partition is dead at a new version.
    let fenced = store
        .read_row(&def, &encode_key(&[&Value::Int4(99)]))
        .await
        .unwrap()
        .unwrap();
    assert!(!fenced.live);
    let e = run(&engine, &mut session, "INSERT INTO t VALUES (2, 'x')")
        .await
        .unwrap_err();
    assert_eq!(e.code, "23505");
}

#[tokio::test]
async fn a_writer_waits_for_the_lease_then_times_out_under_lock_timeout() {
    let (store, engine, mut session, def) =
        setup(Duration::from_secs(60), Duration::from_millis(200)).await;
    orphan_claim(&store, &def, "x", 99).await;
    let e = run(&engine, &mut session, "INSERT INTO t VALUES (1, 'x')")
        .await
        .unwrap_err();
    assert_eq!(e.code, "55P03");
    // Nothing of the failed statement is visible.
    assert!(store
        .read_row(&def, &encode_key(&[&Value::Int4(1)]))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_backed_claim_is_a_duplicate_whatever_its_age() {
    let (_store, engine, mut session, _def) =
        setup(Duration::from_millis(1), Duration::from_secs(10)).await;
    run(&engine, &mut session, "INSERT INTO t VALUES (1, 'x')")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let e = run(&engine, &mut session, "INSERT INTO t VALUES (2, 'x')")
        .await
        .unwrap_err();
    assert_eq!(e.code, "23505");
    assert_eq!(e.constraint.as_deref(), Some("t_k_key"));
    assert_eq!(engine.stats().fences.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn keys_claimed_by_an_index_build_are_released_when_the_row_moves_on() {
    // A long lease: anything that waits for it would hit the lock timeout.
    let (_store, engine, mut session, _def) =
        setup(Duration::from_secs(60), Duration::from_millis(300)).await;
    for sql in [
        "CREATE TABLE h (id integer PRIMARY KEY, handle text)",
        "INSERT INTO h VALUES (1, 'ann'), (2, 'bob')",
        "CREATE UNIQUE INDEX h_handle ON h (handle)",
        "UPDATE h SET handle = 'anna' WHERE id = 1",
        "DELETE FROM h WHERE id = 2",
        // Both old keys are free at once: their claims were cleaned up.
        "INSERT INTO h VALUES (3, 'ann'), (4, 'bob')",
    ] {
        run(&engine, &mut session, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let e = run(&engine, &mut session, "INSERT INTO h VALUES (5, 'anna')")
        .await
        .unwrap_err();
    assert_eq!(e.constraint.as_deref(), Some("h_handle"));
}
