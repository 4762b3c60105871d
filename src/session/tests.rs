//! Session statements against expectations taken from PostgreSQL 15.

use std::collections::HashMap;

use futures::StreamExt;

use super::*;
use crate::engine::{Executed, Outcome};
use crate::error::SqlResult;
use crate::txn::Block;
use crate::types::Value;

fn session() -> Session {
    let startup = HashMap::from([("application_name".to_owned(), "psql".to_owned())]);
    Session::new("alice", "db", &startup)
}

/// Plan, admit and run one session statement, as the engine does.
fn run(s: &mut Session, sql: &str) -> SqlResult<Executed> {
    let stmts = crate::sql::parse(sql).expect("parses");
    assert_eq!(stmts.len(), 1, "{sql}");
    let planned = Utility::plan(&stmts[0]).expect("a session statement")?;
    s.admit(planned.admission(), Duration::from_secs(1))?;
    utility::execute(s, &planned)
}

/// The tag and notices of a statement that must succeed.
fn ok(s: &mut Session, sql: &str) -> (String, Vec<(String, String)>) {
    let executed = run(s, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let notices = executed
        .notices
        .iter()
        .map(|n| (n.code.to_owned(), n.message.clone()))
        .collect();
    let tag = match executed.outcome {
        Outcome::Command { tag } | Outcome::TxnStart { tag } | Outcome::TxnEnd { tag } => tag,
        Outcome::Rows { tag, .. } => tag,
        Outcome::Deallocate { .. } => "DEALLOCATE".into(),
    };
    (tag, notices)
}

fn tag(s: &mut Session, sql: &str) -> String {
    let (tag, notices) = ok(s, sql);
    assert!(notices.is_empty(), "{sql}: {notices:?}");
    tag
}

fn err(s: &mut Session, sql: &str) -> (String, String) {
    let e = run(s, sql).expect_err(sql);
    (e.code.to_owned(), e.message)
}

/// SHOW's column labels and rows as text.
fn show(s: &mut Session, sql: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let executed = run(s, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let Outcome::Rows { columns, rows, tag } = executed.outcome else {
        panic!("{sql}: no rows");
    };
    assert_eq!(tag, "SHOW");
    let rows: Vec<Vec<String>> = futures::executor::block_on(rows.collect::<Vec<_>>())
        .into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::Text(t) => t,
                    other => panic!("{other:?}"),
                })
                .collect()
        })
        .collect();
    (columns.iter().map(|c| c.name.clone()).collect(), rows)
}

fn show1(s: &mut Session, name: &str) -> String {
    show(s, &format!("SHOW {name}")).1[0][0].clone()
}

#[test]
fn show_uses_the_settings_own_spelling_as_column() {
    let mut s = session();
    assert_eq!(
        show(&mut s, "SHOW datestyle"),
        (vec!["DateStyle".into()], vec![vec!["ISO, MDY".into()]])
    );
    assert_eq!(show(&mut s, "SHOW server_version").0, ["server_version"]);
    assert_eq!(
        show1(&mut s, "server_version"),
        settings::DEFAULT_SERVER_VERSION
    );
    assert_eq!(
        show(&mut s, "SHOW TRANSACTION ISOLATION LEVEL"),
        (
            vec!["transaction_isolation".into()],
            vec![vec!["read committed".into()]]
        )
    );
    assert_eq!(show(&mut s, "SHOW TIME ZONE").0, ["TimeZone"]);
    assert_eq!(show1(&mut s, "search_path"), "\"$user\", public");
    assert_eq!(show1(&mut s, "application_name"), "psql");
    assert_eq!(show1(&mut s, "session_authorization"), "alice");
    assert_eq!(show1(&mut s, "max_identifier_length"), "63");
    assert_eq!(show1(&mut s, "statement_timeout"), "0");
}

#[test]
fn show_all_has_name_setting_description() {
    let mut s = session();
    ok(&mut s, "SET my.x = 1");
    let (columns, rows) = show(&mut s, "SHOW ALL");
    assert_eq!(columns, ["name", "setting", "description"]);
    assert!(rows
        .iter()
        .any(|r| r[0] == "DateStyle" && r[1] == "ISO, MDY"));
    assert!(rows.iter().any(|r| r[0] == "my.x" && r[1] == "1"));
}

