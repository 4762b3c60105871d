//! Plain indexes (`catalog::IndexDef`, CREATE INDEX): under each key the
//! index's columns hold, the primary keys of the rows that hold it, or held
//! it once.
//!
//! The rule that makes them safe without an LWT: every state a row can be
//! shown in has its entry before it can be seen. A writer adds the entry
//! of the values it writes before it writes the row (or its intent), and
//! so before the commit stamp that makes the row visible is taken; an
//! entry is never removed while its index lives. So a statement that reads
//! an index after its snapshot finds every row whose visible state holds
//! the key, and checks each row it finds (its state as the snapshot shows
//! it, against the whole filter): an entry left by an older state, or by a
//! write that failed, costs a row read, never a wrong answer. The rows
//! written before the index existed get their entries from its build
//! (`engine::ddl`), which writers already keep it during; lookups go by
//! the index only once that is done (`IndexDef::usable`).

use super::row::store_failure;
use super::{with_retries, RowWrite, WriteError};
use crate::catalog::TableDef;
use crate::store::{Store, StoreResult};
use crate::types::Value;

/// The entries row `pk` needs once it holds `after`, that the state it
/// replaces (`before`, when live) does not have already: one per kept
/// index whose key changes. Added before the row is written.
pub(super) async fn add_entries(
    w: &RowWrite<'_>,
    pk: &[u8],
    before: Option<&[Value]>,
    after: &[Value],
) -> Result<(), WriteError> {
    // Usually one index, so one write; several are written in turn.
    for (id, key) in missing(w.table, before, after) {
        with_retries(w.cfg, w.stats, || w.store.add_index_entry(id, &key, pk))
            .await
            // Nothing visible was written: an entry that landed only costs
            // a reader a row read.
            .map_err(store_failure)?;
    }
    Ok(())
}

/// Index id and key of each entry `after` needs and `before` lacks.
fn missing<'t>(
    table: &'t TableDef,
    before: Option<&[Value]>,
    after: &[Value],
) -> Vec<(&'t str, Vec<u8>)> {
    table
        .indexes
        .iter()
        .filter(|i| i.kept())
        .filter_map(|i| {
            let key = i.key_of(after)?;
            let had = before.and_then(|b| i.key_of(b));
            (had.as_deref() != Some(key.as_slice())).then_some((i.id.as_str(), key))
        })
        .collect()
}

/// The entries a build gives row `pk` for each state it has (`states`:
/// its committed values, the state before, a pending intent's).
pub async fn build_entries(
    store: &dyn Store,
    index: &crate::catalog::IndexDef,
    pk: &[u8],
    states: &[&[Value]],
) -> StoreResult<()> {
    let mut keys: Vec<Vec<u8>> = states.iter().filter_map(|v| index.key_of(v)).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        store.add_index_entry(&index.id, &key, pk).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ColumnDef, IndexDef};
    use crate::types::SqlType;

    fn table() -> TableDef {
        let index = |name: &str, columns: Vec<usize>, id: &str| IndexDef {
            name: name.into(),
            columns,
            id: id.into(),
            building: false,
        };
        let columns = ["id", "a", "b"].map(|c| ColumnDef::new(c, SqlType::Int8));
        TableDef {
            indexes: vec![
                index("t_a_idx", vec![1], "a.1"),
                index("t_a_b_idx", vec![1, 2], "ab.1"),
                // Recorded before entries were kept: never written.
                index("t_b_idx", vec![2], ""),
            ],
            ..TableDef::new("t", "t.1", columns.to_vec(), vec![0])
        }
    }

    fn row(a: Option<i64>, b: i64) -> Vec<Value> {
        vec![
            Value::Int8(1),
            a.map_or(Value::Null, Value::Int8),
            Value::Int8(b),
        ]
    }

    fn ids(entries: Vec<(&str, Vec<u8>)>) -> Vec<&str> {
        entries.into_iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn a_new_row_needs_an_entry_in_every_kept_index() {
        assert_eq!(
            ids(missing(&table(), None, &row(Some(5), 7))),
            ["a.1", "ab.1"]
        );
    }

    #[test]
    fn only_the_indexes_whose_key_changes_need_one() {
        let t = table();
        let before = row(Some(5), 7);
        assert!(missing(&t, Some(&before), &row(Some(5), 7)).is_empty());
        assert_eq!(ids(missing(&t, Some(&before), &row(Some(5), 8))), ["ab.1"]);
        assert_eq!(
            ids(missing(&t, Some(&before), &row(Some(6), 7))),
            ["a.1", "ab.1"]
        );
    }

    #[test]
    fn a_null_key_needs_no_entry() {
        assert!(missing(&table(), None, &row(None, 7)).is_empty());
    }
}
