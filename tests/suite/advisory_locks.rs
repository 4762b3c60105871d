//! Advisory locks between sessions and across proxies
//! (docs/advisory_locks.md): contention, try-lock, re-entrancy, the
//! unlock WARNING, session and transaction end, lock_timeout, cancel and
//! statement_timeout, deadlocks, both protocols, two proxies on one store,
//! a dead proxy's locks freed within a lease, and a stalled holder whose
//! later writes are refused (the fence). Single-session return values are
//! also compared with PostgreSQL in tests/sql/advisory_locks.sql.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::proxies::{self, Conn, Freeze};
use keyclaim::engine::{Engine, EngineConfig};
use keyclaim::store::layer::Layered;
use keyclaim::store::Store;
use keyclaim::types::Value;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls};

async fn try_lock(client: &Client, sql: &str) -> bool {
    client
        .query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .get(0)
}

async fn code(client: &Client, sql: &str) -> String {
    common::sqlstate_of(client, sql).await
}

/// Runs `sql` on a task of its own (to wait for a holder); its SQLSTATE
/// or "ok".
fn spawned(client: Client, sql: &'static str) -> tokio::task::JoinHandle<(Client, String)> {
    tokio::spawn(async move {
        let r = match client.batch_execute(sql).await {
            Ok(()) => "ok".to_owned(),
            Err(e) => e
                .as_db_error()
                .map(|d| d.code().code().to_owned())
                .unwrap_or_else(|| e.to_string()),
        };
        (client, r)
    })
}

#[tokio::test]
async fn two_sessions_contend_for_one_lock() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(1)").await.unwrap();
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(1)").await);
    // The other key space and other keys are free.
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock(0, 1)").await);
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock(2)").await);
    // A waiter gets the lock once the holder lets go.
    let waiter = spawned(b, "SELECT pg_advisory_lock(1)");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "the waiter waits for the holder");
    assert!(try_lock(&a, "SELECT pg_advisory_unlock(1)").await);
    let (b, r) = waiter.await.unwrap();
    assert_eq!(r, "ok");
    assert!(!try_lock(&a, "SELECT pg_try_advisory_lock(1)").await);
    assert!(try_lock(&b, "SELECT pg_advisory_unlock(1)").await);
    assert!(try_lock(&a, "SELECT pg_try_advisory_lock(1)").await);
    server.shutdown().await;
}

#[tokio::test]
async fn locks_are_reentrant_and_counted() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(7); SELECT pg_advisory_lock(7)")
        .await
        .unwrap();
    assert!(try_lock(&a, "SELECT pg_try_advisory_lock(7)").await);
    for _ in 0..2 {
        assert!(try_lock(&a, "SELECT pg_advisory_unlock(7)").await);
        assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(7)").await);
    }
    assert!(try_lock(&a, "SELECT pg_advisory_unlock(7)").await);
    assert!(!try_lock(&a, "SELECT pg_advisory_unlock(7)").await);
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock(7)").await);
    server.shutdown().await;
}

#[tokio::test]
async fn shared_holders_exclude_an_exclusive_one() {
    let server = common::start().await;
    let (a, b, c) = (
        server.connect().await,
        server.connect().await,
        server.connect().await,
    );
    a.batch_execute("SELECT pg_advisory_lock_shared(3)")
        .await
        .unwrap();
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock_shared(3)").await);
    assert!(!try_lock(&c, "SELECT pg_try_advisory_lock(3)").await);
    // The same session may hold both.
    assert!(try_lock(&a, "SELECT pg_advisory_unlock_shared(3)").await);
    assert!(!try_lock(&c, "SELECT pg_try_advisory_lock(3)").await);
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock(3)").await);
    assert!(!try_lock(&c, "SELECT pg_try_advisory_lock_shared(3)").await);
    b.batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    assert!(try_lock(&c, "SELECT pg_try_advisory_lock(3)").await);
    server.shutdown().await;
}

