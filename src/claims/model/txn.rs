//! Exhaustive model check of transactions over intents and a transaction
//! record (docs/transactions.md), written with stateright against what
//! `claims::{intents, txn_write, resolve}`, `engine::txn` and `txn` do.
//!
//! # What is modelled
//!
//! - Two rows and one UNIQUE constraint with two values (A and B). A row
//!   partition is absent, or holds a version, its committed state (dead, or
//!   live with a unique value, the txn of the claim backing it, `__claims`,
//!   and a tag saying which transaction wrote it) and at most one intent
//!   (transaction, state). A claim partition per value holds (owner row,
//!   txn). The initial rows were written by a transaction committed before
//!   (`INIT`), with its claims.
//! - One record per transaction: absent (undecided), committed or aborted,
//!   written once `IF NOT EXISTS` by COMMIT, ROLLBACK, a failed statement,
//!   or a resolver.
//! - Each transaction runs a short program of statements (INSERT, UPDATE
//!   of the unique value, DELETE, a read; a SAVEPOINT before one of them),
//!   one store operation per model step, as `write_intent` does: read and
//!   settle the row (waiting on an undecided intent of another
//!   transaction); claim a new unique value (`INSERT claim IF NOT EXISTS`;
//!   an existing claim is resolved: the owner row as this writer sees it,
//!   its own intent included, backs it (23505, or the row changed: read it
//!   again), or an undecided intent of another transaction is on it (in
//!   flight: wait), or it is unbacked: a claim of its own is taken back, a
//!   claim of another transaction is taken over (`DELETE IF txn = X`) once
//!   its record, read in a later step, says decided; a claim naming a row
//!   whose committed state holds the value while this transaction's intent
//!   there frees it is refused, 0A000); then the CAS of the intent from the
//!   version read (not applied: release the claim, read again). An INSERT
//!   assumes the row absent and claims first, as `put_insert` does.
//! - A failed statement fails the block: what it did since the latest
//!   savepoint is undone at once, or, with no savepoint, the transaction is
//!   aborted. ROLLBACK TO undoes the tail of the log: each row goes back by
//!   CAS to the intent it had before, the undone writes' claims are
//!   released (`DELETE IF txn = T`) and those a kept write needs are
//!   claimed again. An undo that is not confirmed dooms the transaction.
//!   Then COMMIT (a doomed one rolls back), or ROLLBACK.
//! - Faults, from a global budget: an unknown outcome (landed or not) on
//!   any LWT: a claim, an intent write (40003, dooms), an undo CAS or
//!   re-claim, a release (lost), COMMIT (40003) and ROLLBACK (left
//!   undecided); optionally a wait that ends in 55P03. A proxy may crash at
//!   any point; a live proxy may stall past its lease, after which a
//!   resolver may abort its transaction while it still runs. A transaction
//!   that crashed, stalled, or answered without a record (a rollback whose
//!   record did not land, a 40003 COMMIT) is gone: any resolver may abort
//!   it (`abort_if_gone`).
//! - A waiter may give way (40P01) when the txn it waits for, as the code
//!   computes it (the intent's transaction for a row, the claim's txn for a
//!   claim), is older: `Wait::once`'s age order. The initial load is the
//!   oldest, T0 older than T1.
//! - After deciding, the proxy finishes the transaction (`finish`: fold or
//!   drop each row's intent if still its last write, remove the claims of
//!   values the folded rows no longer hold and the transaction's claims no
//!   final row needs); besides, any decided intent may be folded or dropped
//!   at any time, by whoever meets it.
//! - Snapshots across rows (transactions.md, section 9), on one process
//!   clock: a counter, a stamp taken from it is later than every one
//!   before. COMMIT takes its commit stamp in a step before its record
//!   write (which may then land or not, as any); a committed record
//!   carries it. A row's committed state carries the stamp it was
//!   committed at and who committed it (0 and `INIT` for the initial load
//!   and a fresh partition), and the row keeps the one committed state it
//!   replaced (`prev`): folding a committed intent (`Clean`, `finish`, a
//!   writer writing its intent over it) moves the committed state there;
//!   dropping an aborted intent changes neither.
//! - An outside reader takes its snapshot S (a stamp), then reads row 0
//!   and row 1, one step each, showing of each row, newest first: the
//!   intent, if its transaction's record says committed at or before S;
//!   the committed state, then the previous one, unless committed after S
//!   or by a transaction it decided invisible. It decides each transaction
//!   it meets once per statement (`ReadView`): on an intent by the record
//!   and its stamp (undecided: invisible), on a committed state by the
//!   stamp. Nothing left to show: the row is too old and the statement
//!   answers 40001, unless it is the first row (nothing sent yet): then S
//!   moves to now and the row is read again. A transaction's own read sees
//!   its intents (`ReadView` with its own id).
//!
//! Simplifications: settling a row (row, record, row again) is one step,
//! so is a claim insert with the read of the owner row it finds; the record
//! read that decides a takeover is its own step, as in the code, and so is
//! everything that writes. `finish` is one step. Retries that end in a
//! definite answer are the same as no fault; a fault is the final answer.
//!
//! # Properties, in every reachable state
//!
//! - **U**: no two live rows, as the records make them visible, hold the
//!   same unique value. **C**: every visible live row's value has a claim
//!   naming that row.
//! - **Atomic**: the visible rows are exactly what the committed
//!   transactions wrote, applied in commit order (a ghost copy updated when
//!   a commit record lands): all of a committed transaction's kept writes
//!   and none of an aborted one's. Applied in stamp order instead, the
//!   same (see the property).
//! - **No dirty read**: every value a reader (outside, or a transaction
//!   reading another's row) saw was written by a committed transaction.
//! - **Snapshot**: the two rows the outside reader showed are what the
//!   initial load and the kept writes of a set X of transactions committed
//!   by the end of its read leave, applied in stamp order; X holds every
//!   committed transaction with an earlier stamp that wrote a row one in X
//!   wrote, and every transaction whose COMMIT was answered ok before the
//!   reader started (no stale read).
//! - **Read-your-writes**: a transaction's own read of a row it wrote sees
//!   its last kept write there (unless it is doomed or already aborted).
//! - **Truthful**: COMMIT answered ok means the record says committed; an
//!   error or ROLLBACK means it never will; only 40003 may mean either.
//! - **Not stuck**: live transactions never all wait on each other.
//!
//! # Found in the code
//!
//! Two ways the code as built loses the claim of a committed row (U and C
//! broken); each is a variant here, and the default models the fix:
//!
//! - [`Resolver::AsBuilt`]: `resolve::transaction_claim` takes a v8 claim
//!   over once the record says decided, but the record is read after the
//!   owner row: the owner may write its intent and commit in between, and
//!   the claim backing its committed row is deleted. [`Resolver::Reread`]
//!   reads the owner row again after a committed decision (as `settle`
//!   does). Test `the_code_as_built_loses_a_claim` (no fault needed).
//! - [`Undo::AsBuilt`]: `txn_write::undo` puts back only the claims of the
//!   undone (logged) writes. A statement that takes back its own
//!   transaction's claim (a value an earlier write claimed and a later one
//!   moved away) and then fails is in no log entry: undoing to the
//!   savepoint restores the earlier row without its claim.
//!   [`Undo::ClaimKept`] claims again what the kept rows need. Test
//!   `the_code_as_built_loses_a_kept_claim_on_a_failed_statement`.
//!
//! Both reproduce on the real code (`found.rs`): the first with two
//! sessions and the interleaving forced by a store layer, the second in
//! one session without any fault.
//!
//! Not modelled: more than two transactions or two values; statements
//! outside blocks and multi-row statements run as their own transactions
//! (v7 claims and fencing are `model::mod`'s); clients ROLLBACK only at
//! the end or after an error, and after ROLLBACK TO go on past the failed
//! statement; a resolver's own statement failing when its abort's outcome
//! is unknown; lock timeouts only in the larger scopes. Of snapshots
//! (section 9): more than one clock (the offset, the commit wait and the
//! push of an undecided record, which one clock does not need), a
//! history longer than one previous state, single-statement writes (which
//! keep a previous state too), and a statement that has sent rows moving
//! its snapshot (only the first row's read does). The torn read of
//! before, a reader seeing part of a transaction that commits between its
//! two reads, is now a violation of Snapshot (mutant
//! [`Mutant::NoSnapshot`]).

use std::fmt;

use stateright::{Model, Property};

pub const ROWS: usize = 2;
pub const KEYS: usize = 2;
pub const TXNS: usize = 2;

/// Who wrote something: [`INIT`] the initial load, t + 1 transaction t.
pub type Who = u8;
pub const INIT: Who = 0;

fn who(t: usize) -> Who {
    t as Who + 1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Committed,
    Aborted,
}

/// A row's state: dead, or live holding unique value `key` (0 = A, 1 = B)
/// whose claim has txn `ctxn` (`__claims`). `tag` says who wrote it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Val {
    pub live: bool,
    pub key: u8,
    pub tag: Who,
    pub ctxn: Who,
}

impl Val {
    /// `RowRecord::dead`: what an absent partition shows.
    const ABSENT: Val = Val {
        live: false,
        key: 0,
        tag: INIT,
        ctxn: INIT,
    };

