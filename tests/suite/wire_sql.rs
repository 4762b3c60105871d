//! SQL through the wire with a real client: constraints, errors with every
//! field PostgreSQL sets, parameter inference, binary results.

use crate::common;

use tokio_postgres::error::{DbError, SqlState};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Client;

async fn db_err(client: &Client, sql: &str) -> DbError {
    let err = client.batch_execute(sql).await.expect_err(sql);
    err.as_db_error()
        .unwrap_or_else(|| panic!("{sql}: {err}"))
        .clone()
}

/// The single bigint a `SELECT count(*) ...` returns.
async fn count(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

async fn setup() -> (common::TestServer, Client) {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE users (id integer PRIMARY KEY, email text UNIQUE, name varchar(5) NOT NULL);
             INSERT INTO users VALUES (1, 'a@x', 'ann'), (2, 'b@x', 'bob');",
        )
        .await
        .unwrap();
    (server, client)
}

#[tokio::test]
async fn unique_violation_has_every_field() {
    let (_server, c) = setup().await;
    let e = db_err(&c, "INSERT INTO users VALUES (3, 'a@x', 'cy')").await;
    assert_eq!(e.code(), &SqlState::UNIQUE_VIOLATION);
    assert_eq!(
        e.message(),
        "duplicate key value violates unique constraint \"users_email_key\""
    );
    assert_eq!(e.detail(), Some("Key (email)=(a@x) already exists."));
    assert_eq!(e.schema(), Some("public"));
    assert_eq!(e.table(), Some("users"));
    assert_eq!(e.constraint(), Some("users_email_key"));

    let e = db_err(&c, "INSERT INTO users VALUES (1, 'new@x', 'cy')").await;
    assert_eq!(e.constraint(), Some("users_pkey"));
    assert_eq!(e.detail(), Some("Key (id)=(1) already exists."));

    let e = db_err(&c, "UPDATE users SET email = 'b@x' WHERE id = 1").await;
    assert_eq!(e.constraint(), Some("users_email_key"));
    assert_eq!(e.detail(), Some("Key (email)=(b@x) already exists."));
}

#[tokio::test]
async fn composite_and_named_constraints() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE seats (hall text, row_no integer, seat integer, holder text,
            PRIMARY KEY (hall, row_no, seat), CONSTRAINT one_seat_per_holder UNIQUE (hall, holder));
         INSERT INTO seats VALUES ('A', 1, 1, 'ann');",
    )
    .await
    .unwrap();
    let e = db_err(&c, "INSERT INTO seats VALUES ('A', 1, 1, 'bob')").await;
    assert_eq!(e.constraint(), Some("seats_pkey"));
    assert_eq!(
        e.detail(),
        Some("Key (hall, row_no, seat)=(A, 1, 1) already exists.")
    );
    let e = db_err(&c, "INSERT INTO seats VALUES ('A', 1, 2, 'ann')").await;
    assert_eq!(e.constraint(), Some("one_seat_per_holder"));
    assert_eq!(
        e.detail(),
        Some("Key (hall, holder)=(A, ann) already exists.")
    );
    c.batch_execute("INSERT INTO seats VALUES ('B', 1, 1, 'ann')")
        .await
        .unwrap();
}

#[tokio::test]
async fn unique_index_on_existing_rows() {
    let (_server, c) = setup().await;
    c.batch_execute("INSERT INTO users VALUES (3, 'c@x', 'bob')")
        .await
        .unwrap();
    let e = db_err(&c, "CREATE UNIQUE INDEX users_name_idx ON users (name)").await;
    assert_eq!(e.code(), &SqlState::UNIQUE_VIOLATION);
    assert_eq!(
        e.message(),
        "could not create unique index \"users_name_idx\""
    );
    assert_eq!(e.detail(), Some("Key (name)=(bob) is duplicated."));
    // Nothing half-built: the index does not exist, duplicates still insert.
    c.batch_execute("INSERT INTO users VALUES (4, 'd@x', 'bob')")
        .await
        .unwrap();
    c.batch_execute("DELETE FROM users WHERE name = 'bob' AND id > 2")
        .await
        .unwrap();
    c.batch_execute("CREATE UNIQUE INDEX users_name_idx ON users (name)")
        .await
        .unwrap();
    let e = db_err(&c, "INSERT INTO users VALUES (5, 'e@x', 'ann')").await;
    assert_eq!(e.constraint(), Some("users_name_idx"));
    c.batch_execute("DROP INDEX users_name_idx; INSERT INTO users VALUES (5, 'e@x', 'ann')")
        .await
        .unwrap();
}

