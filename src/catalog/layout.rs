//! Where a column's value is kept, apart from where it is in the table.
//!
//! The engine works with a row's values in table order (the columns of
//! the current definition). A stored row keeps each value in its column's
//! *slot*, which never changes: `DROP COLUMN` takes a column out of the
//! definition and leaves a hole where its slot was (as PostgreSQL's
//! attisdropped does), and `ADD COLUMN` gives the new column the next slot
//! no column ever had. A row written before a column was added has no
//! value in its slot and reads the column's *missing value* (PostgreSQL's
//! attmissingval): the constant DEFAULT it was added with, or NULL. On
//! Cassandra a column's CQL name is its storage name, fixed when it is
//! created, so `RENAME COLUMN` changes only the definition.
//!
//! A table whose columns were never added, dropped or renamed has the
//! plain layout (slot = position, storage name = name) and pays nothing.

use serde::{Deserialize, Serialize};

use super::TableDef;
use crate::types::Value;

/// How one column is kept, where that differs from the plain layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColumnStorage {
    /// Its slot in stored rows; None: its position in the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// Added by ALTER TABLE: what rows stored without it read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Value>,
    /// Its name in the store (the CQL column); None: its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its type was changed (ALTER COLUMN TYPE between integer widths)
    /// without rewriting a row: a value stored before reads cast to the
    /// column's type.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retyped: bool,
}

impl ColumnStorage {
    pub fn is_plain(&self) -> bool {
        *self == ColumnStorage::default()
    }
}

impl TableDef {
    /// The slot of column `i` in stored rows.
    pub fn slot(&self, i: usize) -> usize {
        self.columns[i].storage.slot.map_or(i, |s| s as usize)
    }

    /// Column `i`'s number in pg_attribute (PostgreSQL's attnum): its
    /// slot, from 1, so a dropped column leaves a gap as it does there.
    pub fn attnum(&self, i: usize) -> usize {
        self.slot(i) + 1
    }

    /// How many slots a stored row written now has: every column's, and
    /// every dropped column's before them.
    pub fn slot_count(&self) -> usize {
        let used = (0..self.columns.len()).map(|i| self.slot(i) + 1).max();
        used.unwrap_or(0).max(self.dropped_slots as usize)
    }

    /// The name column `i` is stored under.
    pub fn storage_name(&self, i: usize) -> &str {
        let c = &self.columns[i];
        c.storage.name.as_deref().unwrap_or(&c.name)
    }

    /// Whether stored rows are laid out as the table is (no conversion).
    pub fn plain_layout(&self) -> bool {
        self.dropped_slots == 0 && self.columns.iter().all(|c| c.storage.is_plain())
    }

    /// A row's values in table order, as stored: each in its slot, NULL
    /// in the slots of dropped columns. A dead row's (empty) stays empty.
    pub fn to_slots(&self, values: &[Value]) -> Vec<Value> {
        if values.is_empty() || self.plain_layout() {
            return values.to_vec();
        }
        let mut out = vec![Value::Null; self.slot_count()];
        for (i, v) in values.iter().enumerate().take(self.columns.len()) {
            out[self.slot(i)] = v.clone();
        }
        out
    }

    /// A stored row's values in table order: a column whose slot the row
    /// does not have (it was stored before the column was added) reads
    /// its missing value; a retyped column's value is cast to its type.
    pub fn from_slots(&self, stored: Vec<Value>) -> Vec<Value> {
        if stored.is_empty() || self.plain_layout() {
            return stored;
        }
        (0..self.columns.len())
            .map(|i| {
                let c = &self.columns[i];
                match stored.get(self.slot(i)) {
                    // One that does not fit (a narrowing being checked)
                    // stays as it is, for the check to find.
                    Some(v) if c.storage.retyped => v.cast_to(&c.ty).unwrap_or_else(|_| v.clone()),
                    Some(v) => v.clone(),
                    None => c.storage.missing.clone().unwrap_or(Value::Null),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnDef;
    use crate::types::SqlType;

    fn col(name: &str) -> ColumnDef {
        ColumnDef::new(name, SqlType::Int4)
    }

    fn table(columns: Vec<ColumnDef>) -> TableDef {
        TableDef::new("t", "t.1", columns, vec![0])
    }

    #[test]
    fn a_plain_table_is_stored_as_it_is() {
        let t = table(vec![col("a"), col("b")]);
        assert!(t.plain_layout());
        let v = vec![Value::Int4(1), Value::Int4(2)];
        assert_eq!(t.to_slots(&v), v);
        assert_eq!(t.from_slots(v.clone()), v);
        assert_eq!(t.attnum(1), 2);
    }

    #[test]
    fn an_added_column_reads_its_missing_value_in_older_rows() {
        let mut t = table(vec![col("a"), col("b")]);
        let old_row = t.to_slots(&[Value::Int4(1), Value::Int4(2)]);
        t.columns.push(ColumnDef {
            storage: ColumnStorage {
                missing: Some(Value::Int4(7)),
                ..ColumnStorage::default()
            },
            ..col("c")
        });
        assert!(!t.plain_layout());
        assert_eq!(
            t.from_slots(old_row),
            vec![Value::Int4(1), Value::Int4(2), Value::Int4(7)]
        );
        // A row written now holds its own value, NULL included.
        let new_row = t.to_slots(&[Value::Int4(1), Value::Int4(2), Value::Null]);
        assert_eq!(t.from_slots(new_row)[2], Value::Null);
    }

    #[test]
    fn a_retyped_column_reads_older_values_as_its_type() {
        let mut t = table(vec![col("a"), col("b")]);
        let old_row = t.to_slots(&[Value::Int4(1), Value::Int4(2)]);
        t.columns[1].ty = crate::types::SqlType::Int8;
        t.columns[1].storage.retyped = true;
        assert_eq!(t.from_slots(old_row), vec![Value::Int4(1), Value::Int8(2)]);
        // Narrowed, a value that does not fit is left for the check.
        t.columns[1].ty = crate::types::SqlType::Int2;
        let wide = vec![Value::Int4(1), Value::Int8(1 << 40)];
        assert_eq!(t.from_slots(wide.clone()), wide);
    }

    #[test]
    fn a_dropped_column_leaves_its_slot_and_its_attnum_unused() {
        // Columns a, b, c; b dropped: c keeps slot 2 and attnum 3.
        let mut t = table(vec![col("a"), col("c")]);
        t.columns[1].storage.slot = Some(2);
        t.dropped_slots = 3;
        let stored = vec![Value::Int4(1), Value::Int4(99), Value::Int4(3)];
        assert_eq!(t.from_slots(stored), vec![Value::Int4(1), Value::Int4(3)]);
        assert_eq!(
            t.to_slots(&[Value::Int4(1), Value::Int4(3)]),
            vec![Value::Int4(1), Value::Null, Value::Int4(3)]
        );
        assert_eq!(t.attnum(1), 3);
        // A column added after it takes a slot no column had.
        assert_eq!(t.slot_count(), 3);
        // Dead rows stay empty either way.
        assert!(t.to_slots(&[]).is_empty());
        assert!(t.from_slots(Vec::new()).is_empty());
    }
}
