//! Per-connection session state and the statements that only touch it:
//! SET / SHOW / RESET, BEGIN / COMMIT / ROLLBACK / SAVEPOINT, DISCARD.
//!
//! Settings are transactional as in PostgreSQL: a ROLLBACK (or ROLLBACK TO
//! a savepoint) restores them, and SET LOCAL lasts until the block ends;
//! the engine undoes the block's writes and DDL (`engine::txn`).

pub mod advisory;
pub mod cursors;
pub mod settings;
pub mod utility;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::error::SqlResult;
use crate::txn::{Admission, Block, LogMark, StmtTxn};
use settings::Kind;

pub use utility::Utility;

/// Settings by lowercase name. Shared: every statement takes a snapshot of
/// the session (`Session::for_statement`), and a change copies the map
/// once rather than every statement copying it.
pub type Settings = Arc<BTreeMap<String, String>>;

#[derive(Debug, Clone, Default)]
pub struct Session {
    /// Shared with each statement's copy of the session
    /// ([`Session::for_statement`]): not copied per statement.
    pub user: Arc<str>,
    pub database: Arc<str>,
    /// The transaction block this connection is in, if any.
    pub txn: Block,
    /// The block's transaction, from its first write until it ends.
    pub open: Option<crate::txn::OpenTxn>,
    /// The advisory locks the session holds (`engine::advisory`).
    pub advisory: advisory::AdvisoryLocks,
    /// Session-level values that differ from the built-in defaults, by
    /// lowercase name. Read settings through [`Session::setting`], which
    /// also applies SET LOCAL and the transaction's characteristics.
    pub settings: Settings,
    /// SET LOCAL values and the block's own characteristics (isolation,
    /// read-only), dropped when the block ends.
    local: Settings,
    /// The values at connection start: what RESET returns to.
    reset: Settings,
    /// What ROLLBACK restores: the settings at BEGIN, then one entry per
    /// SAVEPOINT. Empty outside a block.
    undo: Vec<Undo>,
    /// What currval and lastval answer (not transactional, as in PostgreSQL).
    pub sequences: SequenceValues,
    /// SET CONSTRAINTS in the open block.
    pub constraints: crate::txn::ConstraintModes,
    /// The SQL cursors it has declared.
    pub cursors: cursors::Cursors,
}

/// Setting `name` as the session settings `settings` and the block's
/// `local` ones give it (a snapshot's, or the session's own).
fn setting_in(settings: &Settings, local: &Settings, name: &str) -> Option<String> {
    let key = settings::folded(name);
    let key = key.as_ref();
    if let Some(v) = local.get(key) {
        return Some(v.clone());
    }
    match settings::lookup(key) {
        Some(g) => match g.kind {
            Kind::Transaction { default } => setting_in(settings, local, default),
            _ => Some(
                settings
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| g.default_value().to_owned()),
            ),
        },
        None => settings.get(key).cloned(),
    }
}

/// The ParameterStatus values of a settings snapshot
/// ([`Session::settings_snapshot`]): what a client that was sent that
/// snapshot's values last heard.
pub fn reported_in(settings: &Settings, local: &Settings) -> Vec<(&'static str, String)> {
    settings::GUCS
        .iter()
        .filter(|g| g.report)
        .map(|g| {
            (
                g.name,
                setting_in(settings, local, g.name).unwrap_or_default(),
            )
        })
        .collect()
}

/// The session's sequence values: the last value nextval (or setval with
/// is_called) gave each sequence, and the last nextval of any.
#[derive(Debug, Clone, Default)]
pub struct SequenceValues {
    pub current: HashMap<String, i64>,
    pub last: Option<i64>,
}

/// The settings as they were when a block or savepoint began.
#[derive(Debug, Clone)]
struct Undo {
    /// None for the block itself, else the savepoint's name.
    savepoint: Option<String>,
    settings: Settings,
    local: Settings,
    constraints: crate::txn::ConstraintModes,
    /// Where the transaction's log stood when it was set.
    log_mark: LogMark,
    /// How many transaction-level advisory locks the block had taken.
    advisory_mark: usize,
    /// How many cursors the session had declared.
    cursor_mark: u64,
}

