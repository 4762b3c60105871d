//! keyclaim on a real Cassandra against the same LWT sequence issued
//! directly with the driver, in one run: unique-key inserts, point selects by
//! primary key and by unique key. Prints a Markdown table with statements/s,
//! the keyclaim/driver ratio, the store operations per statement
//! (keyclaim's own counts, read from its metrics endpoint, so they are
//! exact), and what the nodes served per statement on each side: requests
//! (round trips), the reads and writes their stages ran, and responses
//! between nodes (forwarded work), from Cassandra 4.0's
//! `system_views.thread_pools` (not on ScyllaDB or older Cassandra).
//!
//!   KEYCLAIM_BENCH_CASSANDRA=127.0.0.1:9042 cargo bench --bench cassandra
//!
//! Optional: KEYCLAIM_BENCH_CLIENTS (default 16), KEYCLAIM_BENCH_ROWS (inserts
//! per round, default 2000; each round also runs twice as many selects),
//! KEYCLAIM_BENCH_RF (the keyspace's replication factor, default 1). Name
//! several nodes comma-separated to run against a cluster.
//! Without KEYCLAIM_BENCH_CASSANDRA it prints how to run it and exits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures::future::try_join_all;
use keyclaim::config::{Config, StoreKind};
use keyclaim::engine::Engine;
use keyclaim::server::Server;
use keyclaim::store::cassandra::CassandraStore;
use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::unprepared::Statement;
use scylla::statement::Consistency;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

/// keyclaim's own per-statement store counts, from its Prometheus endpoint
/// (`keyclaim_statement_lwts` / `_reads` histograms by statement kind).
struct Metrics {
    addr: std::net::SocketAddr,
}

impl Metrics {
    fn start() -> Metrics {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        keyclaim::metrics::serve(addr).expect("metrics endpoint");
        Metrics { addr }
    }

    /// Total LWTs and reads of all `kind` statements so far.
    async fn ops(&self, kind: &str) -> (u64, u64) {
        let mut s = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("scrape");
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("scrape");
        let mut text = String::new();
        s.read_to_string(&mut text).await.expect("scrape");
        let sum = |metric: &str| {
            let prefix = format!("{metric}_sum{{kind=\"{kind}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0) as u64
        };
        (
            sum("keyclaim_statement_lwts"),
            sum("keyclaim_statement_reads"),
        )
    }

    /// Runs `phase` and returns what its `kind` statements cost the store.
    async fn during<T, F: std::future::Future<Output = T>>(
        &self,
        kind: &str,
        phase: F,
    ) -> (T, (u64, u64)) {
        let (l0, r0) = self.ops(kind).await;
        let rate = phase.await;
        let (l1, r1) = self.ops(kind).await;
        (rate, (l1 - l0, r1 - r0))
    }
}

/// What the cluster's nodes served, summed over every node, from their
/// thread pools' completed tasks: requests from clients (round trips),
/// the read and mutation tasks their stages ran, and responses from other
/// nodes (RequestResponseStage: work a coordinator had to ask a replica
/// for, none when each request goes to a replica of its partition and the
/// replication factor is 1).
#[derive(Clone, Copy, Default)]
struct NodeWork {
    requests: u64,
    stage_tasks: u64,
    forwarded: u64,
    /// The nodes probed: each probe is a request to each of them.
    nodes: u64,
}

impl std::ops::Add for NodeWork {
    type Output = NodeWork;
    fn add(self, o: NodeWork) -> NodeWork {
        NodeWork {
            requests: self.requests + o.requests,
            stage_tasks: self.stage_tasks + o.stage_tasks,
            forwarded: self.forwarded + o.forwarded,
            nodes: self.nodes.max(o.nodes),
        }
    }
}

impl NodeWork {
    /// The work done since `before`, less the probe that read `before`
    /// (a request to each node, completed after it read the counts).
    fn since(self, before: NodeWork) -> NodeWork {
        NodeWork {
            requests: self.requests.saturating_sub(before.requests + before.nodes),
            stage_tasks: self.stage_tasks.saturating_sub(before.stage_tasks),
            forwarded: self.forwarded.saturating_sub(before.forwarded),
            nodes: self.nodes,
        }
    }
}

/// Reads every node's thread pools (each node asked directly: the table
/// is the node's own); None where a node has no
/// `system_views.thread_pools` (ScyllaDB, Cassandra before 4.0).
async fn node_work(session: &Session) -> Option<NodeWork> {
    let mut work = NodeWork::default();
    for node in session.get_cluster_state().get_nodes_info() {
        let mut probe =
            Statement::new("SELECT name, completed_tasks FROM system_views.thread_pools");
        probe.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::Node(node.clone()),
            None,
        )));
        let result = session.query_unpaged(probe, ()).await.ok()?;
        for row in result
            .into_rows_result()
            .ok()?
            .rows::<(String, i64)>()
            .ok()?
        {
            let (pool, done) = row.ok()?;
            let done = done as u64;
            match pool.as_str() {
                "Native-Transport-Requests" => work.requests += done,
                "ReadStage" | "MutationStage" => work.stage_tasks += done,
                "RequestResponseStage" => work.forwarded += done,
                _ => {}
            }
        }
        work.nodes += 1;
    }
    Some(work)
}

