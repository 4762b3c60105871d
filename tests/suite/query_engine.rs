//! The query engine (DataFusion) for reads the fast path does not answer:
//! it reads through the transaction layer, turns key filters into point
//! reads, and speaks both protocols. Its answers against PostgreSQL's are
//! in tests/sql/query_engine.sql (the differential suite).

use crate::common;

use std::sync::atomic::Ordering;

use common::Counter;
use futures::StreamExt;
use keyclaim::engine::Outcome;
use keyclaim::types::{SqlType, Value};
use tokio_postgres::types::Type;

impl Counter {
    /// Runs `sql` with `params` and returns (rows, store reads) it cost.
    async fn reads(&mut self, sql: &str, params: Vec<Value>) -> (usize, u64) {
        let before = self.store.counts.reads.load(Ordering::Relaxed);
        let hints: Vec<Option<SqlType>> = Vec::new();
        let mut rows = 0;
        for p in self.engine.prepare(sql, &hints).await.expect(sql) {
            let done = self
                .engine
                .execute(&mut self.session, &p, params.clone())
                .await
                .expect(sql);
            if let Outcome::Rows { rows: stream, .. } = done.outcome {
                let all: Vec<_> = stream.collect().await;
                rows += all.len();
                for r in all {
                    r.expect(sql);
                }
            }
        }
        (
            rows,
            self.store.counts.reads.load(Ordering::Relaxed) - before,
        )
    }
}

#[tokio::test]
async fn key_filters_read_by_key_never_scan() {
    let mut c = Counter::new();
    c.reads(
        "CREATE TABLE author (id integer PRIMARY KEY, email text UNIQUE, name text)",
        vec![],
    )
    .await;
    c.reads(
        "CREATE TABLE book (id integer PRIMARY KEY, author_id integer, title text)",
        vec![],
    )
    .await;
    // 600 authors and books, one row a statement (so no row carries a
    // transaction's intent): a scan reads pages of 256 rows.
    for i in 1..=600 {
        let author = format!(
            "INSERT INTO author VALUES ({i}, 'a{i}@x', 'author {}')",
            i % 7
        );
        c.reads(&author, vec![]).await;
        let book = format!("INSERT INTO book VALUES ({i}, {}, 'book {i}')", i % 300 + 1);
        c.reads(&book, vec![]).await;
    }

    // A scan, for scale: every page of the table.
    assert_eq!(
        c.reads("SELECT DISTINCT name FROM author", vec![]).await,
        (7, 3)
    );
    // Primary-key equality under an aggregate: one read.
    assert_eq!(
        c.reads(
            "SELECT name, count(*) FROM author WHERE id = 7 GROUP BY name",
            vec![]
        )
        .await,
        (1, 1)
    );
    // An IN list on the primary key: one read per key.
    assert_eq!(
        c.reads(
            "SELECT DISTINCT name FROM author WHERE id IN (1, 2, 3) AND name <> 'x'",
            vec![]
        )
        .await,
        (3, 3)
    );
    // A unique key: the claim, then the row.
    assert_eq!(
        c.reads(
            "SELECT max(id) FROM author WHERE email = 'a9@x' HAVING count(*) > 0",
            vec![]
        )
        .await,
        (1, 2)
    );
    // A join with both sides pinned by key: one read each.
    assert_eq!(
        c.reads(
            "SELECT b.title, a.name FROM book b JOIN author a ON a.id = b.author_id \
             WHERE b.id = 6 AND a.id = 7",
            vec![]
        )
        .await,
        (1, 2)
    );
    // A join along a foreign key with one side pinned: the other side is
    // read by the keys the pinned side names (a lookup join), whichever
    // side the query names first, instead of scanned (3 pages).
    for join in [
        "SELECT b.title, a.name FROM book b JOIN author a ON b.author_id = a.id WHERE b.id = 6",
        "SELECT b.title, a.name FROM author a JOIN book b ON b.author_id = a.id WHERE b.id = 6",
        "SELECT a.name FROM author a WHERE a.id IN (SELECT author_id FROM book WHERE id = 6)",
        "SELECT b.title, a.name FROM book b LEFT JOIN author a ON b.author_id = a.id WHERE b.id = 6",
    ] {
        assert_eq!(c.reads(join, vec![]).await, (1, 2), "{join}");
    }
    // A few pinned rows name a few keys: one read each.
    assert_eq!(
        c.reads(
            "SELECT b.id, a.email FROM book b JOIN author a ON a.id = b.author_id \
             WHERE b.id IN (1, 2, 301)",
            vec![]
        )
        .await,
        (3, 3 + 2)
    );
    // A unique key on the other side works the same (claim, then row).
    assert_eq!(
        c.reads(
            "SELECT count(*) FROM author a JOIN author b ON b.email = a.email WHERE a.id = 5",
            vec![]
        )
        .await,
        (1, 1 + 2)
    );
    // The side a RIGHT JOIN keeps is read whole: every row of it shows.
    assert_eq!(
        c.reads(
            "SELECT count(*) FROM book b RIGHT JOIN author a ON b.author_id = a.id AND b.id = 6",
            vec![]
        )
        .await
        .1,
        1 + 3
    );
    // A parameter ($1, extended protocol) pins the key just the same.
    assert_eq!(
        c.reads(
            "SELECT a.name, count(*) FROM author a WHERE a.id = $1 GROUP BY a.name",
            vec![Value::Int4(42)]
        )
        .await,
        (1, 1)
    );
    // The plan is optimized once with its parameters unbound; each
    // execution's values still pin the keys: a cast parameter, an array
    // of keys (`= ANY($1)`, as asyncpg and ORMs' batch loads send), and a
    // join pinned by a parameter.
    let keys = |ids: &[i32]| {
        Value::Array(Box::new(keyclaim::types::Array {
            elem: SqlType::Int4,
            items: ids.iter().map(|&i| Value::Int4(i)).collect(),
        }))
    };
    for (sql, params, expected) in [
        (
            "SELECT a.name, count(*) FROM author a WHERE a.id = $1::integer GROUP BY a.name",
            vec![Value::Int4(43)],
            (1, 1),
        ),
        (
            "SELECT DISTINCT a.id FROM author a WHERE a.id = ANY($1)",
            vec![keys(&[1, 2, 3, 4])],
            (4, 4),
        ),
        (
            "SELECT DISTINCT a.id FROM author a WHERE a.id = ANY($1)",
            vec![keys(&[5, 9000])],
            (1, 2),
        ),
        (
            "SELECT b.title, a.name FROM book b JOIN author a ON b.author_id = a.id WHERE b.id = $1",
            vec![Value::Int4(7)],
            (1, 2),
        ),
        (
            "SELECT b.title, a.name FROM book b JOIN author a ON b.author_id = a.id WHERE b.id = $1",
            vec![Value::Int4(8)],
            (1, 2),
        ),
    ] {
        assert_eq!(c.reads(sql, params).await, expected, "{sql}");
    }
}

