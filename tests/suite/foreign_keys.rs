//! FOREIGN KEY across sessions and proxies: a reference being added holds
//! the referenced row until its transaction ends, and a key being removed
//! waits for it; parent deletes raced against child inserts through three
//! proxies over a faulty store leave no orphan.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use keyclaim::engine::EngineConfig;
use keyclaim::server::RunningServer;
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use keyclaim::store::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

fn code(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.code().code().to_owned())
        .unwrap_or_else(|| format!("client: {e}"))
}

async fn schema(c: &Client) {
    c.batch_execute(
        "CREATE TABLE parent (id int PRIMARY KEY, name text);
         CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent);",
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_waits_for_an_open_reference_and_then_fails() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    schema(&a).await;
    a.batch_execute("INSERT INTO parent VALUES (1, 'p')")
        .await
        .unwrap();
    a.batch_execute("BEGIN; INSERT INTO child VALUES (10, 1)")
        .await
        .unwrap();
    // The referenced row is held: the delete waits for the block.
    let deleting = tokio::spawn(async move {
        let r = b.execute("DELETE FROM parent WHERE id = 1", &[]).await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !deleting.is_finished(),
        "the delete did not wait for the reference"
    );
    a.batch_execute("COMMIT").await.unwrap();
    let (_b, r) = deleting.await.unwrap();
    assert_eq!(code(&r.unwrap_err()), "23503");
    let n: Vec<i64> = common::column(&a, "SELECT count(*) FROM child").await;
    assert_eq!(n, vec![1]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_waits_for_an_open_delete_of_its_key() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    schema(&a).await;
    a.batch_execute("INSERT INTO parent VALUES (1, 'p'), (2, 'q')")
        .await
        .unwrap();
    for (end, expected) in [("ROLLBACK", Ok(1)), ("COMMIT", Err("23503"))] {
        let id: i32 = if end == "ROLLBACK" { 1 } else { 2 };
        a.batch_execute(&format!("BEGIN; DELETE FROM parent WHERE id = {id}"))
            .await
            .unwrap();
        let b2 = server.connect().await;
        let inserting = tokio::spawn(async move {
            let r = b2
                .execute("INSERT INTO child VALUES ($1, $2)", &[&(id * 100), &id])
                .await;
            (b2, r)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !inserting.is_finished(),
            "the reference did not wait for the delete"
        );
        a.batch_execute(end).await.unwrap();
        let (_b2, r) = inserting.await.unwrap();
        match expected {
            Ok(n) => assert_eq!(r.unwrap(), n, "after {end}"),
            Err(c) => assert_eq!(code(&r.unwrap_err()), c, "after {end}"),
        }
    }
    drop(b);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_references_to_one_row_both_commit() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    schema(&a).await;
    a.batch_execute("INSERT INTO parent VALUES (1, 'p')")
        .await
        .unwrap();
    a.batch_execute("BEGIN; INSERT INTO child VALUES (10, 1)")
        .await
        .unwrap();
    let second = tokio::spawn(async move {
        let r = b.execute("INSERT INTO child VALUES (11, 1)", &[]).await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.batch_execute("COMMIT").await.unwrap();
    let (_b, r) = second.await.unwrap();
    assert_eq!(r.unwrap(), 1);
    let ids: Vec<i32> = common::column(&a, "SELECT id FROM child ORDER BY id").await;
    assert_eq!(ids, vec![10, 11]);
    server.shutdown().await;
}

async fn faulty_proxy(store: Arc<dyn Store>) -> RunningServer {
    common::proxy(
        store,
        EngineConfig {
            lease: Duration::from_millis(500),
            lock_timeout: Duration::from_secs(5),
            max_retries: 2,
            ..EngineConfig::default()
        },
    )
    .await
}

const PARENTS: i32 = 12;

/// Parent deletes (and re-inserts) raced against child inserts and
/// re-parentings, 16 sessions on three proxies over a store whose LWTs and
/// reads fail or time out now and then: whatever each statement answered,
/// no child ever references a parent that is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_deletes_racing_child_inserts_leave_no_orphan() {
    let secs = common::env_or("KEYCLAIM_FK_SECS", 6);
    let seed = common::env_or("KEYCLAIM_FK_SEED", 1);
    let test = common::TestStore::fresh().await;
    let base = test.store.clone();
    let faulty = Arc::new(FaultyStore::new(
        base.clone(),
        FaultConfig {
            applied_then_unknown: 6,
            lost_then_unknown: 6,
            unavailable: 4,
            read_unknown: 4,
            max_latency: Duration::from_millis(2),
            ..FaultConfig::none(seed)
        },
    ));
    let mut proxies = Vec::new();
    for _ in 0..3 {
        proxies.push(faulty_proxy(faulty.clone()).await);
    }
    let clean = faulty_proxy(base.clone()).await;
    let admin = common::connect_to(clean.addr()).await;
    schema(&admin).await;
    for id in 1..=PARENTS {
        admin
            .execute("INSERT INTO parent VALUES ($1, 'p')", &[&id])
            .await
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(secs);
    // On a loaded machine the deleters can spend the whole run waiting for
    // blocks (each parent delete scans a child table that keeps growing):
    // the race goes on, up to six times as long, until parents have been
    // deleted often enough; the run must have seen at least one.
    let last_call = Instant::now() + Duration::from_secs(secs * 6);
    let deletes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut workers = Vec::new();
    for w in 0..16usize {
        let client = common::connect_to(proxies[w % 3].addr()).await;
        let deletes = deletes.clone();
        workers.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed * 1000 + w as u64);
            let mut answers: BTreeMap<String, u64> = BTreeMap::new();
            let mut next_child = (w as i32) * 1_000_000;
            let going = || {
                let now = Instant::now();
                now < deadline
                    || (now < last_call && deletes.load(std::sync::atomic::Ordering::SeqCst) <= 3)
            };
            while going() {
                let parent = rng.gen_range(1..=PARENTS);
                let r = match (w % 4, rng.gen_range(0..4)) {
                    // Deleters: a parent goes (alone, or with its children
                    // in a block), and comes back.
                    (0, 0) => client
                        .execute("DELETE FROM parent WHERE id = $1", &[&parent])
                        .await
                        .map(|n| if n == 1 { "deleted" } else { "deleted nothing" }),
                    (0, 1..=2) => {
                        let sql = format!(
                            "BEGIN; DELETE FROM child WHERE parent_id = {parent}; \
                             DELETE FROM parent WHERE id = {parent}; COMMIT"
                        );
                        let r = client.batch_execute(&sql).await.map(|_| "deleted");
                        if r.is_err() {
                            let _ = client.batch_execute("ROLLBACK").await;
                        }
                        r
                    }
                    (0, _) => client
                        .execute(
                            "INSERT INTO parent VALUES ($1, 'p') ON CONFLICT DO NOTHING",
                            &[&parent],
                        )
                        .await
                        .map(|_| "parent inserted"),
                    // Children come and go, alone or in blocks.
                    (1, _) => {
                        next_child += 1;
                        client
                            .execute("INSERT INTO child VALUES ($1, $2)", &[&next_child, &parent])
                            .await
                            .map(|_| "child inserted")
                    }
                    (2, _) => {
                        next_child += 2;
                        let sql = format!(
                            "BEGIN; INSERT INTO child VALUES ({}, {parent}); \
                             INSERT INTO child VALUES ({}, {}); COMMIT",
                            next_child - 1,
                            next_child,
                            rng.gen_range(1..=PARENTS)
                        );
                        let r = client.batch_execute(&sql).await.map(|_| "block committed");
                        if r.is_err() {
                            let _ = client.batch_execute("ROLLBACK").await;
                        }
                        r
                    }
                    _ => client
                        .execute(
                            "UPDATE child SET parent_id = $1 WHERE id % 7 = $2",
                            &[&parent, &rng.gen_range(0..7)],
                        )
                        .await
                        .map(|_| "re-parented"),
                };
                let answer = match r {
                    Ok(a) => a.to_owned(),
                    Err(e) => code(&e),
                };
                if answer == "deleted" {
                    deletes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                *answers.entry(answer).or_default() += 1;
            }
            answers
        }));
    }
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for w in workers {
        for (k, v) in w.await.unwrap() {
            *total.entry(k).or_default() += v;
        }
    }
    // Let aborts of dropped sessions and background cleanup land.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let parents: BTreeSet<i32> = common::column(&admin, "SELECT id FROM parent")
        .await
        .into_iter()
        .collect();
    let children: Vec<tokio_postgres::Row> = admin
        .query("SELECT id, parent_id FROM child", &[])
        .await
        .unwrap();
    eprintln!(
        "foreign keys: {total:?}; faults injected: {}; {} parents, {} children",
        faulty.counts.total(),
        parents.len(),
        children.len()
    );
    let orphans: Vec<(i32, i32)> = children
        .iter()
        .map(|r| (r.get::<_, i32>(0), r.get::<_, i32>(1)))
        .filter(|(_, p)| !parents.contains(p))
        .collect();
    assert!(orphans.is_empty(), "orphans (child, parent): {orphans:?}");
    for (needed, least) in [("deleted", 1), ("child inserted", 4), ("23503", 4)] {
        assert!(
            total.get(needed).copied().unwrap_or(0) >= least,
            "too few '{needed}' to mean anything: {total:?}"
        );
    }
    test.cleanup().await;
}

/// Round by round, one parent at a time, through three proxies over a
/// faulty store: a block adds a child and stays open a while, another
/// session adds a child, and a third deletes the parent (its children
/// first, in a block), each starting at its own moment. After each round,
/// if the parent is gone, so is every child that referenced it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_round_a_deleted_parent_leaves_no_child() {
    let rounds = common::env_or("KEYCLAIM_FK_ROUNDS", 40);
    let test = common::TestStore::fresh().await;
    let base = test.store.clone();
    let faulty = Arc::new(FaultyStore::new(
        base.clone(),
        FaultConfig {
            applied_then_unknown: 3,
            lost_then_unknown: 3,
            max_latency: Duration::from_millis(4),
            ..FaultConfig::none(11)
        },
    ));
    let mut proxies = Vec::new();
    for _ in 0..3 {
        proxies.push(faulty_proxy(faulty.clone()).await);
    }
    let clean = faulty_proxy(base.clone()).await;
    let admin = common::connect_to(clean.addr()).await;
    schema(&admin).await;
    let mut sessions = Vec::new();
    for proxy in &proxies {
        sessions.push(Arc::new(common::connect_to(proxy.addr()).await));
    }
    let (mut parents_deleted, mut children_kept) = (0, 0);
    for round in 1..=rounds {
        let parent = round as i32;
        admin
            .execute("INSERT INTO parent VALUES ($1, 'p')", &[&parent])
            .await
            .unwrap();
        let [holder, adder, deleter] = [0, 1, 2].map(|s| sessions[s].clone());
        let hold = tokio::spawn(async move {
            // Its reference was checked when the INSERT ended: only its
            // lock on the parent keeps the parent from going before COMMIT.
            let insert = format!(
                "BEGIN; INSERT INTO child VALUES ({}, {parent})",
                parent * 10
            );
            if holder.batch_execute(&insert).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            let _ = holder.batch_execute("COMMIT").await;
        });
        let add = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(round * 13 % 50)).await;
            let _ = adder
                .execute(
                    "INSERT INTO child VALUES ($1, $2)",
                    &[&(parent * 10 + 1), &parent],
                )
                .await;
        });
        let delete = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(round * 29 % 120)).await;
            let sql = format!(
                "BEGIN; DELETE FROM child WHERE parent_id = {parent}; \
                 DELETE FROM parent WHERE id = {parent}; COMMIT"
            );
            if deleter.batch_execute(&sql).await.is_err() {
                let _ = deleter.batch_execute("ROLLBACK").await;
            }
        });
        for t in [hold, add, delete] {
            t.await.unwrap();
        }
        let left: Vec<i32> = common::column(
            &admin,
            &format!("SELECT id FROM parent WHERE id = {parent}"),
        )
        .await;
        let children: Vec<i32> = common::column(
            &admin,
            &format!("SELECT id FROM child WHERE parent_id = {parent}"),
        )
        .await;
        if left.is_empty() {
            parents_deleted += 1;
            assert!(
                children.is_empty(),
                "round {round}: the parent is gone, children {children:?} still reference it"
            );
        } else {
            children_kept += children.len();
        }
    }
    eprintln!(
        "rounds: {rounds}, parents deleted: {parents_deleted}, children kept: {children_kept}, faults: {}",
        faulty.counts.total()
    );
    assert!(
        parents_deleted > rounds / 5 && children_kept > 0,
        "the races did not go both ways often enough to mean anything"
    );
    test.cleanup().await;
}
