//! Plain indexes (CREATE INDEX, `claims::index`): a lookup by an indexed
//! column reads the index's entries and the rows they name, never the
//! whole table; no index hides a row a statement should see or shows one
//! it should not, through updates, deletes, open transactions, ROLLBACK
//! and a build over rows already there. The differential script
//! tests/sql/indexes.sql compares the answers with PostgreSQL's.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Counter;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use keyclaim::engine::Outcome;
use keyclaim::store::layer::{Layer, Layered};
use keyclaim::store::StoreResult;
use keyclaim::types::SqlType;
use tokio_postgres::Client;

/// What one statement cost: rows returned, store reads, plain writes.
#[derive(Debug, PartialEq, Eq)]
struct Cost {
    rows: usize,
    reads: u64,
    writes: u64,
}

fn cost(rows: usize, reads: u64, writes: u64) -> Cost {
    Cost {
        rows,
        reads,
        writes,
    }
}

impl Counter {
    async fn index_cost(&mut self, sql: &str) -> Cost {
        let counts = &self.store.counts;
        let (reads, writes) = (
            counts.reads.load(Ordering::Relaxed),
            counts.writes.load(Ordering::Relaxed),
        );
        let hints: Vec<Option<SqlType>> = Vec::new();
        let mut rows = 0;
        for p in self.engine.prepare(sql, &hints).await.expect(sql) {
            let done = self
                .engine
                .execute(&mut self.session, &p, Vec::new())
                .await
                .expect(sql);
            if let Outcome::Rows { rows: stream, .. } = done.outcome {
                for r in stream.collect::<Vec<_>>().await {
                    r.expect(sql);
                    rows += 1;
                }
            }
        }
        let counts = &self.store.counts;
        Cost {
            rows,
            reads: counts.reads.load(Ordering::Relaxed) - reads,
            writes: counts.writes.load(Ordering::Relaxed) - writes,
        }
    }
}

#[tokio::test]
async fn lookups_by_an_indexed_column_read_its_entries_not_the_table() {
    let mut c = Counter::new();
    c.index_cost("CREATE TABLE author (id integer PRIMARY KEY, name text)")
        .await;
    c.index_cost("CREATE TABLE book (id integer PRIMARY KEY, author_id integer, title text)")
        .await;
    for i in 1..=300 {
        c.index_cost(&format!("INSERT INTO author VALUES ({i}, 'author {i}')"))
            .await;
    }
    // Two books per author, one statement each (no row carries an intent).
    for i in 1..=600 {
        let book = format!("INSERT INTO book VALUES ({i}, {}, 'book {i}')", i % 300 + 1);
        c.index_cost(&book).await;
    }
    let by_author = "SELECT title FROM book WHERE author_id = 7";
    // Without an index: every page of the table (256 rows a page).
    assert_eq!(c.index_cost(by_author).await, cost(2, 3, 0));

    // Built over the rows there: one entry per row.
    assert_eq!(
        c.index_cost("CREATE INDEX book_author_id_idx ON book (author_id)")
            .await
            .writes,
        600
    );
    // One index read, then a row read per entry.
    assert_eq!(c.index_cost(by_author).await, cost(2, 3, 0));
    assert_eq!(
        c.index_cost("SELECT count(*) FROM book WHERE author_id = 7 AND title <> 'x'")
            .await,
        cost(1, 3, 0)
    );
    // An IN list: each distinct key's entries, and their rows.
    assert_eq!(
        c.index_cost("SELECT title FROM book WHERE author_id IN (7, 8, 7)")
            .await,
        cost(4, 6, 0)
    );
    // The query engine goes by it too, and a join along the foreign key
    // reads the books of the one author by the index (a lookup join).
    assert_eq!(
        c.index_cost("SELECT author_id, count(*) FROM book WHERE author_id = 7 GROUP BY author_id")
            .await,
        cost(1, 3, 0)
    );
    assert_eq!(
        c.index_cost(
            "SELECT a.name, b.title FROM author a JOIN book b ON b.author_id = a.id \
             WHERE a.id = 7"
        )
        .await,
        cost(2, 4, 0)
    );

    // Writes add an entry only where the indexed value changes.
    assert_eq!(
        c.index_cost("INSERT INTO book VALUES (601, 7, 'new')")
            .await
            .writes,
        1
    );
    assert_eq!(
        c.index_cost("UPDATE book SET title = 'newer' WHERE id = 601")
            .await
            .writes,
        0
    );
    assert_eq!(
        c.index_cost("UPDATE book SET author_id = 8 WHERE id = 601")
            .await
            .writes,
        1
    );
    // The moved row's old entry costs a row read, and is not shown.
    assert_eq!(c.index_cost(by_author).await, cost(2, 4, 0));
    assert_eq!(
        c.index_cost("SELECT title FROM book WHERE author_id = 8")
            .await
            .rows,
        3
    );
    // A transaction's write adds its entry with its intent.
    c.index_cost("CREATE TABLE note (id integer PRIMARY KEY, book_id integer)")
        .await;
    c.index_cost("CREATE INDEX note_book_id_idx ON note (book_id)")
        .await;
    c.index_cost("BEGIN").await;
    assert_eq!(
        c.index_cost("INSERT INTO note VALUES (1, 7)").await.writes,
        1
    );
    c.index_cost("COMMIT").await;

    // Dropped, lookups scan again (3 pages).
    c.index_cost("DROP INDEX book_author_id_idx").await;
    assert_eq!(c.index_cost(by_author).await, cost(2, 3, 0));
    assert_eq!(
        c.index_cost("INSERT INTO book VALUES (603, 7, 'unindexed')")
            .await
            .writes,
        0
    );
}