#[tokio::test]
async fn a_join_in_a_block_sees_its_own_writes_and_no_one_elses() {
    let server = common::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute(
        "CREATE TABLE author (id integer PRIMARY KEY, name text);
         CREATE TABLE book (id integer PRIMARY KEY, author_id integer, title text);
         INSERT INTO author VALUES (1, 'Lem');
         INSERT INTO book VALUES (10, 1, 'Solaris');",
    )
    .await
    .unwrap();
    let join =
        "SELECT a.name, b.title FROM author a JOIN book b ON b.author_id = a.id ORDER BY b.id";
    let titles = |rows: Vec<tokio_postgres::Row>| -> Vec<String> {
        rows.iter().map(|r| r.get::<_, String>(1)).collect()
    };

    a.batch_execute(
        "BEGIN;
         INSERT INTO author VALUES (2, 'Le Guin');
         INSERT INTO book VALUES (11, 2, 'The Dispossessed');
         UPDATE book SET title = 'Solaris (1961)' WHERE id = 10;",
    )
    .await
    .unwrap();
    b.batch_execute("BEGIN; INSERT INTO book VALUES (12, 1, 'The Cyberiad');")
        .await
        .unwrap();

    // Each block sees its own uncommitted rows through the join, and not
    // the other's.
    assert_eq!(
        titles(a.query(join, &[]).await.unwrap()),
        ["Solaris (1961)", "The Dispossessed"]
    );
    assert_eq!(
        titles(b.query(join, &[]).await.unwrap()),
        ["Solaris", "The Cyberiad"]
    );
    // An aggregate over a join, extended protocol, inside the block.
    let row = a
        .query_one(
            "SELECT count(*), max(b.title) FROM author a JOIN book b ON b.author_id = a.id WHERE a.id >= $1",
            &[&1i32],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2);

    a.batch_execute("COMMIT").await.unwrap();
    b.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        titles(b.query(join, &[]).await.unwrap()),
        ["Solaris (1961)", "The Dispossessed"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn extended_protocol_describes_engine_queries() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, g smallint, n numeric, s text, v varchar(8));
         INSERT INTO t VALUES (1, 1, 2.5, 'a', 'x'), (2, 1, 0.5, 'b', 'y'), (3, 2, NULL, 'c', 'z');",
    )
    .await
    .unwrap();
    let stmt = c
        .prepare(
            "SELECT g, count(*), sum(g), sum(id), avg(id), max(n), string_agg(s, ',' ORDER BY s), min(v), g + 1 \
             FROM t WHERE id > $1 GROUP BY g ORDER BY g",
        )
        .await
        .unwrap();
    assert_eq!(stmt.params(), &[Type::INT4]);
    let described: Vec<(&str, Type)> = stmt
        .columns()
        .iter()
        .map(|c| (c.name(), c.type_().clone()))
        .collect();
    assert_eq!(
        described,
        [
            ("g", Type::INT2),
            ("count", Type::INT8),
            ("sum", Type::INT8),
            ("sum", Type::INT8),
            ("avg", Type::NUMERIC),
            ("max", Type::NUMERIC),
            ("string_agg", Type::TEXT),
            // min(varchar) is min(text) in PostgreSQL.
            ("min", Type::TEXT),
            ("?column?", Type::INT4),
        ]
    );
    let rows = c.query(&stmt, &[&0i32]).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].get::<_, i64>(1), 2);
    assert_eq!(rows[0].get::<_, String>(6), "a,b");
    assert_eq!(rows[1].get::<_, i32>(8), 3);
    // Errors keep their SQLSTATE on the extended protocol too.
    let e = c
        .query("SELECT id / 0 FROM t GROUP BY id", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code().unwrap().code(), "22012");
    let e = c
        .prepare("SELECT nope FROM t GROUP BY g")
        .await
        .unwrap_err();
    assert_eq!(e.code().unwrap().code(), "42703");
    server.shutdown().await;
}

