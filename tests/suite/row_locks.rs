//! Row locks over the wire (SELECT ... FOR UPDATE and its kin), as
//! PostgreSQL has them: a locked row makes other writers wait until the
//! locker's block ends, NOWAIT fails at once, SKIP LOCKED hands concurrent
//! workers different rows of a queue, ROLLBACK (and ROLLBACK TO) frees the
//! rows, a lock waits for an open writer and re-checks its WHERE on the row
//! it then finds, and readers are never blocked.

use crate::common;

use std::time::Duration;

use tokio_postgres::Client;

async fn ints(client: &Client, sql: &str) -> Vec<i32> {
    common::column(client, sql).await
}

async fn error(client: &Client, sql: &str) -> (String, String) {
    let e = client.batch_execute(sql).await.unwrap_err();
    let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
    (db.code().code().to_owned(), db.message().to_owned())
}

/// Runs `sql` on a task of its own, to wait for a holder; the first
/// column of what it returned (as integers), or its SQLSTATE.
fn spawned(
    client: Client,
    sql: &'static str,
) -> tokio::task::JoinHandle<(Client, Result<Vec<i32>, String>)> {
    tokio::spawn(async move {
        let r = client.simple_query(sql).await;
        let r = r
            .map(|messages| {
                messages
                    .iter()
                    .filter_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(row) => {
                            row.get(0).map(|v| v.parse().unwrap())
                        }
                        _ => None,
                    })
                    .collect()
            })
            .map_err(|e| {
                e.as_db_error()
                    .map(|d| d.code().code().to_owned())
                    .unwrap_or_else(|| e.to_string())
            });
        (client, r)
    })
}

/// Long enough for a statement that would not wait to have finished.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
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

async fn jobs(client: &Client, n: i32) {
    client
        .batch_execute(
            "CREATE TABLE jobs (id integer PRIMARY KEY, state text NOT NULL, worker integer)",
        )
        .await
        .unwrap();
    let values: Vec<String> = (1..=n).map(|i| format!("({i}, 'ready', NULL)")).collect();
    client
        .batch_execute(&format!("INSERT INTO jobs VALUES {}", values.join(", ")))
        .await
        .unwrap();
}

#[tokio::test]
async fn for_update_makes_a_concurrent_update_wait_until_commit() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    let reader = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN").await.unwrap();
    // Extended protocol, with a parameter; the rows come back as selected.
    let rows = a
        .query(
            "SELECT id, bal FROM acct WHERE id = $1 FOR UPDATE",
            &[&1i32],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i32>(1), 100);
    let waiting = spawned(
        b,
        "UPDATE acct SET bal = bal - 5 WHERE id = 1 AND bal >= 90 RETURNING bal",
    );
    settle().await;
    assert!(!waiting.is_finished(), "the update waits for the locker");
    // Readers are not blocked, and see the committed row.
    assert_eq!(
        ints(&reader, "SELECT bal FROM acct WHERE id = 1").await,
        vec![100]
    );
    // Another row is free.
    reader
        .batch_execute("UPDATE acct SET bal = 101 WHERE id = 2")
        .await
        .unwrap();
    a.batch_execute("UPDATE acct SET bal = bal - 10 WHERE id = 1; COMMIT")
        .await
        .unwrap();
    let (_, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(vec![85]), "applied to the committed row");
    assert_eq!(
        ints(&reader, "SELECT bal FROM acct ORDER BY id").await,
        vec![85, 101]
    );
}

