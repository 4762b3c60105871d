//! What the transaction model check (`txn.rs`) found, reproduced on the
//! real code: a proxy over the embedded store, driven over the wire.
//!
//! Both were violations of U (two committed rows held one UNIQUE value)
//! in the code as first built; the code is fixed (`resolve::transaction_claim`
//! reads the owner row again after a committed decision, `txn_write::undo`
//! claims again what every restored row needs), and each test is now the
//! regression test that forces the interleaving. In `txn.rs` the `AsBuilt`
//! variants stay as mutants the model catches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Notify;
use tokio_postgres::{Client, NoTls};

use crate::config::Config;
use crate::engine::Engine;
use crate::server::{RunningServer, Server};
use crate::store::layer::{Layer, Layered};
use crate::store::memory::MemoryStore;
use crate::store::{Cas, StoreResult};

/// Holds the first operation that passes it once armed, until opened.
#[derive(Default)]
struct Gate {
    armed: AtomicBool,
    reached: Notify,
    open: Notify,
}

impl Gate {
    async fn pass(&self) {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.reached.notify_one();
            self.open.notified().await;
        }
    }
}

/// Gates on a row insert (an intent's CAS) and on a record read.
#[derive(Default)]
struct Gates {
    row_insert: Gate,
    record_read: Gate,
}

impl Layer for Arc<Gates> {
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<Cas<T>>>,
    ) -> BoxFuture<'a, StoreResult<Cas<T>>> {
        Box::pin(async move {
            if op == "insert_row" {
                self.row_insert.pass().await;
            }
            write.await
        })
    }

    fn read<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        read: BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        Box::pin(async move {
            if op == "read_txn_record" {
                self.record_read.pass().await;
            }
            read.await
        })
    }

    fn write<'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<()>>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        write
    }
}

async fn start(gates: Arc<Gates>) -> RunningServer {
    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".into();
    let store = Arc::new(Layered::wrap(Arc::new(MemoryStore::new()), gates));
    let engine = Engine::new(store, config.engine_config());
    Server::bind(&config, engine)
        .await
        .expect("test server binds")
        .spawn()
}

async fn connect(server: &RunningServer) -> Client {
    let mut config = tokio_postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(server.addr().port())
        .user("keyclaim")
        .dbname("keyclaim");
    let (client, connection) = config.connect(NoTls).await.expect("connects");
    tokio::spawn(connection);
    client
}

/// "ok" or the SQLSTATE.
fn answer<T>(r: &Result<T, tokio_postgres::Error>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e
            .as_db_error()
            .map_or(e.to_string(), |d| d.code().code().to_owned()),
    }
}

async fn rows(client: &Client) -> Vec<(i32, String)> {
    client
        .query("SELECT id, u FROM t ORDER BY id", &[])
        .await
        .expect("reads")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// `Resolver::AsBuilt` in `txn.rs`. Transaction T inserts row 0 with A:
/// it claims A, and is held before its intent lands. An INSERT of row 1
/// with A meets T's claim, reads row 0 (absent: unbacked), and is held
/// before it reads T's record. T's intent lands and T commits; the INSERT
/// then reads "committed", takes T's claim over (`transaction_claim`: a
/// decided transaction's unbacked claim is stale) and inserts row 1 with A.
#[tokio::test]
async fn a_claim_is_taken_over_from_a_transaction_that_commits_meanwhile() {
    let gates = Arc::new(Gates::default());
    let server = start(gates.clone()).await;
    let a = Arc::new(connect(&server).await);
    let b = connect(&server).await;
    a.batch_execute("CREATE TABLE t (id integer PRIMARY KEY, u text UNIQUE); BEGIN")
        .await
        .unwrap();
    gates.row_insert.armed.store(true, Ordering::SeqCst);
    let t = a.clone();
    let t_insert = tokio::spawn(async move {
        let r = t.execute("INSERT INTO t VALUES (0, 'A')", &[]).await;
        answer(&r)
    });
    // T holds the claim of A; its intent on row 0 is not written yet.
    gates.row_insert.reached.notified().await;
    gates.record_read.armed.store(true, Ordering::SeqCst);
    let other = tokio::spawn(async move {
        let r = b.execute("INSERT INTO t VALUES (1, 'A')", &[]).await;
        (b, answer(&r))
    });
    // The other INSERT read row 0 (absent) and is about to read T's record.
    gates.record_read.reached.notified().await;
    gates.row_insert.open.notify_one();
    assert_eq!(t_insert.await.unwrap(), "ok");
    a.batch_execute("COMMIT").await.unwrap();
    gates.record_read.open.notify_one();
    let (b, other) = other.await.unwrap();
    // As first built: "ok", and two rows held A.
    assert_eq!(other, "23505");
    assert_eq!(rows(&b).await, vec![(0, "A".into())]);
}

/// `Undo::AsBuilt` in `txn.rs`, in one session and without a fault. The
/// block inserts row 0 with A, takes a savepoint and moves row 0 to B; an
/// INSERT of row 1 with A takes the block's own claim of A back (unbacked
/// now), claims A for row 1, finds row 1 taken (23505) and releases A. The
/// failed statement undoes to the savepoint: row 0 holds A again, but only
/// the UPDATE's claim (B) is in the undone log, so A stays unclaimed; the
/// block commits row 0 with A, and a later INSERT of A succeeds.
#[tokio::test]
async fn a_failed_statement_after_a_value_moved_away_leaves_a_kept_row_unclaimed() {
    let server = start(Arc::default()).await;
    let c = connect(&server).await;
    c.batch_execute(
        "CREATE TABLE t (id integer PRIMARY KEY, u text UNIQUE);
         INSERT INTO t VALUES (1, 'C');
         BEGIN;
         INSERT INTO t VALUES (0, 'A');
         SAVEPOINT s;
         UPDATE t SET u = 'B' WHERE id = 0",
    )
    .await
    .unwrap();
    let failed = c.batch_execute("INSERT INTO t VALUES (1, 'A')").await;
    assert_eq!(answer(&failed), "23505");
    c.batch_execute("ROLLBACK TO s; COMMIT").await.unwrap();
    assert_eq!(rows(&c).await, vec![(0, "A".into()), (1, "C".into())]);
    let again = c.batch_execute("INSERT INTO t VALUES (2, 'A')").await;
    // As first built: "ok", and rows 0 and 2 both held A.
    assert_eq!(answer(&again), "23505");
    assert_eq!(rows(&c).await, vec![(0, "A".into()), (1, "C".into())]);
}
