//! Exhaustive model check of the claim protocol (shared/design/claims.md),
//! written with stateright against what `claims::{row, resolve}` do.
//!
//! # What is modelled
//!
//! - The store: two row partitions (absent / dead(version) / live(version,
//!   keys, `__claims`)) and one claims partition per (constraint, value),
//!   with one or two unique constraints of two values each. Every store
//!   operation is one atomic step on one partition, as an LWT is.
//! - Clients: each runs a short program of statements through the protocol,
//!   one store operation per model step: INSERT (claim all keys in
//!   parallel, commit IF NOT EXISTS / IF __version = V, restart with a new
//!   txn and re-stamped claims on an unseen dead row), UPDATE that toggles
//!   unique keys (`SET u = 1 - u WHERE pk = k`: observe, claim changed keys,
//!   commit IF __version = observed, release or clean up), DELETE (observe,
//!   CAS to dead, clean up claims), and re-INSERT after DELETE. Resolving an
//!   existing claim reads the owner row; backed is a duplicate, unbacked and
//!   expired is fenced then deleted, unbacked and young is in flight: the
//!   parallel first pass reports it busy, and the statement then keeps only
//!   the keys ordered before the first busy one, releases the others and
//!   claims the rest one at a time in key order, waiting for each
//!   (`claim_in_order`). A statement with one key waits at once.
//! - Nondeterminism: any LWT may apply and then report an unknown outcome,
//!   fail and report unknown, or fail as unavailable; reads may fail;
//!   best-effort deletes may be lost; retries (bounded by `max_retries`)
//!   repeat the same operation with the same txn; a client (proxy) may crash
//!   between any two steps (its statement then has no answer and the client
//!   goes on with its next statement); the statement deadline may pass at
//!   every point where the code checks it; time may pass the lease for any
//!   txn at any point (`Expire`). Faults and crashes are drawn from global
//!   budgets so the scope stays small.
//!
//! An operation that reports "unknown" is modelled as landing (or not) at
//! the moment it is issued. In Cassandra a timed-out Paxos proposal can be
//! completed later, but only by the next Paxos round on the same partition
//! (every decisive read here is SERIAL, so it is such a round); so it is
//! indistinguishable from landing at once.
//!
//! A waiting lane is blocked until the claim, its owner row or its lease
//! changes (the code polls; polling that finds nothing new is a stutter).
//! So a cycle of waits is a state where nothing can happen. `liveness`
//! checks for that ([`P_STUCK`]) with deadlines, lease expiry, faults and
//! crashes off, and that no statement is made to restart or fence until its
//! txn budget runs out ([`P_LIVE`]).
//!
//! Not modelled: NULL keys, WHERE clauses beyond the primary key, multi-row
//! statements and their undo (engine/write.rs), DDL (index backfill), the
//! catalog cache, non-SERIAL scans. Reads by unique key (claim, then owner
//! row, backed only) need no statement of their own: they are correct in
//! every state where U and C hold.
//!
//! # Properties (checked in every reachable state)
//!
//! - U: for every constraint and value, at most one live row holds it.
//! - C: every live row's unique keys have a claim naming that row as owner.
//!   This holds in every state, not only at rest: a row only becomes live
//!   with claims already taken, and a claim is only deleted when it is
//!   provably not the one backing a live row.
//! - C-exact: moreover the claim's txn is the one the row's `__claims`
//!   records (what lets DELETE and UPDATE clean it up `IF txn = ...`).
//! - A: every statement's row write lands at most once; "done" means it
//!   landed; an error (23505, 0 rows, 55P03, 53000) means nothing landed,
//!   and 23505 / 0 rows must be justified by a state that existed while the
//!   statement ran (a live row with the key, the row live, the row absent or
//!   dead). Only 40003 and "no answer" (crash) may mean either.
//! - W: every landed write is consistent with the row it replaced (an
//!   INSERT replaces a non-live row, a DELETE a live one, an UPDATE toggles
//!   exactly the keys of the row it replaced).
//!
//! # Variants
//!
//! [`Variant::Design`] is the code as it is; it must pass.
//! [`Variant::Mutant`] breaks one rule each and must be caught.
//! [`Janitor`] adds the janitor that removes dead partitions.
//!
//! Tests: `cargo test --lib claims::model` (small scopes, CI);
//! `cargo test --release --lib claims::model -- --ignored --nocapture`
//! (larger scopes); `MODEL_TRACE=1` prints shortest counterexamples.

mod advisory;
#[cfg(test)]
mod checks;
mod count_limit;
mod foreign_key;
#[cfg(test)]
mod found;
#[cfg(test)]
mod tests;
mod txn;

use std::fmt;

use stateright::{Model, Property};

/// Row partitions (primary keys).
pub const NR: usize = 2;
/// Unique constraints (at most).
pub const NC: usize = 2;
/// Values per constraint.
pub const NV: usize = 2;
/// Clients (at most).
pub const MAXC: usize = 3;
/// Statements per client (at most).
pub const MAXS: usize = 2;
/// Txn ids a client can mint over its whole program.
const MAX_N: u8 = 16;

/// A txn id: `i<r>` the version of an initial row, `<client letter><n>` the
/// n-th id a client minted (statement attempts and fences alike).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Txn(u8);

impl Txn {
    const fn init(r: usize) -> Txn {
        Txn(r as u8)
    }
    fn client(c: usize, n: u8) -> Txn {
        Txn(8 + 16 * c as u8 + n)
    }
    /// Its bit in [`State::expired`].
    fn bit(self) -> u64 {
        1u64 << self.0
    }
}

impl fmt::Debug for Txn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 8 {
            write!(f, "i{}", self.0)
        } else {
            let c = (self.0 - 8) / 16;
            write!(f, "{}{}", (b'a' + c) as char, (self.0 - 8) % 16)
        }
    }
}

/// A row's unique key values, one per constraint (None: NULL or no such constraint).
pub type Keys = [Option<u8>; NC];

/// One row partition.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Row {
    Absent,
    Dead(Txn),
    Live {
        version: Txn,
        keys: Keys,
        /// `__claims`: per constraint, the txn of the claim backing the key.
        claims: [Option<Txn>; NC],
    },
}

impl Row {
    fn version(&self) -> Option<Txn> {
        match *self {
            Row::Absent => None,
            Row::Dead(v) => Some(v),
            Row::Live { version, .. } => Some(version),
        }
    }
    fn live(&self) -> bool {
        matches!(self, Row::Live { .. })
    }
    fn keys(&self) -> Keys {
        match *self {
            Row::Live { keys, .. } => keys,
            _ => [None; NC],
        }
    }
    fn claim_txns(&self) -> [Option<Txn>; NC] {
        match *self {
            Row::Live { claims, .. } => claims,
            _ => [None; NC],
        }
    }
    /// resolve.rs `backed`: live and its value for `c` is `v`.
    fn backs(&self, c: usize, v: u8) -> bool {
        self.keys()[c] == Some(v)
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Row::Absent => write!(f, "absent"),
            Row::Dead(v) => write!(f, "dead@{v:?}"),
            Row::Live {
                version,
                keys,
                claims,
            } => {
                write!(f, "live@{version:?}(")?;
                for c in 0..NC {
                    if c > 0 {
                        write!(f, ",")?;
                    }
                    match (keys[c], claims[c]) {
                        (Some(v), Some(t)) => write!(f, "{v}/{t:?}")?,
                        (Some(v), None) => write!(f, "{v}/-")?,
                        (None, _) => write!(f, "-")?,
                    }
                }
                write!(f, ")")
            }
        }
    }
}

/// One claims partition's content.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Claim {
    pub owner: u8,
    pub txn: Txn,
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}/{:?}", self.owner, self.txn)
    }
}

/// A statement of a client's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `INSERT INTO t VALUES (pk, keys...)`
    Insert { pk: u8, keys: Keys },
    /// `UPDATE t SET u_c = 1 - u_c (for each toggled c) WHERE pk = ...`
    Update { pk: u8, toggle: [bool; NC] },
    /// `DELETE FROM t WHERE pk = ...`
    Delete { pk: u8 },
}

impl Stmt {
    fn pk(&self) -> usize {
        match *self {
            Stmt::Insert { pk, .. } | Stmt::Update { pk, .. } | Stmt::Delete { pk } => pk as usize,
        }
    }
}

/// Why `claim_one` failed (resolve.rs `WriteError` as claim_all returns it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fail {
    /// Backed by another live row: 23505 on constraint c.
    Dup { c: u8, v: u8 },
    /// Backed by the row this statement writes.
    ThisRow,
    /// 55P03: the deadline passed while waiting.
    LockTimeout,
    /// 53000: the store failed (unavailable, or unknown after the retries).
    Store,
}

