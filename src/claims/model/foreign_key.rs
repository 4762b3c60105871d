//! Exhaustive model check of how a foreign key is kept
//! (`engine::foreign_keys`, docs/foreign_keys.md), written with stateright
//! against what the code does.
//!
//! # What is modelled
//!
//! - The store: one parent row (live or dead, and at most one intent: a
//!   lock or a delete), one child row per child transaction (absent, or
//!   live, and at most one intent: an insert referencing the parent), and
//!   one record per transaction (undecided, committed, aborted: written
//!   once, `IF NOT EXISTS`). A row shows its intent's change once the
//!   intent's record says committed; decided intents are folded into the
//!   row at any time.
//! - Child transactions (a row referencing the parent, inserted in a
//!   block, as `INSERT INTO child ...`): write the child row's intent; then,
//!   as the statement ends, lock the parent row (a lock intent, written
//!   only from a parent row with no undecided intent of another, and only
//!   if the row is live: else 23503 and abort); then COMMIT.
//! - A parent transaction (`DELETE FROM parent ...`): write its delete
//!   intent on the parent row (waiting while another transaction's intent
//!   is undecided); then, as the statement ends, search the child rows as
//!   decided at that moment: a committed reference fails it (23503: abort),
//!   none lets it COMMIT.
//! - One store operation per step. Any undecided transaction may be
//!   decided aborted by another at any time (a stalled or dead proxy judged
//!   gone after its lease): safety must not depend on that judgement, and
//!   the stalled transaction may go on afterwards, its COMMIT then finding
//!   the record written.
//!
//! # Properties
//!
//! - [`P_NO_ORPHAN`]: no state in which the parent row shows dead while a
//!   child row shows live (both as the records decide them).
//! - Reached: a delete that commits, a child that commits, a child refused
//!   (23503), a delete refused.
//!
//! # Mutants (each must be caught)
//!
//! - `NoLock`: a new reference checks the parent row is live but does not
//!   lock it.
//! - `SearchFirst`: the delete searches for references before its intent
//!   is on the parent row.
//! - `StaleView`: the search reads through the statement's view, which
//!   keeps a transaction it met undecided (on the parent row, before
//!   waiting) invisible for the whole statement.

use stateright::{Model, Property};

pub const P_NO_ORPHAN: &str = "no orphan: a live child always has a live parent";
pub const S_DELETED: &str = "a parent delete committed";
pub const S_CHILD: &str = "a child committed";
pub const S_CHILD_REFUSED: &str = "a child was refused (23503)";
pub const S_DELETE_REFUSED: &str = "a delete was refused (23503)";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    Design,
    NoLock,
    SearchFirst,
    StaleView,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Record {
    Undecided,
    Committed,
    Aborted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ParentIntent {
    Lock(u8),
    Delete(u8),
}

impl ParentIntent {
    fn txn(self) -> u8 {
        match self {
            ParentIntent::Lock(t) | ParentIntent::Delete(t) => t,
        }
    }
}

/// Where a transaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pc {
    /// The delete reads the parent row (its statement's view remembers an
    /// undecided intent's transaction).
    Read,
    /// Child: write the child row; parent txn: write the delete intent.
    Write,
    /// Child: lock the parent row; parent txn: search for references.
    Check,
    Commit,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    parent_live: bool,
    parent_intent: Option<ParentIntent>,
    /// Per child transaction: its row committed live, its intent on it.
    child_live: Vec<bool>,
    child_intent: Vec<bool>,
    records: Vec<Record>,
    pcs: Vec<Pc>,
    /// The delete's statement view: transactions it met undecided.
    met_undecided: Vec<u8>,
    /// `SearchFirst`: what the delete's early search found.
    found_early: bool,
    deleted: bool,
    child_committed: bool,
    child_refused: bool,
    delete_refused: bool,
}

/// Transactions `0..children` are children; `children` is the delete.
#[derive(Clone)]
pub struct ForeignKeyModel {
    pub children: usize,
    pub variant: Variant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Step(u8),
    /// Another decides an undecided transaction aborted (its lease passed).
    AbortGone(u8),
    /// A decided intent folded into its row.
    Fold,
}

