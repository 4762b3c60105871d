//! information_schema's views, as PostgreSQL 15 fills them, for the
//! relations keyclaim keeps. The catalog is the session's database; every
//! relation is in schema public; NOT NULL columns show as CHECK
//! constraints named `<namespace oid>_<table oid>_<column>_not_null`, as
//! PostgreSQL names them.

use super::oids::{self, PUBLIC_NAMESPACE};
use super::table::{row, Cell, Col::*, Def};
use super::{constraints_of, pg_catalog, Constraint, Snapshot};
use crate::catalog::{Identity, TableDef};
use crate::types::SqlType;

const SCHEMATA: Def = Def {
    name: "schemata",
    columns: &[
        ("catalog_name", Text),
        ("schema_name", Text),
        ("schema_owner", Text),
        ("default_character_set_catalog", Text),
        ("default_character_set_schema", Text),
        ("default_character_set_name", Text),
        ("sql_path", Text),
    ],
};

const TABLES: Def = Def {
    name: "tables",
    columns: &[
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("table_type", Text),
        ("self_referencing_column_name", Text),
        ("reference_generation", Text),
        ("user_defined_type_catalog", Text),
        ("user_defined_type_schema", Text),
        ("user_defined_type_name", Text),
        ("is_insertable_into", Text),
        ("is_typed", Text),
        ("commit_action", Text),
    ],
};

const COLUMNS: Def = Def {
    name: "columns",
    columns: &[
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("column_name", Text),
        ("ordinal_position", Int4),
        ("column_default", Text),
        ("is_nullable", Text),
        ("data_type", Text),
        ("character_maximum_length", Int4),
        ("character_octet_length", Int4),
        ("numeric_precision", Int4),
        ("numeric_precision_radix", Int4),
        ("numeric_scale", Int4),
        ("datetime_precision", Int4),
        ("interval_type", Text),
        ("interval_precision", Int4),
        ("character_set_catalog", Text),
        ("character_set_schema", Text),
        ("character_set_name", Text),
        ("collation_catalog", Text),
        ("collation_schema", Text),
        ("collation_name", Text),
        ("domain_catalog", Text),
        ("domain_schema", Text),
        ("domain_name", Text),
        ("udt_catalog", Text),
        ("udt_schema", Text),
        ("udt_name", Text),
        ("scope_catalog", Text),
        ("scope_schema", Text),
        ("scope_name", Text),
        ("maximum_cardinality", Int4),
        ("dtd_identifier", Text),
        ("is_self_referencing", Text),
        ("is_identity", Text),
        ("identity_generation", Text),
        ("identity_start", Text),
        ("identity_increment", Text),
        ("identity_maximum", Text),
        ("identity_minimum", Text),
        ("identity_cycle", Text),
        ("is_generated", Text),
        ("generation_expression", Text),
        ("is_updatable", Text),
    ],
};

const TABLE_CONSTRAINTS: Def = Def {
    name: "table_constraints",
    columns: &[
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("constraint_type", Text),
        ("is_deferrable", Text),
        ("initially_deferred", Text),
        ("enforced", Text),
        ("nulls_distinct", Text),
    ],
};

const KEY_COLUMN_USAGE: Def = Def {
    name: "key_column_usage",
    columns: &[
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("column_name", Text),
        ("ordinal_position", Int4),
        ("position_in_unique_constraint", Int4),
    ],
};

const CONSTRAINT_COLUMN_USAGE: Def = Def {
    name: "constraint_column_usage",
    columns: &[
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("column_name", Text),
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
    ],
};

const REFERENTIAL_CONSTRAINTS: Def = Def {
    name: "referential_constraints",
    columns: &[
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
        ("unique_constraint_catalog", Text),
        ("unique_constraint_schema", Text),
        ("unique_constraint_name", Text),
        ("match_option", Text),
        ("update_rule", Text),
        ("delete_rule", Text),
    ],
};

const CHECK_CONSTRAINTS: Def = Def {
    name: "check_constraints",
    columns: &[
        ("constraint_catalog", Text),
        ("constraint_schema", Text),
        ("constraint_name", Text),
        ("check_clause", Text),
    ],
};

