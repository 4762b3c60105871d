//! Bad input on the wire: malformed but well-framed messages get an error
//! with a SQLSTATE and the connection stays usable; abusive sizes and
//! disconnects leave the server serving everyone else.

use crate::common;

use proptest::prelude::*;
use tokio::io::AsyncWriteExt;

/// After whatever came before, the connection still answers a query.
async fn still_serves(raw: &mut common::raw::RawClient<tokio::net::TcpStream>) {
    let reply = raw.query("SELECT 41 + 1").await;
    assert_eq!(reply.rows(), vec![vec![Some("42".to_owned())]], "{reply:?}");
}

/// Invalid UTF-8 in a query, a statement name or a text parameter is
/// refused as PostgreSQL 15 refuses it (messages checked against it with the
/// same bytes): 22021 naming the bad sequence, the connection still serving.
#[tokio::test]
async fn invalid_utf8_is_refused_with_22021() {
    let server = common::start().await;
    let (mut raw, _) = server.raw().await;
    let refused = |reply: &common::raw::Reply, shown: &str| {
        assert_eq!(
            reply.errors(),
            vec![(
                "22021".to_owned(),
                format!("invalid byte sequence for encoding \"UTF8\": {shown}")
            )],
            "{reply:?}"
        );
    };
    // Simple query.
    raw.send(b'Q', b"SELECT '\xe2\x82'\0").await;
    let reply = raw.read_until_ready().await;
    refused(&reply, "0xe2 0x82 0x27");
    assert_eq!(reply.status(), 'I');
    still_serves(&mut raw).await;
    // U+FFFD itself is valid text, and is not mistaken for a bad byte.
    let reply = raw.query("SELECT '\u{fffd}'").await;
    assert_eq!(reply.rows(), vec![vec![Some("\u{fffd}".to_owned())]]);
    // In a block: the block fails, as any error does.
    raw.query("BEGIN").await;
    raw.send(b'Q', b"SELECT '\xff'\0").await;
    let reply = raw.read_until_ready().await;
    refused(&reply, "0xff");
    assert_eq!(reply.status(), 'E');
    let reply = raw.query("SELECT 1").await;
    assert_eq!(reply.errors()[0].0, "25P02", "{reply:?}");
    raw.query("ROLLBACK").await;
    // Parse: in the query, and in the statement name.
    raw.send(b'P', b"s1\0SELECT '\xc3\x28'\0\0\0").await;
    raw.send(b'S', b"").await;
    refused(&raw.read_until_ready().await, "0xc3 0x28");
    raw.send(b'P', b"s\xff\0SELECT 1\0\0\0").await;
    raw.send(b'S', b"").await;
    refused(&raw.read_until_ready().await, "0xff");
    still_serves(&mut raw).await;
    // A text parameter.
    raw.send(b'P', b"\0SELECT $1::text\0\0\0").await;
    raw.send(b'B', b"\0\0\0\0\0\x01\0\0\0\x02a\xff\0\0").await;
    raw.send(b'E', b"\0\0\0\0\0").await;
    raw.send(b'S', b"").await;
    refused(&raw.read_until_ready().await, "0xff");
    still_serves(&mut raw).await;
}

#[tokio::test]
async fn extended_protocol_misuse_answers_errors_and_recovers_at_sync() {
    let server = common::start().await;
    let (mut raw, _) = server.raw().await;
    // Execute of a portal that does not exist, then Sync.
    raw.send(b'E', b"nope\0\0\0\0\0").await;
    raw.send(b'S', b"").await;
    let reply = raw.read_until_ready().await;
    assert_eq!(reply.errors()[0].0, "34000", "{reply:?}");
    still_serves(&mut raw).await;
    // Bind to a statement that does not exist.
    raw.send(b'B', b"\0nope\0\0\0\0\0\0\0").await;
    raw.send(b'S', b"").await;
    let reply = raw.read_until_ready().await;
    assert_eq!(reply.errors()[0].0, "26000", "{reply:?}");
    still_serves(&mut raw).await;
    // Too few parameters for the statement.
    let reply = raw
        .extended("SELECT $1::integer + $2::integer", &[Some("1")])
        .await;
    assert_eq!(reply.errors()[0].0, "08P01", "{reply:?}");
    still_serves(&mut raw).await;
    // A parameter that is not valid for its type.
    let reply = raw.extended("SELECT $1::integer", &[Some("one")]).await;
    assert_eq!(reply.errors()[0].0, "22P02", "{reply:?}");
    still_serves(&mut raw).await;
}

#[tokio::test]
async fn a_huge_in_list_and_a_large_scan_are_answered() {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE big (id integer PRIMARY KEY, v text)")
        .await
        .unwrap();
    let values: Vec<String> = (0..5000).map(|i| format!("({i}, 'v{i}')")).collect();
    for chunk in values.chunks(500) {
        client
            .batch_execute(&format!("INSERT INTO big VALUES {}", chunk.join(", ")))
            .await
            .unwrap();
    }
    let list: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    let n: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM big WHERE id IN ({})", list.join(", ")),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 5000);
    // A full scan streams page by page; all rows arrive.
    let rows = client.query("SELECT id, v FROM big", &[]).await.unwrap();
    assert_eq!(rows.len(), 5000);
}

#[tokio::test]
async fn a_client_that_disconnects_mid_statement_harms_no_one() {
    let server = common::start().await;
    let (mut raw, _) = server.raw().await;
    raw.send(b'Q', b"SELECT pg_sleep(5)\0").await;
    drop(raw);
    let client = server.connect().await;
    let row = client.query_one("SELECT 1", &[]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 1);
}

