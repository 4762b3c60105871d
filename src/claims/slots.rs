//! Count limits: a row joining a group takes one of the group's N slots
//! (`catalog::count_limit`), claimed as a UNIQUE value is; a group with no
//! free slot refuses the row with 23514, once a double read of every slot
//! has shown N live rows in it at one moment (docs/count_limits.md).

use std::collections::BTreeMap;

use futures::future::join_all;

use super::intents::{self, Settled};
use super::resolve::{
    before_retry, claim_all, claim_one, is_reused_key, release, Claimed, KeyClaim, OnBusy,
};
use super::{with_retries, RowWrite, WriteError};
use crate::catalog::{store_error, ClaimOn, CountLimitDef, TableDef};
use crate::error::{sqlstate, SqlError};
use crate::store::{RowRecord, TxnId};
use crate::types::Value;

/// The count limits a row with `values` belongs to a group of but holds no
/// slot of by `claims` (what it carries from the row it replaces), by their
/// index for `TableDef::claim_on`, in storage-id order: every statement
/// places its slots in the same order.
pub(super) fn unplaced(
    table: &TableDef,
    values: &[Value],
    claims: &BTreeMap<String, TxnId>,
) -> Vec<usize> {
    let mut unplaced: Vec<(usize, &str)> = table
        .claims_on()
        .filter_map(|(i, on)| match on {
            ClaimOn::Slot(l) if l.group_of(values).is_some() && l.slot_in(claims).is_none() => {
                Some((i, l.id.as_str()))
            }
            _ => None,
        })
        .collect();
    unplaced.sort_by_key(|&(_, id)| id);
    unplaced.into_iter().map(|(i, _)| i).collect()
}

/// What a row moving from `before` to `values` keeps of its `__claims`:
/// everything but the slots of groups it leaves.
pub(super) fn carried(
    table: &TableDef,
    before: &RowRecord,
    values: &[Value],
) -> BTreeMap<String, TxnId> {
    let mut claims = (*before.claims).clone();
    for l in &table.count_limits {
        if l.group_of(&before.values) != l.group_of(values) {
            if let Some(s) = l.slot_in(&before.claims) {
                claims.remove(&l.entry(s));
            }
        }
    }
    claims
}

/// Claim `keys`, and a slot in the group of each limit in `unplaced`, for
/// row `owner` with `txn`: the slots first, then the keys together. All of
/// them, returned, or none (what was taken is released on failure).
pub(crate) async fn claim_with_slots(
    w: &RowWrite<'_>,
    keys: &[KeyClaim],
    unplaced: &[usize],
    values: &[Value],
    owner: &[u8],
    txn: TxnId,
) -> Result<Vec<KeyClaim>, WriteError> {
    let placed = place(w, unplaced, values, owner, txn).await?;
    if let Err(e) = claim_all(w, keys, owner, txn).await {
        release(w, &placed, txn, None).await;
        return Err(e);
    }
    Ok(keys.iter().cloned().chain(placed).collect())
}

/// Take a free slot, for row `owner` with `txn`, in the group of each
/// limit in `unplaced`. On failure releases what it took.
pub(super) async fn place(
    w: &RowWrite<'_>,
    unplaced: &[usize],
    values: &[Value],
    owner: &[u8],
    txn: TxnId,
) -> Result<Vec<KeyClaim>, WriteError> {
    let mut placed = Vec::with_capacity(unplaced.len());
    for &index in unplaced {
        match place_one(w, index, values, owner, txn).await {
            Ok(k) => placed.push(k),
            Err(e) => {
                release(w, &placed, txn, None).await;
                return Err(e);
            }
        }
    }
    Ok(placed)
}

