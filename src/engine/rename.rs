//! `ALTER {TABLE | INDEX | SEQUENCE} name RENAME TO new`: a relation takes
//! a new name, whichever kind ALTER names, as in PostgreSQL.
//!
//! A table's (or sequence's) definition moves from its catalog entry to a
//! new one: the new entry is written, then the old one removed, both in
//! the statement's transaction (inside a block, the block's), so every
//! proxy sees the old name or the new one, never both or neither. Its
//! storage keeps its id, so rows, claims and index entries stay where
//! they are, and OIDs (derived from the storage id) stay too; whatever
//! names the relation follows it: the foreign keys that reference it, the
//! pointers back from the tables it references, the sequences it owns,
//! and for a sequence the column defaults that draw from it. An index is
//! renamed within its table's definition, its constraint with it.

use super::ddl::{self, command, notice, Ddl};
use super::sequence::drawn_sequence;
use super::Executed;
use crate::catalog::TableDef;
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::sql::ddl::nextval_default;

pub async fn rename(
    ddl: &Ddl<'_>,
    name: &str,
    to: &str,
    if_exists: bool,
    tag: &'static str,
) -> SqlResult<Executed> {
    let relation = ddl.lookup(name).await?;
    let index_owner = match relation {
        Some(_) => None,
        None => ddl::index_owner(ddl, name).await?,
    };
    if relation.is_none() && index_owner.is_none() {
        if if_exists {
            return Ok(command(
                tag,
                vec![notice(
                    "00000",
                    format!("relation \"{name}\" does not exist, skipping"),
                )],
            ));
        }
        return Err(SqlError::undefined_table(name));
    }
    if ddl.lookup(to).await?.is_some() || ddl::index_exists(ddl, to).await? {
        return Err(exists(to));
    }
    match (relation, index_owner) {
        (Some(t), _) if t.sequence.is_some() => rename_sequence(ddl, &t, to).await?,
        (Some(t), _) => rename_table(ddl, &t, to).await?,
        (None, Some(t)) => rename_index(ddl, &t, name, to).await?,
        (None, None) => unreachable!("answered above"),
    }
    Ok(command(tag, Vec::new()))
}

fn exists(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::DUPLICATE_TABLE,
        format!("relation \"{name}\" already exists"),
    )
}

/// The definition under its new name: first claimed (the entry written
/// only if no relation has the name), then the old entry removed.
async fn move_entry(ddl: &Ddl<'_>, from: &str, moved: TableDef) -> SqlResult<()> {
    let to = moved.name.clone();
    ddl.change(&to, |current| match current {
        Some(_) => Err(exists(&to)),
        None => Ok(Some(moved.clone())),
    })
    .await?;
    ddl.change(from, |_| Ok(None)).await?;
    Ok(())
}

/// A table: its entry moves, and what names it follows.
async fn rename_table(ddl: &Ddl<'_>, table: &TableDef, to: &str) -> SqlResult<()> {
    if table.cql_table.is_some() {
        return Err(SqlError::unsupported(
            format!(
                "renaming the adopted table \"{}\" is not supported",
                table.name
            ),
            "change the name in its [[store.adopt]] entry, then restart the proxies",
        ));
    }
    let from = table.name.as_str();
    let mut moved = table.clone();
    moved.name = to.to_owned();
    // Its own foreign keys on itself, and the pointers back at them.
    for fk in moved
        .foreign_keys
        .iter_mut()
        .filter(|f| f.ref_table == from)
    {
        fk.ref_table = to.to_owned();
    }
    for inbound in moved.referenced_by.iter_mut().filter(|i| i.table == from) {
        inbound.table = to.to_owned();
    }
    move_entry(ddl, from, moved.clone()).await?;
    // The tables it references point back at the new name before a row of
    // it can reference them under that name (the old pointer, a hint,
    // stays and finds nothing).
    for fk in moved.foreign_keys.iter().filter(|f| f.ref_table != to) {
        ddl.point_back(&fk.ref_table, &fk.inbound(to)).await?;
    }
    // The tables whose foreign keys reference it name it anew.
    let mut children: Vec<&str> = table
        .referenced_by
        .iter()
        .map(|i| i.table.as_str())
        .filter(|t| *t != from)
        .collect();
    children.sort_unstable();
    children.dedup();
    for child in children {
        rewrite(ddl, child, |t| {
            let mut changed = false;
            for fk in t.foreign_keys.iter_mut().filter(|f| f.ref_table == from) {
                fk.ref_table = to.to_owned();
                changed = true;
            }
            changed
        })
        .await?;
    }
    // The sequences its serial and identity columns own.
    for seq in ddl.owned_sequences(table, 0..table.columns.len()).await? {
        rewrite(ddl, &seq, |s| {
            match s.sequence.as_mut().and_then(|q| q.owned_by.as_mut()) {
                Some((owner, _)) if owner == from => {
                    *owner = to.to_owned();
                    true
                }
                _ => false,
            }
        })
        .await?;
    }
    Ok(())
}

