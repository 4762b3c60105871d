//! Transaction blocks over the wire, as PostgreSQL answers them: ROLLBACK
//! undoes, an error inside a block leaves nothing, savepoints undo exactly
//! what came after them, other sessions see nothing until COMMIT and then
//! all of it, conflicting writers wait for the holder, deadlocks end in
//! 40P01, and a connection that drops mid-block leaves nothing behind.

use crate::common;

use std::time::Duration;

use common::{spawned, sqlstate_of};
use tokio_postgres::Client;

async fn ids(client: &Client, table: &str) -> Vec<i32> {
    common::column(client, &format!("SELECT id FROM {table} ORDER BY id")).await
}

async fn balances(client: &Client) -> Vec<i32> {
    common::column(client, "SELECT bal FROM acct ORDER BY id").await
}

async fn setup(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE acct (id integer PRIMARY KEY, email text UNIQUE, bal integer NOT NULL);
             INSERT INTO acct VALUES (1, 'a@x', 100), (2, 'b@x', 100)",
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn rollback_undoes_every_write_of_the_block() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c).await;
    c.batch_execute(
        "BEGIN;
         INSERT INTO acct VALUES (3, 'c@x', 1), (4, 'd@x', 1);
         UPDATE acct SET bal = 0, email = 'moved@x' WHERE id = 1;
         DELETE FROM acct WHERE id = 2;",
    )
    .await
    .unwrap();
    // The block sees its own writes, by key, by unique key and by scan.
    assert_eq!(ids(&c, "acct").await, vec![1, 3, 4]);
    let moved = c
        .query("SELECT bal FROM acct WHERE email = 'moved@x'", &[])
        .await
        .unwrap();
    assert_eq!(moved.len(), 1);
    assert!(c
        .query("SELECT 1 FROM acct WHERE email = 'a@x'", &[])
        .await
        .unwrap()
        .is_empty());
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(ids(&c, "acct").await, vec![1, 2]);
    let row = c
        .query_one("SELECT email, bal FROM acct WHERE id = 1", &[])
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, i32>(1)),
        ("a@x".into(), 100)
    );
    // Every key the block held is free again, and the old ones still held.
    c.batch_execute("INSERT INTO acct VALUES (3, 'moved@x', 1)")
        .await
        .unwrap();
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO acct VALUES (9, 'a@x', 1)").await,
        "23505"
    );
}

#[tokio::test]
async fn an_error_inside_a_block_leaves_nothing() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c).await;
    c.batch_execute("BEGIN; INSERT INTO acct VALUES (3, 'c@x', 1)")
        .await
        .unwrap();
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO acct VALUES (4, 'd@x', 1), (5, 'a@x', 1)").await,
        "23505"
    );
    assert_eq!(sqlstate_of(&c, "SELECT 1").await, "25P02");
    let tag = c.simple_query("COMMIT").await.unwrap();
    let tokio_postgres::SimpleQueryMessage::CommandComplete(_) = &tag[0] else {
        panic!("{tag:?}")
    };
    assert_eq!(ids(&c, "acct").await, vec![1, 2]);
    c.batch_execute("INSERT INTO acct VALUES (3, 'c@x', 1), (4, 'd@x', 1)")
        .await
        .unwrap();
}

