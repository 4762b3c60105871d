//! Stopping a statement early (a cancel request, statement_timeout) without
//! lying about what it did.
//!
//! Dropping a statement's future halfway is fine for work that writes
//! nothing, but not for a write: a store write already sent may land after
//! the client was told "canceled", and the earlier rows of a multi-row
//! statement would stay. So while a write runs, an interrupt only
//! *requests* a stop ([`Stop::request`]); the write notices at its safe
//! points ([`check`]: before each row and after the last, and while it
//! waits for another statement's claim), undoes what it wrote, and answers
//! with the interrupt's error.
//!
//! The state travels as a task-local, set by [`Stop::scope`] around one
//! protocol message's work, so the engine and the claim protocol need no
//! extra parameter and know nothing of the wire.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{SqlError, SqlResult};

tokio::task_local! {
    static STOP: Arc<Stop>;
}

/// One statement's stop state.
#[derive(Default)]
pub struct Stop {
    requested: Mutex<Option<SqlError>>,
    /// Writes in progress (a statement's write section; nested for undo).
    writing: AtomicUsize,
}

impl Stop {
    /// Runs `work` with `self` as the current statement's stop state.
    pub async fn scope<F: Future>(self: Arc<Self>, work: F) -> F::Output {
        STOP.scope(self, work).await
    }

    /// Whether a write is under way, so that the work must not be dropped.
    pub fn is_writing(&self) -> bool {
        self.writing.load(Ordering::SeqCst) > 0
    }

    /// Asks the running write to stop at its next safe point with `error`.
    pub fn request(&self, error: SqlError) {
        self.requested.lock().get_or_insert(error);
    }
}

/// Marks the current statement as writing until dropped.
pub struct Writing(Option<Arc<Stop>>);

impl Drop for Writing {
    fn drop(&mut self) {
        if let Some(stop) = &self.0 {
            stop.writing.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Enters a write section: from here until the guard drops, an interrupt
/// waits for a safe point instead of dropping the work.
pub fn writing() -> Writing {
    Writing(
        STOP.try_with(|stop| {
            stop.writing.fetch_add(1, Ordering::SeqCst);
            stop.clone()
        })
        .ok(),
    )
}

/// A safe point: the interrupt's error if a stop was requested.
pub fn check() -> SqlResult<()> {
    let requested = STOP
        .try_with(|stop| stop.requested.lock().clone())
        .ok()
        .flatten();
    match requested {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Runs `work` (an undo) where no stop request reaches it: undoing must not
/// itself be interrupted by the interrupt that caused it.
pub async fn shielded<F: Future>(work: F) -> F::Output {
    let shield = Arc::new(Stop::default());
    shield.writing.fetch_add(1, Ordering::SeqCst);
    Box::pin(shield.scope(work)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::sqlstate;

    fn canceled() -> SqlError {
        SqlError::new(sqlstate::QUERY_CANCELED, "canceling statement")
    }

    #[tokio::test]
    async fn a_request_is_seen_at_the_next_check_and_not_when_shielded() {
        let stop = Arc::new(Stop::default());
        let seen = stop
            .clone()
            .scope(async {
                let _writing = writing();
                assert!(check().is_ok());
                STOP.with(|s| s.request(canceled()));
                let shielded = shielded(async { check() }).await;
                (shielded, check())
            })
            .await;
        assert!(seen.0.is_ok(), "an undo does not see the request");
        assert_eq!(seen.1.unwrap_err().code, sqlstate::QUERY_CANCELED);
        assert!(!stop.is_writing(), "the write section ended");
    }

    #[test]
    fn outside_a_statement_nothing_is_requested() {
        assert!(check().is_ok());
        drop(writing());
    }
}
