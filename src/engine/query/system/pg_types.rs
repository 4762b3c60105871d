//! PostgreSQL's built-in data types, for pg_type, `format_type`,
//! `::regtype` and `to_regtype`.
//!
//! The list is the one rust-postgres keeps of PostgreSQL's built-in types
//! (names, OIDs, kinds, array and element types); what it does not carry
//! (storage length, category) is derived here from the type's name and
//! kind, as PostgreSQL's `pg_type.dat` declares them.

use std::collections::HashMap;
use std::sync::OnceLock;

use postgres_types::{Kind, Type};

use crate::types::{NumericMod, SqlType};

/// The highest OID a built-in type has.
const LAST_BUILTIN_OID: u32 = 10_000;

/// Every built-in type, by OID.
pub(super) fn builtin() -> &'static [Type] {
    static TYPES: OnceLock<Vec<Type>> = OnceLock::new();
    TYPES.get_or_init(|| (1..=LAST_BUILTIN_OID).filter_map(Type::from_oid).collect())
}

/// The array type of each element type.
fn arrays() -> &'static HashMap<u32, u32> {
    static ARRAYS: OnceLock<HashMap<u32, u32>> = OnceLock::new();
    ARRAYS.get_or_init(|| {
        builtin()
            .iter()
            .filter_map(|t| match t.kind() {
                Kind::Array(elem) => Some((elem.oid(), t.oid())),
                _ => None,
            })
            .collect()
    })
}

/// The array type whose elements are `oid` (0 when none).
pub(super) fn array_of(oid: u32) -> u32 {
    arrays().get(&oid).copied().unwrap_or(0)
}

/// pg_type.typlen.
pub(super) fn length(t: &Type) -> i16 {
    match t.name() {
        "bool" | "char" => 1,
        "int2" => 2,
        "int4" | "oid" | "xid" | "cid" | "float4" | "date" | "regproc" | "regprocedure"
        | "regoper" | "regoperator" | "regclass" | "regtype" | "regconfig" | "regdictionary"
        | "regnamespace" | "regrole" | "regcollation" | "anyelement" => 4,
        "int8" | "float8" | "time" | "timestamp" | "timestamptz" | "money" | "pg_lsn"
        | "macaddr8" | "xid8" => 8,
        "tid" | "macaddr" => 6,
        "timetz" => 12,
        "interval" | "uuid" | "point" => 16,
        "name" => 64,
        "cstring" | "unknown" => -2,
        _ => match t.kind() {
            Kind::Pseudo => 4,
            _ => -1,
        },
    }
}

/// pg_type.typtype.
pub(super) fn kind_letter(t: &Type) -> &'static str {
    match t.kind() {
        Kind::Pseudo => "p",
        Kind::Range(_) => "r",
        Kind::Multirange(_) => "m",
        Kind::Enum(_) => "e",
        Kind::Domain(_) => "d",
        Kind::Composite(_) => "c",
        _ => "b",
    }
}

/// pg_type.typcategory.
pub(super) fn category(t: &Type) -> &'static str {
    match t.kind() {
        Kind::Array(_) => return "A",
        Kind::Pseudo => return "P",
        Kind::Range(_) | Kind::Multirange(_) => return "R",
        Kind::Composite(_) => return "C",
        Kind::Enum(_) => return "E",
        _ => {}
    }
    match t.name() {
        "bool" => "B",
        "int2" | "int4" | "int8" | "float4" | "float8" | "numeric" | "money" | "oid"
        | "regproc" | "regprocedure" | "regoper" | "regoperator" | "regclass" | "regtype"
        | "regconfig" | "regdictionary" | "regnamespace" | "regrole" | "regcollation" => "N",
        "text" | "varchar" | "bpchar" | "name" | "char" => "S",
        "date" | "time" | "timetz" | "timestamp" | "timestamptz" => "D",
        "interval" => "T",
        "inet" | "cidr" => "I",
        "bit" | "varbit" => "V",
        "point" | "lseg" | "path" | "box" | "polygon" | "line" | "circle" => "G",
        "unknown" => "X",
        _ => "U",
    }
}

/// Whether a type is its category's preferred one (pg_type.typispreferred).
pub(super) fn preferred(t: &Type) -> bool {
    matches!(
        t.name(),
        "bool" | "float8" | "oid" | "text" | "timestamptz" | "interval" | "inet" | "varbit"
    )
}

