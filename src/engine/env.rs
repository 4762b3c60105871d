//! What expressions can see of the session while a statement runs.

use chrono::{DateTime, Utc};

use super::sequence::StatementSequences;
use crate::error::SqlResult;
use crate::session::Session;
use crate::sql::expr::{Env, SeqFunc};
use crate::types::Value;

/// A snapshot of the session's settings for one statement; owned, so row
/// streams can outlive the borrow of the connection's session.
pub struct SessionEnv {
    pub session: Session,
    pub now: DateTime<Utc>,
    /// What the statement's sequence functions answer (`engine::sequence`).
    pub sequences: parking_lot::Mutex<StatementSequences>,
}

impl SessionEnv {
    pub fn new(session: &Session) -> SessionEnv {
        SessionEnv {
            session: session.for_statement(),
            now: Utc::now(),
            sequences: parking_lot::Mutex::new(StatementSequences::new(session.sequences.clone())),
        }
    }
}

impl Env for SessionEnv {
    fn setting(&self, name: &str) -> Option<String> {
        self.session.setting(name)
    }
    fn user(&self) -> String {
        self.session.user.to_string()
    }
    fn database(&self) -> String {
        self.session.database.to_string()
    }
    fn statement_time(&self) -> DateTime<Utc> {
        self.now
    }
    fn sequence(&self, f: SeqFunc, args: &[Value]) -> SqlResult<Value> {
        self.sequences.lock().call(f, args)
    }
}
