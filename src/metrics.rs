//! Metrics users watch, in Prometheus' text format: statements by kind and
//! outcome, their latency, LWTs and reads per statement, and the claim
//! protocol's events (conflicts, waits, fences, retries, restarts, unknown
//! outcomes; see `claims::Event`).

use std::cell::Cell;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Store operations one statement made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ops {
    pub lwts: u64,
    pub reads: u64,
}

tokio::task_local! {
    static OPS: Cell<Ops>;
}

/// Run `f`, counting the store operations it makes (in this task).
pub async fn counting<F: Future>(f: F) -> (F::Output, Ops) {
    OPS.scope(Cell::new(Ops::default()), async {
        let out = f.await;
        (out, OPS.with(Cell::get))
    })
    .await
}

/// Called by the counting store for every LWT.
pub fn note_lwt() {
    let _ = OPS.try_with(|c| {
        let mut o = c.get();
        o.lwts += 1;
        c.set(o);
    });
}

/// Called by the counting store for every read (including scan pages).
pub fn note_read() {
    let _ = OPS.try_with(|c| {
        let mut o = c.get();
        o.reads += 1;
        c.set(o);
    });
}

/// Record one statement: its kind ("select", "insert", ...), outcome ("ok"
/// or its SQLSTATE), latency and store operations.
pub fn statement(kind: &'static str, outcome: &str, elapsed: Duration, ops: Ops) {
    let outcome = outcome.to_owned();
    metrics::counter!("keyclaim_statements_total", "kind" => kind, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("keyclaim_statement_seconds", "kind" => kind).record(elapsed.as_secs_f64());
    metrics::histogram!("keyclaim_statement_lwts", "kind" => kind).record(ops.lwts as f64);
    metrics::histogram!("keyclaim_statement_reads", "kind" => kind).record(ops.reads as f64);
}

/// Serve `/metrics` on `addr` (a background task of the current runtime).
pub fn serve(addr: SocketAddr) -> Result<(), String> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(
            Matcher::Full("keyclaim_statement_seconds".into()),
            &[
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0,
            ],
        )
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Suffix("_lwts".into()),
                &[0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0],
            )
        })
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Suffix("_reads".into()),
                &[0.0, 1.0, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 256.0],
            )
        })
        .and_then(|b| b.install())
        .map_err(|e| format!("metrics endpoint on {addr}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn operations_are_counted_per_task() {
        let ((), ops) = counting(async {
            note_lwt();
            note_lwt();
            note_read();
        })
        .await;
        assert_eq!(ops, Ops { lwts: 2, reads: 1 });
        // Outside a counting scope nothing is recorded and nothing breaks.
        note_lwt();
        let ((), ops) = counting(async {}).await;
        assert_eq!(ops, Ops::default());
    }
}