#[tokio::test]
async fn savepoints_undo_exactly_what_came_after_them() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c).await;
    c.batch_execute(
        "BEGIN;
         INSERT INTO acct VALUES (3, 'c@x', 3);
         SAVEPOINT s;
         INSERT INTO acct VALUES (4, 'd@x', 4);
         UPDATE acct SET bal = 33, email = 'cc@x' WHERE id = 3;
         DELETE FROM acct WHERE id = 1;
         ROLLBACK TO SAVEPOINT s;
         INSERT INTO acct VALUES (5, 'd@x', 5);",
    )
    .await
    .unwrap();
    // A failed statement inside the block is undone by ROLLBACK TO too.
    c.batch_execute("SAVEPOINT t").await.unwrap();
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO acct VALUES (6, 'e@x', 6), (7, 'c@x', 7)").await,
        "23505"
    );
    c.batch_execute("ROLLBACK TO t; COMMIT").await.unwrap();
    assert_eq!(ids(&c, "acct").await, vec![1, 2, 3, 5]);
    let row = c
        .query_one("SELECT email, bal FROM acct WHERE id = 3", &[])
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, i32>(1)),
        ("c@x".into(), 3)
    );
    // What the savepoint undid holds no key.
    c.batch_execute("INSERT INTO acct VALUES (4, 'cc@x', 4), (6, 'e@x', 6)")
        .await
        .unwrap();
}

#[tokio::test]
async fn other_sessions_see_a_block_only_once_it_commits() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute(
        "BEGIN;
         UPDATE acct SET bal = bal - 30 WHERE id = 1;
         UPDATE acct SET bal = bal + 30 WHERE id = 2;
         INSERT INTO acct VALUES (3, 'c@x', 0);",
    )
    .await
    .unwrap();
    let total = b
        .query_one("SELECT count(*) FROM acct", &[])
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(total, 2, "an uncommitted insert is invisible");
    let bals = balances(&b).await;
    assert_eq!(bals, vec![100, 100]);
    assert!(b
        .query("SELECT 1 FROM acct WHERE email = 'c@x'", &[])
        .await
        .unwrap()
        .is_empty());
    a.batch_execute("COMMIT").await.unwrap();
    let bals = balances(&b).await;
    assert_eq!(bals, vec![70, 130, 0]);
}

#[tokio::test]
async fn an_insert_of_a_held_unique_value_waits_for_the_holder() {
    let server = common::start().await;
    let a = server.connect().await;
    setup(&a).await;
    for (end, expected) in [("COMMIT", Err("23505".to_owned())), ("ROLLBACK", Ok(()))] {
        a.batch_execute("DELETE FROM acct WHERE id >= 3")
            .await
            .unwrap();
        a.batch_execute("BEGIN; INSERT INTO acct VALUES (3, 'held@x', 0)")
            .await
            .unwrap();
        let b = server.connect().await;
        let waiting = spawned(b, "INSERT INTO acct VALUES (4, 'held@x', 0)");
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(!waiting.is_finished(), "the insert waits for the holder");
        a.batch_execute(end).await.unwrap();
        let (_, result) = waiting.await.unwrap();
        assert_eq!(result, expected, "after {end}");
    }
}

#[tokio::test]
async fn a_concurrent_update_waits_and_applies_to_the_committed_row() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; UPDATE acct SET bal = bal - 10 WHERE id = 1")
        .await
        .unwrap();
    let waiting = spawned(
        b,
        "UPDATE acct SET bal = bal - 5 WHERE id = 1 AND bal >= 90",
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!waiting.is_finished(), "the update waits for the holder");
    a.batch_execute("COMMIT").await.unwrap();
    let (b, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(()));
    let bal: i32 = b
        .query_one("SELECT bal FROM acct WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(bal, 85, "no update is lost");
}

#[tokio::test]
async fn crossed_waits_end_in_a_deadlock_error() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; UPDATE acct SET bal = 1 WHERE id = 1")
        .await
        .unwrap();
    b.batch_execute("BEGIN; UPDATE acct SET bal = 2 WHERE id = 2")
        .await
        .unwrap();
    let a_waits = spawned(a, "UPDATE acct SET bal = 1 WHERE id = 2");
    let b_waits = spawned(b, "UPDATE acct SET bal = 2 WHERE id = 1");
    let ((a, ra), (b, rb)) = tokio::time::timeout(Duration::from_secs(20), async {
        let (x, y) = tokio::join!(a_waits, b_waits);
        (x.unwrap(), y.unwrap())
    })
    .await
    .expect("a deadlock never hangs");
    // The younger transaction gives way; the older one goes on.
    assert_eq!(rb, Err("40P01".to_owned()));
    b.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(ra, Ok(()));
    a.batch_execute("COMMIT").await.unwrap();
    let bals = balances(&a).await;
    assert_eq!(bals, vec![1, 1]);
}