    fn dead(tag: Who) -> Val {
        Val { tag, ..Val::ABSENT }
    }

    fn live(key: u8, tag: Who, ctxn: Who) -> Val {
        Val {
            live: true,
            key,
            tag,
            ctxn,
        }
    }

    fn holds(&self, k: u8) -> bool {
        self.live && self.key == k
    }

    /// What a reader sees (not `__claims`).
    fn shown(&self) -> (bool, u8, Who) {
        (self.live, self.key, self.tag)
    }
}

fn key_name(k: u8) -> char {
    (b'A' + k) as char
}

fn who_name(w: Who) -> String {
    match w {
        INIT => "I".into(),
        t => format!("T{}", t - 1),
    }
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.live {
            write!(
                f,
                "{}@{}(c{})",
                key_name(self.key),
                who_name(self.tag),
                who_name(self.ctxn)
            )
        } else {
            write!(f, "dead@{}", who_name(self.tag))
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Intent {
    pub txn: u8,
    pub val: Val,
}

impl fmt::Debug for Intent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}:{:?}", self.txn, self.val)
    }
}

/// A committed state a row held before: the state, the stamp it was
/// committed at, and who committed it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Past {
    pub val: Val,
    pub at: u8,
    pub by: Who,
}

impl fmt::Debug for Past {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}/{}", self.val, self.at)
    }
}

/// A row partition: its committed state, committed at stamp `at` by
/// `by` (0 and [`INIT`] for the initial load and a fresh partition), the
/// one committed state it replaced (`prev`; None: nothing before stamp
/// 0), and at most one intent.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Part {
    pub ver: u8,
    pub committed: Val,
    pub at: u8,
    pub by: Who,
    pub prev: Option<Past>,
    pub intent: Option<Intent>,
}

impl Part {
    /// A partition whose committed state is `committed` since stamp 0.
    fn fresh(committed: Val) -> Part {
        Part {
            ver: 1,
            committed,
            at: 0,
            by: INIT,
            prev: None,
            intent: None,
        }
    }

    fn current(&self) -> Past {
        Past {
            val: self.committed,
            at: self.at,
            by: self.by,
        }
    }
}

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{} {:?}", self.ver, self.current())?;
        if let Some(p) = self.prev {
            write!(f, " (was {p:?})")?;
        }
        if let Some(i) = self.intent {
            write!(f, " +{i:?}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Claim {
    pub owner: u8,
    pub txn: Who,
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}/{}", self.owner, who_name(self.txn))
    }
}

/// A statement of a transaction's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `INSERT (row, key)`: 23505 if the row is live.
    Insert { row: u8, key: u8 },
    /// `UPDATE SET u = key WHERE pk = row` (0 rows if not live).
    Update { row: u8, key: u8 },
    /// `DELETE WHERE pk = row` (0 rows if not live).
    Delete { row: u8 },
    /// `SELECT WHERE pk = row`: the transaction's own read.
    Read { row: u8 },
}

impl Stmt {
    fn row(&self) -> usize {
        match *self {
            Stmt::Insert { row, .. }
            | Stmt::Update { row, .. }
            | Stmt::Delete { row }
            | Stmt::Read { row } => row as usize,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub stmts: Vec<Stmt>,
    /// SAVEPOINT taken before statement i.
    pub savepoint: Option<u8>,
}

/// A write under way: what `write_intent` holds between its steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pending {
    row: u8,
    /// The version the CAS expects; None: `INSERT IF NOT EXISTS`.
    expect: Option<u8>,
    /// The committed state the new record keeps (a decided intent of
    /// another transaction folded in).
    base: Val,
    /// This transaction's intent on the row before, if any.
    prior: Option<Intent>,
    new: Val,
    /// The unique value this write claims (a value the row did not hold).
    key: Option<u8>,
}

/// One entry of the transaction's log (`Logged`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Logged {
    row: u8,
    prior: Option<Intent>,
    base: Val,
    ver: u8,
    val: Val,
    claimed: Option<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UndoRow {
    row: u8,
    expect: u8,
    base: Val,
    prior: Option<Intent>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UndoClaim {
    key: u8,
    /// The kept row that needs the value, if one does.
    needed: Option<u8>,
    deleted: bool,
    /// Not a claim of an undone write, but one a kept row needs
    /// ([`Undo::ClaimKept`]): left alone if it already names that row.
    check: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UndoWork {
    rows: Vec<UndoRow>,
    claims: Vec<UndoClaim>,
    /// Started by a failed statement (the block is then failed), else by
    /// ROLLBACK TO.
    failed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Between statements (at the next statement, or at the end).
    Idle,
    /// Reading the row again (a restart).
    Read,
    /// Claiming `p.key`.
    Claim(Pending),
    /// Reading the record of the unbacked claim found.
    Record(Pending, Claim),
    /// `DELETE claim IF txn = X`, then claim again.
    DelStale(Pending, Who),
    /// Claims held: the CAS of the intent.
    Cas(Pending),
    /// The CAS did not apply: release the claim, then read again.
    Release(Pending),
    Undo(UndoWork),
}

/// Errors a statement answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// 23505.
    Duplicate,
    /// 0A000: a value freed by the transaction given to another row.
    Reused,
    /// 53000: the store did not answer (a claim's outcome unknown).
    Store,
    /// 40003: the intent write's outcome unknown.
    Unknown,
    /// 40P01.
    Deadlock,
    /// 55P03.
    LockTimeout,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    Committed,
    /// ROLLBACK, a failed statement without savepoint, 40001, a doomed
    /// COMMIT: nothing of it visible, ever.
    Aborted,
    /// 40003.
    Unknown,
    /// COMMIT of a block that logged no write: nothing to decide.
    Nothing,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Txn {
    /// The next statement.
    pc: u8,
    phase: Phase,
    log: Vec<Logged>,
    /// The savepoint's mark in the log, once taken.
    mark: Option<u8>,
    rolled_to: bool,
    /// The block failed (25P02 until ROLLBACK [TO]).
    failed: bool,
    doomed: bool,
    crashed: bool,
    /// Past its lease without a heartbeat: others may abort it.
    silent: bool,
    answer: Option<Answer>,
    /// Decided by its proxy, which then finishes it.
    finish: bool,
    /// Ghosts: the last error, a ROLLBACK TO that undid a write, a read of
    /// its own row that missed its write, a read of another's undecided
    /// write.
    error: Option<Code>,
    undid: bool,
    ryw_broken: bool,
    dirty: bool,
}

impl Txn {
    fn new() -> Txn {
        Txn {
            pc: 0,
            phase: Phase::Idle,
            log: Vec::new(),
            mark: None,
            rolled_to: false,
            failed: false,
            doomed: false,
            crashed: false,
            silent: false,
            answer: None,
            finish: false,
            error: None,
            undid: false,
            ryw_broken: false,
            dirty: false,
        }
    }
}

/// The outside reader's statement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reader {
    /// Its snapshot S, once it started.
    snapshot: Option<u8>,
    /// What it showed, row by row.
    seen: Vec<Val>,
    /// The decisions it remembers: transaction t visible or not.
    memo: [Option<bool>; TXNS],
    /// It ended in 40001: a row's history did not reach back to S (what
    /// it saw is discarded).
    too_old: bool,
    /// Ghosts: the transactions whose COMMIT was answered ok before it
    /// started, those committed when it read its last row; it showed a
    /// row's previous state; its first row was too old and S moved on.
    ok_before: [bool; TXNS],
    committed_at_end: [bool; TXNS],
    from_prev: bool,
    moved: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct State {
    rows: [Option<Part>; ROWS],
    claims: [Option<Claim>; KEYS],
    records: [Option<Status>; TXNS],
    /// The one process clock: the last stamp taken.
    clock: u8,
    /// The commit stamp each COMMIT took before writing its record; a
    /// committed record carries it.
    stamps: [Option<u8>; TXNS],
    txns: [Txn; TXNS],
    reader: Reader,
    /// The rows as the committed transactions, applied in commit order,
    /// leave them.
    ghost: [Val; ROWS],
    /// Ghost: a claim of another transaction was taken over.
    took_over: bool,
    faults: u8,
    crashes: u8,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.store_line())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    None,
    /// The outcome is unknown and the operation landed.
    Landed,
    /// The outcome is unknown (or it failed) and it did not land.
    Lost,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Transaction t's next store operation.
    Step {
        t: u8,
        fault: Fault,
    },
    /// COMMIT takes its commit stamp (before its record write).
    Stamp {
        t: u8,
    },
    /// COMMIT's record write.
    Commit {
        t: u8,
        fault: Fault,
    },
    Rollback {
        t: u8,
        fault: Fault,
    },
    RollbackTo {
        t: u8,
    },
    /// A waiter gives way to an older holder: 40P01.
    GiveWay {
        t: u8,
    },
    /// A wait ends in 55P03 (costs a fault).
    Timeout {
        t: u8,
    },
    Crash {
        t: u8,
    },
    Stall {
        t: u8,
    },
    /// A resolver aborts a gone transaction.
    AbortOther {
        u: u8,
    },
    /// Whoever meets a decided intent folds or drops it.
    Clean {
        r: u8,
    },
    /// The deciding proxy's `finish`.
    Finish {
        t: u8,
    },
    /// The outside reader's statement takes its snapshot.
    ReaderStart,
    /// The outside reader's next row.
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
    /// A write does not claim its new unique value.
    NoClaim,
    /// An unbacked claim of a transaction still undecided is taken over.
    TakeoverUndecided,
    /// A resolver reads the owner row's undecided intent as if committed
    /// (instead of "in flight: wait").
    UndecidedIntentBacks,
    /// ROLLBACK TO releases the undone writes' claims without claiming
    /// again those a kept write needs.
    ReleaseKept,
    /// An undo whose outcome is unknown is taken as done (not dooming).
    UnknownUndoIgnored,
    /// A transaction's own read ignores its intents.
    OwnReadIgnoresIntent,
    /// A transaction may give a value it freed to another row before it
    /// commits (no 0A000).
    NoReuseRefusal,
    /// An intent write whose outcome is unknown does not doom.
    UnknownWriteNotDoomed,
    /// A COMMIT whose outcome is unknown answers as if it failed.
    UnknownCommitAsAborted,
    /// A fold keeps no previous state, and a reader shows the committed
    /// state when nothing it may show is left.
    NoPrev,
    /// A reader shows a committed state by its stamp alone, without the
    /// decision it remembers about the transaction that committed it:
    /// T takes its stamp, the reader its snapshot, meets T's intent on
    /// row 0 undecided (invisible), then T's record lands and its row 1
    /// intent is folded, stamped before S, before the reader reads row 1.
    IgnoreBy,
    /// A reader ignores stamps (as before snapshots): an intent by its
    /// record, the committed state always.
    NoSnapshot,
}

/// How a claim of a transaction found unbacked is taken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// `resolve::transaction_claim` as built: decided (the record read
    /// after the owner row) means stale.
    AsBuilt,
    /// A committed decision counts only if the owner row, read again once
    /// it is known, still does not back the claim (as `settle` does).
    Reread,
}

/// Which claims an undo (ROLLBACK TO, a failed statement) puts back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undo {
    /// `txn_write::release_unneeded` as built: only the claims the undone
    /// (logged) writes made. A claim of a kept row that a statement took
    /// back (its own, unbacked: a later write had moved the row to another
    /// value) and that then failed is in no log entry, and stays gone.
    AsBuilt,
    /// Besides, every value a kept row needs is claimed for it again unless
    /// its claim already names that row.
    ClaimKept,
}

