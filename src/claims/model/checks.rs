//! What the smaller models' tests share: run a model's checker to the
//! end and hold it to its properties.

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

use stateright::{Checker, Expectation, Model, Path};

/// Every safety property of `m` holds, and each `Sometimes` property
/// named in `reach` is reached; a violation panics with `trace` of the
/// path to it. Returns the number of unique states checked.
pub(super) fn passes<M>(
    label: &str,
    m: &M,
    reach: &[&str],
    trace: impl Fn(&Path<M::State, M::Action>) -> String,
) -> usize
where
    M: Model + Clone + Send + Sync + 'static,
    M::State: Clone + Debug + Eq + Hash + Send + Sync + 'static,
    M::Action: Clone + Debug + PartialEq + Send + Sync + 'static,
{
    let start = Instant::now();
    let checker = m.clone().checker().spawn_bfs().join();
    eprintln!(
        "{label}: {} unique states (depth {}) in {:.1?}",
        checker.unique_state_count(),
        checker.max_depth(),
        start.elapsed()
    );
    assert!(checker.is_done());
    for p in m.properties() {
        let found = checker.discovery(p.name);
        match p.expectation {
            Expectation::Sometimes => assert!(
                found.is_some() || !reach.contains(&p.name),
                "{label}: never reached: {}",
                p.name
            ),
            _ => {
                if let Some(path) = found {
                    panic!("{label}: VIOLATED {}{}", p.name, trace(&path));
                }
            }
        }
    }
    checker.unique_state_count()
}
