//! Proof on a real cluster: the history workload (tests/suite/common/history.rs)
//! runs through two keyclaim processes while Cassandra nodes are killed,
//! paused and cut off from quorum, and a proxy is killed while a node is
//! down. Each step is checked as tests/suite/history.rs checks its histories (no
//! anomaly), and measured: statements/s before, during and after the
//! fault, the longest time without a success, and how long after the fault
//! ends every key is free again. Meanwhile a DDL client creates table
//! after table: each answer must match what the catalog holds once the
//! cluster is whole (ok: there; 53000: not; 40003: either), and a sweep
//! must leave no storage that no table uses.
//!
//! Needs a cluster and a way to drive its nodes; skipped without them:
//!
//! - `KEYCLAIM_TEST_CASSANDRA=127.0.0.1:9042,127.0.0.2:9042,127.0.0.3:9042`,
//!   `KEYCLAIM_TEST_CASSANDRA_RF=3` and `KEYCLAIM_TEST_CASSANDRA_DC` (the
//!   datacenter, as the README's configuration sets `local_datacenter`);
//! - `KEYCLAIM_TEST_CLUSTER_CTL`: a command run as `CTL kill N` (SIGKILL
//!   node N, 1-based in the order of KEYCLAIM_TEST_CASSANDRA), `CTL start N`
//!   (start it, returning once it serves CQL), `CTL pause N` (SIGSTOP) and
//!   `CTL resume N` (SIGCONT). With ccm, for example, a two-line script:
//!   `case $1 in kill) ccm node$2 stop --not-gently;; start) ccm node$2
//!   start --wait-for-binary-proto;; *) ccm node$2 $1;; esac`.
//!
//! `KEYCLAIM_TEST_CLUSTER_STEPS` picks steps (default
//! `kill,pause,quorum,proxy`), `KEYCLAIM_TEST_CLUSTER_SEED` the seed (default 1),
//! `KEYCLAIM_TEST_CLUSTER_FAULT_SECS` how long a fault lasts (default 30).

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::history::{self, Op, Worker};
use common::process::{free_port, Proxy};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use keyclaim::config::Config;
use keyclaim::store::Store;

const LEASE_MS: u64 = 1000;
const WORKERS: usize = 8;
/// Steady state before a fault and after it ends.
const WARM: Duration = Duration::from_secs(10);
const TAIL: Duration = Duration::from_secs(15);