#[tokio::test]
async fn errors_carry_postgres_sqlstates() {
    let (_server, c) = setup().await;
    c.batch_execute("CREATE TABLE logs (a integer); INSERT INTO logs VALUES (1)")
        .await
        .unwrap();
    let cases: &[(&str, SqlState)] = &[
        (
            "INSERT INTO users VALUES (9, 'z@x', 'toolong')",
            SqlState::STRING_DATA_RIGHT_TRUNCATION,
        ),
        (
            "INSERT INTO users (id, email) VALUES (9, 'z@x')",
            SqlState::NOT_NULL_VIOLATION,
        ),
        (
            "INSERT INTO users VALUES ('x', 'z@x', 'a')",
            SqlState::INVALID_TEXT_REPRESENTATION,
        ),
        ("SELECT * FROM nope", SqlState::UNDEFINED_TABLE),
        ("SELECT nope FROM users", SqlState::UNDEFINED_COLUMN),
        ("SELEC 1", SqlState::SYNTAX_ERROR),
        (
            "CREATE TABLE users (id integer PRIMARY KEY)",
            SqlState::DUPLICATE_TABLE,
        ),
        // A table without a primary key is keyed by a hidden column of
        // this name.
        (
            "CREATE TABLE nokey (__keyclaim_rowid integer)",
            SqlState::FEATURE_NOT_SUPPORTED,
        ),
        // Such a table's rows are found by that hidden key, which no query
        // can name.
        (
            "DELETE FROM logs WHERE a IN (SELECT a FROM logs)",
            SqlState::FEATURE_NOT_SUPPORTED,
        ),
        (
            "UPDATE logs SET a = 2 FROM users WHERE users.id = logs.a",
            SqlState::FEATURE_NOT_SUPPORTED,
        ),
        // Only the extensions whose functions keyclaim has built in.
        (
            "CREATE EXTENSION IF NOT EXISTS postgis",
            SqlState::FEATURE_NOT_SUPPORTED,
        ),
        (
            "INSERT INTO users SELECT * FROM users",
            SqlState::UNIQUE_VIOLATION,
        ),
    ];
    for (sql, code) in cases {
        let e = db_err(&c, sql).await;
        assert_eq!(e.code(), code, "{sql}: {}", e.message());
    }
    let e = db_err(&c, "CREATE TABLE nokey (__keyclaim_rowid integer)").await;
    assert!(
        e.hint().unwrap_or_default().contains("PRIMARY KEY"),
        "{e:?}"
    );
    let e = db_err(&c, "INSERT INTO users (id, email) VALUES (9, 'z@x')").await;
    assert_eq!(e.column(), Some("name"));
    assert_eq!(e.detail(), Some("Failing row contains (9, z@x, null)."));
    // The connection survives every error.
    let n = count(&c, "SELECT count(*) FROM users").await;
    assert_eq!(n, 2);
}

#[tokio::test]
async fn parameters_are_typed_from_columns_and_results_are_binary() {
    let (_server, c) = setup().await;
    let stmt = c
        .prepare("SELECT id, email, name FROM users WHERE email = $1")
        .await
        .unwrap();
    assert_eq!(stmt.params(), &[Type::TEXT]);
    let types: Vec<&Type> = stmt.columns().iter().map(|c| c.type_()).collect();
    assert_eq!(types, vec![&Type::INT4, &Type::TEXT, &Type::VARCHAR]);
    let row = c.query_one(&stmt, &[&"b@x"]).await.unwrap();
    assert_eq!(row.get::<_, i32>("id"), 2);
    assert_eq!(row.get::<_, &str>("name"), "bob");

    let ins = c
        .prepare("INSERT INTO users VALUES ($1, $2, $3) RETURNING id")
        .await
        .unwrap();
    assert_eq!(ins.params(), &[Type::INT4, Type::TEXT, Type::VARCHAR]);
    let row = c
        .query_one(&ins, &[&7i32 as &(dyn ToSql + Sync), &"g@x", &"gus"])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 7);
    assert_eq!(
        c.execute(
            "UPDATE users SET name = $1 WHERE id = $2",
            &[&"gil" as &(dyn ToSql + Sync), &7i32]
        )
        .await
        .unwrap(),
        1
    );
    assert_eq!(
        c.execute("DELETE FROM users WHERE id > $1", &[&1i32])
            .await
            .unwrap(),
        2
    );
}