#[tokio::test]
async fn unlocking_a_lock_not_held_warns_as_postgres_does() {
    let server = common::start().await;
    let (mut raw, _) = server.raw().await;
    let reply = raw.query("SELECT pg_advisory_unlock(5)").await;
    assert_eq!(reply.rows(), vec![vec![Some("f".to_owned())]]);
    assert_eq!(
        reply.notices(),
        vec![(
            "01000".to_owned(),
            "you don't own a lock of type ExclusiveLock".to_owned()
        )]
    );
    let reply = raw.query("SELECT pg_advisory_unlock_shared(5)").await;
    assert_eq!(
        reply.notices(),
        vec![(
            "01000".to_owned(),
            "you don't own a lock of type ShareLock".to_owned()
        )]
    );
    // void, as PostgreSQL describes it: OID 2278, an empty value.
    let reply = raw.query("SELECT pg_advisory_lock(5)").await;
    assert_eq!(reply.columns(), vec![("pg_advisory_lock".to_owned(), 2278)]);
    assert_eq!(reply.rows(), vec![vec![Some(String::new())]]);
    let reply = raw.query("SELECT pg_advisory_unlock(5)").await;
    assert_eq!(reply.rows(), vec![vec![Some("t".to_owned())]]);
    assert!(reply.notices().is_empty());
    server.shutdown().await;
}

/// sqlx's migrator sends `SELECT pg_advisory_lock($1)` with a bigint;
/// asyncpg's pool `SELECT pg_advisory_unlock_all()` on every release.
#[tokio::test]
async fn the_extended_protocol_takes_a_bigint_parameter() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    let lock = a.prepare("SELECT pg_advisory_lock($1)").await.unwrap();
    assert_eq!(lock.params(), &[Type::INT8]);
    assert_eq!(lock.columns()[0].type_(), &Type::VOID);
    a.execute(&lock, &[&4_611_686_018_427_387_904i64])
        .await
        .unwrap();
    let try_pair = b
        .prepare("SELECT pg_try_advisory_lock($1, $2)")
        .await
        .unwrap();
    assert_eq!(try_pair.params(), &[Type::INT4, Type::INT4]);
    let held: bool = b
        .query_one(
            "SELECT pg_try_advisory_lock($1)",
            &[&4_611_686_018_427_387_904i64],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!held);
    let got: bool = b
        .query_one(&try_pair, &[&1i32, &2i32])
        .await
        .unwrap()
        .get(0);
    assert!(got);
    a.execute("SELECT pg_advisory_unlock_all()", &[])
        .await
        .unwrap();
    let held: bool = b
        .query_one(
            "SELECT pg_try_advisory_lock($1)",
            &[&4_611_686_018_427_387_904i64],
        )
        .await
        .unwrap()
        .get(0);
    assert!(held);
    server.shutdown().await;
}

#[tokio::test]
async fn a_session_that_ends_frees_its_locks() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute(
        "SELECT pg_advisory_lock(1); SELECT pg_advisory_lock_shared(2); BEGIN; SELECT pg_advisory_xact_lock(3)",
    )
    .await
    .unwrap();
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(1)").await);
    drop(a);
    let started = Instant::now();
    b.batch_execute(
        "SET lock_timeout = '5s'; SELECT pg_advisory_lock(1); SELECT pg_advisory_lock(2); SELECT pg_advisory_lock(3)",
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    server.shutdown().await;
}