#[tokio::test]
async fn every_strength_takes_the_lock_and_delete_waits_too() {
    let server = common::start().await;
    let a = server.connect().await;
    setup(&a).await;
    for strength in ["FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"] {
        a.batch_execute(&format!(
            "BEGIN; SELECT * FROM acct WHERE email = 'a@x' {strength}"
        ))
        .await
        .unwrap();
        let b = server.connect().await;
        let waiting = spawned(b, "DELETE FROM acct WHERE id = 1 RETURNING id");
        settle().await;
        assert!(!waiting.is_finished(), "{strength}: the delete waits");
        a.batch_execute("ROLLBACK").await.unwrap();
        let (b, result) = waiting.await.unwrap();
        assert_eq!(result, Ok(vec![1]), "{strength}");
        b.batch_execute("INSERT INTO acct VALUES (1, 'a@x', 100)")
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn nowait_fails_at_once_with_55p03() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; SELECT 1 FROM acct WHERE id = 1 FOR UPDATE")
        .await
        .unwrap();
    let locked = (
        "55P03".to_owned(),
        "could not obtain lock on row in relation \"acct\"".to_owned(),
    );
    let started = std::time::Instant::now();
    assert_eq!(
        error(&b, "SELECT * FROM acct FOR UPDATE NOWAIT").await,
        locked
    );
    assert_eq!(
        error(
            &b,
            "SELECT * FROM acct a WHERE id = 1 FOR SHARE OF a NOWAIT"
        )
        .await,
        locked
    );
    assert!(started.elapsed() < Duration::from_secs(1), "no waiting");
    // In a block the error fails the block, as any error does.
    b.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        ints(&b, "SELECT id FROM acct WHERE id = 2 FOR UPDATE NOWAIT").await,
        vec![2]
    );
    assert_eq!(
        error(&b, "SELECT id FROM acct WHERE bal > 0 FOR UPDATE NOWAIT").await,
        locked
    );
    assert_eq!(error(&b, "SELECT 1").await.0, "25P02");
    b.batch_execute("ROLLBACK").await.unwrap();
    // The failed block's lock on row 2 went with it.
    b.batch_execute("UPDATE acct SET bal = 7 WHERE id = 2")
        .await
        .unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        ints(&b, "SELECT id FROM acct ORDER BY id FOR UPDATE NOWAIT").await,
        vec![1, 2]
    );
}

#[tokio::test]
async fn skip_locked_hands_two_workers_two_different_jobs() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    let c = server.connect().await;
    jobs(&a, 5).await;
    const NEXT: &str =
        "SELECT id FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
    a.batch_execute("BEGIN").await.unwrap();
    b.batch_execute("BEGIN").await.unwrap();
    assert_eq!(ints(&a, NEXT).await, vec![1]);
    assert_eq!(ints(&b, NEXT).await, vec![2]);
    // Outside a block too, locked rows are skipped, not waited for.
    assert_eq!(ints(&c, NEXT).await, vec![3]);
    assert_eq!(
        ints(
            &c,
            "SELECT id FROM jobs ORDER BY id DESC LIMIT 2 OFFSET 1 FOR UPDATE SKIP LOCKED"
        )
        .await,
        vec![4, 3]
    );
    a.batch_execute("UPDATE jobs SET state = 'done', worker = 1 WHERE id = 1; COMMIT")
        .await
        .unwrap();
    // Job 1 is done, job 2 still held: the next worker gets job 3.
    c.batch_execute("BEGIN").await.unwrap();
    assert_eq!(ints(&c, NEXT).await, vec![3]);
    b.batch_execute("ROLLBACK").await.unwrap();
    a.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        ints(&a, NEXT).await,
        vec![2],
        "a rolled-back job is free again"
    );
    assert_eq!(
        ints(&a, "SELECT id FROM jobs ORDER BY id FOR UPDATE SKIP LOCKED").await,
        vec![1, 2, 4, 5]
    );
    a.batch_execute("COMMIT").await.unwrap();
    c.batch_execute("COMMIT").await.unwrap();
}

