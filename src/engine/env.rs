//! What expressions can see of the session while a statement runs.

use chrono::{DateTime, Utc};

use crate::session::Session;
use crate::sql::expr::Env;

/// A snapshot of the session's settings for one statement; owned, so row
/// streams can outlive the borrow of the connection's session.
pub struct SessionEnv {
    pub session: Session,
    pub now: DateTime<Utc>,
}

impl SessionEnv {
    pub fn new(session: &Session) -> SessionEnv {
        SessionEnv {
            session: session.for_statement(),
            now: Utc::now(),
        }
    }
}

impl Env for SessionEnv {
    fn setting(&self, name: &str) -> Option<String> {
        self.session.setting(name)
    }
    fn user(&self) -> String {
        self.session.user.clone()
    }
    fn database(&self) -> String {
        self.session.database.clone()
    }
    fn statement_time(&self) -> DateTime<Utc> {
        self.now
    }
}