/// One side's run of a phase: its rate, and what the node did meanwhile.
struct Side {
    rate: f64,
    node: Option<NodeWork>,
}

async fn on_node<F: std::future::Future<Output = f64>>(session: &Session, phase: F) -> Side {
    let before = node_work(session).await;
    let rate = phase.await;
    let after = node_work(session).await;
    Side {
        rate,
        node: before.zip(after).map(|(b, a)| a.since(b)),
    }
}

/// One measured phase: `ops` statements split over `clients` tasks.
async fn timed<F, Fut>(clients: usize, ops: usize, op: F) -> f64
where
    F: Fn(usize, usize) -> Fut + Clone,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    let tasks = (0..clients).map(|c| {
        let op = op.clone();
        async move {
            let mut i = c;
            while i < ops {
                op(c, i).await;
                i += clients;
            }
            Ok::<(), ()>(())
        }
    });
    try_join_all(tasks).await.expect("no phase fails");
    ops as f64 / start.elapsed().as_secs_f64()
}

fn email(i: usize) -> String {
    format!("user{i}@example.com")
}

/// The same LWT sequence keyclaim runs, issued with the driver directly.
struct Direct {
    session: Arc<Session>,
    claim: PreparedStatement,
    row: PreparedStatement,
    read_row: PreparedStatement,
    read_claim: PreparedStatement,
}

impl Direct {
    async fn new(session: Arc<Session>, ks: &str) -> Direct {
        for ddl in [
            format!("CREATE TABLE {ks}.d_claims (constraint_id text, key blob, owner blob, txn uuid, PRIMARY KEY ((constraint_id, key)))"),
            format!("CREATE TABLE {ks}.d_users (id bigint PRIMARY KEY, email text, name text, \"__version\" uuid, \"__live\" boolean, \"__claims\" map<text, uuid>)"),
        ] {
            session.query_unpaged(ddl, ()).await.expect("bench tables");
        }
        session
            .await_schema_agreement()
            .await
            .expect("schema agreement");
        let prepare = |text: String, serial: bool| {
            let session = session.clone();
            async move {
                let mut p = session.prepare(text).await.expect("prepare");
                if serial {
                    p.set_consistency(Consistency::LocalSerial);
                }
                p
            }
        };
        Direct {
            claim: prepare(format!("INSERT INTO {ks}.d_claims (constraint_id, key, owner, txn) VALUES (?, ?, ?, ?) IF NOT EXISTS"), false).await,
            row: prepare(format!("INSERT INTO {ks}.d_users (id, email, name, \"__version\", \"__live\", \"__claims\") VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS"), false).await,
            read_row: prepare(format!("SELECT id, email, name, \"__version\", \"__live\", \"__claims\" FROM {ks}.d_users WHERE id = ?"), true).await,
            read_claim: prepare(format!("SELECT owner, txn FROM {ks}.d_claims WHERE constraint_id = ? AND key = ?"), true).await,
            session,
        }
    }

    async fn insert(&self, i: usize) {
        let txn = Uuid::now_v7();
        let id = i as i64;
        self.session
            .execute_unpaged(
                &self.claim,
                (
                    "users_email_key",
                    email(i).into_bytes(),
                    id.to_be_bytes().to_vec(),
                    txn,
                ),
            )
            .await
            .expect("claim");
        let claims = BTreeMap::from([("users_email_key".to_owned(), txn)]);
        self.session
            .execute_unpaged(&self.row, (id, email(i), "name", txn, true, claims))
            .await
            .expect("row");
    }

    async fn select_pk(&self, i: usize) {
        self.session
            .execute_unpaged(&self.read_row, (i as i64,))
            .await
            .expect("read row");
    }

