//! pg_catalog's relations, with PostgreSQL 15's columns, filled from the
//! snapshot. Columns keep PostgreSQL's order; `name`, `"char"` and the
//! regproc columns are text, `oid` and the reg* OIDs unsigned integers.

use postgres_types::Type;

use super::oids::{self, PG_CATALOG_NAMESPACE, PUBLIC_NAMESPACE, SUPERUSER};
use super::table::{list, row, Cell, Col::*, Def};
use super::{indexes_of, pg_types, Constraint, Reference, Snapshot};
use crate::catalog::{ForeignKeyDef, Identity, RefAction, TableDef};
use crate::types::SqlType;

const PG_NAMESPACE: Def = Def {
    name: "pg_namespace",
    columns: &[
        ("oid", Oid),
        ("nspname", Text),
        ("nspowner", Oid),
        ("nspacl", TextList),
    ],
};

const PG_CLASS: Def = Def {
    name: "pg_class",
    columns: &[
        ("oid", Oid),
        ("relname", Text),
        ("relnamespace", Oid),
        ("reltype", Oid),
        ("reloftype", Oid),
        ("relowner", Oid),
        ("relam", Oid),
        ("relfilenode", Oid),
        ("reltablespace", Oid),
        ("relpages", Int4),
        ("reltuples", Float4),
        ("relallvisible", Int4),
        ("reltoastrelid", Oid),
        ("relhasindex", Bool),
        ("relisshared", Bool),
        ("relpersistence", Text),
        ("relkind", Text),
        ("relnatts", Int2),
        ("relchecks", Int2),
        ("relhasrules", Bool),
        ("relhastriggers", Bool),
        ("relhassubclass", Bool),
        ("relrowsecurity", Bool),
        ("relforcerowsecurity", Bool),
        ("relispopulated", Bool),
        ("relreplident", Text),
        ("relispartition", Bool),
        ("relrewrite", Oid),
        ("relfrozenxid", Text),
        ("relminmxid", Text),
        ("relacl", TextList),
        ("reloptions", TextList),
        ("relpartbound", Text),
    ],
};

const PG_ATTRIBUTE: Def = Def {
    name: "pg_attribute",
    columns: &[
        ("attrelid", Oid),
        ("attname", Text),
        ("atttypid", Oid),
        ("attstattarget", Int4),
        ("attlen", Int2),
        ("attnum", Int2),
        ("attndims", Int4),
        ("attcacheoff", Int4),
        ("atttypmod", Int4),
        ("attbyval", Bool),
        ("attalign", Text),
        ("attstorage", Text),
        ("attcompression", Text),
        ("attnotnull", Bool),
        ("atthasdef", Bool),
        ("atthasmissing", Bool),
        ("attidentity", Text),
        ("attgenerated", Text),
        ("attisdropped", Bool),
        ("attislocal", Bool),
        ("attinhcount", Int4),
        ("attcollation", Oid),
        ("attacl", TextList),
        ("attoptions", TextList),
        ("attfdwoptions", TextList),
        ("attmissingval", TextList),
    ],
};

const PG_TYPE: Def = Def {
    name: "pg_type",
    columns: &[
        ("oid", Oid),
        ("typname", Text),
        ("typnamespace", Oid),
        ("typowner", Oid),
        ("typlen", Int2),
        ("typbyval", Bool),
        ("typtype", Text),
        ("typcategory", Text),
        ("typispreferred", Bool),
        ("typisdefined", Bool),
        ("typdelim", Text),
        ("typrelid", Oid),
        ("typsubscript", Text),
        ("typelem", Oid),
        ("typarray", Oid),
        ("typinput", Text),
        ("typoutput", Text),
        ("typreceive", Text),
        ("typsend", Text),
        ("typmodin", Text),
        ("typmodout", Text),
        ("typanalyze", Text),
        ("typalign", Text),
        ("typstorage", Text),
        ("typnotnull", Bool),
        ("typbasetype", Oid),
        ("typtypmod", Int4),
        ("typndims", Int4),
        ("typcollation", Oid),
        ("typdefaultbin", Text),
        ("typdefault", Text),
        ("typacl", TextList),
    ],
};

const PG_INDEX: Def = Def {
    name: "pg_index",
    columns: &[
        ("indexrelid", Oid),
        ("indrelid", Oid),
        ("indnatts", Int2),
        ("indnkeyatts", Int2),
        ("indisunique", Bool),
        ("indnullsnotdistinct", Bool),
        ("indisprimary", Bool),
        ("indisexclusion", Bool),
        ("indimmediate", Bool),
        ("indisclustered", Bool),
        ("indisvalid", Bool),
        ("indcheckxmin", Bool),
        ("indisready", Bool),
        ("indislive", Bool),
        ("indisreplident", Bool),
        ("indkey", Int2Vector),
        ("indcollation", OidVector),
        ("indclass", OidVector),
        ("indoption", Int2Vector),
        ("indexprs", Text),
        ("indpred", Text),
    ],
};

const PG_CONSTRAINT: Def = Def {
    name: "pg_constraint",
    columns: &[
        ("oid", Oid),
        ("conname", Text),
        ("connamespace", Oid),
        ("contype", Text),
        ("condeferrable", Bool),
        ("condeferred", Bool),
        ("convalidated", Bool),
        ("conrelid", Oid),
        ("contypid", Oid),
        ("conindid", Oid),
        ("conparentid", Oid),
        ("confrelid", Oid),
        ("confupdtype", Text),
        ("confdeltype", Text),
        ("confmatchtype", Text),
        ("conislocal", Bool),
        ("coninhcount", Int4),
        ("connoinherit", Bool),
        ("conkey", Int2List),
        ("confkey", Int2List),
        ("conpfeqop", OidList),
        ("conppeqop", OidList),
        ("conffeqop", OidList),
        ("confdelsetcols", Int2List),
        ("conexclop", OidList),
        ("conbin", Text),
    ],
};

const PG_ATTRDEF: Def = Def {
    name: "pg_attrdef",
    columns: &[
        ("oid", Oid),
        ("adrelid", Oid),
        ("adnum", Int2),
        ("adbin", Text),
    ],
};

