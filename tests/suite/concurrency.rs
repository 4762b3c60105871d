//! Concurrent writers of the same key: exactly one wins, every other one
//! waits for it and then gets 23505 (never a timeout or another error).
//! Also with several unique keys per row, where writers that each took one
//! key first must not wait on each other (no deadlock, no starvation).

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use tokio_postgres::error::{DbError, SqlState};
use tokio_postgres::Client;

const WRITERS: usize = 16;
const ROUNDS: i32 = 20;

/// A server with `ddl` applied, an admin connection and WRITERS more.
async fn racers(ddl: &str) -> (common::TestServer, Client, Vec<Client>) {
    slow_racers(ddl, Duration::ZERO, |_| {}).await
}

/// As [`racers`], with every store operation taking up to `latency`, so that
/// the parallel claims of concurrent statements interleave.
async fn slow_racers(
    ddl: &str,
    latency: Duration,
    configure: impl FnOnce(&mut keyclaim::config::Config),
) -> (common::TestServer, Client, Vec<Client>) {
    let server = common::start_layered(configure, |store| {
        let config = FaultConfig {
            max_latency: latency,
            ..FaultConfig::none(7)
        };
        Arc::new(FaultyStore::new(store, config))
    })
    .await;
    let admin = server.connect().await;
    admin.batch_execute(ddl).await.unwrap();
    let mut clients = Vec::new();
    for _ in 0..WRITERS {
        clients.push(server.connect().await);
    }
    (server, admin, clients)
}

/// How many attempts succeeded.
fn winners(results: &[Result<u64, tokio_postgres::Error>]) -> i64 {
    results.iter().filter(|r| r.is_ok()).count() as i64
}

/// What the table may hold after `results`: every acknowledged row, and
/// each 40003's row perhaps.
fn held(results: &[Result<u64, tokio_postgres::Error>]) -> std::ops::RangeInclusive<i64> {
    let unknown = results
        .iter()
        .filter(|r| {
            r.as_ref()
                .err()
                .and_then(|e| e.as_db_error())
                .is_some_and(|d| d.code().code() == "40003")
        })
        .count() as i64;
    winners(results)..=winners(results) + unknown
}

