//! One catalog entry as the store keeps it: a table's committed definition
//! and at most one transaction's pending change to it, the catalog's
//! counterpart of a row's intent (docs/transactions.md, section 10).
//!
//! DDL inside a block writes its change as an intent of the block's
//! transaction: that transaction sees it at once, everybody else sees the
//! committed definition until the transaction record says committed, and an
//! aborted (or rolled back) change is never seen by anyone.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::TableDef;
use crate::store::TxnId;

/// A table's committed definition and a transaction's pending change.
/// At least one of the two is present (an entry with neither is deleted).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    pub committed: Option<Arc<TableDef>>,
    pub intent: Option<DefIntent>,
}

/// What a transaction will make of the table if it commits: a new
/// definition, or None when it drops the table.
#[derive(Debug, Clone, PartialEq)]
pub struct DefIntent {
    pub txn: TxnId,
    pub def: Option<Arc<TableDef>>,
    /// The transaction holds the table exclusively until it ends (an
    /// ALTER TABLE that checks existing rows, as PostgreSQL's ACCESS
    /// EXCLUSIVE lock): other sessions' statements on it wait.
    pub exclusive: bool,
}

/// The stored form. An entry without an intent is stored as the bare
/// definition, as every entry was before transactional DDL, so old
/// catalogs read unchanged.
// Built only to (de)serialize one entry at a time: its size is of no account.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Stored {
    Plain(TableDef),
    Pending {
        committed: Option<TableDef>,
        intent: StoredIntent,
    },
}

#[derive(Serialize, Deserialize)]
struct StoredIntent {
    txn: TxnId,
    def: Option<TableDef>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    exclusive: bool,
}

impl Entry {
    pub fn committed(def: Arc<TableDef>) -> Entry {
        Entry {
            committed: Some(def),
            intent: None,
        }
    }

    pub fn decode(text: &str) -> Result<Entry, serde_json::Error> {
        Ok(match serde_json::from_str(text)? {
            Stored::Plain(def) => Entry::committed(Arc::new(def)),
            Stored::Pending { committed, intent } => Entry {
                committed: committed.map(Arc::new),
                intent: Some(DefIntent {
                    txn: intent.txn,
                    def: intent.def.map(Arc::new),
                    exclusive: intent.exclusive,
                }),
            },
        })
    }

    pub fn encode(&self) -> Result<String, serde_json::Error> {
        match (&self.committed, &self.intent) {
            (Some(def), None) => serde_json::to_string(def.as_ref()),
            (committed, intent) => serde_json::to_string(&Stored::Pending {
                committed: committed.as_deref().cloned(),
                intent: StoredIntent {
                    txn: intent.as_ref().map(|i| i.txn).unwrap_or_default(),
                    def: intent.as_ref().and_then(|i| i.def.as_deref().cloned()),
                    exclusive: intent.as_ref().is_some_and(|i| i.exclusive),
                },
            }),
        }
    }

    /// The intent of a transaction other than `own`, if the entry has one.
    pub fn foreign_intent(&self, own: Option<TxnId>) -> Option<&DefIntent> {
        self.intent.as_ref().filter(|i| Some(i.txn) != own)
    }

    /// The definition a reader sees: its own transaction's intent, a
    /// committed one's (`intent_committed`), else the committed definition.
    pub fn visible(&self, own: Option<TxnId>, intent_committed: bool) -> Option<Arc<TableDef>> {
        match &self.intent {
            Some(i) if Some(i.txn) == own || intent_committed => i.def.clone(),
            _ => self.committed.clone(),
        }
    }

    /// The entry once its intent's transaction is decided: None when no
    /// definition is left (the entry is deleted).
    pub fn folded(&self, committed: bool) -> Option<Entry> {
        self.visible(None, committed).map(Entry::committed)
    }

    /// Some definition the entry holds, for whatever needs a table to act
    /// on while it waits for the entry's intent.
    pub fn any_def(&self) -> Option<&Arc<TableDef>> {
        self.committed
            .as_ref()
            .or_else(|| self.intent.as_ref().and_then(|i| i.def.as_ref()))
    }
}

/// Storage that no surviving definition uses any more: what to remove once
/// a change is decided or undone.
#[derive(Debug, Default, PartialEq)]
pub struct Garbage {
    /// Tables whose rows go (their constraints' claims go with them).
    pub tables: Vec<Arc<TableDef>>,
    /// Claims of constraints that went, on tables that stay.
    pub claims: Vec<String>,
    /// Counter ids of dropped sequences (`engine::sequence`).
    pub counters: Vec<String>,
    /// Entries of plain indexes that went (`claims::index`).
    pub indexes: Vec<String>,
}

