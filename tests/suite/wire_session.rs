//! Session statements over the wire, as PostgreSQL 15 answers them: tags,
//! notices, the transaction status byte, ParameterStatus, SET and SHOW.

use crate::common;

use common::raw::Msg;
use tokio_postgres::error::SqlState;
use tokio_postgres::SimpleQueryMessage;

const ABORTED: &str =
    "current transaction is aborted, commands ignored until end of transaction block";

fn pair(code: &str, message: &str) -> (String, String) {
    (code.to_owned(), message.to_owned())
}

#[tokio::test]
async fn startup_reports_the_parameters_clients_check() {
    let server = common::start().await;
    let (_raw, startup) = server.raw().await;
    let params = startup.parameters();
    let expected = [
        ("server_version", "15.18"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("TimeZone", "UTC"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("IntervalStyle", "postgres"),
        ("is_superuser", "on"),
        ("session_authorization", common::USER),
        ("application_name", "raw"),
    ];
    for (name, value) in expected {
        assert_eq!(params.get(name).map(String::as_str), Some(value), "{name}");
    }
    assert_eq!(startup.status(), 'I');
    assert!(
        startup.messages.contains(&Msg::Other('K')),
        "BackendKeyData"
    );
}

#[tokio::test]
async fn set_and_show_round_trip() {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute("SET statement_timeout = '1000ms'")
        .await
        .unwrap();
    let messages = client.simple_query("SHOW statement_timeout").await.unwrap();
    let SimpleQueryMessage::Row(row) = &messages[1] else {
        panic!("{messages:?}")
    };
    assert_eq!(row.columns()[0].name(), "statement_timeout");
    assert_eq!(row.get(0), Some("1s"));

    let row = client.query_one("SHOW server_version", &[]).await.unwrap();
    assert_eq!(row.columns()[0].name(), "server_version");
    assert_eq!(row.get::<_, String>(0), "15.18");

    let row = client.query_one("SHOW datestyle", &[]).await.unwrap();
    assert_eq!(row.columns()[0].name(), "DateStyle");
    assert_eq!(row.get::<_, String>(0), "ISO, MDY");

    client.batch_execute("SET my.x = 'a b'").await.unwrap();
    let row = client.query_one("SHOW my.x", &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "a b");
}

#[tokio::test]
async fn unknown_settings_answer_42704() {
    let server = common::start().await;
    let client = server.connect().await;
    for sql in ["SHOW nope", "SET nope = 1", "SHOW my.never_set"] {
        let e = client.batch_execute(sql).await.unwrap_err();
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code(), &SqlState::UNDEFINED_OBJECT, "{sql}");
        let name = sql.split_whitespace().nth(1).unwrap();
        assert_eq!(
            db.message(),
            format!("unrecognized configuration parameter \"{name}\""),
            "{sql}"
        );
    }
    let e = client
        .batch_execute("SET server_version = '9'")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code(), &SqlState::CANT_CHANGE_RUNTIME_PARAM);
    assert_eq!(
        db.message(),
        "parameter \"server_version\" cannot be changed"
    );
}

#[tokio::test]
async fn transaction_tags_and_status() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    let steps: &[(&str, &str, char)] = &[
        ("BEGIN", "BEGIN", 'T'),
        ("SAVEPOINT a", "SAVEPOINT", 'T'),
        ("RELEASE SAVEPOINT a", "RELEASE", 'T'),
        ("SAVEPOINT b", "SAVEPOINT", 'T'),
        ("ROLLBACK TO SAVEPOINT b", "ROLLBACK", 'T'),
        ("RELEASE b", "RELEASE", 'T'),
        ("COMMIT", "COMMIT", 'I'),
        (
            "START TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "START TRANSACTION",
            'T',
        ),
        ("ROLLBACK", "ROLLBACK", 'I'),
        ("BEGIN", "BEGIN", 'T'),
        ("END", "COMMIT", 'I'),
        ("BEGIN", "BEGIN", 'T'),
        ("ABORT", "ROLLBACK", 'I'),
        ("SET application_name = 'x'", "SET", 'I'),
        ("RESET application_name", "RESET", 'I'),
        ("RESET ALL", "RESET", 'I'),
        ("DISCARD ALL", "DISCARD ALL", 'I'),
        ("SHOW server_version", "SHOW", 'I'),
    ];
    for (sql, tag, status) in steps {
        let reply = c.query(sql).await;
        assert_eq!(reply.tags(), [*tag], "{sql}");
        assert_eq!(reply.status(), *status, "{sql}");
        assert!(reply.notices().is_empty(), "{sql}: {:?}", reply.notices());
    }
}

