//! Concurrent writers of the same key: exactly one wins, every other one
//! waits for it and then gets 23505 (never a timeout or another error).

mod common;

use futures::future::join_all;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

const WRITERS: usize = 16;
const ROUNDS: i32 = 20;

/// A server with `ddl` applied, an admin connection and WRITERS more.
async fn racers(ddl: &str) -> (common::TestServer, Client, Vec<Client>) {
    let server = common::start().await;
    let admin = server.connect().await;
    admin.batch_execute(ddl).await.unwrap();
    let mut clients = Vec::new();
    for _ in 0..WRITERS {
        clients.push(server.connect().await);
    }
    (server, admin, clients)
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
        let winners = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            let db = r
                .as_db_error()
                .unwrap_or_else(|| panic!("not a server error: {r}"));
            assert_eq!(
                db.code(),
                &SqlState::UNIQUE_VIOLATION,
                "round {round}: {db:?}"
            );
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
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "round {round}: {results:?}"
        );
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            let db = r.as_db_error().expect("server error");
            assert_eq!(db.code(), &SqlState::UNIQUE_VIOLATION);
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
