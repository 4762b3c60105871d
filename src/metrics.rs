//! Metrics users watch, in Prometheus' text format: statements by kind and
//! outcome, their latency, LWTs, reads and plain writes per statement, and the claim
//! protocol's events (conflicts, waits, fences, retries, restarts, unknown
//! outcomes; see `claims::Event`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Store operations one statement made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ops {
    pub lwts: u64,
    pub reads: u64,
    /// Plain writes (index entries, `claims::index`).
    pub writes: u64,
}

/// The store operations of one statement so far, counted as they happen,
/// including while its rows stream to the client after `execute` returned.
#[derive(Debug, Default)]
pub struct Counter {
    lwts: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl Counter {
    pub fn ops(&self) -> Ops {
        Ops {
            lwts: self.lwts.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }
}

tokio::task_local! {
    static OPS: Arc<Counter>;
}

/// Run `f`, counting the store operations it makes (in this task).
pub fn counting<F: Future>(f: F) -> impl Future<Output = (F::Output, Arc<Counter>)> {
    // Not an async fn: that would hold `f` twice (as its argument and
    // inside the scope), and a statement's future is large.
    let counter = Arc::new(Counter::default());
    futures::FutureExt::map(OPS.scope(counter.clone(), f), move |out| (out, counter))
}

/// Called by the counting store for every LWT.
pub fn note_lwt() {
    let _ = OPS.try_with(|c| c.lwts.fetch_add(1, Ordering::Relaxed));
}

/// Called by the counting store for every read (including scan pages).
pub fn note_read() {
    let _ = OPS.try_with(|c| c.reads.fetch_add(1, Ordering::Relaxed));
}

/// Called by the counting store for every plain write (an index entry).
pub fn note_write() {
    let _ = OPS.try_with(|c| c.writes.fetch_add(1, Ordering::Relaxed));
}

/// Record one statement: its kind ("select", "insert", ...), outcome ("ok"
/// or its SQLSTATE), latency and store operations.
pub fn statement(kind: &'static str, outcome: &str, elapsed: Duration, ops: Ops) {
    let Some(handles) = HANDLES.get() else {
        return; // no recorder installed: nothing would be kept
    };
    let m = handles.of_kind(kind);
    if outcome == "ok" {
        m.ok.increment(1);
    } else {
        let outcome = outcome.to_owned();
        metrics::counter!("keyclaim_statements_total", "kind" => kind, "outcome" => outcome)
            .increment(1);
    }
    m.seconds.record(elapsed.as_secs_f64());
    m.lwts.record(ops.lwts as f64);
    m.reads.record(ops.reads as f64);
    m.writes.record(ops.writes as f64);
}

/// How a statement's plan was found: "text" (kept for the same text),
/// "shape" (kept for a text that differs only in its literal values,
/// `sql::shape`) or "planned" (planned now).
pub fn plan_found(how: &'static str) {
    if let Some(handles) = HANDLES.get() {
        match how {
            "text" => handles.plans[0].increment(1),
            "shape" => handles.plans[1].increment(1),
            _ => handles.plans[2].increment(1),
        }
    }
}

/// The metrics recorded for every statement, registered once. Asking the
/// recorder for them by name and labels each time (building the key,
/// hashing it, comparing it in the registry, five times a statement) was
/// about 5 % of a prepared point select's CPU.
struct Handles {
    kinds: parking_lot::RwLock<Vec<(&'static str, Arc<KindMetrics>)>>,
    /// keyclaim_plans_total by "text", "shape", "planned".
    plans: [metrics::Counter; 3],
}

/// One statement kind's metrics (its statements with outcome "ok").
struct KindMetrics {
    ok: metrics::Counter,
    seconds: metrics::Histogram,
    lwts: metrics::Histogram,
    reads: metrics::Histogram,
    writes: metrics::Histogram,
}

/// Set once the recorder is installed ([`serve`]): a handle taken before
/// that would belong to no recorder and drop what it is given.
static HANDLES: OnceLock<Handles> = OnceLock::new();

impl Handles {
    fn new() -> Handles {
        Handles {
            kinds: parking_lot::RwLock::new(Vec::new()),
            plans: ["text", "shape", "planned"]
                .map(|how| metrics::counter!("keyclaim_plans_total", "found" => how)),
        }
    }

    /// The kinds are a handful of constants: a scan of them is cheaper
    /// than hashing.
    fn of_kind(&self, kind: &'static str) -> Arc<KindMetrics> {
        if let Some((_, m)) = self.kinds.read().iter().find(|(k, _)| *k == kind) {
            return m.clone();
        }
        let mut kinds = self.kinds.write();
        if let Some((_, m)) = kinds.iter().find(|(k, _)| *k == kind) {
            return m.clone();
        }
        let m = Arc::new(KindMetrics {
            ok: metrics::counter!("keyclaim_statements_total", "kind" => kind, "outcome" => "ok"),
            seconds: metrics::histogram!("keyclaim_statement_seconds", "kind" => kind),
            lwts: metrics::histogram!("keyclaim_statement_lwts", "kind" => kind),
            reads: metrics::histogram!("keyclaim_statement_reads", "kind" => kind),
            writes: metrics::histogram!("keyclaim_statement_writes", "kind" => kind),
        });
        kinds.push((kind, m.clone()));
        m
    }
}

/// A statement's rows, still counting its store operations while the
/// client takes them (a scan reads page by page as it streams); the
/// statement is recorded when the stream ends, fails or is dropped.
pub struct CountedRows<S> {
    inner: S,
    counter: Arc<Counter>,
    kind: &'static str,
    started: Instant,
    /// The SQLSTATE of an error the stream yielded, if any.
    failed: Option<&'static str>,
    recorded: bool,
}

impl<S> CountedRows<S> {
    pub fn new(inner: S, counter: Arc<Counter>, kind: &'static str, started: Instant) -> Self {
        CountedRows {
            inner,
            counter,
            kind,
            started,
            failed: None,
            recorded: false,
        }
    }

    fn record(&mut self) {
        if !self.recorded {
            self.recorded = true;
            let outcome = self.failed.unwrap_or("ok");
            statement(
                self.kind,
                outcome,
                self.started.elapsed(),
                self.counter.ops(),
            );
        }
    }
}

impl<S, T> futures::Stream for CountedRows<S>
where
    S: futures::Stream<Item = crate::error::SqlResult<T>> + Unpin,
{
    type Item = crate::error::SqlResult<T>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        let counter = this.counter.clone();
        let polled = OPS.sync_scope(counter, || {
            std::pin::Pin::new(&mut this.inner).poll_next(cx)
        });
        match &polled {
            std::task::Poll::Ready(Some(Err(e))) => {
                this.failed = Some(e.code);
                this.record();
            }
            std::task::Poll::Ready(None) => this.record(),
            _ => {}
        }
        polled
    }
}

impl<S> Drop for CountedRows<S> {
    fn drop(&mut self) {
        self.record();
    }
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
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Suffix("_writes".into()),
                &[0.0, 1.0, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 256.0],
            )
        })
        .and_then(|b| b.install())
        .map_err(|e| format!("metrics endpoint on {addr}: {e}"))?;
    HANDLES.get_or_init(Handles::new);
    Ok(())
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
            note_write();
        })
        .await;
        assert_eq!(
            ops.ops(),
            Ops {
                lwts: 2,
                reads: 1,
                writes: 1
            }
        );
        // Outside a counting scope nothing is recorded and nothing breaks.
        note_lwt();
        let ((), ops) = counting(async {}).await;
        assert_eq!(ops.ops(), Ops::default());
    }
}
