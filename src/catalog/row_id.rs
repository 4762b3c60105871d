//! Tables without a primary key (logs, histories, pgbench_history): each
//! row is keyed by a hidden row id, a random UUID drawn by its DEFAULT, as
//! CockroachDB keys such tables by its hidden `rowid`. The row id is the
//! table's last column, marked hidden: SELECT *, INSERT without a column
//! list, COPY, RowDescription and the catalog never show it, and no SQL
//! can name it. Rows are stored under it; `primary_key` keeps meaning the
//! declared primary key, empty until `ALTER TABLE ... ADD PRIMARY KEY`,
//! which then enforces it through claims as a UNIQUE constraint is
//! (`UniqueDef::primary`) while the rows stay where they are.

use std::borrow::Cow;

use super::{ColumnDef, ColumnStorage, TableDef};
use crate::types::SqlType;

/// The hidden column's name; a user column of that name is refused.
pub const ROW_ID: &str = "__keyclaim_rowid";

/// The hidden row id column a table without a primary key gets.
pub fn column() -> ColumnDef {
    ColumnDef {
        name: ROW_ID.to_owned(),
        ty: SqlType::Uuid,
        not_null: true,
        default: Some("gen_random_uuid()".to_owned()),
        identity: None,
        hidden: true,
        comment: None,
        storage: ColumnStorage::default(),
    }
}

impl TableDef {
    /// The hidden row id's column, if rows are keyed by one (always the
    /// last column).
    pub fn row_id(&self) -> Option<usize> {
        self.columns
            .last()
            .filter(|c| c.hidden)
            .map(|_| self.columns.len() - 1)
    }

    /// The columns users see, in order: all but a hidden row id.
    pub fn visible(&self) -> &[ColumnDef] {
        match self.row_id() {
            Some(i) => &self.columns[..i],
            None => &self.columns,
        }
    }

    /// The columns rows are stored under (their partition key): the
    /// hidden row id if the table has one, else the primary key.
    pub fn key_columns(&self) -> Cow<'_, [usize]> {
        match self.row_id() {
            Some(i) => Cow::Owned(vec![i]),
            None => Cow::Borrowed(&self.primary_key),
        }
    }

    /// Column `column` added as the last column users see (before a
    /// hidden row id, which keeps its slot), in the next slot no column
    /// ever had; returns its index.
    pub fn push_column(&mut self, mut column: ColumnDef) -> usize {
        let slot = self.slot_count();
        let at = self.row_id().unwrap_or(self.columns.len());
        if slot != at {
            column.storage.slot = Some(slot as u32);
        }
        if let Some(r) = self.row_id() {
            let row_id_slot = self.slot(r) as u32;
            self.columns[r].storage.slot = Some(row_id_slot);
        }
        self.columns.insert(at, column);
        at
    }
}