#[tokio::test]
async fn misplaced_transaction_statements_warn_or_fail() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    let reply = c.query("COMMIT").await;
    assert_eq!(reply.tags(), ["COMMIT"]);
    assert_eq!(
        reply.notices(),
        [pair("25P01", "there is no transaction in progress")]
    );
    let reply = c.query("ROLLBACK").await;
    assert_eq!(reply.tags(), ["ROLLBACK"]);
    assert_eq!(
        reply.notices(),
        [pair("25P01", "there is no transaction in progress")]
    );
    let reply = c.query("SAVEPOINT a").await;
    assert_eq!(
        reply.errors(),
        [pair(
            "25P01",
            "SAVEPOINT can only be used in transaction blocks"
        )]
    );
    assert_eq!(reply.status(), 'I');
    c.query("BEGIN").await;
    let reply = c.query("BEGIN").await;
    assert_eq!(reply.tags(), ["BEGIN"]);
    assert_eq!(
        reply.notices(),
        [pair("25001", "there is already a transaction in progress")]
    );
    assert_eq!(reply.status(), 'T');
    let reply = c.query("DISCARD ALL").await;
    assert_eq!(
        reply.errors(),
        [pair(
            "25001",
            "DISCARD ALL cannot run inside a transaction block"
        )]
    );
    assert_eq!(reply.status(), 'E');
}

#[tokio::test]
async fn an_error_fails_the_block_until_rollback() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("BEGIN").await;
    let reply = c.query("SHOW nope").await;
    assert_eq!(reply.errors()[0].0, "42704");
    assert_eq!(reply.status(), 'E');
    for sql in ["SHOW server_version", "SET application_name = 'x'", "BEGIN"] {
        let reply = c.query(sql).await;
        assert_eq!(reply.errors(), [pair("25P02", ABORTED)], "{sql}");
        assert_eq!(reply.status(), 'E', "{sql}");
    }
    let reply = c.query("ROLLBACK").await;
    assert_eq!(reply.tags(), ["ROLLBACK"]);
    assert_eq!(reply.status(), 'I');
    assert_eq!(c.query("SHOW server_version").await.value(), "15.18");

    // COMMIT of a failed block rolls back, and the tag says so.
    c.query("BEGIN").await;
    c.query("SHOW nope").await;
    let reply = c.query("COMMIT").await;
    assert_eq!(reply.tags(), ["ROLLBACK"]);
    assert_eq!(reply.status(), 'I');

    // A syntax error fails the block as well.
    c.query("BEGIN").await;
    assert_eq!(c.query("SELEC 1").await.status(), 'E');
    c.query("ROLLBACK").await;
}

#[tokio::test]
async fn rollback_to_savepoint_recovers_a_failed_block() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("BEGIN; SAVEPOINT s; SET application_name = 'inner'")
        .await;
    assert_eq!(c.query("SHOW nope").await.status(), 'E');
    let reply = c.query("ROLLBACK TO s").await;
    assert_eq!(reply.tags(), ["ROLLBACK"]);
    assert_eq!(reply.status(), 'T');
    // The SET after the savepoint was undone and reported as such.
    assert_eq!(
        reply
            .parameters()
            .get("application_name")
            .map(String::as_str),
        Some("raw")
    );
    assert_eq!(c.query("SHOW application_name").await.value(), "raw");
    assert_eq!(c.query("COMMIT").await.status(), 'I');
}

