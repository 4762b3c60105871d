//! Exhaustive model check of the advisory lock protocol
//! (`claims::advisory`, `engine::advisory`, docs/advisory_locks.md),
//! written with stateright against what the code does.
//!
//! # What is modelled
//!
//! - The store: one lock partition (a version and, per session, whether it
//!   holds the lock and the transactions it registered), one transaction
//!   record per (client, round) (undecided, committed, aborted: written
//!   once, `IF NOT EXISTS`), and a counter whose committed value changes
//!   only when a record lands committed (an intent is visible iff its
//!   record says committed; docs/transactions.md).
//! - Clients (sessions, each on a proxy of its own): each runs `rounds`
//!   critical sections of the counter test: take the lock (read the
//!   partition; CAS it from the version read, adding itself; a holder whose
//!   proxy is gone is first fenced, each of its registered transactions
//!   decided aborted, then removed in the same CAS), read the counter, and
//!   in a transaction write `seen + 1`: register the transaction in its
//!   entry (read, CAS; an entry found gone means the lock was lost: abort,
//!   answer 40001), COMMIT (the record), then unlock (settle a transaction
//!   whose COMMIT outcome stayed unknown, read, CAS itself out). One store
//!   operation per step.
//! - Nondeterminism: any LWT may apply and then report an unknown outcome,
//!   or fail and report unknown (the client re-reads, as `write` does after
//!   its retries; a COMMIT that stays unknown answers 40003 and its
//!   transaction goes on the fence list); a client may crash at any step
//!   (no goodbye: its entry stays until broken, its heartbeat stops); a
//!   client may stall at any step (SIGSTOP: its heartbeat stops too) and
//!   resume at any later point. A holder is judged gone (breakable) while
//!   it is crashed or stalled: that is when its heartbeat is older than the
//!   lease. Safety must not depend on this judgement: a stalled holder
//!   resumes at any point after it was judged, with stale beliefs.
//! - An unknown outcome lands (or not) at the moment it is issued, as in
//!   the other models (`super`'s module docs say why that is sound for
//!   SERIAL Paxos partitions).
//!
//! # Properties
//!
//! - [`P_EXCLUSION`] (mutual exclusion of committed critical-section
//!   writes): no committed increment is lost (the counter equals the
//!   number of committed transactions), and every commit lands while its
//!   session's entry is in the lock partition.
//! - [`P_LIVE`] (liveness after the holder dies): no state where nothing
//!   can happen while a client that has not crashed is unfinished: a dead
//!   or stalled holder's lock is always broken eventually.
//!
//! # Mutants (each must be caught)
//!
//! - `NoFence`: the breaker removes a gone holder without deciding its
//!   registered transactions aborted (a TTL lease, no fence).
//! - `NoRegister`: a holder commits without listing its transaction in its
//!   entry.
//! - `NoBreak`: a gone holder is never removed (liveness).
//!
//! Not modelled: shared mode (several holders; the fence and break rules
//! are the same per holder), re-entrant counts (local to the session), the
//! age rule for deadlocks (one lock here), lock_timeout.

use stateright::{Model, Property};

/// Clients (at most).
pub const MAXC: usize = 3;
/// Rounds per client (at most).
pub const MAXR: usize = 2;
/// Transaction ids: one per (client, round).
const NT: usize = MAXC * MAXR;

pub const P_EXCLUSION: &str = "mutual exclusion of committed critical-section writes";
pub const P_LIVE: &str = "no client that is alive waits forever";
pub const S_BROKEN: &str = "sometimes a gone holder's lock is broken";
pub const S_LOST: &str = "sometimes a session learns it lost its lock (40001)";
pub const S_FENCED: &str = "sometimes a COMMIT finds its record aborted by a breaker";
pub const S_UNKNOWN: &str = "sometimes a COMMIT's outcome stays unknown (40003)";
pub const S_DONE: &str = "sometimes every client finishes";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Design,
    NoFence,
    NoRegister,
    NoBreak,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rec {
    Undecided,
    Committed,
    Aborted,
}