/// A parameter whose type the client declared is of that type wherever it
/// stands, as in PostgreSQL: a VALUES list or UNION branch of numeric
/// parameters is numeric (it came out as text, and `v::int` of 0.5 was 0).
#[tokio::test]
async fn declared_parameter_types_hold_in_values_lists_and_unions() {
    let server = common::start().await;
    let c = server.connect().await;
    let stmt = c
        .prepare_typed(
            "SELECT v, v::int FROM (VALUES ($1), ($2)) AS t(v) ORDER BY v",
            &[Type::NUMERIC, Type::NUMERIC],
        )
        .await
        .unwrap();
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, [Type::NUMERIC, Type::INT4]);
    let half = rust_decimal::Decimal::new(5, 1);
    let almost = rust_decimal::Decimal::new(24999, 4);
    let rows = c.query(&stmt, &[&half, &almost]).await.unwrap();
    let got: Vec<(rust_decimal::Decimal, i32)> =
        rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, [(half, 1), (almost, 2)]);
    let stmt = c
        .prepare_typed(
            "SELECT a FROM (SELECT $1 AS a UNION ALL SELECT 2) s ORDER BY a LIMIT $2",
            &[Type::INT4, Type::INT2],
        )
        .await
        .unwrap();
    assert_eq!(stmt.columns()[0].type_(), &Type::INT4);
    let rows = c.query(&stmt, &[&7i32, &5i16]).await.unwrap();
    let got: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(got, [2, 7]);
    // LIMIT and OFFSET parameters left to the server are bigints, as
    // PostgreSQL describes them (they were described as text).
    c.batch_execute(
        "CREATE TABLE p (id integer PRIMARY KEY, g integer);
         INSERT INTO p VALUES (1, 1), (2, 1), (3, 2);",
    )
    .await
    .unwrap();
    let stmt = c
        .prepare("SELECT g, count(*) FROM p GROUP BY g ORDER BY g LIMIT $1 OFFSET $2")
        .await
        .unwrap();
    assert_eq!(stmt.params(), &[Type::INT8, Type::INT8]);
    let rows = c.query(&stmt, &[&1i64, &1i64]).await.unwrap();
    let got: Vec<(i32, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, [(2, 1)]);
    server.shutdown().await;
}