#[tokio::test]
async fn a_dropped_connection_rolls_its_block_back() {
    let server = common::start().await;
    let a = server.connect().await;
    setup(&a).await;
    {
        let gone = server.connect().await;
        gone.batch_execute(
            "BEGIN; INSERT INTO acct VALUES (3, 'gone@x', 0); UPDATE acct SET bal = 0 WHERE id = 1",
        )
        .await
        .unwrap();
    }
    // Its keys are free and its writes never visible; the insert below may
    // wait until the abort lands, never longer than the lock timeout.
    a.batch_execute("INSERT INTO acct VALUES (4, 'gone@x', 0)")
        .await
        .unwrap();
    assert_eq!(ids(&a, "acct").await, vec![1, 2, 4]);
    let bal: i32 = a
        .query_one("SELECT bal FROM acct WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(bal, 100);
}

#[tokio::test]
async fn a_driver_batch_in_a_transaction_keeps_nothing_after_an_error() {
    let server = common::start().await;
    let mut c = server.connect().await;
    setup(&c).await;
    let insert = c
        .prepare("INSERT INTO acct VALUES ($1, $2, 0)")
        .await
        .unwrap();
    let tx = c.transaction().await.unwrap();
    tx.execute(&insert, &[&3i32, &"c@x"]).await.unwrap();
    tx.execute(&insert, &[&4i32, &"d@x"]).await.unwrap();
    let e = tx.execute(&insert, &[&5i32, &"a@x"]).await.unwrap_err();
    assert_eq!(e.as_db_error().unwrap().code().code(), "23505");
    drop(tx); // tokio-postgres rolls back
    assert_eq!(ids(&c, "acct").await, vec![1, 2]);
}

#[tokio::test]
async fn a_read_only_block_refuses_writes() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c).await;
    c.batch_execute("BEGIN READ ONLY").await.unwrap();
    let e = c
        .batch_execute("UPDATE acct SET bal = 0 WHERE id = 1")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(
        (db.code().code(), db.message()),
        ("25006", "cannot execute UPDATE in a read-only transaction")
    );
    c.batch_execute("ROLLBACK").await.unwrap();
    for (sql, level) in [
        ("BEGIN ISOLATION LEVEL SERIALIZABLE", "SERIALIZABLE"),
        (
            "START TRANSACTION ISOLATION LEVEL REPEATABLE READ",
            "REPEATABLE READ",
        ),
    ] {
        let e = c.batch_execute(sql).await.unwrap_err();
        let db = e.as_db_error().unwrap();
        assert_eq!(
            (db.code().code(), db.message()),
            (
                "0A000",
                format!("keyclaim does not support ISOLATION LEVEL {level}").as_str()
            ),
            "{sql}"
        );
    }
    // Nothing was begun: the session is not in a block.
    c.batch_execute("SELECT 1").await.unwrap();
}