/// A sequence: its entry moves, and the column defaults that draw from it
/// (`nextval('name'...)`) name it anew.
async fn rename_sequence(ddl: &Ddl<'_>, seq: &TableDef, to: &str) -> SqlResult<()> {
    let from = seq.name.as_str();
    let mut moved = seq.clone();
    moved.name = to.to_owned();
    move_entry(ddl, from, moved).await?;
    let tables = ddl.catalog.all(ddl.open.map(|o| o.id)).await?;
    for t in tables.iter().filter(|t| t.sequence.is_none()) {
        let draws = |c: &crate::catalog::ColumnDef| drawn_sequence(c).as_deref() == Some(from);
        if !t.columns.iter().any(draws) {
            continue;
        }
        rewrite(ddl, &t.name, |t| {
            let mut changed = false;
            for c in t.columns.iter_mut().filter(|c| draws(c)) {
                c.default = Some(nextval_default(to));
                changed = true;
            }
            changed
        })
        .await?;
    }
    Ok(())
}

/// An index of `table`: renamed where the definition names it (the
/// primary key's, a UNIQUE constraint's with the constraint, as in
/// PostgreSQL, or a plain index's).
async fn rename_index(ddl: &Ddl<'_>, table: &TableDef, from: &str, to: &str) -> SqlResult<()> {
    // The index of a key constraint is renamed with its constraint, whose
    // name must be free on the table.
    let backs_constraint =
        table.pkey_name == from || table.uniques.iter().any(|u| u.name == from && !u.is_index);
    if backs_constraint && table.constraint_names().any(|c| c == to) {
        return Err(ddl::constraint_exists(to, &table.name));
    }
    rewrite(ddl, &table.name, |t| {
        if t.pkey_name == from {
            t.pkey_name = to.to_owned();
        }
        for u in t.uniques.iter_mut().filter(|u| u.name == from) {
            u.name = to.to_owned();
        }
        for i in t.indexes.iter_mut().filter(|i| i.name == from) {
            i.name = to.to_owned();
        }
        true
    })
    .await
}

/// Change relation `name` by `edit` when it says it changed something,
/// once no other transaction's change of it is pending (a foreign key
/// another block is adding names the old name until that block ends).
async fn rewrite(ddl: &Ddl<'_>, name: &str, edit: impl Fn(&mut TableDef) -> bool) -> SqlResult<()> {
    let Some(current) = ddl.settled(name).await? else {
        return Ok(());
    };
    let mut probe = TableDef::clone(&current);
    if !edit(&mut probe) {
        return Ok(());
    }
    ddl.change(name, |current| {
        let Some(current) = current else {
            return Ok(None);
        };
        let mut next = TableDef::clone(current);
        edit(&mut next);
        Ok(Some(next))
    })
    .await?;
    Ok(())
}
