//! The Prometheus endpoint reports statements by kind and outcome, LWTs per
//! statement and the claim protocol's events.

#[path = "suite/common/mod.rs"]
#[allow(dead_code)] // this binary uses only a part of it
mod common;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).await.unwrap();
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_lwts_and_conflicts_are_exported() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    keyclaim::metrics::serve(addr).unwrap();
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE m (id integer PRIMARY KEY, e text UNIQUE); INSERT INTO m VALUES (1, 'a')",
    )
    .await
    .unwrap();
    assert!(c
        .batch_execute("INSERT INTO m VALUES (2, 'a')")
        .await
        .is_err());
    // A scan reads its pages while its rows stream to the client, after the
    // statement's execution returned: those reads count too.
    let rows = c
        .query("SELECT * FROM m WHERE e <> 'zzz'", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    // Refused while planned: counted all the same.
    assert!(c.batch_execute("SELECT * FROM nowhere").await.is_err());
    // Point selects sent as text, their key a literal: the first plans
    // its shape (the text with the key as a parameter), the second finds
    // that plan.
    for id in [1, 3] {
        c.batch_execute(&format!("SELECT e FROM m WHERE id = {id}"))
            .await
            .unwrap();
    }
    let text = scrape(addr).await;
    for line in [
        r#"keyclaim_statements_total{kind="select",outcome="ok"} 3"#,
        r#"keyclaim_statements_total{kind="select",outcome="42P01"} 1"#,
        r#"keyclaim_statement_reads_sum{kind="select"} 3"#,
        // Four selects: the scan (1 read), the refused one (none) and the
        // two point selects (1 read each).
        r#"keyclaim_statement_reads_count{kind="select"} 4"#,
        r#"keyclaim_plans_total{found="shape"} 1"#,
        r#"keyclaim_statements_total{kind="insert",outcome="ok"} 1"#,
        r#"keyclaim_statements_total{kind="insert",outcome="23505"} 1"#,
        r#"keyclaim_claim_events_total{event="conflict"} 1"#,
        // The successful insert: a claim and a row, 2 LWTs; the duplicate:
        // one failed claim. Together 3 over 2 statements.
        r#"keyclaim_statement_lwts_sum{kind="insert"} 3"#,
        r#"keyclaim_statement_lwts_count{kind="insert"} 2"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
}
