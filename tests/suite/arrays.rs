//! Arrays as drivers use them: asyncpg's and sqlx's IN list is
//! `WHERE id = ANY($1)` with an int4[] / int8[] / text[] parameter sent in
//! binary; others send the parameter as text, with the array type declared
//! in Parse or left to the server. Results come back as arrays in either
//! format. And `key = ANY($1)` reads the listed keys, never the table.
//! What PostgreSQL answers to the same SQL is in tests/sql/arrays.sql.

use crate::common;

use std::sync::atomic::Ordering;

use bytes::{BufMut, BytesMut};
use common::raw::{RawClient, Reply};
use common::Counter;
use futures::StreamExt;
use keyclaim::engine::Outcome;
use keyclaim::types::{Array, SqlType, Value};
use tokio::net::TcpStream;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Client;

async fn setup() -> (common::TestServer, Client) {
    let server = common::start().await;
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE users (id integer PRIMARY KEY, big bigint UNIQUE, email text UNIQUE, name text);
             INSERT INTO users VALUES (1, 10, 'a@x', 'ann'), (2, 20, 'b@x', 'bob'),
                                      (3, 30, 'c@x', 'cy'), (4, 40, NULL, 'dee');",
        )
        .await
        .unwrap();
    (server, client)
}

async fn ids(client: &Client, sql: &str, param: &(dyn ToSql + Sync)) -> Vec<i32> {
    client
        .query(sql, &[param])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn any_binds_binary_array_parameters() {
    let (_server, c) = setup().await;
    // The parameter is described as an array of the column's type, so
    // the client encodes the Vec as that array.
    let by_id = c
        .prepare("SELECT id FROM users WHERE id = ANY($1) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(by_id.params(), &[Type::INT4_ARRAY]);
    let rows = c.query(&by_id, &[&vec![3i32, 1, 99, 3]]).await.unwrap();
    let got: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(got, [1, 3]);
    assert!(c
        .query(&by_id, &[&Vec::<i32>::new()])
        .await
        .unwrap()
        .is_empty());
    let with_null: Vec<Option<i32>> = vec![Some(2), None];
    assert_eq!(c.query(&by_id, &[&with_null]).await.unwrap().len(), 1);

    let by_big = c
        .prepare("SELECT id FROM users WHERE big = ANY($1) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(by_big.params(), &[Type::INT8_ARRAY]);
    let got: Vec<i32> = c
        .query(&by_big, &[&vec![40i64, 20, 7]])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(got, [2, 4]);

    let by_email = c
        .prepare("SELECT id FROM users WHERE email = ANY($1) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(by_email.params(), &[Type::TEXT_ARRAY]);
    let emails = vec!["c@x".to_string(), "a@x".to_string(), "z@x".to_string()];
    let got: Vec<i32> = c
        .query(&by_email, &[&emails])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(got, [1, 3]);

    // <> ALL, a non-key column, and writes.
    let sql = "SELECT id FROM users WHERE id <> ALL($1) ORDER BY id";
    assert_eq!(ids(&c, sql, &vec![1i32, 4]).await, [2, 3]);
    let sql = "SELECT id FROM users WHERE name = ANY($1) ORDER BY id";
    assert_eq!(ids(&c, sql, &vec!["bob", "dee"]).await, [2, 4]);
    let n = c
        .execute(
            "UPDATE users SET name = upper(name) WHERE id = ANY($1)",
            &[&vec![1i32, 2]],
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    // An explicit cast, as Django writes `%s::integer[]`.
    let sql = "SELECT id FROM users WHERE id = ANY($1::integer[]) ORDER BY id";
    assert_eq!(ids(&c, sql, &vec![4i32, 2]).await, [2, 4]);

    // The query engine (a join) binds the array too.
    let joined = c
        .prepare(
            "SELECT a.id FROM users a JOIN users b ON b.id = a.id WHERE a.id = ANY($1) ORDER BY 1",
        )
        .await
        .unwrap();
    assert_eq!(joined.params(), &[Type::INT4_ARRAY]);
    let got: Vec<i32> = c
        .query(&joined, &[&vec![2i32, 3]])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(got, [2, 3]);

    // Django's bulk_create on psycopg 3: one array parameter per column,
    // unnested by the query engine into the rows to insert.
    let bulk = c
        .prepare(
            "INSERT INTO users (id, name) SELECT * FROM UNNEST($1::integer[], $2::text[]) RETURNING id",
        )
        .await
        .unwrap();
    assert_eq!(bulk.params(), &[Type::INT4_ARRAY, Type::TEXT_ARRAY]);
    let inserted = c
        .query(&bulk, &[&vec![7i32, 8], &vec!["gus", "hal"]])
        .await
        .unwrap();
    assert_eq!(inserted.len(), 2);
    let sql = "SELECT id FROM users WHERE name = ANY($1) ORDER BY id";
    assert_eq!(ids(&c, sql, &vec!["gus", "hal"]).await, [7, 8]);
}

#[tokio::test]
async fn array_results_in_binary_and_text() {
    let (_server, c) = setup().await;
    // tokio-postgres asks for binary results.
    let row = c
        .query_one(
            "SELECT ARRAY[1, NULL, 3], '{a,\"b c\"}'::text[], ARRAY[]::bigint[], '{1.50}'::numeric[]",
            &[],
        )
        .await
        .unwrap();
    let types: Vec<&Type> = row.columns().iter().map(|c| c.type_()).collect();
    assert_eq!(
        types,
        [
            &Type::INT4_ARRAY,
            &Type::TEXT_ARRAY,
            &Type::INT8_ARRAY,
            &Type::NUMERIC_ARRAY
        ]
    );
    assert_eq!(row.get::<_, Vec<Option<i32>>>(0), [Some(1), None, Some(3)]);
    assert_eq!(row.get::<_, Vec<String>>(1), ["a", "b c"]);
    assert!(row.get::<_, Vec<i64>>(2).is_empty());
    // The simple protocol: text.
    let text = c
        .simple_query("SELECT ARRAY[1, NULL, 3], '{a,\"b c\"}'::text[]")
        .await
        .unwrap();
    let tokio_postgres::SimpleQueryMessage::Row(r) = &text[1] else {
        panic!("{text:?}")
    };
    assert_eq!(r.get(0), Some("{1,NULL,3}"));
    assert_eq!(r.get(1), Some("{a,\"b c\"}"));

    // An array column, written with an array parameter and read back.
    c.batch_execute("CREATE TABLE posts (id integer PRIMARY KEY, tags text[])")
        .await
        .unwrap();
    c.execute(
        "INSERT INTO posts VALUES ($1, $2)",
        &[&1i32, &vec!["x", "y z"]],
    )
    .await
    .unwrap();
    let tags: Vec<String> = c
        .query_one("SELECT tags FROM posts WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(tags, ["x", "y z"]);
    // From the query engine: array_agg is an int4[].
    let row = c
        .query_one("SELECT array_agg(id ORDER BY id) FROM users", &[])
        .await
        .unwrap();
    assert_eq!(row.columns()[0].type_(), &Type::INT4_ARRAY);
    assert_eq!(row.get::<_, Vec<i32>>(0), [1, 2, 3, 4]);
}

/// Parse (with the given type OIDs), Bind (parameters in text or binary,
/// results in text), Execute, Sync.
async fn bind_execute(
    raw: &mut RawClient<TcpStream>,
    sql: &str,
    oids: &[u32],
    params: &[&[u8]],
    binary: bool,
) -> Reply {
    fn cstr(buf: &mut BytesMut, s: &str) {
        buf.put_slice(s.as_bytes());
        buf.put_u8(0);
    }
    let mut parse = BytesMut::new();
    cstr(&mut parse, "");
    cstr(&mut parse, sql);
    parse.put_i16(oids.len() as i16);
    for oid in oids {
        parse.put_u32(*oid);
    }
    raw.send(b'P', &parse).await;
    let mut bind = BytesMut::new();
    cstr(&mut bind, "");
    cstr(&mut bind, "");
    bind.put_i16(1);
    bind.put_i16(binary as i16);
    bind.put_i16(params.len() as i16);
    for p in params {
        bind.put_i32(p.len() as i32);
        bind.put_slice(p);
    }
    bind.put_i16(0);
    raw.send(b'B', &bind).await;
    let mut execute = BytesMut::new();
    cstr(&mut execute, "");
    execute.put_i32(0);
    raw.send(b'E', &execute).await;
    raw.send(b'S', &[]).await;
    raw.read_until_ready().await
}

fn first_column(reply: &Reply) -> Vec<String> {
    reply
        .rows()
        .into_iter()
        .map(|r| r[0].clone().expect("not NULL"))
        .collect()
}

#[tokio::test]
async fn text_and_declared_array_parameters() {
    let (server, _c) = setup().await;
    let (mut raw, _) = server.raw().await;
    let sql = "SELECT id FROM users WHERE id = ANY($1) ORDER BY id";
    // Text, with int4[] declared in Parse.
    let r = bind_execute(&mut raw, sql, &[1007], &[b"{3,1}"], false).await;
    assert_eq!(first_column(&r), ["1", "3"], "{r:?}");
    // Text, the type left to the server.
    let r = bind_execute(&mut raw, sql, &[], &[b" { 2 , NULL } "], false).await;
    assert_eq!(first_column(&r), ["2"], "{r:?}");
    // Declared as text, it is no array: PostgreSQL's error.
    let r = bind_execute(&mut raw, sql, &[25], &[b"{4}"], false).await;
    assert_eq!(
        r.errors(),
        [(
            "42809".to_string(),
            "op ANY/ALL (array) requires array on right side".to_string()
        )]
    );
    // Binary, int8[] declared for an int4 key: array_send's bytes.
    let mut int8s = BytesMut::new();
    for word in [1i32, 0, 20, 2, 1] {
        int8s.put_i32(word);
    }
    int8s.put_i32(8);
    int8s.put_i64(2);
    int8s.put_i32(8);
    int8s.put_i64(3);
    let r = bind_execute(&mut raw, sql, &[1016], &[&int8s], true).await;
    assert_eq!(first_column(&r), ["2", "3"], "{r:?}");

    // Bad arrays are PostgreSQL's errors, and the connection goes on.
    let r = bind_execute(&mut raw, sql, &[1007], &[b"{1,2"], false).await;
    assert_eq!(
        r.errors(),
        [(
            "22P02".to_string(),
            "malformed array literal: \"{1,2\"".to_string()
        )]
    );
    let r = bind_execute(&mut raw, sql, &[1007], &[b"{{1},{2}}"], false).await;
    assert_eq!(r.errors()[0].0, "0A000");
    // int8 elements where int4[] is declared.
    let r = bind_execute(&mut raw, sql, &[1007], &[&int8s], true).await;
    assert_eq!(
        r.errors(),
        [(
            "42804".to_string(),
            "binary data has array element type 20 (int8) instead of expected 23 (int4)"
                .to_string()
        )]
    );
    let r = bind_execute(&mut raw, sql, &[1007], &[&int8s[..10]], true).await;
    assert_eq!(r.errors()[0].0, "08P01");
    let r = raw.query("SELECT 1").await;
    assert_eq!(r.value(), "1");
}

impl Counter {
    /// Runs `sql` with `params`: the rows it returned and the store reads
    /// it cost.
    async fn run(&mut self, sql: &str, params: Vec<Value>) -> (usize, u64) {
        let before = self.store.counts.reads.load(Ordering::Relaxed);
        let mut rows = 0;
        for p in self.engine.prepare(sql, &[]).await.expect(sql) {
            let done = self
                .engine
                .execute(&mut self.session, &p, params.clone())
                .await
                .expect(sql);
            if let Outcome::Rows { rows: stream, .. } = done.outcome {
                let all: Vec<_> = stream.collect().await;
                rows += all.len();
                for r in all {
                    r.expect(sql);
                }
            }
        }
        (
            rows,
            self.store.counts.reads.load(Ordering::Relaxed) - before,
        )
    }
}

fn int4s(items: &[i32]) -> Value {
    Array::value(
        SqlType::Int4,
        items.iter().map(|i| Value::Int4(*i)).collect(),
    )
}

#[tokio::test]
async fn any_of_a_parameter_reads_only_the_listed_keys() {
    let mut c = Counter::new();
    c.run(
        "CREATE TABLE items (id integer PRIMARY KEY, code text UNIQUE, v text)",
        vec![],
    )
    .await;
    // One row per statement: a row written by a statement of its own is
    // read in one read (one a multi-row INSERT wrote also costs the reads
    // of its transaction's record, the same for every access path).
    for i in 1..=3000 {
        c.run(
            &format!("INSERT INTO items VALUES ({i}, 'c{i}', 'v')"),
            vec![],
        )
        .await;
    }
    // A scan of the table costs its pages: what the key lists avoid.
    let (rows, scan) = c
        .run(
            "SELECT v FROM items WHERE v = ANY($1)",
            vec![Array::value(SqlType::Text, vec![Value::Text("v".into())])],
        )
        .await;
    assert_eq!(rows, 3000);
    assert!(scan >= 10, "a scan of 3000 rows read {scan} pages");

    // One read per distinct key, present or not: what the same IN list
    // costs.
    let by_id = "SELECT v FROM items WHERE id = ANY($1)";
    assert_eq!(c.run(by_id, vec![int4s(&[5, 7, 7, 9999])]).await, (2, 3));
    assert_eq!(
        c.run("SELECT v FROM items WHERE id IN (5, 7, 7, 9999)", vec![])
            .await,
        (2, 3)
    );
    assert_eq!(c.run(by_id, vec![int4s(&[])]).await, (0, 0));
    assert_eq!(c.run(by_id, vec![Value::Null]).await, (0, 0));
    // NULL elements name no key.
    let with_null = Array::value(SqlType::Int4, vec![Value::Int4(1), Value::Null]);
    assert_eq!(c.run(by_id, vec![with_null]).await, (1, 1));
    // Literals, casts and ARRAY[...] alike.
    assert_eq!(
        c.run("SELECT v FROM items WHERE id = ANY('{1,2,3}')", vec![])
            .await,
        (3, 3)
    );
    assert_eq!(
        c.run(
            "SELECT v FROM items WHERE id = ANY(ARRAY[4, 5]::bigint[]) AND v = 'v'",
            vec![]
        )
        .await,
        (2, 2)
    );
    // A unique key: the claim, then the row it names; a missing key costs
    // only the claim read.
    let codes = Array::value(
        SqlType::Text,
        vec![Value::Text("c10".into()), Value::Text("nope".into())],
    );
    assert_eq!(
        c.run("SELECT v FROM items WHERE code = ANY($1)", vec![codes])
            .await,
        (1, 3)
    );
    // UPDATE and DELETE find their rows the same way: what the same IN
    // list costs them, not a scan.
    let update = c
        .run(
            "UPDATE items SET v = 'w' WHERE id = ANY($1)",
            vec![int4s(&[11, 12])],
        )
        .await
        .1;
    let update_in = c
        .run("UPDATE items SET v = 'w' WHERE id IN (16, 17)", vec![])
        .await
        .1;
    assert_eq!(update, update_in);
    assert!(update < scan, "{update}");
    let delete = c
        .run(
            "DELETE FROM items WHERE id = ANY($1)",
            vec![int4s(&[13, 14, 15])],
        )
        .await
        .1;
    let delete_in = c
        .run("DELETE FROM items WHERE id IN (18, 19, 23)", vec![])
        .await
        .1;
    assert_eq!(delete, delete_in);
    // The query engine turns the bound array into the same key reads
    // (DataFusion writes a short one as ORed equalities, a longer one as
    // an IN list).
    let distinct = "SELECT DISTINCT v FROM items WHERE id = ANY($1)";
    assert_eq!(c.run(distinct, vec![int4s(&[20, 21])]).await, (1, 2));
    assert_eq!(
        c.run(distinct, vec![int4s(&[20, 21, 22, 24, 25, 9999])])
            .await,
        (1, 6)
    );
}