impl Session {
    /// A new session from the startup message's parameters (user, database, options...).
    ///
    /// Startup parameters set settings as SET would; ones keyclaim cannot
    /// honour (a non-UTC TimeZone sent by a driver, say) are skipped so the
    /// client still connects, and the ParameterStatus it receives tells it
    /// the value in effect.
    pub fn new(user: &str, database: &str, startup: &HashMap<String, String>) -> Session {
        let mut session = Session {
            user: user.into(),
            database: database.into(),
            ..Session::default()
        };
        Arc::make_mut(&mut session.settings)
            .insert("session_authorization".into(), user.to_owned());
        let mut params: Vec<(String, String)> = startup
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "user" | "database" | "replication" | "options"))
            .filter(|(k, _)| !k.starts_with("_pq_."))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // `options` comes last so that `-c name=value` wins, as in PostgreSQL.
        params.sort();
        params.extend(
            startup
                .get("options")
                .map(|o| parse_options(o))
                .unwrap_or_default(),
        );
        for (name, value) in params {
            if let Err(e) = session.apply_startup(&name, &value) {
                tracing::debug!(setting = %name, value = %value, cause = %e, "startup parameter ignored");
            }
        }
        session.reset = session.settings.clone();
        session
    }

    fn apply_startup(&mut self, name: &str, value: &str) -> SqlResult<()> {
        let key = name.to_ascii_lowercase();
        if let Some(g) = settings::lookup(&key) {
            if let Kind::Transaction { .. } = g.kind {
                return Err(settings::read_only(g.name));
            }
        }
        let value = text_value(&key, value)?;
        Arc::make_mut(&mut self.settings).insert(key, value);
        Ok(())
    }

    /// `set_config(name, value, is_local)`: like SET, but with the value as
    /// one text (as in a startup packet: `'a, b'` is a list for
    /// search_path). Returns the value as set_config does: the new one, even
    /// when it lasts only as long as the statement (local, outside a block).
    pub fn set_config(&mut self, name: &str, value: &str, local: bool) -> SqlResult<String> {
        let key = name.to_ascii_lowercase();
        let value = text_value(&key, value)?;
        let per_block = matches!(
            settings::lookup(&key).map(|g| g.kind),
            Some(Kind::Transaction { .. })
        );
        if local || per_block {
            self.set_local(&key, value.clone());
        } else {
            Arc::make_mut(&mut self.local).remove(&key);
            Arc::make_mut(&mut self.settings).insert(key, value.clone());
        }
        Ok(value)
    }

    /// A setting's current value as SHOW prints it.
    pub fn setting(&self, name: &str) -> Option<String> {
        setting_in(&self.settings, &self.local, name)
    }

    /// statement_timeout as set in this session (None = 0 = off).
    pub fn statement_timeout(&self) -> Option<Duration> {
        self.duration_setting("statement_timeout")
    }

    /// idle_in_transaction_session_timeout, while the session is inside a
    /// block (None = 0 = off, or no block).
    pub fn idle_in_transaction_timeout(&self) -> Option<Duration> {
        if !self.in_block() {
            return None;
        }
        self.duration_setting("idle_in_transaction_session_timeout")
    }

    /// lock_timeout as set in this session (None = 0 = off).
    pub fn lock_timeout(&self) -> Option<Duration> {
        self.duration_setting("lock_timeout")
    }

    /// A timeout setting (whose default is 0, off). Read for every
    /// statement: an unset one is answered without copying and parsing
    /// its default's text.
    fn duration_setting(&self, name: &'static str) -> Option<Duration> {
        if !self.local.contains_key(name) && !self.settings.contains_key(name) {
            return None;
        }
        let shown = self.setting(name)?;
        match settings::parse_millis(name, &shown) {
            Ok(0) | Err(_) => None,
            Ok(ms) => Some(Duration::from_millis(ms as u64)),
        }
    }

    /// The session's and the block's settings as they stand: any change
    /// after this makes new maps (they are shared once taken), so pointer
    /// equality with a later snapshot means nothing changed.
    pub fn settings_snapshot(&self) -> (Settings, Settings) {
        (self.settings.clone(), self.local.clone())
    }

    /// The settings PostgreSQL reports in ParameterStatus, with their values.
    pub fn reported(&self) -> Vec<(&'static str, String)> {
        reported_in(&self.settings, &self.local)
    }

    /// Whether a notice of `severity` ("WARNING", "NOTICE", ...) reaches the
    /// client under its client_min_messages.
    pub fn wants_notice(&self, severity: &str) -> bool {
        const ORDER: &[&str] = &[
            "debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error",
        ];
        let rank = |level: &str| ORDER.iter().position(|l| l.eq_ignore_ascii_case(level));
        let min = self.setting("client_min_messages").unwrap_or_default();
        match (rank(severity), rank(&min)) {
            (Some(s), Some(m)) => s >= m,
            // INFO always reaches the client in PostgreSQL.
            _ => true,
        }
    }

    /// True inside BEGIN, failed or not.
    pub fn in_block(&self) -> bool {
        self.txn.in_block()
    }

    /// Called when a statement failed: inside a block the block fails.
    pub fn note_error(&mut self) {
        self.txn.note_error();
    }

    /// The transaction context for the next statement, or 25P02 in a
    /// failed block. `default_lock_timeout` applies when the session's
    /// lock_timeout is 0 (unset).
    pub fn admit(
        &self,
        admission: Admission,
        default_lock_timeout: Duration,
    ) -> SqlResult<StmtTxn> {
        let lock_timeout = self.lock_timeout().unwrap_or(default_lock_timeout);
        let born_ms = match &self.open {
            Some(open) => crate::claims::txn_birth_ms(&open.id),
            None => crate::claims::now_ms(),
        };
        self.txn.admit(admission, lock_timeout, born_ms)
    }

    /// What a statement's expressions may read of the session (settings,
    /// user, database), without what only the session itself needs (RESET
    /// values, savepoints, the open transaction).
    pub fn for_statement(&self) -> Session {
        Session {
            user: self.user.clone(),
            database: self.database.clone(),
            txn: self.txn,
            open: None,
            advisory: Default::default(),
            settings: self.settings.clone(),
            local: self.local.clone(),
            // Shared, not a new empty map: no allocation per statement.
            reset: self.reset.clone(),
            undo: Vec::new(),
            sequences: self.sequences.clone(),
            constraints: self.constraints.clone(),
            cursors: Default::default(),
        }
    }

    /// Where the open transaction's log stands: what a savepoint marks.
    pub fn log_mark(&self) -> LogMark {
        self.open.as_ref().map(|o| o.mark()).unwrap_or_default()
    }

    /// The mark of the block's latest savepoint, if it has one.
    pub fn latest_savepoint_mark(&self) -> Option<LogMark> {
        self.undo
            .iter()
            .rev()
            .find(|u| u.savepoint.is_some())
            .map(|u| u.log_mark)
    }

    /// How many transaction-level advisory locks the block had taken at
    /// savepoint `name`: ROLLBACK TO releases the ones taken since.
    pub fn savepoint_advisory_mark(&self, name: &str) -> Option<usize> {
        self.undo
            .iter()
            .rev()
            .find(|u| u.savepoint.as_deref() == Some(name))
            .map(|u| u.advisory_mark)
    }

    /// The mark of savepoint `name` (the latest of that name).
    pub fn savepoint_mark(&self, name: &str) -> Option<LogMark> {
        self.undo
            .iter()
            .rev()
            .find(|u| u.savepoint.as_deref() == Some(name))
            .map(|u| u.log_mark)
    }
}

/// A setting's value given as one text, checked and spelled as SHOW prints it.
fn text_value(key: &str, value: &str) -> SqlResult<String> {
    match settings::lookup(key) {
        Some(g) if g.kind == Kind::ReadOnly => Err(settings::read_only(g.name)),
        // One text is the list as written, not an SQL list of names.
        Some(g) if g.kind == Kind::IdentList => Ok(value.to_owned()),
        Some(g) => g.canonical(&[value.to_owned()]),
        None if settings::is_custom(key) => Ok(value.to_owned()),
        None => Err(settings::unrecognized(key)),
    }
}

/// `options=-c a=b --c=d`: the settings a client passes in the startup packet.
fn parse_options(options: &str) -> Vec<(String, String)> {
    // Backslash escapes a space inside a value, as libpq's PGOPTIONS.
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = Vec::new();
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        let assignment = if w == "-c" {
            words.next()
        } else {
            w.strip_prefix("-c")
                .or_else(|| w.strip_prefix("--"))
                .map(str::to_owned)
        };
        if let Some((name, value)) = assignment.as_deref().and_then(|a| a.split_once('=')) {
            out.push((name.replace('-', "_"), value.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests;
