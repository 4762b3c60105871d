//! Waiters woken by what this proxy does: writers waiting for one of its
//! transactions to close (`intents::Peers::pause_for`). Nothing tells a
//! proxy what another proxy does, so every waiter keeps its poll as the
//! upper bound of a pause; a wake-up only cuts the pause short, and the
//! waiter then reads the store as it would have after the poll.
//!
//! Every waiter of a key wakes: each then waits for the next holder under
//! its own key. Advisory locks were tried this way (waiters of a lock key
//! woken at its release) and not kept: with every waiter of one key
//! racing for it at each release, 8 sessions on one lock ran at 0.86 of
//! polling (docs/performance.md).

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;

/// Who waits for which key.
pub struct Wakeups<K: Eq + Hash> {
    waiting: DashMap<K, Arc<Notify>>,
}

impl<K: Eq + Hash + Clone> Default for Wakeups<K> {
    fn default() -> Self {
        Wakeups {
            waiting: DashMap::new(),
        }
    }
}

/// A waiter's registration: made before the waiter looks at the state it
/// waits on, so that a wake-up after that look reaches it
/// (`notify_waiters` reaches every `Notified` already made, polled or not).
pub struct Watch(OwnedNotified);

impl Watch {
    /// Sleep `pause`, or until the key is woken.
    pub async fn pause(self, pause: Duration) {
        let _ = tokio::time::timeout(pause, self.0).await;
    }
}

impl<K: Eq + Hash + Clone> Wakeups<K> {
    /// Register for the next wake-up of `key`.
    pub fn watch(&self, key: &K) -> Watch {
        let notify = self.waiting.entry(key.clone()).or_default().clone();
        Watch(notify.notified_owned())
    }

    /// Wake everyone waiting for `key`.
    pub fn wake(&self, key: &K) {
        if let Some((_, waiting)) = self.waiting.remove(key) {
            waiting.notify_waiters();
        }
    }

    /// Drop `key`'s registrations when nothing will wake it any more
    /// (what it waited for is over already).
    pub fn forget(&self, key: &K) {
        self.waiting.remove(key);
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch made before the wake-up ends at it, even when it is first
    /// polled after; one made after waits out its pause.
    #[tokio::test]
    async fn a_watch_ends_at_the_wake_up_that_follows_it() {
        let wakeups = Wakeups::<u32>::default();
        let watch = wakeups.watch(&7);
        wakeups.wake(&7);
        tokio::time::timeout(
            Duration::from_secs(60),
            watch.pause(Duration::from_secs(600)),
        )
        .await
        .expect("woken before it was polled");
        assert!(wakeups.is_empty());
        let late = wakeups.watch(&7);
        let waited = tokio::time::Instant::now();
        late.pause(Duration::from_millis(20)).await;
        assert!(waited.elapsed() >= Duration::from_millis(20));
    }
}
