//! The protocol itself: extended query (named and unnamed statements,
//! portals fetched in pieces, text and binary formats), cancel requests,
//! statement_timeout, and errors with their fields.

use crate::common;

use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::NoTls;

#[tokio::test]
async fn prepared_show_describes_and_runs() {
    let server = common::start().await;
    let client = server.connect().await;
    let show = client.prepare("SHOW server_version").await.unwrap();
    assert!(show.params().is_empty());
    assert_eq!(show.columns().len(), 1);
    assert_eq!(show.columns()[0].name(), "server_version");
    assert_eq!(show.columns()[0].type_(), &Type::TEXT);
    // Run it more than once; tokio-postgres asks for binary results.
    for _ in 0..3 {
        let row = client.query_one(&show, &[]).await.unwrap();
        assert_eq!(row.get::<_, &str>(0), "15.18");
    }
    // Statements that return nothing describe as NoData.
    let set = client.prepare("SET application_name = 'p'").await.unwrap();
    assert!(set.columns().is_empty());
    assert_eq!(client.execute(&set, &[]).await.unwrap(), 0);
}

/// PostgreSQL describes a statement without result rows as its parameters,
/// then NoData: pgJDBC counts `executeBatch` rows as 0 on anything else.
#[tokio::test]
async fn a_statement_without_rows_describes_as_nodata() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("CREATE TABLE d (id integer PRIMARY KEY, v text)")
        .await;
    for sql in [
        "INSERT INTO d VALUES ($1, $2)",
        "UPDATE d SET v = $1 WHERE id = $2",
        "DELETE FROM d WHERE id = $1",
        "SET application_name = 'x'",
    ] {
        let reply = c.describe(sql).await;
        let shapes: Vec<String> = reply
            .messages
            .iter()
            .map(|m| match m {
                common::raw::Msg::ParameterTypes(t) => format!("params {}", t.len()),
                common::raw::Msg::Columns(_) => "RowDescription".into(),
                common::raw::Msg::Other(k) => format!("{k}"),
                other => format!("{other:?}"),
            })
            .collect();
        let params = sql.matches('$').count();
        assert_eq!(
            shapes[..shapes.len() - 1],
            ["1".to_owned(), format!("params {params}"), "n".to_owned()],
            "{sql}"
        );
    }
    let reply = c
        .describe("INSERT INTO d VALUES ($1, 'x') RETURNING v")
        .await;
    assert!(
        reply
            .messages
            .iter()
            .any(|m| matches!(m, common::raw::Msg::Columns(c) if c.len() == 1)),
        "{:?}",
        reply.messages
    );
}

#[tokio::test]
async fn portals_fetch_in_pieces() {
    let server = common::start().await;
    let mut client = server.connect().await;
    let all = client.query("SHOW ALL", &[]).await.unwrap();
    assert!(all.len() > 20, "{}", all.len());
    let tx = client.transaction().await.unwrap();
    let show = tx.prepare("SHOW ALL").await.unwrap();
    let portal = tx.bind(&show, &[]).await.unwrap();
    let mut fetched = Vec::new();
    loop {
        let piece = tx.query_portal(&portal, 7).await.unwrap();
        if piece.is_empty() {
            break;
        }
        assert!(piece.len() <= 7);
        fetched.extend(piece.iter().map(|r| r.get::<_, String>("name")));
    }
    tx.commit().await.unwrap();
    let expected: Vec<String> = all.iter().map(|r| r.get("name")).collect();
    assert_eq!(fetched, expected);
}