/// `Session::duration_setting` answers an unset timeout without reading
/// its default: that holds only while every timeout's default is 0 (off).
#[test]
fn timeouts_are_off_until_set() {
    let mut s = session();
    for name in [
        "statement_timeout",
        "lock_timeout",
        "idle_in_transaction_session_timeout",
    ] {
        let guc = super::settings::lookup(name).expect("a known setting");
        assert_eq!(
            super::settings::parse_millis(name, guc.default_value()).ok(),
            Some(0)
        );
    }
    tag(&mut s, "BEGIN");
    assert_eq!(s.statement_timeout(), None);
    assert_eq!(s.lock_timeout(), None);
    assert_eq!(s.idle_in_transaction_timeout(), None);
    tag(&mut s, "SET LOCAL lock_timeout = '2s'");
    tag(&mut s, "SET idle_in_transaction_session_timeout = 30");
    assert_eq!(s.lock_timeout(), Some(Duration::from_secs(2)));
    assert_eq!(
        s.idle_in_transaction_timeout(),
        Some(Duration::from_millis(30))
    );
    tag(&mut s, "COMMIT");
    assert_eq!(s.lock_timeout(), None);
}

#[test]
fn set_and_show_round_trip() {
    let mut s = session();
    assert_eq!(tag(&mut s, "SET statement_timeout = '1000ms'"), "SET");
    assert_eq!(show1(&mut s, "statement_timeout"), "1s");
    assert_eq!(s.statement_timeout(), Some(Duration::from_secs(1)));
    tag(&mut s, "SET SESSION STATEMENT_TIMEOUT TO 100");
    assert_eq!(show1(&mut s, "Statement_Timeout"), "100ms");
    tag(&mut s, "SET search_path = a, \"B\", 'c', '$user'");
    assert_eq!(show1(&mut s, "search_path"), "a, \"B\", c, \"$user\"");
    tag(&mut s, "SET search_path TO DEFAULT");
    assert_eq!(show1(&mut s, "search_path"), "\"$user\", public");
    tag(&mut s, "SET application_name = Hello");
    assert_eq!(show1(&mut s, "application_name"), "hello");
    tag(&mut s, "SET TIME ZONE 'utc'");
    assert_eq!(show1(&mut s, "timezone"), "UTC");
    tag(&mut s, "SET TIME ZONE LOCAL");
    assert_eq!(show1(&mut s, "timezone"), "UTC");
    tag(&mut s, "SET NAMES 'utf8'");
    tag(&mut s, "SET datestyle = ISO, DMY");
    assert_eq!(show1(&mut s, "DateStyle"), "ISO, DMY");
}

#[test]
fn unknown_settings_as_postgres() {
    let mut s = session();
    assert_eq!(
        err(&mut s, "SET foo = 1"),
        (
            "42704".into(),
            "unrecognized configuration parameter \"foo\"".into()
        )
    );
    assert_eq!(
        err(&mut s, "SHOW my.x"),
        (
            "42704".into(),
            "unrecognized configuration parameter \"my.x\"".into()
        )
    );
    tag(&mut s, "SET my.x = 1");
    assert_eq!(show1(&mut s, "my.x"), "1");
    assert_eq!(show(&mut s, "SHOW \"My.X\"").0, ["my.x"]);
    tag(&mut s, "RESET ALL");
    assert_eq!(show1(&mut s, "my.x"), "");
    tag(&mut s, "RESET my.never");
    assert_eq!(show1(&mut s, "my.never"), "");
    assert_eq!(err(&mut s, "RESET nonexistent").0, "42704");
    assert_eq!(
        err(&mut s, "SET server_version = '1'"),
        (
            "55P02".into(),
            "parameter \"server_version\" cannot be changed".into()
        )
    );
    assert_eq!(
        err(&mut s, "SET my.x = 1, 2").1,
        "SET my.x takes only one argument"
    );
    // PostgreSQL counts the arguments before it looks the name up.
    assert_eq!(
        err(&mut s, "SET foo = 1, 2").1,
        "SET foo takes only one argument"
    );
}

