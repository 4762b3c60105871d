//! DDL inside a transaction block, as PostgreSQL has it: visible to the
//! block at once, to other sessions only at COMMIT, gone at ROLLBACK (and
//! after an error, or ROLLBACK TO a savepoint before it), together with the
//! block's rows. A migration that fails half way leaves no table behind
//! that would accept duplicates. (docs/transactions.md, section 10.)

use crate::common;

use std::time::Duration;

use common::{spawned, sqlstate_of};
use tokio_postgres::Client;

async fn ids(client: &Client, table: &str) -> Vec<i32> {
    common::column(client, &format!("SELECT id FROM {table} ORDER BY id")).await
}

#[tokio::test]
async fn a_migration_that_fails_half_way_leaves_no_table_behind() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "BEGIN;
         CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL);
         INSERT INTO users VALUES (1, 'ann@x');",
    )
    .await
    .unwrap();
    // The next migration step fails: the block fails, and nothing of it stays.
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO users VALUES (1, 'dup')").await,
        "23505"
    );
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(sqlstate_of(&c, "SELECT * FROM users").await, "42P01");
    // Run again, whole: the table comes with its index, which then holds.
    c.batch_execute(
        "BEGIN;
         CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL);
         INSERT INTO users VALUES (1, 'ann@x');
         CREATE UNIQUE INDEX users_email ON users (email);
         COMMIT;",
    )
    .await
    .unwrap();
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO users VALUES (2, 'ann@x')").await,
        "23505"
    );
    // An index build that meets a duplicate fails the block and undoes it.
    c.batch_execute(
        "BEGIN;
         CREATE TABLE pets (id integer PRIMARY KEY, tag text);
         INSERT INTO pets VALUES (1, 'x'), (2, 'x');",
    )
    .await
    .unwrap();
    assert_eq!(
        sqlstate_of(&c, "CREATE UNIQUE INDEX pets_tag ON pets (tag)").await,
        "23505"
    );
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(sqlstate_of(&c, "SELECT * FROM pets").await, "42P01");
}

#[tokio::test]
async fn other_sessions_see_ddl_only_once_the_block_commits() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute(
        "CREATE TABLE old (id integer PRIMARY KEY);
         INSERT INTO old VALUES (1);
         BEGIN;
         CREATE TABLE fresh (id integer PRIMARY KEY, v text UNIQUE);
         INSERT INTO fresh VALUES (1, 'a'), (2, 'b');
         DROP TABLE old;",
    )
    .await
    .unwrap();
    // The block sees its own DDL, through both protocols.
    assert_eq!(ids(&a, "fresh").await, vec![1, 2]);
    let n: i64 = a
        .query_one("SELECT count(*) FROM fresh WHERE id = $1", &[&1i32])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    a.execute("INSERT INTO fresh VALUES ($1, $2)", &[&3i32, &"c"])
        .await
        .unwrap();
    // (An error fails the block, as in PostgreSQL: look behind a savepoint.)
    a.batch_execute("SAVEPOINT s").await.unwrap();
    assert_eq!(sqlstate_of(&a, "SELECT * FROM old").await, "42P01");
    a.batch_execute("ROLLBACK TO SAVEPOINT s").await.unwrap();
    // Another session sees the catalog as it was.
    assert_eq!(sqlstate_of(&b, "SELECT * FROM fresh").await, "42P01");
    assert_eq!(ids(&b, "old").await, vec![1]);
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(ids(&b, "fresh").await, vec![1, 2, 3]);
    assert_eq!(sqlstate_of(&b, "SELECT * FROM old").await, "42P01");
    assert_eq!(
        sqlstate_of(&b, "INSERT INTO fresh VALUES (4, 'a')").await,
        "23505"
    );
}

#[tokio::test]
async fn rollback_undoes_drop_table_and_drop_index() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, v text);
         CREATE UNIQUE INDEX t_v ON t (v);
         INSERT INTO t VALUES (1, 'a');
         BEGIN;
         DROP INDEX t_v;
         INSERT INTO t VALUES (2, 'a');
         ROLLBACK;",
    )
    .await
    .unwrap();
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO t VALUES (2, 'a')").await,
        "23505"
    );
    c.batch_execute("BEGIN; DROP TABLE t; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(ids(&c, "t").await, vec![1]);
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO t VALUES (2, 'a')").await,
        "23505"
    );
    // Committed, the drop frees the name and the keys.
    c.batch_execute(
        "BEGIN;
         DROP TABLE t;
         CREATE TABLE t (id integer PRIMARY KEY, v text UNIQUE);
         INSERT INTO t VALUES (1, 'a');
         COMMIT;",
    )
    .await
    .unwrap();
    assert_eq!(ids(&c, "t").await, vec![1]);
    assert_eq!(
        sqlstate_of(&c, "INSERT INTO t VALUES (2, 'a')").await,
        "23505"
    );
}

