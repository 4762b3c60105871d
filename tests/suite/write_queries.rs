//! Writes that take their rows from a query (`INSERT ... SELECT`, `UPDATE
//! ... FROM`, `DELETE ... USING`, subqueries in UPDATE and DELETE): their
//! parameters over the extended protocol, the store reads they cost, and
//! their atomicity. Their answers against PostgreSQL's are in
//! tests/sql/write_queries.sql (the differential suite).

use crate::common;

use std::sync::atomic::Ordering;

use common::Counter;
use keyclaim::types::{SqlType, Value};

impl Counter {
    /// Runs `sql` with `params`; returns its command tag's row count and
    /// the store reads it cost.
    async fn write(&mut self, sql: &str, params: Vec<Value>) -> (u64, u64) {
        let before = self.store.counts.reads.load(Ordering::Relaxed);
        let hints: Vec<Option<SqlType>> = Vec::new();
        let mut count = 0;
        for p in self.engine.prepare(sql, &hints).await.expect(sql) {
            let done = self
                .engine
                .execute(&mut self.session, &p, params.clone())
                .await
                .expect(sql);
            count = match done.outcome {
                keyclaim::engine::Outcome::Command { tag } => tag
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
                _ => 0,
            };
        }
        (
            count,
            self.store.counts.reads.load(Ordering::Relaxed) - before,
        )
    }
}

#[tokio::test]
async fn parameters_take_their_types_from_the_query() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE author (id serial PRIMARY KEY, name text UNIQUE, books integer);
         CREATE TABLE import (id integer PRIMARY KEY, author text, title text);
         INSERT INTO author (name, books) VALUES ('Ann', 0), ('Bob', 0);
         INSERT INTO import VALUES (1, 'Ann', 'Alpha'), (2, 'Bob', 'Beta');",
    )
    .await
    .unwrap();
    // tokio-postgres sends each parameter in the type the server described:
    // an integer where a text was inferred (or the reverse) fails here.
    let rows = c
        .query(
            "UPDATE author SET books = $1 FROM import \
             WHERE import.author = author.name AND import.title = $2 \
             RETURNING author.name, author.books",
            &[&42i32, &"Alpha"],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>(0), "Ann");
    assert_eq!(rows[0].get::<_, i32>(1), 42);

    let rows = c
        .query(
            "INSERT INTO author (name, books) SELECT $1 || author, $2 FROM import \
             WHERE id = $3 RETURNING name, books",
            &[&"Dr ", &7i32, &2i32],
        )
        .await
        .unwrap();
    assert_eq!(rows[0].get::<_, String>(0), "Dr Bob");
    assert_eq!(rows[0].get::<_, i32>(1), 7);

    let deleted = c
        .execute(
            "DELETE FROM author WHERE id IN (SELECT id FROM author WHERE books = $1)",
            &[&42i32],
        )
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let names: Vec<String> = c
        .query("SELECT name FROM author ORDER BY name", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(names, ["Bob", "Dr Bob"]);
}

#[tokio::test]
async fn a_failed_row_leaves_nothing_and_a_rollback_takes_all_back() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE src (id integer PRIMARY KEY, email text);
         CREATE TABLE dst (id integer PRIMARY KEY, email text UNIQUE);
         INSERT INTO src VALUES (1, 'a@x'), (2, 'b@x'), (3, 'a@x');",
    )
    .await
    .unwrap();
    // The third row repeats the first's email: no row stays.
    let err = c
        .execute("INSERT INTO dst SELECT id, email FROM src ORDER BY id", &[])
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "23505");
    let n: i64 = c
        .query_one("SELECT count(*) FROM dst", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);

    c.batch_execute(
        "BEGIN;
         INSERT INTO dst SELECT id, email FROM src WHERE id < 3;
         UPDATE src SET email = dst.email || '.moved' FROM dst WHERE dst.id = src.id;
         DELETE FROM src USING dst WHERE dst.id = src.id;",
    )
    .await
    .unwrap();
    // Inside the block its own writes are seen.
    let left: i64 = c
        .query_one("SELECT count(*) FROM src", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 1);
    c.batch_execute("ROLLBACK").await.unwrap();
    let src: Vec<String> = c
        .query("SELECT email FROM src ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(src, ["a@x", "b@x", "a@x"]);
    let n: i64 = c
        .query_one("SELECT count(*) FROM dst", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

#[tokio::test]
async fn found_rows_are_read_by_key() {
    let mut c = Counter::new();
    c.write(
        "CREATE TABLE author (id integer PRIMARY KEY, name text, books integer)",
        vec![],
    )
    .await;
    c.write(
        "CREATE TABLE book (id integer PRIMARY KEY, author_id integer, title text)",
        vec![],
    )
    .await;
    for i in 1..=600 {
        c.write(
            &format!("INSERT INTO author VALUES ({i}, 'author {i}', 0)"),
            vec![],
        )
        .await;
        c.write(
            &format!("INSERT INTO book VALUES ({i}, {}, 'book {i}')", i % 300 + 1),
            vec![],
        )
        .await;
    }
    // Both sides pinned by key: the finder reads the book and the author;
    // the write reads the author again for its version, and once more as
    // its statement's transaction writes the intent.
    let (count, reads) = c
        .write(
            "UPDATE author SET books = books + 1 FROM book \
             WHERE book.id = $1 AND author.id = book.author_id AND author.id = $2",
            vec![Value::Int4(5), Value::Int4(6)],
        )
        .await;
    assert_eq!(count, 1);
    assert_eq!(
        reads, 4,
        "finder: book and author by key; write: author twice"
    );
    // A key list in a subquery's place: no scan of the target.
    let (count, reads) = c
        .write(
            "DELETE FROM book WHERE id IN (1, 2, 3) AND EXISTS (SELECT 1 FROM author WHERE author.id = 2)",
            vec![],
        )
        .await;
    assert_eq!(count, 3);
    assert!(reads < 20, "{reads} reads: the book table was scanned");
}