#[tokio::test]
async fn set_of_a_reported_setting_sends_parameter_status() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    let reply = c.query("SET application_name = 'renamed'").await;
    assert_eq!(
        reply
            .parameters()
            .get("application_name")
            .map(String::as_str),
        Some("renamed")
    );
    let reply = c.query("SET statement_timeout = 5").await;
    assert!(reply.parameters().is_empty(), "{reply:?}");
    let reply = c.query("BEGIN; SET DateStyle = 'ISO, DMY'; ROLLBACK").await;
    // Set, then set back by the rollback: the client heard the final value.
    assert_eq!(
        reply.parameters().get("DateStyle").map(String::as_str),
        Some("ISO, MDY")
    );
}

#[tokio::test]
async fn a_query_string_stops_at_its_first_error() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    let reply = c
        .query("SET application_name = 'a'; SHOW nope; SET application_name = 'b'")
        .await;
    assert_eq!(reply.tags(), ["SET"]);
    assert_eq!(reply.errors().len(), 1);
    assert_eq!(c.query("SHOW application_name").await.value(), "a");
    // A syntax error anywhere runs nothing.
    let reply = c.query("SET application_name = 'c'; SELEC 1").await;
    assert!(reply.tags().is_empty());
    assert_eq!(reply.errors()[0].0, "42601");
    assert_eq!(c.query("SHOW application_name").await.value(), "a");
    // Empty queries answer EmptyQueryResponse.
    for empty in ["", " ; ;", "-- nothing"] {
        let reply = c.query(empty).await;
        assert!(
            reply.messages.contains(&Msg::EmptyQuery),
            "{empty:?}: {reply:?}"
        );
        assert_eq!(reply.status(), 'I');
    }
}

#[tokio::test]
async fn rollback_undoes_rows_and_ddl_without_a_warning() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("CREATE TABLE kept (id integer PRIMARY KEY)").await;
    c.query("BEGIN").await;
    assert!(c
        .query("INSERT INTO kept VALUES (1)")
        .await
        .errors()
        .is_empty());
    let reply = c.query("ROLLBACK").await;
    assert_eq!(reply.tags(), ["ROLLBACK"]);
    assert!(reply.notices().is_empty(), "{:?}", reply.notices());
    assert!(c.query("SELECT id FROM kept").await.rows().is_empty());
    // DDL is transactional: it goes too, and nothing needs saying.
    c.query("BEGIN; CREATE TABLE made (id integer PRIMARY KEY)")
        .await;
    let reply = c.query("ROLLBACK").await;
    assert!(reply.notices().is_empty(), "{:?}", reply.notices());
    assert_eq!(
        c.query("SELECT id FROM made").await.errors(),
        [pair("42P01", "relation \"made\" does not exist")]
    );
    // client_min_messages = error hides warnings, as in PostgreSQL.
    let reply = c.query("ROLLBACK").await;
    assert_eq!(
        reply.notices(),
        [pair("25P01", "there is no transaction in progress")]
    );
    let reply = c.query("SET client_min_messages = error; ROLLBACK").await;
    assert!(reply.notices().is_empty());
}

#[tokio::test]
async fn tokio_postgres_transactions() {
    let server = common::start().await;
    let mut client = server.connect().await;
    let tx = client.transaction().await.unwrap();
    tx.batch_execute("SET LOCAL statement_timeout = '5s'")
        .await
        .unwrap();
    let row = tx.query_one("SHOW statement_timeout", &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "5s");
    tx.commit().await.unwrap();
    let row = client
        .query_one("SHOW statement_timeout", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "0");

    let tx = client.transaction().await.unwrap();
    tx.batch_execute("SET application_name = 'doomed'")
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let row = client
        .query_one("SHOW application_name", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "");

    // A nested transaction is a savepoint.
    let mut tx = client.transaction().await.unwrap();
    let inner = tx.transaction().await.unwrap();
    inner
        .batch_execute("SET application_name = 'inner'")
        .await
        .unwrap();
    inner.rollback().await.unwrap();
    tx.commit().await.unwrap();
    let row = client
        .query_one("SHOW application_name", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "");
}