#[tokio::test]
async fn an_oversized_message_closes_only_that_connection() {
    let server = common::start().await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    // A startup packet announcing a gigabyte.
    stream
        .write_all(&[0x40, 0, 0, 0, 0, 3, 0, 0])
        .await
        .unwrap();
    let _ = stream.write_all(&[0; 1024]).await;
    drop(stream);
    let client = server.connect().await;
    assert_eq!(
        client
            .query_one("SELECT 1", &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        1
    );
}

/// Random SQL, built from SQL's own vocabulary so that it gets past the
/// tokenizer often, plus arbitrary text: every statement is answered (rows
/// or an error with a SQLSTATE that is not an internal error), and the
/// connection keeps serving.
fn sql_strategy() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "SELECT",
        "INSERT",
        "INTO",
        "VALUES",
        "UPDATE",
        "SET",
        "DELETE",
        "FROM",
        "WHERE",
        "t",
        "id",
        "a",
        "b",
        "(",
        ")",
        ",",
        "=",
        "<",
        ">",
        "<>",
        "AND",
        "OR",
        "NOT",
        "NULL",
        "'x'",
        "'2024-01-01'",
        "1",
        "-1",
        "1.5",
        "99999999999",
        "*",
        "ON",
        "CONFLICT",
        "DO",
        "NOTHING",
        "RETURNING",
        "ORDER",
        "BY",
        "DESC",
        "LIMIT",
        "OFFSET",
        "CREATE",
        "TABLE",
        "UNIQUE",
        "PRIMARY",
        "KEY",
        "INDEX",
        "DROP",
        "integer",
        "text",
        "::",
        "||",
        "+",
        "-",
        "/",
        "%",
        "IN",
        "LIKE",
        "IS",
        "BETWEEN",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "count(*)",
        "now()",
        "EXCLUDED.a",
        "true",
        "varchar(2)",
        "uuid",
        "date",
        "numeric",
        "bytea",
        "jsonb",
    ]);
    let soup = prop::collection::vec(word, 1..24).prop_map(|w| w.join(" "));
    let statement = (expr_strategy(), expr_strategy(), literal_strategy(), literal_strategy()).prop_flat_map(
        |(e1, e2, l1, l2)| {
            prop::sample::select(vec![
                format!("SELECT {e1} FROM t WHERE {e2}"),
                format!("SELECT {e1}, count(*) FROM t"),
                format!("SELECT * FROM t WHERE {e1} ORDER BY {e2} LIMIT {l1}"),
                format!("INSERT INTO t VALUES ({l1}, {l2}, {e1})"),
                format!("INSERT INTO t VALUES ({l1}, {l2}, 1) ON CONFLICT (a) DO UPDATE SET b = {e1} RETURNING {e2}"),
                format!("UPDATE t SET a = {e1} WHERE {e2}"),
                format!("UPDATE t SET id = {l1}, b = {e1} WHERE id = {l2}"),
                format!("DELETE FROM t WHERE {e1} RETURNING *"),
                format!("SELECT {e1}"),
                format!("CREATE TABLE u{l1} (id {l2} PRIMARY KEY, x integer UNIQUE DEFAULT {e1})"),
            ])
        },
    );
    prop_oneof![
        6 => statement,
        3 => soup,
        1 => "\\PC{0,40}",
    ]
}

fn literal_strategy() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "1",
        "0",
        "-1",
        "2147483648",
        "1.5",
        "'x'",
        "'1'",
        "NULL",
        "true",
        "'2024-02-30'",
        "'\\x00'",
        "'{\"a\": 1}'",
        "1e400",
        "''",
        "integer",
        "text",
        "$1",
    ])
    .prop_map(str::to_owned)
}

fn expr_strategy() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["id", "a", "b", "t.a", "nope", "EXCLUDED.b"])
            .prop_map(str::to_owned),
        literal_strategy(),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        let op = prop::sample::select(vec![
            "=", "<>", "<", "+", "-", "*", "/", "%", "||", "AND", "OR", "LIKE",
        ]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(l, o, r)| format!("({l} {o} {r})")),
            inner.clone().prop_map(|e| format!("NOT {e}")),
            inner.clone().prop_map(|e| format!("{e} IS NULL")),
            (inner.clone(), inner.clone()).prop_map(|(e, l)| format!("{e} IN ({l}, 1)")),
            inner.clone().prop_map(|e| format!("{e}::integer")),
            inner.clone().prop_map(|e| format!("lower({e})")),
            (inner.clone(), inner.clone())
                .prop_map(|(c, e)| format!("CASE WHEN {c} THEN {e} ELSE NULL END")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("KEYCLAIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_sql_is_always_answered_with_a_proper_sqlstate(batch in prop::collection::vec(sql_strategy(), 1..8)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let server = common::start().await;
            let (mut raw, _) = server.raw().await;
            let setup = raw.query("CREATE TABLE t (id integer PRIMARY KEY, a text UNIQUE, b integer)").await;
            assert!(setup.errors().is_empty());
            for sql in &batch {
                let mut body = sql.as_bytes().to_vec();
                body.retain(|&b| b != 0);
                body.push(0);
                raw.send(b'Q', &body).await;
                let reply = tokio::time::timeout(std::time::Duration::from_secs(10), raw.read_until_ready())
                    .await
                    .unwrap_or_else(|_| panic!("no answer to {sql:?}"));
                for (code, message) in reply.errors() {
                    assert_eq!(code.len(), 5, "{sql:?}: {code} {message}");
                    assert_ne!(code, "XX000", "{sql:?}: internal error {message}");
                }
            }
            still_serves(&mut raw).await;
        });
    }
}
