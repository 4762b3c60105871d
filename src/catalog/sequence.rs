//! Sequences: their definitions, as PostgreSQL's CREATE SEQUENCE and
//! identity / serial columns declare them. A sequence is a relation in the
//! catalog (a [`TableDef`](super::TableDef) whose `sequence` is set), so it
//! shares the tables' namespace, transactional DDL and catalog epoch; its
//! counter lives in a record of its own (`engine::sequence`).

use serde::{Deserialize, Serialize};

use crate::error::{SqlError, SqlResult};
use crate::types::SqlType;

/// What a sequence hands out and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceDef {
    /// smallint, integer or bigint: bounds the default MINVALUE / MAXVALUE.
    pub ty: SqlType,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    /// PostgreSQL's CACHE: values a proxy takes at a time at least.
    pub cache: i64,
    pub cycle: bool,
    /// `OWNED BY table.column`: dropped with the table; the column's
    /// default (serial) or identity draws from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<(String, String)>,
    /// Storage id of its counter record, fresh per creation, so that a
    /// dropped sequence's counter never counts for a new one.
    pub counter: String,
}

/// `GENERATED ALWAYS` refuses explicit values; `BY DEFAULT` takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Identity {
    Always,
    ByDefault,
}

/// The options CREATE SEQUENCE (or an identity column) gave; None where
/// the default applies.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub ty: Option<SqlType>,
    pub start: Option<i64>,
    pub increment: Option<i64>,
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
}

fn invalid(message: String) -> SqlError {
    SqlError::new("22023", message)
}

/// The largest value a sequence of type `ty` may reach.
fn type_max(ty: &SqlType) -> i64 {
    match ty {
        SqlType::Int2 => i16::MAX as i64,
        SqlType::Int4 => i32::MAX as i64,
        _ => i64::MAX,
    }
}

fn type_min(ty: &SqlType) -> i64 {
    match ty {
        SqlType::Int2 => i16::MIN as i64,
        SqlType::Int4 => i32::MIN as i64,
        _ => i64::MIN,
    }
}

impl Options {
    /// The definition these options make, checked as PostgreSQL's
    /// `init_params` checks them (22023 with its messages).
    pub fn define(&self) -> SqlResult<SequenceDef> {
        let ty = self.ty.clone().unwrap_or(SqlType::Int8);
        if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
            return Err(invalid(
                "sequence type must be smallint, integer, or bigint".into(),
            ));
        }
        let increment = self.increment.unwrap_or(1);
        if increment == 0 {
            return Err(invalid("INCREMENT must not be zero".into()));
        }
        let (lo, hi) = (type_min(&ty), type_max(&ty));
        let max = self
            .max
            .flatten()
            .unwrap_or(if increment > 0 { hi } else { -1 });
        let min = self
            .min
            .flatten()
            .unwrap_or(if increment > 0 { 1 } else { lo });
        let name = ty.pg_name();
        if max < lo || max > hi {
            return Err(invalid(format!(
                "MAXVALUE ({max}) is out of range for sequence data type {name}"
            )));
        }
        if min < lo || min > hi {
            return Err(invalid(format!(
                "MINVALUE ({min}) is out of range for sequence data type {name}"
            )));
        }
        if min >= max {
            return Err(invalid(format!(
                "MINVALUE ({min}) must be less than MAXVALUE ({max})"
            )));
        }
        let start = self.start.unwrap_or(if increment > 0 { min } else { max });
        if start < min {
            return Err(invalid(format!(
                "START value ({start}) cannot be less than MINVALUE ({min})"
            )));
        }
        if start > max {
            return Err(invalid(format!(
                "START value ({start}) cannot be greater than MAXVALUE ({max})"
            )));
        }
        let cache = self.cache.unwrap_or(1);
        if cache <= 0 {
            return Err(invalid(format!(
                "CACHE ({cache}) must be greater than zero"
            )));
        }
        Ok(SequenceDef {
            ty,
            start,
            increment,
            min,
            max,
            cache,
            cycle: self.cycle.unwrap_or(false),
            owned_by: None,
            counter: String::new(),
        })
    }
}

impl SequenceDef {
    /// `setval`'s bounds check (22003, PostgreSQL's message).
    pub fn check_bounds(&self, name: &str, value: i64) -> SqlResult<()> {
        if value < self.min || value > self.max {
            return Err(SqlError::new(
                "22003",
                format!(
                    "setval: value {value} is out of bounds for sequence \"{name}\" ({}..{})",
                    self.min, self.max
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_type_and_the_direction() {
        let up = Options::default().define().unwrap();
        assert_eq!((up.start, up.min, up.max), (1, 1, i64::MAX));
        let down = Options {
            ty: Some(SqlType::Int4),
            increment: Some(-1),
            ..Options::default()
        }
        .define()
        .unwrap();
        assert_eq!((down.start, down.min, down.max), (-1, i32::MIN as i64, -1));
    }

    #[test]
    fn bad_options_answer_postgres_messages() {
        let err = |o: Options| o.define().unwrap_err().message;
        assert_eq!(
            err(Options {
                increment: Some(0),
                ..Options::default()
            }),
            "INCREMENT must not be zero"
        );
        assert_eq!(
            err(Options {
                start: Some(0),
                ..Options::default()
            }),
            "START value (0) cannot be less than MINVALUE (1)"
        );
        assert_eq!(
            err(Options {
                min: Some(Some(5)),
                max: Some(Some(2)),
                ..Options::default()
            }),
            "MINVALUE (5) must be less than MAXVALUE (2)"
        );
    }
}