#[tokio::test]
async fn transaction_locks_end_at_commit_and_rollback() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    for end in ["COMMIT", "ROLLBACK"] {
        a.batch_execute("BEGIN; SELECT pg_advisory_xact_lock(9); SELECT pg_advisory_lock(10)")
            .await
            .unwrap();
        assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(9)").await);
        // pg_advisory_unlock does not release a transaction-level lock.
        assert!(!try_lock(&a, "SELECT pg_advisory_unlock(9)").await);
        assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(9)").await);
        a.batch_execute(end).await.unwrap();
        assert!(try_lock(&b, "SELECT pg_try_advisory_xact_lock(9)").await);
        // Outside a block the lock ended with the statement: a takes it.
        assert!(try_lock(&a, "SELECT pg_try_advisory_xact_lock(9)").await);
        // The session lock outlived the block either way.
        assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(10)").await);
        assert!(try_lock(&a, "SELECT pg_advisory_unlock(10)").await);
    }
    // ROLLBACK TO a savepoint gives back the transaction-level locks
    // taken since; session-level ones stay.
    a.batch_execute(
        "BEGIN; SELECT pg_advisory_xact_lock(19); SAVEPOINT s; SELECT pg_advisory_xact_lock(20); SELECT pg_advisory_xact_lock(19); SELECT pg_advisory_lock(21)",
    )
    .await
    .unwrap();
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(20)").await);
    a.batch_execute("ROLLBACK TO s").await.unwrap();
    assert!(try_lock(&b, "SELECT pg_try_advisory_xact_lock(20)").await);
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(19)").await);
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(21)").await);
    a.batch_execute("COMMIT").await.unwrap();
    assert!(try_lock(&b, "SELECT pg_try_advisory_xact_lock(19)").await);
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(21)").await);
    // DISCARD ALL releases session-level locks, as pg_advisory_unlock_all.
    a.batch_execute("DISCARD ALL").await.unwrap();
    assert!(try_lock(&b, "SELECT pg_try_advisory_xact_lock(21)").await);
    // A failed block keeps its locks until ROLLBACK.
    a.batch_execute("BEGIN; SELECT pg_advisory_xact_lock(9)")
        .await
        .unwrap();
    assert_eq!(code(&a, "SELECT 1/0").await, "22012");
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(9)").await);
    a.batch_execute("ROLLBACK").await.unwrap();
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock(9)").await);
    server.shutdown().await;
}

#[tokio::test]
async fn a_wait_ends_at_lock_timeout_statement_timeout_or_cancel() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(1)").await.unwrap();
    let started = Instant::now();
    let e = b
        .batch_execute("SET lock_timeout = '200ms'; SELECT pg_advisory_lock(1)")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code().code(), "55P03");
    assert_eq!(db.message(), "canceling statement due to lock timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        code(
            &b,
            "SET lock_timeout = 0; SET statement_timeout = '200ms'; SELECT pg_advisory_lock(1)"
        )
        .await,
        "57014"
    );
    b.batch_execute("SET statement_timeout = 0").await.unwrap();
    let cancel = b.cancel_token();
    let waiter = spawned(b, "SELECT pg_advisory_lock(1)");
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel.cancel_query(NoTls).await.unwrap();
    let (b, r) = waiter.await.unwrap();
    assert_eq!(r, "57014");
    // Nothing stray: once a lets go, b takes the lock at once.
    assert!(try_lock(&a, "SELECT pg_advisory_unlock(1)").await);
    assert!(try_lock(&b, "SELECT pg_try_advisory_lock(1)").await);
    server.shutdown().await;
}

/// Two sessions each wait for the lock the other holds: the younger gives
/// way with 40P01 after deadlock_timeout, the older then gets its lock
/// once the younger lets go.
#[tokio::test]
async fn a_cycle_of_waits_ends_in_a_deadlock_error() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(1)").await.unwrap();
    b.batch_execute("SELECT pg_advisory_lock(2)").await.unwrap();
    let older = spawned(a, "SELECT pg_advisory_lock(2)");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let e = b
        .batch_execute("SELECT pg_advisory_lock(1)")
        .await
        .unwrap_err();
    assert_eq!(e.as_db_error().unwrap().code().code(), "40P01");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!older.is_finished(), "b still holds 2 after its error");
    b.batch_execute("SELECT pg_advisory_unlock_all()")
        .await
        .unwrap();
    let (_a, r) = older.await.unwrap();
    assert_eq!(r, "ok");
    server.shutdown().await;
}

/// Proxies sharing a store share the locks.
#[tokio::test]
async fn two_proxies_on_one_store_share_the_locks() {
    common::init_logging();
    let test = common::TestStore::fresh().await;
    let config = EngineConfig::default();
    let p1 = common::proxy(test.store.clone(), config.clone()).await;
    let p2 = common::proxy(test.store.clone(), config).await;
    let a = common::connect_to(p1.addr()).await;
    let b = common::connect_to(p2.addr()).await;
    a.batch_execute("SELECT pg_advisory_lock(1)").await.unwrap();
    assert!(!try_lock(&b, "SELECT pg_try_advisory_lock(1)").await);
    let waiter = spawned(b, "SELECT pg_advisory_lock(1)");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    assert!(try_lock(&a, "SELECT pg_advisory_unlock(1)").await);
    let (b, r) = waiter.await.unwrap();
    assert_eq!(r, "ok");
    assert!(!try_lock(&a, "SELECT pg_try_advisory_lock(1)").await);
    drop(b);
    p1.shutdown().await;
    p2.shutdown().await;
    test.cleanup().await;
}