#[tokio::test]
async fn isolation_levels_keyclaim_cannot_give_are_refused() {
    let server = common::start().await;
    let mut client = server.connect().await;
    let Err(e) = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::Serializable)
        .start()
        .await
    else {
        panic!("SERIALIZABLE was accepted");
    };
    assert_eq!(e.code(), Some(&SqlState::FEATURE_NOT_SUPPORTED));
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::ReadCommitted)
        .read_only(true)
        .start()
        .await
        .unwrap();
    let row = tx
        .query_one("SHOW transaction_read_only", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "on");
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn deallocate_as_postgresql_answers_it() {
    let server = common::start().await;
    let client = server.connect().await;
    // psycopg sends DEALLOCATE ALL after a ROLLBACK once it prepares statements.
    client.batch_execute("BEGIN").await.unwrap();
    let rollback = client.prepare("ROLLBACK").await.unwrap();
    client.execute(&rollback, &[]).await.unwrap();
    let messages = client.simple_query("DEALLOCATE ALL").await.unwrap();
    let SimpleQueryMessage::CommandComplete(_) = &messages[0] else {
        panic!("{messages:?}")
    };

    // A named statement, deallocated: binding it afterwards fails.
    let (mut raw, _) = server.raw().await;
    raw.send(b'P', b"one\0SELECT 1\0\0\0").await;
    raw.send(b'S', b"").await;
    assert!(raw.read_until_ready().await.errors().is_empty());
    assert_eq!(
        raw.query("DEALLOCATE PREPARE one").await.tags(),
        vec!["DEALLOCATE"]
    );
    raw.send(b'B', b"\0one\0\0\0\0\0\0\0").await;
    raw.send(b'S', b"").await;
    let errors = raw.read_until_ready().await.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "26000");

    let e = client.batch_execute("DEALLOCATE nope").await.unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(
        (db.code().code(), db.message()),
        ("26000", "prepared statement \"nope\" does not exist")
    );
}

#[tokio::test]
async fn lock_timeout_set_in_the_session_bounds_a_wait() {
    use keyclaim::store::ClaimRecord;
    use keyclaim::types::{encode_key, Value};
    // The lease (1 s) is longer than the session's lock_timeout: a
    // statement that waits for an unfinished claim must give up first.
    let server = common::start_with(|c| c.claims.lease_ms = 1000).await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE lt (id integer PRIMARY KEY, k text UNIQUE)")
        .await
        .unwrap();
    let rec = server.store.read_catalog("lt").await.unwrap().unwrap();
    let def: keyclaim::catalog::TableDef = serde_json::from_str(&rec.definition).unwrap();
    let unfinished = ClaimRecord {
        owner: encode_key(&[&Value::Int4(9)]),
        txn: uuid::Uuid::now_v7(),
    };
    let key = encode_key(&[&Value::Text("x".into())]);
    server
        .store
        .insert_claim(&def.uniques[0].id, &key, unfinished)
        .await
        .unwrap();
    client
        .batch_execute("SET lock_timeout = '150ms'")
        .await
        .unwrap();
    let e = client
        .batch_execute("INSERT INTO lt VALUES (1, 'x')")
        .await
        .unwrap_err();
    assert_eq!(e.as_db_error().unwrap().code().code(), "55P03");
    // RESET brings back the configured wait, which outlasts the lease: the
    // claim is then taken over and the insert succeeds.
    client.batch_execute("RESET lock_timeout").await.unwrap();
    client
        .batch_execute("INSERT INTO lt VALUES (1, 'x')")
        .await
        .unwrap();
}
