//! Commit stamps and snapshots (docs/transactions.md §9).
//!
//! A committed row state carries the stamp it was committed at, and a
//! statement shows of each row the newest state stamped at or before its
//! snapshot. Stamps come from the system clock, made strictly increasing
//! within the process, so that a transaction that commits after a
//! statement began (on this proxy, or on another proxy on this host) is
//! stamped after the statement's snapshot. Across hosts, clocks differ by
//! up to `max_clock_offset`: a statement then reads at its start plus
//! twice that offset, so it never misses a COMMIT answered before it
//! began, and a transaction committing within that window of its start may
//! be seen in part. Uniqueness and atomicity never depend on clocks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::store::Stamp;

static LAST: AtomicU64 = AtomicU64::new(0);

/// Now, as a stamp: the wall clock in nanoseconds, and never a stamp this
/// process handed out before.
pub fn now() -> Stamp {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = wall.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// The snapshot of a statement that starts now, given the largest offset
/// between proxies' clocks.
pub fn snapshot(max_offset: Duration) -> Stamp {
    now().saturating_add(2 * max_offset.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_strictly_increase_across_threads() {
        let handles: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| (0..10_000).map(|_| now()).collect::<Vec<_>>()))
            .collect();
        let mut all: Vec<Stamp> = handles
            .into_iter()
            .flat_map(|h| {
                let v = h.join().unwrap();
                assert!(v.windows(2).all(|w| w[0] < w[1]));
                v
            })
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a stamp was handed out twice");
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        assert!(wall.as_nanos() as u64 + 1_000_000_000 > now());
    }

    #[test]
    fn a_snapshot_reads_ahead_by_twice_the_offset() {
        let before = now();
        let s = snapshot(Duration::from_millis(5));
        assert!(s >= before + 10_000_000, "{s} {before}");
        assert!(s < now() + 10_000_000 + 1_000_000_000);
    }
}
