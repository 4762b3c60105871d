//! Count limits ("at most N live rows per group"), and what a claim is on.
//!
//! A count limit of N on columns C gives every group (a value of C with no
//! NULL in it) N slots. A live row of the group holds exactly one slot: a
//! claim on the key (group, slot), taken as a UNIQUE value is, and an
//! entry `<limit id>#<slot>` in the row's own `__claims` map saying which.
//! So a slot claim is backed only by a live row of its group that records
//! that very slot, and the limit inherits the claim protocol whole: leases,
//! fences, intents, undo (docs/count_limits.md).
//!
//! [`ClaimOn`] is what the claim protocol works with: a UNIQUE constraint
//! or a count limit, by one index over both lists of a table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{TableDef, UniqueDef};
use crate::store::{RowRecord, TxnId};
use crate::types::Value;

/// A count limit of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountLimitDef {
    /// The name errors report and `drop_count_limit` takes.
    pub name: String,
    /// Storage id of its slot claims, fresh for every creation, so that a
    /// dropped limit's leftovers never count for a new one.
    pub id: String,
    /// The grouping columns.
    pub columns: Vec<usize>,
    /// N: live rows one group may hold.
    pub limit: u32,
}

impl CountLimitDef {
    /// The group a row belongs to; None when a NULL leaves it in none (as
    /// a NULL leaves a row out of a UNIQUE constraint).
    /// A dead row's (empty) values are in none.
    pub fn group_of<'a>(&self, values: &'a [Value]) -> Option<Vec<&'a Value>> {
        self.columns
            .iter()
            .map(|&i| values.get(i).filter(|v| !v.is_null()))
            .collect()
    }

    /// The claim key of slot `slot` of `group`.
    pub fn slot_key(group: &[&Value], slot: u32) -> Vec<u8> {
        let slot = Value::Int8(i64::from(slot));
        let mut key: Vec<&Value> = group.to_vec();
        key.push(&slot);
        crate::types::encode_key(&key)
    }

    /// The `__claims` entry of a row holding `slot`.
    pub fn entry(&self, slot: u32) -> String {
        format!("{}#{slot}", self.id)
    }

    /// The slot a row's `__claims` says it holds, if any (the lowest, were
    /// there ever two: only one can then back a claim).
    pub fn slot_in(&self, claims: &BTreeMap<String, TxnId>) -> Option<u32> {
        let prefix = format!("{}#", self.id);
        claims
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| k[prefix.len()..].parse().ok())
            .min()
    }
}

/// What one claim is on: a UNIQUE constraint's value, or a count limit's
/// slot. Indexed over a table's `uniques` then its `count_limits`.
#[derive(Debug, Clone, Copy)]
pub enum ClaimOn<'a> {
    Unique(&'a UniqueDef),
    Slot(&'a CountLimitDef),
}

impl<'a> ClaimOn<'a> {
    /// Storage id of the claims.
    pub fn id(self) -> &'a str {
        match self {
            ClaimOn::Unique(u) => &u.id,
            ClaimOn::Slot(l) => &l.id,
        }
    }

    /// The key a row with `values` and `__claims` `claims` holds; None
    /// when it holds none (a NULL, or a slot not taken yet).
    pub fn key_of(self, values: &[Value], claims: &BTreeMap<String, TxnId>) -> Option<Vec<u8>> {
        match self {
            ClaimOn::Unique(u) => u.key_of(values),
            ClaimOn::Slot(l) => {
                let group = l.group_of(values)?;
                Some(CountLimitDef::slot_key(&group, l.slot_in(claims)?))
            }
        }
    }

    /// Whether `row` backs a claim on `key` (claims.md, rule 1): it is live
    /// and holds that key. Only a backed claim means the key is taken.
    pub fn backed_by(self, key: &[u8], row: &RowRecord) -> bool {
        row.live && self.key_of(&row.values, &row.claims).as_deref() == Some(key)
    }

    /// The `__claims` entry a row holding this claim's key records: the
    /// constraint's id, or for a slot the id and the slot.
    pub fn entry(self, slot: Option<u32>) -> String {
        match (self, slot) {
            (ClaimOn::Slot(l), Some(s)) => l.entry(s),
            _ => self.id().to_owned(),
        }
    }
}

impl TableDef {
    /// The claim kind at `index` over `uniques` then `count_limits`.
    pub fn claim_on(&self, index: usize) -> ClaimOn<'_> {
        match self.uniques.get(index) {
            Some(u) => ClaimOn::Unique(u),
            None => ClaimOn::Slot(&self.count_limits[index - self.uniques.len()]),
        }
    }

    /// Every claim kind of the table, with its index for [`Self::claim_on`].
    pub fn claims_on(&self) -> impl Iterator<Item = (usize, ClaimOn<'_>)> {
        self.uniques
            .iter()
            .map(ClaimOn::Unique)
            .chain(self.count_limits.iter().map(ClaimOn::Slot))
            .enumerate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit() -> CountLimitDef {
        CountLimitDef {
            name: "per_option".into(),
            id: "per_option.1".into(),
            columns: vec![1],
            limit: 2,
        }
    }

    #[test]
    fn a_row_backs_only_the_slot_its_claims_record() {
        let l = limit();
        let txn = uuid::Uuid::now_v7();
        let values = vec![Value::Int8(1), Value::Int8(7)];
        let claims: BTreeMap<String, TxnId> = [(l.entry(1), txn)].into_iter().collect();
        let row = RowRecord::live(txn, claims, values.clone());
        let on = ClaimOn::Slot(&l);
        let group = l.group_of(&values).unwrap();
        assert!(on.backed_by(&CountLimitDef::slot_key(&group, 1), &row));
        assert!(!on.backed_by(&CountLimitDef::slot_key(&group, 0), &row));
        let other = [&Value::Int8(8)];
        assert!(!on.backed_by(&CountLimitDef::slot_key(&other, 1), &row));
        assert_eq!(on.entry(Some(1)), "per_option.1#1");
    }

    #[test]
    fn a_null_or_an_untaken_slot_is_no_key() {
        let l = limit();
        let on = ClaimOn::Slot(&l);
        let none = BTreeMap::new();
        assert_eq!(on.key_of(&[Value::Int8(1), Value::Int8(7)], &none), None);
        let claims = [(l.entry(0), uuid::Uuid::now_v7())].into_iter().collect();
        assert_eq!(on.key_of(&[Value::Int8(1), Value::Null], &claims), None);
        // A prefix of another limit's id is not this limit's entry.
        let other = [("per_option.10#0".to_string(), uuid::Uuid::now_v7())]
            .into_iter()
            .collect();
        assert_eq!(l.slot_in(&other), None);
    }
}