/// A statement's answer to its client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ans {
    /// Still running (or not started).
    Pending,
    /// The proxy crashed: the client got no answer.
    NoAnswer,
    /// Success (1 row).
    Done,
    /// UPDATE/DELETE found no live row: "0 rows".
    ZeroRows,
    /// 23505 on the primary key.
    DupPk,
    /// 23505 on unique constraint c (value v).
    DupKey { c: u8, v: u8 },
    /// 55P03.
    LockTimeout,
    /// 53000.
    StoreError,
    /// 40003 statement_completion_unknown.
    Unknown,
}

impl Ans {
    /// An answer that says nothing of the statement took effect.
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Ans::ZeroRows | Ans::DupPk | Ans::DupKey { .. } | Ans::LockTimeout | Ans::StoreError
        )
    }
}

/// One parallel sub-operation of a client: a `claim_one` loop, or one
/// `DELETE claim IF txn = T` of a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneSt {
    Off,
    /// `INSERT claim IF NOT EXISTS`; `again`: after a wait or takeover (the
    /// deadline is checked there).
    Claim {
        again: bool,
        tries: u8,
    },
    /// SERIAL read of the owner row of `existing`.
    Resolve {
        existing: Claim,
        tries: u8,
    },
    /// Fence the owner row from the state `observed` with version `f`.
    Fence {
        existing: Claim,
        observed: Row,
        f: Txn,
        tries: u8,
    },
    /// `DELETE claim IF txn = existing.txn` after a fence (result ignored).
    Drop {
        existing: Claim,
    },
    /// Waiting for `existing` (unbacked, in its lease, owner row as
    /// `observed`) to change; blocked until it does.
    Wait {
        existing: Claim,
        observed: Row,
    },
    Ok,
    Failed(Fail),
    /// First pass: held by a statement in flight; not waited for.
    Busy,
    /// Contended: to be claimed in key order once the lanes before it are.
    Queued,
    /// Release: `DELETE claim IF txn = txn` (best effort); in a claim phase
    /// the key is then queued to be claimed again in order.
    Release {
        txn: Txn,
    },
    Released,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lane {
    pub v: u8,
    pub st: LaneSt,
}

impl Lane {
    const OFF: Lane = Lane {
        v: 0,
        st: LaneSt::Off,
    };
    /// Whether an operation of this lane is under way (or it waits).
    fn working(&self) -> bool {
        matches!(
            self.st,
            LaneSt::Claim { .. }
                | LaneSt::Resolve { .. }
                | LaneSt::Fence { .. }
                | LaneSt::Drop { .. }
                | LaneSt::Wait { .. }
                | LaneSt::Release { .. }
        )
    }
}

impl fmt::Debug for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}:{:?}", self.v, self.st)
    }
}

/// What follows a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Then {
    Answer(Ans),
    /// UPDATE: restart from the row the failed commit returned.
    UpdRestart,
    /// UPDATE: restart with a fresh read (claim found ThisRow).
    UpdReread,
}

/// Where a client is in its current statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// About to start statement `stmt`.
    Idle,
    /// Program done.
    Finished,
    InsClaim,
    InsCommit {
        tries: u8,
    },
    /// Commit returned an unseen non-live row: deadline check, then restart.
    InsRestart,
    InsRestamp {
        c: u8,
        tries: u8,
    },
    InsReclaim,
    UpdRead {
        tries: u8,
    },
    /// Top of update_row's loop (deadline check).
    UpdTop,
    UpdClaim,
    UpdCommit {
        tries: u8,
    },
    UpdCleanup {
        c: u8,
    },
    DelRead {
        tries: u8,
    },
    /// Top of delete_row's loop (deadline check).
    DelTop,
    DelCommit {
        tries: u8,
    },
    DelCleanup {
        c: u8,
    },
    Releasing(Then),
}

/// States seen while a statement ran, to judge whether an error was true.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Witness {
    /// The statement's row was absent or dead at some point.
    pub not_live: bool,
    /// The statement's row was live at some point.
    pub pk_live: bool,
    /// Another live row held (c, v) at some point.
    pub taken: [[bool; NV]; NC],
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client {
    pub stmt: u8,
    pub phase: Phase,
    /// Next txn number this client mints.
    pub next_n: u8,
    /// Txns minted by the current statement (its deadline budget).
    pub mints: u8,
    /// The current attempt's txn.
    pub txn: Option<Txn>,
    /// INSERT restart: the new txn claims are re-stamped to.
    pub next: Option<Txn>,
    /// INSERT: expected version for the commit (None: IF NOT EXISTS).
    pub expected: Option<Txn>,
    /// UPDATE/DELETE: the observed row (None: read it). INSERT restart: the
    /// row the commit returned.
    pub obs: Option<Row>,
    /// UPDATE: the new key values.
    pub new_keys: Keys,
    /// INSERT restamp: claims found taken over.
    pub lost: [bool; NC],
    /// claim_all waits for busy keys (one key, or contended: in key order).
    pub ordered: bool,
    pub lanes: [Lane; NC],
    pub wit: Witness,
}

impl Client {
    const IDLE: Client = Client {
        stmt: 0,
        phase: Phase::Idle,
        next_n: 0,
        mints: 0,
        txn: None,
        next: None,
        expected: None,
        obs: None,
        new_keys: [None; NC],
        lost: [false; NC],
        ordered: false,
        lanes: [Lane::OFF; NC],
        wit: Witness {
            not_live: false,
            pk_live: false,
            taken: [[false; NV]; NC],
        },
    };
    fn active(&self) -> bool {
        !matches!(self.phase, Phase::Idle | Phase::Finished)
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} {:?}", self.stmt, self.phase)?;
        if let Some(t) = self.txn {
            write!(f, " txn={t:?}")?;
        }
        if let Some(t) = self.next {
            write!(f, " next={t:?}")?;
        }
        if let Some(t) = self.expected {
            write!(f, " expect={t:?}")?;
        }
        if let Some(r) = self.obs {
            write!(f, " obs={r:?}")?;
        }
        for (c, l) in self.lanes.iter().enumerate() {
            if l.st != LaneSt::Off {
                write!(f, " c{c}[{l:?}]")?;
            }
        }
        Ok(())
    }
}

/// The whole system: store, clients, and ghost bookkeeping for the properties.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct State {
    pub rows: [Row; NR],
    pub claims: [[Option<Claim>; NV]; NC],
    /// Txns whose lease has passed (bit per txn id); kept only for txns a
    /// resolver could look at.
    pub expired: u64,
    pub faults: u8,
    pub crashes: u8,
    pub clients: [Client; MAXC],
    /// Ghost: row writes each statement landed.
    pub landed: [[u8; MAXS]; MAXC],
    /// Ghost: each statement's answer.
    pub answers: [[Ans; MAXS]; MAXC],
    /// Ghost: an error answer no state during the statement justified.
    pub unjustified: bool,
    /// Ghost: a landed write inconsistent with the row it replaced.
    pub bad_write: bool,
    /// Ghost: a statement ran out of txn ids (restarts and fences).
    pub exhausted: bool,
}

impl State {
    /// The store in one line: rows, then claims (`*`: lease expired).
    pub fn store_line(&self) -> String {
        let mut out = String::new();
        for (r, row) in self.rows.iter().enumerate() {
            out += &format!("{}r{r}={row:?}", if r > 0 { " " } else { "" });
        }
        out += " |";
        for c in 0..NC {
            for v in 0..NV {
                if let Some(cl) = self.claims[c][v] {
                    let exp = if self.expired & cl.txn.bit() != 0 {
                        "*"
                    } else {
                        ""
                    };
                    out += &format!(" c{c}={v}->{cl:?}{exp}");
                }
            }
        }
        out
    }

    /// Answers and landings of every statement so far.
    pub fn answers_line(&self) -> String {
        let mut out = String::new();
        for (ci, cl) in self.clients.iter().enumerate() {
            for s in 0..MAXS {
                if self.answers[ci][s] != Ans::Pending
                    || self.landed[ci][s] > 0
                    || (cl.stmt as usize == s && cl.active())
                {
                    out += &format!(
                        " {}{}:{:?}/landed{}",
                        (b'a' + ci as u8) as char,
                        s,
                        self.answers[ci][s],
                        self.landed[ci][s]
                    );
                }
            }
        }
        if self.unjustified {
            out += " UNJUSTIFIED";
        }
        if self.bad_write {
            out += " BAD-WRITE";
        }
        out
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.store_line())?;
        for (i, cl) in self.clients.iter().enumerate() {
            if cl.phase != Phase::Finished || cl.stmt > 0 {
                write!(f, "\n  {}: {cl:?}", (b'a' + i as u8) as char)?;
            }
        }
        write!(f, "\n  answers:{}", self.answers_line())
    }
}