/// A binary numeric parameter is conformed into its numeric(p, s) column
/// as a literal is, and compared with the column unrounded.
#[tokio::test]
async fn numeric_parameters_meet_the_column_typmod() {
    use rust_decimal::Decimal;
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE prices (id integer PRIMARY KEY, price numeric(5,2))")
        .await
        .unwrap();
    let d = |s: &str| s.parse::<Decimal>().unwrap();
    let ins = c
        .prepare("INSERT INTO prices VALUES ($1, $2) RETURNING price")
        .await
        .unwrap();
    assert_eq!(ins.params(), &[Type::INT4, Type::NUMERIC]);
    let row = c.query_one(&ins, &[&1i32, &d("1.005")]).await.unwrap();
    assert_eq!(row.get::<_, Decimal>(0).to_string(), "1.01");
    let row = c.query_one(&ins, &[&2i32, &d("7")]).await.unwrap();
    assert_eq!(row.get::<_, Decimal>(0).to_string(), "7.00");
    let e = c.query_one(&ins, &[&3i32, &d("1234.5")]).await.unwrap_err();
    let e = e.as_db_error().unwrap();
    assert_eq!(e.code(), &SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
    assert_eq!(
        e.detail(),
        Some("A field with precision 5, scale 2 must round to an absolute value less than 10^3.")
    );
    let matching = |v: &str| {
        let v = d(v);
        let c = &c;
        async move {
            c.query("SELECT id FROM prices WHERE price = $1", &[&v])
                .await
                .unwrap()
                .len()
        }
    };
    assert_eq!(matching("1.005").await, 0);
    assert_eq!(matching("1.01").await, 1);
}

#[tokio::test]
async fn on_conflict_and_returning() {
    let (_server, c) = setup().await;
    let rows = c
        .query(
            "INSERT INTO users VALUES (1, 'a@x', 'x') ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING id, name",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, &str>(1), "x");
    let n = c
        .execute(
            "INSERT INTO users VALUES (9, 'a@x', 'y') ON CONFLICT DO NOTHING",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(n, 0);
    let e = c
        .execute(
            "INSERT INTO users VALUES (9, 'a@x', 'y') ON CONFLICT (id) DO NOTHING",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.as_db_error().unwrap().constraint(),
        Some("users_email_key")
    );
}

#[tokio::test]
async fn multi_row_insert_is_all_or_nothing() {
    let (_server, c) = setup().await;
    let e = db_err(
        &c,
        "INSERT INTO users VALUES (10, 'j@x', 'j'), (11, 'k@x', 'k'), (12, 'a@x', 'l')",
    )
    .await;
    assert_eq!(e.constraint(), Some("users_email_key"));
    let n = count(&c, "SELECT count(*) FROM users").await;
    assert_eq!(n, 2);
    // The undone rows released their keys.
    c.batch_execute("INSERT INTO users VALUES (13, 'j@x', 'j')")
        .await
        .unwrap();
}

#[tokio::test]
async fn nulls_do_not_conflict_unless_declared() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE n (id integer PRIMARY KEY, a text UNIQUE, b text, UNIQUE NULLS NOT DISTINCT (b));
         INSERT INTO n VALUES (1, NULL, NULL), (2, NULL, 'x');",
    )
    .await
    .unwrap();
    let e = db_err(&c, "INSERT INTO n VALUES (3, NULL, NULL)").await;
    assert_eq!(e.constraint(), Some("n_b_key"));
    assert_eq!(e.detail(), Some("Key (b)=(null) already exists."));
}

