//! Stopping a statement early (a cancel request, statement_timeout) without
//! lying about what it did.
//!
//! Dropping a statement's future halfway is fine for work that writes
//! nothing, but not for a write: a store write already sent may land after
//! the client was told "canceled", and the earlier rows of a multi-row
//! statement would stay. So while a write runs ([`Stop::writing`]), an
//! interrupt only *requests* a stop ([`Stop::request`]); the write notices
//! at its safe points ([`Stop::check`]: before each row, between claiming a
//! row's keys and committing it, and while it waits for another statement's
//! claim), undoes what it wrote, and answers with the interrupt's error. A
//! row whose commit was already sent finishes; if it was the last, so does
//! the statement, and the answer is its success (a cancel that comes as a
//! statement completes is too late, as in PostgreSQL), so a single-row
//! write that answers 57014 never wrote anything, even for a moment.
//!
//! One `Stop` belongs to a connection and is [`reset`](Stop::reset) for each
//! statement; the engine hands it down to the writes (`RowWrite::stop`).
//! Work that must not be stopped (an undo) runs without one.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::error::{SqlError, SqlResult};

/// One statement's stop state.
#[derive(Debug, Default)]
pub struct Stop {
    requested: Mutex<Option<SqlError>>,
    /// Write sections in progress.
    writing: AtomicUsize,
}

impl Stop {
    /// Ready for the next statement: no stop requested.
    pub fn reset(&self) {
        *self.requested.lock() = None;
    }

    /// Whether a write is under way, so that the work must not be dropped.
    pub fn is_writing(&self) -> bool {
        self.writing.load(Ordering::SeqCst) > 0
    }

    /// Asks the running write to stop at its next safe point with `error`.
    pub fn request(&self, error: SqlError) {
        self.requested.lock().get_or_insert(error);
    }

    /// A safe point: the interrupt's error if a stop was requested.
    pub fn check(&self) -> SqlResult<()> {
        match self.requested.lock().clone() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Enters a write section: until the guard drops, an interrupt waits
    /// for a safe point instead of dropping the work.
    pub fn writing(&self) -> Writing<'_> {
        self.writing.fetch_add(1, Ordering::SeqCst);
        Writing(self)
    }
}

/// A write section of a statement (see [`Stop::writing`]).
pub struct Writing<'a>(&'a Stop);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.writing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// [`Stop::check`] for work that may have no stop state (an undo, a
/// DELETE past its first row, an index build).
pub fn check(stop: Option<&Stop>) -> SqlResult<()> {
    stop.map_or(Ok(()), Stop::check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::sqlstate;

    #[test]
    fn a_request_is_seen_at_the_next_check_until_reset() {
        let stop = Stop::default();
        assert!(stop.check().is_ok());
        {
            let _writing = stop.writing();
            assert!(stop.is_writing());
            stop.request(SqlError::new(sqlstate::QUERY_CANCELED, "canceled"));
            assert_eq!(stop.check().unwrap_err().code, sqlstate::QUERY_CANCELED);
            assert!(check(None).is_ok(), "work without a stop state runs on");
        }
        assert!(!stop.is_writing(), "the write section ended");
        stop.reset();
        assert!(stop.check().is_ok());
    }
}
