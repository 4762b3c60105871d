//! The model check: the design variant passes every property; the code as
//! it is and each mutant yield a counterexample.
//!
//! `cargo test --lib claims::model` runs the small scopes (CI, well under a
//! minute in a debug build). The larger scopes are `#[ignore]`d:
//! `cargo test --release --lib claims::model -- --ignored --nocapture`.
//! `MODEL_TRACE=1` prints the counterexample of every expected failure too;
//! `MODEL_THREADS=n` sets the checker's threads (default 1: breadth-first
//! with one thread gives the shortest counterexamples).

use std::collections::BTreeSet;
use std::time::Instant;

use stateright::{Checker, Expectation, HasDiscoveries, Model, Path};

use super::*;

fn ins(pk: u8, v: u8) -> Stmt {
    Stmt::Insert {
        pk,
        keys: [Some(v), None],
    }
}

fn ins2(pk: u8, a: u8, b: u8) -> Stmt {
    Stmt::Insert {
        pk,
        keys: [Some(a), Some(b)],
    }
}

fn upd(pk: u8) -> Stmt {
    Stmt::Update {
        pk,
        toggle: [true, false],
    }
}

fn upd2(pk: u8) -> Stmt {
    Stmt::Update {
        pk,
        toggle: [true, true],
    }
}

fn del(pk: u8) -> Stmt {
    Stmt::Delete { pk }
}