/// pg_type.typinput / typoutput / typreceive / typsend: the I/O function
/// names, `-` where there is none.
pub(super) fn io_function(t: &Type, suffix: &str) -> String {
    let stem = match t.kind() {
        Kind::Array(_) => "array_".to_string(),
        Kind::Composite(_) => "record_".to_string(),
        Kind::Enum(_) => "enum_".to_string(),
        Kind::Range(_) => "range_".to_string(),
        Kind::Multirange(_) => "multirange_".to_string(),
        Kind::Domain(_) => "domain_".to_string(),
        _ => t.name().to_string(),
    };
    format!("{stem}{suffix}")
}

/// The element type's OID of an array type (pg_type.typelem), else 0.
pub(super) fn element(t: &Type) -> u32 {
    match t.kind() {
        Kind::Array(elem) => elem.oid(),
        _ => 0,
    }
}

/// A type's OID by the name SQL gives it (`integer`, `int4`,
/// `character varying`, `text[]`, `pg_catalog.bool`), as `::regtype`
/// reads it; None for a name that is no built-in type.
pub(crate) fn oid_by_name(name: &str) -> Option<u32> {
    let name = name.trim().to_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
    if let Some(elem) = name.strip_suffix("[]") {
        let a = array_of(oid_by_name(elem)?);
        return (a != 0).then_some(a);
    }
    // A type modifier does not change the type: varchar(20) is varchar.
    let bare = match name.find('(') {
        Some(i) => {
            let close = name.rfind(')')?;
            format!("{}{}", name[..i].trim_end(), &name[close + 1..])
        }
        None => name.to_string(),
    };
    let canonical = match bare.as_str() {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "character varying" => "varchar",
        "character" => "bpchar",
        "\"char\"" => "char",
        "decimal" => "numeric",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        "time without time zone" => "time",
        "time with time zone" => "timetz",
        "bit varying" => "varbit",
        other => other,
    };
    builtin()
        .iter()
        .find(|t| t.name() == canonical)
        .map(|t| t.oid())
}

/// `format_type(oid, typmod)`: the type's name in SQL, with its modifier.
pub(crate) fn format(oid: u32, typmod: Option<i32>) -> String {
    let Some(t) = Type::from_oid(oid) else {
        return "???".into();
    };
    if let Kind::Array(elem) = t.kind() {
        return format!("{}[]", format(elem.oid(), typmod));
    }
    let m = typmod.filter(|&m| m >= 0);
    let chars = |base: &str| match m {
        Some(m) if m >= 4 => format!("{base}({})", m - 4),
        _ => base.to_string(),
    };
    let precision = |base: &str, zone: &str| match m {
        Some(p) => format!("{base}({p}){zone}"),
        None => format!("{base}{zone}"),
    };
    match t.name() {
        "int2" => "smallint".into(),
        "int4" => "integer".into(),
        "int8" => "bigint".into(),
        "float4" => "real".into(),
        "float8" => "double precision".into(),
        "bool" => "boolean".into(),
        "varchar" => chars("character varying"),
        "bpchar" => match m {
            Some(_) => chars("character"),
            None => "bpchar".into(),
        },
        "char" => "\"char\"".into(),
        "numeric" => match m.and_then(NumericMod::from_typmod) {
            Some(n) => format!("numeric({},{})", n.precision, n.scale),
            None => "numeric".into(),
        },
        "timestamp" => precision("timestamp", " without time zone"),
        "timestamptz" => precision("timestamp", " with time zone"),
        "time" => precision("time", " without time zone"),
        "timetz" => precision("time", " with time zone"),
        "bit" => chars("bit"),
        "varbit" => chars("bit varying"),
        name => name.into(),
    }
}

/// The OID of a keyclaim column type.
pub(crate) fn of(ty: &SqlType) -> u32 {
    ty.pg_type().oid()
}

/// The btree equality operator (pg_operator OID) of a type's default
/// operator class; 0 for a type without one (json).
fn equality(ty: &SqlType) -> u32 {
    match ty {
        SqlType::Bool => 91,
        SqlType::Int2 => 94,
        SqlType::Int4 => 96,
        SqlType::Int8 => 410,
        SqlType::Float4 => 620,
        SqlType::Float8 => 670,
        SqlType::Numeric(_) => 1752,
        // varchar has no operators of its own: it uses text's.
        SqlType::Text | SqlType::Varchar(_) => 98,
        SqlType::Char(_) => 1054,
        SqlType::Bytea => 1955,
        SqlType::Uuid => 2972,
        SqlType::Date => 1093,
        SqlType::Timestamp => 2060,
        SqlType::TimestampTz => 1320,
        SqlType::Jsonb => 3240,
        SqlType::Oid => 607,
        SqlType::Array(_) => 1070,
        SqlType::Json | SqlType::Void => 0,
    }
}

