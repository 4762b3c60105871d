//! Concurrent writers of the same key: exactly one wins, every other one
//! waits for it and then gets 23505 (never a timeout or another error).
//! Also with several unique keys per row, where writers that each took one
//! key first must not wait on each other (no deadlock, no starvation).

mod common;

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

/// Exactly one attempt of a round succeeded, and every other failed with
/// 23505; the losers' errors, for their other fields.
fn one_winner(results: &[Result<u64, tokio_postgres::Error>], round: i32) -> Vec<&DbError> {
    let winners = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(winners, 1, "round {round}: {results:?}");
    let losers = results.iter().filter_map(|r| r.as_ref().err());
    losers
        .map(|e| {
            let db = e
                .as_db_error()
                .unwrap_or_else(|| panic!("not a server error: {e}"));
            assert_eq!(
                db.code(),
                &SqlState::UNIQUE_VIOLATION,
                "round {round}: {db:?}"
            );
            db
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
        assert_eq!(n, 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn same_primary_key_one_winner_per_round() {
    let (_server, admin, clients) =
        racers("CREATE TABLE pk_race (id integer PRIMARY KEY, who integer UNIQUE)").await;
    for round in 0..ROUNDS {
        let attempts = clients.iter().enumerate().map(|(i, c)| async move {
            let who = round * 1000 + i as i32;
            c.execute("INSERT INTO pk_race VALUES ($1, $2)", &[&round, &who])
                .await
        });
        let results = join_all(attempts).await;
        for db in one_winner(&results, round) {
            assert_eq!(db.constraint(), Some("pk_race_pkey"));
        }
    }
    let n: i64 = admin
        .query_one("SELECT count(*) FROM pk_race", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, ROUNDS as i64);
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
        assert_eq!(n, 1, "round {round}");
    }
    let stats = server.engine.stats();
    assert_eq!(stats.fences.load(Ordering::Relaxed), 0, "{stats:?}");
    assert_eq!(stats.restarts.load(Ordering::Relaxed), 0, "{stats:?}");
    assert!(stats.conflicts.load(Ordering::Relaxed) > 0, "{stats:?}");
}