fn threads() -> usize {
    std::env::var("MODEL_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// A counterexample, one line per step: the action, the store after it, the
/// acting client's state and the answers so far.
fn trace(m: &ClaimModel, path: &Path<State, Action>) -> String {
    let steps = path.clone().into_vec();
    let mut out = format!("    start: {}\n", steps[0].0.store_line());
    for w in steps.windows(2) {
        let (before, action) = (&w[0].0, w[0].1.unwrap());
        let after = &w[1].0;
        out += &format!(
            "  {:<38} {}\n",
            m.format_action(&action),
            after.store_line()
        );
        let actor = match action {
            Action::Step { client, .. }
            | Action::Timeout { client, .. }
            | Action::Crash { client } => Some(client as usize),
            _ => None,
        };
        if let Some(ci) = actor {
            if after.clients[ci] != before.clients[ci] {
                out += &format!(
                    "  {:<38}   {}: {:?}\n",
                    "",
                    (b'a' + ci as u8) as char,
                    after.clients[ci]
                );
            }
        }
        if after.answers != before.answers || after.landed != before.landed {
            out += &format!("  {:<38}   answers:{}\n", "", after.answers_line());
        }
    }
    out
}

fn programs(m: &ClaimModel) -> String {
    let mut out = String::new();
    for (i, p) in m.programs.iter().enumerate() {
        out += &format!("\n    {}: {p:?}", (b'a' + i as u8) as char);
    }
    if !m.init.is_empty() {
        out += &format!("\n    initial rows: {:?}", m.init);
    }
    out
}

/// Checks a configuration exhaustively and fails with the trace of any
/// violated property. Returns the `sometimes` properties it reached.
fn passes(name: &str, m: ClaimModel) -> BTreeSet<&'static str> {
    let start = Instant::now();
    let checker = m.clone().checker().threads(threads()).spawn_bfs().join();
    eprintln!(
        "model {name}: {} unique states ({} visited, depth {}) in {:.1?}",
        checker.unique_state_count(),
        checker.state_count(),
        checker.max_depth(),
        start.elapsed()
    );
    assert!(checker.is_done(), "{name}: the check did not complete");
    let mut failures = String::new();
    let mut reached = BTreeSet::new();
    for p in m.properties() {
        let found = checker.discovery(p.name);
        match (p.expectation, found) {
            (Expectation::Sometimes, Some(_)) => {
                reached.insert(p.name);
            }
            (Expectation::Sometimes, None) => {}
            (_, Some(path)) => {
                failures += &format!(
                    "\n{name}: VIOLATED {}{}\n{}",
                    p.name,
                    programs(&m),
                    trace(&m, &path)
                );
            }
            (_, None) => {}
        }
    }
    assert!(failures.is_empty(), "{failures}");
    reached
}

/// Checks a broken configuration until it violates one of `expect`, and
/// fails if it never does. Returns the counterexample.
fn caught(name: &str, m: ClaimModel, expect: &[&'static str]) -> Path<State, Action> {
    let start = Instant::now();
    let checker = m
        .clone()
        .checker()
        .threads(threads())
        .finish_when(HasDiscoveries::AnyOf(expect.iter().copied().collect()))
        .spawn_bfs()
        .join();
    let found: Vec<&'static str> = SAFETY
        .iter()
        .chain(expect)
        .copied()
        .filter(|p| checker.discovery(p).is_some())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    eprintln!(
        "model {name}: {found:?} after {} unique states in {:.1?}",
        checker.unique_state_count(),
        start.elapsed()
    );
    let Some(hit) = expect.iter().copied().find(|p| found.contains(p)) else {
        panic!(
            "{name}: no counterexample for {expect:?} (found {found:?}){}",
            programs(&m)
        );
    };
    let mut path = checker.discovery(hit).unwrap();
    if std::env::var("MODEL_TRACE").is_ok() {
        path = shortest(&m, hit, path);
        eprintln!("{name}: {hit}{}\n{}", programs(&m), trace(&m, &path));
    }
    path
}

/// The checker reports the last violating state it met, not the nearest:
/// deepen step by step to find a shortest counterexample.
fn shortest(m: &ClaimModel, prop: &'static str, found: Path<State, Action>) -> Path<State, Action> {
    let len = found.clone().into_actions().len();
    for depth in 1..len {
        let checker = m
            .clone()
            .checker()
            .threads(1)
            .target_max_depth(depth + 2)
            .finish_when(HasDiscoveries::AnyOf([prop].into_iter().collect()))
            .spawn_bfs()
            .join();
        if let Some(path) = checker.discovery(prop) {
            return path;
        }
    }
    found
}

// -- scenarios -------------------------------------------------------------------

/// 2 clients x 2 statements: two inserts race for one key on different rows,
/// then one deletes its row while the other re-inserts on it.
fn insert_delete_reinsert() -> ClaimModel {
    ClaimModel::new(vec![vec![ins(0, 0), del(0)], vec![ins(1, 0), ins(0, 1)]])
}

/// 2 clients x 2 statements: rows hold keys 0 and 1; both swap (toggle)
/// their key, then one deletes its row and the other re-inserts over it.
fn swap_delete_reinsert() -> ClaimModel {
    let mut m = ClaimModel::new(vec![vec![upd(0), del(0)], vec![upd(1), ins(0, 0)]]);
    m.init = vec![(0, [Some(0), None]), (1, [Some(1), None])];
    m
}

/// 3 clients x 1 statement: a delete, a re-insert of the same row with the
/// other key, and an insert of another row with the deleted key.
fn delete_reinsert_3() -> ClaimModel {
    let mut m = ClaimModel::new(vec![vec![del(0)], vec![ins(0, 1)], vec![ins(1, 0)]]);
    m.init = vec![(0, [Some(0), None])];
    m
}

/// 3 clients x 1 statement: two inserts race for key 0 while the row of one
/// has its key toggled.
fn insert_insert_update_3() -> ClaimModel {
    ClaimModel::new(vec![vec![ins(0, 0)], vec![ins(1, 0)], vec![upd(0)]])
}

/// Two unique constraints: two multi-key inserts want key 0 of the second
/// constraint (one waits, or both fall back to key order), then the first
/// swaps both its keys.
fn multi_key() -> ClaimModel {
    ClaimModel::new(vec![vec![ins2(0, 0, 0), upd2(0)], vec![ins2(1, 1, 0)]])
}

/// Two unique constraints: row 0 holds (0, 0); it toggles only its first key
/// (the second claim is carried over), then is deleted, while another row
/// is inserted with the vacated first key and a second key of its own.
fn multi_key_update() -> ClaimModel {
    let mut m = ClaimModel::new(vec![vec![upd(0), del(0)], vec![ins2(1, 0, 1)]]);
    m.init = vec![(0, [Some(0), Some(0)])];
    m
}

/// 2 clients: two updates toggle the same row's key, then one of them
/// inserts another row with the key being vacated.
fn update_update_insert() -> ClaimModel {
    let mut m = ClaimModel::new(vec![vec![upd(0)], vec![upd(0), ins(1, 0)]]);
    m.init = vec![(0, [Some(0), None])];
    m
}

fn scenarios() -> Vec<(&'static str, ClaimModel)> {
    vec![
        ("update_update_insert", update_update_insert()),
        ("insert_delete_reinsert", insert_delete_reinsert()),
        ("swap_delete_reinsert", swap_delete_reinsert()),
        ("delete_reinsert_3", delete_reinsert_3()),
        ("insert_insert_update_3", insert_insert_update_3()),
        ("multi_key", multi_key()),
        ("multi_key_update", multi_key_update()),
    ]
}

fn with(m: ClaimModel, f: impl FnOnce(&mut ClaimModel)) -> ClaimModel {
    let mut m = m;
    f(&mut m);
    m
}

// -- the design passes -------------------------------------------------------------

/// Every scenario with one fault (unknown or unavailable), one proxy crash,
/// one retry, and lease expiry anywhere; every behaviour listed as
/// `sometimes` is reached by some scenario, so none of this is vacuous.
#[test]
fn design_holds_with_one_fault_and_one_crash() {
    let mut reached = BTreeSet::new();
    for (name, m) in scenarios() {
        reached.extend(passes(name, m));
    }
    let all: BTreeSet<&str> = ClaimModel::new(vec![])
        .properties()
        .iter()
        .filter(|p| p.expectation == Expectation::Sometimes)
        .map(|p| p.name)
        .collect();
    let missed: Vec<_> = all.difference(&reached).collect();
    assert!(
        missed.is_empty(),
        "behaviours no scenario reached: {missed:?}"
    );
}

/// Two faults: an unknown outcome followed by an unavailable retry, or two
/// unknowns in a row; smaller scenarios only (the rest is `--ignored`).
#[test]
fn design_holds_with_two_faults() {
    for (name, m) in [
        ("swap_delete_reinsert", swap_delete_reinsert()),
        ("delete_reinsert_3", delete_reinsert_3()),
    ] {
        passes(name, with(m, |m| m.max_faults = 2));
    }
}

/// With a janitor that removes dead partitions no running statement writes.
#[test]
fn design_holds_with_a_safe_janitor() {
    for (name, m) in [
        ("delete_reinsert_3", delete_reinsert_3()),
        ("swap_delete_reinsert", swap_delete_reinsert()),
    ] {
        passes(name, with(m, |m| m.janitor = Janitor::Safe));
    }
}

// -- what the model must catch -------------------------------------------------------

/// Mutant 7, the hole this model check found in the code: `with_retries`
/// returned `Unavailable` when a retry after an unknown outcome was
/// unavailable, and the callers released the claims that backed a row that
/// had landed, answering 53000; another row then took the key.
#[test]
fn unavailable_after_unknown_is_caught() {
    let m = with(insert_delete_reinsert(), |m| {
        m.variant = Variant::Mutant(Mutant::UnavailableForgetsUnknown);
        m.max_faults = 2;
        m.max_crashes = 0;
    });
    caught(
        "mutant 7: unknown then unavailable (answer)",
        m.clone(),
        &[P_ERROR],
    );
    caught("mutant 7: unknown then unavailable (duplicate)", m, &[P_U]);
}

fn mutant(m: ClaimModel, mu: Mutant) -> ClaimModel {
    with(m, |m| {
        m.variant = Variant::Mutant(mu);
        m.max_crashes = 0;
    })
}

#[test]
fn mutant_insert_overwrites_unseen_dead_version() {
    let m = mutant(insert_insert_update_3(), Mutant::InsertOverwritesUnseenDead);
    caught("mutant 1", m, &[P_U]);
}

#[test]
fn mutant_ambiguous_commit_answered_as_definite() {
    let m = mutant(insert_insert_update_3(), Mutant::AmbiguousAsDefinite);
    caught("mutant 2", m, &[P_ERROR]);
}

#[test]
fn mutant_delete_conditioned_on_live() {
    let m = mutant(delete_reinsert_3(), Mutant::DeleteIfLive);
    caught("mutant 3", m, &[P_ONCE]);
}

#[test]
fn mutant_update_treats_own_version_as_lost() {
    let m = mutant(insert_insert_update_3(), Mutant::UpdateOwnVersionLost);
    caught("mutant 4", m, &[P_ONCE]);
}

#[test]
fn mutant_takeover_without_fence() {
    let m = mutant(insert_insert_update_3(), Mutant::TakeoverWithoutFence);
    caught("mutant 5", m, &[P_U]);
}

#[test]
fn mutant_delete_leaves_partition_absent() {
    let m = mutant(insert_delete_reinsert(), Mutant::DeleteToAbsent);
    caught("mutant 6", m, &[P_ONCE]);
}

/// A janitor whose horizon does not outlast running statements: it removes
/// the dead partition a fence left, and the fenced INSERT's `IF NOT EXISTS`
/// then lands after all.
#[test]
fn unsafe_janitor_is_caught() {
    let m = with(insert_insert_update_3(), |m| {
        m.janitor = Janitor::Unsafe;
        m.max_faults = 0;
        m.max_crashes = 0;
    });
    caught("janitor removing a running statement's fence", m, &[P_U]);
}

// -- larger scopes (local runs) -------------------------------------------------------------

/// Every scenario with two faults, two crashes and two retries.
#[test]
#[ignore]
fn large_design_two_faults_two_crashes() {
    for (name, m) in scenarios() {
        passes(
            name,
            with(m, |m| {
                m.max_faults = 2;
                m.max_crashes = 2;
                m.max_retries = 2;
            }),
        );
    }
}

/// 3 clients x 1 statement: two updates of one row and an insert racing for
/// the key they vacate, with two faults.
#[test]
#[ignore]
fn large_design_update_update_insert_3() {
    let mut m = ClaimModel::new(vec![vec![upd(0)], vec![upd(0)], vec![ins(1, 0)]]);
    m.init = vec![(0, [Some(0), None])];
    m.max_faults = 2;
    passes("update_update_insert_3", m);
}

/// 3 clients x 2 statements with one fault and one crash.
#[test]
#[ignore]
fn large_design_three_by_two() {
    let mut m = ClaimModel::new(vec![
        vec![ins(0, 0), del(0)],
        vec![ins(1, 0), upd(1)],
        vec![upd(0), ins(0, 1)],
    ]);
    m.max_txns = 3;
    passes("three_by_two", m);
}

/// Scenarios with a safe janitor and two faults.
#[test]
#[ignore]
fn large_design_janitor() {
    for (name, m) in [
        ("insert_delete_reinsert", insert_delete_reinsert()),
        ("multi_key", multi_key()),
        ("multi_key_update", multi_key_update()),
    ] {
        passes(
            name,
            with(m, |m| {
                m.max_faults = 2;
                m.janitor = Janitor::Safe;
            }),
        );
    }
}

/// Liveness: without faults, crashes or lease expiry, and with no deadline
/// (a wait blocks until what it waits on changes), statements contending for
/// several keys never end up waiting on each other, and none is made to
/// restart or fence. Under the wound-wait rule this replaced, the older of
/// two INSERTs that want the same two keys was starved: it fenced the
/// younger, the younger's restart re-stamped its claims before the older's
/// `DELETE claim IF txn = X` landed, and so on until the deadline.
fn liveness(m: ClaimModel) -> ClaimModel {
    with(m, |m| {
        m.expiry = false;
        m.liveness = true;
        m.max_faults = 0;
        m.max_crashes = 0;
        m.max_txns = 4;
    })
}

fn contended_scenarios() -> Vec<(&'static str, ClaimModel)> {
    vec![
        (
            "same_two_keys",
            ClaimModel::new(vec![vec![ins2(0, 0, 0)], vec![ins2(1, 0, 0)]]),
        ),
        (
            "same_two_keys_then_swap",
            ClaimModel::new(vec![
                vec![ins2(0, 0, 1), upd2(0)],
                vec![ins2(1, 0, 1), upd2(1)],
            ]),
        ),
        (
            "three_inserts",
            ClaimModel::new(vec![
                vec![ins2(0, 0, 0)],
                vec![ins2(1, 0, 0)],
                vec![ins2(0, 1, 1)],
            ]),
        ),
        ("multi_key", multi_key()),
        ("multi_key_update", multi_key_update()),
    ]
}

#[test]
fn contended_multi_key_statements_never_deadlock_or_starve() {
    let mut reached = BTreeSet::new();
    for (name, m) in contended_scenarios() {
        reached.extend(passes(name, liveness(m)));
    }
    for s in [S_ORDERED, S_ORDERED_RELEASE, S_WAIT, S_ALL_DONE] {
        assert!(reached.contains(s), "no contended scenario reached {s:?}");
    }
}

/// Mutant 8: the contended fallback keeps the keys ordered after the first
/// busy one. Each of two INSERTs holds the key the other waits for.
#[test]
fn mutant_keep_held_keys_after_busy_deadlocks() {
    let m = liveness(contended_scenarios().remove(0).1);
    let m = with(m, |m| {
        m.variant = Variant::Mutant(Mutant::KeepHeldAfterBusy)
    });
    caught("mutant 8", m, &[P_STUCK]);
}

/// Mutant 9: waiting in parallel while holding the other keys, with neither
/// key order nor wound-wait: a deadlock.
#[test]
fn mutant_wait_while_holding_deadlocks() {
    let m = liveness(contended_scenarios().remove(0).1);
    let m = with(m, |m| m.variant = Variant::Mutant(Mutant::WaitWhileHolding));
    caught("mutant 9", m, &[P_STUCK]);
}

/// Liveness at a larger scope: 3 clients x 2 statements contending for two
/// keys of two constraints, with updates and deletes in between.
#[test]
#[ignore]
fn large_liveness_three_by_two() {
    let m = ClaimModel::new(vec![
        vec![ins2(0, 0, 0), upd2(0)],
        vec![ins2(1, 0, 0), del(1)],
        vec![ins2(0, 1, 1), ins2(1, 1, 0)],
    ]);
    passes(
        "liveness three_by_two",
        with(liveness(m), |m| m.max_txns = 6),
    );
}
