//! The one place driver errors become the claim protocol's two outcomes:
//! `Unavailable` (certainly not applied: safe to report, nothing to repeat)
//! and `Unknown` (may have applied: the protocol repeats the step with the
//! same txn, and answers 40003 if it still cannot tell).
//!
//! When in doubt the answer is `Unknown`: calling an applied write "not
//! applied" could let a statement report an error for a row it wrote,
//! while repeating a step that did not apply costs only a round trip.

use scylla::errors::{
    DbError, ExecutionError, PagerExecutionError, PrepareError, RequestAttemptError,
};
use scylla::statement::Consistency;

use std::sync::atomic::{AtomicU64, Ordering};

use tracing::warn;

use crate::store::StoreError;

/// CAS_WRITE_UNKNOWN (protocol v5, Cassandra 4+): the Paxos proposal
/// reached some replicas but not a quorum; a later round may complete it.
const CAS_WRITE_UNKNOWN: i32 = 0x1700;

/// Classify a failed request. `lwt`: the request was a compare-and-set
/// (its Paxos round may have started); otherwise a read or a plain write.
pub fn classify(err: &ExecutionError, lwt: bool) -> StoreError {
    // The client sees a short reason; the driver's account goes to the
    // log, at most once a second: a sick cluster fails thousands.
    let text = summary(err);
    if let Some(left_out) = FAILURE_LOG.ready() {
        warn!(cause = %err, lwt, left_out, "a Cassandra request failed (left_out: failures since the last such line)");
    }
    let ambiguous = match err {
        ExecutionError::LastAttemptError(e) => attempt_ambiguous(e, lwt),
        // The client gave up waiting; the request may still run.
        ExecutionError::RequestTimeout(_) => true,
        // Never sent: no node to send to, no connection, or refused before sending.
        ExecutionError::EmptyPlan
        | ExecutionError::ConnectionPoolError(_)
        | ExecutionError::BadQuery(_)
        | ExecutionError::PrepareError(_)
        | ExecutionError::UseKeyspaceError(_) => false,
        // Schema agreement is awaited after DDL that did run.
        ExecutionError::SchemaAgreementError(_) | ExecutionError::MetadataError(_) => true,
        _ => true,
    };
    if ambiguous {
        StoreError::Unknown(text)
    } else {
        StoreError::Unavailable(text)
    }
}

static FAILURE_LOG: Throttle = Throttle::new(1000);

/// Lets one of a kind of repeated log line through per period, counting
/// those it holds back.
struct Throttle {
    period_ms: u64,
    next_ms: AtomicU64,
    left_out: AtomicU64,
}

impl Throttle {
    const fn new(period_ms: u64) -> Throttle {
        Throttle {
            period_ms,
            next_ms: AtomicU64::new(0),
            left_out: AtomicU64::new(0),
        }
    }

    /// Some(lines held back since the last one) when this one may go out.
    fn ready(&self) -> Option<u64> {
        let now = crate::claims::now_ms();
        let next = self.next_ms.load(Ordering::Relaxed);
        let mine = now >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now + self.period_ms,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
        if !mine {
            self.left_out.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.left_out.swap(0, Ordering::Relaxed))
    }
}

/// What went wrong, in words a client can act on.
fn summary(err: &ExecutionError) -> String {
    match err {
        ExecutionError::EmptyPlan | ExecutionError::ConnectionPoolError(_) => {
            "no Cassandra node is reachable".into()
        }
        ExecutionError::RequestTimeout(t) => {
            format!("Cassandra did not answer within {} ms", t.as_millis())
        }
        ExecutionError::LastAttemptError(RequestAttemptError::BrokenConnectionError(_)) => {
            "the connection to Cassandra broke during the request".into()
        }
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, msg)) => match db {
            DbError::Unavailable {
                consistency,
                required,
                alive,
            } => format!(
                "not enough Cassandra replicas are up for {consistency} ({alive} of {required})"
            ),
            DbError::WriteTimeout { .. } | DbError::Other(CAS_WRITE_UNKNOWN) => {
                "Cassandra timed out on a write".into()
            }
            DbError::ReadTimeout { .. } => "Cassandra timed out on a read".into(),
            DbError::Overloaded => "Cassandra is overloaded".into(),
            DbError::IsBootstrapping => "the Cassandra node is still starting".into(),
            _ => format!("Cassandra refused the request: {msg}"),
        },
        other => format!("Cassandra request failed: {other}"),
    }
}

