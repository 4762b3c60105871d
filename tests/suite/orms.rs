//! Real ORMs, unchanged, against keyclaim and against PostgreSQL: each
//! application in tests/orm (SQLAlchemy 2 on psycopg2 and on psycopg 3,
//! Django 5.2 on both, Alembic migrations on both, asyncpg, knex on
//! node-postgres) runs once against a fresh PostgreSQL database and once
//! against a fresh keyclaim, and prints a transcript of what it observed
//! (rows, counts, SQLSTATEs, constraint names); the two transcripts must
//! be identical.
//!
//! The PostgreSQL comes from `KEYCLAIM_TEST_PG` (as for tests/suite/differential.rs),
//! the Python interpreter from `KEYCLAIM_TEST_PYTHON`, one with
//! tests/orm/requirements.txt installed, and the node packages of
//! tests/orm/package.json from `KEYCLAIM_TEST_NODE_MODULES` (a
//! node_modules directory; .ci/run makes both). Without them the tests are
//! skipped locally and fail under CI.
//!
//! Steps keyclaim does not pass yet are named in each script's
//! KNOWN_FAILURES and skipped on both sides; `ORM_KNOWN_FAILURES=1`
//! runs them (the test then shows where keyclaim differs), `ORM_ECHO=1`
//! makes the scripts log the SQL they send (on the failure output).

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio_postgres::NoTls;

use common::TestPostgres as Postgres;

/// How a script runs: its interpreter and the environment it needs.
struct Interpreter {
    program: String,
    env: Vec<(&'static str, String)>,
}

/// The interpreter of `script_name` (Python for `.py`, node for `.js`),
/// from the environment variable that names it, or its name.
fn interpreter(script_name: &str) -> Result<Interpreter, &'static str> {
    if script_name.ends_with(".js") {
        let modules = std::env::var("KEYCLAIM_TEST_NODE_MODULES").map_err(|_| {
            "KEYCLAIM_TEST_NODE_MODULES (node_modules with tests/orm/package.json installed)"
        })?;
        Ok(Interpreter {
            program: "node".into(),
            env: vec![("NODE_PATH", modules)],
        })
    } else {
        let python = std::env::var("KEYCLAIM_TEST_PYTHON")
            .map_err(|_| "KEYCLAIM_TEST_PYTHON (a Python with tests/orm/requirements.txt)")?;
        Ok(Interpreter {
            program: python,
            env: Vec::new(),
        })
    }
}

/// The PostgreSQL and the interpreter to run `script_name` with, or None
/// when the test is skipped (never under CI).
fn setup(script_name: &str) -> Option<(Postgres, Interpreter)> {
    let missing = match (common::test_postgres(), interpreter(script_name)) {
        (Some(pg), Ok(interpreter)) => return Some((pg, interpreter)),
        (None, _) => "KEYCLAIM_TEST_PG (a PostgreSQL)",
        (_, Err(missing)) => missing,
    };
    assert!(
        std::env::var("CI").is_err(),
        "{missing} must be set under CI: the ORM tests may not be skipped"
    );
    eprintln!("skipped: set {missing} to run {script_name}");
    None
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/orm")
        .join(name)
}

/// What one run printed.
struct Run {
    stdout: String,
    stderr: String,
}

/// Runs `interpreter script dsn args...` and returns its output; panics if it
/// does not finish in time or exits with an error.
async fn run_script(
    interpreter: &Interpreter,
    script_name: &str,
    dsn: &str,
    args: &[&str],
    side: &str,
) -> Run {
    let mut cmd = tokio::process::Command::new(&interpreter.program);
    cmd.envs(interpreter.env.iter().map(|(k, v)| (k, v)))
        .arg(script(script_name))
        .arg(dsn)
        .args(args)
        // Never leave __pycache__ in the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("PGTZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{script_name} {args:?} against {side} took over 120 s"))
        .unwrap_or_else(|e| panic!("running {}: {e}", interpreter.program));
    let run = Run {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        output.status.success(),
        "{script_name} {args:?} against {side} exited with {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        run.stdout,
        run.stderr
    );
    run
}

/// Runs `script_name` with `args` against a fresh PostgreSQL database and
/// a fresh keyclaim, and asserts that the transcripts are identical.
async fn compare(script_name: &str, args: &[&str], db: &str) {
    let Some((pg, interpreter)) = setup(script_name) else {
        return;
    };

    // A fresh database on PostgreSQL.
    let admin_dsn = format!(
        "host={} port={} user={} dbname=postgres",
        pg.host, pg.port, pg.user
    );
    let (admin, conn) = tokio_postgres::connect(&admin_dsn, NoTls)
        .await
        .expect("the test PostgreSQL (KEYCLAIM_TEST_PG) accepts a connection");
    tokio::spawn(conn);
    let db = format!("keyclaim_orm_{db}");
    for sql in [
        format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        format!("CREATE DATABASE {db}"),
    ] {
        admin
            .batch_execute(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql} on the test PostgreSQL: {e}"));
    }
    let pg_dsn = format!("postgresql://{}@{}:{}/{db}", pg.user, pg.host, pg.port);
    let expected = run_script(&interpreter, script_name, &pg_dsn, args, "PostgreSQL").await;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .await
        .expect("dropping the test database");

    // A fresh keyclaim, logged in as the same user (who owns what the
    // catalog shows).
    let server = common::start().await;
    let kc_dsn = format!(
        "postgresql://{}@127.0.0.1:{}/keyclaim",
        pg.user,
        server.addr.port()
    );
    let actual = run_script(&interpreter, script_name, &kc_dsn, args, "keyclaim").await;
    server.shutdown().await;

    assert!(
        expected.stdout.lines().count() >= 10,
        "{script_name} {args:?} printed too little against PostgreSQL:\n{}\n--- stderr\n{}",
        expected.stdout,
        expected.stderr
    );
    assert!(
        expected.stdout == actual.stdout,
        "{script_name} {args:?}: keyclaim's transcript differs from PostgreSQL's at {}\n\
         --- postgres\n{}\n--- keyclaim\n{}\n--- keyclaim stderr\n{}",
        common::first_difference(&expected.stdout, &actual.stdout),
        expected.stdout,
        actual.stdout,
        actual.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_on_psycopg2() {
    compare("sqlalchemy_app.py", &["psycopg2"], "sqlalchemy_psycopg2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_on_psycopg3() {
    compare("sqlalchemy_app.py", &["psycopg"], "sqlalchemy_psycopg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_on_psycopg3() {
    compare("django_app.py", &["psycopg"], "django_psycopg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_on_psycopg2() {
    compare("django_app.py", &["psycopg2"], "django_psycopg2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alembic_on_psycopg2() {
    compare("alembic_app.py", &["psycopg2"], "alembic_psycopg2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alembic_on_psycopg3() {
    compare("alembic_app.py", &["psycopg"], "alembic_psycopg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asyncpg() {
    compare("asyncpg_app.py", &[], "asyncpg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knex() {
    compare("knex_app.js", &[], "knex").await;
}