/// One action of the harness on a node, through `KEYCLAIM_TEST_CLUSTER_CTL`.
async fn ctl(verb: &'static str, node: usize) {
    let ctl = std::env::var("KEYCLAIM_TEST_CLUSTER_CTL").unwrap();
    let started = Instant::now();
    let status = tokio::task::spawn_blocking(move || {
        Command::new(&ctl)
            .args([verb, &node.to_string()])
            .status()
            .unwrap_or_else(|e| panic!("{ctl}: {e}"))
    })
    .await
    .unwrap();
    assert!(status.success(), "ctl {verb} {node}: {status}");
    eprintln!(
        "cluster: ctl {verb} {node} took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// What happened when, during one step.
struct Timeline {
    began: Instant,
    /// The fault's start and end (node back, pause over, quorum back).
    fault: (Instant, Instant),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// SIGKILL one node, restart it.
    Kill,
    /// SIGSTOP one node for the fault's length, SIGCONT.
    Pause,
    /// SIGKILL two of three nodes: no quorum until one is back.
    Quorum,
    /// One node down, and one of the two proxies killed (and restarted).
    Proxy,
}

impl Step {
    fn parse(s: &str) -> Step {
        match s.trim() {
            "kill" => Step::Kill,
            "pause" => Step::Pause,
            "quorum" => Step::Quorum,
            "proxy" => Step::Proxy,
            other => panic!("KEYCLAIM_TEST_CLUSTER_STEPS: unknown step {other}"),
        }
    }

    /// Runs the fault; returns when it is over (nodes back, serving).
    async fn drive(self, fault: Duration, proxies: &mut [Proxy], config: &Config) -> Instant {
        match self {
            Step::Kill => {
                ctl("kill", 2).await;
                tokio::time::sleep(fault).await;
                ctl("start", 2).await;
            }
            Step::Pause => {
                ctl("pause", 3).await;
                tokio::time::sleep(fault).await;
                ctl("resume", 3).await;
            }
            Step::Quorum => {
                ctl("kill", 2).await;
                ctl("kill", 3).await;
                tokio::time::sleep(fault).await;
                ctl("start", 2).await;
                let back = Instant::now();
                ctl("start", 3).await;
                return back;
            }
            Step::Proxy => {
                ctl("kill", 3).await;
                tokio::time::sleep(fault / 3).await;
                let port = proxies[0].port();
                proxies[0].kill();
                tokio::time::sleep(fault / 3).await;
                proxies[0] = Proxy::spawn(config, port, LEASE_MS);
                tokio::time::sleep(fault / 3).await;
                ctl("start", 3).await;
            }
        }
        Instant::now()
    }
}

/// Successes per second of `history` between `from` and `to`.
fn rate(history: &[Op], from: Instant, to: Instant) -> f64 {
    let ok = history
        .iter()
        .filter(|o| o.succeeded() && o.end >= from && o.end < to)
        .count();
    ok as f64 / to.duration_since(from).as_secs_f64().max(0.001)
}

/// The longest stretch in which no statement succeeded.
fn longest_outage(history: &[Op], began: Instant, ended: Instant) -> Duration {
    let mut ends: Vec<Instant> = history
        .iter()
        .filter(|o| o.succeeded())
        .map(|o| o.end)
        .collect();
    ends.push(began);
    ends.push(ended);
    ends.sort();
    ends.windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

/// Successes per second, second by second: the shape of the outage.
fn per_second(history: &[Op], t: &Timeline, ended: Instant) -> String {
    let secs = (ended - t.began).as_secs() as usize + 1;
    let mut ok = vec![0u32; secs];
    let mut failed = vec![0u32; secs];
    for o in history {
        let s = (o.end - t.began).as_secs() as usize;
        if s < secs {
            if o.succeeded() {
                ok[s] += 1;
            } else {
                failed[s] += 1;
            }
        }
    }
    let at = |i: Instant| (i - t.began).as_secs();
    let (f0, f1) = (at(t.fault.0), at(t.fault.1));
    (0..secs)
        .map(|s| {
            let mark = if (f0..f1).contains(&(s as u64)) {
                "*"
            } else {
                ""
            };
            format!("{mark}{}/{}", ok[s], failed[s])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The time after `from` until one second's successes reach half of
/// `before` (None: never, within the history).
fn recovery(history: &[Op], from: Instant, ended: Instant, before: f64) -> Option<Duration> {
    let mut t = from;
    while t + Duration::from_secs(1) <= ended {
        if rate(history, t, t + Duration::from_secs(1)) >= before / 2.0 {
            return Some(t - from);
        }
        t += Duration::from_millis(100);
    }
    None
}

/// Creates table after table through the proxies until told to stop; the
/// name and answer of each.
async fn create_tables(
    proxies: Vec<std::net::SocketAddr>,
    stop: Arc<AtomicBool>,
) -> Vec<(String, String)> {
    let mut answers = Vec::new();
    let mut client = None;
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = &client else {
            client = history::connect_next(&proxies, &mut next).await;
            continue;
        };
        let name = format!("made{}", answers.len());
        let sql = format!("CREATE TABLE {name} (id integer PRIMARY KEY, u text UNIQUE)");
        let answer =
            match tokio::time::timeout(Duration::from_secs(120), c.batch_execute(&sql)).await {
                Err(_) => "hung".to_owned(),
                Ok(Ok(())) => "ok".to_owned(),
                Ok(Err(e)) => match e.as_db_error() {
                    Some(db) => db.code().code().to_owned(),
                    None => {
                        client = None;
                        "connection lost".to_owned()
                    }
                },
            };
        answers.push((name, answer));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    answers
}

/// Each CREATE TABLE's answer against what the catalog holds now; then
/// a sweep, after which every storage left is a table's.
async fn check_tables(
    store: &Arc<dyn Store>,
    answers: &[(String, String)],
) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    for (name, answer) in answers {
        let there = common::storage_of(store, name).await.is_some();
        let truthful = match answer.as_str() {
            "ok" => there,
            "53000" => !there,
            "40003" | "connection lost" => true,
            _ => false,
        };
        if !truthful {
            problems.push(format!(
                "CREATE TABLE {name} answered {answer}, and the table is {}there",
                if there { "" } else { "not " }
            ));
        }
    }
    let (swept, left) = common::sweep_storage_and_check(store).await;
    problems.extend(left);
    (problems, swept)
}

/// Every key free again: delete the rows, then insert rows holding every
/// id, every `a` and every (b, c). How long that took; an error if a key
/// stayed taken. A store error (53000, 40003: the cluster still settling)
/// is retried for up to 30 s.
async fn every_key_free(proxy: &Proxy) -> Result<Duration, String> {
    let client = proxy.connect().await;
    let started = Instant::now();
    let mut statements = vec![("DELETE FROM kv".to_owned(), 0)];
    statements.extend((0..history::IDS).map(|id| {
        (
            format!(
                "INSERT INTO kv (id, a, b, c, v) VALUES ({id}, {}, {}, {}, -1)",
                if id < 5 {
                    id.to_string()
                } else {
                    "NULL".into()
                },
                id / 3,
                id % 3
            ),
            id,
        )
    }));
    for (sql, id) in statements {
        loop {
            match client.batch_execute(&sql).await {
                Ok(()) => break,
                Err(e) => {
                    let code = e.as_db_error().map(|d| d.code().code().to_owned());
                    let settling = matches!(code.as_deref(), Some("53000" | "40003"));
                    if !settling || started.elapsed() > Duration::from_secs(30) {
                        let what = e
                            .as_db_error()
                            .map(|d| format!("{}: {}", d.code().code(), d.message()));
                        return Err(format!(
                            "key {id}: {}",
                            what.unwrap_or_else(|| e.to_string())
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
    Ok(started.elapsed())
}

async fn run_step(step: Step, seed: u64, fault: Duration) -> Vec<String> {
    let mut config = Config::default();
    common::configure_store(&mut config);
    let store = common::TestStore::open(&config).await;
    let mut proxies: Vec<Proxy> = (0..2)
        .map(|_| Proxy::spawn(&config, free_port(), LEASE_MS))
        .collect();
    proxies[1]
        .connect()
        .await
        .batch_execute(history::TABLE)
        .await
        .unwrap();
    let addrs: Vec<_> = proxies.iter().map(|p| p.addr).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|n| {
            let mut order = addrs.clone();
            order.rotate_left(n % addrs.len());
            tokio::spawn(
                Worker {
                    n,
                    seed,
                    proxies: order,
                    stop: stop.clone(),
                    hang_after: Duration::from_secs(120),
                    cancels: false,
                }
                .run(),
            )
        })
        .collect();
    let ddl = tokio::spawn(create_tables(addrs.clone(), stop.clone()));
    let began = Instant::now();
    tokio::time::sleep(WARM).await;
    let fault_began = Instant::now();
    let fault_ended = step.drive(fault, &mut proxies, &config).await;
    tokio::time::sleep(TAIL).await;
    stop.store(true, Ordering::Relaxed);
    let mut history = Vec::new();
    for w in workers {
        history.extend(w.await.unwrap());
    }
    let tables = ddl.await.unwrap();
    let ended = Instant::now();
    let t = Timeline {
        began,
        fault: (fault_began, fault_ended),
    };

    let (anomalies, live) = history::anomalies(&history, store.store.as_ref()).await;
    let before = rate(&history, began + Duration::from_secs(3), fault_began);
    let during = rate(&history, fault_began, fault_ended);
    let after = rate(&history, fault_ended + Duration::from_secs(5), ended);
    let back = recovery(&history, fault_ended, ended, before);
    let slow = history
        .iter()
        .map(|o| o.end - o.start)
        .max()
        .unwrap_or_default();
    let free = every_key_free(&proxies[1]).await;
    let (ddl_problems, swept) = check_tables(&store.store, &tables).await;
    let ddl_codes: BTreeMap<&str, usize> = tables.iter().fold(BTreeMap::new(), |mut m, (_, a)| {
        *m.entry(a.as_str()).or_default() += 1;
        m
    });
    let codes: BTreeMap<_, _> = history::answers_by_code(&history);
    eprintln!(
        "cluster step {step:?}, seed {seed}, fault {} s: {} statements, answers {codes:?}, {live} live rows, \
         anomalies {}\n  ok/s before {before:.0}, during {during:.0}, after {after:.0}; \
         longest without a success {:.1} s; back to half the rate {} after the fault ended; \
         slowest statement {:.1} s; every key free after the run: {}\n  \
         CREATE TABLE answers {ddl_codes:?}, untruthful {}, storage no table used swept {swept}\n  per second (ok/failed, * fault): {}",
        fault.as_secs(),
        history.len(),
        anomalies.len(),
        longest_outage(&history, began, ended).as_secs_f64(),
        back.map(|d| format!("{:.1} s", d.as_secs_f64()))
            .unwrap_or_else(|| "never".into()),
        slow.as_secs_f64(),
        match &free {
            Ok(d) => format!("in {:.2} s", d.as_secs_f64()),
            Err(e) => format!("NO, {e}"),
        },
        ddl_problems.len(),
        per_second(&history, &t, ended),
    );
    drop(proxies);
    store.cleanup().await;

    let mut problems: Vec<String> = anomalies
        .into_iter()
        .chain(ddl_problems)
        .map(|a| format!("{step:?}: {a}"))
        .collect();
    // Truthful answers only: a failure is a constraint's, a lock's, or the
    // store's (53000 not applied, 40003 unknown), or a lost connection to a
    // killed proxy.
    for (code, n) in &codes {
        let expected = matches!(
            code.as_str(),
            "ok" | "23505" | "23502" | "40001" | "40003" | "53000" | "55P03"
        ) || (step == Step::Proxy && code == "connection lost");
        if !expected {
            problems.push(format!("{step:?}: {n} answers of {code}"));
        }
    }
    if let Err(e) = free {
        problems.push(format!("{step:?}: a key stayed taken after the fault: {e}"));
    }
    if back.is_none() {
        problems.push(format!("{step:?}: service did not come back"));
    }
    // While quorum holds, statements keep succeeding.
    if step != Step::Quorum && during < before / 4.0 {
        problems.push(format!(
            "{step:?}: {during:.0} ok/s during the fault against {before:.0} before"
        ));
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_under_faults_keeps_every_promise() {
    if common::cassandra_nodes().is_none_or(|n| n.len() < 3)
        || std::env::var("KEYCLAIM_TEST_CLUSTER_CTL").is_err()
    {
        eprintln!(
            "skipped: needs a cluster of three nodes in {} and KEYCLAIM_TEST_CLUSTER_CTL",
            common::CASSANDRA_ENV
        );
        return;
    }
    let seed = common::env_or("KEYCLAIM_TEST_CLUSTER_SEED", 1);
    let fault = Duration::from_secs(common::env_or("KEYCLAIM_TEST_CLUSTER_FAULT_SECS", 30));
    let steps = std::env::var("KEYCLAIM_TEST_CLUSTER_STEPS")
        .unwrap_or_else(|_| "kill,pause,quorum,proxy".into());
    let mut problems = Vec::new();
    for step in steps.split(',').map(Step::parse) {
        problems.extend(run_step(step, seed, fault).await);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
