//! Real processes, real sockets, a store that outlives them: two keyclaim
//! processes on one Cassandra keyspace. One is killed with SIGKILL in the
//! middle of a write storm; another is frozen with SIGSTOP past the lease
//! and resumed with SIGCONT. Afterwards no key stays blocked much longer than
//! the lease, nothing acknowledged is lost, and no key is held twice.
//!
//! Needs `KEYCLAIM_TEST_CASSANDRA=host:port` (the embedded store lives and
//! dies with its process, so it cannot be shared by processes); skipped
//! without it. tests/suite/crash.rs covers the same ground in process, in CI.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::process::{free_port, Proxy};
use keyclaim::config::Config;

const LEASE_MS: u64 = 1000;
const WRITERS: i32 = 6;

/// The test Cassandra's config with a fresh keyspace on it (None, and a
/// note, without `KEYCLAIM_TEST_CASSANDRA`).
async fn cassandra() -> Option<(Config, common::TestStore)> {
    if common::cassandra_nodes().is_none() {
        eprintln!(
            "skipped: needs {} (processes must share a store that outlives them)",
            common::CASSANDRA_ENV
        );
        return None;
    }
    let mut config = Config::default();
    common::configure_store(&mut config);
    let store = common::TestStore::open(&config).await;
    Some((config, store))
}

fn spawn(config: &Config) -> Proxy {
    Proxy::spawn(config, free_port(), LEASE_MS)
}