/// The storage some definitions use: tables by storage id, constraints
/// and count limits by claims id, plain indexes by entries id, sequences
/// by counter id.
struct Uses<'a> {
    tables: HashSet<&'a str>,
    claims: HashSet<&'a str>,
    indexes: HashSet<&'a str>,
    counters: HashSet<&'a str>,
}

fn claim_ids(d: &TableDef) -> impl Iterator<Item = &str> {
    d.uniques
        .iter()
        .map(|u| u.id.as_str())
        .chain(d.count_limits.iter().map(|l| l.id.as_str()))
}

fn index_ids(d: &TableDef) -> impl Iterator<Item = &str> {
    d.indexes.iter().filter(|i| i.kept()).map(|i| i.id.as_str())
}

impl<'a> Uses<'a> {
    fn of(defs: impl IntoIterator<Item = &'a Arc<TableDef>>) -> Uses<'a> {
        let mut u = Uses {
            tables: HashSet::new(),
            claims: HashSet::new(),
            indexes: HashSet::new(),
            counters: HashSet::new(),
        };
        for d in defs {
            match &d.sequence {
                Some(seq) => {
                    u.counters.insert(seq.counter.as_str());
                }
                None => {
                    u.tables.insert(d.id.as_str());
                }
            }
            u.claims.extend(claim_ids(d));
            u.indexes.extend(index_ids(d));
        }
        u
    }
}

impl Garbage {
    pub fn is_empty(&self) -> bool {
        *self == Garbage::default()
    }

    /// Without what any of `named` (the definitions every catalog entry
    /// holds now) uses: a rename moves a definition to another entry, so
    /// what one entry's decision leaves behind may live on under another
    /// name.
    pub fn unless_named_by<'a>(
        self,
        named: impl IntoIterator<Item = &'a Arc<TableDef>>,
    ) -> Garbage {
        let uses = Uses::of(named);
        Garbage {
            tables: self
                .tables
                .into_iter()
                .filter(|t| !uses.tables.contains(t.id.as_str()))
                .collect(),
            claims: self
                .claims
                .into_iter()
                .filter(|c| !uses.claims.contains(c.as_str()))
                .collect(),
            counters: self
                .counters
                .into_iter()
                .filter(|c| !uses.counters.contains(c.as_str()))
                .collect(),
            indexes: self
                .indexes
                .into_iter()
                .filter(|i| !uses.indexes.contains(i.as_str()))
                .collect(),
        }
    }
}