const SEQUENCES: Def = Def {
    name: "sequences",
    columns: &[
        ("sequence_catalog", Text),
        ("sequence_schema", Text),
        ("sequence_name", Text),
        ("data_type", Text),
        ("numeric_precision", Int4),
        ("numeric_precision_radix", Int4),
        ("numeric_scale", Int4),
        ("start_value", Text),
        ("minimum_value", Text),
        ("maximum_value", Text),
        ("increment", Text),
        ("cycle_option", Text),
    ],
};

const VIEWS: Def = Def {
    name: "views",
    columns: &[
        ("table_catalog", Text),
        ("table_schema", Text),
        ("table_name", Text),
        ("view_definition", Text),
        ("check_option", Text),
        ("is_updatable", Text),
        ("is_insertable_into", Text),
        ("is_trigger_updatable", Text),
        ("is_trigger_deletable", Text),
        ("is_trigger_insertable_into", Text),
    ],
};

const ROUTINES: Def = Def {
    name: "routines",
    columns: &[
        ("specific_catalog", Text),
        ("specific_schema", Text),
        ("specific_name", Text),
        ("routine_catalog", Text),
        ("routine_schema", Text),
        ("routine_name", Text),
        ("routine_type", Text),
        ("data_type", Text),
    ],
};

/// information_schema's views, with OIDs of keyclaim's in PostgreSQL's
/// range for them.
pub(super) const RELATIONS: &[(&Def, u32)] = &[
    (&CHECK_CONSTRAINTS, 13_300),
    (&COLUMNS, 13_310),
    (&CONSTRAINT_COLUMN_USAGE, 13_320),
    (&KEY_COLUMN_USAGE, 13_330),
    (&REFERENTIAL_CONSTRAINTS, 13_340),
    (&ROUTINES, 13_345),
    (&SCHEMATA, 13_350),
    (&SEQUENCES, 13_360),
    (&TABLE_CONSTRAINTS, 13_370),
    (&TABLES, 13_380),
    (&VIEWS, 13_390),
];

/// The views that are empty in keyclaim: it has no views or routines of
/// its own.
pub(super) const EMPTY: &[&str] = &["routines", "views"];

/// The rows of the information_schema view `name`.
pub(super) fn rows(name: &str, s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    if EMPTY.contains(&name) {
        return Vec::new();
    }
    match name {
        "schemata" => ["information_schema", "pg_catalog", "pg_toast", "public"]
            .into_iter()
            .map(|schema| row![db, schema, &s.user])
            .collect(),
        "tables" => tables(s),
        "columns" => s.tables().flat_map(|t| columns(s, t)).collect(),
        "table_constraints" => table_constraints(s),
        "key_column_usage" => key_column_usage(s),
        "constraint_column_usage" => constraint_column_usage(s),
        "referential_constraints" => referential_constraints(s),
        "check_constraints" => s
            .tables()
            .flat_map(|t| {
                let checks = t.checks.iter().map(move |c| {
                    row![db, "public", &c.name, crate::sql::check::check_clause(t, c)]
                });
                let not_nulls = not_nulls(t).map(move |(name, col)| {
                    row![db, "public", name, format!("{} IS NOT NULL", quote(col))]
                });
                checks.chain(not_nulls)
            })
            .collect(),
        "sequences" => sequences(s),
        _ => Vec::new(),
    }
}

fn quote(name: &str) -> String {
    crate::catalog::naming::quote_ident(name)
}

fn tables(s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    let user = s.tables().map(|t| {
        row![
            db,
            "public",
            &t.name,
            "BASE TABLE",
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            "YES",
            "NO",
            Cell::Null,
        ]
    });
    let system = pg_catalog::RELATIONS
        .iter()
        .map(|(d, _)| ("pg_catalog", d.name, pg_catalog::is_view(d.name)))
        .chain(
            RELATIONS
                .iter()
                .map(|(d, _)| ("information_schema", d.name, true)),
        )
        .map(|(schema, name, view)| {
            let (kind, insertable) = if view {
                ("VIEW", "NO")
            } else {
                ("BASE TABLE", "YES")
            };
            row![
                db,
                schema,
                name,
                kind,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                insertable,
                "NO",
                Cell::Null,
            ]
        });
    user.chain(system).collect()
}