/// Workers taking jobs the way job queues do (graphile-worker, Oban,
/// Solid Queue): each job is done exactly once, by one worker.
#[tokio::test]
async fn a_job_queue_hands_out_each_job_once() {
    let server = common::start().await;
    let setup = server.connect().await;
    const JOBS: i32 = 40;
    jobs(&setup, JOBS).await;
    setup
        .batch_execute("CREATE TABLE done (id integer PRIMARY KEY, worker integer NOT NULL)")
        .await
        .unwrap();
    let mut workers = Vec::new();
    for worker in 0..4i32 {
        let mut c = server.connect().await;
        workers.push(tokio::spawn(async move {
            let mut taken = 0;
            loop {
                let tx = c.build_transaction().start().await;
                let tx = tx.unwrap();
                let rows = tx
                    .query(
                        "SELECT id FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                        &[],
                    )
                    .await
                    .unwrap();
                let Some(row) = rows.first() else {
                    tx.commit().await.unwrap();
                    return taken;
                };
                let id: i32 = row.get(0);
                tx.execute(
                    "UPDATE jobs SET state = 'done', worker = $2 WHERE id = $1",
                    &[&id, &worker],
                )
                .await
                .unwrap();
                // A job handed out twice would collide here.
                tx.execute("INSERT INTO done VALUES ($1, $2)", &[&id, &worker])
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
                taken += 1;
            }
        }));
    }
    let mut total = 0;
    for w in workers {
        total += tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("workers finish")
            .unwrap();
    }
    assert_eq!(total, JOBS);
    let done: Vec<i64> = common::column(&setup, "SELECT count(*) FROM done").await;
    assert_eq!(done, vec![JOBS as i64]);
    let ready: Vec<i64> =
        common::column(&setup, "SELECT count(*) FROM jobs WHERE state = 'ready'").await;
    assert_eq!(ready, vec![0]);
}

#[tokio::test]
async fn rollback_and_rollback_to_free_the_rows() {
    let server = common::start().await;
    let a = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; SELECT * FROM acct WHERE id = 1 FOR UPDATE")
        .await
        .unwrap();
    let b = server.connect().await;
    let waiting = spawned(b, "UPDATE acct SET bal = 1 WHERE id = 1 RETURNING bal");
    settle().await;
    assert!(!waiting.is_finished());
    a.batch_execute("ROLLBACK").await.unwrap();
    let (b, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(vec![1]));
    // A lock taken after a savepoint goes with ROLLBACK TO; one taken
    // before it stays, also when the row was written after the savepoint.
    a.batch_execute(
        "BEGIN; SELECT * FROM acct WHERE id = 1 FOR UPDATE;
         SAVEPOINT s; SELECT * FROM acct WHERE id = 2 FOR UPDATE;
         UPDATE acct SET bal = 99 WHERE id = 1; ROLLBACK TO s",
    )
    .await
    .unwrap();
    b.batch_execute("UPDATE acct SET bal = 2 WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(
        error(&b, "SELECT * FROM acct WHERE id = 1 FOR UPDATE NOWAIT")
            .await
            .0,
        "55P03"
    );
    let waiting = spawned(
        b,
        "UPDATE acct SET bal = bal + 1 WHERE id = 1 RETURNING bal",
    );
    settle().await;
    assert!(
        !waiting.is_finished(),
        "the lock before the savepoint stays"
    );
    a.batch_execute("COMMIT").await.unwrap();
    let (b, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(vec![2]), "the update taken back left 1");
    assert_eq!(
        ints(&b, "SELECT bal FROM acct ORDER BY id").await,
        vec![2, 2]
    );
}