    async fn select_unique(&self, i: usize) {
        self.session
            .execute_unpaged(&self.read_claim, ("users_email_key", email(i).into_bytes()))
            .await
            .expect("read claim");
        self.select_pk(i).await;
    }
}

/// Measured rounds per workload, after one warm-up round.
const ROUNDS: usize = 3;

/// Rates of the measured rounds, keyclaim's store operations in them, and
/// the nodes' work for each side (keyclaim, driver), unless a round could
/// not read it.
#[derive(Default)]
struct Measured {
    keyclaim: Vec<f64>,
    driver: Vec<f64>,
    lwts: u64,
    reads: u64,
    statements: usize,
    node: [NodeWork; 2],
    node_unread: bool,
}

impl Measured {
    fn add(&mut self, keyclaim: Side, driver: Side, (lwts, reads): (u64, u64), statements: usize) {
        self.keyclaim.push(keyclaim.rate);
        self.driver.push(driver.rate);
        self.lwts += lwts;
        self.reads += reads;
        self.statements += statements;
        match keyclaim.node.zip(driver.node) {
            Some((k, d)) => self.node = [self.node[0] + k, self.node[1] + d],
            None => self.node_unread = true,
        }
    }

    /// The nodes' requests, stage tasks and responses from other nodes
    /// per statement, each as keyclaim / driver.
    fn node_per_statement(&self) -> [String; 3] {
        if self.node_unread {
            return ["n/a".into(), "n/a".into(), "n/a".into()];
        }
        let [k, d] = self.node;
        let per = |n: u64| n as f64 / self.statements as f64;
        let pair = |k: u64, d: u64| format!("{:.2} / {:.2}", per(k), per(d));
        [
            pair(k.requests, d.requests),
            pair(k.stage_tasks, d.stage_tasks),
            pair(k.forwarded, d.forwarded),
        ]
    }
}