/// The slot search of one limit. Slots are tried from a random one on, so
/// that writers joining one group mostly meet free slots, not each other;
/// a slot another statement is still taking is waited for only once no
/// other slot is free.
async fn place_one(
    w: &RowWrite<'_>,
    index: usize,
    values: &[Value],
    owner: &[u8],
    txn: TxnId,
) -> Result<KeyClaim, WriteError> {
    let ClaimOn::Slot(limit) = w.table.claim_on(index) else {
        unreachable!("unplaced names count limits only");
    };
    let group = limit.group_of(values).expect("an unplaced row has a group");
    let slot = |s: u32| KeyClaim {
        unique: index,
        key: CountLimitDef::slot_key(&group, s),
        slot: Some(s),
    };
    let start = match limit.limit {
        0 => 0,
        n => rand::random::<u32>() % n,
    };
    loop {
        before_retry(w)?;
        let mut busy = None;
        let mut freed_by_us = None;
        for i in 0..limit.limit {
            let k = slot((start + i) % limit.limit);
            match claim_one(w, &k, owner, txn, OnBusy::Report).await {
                Ok(Claimed::Ours) => return Ok(k),
                Ok(Claimed::Busy) => {
                    busy.get_or_insert(k);
                }
                Err(WriteError::Duplicate { .. }) => {}
                // Held by a row this transaction took out of the group:
                // the place is free only once that change commits.
                Err(WriteError::Sql(e)) if is_reused_key(&e) => {
                    freed_by_us.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(k) = busy {
            match claim_one(w, &k, owner, txn, OnBusy::Wait).await {
                Ok(_) => return Ok(k),
                Err(WriteError::Duplicate { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        if let Some(e) = freed_by_us {
            return Err(WriteError::Sql(e));
        }
        if full(w, index, limit, &group, owner).await? {
            return Err(WriteError::Sql(limit_reached(w.table, limit, &group)));
        }
    }
}

/// Whether the group holds N live rows at one moment: two reads of every
/// slot's claim and the row backing it, with nothing changed between them
/// (row versions are fresh per write, so nothing can change and change
/// back). Any slot free or in flight: no.
async fn full(
    w: &RowWrite<'_>,
    index: usize,
    limit: &CountLimitDef,
    group: &[&Value],
    owner: &[u8],
) -> Result<bool, WriteError> {
    let Some(first) = collect(w, index, limit, group, owner).await? else {
        return Ok(false);
    };
    let second = collect(w, index, limit, group, owner).await?;
    Ok(second.as_ref() == Some(&first))
}

/// One read of every slot: for each, the claim's owner and txn and the
/// version of the owner row backing it; None once one is not backed.
async fn collect(
    w: &RowWrite<'_>,
    index: usize,
    limit: &CountLimitDef,
    group: &[&Value],
    owner: &[u8],
) -> Result<Option<Vec<(Vec<u8>, TxnId, TxnId)>>, WriteError> {
    let on = w.table.claim_on(index);
    let reads = (0..limit.limit).map(|s| async move {
        let key = CountLimitDef::slot_key(group, s);
        let (claim, _) = with_retries(w.cfg, w.stats, || w.store.read_claim(on.id(), &key))
            .await
            .map_err(|e| WriteError::Sql(store_error(e)))?;
        let Some(claim) = claim else {
            return Ok(None);
        };
        let (row, _) = with_retries(w.cfg, w.stats, || w.store.read_row(w.table, &claim.owner))
            .await
            .map_err(|e| WriteError::Sql(store_error(e)))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let backed = match as_seen(w, &claim.owner, &row, owner).await? {
            Some(view) => on.backed_by(&key, &view),
            None => false,
        };
        Ok::<_, WriteError>(backed.then_some((claim.owner, claim.txn, row.version)))
    });
    let mut slots = Vec::with_capacity(limit.limit as usize);
    for read in join_all(reads).await {
        match read? {
            Some(slot) => slots.push(slot),
            None => return Ok(None),
        }
    }
    Ok(Some(slots))
}

/// Row `pk` as this writer sees it: its own transaction's intent applied,
/// or another's once decided; None while another's is undecided.
async fn as_seen(
    w: &RowWrite<'_>,
    pk: &[u8],
    row: &RowRecord,
    owner: &[u8],
) -> Result<Option<RowRecord>, WriteError> {
    if let Some(intent) = row.intent.as_ref().filter(|i| Some(i.txn) == w.own) {
        return Ok(Some(intents::own_view(row, intent)));
    }
    // The row being written is never one of the N (it holds no slot yet).
    if pk == owner {
        return Ok(None);
    }
    Ok(match intents::settle(w, pk, row.clone()).await? {
        Settled::Ready(view) => Some(view),
        Settled::Busy(_) => None,
    })
}

/// 23514, as PostgreSQL words a CHECK violation, naming the limit, the
/// table and the group.
fn limit_reached(table: &TableDef, limit: &CountLimitDef, group: &[&Value]) -> SqlError {
    SqlError::new(
        sqlstate::CHECK_VIOLATION,
        format!(
            "new row for relation \"{}\" violates count limit \"{}\"",
            table.name, limit.name
        ),
    )
    .with_detail(format!(
        "{} already has {} rows, the most the limit allows.",
        crate::types::key_detail(&table.column_names(&limit.columns), group),
        limit.limit
    ))
    .with_table(&table.name)
    .with_constraint(limit.name.clone())
}
