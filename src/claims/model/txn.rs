//! Exhaustive model check of transactions over intents and a transaction
//! record (docs/transactions.md), written with stateright against what
//! `claims::{intents, txn_write}` and `engine::txn` do.
//!
//! # What is modelled
//!
//! - Two rows, each with a committed value and at most one intent
//!   (transaction, value). A value is a tag: 0 the initial one, t + 1 the
//!   one transaction t writes. Every transaction writes its tag to both rows
//!   (a transfer touches both accounts), in its own order, so a state where
//!   the two rows show different tags to an omniscient reader is a
//!   transaction seen in part.
//! - One record per transaction: absent (undecided), committed or aborted,
//!   written once `IF NOT EXISTS` by COMMIT, ROLLBACK, or a resolver.
//! - Transactions step one store operation at a time: write an intent (a
//!   CAS that also folds or drops a decided intent of another transaction
//!   in its way), then COMMIT; or ROLLBACK at any point. Any intent write
//!   and the COMMIT may report an unknown outcome (landed or not): an
//!   unknown intent write dooms the transaction (it can only roll back); an
//!   unknown COMMIT answers 40003. A proxy may crash at any point (its
//!   transaction then stays undecided until a resolver aborts it); a live
//!   proxy may stall past its lease (`Stall`), after which a resolver may
//!   abort its transaction while it still runs.
//! - A writer blocked on an undecided intent of an older transaction may
//!   give way (40P01, its transaction aborted): the age order of waits.
//! - A reader reads row 0 then row 1, deciding each transaction it meets
//!   once per statement (`ReadView`).
//! - Cleanup: any decided intent may be folded (committed) or dropped
//!   (aborted) at any time, by the transaction or by whoever meets it.
//!
//! # Properties, in every reachable state
//!
//! - **Atomic**: the rows as an omniscient reader sees them show one tag.
//! - **No dirty read**: every tag a reader saw belongs to a committed
//!   transaction (or is the initial value).
//! - **Truthful**: COMMIT answered ok means the record says committed; an
//!   error or ROLLBACK means it never will; only 40003 may mean either.
//! - **Not stuck**: live transactions never all wait on each other.
//!
//! Not modelled yet: unique-key claims inside transactions, savepoints,
//! snapshots across rows (a reader can see part of a transaction that
//! commits between its two reads: `S_TORN` shows it is reachable, the gap
//! documented in transactions.md, section 9).

use stateright::{Model, Property};

const ROWS: usize = 2;
const TXNS: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Committed,
    Aborted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Row {
    committed: u8,
    intent: Option<(u8, u8)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    Committed,
    /// ROLLBACK, 40P01, 40001 or a doomed COMMIT: nothing of it visible.
    Aborted,
    /// 40003.
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Txn {
    /// How many of its two writes are done.
    pc: u8,
    doomed: bool,
    crashed: bool,
    /// Past its lease without a heartbeat: others may abort it.
    silent: bool,
    answer: Option<Answer>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    rows: [Row; ROWS],
    records: [Option<Status>; TXNS],
    txns: [Txn; TXNS],
    /// What the reader saw, and the decisions its statement remembers.
    seen: Vec<u8>,
    reader_memo: [Option<bool>; TXNS],
    faults: u8,
    crashes: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Write { t: u8, unknown: Option<bool> },
    Commit { t: u8, unknown: Option<bool> },
    Rollback { t: u8 },
    GiveWay { t: u8 },
    Crash { t: u8 },
    Stall { t: u8 },
    AbortOther { u: u8 },
    Clean { r: u8 },
    Read,
}

/// A rule broken on purpose; the checker must find a counterexample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutant {
    None,
    /// COMMIT folds each intent as its own write, with no record: a crash
    /// between the two leaves one row committed.
    PerRowCommit,
    /// A resolver drops an undecided intent past its lease without deciding
    /// the record (a TTL instead of a fence): the stalled transaction then
    /// commits without that row.
    TtlWithoutRecord,
    /// A reader takes an undecided intent as committed.
    DirtyReader,
    /// No age order: a blocked writer never gives way.
    NoGiveWay,
    /// COMMIT writes its record unconditionally over an abort.
    BlindCommit,
}

#[derive(Clone)]
pub struct TxnModel {
    pub mutant: Mutant,
    pub max_faults: u8,
    pub max_crashes: u8,
    /// The order each transaction writes the rows in.
    pub orders: [[u8; 2]; TXNS],
}