// ---------------------------------------------------------------------------
// Proxies as engines (`common::proxies`): one can die or stall.

const LEASE: Duration = Duration::from_millis(500);

fn engine(store: Arc<dyn Store>) -> Engine {
    proxies::engine(store, LEASE)
}

#[tokio::test]
async fn a_dead_proxys_locks_are_free_within_a_lease() {
    common::init_logging();
    let test = common::TestStore::fresh().await;
    let (e1, e2) = (engine(test.store.clone()), engine(test.store.clone()));
    let mut a = Conn::new(&e1);
    let mut b = Conn::new(&e2);
    a.ok("SELECT pg_advisory_lock(1); SELECT pg_advisory_lock_shared(2)")
        .await;
    assert_eq!(
        b.ok("SELECT pg_try_advisory_lock(1)").await,
        Some(Value::Bool(false))
    );
    // While its proxy lives, a's lock holds however long b waits.
    assert_eq!(
        b.code("SET lock_timeout = '900ms'; SELECT pg_advisory_lock(1)")
            .await,
        "55P03"
    );
    a.die();
    drop(e1);
    let started = Instant::now();
    b.ok("SET lock_timeout = '10s'; SELECT pg_advisory_lock(1); SELECT pg_advisory_lock(2)")
        .await;
    let took = started.elapsed();
    assert!(took < LEASE * 4, "took {took:?}");
    test.cleanup().await;
}

/// A holder whose proxy stalls past the lease loses the lock to another
/// session, and from then on none of its writes commits: it hears that
/// the lock was lost, and the other session's critical section is intact.
#[tokio::test]
async fn a_stalled_holders_later_writes_are_refused() {
    common::init_logging();
    let test = common::TestStore::fresh().await;
    let freeze = Freeze::default();
    let frozen: Arc<dyn Store> = Arc::new(Layered::wrap(test.store.clone(), freeze.clone()));
    let (e1, e2) = (engine(frozen), engine(test.store.clone()));
    let mut a = Conn::new(&e1);
    let mut b = Conn::new(&e2);
    a.ok("CREATE TABLE c (id int PRIMARY KEY, n int); INSERT INTO c VALUES (1, 0), (2, 0)")
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.ok("SELECT pg_advisory_lock(1)").await;
    // A block under a transaction-level lock, with a write, then a stall.
    a.ok("SELECT pg_advisory_lock(2); BEGIN; SELECT pg_advisory_xact_lock(3); UPDATE c SET n = 100 WHERE id = 2")
        .await;
    freeze.set(true);
    tokio::time::sleep(LEASE * 3).await;
    b.ok("SET lock_timeout = '5s'; SELECT pg_advisory_lock(1); UPDATE c SET n = 1 WHERE id = 1")
        .await;
    b.ok("SELECT pg_advisory_lock(3); UPDATE c SET n = 3 WHERE id = 2")
        .await;
    freeze.set(false);
    // a wakes up believing it holds its locks: its COMMIT and its writes
    // are refused, saying why.
    let commit = a.run("COMMIT").await.unwrap_err();
    assert_eq!(commit.code, "40001", "{commit:?}");
    let e = a.run("UPDATE c SET n = 99 WHERE id = 1").await.unwrap_err();
    assert_eq!(e.code, "40001");
    assert!(e.message.contains("was lost"), "{}", e.message);
    assert_eq!(a.code("INSERT INTO c VALUES (3, 0)").await, "40001");
    assert_eq!(
        b.ok("SELECT n FROM c WHERE id = 1").await,
        Some(Value::Int4(1))
    );
    assert_eq!(
        b.ok("SELECT n FROM c WHERE id = 2").await,
        Some(Value::Int4(3))
    );
    // Letting go of the lost locks (false: they were not held) ends it.
    assert_eq!(
        a.ok("SELECT pg_advisory_unlock(1)").await,
        Some(Value::Bool(false))
    );
    a.ok("SELECT pg_advisory_unlock_all()").await;
    assert_eq!(a.code("UPDATE c SET n = 5 WHERE id = 1").await, "ok");
    // A session that never held an advisory lock was never affected.
    let mut other = Conn::new(&e1);
    assert_eq!(other.code("INSERT INTO c VALUES (4, 0)").await, "ok");
    test.cleanup().await;
}