/// A store fault drawn for one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    None,
    /// The LWT applied, then the reply was lost (write timeout).
    UnknownApplied,
    /// The LWT did not apply, and the reply was lost.
    UnknownLost,
    /// Unavailable: certainly not applied.
    Unavailable,
}

impl Fault {
    fn applies(self) -> bool {
        matches!(self, Fault::None | Fault::UnknownApplied)
    }
}

const LWT: &[Fault] = &[
    Fault::None,
    Fault::UnknownApplied,
    Fault::UnknownLost,
    Fault::Unavailable,
];
const READ: &[Fault] = &[Fault::None, Fault::UnknownLost, Fault::Unavailable];
const BEST_EFFORT: &[Fault] = &[Fault::None, Fault::UnknownLost];
const LOCAL: &[Fault] = &[Fault::None];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The client performs its next operation (on lane `lane` when several
    /// run in parallel).
    Step { client: u8, lane: u8, fault: Fault },
    /// The statement deadline passes at a point where the code checks it.
    Timeout { client: u8, lane: u8 },
    /// The client's proxy dies.
    Crash { client: u8 },
    /// Time passes the lease of `txn`.
    Expire { txn: Txn },
    /// The janitor removes a dead partition.
    Janitor { row: u8 },
}

/// One rule broken on purpose; the checker must find each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutant {
    /// (1) INSERT overwrites a dead version it first saw after claiming
    /// (commits `IF __version = V` with the same txn, no restart).
    InsertOverwritesUnseenDead,
    /// (2) After an unknown outcome, a retried commit that finds the row
    /// moved on is handled as a first-try failure (23505, restart, 0 rows)
    /// instead of 40003.
    AmbiguousAsDefinite,
    /// (3) DELETE is conditioned on `__live` instead of the observed version.
    DeleteIfLive,
    /// (4) UPDATE whose retried commit finds its own version treats it as
    /// lost (releases and restarts from the returned row).
    UpdateOwnVersionLost,
    /// (5) An expired claim is taken over without fencing the owner row.
    TakeoverWithoutFence,
    /// (6) DELETE leaves the partition absent instead of dead.
    DeleteToAbsent,
    /// (7) A retry after an unknown outcome that then fails as Unavailable
    /// is treated as certainly not applied. This was the code until the
    /// model check found it: the caller released claims that backed a row
    /// that had landed, and another row took the key.
    UnavailableForgetsUnknown,
    /// (8) Contended claims keep the keys ordered after the first busy one
    /// while waiting in order: two statements can each hold what the other
    /// waits for.
    KeepHeldAfterBusy,
    /// (9) Every lane waits for a busy key while the others hold theirs (no
    /// ordered fallback, and no wound-wait either): a deadlock.
    WaitWhileHolding,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The code as it is (and as the design prescribes).
    Design,
    Mutant(Mutant),
}

/// The janitor that removes dead partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Janitor {
    Off,
    /// Removes a dead partition only when no running statement writes that
    /// row (the design's horizon H: older than any in-flight statement).
    Safe,
    /// Removes any dead partition at any time (H too short).
    Unsafe,
}

/// A configuration of the model.
#[derive(Clone, Debug)]
pub struct ClaimModel {
    /// Each client's statements, run in order.
    pub programs: Vec<Vec<Stmt>>,
    /// Initial live rows (pk, keys); their claims exist, txn `i<pk>`.
    pub init: Vec<(u8, Keys)>,
    /// Retries after an unknown outcome (`claims.max_retries`).
    pub max_retries: u8,
    /// Faulty store outcomes allowed in one run.
    pub max_faults: u8,
    /// Proxy crashes allowed in one run.
    pub max_crashes: u8,
    /// Txn ids one statement may mint (attempts and fences) before its
    /// deadline has certainly passed.
    pub max_txns: u8,
    pub janitor: Janitor,
    pub variant: Variant,
    /// Whether leases expire (`Expire` actions).
    pub expiry: bool,
    /// Check liveness: no deadline ever passes (so waits block), and
    /// [`P_STUCK`] (nothing can happen, yet a statement is unanswered) and
    /// [`P_LIVE`] (a statement ran out of txn ids) must never hold. Meant for
    /// scopes without faults, crashes or lease expiry.
    pub liveness: bool,
}

impl ClaimModel {
    pub fn new(programs: Vec<Vec<Stmt>>) -> ClaimModel {
        assert!(programs.len() <= MAXC && programs.iter().all(|p| p.len() <= MAXS));
        ClaimModel {
            programs,
            init: Vec::new(),
            max_retries: 1,
            max_faults: 1,
            max_crashes: 1,
            max_txns: 3,
            janitor: Janitor::Off,
            variant: Variant::Design,
            expiry: true,
            liveness: false,
        }
    }

    fn is(&self, m: Mutant) -> bool {
        self.variant == Variant::Mutant(m)
    }

    fn stmt(&self, t: &State, ci: usize) -> Stmt {
        self.programs[ci][t.clients[ci].stmt as usize]
    }

    fn mint(&self, t: &mut State, ci: usize) -> Option<Txn> {
        let cl = &mut t.clients[ci];
        if cl.mints >= self.max_txns || cl.next_n >= MAX_N {
            t.exhausted |= self.liveness;
            return None;
        }
        let x = Txn::client(ci, cl.next_n);
        cl.next_n += 1;
        cl.mints += 1;
        Some(x)
    }

    /// `with_retries` around one operation: what the caller sees after it.
    fn outcome(&self, fault: Fault, tries: u8) -> Outcome {
        match fault {
            Fault::None => Outcome::Done,
            Fault::UnknownApplied | Fault::UnknownLost if tries < self.max_retries => {
                Outcome::Retry
            }
            Fault::UnknownApplied | Fault::UnknownLost => Outcome::Unknown,
            // An earlier unknown try keeps the step unknown (with_retries).
            Fault::Unavailable if tries > 0 && !self.is(Mutant::UnavailableForgetsUnknown) => {
                Outcome::Unknown
            }
            Fault::Unavailable => Outcome::Unavailable,
        }
    }

    // -- statement bookkeeping ------------------------------------------------

    fn witness(&self, t: &mut State, ci: usize) {
        if !t.clients[ci].active() {
            return;
        }
        let pk = self.stmt(t, ci).pk();
        let mut w = t.clients[ci].wit;
        if t.rows[pk].live() {
            w.pk_live = true;
        } else {
            w.not_live = true;
        }
        for (r, row) in t.rows.iter().enumerate() {
            if r != pk {
                for (c, k) in row.keys().iter().enumerate() {
                    if let Some(v) = k {
                        w.taken[c][*v as usize] = true;
                    }
                }
            }
        }
        t.clients[ci].wit = w;
    }

    fn answer(&self, t: &mut State, ci: usize, a: Ans) {
        self.witness(t, ci);
        let cl = t.clients[ci];
        let w = cl.wit;
        let justified = match a {
            Ans::ZeroRows => w.not_live,
            Ans::DupPk => w.pk_live,
            Ans::DupKey { c, v } => w.taken[c as usize][v as usize],
            _ => true,
        };
        if !justified {
            t.unjustified = true;
        }
        t.answers[ci][cl.stmt as usize] = a;
        self.end_stmt(t, ci);
    }

    fn end_stmt(&self, t: &mut State, ci: usize) {
        let cl = t.clients[ci];
        let stmt = cl.stmt + 1;
        t.clients[ci] = Client {
            stmt,
            next_n: cl.next_n,
            phase: if stmt as usize >= self.programs[ci].len() {
                Phase::Finished
            } else {
                Phase::Idle
            },
            ..Client::IDLE
        };
    }

    /// A statement's row write lands: ghost accounting and the W check.
    fn land(&self, t: &mut State, ci: usize, prev: Row, new: Row) {
        let s = t.clients[ci].stmt as usize;
        t.landed[ci][s] = t.landed[ci][s].saturating_add(1);
        let ok = match self.programs[ci][s] {
            Stmt::Insert { .. } => !prev.live(),
            Stmt::Delete { .. } => prev.live(),
            Stmt::Update { toggle, .. } => {
                prev.live() && new.keys() == toggled(prev.keys(), toggle)
            }
        };
        if !ok {
            t.bad_write = true;
        }
    }