/// Writers insert (w * 1_000_000 + n, "w{w}-{n}") through `port` until told
/// to stop; the acknowledged n of each writer are recorded (on a loaded
/// cluster some inserts fail with 53000, applying nothing).
fn storm(
    proxy: &Proxy,
    acked: Arc<Mutex<BTreeMap<i32, BTreeSet<i32>>>>,
    stop: Arc<Mutex<bool>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let addr = proxy.addr;
    (0..WRITERS)
        .map(|w| {
            let acked = acked.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let client = common::connect_to(addr).await;
                for n in 0.. {
                    if *stop.lock().unwrap() {
                        break;
                    }
                    let id = w * 1_000_000 + n;
                    let sql = "INSERT INTO accounts VALUES ($1, $2) ON CONFLICT DO NOTHING";
                    match tokio::time::timeout(
                        Duration::from_secs(60),
                        client.execute(sql, &[&id, &format!("w{w}-{n}")]),
                    )
                    .await
                    {
                        Ok(Ok(1)) => {
                            acked.lock().unwrap().entry(w).or_default().insert(n);
                        }
                        Ok(_) => {}
                        // The process was killed: stop writing.
                        Err(_) => break,
                    }
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_and_stalled_processes_keep_every_constraint() {
    let Some((config, store)) = cassandra().await else {
        return;
    };
    let mut a = spawn(&config);
    let b = spawn(&config);
    let admin = b.connect().await;
    admin
        .batch_execute("CREATE TABLE accounts (id integer PRIMARY KEY, email text UNIQUE)")
        .await
        .unwrap();

    // SIGKILL mid-storm.
    let acked: Arc<Mutex<BTreeMap<i32, BTreeSet<i32>>>> = Arc::default();
    let stop = Arc::new(Mutex::new(false));
    let writers = storm(&a, acked.clone(), stop.clone());
    tokio::time::sleep(Duration::from_secs(4)).await;
    a.kill();
    *stop.lock().unwrap() = true;
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        !acked.is_empty(),
        "the storm acknowledged nothing before the kill"
    );
    let mut longest = Duration::ZERO;
    for (w, ns) in &acked {
        let last = ns.last().copied().unwrap_or(0);
        for n in [last + 1, last + 2] {
            let t = Instant::now();
            let r = admin
                .execute(
                    "INSERT INTO accounts VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&(9_000_000 + w * 10 + n % 10), &format!("w{w}-{n}")],
                )
                .await;
            assert!(r.is_ok(), "w{w}-{n}: {r:?}");
            longest = longest.max(t.elapsed());
        }
    }
    assert!(
        longest < Duration::from_millis(LEASE_MS * 6),
        "a key was blocked for {longest:?}"
    );
    for (w, ns) in &acked {
        for n in ns {
            let row = admin
                .query_opt(
                    "SELECT email FROM accounts WHERE id = $1",
                    &[&(w * 1_000_000 + n)],
                )
                .await
                .unwrap();
            assert_eq!(
                row.map(|r| r.get::<_, String>(0)),
                Some(format!("w{w}-{n}")),
                "acknowledged row {w}/{n}"
            );
        }
    }

    // SIGSTOP past the lease, SIGCONT: a frozen proxy and a live one write
    // the same keys; no key may end up held twice.
    let c = spawn(&config);
    let frozen = c.connect().await;
    let keys: Vec<String> = (0..30).map(|k| format!("shared-{k}")).collect();
    let slow = {
        let keys = keys.clone();
        tokio::spawn(async move {
            let mut answers = 0;
            for (i, k) in keys.iter().enumerate() {
                let r = frozen
                    .execute(
                        "INSERT INTO accounts VALUES ($1, $2)",
                        &[&(7_000_000 + i as i32), k],
                    )
                    .await;
                answers += 1;
                if let Err(e) = r {
                    let code = e.as_db_error().map(|d| d.code().code().to_owned());
                    assert!(
                        matches!(code.as_deref(), Some("23505" | "40003" | "53000" | "55P03")),
                        "{k}: {e}"
                    );
                }
            }
            answers
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.signal("-STOP");
    for (i, k) in keys.iter().enumerate() {
        let _ = admin
            .execute(
                "INSERT INTO accounts VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&(8_000_000 + i as i32), k],
            )
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(LEASE_MS * 2)).await;
    c.signal("-CONT");
    let answers = tokio::time::timeout(Duration::from_secs(120), slow)
        .await
        .expect("the resumed proxy answers every statement")
        .unwrap();
    assert_eq!(answers, keys.len());
    let rows = admin
        .query("SELECT id, email FROM accounts", &[])
        .await
        .unwrap();
    let mut seen = BTreeSet::new();
    for r in &rows {
        let email: String = r.get(1);
        assert!(seen.insert(email.clone()), "{email} is held by two rows");
    }
    for k in &keys {
        assert!(seen.contains(k), "{k} is held by no row");
    }
    eprintln!(
        "crash_process: {} writers killed, longest wait for a key {longest:?}; {} keys raced by a stalled proxy, none doubled",
        acked.len(),
        keys.len()
    );
    drop((b, c));
    store.cleanup().await;
}

/// A process killed with transaction blocks open (rows written, a table
/// created) leaves none of them visible; their rows, unique values and
/// table name are free again within a few leases, for another process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_leaves_nothing_of_its_open_transactions() {
    let Some((config, store)) = cassandra().await else {
        return;
    };
    let mut a = spawn(&config);
    let b = spawn(&config);
    let admin = b.connect().await;
    admin
        .batch_execute(
            "CREATE TABLE acct (id integer PRIMARY KEY, email text UNIQUE, bal integer NOT NULL);
             INSERT INTO acct VALUES (1, 'a@x', 100), (2, 'b@x', 100), (3, 'c@x', 100),
                                     (4, 'd@x', 100), (5, 'e@x', 100), (6, 'f@x', 100)",
        )
        .await
        .unwrap();
    // On the doomed process: one committed transfer, then open blocks that
    // move money, take new unique values and create a table.
    let victim = a.connect().await;
    victim
        .batch_execute(
            "BEGIN;
             UPDATE acct SET bal = bal - 10 WHERE id = 1;
             UPDATE acct SET bal = bal + 10 WHERE id = 2;
             COMMIT",
        )
        .await
        .unwrap();
    let mut open = Vec::new();
    for k in 0..3 {
        let c = a.connect().await;
        c.batch_execute(&format!(
            "BEGIN;
             UPDATE acct SET bal = bal - 50 WHERE id = {from};
             UPDATE acct SET bal = bal + 50 WHERE id = {to};
             INSERT INTO acct VALUES ({id}, 'new{k}@x', 0);
             CREATE TABLE made{k} (id integer PRIMARY KEY);
             INSERT INTO made{k} VALUES (1)",
            from = 2 * k + 1,
            to = 2 * k + 2,
            id = 100 + k,
        ))
        .await
        .unwrap();
        open.push(c);
    }
    a.kill();
    let started = Instant::now();
    // Everything the open blocks touched is usable again: each statement
    // waits for the dead transactions at most until their lease ends.
    for k in 0..3 {
        admin
            .batch_execute(&format!(
                "UPDATE acct SET bal = bal WHERE id = {};
                 INSERT INTO acct VALUES ({}, 'new{k}@x', 0);
                 CREATE TABLE made{k} (id integer PRIMARY KEY, v text)",
                2 * k + 1,
                200 + k,
            ))
            .await
            .unwrap();
    }
    let freed = started.elapsed();
    assert!(
        freed < Duration::from_millis(LEASE_MS * 10),
        "the dead transactions held their keys for {freed:?}"
    );
    let rows = admin
        .query("SELECT id, bal FROM acct ORDER BY id", &[])
        .await
        .unwrap();
    let balances: Vec<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        balances,
        vec![
            (1, 90),
            (2, 110),
            (3, 100),
            (4, 100),
            (5, 100),
            (6, 100),
            (200, 0),
            (201, 0),
            (202, 0)
        ],
        "only the committed transfer and the survivor's rows are there"
    );
    for k in 0..3 {
        let made = admin
            .query(&format!("SELECT * FROM made{k}"), &[])
            .await
            .unwrap();
        assert!(
            made.is_empty(),
            "made{k} is the survivor's new, empty table"
        );
    }
    eprintln!("crash_process: 3 open transactions of a killed process freed after {freed:?}");
    drop(open);
    store.cleanup().await;
}