#[derive(Clone)]
pub struct TxnModel {
    pub mutant: Mutant,
    pub resolver: Resolver,
    pub undo: Undo,
    pub max_faults: u8,
    pub max_crashes: u8,
    /// Whether a wait may end in 55P03 (one fault).
    pub timeouts: bool,
    /// The initial rows: live with this unique value, or absent.
    pub init: [Option<u8>; ROWS],
    pub programs: [Program; TXNS],
    /// Whether the outside reader runs.
    pub reader: bool,
}

pub const P_U: &str = "U: no two visible live rows hold one unique value";
pub const P_C: &str = "C: every visible live row's value has a claim naming it";
pub const P_ATOMIC: &str = "atomic: the rows show exactly the committed transactions' writes";
pub const P_DIRTY: &str = "no dirty read";
pub const P_RYW: &str = "read-your-writes";
pub const P_TRUTH: &str = "truthful answers";
pub const P_STUCK: &str = "not stuck";
pub const S_COMMITTED: &str = "reachable: a transaction commits";
pub const S_ABORTED_BY_OTHER: &str = "reachable: a resolver aborts a stalled transaction";
pub const S_GIVE_WAY: &str = "reachable: a writer gives way (40P01)";
pub const S_UNKNOWN: &str = "reachable: a COMMIT answers 40003";
pub const P_SNAPSHOT: &str = "snapshot: a reader sees a closed set of committed transactions";
pub const S_TOO_OLD: &str = "reachable: a reader's row is too old for its snapshot (40001)";
pub const S_PREV: &str = "reachable: a reader shows a row's previous committed state";
pub const S_MOVED: &str = "reachable: a reader's first row is too old and its snapshot moves";
pub const S_DUPLICATE: &str = "reachable: a statement answers 23505";
pub const S_REUSED: &str = "reachable: a freed value given to another row is refused (0A000)";
pub const S_TAKEOVER: &str = "reachable: a claim of a decided transaction is taken over";
pub const S_ROLLBACK_TO: &str = "reachable: ROLLBACK TO undoes a write, then COMMIT";
pub const S_BOTH_COMMIT: &str = "reachable: both transactions commit";

pub const SAFETY: [&str; 8] = [
    P_U, P_C, P_ATOMIC, P_DIRTY, P_RYW, P_TRUTH, P_STUCK, P_SNAPSHOT,
];

/// How reading a row ended for a writer.
enum Seen {
    /// An undecided intent of another transaction.
    Busy(usize),
    Ready {
        /// The row as this transaction sees it; None when absent.
        view: Option<Val>,
        prior: Option<Intent>,
        expect: Option<u8>,
        base: Val,
    },
}

/// What an attempt to claim a value found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claimed {
    /// Absent: the insert lands (the only case a fault applies to).
    Insert,
    /// Already ours for this row.
    Ours,
    /// Backed by another row: 23505.
    Taken,
    /// Backed by the row being written: it changed, read it again.
    ThisRow,
    /// 0A000.
    Reused,
    /// In flight: wait on transaction `dep`; the age order uses `age`.
    InFlight { dep: usize, age: Who },
    /// Unbacked, made by this transaction: take it back.
    StaleOwn,
    /// Unbacked, made by another transaction: read its record.
    Unbacked(Claim),
}

impl State {
    /// The stamp t's record carries, if it says committed.
    fn commit_stamp(&self, t: usize) -> Option<u8> {
        if self.records[t] != Some(Status::Committed) {
            return None;
        }
        debug_assert!(self.stamps[t].is_some(), "a COMMIT takes its stamp first");
        self.stamps[t]
    }

    fn status(&self, w: Who) -> Option<Status> {
        match w {
            INIT => Some(Status::Committed),
            t => self.records[t as usize - 1],
        }
    }

    /// A row as everybody sees it once records are consulted.
    fn visible(&self, r: usize) -> Val {
        match self.rows[r] {
            None => Val::ABSENT,
            Some(p) => match p.intent {
                Some(i) if self.records[i.txn as usize] == Some(Status::Committed) => i.val,
                _ => p.committed,
            },
        }
    }

    fn running(&self, t: usize) -> bool {
        let x = &self.txns[t];
        x.answer.is_none() && !x.crashed
    }

    /// May a resolver abort it: its proxy is gone or silent, or it closed
    /// the transaction without a record.
    fn gone(&self, t: usize) -> bool {
        let x = &self.txns[t];
        x.crashed || x.silent || x.answer.is_some()
    }

    pub fn store_line(&self) -> String {
        let mut out = String::new();
        for (r, row) in self.rows.iter().enumerate() {
            match row {
                Some(p) => out += &format!("r{r}=[{p:?}] "),
                None => out += &format!("r{r}=- "),
            }
        }
        out += "|";
        for (k, c) in self.claims.iter().enumerate() {
            if let Some(c) = c {
                out += &format!(" {}->{c:?}", key_name(k as u8));
            }
        }
        out += " |";
        for (t, rec) in self.records.iter().enumerate() {
            if let Some(rec) = rec {
                out += &format!(" T{t}:{rec:?}");
            }
        }
        for (t, at) in self.stamps.iter().enumerate() {
            if let Some(at) = at {
                out += &format!(" T{t}@{at}");
            }
        }
        let rd = &self.reader;
        if let Some(snap) = rd.snapshot {
            out += &format!(" | S={snap} seen {:?}", rd.seen);
            if rd.too_old {
                out += " 40001";
            }
        }
        out
    }
}

impl TxnModel {
    fn base(mutant: Mutant) -> TxnModel {
        TxnModel {
            mutant,
            resolver: Resolver::Reread,
            undo: Undo::ClaimKept,
            max_faults: 1,
            max_crashes: 1,
            timeouts: false,
            init: [None, None],
            programs: [
                Program {
                    stmts: Vec::new(),
                    savepoint: None,
                },
                Program {
                    stmts: Vec::new(),
                    savepoint: None,
                },
            ],
            reader: false,
        }
    }

    /// Two transfers: each transaction rewrites both rows (keeping their
    /// unique values), in opposite orders; an outside reader. The first
    /// transaction takes a savepoint before its second write.
    pub fn transfer(mutant: Mutant) -> TxnModel {
        let upd = |row, key| Stmt::Update { row, key };
        TxnModel {
            init: [Some(0), Some(1)],
            programs: [
                Program {
                    stmts: vec![upd(0, 0), upd(1, 1)],
                    savepoint: Some(1),
                },
                Program {
                    stmts: vec![upd(1, 1), upd(0, 0)],
                    savepoint: None,
                },
            ],
            reader: true,
            ..TxnModel::base(mutant)
        }
    }