/// The btree operator family of a type's default operator class: its
/// members compare values of any two of its types.
fn family(ty: &SqlType) -> &'static str {
    match ty {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => "integer_ops",
        SqlType::Float4 | SqlType::Float8 => "float_ops",
        SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz => "datetime_ops",
        SqlType::Text | SqlType::Varchar(_) => "text_ops",
        other => other.pg_name(),
    }
}

/// The cross-type equality of a family, `left = right`.
fn cross_equality(left: &SqlType, right: &SqlType) -> u32 {
    use SqlType::*;
    match (left, right) {
        (Int2, Int4) => 532,
        (Int2, Int8) => 1862,
        (Int4, Int2) => 533,
        (Int4, Int8) => 15,
        (Int8, Int2) => 1868,
        (Int8, Int4) => 416,
        (Float4, Float8) => 1120,
        (Float8, Float4) => 1130,
        (Date, Timestamp) => 2347,
        (Date, TimestampTz) => 2360,
        (Timestamp, Date) => 2373,
        (Timestamp, TimestampTz) => 2536,
        (TimestampTz, Date) => 2386,
        (TimestampTz, Timestamp) => 2542,
        _ => equality(left),
    }
}

/// The equality operators a foreign key column pair compares with, as
/// pg_constraint records them: (conpfeqop, conppeqop, conffeqop) for a
/// referenced column of type `pk` and a referencing one of type `fk`.
/// PostgreSQL takes them from the referenced index's operator family;
/// a referencing type outside it is cast to the referenced type first.
pub(super) fn foreign_key_equalities(pk: &SqlType, fk: &SqlType) -> (u32, u32, u32) {
    let pp = equality(pk);
    if family(pk) != family(fk) {
        return (pp, pp, pp);
    }
    let ff = equality(fk);
    let pf = if pp == ff { pp } else { cross_equality(pk, fk) };
    (pf, pp, ff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_oids_round_trip_as_postgresql_spells_them() {
        assert_eq!(oid_by_name("integer"), Some(23));
        assert_eq!(oid_by_name("INT4"), Some(23));
        assert_eq!(oid_by_name("pg_catalog.text"), Some(25));
        assert_eq!(oid_by_name("character varying(20)"), Some(1043));
        assert_eq!(oid_by_name("text[]"), Some(1009));
        assert_eq!(oid_by_name("timestamp with time zone"), Some(1184));
        assert_eq!(oid_by_name("no_such_type"), None);
        assert_eq!(format(23, None), "integer");
        assert_eq!(format(1043, Some(24)), "character varying(20)");
        assert_eq!(format(1043, Some(-1)), "character varying");
        assert_eq!(format(1042, Some(5)), "character(1)");
        assert_eq!(format(1700, Some((10 << 16 | 2) + 4)), "numeric(10,2)");
        // PostgreSQL 15's typmod keeps a negative scale in 11 bits.
        assert_eq!(format(1700, Some(264_194)), "numeric(4,-2)");
        assert_eq!(format(1700, Some(-1)), "numeric");
        assert_eq!(format(1184, None), "timestamp with time zone");
        assert_eq!(format(1007, None), "integer[]");
        assert_eq!(format(999_999, None), "???");
        assert_eq!(array_of(23), 1007);
        let int4 = Type::from_oid(23).unwrap();
        assert_eq!(
            (length(&int4), category(&int4), kind_letter(&int4)),
            (4, "N", "b")
        );
    }

    #[test]
    fn foreign_key_equalities_are_postgresqls() {
        use SqlType::*;
        // As PostgreSQL 15 records them for these column pairs.
        assert_eq!(foreign_key_equalities(&Int8, &Int8), (410, 410, 410));
        assert_eq!(foreign_key_equalities(&Int8, &Int4), (416, 410, 96));
        assert_eq!(
            foreign_key_equalities(&Numeric(None), &Int4),
            (1752, 1752, 1752)
        );
        assert_eq!(foreign_key_equalities(&Float8, &Float4), (1130, 670, 620));
        assert_eq!(foreign_key_equalities(&Text, &Varchar(None)), (98, 98, 98));
        assert_eq!(foreign_key_equalities(&Text, &Char(None)), (98, 98, 98));
        assert_eq!(
            foreign_key_equalities(&Char(None), &Text),
            (1054, 1054, 1054)
        );
        assert_eq!(
            foreign_key_equalities(&TimestampTz, &Timestamp),
            (2542, 1320, 2060)
        );
    }
}