/// DataFusion answers the merged column of a RIGHT or FULL join with USING
/// from the left side alone (NULL for a row only the right side has):
/// refused rather than answered wrong; ON and LEFT joins run.
#[tokio::test]
async fn outer_joins_that_merge_columns_are_refused_not_answered_wrong() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE ja (id integer PRIMARY KEY, x text);
         CREATE TABLE jb (id integer PRIMARY KEY, y text);
         INSERT INTO ja VALUES (1, 'a'), (2, 'b');
         INSERT INTO jb VALUES (2, 'B'), (3, 'C');",
    )
    .await
    .unwrap();
    for sql in [
        "SELECT * FROM ja RIGHT JOIN jb USING (id)",
        "SELECT id FROM ja FULL JOIN jb USING (id)",
        "SELECT * FROM ja NATURAL FULL JOIN jb",
        "SELECT * FROM ja WHERE id IN (SELECT id FROM ja RIGHT JOIN jb USING (id))",
    ] {
        assert_eq!(common::sqlstate_of(&c, sql).await, "0A000", "{sql}");
    }
    let ids: Vec<Option<i32>> = c
        .query(
            "SELECT coalesce(ja.id, jb.id) FROM ja FULL JOIN jb ON ja.id = jb.id ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, [Some(1), Some(2), Some(3)]);
    let left: i64 = c
        .query_one("SELECT count(*) FROM ja LEFT JOIN jb USING (id)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 2);
}

/// A correlated subquery's `LIMIT $1` (psycopg 3 binds SQLAlchemy's
/// `.limit(1)` so) is known only when the query runs: 1 gives the first
/// row's value and 0 none, as in PostgreSQL; a negative limit answers
/// PostgreSQL's 2201W, and any other is refused, never answered wrong.
/// The parameter is described as PostgreSQL describes it, a bigint.
#[tokio::test]
async fn a_correlated_subquery_limited_by_a_parameter() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE c2 (id integer PRIMARY KEY, name text);
         CREATE TABLE o2 (id integer PRIMARY KEY, cid integer, n integer);
         INSERT INTO c2 VALUES (1, 'a'), (2, 'b'), (3, 'c');
         INSERT INTO o2 VALUES (1, 1, 5), (2, 1, 7), (3, 2, 1);",
    )
    .await
    .unwrap();
    let stmt = c
        .prepare(
            "SELECT c2.name, (SELECT o2.n FROM o2 WHERE o2.cid = c2.id \
             ORDER BY o2.n DESC LIMIT $1) AS last FROM c2 ORDER BY c2.id",
        )
        .await
        .unwrap();
    assert_eq!(stmt.params(), &[Type::INT8]);
    // As SQLAlchemy on psycopg 3 writes it.
    let cast = c
        .prepare(
            "SELECT (SELECT o2.n FROM o2 WHERE o2.cid = c2.id ORDER BY o2.n LIMIT $1::INTEGER) \
             FROM c2 ORDER BY c2.id",
        )
        .await
        .unwrap();
    let firsts: Vec<Option<i32>> = c
        .query(&cast, &[&1i32])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(firsts, [Some(5), Some(1), None]);
    let rows = |limit: i64| {
        let (c, stmt) = (&c, &stmt);
        async move {
            c.query(stmt, &[&limit]).await.map(|rows| {
                rows.iter()
                    .map(|r| (r.get::<_, String>(0), r.get::<_, Option<i32>>(1)))
                    .collect::<Vec<_>>()
            })
        }
    };
    let s = |n: &str| n.to_string();
    assert_eq!(
        rows(1).await.unwrap(),
        [(s("a"), Some(7)), (s("b"), Some(1)), (s("c"), None)]
    );
    assert_eq!(
        rows(0).await.unwrap(),
        [(s("a"), None), (s("b"), None), (s("c"), None)]
    );
    let code = |e: tokio_postgres::Error| e.code().map(|c| c.code().to_string());
    assert_eq!(code(rows(-1).await.unwrap_err()).as_deref(), Some("2201W"));
    assert_eq!(code(rows(2).await.unwrap_err()).as_deref(), Some("0A000"));
    server.shutdown().await;
}