#[tokio::test]
async fn a_lock_waits_for_a_writer_and_rechecks_its_where() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    // Inside a block: the writer commits a change that takes row 1 out of
    // the WHERE; the lock then leaves it out.
    a.batch_execute("BEGIN; UPDATE acct SET bal = 0 WHERE id = 1")
        .await
        .unwrap();
    let waiting = spawned(
        b,
        "BEGIN; SELECT id FROM acct WHERE bal = 100 ORDER BY id FOR UPDATE",
    );
    settle().await;
    assert!(!waiting.is_finished(), "the lock waits for the writer");
    a.batch_execute("COMMIT").await.unwrap();
    let (b, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(vec![2]));
    // ... and it holds row 2, not row 1.
    a.batch_execute("UPDATE acct SET bal = 1 WHERE id = 1")
        .await
        .unwrap();
    b.batch_execute("COMMIT").await.unwrap();
    // Outside a block: a FOR UPDATE waits the same way, returns the row as
    // committed, and holds nothing afterwards.
    a.batch_execute("BEGIN; UPDATE acct SET bal = 50 WHERE id = 2")
        .await
        .unwrap();
    let waiting = spawned(b, "SELECT bal FROM acct WHERE id = 2 FOR UPDATE");
    settle().await;
    assert!(!waiting.is_finished(), "an autocommit lock waits too");
    a.batch_execute("COMMIT").await.unwrap();
    let (b, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(vec![50]));
    a.batch_execute("UPDATE acct SET bal = 51 WHERE id = 2")
        .await
        .unwrap();
    // A row a transaction is writing: NOWAIT and SKIP LOCKED outside a block.
    a.batch_execute("BEGIN; DELETE FROM acct WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(
        error(&b, "SELECT * FROM acct WHERE id = 2 FOR UPDATE NOWAIT")
            .await
            .0,
        "55P03"
    );
    assert_eq!(
        ints(&b, "SELECT id FROM acct FOR UPDATE SKIP LOCKED").await,
        vec![1]
    );
    a.batch_execute("ROLLBACK").await.unwrap();
}

#[tokio::test]
async fn a_block_locks_then_writes_its_rows() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        ints(&a, "SELECT bal FROM acct ORDER BY id FOR UPDATE").await,
        vec![100, 100]
    );
    a.batch_execute(
        "UPDATE acct SET bal = bal - 30 WHERE id = 1;
         UPDATE acct SET bal = bal + 30 WHERE id = 2",
    )
    .await
    .unwrap();
    // Locking rows it wrote holds them as they are in the block.
    assert_eq!(
        ints(&a, "SELECT bal FROM acct ORDER BY id FOR UPDATE").await,
        vec![70, 130]
    );
    assert_eq!(
        ints(&b, "SELECT bal FROM acct ORDER BY id").await,
        vec![100, 100]
    );
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        ints(&b, "SELECT bal FROM acct ORDER BY id").await,
        vec![70, 130]
    );
    // A block that only locked commits with nothing changed.
    a.batch_execute("BEGIN; SELECT * FROM acct FOR UPDATE; COMMIT")
        .await
        .unwrap();
    assert_eq!(
        ints(&b, "SELECT bal FROM acct ORDER BY id").await,
        vec![70, 130]
    );
    b.batch_execute("UPDATE acct SET bal = 0 WHERE id = 1")
        .await
        .unwrap();
}

#[tokio::test]
async fn crossed_locks_end_in_a_deadlock_error_and_lock_timeout_bounds_a_wait() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; SELECT * FROM acct WHERE id = 1 FOR UPDATE")
        .await
        .unwrap();
    b.batch_execute("BEGIN; SELECT * FROM acct WHERE id = 2 FOR UPDATE")
        .await
        .unwrap();
    let a_waits = spawned(a, "SELECT id FROM acct WHERE id = 2 FOR UPDATE");
    let b_waits = spawned(b, "SELECT id FROM acct WHERE id = 1 FOR UPDATE");
    let ((a, ra), (b, rb)) = tokio::time::timeout(Duration::from_secs(20), async {
        let (x, y) = tokio::join!(a_waits, b_waits);
        (x.unwrap(), y.unwrap())
    })
    .await
    .expect("a deadlock never hangs");
    // The younger transaction gives way; the older one goes on.
    assert_eq!(rb, Err("40P01".to_owned()));
    b.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(ra, Ok(vec![2]));
    // A wait is bounded by lock_timeout.
    b.batch_execute("SET lock_timeout = '200ms'").await.unwrap();
    assert_eq!(
        error(&b, "SELECT * FROM acct WHERE id = 1 FOR UPDATE").await,
        (
            "55P03".to_owned(),
            "canceling statement due to lock timeout".to_owned()
        )
    );
    a.batch_execute("COMMIT").await.unwrap();
}