#[tokio::test]
async fn statement_timeout_counts_each_execute_on_its_own() {
    let server = common::start().await;
    let mut client = server.connect().await;
    let tx = client.transaction().await.unwrap();
    tx.batch_execute("SET LOCAL statement_timeout = 200")
        .await
        .unwrap();
    let portal = tx.bind("SHOW ALL", &[]).await.unwrap();
    tx.query_portal(&portal, 5).await.unwrap();
    // Longer than the timeout between fetches, as a slow consumer would be.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rest = tx.query_portal(&portal, 0).await.unwrap();
    assert!(!rest.is_empty());
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn text_parameters_and_results_in_the_extended_protocol() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("CREATE TABLE kv (k integer PRIMARY KEY, v text)")
        .await;
    let reply = c
        .extended(
            "INSERT INTO kv VALUES ($1, $2)",
            &[Some("7"), Some("seven")],
        )
        .await;
    assert_eq!(reply.tags(), ["INSERT 0 1"], "{reply:?}");
    // Its portal, described, has no rows: ParseComplete, BindComplete,
    // NoData, then the command's tag, as PostgreSQL answers.
    let kinds: Vec<char> = reply
        .messages
        .iter()
        .map(|m| match m {
            common::raw::Msg::Other(kind) => *kind,
            common::raw::Msg::Tag(_) => 'C',
            common::raw::Msg::Ready(_) => 'Z',
            _ => '?',
        })
        .collect();
    assert_eq!(kinds, ['1', '2', 'n', 'C', 'Z'], "{reply:?}");
    let reply = c
        .extended("INSERT INTO kv VALUES ($1, $2)", &[Some("8"), None])
        .await;
    assert_eq!(reply.tags(), ["INSERT 0 1"], "{reply:?}");
    let reply = c
        .extended("SELECT k, v FROM kv WHERE k >= $1", &[Some("7")])
        .await;
    assert_eq!(
        reply.columns(),
        [
            ("k".to_owned(), Type::INT4.oid()),
            ("v".to_owned(), Type::TEXT.oid())
        ]
    );
    let mut rows = reply.rows();
    rows.sort();
    assert_eq!(
        rows,
        [
            vec![Some("7".to_owned()), Some("seven".to_owned())],
            vec![Some("8".to_owned()), None]
        ]
    );
    assert_eq!(reply.tags(), ["SELECT 2"]);

    // A bad text parameter fails as the type's input function would.
    let reply = c
        .extended("SELECT v FROM kv WHERE k = $1", &[Some("x")])
        .await;
    assert_eq!(
        reply.errors(),
        [(
            "22P02".to_owned(),
            "invalid input syntax for type integer: \"x\"".to_owned()
        )]
    );
    assert_eq!(reply.status(), 'I');
    // A wrong parameter count is a protocol violation.
    let reply = c.extended("SELECT v FROM kv WHERE k = $1", &[]).await;
    assert_eq!(
        reply.errors(),
        [(
            "08P01".to_owned(),
            "bind message supplies 0 parameters, but prepared statement \"\" requires 1".to_owned()
        )]
    );
}

#[tokio::test]
async fn parameter_types_come_from_the_engine_or_the_client() {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE typed (id bigint PRIMARY KEY, name varchar(10))")
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO typed VALUES ($1, $2)")
        .await
        .unwrap();
    assert_eq!(insert.params(), [Type::INT8, Type::VARCHAR]);
    client.execute(&insert, &[&1i64, &"one"]).await.unwrap();
    let select = client
        .prepare_typed("SELECT name FROM typed WHERE id = $1", &[Type::INT8])
        .await
        .unwrap();
    assert_eq!(select.params(), [Type::INT8]);
    assert_eq!(select.columns()[0].type_(), &Type::VARCHAR);
    let row = client.query_one(&select, &[&1i64]).await.unwrap();
    assert_eq!(row.get::<_, &str>(0), "one");
}

#[tokio::test]
async fn errors_carry_their_fields_and_keep_the_connection() {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE u (id integer PRIMARY KEY, email text UNIQUE)")
        .await
        .unwrap();
    client
        .execute("INSERT INTO u VALUES ($1, $2)", &[&1i32, &"a@x"])
        .await
        .unwrap();
    let e = client
        .execute("INSERT INTO u VALUES ($1, $2)", &[&2i32, &"a@x"])
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.severity(), "ERROR");
    assert_eq!(db.code(), &SqlState::UNIQUE_VIOLATION);
    assert_eq!(
        db.message(),
        "duplicate key value violates unique constraint \"u_email_key\""
    );
    assert_eq!(db.detail(), Some("Key (email)=(a@x) already exists."));
    assert_eq!(db.schema(), Some("public"));
    assert_eq!(db.table(), Some("u"));
    assert_eq!(db.constraint(), Some("u_email_key"));

    let e = client.prepare("SELEC 1").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR));
    let e = client.prepare("SHOW a; SHOW b").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR));
    assert_eq!(
        e.as_db_error().unwrap().message(),
        "cannot insert multiple commands into a prepared statement"
    );
    let row = client.query_one("SHOW server_version", &[]).await.unwrap();
    assert_eq!(row.get::<_, &str>(0), "15.18");
}

#[tokio::test]
async fn statement_timeout_cancels_with_57014() {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute("SET statement_timeout = '100ms'")
        .await
        .unwrap();
    let started = Instant::now();
    let e = client
        .batch_execute("SELECT pg_sleep(5)")
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code(), &SqlState::QUERY_CANCELED);
    assert_eq!(db.message(), "canceling statement due to statement timeout");
    // The same through the extended protocol, then back to normal.
    let e = client.query("SELECT pg_sleep(5)", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED));
    client
        .batch_execute("SET statement_timeout = 0")
        .await
        .unwrap();
    client.batch_execute("SELECT pg_sleep(0.2)").await.unwrap();
}

#[tokio::test]
async fn a_cancel_request_ends_the_running_statement() {
    let server = common::start().await;
    let client = server.connect().await;
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let started = Instant::now();
    let e = client
        .batch_execute("SELECT pg_sleep(5)")
        .await
        .unwrap_err();
    canceller.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code(), &SqlState::QUERY_CANCELED);
    assert_eq!(db.message(), "canceling statement due to user request");
    // A cancel between statements cancels nothing.
    client.cancel_token().cancel_query(NoTls).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let row = client.query_one("SHOW server_version", &[]).await.unwrap();
    assert_eq!(row.get::<_, &str>(0), "15.18");
}

