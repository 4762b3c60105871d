//! Plans kept by statement text, so that a statement sent again as text
//! (a simple Query, or an unnamed Parse as most drivers and ORMs send
//! every statement) is not parsed and planned again.
//!
//! A plan is keyed by the client's text and the parameter types it
//! declared, and shared by every connection of this proxy. It is only a
//! shortcut: a plan found here is checked against the catalog before it is
//! used, as every prepared statement is before it runs (`Engine::is_stale`),
//! and planned afresh when a table it uses changed. So DDL here or on
//! another proxy never makes a cached plan wrong, only re-planned. DDL
//! statements are not kept (their plans name no tables to check), nor are
//! texts holding more than one statement.
//!
//! A simple Query's shape (`sql::shape`, its literals as parameters) is
//! kept here too, by its text. A shape that cannot be kept (it does not
//! plan with parameters, or plans to something not kept) is remembered as
//! refused for a while, so that its texts go the ordinary way without
//! trying again each time.

use std::hash::{BuildHasher, Hash, Hasher};
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::Prepared;
use crate::sql::plan::Plan;
use crate::types::SqlType;

/// Plans kept per proxy. Texts that embed their values (a simple Query with
/// literals) are all different; beyond this many, arbitrary plans make
/// room, so memory stays bounded whatever clients send.
const CAPACITY: usize = 2048;

/// Texts longer than this are planned each time (a bulk INSERT's VALUES).
const MAX_TEXT: usize = 4096;

/// How long a refused shape is not tried again: a table it named may have
/// been created since, or changed.
const REFUSAL: Duration = Duration::from_secs(30);

pub(crate) struct PlanCache {
    plans: DashMap<u64, Kept>,
    /// Refused shapes, by key (a collision only sends a text the
    /// ordinary way), with when they were refused.
    refused: DashMap<u64, Instant>,
    hasher: std::collections::hash_map::RandomState,
}

struct Kept {
    sql: String,
    hints: Vec<Option<SqlType>>,
    prepared: Prepared,
}

impl Default for PlanCache {
    fn default() -> Self {
        PlanCache {
            plans: DashMap::new(),
            refused: DashMap::new(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl PlanCache {
    fn key(&self, sql: &str, hints: &[Option<SqlType>]) -> u64 {
        let mut h = self.hasher.build_hasher();
        sql.hash(&mut h);
        hints.hash(&mut h);
        h.finish()
    }

    /// The plan kept for `sql` with parameter types `hints`, not yet
    /// checked against the catalog.
    pub(crate) fn get(&self, sql: &str, hints: &[Option<SqlType>]) -> Option<Prepared> {
        if sql.len() > MAX_TEXT {
            return None;
        }
        let kept = self.plans.get(&self.key(sql, hints))?;
        (kept.sql == sql && kept.hints == hints).then(|| kept.prepared.clone())
    }

    /// Keeps `prepared`, planned from `sql` (one statement) with `hints`,
    /// if it can be checked against the catalog when used again; whether
    /// it was kept.
    pub(crate) fn put(&self, sql: &str, hints: &[Option<SqlType>], prepared: &Prepared) -> bool {
        if sql.len() > MAX_TEXT || !kept_kind(&prepared.plan) {
            return false;
        }
        if self.plans.len() >= CAPACITY {
            let victim = self.plans.iter().next().map(|e| *e.key());
            if let Some(victim) = victim {
                self.plans.remove(&victim);
            }
        }
        self.plans.insert(
            self.key(sql, hints),
            Kept {
                sql: sql.to_owned(),
                hints: hints.to_vec(),
                prepared: prepared.clone(),
            },
        );
        true
    }

    /// Whether the shape `sql` with `hints` was refused lately.
    pub(crate) fn refused(&self, sql: &str, hints: &[Option<SqlType>]) -> bool {
        let key = self.key(sql, hints);
        match self.refused.get(&key).map(|at| at.elapsed() < REFUSAL) {
            Some(true) => true,
            Some(false) => {
                self.refused.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Remembers that the shape `sql` with `hints` cannot be kept.
    pub(crate) fn refuse(&self, sql: &str, hints: &[Option<SqlType>]) {
        if self.refused.len() >= CAPACITY {
            self.refused.clear();
        }
        self.refused.insert(self.key(sql, hints), Instant::now());
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.plans.len()
    }
}

/// Plans whose every dependence on the catalog is a table they name
/// (`Plan::tables`), so that the staleness check covers them.
fn kept_kind(plan: &Plan) -> bool {
    matches!(
        plan,
        Plan::Select(_)
            | Plan::Query(_)
            | Plan::Insert(_)
            | Plan::Update(_)
            | Plan::Delete(_)
            | Plan::Utility(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn prepared(sql: &str) -> Prepared {
        let stmt = crate::sql::parse(sql).unwrap().remove(0);
        let utility = crate::session::utility::Utility::plan(&stmt)
            .expect("a session statement")
            .unwrap();
        Prepared {
            sql: sql.into(),
            param_types: Vec::new(),
            columns: Arc::new(utility.columns()),
            plan: Arc::new(Plan::Utility(utility)),
        }
    }

    #[test]
    fn a_plan_is_found_by_its_text_and_parameter_types() {
        let cache = PlanCache::default();
        cache.put("SHOW work_mem", &[], &prepared("SHOW work_mem"));
        assert_eq!(
            cache.get("SHOW work_mem", &[]).unwrap().sql,
            "SHOW work_mem"
        );
        assert!(cache.get("SHOW  work_mem", &[]).is_none());
        assert!(cache.get("SHOW work_mem", &[Some(SqlType::Int4)]).is_none());
    }

    #[test]
    fn memory_stays_bounded() {
        let cache = PlanCache::default();
        for i in 0..CAPACITY + 100 {
            let sql = format!("SET application_name = 'a{i}'");
            cache.put(&sql, &[], &prepared(&sql));
        }
        assert_eq!(cache.len(), CAPACITY);
        let long = format!("SET application_name = '{}'", "x".repeat(MAX_TEXT));
        cache.put(&long, &[], &prepared(&long));
        assert!(cache.get(&long, &[]).is_none());
    }
}