    /// resolve.rs `release`: `DELETE claim IF txn = txn` for each key given,
    /// except those `row` backs; in parallel; then `then`.
    fn release(
        &self,
        t: &mut State,
        ci: usize,
        keys: Keys,
        txn: Txn,
        row: Option<Row>,
        then: Then,
    ) {
        let mut lanes = [Lane::OFF; NC];
        let mut any = false;
        for c in 0..NC {
            if let Some(v) = keys[c] {
                if !row.is_some_and(|r| r.backs(c, v)) {
                    lanes[c] = Lane {
                        v,
                        st: LaneSt::Release { txn },
                    };
                    any = true;
                }
            }
        }
        t.clients[ci].lanes = lanes;
        if any {
            t.clients[ci].phase = Phase::Releasing(then);
        } else {
            self.finish(t, ci, then);
        }
    }

    fn finish(&self, t: &mut State, ci: usize, then: Then) {
        t.clients[ci].lanes = [Lane::OFF; NC];
        match then {
            Then::Answer(a) => self.answer(t, ci, a),
            Then::UpdRestart => t.clients[ci].phase = Phase::UpdTop,
            Then::UpdReread => {
                t.clients[ci].obs = None;
                t.clients[ci].phase = Phase::UpdTop;
            }
        }
    }

    /// Start claim_all for `keys` (None: not claimed) while holding `held`
    /// (claim_more: an INSERT restart keeps the claims it re-stamped).
    fn start_claims(&self, t: &mut State, ci: usize, keys: Keys, held: Keys, phase: Phase) {
        let mut lanes = [Lane::OFF; NC];
        for c in 0..NC {
            if let Some(v) = held[c] {
                lanes[c] = Lane { v, st: LaneSt::Ok };
            }
            if let Some(v) = keys[c] {
                lanes[c] = Lane {
                    v,
                    st: LaneSt::Claim {
                        again: false,
                        tries: 0,
                    },
                };
            }
        }
        let claiming = keys.iter().flatten().count();
        let holding = held.iter().flatten().count();
        let cl = &mut t.clients[ci];
        cl.lanes = lanes;
        cl.phase = phase;
        // A lone key is waited for at once.
        cl.ordered = claiming == 1 && holding == 0;
        self.claims_settled(t, ci);
    }

    /// The txn a claim lane claims with.
    fn claim_txn(&self, cl: &Client) -> Txn {
        match cl.phase {
            Phase::InsReclaim => cl.next.unwrap(),
            _ => cl.txn.unwrap(),
        }
    }

    /// claim_all's joins: once no lane is working, fall back to key order if
    /// the first pass found a key busy, claim the next queued key, or (all
    /// held, or one failed) release on failure or go on.
    fn claims_settled(&self, t: &mut State, ci: usize) {
        let cl = t.clients[ci];
        if cl.lanes.iter().any(Lane::working) {
            return;
        }
        let first_err = cl.lanes.iter().find_map(|l| match l.st {
            LaneSt::Failed(f) => Some(f),
            _ => None,
        });
        if first_err.is_none() {
            if let Some(b) = cl.lanes.iter().position(|l| l.st == LaneSt::Busy) {
                // claim_in_order: keep what is ordered before the first busy
                // key, release what is after it, queue the rest.
                let txn = self.claim_txn(&cl);
                let c = &mut t.clients[ci];
                c.ordered = true;
                for (i, l) in c.lanes.iter_mut().enumerate() {
                    match l.st {
                        LaneSt::Busy => l.st = LaneSt::Queued,
                        LaneSt::Ok if i > b && !self.is(Mutant::KeepHeldAfterBusy) => {
                            l.st = LaneSt::Release { txn }
                        }
                        _ => {}
                    }
                }
                self.claims_settled(t, ci);
                return;
            }
            if let Some(q) = cl.lanes.iter().position(|l| l.st == LaneSt::Queued) {
                t.clients[ci].lanes[q].st = LaneSt::Claim {
                    again: false,
                    tries: 0,
                };
                return;
            }
        }
        let stmt = self.stmt(t, ci);
        let taken = taken_keys(&cl.lanes);
        match (cl.phase, first_err) {
            (Phase::InsClaim, None) => {
                t.clients[ci].lanes = [Lane::OFF; NC];
                t.clients[ci].phase = Phase::InsCommit { tries: 0 };
            }
            (Phase::InsReclaim, None) => {
                let c = &mut t.clients[ci];
                c.lanes = [Lane::OFF; NC];
                c.txn = c.next.take();
                c.expected = c.obs.take().and_then(|r| r.version());
                c.lost = [false; NC];
                c.phase = Phase::InsCommit { tries: 0 };
            }
            (Phase::UpdClaim, None) => {
                t.clients[ci].lanes = [Lane::OFF; NC];
                t.clients[ci].phase = Phase::UpdCommit { tries: 0 };
            }
            (Phase::InsClaim | Phase::InsReclaim, Some(f)) => {
                let txn = self.claim_txn(&cl);
                self.release(t, ci, taken, txn, None, Then::Answer(insert_answer(f)));
            }
            (Phase::UpdClaim, Some(f)) => {
                let then = match f {
                    // update_row: the row changed under us, observe again.
                    Fail::ThisRow => Then::UpdReread,
                    f => Then::Answer(insert_answer(f)),
                };
                self.release(t, ci, taken, cl.txn.unwrap(), None, then);
            }
            (p, _) => unreachable!("claims settled in {p:?} ({stmt:?})"),
        }
    }

    // -- steps ------------------------------------------------------------

    fn start(&self, t: &mut State, ci: usize) -> Option<()> {
        match self.stmt(t, ci) {
            Stmt::Insert { keys, .. } => {
                let txn = self.mint(t, ci)?;
                t.clients[ci].txn = Some(txn);
                t.clients[ci].expected = None;
                self.start_claims(t, ci, keys, [None; NC], Phase::InsClaim);
            }
            // update/delete get the row from the statement's scan.
            Stmt::Update { .. } => t.clients[ci].phase = Phase::UpdRead { tries: 0 },
            Stmt::Delete { .. } => t.clients[ci].phase = Phase::DelRead { tries: 0 },
        }
        Some(())
    }

    fn step(&self, t: &mut State, ci: usize, lane: usize, fault: Fault) -> Option<()> {
        let cl = t.clients[ci];
        if fault != Fault::None {
            t.faults += 1;
        }
        match cl.phase {
            Phase::Idle => self.start(t, ci),
            Phase::Finished => None,
            Phase::InsClaim | Phase::InsReclaim | Phase::UpdClaim => {
                self.claim_lane(t, ci, lane, fault)?;
                self.claims_settled(t, ci);
                Some(())
            }
            Phase::Releasing(then) => {
                let l = cl.lanes[lane];
                let LaneSt::Release { txn } = l.st else {
                    return None;
                };
                self.delete_claim_if(t, lane, l.v, txn, fault);
                t.clients[ci].lanes[lane].st = LaneSt::Released;
                if !t.clients[ci].lanes.iter().any(Lane::working) {
                    self.finish(t, ci, then);
                }
                Some(())
            }
            Phase::InsCommit { tries } => self.insert_commit(t, ci, tries, fault),
            Phase::InsRestart => {
                let Stmt::Insert { keys, .. } = self.stmt(t, ci) else {
                    unreachable!()
                };
                match self.mint(t, ci) {
                    None => {
                        let txn = cl.txn.unwrap();
                        self.release(t, ci, keys, txn, None, Then::Answer(Ans::LockTimeout));
                    }
                    Some(next) => {
                        t.clients[ci].next = Some(next);
                        t.clients[ci].lost = [false; NC];
                        self.restamp_from(t, ci, 0);
                    }
                }
                Some(())
            }
            Phase::InsRestamp { c, tries } => self.restamp(t, ci, c as usize, tries, fault),
            Phase::UpdRead { tries } => self.read_observe(t, ci, tries, fault),
            Phase::UpdTop => match cl.obs {
                None => self.read_observe(t, ci, 0, fault),
                Some(_) => {
                    self.update_eval(t, ci);
                    Some(())
                }
            },
            Phase::UpdCommit { tries } => self.update_commit(t, ci, tries, fault),
            Phase::UpdCleanup { c } => {
                let c = c as usize;
                let obs = cl.obs.unwrap();
                if let (Some(v), Some(x)) = (obs.keys()[c], obs.claim_txns()[c]) {
                    self.delete_claim_if(t, c, v, x, fault);
                }
                self.update_cleanup_from(t, ci, c + 1);
                Some(())
            }
            Phase::DelRead { tries } => self.read_observe(t, ci, tries, fault),
            Phase::DelTop => {
                self.delete_eval(t, ci);
                Some(())
            }
            Phase::DelCommit { tries } => self.delete_commit(t, ci, tries, fault),
            Phase::DelCleanup { c } => {
                let c = c as usize;
                let obs = cl.obs.unwrap();
                if let (Some(v), Some(x)) = (obs.keys()[c], obs.claim_txns()[c]) {
                    self.delete_claim_if(t, c, v, x, fault);
                }
                self.delete_cleanup_from(t, ci, c + 1);
                Some(())
            }
        }
    }

