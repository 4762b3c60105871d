//! FOREIGN KEY constraints: what a table's definition records of them.
//!
//! The referencing table (the child) keeps each constraint whole
//! ([`ForeignKeyDef`]); the referenced table (the parent) keeps only a
//! pointer back ([`Inbound`]), so that a write which removes a parent key
//! knows which tables to look in. The pointer is a hint, a superset: the
//! truth is the child's definition, read afresh when the parent's key goes
//! (`engine::foreign_keys`), so a pointer left behind by a rolled-back
//! block or a dropped child costs a lookup and nothing else. How the
//! constraint is kept under concurrency is docs/foreign_keys.md.

use serde::{Deserialize, Serialize};

use super::TableDef;
use crate::types::Value;

/// What ON DELETE / ON UPDATE asks for when a referenced key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RefAction {
    /// Fail if still referenced at the end of the statement (or at COMMIT
    /// when deferred). PostgreSQL's default.
    #[default]
    NoAction,
    /// Fail if referenced, never deferred.
    Restrict,
    /// Delete (ON DELETE) or re-key (ON UPDATE) the referencing rows.
    Cascade,
    /// Set the referencing columns to NULL.
    SetNull,
    /// Set the referencing columns to their defaults.
    SetDefault,
}

impl RefAction {
    /// pg_constraint's confupdtype / confdeltype letter.
    pub fn code(self) -> char {
        match self {
            RefAction::NoAction => 'a',
            RefAction::Restrict => 'r',
            RefAction::Cascade => 'c',
            RefAction::SetNull => 'n',
            RefAction::SetDefault => 'd',
        }
    }

    /// As information_schema and pg_get_constraintdef spell it.
    pub fn sql(self) -> &'static str {
        match self {
            RefAction::NoAction => "NO ACTION",
            RefAction::Restrict => "RESTRICT",
            RefAction::Cascade => "CASCADE",
            RefAction::SetNull => "SET NULL",
            RefAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A FOREIGN KEY of the table that declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKeyDef {
    /// The constraint's name: `<table>_<cols>_fkey`, or as declared.
    pub name: String,
    /// The referencing columns, in this table.
    pub columns: Vec<usize>,
    /// The referenced table's name.
    pub ref_table: String,
    /// The referenced columns, pairwise with `columns`: the referenced
    /// table's primary key or one of its UNIQUE constraints.
    pub ref_columns: Vec<usize>,
    pub on_delete: RefAction,
    pub on_update: RefAction,
    pub deferrable: bool,
    /// Checked at COMMIT rather than at the end of each statement.
    pub initially_deferred: bool,
    /// False while `NOT VALID`: every write keeps it, but the rows that
    /// were there when it was added have not been checked
    /// (pg_constraint.convalidated).
    #[serde(default = "validated", skip_serializing_if = "is_validated")]
    pub validated: bool,
}

fn validated() -> bool {
    true
}

fn is_validated(v: &bool) -> bool {
    *v
}

/// On a referenced table: a foreign key of table `table` (perhaps itself)
/// named `constraint` points here, at `columns` of this table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    pub table: String,
    pub constraint: String,
    /// The referenced columns: an UPDATE that sets none of them removes no
    /// key and is not checked.
    pub columns: Vec<usize>,
}

impl ForeignKeyDef {
    /// The pointer its referenced table keeps back at it, declared on
    /// table `table`.
    pub fn inbound(&self, table: &str) -> Inbound {
        Inbound {
            table: table.to_owned(),
            constraint: self.name.clone(),
            columns: self.ref_columns.clone(),
        }
    }

    /// The referencing values of `row`, or None when one of them is NULL:
    /// MATCH SIMPLE, PostgreSQL's default, then checks nothing.
    pub fn key_of(&self, row: &[Value]) -> Option<Vec<Value>> {
        let key: Vec<Value> = self.columns.iter().map(|&i| row[i].clone()).collect();
        (!key.iter().any(Value::is_null)).then_some(key)
    }

    /// The referenced values of parent row `row`, None when one is NULL
    /// (a NULL in a UNIQUE column is referenced by nobody).
    pub fn ref_key_of(&self, row: &[Value]) -> Option<Vec<Value>> {
        let key: Vec<Value> = self.ref_columns.iter().map(|&i| row[i].clone()).collect();
        (!key.iter().any(Value::is_null)).then_some(key)
    }
}

impl TableDef {
    /// Its foreign key named `name`.
    pub fn foreign_key(&self, name: &str) -> Option<&ForeignKeyDef> {
        self.foreign_keys.iter().find(|f| f.name == name)
    }

    /// Whether setting columns `set` may add a reference (one of its
    /// foreign keys' columns) or remove a referenced key (a column a
    /// pointer names).
    pub fn sets_key_columns(&self, set: &[usize]) -> bool {
        let any = |cols: &[usize]| cols.iter().any(|c| set.contains(c));
        self.foreign_keys.iter().any(|f| any(&f.columns))
            || self.referenced_by.iter().any(|i| any(&i.columns))
    }
}