#[test]
fn reset_returns_to_the_connection_start() {
    let mut s = session();
    tag(&mut s, "SET application_name = 'x'");
    assert_eq!(tag(&mut s, "RESET application_name"), "RESET");
    assert_eq!(show1(&mut s, "application_name"), "psql");
    tag(&mut s, "SET application_name = 'x'");
    assert_eq!(tag(&mut s, "DISCARD ALL"), "DISCARD ALL");
    assert_eq!(show1(&mut s, "application_name"), "psql");
    assert_eq!(tag(&mut s, "DISCARD PLANS"), "DISCARD PLANS");
}

#[test]
fn startup_parameters_and_options() {
    let startup = HashMap::from([
        ("client_encoding".to_owned(), "UTF8".to_owned()),
        ("DateStyle".to_owned(), "ISO, DMY".to_owned()),
        ("TimeZone".to_owned(), "Europe/Berlin".to_owned()),
        ("extra_float_digits".to_owned(), "3".to_owned()),
        (
            "options".to_owned(),
            "-c statement_timeout=5s --search-path=a,b -c application_name=x\\ y".to_owned(),
        ),
    ]);
    let mut s = Session::new("bob", "db", &startup);
    assert_eq!(show1(&mut s, "DateStyle"), "ISO, DMY");
    // A zone keyclaim cannot print in is not taken; ParameterStatus says UTC.
    assert_eq!(show1(&mut s, "TimeZone"), "UTC");
    assert_eq!(show1(&mut s, "extra_float_digits"), "3");
    assert_eq!(show1(&mut s, "statement_timeout"), "5s");
    assert_eq!(show1(&mut s, "search_path"), "a,b");
    assert_eq!(show1(&mut s, "application_name"), "x y");
    tag(&mut s, "SET statement_timeout = 1");
    tag(&mut s, "RESET statement_timeout");
    assert_eq!(show1(&mut s, "statement_timeout"), "5s");
    let reported: HashMap<_, _> = s.reported().into_iter().collect();
    assert_eq!(reported["server_version"], settings::DEFAULT_SERVER_VERSION);
    assert_eq!(reported["DateStyle"], "ISO, DMY");
    assert_eq!(reported["session_authorization"], "bob");
    assert_eq!(reported["integer_datetimes"], "on");
}

#[test]
fn transaction_tags_and_warnings() {
    let mut s = session();
    assert_eq!(
        ok(&mut s, "COMMIT"),
        (
            "COMMIT".into(),
            vec![("25P01".into(), "there is no transaction in progress".into())]
        )
    );
    assert_eq!(ok(&mut s, "ABORT").0, "ROLLBACK");
    assert_eq!(ok(&mut s, "END").0, "COMMIT");
    assert_eq!(
        err(&mut s, "SAVEPOINT a"),
        (
            "25P01".into(),
            "SAVEPOINT can only be used in transaction blocks".into()
        )
    );
    assert_eq!(
        err(&mut s, "RELEASE a").1,
        "RELEASE SAVEPOINT can only be used in transaction blocks"
    );
    assert_eq!(
        err(&mut s, "ROLLBACK TO a").1,
        "ROLLBACK TO SAVEPOINT can only be used in transaction blocks"
    );
    assert_eq!(tag(&mut s, "BEGIN"), "BEGIN");
    assert_eq!(s.txn, Block::InBlock);
    assert_eq!(
        ok(&mut s, "BEGIN"),
        (
            "BEGIN".into(),
            vec![(
                "25001".into(),
                "there is already a transaction in progress".into()
            )]
        )
    );
    assert_eq!(tag(&mut s, "COMMIT"), "COMMIT");
    assert_eq!(s.txn, Block::Idle);
    assert_eq!(tag(&mut s, "START TRANSACTION"), "START TRANSACTION");
    assert_eq!(tag(&mut s, "ROLLBACK"), "ROLLBACK");
    assert_eq!(s.txn, Block::Idle);
}