/// The mutual exclusion test, at small scale: sessions on three
/// proxies add to one counter with a read-then-write that loses updates
/// without the lock; one proxy dies holding the lock and one stalls past
/// its lease inside its critical section. Every increment a session was
/// told committed is in the final count, and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_on_three_proxies_never_lose_an_increment() {
    common::init_logging();
    let test = common::TestStore::fresh().await;
    let freeze = Freeze::default();
    let frozen: Arc<dyn Store> = Arc::new(Layered::wrap(test.store.clone(), freeze.clone()));
    let engines = [
        engine(test.store.clone()),
        engine(test.store.clone()),
        engine(frozen),
    ];
    let dying = engine(test.store.clone());
    let mut setup = Conn::new(&engines[0]);
    setup
        .ok("CREATE TABLE counter (id int PRIMARY KEY, n int); INSERT INTO counter VALUES (1, 0)")
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    // One proxy dies inside its critical section.
    let mut doomed = Conn::new(&dying);
    doomed.ok("SELECT pg_advisory_lock(77)").await;
    doomed.die();
    drop(dying);

    let rounds = 6;
    let breaker_engine = engines[0].clone();
    let mut tasks = Vec::new();
    for (i, e) in engines.iter().enumerate() {
        for s in 0..2 {
            let mut c = Conn::new(e);
            let freeze = freeze.clone();
            let breaker_engine = breaker_engine.clone();
            let stall = i == 2 && s == 0;
            tasks.push(tokio::spawn(async move {
                let (mut acked, mut refused) = (0, 0);
                let mut breaker = None;
                for round in 0..rounds {
                    c.ok("SELECT pg_advisory_lock(77)").await;
                    let n = match c.ok("SELECT n FROM counter WHERE id = 1").await {
                        Some(Value::Int4(n)) => n,
                        other => panic!("{other:?}"),
                    };
                    if stall && round == 1 {
                        // The proxy freezes inside the critical section;
                        // another session takes the lock once the lease
                        // has passed, adds its increment, and only then
                        // does the proxy wake up.
                        freeze.set(true);
                        let f = freeze.clone();
                        let mut b = Conn::new(&breaker_engine);
                        breaker = Some(tokio::spawn(async move {
                            b.ok("SELECT pg_advisory_lock(77)").await;
                            let Some(Value::Int4(n)) =
                                b.ok("SELECT n FROM counter WHERE id = 1").await
                            else {
                                panic!("no counter")
                            };
                            b.ok(&format!("UPDATE counter SET n = {} WHERE id = 1", n + 1))
                                .await;
                            b.ok("SELECT pg_advisory_unlock(77)").await;
                            f.set(false);
                        }));
                    }
                    let write = format!("UPDATE counter SET n = {} WHERE id = 1", n + 1);
                    match c.run(&write).await {
                        Ok(_) => acked += 1,
                        Err(e) => {
                            assert_eq!(e.code, "40001", "{e:?}");
                            refused += 1;
                        }
                    }
                    c.ok("SELECT pg_advisory_unlock(77)").await;
                    c.ok("SELECT pg_advisory_unlock_all()").await;
                }
                if let Some(b) = breaker {
                    b.await.unwrap();
                    acked += 1;
                    // Its write after the stall was refused, deterministically.
                    assert!(refused >= 1, "the stalled session's write is refused");
                }
                (acked, refused)
            }));
        }
    }
    let (mut acked, mut refused) = (0, 0);
    for t in tasks {
        let (a, r) = t.await.unwrap();
        acked += a;
        refused += r;
    }
    let n = setup.ok("SELECT n FROM counter WHERE id = 1").await;
    assert_eq!(n, Some(Value::Int4(acked)));
    // Every write was answered, and the breaker's is counted. (Another
    // session may be refused too if its proxy's heartbeat came late on a
    // loaded machine: that costs it its lock, never an increment.)
    assert_eq!(acked + refused, rounds * 6 + 1);
    assert!(refused >= 1);
    test.cleanup().await;
}