const PG_DESCRIPTION: Def = Def {
    name: "pg_description",
    columns: &[
        ("objoid", Oid),
        ("classoid", Oid),
        ("objsubid", Int4),
        ("description", Text),
    ],
};

const PG_SEQUENCE: Def = Def {
    name: "pg_sequence",
    columns: &[
        ("seqrelid", Oid),
        ("seqtypid", Oid),
        ("seqstart", Int8),
        ("seqincrement", Int8),
        ("seqmax", Int8),
        ("seqmin", Int8),
        ("seqcache", Int8),
        ("seqcycle", Bool),
    ],
};

const PG_SEQUENCES: Def = Def {
    name: "pg_sequences",
    columns: &[
        ("schemaname", Text),
        ("sequencename", Text),
        ("sequenceowner", Text),
        ("data_type", Text),
        ("start_value", Int8),
        ("min_value", Int8),
        ("max_value", Int8),
        ("increment_by", Int8),
        ("cycle", Bool),
        ("cache_size", Int8),
        ("last_value", Int8),
    ],
};

const PG_AM: Def = Def {
    name: "pg_am",
    columns: &[
        ("oid", Oid),
        ("amname", Text),
        ("amhandler", Text),
        ("amtype", Text),
    ],
};

const PG_OPCLASS: Def = Def {
    name: "pg_opclass",
    columns: &[
        ("oid", Oid),
        ("opcmethod", Oid),
        ("opcname", Text),
        ("opcnamespace", Oid),
        ("opcowner", Oid),
        ("opcfamily", Oid),
        ("opcintype", Oid),
        ("opcdefault", Bool),
        ("opckeytype", Oid),
    ],
};

const PG_DATABASE: Def = Def {
    name: "pg_database",
    columns: &[
        ("oid", Oid),
        ("datname", Text),
        ("datdba", Oid),
        ("encoding", Int4),
        ("datlocprovider", Text),
        ("datistemplate", Bool),
        ("datallowconn", Bool),
        ("datconnlimit", Int4),
        ("datfrozenxid", Text),
        ("datminmxid", Text),
        ("dattablespace", Oid),
        ("datcollate", Text),
        ("datctype", Text),
        ("daticulocale", Text),
        ("datcollversion", Text),
        ("datacl", TextList),
    ],
};

/// Locks, as PostgreSQL's pg_locks view: keyclaim's only locks a session
/// holds by name are advisory locks (`waitstart` as text: keyclaim lists
/// no waiting locks, so it is always NULL).
const PG_LOCKS: Def = Def {
    name: "pg_locks",
    columns: &[
        ("locktype", Text),
        ("database", Oid),
        ("relation", Oid),
        ("page", Int4),
        ("tuple", Int2),
        ("virtualxid", Text),
        ("transactionid", Text),
        ("classid", Oid),
        ("objid", Oid),
        ("objsubid", Int2),
        ("virtualtransaction", Text),
        ("pid", Int4),
        ("mode", Text),
        ("granted", Bool),
        ("fastpath", Bool),
        ("waitstart", Text),
    ],
};

const PG_ROLES: Def = Def {
    name: "pg_roles",
    columns: &[
        ("rolname", Text),
        ("rolsuper", Bool),
        ("rolinherit", Bool),
        ("rolcreaterole", Bool),
        ("rolcreatedb", Bool),
        ("rolcanlogin", Bool),
        ("rolreplication", Bool),
        ("rolconnlimit", Int4),
        ("rolpassword", Text),
        ("rolvaliduntil", Text),
        ("rolbypassrls", Bool),
        ("rolconfig", TextList),
        ("oid", Oid),
    ],
};

const PG_USER: Def = Def {
    name: "pg_user",
    columns: &[
        ("usename", Text),
        ("usesysid", Oid),
        ("usecreatedb", Bool),
        ("usesuper", Bool),
        ("userepl", Bool),
        ("usebypassrls", Bool),
        ("passwd", Text),
        ("valuntil", Text),
        ("useconfig", TextList),
    ],
};

const PG_SETTINGS: Def = Def {
    name: "pg_settings",
    columns: &[
        ("name", Text),
        ("setting", Text),
        ("unit", Text),
        ("category", Text),
        ("short_desc", Text),
        ("extra_desc", Text),
        ("context", Text),
        ("vartype", Text),
        ("source", Text),
        ("min_val", Text),
        ("max_val", Text),
        ("enumvals", TextList),
        ("boot_val", Text),
        ("reset_val", Text),
        ("sourcefile", Text),
        ("sourceline", Int4),
        ("pending_restart", Bool),
    ],
};

const PG_TABLES: Def = Def {
    name: "pg_tables",
    columns: &[
        ("schemaname", Text),
        ("tablename", Text),
        ("tableowner", Text),
        ("tablespace", Text),
        ("hasindexes", Bool),
        ("hasrules", Bool),
        ("hastriggers", Bool),
        ("rowsecurity", Bool),
    ],
};

const PG_INDEXES: Def = Def {
    name: "pg_indexes",
    columns: &[
        ("schemaname", Text),
        ("tablename", Text),
        ("indexname", Text),
        ("tablespace", Text),
        ("indexdef", Text),
    ],
};

const PG_PROC: Def = Def {
    name: "pg_proc",
    columns: &[
        ("oid", Oid),
        ("proname", Text),
        ("pronamespace", Oid),
        ("proowner", Oid),
        ("prolang", Oid),
        ("procost", Float4),
        ("prorows", Float4),
        ("provariadic", Oid),
        ("prosupport", Text),
        ("prokind", Text),
        ("prosecdef", Bool),
        ("proleakproof", Bool),
        ("proisstrict", Bool),
        ("proretset", Bool),
        ("provolatile", Text),
        ("proparallel", Text),
        ("pronargs", Int2),
        ("pronargdefaults", Int2),
        ("prorettype", Oid),
        ("proargtypes", OidVector),
        ("proallargtypes", OidList),
        ("proargmodes", TextList),
        ("proargnames", TextList),
        ("proargdefaults", Text),
        ("protrftypes", OidList),
        ("prosrc", Text),
        ("probin", Text),
        ("prosqlbody", Text),
        ("proconfig", TextList),
        ("proacl", TextList),
    ],
};