pub const P_ATOMIC: &str = "atomic: the rows show one transaction's tag";
pub const P_DIRTY: &str = "no dirty read";
pub const P_TRUTH: &str = "truthful answers";
pub const P_STUCK: &str = "not stuck";
pub const S_COMMITTED: &str = "reachable: a transaction commits";
pub const S_ABORTED_BY_OTHER: &str = "reachable: a resolver aborts a stalled transaction";
pub const S_GIVE_WAY: &str = "reachable: a writer gives way (40P01)";
pub const S_UNKNOWN: &str = "reachable: a COMMIT answers 40003";
pub const S_TORN: &str = "reachable (known gap): a reader sees part of a transaction";

pub const SAFETY: [&str; 4] = [P_ATOMIC, P_DIRTY, P_TRUTH, P_STUCK];

impl State {
    fn decided(&self, u: usize) -> Option<Status> {
        self.records[u]
    }

    /// A row as everybody sees it once records are consulted.
    fn visible(&self, r: usize) -> u8 {
        let row = self.rows[r];
        match row.intent {
            Some((u, v)) if self.records[u as usize] == Some(Status::Committed) => v,
            _ => row.committed,
        }
    }

    fn running(&self, t: usize) -> bool {
        let x = self.txns[t];
        x.answer.is_none() && !x.crashed
    }

    /// The undecided transaction whose intent blocks t's next write.
    fn blocker(&self, m: &TxnModel, t: usize) -> Option<usize> {
        let x = self.txns[t];
        if x.pc as usize >= 2 {
            return None;
        }
        let r = m.orders[t][x.pc as usize] as usize;
        match self.rows[r].intent {
            Some((u, _)) if u as usize != t && self.records[u as usize].is_none() => {
                Some(u as usize)
            }
            _ => None,
        }
    }
}

fn tag(t: usize) -> u8 {
    t as u8 + 1
}

impl TxnModel {
    pub fn new(mutant: Mutant) -> TxnModel {
        TxnModel {
            mutant,
            max_faults: 1,
            max_crashes: 1,
            orders: [[0, 1], [1, 0]],
        }
    }

    /// The row with any decided intent folded into it (what a writer's CAS
    /// writes under its own intent).
    fn settled(s: &State, r: usize) -> Row {
        let row = s.rows[r];
        match row.intent {
            Some((u, v)) => match s.decided(u as usize) {
                Some(Status::Committed) => Row {
                    committed: v,
                    intent: None,
                },
                Some(Status::Aborted) => Row {
                    committed: row.committed,
                    intent: None,
                },
                None => row,
            },
            None => row,
        }
    }

    fn answer(s: &mut State, t: usize, a: Answer) {
        s.txns[t].answer = Some(a);
    }
}