/// What of `gone` (definitions a decision or undo left behind) is used by
/// none of `kept`.
pub fn garbage<'a>(
    gone: impl IntoIterator<Item = &'a Arc<TableDef>>,
    kept: &[&Arc<TableDef>],
) -> Garbage {
    let kept = Uses::of(kept.iter().copied());
    let mut tables: HashMap<&str, &Arc<TableDef>> = HashMap::new();
    let mut claims: Vec<String> = Vec::new();
    let mut counters: Vec<String> = Vec::new();
    let mut indexes: Vec<String> = Vec::new();
    for def in gone {
        if let Some(seq) = &def.sequence {
            // A sequence has no rows, only its counter.
            if !kept.counters.contains(seq.counter.as_str()) && !counters.contains(&seq.counter) {
                counters.push(seq.counter.clone());
            }
            continue;
        }
        if !kept.tables.contains(def.id.as_str()) {
            tables.entry(def.id.as_str()).or_insert(def);
        }
        for id in claim_ids(def) {
            if !kept.claims.contains(id) && !claims.iter().any(|c| c == id) {
                claims.push(id.to_owned());
            }
        }
        for id in index_ids(def) {
            if !kept.indexes.contains(id) && !indexes.iter().any(|i| i == id) {
                indexes.push(id.to_owned());
            }
        }
    }
    let mut tables: Vec<Arc<TableDef>> = tables.into_values().cloned().collect();
    tables.sort_by(|a, b| a.id.cmp(&b.id));
    Garbage {
        tables,
        claims,
        counters,
        indexes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ColumnDef, UniqueDef};
    use crate::types::SqlType;

    fn def(id: &str, uniques: &[&str]) -> Arc<TableDef> {
        let columns = vec![ColumnDef {
            not_null: true,
            ..ColumnDef::new("a", SqlType::Int8)
        }];
        Arc::new(TableDef {
            uniques: uniques
                .iter()
                .map(|u| UniqueDef {
                    name: u.to_string(),
                    id: u.to_string(),
                    columns: vec![0],
                    nulls_not_distinct: false,
                    is_index: true,
                    primary: false,
                    predicate: None,
                    building: false,
                })
                .collect(),
            ..TableDef::new("t", id, columns, vec![0])
        })
    }

    #[test]
    fn a_plain_entry_reads_as_before_and_an_intent_round_trips() {
        let plain = serde_json::to_string(def("t.1", &["u"]).as_ref()).unwrap();
        assert_eq!(
            Entry::decode(&plain).unwrap(),
            Entry::committed(def("t.1", &["u"]))
        );
        let txn = uuid::Uuid::now_v7();
        for intent_def in [None, Some(def("t.2", &[]))] {
            for committed in [None, Some(def("t.1", &["u"]))] {
                for exclusive in [false, true] {
                    let e = Entry {
                        committed: committed.clone(),
                        intent: Some(DefIntent {
                            txn,
                            def: intent_def.clone(),
                            exclusive,
                        }),
                    };
                    let text = e.encode().unwrap();
                    assert_eq!(text.contains("exclusive"), exclusive, "{text}");
                    assert_eq!(Entry::decode(&text).unwrap(), e);
                }
            }
        }
    }

    #[test]
    fn a_definition_from_before_numeric_typmods_reads_and_writes_as_it_was() {
        use crate::types::SqlType;
        // As builds before numeric typmods wrote it: every numeric bare.
        let old = r#"{"name":"prices","id":"prices.1","columns":[{"name":"id","ty":"Int4","not_null":true,"default":null},{"name":"price","ty":"Numeric","not_null":false,"default":"0"},{"name":"history","ty":{"Array":"Numeric"},"not_null":false,"default":null}],"primary_key":[0],"pkey_name":"prices_pkey","uniques":[]}"#;
        let e = Entry::decode(old).unwrap();
        let def = e.committed.as_ref().unwrap();
        let types: Vec<&SqlType> = def.columns.iter().map(|c| &c.ty).collect();
        let numeric = SqlType::Numeric(None);
        assert_eq!(
            types,
            [
                &SqlType::Int4,
                &numeric,
                &SqlType::array_of(numeric.clone())
            ]
        );
        // Unchanged, so that older builds sharing the store still read it.
        assert_eq!(e.encode().unwrap(), old);
    }

    #[test]
    fn only_the_owner_or_a_committed_decision_sees_the_intent() {
        let (t, other) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
        let e = Entry {
            committed: None,
            intent: Some(DefIntent {
                txn: t,
                def: Some(def("t.2", &[])),
                exclusive: false,
            }),
        };
        assert_eq!(e.visible(Some(t), false).unwrap().id, "t.2");
        assert!(e.visible(Some(other), false).is_none());
        assert!(e.visible(None, false).is_none());
        assert_eq!(e.visible(None, true).unwrap().id, "t.2");
        assert!(e.foreign_intent(Some(t)).is_none());
        assert!(e.foreign_intent(None).is_some());
        assert_eq!(e.folded(false), None);
        assert_eq!(e.folded(true), Some(Entry::committed(def("t.2", &[]))));
    }

    #[test]
    fn garbage_is_what_no_kept_definition_uses() {
        let old = def("t.1", &["u1", "u2"]);
        let same_table_fewer_indexes = def("t.1", &["u1"]);
        let other_table = def("t.2", &["u3"]);
        let g = garbage([&old, &other_table], &[&same_table_fewer_indexes]);
        assert_eq!(g.tables, vec![other_table.clone()]);
        assert_eq!(g.claims, vec!["u2".to_string(), "u3".to_string()]);
        assert_eq!(garbage([&old], &[&old]), Garbage::default());
    }

    #[test]
    fn garbage_named_under_another_name_stays() {
        let old = def("t.1", &["u1", "u2"]);
        let other = def("t.2", &["u3"]);
        let mut renamed = TableDef::clone(&old);
        renamed.name = "elsewhere".into();
        let renamed = Arc::new(renamed);
        let g = garbage([&old, &other], &[]).unless_named_by([&renamed]);
        assert_eq!(g.tables, vec![other.clone()]);
        assert_eq!(g.claims, vec!["u3".to_string()]);
        assert!(garbage([&old], &[]).unless_named_by([&renamed]).is_empty());
    }
}