#[tokio::test]
async fn a_timeout_inside_a_block_fails_the_block() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    let reply = c
        .query("BEGIN; SET LOCAL statement_timeout = 50; SELECT pg_sleep(2)")
        .await;
    assert_eq!(
        reply.errors(),
        [(
            "57014".to_owned(),
            "canceling statement due to statement timeout".to_owned()
        )]
    );
    assert_eq!(reply.status(), 'E');
    assert_eq!(c.query("ROLLBACK").await.status(), 'I');
}

/// As PostgreSQL: the replies to Parse, Bind, Describe and Execute wait for
/// the Sync or Flush that ends the batch, so a client reading after Sync
/// is woken once (one write for the whole batch, not one per message).
#[tokio::test]
async fn replies_wait_for_sync_or_flush() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    let quiet = Duration::from_millis(300);
    let mut parse = Vec::new();
    parse.extend_from_slice(b"\0SELECT 1\0\0\0");
    c.send(b'P', &parse).await;
    c.send(b'B', b"\0\0\0\0\0\0\0\0").await;
    c.send(b'E', b"\0\0\0\0\0").await;
    assert!(
        tokio::time::timeout(quiet, c.read_message()).await.is_err(),
        "a reply before Sync or Flush"
    );
    c.send(b'S', &[]).await;
    let reply = c.read_until_ready().await;
    assert_eq!(reply.rows(), vec![vec![Some("1".to_string())]]);
    assert_eq!(reply.tags(), vec!["SELECT 1"]);

    // Flush asks for what is pending without ending the batch.
    c.send(b'P', &parse).await;
    assert!(tokio::time::timeout(quiet, c.read_message()).await.is_err());
    c.send(b'H', &[]).await;
    let parsed = tokio::time::timeout(Duration::from_secs(5), c.read_message())
        .await
        .expect("ParseComplete after Flush");
    assert!(matches!(parsed, Some(common::raw::Msg::Other('1'))));
    c.send(b'S', &[]).await;
    assert_eq!(c.read_until_ready().await.status(), 'I');

    // An error inside the batch also waits for the Sync.
    let mut bad = Vec::new();
    bad.extend_from_slice(b"\0SELECT nope_nope\0\0\0");
    c.send(b'P', &bad).await;
    assert!(tokio::time::timeout(quiet, c.read_message()).await.is_err());
    c.send(b'S', &[]).await;
    let reply = c.read_until_ready().await;
    assert_eq!(reply.errors().len(), 1, "{reply:?}");
}

/// A statement text sent again reuses its plan (simple Query and unnamed
/// Parse alike), but never a plan the catalog has moved past: DDL in this
/// session, a table dropped and made again with other types, and another
/// block's uncommitted DDL are each seen as PostgreSQL shows them.
#[tokio::test]
async fn a_text_sent_again_never_runs_a_plan_the_catalog_moved_past() {
    let server = common::start().await;
    let (mut a, _) = server.raw().await;
    let (mut b, _) = server.raw().await;
    a.query("CREATE TABLE pc (id integer PRIMARY KEY)").await;
    a.query("INSERT INTO pc VALUES (1)").await;
    let names = |r: &common::raw::Reply| -> Vec<String> {
        r.columns().into_iter().map(|(n, _)| n).collect()
    };
    for _ in 0..2 {
        assert_eq!(names(&a.query("SELECT * FROM pc").await), ["id"]);
        assert_eq!(names(&a.extended("SELECT * FROM pc", &[]).await), ["id"]);
    }
    a.query("ALTER TABLE pc ADD COLUMN v text DEFAULT 'x'")
        .await;
    let simple = a.query("SELECT * FROM pc").await;
    assert_eq!(names(&simple), ["id", "v"]);
    assert_eq!(
        simple.rows(),
        vec![vec![Some("1".into()), Some("x".into())]]
    );
    assert_eq!(
        names(&b.extended("SELECT * FROM pc", &[]).await),
        ["id", "v"]
    );

    // Made again with another key type: the kept plan's types are wrong.
    a.query("DROP TABLE pc").await;
    a.query("CREATE TABLE pc (id text PRIMARY KEY)").await;
    a.query("INSERT INTO pc VALUES ('k')").await;
    let again = b.query("SELECT * FROM pc").await;
    assert_eq!(again.columns(), vec![("id".to_string(), 25)]);
    assert_eq!(again.rows(), vec![vec![Some("k".into())]]);

    // A block's own DDL is its own: the plan it makes is not another's.
    a.query("BEGIN").await;
    a.query("ALTER TABLE pc ADD COLUMN w integer").await;
    assert_eq!(names(&a.query("SELECT * FROM pc").await), ["id", "w"]);
    assert_eq!(names(&b.query("SELECT * FROM pc").await), ["id"]);
    a.query("ROLLBACK").await;
    assert_eq!(names(&a.query("SELECT * FROM pc").await), ["id"]);
}