    /// Both transactions want value A, for different rows, then B: T0
    /// inserts row 0 with A, takes a savepoint and moves the row to B; T1
    /// inserts row 1 with A, then reads it back.
    pub fn same_value(mutant: Mutant) -> TxnModel {
        TxnModel {
            programs: [
                Program {
                    stmts: vec![
                        Stmt::Insert { row: 0, key: 0 },
                        Stmt::Update { row: 0, key: 1 },
                    ],
                    savepoint: Some(1),
                },
                Program {
                    stmts: vec![Stmt::Insert { row: 1, key: 0 }, Stmt::Read { row: 1 }],
                    savepoint: None,
                },
            ],
            ..TxnModel::base(mutant)
        }
    }

    /// Row 0 holds A. T0 moves it to B, then (after a savepoint) tries to
    /// give A to row 1 (refused, 0A000) and reads row 0 back; T1 inserts
    /// row 1 with A (waiting for T0), then deletes it.
    pub fn value_moves(mutant: Mutant) -> TxnModel {
        TxnModel {
            init: [Some(0), None],
            programs: [
                Program {
                    stmts: vec![
                        Stmt::Update { row: 0, key: 1 },
                        Stmt::Insert { row: 1, key: 0 },
                        Stmt::Read { row: 0 },
                    ],
                    savepoint: Some(1),
                },
                Program {
                    stmts: vec![Stmt::Insert { row: 1, key: 0 }, Stmt::Delete { row: 1 }],
                    savepoint: None,
                },
            ],
            ..TxnModel::base(mutant)
        }
    }

    /// Both transactions take a savepoint and want both values, crossed:
    /// T0 inserts row 0 with A and moves it to B, T1 inserts row 1 with B
    /// and moves it to A; each reads its row back. (No outside reader: see
    /// [`TxnModel::with_reader`].)
    pub fn crossed(mutant: Mutant) -> TxnModel {
        let program = |row, from, to| Program {
            stmts: vec![
                Stmt::Insert { row, key: from },
                Stmt::Update { row, key: to },
                Stmt::Read { row },
            ],
            savepoint: Some(1),
        };
        TxnModel {
            programs: [program(0, 0, 1), program(1, 1, 0)],
            ..TxnModel::base(mutant)
        }
    }

    /// The same with the outside reader.
    pub fn with_reader(self) -> TxnModel {
        TxnModel {
            reader: true,
            ..self
        }
    }

    /// Three statements, so that ROLLBACK TO must claim a value again: T0
    /// inserts row 0 with A, then after a savepoint moves it to B and gives
    /// A to row 1 (its own claim, unbacked, taken back); ROLLBACK TO undoes
    /// both, and row 0 needs A again. T1 inserts row 1 with B.
    pub fn moves_back(mutant: Mutant) -> TxnModel {
        TxnModel {
            programs: [
                Program {
                    stmts: vec![
                        Stmt::Insert { row: 0, key: 0 },
                        Stmt::Update { row: 0, key: 1 },
                        Stmt::Insert { row: 1, key: 0 },
                    ],
                    savepoint: Some(1),
                },
                Program {
                    stmts: vec![Stmt::Insert { row: 1, key: 1 }],
                    savepoint: None,
                },
            ],
            ..TxnModel::base(mutant)
        }
    }

    fn is(&self, m: Mutant) -> bool {
        self.mutant == m
    }

    /// Fold a committed intent (value `val` of transaction `by`, whose
    /// record carries stamp `at`) into p's committed state; the state it
    /// replaces becomes the previous one.
    fn fold(&self, p: &mut Part, val: Val, by: Who, at: u8) {
        p.prev = if self.is(Mutant::NoPrev) {
            None
        } else {
            Some(p.current())
        };
        p.committed = val;
        p.at = at;
        p.by = by;
    }

    /// Whether the reader may show a committed state: not committed after
    /// its snapshot, nor by a transaction it decided invisible. Meeting
    /// the transaction first here decides it by the stamp.
    fn may_show(&self, rd: &mut Reader, past: Past) -> bool {
        let early = past.at <= rd.snapshot.expect("the reader started");
        if past.by == INIT || self.is(Mutant::IgnoreBy) {
            return early;
        }
        *rd.memo[past.by as usize - 1].get_or_insert(early) && early
    }

    /// The outside reader's read of row r at its snapshot S, newest first:
    /// the intent, the committed state, the previous one; None when none
    /// may be shown (too old).
    fn snapshot_read(&self, n: &mut State, r: usize) -> Option<Val> {
        let Some(p) = n.rows[r] else {
            return Some(Val::ABSENT);
        };
        if let Some(i) = p.intent {
            let u = i.txn as usize;
            let visible = match n.reader.memo[u] {
                Some(c) => c,
                None => {
                    let snap = n.reader.snapshot.expect("the reader started");
                    let c = match self.mutant {
                        Mutant::DirtyReader => n.records[u] != Some(Status::Aborted),
                        Mutant::NoSnapshot => n.records[u] == Some(Status::Committed),
                        _ => n.commit_stamp(u).is_some_and(|at| at <= snap),
                    };
                    n.reader.memo[u] = Some(c);
                    c
                }
            };
            if visible {
                return Some(i.val);
            }
        }
        if self.is(Mutant::NoSnapshot) || self.may_show(&mut n.reader, p.current()) {
            return Some(p.committed);
        }
        if let Some(prev) = p.prev {
            if self.may_show(&mut n.reader, prev) {
                n.reader.from_prev = true;
                return Some(prev.val);
            }
        }
        if self.is(Mutant::NoPrev) {
            return Some(p.committed);
        }
        None
    }

    /// The rows as the initial load, then the kept writes of the
    /// transactions in `set` in commit-stamp order, leave them.
    fn applied(&self, s: &State, set: [bool; TXNS]) -> [Val; ROWS] {
        let mut rows = self
            .init
            .map(|k| k.map_or(Val::ABSENT, |k| Val::live(k, INIT, INIT)));
        let mut order: Vec<usize> = (0..TXNS).filter(|&t| set[t]).collect();
        order.sort_by_key(|&t| s.stamps[t]);
        for t in order {
            let log = &s.txns[t].log;
            for (_, last) in per_row(log) {
                rows[log[last].row as usize] = log[last].val;
            }
        }
        rows
    }

    /// P_SNAPSHOT: the two rows the reader showed are what the initial
    /// load and a set X of transactions committed by the end of its read
    /// leave, applied in stamp order; X holds every transaction that
    /// committed (stamp) before one in X and wrote a row it wrote, and
    /// every transaction whose COMMIT was answered ok before the reader
    /// started.
    fn snapshot_ok(&self, s: &State) -> bool {
        let rd = &s.reader;
        if rd.seen.len() < ROWS {
            return true;
        }
        let committed = rd.committed_at_end;
        let rows = |t: usize| -> Vec<u8> {
            let log = &s.txns[t].log;
            per_row(log)
                .iter()
                .map(|&(_, last)| log[last].row)
                .collect()
        };
        let conflict = |t: usize, u: usize| rows(t).iter().any(|r| rows(u).contains(r));
        (0..1u8 << TXNS).any(|mask| {
            let x: [bool; TXNS] = std::array::from_fn(|t| mask >> t & 1 == 1);
            let within = (0..TXNS).all(|t| !x[t] || committed[t]);
            let fresh = (0..TXNS).all(|t| !rd.ok_before[t] || x[t]);
            let closed = (0..TXNS).all(|t| {
                !x[t]
                    || (0..TXNS).all(|u| {
                        x[u] || !committed[u] || s.stamps[u] > s.stamps[t] || !conflict(t, u)
                    })
            });
            within
                && fresh
                && closed
                && self
                    .applied(s, x)
                    .iter()
                    .zip(&rd.seen)
                    .all(|(a, b)| a.shown() == b.shown())
        })
    }

    fn stmt(&self, s: &State, t: usize) -> Option<Stmt> {
        self.programs[t].stmts.get(s.txns[t].pc as usize).copied()
    }

    /// Settle row r for a writer of t (`intents::settle`, one step).
    fn settle(s: &State, t: usize, r: usize) -> Seen {
        match s.rows[r] {
            None => Seen::Ready {
                view: None,
                prior: None,
                expect: None,
                base: Val::ABSENT,
            },
            Some(p) => {
                let (view, prior, base) = match p.intent {
                    Some(i) if i.txn as usize == t => (i.val, Some(i), p.committed),
                    Some(i) => match s.records[i.txn as usize] {
                        None => return Seen::Busy(i.txn as usize),
                        Some(Status::Committed) => (i.val, None, i.val),
                        Some(Status::Aborted) => (p.committed, None, p.committed),
                    },
                    None => (p.committed, None, p.committed),
                };
                Seen::Ready {
                    view: Some(view),
                    prior,
                    expect: Some(p.ver),
                    base,
                }
            }
        }
    }

    /// Whether t is about to read a row for a write, and which.
    fn reading(&self, s: &State, t: usize) -> Option<usize> {
        let x = &s.txns[t];
        let stmt = self.stmt(s, t)?;
        match (&x.phase, stmt) {
            (Phase::Read, _) => Some(stmt.row()),
            (Phase::Idle, Stmt::Update { .. } | Stmt::Delete { .. }) if !x.failed => {
                Some(stmt.row())
            }
            _ => None,
        }
    }