#[tokio::test]
async fn rollback_to_a_savepoint_undoes_the_ddl_after_it() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "BEGIN;
         CREATE TABLE a (id integer PRIMARY KEY);
         INSERT INTO a VALUES (1);
         SAVEPOINT s;
         CREATE TABLE b (id integer PRIMARY KEY);
         DROP TABLE a;
         ROLLBACK TO SAVEPOINT s;",
    )
    .await
    .unwrap();
    assert_eq!(ids(&c, "a").await, vec![1]);
    assert_eq!(sqlstate_of(&c, "SELECT * FROM b").await, "42P01");
    c.batch_execute("ROLLBACK TO SAVEPOINT s; SAVEPOINT t")
        .await
        .unwrap();
    // A failed DDL statement after a savepoint takes back only what followed it.
    assert_eq!(
        sqlstate_of(&c, "CREATE TABLE a (id integer PRIMARY KEY)").await,
        "42P07"
    );
    c.batch_execute(
        "ROLLBACK TO SAVEPOINT t;
         CREATE TABLE b (id integer PRIMARY KEY, v text UNIQUE);
         COMMIT;",
    )
    .await
    .unwrap();
    assert_eq!(ids(&c, "a").await, vec![1]);
    assert_eq!(ids(&c, "b").await, Vec::<i32>::new());
}

/// A constraint checked against the rows of a table created before the
/// block holds the table until the block ends, as PostgreSQL's ALTER
/// TABLE holds its ACCESS EXCLUSIVE lock: other sessions' statements on
/// it wait, then see the outcome.
#[tokio::test]
async fn a_constraint_on_an_older_table_holds_it_until_the_block_ends() {
    let server = common::start().await;
    let a = server.connect().await;
    a.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, v text);
         INSERT INTO t VALUES (1, 'a'), (2, 'b');
         BEGIN;
         CREATE UNIQUE INDEX t_v ON t (v);",
    )
    .await
    .unwrap();
    // A write of a value the index will refuse waits for the block...
    let waiter = spawned(server.connect().await, "INSERT INTO t VALUES (3, 'a')");
    // ...and so does a read, as under PostgreSQL's lock.
    let reader = spawned(server.connect().await, "SELECT * FROM t");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "the INSERT waits for the block");
    assert!(!reader.is_finished(), "the SELECT waits for the block");
    a.batch_execute("COMMIT").await.unwrap();
    let (b, answer) = waiter.await.unwrap();
    assert_eq!(answer, Err("23505".to_owned()));
    assert_eq!(reader.await.unwrap().1, Ok(()));

    // Rolled back: the waiting write goes through, without the check.
    a.batch_execute("BEGIN; ALTER TABLE t ADD CONSTRAINT small CHECK (id < 100)")
        .await
        .unwrap();
    let waiter = spawned(b, "INSERT INTO t VALUES (200, 'z')");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "the INSERT waits for the block");
    a.batch_execute("ROLLBACK").await.unwrap();
    let (b, answer) = waiter.await.unwrap();
    assert_eq!(answer, Ok(()));
    assert_eq!(ids(&b, "t").await, vec![1, 2, 200]);

    // A check that fails fails the block; once it rolls back nobody waits.
    a.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        sqlstate_of(&a, "ALTER TABLE t ADD CONSTRAINT small CHECK (id < 100)").await,
        "23514"
    );
    assert_eq!(sqlstate_of(&a, "SELECT 1").await, "25P02");
    a.batch_execute("ROLLBACK").await.unwrap();
    // The committed index holds; the rolled-back constraints left nothing.
    assert_eq!(
        sqlstate_of(&b, "INSERT INTO t VALUES (6, 'a')").await,
        "23505"
    );
    b.batch_execute("INSERT INTO t VALUES (300, 'q')")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_concurrent_create_of_the_same_name_waits_for_the_holder() {
    let server = common::start().await;
    let a = server.connect().await;
    a.batch_execute("BEGIN; CREATE TABLE t (id integer PRIMARY KEY)")
        .await
        .unwrap();
    // Rolled back: the waiter creates its table.
    let waiter = spawned(
        server.connect().await,
        "CREATE TABLE t (id integer PRIMARY KEY, v text)",
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "CREATE waits for the open block");
    a.batch_execute("ROLLBACK").await.unwrap();
    let (b, answer) = waiter.await.unwrap();
    assert_eq!(answer, Ok(()));
    b.batch_execute("INSERT INTO t VALUES (1, 'v')")
        .await
        .unwrap();
    // Committed: the waiter finds the name taken.
    a.batch_execute("BEGIN; CREATE TABLE u (id integer PRIMARY KEY)")
        .await
        .unwrap();
    let waiter = spawned(b, "CREATE TABLE u (id integer PRIMARY KEY)");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(waiter.await.unwrap().1, Err("42P07".to_owned()));
}

#[tokio::test]
async fn a_dropped_connection_takes_its_ddl_with_it() {
    let server = common::start().await;
    let a = server.connect().await;
    a.batch_execute(
        "BEGIN;
         CREATE TABLE t (id integer PRIMARY KEY);
         INSERT INTO t VALUES (1);",
    )
    .await
    .unwrap();
    drop(a);
    let b = server.connect().await;
    // The rollback runs as the connection goes: a CREATE of the name waits
    // for it at most, then finds the name free.
    b.batch_execute("CREATE TABLE t (id integer PRIMARY KEY)")
        .await
        .unwrap();
    assert_eq!(ids(&b, "t").await, Vec::<i32>::new());
}