impl ForeignKeyModel {
    fn deleter(&self) -> u8 {
        self.children as u8
    }

    fn shows_parent_dead(&self, s: &State) -> bool {
        match s.parent_intent {
            Some(ParentIntent::Delete(t)) if s.records[t as usize] == Record::Committed => true,
            _ => !s.parent_live,
        }
    }

    fn shows_child(&self, s: &State, c: usize) -> bool {
        s.child_live[c] || (s.child_intent[c] && s.records[c] == Record::Committed)
    }

    /// The parent row as transaction `t` may write it: None while another
    /// transaction's intent on it is undecided (wait).
    fn parent_free_for(&self, s: &State, t: u8) -> Option<()> {
        match s.parent_intent {
            Some(i) if i.txn() != t && s.records[i.txn() as usize] == Record::Undecided => None,
            _ => Some(()),
        }
    }

    fn abort(&self, s: &mut State, t: u8) {
        if s.records[t as usize] == Record::Undecided {
            s.records[t as usize] = Record::Aborted;
        }
        s.pcs[t as usize] = Pc::Done;
    }

    /// Fold every decided intent (a settled row: writers fold what they
    /// find decided before writing over it).
    fn fold(&self, s: &mut State) {
        if let Some(i) = s.parent_intent {
            match s.records[i.txn() as usize] {
                Record::Undecided => {}
                Record::Committed => {
                    if let ParentIntent::Delete(_) = i {
                        s.parent_live = false;
                    }
                    s.parent_intent = None;
                }
                Record::Aborted => s.parent_intent = None,
            }
        }
        for c in 0..self.children {
            if s.child_intent[c] && s.records[c] != Record::Undecided {
                s.child_live[c] = s.records[c] == Record::Committed;
                s.child_intent[c] = false;
            }
        }
    }

    fn step_child(&self, s: &mut State, c: u8) -> Option<()> {
        let i = c as usize;
        match s.pcs[i] {
            Pc::Write => {
                s.child_intent[i] = true;
                s.pcs[i] = Pc::Check;
            }
            Pc::Check => {
                self.parent_free_for(s, c)?;
                self.fold(s);
                if !s.parent_live {
                    s.child_refused = true;
                    self.abort(s, c);
                    return Some(());
                }
                if self.variant != Variant::NoLock {
                    s.parent_intent = Some(ParentIntent::Lock(c));
                }
                s.pcs[i] = Pc::Commit;
            }
            Pc::Commit => {
                if s.records[i] == Record::Undecided {
                    s.records[i] = Record::Committed;
                    s.child_committed = true;
                }
                s.pcs[i] = Pc::Done;
            }
            Pc::Done | Pc::Read => return None,
        }
        Some(())
    }

    fn search_finds_reference(&self, s: &State) -> bool {
        (0..self.children).any(|c| {
            let invisible =
                self.variant == Variant::StaleView && s.met_undecided.contains(&(c as u8));
            !invisible && self.shows_child(s, c)
        })
    }

    fn step_delete(&self, s: &mut State) -> Option<()> {
        let d = self.deleter();
        let i = d as usize;
        match s.pcs[i] {
            Pc::Read => {
                // The statement finds the parent row first, and remembers
                // an undecided intent's transaction as invisible.
                if let Some(p) = s.parent_intent {
                    if s.records[p.txn() as usize] == Record::Undecided {
                        s.met_undecided.push(p.txn());
                    }
                }
                if self.variant == Variant::SearchFirst {
                    s.found_early = self.search_finds_reference(s);
                }
                s.pcs[i] = Pc::Write;
            }
            Pc::Write => {
                self.parent_free_for(s, d)?;
                self.fold(s);
                if !s.parent_live {
                    self.abort(s, d);
                    return Some(());
                }
                s.parent_intent = Some(ParentIntent::Delete(d));
                s.pcs[i] = Pc::Check;
            }
            Pc::Check => {
                let found = match self.variant {
                    Variant::SearchFirst => s.found_early,
                    _ => self.search_finds_reference(s),
                };
                if found {
                    s.delete_refused = true;
                    self.abort(s, d);
                } else {
                    s.pcs[i] = Pc::Commit;
                }
            }
            Pc::Commit => {
                if s.records[i] == Record::Undecided {
                    s.records[i] = Record::Committed;
                    s.deleted = true;
                }
                s.pcs[i] = Pc::Done;
            }
            Pc::Done => return None,
        }
        Some(())
    }
}