    /// `resolve`: an existing claim `c` on value k, seen by t writing row r.
    fn resolve(&self, s: &State, t: usize, k: u8, r: u8, c: Claim) -> Claimed {
        let view = match s.rows[c.owner as usize] {
            None => None,
            Some(p) => match p.intent {
                Some(i) if i.txn as usize == t => {
                    if p.committed.holds(k) && !i.val.holds(k) && !self.is(Mutant::NoReuseRefusal) {
                        return Claimed::Reused;
                    }
                    Some(i.val)
                }
                Some(i) => match s.records[i.txn as usize] {
                    None if self.is(Mutant::UndecidedIntentBacks) => Some(i.val),
                    None => {
                        return Claimed::InFlight {
                            dep: i.txn as usize,
                            age: c.txn,
                        }
                    }
                    Some(Status::Committed) => Some(i.val),
                    Some(Status::Aborted) => Some(p.committed),
                },
                None => Some(p.committed),
            },
        };
        if view.is_some_and(|v| v.holds(k)) {
            return if c.owner == r {
                Claimed::ThisRow
            } else {
                Claimed::Taken
            };
        }
        if c.txn == who(t) {
            Claimed::StaleOwn
        } else {
            Claimed::Unbacked(c)
        }
    }

    fn claim_try(&self, s: &State, t: usize, k: u8, r: u8) -> Claimed {
        match s.claims[k as usize] {
            None => Claimed::Insert,
            Some(c) if c.txn == who(t) && c.owner == r => Claimed::Ours,
            Some(c) => self.resolve(s, t, k, r, c),
        }
    }

    /// What t waits on, if it waits: the transaction it depends on, and
    /// the txn `Wait::once` compares ages with.
    fn waits_on(&self, s: &State, t: usize) -> Option<(usize, Who)> {
        if !s.running(t) {
            return None;
        }
        if let Some(r) = self.reading(s, t) {
            return match Self::settle(s, t, r) {
                Seen::Busy(u) => Some((u, who(u))),
                Seen::Ready { .. } => None,
            };
        }
        match &s.txns[t].phase {
            Phase::Claim(p) => match self.claim_try(s, t, p.key?, p.row) {
                Claimed::InFlight { dep, age } => Some((dep, age)),
                Claimed::Unbacked(c) if s.status(c.txn).is_none() => {
                    Some((c.txn as usize - 1, c.txn))
                }
                _ => None,
            },
            Phase::Record(_, c) if s.status(c.txn).is_none() => Some((c.txn as usize - 1, c.txn)),
            _ => None,
        }
    }