    /// `DELETE claim IF txn = x`, result ignored (best effort).
    fn delete_claim_if(&self, t: &mut State, c: usize, v: u8, x: Txn, fault: Fault) {
        if fault.applies() && t.claims[c][v as usize].is_some_and(|cl| cl.txn == x) {
            t.claims[c][v as usize] = None;
        }
    }

    /// One step of a claim_one loop on lane `c` (or of a release that
    /// claim_in_order makes).
    fn claim_lane(&self, t: &mut State, ci: usize, c: usize, fault: Fault) -> Option<()> {
        let cl = t.clients[ci];
        let pk = self.stmt(t, ci).pk() as u8;
        let l = cl.lanes[c];
        let v = l.v as usize;
        let set = |t: &mut State, st: LaneSt| t.clients[ci].lanes[c].st = st;
        match l.st {
            LaneSt::Claim { tries, .. } => {
                let txn = self.claim_txn(&cl);
                let cur = t.claims[c][v];
                if fault == Fault::UnknownLost && cur.is_some() {
                    return None; // same as UnknownApplied
                }
                if cur.is_none() && fault.applies() {
                    t.claims[c][v] = Some(Claim { owner: pk, txn });
                }
                match self.outcome(fault, tries) {
                    Outcome::Done => match cur {
                        None => set(t, LaneSt::Ok),
                        // Ours: this attempt's txn, for this row.
                        Some(e) if e.txn == txn && e.owner == pk => set(t, LaneSt::Ok),
                        Some(e) => set(
                            t,
                            LaneSt::Resolve {
                                existing: e,
                                tries: 0,
                            },
                        ),
                    },
                    Outcome::Retry => set(
                        t,
                        LaneSt::Claim {
                            again: false,
                            tries: tries + 1,
                        },
                    ),
                    Outcome::Unknown | Outcome::Unavailable => set(t, LaneSt::Failed(Fail::Store)),
                }
            }
            LaneSt::Resolve { existing, tries } => {
                if fault == Fault::UnknownApplied {
                    return None;
                }
                match self.outcome(fault, tries) {
                    Outcome::Retry => {
                        set(
                            t,
                            LaneSt::Resolve {
                                existing,
                                tries: tries + 1,
                            },
                        );
                        return Some(());
                    }
                    Outcome::Unknown | Outcome::Unavailable => {
                        set(t, LaneSt::Failed(Fail::Store));
                        return Some(());
                    }
                    Outcome::Done => {}
                }
                let row = t.rows[existing.owner as usize];
                if row.backs(c, l.v) {
                    let f = if existing.owner == pk {
                        Fail::ThisRow
                    } else {
                        Fail::Dup { c: c as u8, v: l.v }
                    };
                    set(t, LaneSt::Failed(f));
                    return Some(());
                }
                let expired = t.expired & existing.txn.bit() != 0;
                if !expired {
                    // In flight: wait for it, or (first pass) report it busy.
                    if cl.ordered || self.is(Mutant::WaitWhileHolding) {
                        set(
                            t,
                            LaneSt::Wait {
                                existing,
                                observed: row,
                            },
                        );
                    } else {
                        set(t, LaneSt::Busy);
                    }
                } else if self.is(Mutant::TakeoverWithoutFence) {
                    set(t, LaneSt::Drop { existing });
                } else {
                    match self.mint(t, ci) {
                        // Out of time: the deadline passed.
                        None => set(t, LaneSt::Failed(Fail::LockTimeout)),
                        Some(f) => set(
                            t,
                            LaneSt::Fence {
                                existing,
                                observed: row,
                                f,
                                tries: 0,
                            },
                        ),
                    }
                }
            }
            LaneSt::Wait { existing, observed } => {
                if !self.wait_over(t, c, l.v, existing, observed) {
                    return None;
                }
                set(
                    t,
                    LaneSt::Claim {
                        again: true,
                        tries: 0,
                    },
                );
            }
            LaneSt::Release { txn } => {
                self.delete_claim_if(t, c, l.v, txn, fault);
                set(t, LaneSt::Queued);
            }
            LaneSt::Fence {
                existing,
                observed,
                f,
                tries,
            } => {
                let o = existing.owner as usize;
                let cur = t.rows[o];
                let cond = match observed {
                    Row::Absent => cur == Row::Absent,
                    r => cur.version() == r.version() && cur != Row::Absent,
                };
                if fault == Fault::UnknownLost && !cond {
                    return None;
                }
                if cond && fault.applies() {
                    // RowRecord { version: f, ..observed }
                    t.rows[o] = match observed {
                        Row::Absent | Row::Dead(_) => Row::Dead(f),
                        Row::Live { keys, claims, .. } => Row::Live {
                            version: f,
                            keys,
                            claims,
                        },
                    };
                }
                match self.outcome(fault, tries) {
                    Outcome::Done => {
                        let applied = cond || cur.version() == Some(f);
                        if applied {
                            set(t, LaneSt::Drop { existing });
                        } else {
                            set(
                                t,
                                LaneSt::Claim {
                                    again: true,
                                    tries: 0,
                                },
                            );
                        }
                    }
                    Outcome::Retry => set(
                        t,
                        LaneSt::Fence {
                            existing,
                            observed,
                            f,
                            tries: tries + 1,
                        },
                    ),
                    Outcome::Unknown | Outcome::Unavailable => set(t, LaneSt::Failed(Fail::Store)),
                }
            }
            LaneSt::Drop { existing } => {
                self.delete_claim_if(t, c, l.v, existing.txn, fault);
                set(
                    t,
                    LaneSt::Claim {
                        again: true,
                        tries: 0,
                    },
                );
            }
            _ => return None,
        }
        Some(())
    }

    /// Whether what a waiting lane waits on has changed: the claim, its
    /// owner row, or its lease.
    fn wait_over(&self, s: &State, c: usize, v: u8, existing: Claim, observed: Row) -> bool {
        s.claims[c][v as usize] != Some(existing)
            || s.rows[existing.owner as usize] != observed
            || s.expired & existing.txn.bit() != 0
    }

    fn insert_commit(&self, t: &mut State, ci: usize, tries: u8, fault: Fault) -> Option<()> {
        let cl = t.clients[ci];
        let Stmt::Insert { pk, keys } = self.stmt(t, ci) else {
            unreachable!()
        };
        let pk = pk as usize;
        let txn = cl.txn.unwrap();
        let cur = t.rows[pk];
        let cond = match cl.expected {
            None => cur == Row::Absent,
            Some(v) => cur.version() == Some(v),
        };
        if fault == Fault::UnknownLost && !cond {
            return None;
        }
        if cond && fault.applies() {
            let new = Row::Live {
                version: txn,
                keys,
                claims: keys.map(|k| k.map(|_| txn)),
            };
            self.land(t, ci, cur, new);
            t.rows[pk] = new;
        }
        let retried = tries > 0;
        match self.outcome(fault, tries) {
            Outcome::Retry => t.clients[ci].phase = Phase::InsCommit { tries: tries + 1 },
            // "The commit may have landed: keep our claims, they may back it."
            Outcome::Unknown => self.answer(t, ci, Ans::Unknown),
            Outcome::Unavailable => {
                self.release(t, ci, keys, txn, None, Then::Answer(Ans::StoreError));
            }
            Outcome::Done if cond => self.answer(t, ci, Ans::Done),
            Outcome::Done => {
                if cur.live() && cur.version() == Some(txn) {
                    self.answer(t, ci, Ans::Done);
                } else if retried && !self.is(Mutant::AmbiguousAsDefinite) {
                    self.release(t, ci, keys, txn, Some(cur), Then::Answer(Ans::Unknown));
                } else if cur.live() {
                    self.release(t, ci, keys, txn, Some(cur), Then::Answer(Ans::DupPk));
                } else if self.is(Mutant::InsertOverwritesUnseenDead) {
                    let c = &mut t.clients[ci];
                    c.expected = cur.version();
                    c.phase = Phase::InsCommit { tries: 0 };
                } else {
                    // Dead (or absent) at a version this attempt had not
                    // observed: restart with a new txn.
                    t.clients[ci].obs = Some(cur);
                    t.clients[ci].phase = Phase::InsRestart;
                }
            }
        }
        Some(())
    }