#[tokio::test]
async fn primary_key_updates_move_rows_or_refuse_clearly() {
    let (_server, c) = setup().await;
    // users has a UNIQUE column: a move cannot be made safe, so it is refused.
    let e = db_err(&c, "UPDATE users SET id = 10 WHERE id = 1").await;
    assert_eq!(e.code(), &SqlState::FEATURE_NOT_SUPPORTED);
    assert!(e.hint().unwrap_or_default().contains("DELETE"), "{e:?}");
    let n = count(&c, "SELECT count(*) FROM users WHERE id = 1").await;
    assert_eq!(n, 1);
    c.batch_execute("CREATE TABLE plain (id integer PRIMARY KEY, v text); INSERT INTO plain VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    assert_eq!(
        c.execute("UPDATE plain SET id = 3 WHERE id = 1", &[])
            .await
            .unwrap(),
        1
    );
    let e = db_err(&c, "UPDATE plain SET id = 2 WHERE id = 3").await;
    assert_eq!(e.constraint(), Some("plain_pkey"));
    let ids: Vec<i32> = c
        .query("SELECT id FROM plain ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, vec![2, 3]);
}

#[tokio::test]
async fn set_config_goes_through_the_session() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute("SELECT set_config('application_name', 'billing', false)")
        .await
        .unwrap();
    let row = c.query_one("SHOW application_name", &[]).await.unwrap();
    assert_eq!(row.get::<_, &str>(0), "billing");
    // An unknown setting is refused as SET refuses it.
    let e = db_err(&c, "SELECT set_config('no_such_setting', 'x', false)").await;
    assert_eq!(e.code(), &SqlState::UNDEFINED_OBJECT);
}

/// Texts that differ only in their literal values share one plan
/// (`sql::shape`): each still gets its own values' answer, and an error
/// still points into the client's own text.
#[tokio::test]
async fn texts_that_differ_in_their_literals_get_their_own_answers() {
    let (_server, c) = setup().await;
    let name = |rows: Vec<tokio_postgres::SimpleQueryMessage>| -> Vec<String> {
        rows.into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_owned()),
                _ => None,
            })
            .collect()
    };
    for (sql, want) in [
        ("SELECT name FROM users WHERE id = 1", vec!["ann"]),
        ("SELECT name FROM users WHERE id = 2", vec!["bob"]),
        ("SELECT name FROM users WHERE id = 3", vec![]),
        ("SELECT name FROM users WHERE id = '2'", vec!["bob"]),
        ("SELECT name FROM users WHERE id = 2.0", vec!["bob"]),
        ("SELECT name FROM users WHERE id = 1.5", vec![]),
        ("SELECT name FROM users WHERE id = 5000000000", vec![]),
        ("SELECT name FROM users WHERE email = 'b@x'", vec!["bob"]),
        (
            "SELECT name FROM users WHERE id IN (1, 2) ORDER BY id",
            vec!["ann", "bob"],
        ),
        (
            "SELECT name FROM users WHERE id IN (2, 7) ORDER BY id",
            vec!["bob"],
        ),
    ] {
        let rows = c.simple_query(sql).await.unwrap();
        assert_eq!(name(rows), want, "{sql}");
    }
    // The values of a row are its own, and so is its duplicate's detail.
    c.batch_execute("INSERT INTO users VALUES (3, 'c@x', 'cy')")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO users VALUES (4, 'd''x', 'dee')")
        .await
        .unwrap();
    let rows = c
        .simple_query("SELECT email FROM users WHERE id = 4")
        .await
        .unwrap();
    assert_eq!(name(rows), vec!["d'x"]);
    let e = db_err(&c, "INSERT INTO users VALUES (5, 'c@x', 'eve')").await;
    assert_eq!(e.detail(), Some("Key (email)=(c@x) already exists."));
    // A literal its parameter's type does not read: PostgreSQL's error, at
    // the literal in this text.
    let e = db_err(&c, "SELECT name FROM users WHERE id = 'abc'").await;
    assert_eq!(e.code(), &SqlState::INVALID_TEXT_REPRESENTATION);
    assert_eq!(
        e.position(),
        Some(&tokio_postgres::error::ErrorPosition::Original(35))
    );
    let e = db_err(&c, "INSERT INTO users VALUES (6, 'f@x', 'toolong')").await;
    assert_eq!(e.code(), &SqlState::STRING_DATA_RIGHT_TRUNCATION);
}