const PG_DEPEND: Def = Def {
    name: "pg_depend",
    columns: &[
        ("classid", Oid),
        ("objid", Oid),
        ("objsubid", Int4),
        ("refclassid", Oid),
        ("refobjid", Oid),
        ("refobjsubid", Int4),
        ("deptype", Text),
    ],
};

const PG_TABLESPACE: Def = Def {
    name: "pg_tablespace",
    columns: &[
        ("oid", Oid),
        ("spcname", Text),
        ("spcowner", Oid),
        ("spcacl", TextList),
        ("spcoptions", TextList),
    ],
};

const PG_INHERITS: Def = Def {
    name: "pg_inherits",
    columns: &[
        ("inhrelid", Oid),
        ("inhparent", Oid),
        ("inhseqno", Int4),
        ("inhdetachpending", Bool),
    ],
};

const PG_TRIGGER: Def = Def {
    name: "pg_trigger",
    columns: &[
        ("oid", Oid),
        ("tgrelid", Oid),
        ("tgparentid", Oid),
        ("tgname", Text),
        ("tgfoid", Oid),
        ("tgtype", Int2),
        ("tgenabled", Text),
        ("tgisinternal", Bool),
        ("tgconstrrelid", Oid),
        ("tgconstrindid", Oid),
        ("tgconstraint", Oid),
        ("tgdeferrable", Bool),
        ("tginitdeferred", Bool),
        ("tgnargs", Int2),
        ("tgattr", Int2Vector),
        ("tgqual", Text),
        ("tgoldtable", Text),
        ("tgnewtable", Text),
    ],
};

const PG_ENUM: Def = Def {
    name: "pg_enum",
    columns: &[
        ("oid", Oid),
        ("enumtypid", Oid),
        ("enumsortorder", Float4),
        ("enumlabel", Text),
    ],
};

const PG_RANGE: Def = Def {
    name: "pg_range",
    columns: &[
        ("rngtypid", Oid),
        ("rngsubtype", Oid),
        ("rngmultitypid", Oid),
        ("rngcollation", Oid),
        ("rngsubopc", Oid),
        ("rngcanonical", Text),
        ("rngsubdiff", Text),
    ],
};

const PG_EXTENSION: Def = Def {
    name: "pg_extension",
    columns: &[
        ("oid", Oid),
        ("extname", Text),
        ("extowner", Oid),
        ("extnamespace", Oid),
        ("extrelocatable", Bool),
        ("extversion", Text),
        ("extconfig", OidList),
        ("extcondition", TextList),
    ],
};

const PG_COLLATION: Def = Def {
    name: "pg_collation",
    columns: &[
        ("oid", Oid),
        ("collname", Text),
        ("collnamespace", Oid),
        ("collowner", Oid),
        ("collprovider", Text),
        ("collisdeterministic", Bool),
        ("collencoding", Int4),
        ("collcollate", Text),
        ("collctype", Text),
    ],
};

const PG_POLICY: Def = Def {
    name: "pg_policy",
    columns: &[
        ("oid", Oid),
        ("polname", Text),
        ("polrelid", Oid),
        ("polcmd", Text),
        ("polpermissive", Bool),
        ("polroles", OidList),
        ("polqual", Text),
        ("polwithcheck", Text),
    ],
};

const PG_STATISTIC_EXT: Def = Def {
    name: "pg_statistic_ext",
    columns: &[
        ("oid", Oid),
        ("stxrelid", Oid),
        ("stxname", Text),
        ("stxnamespace", Oid),
        ("stxowner", Oid),
        ("stxstattarget", Int4),
        ("stxkeys", Int2Vector),
        ("stxkind", TextList),
        ("stxexprs", Text),
    ],
};

const PG_PUBLICATION: Def = Def {
    name: "pg_publication",
    columns: &[
        ("oid", Oid),
        ("pubname", Text),
        ("pubowner", Oid),
        ("puballtables", Bool),
        ("pubinsert", Bool),
        ("pubupdate", Bool),
        ("pubdelete", Bool),
        ("pubtruncate", Bool),
        ("pubviaroot", Bool),
    ],
};

const PG_REWRITE: Def = Def {
    name: "pg_rewrite",
    columns: &[
        ("oid", Oid),
        ("rulename", Text),
        ("ev_class", Oid),
        ("ev_type", Text),
        ("ev_enabled", Text),
        ("is_instead", Bool),
        ("ev_qual", Text),
        ("ev_action", Text),
    ],
};

const PG_AUTH_MEMBERS: Def = Def {
    name: "pg_auth_members",
    columns: &[
        ("roleid", Oid),
        ("member", Oid),
        ("grantor", Oid),
        ("admin_option", Bool),
    ],
};

