//! Per-connection session state and the statements that only touch it:
//! SET / SHOW / RESET, BEGIN / COMMIT / ROLLBACK / SAVEPOINT, DISCARD.
//!
//! Until transactions land, statements inside BEGIN apply at statement time;
//! a ROLLBACK that cannot undo applied writes says so in a WARNING notice.
//! Settings, though, are transactional as in PostgreSQL: a ROLLBACK (or
//! ROLLBACK TO a savepoint) restores them, and SET LOCAL lasts until the
//! block ends.

pub mod settings;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::StreamExt;
use sqlparser::ast::{
    ContextModifier, DiscardObject, Expr, Ident, ObjectName, Reset, Set,
    SetSessionAuthorizationParamKind, Statement, TransactionAccessMode, TransactionIsolationLevel,
    TransactionMode, UnaryOperator, Value as AstValue,
};

use crate::engine::{Column, Executed, Notice, Outcome};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::{SqlType, Value};
use settings::Kind;

/// SQLSTATE 3B001 invalid_savepoint_specification.
const INVALID_SAVEPOINT: &str = "3B001";

/// Warned when a block ends in a rollback after it wrote: the writes stay.
pub const ROLLBACK_KEEPS_WRITES: &str =
    "keyclaim applied the writes of this transaction block at statement time; ROLLBACK cannot undo them";

/// Where the connection stands with respect to a transaction block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxnState {
    #[default]
    Idle,
    /// Inside BEGIN; `wrote` once a statement applied a write.
    InBlock { wrote: bool },
    /// A statement failed inside the block: everything but ROLLBACK / COMMIT answers 25P02.
    Failed { wrote: bool },
}

#[derive(Debug, Clone, Default)]
pub struct Session {
    pub user: String,
    pub database: String,
    pub txn: TxnState,
    /// Session-level values that differ from the built-in defaults, by
    /// lowercase name. Read settings through [`Session::setting`], which
    /// also applies SET LOCAL and the transaction's characteristics.
    pub settings: BTreeMap<String, String>,
    /// SET LOCAL values and the block's own characteristics (isolation,
    /// read-only), dropped when the block ends.
    local: BTreeMap<String, String>,
    /// The values at connection start: what RESET returns to.
    reset: BTreeMap<String, String>,
    /// What ROLLBACK restores: the settings at BEGIN, then one entry per
    /// SAVEPOINT. Empty outside a block.
    undo: Vec<Undo>,
}

/// The settings as they were when a block or savepoint began.
#[derive(Debug, Clone)]
struct Undo {
    /// None for the block itself, else the savepoint's name.
    savepoint: Option<String>,
    settings: BTreeMap<String, String>,
    local: BTreeMap<String, String>,
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
            user: user.to_owned(),
            database: database.to_owned(),
            ..Session::default()
        };
        session
            .settings
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
        self.settings.insert(key, value);
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
            self.local.remove(&key);
            self.settings.insert(key, value.clone());
        }
        Ok(value)
    }

    /// A setting's current value as SHOW prints it.
    pub fn setting(&self, name: &str) -> Option<String> {
        let key = name.to_ascii_lowercase();
        if let Some(v) = self.local.get(&key) {
            return Some(v.clone());
        }
        match settings::lookup(&key) {
            Some(g) => match g.kind {
                Kind::Transaction { default } => self.setting(default),
                _ => Some(
                    self.settings
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| g.default.to_owned()),
                ),
            },
            None => self.settings.get(&key).cloned(),
        }
    }

    /// statement_timeout as set in this session (None = 0 = off).
    pub fn statement_timeout(&self) -> Option<Duration> {
        self.duration_setting("statement_timeout")
    }

    /// lock_timeout as set in this session (None = 0 = off).
    pub fn lock_timeout(&self) -> Option<Duration> {
        self.duration_setting("lock_timeout")
    }

    fn duration_setting(&self, name: &str) -> Option<Duration> {
        let shown = self.setting(name)?;
        match settings::parse_millis(name, &shown) {
            Ok(0) | Err(_) => None,
            Ok(ms) => Some(Duration::from_millis(ms as u64)),
        }
    }

    /// The settings PostgreSQL reports in ParameterStatus, with their values.
    pub fn reported(&self) -> Vec<(&'static str, String)> {
        settings::GUCS
            .iter()
            .filter(|g| g.report)
            .map(|g| (g.name, self.setting(g.name).unwrap_or_default()))
            .collect()
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
        self.txn != TxnState::Idle
    }

    /// Called by the engine after a statement applied a write.
    pub fn note_write(&mut self) {
        self.txn = match self.txn {
            TxnState::Idle => TxnState::Idle,
            TxnState::InBlock { .. } => TxnState::InBlock { wrote: true },
            TxnState::Failed { .. } => TxnState::Failed { wrote: true },
        };
    }

    /// Called by the engine when a statement failed: inside a block the block
    /// becomes Failed. Idempotent, so the wire layer may call it as well.
    pub fn note_error(&mut self) {
        if let TxnState::InBlock { wrote } = self.txn {
            self.txn = TxnState::Failed { wrote };
        }
    }

    fn wrote(&self) -> bool {
        matches!(
            self.txn,
            TxnState::InBlock { wrote: true } | TxnState::Failed { wrote: true }
        )
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

/// If `stmt` is a session statement, the columns it returns (SHOW returns one).
pub fn describe(stmt: &Statement) -> Option<Vec<Column>> {
    match stmt {
        Statement::ShowVariable { variable } => Some(match show_target(variable) {
            ShowTarget::All => ["name", "setting", "description"]
                .into_iter()
                .map(text_column)
                .collect(),
            ShowTarget::One(name) => vec![text_column(&show_label(&name))],
        }),
        Statement::Set(_)
        | Statement::Reset(_)
        | Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. }
        | Statement::Discard { .. } => Some(Vec::new()),
        _ => None,
    }
}

