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
#[derive(Debug, Clone, Default, PartialEq)]
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
        let increment = self.increment.unwrap_or(1);
        let min = self.min.flatten().unwrap_or(default_min(&ty, increment));
        let max = self.max.flatten().unwrap_or(default_max(&ty, increment));
        let start = self.start.unwrap_or(if increment > 0 { min } else { max });
        SequenceDef {
            ty,
            start,
            increment,
            min,
            max,
            cache: self.cache.unwrap_or(1),
            cycle: self.cycle.unwrap_or(false),
            owned_by: None,
            counter: String::new(),
        }
        .checked()
    }
}

/// MINVALUE when none is given: 1 going up, the type's least going down.
fn default_min(ty: &SqlType, increment: i64) -> i64 {
    if increment > 0 {
        1
    } else {
        type_min(ty)
    }
}

/// MAXVALUE when none is given: the type's largest going up, -1 going down.
fn default_max(ty: &SqlType, increment: i64) -> i64 {
    if increment > 0 {
        type_max(ty)
    } else {
        -1
    }
}

impl SequenceDef {
    /// This sequence changed by ALTER SEQUENCE's `options` (or by a type
    /// change of the identity column it serves), as PostgreSQL's
    /// `init_params` changes one: a new type takes its own bounds where
    /// the old ones were the old type's; NO MINVALUE / NO MAXVALUE take
    /// the defaults; the rest stays. Checked as a new one is.
    pub fn altered(&self, options: &Options) -> SqlResult<SequenceDef> {
        let ty = options.ty.clone().unwrap_or_else(|| self.ty.clone());
        let retyped = ty != self.ty;
        let increment = options.increment.unwrap_or(self.increment);
        let max = match options.max {
            Some(Some(max)) => max,
            Some(None) => default_max(&ty, increment),
            None if retyped && self.max == type_max(&self.ty) => type_max(&ty),
            None => self.max,
        };
        let min = match options.min {
            Some(Some(min)) => min,
            Some(None) => default_min(&ty, increment),
            None if retyped && self.min == type_min(&self.ty) => type_min(&ty),
            None => self.min,
        };
        SequenceDef {
            ty,
            start: options.start.unwrap_or(self.start),
            increment,
            min,
            max,
            cache: options.cache.unwrap_or(self.cache),
            cycle: options.cycle.unwrap_or(self.cycle),
            ..self.clone()
        }
        .checked()
    }

    /// This definition, or PostgreSQL's 22023 for what it would refuse.
    fn checked(self) -> SqlResult<SequenceDef> {
        let ty = &self.ty;
        if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
            return Err(invalid(
                "sequence type must be smallint, integer, or bigint".into(),
            ));
        }
        if self.increment == 0 {
            return Err(invalid("INCREMENT must not be zero".into()));
        }
        let (lo, hi) = (type_min(ty), type_max(ty));
        let (min, max, start, name) = (self.min, self.max, self.start, ty.pg_name());
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
        self.within_bounds("START", start)?;
        if self.cache <= 0 {
            return Err(invalid(format!(
                "CACHE ({}) must be greater than zero",
                self.cache
            )));
        }
        Ok(self)
    }

    /// START's value, or RESTART's (`what`), within MINVALUE and
    /// MAXVALUE: PostgreSQL's 22023 otherwise.
    pub fn within_bounds(&self, what: &str, value: i64) -> SqlResult<()> {
        let (which, bound) = match value {
            v if v < self.min => ("less than MINVALUE", self.min),
            v if v > self.max => ("greater than MAXVALUE", self.max),
            _ => return Ok(()),
        };
        Err(invalid(format!(
            "{what} value ({value}) cannot be {which} ({bound})"
        )))
    }

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
    fn a_new_type_brings_its_bounds_where_the_old_ones_were_the_old_types() {
        let int = Options {
            ty: Some(SqlType::Int4),
            ..Options::default()
        }
        .define()
        .unwrap();
        let as_ = |def: &SequenceDef, ty| {
            def.altered(&Options {
                ty: Some(ty),
                ..Options::default()
            })
        };
        let big = as_(&int, SqlType::Int8).unwrap();
        assert_eq!((big.min, big.max), (1, i64::MAX));
        let small = as_(&big, SqlType::Int2).unwrap();
        assert_eq!(small.max, i16::MAX as i64);
        // A chosen MAXVALUE stays, and must fit the new type.
        let capped = int
            .altered(&Options {
                max: Some(Some(100_000)),
                ..Options::default()
            })
            .unwrap();
        assert_eq!(as_(&capped, SqlType::Int8).unwrap().max, 100_000);
        assert_eq!(
            as_(&capped, SqlType::Int2).unwrap_err().message,
            "MAXVALUE (100000) is out of range for sequence data type smallint"
        );
        // NO MAXVALUE: the default for the direction.
        let down = int
            .altered(&Options {
                increment: Some(-1),
                max: Some(None),
                min: Some(None),
                start: Some(-1),
                ..Options::default()
            })
            .unwrap();
        assert_eq!((down.min, down.max), (i32::MIN as i64, -1));
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