async fn ids(client: &Client, sql: &str) -> Vec<i32> {
    common::column(client, sql).await
}

const K1: &str = "SELECT id FROM t WHERE k = 1 ORDER BY id";
const K7: &str = "SELECT id FROM t WHERE k = 7 ORDER BY id";

#[tokio::test]
async fn an_index_never_hides_or_invents_a_row() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, k integer, v text);
         CREATE INDEX t_k ON t (k);
         INSERT INTO t SELECT i, i % 2, 'v' FROM generate_series(1, 6) i;
         INSERT INTO t VALUES (7, NULL, 'no key');",
    )
    .await
    .unwrap();
    assert_eq!(ids(&b, K1).await, [1, 3, 5]);
    assert_eq!(
        ids(&b, "SELECT id FROM t WHERE k IN (0, 1) ORDER BY id").await,
        [1, 2, 3, 4, 5, 6]
    );
    assert_eq!(ids(&b, "SELECT id FROM t WHERE k IS NULL").await, [7]);
    // Moved and deleted rows leave their old key.
    a.batch_execute("UPDATE t SET k = 5 WHERE id = 1; DELETE FROM t WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(ids(&b, K1).await, [5]);
    assert_eq!(ids(&b, "SELECT id FROM t WHERE k = 5").await, [1]);
    // Listed under its old key and its new one, a moved row comes once.
    assert_eq!(
        ids(&b, "SELECT id FROM t WHERE k IN (1, 5) ORDER BY id").await,
        [1, 5]
    );
    let counted: Vec<i64> = common::column(
        &b,
        "SELECT count(*) FROM t WHERE k IN (1, 5) GROUP BY k ORDER BY k",
    )
    .await;
    assert_eq!(counted, [1, 1]);

    // An open transaction's change shows to it alone until COMMIT.
    a.batch_execute("BEGIN; UPDATE t SET k = 7 WHERE id = 5")
        .await
        .unwrap();
    assert_eq!(ids(&a, K7).await, [5]);
    assert_eq!(ids(&a, K1).await, Vec::<i32>::new());
    assert_eq!(ids(&b, K7).await, Vec::<i32>::new());
    assert_eq!(ids(&b, K1).await, [5]);
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(ids(&b, K7).await, [5]);
    assert_eq!(ids(&b, K1).await, Vec::<i32>::new());

    // A rolled-back insert leaves an entry, and no row.
    a.batch_execute("BEGIN; INSERT INTO t VALUES (10, 7, 'gone'); ROLLBACK")
        .await
        .unwrap();
    assert_eq!(ids(&b, K7).await, [5]);
    // A statement that fails leaves nothing either.
    assert!(a
        .batch_execute("INSERT INTO t VALUES (11, 7, 'x'), (5, 7, 'duplicate')")
        .await
        .is_err());
    assert_eq!(ids(&b, K7).await, [5]);
    server.shutdown().await;
}

