//! A fault-injecting Store wrapper, for tests: ambiguous outcomes (applied
//! or not, reported as a timeout), Unavailable, latency, and stalls longer
//! than the lease.
//!
//! Decisions are a hash of (seed, operation, partition, how many times that
//! partition has been touched), so a run with the same seed and the same
//! per-partition order of operations meets the same faults: a failure can be
//! replayed. Catalog and DDL operations are never faulted.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use futures::future::BoxFuture;

use super::layer::{Layer, Layered};
use super::{Cas, Store, StoreError, StoreResult};

/// Chances are in parts per thousand of operations of that kind.
#[derive(Debug, Clone)]
pub struct FaultConfig {
    pub seed: u64,
    /// An LWT applies, but the caller is told the outcome is unknown.
    pub applied_then_unknown: u32,
    /// An LWT does not apply (the write is lost), and the caller is told unknown.
    pub lost_then_unknown: u32,
    /// An LWT is refused before it starts: certainly not applied.
    pub unavailable: u32,
    /// A read times out.
    pub read_unknown: u32,
    /// An operation stalls for `stall_for` first (a GC pause, a slow network).
    pub stall: u32,
    pub stall_for: Duration,
    /// Every operation waits up to this long (uniformly): half of it before
    /// it is sent, and for a write the other half after it applied, before
    /// its reply (so a caller can give up on a write that has landed).
    pub max_latency: Duration,
    /// Catalog entries (DDL) get the same faults as rows. Off by default:
    /// most tests inject faults into statements, not into their setup.
    pub catalog: bool,
}

impl FaultConfig {
    /// No faults at all.
    pub fn none(seed: u64) -> FaultConfig {
        FaultConfig {
            seed,
            applied_then_unknown: 0,
            lost_then_unknown: 0,
            unavailable: 0,
            read_unknown: 0,
            stall: 0,
            stall_for: Duration::ZERO,
            max_latency: Duration::ZERO,
            catalog: false,
        }
    }
}

/// How many faults of each kind were injected.
#[derive(Debug, Default)]
pub struct FaultCounts {
    pub applied_then_unknown: AtomicU64,
    pub lost_then_unknown: AtomicU64,
    pub unavailable: AtomicU64,
    pub read_unknown: AtomicU64,
    pub stalls: AtomicU64,
}

impl FaultCounts {
    pub fn total(&self) -> u64 {
        [
            &self.applied_then_unknown,
            &self.lost_then_unknown,
            &self.unavailable,
            &self.read_unknown,
            &self.stalls,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

/// The fault-injecting layer; [`FaultyStore`] is a store wrapped in it.
pub struct Faults {
    cfg: FaultConfig,
    touches: DashMap<u64, u64>,
    pub counts: FaultCounts,
}

pub type FaultyStore = Layered<Faults>;

impl Layered<Faults> {
    pub fn new(inner: Arc<dyn Store>, cfg: FaultConfig) -> FaultyStore {
        Layered::wrap(
            inner,
            Faults {
                cfg,
                touches: DashMap::new(),
                counts: FaultCounts::default(),
            },
        )
    }
}

/// What to do to one write.
enum WriteFault {
    None,
    AppliedThenUnknown,
    LostThenUnknown,
    Unavailable,
}

impl Faults {
    /// A deterministic draw in 0..1000 for this touch of this partition,
    /// plus a second one for latency.
    fn draw(&self, op: &str, space: &str, key: &[u8]) -> (u32, u32) {
        let mut h = DefaultHasher::new();
        (op, space, key).hash(&mut h);
        let partition = h.finish();
        let n = {
            let mut touches = self.touches.entry(partition).or_insert(0);
            *touches += 1;
            *touches
        };
        let mut h = DefaultHasher::new();
        (self.cfg.seed, partition, n).hash(&mut h);
        let x = h.finish();
        ((x % 1000) as u32, ((x >> 32) % 1000) as u32)
    }

    /// Stalls, and the latency before an operation is sent.
    async fn delay(&self, d: u32, l: u32) {
        if d < self.cfg.stall {
            self.counts.stalls.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(self.cfg.stall_for).await;
        }
        self.half_latency(l).await;
    }

    /// Half the drawn latency (before a request, or before a reply).
    async fn half_latency(&self, l: u32) {
        if !self.cfg.max_latency.is_zero() {
            tokio::time::sleep(self.cfg.max_latency.mul_f64(f64::from(l) / 2000.0)).await;
        }
    }

    /// The fault for one write, and its latency draw.
    async fn write_fault(&self, op: &str, space: &str, key: &[u8]) -> (WriteFault, u32) {
        let (d, l) = self.draw(op, space, key);
        // Stalls use the top of the range, the others the bottom, so one
        // draw decides both without correlating them.
        self.delay(999 - d, l).await;
        (self.pick_write_fault(d), l)
    }

    fn pick_write_fault(&self, d: u32) -> WriteFault {
        let c = &self.cfg;
        let mut edge = c.applied_then_unknown;
        if d < edge {
            self.counts
                .applied_then_unknown
                .fetch_add(1, Ordering::Relaxed);
            return WriteFault::AppliedThenUnknown;
        }
        edge += c.lost_then_unknown;
        if d < edge {
            self.counts
                .lost_then_unknown
                .fetch_add(1, Ordering::Relaxed);
            return WriteFault::LostThenUnknown;
        }
        edge += c.unavailable;
        if d < edge {
            self.counts.unavailable.fetch_add(1, Ordering::Relaxed);
            return WriteFault::Unavailable;
        }
        WriteFault::None
    }

    async fn read_fault(&self, op: &str, space: &str, key: &[u8]) -> StoreResult<()> {
        let (d, l) = self.draw(op, space, key);
        self.delay(999 - d, l).await;
        if d < self.cfg.read_unknown {
            self.counts.read_unknown.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError::Unknown("injected read timeout".into()));
        }
        Ok(())
    }
}

impl Layer for Faults {
    /// Run a write with whatever fault this touch draws.
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        space: &'a str,
        key: &'a [u8],
        write: BoxFuture<'a, StoreResult<Cas<T>>>,
    ) -> BoxFuture<'a, StoreResult<Cas<T>>> {
        Box::pin(async move {
            let (fault, l) = self.write_fault(op, space, key).await;
            match fault {
                WriteFault::None => {
                    let reply = write.await;
                    self.half_latency(l).await;
                    reply
                }
                WriteFault::AppliedThenUnknown => {
                    write.await?;
                    self.half_latency(l).await;
                    Err(StoreError::Unknown(
                        "injected: applied, then timed out".into(),
                    ))
                }
                WriteFault::LostThenUnknown => {
                    Err(StoreError::Unknown("injected: lost, timed out".into()))
                }
                WriteFault::Unavailable => {
                    Err(StoreError::Unavailable("injected: unavailable".into()))
                }
            }
        })
    }