/// Runs `stmt` if it is a session statement; None if it is not one.
pub fn execute(session: &mut Session, stmt: &Statement) -> Option<SqlResult<Executed>> {
    describe(stmt)?;
    // The engine checks this too; checking here keeps this module correct
    // on its own.
    if let Err(e) = check_txn_state(session, stmt) {
        return Some(Err(e));
    }
    Some(match stmt {
        Statement::Set(set) => session.set(set),
        Statement::Reset(reset) => session.reset_statement(&reset.reset),
        Statement::ShowVariable { variable } => session.show(variable),
        Statement::StartTransaction { modes, begin, .. } => session.begin(modes, *begin),
        Statement::Commit { chain, .. } => session.commit(*chain),
        Statement::Rollback {
            chain,
            savepoint: None,
        } => session.rollback(*chain),
        Statement::Rollback {
            savepoint: Some(name),
            ..
        } => session.rollback_to(&ident_name(name)),
        Statement::Savepoint { name } => session.savepoint(&ident_name(name)),
        Statement::ReleaseSavepoint { name } => session.release(&ident_name(name)),
        Statement::Discard { object_type } => session.discard(object_type),
        _ => return None,
    })
}

/// 25P02 inside a failed block for anything but ROLLBACK / COMMIT / ROLLBACK TO.
pub fn check_txn_state(session: &Session, stmt: &Statement) -> SqlResult<()> {
    match (session.txn, stmt) {
        (TxnState::Failed { .. }, Statement::Commit { .. } | Statement::Rollback { .. }) => Ok(()),
        (TxnState::Failed { .. }, _) => Err(SqlError::new(
            sqlstate::IN_FAILED_TRANSACTION,
            "current transaction is aborted, commands ignored until end of transaction block",
        )),
        _ => Ok(()),
    }
}

fn text_column(name: &str) -> Column {
    Column {
        name: name.to_owned(),
        ty: SqlType::Text,
    }
}

fn command(tag: &str) -> Executed {
    Executed::new(Outcome::Command { tag: tag.into() })
}

fn with_notice(mut executed: Executed, code: &'static str, message: &str) -> Executed {
    executed.notices.push(Notice {
        severity: "WARNING",
        code,
        message: message.to_owned(),
    });
    executed
}

fn not_in_block(what: &str) -> SqlError {
    SqlError::new(
        sqlstate::NO_ACTIVE_TRANSACTION,
        format!("{what} can only be used in transaction blocks"),
    )
}

