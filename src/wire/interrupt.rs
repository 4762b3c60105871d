//! Ending a statement early: a cancel request from the client, or the
//! session's statement_timeout. An interrupt covers the work of one protocol
//! message (a Query's statement, an Execute), rows streaming included, as
//! PostgreSQL's timer does; both answer 57014.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{pending, FutureExt, Shared};
use tokio::time::{sleep_until, Instant};

use crate::error::{sqlstate, SqlError};
use crate::stop::Stop;

/// Fires when the client's cancel request for the current query arrives.
/// Resolves to Err when the query ends without one (the sender is replaced
/// for the next query), which is not a cancel.
pub(crate) type CancelSignal = Shared<oneshot::Receiver<()>>;

pub(crate) struct Interrupt {
    cancel: Option<CancelSignal>,
    deadline: Option<Instant>,
}

impl Interrupt {
    pub(crate) fn new(cancel: Option<CancelSignal>, timeout: Option<Duration>) -> Interrupt {
        Interrupt {
            cancel,
            deadline: timeout.map(|t| Instant::now() + t),
        }
    }

    fn is_inert(&self) -> bool {
        self.cancel.is_none() && self.deadline.is_none()
    }

    /// Resolves with the error to answer once the statement must end;
    /// never resolves otherwise.
    async fn fired(&self) -> SqlError {
        let canceled = async {
            match &self.cancel {
                Some(signal) if signal.clone().await.is_ok() => {}
                _ => pending::<()>().await,
            }
        };
        let timed_out = async {
            match self.deadline {
                Some(deadline) => sleep_until(deadline).await,
                None => pending::<()>().await,
            }
        };
        tokio::select! {
            _ = canceled => SqlError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to user request",
            ),
            _ = timed_out => SqlError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to statement timeout",
            ),
        }
    }

    /// Runs `work` unless the statement is interrupted first; then `work` is
    /// dropped where it stands. For work that writes nothing.
    pub(crate) fn guard<'a, T, E, F>(
        &'a self,
        work: F,
    ) -> Guarded<'a, F, impl Future<Output = SqlError> + 'a>
    where
        F: Future<Output = Result<T, E>>,
        E: From<SqlError>,
    {
        self.guarded(None, work)
    }

    /// As [`guard`](Self::guard), for a statement that may write with
    /// `stop`: interrupted in a write, it is asked to stop at its next safe
    /// point, where it undoes what it wrote and answers the interrupt's
    /// error itself (`crate::stop`); otherwise it is dropped.
    pub(crate) fn guard_write<'a, T, E, F>(
        &'a self,
        stop: &'a Stop,
        work: F,
    ) -> Guarded<'a, F, impl Future<Output = SqlError> + 'a>
    where
        F: Future<Output = Result<T, E>>,
        E: From<SqlError>,
    {
        self.guarded(Some(stop), work)
    }

    fn guarded<'a, F>(
        &'a self,
        stop: Option<&'a Stop>,
        work: F,
    ) -> Guarded<'a, F, impl Future<Output = SqlError> + 'a> {
        Guarded {
            work,
            fired: (!self.is_inert()).then(|| self.fired()),
            stop,
        }
    }
}

pin_project_lite::pin_project! {
    /// Work under an interrupt. Written out rather than as an async fn so
    /// that the work, often a statement's large future, is held once, in
    /// place (an async fn would hold its argument and the pinned copy).
    pub(crate) struct Guarded<'a, F, G> {
        #[pin]
        work: F,
        // None once fired, or when nothing can interrupt.
        #[pin]
        fired: Option<G>,
        // Where a statement that writes is asked to stop; None for work
        // that writes nothing.
        stop: Option<&'a Stop>,
    }
}

impl<T, E, F, G> Future for Guarded<'_, F, G>
where
    F: Future<Output = Result<T, E>>,
    G: Future<Output = SqlError>,
    E: From<SqlError>,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        // The work first: done work is answered even if an interrupt fired.
        if let Poll::Ready(done) = this.work.as_mut().poll(cx) {
            return Poll::Ready(done);
        }
        let Some(fired) = this.fired.as_mut().as_pin_mut() else {
            return Poll::Pending;
        };
        let Poll::Ready(error) = fired.poll(cx) else {
            return Poll::Pending;
        };
        this.fired.set(None);
        match this.stop {
            Some(stop) if stop.is_writing() => {
                stop.request(error);
                this.work.poll(cx)
            }
            _ => Poll::Ready(Err(error.into())),
        }
    }
}

/// A cancel signal from a receiver of pgwire's per-connection cancel handle.
pub(crate) fn signal(receiver: oneshot::Receiver<()>) -> CancelSignal {
    receiver.shared()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SqlResult;

    #[tokio::test]
    async fn a_timeout_ends_slow_work_with_57014() {
        let interrupt = Interrupt::new(None, Some(Duration::from_millis(100)));
        let slow = async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            SqlResult::Ok(())
        };
        let e = interrupt.guard(slow).await.unwrap_err();
        assert_eq!(e.code, "57014");
        assert_eq!(e.message, "canceling statement due to statement timeout");
    }

    #[tokio::test]
    async fn a_cancel_ends_work_but_a_dropped_sender_does_not() {
        let (tx, rx) = oneshot::channel();
        let interrupt = Interrupt::new(Some(signal(rx)), None);
        tx.send(()).unwrap();
        let e = interrupt
            .guard(pending::<SqlResult<()>>())
            .await
            .unwrap_err();
        assert_eq!(e.message, "canceling statement due to user request");

        let (tx, rx) = oneshot::channel::<()>();
        let interrupt = Interrupt::new(Some(signal(rx)), None);
        drop(tx);
        assert_eq!(
            interrupt.guard(async { SqlResult::Ok(1) }).await.unwrap(),
            1
        );
    }
}
