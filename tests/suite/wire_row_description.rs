//! RowDescription names the table column each result column is (table
//! OID and attnum), as PostgreSQL does, and zeros for computed ones:
//! drivers' `getTableName` / `getColumnName` and ORMs read them.
//!
//! The same checks run against keyclaim and, with `KEYCLAIM_TEST_PG` set,
//! against PostgreSQL, so the expectations are PostgreSQL's own.

use crate::common;

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Column, NoTls};

/// What a result column says it is: (table OID, attnum); (0, 0) computed.
type Origin = (u32, i16);

const COMPUTED: Origin = (0, 0);

/// What Describe reports of each of a statement's result columns.
async fn described<T>(c: &Client, sql: &str, fact: impl Fn(&Column) -> T) -> Vec<T> {
    let stmt = c
        .prepare(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e} {:?}", e.as_db_error()));
    stmt.columns().iter().map(fact).collect()
}

/// The origins of a statement's result columns.
async fn origins(c: &Client, sql: &str) -> Vec<Origin> {
    described(c, sql, |col| {
        (col.table_oid().unwrap_or(0), col.column_id().unwrap_or(0))
    })
    .await
}

/// A table's OID as the catalog shows it (read as bigint: keyclaim's
/// catalog sends OIDs as int8).
async fn oid(c: &Client, table: &str) -> u32 {
    let by_cast: i64 = c
        .query_one(&format!("SELECT '{table}'::regclass::oid::bigint"), &[])
        .await
        .unwrap()
        .get(0);
    let in_pg_class: i64 = c
        .query_one(
            "SELECT oid::bigint FROM pg_class WHERE relname = $1",
            &[&table.to_string()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(by_cast, in_pg_class, "{table}: regclass and pg_class agree");
    u32::try_from(by_cast).expect("an OID")
}

/// A column's attnum as pg_attribute shows it.
async fn attnum(c: &Client, table: &str, column: &str) -> i16 {
    c.query_one(
        "SELECT attnum FROM pg_attribute WHERE attrelid = $1::text::regclass AND attname = $2",
        &[&table.to_string(), &column.to_string()],
    )
    .await
    .unwrap()
    .get(0)
}

/// Every check, on one server; `tag` makes the table names this run's own.
async fn check(c: &Client, tag: &str) {
    let author = format!("rd_author_{tag}");
    let book = format!("rd_book_{tag}");
    c.batch_execute(&format!(
        "CREATE TABLE {author} (id integer PRIMARY KEY, name text NOT NULL, country text);
         CREATE TABLE {book} (id integer PRIMARY KEY, title text, author_id integer, pages integer);
         INSERT INTO {author} VALUES (1, 'Le Guin', 'US'), (2, 'Lem', 'PL');
         INSERT INTO {book} VALUES (10, 'Solaris', 2, 204), (11, 'Earthsea', 1, 183);"
    ))
    .await
    .unwrap();
    let a = oid(c, &author).await;
    let b = oid(c, &book).await;
    assert_ne!(a, 0);
    assert_ne!(a, b);
    assert_eq!(attnum(c, &author, "country").await, 3);
    assert_eq!(attnum(c, &book, "author_id").await, 3);

    // The fast path: plain columns, *, aliases; expressions are computed.
    assert_eq!(
        origins(c, &format!("SELECT name, id FROM {author} WHERE id = $1")).await,
        [(a, 2), (a, 1)]
    );
    assert_eq!(
        origins(c, &format!("SELECT * FROM {author}")).await,
        [(a, 1), (a, 2), (a, 3)]
    );
    assert_eq!(
        origins(
            c,
            &format!("SELECT x.country AS c, id + 1, upper(name), 7 FROM {author} x")
        )
        .await,
        [(a, 3), COMPUTED, COMPUTED, COMPUTED]
    );
    assert_eq!(
        origins(c, &format!("SELECT count(*) FROM {author}")).await,
        [COMPUTED]
    );

    // RETURNING.
    assert_eq!(
        origins(
            c,
            &format!("INSERT INTO {author} (id, name) VALUES ($1, $2) RETURNING name, id, id * 2")
        )
        .await,
        [(a, 2), (a, 1), COMPUTED]
    );
    assert_eq!(
        origins(
            c,
            &format!("UPDATE {book} SET pages = pages + 1 WHERE id = $1 RETURNING *")
        )
        .await,
        [(b, 1), (b, 2), (b, 3), (b, 4)]
    );
    assert_eq!(
        origins(
            c,
            &format!("DELETE FROM {book} WHERE id = $1 RETURNING pages, title || '!'")
        )
        .await,
        [(b, 4), COMPUTED]
    );

    // The query engine: joins, subqueries, grouping, DISTINCT.
    assert_eq!(
        origins(
            c,
            &format!(
                "SELECT bk.title, bk.pages * 2, au.*, au.country AS c FROM {book} bk \
                 JOIN {author} au ON au.id = bk.author_id ORDER BY bk.id"
            )
        )
        .await,
        [(b, 2), COMPUTED, (a, 1), (a, 2), (a, 3), (a, 3)]
    );
    assert_eq!(
        origins(
            c,
            &format!(
                "SELECT au.name, bk.title FROM {author} au LEFT JOIN {book} bk \
                 ON bk.author_id = au.id WHERE au.id > $1"
            )
        )
        .await,
        [(a, 2), (b, 2)]
    );
    assert_eq!(
        origins(
            c,
            &format!("SELECT s.x FROM (SELECT country AS x FROM {author} LIMIT 5) s")
        )
        .await,
        [(a, 3)]
    );
    assert_eq!(
        origins(
            c,
            &format!("SELECT author_id, count(*), max(pages) FROM {book} GROUP BY author_id")
        )
        .await,
        [(b, 3), COMPUTED, COMPUTED]
    );
    assert_eq!(
        origins(c, &format!("SELECT DISTINCT country FROM {author}")).await,
        [(a, 3)]
    );
    assert_eq!(
        origins(
            c,
            &format!("WITH w AS (SELECT id, name FROM {author}) SELECT name FROM w")
        )
        .await,
        [(a, 2)]
    );
    assert_eq!(
        origins(
            c,
            &format!("SELECT id FROM {author} UNION SELECT id FROM {book}")
        )
        .await,
        [COMPUTED]
    );
    assert_eq!(
        origins(c, "SELECT * FROM generate_series(1, 2) AS g(n)").await,
        [COMPUTED]
    );

    // A series' bounds may be parameters.
    let rows = c
        .query(
            "SELECT n FROM generate_series(1, $1::integer) AS g(n)",
            &[&3i32],
        )
        .await
        .unwrap();
    let got: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(got, [1, 2, 3]);

    c.batch_execute(&format!("DROP TABLE {book}; DROP TABLE {author}"))
        .await
        .unwrap();
}

/// The type modifier of each result column.
async fn typmods(c: &Client, sql: &str) -> Vec<i32> {
    described(c, sql, Column::type_modifier).await
}

/// A column's typmod is its pg_attribute.atttypmod (numeric(5,2) is
/// (5 << 16 | 2) + 4), an operator's result has none (-1) and a cast's is
/// the cast's.
async fn check_typmods(c: &Client, tag: &str) {
    let t = format!("rd_price_{tag}");
    c.batch_execute(&format!(
        "CREATE TABLE {t} (id integer PRIMARY KEY, price numeric(5,2), whole numeric(3), plain numeric, code varchar(4));
         INSERT INTO {t} VALUES (1, 7, 7, 7, 'a');"
    ))
    .await
    .unwrap();
    let (price, whole, code) = (327_686, 196_612, 8);
    assert_eq!(
        typmods(c, &format!("SELECT price, whole, plain, code FROM {t}")).await,
        [price, whole, -1, code]
    );
    assert_eq!(
        typmods(
            c,
            &format!("SELECT price * 2, -price, price::numeric(4,1), 1.5::numeric(3,1) FROM {t}")
        )
        .await,
        [-1, -1, 262_149, 196_613]
    );
    assert_eq!(
        typmods(
            c,
            &format!("UPDATE {t} SET price = price + 1 WHERE id = $1 RETURNING price, whole")
        )
        .await,
        [price, whole]
    );
    let joined = format!(
        "SELECT a.price, b.whole, a.price::text, b.code::numeric FROM {t} a JOIN {t} b ON a.id = b.id"
    );
    assert_eq!(typmods(c, &joined).await, [price, whole, -1, -1]);
    assert_eq!(
        described(c, &joined, |col| col.type_().clone()).await,
        [Type::NUMERIC, Type::NUMERIC, Type::TEXT, Type::NUMERIC]
    );
    c.batch_execute(&format!("DROP TABLE {t}")).await.unwrap();
}

#[tokio::test]
async fn result_columns_name_their_table_column() {
    let server = common::start().await;
    let client = server.connect().await;
    check(&client, "kc").await;
    check_typmods(&client, "kc").await;
}

/// The expectations are PostgreSQL's: the same checks against it.
#[tokio::test]
async fn postgres_answers_the_same() {
    let Ok(spec) = std::env::var("KEYCLAIM_TEST_PG") else {
        eprintln!("skipped: set KEYCLAIM_TEST_PG to check against a real PostgreSQL");
        return;
    };
    let (client, conn) = tokio_postgres::connect(&spec, NoTls)
        .await
        .expect("the test PostgreSQL accepts a connection");
    tokio::spawn(conn);
    let tag = format!("pg{}", std::process::id());
    check(&client, &tag).await;
    check_typmods(&client, &tag).await;
}