/// Over a store that answers "unknown" or "unavailable" now and then, on
/// every lock LWT and read: the counter loses no increment a session was
/// told committed, counts none it was told failed (40003 may be either),
/// no two sessions are ever inside at once, and once every session has
/// ended no stray entry is left: a fresh session takes the lock at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_faults_leave_no_stray_lock_and_lose_no_increment() {
    use keyclaim::store::faults::{FaultConfig, FaultyStore};
    use std::sync::atomic::AtomicI32;
    common::init_logging();
    let test = common::TestStore::fresh().await;
    let faulty: Arc<FaultyStore> = Arc::new(FaultyStore::new(
        test.store.clone(),
        FaultConfig {
            applied_then_unknown: 30,
            lost_then_unknown: 30,
            unavailable: 20,
            read_unknown: 20,
            max_latency: Duration::from_millis(2),
            ..FaultConfig::none(7)
        },
    ));
    let mut setup = Conn::new(&engine(test.store.clone()));
    setup
        .ok("CREATE TABLE counter (id int PRIMARY KEY, n int); INSERT INTO counter VALUES (1, 0)")
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let inside = Arc::new(AtomicI32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let e = engine(faulty.clone());
        for _ in 0..2 {
            let mut c = Conn::new(&e);
            let inside = inside.clone();
            tasks.push(tokio::spawn(async move {
                let (mut acked, mut unknown) = (0, 0);
                for _ in 0..8 {
                    if c.run("SELECT pg_advisory_lock(77)").await.is_err() {
                        continue;
                    }
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                    if let Ok(Some(Value::Int4(n))) =
                        c.run("SELECT n FROM counter WHERE id = 1").await
                    {
                        let write = format!("UPDATE counter SET n = {} WHERE id = 1", n + 1);
                        match c.run(&write).await {
                            Ok(_) => acked += 1,
                            Err(e) if e.code == "40003" => unknown += 1,
                            Err(e) => assert_ne!(e.code, "40001", "{e:?}"),
                        }
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                    // Let go, however long the store takes to confirm it.
                    while c.run("SELECT pg_advisory_unlock_all()").await.is_err() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                c.engine
                    .end_session(std::mem::take(&mut c.session.advisory))
                    .await;
                (acked, unknown)
            }));
        }
    }
    let (mut acked, mut unknown) = (0, 0);
    for t in tasks {
        let (a, u) = t.await.unwrap();
        acked += a;
        unknown += u;
    }
    let Some(Value::Int4(n)) = setup.ok("SELECT n FROM counter WHERE id = 1").await else {
        panic!("no counter");
    };
    eprintln!(
        "counter {n}, acked {acked}, unknown {unknown}, faults injected {}",
        faulty.counts.total()
    );
    assert!(
        acked <= n && n <= acked + unknown,
        "counter {n}, acked {acked}, unknown {unknown}"
    );
    assert!(acked > 10, "acked {acked}");
    assert!(faulty.counts.total() > 0, "faults were injected");
    assert_eq!(
        setup.ok("SELECT pg_try_advisory_lock(77)").await,
        Some(Value::Bool(true))
    );
    test.cleanup().await;
}

/// pg_locks lists the locks of every session of the proxy, and a closed
/// session's no more.
#[tokio::test]
async fn pg_locks_lists_other_sessions_locks() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute("SELECT pg_advisory_lock(5); SELECT pg_advisory_lock_shared(6)")
        .await
        .unwrap();
    async fn shown(client: &Client) -> Vec<(i64, String)> {
        client
            .query(
                "SELECT objid::int8, mode FROM pg_locks WHERE locktype = 'advisory' ORDER BY objid",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, i64>(0), r.get::<_, String>(1)))
            .collect()
    }
    assert_eq!(
        shown(&b).await,
        vec![(5, "ExclusiveLock".to_owned()), (6, "ShareLock".to_owned())]
    );
    drop(a);
    // The session ends once the server sees the connection close.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !shown(&b).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "a closed session's locks stay listed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
}