    /// The faults a step of t may take, or None if it cannot step (waits,
    /// or has nothing to do).
    fn step_faults(&self, s: &State, t: usize) -> Option<&'static [Fault]> {
        const NONE: &[Fault] = &[Fault::None];
        const UNKNOWN: &[Fault] = &[Fault::None, Fault::Landed, Fault::Lost];
        const LOSE: &[Fault] = &[Fault::None, Fault::Lost];
        let x = &s.txns[t];
        if let Some(r) = self.reading(s, t) {
            return match Self::settle(s, t, r) {
                Seen::Busy(_) => None,
                Seen::Ready { .. } => Some(NONE),
            };
        }
        match &x.phase {
            Phase::Idle => match self.stmt(s, t) {
                Some(Stmt::Read { .. } | Stmt::Insert { .. }) if !x.failed => Some(NONE),
                _ => None,
            },
            Phase::Read => None, // handled by `reading`
            Phase::Claim(p) => match self.claim_try(s, t, p.key.unwrap(), p.row) {
                Claimed::InFlight { .. } => None,
                Claimed::Insert => Some(UNKNOWN),
                _ => Some(NONE),
            },
            Phase::Record(..) | Phase::DelStale(..) => Some(NONE),
            Phase::Cas(_) => Some(UNKNOWN),
            Phase::Release(_) => Some(LOSE),
            Phase::Undo(w) => match (w.rows.first(), w.claims.first()) {
                (Some(_), _) => Some(UNKNOWN),
                (None, Some(c))
                    if c.check
                        && !c.deleted
                        && s.claims[c.key as usize]
                            == c.needed.map(|owner| Claim { owner, txn: who(t) }) =>
                {
                    Some(NONE)
                }
                (None, Some(c)) if !c.deleted => Some(LOSE),
                (None, Some(_)) => Some(UNKNOWN),
                (None, None) => Some(NONE),
            },
        }
    }

    /// The keys the rows of `log` need as they stand after it: per value,
    /// the row, and the txn its `__claims` names.
    fn needed(log: &[Logged]) -> [Option<(u8, Who)>; KEYS] {
        let mut needed = [None; KEYS];
        for (_, last) in per_row(log) {
            let v = log[last].val;
            if v.live {
                needed[v.key as usize] = Some((log[last].row, v.ctxn));
            }
        }
        needed
    }

    /// `undo_after(mark)`: cut the log, and the work of taking back its tail.
    fn undo_after(&self, n: &mut State, t: usize, failed: bool) -> Phase {
        let x = &mut n.txns[t];
        let mark = x.mark.expect("a savepoint") as usize;
        let undone = x.log.split_off(mark.min(x.log.len()));
        if undone.is_empty() {
            x.failed = failed;
            return Phase::Idle;
        }
        let needed = Self::needed(&x.log);
        let rows = per_row(&undone)
            .into_iter()
            .map(|(first, last)| UndoRow {
                row: undone[last].row,
                expect: undone[last].ver,
                base: undone[last].base,
                prior: undone[first].prior,
            })
            .collect();
        let mut claims: Vec<UndoClaim> = Vec::new();
        for e in &undone {
            if let Some(k) = e.claimed {
                if claims.iter().all(|c| c.key != k) {
                    claims.push(UndoClaim {
                        key: k,
                        needed: if self.is(Mutant::ReleaseKept) {
                            None
                        } else {
                            needed[k as usize].map(|(row, _)| row)
                        },
                        deleted: false,
                        check: false,
                    });
                }
            }
        }
        if self.undo == Undo::ClaimKept && !self.is(Mutant::ReleaseKept) {
            // Only the transaction's own claims can have been taken back.
            for (k, needed) in needed.into_iter().enumerate() {
                let Some((row, ctxn)) = needed else { continue };
                if ctxn == who(t) && claims.iter().all(|c| c.key as usize != k) {
                    claims.push(UndoClaim {
                        key: k as u8,
                        needed: Some(row),
                        deleted: false,
                        check: true,
                    });
                }
            }
        }
        Phase::Undo(UndoWork {
            rows,
            claims,
            failed,
        })
    }

    /// `statement_failed`: the block fails; what it did since the latest
    /// savepoint is undone, or, with none, the transaction is aborted
    /// (the ROLLBACK that follows writes the record).
    fn stmt_failed(&self, n: &mut State, t: usize, code: Code) {
        let x = &mut n.txns[t];
        x.error = Some(code);
        if code == Code::Unknown && !self.is(Mutant::UnknownWriteNotDoomed) {
            x.doomed = true;
        }
        x.phase = Phase::Idle;
        x.failed = true;
        // With no savepoint only ROLLBACK remains (its record write is
        // the abort `statement_failed` does).
        if x.mark.is_some() {
            n.txns[t].phase = self.undo_after(n, t, true);
        }
    }

    /// A statement ended well; a SAVEPOINT before the next is taken.
    fn stmt_done(&self, n: &mut State, t: usize) {
        let x = &mut n.txns[t];
        x.pc += 1;
        x.phase = Phase::Idle;
        if self.programs[t].savepoint == Some(x.pc) {
            x.mark = Some(x.log.len() as u8);
        }
    }

    /// Start statement pc, or read the row again after a restart.
    fn begin(&self, n: &mut State, t: usize) {
        let stmt = self.stmt(n, t).expect("a statement");
        let x = &mut n.txns[t];
        let me = who(t);
        let restart = x.phase == Phase::Read;
        match stmt {
            Stmt::Read { row } => return self.own_read(n, t, row as usize),
            Stmt::Insert { row, key } if !restart => {
                // `put_insert`: assume the row absent, claim, then insert
                // IF NOT EXISTS.
                let p = Pending {
                    row,
                    expect: None,
                    base: Val::ABSENT,
                    prior: None,
                    new: Val::live(key, me, me),
                    key: Some(key),
                };
                x.phase = self.claim_or_cas(p);
                return;
            }
            _ => {}
        }
        let r = stmt.row();
        let Seen::Ready {
            view,
            prior,
            expect,
            base,
        } = Self::settle(n, t, r)
        else {
            unreachable!("a step waits while the row is busy")
        };
        let live_view = view.filter(|v| v.live);
        let (new, key) = match (stmt, live_view) {
            (Stmt::Insert { .. }, Some(_)) => return self.stmt_failed(n, t, Code::Duplicate),
            (Stmt::Insert { key, .. }, None) => (Val::live(key, me, me), Some(key)),
            (Stmt::Update { key, .. }, Some(lv)) if lv.key == key => {
                (Val::live(key, me, lv.ctxn), None)
            }
            (Stmt::Update { key, .. }, Some(_)) => (Val::live(key, me, me), Some(key)),
            (Stmt::Delete { .. }, Some(_)) => (Val::dead(me), None),
            // 0 rows.
            (_, None) => return self.stmt_done(n, t),
            (Stmt::Read { .. }, _) => unreachable!(),
        };
        let p = Pending {
            row: r as u8,
            expect,
            base,
            prior,
            new,
            key,
        };
        n.txns[t].phase = self.claim_or_cas(p);
    }

    fn claim_or_cas(&self, p: Pending) -> Phase {
        if p.key.is_some() && !self.is(Mutant::NoClaim) {
            Phase::Claim(p)
        } else {
            Phase::Cas(p)
        }
    }

    /// A read statement of t (`ReadView` with its own id).
    fn own_read(&self, n: &mut State, t: usize, r: usize) {
        let own = !self.is(Mutant::OwnReadIgnoresIntent);
        let seen = match n.rows[r] {
            None => Val::ABSENT,
            Some(p) => match p.intent {
                Some(i) if own && i.txn as usize == t => i.val,
                Some(i) if n.records[i.txn as usize] == Some(Status::Committed) => i.val,
                _ => p.committed,
            },
        };
        let x = &n.txns[t];
        let mine = x.log.iter().rev().find(|e| e.row as usize == r);
        let ryw_broken = mine.is_some_and(|e| {
            e.val.live != seen.live || (seen.live && e.val.shown() != seen.shown())
        }) && !x.doomed
            && n.records[t] != Some(Status::Aborted);
        let dirty =
            seen.live && seen.tag != who(t) && n.status(seen.tag) != Some(Status::Committed);
        let x = &mut n.txns[t];
        x.ryw_broken |= ryw_broken;
        x.dirty |= dirty;
        self.stmt_done(n, t);
    }

    /// The commit record of t landed: the ghost applies its writes.
    fn commit_ghost(n: &mut State, t: usize) {
        let log = n.txns[t].log.clone();
        for (_, last) in per_row(&log) {
            n.ghost[log[last].row as usize] = log[last].val;
        }
    }

    /// Decide t aborted (ROLLBACK, a doomed COMMIT): one LWT if it wrote.
    fn abort(n: &mut State, t: usize, fault: Fault) {
        let x = &mut n.txns[t];
        x.answer = Some(Answer::Aborted);
        x.phase = Phase::Idle;
        if x.log.is_empty() {
            return;
        }
        if fault != Fault::Lost {
            n.records[t].get_or_insert(Status::Aborted);
        }
        // Decided and known: the proxy finishes it (else it is left for
        // whoever meets it).
        n.txns[t].finish = fault == Fault::None;
    }

    /// `finish`: fold or drop each row's intent if still its last write,
    /// remove the claims of values a folded row no longer holds and the
    /// transaction's claims no final row needs.
    fn finish(&self, n: &mut State, t: usize) {
        let stamp = n.commit_stamp(t);
        let committed = stamp.is_some();
        let log = n.txns[t].log.clone();
        for (_, last) in per_row(&log) {
            let e = log[last];
            let r = e.row as usize;
            let Some(mut p) = n.rows[r] else { continue };
            if p.ver != e.ver {
                continue;
            }
            // Still its last write: the intent is e.val over e.base.
            debug_assert_eq!(p.committed, e.base);
            if let Some(at) = stamp {
                self.fold(&mut p, e.val, who(t), at);
            }
            let folded = p.committed;
            p.ver += 1;
            p.intent = None;
            n.rows[r] = Some(p);
            if committed && e.base.live && !folded.holds(e.base.key) {
                let k = e.base.key as usize;
                if n.claims[k].is_some_and(|c| c.txn == e.base.ctxn) {
                    n.claims[k] = None;
                }
            }
        }
        let needed = if committed {
            Self::needed(&log)
        } else {
            [None; KEYS]
        };
        for e in &log {
            if let Some(k) = e.claimed {
                let k = k as usize;
                if needed[k].is_none() && n.claims[k].is_some_and(|c| c.txn == who(t)) {
                    n.claims[k] = None;
                }
            }
        }
        n.txns[t].finish = false;
    }

    /// One store operation of t.
    fn step(&self, n: &mut State, t: usize, fault: Fault) {
        if fault != Fault::None {
            n.faults += 1;
        }
        let me = who(t);
        if self.reading(n, t).is_some() {
            return self.begin(n, t);
        }
        let phase = n.txns[t].phase.clone();
        match phase {
            Phase::Idle => self.begin(n, t),
            Phase::Read => unreachable!("handled by `reading`"),
            Phase::Claim(p) => {
                let k = p.key.unwrap();
                match self.claim_try(n, t, k, p.row) {
                    Claimed::Insert => {
                        if fault != Fault::Lost {
                            n.claims[k as usize] = Some(Claim {
                                owner: p.row,
                                txn: me,
                            });
                        }
                        if fault == Fault::None {
                            n.txns[t].phase = Phase::Cas(p);
                        } else {
                            self.stmt_failed(n, t, Code::Store);
                        }
                    }
                    Claimed::Ours => n.txns[t].phase = Phase::Cas(p),
                    Claimed::Taken => self.stmt_failed(n, t, Code::Duplicate),
                    Claimed::Reused => self.stmt_failed(n, t, Code::Reused),
                    Claimed::ThisRow => n.txns[t].phase = Phase::Read,
                    Claimed::InFlight { .. } => unreachable!("a waiting claim does not step"),
                    Claimed::StaleOwn => n.txns[t].phase = Phase::DelStale(p, me),
                    Claimed::Unbacked(c) => n.txns[t].phase = Phase::Record(p, c),
                }
            }
            Phase::Record(p, c) => {
                let k = p.key.unwrap();
                n.txns[t].phase = match n.status(c.txn) {
                    None if self.is(Mutant::TakeoverUndecided) => Phase::DelStale(p, c.txn),
                    // In flight: wait, then claim again.
                    None => Phase::Claim(p),
                    Some(Status::Aborted) => Phase::DelStale(p, c.txn),
                    Some(Status::Committed) if self.resolver == Resolver::AsBuilt => {
                        Phase::DelStale(p, c.txn)
                    }
                    Some(Status::Committed) => match self.resolve(n, t, k, p.row, c) {
                        Claimed::Taken => return self.stmt_failed(n, t, Code::Duplicate),
                        Claimed::Reused => return self.stmt_failed(n, t, Code::Reused),
                        Claimed::ThisRow => Phase::Read,
                        Claimed::Unbacked(_) => Phase::DelStale(p, c.txn),
                        _ => Phase::Claim(p),
                    },
                };
            }
            Phase::DelStale(p, x) => {
                let k = p.key.unwrap() as usize;
                if n.claims[k].is_some_and(|c| c.txn == x) {
                    n.claims[k] = None;
                    if x != me {
                        n.took_over = true;
                    }
                }
                n.txns[t].phase = Phase::Claim(p);
            }
            Phase::Cas(p) => {
                let r = p.row as usize;
                let applies = match (p.expect, n.rows[r]) {
                    (None, None) => true,
                    (Some(v), Some(cur)) => cur.ver == v,
                    _ => false,
                };
                let ver = n.rows[r].map_or(1, |cur| cur.ver + 1);
                let landed = applies && fault != Fault::Lost;
                if landed {
                    // The row as settled (the version did not move): a
                    // decided intent of another transaction is folded or
                    // dropped in the same write, as the settle found it
                    // (only BlindCommit turns an abort into a commit in
                    // between).
                    let mut part = n.rows[r].unwrap_or(Part::fresh(Val::ABSENT));
                    if let Some(i) = part.intent.filter(|i| i.txn as usize != t) {
                        if let Some(at) = n.commit_stamp(i.txn as usize) {
                            let mut folded = part;
                            self.fold(&mut folded, i.val, who(i.txn as usize), at);
                            if folded.committed == p.base {
                                part = folded;
                            }
                        }
                    }
                    debug_assert!(part.committed == p.base || self.is(Mutant::BlindCommit));
                    part.ver = ver;
                    part.intent = Some(Intent {
                        txn: t as u8,
                        val: p.new,
                    });
                    n.rows[r] = Some(part);
                }
                if fault != Fault::None {
                    // 40003: not logged, not released; dooms.
                    return self.stmt_failed(n, t, Code::Unknown);
                }
                if landed {
                    n.txns[t].log.push(Logged {
                        row: p.row,
                        prior: p.prior,
                        base: p.base,
                        ver,
                        val: p.new,
                        claimed: p.key.filter(|_| !self.is(Mutant::NoClaim)),
                    });
                    self.stmt_done(n, t);
                } else if p.key.is_some() && !self.is(Mutant::NoClaim) {
                    n.txns[t].phase = Phase::Release(p);
                } else {
                    n.txns[t].phase = Phase::Read;
                }
            }
            Phase::Release(p) => {
                let k = p.key.unwrap() as usize;
                if fault == Fault::None && n.claims[k].is_some_and(|c| c.txn == me) {
                    n.claims[k] = None;
                }
                n.txns[t].phase = Phase::Read;
            }
            Phase::Undo(mut w) => {
                let mut failure = false;
                if let Some(u) = w.rows.first().copied() {
                    w.rows.remove(0);
                    let r = u.row as usize;
                    if let Some(cur) = n.rows[r] {
                        if cur.ver == u.expect && fault != Fault::Lost {
                            // Unchanged since the write undone: the same
                            // committed state (and history) under it.
                            debug_assert_eq!(cur.committed, u.base);
                            n.rows[r] = Some(Part {
                                ver: cur.ver + 1,
                                intent: u.prior,
                                ..cur
                            });
                        }
                    }
                    // Not applied and certain: moved on, only a resolver
                    // that aborted this transaction writes over its intents.
                    failure = fault != Fault::None;
                } else if let Some(c) = w.claims.first().copied() {
                    let k = c.key as usize;
                    let ours = c.needed.map(|owner| Claim { owner, txn: me });
                    if c.check && !c.deleted && n.claims[k] == ours {
                        // Already the kept row's (one read).
                        w.claims.remove(0);
                    } else if !c.deleted {
                        if fault == Fault::None && n.claims[k].is_some_and(|cl| cl.txn == me) {
                            n.claims[k] = None;
                        }
                        if c.needed.is_some() {
                            w.claims[0].deleted = true;
                        } else {
                            w.claims.remove(0);
                        }
                    } else {
                        w.claims.remove(0);
                        let owner = c.needed.unwrap();
                        if n.claims[k].is_none() && fault != Fault::Lost {
                            n.claims[k] = Some(Claim { owner, txn: me });
                        }
                        failure =
                            fault != Fault::None || n.claims[k] != Some(Claim { owner, txn: me });
                    }
                }
                if failure && !self.is(Mutant::UnknownUndoIgnored) {
                    n.txns[t].doomed = true;
                }
                let x = &mut n.txns[t];
                if w.rows.is_empty() && w.claims.is_empty() {
                    x.failed = w.failed;
                    x.undid = true;
                    x.phase = Phase::Idle;
                } else {
                    x.phase = Phase::Undo(w);
                }
            }
        }
    }
}

