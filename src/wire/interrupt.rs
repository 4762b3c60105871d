//! Ending a statement early: a cancel request from the client, or the
//! session's statement_timeout. Both cover the whole statement, including
//! the time its rows take to stream, and both answer 57014 as PostgreSQL.

use std::future::Future;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{pending, FutureExt, Shared};
use futures::StreamExt;
use tokio::time::{sleep_until, Instant};

use crate::engine::RowStream;
use crate::error::{sqlstate, SqlError, SqlResult};

/// Fires when the client's cancel request for the current query arrives.
/// Resolves to Err when the query ends without one (the sender is replaced
/// for the next query), which is not a cancel.
pub(crate) type CancelSignal = Shared<oneshot::Receiver<()>>;

#[derive(Clone, Default)]
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
    /// dropped where it stands.
    pub(crate) async fn guard<T>(&self, work: impl Future<Output = SqlResult<T>>) -> SqlResult<T> {
        if self.is_inert() {
            return work.await;
        }
        tokio::select! {
            biased;
            done = work => done,
            error = self.fired() => Err(error),
        }
    }

    /// The same rows, ending with the interrupt's error if it fires first.
    pub(crate) fn guard_stream(self, rows: RowStream) -> RowStream {
        if self.is_inert() {
            return rows;
        }
        futures::stream::unfold(Some((rows, self)), |state| async move {
            let (mut rows, this) = state?;
            let next = tokio::select! {
                biased;
                row = rows.next() => Ok(row),
                error = this.fired() => Err(error),
            };
            match next {
                Ok(Some(row)) => Some((row, Some((rows, this)))),
                Ok(None) => None,
                Err(error) => Some((Err(error), None)),
            }
        })
        .boxed()
    }
}

/// A cancel signal from a receiver of pgwire's per-connection cancel handle.
pub(crate) fn signal(receiver: oneshot::Receiver<()>) -> CancelSignal {
    receiver.shared()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Value;

    #[tokio::test]
    async fn a_timeout_ends_slow_work_with_57014() {
        let interrupt = Interrupt::new(None, Some(Duration::from_millis(100)));
        let slow = async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(())
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
        assert_eq!(interrupt.guard(async { Ok(1) }).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_timeout_ends_a_row_stream() {
        let rows: RowStream = futures::stream::iter(vec![Ok(vec![Value::Int4(1)])])
            .chain(futures::stream::pending())
            .boxed();
        let interrupt = Interrupt::new(None, Some(Duration::from_millis(10)));
        let got: Vec<_> = interrupt.guard_stream(rows).collect().await;
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        assert_eq!(got[1].as_ref().unwrap_err().code, "57014");
    }
}