/// An identifier as PostgreSQL folds it: unquoted names are lowercased.
fn ident_name(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

/// Setting names are case-insensitive even when quoted.
fn setting_name(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part.as_ident() {
            Some(ident) => ident.value.to_ascii_lowercase(),
            None => part.to_string().to_ascii_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

enum ShowTarget {
    All,
    One(String),
}

/// sqlparser hands SHOW's words over without the dots between them, so the
/// three multi-word forms PostgreSQL has are recognised and anything else is
/// a dotted custom name.
fn show_target(variable: &[Ident]) -> ShowTarget {
    let words: Vec<String> = variable
        .iter()
        .map(|i| i.value.to_ascii_lowercase())
        .collect();
    match words.join(" ").as_str() {
        "all" => ShowTarget::All,
        "transaction isolation level" => ShowTarget::One("transaction_isolation".into()),
        "time zone" => ShowTarget::One("timezone".into()),
        "session authorization" => ShowTarget::One("session_authorization".into()),
        _ => ShowTarget::One(words.join(".")),
    }
}

/// SHOW's column label: the setting's own spelling ("DateStyle").
fn show_label(name: &str) -> String {
    settings::lookup(name).map_or_else(|| name.to_owned(), |g| g.name.to_owned())
}

/// The right-hand side of SET: DEFAULT, or the values as text.
enum SetArg {
    Default,
    Values(Vec<String>),
}

fn set_arg(values: &[Expr]) -> SqlResult<SetArg> {
    if let [Expr::Identifier(id)] = values {
        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") {
            return Ok(SetArg::Default);
        }
    }
    values
        .iter()
        .map(set_value)
        .collect::<SqlResult<_>>()
        .map(SetArg::Values)
}

fn set_value(expr: &Expr) -> SqlResult<String> {
    let syntax = || SqlError::syntax(format!("syntax error at or near \"{expr}\""));
    match expr {
        Expr::Identifier(id) => Ok(ident_name(id)),
        Expr::Value(v) => match &v.value {
            AstValue::SingleQuotedString(s)
            | AstValue::EscapedStringLiteral(s)
            | AstValue::UnicodeStringLiteral(s)
            | AstValue::NationalStringLiteral(s) => Ok(s.clone()),
            AstValue::DollarQuotedString(d) => Ok(d.value.clone()),
            AstValue::Number(n, _) => Ok(n.to_string()),
            AstValue::Boolean(b) => Ok(b.to_string()),
            _ => Err(syntax()),
        },
        Expr::UnaryOp { op, expr: inner } => match (op, inner.as_ref()) {
            (UnaryOperator::Minus, Expr::Value(_)) => Ok(format!("-{}", set_value(inner)?)),
            (UnaryOperator::Plus, Expr::Value(_)) => set_value(inner),
            _ => Err(syntax()),
        },
        _ => Err(syntax()),
    }
}

/// One `ISOLATION LEVEL ...` / `READ ONLY` clause as the setting it sets.
fn transaction_mode(mode: &TransactionMode) -> SqlResult<(&'static str, String)> {
    match mode {
        TransactionMode::IsolationLevel(level) => {
            let name = match level {
                TransactionIsolationLevel::ReadUncommitted => "read uncommitted",
                TransactionIsolationLevel::ReadCommitted => "read committed",
                TransactionIsolationLevel::RepeatableRead => "repeatable read",
                TransactionIsolationLevel::Serializable => "serializable",
                TransactionIsolationLevel::Snapshot => {
                    return Err(SqlError::syntax("syntax error at or near \"SNAPSHOT\""))
                }
            };
            let guc = settings::lookup("transaction_isolation").expect("known setting");
            Ok(("transaction_isolation", guc.canonical(&[name.to_owned()])?))
        }
        TransactionMode::AccessMode(mode) => Ok((
            "transaction_read_only",
            match mode {
                TransactionAccessMode::ReadOnly => "on",
                TransactionAccessMode::ReadWrite => "off",
            }
            .to_owned(),
        )),
    }
}

fn transaction_modes(modes: &[TransactionMode]) -> SqlResult<Vec<(&'static str, String)>> {
    modes.iter().map(transaction_mode).collect()
}

// SET / RESET / SHOW ---------------------------------------------------------

impl Session {
    fn set(&mut self, set: &Set) -> SqlResult<Executed> {
        match set {
            Set::SingleAssignment {
                scope,
                hivevar: false,
                variable,
                values,
            } => {
                let local = matches!(scope, Some(ContextModifier::Local));
                self.assign(&setting_name(variable), set_arg(values)?, local)
            }
            Set::SetTimeZone { local, value } => {
                let arg = match value {
                    Expr::Identifier(id)
                        if id.quote_style.is_none()
                            && ["local", "default"].contains(&id.value.to_lowercase().as_str()) =>
                    {
                        SetArg::Default
                    }
                    _ => set_arg(std::slice::from_ref(value))?,
                };
                self.assign("timezone", arg, *local)
            }
            Set::SetNames { charset_name, .. } => self.assign(
                "client_encoding",
                SetArg::Values(vec![charset_name.value.clone()]),
                false,
            ),
            Set::SetNamesDefault {} => self.assign("client_encoding", SetArg::Default, false),
            Set::SetTransaction {
                modes,
                snapshot: None,
                session: true,
            } => {
                for (name, value) in transaction_modes(modes)? {
                    self.settings.insert(format!("default_{name}"), value);
                }
                Ok(command("SET"))
            }
            Set::SetTransaction {
                modes,
                snapshot: None,
                session: false,
            } => {
                let modes = transaction_modes(modes)?;
                if !self.in_block() {
                    return Ok(with_notice(
                        command("SET"),
                        sqlstate::NO_ACTIVE_TRANSACTION,
                        "SET TRANSACTION can only be used in transaction blocks",
                    ));
                }
                for (name, value) in modes {
                    self.local.insert(name.into(), value);
                }
                Ok(command("SET"))
            }
            // keyclaim has one kind of user and no roles: going back to the
            // session user is all there is to do.
            Set::SetSessionAuthorization(p)
                if p.kind == SetSessionAuthorizationParamKind::Default =>
            {
                Ok(command("SET"))
            }
            Set::SetRole {
                role_name: None, ..
            } => Ok(command("SET")),
            Set::SetSessionAuthorization(_) | Set::SetRole { .. } => Err(SqlError::unsupported(
                "keyclaim has no roles",
                "connect as the user you want to act as",
            )),
            _ => Err(SqlError::unsupported(
                format!("keyclaim does not support {set}"),
                "use SET name = value",
            )),
        }
    }

    /// SET [LOCAL] name = value / TO DEFAULT.
    fn assign(&mut self, name: &str, arg: SetArg, local: bool) -> SqlResult<Executed> {
        let guc = settings::lookup(name);
        // PostgreSQL counts the arguments before it looks the name up.
        if let SetArg::Values(values) = &arg {
            if values.len() > 1 && !guc.is_some_and(|g| g.takes_list()) {
                return Err(settings::one_argument(name));
            }
        }
        if guc.is_none() && !settings::is_custom(name) {
            return Err(settings::unrecognized(name));
        }
        if let Some(g) = guc.filter(|g| g.kind == Kind::ReadOnly) {
            return Err(settings::read_only(g.name));
        }
        let value = match (arg, guc) {
            (SetArg::Default, _) => self.reset_value(name),
            (SetArg::Values(v), Some(g)) => g.canonical(&v)?,
            (SetArg::Values(mut v), None) => v.remove(0),
        };
        // transaction_isolation and friends describe the current block only;
        // outside one PostgreSQL accepts and forgets them.
        if let Some(Kind::Transaction { .. }) = guc.map(|g| g.kind) {
            if self.in_block() {
                self.local.insert(name.to_owned(), value);
            }
            return Ok(command("SET"));
        }
        if local {
            let in_block = self.in_block();
            self.set_local(name, value);
            if !in_block {
                return Ok(with_notice(
                    command("SET"),
                    sqlstate::NO_ACTIVE_TRANSACTION,
                    "SET LOCAL can only be used in transaction blocks",
                ));
            }
        } else {
            self.local.remove(name);
            self.settings.insert(name.to_owned(), value);
        }
        Ok(command("SET"))
    }

    /// A value until the block ends; outside a block, none at all. Either
    /// way a custom setting exists from now on, empty at session level, as
    /// PostgreSQL creates it on first use.
    fn set_local(&mut self, name: &str, value: String) {
        if settings::is_custom(name) {
            self.settings.entry(name.to_owned()).or_default();
        }
        if self.in_block() {
            self.local.insert(name.to_owned(), value);
        }
    }

    /// What RESET goes back to: the value at connection start; a custom
    /// setting that did not exist then is empty, as in PostgreSQL.
    fn reset_value(&self, name: &str) -> String {
        if let Some(v) = self.reset.get(name) {
            return v.clone();
        }
        match settings::lookup(name) {
            Some(g) => match g.kind {
                Kind::Transaction { default } => self.setting(default).unwrap_or_default(),
                _ => g.default.to_owned(),
            },
            None => String::new(),
        }
    }

    fn reset_statement(&mut self, reset: &Reset) -> SqlResult<Executed> {
        match reset {
            Reset::ALL => {
                self.reset_all();
                Ok(command("RESET"))
            }
            Reset::SessionAuthorization => Ok(command("RESET")),
            Reset::ConfigurationParameter(name) => {
                self.assign(&setting_name(name), SetArg::Default, false)?;
                Ok(command("RESET"))
            }
        }
    }

    fn reset_all(&mut self) {
        let custom: Vec<String> = self
            .settings
            .keys()
            .filter(|k| settings::is_custom(k) && !self.reset.contains_key(*k))
            .cloned()
            .collect();
        self.settings = self.reset.clone();
        for name in custom {
            self.settings.insert(name, String::new());
        }
        // The block's own characteristics are not session settings.
        self.local.retain(|name, _| {
            matches!(
                settings::lookup(name).map(|g| g.kind),
                Some(Kind::Transaction { .. })
            )
        });
    }

    fn show(&self, variable: &[Ident]) -> SqlResult<Executed> {
        let (columns, rows) = match show_target(variable) {
            ShowTarget::All => {
                let mut rows: Vec<Vec<Value>> = settings::GUCS
                    .iter()
                    .map(|g| (g.name.to_owned(), g.description))
                    .chain(
                        self.settings
                            .keys()
                            .chain(self.local.keys())
                            .filter(|k| settings::is_custom(k))
                            .map(|k| (k.clone(), "")),
                    )
                    .map(|(name, description)| {
                        let value = self.setting(&name).unwrap_or_default();
                        vec![
                            Value::Text(name),
                            Value::Text(value),
                            Value::Text(description.to_owned()),
                        ]
                    })
                    .collect();
                rows.sort_by_key(|row| match &row[0] {
                    Value::Text(name) => name.to_ascii_lowercase(),
                    _ => String::new(),
                });
                rows.dedup_by(|a, b| a[0] == b[0]);
                (describe_show(variable), rows)
            }
            ShowTarget::One(name) => {
                let value = self
                    .setting(&name)
                    .ok_or_else(|| settings::unrecognized(&name))?;
                (describe_show(variable), vec![vec![Value::Text(value)]])
            }
        };
        Ok(Executed::new(Outcome::Rows {
            columns: std::sync::Arc::new(columns),
            rows: futures::stream::iter(rows.into_iter().map(Ok)).boxed(),
            tag: "SHOW".into(),
        }))
    }
}

fn describe_show(variable: &[Ident]) -> Vec<Column> {
    describe(&Statement::ShowVariable {
        variable: variable.to_vec(),
    })
    .unwrap_or_default()
}

// Transaction blocks ------------------------------------------------------------

impl Session {
    fn begin(&mut self, modes: &[TransactionMode], begin: bool) -> SqlResult<Executed> {
        let tag = if begin { "BEGIN" } else { "START TRANSACTION" };
        let modes = transaction_modes(modes)?;
        let executed = Executed::new(Outcome::TxnStart { tag: tag.into() });
        if self.in_block() {
            return Ok(with_notice(
                executed,
                sqlstate::ACTIVE_TRANSACTION,
                "there is already a transaction in progress",
            ));
        }
        self.start_block(modes);
        Ok(executed)
    }

    fn start_block(&mut self, modes: Vec<(&'static str, String)>) {
        self.txn = TxnState::InBlock { wrote: false };
        self.local.clear();
        self.undo = vec![Undo {
            savepoint: None,
            settings: self.settings.clone(),
            local: BTreeMap::new(),
        }];
        for (name, value) in modes {
            self.local.insert(name.into(), value);
        }
    }

    /// Ends the block; `rollback` restores the settings it began with.
    /// Returns the block's characteristics, for AND CHAIN.
    fn end_block(&mut self, rollback: bool) -> Vec<(&'static str, String)> {
        let characteristics = ["transaction_isolation", "transaction_read_only"]
            .into_iter()
            .filter_map(|name| self.local.get(name).map(|v| (name, v.clone())))
            .collect();
        if rollback {
            if let Some(start) = self.undo.first() {
                self.settings = start.settings.clone();
            }
        }
        self.local.clear();
        self.undo.clear();
        self.txn = TxnState::Idle;
        characteristics
    }

    /// Ends the block by rolling back, warning when writes were applied.
    fn roll_back_block(&mut self, tag: &str, chain: bool) -> Executed {
        let wrote = self.wrote();
        let characteristics = self.end_block(true);
        if chain {
            self.start_block(characteristics);
        }
        let executed = Executed::new(Outcome::TxnEnd { tag: tag.into() });
        if wrote {
            with_notice(executed, "01000", ROLLBACK_KEEPS_WRITES)
        } else {
            executed
        }
    }

    fn commit(&mut self, chain: bool) -> SqlResult<Executed> {
        match self.txn {
            TxnState::Idle if chain => Err(not_in_block("COMMIT AND CHAIN")),
            TxnState::Idle => Ok(with_notice(
                Executed::new(Outcome::TxnEnd {
                    tag: "COMMIT".into(),
                }),
                sqlstate::NO_ACTIVE_TRANSACTION,
                "there is no transaction in progress",
            )),
            TxnState::InBlock { .. } => {
                let characteristics = self.end_block(false);
                if chain {
                    self.start_block(characteristics);
                }
                Ok(Executed::new(Outcome::TxnEnd {
                    tag: "COMMIT".into(),
                }))
            }
            // A failed block cannot commit: PostgreSQL rolls it back and says so in the tag.
            TxnState::Failed { .. } => Ok(self.roll_back_block("ROLLBACK", chain)),
        }
    }

    fn rollback(&mut self, chain: bool) -> SqlResult<Executed> {
        match self.txn {
            TxnState::Idle if chain => Err(not_in_block("ROLLBACK AND CHAIN")),
            TxnState::Idle => Ok(with_notice(
                Executed::new(Outcome::TxnEnd {
                    tag: "ROLLBACK".into(),
                }),
                sqlstate::NO_ACTIVE_TRANSACTION,
                "there is no transaction in progress",
            )),
            _ => Ok(self.roll_back_block("ROLLBACK", chain)),
        }
    }

    fn find_savepoint(&self, name: &str) -> SqlResult<usize> {
        self.undo
            .iter()
            .rposition(|u| u.savepoint.as_deref() == Some(name))
            .ok_or_else(|| {
                SqlError::new(
                    INVALID_SAVEPOINT,
                    format!("savepoint \"{name}\" does not exist"),
                )
            })
    }

    fn savepoint(&mut self, name: &str) -> SqlResult<Executed> {
        if !self.in_block() {
            return Err(not_in_block("SAVEPOINT"));
        }
        self.undo.push(Undo {
            savepoint: Some(name.to_owned()),
            settings: self.settings.clone(),
            local: self.local.clone(),
        });
        Ok(command("SAVEPOINT"))
    }

    fn release(&mut self, name: &str) -> SqlResult<Executed> {
        if !self.in_block() {
            return Err(not_in_block("RELEASE SAVEPOINT"));
        }
        let at = self.find_savepoint(name)?;
        self.undo.truncate(at);
        Ok(command("RELEASE"))
    }

    fn rollback_to(&mut self, name: &str) -> SqlResult<Executed> {
        if !self.in_block() {
            return Err(not_in_block("ROLLBACK TO SAVEPOINT"));
        }
        let at = self.find_savepoint(name)?;
        let wrote = self.wrote();
        self.undo.truncate(at + 1);
        let point = &self.undo[at];
        self.settings = point.settings.clone();
        self.local = point.local.clone();
        self.txn = TxnState::InBlock { wrote };
        let executed = command("ROLLBACK");
        Ok(if wrote {
            with_notice(executed, "01000", ROLLBACK_KEEPS_WRITES)
        } else {
            executed
        })
    }

    fn discard(&mut self, what: &DiscardObject) -> SqlResult<Executed> {
        if let DiscardObject::ALL = what {
            if self.in_block() {
                return Err(SqlError::new(
                    sqlstate::ACTIVE_TRANSACTION,
                    "DISCARD ALL cannot run inside a transaction block",
                ));
            }
            self.reset_all();
        }
        Ok(command(&format!("DISCARD {what}")))
    }
}

#[cfg(test)]
mod tests;