impl State {
    /// Versions only ever meet to be compared with the current one (a CAS
    /// expects a version read before, and versions never repeat): every
    /// partition's version is written 1, every remembered version 1 if it
    /// is still the current one, else 0 (it can never match again).
    fn canon(&mut self) {
        let cur: [Option<u8>; ROWS] = std::array::from_fn(|r| self.rows[r].map(|p| p.ver));
        let fix = |row: u8, v: &mut u8| *v = u8::from(cur[row as usize] == Some(*v));
        for x in self.txns.iter_mut() {
            for e in x.log.iter_mut() {
                fix(e.row, &mut e.ver);
            }
            match &mut x.phase {
                Phase::Claim(p)
                | Phase::Record(p, _)
                | Phase::DelStale(p, _)
                | Phase::Cas(p)
                | Phase::Release(p) => {
                    if let Some(v) = &mut p.expect {
                        fix(p.row, v);
                    }
                }
                Phase::Undo(w) => {
                    for u in w.rows.iter_mut() {
                        fix(u.row, &mut u.expect);
                    }
                }
                Phase::Idle | Phase::Read => {}
            }
        }
        for p in self.rows.iter_mut().flatten() {
            p.ver = 1;
        }
        self.canon_stamps();
    }

    /// Stamps only ever meet to be compared with each other, and a new
    /// one is later than all: each is written as its rank among those
    /// held (0, the initial load's, stays 0), the clock as the last.
    fn canon_stamps(&mut self) {
        let mut held: Vec<u8> = self.stamps.iter().flatten().copied().collect();
        held.extend(self.reader.snapshot);
        for p in self.rows.iter().flatten() {
            held.push(p.at);
            held.extend(p.prev.map(|v| v.at));
        }
        held.retain(|&v| v != 0);
        held.sort_unstable();
        held.dedup();
        let rank = |v: &mut u8| {
            if *v != 0 {
                *v = held.iter().position(|h| h == v).unwrap() as u8 + 1;
            }
        };
        self.stamps.iter_mut().flatten().for_each(rank);
        self.reader.snapshot.iter_mut().for_each(rank);
        for p in self.rows.iter_mut().flatten() {
            rank(&mut p.at);
            p.prev.iter_mut().for_each(|v| rank(&mut v.at));
        }
        self.clock = held.len() as u8;
    }
}

/// Per row of `log`, in order of first write: its first and last entry.
fn per_row(log: &[Logged]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, e) in log.iter().enumerate() {
        match out.iter_mut().find(|(f, _)| log[*f].row == e.row) {
            Some(fl) => fl.1 = i,
            None => out.push((i, i)),
        }
    }
    out
}