    /// restamp_all: from constraint `c` on, in order.
    fn restamp_from(&self, t: &mut State, ci: usize, from: usize) {
        let Stmt::Insert { keys, .. } = self.stmt(t, ci) else {
            unreachable!()
        };
        if let Some(c) = (from..NC).find(|&c| keys[c].is_some()) {
            t.clients[ci].phase = Phase::InsRestamp {
                c: c as u8,
                tries: 0,
            };
            return;
        }
        let lost = t.clients[ci].lost;
        if lost.iter().any(|&l| l) {
            let mut reclaim = [None; NC];
            let mut kept = [None; NC];
            for c in 0..NC {
                if lost[c] {
                    reclaim[c] = keys[c];
                } else {
                    kept[c] = keys[c];
                }
            }
            self.start_claims(t, ci, reclaim, kept, Phase::InsReclaim);
        } else {
            let c = &mut t.clients[ci];
            c.txn = c.next.take();
            c.expected = c.obs.take().and_then(|r| r.version());
            c.phase = Phase::InsCommit { tries: 0 };
        }
    }

    fn restamp(&self, t: &mut State, ci: usize, c: usize, tries: u8, fault: Fault) -> Option<()> {
        let cl = t.clients[ci];
        let Stmt::Insert { keys, .. } = self.stmt(t, ci) else {
            unreachable!()
        };
        let v = keys[c].unwrap() as usize;
        let (old, new) = (cl.txn.unwrap(), cl.next.unwrap());
        let cur = t.claims[c][v];
        let cond = cur.is_some_and(|x| x.txn == old);
        if fault == Fault::UnknownLost && !cond {
            return None;
        }
        if cond && fault.applies() {
            t.claims[c][v] = Some(Claim {
                owner: cur.unwrap().owner,
                txn: new,
            });
        }
        match self.outcome(fault, tries) {
            Outcome::Done => {
                if !(cond || cur.is_some_and(|x| x.txn == new)) {
                    t.clients[ci].lost[c] = true;
                }
                self.restamp_from(t, ci, c + 1);
            }
            Outcome::Retry => {
                t.clients[ci].phase = Phase::InsRestamp {
                    c: c as u8,
                    tries: tries + 1,
                }
            }
            // restamp_all returns the error (`?`) without releasing.
            Outcome::Unknown | Outcome::Unavailable => self.answer(t, ci, Ans::StoreError),
        }
        Some(())
    }

    /// A read of the statement's row (the scan's, or the loop's re-read).
    fn read_observe(&self, t: &mut State, ci: usize, tries: u8, fault: Fault) -> Option<()> {
        if fault == Fault::UnknownApplied {
            return None;
        }
        let pk = self.stmt(t, ci).pk();
        match self.outcome(fault, tries) {
            Outcome::Done => {
                t.clients[ci].obs = Some(t.rows[pk]);
                match self.stmt(t, ci) {
                    Stmt::Update { .. } => self.update_eval(t, ci),
                    Stmt::Delete { .. } => self.delete_eval(t, ci),
                    Stmt::Insert { .. } => unreachable!(),
                }
            }
            Outcome::Retry => {
                t.clients[ci].phase = match t.clients[ci].phase {
                    Phase::DelRead { .. } | Phase::DelTop => Phase::DelRead { tries: tries + 1 },
                    _ => Phase::UpdRead { tries: tries + 1 },
                }
            }
            Outcome::Unknown | Outcome::Unavailable => self.answer(t, ci, Ans::StoreError),
        }
        Some(())
    }

    /// update_row's loop body up to claiming, on the observed row.
    fn update_eval(&self, t: &mut State, ci: usize) {
        let Stmt::Update { toggle, .. } = self.stmt(t, ci) else {
            unreachable!()
        };
        let obs = t.clients[ci].obs.unwrap();
        if !obs.live() {
            return self.answer(t, ci, Ans::ZeroRows);
        }
        let Some(y) = self.mint(t, ci) else {
            return self.answer(t, ci, Ans::LockTimeout);
        };
        let old = obs.keys();
        let new = toggled(old, toggle);
        t.clients[ci].txn = Some(y);
        t.clients[ci].new_keys = new;
        self.start_claims(t, ci, changed(old, new), [None; NC], Phase::UpdClaim);
    }

    fn update_commit(&self, t: &mut State, ci: usize, tries: u8, fault: Fault) -> Option<()> {
        let cl = t.clients[ci];
        let pk = self.stmt(t, ci).pk();
        let obs = cl.obs.unwrap();
        let y = cl.txn.unwrap();
        let (old, new_keys) = (obs.keys(), cl.new_keys);
        let chg = changed(old, new_keys);
        let cur = t.rows[pk];
        let cond = cur.version() == obs.version() && cur != Row::Absent;
        if fault == Fault::UnknownLost && !cond {
            return None;
        }
        if cond && fault.applies() {
            let mut claims = obs.claim_txns();
            for c in 0..NC {
                if old[c].is_some() && old[c] != new_keys[c] {
                    claims[c] = None;
                }
                if chg[c].is_some() {
                    claims[c] = Some(y);
                }
            }
            let new = Row::Live {
                version: y,
                keys: new_keys,
                claims,
            };
            self.land(t, ci, cur, new);
            t.rows[pk] = new;
        }
        match self.outcome(fault, tries) {
            Outcome::Retry => t.clients[ci].phase = Phase::UpdCommit { tries: tries + 1 },
            Outcome::Unknown => self.answer(t, ci, Ans::Unknown),
            Outcome::Unavailable => {
                self.release(t, ci, chg, y, None, Then::Answer(Ans::StoreError))
            }
            Outcome::Done => {
                let own = cur.version() == Some(y);
                if cond || (own && !self.is(Mutant::UpdateOwnVersionLost)) {
                    self.update_cleanup_from(t, ci, 0);
                } else if tries > 0 && !own && !self.is(Mutant::AmbiguousAsDefinite) {
                    self.release(t, ci, chg, y, Some(cur), Then::Answer(Ans::Unknown));
                } else {
                    t.clients[ci].obs = Some(cur);
                    self.release(t, ci, chg, y, Some(cur), Then::UpdRestart);
                }
            }
        }
        Some(())
    }

    /// Clean up replaced claims `IF txn = old __claims[c]`, in order; then done.
    fn update_cleanup_from(&self, t: &mut State, ci: usize, from: usize) {
        let cl = t.clients[ci];
        let old = cl.obs.unwrap().keys();
        match (from..NC).find(|&c| old[c].is_some() && old[c] != cl.new_keys[c]) {
            Some(c) => t.clients[ci].phase = Phase::UpdCleanup { c: c as u8 },
            None => self.answer(t, ci, Ans::Done),
        }
    }

    fn delete_eval(&self, t: &mut State, ci: usize) {
        let obs = t.clients[ci].obs.unwrap();
        if !obs.live() {
            return self.answer(t, ci, Ans::ZeroRows);
        }
        let Some(d) = self.mint(t, ci) else {
            return self.answer(t, ci, Ans::LockTimeout);
        };
        t.clients[ci].txn = Some(d);
        t.clients[ci].phase = Phase::DelCommit { tries: 0 };
    }

    fn delete_commit(&self, t: &mut State, ci: usize, tries: u8, fault: Fault) -> Option<()> {
        let cl = t.clients[ci];
        let pk = self.stmt(t, ci).pk();
        let obs = cl.obs.unwrap();
        let d = cl.txn.unwrap();
        let cur = t.rows[pk];
        let cond = if self.is(Mutant::DeleteIfLive) {
            cur.live()
        } else {
            cur.version() == obs.version() && cur != Row::Absent
        };
        if fault == Fault::UnknownLost && !cond {
            return None;
        }
        if cond && fault.applies() {
            let new = if self.is(Mutant::DeleteToAbsent) {
                Row::Absent
            } else {
                Row::Dead(d)
            };
            self.land(t, ci, cur, new);
            t.rows[pk] = new;
        }
        match self.outcome(fault, tries) {
            Outcome::Retry => t.clients[ci].phase = Phase::DelCommit { tries: tries + 1 },
            Outcome::Unknown => self.answer(t, ci, Ans::Unknown),
            Outcome::Unavailable => self.answer(t, ci, Ans::StoreError),
            Outcome::Done => {
                if cond || cur.version() == Some(d) {
                    self.delete_cleanup_from(t, ci, 0);
                } else if tries > 0 && !self.is(Mutant::AmbiguousAsDefinite) {
                    self.answer(t, ci, Ans::Unknown);
                } else {
                    t.clients[ci].obs = Some(cur);
                    t.clients[ci].phase = Phase::DelTop;
                }
            }
        }
        Some(())
    }

    /// Clean up the deleted row's claims `IF txn = __claims[c]`, in order; then done.
    fn delete_cleanup_from(&self, t: &mut State, ci: usize, from: usize) {
        let old = t.clients[ci].obs.unwrap().keys();
        match (from..NC).find(|&c| old[c].is_some()) {
            Some(c) => t.clients[ci].phase = Phase::DelCleanup { c: c as u8 },
            None => self.answer(t, ci, Ans::Done),
        }
    }