#[tokio::test]
async fn a_read_only_block_refuses_row_locks() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c).await;
    for (clause, word) in [
        ("FOR UPDATE", "SELECT FOR UPDATE"),
        ("FOR NO KEY UPDATE NOWAIT", "SELECT FOR NO KEY UPDATE"),
        ("FOR SHARE SKIP LOCKED", "SELECT FOR SHARE"),
        ("FOR KEY SHARE", "SELECT FOR KEY SHARE"),
    ] {
        c.batch_execute("BEGIN READ ONLY").await.unwrap();
        assert_eq!(
            error(&c, &format!("SELECT * FROM acct WHERE id = 3 {clause}")).await,
            (
                "25006".to_owned(),
                format!("cannot execute {word} in a read-only transaction")
            )
        );
        c.batch_execute("ROLLBACK").await.unwrap();
    }
}

#[tokio::test]
async fn a_waiting_lock_ends_at_statement_timeout_or_cancel() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; UPDATE acct SET bal = 0 WHERE id = 1")
        .await
        .unwrap();
    // Outside a block.
    b.batch_execute("SET statement_timeout = '200ms'")
        .await
        .unwrap();
    assert_eq!(
        error(&b, "SELECT * FROM acct WHERE id = 1 FOR UPDATE")
            .await
            .0,
        "57014"
    );
    // Inside a block, having locked row 2 first: the block fails, and the
    // lock on row 2 goes with it.
    b.batch_execute("SET statement_timeout = 0; BEGIN; SELECT * FROM acct WHERE id = 2 FOR UPDATE")
        .await
        .unwrap();
    let cancel = b.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    assert_eq!(
        error(&b, "SELECT * FROM acct ORDER BY id FOR UPDATE").await,
        (
            "57014".to_owned(),
            "canceling statement due to user request".to_owned()
        )
    );
    canceller.await.unwrap();
    assert_eq!(error(&b, "SELECT 1").await.0, "25P02");
    a.batch_execute("UPDATE acct SET bal = 2 WHERE id = 2")
        .await
        .unwrap();
    b.batch_execute("ROLLBACK").await.unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        ints(&b, "SELECT bal FROM acct ORDER BY id FOR UPDATE").await,
        vec![0, 2]
    );
}

#[tokio::test]
async fn locking_what_keyclaim_cannot_lock_is_refused_with_a_hint() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c).await;
    for sql in [
        "SELECT a.id FROM acct a JOIN acct b ON a.id = b.id FOR UPDATE",
        "SELECT id FROM acct, acct b FOR UPDATE OF acct",
        "SELECT id FROM (SELECT id FROM acct) s FOR NO KEY UPDATE",
    ] {
        let e = c.batch_execute(sql).await.unwrap_err();
        let db = e.as_db_error().unwrap();
        assert_eq!(db.code().code(), "0A000", "{sql}");
        assert!(
            db.message()
                .ends_with("with joins or subqueries is not supported"),
            "{sql}: {}",
            db.message()
        );
        assert!(db.hint().unwrap().contains("single-table SELECT"), "{sql}");
    }
}

#[tokio::test]
async fn a_lock_outside_a_block_holds_nothing_so_it_waits_past_deadlock_timeout() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    setup(&a).await;
    a.batch_execute("BEGIN; UPDATE acct SET bal = 5 WHERE id = 1")
        .await
        .unwrap();
    // The older block holds row 1 for longer than deadlock_timeout (1 s):
    // a waiter that holds nothing cannot be in a cycle, and waits on.
    let waiting = spawned(b, "SELECT bal FROM acct WHERE id = 1 FOR UPDATE");
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(!waiting.is_finished(), "still waiting, no 40P01");
    a.batch_execute("COMMIT").await.unwrap();
    let (_, result) = waiting.await.unwrap();
    assert_eq!(result, Ok(vec![5]));
}