/// A session's entry in the lock partition: its registered transactions
/// (a bit per transaction id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    txns: u8,
}

type Holders = [Option<Entry>; MAXC];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pc {
    Start,
    AcqRead,
    /// Fence holder `h`'s registered transactions (`txns` left), then CAS.
    AcqFence {
        ver: u8,
        h: u8,
        txns: u8,
    },
    AcqCas {
        ver: u8,
        new: Holders,
    },
    /// Blocked until the partition or a holder's liveness changes.
    Waiting {
        ver: u8,
    },
    ReadCounter,
    RegRead,
    RegCas {
        ver: u8,
        new: Holders,
    },
    Commit,
    /// The lock was lost: abort the transaction, answer 40001.
    AbortLost,
    /// Settle a transaction whose COMMIT stayed unknown before letting go.
    Settle,
    RelRead,
    RelCas {
        ver: u8,
        new: Holders,
    },
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client {
    pc: Pc,
    round: u8,
    seen: u8,
    crashed: bool,
    stalled: bool,
    /// Transactions whose COMMIT outcome stayed unknown (bits).
    undecided: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    ver: u8,
    holders: Holders,
    records: [Rec; NT],
    counter: u8,
    committed: u8,
    clients: [Client; MAXC],
    faults: u8,
    crashes: u8,
    stalls: u8,
    /// A commit landed while its session had no entry.
    unfenced_commit: bool,
    broken: bool,
    lost: bool,
    fenced: bool,
    unknown: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    None,
    AppliedUnknown,
    LostUnknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Step { c: u8, fault: Fault },
    Crash(u8),
    Stall(u8),
    Resume(u8),
}

#[derive(Debug, Clone)]
pub struct AdvisoryModel {
    pub clients: usize,
    pub rounds: u8,
    pub faults: u8,
    pub crashes: u8,
    pub stalls: u8,
    pub variant: Variant,
}

fn txn(c: usize, round: u8) -> usize {
    c * MAXR + round as usize
}

fn bit(t: usize) -> u8 {
    1 << t
}

impl AdvisoryModel {
    fn is_lwt(pc: &Pc) -> bool {
        matches!(
            pc,
            Pc::AcqFence { .. }
                | Pc::AcqCas { .. }
                | Pc::RegCas { .. }
                | Pc::Commit
                | Pc::AbortLost
                | Pc::Settle
                | Pc::RelCas { .. }
        )
    }

    /// Whether client `h`'s proxy looks gone to others (heartbeat older
    /// than the lease).
    fn gone(&self, s: &State, h: usize) -> bool {
        self.variant != Variant::NoBreak && (s.clients[h].crashed || s.clients[h].stalled)
    }

    /// Decide transaction `t` aborted unless decided.
    fn abort(s: &mut State, t: usize) {
        if s.records[t] == Rec::Undecided {
            s.records[t] = Rec::Aborted;
        }
    }

    /// One step of client `c`; `fault` applies to an LWT.
    fn step(&self, s: &mut State, c: usize, fault: Fault) {
        if fault != Fault::None {
            s.faults += 1;
        }
        let cl = s.clients[c];
        let me = c;
        let set_pc = |s: &mut State, pc: Pc| s.clients[me].pc = pc;
        match cl.pc {
            Pc::Start => {
                if cl.round as usize >= self.rounds as usize {
                    set_pc(s, Pc::Done);
                } else {
                    set_pc(s, Pc::AcqRead);
                }
            }
            Pc::AcqRead => {
                if s.holders[c].is_some() {
                    // Ours already (an earlier CAS landed unseen).
                    set_pc(s, Pc::ReadCounter);
                    return;
                }
                let other = (0..self.clients).find(|&h| h != c && s.holders[h].is_some());
                match other {
                    None => {
                        let mut new = s.holders;
                        new[c] = Some(Entry { txns: cl.undecided });
                        set_pc(s, Pc::AcqCas { ver: s.ver, new });
                    }
                    Some(h) if self.gone(s, h) => {
                        let txns = if self.variant == Variant::NoFence {
                            0
                        } else {
                            s.holders[h].map_or(0, |e| e.txns)
                        };
                        set_pc(
                            s,
                            Pc::AcqFence {
                                ver: s.ver,
                                h: h as u8,
                                txns,
                            },
                        );
                    }
                    Some(_) => set_pc(s, Pc::Waiting { ver: s.ver }),
                }
            }
            Pc::AcqFence { ver, h, txns } => {
                if txns != 0 {
                    let t = txns.trailing_zeros() as usize;
                    if fault != Fault::LostUnknown {
                        Self::abort(s, t);
                    }
                    if fault == Fault::None {
                        set_pc(
                            s,
                            Pc::AcqFence {
                                ver,
                                h,
                                txns: txns & !bit(t),
                            },
                        );
                    }
                    // Unknown: the decide is repeated (idempotent).
                    return;
                }
                // The holder was read with version `ver`: the removal and
                // our entry go in one CAS from it.
                let mut new = s.holders;
                new[h as usize] = None;
                new[c] = Some(Entry { txns: cl.undecided });
                s.broken = true;
                set_pc(s, Pc::AcqCas { ver, new });
            }
            Pc::AcqCas { ver, new } => {
                let applies = s.ver == ver && fault != Fault::LostUnknown;
                if applies {
                    s.ver += 1;
                    s.holders = new;
                }
                if applies && fault == Fault::None {
                    set_pc(s, Pc::ReadCounter);
                } else {
                    set_pc(s, Pc::AcqRead);
                }
            }
            Pc::Waiting { .. } => set_pc(s, Pc::AcqRead),
            Pc::ReadCounter => {
                s.clients[c].seen = s.counter;
                if self.variant == Variant::NoRegister {
                    set_pc(s, Pc::Commit);
                } else {
                    set_pc(s, Pc::RegRead);
                }
            }
            Pc::RegRead => {
                let t = txn(c, cl.round);
                match s.holders[c] {
                    None => set_pc(s, Pc::AbortLost),
                    Some(e) if e.txns == cl.undecided | bit(t) => set_pc(s, Pc::Commit),
                    Some(_) => {
                        let mut new = s.holders;
                        new[c] = Some(Entry {
                            txns: cl.undecided | bit(t),
                        });
                        set_pc(s, Pc::RegCas { ver: s.ver, new });
                    }
                }
            }
            Pc::RegCas { ver, new } => {
                let applies = s.ver == ver && fault != Fault::LostUnknown;
                if applies {
                    s.ver += 1;
                    s.holders = new;
                }
                if applies && fault == Fault::None {
                    set_pc(s, Pc::Commit);
                } else {
                    set_pc(s, Pc::RegRead);
                }
            }
            Pc::Commit => {
                let t = txn(c, cl.round);
                let lands = s.records[t] == Rec::Undecided && fault != Fault::LostUnknown;
                if lands {
                    s.records[t] = Rec::Committed;
                    s.counter = s.clients[c].seen + 1;
                    s.committed += 1;
                    if s.holders[c].is_none() {
                        s.unfenced_commit = true;
                    }
                }
                if fault != Fault::None {
                    // 40003: it may still be undecided; it stays on the
                    // session's fence list until settled.
                    s.unknown = true;
                    s.clients[c].undecided |= bit(t);
                } else if s.records[t] == Rec::Aborted {
                    s.fenced = true;
                }
                set_pc(s, Pc::Settle);
            }
            Pc::AbortLost => {
                if fault != Fault::LostUnknown {
                    Self::abort(s, txn(c, cl.round));
                }
                if fault == Fault::None {
                    s.lost = true;
                    set_pc(s, Pc::Settle);
                }
            }
            Pc::Settle => {
                if cl.undecided != 0 {
                    let t = cl.undecided.trailing_zeros() as usize;
                    if fault != Fault::LostUnknown {
                        Self::abort(s, t);
                    }
                    if fault == Fault::None {
                        s.clients[c].undecided &= !bit(t);
                    }
                    return;
                }
                set_pc(s, Pc::RelRead);
            }
            Pc::RelRead => match s.holders[c] {
                None => {
                    s.clients[c].round += 1;
                    set_pc(s, Pc::Start);
                }
                Some(_) => {
                    let mut new = s.holders;
                    new[c] = None;
                    set_pc(s, Pc::RelCas { ver: s.ver, new });
                }
            },
            Pc::RelCas { ver, new } => {
                if s.ver == ver && fault != Fault::LostUnknown {
                    s.ver += 1;
                    s.holders = new;
                }
                set_pc(s, Pc::RelRead);
            }
            Pc::Done => {}
        }
    }

    /// Whether client `c` can take a step (a waiting client only once
    /// something it waits on changed; polling that finds nothing new is a
    /// stutter).
    fn can_step(&self, s: &State, c: usize) -> bool {
        let cl = &s.clients[c];
        if cl.crashed || cl.stalled || cl.pc == Pc::Done {
            return false;
        }
        match cl.pc {
            Pc::Waiting { ver } => {
                s.ver != ver
                    || (0..self.clients)
                        .any(|h| h != c && s.holders[h].is_some() && self.gone(s, h))
            }
            _ => true,
        }
    }

    fn stuck(&self, s: &State) -> bool {
        let alive_unfinished =
            (0..self.clients).any(|c| !s.clients[c].crashed && s.clients[c].pc != Pc::Done);
        alive_unfinished && (0..self.clients).all(|c| !self.can_step(s, c) && !s.clients[c].stalled)
    }
}

impl Model for AdvisoryModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let idle = Client {
            pc: Pc::Start,
            round: 0,
            seen: 0,
            crashed: false,
            stalled: false,
            undecided: 0,
        };
        let mut clients = [Client {
            pc: Pc::Done,
            ..idle
        }; MAXC];
        for c in clients.iter_mut().take(self.clients) {
            *c = idle;
        }
        vec![State {
            ver: 0,
            holders: [None; MAXC],
            records: [Rec::Undecided; NT],
            counter: 0,
            committed: 0,
            clients,
            faults: 0,
            crashes: 0,
            stalls: 0,
            unfenced_commit: false,
            broken: false,
            lost: false,
            fenced: false,
            unknown: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for c in 0..self.clients {
            let cl = &s.clients[c];
            if self.can_step(s, c) {
                actions.push(Action::Step {
                    c: c as u8,
                    fault: Fault::None,
                });
                if Self::is_lwt(&cl.pc) && s.faults < self.faults {
                    for fault in [Fault::AppliedUnknown, Fault::LostUnknown] {
                        actions.push(Action::Step { c: c as u8, fault });
                    }
                }
            }
            let running = !cl.crashed && cl.pc != Pc::Done;
            if running && s.crashes < self.crashes {
                actions.push(Action::Crash(c as u8));
            }
            if running && !cl.stalled && s.stalls < self.stalls {
                actions.push(Action::Stall(c as u8));
            }
            if cl.stalled {
                actions.push(Action::Resume(c as u8));
            }
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        let mut s = s.clone();
        match a {
            Action::Step { c, fault } => self.step(&mut s, c as usize, fault),
            Action::Crash(c) => {
                s.crashes += 1;
                s.clients[c as usize].crashed = true;
            }
            Action::Stall(c) => {
                s.stalls += 1;
                s.clients[c as usize].stalled = true;
            }
            Action::Resume(c) => s.clients[c as usize].stalled = false,
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(P_EXCLUSION, |_, s: &State| {
                s.counter == s.committed && !s.unfenced_commit
            }),
            Property::always(P_LIVE, |m: &AdvisoryModel, s: &State| !m.stuck(s)),
            Property::sometimes(S_BROKEN, |_, s: &State| s.broken),
            Property::sometimes(S_LOST, |_, s: &State| s.lost),
            Property::sometimes(S_FENCED, |_, s: &State| s.fenced),
            Property::sometimes(S_UNKNOWN, |_, s: &State| s.unknown),
            Property::sometimes(S_DONE, |m: &AdvisoryModel, s: &State| {
                (0..m.clients).all(|c| s.clients[c].pc == Pc::Done)
            }),
        ]
    }
}

#[cfg(test)]
mod tests {

    use stateright::{Checker, HasDiscoveries, Model};

    use super::*;

    fn model(clients: usize, rounds: u8, faults: u8, variant: Variant) -> AdvisoryModel {
        AdvisoryModel {
            clients,
            rounds,
            faults,
            crashes: 1,
            stalls: 1,
            variant,
        }
    }

    fn trace(path: &stateright::Path<State, Action>) -> String {
        path.clone()
            .into_vec()
            .iter()
            .map(|(s, a)| {
                format!(
                    "\n  {a:?} -> ver {} holders {:?} counter {} committed {}",
                    s.ver, s.holders, s.counter, s.committed
                )
            })
            .collect()
    }

    /// Every property holds, and the interesting states are reached.
    fn passes(name: &str, m: AdvisoryModel, reach: &[&str]) {
        super::super::checks::passes(&format!("advisory model {name}"), &m, reach, trace);
    }

    fn caught(name: &str, m: AdvisoryModel, property: &'static str) {
        let checker = m
            .checker()
            .finish_when(HasDiscoveries::AnyOf([property].into_iter().collect()))
            .spawn_bfs()
            .join();
        let path = checker
            .discovery(property)
            .unwrap_or_else(|| panic!("{name}: the mutant is not caught ({property})"));
        if std::env::var("MODEL_TRACE").is_ok() {
            eprintln!("{name}: {property}{}", trace(&path));
        }
    }

    #[test]
    fn two_sessions_two_rounds_keep_exclusion_and_liveness() {
        passes(
            "2x2",
            model(2, 2, 1, Variant::Design),
            &[S_BROKEN, S_LOST, S_FENCED, S_UNKNOWN, S_DONE],
        );
    }

    #[test]
    fn three_sessions_one_round_keep_exclusion_and_liveness() {
        passes(
            "3x1",
            model(3, 1, 1, Variant::Design),
            &[S_BROKEN, S_LOST, S_FENCED, S_DONE],
        );
    }

    #[test]
    fn a_breaker_that_does_not_fence_is_caught() {
        caught("no fence", model(2, 1, 0, Variant::NoFence), P_EXCLUSION);
    }

    #[test]
    fn a_holder_that_does_not_register_is_caught() {
        caught(
            "no register",
            model(2, 1, 0, Variant::NoRegister),
            P_EXCLUSION,
        );
    }

    #[test]
    fn a_dead_holder_never_broken_is_caught() {
        caught("no break", model(2, 1, 0, Variant::NoBreak), P_LIVE);
    }

    /// Larger scopes: two faults and two stalls (`--ignored`, release
    /// build for speed).
    #[test]
    #[ignore]
    fn larger_scopes() {
        passes(
            "2x2, two faults, two stalls",
            AdvisoryModel {
                clients: 2,
                rounds: 2,
                faults: 2,
                crashes: 1,
                stalls: 2,
                variant: Variant::Design,
            },
            &[S_BROKEN, S_LOST, S_FENCED, S_UNKNOWN, S_DONE],
        );
        passes(
            "3x1, two faults, two stalls",
            AdvisoryModel {
                clients: 3,
                rounds: 1,
                faults: 2,
                crashes: 1,
                stalls: 2,
                variant: Variant::Design,
            },
            &[S_BROKEN, S_LOST, S_FENCED, S_UNKNOWN],
        );
    }
}