impl Model for TxnModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let txn = Txn {
            pc: 0,
            doomed: false,
            crashed: false,
            silent: false,
            answer: None,
        };
        vec![State {
            rows: [Row {
                committed: 0,
                intent: None,
            }; ROWS],
            records: [None; TXNS],
            txns: [txn; TXNS],
            seen: Vec::new(),
            reader_memo: [None; TXNS],
            faults: 0,
            crashes: 0,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let fault = s.faults < self.max_faults;
        for t in 0..TXNS {
            if !s.running(t) {
                continue;
            }
            let tt = t as u8;
            let x = s.txns[t];
            if x.pc < 2 {
                match s.blocker(self, t) {
                    None => {
                        actions.push(Action::Write {
                            t: tt,
                            unknown: None,
                        });
                        if fault {
                            actions.push(Action::Write {
                                t: tt,
                                unknown: Some(true),
                            });
                            actions.push(Action::Write {
                                t: tt,
                                unknown: Some(false),
                            });
                        }
                    }
                    Some(u) => {
                        // Age order: the younger (higher index) gives way.
                        if u < t && self.mutant != Mutant::NoGiveWay {
                            actions.push(Action::GiveWay { t: tt });
                        }
                    }
                }
            } else {
                actions.push(Action::Commit {
                    t: tt,
                    unknown: None,
                });
                if fault {
                    actions.push(Action::Commit {
                        t: tt,
                        unknown: Some(true),
                    });
                    actions.push(Action::Commit {
                        t: tt,
                        unknown: Some(false),
                    });
                }
            }
            actions.push(Action::Rollback { t: tt });
            if s.crashes < self.max_crashes {
                actions.push(Action::Crash { t: tt });
            }
            if !x.silent {
                actions.push(Action::Stall { t: tt });
            }
        }
        for u in 0..TXNS {
            let x = s.txns[u];
            let gone = x.crashed || x.silent || x.answer == Some(Answer::Unknown);
            if s.records[u].is_none() && gone {
                actions.push(Action::AbortOther { u: u as u8 });
            }
        }
        for r in 0..ROWS {
            if let Some((u, _)) = s.rows[r].intent {
                let decided = s.records[u as usize].is_some();
                let ttl = self.mutant == Mutant::TtlWithoutRecord && {
                    let x = s.txns[u as usize];
                    x.silent || x.crashed
                };
                if decided || ttl {
                    actions.push(Action::Clean { r: r as u8 });
                }
            }
        }
        if s.seen.len() < ROWS {
            actions.push(Action::Read);
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        let mut n = s.clone();
        match a {
            Action::Write { t, unknown } => {
                let t = t as usize;
                let r = self.orders[t][n.txns[t].pc as usize] as usize;
                let landed = unknown.unwrap_or(true);
                if landed {
                    let base = Self::settled(&n, r);
                    n.rows[r] = Row {
                        committed: base.committed,
                        intent: Some((t as u8, tag(t))),
                    };
                }
                if unknown.is_some() {
                    n.faults += 1;
                    n.txns[t].doomed = true;
                }
                n.txns[t].pc += 1;
            }
            Action::Commit { t, unknown } => {
                let t = t as usize;
                if n.txns[t].doomed {
                    // The engine rolls a doomed transaction back.
                    if n.records[t].is_none() {
                        n.records[t] = Some(Status::Aborted);
                    }
                    Self::answer(&mut n, t, Answer::Aborted);
                    return Some(n);
                }
                if self.mutant == Mutant::PerRowCommit {
                    // Fold the first row now, the second as a later step
                    // (modelled as: only row order[0] here, record never).
                    let r = self.orders[t][0] as usize;
                    if let Some((u, v)) = n.rows[r].intent {
                        if u as usize == t {
                            n.rows[r] = Row {
                                committed: v,
                                intent: None,
                            };
                        }
                    }
                    Self::answer(&mut n, t, Answer::Committed);
                    n.txns[t].pc = 3;
                    return Some(n);
                }
                let landed = unknown.unwrap_or(true);
                let blind = self.mutant == Mutant::BlindCommit;
                let outcome = match n.records[t] {
                    None if landed => {
                        n.records[t] = Some(Status::Committed);
                        Status::Committed
                    }
                    None => Status::Aborted, // not landed: still undecided
                    Some(_) if blind && landed => {
                        n.records[t] = Some(Status::Committed);
                        Status::Committed
                    }
                    Some(existing) => existing,
                };
                let answer = match (unknown, outcome) {
                    (Some(_), _) => {
                        n.faults += 1;
                        Answer::Unknown
                    }
                    (None, Status::Committed) => Answer::Committed,
                    (None, Status::Aborted) => Answer::Aborted,
                };
                Self::answer(&mut n, t, answer);
            }
            Action::Rollback { t } | Action::GiveWay { t } => {
                let t = t as usize;
                if n.records[t].is_none() {
                    n.records[t] = Some(Status::Aborted);
                }
                Self::answer(&mut n, t, Answer::Aborted);
            }
            Action::Crash { t } => {
                n.txns[t as usize].crashed = true;
                n.crashes += 1;
            }
            Action::Stall { t } => n.txns[t as usize].silent = true,
            Action::AbortOther { u } => {
                n.records[u as usize].get_or_insert(Status::Aborted);
            }
            Action::Clean { r } => {
                let r = r as usize;
                n.rows[r] = Self::settled(&n, r);
                if n.rows[r].intent.is_some() {
                    // TtlWithoutRecord: drop the undecided intent.
                    n.rows[r].intent = None;
                }
            }
            Action::Read => {
                let r = n.seen.len();
                let row = n.rows[r];
                let v = match row.intent {
                    Some((u, v)) => {
                        let u = u as usize;
                        let committed = match n.reader_memo[u] {
                            Some(c) => c,
                            None => {
                                let c = match self.mutant {
                                    Mutant::DirtyReader => n.records[u] != Some(Status::Aborted),
                                    _ => n.records[u] == Some(Status::Committed),
                                };
                                n.reader_memo[u] = Some(c);
                                c
                            }
                        };
                        if committed {
                            v
                        } else {
                            row.committed
                        }
                    }
                    None => row.committed,
                };
                n.seen.push(v);
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(P_ATOMIC, |_, s: &State| s.visible(0) == s.visible(1)),
            Property::always(P_DIRTY, |_, s: &State| {
                s.seen
                    .iter()
                    .all(|&v| v == 0 || s.records[v as usize - 1] == Some(Status::Committed))
            }),
            Property::always(P_TRUTH, |_, s: &State| {
                (0..TXNS).all(|t| match s.txns[t].answer {
                    Some(Answer::Committed) => s.records[t] == Some(Status::Committed),
                    Some(Answer::Aborted) => s.records[t] == Some(Status::Aborted),
                    _ => true,
                })
            }),
            Property::always(P_STUCK, |m: &TxnModel, s: &State| {
                let live: Vec<usize> = (0..TXNS).filter(|&t| s.running(t)).collect();
                // Stuck: every live transaction waits, and none may give way.
                let all_wait = !live.is_empty()
                    && live.iter().all(|&t| {
                        s.blocker(m, t)
                            .is_some_and(|u| s.running(u) && !s.txns[u].silent)
                    });
                let someone_gives_way = m.mutant != Mutant::NoGiveWay
                    && live.iter().any(|&t| s.blocker(m, t).is_some_and(|u| u < t));
                !all_wait || someone_gives_way
            }),
            Property::sometimes(S_COMMITTED, |_, s: &State| {
                s.txns.iter().any(|x| x.answer == Some(Answer::Committed))
            }),
            Property::sometimes(S_ABORTED_BY_OTHER, |_, s: &State| {
                (0..TXNS).any(|t| s.txns[t].silent && s.records[t] == Some(Status::Aborted))
            }),
            Property::sometimes(S_GIVE_WAY, |m: &TxnModel, s: &State| {
                (0..TXNS).any(|t| {
                    s.txns[t].answer == Some(Answer::Aborted)
                        && s.txns[t].pc < 2
                        && s.blocker(m, t).is_some()
                })
            }),
            Property::sometimes(S_UNKNOWN, |_, s: &State| {
                s.txns.iter().any(|x| x.answer == Some(Answer::Unknown))
            }),
            Property::sometimes(S_TORN, |_, s: &State| {
                s.seen.len() == 2 && s.seen[0] != s.seen[1]
            }),
        ]
    }

    fn within_boundary(&self, s: &State) -> bool {
        s.faults <= self.max_faults && s.crashes <= self.max_crashes
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use stateright::{Checker, Expectation, HasDiscoveries, Model};

    use super::*;

    #[test]
    fn transactions_keep_every_property() {
        check(TxnModel::new(Mutant::None));
    }

    /// Two faults and two crashes: `cargo test --release --lib
    /// claims::model::txn -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn transactions_keep_every_property_at_a_larger_scope() {
        check(TxnModel {
            max_faults: 2,
            max_crashes: 2,
            ..TxnModel::new(Mutant::None)
        });
    }

    fn check(m: TxnModel) {
        let checker = m.clone().checker().spawn_bfs().join();
        eprintln!(
            "transaction model: {} unique states ({} visited)",
            checker.unique_state_count(),
            checker.state_count()
        );
        assert!(checker.is_done());
        let mut reached = BTreeSet::new();
        for p in m.properties() {
            let found = checker.discovery(p.name).is_some();
            match p.expectation {
                Expectation::Always | Expectation::Eventually => {
                    assert!(
                        !found,
                        "{} violated: {:?}",
                        p.name,
                        checker.discovery(p.name)
                    )
                }
                Expectation::Sometimes => {
                    if found {
                        reached.insert(p.name);
                    }
                }
            }
        }
        for s in [
            S_COMMITTED,
            S_ABORTED_BY_OTHER,
            S_GIVE_WAY,
            S_UNKNOWN,
            S_TORN,
        ] {
            assert!(reached.contains(s), "never reached: {s}");
        }
    }

    fn caught(mutant: Mutant) -> Vec<&'static str> {
        let m = TxnModel::new(mutant);
        let checker = m
            .checker()
            .finish_when(HasDiscoveries::AnyOf(SAFETY.into_iter().collect()))
            .spawn_bfs()
            .join();
        SAFETY
            .into_iter()
            .filter(|p| checker.discovery(p).is_some())
            .collect()
    }

    #[test]
    fn every_mutant_is_caught() {
        for (mutant, by) in [
            (Mutant::PerRowCommit, P_ATOMIC),
            (Mutant::TtlWithoutRecord, P_ATOMIC),
            (Mutant::DirtyReader, P_DIRTY),
            (Mutant::NoGiveWay, P_STUCK),
            (Mutant::BlindCommit, P_ATOMIC),
        ] {
            let found = caught(mutant);
            eprintln!("transaction mutant {mutant:?}: caught by {found:?}");
            assert!(
                found.contains(&by),
                "{mutant:?} not caught by {by}: {found:?}"
            );
        }
    }
}
