//! The advisory locks one session holds, as PostgreSQL counts them: per
//! key, separate counts for session-level and transaction-level locks in
//! each mode (re-entrant: a lock taken twice is released twice). The store
//! sees only which modes the session holds on each key
//! (`claims::advisory`), so a re-entrant lock or unlock costs nothing.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::claims::advisory::{LockKey, Mode, Modes};
use crate::store::TxnId;

#[derive(Debug, Clone, Default)]
pub struct AdvisoryLocks {
    /// The session's holder id, minted at its first advisory lock and kept
    /// for its life (its age in the wait order).
    pub holder: Option<Uuid>,
    pub held: BTreeMap<LockKey, Held>,
    /// Transactions of this session whose COMMIT outcome stayed unknown:
    /// they may still commit, so they stay on the fence list.
    pub undecided: Vec<TxnId>,
    /// The transaction-level locks taken in the current transaction, in
    /// order, so that ROLLBACK TO a savepoint releases those taken after
    /// it (as PostgreSQL does).
    pub xact_log: Vec<(LockKey, Mode)>,
}

/// Lock counts on one key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub session_exclusive: u32,
    pub session_shared: u32,
    pub xact_exclusive: u32,
    pub xact_shared: u32,
    /// The lock was broken while the session held it (its proxy was silent
    /// past the lease): its writes are refused until it lets go.
    pub lost: bool,
    /// The store may show more than the counts say (a release the store
    /// did not confirm): put right at the next release, or the session's end.
    pub stray: bool,
}

impl Held {
    pub fn modes(&self) -> Modes {
        Modes {
            exclusive: self.session_exclusive + self.xact_exclusive > 0,
            shared: self.session_shared + self.xact_shared > 0,
        }
    }

    pub fn count(&mut self, mode: Mode, xact: bool) -> &mut u32 {
        match (mode, xact) {
            (Mode::Exclusive, false) => &mut self.session_exclusive,
            (Mode::Shared, false) => &mut self.session_shared,
            (Mode::Exclusive, true) => &mut self.xact_exclusive,
            (Mode::Shared, true) => &mut self.xact_shared,
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.modes().any() && !self.lost && !self.stray
    }
}

impl AdvisoryLocks {
    /// Whether the session holds any advisory lock (or one it lost): only
    /// then do its writes pay for the fence.
    pub fn holds_any(&self) -> bool {
        self.held.values().any(|h| h.modes().any() || h.lost)
    }

    /// A lock the session lost, if any.
    pub fn lost(&self) -> Option<LockKey> {
        self.held.iter().find(|(_, h)| h.lost).map(|(k, _)| *k)
    }

    /// The modes held on `key` (none if not held).
    pub fn modes(&self, key: &LockKey) -> Modes {
        self.held.get(key).map(Held::modes).unwrap_or_default()
    }

    /// Keys held at transaction level, and keys whose entry is to be put
    /// right.
    pub fn xact_keys(&self) -> Vec<LockKey> {
        self.held
            .iter()
            .filter(|(_, h)| h.xact_exclusive + h.xact_shared > 0 || h.stray)
            .map(|(k, _)| *k)
            .collect()
    }

    /// The fence list: the transactions that may commit while the session
    /// holds its locks.
    pub fn fence_list(&self, open: Option<TxnId>) -> Vec<TxnId> {
        let mut out = self.undecided.clone();
        out.extend(open);
        out
    }

    /// Drop entries that hold nothing.
    pub fn tidy(&mut self) {
        self.held.retain(|_, h| !h.is_empty());
        if self.held.is_empty() {
            self.undecided.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_kept_per_level_and_mode() {
        let mut h = Held::default();
        *h.count(Mode::Exclusive, false) += 2;
        *h.count(Mode::Shared, true) += 1;
        assert_eq!(
            h.modes(),
            Modes {
                exclusive: true,
                shared: true
            }
        );
        *h.count(Mode::Shared, true) -= 1;
        assert!(!h.modes().shared);
        *h.count(Mode::Exclusive, false) -= 2;
        assert!(h.is_empty());
    }
}