/// The data_type column's spelling and the numeric facts of a type.
struct TypeFacts {
    data_type: &'static str,
    char_max: Option<i64>,
    octet_max: Option<i64>,
    precision: Option<i64>,
    radix: Option<i64>,
    scale: Option<i64>,
    datetime: Option<i64>,
}

fn facts(ty: &SqlType) -> TypeFacts {
    let mut f = TypeFacts {
        data_type: ty.pg_name(),
        char_max: None,
        octet_max: None,
        precision: None,
        radix: None,
        scale: None,
        datetime: None,
    };
    match ty {
        SqlType::Int2 => (f.precision, f.radix, f.scale) = (Some(16), Some(2), Some(0)),
        SqlType::Int4 => (f.precision, f.radix, f.scale) = (Some(32), Some(2), Some(0)),
        SqlType::Int8 => (f.precision, f.radix, f.scale) = (Some(64), Some(2), Some(0)),
        SqlType::Float4 => (f.precision, f.radix) = (Some(24), Some(2)),
        SqlType::Float8 => (f.precision, f.radix) = (Some(53), Some(2)),
        SqlType::Numeric(None) => f.radix = Some(10),
        SqlType::Numeric(Some(m)) => {
            // PostgreSQL 15's view reads the scale as the typmod's low 16
            // bits, where a negative scale has its 11-bit form (2046 for -2).
            let scale = i64::from(m.typmod() - 4) & 0xffff;
            (f.precision, f.radix, f.scale) = (Some(m.precision.into()), Some(10), Some(scale));
        }
        SqlType::Text => f.octet_max = Some(1_073_741_824),
        SqlType::Varchar(n) | SqlType::Char(n) => {
            let n = match ty {
                SqlType::Char(None) => Some(1),
                _ => n.map(i64::from),
            };
            f.char_max = n;
            f.octet_max = Some(n.map_or(1_073_741_824, |n| n * 4));
        }
        SqlType::Date => f.datetime = Some(0),
        SqlType::Timestamp | SqlType::TimestampTz => f.datetime = Some(6),
        // The element's facts are element_types' business, not the column's.
        SqlType::Array(_) => f.data_type = "ARRAY",
        _ => {}
    }
    f
}

fn columns<'a>(s: &'a Snapshot, t: &'a TableDef) -> impl Iterator<Item = Vec<Cell>> + 'a {
    let db = s.database.as_str();
    t.visible().iter().enumerate().map(move |(i, c)| {
        let f = facts(&c.ty);
        let nullable = !c.not_null;
        let udt = postgres_type_name(&c.ty);
        let identity = c.identity.map(|g| match g {
            Identity::Always => "ALWAYS",
            Identity::ByDefault => "BY DEFAULT",
        });
        let seq = identity
            .and_then(|_| crate::engine::sequence::owned_sequence(c))
            .and_then(|name| s.named(&name))
            .and_then(|r| r.sequence.clone());
        let default = super::shown_default(c);
        row![
            db,
            "public",
            &t.name,
            &c.name,
            t.attnum(i),
            default,
            yes_no(nullable),
            f.data_type,
            f.char_max,
            f.octet_max,
            f.precision,
            f.radix,
            f.scale,
            f.datetime,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            db,
            "pg_catalog",
            udt,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            Cell::Null,
            t.attnum(i).to_string(),
            "NO",
            yes_no(identity.is_some()),
            identity,
            seq.as_ref().map(|q| q.start.to_string()),
            seq.as_ref().map(|q| q.increment.to_string()),
            seq.as_ref().map(|q| q.max.to_string()),
            seq.as_ref().map(|q| q.min.to_string()),
            seq.as_ref().map(|q| yes_no(q.cycle)),
            "NEVER",
            Cell::Null,
            "YES",
        ]
    })
}

/// The type's name in pg_type (udt_name): int4, varchar, timestamptz.
fn postgres_type_name(ty: &SqlType) -> String {
    ty.pg_type().name().to_string()
}

/// A table's NOT NULL columns as PostgreSQL names their CHECK constraints.
fn not_nulls(t: &TableDef) -> impl Iterator<Item = (String, &str)> {
    let rel = oids::relation(t);
    t.visible()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.not_null)
        .map(move |(i, c)| {
            (
                format!("{PUBLIC_NAMESPACE}_{rel}_{}_not_null", t.attnum(i)),
                c.name.as_str(),
            )
        })
}

