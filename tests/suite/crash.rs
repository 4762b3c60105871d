//! A proxy dies in the middle of a write storm: its runtime is dropped, so
//! every statement it was running stops wherever it was (between any two
//! store operations), as with kill -9, while the store and a second proxy
//! live on. Afterwards no key stays blocked for longer than the lease,
//! nothing acknowledged is lost, and uniqueness holds.
//!
//! A stalled writer (a proxy frozen past the lease, as with SIGSTOP) is the
//! fault store's `stall`, exercised by tests/suite/history.rs.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use keyclaim::catalog::TableDef;
use keyclaim::config::Config;
use keyclaim::engine::{Engine, EngineConfig};
use keyclaim::server::{RunningServer, Server};
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use keyclaim::store::memory::MemoryStore;
use keyclaim::store::Store;
use keyclaim::types::Value;

const LEASE: Duration = Duration::from_millis(500);
const WRITERS: i32 = 8;

fn engine(store: Arc<dyn Store>) -> Engine {
    Engine::new(
        store,
        EngineConfig {
            lease: LEASE,
            lock_timeout: Duration::from_secs(10),
            ..EngineConfig::default()
        },
    )
}

/// A runtime of its own, so that dropping it kills everything on it at once.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// `store` with operations taking up to 20 ms, so that a kill finds
/// statements between their steps.
fn slowed(store: &Arc<MemoryStore>, seed: u64) -> Arc<dyn Store> {
    Arc::new(FaultyStore::new(
        store.clone(),
        FaultConfig {
            max_latency: Duration::from_millis(20),
            ..FaultConfig::none(seed)
        },
    ))
}

/// The proxy that lives on, on its own runtime, with the test's table.
fn start_survivor(rt: &tokio::runtime::Runtime, engine: Engine) -> RunningServer {
    rt.block_on(async {
        let s = Server::bind(&config(), engine).await.unwrap().spawn();
        common::connect_to(s.addr())
            .await
            .batch_execute("CREATE TABLE accounts (id integer PRIMARY KEY, email text UNIQUE)")
            .await
            .unwrap();
        s
    })
}

/// The victim proxy over `store` on `rt`, with `WRITERS` clients on the
/// same runtime (they die with it), each running `sql(w, n)` for n = 0, 1,
/// ... and noting in `acked` the last n acknowledged.
fn storm(
    rt: &tokio::runtime::Runtime,
    store: Arc<dyn Store>,
    acked: Arc<Mutex<BTreeMap<i32, i32>>>,
    sql: fn(i32, i32) -> String,
) {
    rt.block_on(async {
        let s = Server::bind(&config(), engine(store))
            .await
            .unwrap()
            .spawn();
        let addr = s.addr();
        for w in 0..WRITERS {
            let acked = acked.clone();
            tokio::spawn(async move {
                let client = common::connect_to(addr).await;
                for n in 0.. {
                    if client.batch_execute(&sql(w, n)).await.is_ok() {
                        acked.lock().unwrap().insert(w, n);
                    }
                }
            });
        }
        std::mem::forget(s);
    });
}

/// A healthy proxy and one whose every store operation, its heartbeat
/// included, freezes for twice the lease first (as under SIGSTOP), over one
/// store with the test's table; the healthy engine, both servers (kept
/// alive by the caller) and a client of each.
async fn healthy_and_frozen(
    store: &Arc<MemoryStore>,
) -> (
    Engine,
    [RunningServer; 2],
    tokio_postgres::Client,
    tokio_postgres::Client,
) {
    let frozen: Arc<dyn Store> = Arc::new(FaultyStore::new(
        store.clone(),
        FaultConfig {
            stall: 1000,
            stall_for: LEASE * 2,
            ..FaultConfig::none(1)
        },
    ));
    let healthy_engine = engine(store.clone());
    let healthy = Server::bind(&config(), healthy_engine.clone())
        .await
        .unwrap()
        .spawn();
    let stalled = Server::bind(&config(), engine(frozen))
        .await
        .unwrap()
        .spawn();
    let h = common::connect_to(healthy.addr()).await;
    h.batch_execute("CREATE TABLE accounts (id integer PRIMARY KEY, email text UNIQUE)")
        .await
        .unwrap();
    let s = common::connect_to(stalled.addr()).await;
    (healthy_engine, [healthy, stalled], h, s)
}

fn config() -> Config {
    let mut c = Config::default();
    c.server.listen = "127.0.0.1:0".into();
    c
}