impl Model for ForeignKeyModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let n = self.children + 1;
        vec![State {
            parent_live: true,
            parent_intent: None,
            child_live: vec![false; self.children],
            child_intent: vec![false; self.children],
            records: vec![Record::Undecided; n],
            pcs: (0..n)
                .map(|t| {
                    if t == self.children {
                        Pc::Read
                    } else {
                        Pc::Write
                    }
                })
                .collect(),
            met_undecided: Vec::new(),
            found_early: false,
            deleted: false,
            child_committed: false,
            child_refused: false,
            delete_refused: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for t in 0..=self.children {
            if s.pcs[t] != Pc::Done {
                actions.push(Action::Step(t as u8));
            }
            if s.records[t] == Record::Undecided {
                actions.push(Action::AbortGone(t as u8));
            }
        }
        actions.push(Action::Fold);
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        let mut s = s.clone();
        match a {
            Action::Step(t) if t == self.deleter() => self.step_delete(&mut s)?,
            Action::Step(t) => self.step_child(&mut s, t)?,
            // Only the record changes: the transaction goes on as if
            // stalled, and finds out at COMMIT.
            Action::AbortGone(t) => s.records[t as usize] = Record::Aborted,
            Action::Fold => self.fold(&mut s),
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(P_NO_ORPHAN, |m: &ForeignKeyModel, s: &State| {
                !m.shows_parent_dead(s) || !(0..m.children).any(|c| m.shows_child(s, c))
            }),
            Property::sometimes(S_DELETED, |_, s: &State| s.deleted),
            Property::sometimes(S_CHILD, |_, s: &State| s.child_committed),
            Property::sometimes(S_CHILD_REFUSED, |_, s: &State| s.child_refused),
            Property::sometimes(S_DELETE_REFUSED, |_, s: &State| s.delete_refused),
        ]
    }
}

#[cfg(test)]
mod tests {
    use stateright::{Checker, Expectation, HasDiscoveries, Model};

    use super::*;

    fn passes(children: usize) {
        let m = ForeignKeyModel {
            children,
            variant: Variant::Design,
        };
        let checker = m.clone().checker().spawn_bfs().join();
        eprintln!(
            "foreign key model, {children} children: {} unique states",
            checker.unique_state_count()
        );
        assert!(checker.is_done());
        for p in m.properties() {
            let found = checker.discovery(p.name);
            match p.expectation {
                Expectation::Sometimes => assert!(found.is_some(), "never reached: {}", p.name),
                _ => assert!(
                    found.is_none(),
                    "VIOLATED {}: {:?}",
                    p.name,
                    found.map(|f| f.into_actions())
                ),
            }
        }
    }

    fn caught(variant: Variant) {
        let m = ForeignKeyModel {
            children: 1,
            variant,
        };
        let checker = m
            .checker()
            .finish_when(HasDiscoveries::AnyOf([P_NO_ORPHAN].into_iter().collect()))
            .spawn_bfs()
            .join();
        assert!(
            checker.discovery(P_NO_ORPHAN).is_some(),
            "the mutant {variant:?} is not caught"
        );
    }

    #[test]
    fn references_and_deletes_never_leave_an_orphan() {
        passes(1);
        passes(2);
    }

    #[test]
    fn a_reference_that_does_not_lock_is_caught() {
        caught(Variant::NoLock);
    }

    #[test]
    fn a_delete_that_searches_before_its_intent_is_caught() {
        caught(Variant::SearchFirst);
    }

    #[test]
    fn a_search_through_the_statement_view_is_caught() {
        caught(Variant::StaleView);
    }
}