#[test]
fn failed_block_gate() {
    let mut s = session();
    tag(&mut s, "BEGIN");
    s.note_error();
    s.note_error();
    assert_eq!(s.txn, Block::Failed);
    let aborted = (
        "25P02".to_owned(),
        "current transaction is aborted, commands ignored until end of transaction block"
            .to_owned(),
    );
    assert_eq!(err(&mut s, "SHOW application_name"), aborted);
    assert_eq!(err(&mut s, "BEGIN"), aborted);
    assert_eq!(err(&mut s, "RELEASE foo"), aborted);
    assert_eq!(err(&mut s, "ROLLBACK TO nope").0, "3B001");
    // COMMIT of a failed block rolls back and says so.
    assert_eq!(tag(&mut s, "COMMIT"), "ROLLBACK");
    assert_eq!(s.txn, Block::Idle);
}

#[test]
fn rollback_to_savepoint_recovers_a_failed_block() {
    let mut s = session();
    tag(&mut s, "BEGIN");
    tag(&mut s, "SAVEPOINT \"A\"");
    assert_eq!(
        err(&mut s, "ROLLBACK TO a"),
        ("3B001".into(), "savepoint \"a\" does not exist".into())
    );
    tag(&mut s, "SAVEPOINT b");
    s.note_error();
    assert_eq!(tag(&mut s, "ROLLBACK TO b"), "ROLLBACK");
    assert_eq!(s.txn, Block::InBlock);
    assert_eq!(tag(&mut s, "ROLLBACK TO SAVEPOINT b"), "ROLLBACK");
    assert_eq!(tag(&mut s, "RELEASE b"), "RELEASE");
    assert_eq!(err(&mut s, "RELEASE b").1, "savepoint \"b\" does not exist");
    assert_eq!(tag(&mut s, "RELEASE SAVEPOINT \"A\""), "RELEASE");
    tag(&mut s, "COMMIT");
}

#[test]
fn settings_follow_the_block() {
    let mut s = session();
    tag(&mut s, "BEGIN");
    tag(&mut s, "SET LOCAL statement_timeout = 5");
    assert_eq!(show1(&mut s, "statement_timeout"), "5ms");
    tag(&mut s, "SET application_name = 'inblock'");
    tag(&mut s, "SAVEPOINT s1");
    tag(&mut s, "SET application_name = 'after_s1'");
    tag(&mut s, "ROLLBACK TO s1");
    assert_eq!(show1(&mut s, "application_name"), "inblock");
    tag(&mut s, "COMMIT");
    assert_eq!(show1(&mut s, "application_name"), "inblock");
    assert_eq!(show1(&mut s, "statement_timeout"), "0");
    tag(&mut s, "BEGIN");
    tag(&mut s, "SET application_name = 'doomed'");
    tag(&mut s, "ROLLBACK");
    assert_eq!(show1(&mut s, "application_name"), "inblock");
    assert_eq!(
        ok(&mut s, "SET LOCAL x.y = 1").1,
        vec![(
            "25P01".into(),
            "SET LOCAL can only be used in transaction blocks".into()
        )]
    );
    assert_eq!(show1(&mut s, "x.y"), "");
}

