//! Proxies as engines in one process, for tests of what many proxies
//! sharing a store do: sessions that run SQL on an engine directly, a
//! proxy that dies (no goodbye, no heartbeat) and one that stalls (every
//! store operation held, as a SIGSTOPped or GC-paused process).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use keyclaim::engine::{Engine, EngineConfig, Outcome};
use keyclaim::error::SqlError;
use keyclaim::session::Session;
use keyclaim::store::layer::Layer;
use keyclaim::store::{Cas, Store, StoreResult};
use keyclaim::types::Value;

/// Holds every store operation (heartbeats included) while frozen, as a
/// SIGSTOPped or GC-paused proxy does.
#[derive(Default)]
struct FreezeFlag {
    frozen: AtomicBool,
    /// Armed by `freeze_after`: operations still let through.
    countdown: AtomicI64,
}

/// The layer: a handle on a flag the test flips.
#[derive(Clone)]
pub struct Freeze(Arc<FreezeFlag>);

impl Default for Freeze {
    fn default() -> Freeze {
        let flag = FreezeFlag::default();
        flag.countdown.store(-1, Ordering::SeqCst);
        Freeze(Arc::new(flag))
    }
}

impl Freeze {
    pub fn set(&self, frozen: bool) {
        self.0.frozen.store(frozen, Ordering::SeqCst);
    }

    /// Let `ops` more store operations through, then freeze: a proxy that
    /// stops halfway through a statement.
    pub fn freeze_after(&self, ops: i64) {
        self.0.countdown.store(ops, Ordering::SeqCst);
    }

    async fn thaw_wait(&self) {
        if self.0.countdown.load(Ordering::SeqCst) >= 0
            && self.0.countdown.fetch_sub(1, Ordering::SeqCst) <= 0
        {
            self.set(true);
        }
        while self.0.frozen.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Layer for Freeze {
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<Cas<T>>>,
    ) -> BoxFuture<'a, StoreResult<Cas<T>>> {
        Box::pin(async move {
            self.thaw_wait().await;
            write.await
        })
    }

    fn read<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        read: BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        Box::pin(async move {
            self.thaw_wait().await;
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
        Box::pin(async move {
            self.thaw_wait().await;
            write.await
        })
    }
}

/// A proxy with lease `lease`, a long lock timeout, and a catalog that
/// notices other proxies' DDL within 50 ms.
pub fn engine(store: Arc<dyn Store>, lease: Duration) -> Engine {
    Engine::new(
        store,
        EngineConfig {
            lease,
            lock_timeout: Duration::from_secs(20),
            catalog_refresh: Some(Duration::from_millis(50)),
            ..EngineConfig::default()
        },
    )
}

/// One session on a proxy.
pub struct Conn {
    pub engine: Engine,
    pub session: Session,
}

impl Conn {
    pub fn new(engine: &Engine) -> Conn {
        Conn {
            engine: engine.clone(),
            session: Session::new("keyclaim", "keyclaim", &HashMap::new()),
        }
    }

    /// The first value of the last statement of `sql`.
    pub async fn run(&mut self, sql: &str) -> Result<Option<Value>, SqlError> {
        let mut last = None;
        for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
            let own = self.session.open.as_ref().map(|o| o.id);
            for p in self.engine.prepare_in(statement, &[], own).await? {
                let done = self
                    .engine
                    .execute(&mut self.session, &p, Vec::new())
                    .await?;
                last = match done.outcome {
                    Outcome::Rows { mut rows, .. } => match rows.next().await {
                        Some(row) => row?.into_iter().next(),
                        None => None,
                    },
                    _ => None,
                };
            }
        }
        Ok(last)
    }

    pub async fn ok(&mut self, sql: &str) -> Option<Value> {
        self.run(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }

    pub async fn code(&mut self, sql: &str) -> &'static str {
        match self.run(sql).await {
            Ok(_) => "ok",
            Err(e) => e.code,
        }
    }

    /// Dies as a killed process does: no goodbye.
    pub fn die(self) {
        std::mem::forget(self.session);
    }
}