fn median(rates: &[f64]) -> f64 {
    let mut sorted = rates.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let Ok(node) = std::env::var("KEYCLAIM_BENCH_CASSANDRA") else {
        eprintln!(
            "set KEYCLAIM_BENCH_CASSANDRA=host:port to run this benchmark against a Cassandra node"
        );
        return;
    };
    let clients = env_usize("KEYCLAIM_BENCH_CLIENTS", 16);
    let rows = env_usize("KEYCLAIM_BENCH_ROWS", 2000);
    let mut config = Config::default();
    config.store.kind = StoreKind::Cassandra;
    // One node, or several (comma-separated): the whole cluster's work is
    // counted either way.
    config.store.contact_points = node.split(',').map(str::to_owned).collect();
    config.store.replication_factor = env_usize("KEYCLAIM_BENCH_RF", 1) as u32;
    config.store.keyspace = format!("kc_bench_{}", &Uuid::new_v4().simple().to_string()[..16]);
    config.server.listen = "127.0.0.1:0".into();
    config.log.level = "warn".into();
    let cassandra = Arc::new(
        CassandraStore::connect(&config.store)
            .await
            .expect("connect"),
    );
    let metrics = Metrics::start();
    let engine = Engine::new(cassandra.clone(), config.engine_config());
    let server = Server::bind(&config, engine).await.expect("bind").spawn();
    let mut pg = tokio_postgres::Config::new();
    pg.host("127.0.0.1")
        .port(server.addr().port())
        .user("keyclaim")
        .dbname("keyclaim");
    let mut conns = Vec::new();
    for _ in 0..clients {
        let (client, conn) = pg
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to keyclaim");
        tokio::spawn(conn);
        conns.push(Arc::new(client));
    }
    conns[0]
        .batch_execute("CREATE TABLE users (id bigint PRIMARY KEY, email text UNIQUE, name text)")
        .await
        .expect("create table");
    let prepared = |sql: &'static str| {
        let conns = conns.clone();
        async move {
            let mut out = Vec::new();
            for c in &conns {
                out.push(c.prepare(sql).await.expect("prepare"));
            }
            out
        }
    };
    let insert = prepared("INSERT INTO users VALUES ($1, $2, 'name')").await;
    let by_pk = prepared("SELECT * FROM users WHERE id = $1").await;
    let by_email = prepared("SELECT * FROM users WHERE email = $1").await;
    let direct = Arc::new(Direct::new(cassandra.session().clone(), &config.store.keyspace).await);
    let node = cassandra.session().as_ref();

    // Each workload runs in rounds, keyclaim then driver, after one
    // unmeasured warm-up round of both (the JVM, the Paxos tables and the
    // caches start cold); the median round of each is reported.
    let insert_op = |round: usize| {
        let (conns, insert) = (conns.clone(), insert.clone());
        move |c: usize, i: usize| {
            let (conn, stmt) = (conns[c].clone(), insert[c].clone());
            let id = round * rows + i;
            async move {
                conn.execute(&stmt, &[&(id as i64), &email(id)])
                    .await
                    .expect("insert");
            }
        }
    };
    let direct_insert = |round: usize| {
        let d = direct.clone();
        move |_: usize, i: usize| {
            let d = d.clone();
            async move { d.insert(round * rows + i).await }
        }
    };
    let mut inserts = Measured::default();
    for round in 0..=ROUNDS {
        let (kc, ops) = metrics
            .during(
                "insert",
                on_node(node, timed(clients, rows, insert_op(round))),
            )
            .await;
        let dr = on_node(node, timed(clients, rows, direct_insert(round))).await;
        if round > 0 {
            inserts.add(kc, dr, ops, rows);
        }
    }
    // Every row inserted so far can be selected.
    let total = rows * (ROUNDS + 1);
    let selects = rows * 2;
    let mut by_key = Measured::default();
    let mut by_unique = Measured::default();
    for round in 0..=ROUNDS {
        // Spread over all rows, a different stretch each round.
        let pick = move |i: usize| (i * 7919 + round * 104_729) % total;
        let by_pk_phase = timed(clients, selects, |c, i| {
            let (conn, stmt) = (conns[c].clone(), by_pk[c].clone());
            async move {
                let r = conn
                    .query(&stmt, &[&(pick(i) as i64)])
                    .await
                    .expect("select");
                assert_eq!(r.len(), 1);
            }
        });
        let (kc, ops) = metrics.during("select", on_node(node, by_pk_phase)).await;
        let d = direct.clone();
        let dr = on_node(
            node,
            timed(clients, selects, move |_, i| {
                let d = d.clone();
                async move { d.select_pk(pick(i)).await }
            }),
        )
        .await;
        if round > 0 {
            by_key.add(kc, dr, ops, selects);
        }
        let by_email_phase = timed(clients, selects, |c, i| {
            let (conn, stmt) = (conns[c].clone(), by_email[c].clone());
            async move {
                let r = conn.query(&stmt, &[&email(pick(i))]).await.expect("select");
                assert_eq!(r.len(), 1);
            }
        });
        let (kc, ops) = metrics
            .during("select", on_node(node, by_email_phase))
            .await;
        let d = direct.clone();
        let dr = on_node(
            node,
            timed(clients, selects, move |_, i| {
                let d = d.clone();
                async move { d.select_unique(pick(i)).await }
            }),
        )
        .await;
        if round > 0 {
            by_unique.add(kc, dr, ops, selects);
        }
    }

    println!(
        "{clients} clients, {rows} inserts and {selects} selects per round, median of {ROUNDS} rounds, Cassandra at {} ({} nodes, replication factor {})",
        config.store.contact_points.join(","),
        node.get_cluster_state().get_nodes_info().len(),
        config.store.replication_factor
    );
    println!();
    println!("| statement | keyclaim stmt/s | driver stmt/s | keyclaim / driver | LWTs per stmt | SERIAL reads per stmt | store round trips in sequence | node requests per stmt, keyclaim / driver | node read and mutation tasks per stmt, keyclaim / driver | responses between nodes per stmt, keyclaim / driver |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, m, depth) in [
        ("INSERT, one UNIQUE column", &inserts, "2 (claim, row)"),
        ("SELECT by primary key", &by_key, "1 (row)"),
        ("SELECT by unique key", &by_unique, "2 (claim, row)"),
    ] {
        let (kc, dr) = (median(&m.keyclaim), median(&m.driver));
        let [requests, stage_tasks, forwarded] = m.node_per_statement();
        println!(
            "| {name} | {kc:.0} | {dr:.0} | {:.2} | {:.2} | {:.2} | {depth} | {requests} | {stage_tasks} | {forwarded} |",
            kc / dr,
            m.lwts as f64 / m.statements as f64,
            m.reads as f64 / m.statements as f64
        );
    }
    drop(conns);
    server.shutdown().await;
    cassandra
        .session()
        .query_unpaged(format!("DROP KEYSPACE {}", config.store.keyspace), ())
        .await
        .expect("drop the bench keyspace");
}