#[test]
fn isolation_levels() {
    let mut s = session();
    tag(&mut s, "BEGIN ISOLATION LEVEL READ UNCOMMITTED, READ ONLY");
    assert_eq!(show1(&mut s, "transaction_isolation"), "read uncommitted");
    assert_eq!(show1(&mut s, "transaction_read_only"), "on");
    tag(&mut s, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
    assert_eq!(show1(&mut s, "transaction_isolation"), "read committed");
    tag(&mut s, "COMMIT AND CHAIN");
    assert_eq!(s.txn, Block::InBlock);
    assert_eq!(show1(&mut s, "transaction_read_only"), "on");
    tag(&mut s, "COMMIT");
    assert_eq!(show1(&mut s, "transaction_read_only"), "off");
    assert_eq!(
        ok(&mut s, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED").1[0].1,
        "SET TRANSACTION can only be used in transaction blocks"
    );
    assert_eq!(err(&mut s, "BEGIN ISOLATION LEVEL SERIALIZABLE").0, "0A000");
    assert_eq!(s.txn, Block::Idle);
    assert_eq!(
        err(
            &mut s,
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ"
        )
        .0,
        "0A000"
    );
    tag(
        &mut s,
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    );
    assert_eq!(show1(&mut s, "transaction_read_only"), "on");
    assert_eq!(
        err(&mut s, "COMMIT AND CHAIN").1,
        "COMMIT AND CHAIN can only be used in transaction blocks"
    );
}

#[test]
fn a_failed_block_ends_in_rollback_without_notices() {
    // The engine undoes a block's writes and DDL; the session only moves
    // its state, and (unlike before transactional DDL) warns of nothing.
    let mut s = session();
    tag(&mut s, "BEGIN");
    tag(&mut s, "SAVEPOINT a");
    s.note_error();
    assert_eq!(s.txn, Block::Failed);
    assert_eq!(ok(&mut s, "ROLLBACK TO a"), ("ROLLBACK".into(), vec![]));
    assert_eq!(s.txn, Block::InBlock);
    s.note_error();
    assert_eq!(ok(&mut s, "COMMIT"), ("ROLLBACK".into(), vec![]));
    assert_eq!(s.txn, Block::Idle);
}

#[test]
fn discard_all_refuses_a_block() {
    let mut s = session();
    tag(&mut s, "BEGIN");
    assert_eq!(
        err(&mut s, "DISCARD ALL"),
        (
            "25001".into(),
            "DISCARD ALL cannot run inside a transaction block".into()
        )
    );
}

#[test]
fn describe_tells_session_statements_apart() {
    let describe_sql = |sql: &str| {
        Utility::plan(&crate::sql::parse(sql).unwrap()[0]).map(|u| u.unwrap().columns())
    };
    assert_eq!(describe_sql("SET x.y = 1"), Some(vec![]));
    assert_eq!(describe_sql("BEGIN"), Some(vec![]));
    assert_eq!(describe_sql("ROLLBACK"), Some(vec![]));
    assert_eq!(describe_sql("DEALLOCATE ALL"), Some(vec![]));
    assert_eq!(
        describe_sql("SHOW datestyle").unwrap()[0],
        crate::engine::Column::computed("DateStyle", crate::types::SqlType::Text)
    );
    assert_eq!(describe_sql("SELECT 1"), None);
}

#[test]
fn notices_follow_client_min_messages() {
    let mut s = session();
    assert!(s.wants_notice("WARNING"));
    assert!(s.wants_notice("NOTICE"));
    tag(&mut s, "SET client_min_messages = warning");
    assert!(!s.wants_notice("NOTICE"));
    assert!(s.wants_notice("WARNING"));
    assert!(s.wants_notice("INFO"));
}

#[test]
fn set_config_checks_like_set_and_takes_one_text() {
    let mut s = session();
    assert_eq!(s.set_config("search_path", "a, b", false).unwrap(), "a, b");
    assert_eq!(
        s.set_config("statement_timeout", "1000", false).unwrap(),
        "1s"
    );
    assert_eq!(
        s.set_config("DateStyle", "German", false).unwrap_err().code,
        "0A000"
    );
    assert_eq!(s.set_config("nope", "1", false).unwrap_err().code, "42704");
    assert_eq!(
        s.set_config("server_version", "1", false).unwrap_err().code,
        "55P02"
    );
    // Local outside a block: in effect for its own statement only.
    assert_eq!(s.set_config("my.x", "1", true).unwrap(), "1");
    assert_eq!(show1(&mut s, "my.x"), "");
    tag(&mut s, "BEGIN");
    assert_eq!(s.set_config("my.x", "2", true).unwrap(), "2");
    tag(&mut s, "COMMIT");
    assert_eq!(show1(&mut s, "my.x"), "");
}