    /// The deadline passes where the code checks it.
    fn timeout(&self, t: &mut State, ci: usize, lane: usize) -> Option<()> {
        let cl = t.clients[ci];
        match cl.phase {
            Phase::InsClaim | Phase::InsReclaim | Phase::UpdClaim => {
                if !matches!(
                    cl.lanes[lane].st,
                    LaneSt::Claim { again: true, .. } | LaneSt::Wait { .. }
                ) {
                    return None;
                }
                t.clients[ci].lanes[lane].st = LaneSt::Failed(Fail::LockTimeout);
                self.claims_settled(t, ci);
            }
            Phase::InsRestart => {
                let Stmt::Insert { keys, .. } = self.stmt(t, ci) else {
                    unreachable!()
                };
                self.release(
                    t,
                    ci,
                    keys,
                    cl.txn.unwrap(),
                    None,
                    Then::Answer(Ans::LockTimeout),
                );
            }
            Phase::UpdTop | Phase::DelTop if cl.mints > 0 => self.answer(t, ci, Ans::LockTimeout),
            _ => return None,
        }
        Some(())
    }

    /// Txns a resolver could judge the age of: those of unbacked claims and
    /// those resolvers hold.
    fn judged(&self, s: &State) -> u64 {
        let mut m = 0u64;
        for c in 0..NC {
            for v in 0..NV {
                if let Some(cl) = s.claims[c][v] {
                    if !s.rows[cl.owner as usize].backs(c, v as u8) {
                        m |= cl.txn.bit();
                    }
                }
            }
        }
        for cl in &s.clients {
            for l in &cl.lanes {
                if let LaneSt::Resolve { existing, .. } | LaneSt::Fence { existing, .. } = l.st {
                    m |= existing.txn.bit();
                }
            }
        }
        m
    }

