//! PostgreSQL is the oracle: every script in tests/sql runs through psql
//! against a real PostgreSQL and against keyclaim, and the two transcripts
//! (results, command tags, NOTICEs, and errors with every verbose field:
//! SQLSTATE, message, detail, hint, schema, table, column, constraint) must
//! be identical.
//!
//! The PostgreSQL to compare against comes from `KEYCLAIM_TEST_PG`, e.g.
//! `host=127.0.0.1 port=54329 user=postgres` (.ci/run starts one). Without
//! it the test is skipped locally and fails under CI.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Clone)]
struct Target {
    host: String,
    port: String,
    user: String,
    db: String,
}

fn pg_target() -> Option<Target> {
    let pg = common::test_postgres()?;
    Some(Target {
        host: pg.host,
        port: pg.port,
        user: pg.user,
        db: "postgres".into(),
    })
}

/// Run psql and return its transcript. psql writes errors to stderr: both
/// streams go unbuffered into one pipe so errors stay next to their statements.
fn psql(t: &Target, args: &[&str]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let cmd = format!(
        "stdbuf -o0 -e0 psql -X -v VERBOSITY=verbose -v ON_ERROR_STOP=0 -h {} -p {} -U {} -d {} {} 2>&1",
        t.host,
        t.port,
        t.user,
        t.db,
        quoted.join(" ")
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("PGTZ", "UTC")
        .output()
        .expect("sh runs psql (install postgresql-client)");
    normalize(&String::from_utf8_lossy(&out.stdout))
}

/// Drop what legitimately differs: source locations of errors.
fn normalize(transcript: &str) -> String {
    transcript
        .lines()
        .filter(|l| !l.starts_with("LOCATION:"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/sql exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .filter(|p| chosen(p))
        .collect();
    files.sort();
    files
}

/// `KEYCLAIM_TEST_SCRIPTS=a,b` runs only scripts a.sql and b.sql (all by
/// default), for a quick check against a slow store.
fn chosen(script: &Path) -> bool {
    let Ok(only) = std::env::var("KEYCLAIM_TEST_SCRIPTS") else {
        return true;
    };
    let stem = script.file_stem().unwrap_or_default().to_string_lossy();
    only.split(',').any(|name| name.trim() == stem)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_match_postgres() {
    let Some(pg) = pg_target() else {
        assert!(
            std::env::var("CI").is_err(),
            "KEYCLAIM_TEST_PG must be set under CI: the differential test may not be skipped"
        );
        eprintln!("skipped: set KEYCLAIM_TEST_PG to compare against a real PostgreSQL");
        return;
    };
    let scripts = scripts();
    assert!(!scripts.is_empty(), "no scripts in tests/sql");
    let mut failures = Vec::new();
    for script in scripts {
        let name = script.file_stem().unwrap().to_string_lossy().to_string();
        let path = script.to_string_lossy().to_string();
        let db = format!("keyclaim_diff_{name}");
        let pg_db = Target {
            db: db.clone(),
            ..pg.clone()
        };
        let admin = pg.clone();
        let expected = tokio::task::spawn_blocking({
            let path = path.clone();
            move || {
                psql(&admin, &["-c", &format!("DROP DATABASE IF EXISTS {db}")]);
                psql(&admin, &["-c", &format!("CREATE DATABASE {db}")]);
                let out = psql(&pg_db, &["-f", &path]);
                psql(&admin, &["-c", &format!("DROP DATABASE IF EXISTS {db}")]);
                out
            }
        })
        .await
        .expect("psql task");

        let server = common::start().await;
        let kc = Target {
            host: "127.0.0.1".into(),
            port: server.addr.port().to_string(),
            // The same user as on PostgreSQL, which owns what the catalog
            // shows.
            user: pg.user.clone(),
            db: "keyclaim".into(),
        };
        let actual = tokio::task::spawn_blocking(move || psql(&kc, &["-f", &path]))
            .await
            .expect("psql task");
        if expected != actual {
            failures.push(format!(
                "{name}: {}\n--- postgres\n{expected}\n--- keyclaim\n{actual}",
                common::first_difference(&expected, &actual)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