const PG_PUBLICATION_NAMESPACE: Def = Def {
    name: "pg_publication_namespace",
    columns: &[("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)],
};

const PG_PUBLICATION_REL: Def = Def {
    name: "pg_publication_rel",
    columns: &[
        ("oid", Oid),
        ("prpubid", Oid),
        ("prrelid", Oid),
        ("prqual", Text),
        ("prattrs", Int2Vector),
    ],
};

const PG_VIEWS: Def = Def {
    name: "pg_views",
    columns: &[
        ("schemaname", Text),
        ("viewname", Text),
        ("viewowner", Text),
        ("definition", Text),
    ],
};

const PG_MATVIEWS: Def = Def {
    name: "pg_matviews",
    columns: &[
        ("schemaname", Text),
        ("matviewname", Text),
        ("matviewowner", Text),
        ("tablespace", Text),
        ("hasindexes", Bool),
        ("ispopulated", Bool),
        ("definition", Text),
    ],
};

/// pg_catalog's relations, with the OIDs PostgreSQL gives them (views: a
/// number of keyclaim's in PostgreSQL's range for them).
pub(super) const RELATIONS: &[(&Def, u32)] = &[
    (&PG_AM, 2601),
    (&PG_ATTRDEF, 2604),
    (&PG_ATTRIBUTE, 1249),
    (&PG_AUTH_MEMBERS, 1261),
    (&PG_CLASS, oids::PG_CLASS),
    (&PG_COLLATION, 3456),
    (&PG_CONSTRAINT, oids::PG_CONSTRAINT),
    (&PG_DATABASE, 1262),
    (&PG_DEPEND, 2608),
    (&PG_DESCRIPTION, 2609),
    (&PG_ENUM, 3501),
    (&PG_EXTENSION, 3079),
    (&PG_INDEX, 2610),
    (&PG_INDEXES, 12_040),
    (&PG_INHERITS, 2611),
    (&PG_LOCKS, 12_090),
    (&PG_MATVIEWS, 12_045),
    (&PG_NAMESPACE, 2615),
    (&PG_OPCLASS, 2616),
    (&PG_POLICY, 3256),
    (&PG_PROC, 1255),
    (&PG_PUBLICATION, 6104),
    (&PG_PUBLICATION_NAMESPACE, 6237),
    (&PG_PUBLICATION_REL, 6106),
    (&PG_RANGE, 3541),
    (&PG_REWRITE, 2618),
    (&PG_ROLES, 12_001),
    (&PG_SEQUENCE, 2224),
    (&PG_SEQUENCES, 12_050),
    (&PG_SETTINGS, 12_070),
    (&PG_STATISTIC_EXT, 3381),
    (&PG_TABLES, 12_030),
    (&PG_TABLESPACE, 1213),
    (&PG_TRIGGER, 2620),
    (&PG_TYPE, 1247),
    (&PG_USER, 12_010),
    (&PG_VIEWS, 12_020),
];

/// Hidden relations, one per catalog array of attribute numbers: each
/// element with its row's OID and its position, which is what
/// `unnest(c.conkey) WITH ORDINALITY` of an outer row reads once
/// `from_functions::lateral_key_arrays` has turned it into a join. Not
/// listed in pg_class; their names cannot be written unquoted.
pub(super) const ELEMENTS: &[(&Def, u32)] = &[
    (&CONKEY_ELEMENTS, 0),
    (&CONFKEY_ELEMENTS, 0),
    (&INDKEY_ELEMENTS, 0),
    (&RELOPTIONS_ELEMENTS, 0),
];

/// The hidden relation of the array column `column`, with the column of
/// its owner's OID in the catalog that has it, and whether its rows carry
/// the array that goes with it element by element (`indoption` with
/// `indkey`) after the element.
pub(crate) fn elements_of(column: &str) -> Option<(&'static str, &'static str, bool)> {
    Some(match column {
        "conkey" => (CONKEY_ELEMENTS.name, "oid", false),
        "confkey" => (CONFKEY_ELEMENTS.name, "oid", false),
        "indkey" => (INDKEY_ELEMENTS.name, "indexrelid", true),
        "reloptions" => (RELOPTIONS_ELEMENTS.name, "oid", false),
        _ => return None,
    })
}

const ELEMENT_COLUMNS: &[(&str, super::table::Col)] =
    &[("owner", Oid), ("element", Int2), ("ordinality", Int8)];
const CONKEY_ELEMENTS: Def = Def {
    name: "keyclaim conkey",
    columns: ELEMENT_COLUMNS,
};
const CONFKEY_ELEMENTS: Def = Def {
    name: "keyclaim confkey",
    columns: ELEMENT_COLUMNS,
};
/// A relation's storage options (psql's `\d+` unnests a TOAST table's):
/// keyclaim keeps none (`pg_class.reloptions` is NULL), so it is empty.
const RELOPTIONS_ELEMENTS: Def = Def {
    name: "keyclaim reloptions",
    columns: &[("owner", Oid), ("element", Text), ("ordinality", Int8)],
};
/// An index's key columns, each with its `indoption` (0: keyclaim keeps
/// no DESC or NULLS FIRST).
const INDKEY_ELEMENTS: Def = Def {
    name: "keyclaim indkey",
    columns: &[
        ("owner", Oid),
        ("element", Int2),
        ("option", Int2),
        ("ordinality", Int8),
    ],
};

/// Each (owner, attribute number, [option,] position from 1) of a hidden
/// relation.
fn element_rows(owners: impl Iterator<Item = (u32, Vec<i64>)>, option: bool) -> Vec<Vec<Cell>> {
    owners
        .flat_map(|(owner, attnums)| {
            attnums.into_iter().enumerate().map(move |(i, attnum)| {
                let at = i as i64 + 1;
                if option {
                    row![owner, attnum, 0i64, at]
                } else {
                    row![owner, attnum, at]
                }
            })
        })
        .collect()
}

/// Whether a pg_catalog relation is a view in PostgreSQL.
pub(super) fn is_view(name: &str) -> bool {
    matches!(
        name,
        "pg_indexes"
            | "pg_locks"
            | "pg_matviews"
            | "pg_roles"
            | "pg_sequences"
            | "pg_settings"
            | "pg_tables"
            | "pg_user"
            | "pg_views"
    )
}

/// The relations that are empty in keyclaim, whatever its catalog holds:
/// it has no inheritance, triggers, enums, ranges, extensions, operator
/// classes it names (`pg_index.indclass` is 0), row security, extended statistics,
/// publications, rules, views or role memberships.
pub(super) const EMPTY: &[&str] = &[
    "keyclaim reloptions",
    "pg_auth_members",
    "pg_enum",
    "pg_extension",
    "pg_inherits",
    "pg_matviews",
    "pg_opclass",
    "pg_policy",
    "pg_proc",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_range",
    "pg_rewrite",
    "pg_statistic_ext",
    "pg_trigger",
    "pg_views",
];

/// The rows of the pg_catalog relation `name`.
pub(super) fn rows(name: &str, s: &Snapshot) -> Vec<Vec<Cell>> {
    if EMPTY.contains(&name) {
        return Vec::new();
    }
    match name {
        "keyclaim conkey" => element_rows(
            s.constraints().map(|c| {
                let attnums = c.columns.iter().map(|&i| c.table.attnum(i) as i64);
                (c.oid, attnums.collect())
            }),
            false,
        ),
        "keyclaim confkey" => element_rows(
            s.constraints().filter_map(|c| {
                let r = c.reference.as_ref()?;
                let attnums = r.def.ref_columns.iter().map(|&i| r.table.attnum(i) as i64);
                Some((c.oid, attnums.collect()))
            }),
            false,
        ),
        "keyclaim indkey" => element_rows(
            s.indexes().map(|i| {
                let attnums = i.columns.iter().map(|&c| i.table.attnum(c) as i64);
                (i.oid, attnums.collect())
            }),
            true,
        ),
        "pg_collation" => collations(),
        "pg_namespace" => namespaces(),
        "pg_class" => classes(s),
        "pg_attribute" => attributes(s),
        "pg_type" => types(),
        "pg_index" => index_rows(s),
        "pg_constraint" => constraint_rows(s),
        "pg_attrdef" => defaults(s),
        "pg_description" => descriptions(s),
        "pg_sequence" => sequence_rows(s),
        "pg_sequences" => sequences_view(s),
        "pg_am" => access_methods(),
        "pg_database" => databases(s),
        "pg_locks" => locks(s),
        "pg_roles" => vec![row![
            &s.user,
            true,
            true,
            true,
            true,
            true,
            true,
            -1i64,
            "********",
            Cell::Null,
            true,
            Cell::Null,
            SUPERUSER,
        ]],
        "pg_user" => vec![row![
            &s.user,
            SUPERUSER,
            true,
            true,
            true,
            true,
            "********",
            Cell::Null,
            Cell::Null,
        ]],
        "pg_settings" => settings(s),
        "pg_tables" => tables_view(s),
        "pg_indexes" => s
            .indexes()
            .map(|i| {
                row![
                    "public",
                    &i.table.name,
                    i.name,
                    Cell::Null,
                    index_def(&i, false)
                ]
            })
            .collect(),
        "pg_depend" => dependencies(s),
        "pg_tablespace" => vec![
            row![oids::DEFAULT_TABLESPACE, "pg_default", SUPERUSER],
            row![1664u32, "pg_global", SUPERUSER],
        ],
        _ => Vec::new(),
    }
}

fn namespaces() -> Vec<Vec<Cell>> {
    vec![
        row![PG_CATALOG_NAMESPACE, "pg_catalog", SUPERUSER],
        row![oids::PG_TOAST_NAMESPACE, "pg_toast", SUPERUSER],
        row![PUBLIC_NAMESPACE, "public", oids::DATABASE_OWNER],
        row![
            oids::INFORMATION_SCHEMA_NAMESPACE,
            "information_schema",
            SUPERUSER
        ],
    ]
}

/// pg_class: tables, sequences, indexes, then the system relations.
fn classes(s: &Snapshot) -> Vec<Vec<Cell>> {
    let class = |oid: u32, name: &str, ns: u32, kind: &str, am: u32, natts: usize, indexed| {
        row![
            oid, name, ns, 0u32, 0u32, SUPERUSER, am, oid, 0u32, 0i64, -1i64, 0i64, 0u32, indexed,
            false, "p", kind, natts, 0i64, false, false, false, false, false, true, "d", false,
            0u32, "0", "0",
        ]
    };
    let triggers = s.tables_with_triggers();
    let mut out = Vec::new();
    for t in s.tables() {
        let mut row = class(
            oids::relation(t),
            &t.name,
            PUBLIC_NAMESPACE,
            "r",
            2,
            t.visible().len(),
            !indexes_of(t).is_empty(),
        );
        row[RELHASTRIGGERS] = triggers.contains(t.name.as_str()).into();
        // Count limits are listed as CHECK constraints.
        row[RELCHECKS] = ((t.checks.len() + t.count_limits.len()) as i64).into();
        out.push(row);
    }
    for q in s.sequences() {
        out.push(class(
            oids::relation(q),
            &q.name,
            PUBLIC_NAMESPACE,
            "S",
            0,
            3,
            false,
        ));
    }
    for i in s.indexes() {
        out.push(class(
            i.oid,
            i.name,
            PUBLIC_NAMESPACE,
            "i",
            oids::BTREE_AM,
            i.columns.len(),
            false,
        ));
    }
    let system = RELATIONS
        .iter()
        .map(|(d, oid)| (*d, *oid, PG_CATALOG_NAMESPACE, is_view(d.name)))
        .chain(
            super::information_schema::RELATIONS
                .iter()
                .map(|(d, oid)| (*d, *oid, oids::INFORMATION_SCHEMA_NAMESPACE, true)),
        );
    for (d, oid, ns, view) in system {
        let (kind, am) = if view { ("v", 0) } else { ("r", 2) };
        out.push(class(oid, d.name, ns, kind, am, d.columns.len(), false));
    }
    out
}

/// The advisory locks of this proxy's sessions, as PostgreSQL lists them:
/// a bigint key as classid (its high half) and objid (its low half) with
/// objsubid 1, an (int, int) key as classid and objid with objsubid 2.
fn locks(s: &Snapshot) -> Vec<Vec<Cell>> {
    let database = oids::database(&s.database);
    s.locks
        .iter()
        .map(|l| {
            let (classid, objid) = ((l.key.value >> 32) as u32, l.key.value as u32);
            let mode = if l.exclusive {
                "ExclusiveLock"
            } else {
                "ShareLock"
            };
            row![
                "advisory",
                database,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                classid,
                objid,
                if l.key.pair { 2i64 } else { 1i64 },
                Cell::Null,
                std::process::id() as i64,
                mode,
                true,
                false,
                Cell::Null,
            ]
        })
        .collect()
}

/// pg_class.relchecks' and relhastriggers' positions.
const RELCHECKS: usize = 18;
const RELHASTRIGGERS: usize = 20;

/// pg_attribute's storage columns for a type: (len, byval, align, storage).
fn storage(oid: u32) -> (i16, bool, &'static str, &'static str) {
    let len = Type::from_oid(oid).map_or(-1, |t| pg_types::length(&t));
    match len {
        1 => (1, true, "c", "p"),
        2 => (2, true, "s", "p"),
        4 => (4, true, "i", "p"),
        8 => (8, true, "d", "p"),
        -1 if oid == 1700 => (-1, false, "i", "m"),
        n if n > 0 => (n, false, if n >= 8 { "d" } else { "c" }, "p"),
        n => (n, false, "i", "x"),
    }
}

/// The collation a column of `ty` has: `default` for text types.
fn collation(ty: &SqlType) -> u32 {
    match ty {
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => 100,
        _ => 0,
    }
}

fn attribute(
    rel: u32,
    name: &str,
    attnum: usize,
    ty: &SqlType,
    not_null: bool,
    has_default: bool,
    identity: &str,
) -> Vec<Cell> {
    let oid = pg_types::of(ty);
    let (len, byval, align, store) = storage(oid);
    row![
        rel,
        name,
        oid,
        -1i64,
        i64::from(len),
        attnum,
        0i64,
        -1i64,
        i64::from(ty.type_modifier()),
        byval,
        align,
        store,
        "",
        not_null,
        has_default,
        false,
        identity,
        "",
        false,
        true,
        0i64,
        collation(ty),
    ]
}

fn attributes(s: &Snapshot) -> Vec<Vec<Cell>> {
    let mut out = Vec::new();
    for t in s.tables() {
        let rel = oids::relation(t);
        for (i, c) in t.visible().iter().enumerate() {
            let identity = match c.identity {
                Some(Identity::Always) => "a",
                Some(Identity::ByDefault) => "d",
                None => "",
            };
            out.push(attribute(
                rel,
                &c.name,
                t.attnum(i),
                &c.ty,
                c.not_null,
                c.default.is_some(),
                identity,
            ));
        }
    }
    for q in s.sequences() {
        let rel = oids::relation(q);
        for (i, (name, ty)) in [
            ("last_value", SqlType::Int8),
            ("log_cnt", SqlType::Int8),
            ("is_called", SqlType::Bool),
        ]
        .iter()
        .enumerate()
        {
            out.push(attribute(rel, name, i + 1, ty, true, false, ""));
        }
    }
    for i in s.indexes() {
        for (n, &c) in i.columns.iter().enumerate() {
            let col = &i.table.columns[c];
            out.push(attribute(
                i.oid,
                &col.name,
                n + 1,
                &col.ty,
                false,
                false,
                "",
            ));
        }
    }
    out
}

fn types() -> Vec<Vec<Cell>> {
    pg_types::builtin()
        .iter()
        .map(|t| {
            let (len, byval, align, store) = storage(t.oid());
            let collatable = matches!(t.name(), "text" | "varchar" | "bpchar" | "name");
            let is_array = pg_types::element(t) != 0;
            row![
                t.oid(),
                t.name(),
                PG_CATALOG_NAMESPACE,
                SUPERUSER,
                i64::from(len),
                byval,
                pg_types::kind_letter(t),
                pg_types::category(t),
                pg_types::preferred(t),
                true,
                ",",
                0u32,
                if is_array {
                    "array_subscript_handler"
                } else {
                    "-"
                },
                pg_types::element(t),
                pg_types::array_of(t.oid()),
                pg_types::io_function(t, "in"),
                pg_types::io_function(t, "out"),
                pg_types::io_function(t, "recv"),
                pg_types::io_function(t, "send"),
                "-",
                "-",
                if is_array { "array_typanalyze" } else { "-" },
                align,
                store,
                false,
                0u32,
                -1i64,
                0i64,
                if collatable { 100u32 } else { 0 },
            ]
        })
        .collect()
}

fn index_rows(s: &Snapshot) -> Vec<Vec<Cell>> {
    s.indexes()
        .map(|i| {
            let n = i.columns.len();
            let keys = list(i.columns.iter().map(|&c| i.table.attnum(c)));
            let collations = list(i.columns.iter().map(|&c| collation(&i.table.columns[c].ty)));
            row![
                i.oid,
                oids::relation(i.table),
                n,
                n,
                i.unique,
                i.nulls_not_distinct,
                i.primary,
                false,
                true,
                false,
                true,
                false,
                true,
                true,
                false,
                keys,
                collations,
                list(i.columns.iter().map(|_| 0u32)),
                list(i.columns.iter().map(|_| 0i64)),
                Cell::Null,
                // PostgreSQL keeps a node tree here; the SQL says the same
                // to a reader, and NULL still means "not partial".
                match i.predicate {
                    Some(p) => Cell::from(p.render(i.table, false)),
                    None => Cell::Null,
                },
            ]
        })
        .collect()
}

fn constraint_rows(s: &Snapshot) -> Vec<Vec<Cell>> {
    s.constraints()
        .map(|c| {
            let r = c.reference.as_ref();
            // A key's referential columns are blank.
            let action = |a: fn(&ForeignKeyDef) -> RefAction| {
                r.map_or(" ".to_string(), |r| a(r.def).code().to_string())
            };
            let mut row = row![
                c.oid,
                c.name,
                PUBLIC_NAMESPACE,
                c.kind,
                r.is_some_and(|r| r.def.deferrable),
                r.is_some_and(|r| r.def.initially_deferred),
                c.check.is_none_or(|k| k.validated) && r.is_none_or(|r| r.def.validated),
                oids::relation(c.table),
                0u32,
                c.index,
                0u32,
                r.map_or(0, |r| oids::relation(r.table)),
                action(|d| d.on_update),
                action(|d| d.on_delete),
                // MATCH SIMPLE, the only kind keyclaim has.
                if r.is_some() { "s" } else { " " },
                true,
                0i64,
                // A CHECK constraint is inherited; keys never are.
                c.kind != "c",
                if c.columns.is_empty() {
                    Cell::Null
                } else {
                    attnums(c.table, c.columns)
                },
            ];
            if let Some(r) = r {
                row.extend(referenced_columns(&c, r));
            }
            if let Some(k) = c.check {
                // confkey through conexclop are a foreign key's and an
                // exclusion constraint's; conbin is what pg_get_expr shows.
                row.extend(std::iter::repeat_n(Cell::Null, 6));
                row.push(crate::sql::check::expression(c.table, k, false).into());
            }
            row
        })
        .collect()
}

/// pg_constraint's attnums of `t`'s columns (conkey, confkey).
fn attnums(t: &TableDef, columns: &[usize]) -> Cell {
    list(columns.iter().map(|&i| t.attnum(i)))
}

/// A foreign key's pg_constraint columns after conkey: confkey and the
/// equality operators of each column pair (conpfeqop, conppeqop,
/// conffeqop).
fn referenced_columns(c: &Constraint<'_>, r: &Reference<'_>) -> [Cell; 4] {
    let pairs = c.columns.iter().zip(&r.def.ref_columns);
    let equalities: Vec<(u32, u32, u32)> = pairs
        .map(|(&fk, &pk)| {
            pg_types::foreign_key_equalities(&r.table.columns[pk].ty, &c.table.columns[fk].ty)
        })
        .collect();
    [
        attnums(r.table, &r.def.ref_columns),
        list(equalities.iter().map(|e| e.0)),
        list(equalities.iter().map(|e| e.1)),
        list(equalities.iter().map(|e| e.2)),
    ]
}

/// COMMENT ON TABLE and COLUMN: objsubid 0 for the table, else the
/// column's attnum; classoid is pg_class's.
fn descriptions(s: &Snapshot) -> Vec<Vec<Cell>> {
    const PG_CLASS: u32 = 1259;
    let mut out = Vec::new();
    for t in s.tables() {
        let rel = oids::relation(t);
        if let Some(c) = &t.comment {
            out.push(row![rel, PG_CLASS, 0i32, c.as_str()]);
        }
        for (i, col) in t.visible().iter().enumerate() {
            if let Some(c) = &col.comment {
                out.push(row![rel, PG_CLASS, t.attnum(i) as i32, c.as_str()]);
            }
        }
    }
    out
}

fn defaults(s: &Snapshot) -> Vec<Vec<Cell>> {
    s.tables()
        .flat_map(|t| {
            t.visible().iter().enumerate().filter_map(move |(i, c)| {
                // An identity column's values come from its sequence, not
                // a default (PostgreSQL has no pg_attrdef row for it).
                let d = super::shown_default(c)?;
                Some(row![
                    oids::column_default(t, t.attnum(i)),
                    oids::relation(t),
                    t.attnum(i),
                    d
                ])
            })
        })
        .collect()
}

fn sequence_rows(s: &Snapshot) -> Vec<Vec<Cell>> {
    s.sequences()
        .filter_map(|q| {
            let d = q.sequence.as_ref()?;
            Some(row![
                oids::relation(q),
                pg_types::of(&d.ty),
                d.start,
                d.increment,
                d.max,
                d.min,
                d.cache,
                d.cycle,
            ])
        })
        .collect()
}

fn sequences_view(s: &Snapshot) -> Vec<Vec<Cell>> {
    s.sequences()
        .filter_map(|q| {
            let d = q.sequence.as_ref()?;
            // last_value is the store's and this proxy does not read it
            // for a catalog query: NULL, as PostgreSQL shows a sequence
            // whose value it cannot read.
            Some(row![
                "public",
                &q.name,
                &s.user,
                d.ty.pg_name(),
                d.start,
                d.min,
                d.max,
                d.increment,
                d.cycle,
                d.cache,
                Cell::Null,
            ])
        })
        .collect()
}

/// The collations every PostgreSQL database has, which text columns name
/// (`attcollation` 100, the database's default); keyclaim compares text
/// byte-wise (C) whatever the name.
fn collations() -> Vec<Vec<Cell>> {
    [
        (100u32, "default", "d", None),
        (950, "C", "c", Some("C")),
        (951, "POSIX", "c", Some("POSIX")),
    ]
    .into_iter()
    .map(|(oid, name, provider, locale)| {
        let locale = locale.map_or(Cell::Null, Cell::from);
        row![
            oid,
            name,
            PG_CATALOG_NAMESPACE,
            SUPERUSER,
            provider,
            true,
            -1i64,
            locale.clone(),
            locale
        ]
    })
    .collect()
}

fn access_methods() -> Vec<Vec<Cell>> {
    [
        (2u32, "heap", "heap_tableam_handler", "t"),
        (oids::BTREE_AM, "btree", "bthandler", "i"),
        (405, "hash", "hashhandler", "i"),
        (783, "gist", "gisthandler", "i"),
        (2742, "gin", "ginhandler", "i"),
        (4000, "spgist", "spghandler", "i"),
        (3580, "brin", "brinhandler", "i"),
    ]
    .into_iter()
    .map(|(oid, name, handler, kind)| row![oid, name, handler, kind])
    .collect()
}

fn databases(s: &Snapshot) -> Vec<Vec<Cell>> {
    vec![row![
        oids::database(&s.database),
        &s.database,
        SUPERUSER,
        6i64,
        "c",
        false,
        true,
        -1i64,
        "0",
        "1",
        oids::DEFAULT_TABLESPACE,
        // keyclaim compares text byte by byte, as collation C does.
        "C",
        "C",
    ]]
}

fn settings(s: &Snapshot) -> Vec<Vec<Cell>> {
    s.settings
        .iter()
        .map(|(g, value)| {
            row![
                g.name,
                value,
                Cell::Null,
                "Client Connection Defaults",
                g.description,
                Cell::Null,
                "user",
                "string",
                if value == g.default {
                    "default"
                } else {
                    "session"
                },
                Cell::Null,
                Cell::Null,
                Cell::Null,
                g.default,
                g.default,
                Cell::Null,
                Cell::Null,
                false,
            ]
        })
        .collect()
}

fn tables_view(s: &Snapshot) -> Vec<Vec<Cell>> {
    let triggers = s.tables_with_triggers();
    let user = s.tables().map(|t| {
        row![
            "public",
            &t.name,
            &s.user,
            Cell::Null,
            !indexes_of(t).is_empty(),
            false,
            triggers.contains(t.name.as_str()),
            false
        ]
    });
    let system = RELATIONS
        .iter()
        .filter(|(d, _)| !is_view(d.name))
        .map(|(d, _)| {
            row![
                "pg_catalog",
                d.name,
                &s.user,
                Cell::Null,
                false,
                false,
                false,
                false
            ]
        });
    user.chain(system).collect()
}

/// Sequences depend on the column that owns them (deptype `a` for serial,
/// `i` for identity); indexes on the constraint they back (`i`);
/// constraints on their columns (`a`), and a foreign key on the index
/// and the columns it references (`n`).
fn dependencies(s: &Snapshot) -> Vec<Vec<Cell>> {
    let mut out = Vec::new();
    for t in s.tables() {
        for (i, c) in t.columns.iter().enumerate() {
            let Some(seq) = crate::engine::sequence::owned_sequence(c) else {
                continue;
            };
            let Some(q) = s.named(&seq) else {
                continue;
            };
            let kind = if c.identity.is_some() { "i" } else { "a" };
            out.push(row![
                oids::PG_CLASS,
                oids::relation(q),
                0i64,
                oids::PG_CLASS,
                oids::relation(t),
                t.attnum(i),
                kind
            ]);
        }
    }
    for c in s.constraints() {
        out.extend(constraint_dependencies(&c));
    }
    out
}

fn constraint_dependencies(c: &Constraint<'_>) -> Vec<Vec<Cell>> {
    let on = |relation: u32, attnum: usize, kind: &str| {
        row![
            oids::PG_CONSTRAINT,
            c.oid,
            0i64,
            oids::PG_CLASS,
            relation,
            attnum,
            kind
        ]
    };
    let own = oids::relation(c.table);
    let mut out: Vec<Vec<Cell>> = c
        .columns
        .iter()
        .map(|&i| on(own, c.table.attnum(i), "a"))
        .collect();
    match &c.reference {
        // A CHECK constraint or count limit has no index.
        None if c.kind == "c" => {}
        None => out.push(row![
            oids::PG_CLASS,
            c.index,
            0i64,
            oids::PG_CONSTRAINT,
            c.oid,
            0i64,
            "i"
        ]),
        Some(r) => {
            out.push(on(c.index, 0, "n"));
            let parent = oids::relation(r.table);
            out.extend(
                r.def
                    .ref_columns
                    .iter()
                    .map(|&i| on(parent, r.table.attnum(i), "n")),
            );
        }
    }
    out
}

/// A key's columns as SQL text: `a, "B"`.
fn column_list(t: &TableDef, columns: &[usize]) -> String {
    let names: Vec<String> = columns
        .iter()
        .map(|&c| crate::catalog::naming::quote_ident(&t.columns[c].name))
        .collect();
    names.join(", ")
}

/// `pg_get_indexdef`: the CREATE INDEX statement that makes the index.
fn index_def(i: &super::Index<'_>, pretty: bool) -> String {
    format!(
        "CREATE {}INDEX {} ON public.{} USING btree ({}){}{}",
        if i.unique { "UNIQUE " } else { "" },
        crate::catalog::naming::quote_ident(i.name),
        crate::catalog::naming::quote_ident(&i.table.name),
        column_list(i.table, i.columns),
        if i.nulls_not_distinct {
            " NULLS NOT DISTINCT"
        } else {
            ""
        },
        match i.predicate {
            Some(p) => format!(" WHERE {}", p.render(i.table, pretty)),
            None => String::new(),
        }
    )
}

/// `pg_get_indexdef(oid)`.
pub(super) fn indexdef(s: &Snapshot, oid: u32, pretty: bool) -> Option<String> {
    s.indexes()
        .find(|i| i.oid == oid)
        .map(|i| index_def(&i, pretty))
}

/// `pg_get_constraintdef(oid [, pretty])`.
pub(super) fn constraintdef(s: &Snapshot, oid: u32, pretty: bool) -> Option<String> {
    let c = s.constraints().find(|c| c.oid == oid)?;
    if let Some(k) = c.check {
        return Some(crate::sql::check::constraintdef(c.table, k, pretty));
    }
    if let Some(l) = c.limit {
        // What it keeps, in SQL a reader knows (no CHECK can say it).
        return Some(format!(
            "CHECK (count(*) OVER (PARTITION BY {}) <= {})",
            column_list(c.table, c.columns),
            l.limit
        ));
    }
    let kind = match c.kind {
        "p" => "PRIMARY KEY",
        "f" => "FOREIGN KEY",
        _ if c.nulls_not_distinct => "UNIQUE NULLS NOT DISTINCT",
        _ => "UNIQUE",
    };
    let mut def = format!("{kind} ({})", column_list(c.table, c.columns));
    if let Some(r) = &c.reference {
        def.push_str(&references_clause(r));
    }
    Some(def)
}

/// A foreign key's definition after its columns, as PostgreSQL prints
/// it: the REFERENCES, ON UPDATE and ON DELETE unless NO ACTION, then
/// DEFERRABLE and INITIALLY DEFERRED.
fn references_clause(r: &Reference<'_>) -> String {
    let mut out = format!(
        " REFERENCES {}({})",
        crate::catalog::naming::quote_ident(&r.table.name),
        column_list(r.table, &r.def.ref_columns)
    );
    for (event, action) in [("UPDATE", r.def.on_update), ("DELETE", r.def.on_delete)] {
        if action != RefAction::NoAction {
            out.push_str(&format!(" ON {event} {}", action.sql()));
        }
    }
    if r.def.deferrable {
        out.push_str(" DEFERRABLE");
    }
    if r.def.initially_deferred {
        out.push_str(" INITIALLY DEFERRED");
    }
    if !r.def.validated {
        out.push_str(" NOT VALID");
    }
    out
}
