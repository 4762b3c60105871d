//! COPY ... FROM STDIN at the protocol level: records split across
//! CopyData messages, CopyFail, and a connection lost in the middle, each
//! leaving all of the rows or none. (tests/sql/copy.sql compares the
//! formats, options and errors with PostgreSQL through psql.)

use crate::common;

use std::time::Duration;

use common::raw::{Msg, RawClient};
use tokio::net::TcpStream;

async fn start_copy(c: &mut RawClient<TcpStream>, sql: &str) {
    let mut body = sql.as_bytes().to_vec();
    body.push(0);
    c.send(b'Q', &body).await;
    // CopyInResponse.
    match c.read_message().await {
        Some(Msg::Other('G')) => {}
        other => panic!("{sql}: CopyInResponse expected, got {other:?}"),
    }
}

async fn count(c: &mut RawClient<TcpStream>) -> String {
    c.query("SELECT count(*) FROM t").await.value()
}

#[tokio::test]
async fn records_split_across_messages_are_written_in_one_transaction() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("CREATE TABLE t (id int PRIMARY KEY, name text UNIQUE)")
        .await;
    start_copy(&mut c, "COPY t FROM STDIN WITH (FORMAT csv)").await;
    for chunk in ["1,one\n2,\"tw", "o, and\nmore\"\n3,thr", "ee\n"] {
        c.send(b'd', chunk.as_bytes()).await;
    }
    c.send(b'c', &[]).await;
    let done = c.read_until_ready().await;
    assert_eq!(done.tags(), vec!["COPY 3"], "{done:?}");
    assert_eq!(done.status(), 'I');
    let rows = c.query("SELECT name FROM t WHERE id = 2").await;
    assert_eq!(rows.value(), "two, and\nmore");

    // A duplicate in the middle: nothing of that COPY stays, and the
    // error names the line.
    start_copy(&mut c, "COPY t FROM STDIN").await;
    c.send(b'd', b"4\tfour\n5\tone\n6\tsix\n").await;
    c.send(b'c', &[]).await;
    let failed = c.read_until_ready().await;
    assert_eq!(
        failed.error_field('C').as_deref(),
        Some("23505"),
        "{failed:?}"
    );
    assert_eq!(failed.error_field('W').as_deref(), Some("COPY t, line 2"));
    assert_eq!(failed.status(), 'I');
    assert_eq!(count(&mut c).await, "3");
    server.shutdown().await;
}

#[tokio::test]
async fn copy_fail_and_a_lost_connection_leave_nothing() {
    let server = common::start().await;
    let (mut c, _) = server.raw().await;
    c.query("CREATE TABLE t (id int PRIMARY KEY, name text)")
        .await;

    start_copy(&mut c, "COPY t FROM STDIN").await;
    c.send(b'd', b"1\ta\n2\tb\n").await;
    c.send(b'f', b"client gave up\0").await;
    let failed = c.read_until_ready().await;
    assert_eq!(
        failed.errors(),
        vec![(
            "57014".to_string(),
            "COPY from stdin failed: client gave up".to_string()
        )]
    );
    assert_eq!(failed.status(), 'I');
    assert_eq!(count(&mut c).await, "0");

    // Inside a block, the COPY's rows are the block's: a failed COPY fails
    // the block, and ROLLBACK takes the rows before it too.
    c.query("BEGIN").await;
    c.query("INSERT INTO t VALUES (10, 'x')").await;
    start_copy(&mut c, "COPY t FROM STDIN").await;
    c.send(b'd', b"11\ty\n12\tnot\tvalid\n").await;
    c.send(b'c', &[]).await;
    let failed = c.read_until_ready().await;
    assert_eq!(
        failed.error_field('C').as_deref(),
        Some("22P04"),
        "{failed:?}"
    );
    assert_eq!(failed.status(), 'E');
    c.query("ROLLBACK").await;
    assert_eq!(count(&mut c).await, "0");

    // The connection goes mid-COPY: its block rolls back with it.
    let (mut lost, _) = server.raw().await;
    start_copy(&mut lost, "COPY t FROM STDIN").await;
    lost.send(b'd', b"20\tgone\n21\tgone too\n").await;
    drop(lost);
    let mut seen = String::new();
    for _ in 0..50 {
        seen = count(&mut c).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen, "0");
    // Their keys are free again.
    start_copy(&mut c, "COPY t FROM STDIN").await;
    c.send(b'd', b"20\tback\n").await;
    c.send(b'c', &[]).await;
    assert_eq!(c.read_until_ready().await.tags(), vec!["COPY 1"]);
    server.shutdown().await;
}
