//! Object identifiers: the same on every proxy and stable for an object's
//! life, without a counter to coordinate.
//!
//! PostgreSQL hands out OIDs from a counter; keyclaim has many proxies and
//! no coordinator, so an object's OID is derived from what the catalog
//! already keeps for it: its storage id, fresh per creation (`TableDef::id`,
//! `UniqueDef::id`), and the object's name within its table. Every proxy
//! computes the same number, a recreated table gets a new one, and ALTER
//! keeps it. The numbers start where PostgreSQL's user objects start
//! (16384); with 32 bits, two objects of one schema share a number with a
//! probability of about n²/2³³ (n = 1,000 objects: 1 in 8,600).

use crate::catalog::{TableDef, UniqueDef};

/// The first OID PostgreSQL gives a user object (FirstNormalObjectId).
const FIRST_USER_OID: u32 = 16384;

pub(crate) const PG_CATALOG_NAMESPACE: u32 = 11;
pub(crate) const PUBLIC_NAMESPACE: u32 = 2200;
pub(crate) const INFORMATION_SCHEMA_NAMESPACE: u32 = 13183;
pub(crate) const PG_TOAST_NAMESPACE: u32 = 99;
/// The bootstrap superuser, whom keyclaim's one role stands for.
pub(crate) const SUPERUSER: u32 = 10;
/// The role that owns schema public since PostgreSQL 15.
pub(crate) const DATABASE_OWNER: u32 = 6171;
pub(crate) const BTREE_AM: u32 = 403;
pub(crate) const DEFAULT_TABLESPACE: u32 = 1663;
pub(crate) const PG_CLASS: u32 = 1259;
pub(crate) const PG_CONSTRAINT: u32 = 2606;
/// The database PostgreSQL calls `postgres`.
pub(crate) const POSTGRES_DATABASE: u32 = 5;

/// FNV-1a over the parts, folded into the user OID range.
fn derive(parts: &[&str]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for b in part.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let span = u64::from(u32::MAX - FIRST_USER_OID);
    FIRST_USER_OID + ((h ^ (h >> 32)) % span) as u32
}

/// A table's or sequence's OID (pg_class.oid).
pub(crate) fn relation(t: &TableDef) -> u32 {
    derive(&[&t.id])
}

/// The OID of the index behind the primary key.
pub(crate) fn pkey_index(t: &TableDef) -> u32 {
    derive(&[&t.id, "pkey index"])
}

/// The OID of the primary key constraint.
pub(crate) fn pkey_constraint(t: &TableDef) -> u32 {
    derive(&[&t.id, "pkey constraint"])
}

/// The OID of the index behind a UNIQUE constraint or unique index.
pub(crate) fn unique_index(u: &UniqueDef) -> u32 {
    derive(&[&u.id, "index"])
}

/// The OID of a UNIQUE constraint.
pub(crate) fn unique_constraint(u: &UniqueDef) -> u32 {
    derive(&[&u.id, "constraint"])
}

/// The OID of the foreign key of `t` named `name` (names are unique among
/// a table's constraints).
pub(crate) fn foreign_key(t: &TableDef, name: &str) -> u32 {
    derive(&[&t.id, "foreign key", name])
}

/// The OID of a CHECK constraint of `t` (its pg_constraint row).
pub(crate) fn check(t: &TableDef, name: &str) -> u32 {
    derive(&[&t.id, "check", name])
}

/// The OID of a count limit of `t` (its pg_constraint row).
pub(crate) fn count_limit(t: &TableDef, name: &str) -> u32 {
    derive(&[&t.id, "count limit", name])
}

/// The OID of a plain index of `t`.
pub(crate) fn plain_index(t: &TableDef, name: &str) -> u32 {
    derive(&[&t.id, "index", name])
}

/// The OID of a column default (pg_attrdef.oid).
pub(crate) fn column_default(t: &TableDef, attnum: usize) -> u32 {
    derive(&[&t.id, "default", &attnum.to_string()])
}

/// The OID of a database keyclaim serves under `name`.
pub(crate) fn database(name: &str) -> u32 {
    if name == "postgres" {
        POSTGRES_DATABASE
    } else {
        derive(&["database", name])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_oids_are_stable_distinct_and_in_the_user_range() {
        let a = derive(&["t.0191"]);
        assert_eq!(a, derive(&["t.0191"]), "the same on every call");
        assert_ne!(a, derive(&["t.0192"]));
        // Parts are separated: ("ab", "c") is not ("a", "bc").
        assert_ne!(derive(&["ab", "c"]), derive(&["a", "bc"]));
        for i in 0..10_000 {
            assert!(derive(&[&i.to_string()]) >= FIRST_USER_OID);
        }
        assert_eq!(database("postgres"), 5);
    }
}