/// Exactly one attempt of a round succeeded, and every other failed with
/// 23505; the losers' 23505 errors, for their other fields.
///
/// On a cluster of several nodes, sixteen compare-and-sets on one
/// partition at once can outlast Cassandra's Paxos contention timeout: an
/// attempt may then answer 53000 (not applied) or 40003 (unknown), and a
/// round may have no acknowledged winner; a claim whose write stayed
/// unknown holds its key until its lease ends (an hour in
/// `two_unique_keys_one_winner_per_round`), so a later writer may answer
/// 55P03. Never two winners, and never another error; [`held`] checks the
/// table against the answers.
fn one_winner(results: &[Result<u64, tokio_postgres::Error>], round: i32) -> Vec<&DbError> {
    let contended = common::cassandra_nodes().is_some_and(|n| n.len() > 1);
    let winners = winners(results);
    match contended {
        true => assert!(winners <= 1, "round {round}: {results:?}"),
        false => assert_eq!(winners, 1, "round {round}: {results:?}"),
    }
    let losers = results.iter().filter_map(|r| r.as_ref().err());
    losers
        .filter_map(|e| {
            let db = e
                .as_db_error()
                .unwrap_or_else(|| panic!("not a server error: {e}"));
            let store_failed = [
                SqlState::INSUFFICIENT_RESOURCES,
                SqlState::from_code("40003"),
                SqlState::LOCK_NOT_AVAILABLE,
            ];
            if contended && store_failed.contains(db.code()) {
                return None;
            }
            assert_eq!(
                db.code(),
                &SqlState::UNIQUE_VIOLATION,
                "round {round}: {db:?}"
            );
            Some(db)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn same_unique_value_one_winner_per_round() {
    let (_server, admin, clients) =
        racers("CREATE TABLE race (id integer PRIMARY KEY, k text UNIQUE)").await;
    for round in 0..ROUNDS {
        let key = format!("key-{round}");
        let attempts = clients.iter().enumerate().map(|(i, c)| {
            let key = key.clone();
            async move {
                let id = round * 1000 + i as i32;
                c.execute("INSERT INTO race VALUES ($1, $2)", &[&id, &key])
                    .await
            }
        });
        let results = join_all(attempts).await;
        let won = held(&results);
        for db in one_winner(&results, round) {
            assert_eq!(db.constraint(), Some("race_k_key"));
            assert_eq!(
                db.detail(),
                Some(format!("Key (k)=({key}) already exists.").as_str())
            );
        }
        let n: i64 = admin
            .query_one("SELECT count(*) FROM race WHERE k = $1", &[&key])
            .await
            .unwrap()
            .get(0);
        assert!(
            n <= 1 && won.contains(&n),
            "round {round}: {n} rows, {won:?} expected"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn same_primary_key_one_winner_per_round() {
    let (_server, admin, clients) =
        racers("CREATE TABLE pk_race (id integer PRIMARY KEY, who integer UNIQUE)").await;
    let mut won = 0..=0;
    for round in 0..ROUNDS {
        let attempts = clients.iter().enumerate().map(|(i, c)| async move {
            let who = round * 1000 + i as i32;
            c.execute("INSERT INTO pk_race VALUES ($1, $2)", &[&round, &who])
                .await
        });
        let results = join_all(attempts).await;
        let held = held(&results);
        won = (won.start() + held.start())..=(won.end() + held.end());
        for db in one_winner(&results, round) {
            assert_eq!(db.constraint(), Some("pk_race_pkey"));
        }
    }
    let n: i64 = admin
        .query_one("SELECT count(*) FROM pk_race", &[])
        .await
        .unwrap()
        .get(0);
    assert!(won.contains(&n), "{n} rows, {won:?} expected");
}

/// Every writer inserts a row with the same two unique keys, on a store
/// with a few milliseconds of latency. The claims of one statement go out
/// in parallel, so writers often hold one key each:
/// they must fall back to key order rather than wait on each other. No lease
/// can expire (an hour), so nothing may be fenced, and a deadlock or a
/// livelock would show as 55P03 at the lock timeout instead of 23505. (The
/// wound-wait rule this replaced fenced live statements here, and could
/// livelock: the younger re-stamped its claims and kept them.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_unique_keys_one_winner_per_round() {
    let (server, admin, clients) = slow_racers(
        "CREATE TABLE pair (id integer PRIMARY KEY, a text UNIQUE, b text UNIQUE)",
        Duration::from_millis(3),
        |c| {
            c.claims.lease_ms = 3_600_000;
            c.claims.lock_timeout_ms = 30_000;
        },
    )
    .await;
    for round in 0..ROUNDS {
        let (a, b) = (format!("a-{round}"), format!("b-{round}"));
        let attempts = clients.iter().enumerate().map(|(i, c)| {
            let (a, b) = (a.clone(), b.clone());
            async move {
                let id = round * 1000 + i as i32;
                c.execute("INSERT INTO pair VALUES ($1, $2, $3)", &[&id, &a, &b])
                    .await
            }
        });
        let results = join_all(attempts).await;
        let won = held(&results);
        for db in one_winner(&results, round) {
            let expected = [
                ("pair_a_key", format!("Key (a)=({a}) already exists.")),
                ("pair_b_key", format!("Key (b)=({b}) already exists.")),
            ];
            assert!(
                expected
                    .iter()
                    .any(|(c, d)| db.constraint() == Some(c) && db.detail() == Some(d)),
                "round {round}: {db:?}"
            );
        }
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pair WHERE a = $1 OR b = $2",
                &[&a, &b],
            )
            .await
            .unwrap()
            .get(0);
        assert!(
            n <= 1 && won.contains(&n),
            "round {round}: {n} rows, {won:?} expected"
        );
    }
    let stats = server.engine.stats();
    assert_eq!(stats.fences.load(Ordering::Relaxed), 0, "{stats:?}");
    assert_eq!(stats.restarts.load(Ordering::Relaxed), 0, "{stats:?}");
    assert!(stats.conflicts.load(Ordering::Relaxed) > 0, "{stats:?}");
}
