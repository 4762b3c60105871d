//! Session statements as typed plans: SET / SHOW / RESET, BEGIN / COMMIT /
//! ROLLBACK / SAVEPOINT / RELEASE, DISCARD, DEALLOCATE, and the CLOSE ALL
//! and UNLISTEN * that connection pools send to reset a connection.
//!
//! [`Utility::plan`] turns the parsed statement into a [`Utility`] once, at
//! Parse time, whichever protocol the client uses; [`execute`] runs it
//! against the session. Admission (25P02 in a failed block) is not checked
//! here but by the engine, once for every statement ([`Utility::admission`]
//! says which of these a failed block still accepts).

use futures::StreamExt;
use sqlparser::ast::{
    ContextModifier, DiscardObject, Expr, Ident, ObjectName, Reset, Set,
    SetSessionAuthorizationParamKind, Statement, TransactionAccessMode, TransactionIsolationLevel,
    TransactionMode, UnaryOperator, Value as AstValue,
};
use std::sync::Arc;

use super::settings::{self, Kind};
use super::{Session, Undo};
use crate::engine::{Column, Executed, Notice, Outcome};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::txn::{Admission, Block};
use crate::types::{SqlType, Value};

/// SQLSTATE 3B001 invalid_savepoint_specification.
const INVALID_SAVEPOINT: &str = "3B001";