#[tokio::test]
async fn an_idle_transaction_past_its_timeout_ends_the_connection() {
    let server = common::start().await;
    let a = server.connect().await;
    setup(&a).await;
    let idle = server.connect().await;
    idle.batch_execute(
        "SET idle_in_transaction_session_timeout = '200ms';
         BEGIN; INSERT INTO acct VALUES (3, 'held@x', 0)",
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    // PostgreSQL ends the session with FATAL 25P03; its block rolls back.
    let e = idle.batch_execute("SELECT 1").await.unwrap_err();
    if let Some(db) = e.as_db_error() {
        assert_eq!(db.code().code(), "25P03", "{db:?}");
    } else {
        assert!(idle.is_closed(), "{e}");
    }
    a.batch_execute("INSERT INTO acct VALUES (4, 'held@x', 0)")
        .await
        .unwrap();
    assert_eq!(ids(&a, "acct").await, vec![1, 2, 4]);
    // Outside a block the timeout does not apply.
    let calm = server.connect().await;
    calm.batch_execute("SET idle_in_transaction_session_timeout = '100ms'")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    calm.batch_execute("SELECT 1").await.unwrap();
}

#[tokio::test]
async fn a_unique_index_build_waits_for_open_transactions() {
    let server = common::start().await;
    let a = server.connect().await;
    a.batch_execute(
        "CREATE TABLE tags (id integer PRIMARY KEY, v text);
         INSERT INTO tags VALUES (1, 'same');",
    )
    .await
    .unwrap();
    for (end, expected) in [("COMMIT", Err("23505".to_owned())), ("ROLLBACK", Ok(()))] {
        a.batch_execute("BEGIN; INSERT INTO tags VALUES (2, 'same')")
            .await
            .unwrap();
        let b = server.connect().await;
        let build = spawned(b, "CREATE UNIQUE INDEX tags_v ON tags (v)");
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(
            !build.is_finished(),
            "the build waits for the open transaction"
        );
        a.batch_execute(end).await.unwrap();
        let (b, result) = build.await.unwrap();
        assert_eq!(result, expected, "after {end}");
        if result.is_err() {
            // The build left nothing behind: the duplicate stays possible
            // to remove, and the index can be built once it is.
            b.batch_execute("DELETE FROM tags WHERE id = 2")
                .await
                .unwrap();
        }
    }
    // With the index in place, the value is unique.
    assert_eq!(
        sqlstate_of(&a, "INSERT INTO tags VALUES (3, 'same')").await,
        "23505"
    );
}

/// Delays one kind of store read, as a slow replica would.
struct SlowRead {
    op: &'static str,
    delay: Duration,
}

impl keyclaim::store::layer::Layer for SlowRead {
    fn read<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        read: futures::future::BoxFuture<'a, keyclaim::store::StoreResult<T>>,
    ) -> futures::future::BoxFuture<'a, keyclaim::store::StoreResult<T>> {
        use futures::FutureExt;
        let delay = if op == self.op {
            self.delay
        } else {
            Duration::ZERO
        };
        async move {
            tokio::time::sleep(delay).await;
            read.await
        }
        .boxed()
    }
}