fn table_constraints(s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    let mut out = Vec::new();
    for t in s.tables() {
        for c in constraints_of(s, t) {
            // nulls_distinct is only a unique constraint's.
            let (kind, distinct) = match c.kind {
                "p" => ("PRIMARY KEY", None),
                "f" => ("FOREIGN KEY", None),
                "c" => ("CHECK", None),
                _ if c.nulls_not_distinct => ("UNIQUE", Some("NO")),
                _ => ("UNIQUE", Some("YES")),
            };
            let def = c.reference.as_ref().map(|r| r.def);
            let deferrable = yes_no(def.is_some_and(|d| d.deferrable));
            let deferred = yes_no(def.is_some_and(|d| d.initially_deferred));
            out.push(row![
                db, "public", c.name, db, "public", &t.name, kind, deferrable, deferred, "YES",
                distinct,
            ]);
        }
        for (name, _) in not_nulls(t) {
            out.push(row![
                db,
                "public",
                name,
                db,
                "public",
                &t.name,
                "CHECK",
                "NO",
                "NO",
                "YES",
                Cell::Null,
            ]);
        }
    }
    out
}

/// A truth as information_schema spells it (its `yes_or_no` domain).
fn yes_no(b: bool) -> &'static str {
    if b {
        "YES"
    } else {
        "NO"
    }
}

/// One row per constraint column, in key order; a foreign key's with the
/// position of the column it references in the referenced key's index.
fn key_column_usage(s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    let mut out = Vec::new();
    // A CHECK constraint has no key columns.
    for c in s.constraints().filter(|c| c.kind != "c") {
        for (n, &i) in c.columns.iter().enumerate() {
            let position = c.reference.as_ref().and_then(|r| {
                let referenced = r.def.ref_columns.get(n)?;
                Some(r.index.columns.iter().position(|k| k == referenced)? + 1)
            });
            out.push(row![
                db,
                "public",
                c.name,
                db,
                "public",
                &c.table.name,
                &c.table.columns[i].name,
                n + 1,
                position
            ]);
        }
    }
    out
}

/// One row per column a constraint uses: for a foreign key, as in
/// PostgreSQL, the referenced columns.
fn constraint_column_usage(s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    let mut out = Vec::new();
    for c in s.constraints() {
        let (table, columns) = match &c.reference {
            Some(r) => (r.table, r.def.ref_columns.as_slice()),
            None => (c.table, c.columns),
        };
        for &i in columns {
            out.push(row![
                db,
                "public",
                &table.name,
                &table.columns[i].name,
                db,
                "public",
                c.name
            ]);
        }
    }
    out
}

/// One row per foreign key: the constraint of the index it uses (none
/// for a unique index of its own), MATCH SIMPLE (`NONE`) and its actions.
fn referential_constraints(s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    s.constraints()
        .filter_map(|c: Constraint<'_>| {
            let r = c.reference.as_ref()?;
            let unique = r.index.constraint.map(|_| r.index.name);
            Some(row![
                db,
                "public",
                c.name,
                unique.map(|_| db),
                unique.map(|_| "public"),
                unique,
                "NONE",
                r.def.on_update.sql(),
                r.def.on_delete.sql(),
            ])
        })
        .collect()
}

fn sequences(s: &Snapshot) -> Vec<Vec<Cell>> {
    let db = s.database.as_str();
    // An identity column's sequence is not listed, as in PostgreSQL.
    let identity: Vec<String> = s
        .tables()
        .flat_map(|t| t.columns.iter())
        .filter(|c| c.identity.is_some())
        .filter_map(crate::engine::sequence::owned_sequence)
        .collect();
    s.sequences()
        .filter(|q| !identity.contains(&q.name))
        .filter_map(|q| {
            let d = q.sequence.as_ref()?;
            let bits = match d.ty {
                SqlType::Int2 => 16i64,
                SqlType::Int4 => 32,
                _ => 64,
            };
            Some(row![
                db,
                "public",
                &q.name,
                d.ty.pg_name(),
                bits,
                2i64,
                0i64,
                d.start.to_string(),
                d.min.to_string(),
                d.max.to_string(),
                d.increment.to_string(),
                yes_no(d.cycle),
            ])
        })
        .collect()
}