#[tokio::test]
async fn an_index_built_over_rows_already_there_finds_them() {
    let server = common::start().await;
    let (a, b) = (server.connect().await, server.connect().await);
    a.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, k integer);
         INSERT INTO t VALUES (1, 1), (2, 7), (3, 1);
         UPDATE t SET k = 7 WHERE id = 3;",
    )
    .await
    .unwrap();
    // Another session's open transaction has written rows the build meets
    // as intents: once committed, the index finds them.
    a.batch_execute("BEGIN; INSERT INTO t VALUES (4, 7); UPDATE t SET k = 1 WHERE id = 2")
        .await
        .unwrap();
    b.batch_execute("CREATE INDEX t_k ON t (k)").await.unwrap();
    assert_eq!(ids(&b, K7).await, [2, 3]);
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(ids(&b, K7).await, [3, 4]);
    assert_eq!(ids(&b, K1).await, [1, 2]);

    // In a block, on the block's own table: the rows written before and
    // after it are found, inside the block and after COMMIT.
    a.batch_execute(
        "BEGIN;
         CREATE TABLE u (id integer PRIMARY KEY, k integer);
         INSERT INTO u VALUES (1, 7);
         CREATE INDEX u_k ON u (k);
         INSERT INTO u VALUES (2, 7);",
    )
    .await
    .unwrap();
    let u7 = "SELECT id FROM u WHERE k = 7 ORDER BY id";
    assert_eq!(ids(&a, u7).await, [1, 2]);
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(ids(&b, u7).await, [1, 2]);
    // In a block on a table others use, and rolled back: gone.
    a.batch_execute("BEGIN; CREATE INDEX t_k2 ON t (k); ROLLBACK")
        .await
        .unwrap();
    assert_eq!(common::sqlstate_of(&b, "DROP INDEX t_k2").await, "42704");
    assert_eq!(ids(&b, K7).await, [3, 4]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_parent_delete_finds_its_children_by_an_index() {
    let mut c = Counter::new();
    c.index_cost("CREATE TABLE author (id integer PRIMARY KEY)")
        .await;
    c.index_cost(
        "CREATE TABLE book (id integer PRIMARY KEY, \
         author_id integer REFERENCES author (id) ON DELETE CASCADE)",
    )
    .await;
    for i in 1..=302 {
        c.index_cost(&format!("INSERT INTO author VALUES ({i})"))
            .await;
    }
    // Authors 1 to 299 have two books each; 300 to 302 none.
    for i in 1..=598 {
        let book = format!("INSERT INTO book VALUES ({i}, {})", i % 299 + 1);
        c.index_cost(&book).await;
    }
    let scanned = c.index_cost("DELETE FROM author WHERE id = 300").await;
    c.index_cost("CREATE INDEX book_author_id_idx ON book (author_id)")
        .await;
    // The same delete, by the index: the parent's reads and one index
    // read, where the scan read the child table's three pages and more
    // (each child row's transaction record: an insert with a foreign key
    // is a transaction, whose intents are folded later).
    let indexed = c.index_cost("DELETE FROM author WHERE id = 301").await;
    assert_eq!(indexed, cost(0, 3, 0));
    assert!(scanned.reads >= 2 + 3, "{scanned:?}");
    // A referenced parent takes its children with it (ON DELETE CASCADE),
    // found by the index.
    c.index_cost("DELETE FROM author WHERE id = 7").await;
    assert_eq!(
        c.index_cost("SELECT id FROM book WHERE author_id = 7")
            .await
            .rows,
        0
    );
    assert_eq!(
        c.index_cost("SELECT id FROM book WHERE author_id = 8")
            .await
            .rows,
        2
    );
    assert_eq!(c.index_cost("SELECT id FROM book").await.rows, 596);
}

/// Every plain write (an index entry) takes `delay` to land, as on a slow
/// replica; LWTs and reads pass at once.
struct SlowEntries {
    delay: Duration,
}

impl Layer for SlowEntries {
    fn write<'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<()>>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        async move {
            tokio::time::sleep(self.delay).await;
            write.await
        }
        .boxed()
    }
}

/// One statement counts the rows with `k = 7` by the index and by a scan
/// (`k + 0 = 7` is no key filter), in one snapshot, while rows come and go
/// with slow index entries: the two counts always agree. Written after its
/// row, an entry would leave a window (the delay) in which a scan shows a
/// row the index does not: checked by moving `claims::index::add_entries`
/// after the row's commit in `claims::row::insert_row`, which fails here.
#[tokio::test]
async fn a_lookup_shows_what_a_scan_shows_in_the_same_snapshot() {
    let server = common::start_layered(
        |_| {},
        |store| {
            Arc::new(Layered::wrap(
                store,
                SlowEntries {
                    delay: Duration::from_millis(20),
                },
            ))
        },
    )
    .await;
    let (w, r) = (server.connect().await, server.connect().await);
    w.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, k integer);
         CREATE INDEX t_k ON t (k);",
    )
    .await
    .unwrap();
    let writer = tokio::spawn(async move {
        for i in 1..=30 {
            w.batch_execute(&format!("INSERT INTO t VALUES ({i}, 7)"))
                .await
                .unwrap();
            if i % 3 == 0 {
                w.batch_execute(&format!("UPDATE t SET k = 8 WHERE id = {}", i - 1))
                    .await
                    .unwrap();
                w.batch_execute(&format!("UPDATE t SET k = 7 WHERE id = {}", i - 1))
                    .await
                    .unwrap();
            }
        }
    });
    let both = "SELECT (SELECT count(*) FROM t WHERE k = 7) AS by_index, \
                (SELECT count(*) FROM t WHERE k + 0 = 7) AS by_scan";
    let (mut checks, started) = (0, Instant::now());
    while !writer.is_finished() {
        let row = match r.query_one(both, &[]).await {
            Ok(row) => row,
            // A row committed twice since the statement began (the writer
            // moves rows back and forth): retried, as a client would.
            Err(e)
                if e.code()
                    == Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE) =>
            {
                continue
            }
            Err(e) => panic!("{e}"),
        };
        let (by_index, by_scan): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!(by_index, by_scan, "after {checks} agreeing checks");
        checks += 1;
        assert!(started.elapsed() < Duration::from_secs(60));
    }
    writer.await.unwrap();
    assert!(checks > 10, "only {checks} checks ran");
    let row = r.query_one(both, &[]).await.unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (30, 30));
    server.shutdown().await;
}