/// A reader reads a row carrying a transaction's intent, and only then its
/// record. Meanwhile the transaction took that write back (ROLLBACK TO),
/// wrote another, and committed. The reader must not show the write that
/// was taken back as committed: it reads the row again once it learns the
/// transaction committed. (Found by tests/suite/transfers.rs, seed 7, 60 s.)
#[tokio::test]
async fn a_reader_never_shows_an_intent_taken_back_before_commit() {
    use std::sync::Arc;
    let server = common::start().await;
    let a = server.connect().await;
    setup(&a).await;
    let slow: Arc<dyn keyclaim::store::Store> = Arc::new(keyclaim::store::layer::Layered::wrap(
        server.store.clone(),
        SlowRead {
            op: "read_txn_record",
            delay: Duration::from_millis(400),
        },
    ));
    let reader_proxy = common::proxy(slow, keyclaim::engine::EngineConfig::default()).await;
    let reader = common::connect_to(reader_proxy.addr()).await;
    a.batch_execute(
        "BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 2;
         SAVEPOINT s; UPDATE acct SET bal = 1000000 WHERE id = 1",
    )
    .await
    .unwrap();
    let read = tokio::spawn(async move {
        let row = reader
            .query_one("SELECT bal FROM acct WHERE id = 1", &[])
            .await
            .unwrap();
        row.get::<_, i32>(0)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.batch_execute("ROLLBACK TO s; UPDATE acct SET bal = 7 WHERE id = 1; COMMIT")
        .await
        .unwrap();
    let seen = read.await.unwrap();
    assert!(seen == 100 || seen == 7, "the reader saw {seen}");
}

/// How the store answers a transaction record's write (`insert_txn_record`);
/// every other operation passes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum RecordFault {
    #[default]
    None,
    Unavailable,
    LostThenUnknown,
    AppliedThenUnknown,
}

#[derive(Clone)]
struct RecordFaults(std::sync::Arc<std::sync::Mutex<RecordFault>>);

impl RecordFaults {
    fn set(&self, fault: RecordFault) {
        *self.0.lock().unwrap() = fault;
    }
}

impl keyclaim::store::layer::Layer for RecordFaults {
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: futures::future::BoxFuture<
            'a,
            keyclaim::store::StoreResult<keyclaim::store::Cas<T>>,
        >,
    ) -> futures::future::BoxFuture<'a, keyclaim::store::StoreResult<keyclaim::store::Cas<T>>> {
        use futures::FutureExt;
        use keyclaim::store::StoreError;
        let fault = match op {
            "insert_txn_record" => *self.0.lock().unwrap(),
            _ => RecordFault::None,
        };
        async move {
            match fault {
                RecordFault::None => write.await,
                RecordFault::Unavailable => Err(StoreError::Unavailable("injected".into())),
                RecordFault::LostThenUnknown => Err(StoreError::Unknown("injected: lost".into())),
                RecordFault::AppliedThenUnknown => {
                    write.await?;
                    Err(StoreError::Unknown("injected: applied".into()))
                }
            }
        }
        .boxed()
    }
}

/// A transaction whose decision the store did not record (its ROLLBACK's
/// record write refused, or its COMMIT's outcome unknown) is decided by
/// its own proxy in the background once the store answers again, and its
/// intents are cleaned up: no row keeps an undecided intent waiting for a
/// writer that may never come. A commit that landed after all stays
/// committed; one that was lost ends aborted.
#[tokio::test]
async fn a_decision_the_store_did_not_record_is_settled_in_the_background() {
    let faults = RecordFaults(Default::default());
    let layer = faults.clone();
    let server = common::start_layered(
        |_| {},
        move |store| std::sync::Arc::new(keyclaim::store::layer::Layered::wrap(store, layer)),
    )
    .await;
    let c = server.connect().await;
    setup(&c).await;
    let cases = [
        // (the fault, the block's end, what the client hears, whether the
        // record stands meanwhile, id 1's balance after)
        (RecordFault::Unavailable, "ROLLBACK", None, false, 100),
        (
            RecordFault::LostThenUnknown,
            "COMMIT",
            Some("40003"),
            false,
            100,
        ),
        (
            RecordFault::AppliedThenUnknown,
            "COMMIT",
            Some("40003"),
            true,
            101,
        ),
    ];
    for (fault, end, heard, recorded, balance) in cases {
        c.batch_execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1")
            .await
            .unwrap();
        faults.set(fault);
        let answer = c.batch_execute(end).await;
        assert_eq!(
            answer
                .as_ref()
                .err()
                .and_then(|e| e.as_db_error())
                .map(|d| d.code().code()),
            heard,
            "{fault:?} at {end}: {answer:?}"
        );
        let left = common::intents(&server.store, "acct").await;
        assert_eq!(left.len(), 1, "{fault:?}: the block's intent is in place");
        assert_eq!(left[0].1.is_some(), recorded, "{fault:?}: {left:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        faults.set(RecordFault::None);
        // Nothing writes row 1 meanwhile: only its own proxy can settle it
        // and clean its intent up.
        let what = format!("{fault:?}: intents");
        common::await_no_intents(&server.store, "acct", Duration::from_secs(5), &what, |_| {
            true
        })
        .await;
        assert_eq!(balances(&c).await, vec![balance, 100], "{fault:?}");
    }
}