#[test]
fn a_proxy_killed_mid_storm_blocks_no_key_and_loses_nothing() {
    let store = Arc::new(MemoryStore::new());
    // The victim's store operations take up to 20 ms each, so the kill
    // finds its statements between claim and commit, holding claims.
    let slow = slowed(&store, 1);
    // Last acknowledged n per worker; worker w writes (w * 1_000_000 + n, "w{w}-{n}").
    let acked: Arc<Mutex<BTreeMap<i32, i32>>> = Arc::default();

    // The victim proxy runs on a runtime of its own, so that dropping the
    // runtime kills it and everything it was doing at once.
    let (victim_rt, survivor_rt) = (runtime(), runtime());
    let survivor_engine = engine(store.clone());
    let survivor = start_survivor(&survivor_rt, survivor_engine.clone());
    storm(&victim_rt, slow, acked.clone(), |w, n| {
        format!(
            "INSERT INTO accounts VALUES ({}, 'w{w}-{n}')",
            w * 1_000_000 + n
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    // kill -9: drop the runtime without waiting for anything.
    victim_rt.shutdown_background();
    let acked = acked.lock().unwrap().clone();
    assert_eq!(
        acked.len(),
        WRITERS as usize,
        "every writer got some rows in"
    );

    survivor_rt.block_on(async {
        let rec = store.read_catalog("accounts").await.unwrap().unwrap();
        let def: TableDef = serde_json::from_str(&rec.definition).unwrap();
        let u = &def.uniques[0];
        let c = common::connect_to(survivor.addr()).await;
        let mut orphans = 0;
        let mut longest = Duration::ZERO;
        for (w, last) in &acked {
            // The statement each writer had in flight, and the one after it.
            for n in [last + 1, last + 2] {
                let email = format!("w{w}-{n}");
                let key = u
                    .key_of(&[Value::Null, Value::Text(email.clone())])
                    .unwrap();
                if let Some(claim) = store.read_claim(&u.id, &key).await.unwrap() {
                    let owner = store.read_row(&def, &claim.owner).await.unwrap();
                    orphans += usize::from(!owner.is_some_and(|r| r.live));
                }
                // Usable again within the lease (plus slack): inserted, or
                // already there if the dead proxy's commit had landed.
                let t = Instant::now();
                let r = c
                    .execute(
                        "INSERT INTO accounts VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        &[&(9_000_000 + w * 10 + n % 10), &email],
                    )
                    .await;
                assert!(r.is_ok(), "{email}: {r:?}");
                let waited = t.elapsed();
                longest = longest.max(waited);
                assert!(
                    waited < LEASE * 4,
                    "{email} was blocked for {waited:?} (lease {LEASE:?})"
                );
            }
        }
        eprintln!(
            "crash: {} writers killed mid-statement; {orphans} orphaned claims found; \
             longest wait for a key {longest:?}; fences by the survivor {}",
            acked.len(),
            survivor_engine
                .stats()
                .fences
                .load(std::sync::atomic::Ordering::Relaxed)
        );
        // Nothing acknowledged is lost.
        for (w, last) in &acked {
            for n in 0..=*last {
                let row = c
                    .query_opt(
                        "SELECT email FROM accounts WHERE id = $1",
                        &[&(w * 1_000_000 + n)],
                    )
                    .await
                    .unwrap();
                let email = row.map(|r| r.get::<_, String>(0));
                assert_eq!(email, Some(format!("w{w}-{n}")), "acknowledged row {w}/{n}");
            }
        }
        // Uniqueness holds, and every live row's key is claimed by it.
        let mut emails = BTreeMap::new();
        let page = store.scan_rows(&def, None, 1_000_000).await.unwrap();
        for (pk, row) in page.rows.iter().filter(|(_, r)| r.live) {
            let Value::Text(email) = &row.values[1] else {
                panic!()
            };
            assert!(
                emails.insert(email.clone(), pk.clone()).is_none(),
                "two rows hold {email}"
            );
            let key = u.key_of(&row.values).unwrap();
            let claim = store.read_claim(&u.id, &key).await.unwrap().unwrap();
            assert_eq!(&claim.owner, pk, "{email}'s claim names another row");
        }
    });
}

/// SIGSTOP past the lease, then SIGCONT: a writer frozen between its claim
/// and its commit is fenced by another proxy that takes the key; when it
/// wakes, its commit fails and it answers 23505. Never two rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_stalled_past_the_lease_is_fenced_and_never_duplicates() {
    let store = Arc::new(MemoryStore::new());
    // Every operation of the stalled proxy freezes for twice the lease first.
    let (healthy_engine, _servers, h, s) = healthy_and_frozen(&store).await;
    let slow = tokio::spawn(async move {
        s.execute("INSERT INTO accounts VALUES (1, 'x@example.com')", &[])
            .await
    });
    // Its claim lands after one stall; then it freezes again before committing.
    tokio::time::sleep(LEASE * 3).await;
    h.execute("INSERT INTO accounts VALUES (2, 'x@example.com')", &[])
        .await
        .expect("the healthy proxy takes the key over once the lease has passed");
    let slow = slow.await.unwrap();
    let err = slow.expect_err("the stalled writer must not succeed");
    let db = err.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "23505", "{db:?}");
    assert_eq!(db.constraint(), Some("accounts_email_key"));
    let n: i64 = h
        .query_one("SELECT count(*) FROM accounts", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    assert!(
        healthy_engine
            .stats()
            .fences
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1
    );
}

/// A proxy dies with transactions open, each inserting two rows with unique
/// emails: a transaction it acknowledged is wholly there; any other is
/// wholly there (its COMMIT landed unacknowledged) or wholly absent; the
/// keys of the ones it had open are free again within a few leases, once
/// its heartbeat has stopped.
#[test]
fn a_proxy_killed_with_transactions_open_leaves_none_of_them_half_done() {
    let store = Arc::new(MemoryStore::new());
    let slow = slowed(&store, 2);
    let acked: Arc<Mutex<BTreeMap<i32, i32>>> = Arc::default();
    let (victim_rt, survivor_rt) = (runtime(), runtime());
    let survivor = start_survivor(&survivor_rt, engine(store.clone()));
    storm(&victim_rt, slow, acked.clone(), |w, n| {
        let id = w * 1_000_000 + n * 2;
        format!(
            "BEGIN; INSERT INTO accounts VALUES ({id}, 'w{w}-{n}-a'); \
             INSERT INTO accounts VALUES ({}, 'w{w}-{n}-b'); COMMIT",
            id + 1
        )
    });
    std::thread::sleep(Duration::from_millis(600));
    victim_rt.shutdown_background();
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len(), WRITERS as usize, "every writer committed some");

    survivor_rt.block_on(async {
        let c = common::connect_to(survivor.addr()).await;
        let mut longest = Duration::ZERO;
        for (w, last) in &acked {
            for n in 0..=last + 1 {
                let id = w * 1_000_000 + n * 2;
                let rows = c
                    .query(
                        "SELECT email FROM accounts WHERE id IN ($1, $2)",
                        &[&id, &(id + 1)],
                    )
                    .await
                    .unwrap();
                if n <= *last {
                    assert_eq!(rows.len(), 2, "acknowledged transaction {w}/{n}");
                } else {
                    assert!(rows.len() != 1, "transaction {w}/{n} is half there");
                }
            }
            // The keys of the transaction that was open: free again (or
            // taken by it, if its COMMIT landed), within a few leases.
            let email = format!("w{w}-{}-a", last + 1);
            let t = Instant::now();
            let r = c
                .execute(
                    "INSERT INTO accounts VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&(9_000_000 + w), &email],
                )
                .await;
            assert!(r.is_ok(), "{email}: {r:?}");
            longest = longest.max(t.elapsed());
            assert!(
                t.elapsed() < LEASE * 6,
                "{email} blocked for {:?}",
                t.elapsed()
            );
        }
        eprintln!("crash with transactions open: longest wait for a key {longest:?}");
    });
}

/// A proxy frozen past the lease with a transaction open (every store
/// operation of it stalls, heartbeats included, as under SIGSTOP): another
/// proxy aborts the transaction and takes the key; the frozen one's COMMIT
/// then answers 40001 and none of its transaction is visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_stalled_past_the_lease_is_aborted_and_cannot_commit() {
    let store = Arc::new(MemoryStore::new());
    let (_, _servers, h, s) = healthy_and_frozen(&store).await;
    let slow = tokio::spawn(async move {
        s.batch_execute("BEGIN; INSERT INTO accounts VALUES (1, 'x@example.com'); COMMIT")
            .await
    });
    tokio::time::sleep(LEASE * 3).await;
    h.execute("INSERT INTO accounts VALUES (2, 'x@example.com')", &[])
        .await
        .expect("the healthy proxy aborts the silent transaction and takes the key");
    let err = slow
        .await
        .unwrap()
        .expect_err("the stalled transaction must not commit");
    let code = err.as_db_error().map(|d| d.code().code().to_owned());
    assert_eq!(code.as_deref(), Some("40001"), "{err:?}");
    let ids: Vec<i32> = h
        .query("SELECT id FROM accounts", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, vec![2]);
}
