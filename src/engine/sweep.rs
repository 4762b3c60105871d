//! Storage no catalog entry names, found and removed. CREATE TABLE and
//! TRUNCATE make a table's storage before their catalog write names it.
//! When that write's outcome stays unknown (40003) the storage must stay,
//! since the write may have landed; a proxy that dies between the two
//! leaves it too. Later DDL on any proxy sweeps such storage away (at most
//! once per [`SWEEP_EVERY`] per proxy, in the background).
//!
//! A late write can never name storage a sweep removed. A statement names
//! its storage within [`NAME_WITHIN`] of making it or not at all
//! ([`check_fresh`], before its catalog write). A sweep leaves storage
//! younger than [`ORPHAN_AGE`] alone, and storage any entry names; then it
//! reads the entry of the table the storage was made for at SERIAL: that
//! read completes any Paxos round left in flight, and no older round can
//! land after it. It also keeps every storage of a table with an undecided
//! transaction on it, since a block may return to storage it made earlier
//! (ROLLBACK TO before a TRUNCATE).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::info;
use uuid::Uuid;

use crate::catalog::{store_error, Catalog, Entry};
use crate::error::SqlResult;
use crate::store::{Store, StoreError};

/// A statement names new storage in the catalog within this long of
/// making it, or not at all.
pub const NAME_WITHIN: Duration = Duration::from_secs(60);
/// Storage younger than this is never removed: far beyond
/// [`NAME_WITHIN`], so that no write naming it can still be on its way.
pub const ORPHAN_AGE: Duration = Duration::from_secs(3600);
/// How often a proxy sweeps, at most.
pub const SWEEP_EVERY: Duration = Duration::from_secs(600);

/// How long ago storage `id` (`<table>.<uuid v7>`, as
/// `catalog::storage_id` makes it) was made; None for ids that carry no
/// time (made by older builds: never removed).
fn age(id: &str) -> Option<Duration> {
    let (_, uuid) = id.rsplit_once('.')?;
    let (secs, nanos) = Uuid::parse_str(uuid).ok()?.get_timestamp()?.to_unix();
    let made = UNIX_EPOCH + Duration::new(secs, nanos);
    Some(SystemTime::now().duration_since(made).unwrap_or_default())
}

/// Refuses to name storage made [`NAME_WITHIN`] ago or longer (53000: the
/// statement did not apply), since a sweep may remove it by the time the
/// name lands.
pub fn check_fresh(id: &str) -> SqlResult<()> {
    match age(id) {
        Some(age) if age >= NAME_WITHIN => Err(store_error(StoreError::Unavailable(format!(
            "the table's new storage was made {} s ago, too long ago to name it safely",
            age.as_secs()
        )))),
        _ => Ok(()),
    }
}

/// Removes storage at least `min_age` old that no catalog entry names;
/// how many it removed.
pub async fn sweep(store: &dyn Store, catalog: &Catalog, min_age: Duration) -> SqlResult<usize> {
    let named = named_anywhere(store).await?;
    let mut removed = 0;
    for id in store.table_storage().await.map_err(store_error)? {
        if age(&id).is_none_or(|age| age < min_age) || named.contains(&id) {
            continue;
        }
        let Some((table, _)) = id.rsplit_once('.') else {
            continue;
        };
        if let Some((_, entry)) = catalog.entry(table).await? {
            let its_table_uses_it = entry.committed.as_ref().is_some_and(|d| d.id == id);
            if its_table_uses_it || entry.intent.is_some() {
                continue;
            }
        }
        store.drop_storage(&id).await.map_err(store_error)?;
        removed += 1;
        info!(storage = %id, "removed storage no table uses (left by a CREATE TABLE or TRUNCATE whose outcome was unknown, or whose proxy died)");
    }
    Ok(removed)
}

/// The storage every catalog entry's definitions name, whatever their
/// table is called now: storage ids keep the name a table had when its
/// storage was made.
async fn named_anywhere(store: &dyn Store) -> SqlResult<HashSet<String>> {
    let mut named = HashSet::new();
    for (_, rec) in store.list_catalog().await.map_err(store_error)? {
        // The epoch row and sequence counters are no definitions.
        let Ok(entry) = Entry::decode(&rec.definition) else {
            continue;
        };
        let intended = entry.intent.as_ref().and_then(|i| i.def.as_ref());
        named.extend(entry.committed.iter().chain(intended).map(|d| d.id.clone()));
    }
    Ok(named)
}

/// When this proxy last began a sweep.
#[derive(Default)]
pub struct Sweeps {
    last: Mutex<Option<Instant>>,
}

impl Sweeps {
    /// Whether a sweep is due; if so, it counts as begun now.
    pub fn due(&self) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < SWEEP_EVERY) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made_ago(ago: Duration) -> String {
        let t = SystemTime::now() - ago;
        let d = t.duration_since(UNIX_EPOCH).unwrap();
        let ts = uuid::Timestamp::from_unix(uuid::NoContext, d.as_secs(), d.subsec_nanos());
        format!("t.{}", Uuid::new_v7(ts).simple())
    }

    #[test]
    fn storage_is_named_only_while_fresh() {
        assert!(check_fresh(&made_ago(Duration::from_secs(1))).is_ok());
        let late = check_fresh(&made_ago(NAME_WITHIN)).unwrap_err();
        assert_eq!(late.code, "53000", "{late:?}");
        // Ids of older builds carry no time: named as before.
        assert!(check_fresh("t.not-a-uuid").is_ok());
        let a = age(&made_ago(Duration::from_secs(7200))).unwrap();
        assert!(a >= Duration::from_secs(7199) && a < Duration::from_secs(7300));
    }

    #[test]
    fn one_sweep_per_period() {
        let s = Sweeps::default();
        assert!(s.due());
        assert!(!s.due());
    }
}
