//! A Jepsen-style history check: many clients run random INSERT / UPDATE /
//! DELETE / SELECT through real connections to several keyclaim proxies that
//! share one store, while the store injects faults (ambiguous outcomes,
//! unavailability, stalls past the lease). Every invocation and answer is
//! recorded; at the end the history and the final state must show:
//!
//! - U: at most one live row per unique key; C: every live row's keys are
//!   claimed by it;
//! - no statement hung (every one was answered, once);
//! - every live row's contents come from a write that succeeded or whose
//!   outcome was reported unknown (40003), never from one that failed;
//! - the last acknowledged write to a row, when nothing else wrote to that
//!   row after it began, is what the row holds;
//! - every 23505 names a key some write had put in place by then;
//! - every row a SELECT returned was written by a write that began before
//!   the SELECT ended, and matches its WHERE.
//!
//! One statement in eight also gets a cancel request after a random delay of
//! up to 3 ms, so 57014 answers are checked like every other error: nothing
//! of the statement may stay.
//!
//! `KEYCLAIM_HISTORY_SECS` sets the budget (default 20), `KEYCLAIM_HISTORY_SEED`
//! the seed (default 1); the report prints both so a run can be repeated.
//! The faults wrap the embedded store, or Cassandra with
//! `KEYCLAIM_TEST_CASSANDRA`.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::history::{self, Answer, Worker};
use keyclaim::engine::EngineConfig;
use keyclaim::server::RunningServer;
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use keyclaim::store::Store;

const PROXIES: usize = 3;
const WORKERS: usize = 12;
const LEASE: Duration = Duration::from_millis(300);

async fn proxy(store: Arc<dyn Store>) -> RunningServer {
    common::proxy(
        store,
        EngineConfig {
            lease: LEASE,
            lock_timeout: Duration::from_secs(5),
            max_retries: 2,
            ..EngineConfig::default()
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_under_faults_are_correct() {
    let secs = common::env_or("KEYCLAIM_HISTORY_SECS", 20);
    let seed = common::env_or("KEYCLAIM_HISTORY_SEED", 1);
    let test = common::TestStore::fresh().await;
    let base = test.store.clone();
    let faulty = Arc::new(FaultyStore::new(
        base.clone(),
        FaultConfig {
            applied_then_unknown: 20,
            lost_then_unknown: 20,
            unavailable: 10,
            read_unknown: 10,
            stall: 5,
            stall_for: LEASE * 2,
            max_latency: Duration::from_millis(2),
            ..FaultConfig::none(seed)
        },
    ));
    let mut proxies = Vec::new();
    for _ in 0..PROXIES {
        proxies.push(proxy(faulty.clone()).await);
    }
    common::connect_to(proxies[0].addr())
        .await
        .batch_execute(history::TABLE)
        .await
        .unwrap();

    let stop = history::stop_after(Duration::from_secs(secs));
    let workers: Vec<_> = (0..WORKERS)
        .map(|n| {
            tokio::spawn(
                Worker {
                    n,
                    seed,
                    proxies: vec![proxies[n % PROXIES].addr()],
                    stop: stop.clone(),
                    hang_after: Duration::from_secs(30),
                    cancels: true,
                }
                .run(),
            )
        })
        .collect();
    let mut history = Vec::new();
    for w in workers {
        history.extend(w.await.unwrap());
    }

    // The final state, read past the faults.
    let (anomalies, live) = history::anomalies(&history, base.as_ref()).await;
    let count = |f: &dyn Fn(&history::Op) -> bool| history.iter().filter(|o| f(o)).count();
    let codes = history::answers_by_code(&history);
    eprintln!(
        "history: {} store, seed {seed}, {secs} s, {} operations ({} writes), answers {codes:?}, faults injected {} \
         (applied-then-unknown {}, lost-then-unknown {}, unavailable {}, read timeouts {}, stalls {}), \
         {} live rows, anomalies {}",
        base.kind(),
        history.len(),
        count(&|o| o.is_write()),
        faulty.counts.total(),
        faulty.counts.applied_then_unknown.load(Ordering::Relaxed),
        faulty.counts.lost_then_unknown.load(Ordering::Relaxed),
        faulty.counts.unavailable.load(Ordering::Relaxed),
        faulty.counts.read_unknown.load(Ordering::Relaxed),
        faulty.counts.stalls.load(Ordering::Relaxed),
        live,
        anomalies.len()
    );
    assert!(
        anomalies.is_empty(),
        "{} anomalies:\n{}",
        anomalies.len(),
        anomalies.join("\n")
    );
    // Not vacuous: the run did real work, met faults, and saw conflicts.
    assert!(history.len() > 200, "only {} operations", history.len());
    assert!(faulty.counts.total() > 10, "too few faults injected");
    assert!(
        codes.get("23505").copied().unwrap_or(0) > 10,
        "too few conflicts: {codes:?}"
    );
    assert!(count(&|o| o.is_write() && matches!(o.answer, Answer::Ok(1, _))) > 50);
    assert!(
        count(&|o| o.is_write() && o.code() == Some("57014")) > 5,
        "too few canceled writes: {codes:?}"
    );
    for p in proxies {
        p.shutdown().await;
    }
    test.cleanup().await;
}
