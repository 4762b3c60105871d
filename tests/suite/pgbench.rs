//! PostgreSQL's own pgbench, unmodified, through keyclaim: `pgbench -i`
//! (DROP TABLE, CREATE TABLE without primary keys and WITH (fillfactor),
//! TRUNCATE and COPY ... WITH (FREEZE ON) in one block, VACUUM ANALYZE,
//! ALTER TABLE ADD PRIMARY KEY), then its default TPC-B-like run over the
//! simple protocol (after its VACUUMs and TRUNCATE of the history) and
//! over prepared statements, with concurrent clients. Afterwards the
//! balance invariant holds: every transaction moved one delta through an
//! account, a teller and a branch and wrote it to the history, so the four
//! sums agree, and the history has one row per transaction processed.
//!
//! pgbench comes with PostgreSQL (`.ci/run` installs it); without it the
//! test says so and passes only when no test PostgreSQL is configured
//! either (`KEYCLAIM_TEST_PG`). `KEYCLAIM_PGBENCH_TX` sets the transactions
//! per client (default 150).

use crate::common;

use std::path::PathBuf;
use std::process::Output;

use tokio_postgres::Client;

/// pgbench on PATH, else the newest PostgreSQL's under /usr/lib/postgresql.
fn pgbench() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("pgbench"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| Some(e.ok()?.path().join("bin/pgbench")))
            .filter(|p| p.is_file())
            .collect();
        found.sort_by_key(|p| {
            let version = p.parent()?.parent()?.file_name()?.to_str()?.parse::<u32>();
            version.ok()
        });
        found.pop()
    })
}

/// pgbench with `args` against the proxy on `port`; panics unless it
/// succeeds, with what it printed.
async fn run(pgbench: &PathBuf, port: u16, args: &[&str]) -> String {
    let mut cmd = std::process::Command::new(pgbench);
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-U",
        common::USER,
    ])
    .args(args)
    .arg("keyclaim");
    let out: Output = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("pgbench's task")
        .expect("pgbench starts");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pgbench {args:?} failed:\n{printed}");
    printed
}

/// The number after `label` in pgbench's report.
fn reported(printed: &str, label: &str) -> String {
    printed
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{printed}"))
        .trim()
        .to_owned()
}

async fn one_i64(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_initializes_and_runs_tpcb_unchanged() {
    let Some(pgbench) = pgbench() else {
        assert!(
            common::test_postgres().is_none(),
            "KEYCLAIM_TEST_PG is set but pgbench is missing (it comes with PostgreSQL's server package)"
        );
        eprintln!("skipped: no pgbench (install PostgreSQL)");
        return;
    };
    let server = common::start().await;
    let port = server.addr.port();
    let tx = common::env_or("KEYCLAIM_PGBENCH_TX", 150);

    let init = run(&pgbench, port, &["-i", "-s", "1"]).await;
    assert!(init.contains("creating primary keys"), "{init}");
    let c = server.connect().await;
    for (table, rows) in [
        ("pgbench_accounts", 100_000),
        ("pgbench_tellers", 10),
        ("pgbench_branches", 1),
        ("pgbench_history", 0),
    ] {
        let n = one_i64(&c, &format!("SELECT count(*) FROM {table}")).await;
        assert_eq!(n, rows, "{table}");
    }
    // The keys pgbench added after loading are primary keys, and hold.
    let keys = common::column::<String>(
        &c,
        "SELECT conname::text FROM pg_constraint WHERE contype = 'p' \
         AND conrelid::regclass::text LIKE 'pgbench_%' ORDER BY 1",
    )
    .await;
    assert_eq!(
        keys,
        [
            "pgbench_accounts_pkey",
            "pgbench_branches_pkey",
            "pgbench_tellers_pkey"
        ]
    );
    let dup = c
        .execute("INSERT INTO pgbench_accounts VALUES (7, 1, 0, '')", &[])
        .await
        .expect_err("aid 7 is taken");
    assert_eq!(
        dup.as_db_error().unwrap().constraint(),
        Some("pgbench_accounts_pkey")
    );

    // The default TPC-B-like script: simple protocol, then prepared
    // statements (-n: no VACUUM, and the first run's history stays).
    // Failures that PostgreSQL also has clients retry (40001, 40P01)
    // are retried, as --max-tries lets pgbench do.
    let per_client = tx.to_string();
    let mut processed = 0i64;
    for args in [
        vec!["-c", "4", "-j", "2", "-t", &per_client, "--max-tries=10"],
        vec![
            "-n",
            "-M",
            "prepared",
            "-c",
            "2",
            "-t",
            &per_client,
            "--max-tries=10",
        ],
    ] {
        let printed = run(&pgbench, port, &args).await;
        let clients: i64 = args[args.iter().position(|a| *a == "-c").unwrap() + 1]
            .parse()
            .unwrap();
        let want = clients * tx as i64;
        assert_eq!(
            reported(&printed, "number of transactions actually processed:"),
            format!("{want}/{want}"),
            "{printed}"
        );
        assert!(
            reported(&printed, "number of failed transactions:").starts_with("0 "),
            "{printed}"
        );
        processed += want;
    }

    let sums = [
        "SELECT sum(abalance)::bigint FROM pgbench_accounts",
        "SELECT sum(tbalance)::bigint FROM pgbench_tellers",
        "SELECT sum(bbalance)::bigint FROM pgbench_branches",
        "SELECT sum(delta)::bigint FROM pgbench_history",
    ];
    let mut seen = Vec::new();
    for sql in sums {
        seen.push(one_i64(&c, sql).await);
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "sums differ: {seen:?}"
    );
    assert_eq!(
        one_i64(&c, "SELECT count(*) FROM pgbench_history").await,
        processed
    );
    // Something moved: a run of hundreds of random deltas summing to
    // zero in every table would mean nothing was written.
    assert!(
        one_i64(
            &c,
            "SELECT count(*) FROM pgbench_accounts WHERE abalance <> 0"
        )
        .await
            > 0
    );
    drop(c);
    server.shutdown().await;
}