impl Model for TxnModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut rows = [None; ROWS];
        let mut claims = [None; KEYS];
        let mut ghost = [Val::ABSENT; ROWS];
        for (r, k) in self.init.iter().enumerate() {
            if let Some(k) = *k {
                let v = Val::live(k, INIT, INIT);
                rows[r] = Some(Part::fresh(v));
                claims[k as usize] = Some(Claim {
                    owner: r as u8,
                    txn: INIT,
                });
                ghost[r] = v;
            }
        }
        let mut txns = [Txn::new(), Txn::new()];
        for (t, x) in txns.iter_mut().enumerate() {
            if self.programs[t].savepoint == Some(0) {
                x.mark = Some(0);
            }
        }
        vec![State {
            rows,
            claims,
            records: [None; TXNS],
            clock: 0,
            stamps: [None; TXNS],
            txns,
            reader: Reader::default(),
            ghost,
            took_over: false,
            faults: 0,
            crashes: 0,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let fault = s.faults < self.max_faults;
        let with_faults =
            |actions: &mut Vec<Action>, f: &dyn Fn(Fault) -> Action, faults: &[Fault]| {
                for &x in faults {
                    if x == Fault::None || fault {
                        actions.push(f(x));
                    }
                }
            };
        const ALL: &[Fault] = &[Fault::None, Fault::Landed, Fault::Lost];
        for t in 0..TXNS {
            if !s.running(t) {
                continue;
            }
            let tt = t as u8;
            let x = &s.txns[t];
            if let Some(faults) = self.step_faults(s, t) {
                with_faults(actions, &|fault| Action::Step { t: tt, fault }, faults);
            }
            let at_end = x.phase == Phase::Idle
                && (x.failed || x.pc as usize >= self.programs[t].stmts.len());
            if at_end {
                // COMMIT takes its stamp, then writes its record; a doomed
                // one or one that wrote nothing writes no commit record.
                let stamped = s.stamps[t].is_some();
                if !x.failed {
                    if !stamped && !x.doomed && !x.log.is_empty() {
                        actions.push(Action::Stamp { t: tt });
                    } else {
                        with_faults(actions, &|fault| Action::Commit { t: tt, fault }, ALL);
                    }
                }
                if !stamped {
                    with_faults(actions, &|fault| Action::Rollback { t: tt, fault }, ALL);
                    if x.mark.is_some() && !x.rolled_to {
                        actions.push(Action::RollbackTo { t: tt });
                    }
                }
            }
            if let Some((_, age)) = self.waits_on(s, t) {
                if age < who(t) && !self.is(Mutant::NoGiveWay) {
                    actions.push(Action::GiveWay { t: tt });
                }
                if self.timeouts && fault {
                    actions.push(Action::Timeout { t: tt });
                }
            }
            if s.crashes < self.max_crashes {
                actions.push(Action::Crash { t: tt });
            }
            if !x.silent {
                actions.push(Action::Stall { t: tt });
            }
        }
        for t in 0..TXNS {
            if s.running(t) {
                continue;
            }
            if s.txns[t].finish && !s.txns[t].crashed {
                actions.push(Action::Finish { t: t as u8 });
            }
        }
        for u in 0..TXNS {
            // Resolvers meet a transaction through its intents and claims.
            let met = s
                .rows
                .iter()
                .flatten()
                .any(|p| p.intent.is_some_and(|i| i.txn as usize == u))
                || s.claims.iter().flatten().any(|c| c.txn == who(u));
            if s.records[u].is_none() && s.gone(u) && met {
                actions.push(Action::AbortOther { u: u as u8 });
            }
        }
        for r in 0..ROWS {
            if let Some(Intent { txn: u, .. }) = s.rows[r].and_then(|p| p.intent) {
                let decided = s.records[u as usize].is_some();
                let ttl = self.is(Mutant::TtlWithoutRecord) && {
                    let x = &s.txns[u as usize];
                    x.silent || x.crashed
                };
                if decided || ttl {
                    actions.push(Action::Clean { r: r as u8 });
                }
            }
        }
        if self.reader {
            let rd = &s.reader;
            if rd.snapshot.is_none() {
                actions.push(Action::ReaderStart);
            } else if rd.seen.len() < ROWS && !rd.too_old {
                actions.push(Action::Read);
            }
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        let mut n = s.clone();
        match a {
            Action::Step { t, fault } => self.step(&mut n, t as usize, fault),
            Action::Stamp { t } => {
                n.clock += 1;
                n.stamps[t as usize] = Some(n.clock);
            }
            Action::Commit { t, fault } => {
                let t = t as usize;
                if fault != Fault::None {
                    n.faults += 1;
                }
                if n.txns[t].doomed {
                    // The engine rolls a doomed transaction back.
                    Self::abort(&mut n, t, fault);
                    n.canon();
                    return Some(n);
                }
                if n.txns[t].log.is_empty() {
                    n.txns[t].answer = Some(Answer::Nothing);
                    n.canon();
                    return Some(n);
                }
                if self.is(Mutant::PerRowCommit) {
                    // Fold the first row now, the others as later steps
                    // (modelled as: only the first, and no record).
                    let e = n.txns[t].log[0];
                    if let Some(mut p) = n.rows[e.row as usize] {
                        if let Some(i) = p.intent.filter(|i| i.txn as usize == t) {
                            self.fold(&mut p, i.val, who(t), n.stamps[t].unwrap());
                            p.ver += 1;
                            p.intent = None;
                            n.rows[e.row as usize] = Some(p);
                        }
                    }
                    n.txns[t].answer = Some(Answer::Committed);
                    n.canon();
                    return Some(n);
                }
                let landed = fault != Fault::Lost;
                let blind = self.is(Mutant::BlindCommit);
                let outcome = match n.records[t] {
                    None if landed => {
                        n.records[t] = Some(Status::Committed);
                        Self::commit_ghost(&mut n, t);
                        Some(Status::Committed)
                    }
                    None => None,
                    Some(_) if blind && landed => {
                        n.records[t] = Some(Status::Committed);
                        Self::commit_ghost(&mut n, t);
                        Some(Status::Committed)
                    }
                    Some(existing) => Some(existing),
                };
                let answer = match (fault, outcome) {
                    (Fault::None, Some(Status::Committed)) => Answer::Committed,
                    (Fault::None, _) => Answer::Aborted,
                    _ if self.is(Mutant::UnknownCommitAsAborted) => Answer::Aborted,
                    _ => Answer::Unknown,
                };
                n.txns[t].answer = Some(answer);
                n.txns[t].finish = fault == Fault::None;
            }
            Action::Rollback { t, fault } => {
                if fault != Fault::None {
                    n.faults += 1;
                }
                Self::abort(&mut n, t as usize, fault);
            }
            Action::RollbackTo { t } => {
                let t = t as usize;
                n.txns[t].rolled_to = true;
                if n.txns[t].failed {
                    // The failed statement already undid the tail; the
                    // client goes on after it.
                    n.txns[t].failed = false;
                    n.txns[t].pc += 1;
                } else {
                    n.txns[t].phase = self.undo_after(&mut n, t, false);
                }
            }
            Action::GiveWay { t } => self.stmt_failed(&mut n, t as usize, Code::Deadlock),
            Action::Timeout { t } => {
                n.faults += 1;
                self.stmt_failed(&mut n, t as usize, Code::LockTimeout)
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
                let mut p = n.rows[r].unwrap();
                let i = p.intent.unwrap();
                // Aborted, or (TtlWithoutRecord) undecided: dropped.
                if let Some(at) = n.commit_stamp(i.txn as usize) {
                    self.fold(&mut p, i.val, who(i.txn as usize), at);
                }
                p.ver += 1;
                p.intent = None;
                n.rows[r] = Some(p);
            }
            Action::Finish { t } => self.finish(&mut n, t as usize),
            Action::ReaderStart => {
                n.clock += 1;
                n.reader.snapshot = Some(n.clock);
                n.reader.ok_before =
                    std::array::from_fn(|t| n.txns[t].answer == Some(Answer::Committed));
            }
            Action::Read => {
                let r = n.reader.seen.len();
                match self.snapshot_read(&mut n, r) {
                    Some(v) => {
                        n.reader.seen.push(v);
                        if n.reader.seen.len() == ROWS {
                            n.reader.committed_at_end =
                                std::array::from_fn(|t| n.records[t] == Some(Status::Committed));
                            n.reader.memo = [None; TXNS];
                        }
                    }
                    None if r == 0 => {
                        // Nothing sent yet: the statement moves its
                        // snapshot to now and reads the row again.
                        n.clock += 1;
                        n.reader.snapshot = Some(n.clock);
                        n.reader.memo = [None; TXNS];
                        n.reader.moved = true;
                    }
                    None => {
                        n.reader.too_old = true;
                        n.reader.seen.clear();
                        n.reader.memo = [None; TXNS];
                    }
                }
            }
        }
        n.canon();
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(P_U, |_, s: &State| {
                let a = s.visible(0);
                let b = s.visible(1);
                !(a.live && b.live && a.key == b.key)
            }),
            Property::always(P_C, |_, s: &State| {
                (0..ROWS).all(|r| {
                    let v = s.visible(r);
                    !v.live || s.claims[v.key as usize].is_some_and(|c| c.owner as usize == r)
                })
            }),
            Property::always(P_ATOMIC, |m: &TxnModel, s: &State| {
                // The ghost applies the writes in the order the records
                // landed; snapshots order them by stamp. The two orders
                // agree on every pair that wrote a common row: the later
                // writer wrote its intent there only once the earlier was
                // decided (its record landed, after its stamp), and takes
                // its own stamp at COMMIT, after its writes. Pairs without
                // a common row commute. So either order gives the same
                // rows, and both are checked.
                let committed = std::array::from_fn(|t| s.records[t] == Some(Status::Committed));
                let by_stamp = m.applied(s, committed);
                (0..ROWS).all(|r| {
                    let v = s.visible(r).shown();
                    v == s.ghost[r].shown() && v == by_stamp[r].shown()
                })
            }),
            Property::always(P_DIRTY, |_, s: &State| {
                s.reader
                    .seen
                    .iter()
                    .all(|v| s.status(v.tag) == Some(Status::Committed))
                    && s.txns.iter().all(|x| !x.dirty)
            }),
            Property::always(P_RYW, |_, s: &State| s.txns.iter().all(|x| !x.ryw_broken)),
            Property::always(P_TRUTH, |_, s: &State| {
                (0..TXNS).all(|t| match s.txns[t].answer {
                    Some(Answer::Committed) => s.records[t] == Some(Status::Committed),
                    Some(Answer::Aborted) => s.records[t] != Some(Status::Committed),
                    _ => true,
                })
            }),
            Property::always(P_STUCK, |m: &TxnModel, s: &State| {
                let live: Vec<usize> = (0..TXNS).filter(|&t| s.running(t)).collect();
                // Stuck: every live transaction waits on a live one, and
                // none may give way.
                let all_wait = !live.is_empty()
                    && live.iter().all(|&t| {
                        m.waits_on(s, t)
                            .is_some_and(|(u, _)| s.running(u) && !s.txns[u].silent)
                    });
                let someone_gives_way = !m.is(Mutant::NoGiveWay)
                    && live
                        .iter()
                        .any(|&t| m.waits_on(s, t).is_some_and(|(_, age)| age < who(t)));
                !all_wait || someone_gives_way
            }),
            Property::sometimes(S_COMMITTED, |_, s: &State| {
                s.txns.iter().any(|x| x.answer == Some(Answer::Committed))
            }),
            Property::sometimes(S_BOTH_COMMIT, |_, s: &State| {
                s.txns.iter().all(|x| x.answer == Some(Answer::Committed))
            }),
            Property::sometimes(S_ABORTED_BY_OTHER, |_, s: &State| {
                (0..TXNS).any(|t| s.txns[t].silent && s.records[t] == Some(Status::Aborted))
            }),
            Property::sometimes(S_GIVE_WAY, |_, s: &State| {
                s.txns.iter().any(|x| x.error == Some(Code::Deadlock))
            }),
            Property::sometimes(S_UNKNOWN, |_, s: &State| {
                s.txns.iter().any(|x| x.answer == Some(Answer::Unknown))
            }),
            Property::always(P_SNAPSHOT, |m: &TxnModel, s: &State| m.snapshot_ok(s)),
            Property::sometimes(S_TOO_OLD, |_, s: &State| s.reader.too_old),
            Property::sometimes(S_PREV, |_, s: &State| s.reader.from_prev),
            Property::sometimes(S_MOVED, |_, s: &State| s.reader.moved),
            Property::sometimes(S_DUPLICATE, |_, s: &State| {
                s.txns.iter().any(|x| x.error == Some(Code::Duplicate))
            }),
            Property::sometimes(S_REUSED, |_, s: &State| {
                s.txns.iter().any(|x| x.error == Some(Code::Reused))
            }),
            Property::sometimes(S_TAKEOVER, |_, s: &State| s.took_over),
            Property::sometimes(S_ROLLBACK_TO, |_, s: &State| {
                s.txns
                    .iter()
                    .any(|x| x.undid && x.rolled_to && x.answer == Some(Answer::Committed))
            }),
        ]
    }

    fn within_boundary(&self, s: &State) -> bool {
        s.faults <= self.max_faults && s.crashes <= self.max_crashes
    }
}

#[cfg(test)]
#[path = "txn_tests.rs"]
mod tests;