    fn faults_for(&self, s: &State, ops: &'static [Fault]) -> &'static [Fault] {
        if s.faults < self.max_faults {
            ops
        } else {
            LOCAL
        }
    }
}

enum Outcome {
    Done,
    Retry,
    Unknown,
    Unavailable,
}

fn toggled(keys: Keys, toggle: [bool; NC]) -> Keys {
    let mut out = keys;
    for c in 0..NC {
        if toggle[c] {
            out[c] = keys[c].map(|v| 1 - v);
        }
    }
    out
}

/// The new keys that are not old keys (update_row `changed`).
fn changed(old: Keys, new: Keys) -> Keys {
    let mut out = [None; NC];
    for c in 0..NC {
        if new[c].is_some() && new[c] != old[c] {
            out[c] = new[c];
        }
    }
    out
}

fn taken_keys(lanes: &[Lane; NC]) -> Keys {
    let mut out = [None; NC];
    for c in 0..NC {
        if lanes[c].st == LaneSt::Ok {
            out[c] = Some(lanes[c].v);
        }
    }
    out
}

/// The engine's answer for a failed claim_all of an INSERT (ThisRow: pkey).
fn insert_answer(f: Fail) -> Ans {
    match f {
        Fail::Dup { c, v } => Ans::DupKey { c, v },
        Fail::ThisRow => Ans::DupPk,
        Fail::LockTimeout => Ans::LockTimeout,
        Fail::Store => Ans::StoreError,
    }
}

impl Model for ClaimModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut rows = [Row::Absent; NR];
        let mut claims = [[None; NV]; NC];
        for &(pk, keys) in &self.init {
            let txn = Txn::init(pk as usize);
            rows[pk as usize] = Row::Live {
                version: txn,
                keys,
                claims: keys.map(|k| k.map(|_| txn)),
            };
            for c in 0..NC {
                if let Some(v) = keys[c] {
                    claims[c][v as usize] = Some(Claim { owner: pk, txn });
                }
            }
        }
        let mut clients = [Client {
            phase: Phase::Finished,
            ..Client::IDLE
        }; MAXC];
        for (i, p) in self.programs.iter().enumerate() {
            if !p.is_empty() {
                clients[i].phase = Phase::Idle;
            }
        }
        vec![State {
            rows,
            claims,
            expired: 0,
            faults: 0,
            crashes: 0,
            clients,
            landed: [[0; MAXS]; MAXC],
            answers: [[Ans::Pending; MAXS]; MAXC],
            unjustified: false,
            bad_write: false,
            exhausted: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for (ci, cl) in s.clients.iter().enumerate() {
            let client = ci as u8;
            let mut step = |lane: usize, ops: &'static [Fault]| {
                for &fault in self.faults_for(s, ops) {
                    actions.push(Action::Step {
                        client,
                        lane: lane as u8,
                        fault,
                    });
                }
            };
            match cl.phase {
                Phase::Finished => continue,
                Phase::Idle | Phase::InsRestart | Phase::DelTop => step(0, LOCAL),
                Phase::UpdTop => step(0, if cl.obs.is_none() { READ } else { LOCAL }),
                Phase::InsCommit { .. }
                | Phase::UpdCommit { .. }
                | Phase::DelCommit { .. }
                | Phase::InsRestamp { .. } => step(0, LWT),
                Phase::UpdRead { .. } | Phase::DelRead { .. } => step(0, READ),
                Phase::UpdCleanup { .. } | Phase::DelCleanup { .. } => step(0, BEST_EFFORT),
                Phase::InsClaim | Phase::InsReclaim | Phase::UpdClaim | Phase::Releasing(_) => {
                    for (c, l) in cl.lanes.iter().enumerate() {
                        match l.st {
                            LaneSt::Claim { .. } | LaneSt::Fence { .. } => step(c, LWT),
                            LaneSt::Resolve { .. } => step(c, READ),
                            LaneSt::Drop { .. } | LaneSt::Release { .. } => step(c, BEST_EFFORT),
                            LaneSt::Wait { existing, observed }
                                if self.wait_over(s, c, l.v, existing, observed) =>
                            {
                                step(c, LOCAL)
                            }
                            _ => {}
                        }
                    }
                }
            }
            // Deadline checks (none in liveness mode: waits block).
            match cl.phase {
                _ if self.liveness => {}
                Phase::InsClaim | Phase::InsReclaim | Phase::UpdClaim => {
                    for (c, l) in cl.lanes.iter().enumerate() {
                        if let LaneSt::Claim { again: true, .. } | LaneSt::Wait { .. } = l.st {
                            actions.push(Action::Timeout {
                                client,
                                lane: c as u8,
                            });
                        }
                    }
                }
                Phase::InsRestart => actions.push(Action::Timeout { client, lane: 0 }),
                Phase::UpdTop | Phase::DelTop if cl.mints > 0 => {
                    actions.push(Action::Timeout { client, lane: 0 })
                }
                _ => {}
            }
            if cl.active() && s.crashes < self.max_crashes {
                actions.push(Action::Crash { client });
            }
        }
        let judged = if self.expiry {
            self.judged(s) & !s.expired
        } else {
            0
        };
        for i in 0..64u8 {
            if judged & (1u64 << i) != 0 {
                actions.push(Action::Expire { txn: Txn(i) });
            }
        }
        if self.janitor != Janitor::Off {
            for (r, row) in s.rows.iter().enumerate() {
                if !matches!(row, Row::Dead(_)) {
                    continue;
                }
                let busy = self.janitor == Janitor::Safe
                    && (0..self.programs.len())
                        .any(|ci| s.clients[ci].active() && self.stmt(s, ci).pk() == r);
                if !busy {
                    actions.push(Action::Janitor { row: r as u8 });
                }
            }
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        let mut t = s.clone();
        match a {
            Action::Step {
                client,
                lane,
                fault,
            } => self.step(&mut t, client as usize, lane as usize, fault)?,
            Action::Timeout { client, lane } => {
                self.timeout(&mut t, client as usize, lane as usize)?
            }
            Action::Crash { client } => {
                t.crashes += 1;
                let ci = client as usize;
                let stmt = t.clients[ci].stmt as usize;
                t.answers[ci][stmt] = Ans::NoAnswer;
                self.end_stmt(&mut t, ci);
            }
            Action::Expire { txn } => t.expired |= txn.bit(),
            Action::Janitor { row } => t.rows[row as usize] = Row::Absent,
        }
        for ci in 0..self.programs.len() {
            self.witness(&mut t, ci);
        }
        t.expired &= self.judged(&t);
        Some(t)
    }

    fn format_action(&self, a: &Action) -> String {
        let name = |c: u8| (b'a' + c) as char;
        match *a {
            Action::Step {
                client,
                lane,
                fault,
            } => {
                let mut s = format!("{} step", name(client));
                if lane > 0 {
                    s += &format!(" lane c{lane}");
                }
                if fault != Fault::None {
                    s += &format!(" [{fault:?}]");
                }
                s
            }
            Action::Timeout { client, lane } => {
                format!("{} deadline passes (lane c{lane})", name(client))
            }
            Action::Crash { client } => format!("{} proxy crashes", name(client)),
            Action::Expire { txn } => format!("lease of {txn:?} expires"),
            Action::Janitor { row } => format!("janitor removes dead r{row}"),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(P_U, |_, s: &State| {
                (0..NC).all(|c| {
                    (0..NV as u8).all(|v| s.rows.iter().filter(|r| r.backs(c, v)).count() <= 1)
                })
            }),
            Property::always(P_C, |_, s: &State| {
                s.rows.iter().enumerate().all(|(r, row)| {
                    row.keys().iter().enumerate().all(|(c, k)| match k {
                        None => true,
                        Some(v) => {
                            s.claims[c][*v as usize].is_some_and(|cl| cl.owner as usize == r)
                        }
                    })
                })
            }),
            Property::always(P_C_EXACT, |_, s: &State| {
                s.rows.iter().enumerate().all(|(r, row)| {
                    let txns = row.claim_txns();
                    row.keys().iter().enumerate().all(|(c, k)| match k {
                        None => true,
                        Some(v) => s.claims[c][*v as usize]
                            .is_some_and(|cl| cl.owner as usize == r && Some(cl.txn) == txns[c]),
                    })
                })
            }),
            Property::always(P_ONCE, |_, s: &State| {
                s.landed.iter().flatten().all(|&n| n <= 1)
            }),
            Property::always(P_DONE, |_, s: &State| {
                s.answers
                    .iter()
                    .flatten()
                    .zip(s.landed.iter().flatten())
                    .all(|(a, &n)| *a != Ans::Done || n == 1)
            }),
            Property::always(P_ERROR, |_, s: &State| {
                s.answers
                    .iter()
                    .flatten()
                    .zip(s.landed.iter().flatten())
                    .all(|(a, &n)| !a.is_error() || n == 0)
            }),
            Property::always(P_JUSTIFIED, |_, s: &State| !s.unjustified),
            Property::always(P_W, |_, s: &State| !s.bad_write),
            if self.liveness {
                Property::always(P_LIVE, |_, s: &State| !s.exhausted)
            } else {
                Property::always(P_LIVE_OFF, |_, _| true)
            },
            if self.liveness {
                Property::always(P_STUCK, |m: &ClaimModel, s: &State| {
                    let mut next = Vec::new();
                    m.actions(s, &mut next);
                    s.clients.iter().all(|c| c.phase == Phase::Finished)
                        || next.into_iter().any(|a| m.next_state(s, a).is_some())
                })
            } else {
                Property::always(P_STUCK_OFF, |_, _| true)
            },
            Property::eventually(P_ANSWERED, |_, s: &State| {
                s.clients.iter().all(|c| c.phase == Phase::Finished)
            }),
            // Coverage: behaviours the scenarios must reach, or the check is vacuous.
            Property::sometimes(S_TAKEOVER, |_, s: &State| {
                any_lane(s, |l| matches!(l.st, LaneSt::Drop { .. }))
            }),
            Property::sometimes(S_ORDERED, |_, s: &State| {
                any_lane(s, |l| l.st == LaneSt::Queued)
            }),
            Property::sometimes(S_ORDERED_RELEASE, |_, s: &State| {
                s.clients.iter().any(|c| {
                    matches!(
                        c.phase,
                        Phase::InsClaim | Phase::InsReclaim | Phase::UpdClaim
                    ) && c
                        .lanes
                        .iter()
                        .any(|l| matches!(l.st, LaneSt::Release { .. }))
                })
            }),
            Property::sometimes(S_WAIT, |_, s: &State| {
                any_lane(s, |l| matches!(l.st, LaneSt::Wait { .. }))
            }),
            Property::sometimes(S_RESTAMP, |_, s: &State| {
                s.clients
                    .iter()
                    .any(|c| matches!(c.phase, Phase::InsRestamp { .. }))
            }),
            Property::sometimes(S_RECLAIM, |_, s: &State| {
                s.clients.iter().any(|c| c.phase == Phase::InsReclaim)
            }),
            Property::sometimes(S_UPD_RESTART, |_, s: &State| {
                s.clients
                    .iter()
                    .any(|c| c.phase == Phase::UpdTop && c.obs.is_some())
            }),
            Property::sometimes(S_UPD_REREAD, |_, s: &State| {
                s.clients
                    .iter()
                    .any(|c| c.phase == Phase::UpdTop && c.obs.is_none())
            }),
            Property::sometimes(S_DEL_RESTART, |_, s: &State| {
                s.clients.iter().any(|c| c.phase == Phase::DelTop)
            }),
            Property::sometimes(S_40003, |_, s: &State| answered(s, |a| a == Ans::Unknown)),
            Property::sometimes(S_DUP_KEY, |_, s: &State| {
                answered(s, |a| matches!(a, Ans::DupKey { .. }))
            }),
            Property::sometimes(S_DUP_PK, |_, s: &State| answered(s, |a| a == Ans::DupPk)),
            Property::sometimes(S_ZERO, |_, s: &State| answered(s, |a| a == Ans::ZeroRows)),
            Property::sometimes(S_55P03, |_, s: &State| {
                answered(s, |a| a == Ans::LockTimeout)
            }),
            Property::sometimes(S_53000, |_, s: &State| {
                answered(s, |a| a == Ans::StoreError)
            }),
            Property::sometimes(S_ALL_DONE, |_, s: &State| {
                s.clients.iter().all(|c| c.phase == Phase::Finished)
                    && s.answers
                        .iter()
                        .flatten()
                        .all(|&a| a == Ans::Done || a == Ans::Pending)
                    && s.answers
                        .iter()
                        .flatten()
                        .filter(|&&a| a == Ans::Done)
                        .count()
                        >= 2
            }),
        ]
    }
}

fn any_lane(s: &State, f: impl Fn(&Lane) -> bool) -> bool {
    s.clients.iter().any(|c| c.lanes.iter().any(&f))
}

fn answered(s: &State, f: impl Fn(Ans) -> bool) -> bool {
    s.answers.iter().flatten().any(|&a| f(a))
}

pub const S_TAKEOVER: &str = "sometimes: a fenced claim is taken over";
pub const S_ORDERED: &str = "sometimes: a contended statement claims in key order";
pub const S_ORDERED_RELEASE: &str =
    "sometimes: a contended statement releases a key ordered after a busy one";
pub const S_WAIT: &str = "sometimes: a claim waits for a statement in flight";
pub const S_RESTAMP: &str = "sometimes: an INSERT restarts and re-stamps its claims";
pub const S_RECLAIM: &str = "sometimes: a restarted INSERT claims a key again";
pub const S_UPD_RESTART: &str = "sometimes: an UPDATE restarts from the row its commit returned";
pub const S_UPD_REREAD: &str = "sometimes: an UPDATE observes again (its new key is its own)";
pub const S_DEL_RESTART: &str = "sometimes: a DELETE restarts";
pub const S_40003: &str = "sometimes: 40003";
pub const S_DUP_KEY: &str = "sometimes: 23505 on a unique key";
pub const S_DUP_PK: &str = "sometimes: 23505 on the primary key";
pub const S_ZERO: &str = "sometimes: 0 rows";
pub const S_55P03: &str = "sometimes: 55P03";
pub const S_53000: &str = "sometimes: 53000";
pub const S_ALL_DONE: &str = "sometimes: every statement done";

pub const P_U: &str = "U: at most one live row per key";
pub const P_C: &str = "C: every live key has a claim owned by its row";
pub const P_C_EXACT: &str = "C-exact: that claim carries the txn __claims records";
pub const P_ONCE: &str = "A: a statement's write lands at most once";
pub const P_DONE: &str = "A: done means the write landed";
pub const P_ERROR: &str = "A: an error means nothing landed";
pub const P_JUSTIFIED: &str = "A: 23505 / 0 rows match a state seen during the statement";
pub const P_W: &str = "W: every write is consistent with the row it replaced";
pub const P_LIVE: &str = "L: no statement restarts or fences until its deadline";
pub const P_LIVE_OFF: &str = "L: (not checked in this configuration)";
pub const P_STUCK: &str = "L: never stuck (nothing can happen, a statement unanswered)";
pub const P_STUCK_OFF: &str = "L: stuck (not checked in this configuration)";
pub const P_ANSWERED: &str = "every statement is answered or its proxy crashed";

/// The safety properties (all but the liveness check).
pub const SAFETY: &[&str] = &[
    P_U,
    P_C,
    P_C_EXACT,
    P_ONCE,
    P_DONE,
    P_ERROR,
    P_JUSTIFIED,
    P_W,
];