    fn read<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        space: &'a str,
        key: &'a [u8],
        read: BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        Box::pin(async move {
            self.read_fault(op, space, key).await?;
            read.await
        })
    }

    /// A plain write draws the faults an LWT draws: lost or applied, and
    /// then unknown, or unavailable.
    fn write<'a>(
        &'a self,
        op: &'static str,
        space: &'a str,
        key: &'a [u8],
        write: BoxFuture<'a, StoreResult<()>>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let as_cas = Box::pin(async move { write.await.map(|()| Cas::<()>::Applied) });
        Box::pin(async move { self.lwt(op, space, key, as_cas).await.map(|_| ()) })
    }

    fn wraps_catalog(&self) -> bool {
        self.cfg.catalog
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::ClaimRecord;
    use uuid::Uuid;

    fn claim(txn: Uuid) -> ClaimRecord {
        ClaimRecord {
            owner: b"o".to_vec(),
            txn,
        }
    }

    /// The outcomes of 200 claim inserts on distinct keys under `cfg`.
    async fn outcomes(cfg: FaultConfig) -> Vec<String> {
        let mem = Arc::new(MemoryStore::new());
        let faulty = FaultyStore::new(mem.clone(), cfg);
        let mut out = Vec::new();
        for i in 0..200u32 {
            let key = i.to_be_bytes();
            let r = faulty.insert_claim("c", &key, claim(Uuid::nil())).await;
            let landed = mem.read_claim("c", &key).await.unwrap().is_some();
            out.push(format!("{r:?}/{landed}"));
        }
        out
    }

    fn noisy(seed: u64) -> FaultConfig {
        FaultConfig {
            applied_then_unknown: 100,
            lost_then_unknown: 100,
            unavailable: 100,
            ..FaultConfig::none(seed)
        }
    }

    #[tokio::test]
    async fn the_same_seed_replays_the_same_faults() {
        assert_eq!(outcomes(noisy(7)).await, outcomes(noisy(7)).await);
        assert_ne!(outcomes(noisy(7)).await, outcomes(noisy(8)).await);
    }

    #[tokio::test]
    async fn each_fault_does_what_it_says() {
        let all = outcomes(noisy(3)).await;
        let count = |p: &str| all.iter().filter(|o| o.starts_with(p)).count();
        // Applied-then-unknown landed; lost-then-unknown and unavailable did not.
        assert!(all
            .iter()
            .any(|o| o.contains("applied, then timed out") && o.ends_with("/true")));
        assert!(all
            .iter()
            .any(|o| o.contains("lost, timed out") && o.ends_with("/false")));
        assert!(all
            .iter()
            .any(|o| o.contains("unavailable") && o.ends_with("/false")));
        assert!(!all
            .iter()
            .any(|o| o.contains("lost, timed out") && o.ends_with("/true")));
        assert!(count("Ok(Applied)") > 100, "{all:?}");
        assert!(outcomes(FaultConfig::none(3))
            .await
            .iter()
            .all(|o| o == "Ok(Applied)/true"));
    }
}