/// A session statement, planned.
#[derive(Debug, Clone)]
pub enum Utility {
    Set(SetPlan),
    Reset(ResetTarget),
    Show(ShowTarget),
    /// BEGIN / START TRANSACTION with its characteristics.
    Begin {
        tag: &'static str,
        modes: Vec<(&'static str, String)>,
    },
    Commit {
        chain: bool,
    },
    Rollback {
        chain: bool,
    },
    RollbackTo(String),
    Savepoint(String),
    Release(String),
    Discard(DiscardObject),
    /// DEALLOCATE name, or DEALLOCATE ALL (None): the wire layer owns the
    /// client's prepared statements and carries it out.
    Deallocate(Option<String>),
    /// CLOSE name, or CLOSE ALL (None): of the session's cursors
    /// (`session::cursors`; drivers reset a pooled connection with CLOSE
    /// ALL, asyncpg on every release).
    Close(Option<String>),
    /// UNLISTEN channel or `*`: keyclaim refuses LISTEN, so the session
    /// listens on nothing and there is nothing to stop (asyncpg's pool
    /// sends UNLISTEN * on every release).
    Unlisten,
    /// VACUUM or ANALYZE of these tables (none: all): nothing to do once
    /// they are found (`sql::maintenance`).
    Maintenance {
        tag: &'static str,
        tables: Vec<String>,
    },
    /// ALTER SEQUENCE (`sql::alter_sequence`), run by the engine, which
    /// keeps the counters.
    AlterSequence(crate::sql::alter_sequence::AlterSequence),
    /// CREATE EXTENSION of one whose functions keyclaim has built in
    /// ([`BUILT_IN_EXTENSIONS`]): nothing to install.
    CreateExtension,
}

/// The extensions whose functions keyclaim provides itself: pgcrypto's
/// `gen_random_uuid()`, uuid-ossp's `uuid_generate_v4()`, and plpgsql
/// (present in every PostgreSQL database).
pub const BUILT_IN_EXTENSIONS: &[&str] = &["pgcrypto", "uuid-ossp", "plpgsql"];

/// The forms of SET.
#[derive(Debug, Clone)]
pub enum SetPlan {
    /// SET [LOCAL] name = value / TO DEFAULT (and SET TIME ZONE, SET NAMES).
    Assign {
        name: String,
        arg: SetArg,
        local: bool,
    },
    /// SET SESSION CHARACTERISTICS AS TRANSACTION ...
    SessionCharacteristics(Vec<(&'static str, String)>),
    /// SET TRANSACTION ...
    Transaction(Vec<(&'static str, String)>),
    /// SET CONSTRAINTS {ALL | names} {DEFERRED | IMMEDIATE}: carried out by
    /// the engine, which checks what becomes immediate
    /// (`engine::foreign_keys`).
    Constraints {
        /// None: ALL.
        names: Option<Vec<String>>,
        deferred: bool,
    },
    /// SET SESSION AUTHORIZATION DEFAULT, SET ROLE NONE: keyclaim has one
    /// kind of user and no roles, so going back to the session user is all
    /// there is to do.
    Nothing,
}

#[derive(Debug, Clone)]
pub enum ResetTarget {
    All,
    SessionAuthorization,
    Setting(String),
}

impl Utility {
    /// The plan of `stmt` if it is a session statement, None if it is not.
    pub fn plan(stmt: &Statement) -> Option<SqlResult<Utility>> {
        let planned = match stmt {
            Statement::Set(Set::SingleAssignment {
                variable, values, ..
            }) if setting_name(variable) == crate::sql::maintenance::MARK => {
                crate::sql::maintenance::plan(values)
                    .map(|(tag, tables)| Utility::Maintenance { tag, tables })
            }
            Statement::Set(Set::SingleAssignment {
                variable, values, ..
            }) if setting_name(variable) == crate::sql::alter_sequence::MARK => {
                crate::sql::alter_sequence::plan(values).map(Utility::AlterSequence)
            }
            Statement::Set(set) => plan_set(set).map(Utility::Set),
            Statement::Reset(reset) => Ok(Utility::Reset(match &reset.reset {
                Reset::ALL => ResetTarget::All,
                Reset::SessionAuthorization => ResetTarget::SessionAuthorization,
                Reset::ConfigurationParameter(name) => ResetTarget::Setting(setting_name(name)),
            })),
            Statement::ShowVariable { variable } => Ok(Utility::Show(show_target(variable))),
            Statement::StartTransaction { modes, begin, .. } => {
                transaction_modes(modes).map(|modes| Utility::Begin {
                    tag: if *begin { "BEGIN" } else { "START TRANSACTION" },
                    modes,
                })
            }
            Statement::Commit { chain, .. } => Ok(Utility::Commit { chain: *chain }),
            Statement::Rollback {
                chain,
                savepoint: None,
            } => Ok(Utility::Rollback { chain: *chain }),
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => Ok(Utility::RollbackTo(ident_name(name))),
            Statement::Savepoint { name } => Ok(Utility::Savepoint(ident_name(name))),
            Statement::ReleaseSavepoint { name } => Ok(Utility::Release(ident_name(name))),
            Statement::Discard { object_type } => Ok(Utility::Discard(*object_type)),
            Statement::Deallocate { name, .. } => Ok(Utility::Deallocate(
                (name.quote_style.is_some() || !name.value.eq_ignore_ascii_case("all"))
                    .then(|| ident_name(name)),
            )),
            Statement::Close { cursor } => Ok(Utility::Close(match cursor {
                sqlparser::ast::CloseCursor::All => None,
                sqlparser::ast::CloseCursor::Specific { name } => Some(ident_name(name)),
            })),
            Statement::UNLISTEN { .. } => Ok(Utility::Unlisten),
            Statement::CreateExtension(ce) => {
                let name = ident_name(&ce.name);
                match BUILT_IN_EXTENSIONS.contains(&name.as_str()) {
                    true => Ok(Utility::CreateExtension),
                    false => Err(SqlError::unsupported(
                        format!("extension \"{name}\" is not available"),
                        "keyclaim has pgcrypto's gen_random_uuid() and uuid-ossp's uuid_generate_v4() built in, and no other extension",
                    )),
                }
            }
            _ => return None,
        };
        Some(planned)
    }

    /// The columns it returns (SHOW returns rows; the others none).
    pub fn columns(&self) -> Vec<Column> {
        match self {
            Utility::Show(ShowTarget::All) => ["name", "setting", "description"]
                .into_iter()
                .map(text_column)
                .collect(),
            Utility::Show(ShowTarget::One(name)) => vec![text_column(&show_label(name))],
            _ => Vec::new(),
        }
    }

    /// ROLLBACK, COMMIT and ROLLBACK TO are what a failed block accepts.
    pub fn admission(&self) -> Admission {
        match self {
            Utility::Commit { .. } | Utility::Rollback { .. } | Utility::RollbackTo(_) => {
                Admission::EndsFailure
            }
            _ => Admission::Ordinary,
        }
    }
}

/// Runs a session statement already admitted.
pub fn execute(session: &mut Session, utility: &Utility) -> SqlResult<Executed> {
    match utility {
        Utility::Set(set) => session.set(set),
        Utility::Reset(target) => session.reset_statement(target),
        Utility::Show(target) => session.show(target),
        Utility::Begin { tag, modes } => session.begin(tag, modes.clone()),
        Utility::Commit { chain } => session.commit(*chain),
        Utility::Rollback { chain } => session.rollback(*chain),
        Utility::RollbackTo(name) => session.rollback_to(name),
        Utility::Savepoint(name) => session.savepoint(name),
        Utility::Release(name) => session.release(name),
        Utility::Discard(what) => session.discard(what),
        Utility::Deallocate(name) => Ok(Executed::new(Outcome::Deallocate { name: name.clone() })),
        Utility::Close(name) => {
            session.cursors.close(name.as_deref())?;
            Ok(command(if name.is_some() {
                "CLOSE CURSOR"
            } else {
                "CLOSE CURSOR ALL"
            }))
        }
        Utility::Unlisten => Ok(command("UNLISTEN")),
        Utility::Maintenance { tag, .. } => Ok(command(tag)),
        Utility::AlterSequence(_) => Ok(command("ALTER SEQUENCE")),
        Utility::CreateExtension => Ok(command("CREATE EXTENSION")),
    }
}

fn plan_set(set: &Set) -> SqlResult<SetPlan> {
    let assign = |name: &str, arg: SetArg, local: bool| SetPlan::Assign {
        name: name.to_owned(),
        arg,
        local,
    };
    match set {
        Set::SingleAssignment {
            variable, values, ..
        } if setting_name(variable) == crate::sql::set_constraints::MARK => {
            let (names, deferred) = crate::sql::set_constraints::plan(values)?;
            Ok(SetPlan::Constraints { names, deferred })
        }
        Set::SingleAssignment {
            scope,
            hivevar: false,
            variable,
            values,
        } => {
            let local = matches!(scope, Some(ContextModifier::Local));
            Ok(assign(&setting_name(variable), set_arg(values)?, local))
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
            Ok(assign("timezone", arg, *local))
        }
        Set::SetNames { charset_name, .. } => Ok(assign(
            "client_encoding",
            SetArg::Values(vec![charset_name.value.clone()]),
            false,
        )),
        Set::SetNamesDefault {} => Ok(assign("client_encoding", SetArg::Default, false)),
        Set::SetTransaction {
            modes,
            snapshot: None,
            session,
        } => {
            let modes = transaction_modes(modes)?;
            Ok(if *session {
                SetPlan::SessionCharacteristics(modes)
            } else {
                SetPlan::Transaction(modes)
            })
        }
        Set::SetSessionAuthorization(p) if p.kind == SetSessionAuthorizationParamKind::Default => {
            Ok(SetPlan::Nothing)
        }
        Set::SetRole {
            role_name: None, ..
        } => Ok(SetPlan::Nothing),
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

fn text_column(name: &str) -> Column {
    Column::computed(name, SqlType::Text)
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

#[derive(Debug, Clone)]
pub enum ShowTarget {
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
#[derive(Debug, Clone)]
pub enum SetArg {
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
            if matches!(name, "repeatable read" | "serializable") {
                return Err(SqlError::unsupported(
                    format!(
                        "keyclaim does not support ISOLATION LEVEL {}",
                        name.to_uppercase()
                    ),
                    "keyclaim runs every transaction at READ COMMITTED (PostgreSQL's default) and never downgrades a level silently; ask for READ COMMITTED",
                ));
            }
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
    fn set(&mut self, set: &SetPlan) -> SqlResult<Executed> {
        match set {
            SetPlan::Assign { name, arg, local } => self.assign(name, arg.clone(), *local),
            SetPlan::SessionCharacteristics(modes) => {
                for (name, value) in modes {
                    Arc::make_mut(&mut self.settings)
                        .insert(format!("default_{name}"), value.clone());
                }
                Ok(command("SET"))
            }
            SetPlan::Transaction(modes) => {
                if !self.in_block() {
                    return Ok(with_notice(
                        command("SET"),
                        sqlstate::NO_ACTIVE_TRANSACTION,
                        "SET TRANSACTION can only be used in transaction blocks",
                    ));
                }
                for (name, value) in modes {
                    Arc::make_mut(&mut self.local).insert((*name).into(), value.clone());
                }
                Ok(command("SET"))
            }
            SetPlan::Nothing => Ok(command("SET")),
            SetPlan::Constraints { names, deferred } => {
                if !self.in_block() {
                    return Ok(with_notice(
                        command("SET CONSTRAINTS"),
                        sqlstate::NO_ACTIVE_TRANSACTION,
                        "SET CONSTRAINTS can only be used in transaction blocks",
                    ));
                }
                self.constraints.set(names.as_deref(), *deferred);
                Ok(command("SET CONSTRAINTS"))
            }
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
                Arc::make_mut(&mut self.local).insert(name.to_owned(), value);
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
            Arc::make_mut(&mut self.local).remove(name);
            Arc::make_mut(&mut self.settings).insert(name.to_owned(), value);
        }
        Ok(command("SET"))
    }

    /// A value until the block ends; outside a block, none at all. Either
    /// way a custom setting exists from now on, empty at session level, as
    /// PostgreSQL creates it on first use.
    pub(super) fn set_local(&mut self, name: &str, value: String) {
        if settings::is_custom(name) {
            Arc::make_mut(&mut self.settings)
                .entry(name.to_owned())
                .or_default();
        }
        if self.in_block() {
            Arc::make_mut(&mut self.local).insert(name.to_owned(), value);
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
                _ => g.default_value().to_owned(),
            },
            None => String::new(),
        }
    }

    fn reset_statement(&mut self, target: &ResetTarget) -> SqlResult<Executed> {
        match target {
            ResetTarget::All => {
                self.reset_all();
                Ok(command("RESET"))
            }
            ResetTarget::SessionAuthorization => Ok(command("RESET")),
            ResetTarget::Setting(name) => {
                self.assign(name, SetArg::Default, false)?;
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
            Arc::make_mut(&mut self.settings).insert(name, String::new());
        }
        // The block's own characteristics are not session settings.
        Arc::make_mut(&mut self.local).retain(|name, _| {
            matches!(
                settings::lookup(name).map(|g| g.kind),
                Some(Kind::Transaction { .. })
            )
        });
    }

    fn show(&self, target: &ShowTarget) -> SqlResult<Executed> {
        let columns = Utility::Show(target.clone()).columns();
        let rows = match target {
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
                rows
            }
            ShowTarget::One(name) => {
                let value = self
                    .setting(name)
                    .ok_or_else(|| settings::unrecognized(name))?;
                vec![vec![Value::Text(value)]]
            }
        };
        Ok(Executed::new(Outcome::Rows {
            columns: std::sync::Arc::new(columns),
            rows: futures::stream::iter(rows.into_iter().map(Ok)).boxed(),
            tag: "SHOW".into(),
        }))
    }
}

// Transaction blocks ------------------------------------------------------------

impl Session {
    fn begin(&mut self, tag: &str, modes: Vec<(&'static str, String)>) -> SqlResult<Executed> {
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
        self.txn = Block::InBlock;
        Arc::make_mut(&mut self.local).clear();
        self.constraints = Default::default();
        self.undo = vec![Undo {
            savepoint: None,
            settings: self.settings.clone(),
            local: Default::default(),
            constraints: Default::default(),
            log_mark: Default::default(),
            advisory_mark: 0,
            cursor_mark: 0,
        }];
        for (name, value) in modes {
            Arc::make_mut(&mut self.local).insert(name.into(), value);
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
        Arc::make_mut(&mut self.local).clear();
        self.constraints = Default::default();
        self.undo.clear();
        self.txn = Block::Idle;
        self.cursors.end_block();
        // The engine has decided the transaction by now.
        self.open = None;
        characteristics
    }

    /// Ends the block by rolling back.
    fn roll_back_block(&mut self, tag: &str, chain: bool) -> Executed {
        let characteristics = self.end_block(true);
        if chain {
            self.start_block(characteristics);
        }
        Executed::new(Outcome::TxnEnd { tag: tag.into() })
    }

    fn commit(&mut self, chain: bool) -> SqlResult<Executed> {
        match self.txn {
            Block::Idle if chain => Err(not_in_block("COMMIT AND CHAIN")),
            Block::Idle => Ok(with_notice(
                Executed::new(Outcome::TxnEnd {
                    tag: "COMMIT".into(),
                }),
                sqlstate::NO_ACTIVE_TRANSACTION,
                "there is no transaction in progress",
            )),
            Block::InBlock => {
                let characteristics = self.end_block(false);
                if chain {
                    self.start_block(characteristics);
                }
                Ok(Executed::new(Outcome::TxnEnd {
                    tag: "COMMIT".into(),
                }))
            }
            // A failed block cannot commit: PostgreSQL rolls it back and says so in the tag.
            Block::Failed => Ok(self.roll_back_block("ROLLBACK", chain)),
        }
    }

    fn rollback(&mut self, chain: bool) -> SqlResult<Executed> {
        match self.txn {
            Block::Idle if chain => Err(not_in_block("ROLLBACK AND CHAIN")),
            Block::Idle => Ok(with_notice(
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
            constraints: self.constraints.clone(),
            log_mark: self.log_mark(),
            advisory_mark: self.advisory.xact_log.len(),
            cursor_mark: self.cursors.mark(),
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
        self.undo.truncate(at + 1);
        let point = &self.undo[at];
        self.settings = point.settings.clone();
        self.local = point.local.clone();
        self.constraints = point.constraints.clone();
        self.cursors.roll_back_to(point.cursor_mark);
        self.txn = Block::InBlock;
        Ok(command("ROLLBACK"))
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
            // DISCARD ALL includes CLOSE ALL.
            let _ = self.cursors.close(None);
        }
        // DISCARD ALL includes DISCARD SEQUENCES: currval and lastval forget.
        if matches!(what, DiscardObject::ALL | DiscardObject::SEQUENCES) {
            self.sequences = Default::default();
        }
        Ok(command(&format!("DISCARD {what}")))
    }
}