/// A paged read that could not start: a read applies nothing.
pub fn classify_pager(err: &PagerExecutionError) -> StoreError {
    StoreError::Unavailable(err.to_string())
}

/// Preparing a statement runs nothing.
pub fn classify_prepare(err: &PrepareError) -> StoreError {
    StoreError::Unavailable(format!("cannot prepare a statement: {err}"))
}

fn attempt_ambiguous(err: &RequestAttemptError, lwt: bool) -> bool {
    match err {
        RequestAttemptError::DbError(db, _) => db_ambiguous(db, lwt),
        // Failed before anything left the driver.
        RequestAttemptError::SerializationError(_)
        | RequestAttemptError::CqlRequestSerialization(_)
        | RequestAttemptError::UnableToAllocStreamId => false,
        // The connection broke with the request possibly sent, or the
        // reply could not be read: it may have run.
        RequestAttemptError::BrokenConnectionError(_) => true,
        _ => true,
    }
}

fn db_ambiguous(err: &DbError, lwt: bool) -> bool {
    match err {
        // Any write type: CAS (the Paxos round began and may complete),
        // SIMPLE (an LWT's commit, or a plain write, reached some replicas).
        DbError::WriteTimeout { .. } => true,
        // Before Paxos the coordinator checks liveness at the serial
        // consistency: nothing ran. At the commit consistency the proposal
        // was already accepted, so a later round may apply it.
        DbError::Unavailable { consistency, .. } => {
            lwt && !matches!(consistency, Consistency::Serial | Consistency::LocalSerial)
        }
        DbError::Other(CAS_WRITE_UNKNOWN) => true,
        DbError::ReadTimeout { .. } | DbError::ReadFailure { .. } => true,
        DbError::WriteFailure { .. } => true,
        DbError::RateLimitReached {
            rejected_by_coordinator,
            ..
        } => !rejected_by_coordinator,
        // Refused by the coordinator before it did anything.
        DbError::Overloaded
        | DbError::IsBootstrapping
        | DbError::Unprepared { .. }
        | DbError::SyntaxError
        | DbError::Invalid
        | DbError::AlreadyExists { .. }
        | DbError::Unauthorized
        | DbError::AuthenticationError
        | DbError::ConfigError
        | DbError::TruncateError
        | DbError::FunctionFailure { .. }
        | DbError::ProtocolError => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use scylla::errors::{
        BrokenConnectionErrorKind, ConnectionError, ConnectionPoolError, OperationType,
    };

    use scylla::errors::WriteType;

    use super::*;

    fn db(e: DbError) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, "from the node".into()))
    }

    fn write_timeout(write_type: WriteType) -> ExecutionError {
        db(DbError::WriteTimeout {
            consistency: Consistency::LocalQuorum,
            received: 1,
            required: 2,
            write_type,
        })
    }

    fn unavailable(consistency: Consistency) -> ExecutionError {
        db(DbError::Unavailable {
            consistency,
            required: 2,
            alive: 1,
        })
    }

    fn unknown(e: &ExecutionError, lwt: bool) -> bool {
        match classify(e, lwt) {
            StoreError::Unknown(_) => true,
            StoreError::Unavailable(_) => false,
        }
    }

    #[test]
    fn a_throttle_lets_one_line_through_per_period_and_counts_the_rest() {
        let t = Throttle::new(60_000);
        assert_eq!(t.ready(), Some(0));
        assert_eq!(t.ready(), None);
        assert_eq!(t.ready(), None);
        t.next_ms.store(0, Ordering::Relaxed); // the period is over
        assert_eq!(t.ready(), Some(2));
    }

    #[test]
    fn write_timeouts_are_ambiguous() {
        for wt in [WriteType::Cas, WriteType::Simple, WriteType::BatchLog] {
            assert!(unknown(&write_timeout(wt.clone()), true), "{wt:?}");
        }
        assert!(unknown(&db(DbError::Other(CAS_WRITE_UNKNOWN)), true));
        assert!(unknown(
            &db(DbError::WriteFailure {
                consistency: Consistency::LocalQuorum,
                received: 1,
                required: 2,
                numfailures: 1,
                write_type: WriteType::Cas,
            }),
            true
        ));
    }

    #[test]
    fn client_timeouts_and_broken_connections_are_ambiguous() {
        assert!(unknown(
            &ExecutionError::RequestTimeout(std::time::Duration::from_secs(1)),
            true
        ));
        let broken = RequestAttemptError::BrokenConnectionError(
            BrokenConnectionErrorKind::ChannelError.into(),
        );
        assert!(unknown(&ExecutionError::LastAttemptError(broken), true));
    }

    #[test]
    fn unavailable_is_certain_before_paxos_and_ambiguous_after() {
        // Liveness checked for the Paxos round itself: nothing ran.
        assert!(!unknown(&unavailable(Consistency::LocalSerial), true));
        assert!(!unknown(&unavailable(Consistency::Serial), true));
        // At the commit consistency: the proposal may already be accepted.
        assert!(unknown(&unavailable(Consistency::LocalQuorum), true));
        // A read or plain write refused as unavailable never ran.
        assert!(!unknown(&unavailable(Consistency::LocalQuorum), false));
    }

    #[test]
    fn refusals_before_sending_are_certain() {
        let refused = ConnectionError::IoError(Arc::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        let pool = ExecutionError::ConnectionPoolError(ConnectionPoolError::Broken {
            last_connection_error: refused,
        });
        assert!(!unknown(&pool, true));
        assert!(!unknown(&ExecutionError::EmptyPlan, true));
        assert!(!unknown(&db(DbError::Overloaded), true));
        assert!(!unknown(&db(DbError::IsBootstrapping), true));
        assert!(!unknown(&db(DbError::Invalid), true));
        assert!(!unknown(
            &ExecutionError::LastAttemptError(RequestAttemptError::UnableToAllocStreamId),
            true
        ));
        assert!(!unknown(
            &db(DbError::RateLimitReached {
                op_type: OperationType::Write,
                rejected_by_coordinator: true,
            }),
            true
        ));
        assert!(unknown(
            &db(DbError::RateLimitReached {
                op_type: OperationType::Write,
                rejected_by_coordinator: false,
            }),
            true
        ));
    }

    #[test]
    fn clients_read_what_happened_not_driver_internals() {
        let text = |e: &ExecutionError| match classify(e, true) {
            StoreError::Unknown(t) | StoreError::Unavailable(t) => t,
        };
        assert_eq!(
            text(&ExecutionError::EmptyPlan),
            "no Cassandra node is reachable"
        );
        assert_eq!(
            text(&unavailable(Consistency::LocalSerial)),
            "not enough Cassandra replicas are up for LocalSerial (1 of 2)"
        );
        assert_eq!(
            text(&write_timeout(WriteType::Cas)),
            "Cassandra timed out on a write"
        );
        assert_eq!(
            text(&db(DbError::Invalid)),
            "Cassandra refused the request: from the node"
        );
    }

    #[test]
    fn read_timeouts_are_retried_as_unknown() {
        let e = db(DbError::ReadTimeout {
            consistency: Consistency::LocalSerial,
            received: 1,
            required: 2,
            data_present: false,
        });
        assert!(unknown(&e, false));
    }
}
