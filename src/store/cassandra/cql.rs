//! The CQL text of every statement the store runs, built by pure functions
//! so that tests can read exactly what each operation sends.
//!
//! Layout (one keyspace):
//! - one table per user table, `t_<name prefix>_<uuid>`: the primary-key
//!   columns are the partition key (each row is its own partition, as the
//!   claim protocol wants), plus the hidden `__version`, `__live`,
//!   `__claims`, `__intent`, `__at`, `__by`, `__prev`.
//! - `claims`: a partition per (constraint id, canonical key bytes).
//! - `catalog`: a partition per table name.
//! - `txn_records`: a partition per transaction, once decided.
//! - `heartbeats`: a partition per proxy process.
//! - `advisory_locks`: a partition per advisory lock key (holders as JSON).
//! - `index_entries`: a partition per (index id, canonical key bytes), a
//!   clustering row per primary key under it.
//!
//! Bind markers are always positional; the order of each statement's
//! markers is documented where the statement is built and followed by
//! `super::bind`.

use crate::catalog::TableDef;
use crate::types::SqlType;

pub const VERSION: &str = "__version";
pub const LIVE: &str = "__live";
pub const CLAIMS: &str = "__claims";
/// A transaction's pending write to the row (JSON of `store::Intent`).
pub const INTENT: &str = "__intent";
/// When the committed state was committed (`store::Stamp`), and by whom.
pub const AT: &str = "__at";
pub const BY: &str = "__by";
/// The committed state before it (JSON of `store::Prior`).
pub const PREV: &str = "__prev";
/// The hidden columns in the order every row statement lists them.
pub const HIDDEN_NAMES: [&str; 7] = [VERSION, LIVE, CLAIMS, INTENT, AT, BY, PREV];
pub const CLAIMS_TABLE: &str = "claims";
pub const CATALOG_TABLE: &str = "catalog";
pub const TXN_RECORDS_TABLE: &str = "txn_records";
pub const HEARTBEATS_TABLE: &str = "heartbeats";
pub const LOCKS_TABLE: &str = "advisory_locks";
pub const INDEX_TABLE: &str = "index_entries";

/// A quoted CQL identifier: case and any character kept, as PostgreSQL
/// column names are.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The CQL type a column of `ty` is stored as. Timestamps are bigint
/// microseconds since the epoch: CQL `timestamp` keeps only milliseconds,
/// and two PostgreSQL timestamps a microsecond apart must stay two keys.
pub fn cql_type(ty: &SqlType) -> &'static str {
    match ty {
        SqlType::Bool => "boolean",
        SqlType::Int2 => "smallint",
        SqlType::Int4 => "int",
        SqlType::Int8 => "bigint",
        SqlType::Float4 => "float",
        SqlType::Float8 => "double",
        SqlType::Numeric(_) => "decimal",
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => "text",
        SqlType::Json | SqlType::Jsonb | SqlType::Void => "text",
        // Never a column's type (the query engine's catalog columns).
        SqlType::Oid => "bigint",
        // An array is kept as its text form (`to_cql`).
        SqlType::Array(_) => "text",
        SqlType::Bytea => "blob",
        SqlType::Uuid => "uuid",
        SqlType::Date => "date",
        SqlType::Timestamp | SqlType::TimestampTz => "bigint",
    }
}

/// The CQL table of a user table: `t_<name prefix>_<uuid>`, from the
/// storage id `<name>.<uuid simple>`. A CQL table name has at most 48
/// characters of `[a-z0-9_]`; the uuid suffix keeps it unique, the prefix
/// only helps an operator find it.
pub fn table_name(def: &TableDef) -> String {
    storage_table(&def.id)
}

/// The CQL table of storage id `id` (see [`table_name`]).
pub fn storage_table(id: &str) -> String {
    let (name, suffix) = id.rsplit_once('.').unwrap_or(("", id));
    let suffix: String = suffix
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let room = 48usize.saturating_sub(3 + suffix.len());
    let prefix: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .take(room)
        .collect();
    format!("t_{prefix}_{suffix}")
}

/// A CQL name as a statement spells it: bare when CQL would read it back
/// unchanged, quoted otherwise.
pub fn ident(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_owned()
    } else {
        quote(name)
    }
}

/// `keyspace.table` or `table` (in `keyspace`), split into its two names.
pub fn split_table<'a>(keyspace: &'a str, name: &'a str) -> (&'a str, &'a str) {
    name.split_once('.').unwrap_or((keyspace, name))
}

/// The table a user table's rows live in, qualified: its own
/// `t_<name>_<uuid>`, or the adopted CQL table.
pub fn table_ref(keyspace: &str, def: &TableDef) -> String {
    match &def.cql_table {
        Some(adopted) => {
            let (ks, table) = split_table(keyspace, adopted);
            format!("{}.{}", ident(ks), ident(table))
        }
        None => format!("{keyspace}.{}", table_name(def)),
    }
}

/// The replication a keyspace keyclaim creates: `class` if configured,
/// else NetworkTopologyStrategy with `factor` replicas in the local
/// datacenter when there is one (what a real cluster wants, and what the
/// driver's datacenter preference expects), else SimpleStrategy (a trial).
pub fn create_keyspace(
    keyspace: &str,
    class: Option<&str>,
    factor: u32,
    dc: Option<&str>,
) -> String {
    let q = |s: &str| s.replace('\'', "''");
    let network = "NetworkTopologyStrategy";
    let replication = match (class, dc) {
        (Some(c), Some(dc)) if c == network || c.ends_with(".NetworkTopologyStrategy") => {
            format!("{{'class': '{}', '{}': {factor}}}", q(c), q(dc))
        }
        (None, Some(dc)) => format!("{{'class': '{network}', '{}': {factor}}}", q(dc)),
        (Some(c), _) => format!("{{'class': '{}', 'replication_factor': {factor}}}", q(c)),
        (None, None) => format!("{{'class': 'SimpleStrategy', 'replication_factor': {factor}}}"),
    };
    format!("CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {replication}")
}

/// What is wrong with a keyspace's replication for this proxy's datacenter
/// preference, if anything (`keyclaim --check` says it).
pub fn replication_warning(
    keyspace: &str,
    replication: &std::collections::HashMap<String, String>,
    dc: Option<&str>,
    factor: u32,
) -> Option<String> {
    let class = replication.get("class").map(String::as_str).unwrap_or("");
    let dc = dc?;
    if class.ends_with("SimpleStrategy") {
        return Some(format!(
            "keyspace {keyspace} uses SimpleStrategy while store.local_datacenter is \"{dc}\": \
             the driver may find no replica in that datacenter for some keys; \
             ALTER KEYSPACE {keyspace} WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': {factor}}}"
        ));
    }
    if class.ends_with("NetworkTopologyStrategy") && !replication.contains_key(dc) {
        return Some(format!(
            "keyspace {keyspace} has no replicas in datacenter \"{dc}\" (store.local_datacenter)"
        ));
    }
    None
}

pub fn create_claims_table(keyspace: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{CLAIMS_TABLE} (constraint_id text, key blob, owner blob, txn uuid, PRIMARY KEY ((constraint_id, key)))"
    )
}

pub fn create_catalog_table(keyspace: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{CATALOG_TABLE} (name text PRIMARY KEY, version uuid, definition text)"
    )
}

pub fn create_txn_records_table(keyspace: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{TXN_RECORDS_TABLE} (txn uuid PRIMARY KEY, status text, at bigint)"
    )
}

pub fn create_heartbeats_table(keyspace: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{HEARTBEATS_TABLE} (proxy bigint PRIMARY KEY, at bigint)"
    )
}

pub fn create_locks_table(keyspace: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{LOCKS_TABLE} (key blob PRIMARY KEY, version uuid, holders text)"
    )
}

pub fn create_index_table(keyspace: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{INDEX_TABLE} (index_id text, key blob, pk blob, PRIMARY KEY ((index_id, key), pk))"
    )
}

/// The typed columns of a user table, then the hidden ones; partition key
/// = the primary-key columns (composite when there are several).
pub fn create_rows_table(keyspace: &str, def: &TableDef) -> String {
    let mut cols: Vec<String> = (0..def.columns.len())
        .map(|i| format!("{} {}", quote(def.storage_name(i)), column_type(def, i)))
        .collect();
    cols.extend(HIDDEN.map(|(name, ty)| format!("{} {ty}", quote(name))));
    format!(
        "CREATE TABLE IF NOT EXISTS {keyspace}.{} ({}, PRIMARY KEY (({}))) WITH comment = '{}'",
        table_name(def),
        cols.join(", "),
        pk_list(def),
        format!("{STORAGE_COMMENT}{}", def.id).replace('\'', "''")
    )
}

/// How a rows table's comment starts: its storage id follows (the CQL
/// name keeps only a prefix of it), so that storage no catalog entry
/// names can be found (`Store::table_storage`).
pub const STORAGE_COMMENT: &str = "keyclaim storage ";

/// keyclaim's rows tables in a keyspace, with their comments. Binds: the
/// keyspace as `system_schema` stores it.
pub const STORAGE_TABLES: &str =
    "SELECT table_name, comment FROM system_schema.tables WHERE keyspace_name = ?";

/// Drops the rows table of storage id `id`.
pub fn drop_storage_table(keyspace: &str, id: &str) -> String {
    format!("DROP TABLE IF EXISTS {keyspace}.{}", storage_table(id))
}

/// The columns of an existing table, to adopt it or to find the hidden
/// ones it lacks. Binds: keyspace, table (as `system_schema` stores them:
/// see [`schema_names`]).
pub const FOREIGN_COLUMNS: &str =
    "SELECT column_name, kind, position, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?";

/// Keyspace `keyspace` (a configured, unquoted name) as `system_schema`
/// spells it.
pub fn schema_keyspace(keyspace: &str) -> String {
    keyspace.to_ascii_lowercase()
}

/// The keyspace and table names of a user table's rows as
/// `system_schema` spells them: an unquoted name is folded to lower case,
/// a quoted one (adopted tables, see [`ident`]) is kept.
pub fn schema_names(keyspace: &str, def: &TableDef) -> (String, String) {
    let fold = |n: &str| match ident(n).starts_with('"') {
        true => n.to_owned(),
        false => n.to_ascii_lowercase(),
    };
    match &def.cql_table {
        Some(adopted) => {
            let (ks, table) = split_table(keyspace, adopted);
            (fold(ks), fold(table))
        }
        None => (schema_keyspace(keyspace), table_name(def)),
    }
}

/// An `ALTER TABLE ... ADD` refused because the column is there already:
/// Cassandra 4 says "Column with name 'c' already exists", Cassandra 3
/// and ScyllaDB "... conflicts with an existing column".
pub fn is_existing_column_error(message: &str) -> bool {
    message.contains("already exists") || message.contains("conflicts with an existing column")
}

/// The CQL type of column `i`: an integer column of a table with
/// `wide_ints` is a `bigint` whatever its width. A column added by ALTER TABLE is a
/// one-element tuple, so that a row stored before it was added (no cell)
/// is told apart from a row that holds NULL (a tuple holding null), and
/// reads the column's missing value (`catalog::layout`).
pub fn column_type(def: &TableDef, i: usize) -> String {
    let c = &def.columns[i];
    let ty = match &c.ty {
        SqlType::Int2 | SqlType::Int4 if def.wide_ints => "bigint",
        ty => cql_type(ty),
    };
    match c.storage.missing {
        Some(_) => format!("frozen<tuple<{ty}>>"),
        None => ty.to_owned(),
    }
}

/// `ALTER TABLE ... ADD` of column `i` (ALTER TABLE ... ADD COLUMN).
pub fn add_column(keyspace: &str, def: &TableDef, i: usize) -> String {
    format!(
        "ALTER TABLE {} ADD {} {}",
        table_ref(keyspace, def),
        quote(def.storage_name(i)),
        column_type(def, i)
    )
}

/// Adds one hidden column to an adopted table.
pub fn add_hidden_column(table: &str, column: &str, cql_type: &str) -> String {
    format!("ALTER TABLE {table} ADD {} {cql_type}", quote(column))
}

/// The hidden columns with their CQL types.
pub const HIDDEN: [(&str, &str); 7] = [
    (VERSION, "uuid"),
    (LIVE, "boolean"),
    (CLAIMS, "map<text, uuid>"),
    (INTENT, "text"),
    (AT, "bigint"),
    (BY, "uuid"),
    (PREV, "text"),
];

fn pk_list(def: &TableDef) -> String {
    def.key_columns()
        .iter()
        .map(|&i| quote(def.storage_name(i)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn pk_where(def: &TableDef) -> String {
    def.key_columns()
        .iter()
        .map(|&i| format!("{} = ?", quote(def.storage_name(i))))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Every column a row read returns: the table's columns in order, then
/// the hidden ones (`HIDDEN_NAMES`).
fn select_list(def: &TableDef) -> String {
    (0..def.columns.len())
        .map(|i| quote(def.storage_name(i)))
        .chain(HIDDEN_NAMES.map(quote))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The data columns an UPDATE sets: every column outside the key rows
/// are stored under.
pub fn non_key_columns(def: &TableDef) -> impl Iterator<Item = usize> + '_ {
    let key = def.key_columns();
    (0..def.columns.len()).filter(move |i| !key.contains(i))
}

/// The statements of one user table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCql {
    /// Binds: the key columns.
    pub read: String,
    /// Binds: every column in table order, then the hidden ones
    /// (`HIDDEN_NAMES`).
    pub insert: String,
    /// Binds: the non-key columns in table order, the hidden ones
    /// (`HIDDEN_NAMES`), the key columns, then the expected
    /// `__version`.
    pub update: String,
    /// Binds: the page size.
    pub scan_first: String,
    /// Binds: the key columns of the last row seen, then the page size.
    pub scan_after: String,
}

pub fn row_cql(keyspace: &str, def: &TableDef) -> RowCql {
    let table = table_ref(keyspace, def);
    let select = select_list(def);
    let all_markers = vec!["?"; def.columns.len() + HIDDEN.len()].join(", ");
    let sets: Vec<String> = non_key_columns(def)
        .map(|i| quote(def.storage_name(i)))
        .chain(HIDDEN_NAMES.map(quote))
        .map(|c| format!("{c} = ?"))
        .collect();
    let pks = pk_list(def);
    let markers = vec!["?"; def.key_columns().len()].join(", ");
    RowCql {
        read: format!("SELECT {select} FROM {table} WHERE {}", pk_where(def)),
        insert: format!("INSERT INTO {table} ({select}) VALUES ({all_markers}) IF NOT EXISTS"),
        update: format!(
            "UPDATE {table} SET {} WHERE {} IF {} = ?",
            sets.join(", "),
            pk_where(def),
            quote(VERSION)
        ),
        scan_first: format!("SELECT {select} FROM {table} LIMIT ?"),
        scan_after: format!(
            "SELECT {select} FROM {table} WHERE token({pks}) > token({markers}) LIMIT ?"
        ),
    }
}

/// The statements of the claims and catalog tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedCql {
    /// Binds: constraint, key.
    pub claim_read: String,
    /// Binds: constraint, key, owner, txn.
    pub claim_insert: String,
    /// Binds: new txn, constraint, key, expected txn, empty blob.
    pub claim_restamp: String,
    /// Binds: constraint, key, expected txn, empty blob.
    pub claim_delete: String,
    /// Binds: constraint.
    pub claim_keys_of: String,
    /// Binds: constraint, key.
    pub claim_drop: String,
    /// Binds: name.
    pub catalog_read: String,
    pub catalog_list: String,
    /// Binds: name, version, definition.
    pub catalog_insert: String,
    /// Binds: version, definition, name, expected version.
    pub catalog_update: String,
    /// Binds: name, expected version.
    pub catalog_delete: String,
    /// Binds: txn, status, at.
    pub txn_insert: String,
    /// Binds: txn.
    pub txn_read: String,
    /// Binds: at, proxy.
    pub heartbeat_write: String,
    /// Binds: proxy.
    pub heartbeat_read: String,
    /// Binds: key.
    pub lock_read: String,
    /// Binds: key, version, holders.
    pub lock_insert: String,
    /// Binds: version, holders, key, expected version.
    pub lock_update: String,
    /// Binds: index, key, pk.
    pub index_add: String,
    /// Binds: index, key, pk to start after (an empty blob: from the
    /// first), limit.
    pub index_read: String,
    /// Binds: index.
    pub index_keys_of: String,
    /// Binds: index, key.
    pub index_drop: String,
}

pub fn fixed_cql(keyspace: &str) -> FixedCql {
    let claims = format!("{keyspace}.{CLAIMS_TABLE}");
    let catalog = format!("{keyspace}.{CATALOG_TABLE}");
    let index = format!("{keyspace}.{INDEX_TABLE}");
    let claim_key = "constraint_id = ? AND key = ?";
    // Cassandra answers a failed `IF txn = ?` with only the columns its
    // conditions name. `owner != 0x` holds for every claim (an owner is a
    // non-empty key), so naming it costs nothing and brings the owner back
    // with the txn: the caller learns whose claim it is without a read.
    let claim_if = "IF txn = ? AND owner != ?";
    FixedCql {
        claim_read: format!("SELECT owner, txn FROM {claims} WHERE {claim_key}"),
        claim_insert: format!(
            "INSERT INTO {claims} (constraint_id, key, owner, txn) VALUES (?, ?, ?, ?) IF NOT EXISTS"
        ),
        claim_restamp: format!("UPDATE {claims} SET txn = ? WHERE {claim_key} {claim_if}"),
        claim_delete: format!("DELETE FROM {claims} WHERE {claim_key} {claim_if}"),
        claim_keys_of: format!(
            "SELECT key FROM {claims} WHERE constraint_id = ? ALLOW FILTERING"
        ),
        claim_drop: format!("DELETE FROM {claims} WHERE {claim_key}"),
        catalog_read: format!("SELECT version, definition FROM {catalog} WHERE name = ?"),
        catalog_list: format!("SELECT name, version, definition FROM {catalog}"),
        catalog_insert: format!(
            "INSERT INTO {catalog} (name, version, definition) VALUES (?, ?, ?) IF NOT EXISTS"
        ),
        catalog_update: format!(
            "UPDATE {catalog} SET version = ?, definition = ? WHERE name = ? IF version = ?"
        ),
        catalog_delete: format!("DELETE FROM {catalog} WHERE name = ? IF version = ?"),
        txn_insert: format!(
            "INSERT INTO {keyspace}.{TXN_RECORDS_TABLE} (txn, status, at) VALUES (?, ?, ?) IF NOT EXISTS"
        ),
        txn_read: format!("SELECT status, at FROM {keyspace}.{TXN_RECORDS_TABLE} WHERE txn = ?"),
        heartbeat_write: format!("UPDATE {keyspace}.{HEARTBEATS_TABLE} SET at = ? WHERE proxy = ?"),
        heartbeat_read: format!("SELECT at FROM {keyspace}.{HEARTBEATS_TABLE} WHERE proxy = ?"),
        lock_read: format!("SELECT version, holders FROM {keyspace}.{LOCKS_TABLE} WHERE key = ?"),
        lock_insert: format!(
            "INSERT INTO {keyspace}.{LOCKS_TABLE} (key, version, holders) VALUES (?, ?, ?) IF NOT EXISTS"
        ),
        lock_update: format!(
            "UPDATE {keyspace}.{LOCKS_TABLE} SET version = ?, holders = ? WHERE key = ? IF version = ?"
        ),
        index_add: format!("INSERT INTO {index} (index_id, key, pk) VALUES (?, ?, ?)"),
        index_read: format!(
            "SELECT pk FROM {index} WHERE index_id = ? AND key = ? AND pk > ? LIMIT ?"
        ),
        index_keys_of: format!("SELECT key FROM {index} WHERE index_id = ? ALLOW FILTERING"),
        index_drop: format!("DELETE FROM {index} WHERE index_id = ? AND key = ?"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnDef;

    fn col(name: &str, ty: SqlType) -> ColumnDef {
        ColumnDef::new(name, ty)
    }

    fn users() -> TableDef {
        let columns = vec![
            col("org", SqlType::Int4),
            col("handle", SqlType::Text),
            col("email", SqlType::Varchar(Some(80))),
            col("seen", SqlType::TimestampTz),
        ];
        TableDef {
            pkey_name: "users_pkey".into(),
            ..TableDef::new(
                "Users",
                "Users.0192f0c4a1b27c3d8e9f001122334455",
                columns,
                vec![0, 1],
            )
        }
    }

    #[test]
    fn table_names_are_short_valid_identifiers() {
        assert_eq!(
            table_name(&users()),
            "t_users_0192f0c4a1b27c3d8e9f001122334455"
        );
        let mut long = users();
        long.id = format!("{}.0192f0c4a1b27c3d8e9f001122334455", "Ü-x".repeat(30));
        let name = table_name(&long);
        assert_eq!(name.len(), 48, "{name}");
        assert!(crate::config::is_cql_identifier(&name), "{name}");
        assert!(name.ends_with("_0192f0c4a1b27c3d8e9f001122334455"));
    }

    #[test]
    fn rows_table_has_the_key_as_partition_key_and_hidden_columns() {
        assert_eq!(
            create_rows_table("ks", &users()),
            "CREATE TABLE IF NOT EXISTS ks.t_users_0192f0c4a1b27c3d8e9f001122334455 (\
             \"org\" int, \"handle\" text, \"email\" text, \"seen\" bigint, \
             \"__version\" uuid, \"__live\" boolean, \"__claims\" map<text, uuid>, \
             \"__intent\" text, \"__at\" bigint, \"__by\" uuid, \"__prev\" text, \
             PRIMARY KEY ((\"org\", \"handle\"))) \
             WITH comment = 'keyclaim storage Users.0192f0c4a1b27c3d8e9f001122334455'"
        );
        let mut quoted = users();
        quoted.id = "o'hara.0192f0c4a1b27c3d8e9f001122334455".into();
        assert!(create_rows_table("ks", &quoted).ends_with(
            "WITH comment = 'keyclaim storage o''hara.0192f0c4a1b27c3d8e9f001122334455'"
        ));
    }

    #[test]
    fn integers_are_stored_at_64_bits_in_tables_that_say_so() {
        let mut t = users();
        t.columns[3].ty = SqlType::Int2;
        t.columns[3].storage.missing = Some(crate::types::Value::Int2(0));
        assert_eq!(column_type(&t, 0), "int");
        assert_eq!(column_type(&t, 3), "frozen<tuple<smallint>>");
        t.wide_ints = true;
        assert_eq!(column_type(&t, 0), "bigint");
        assert_eq!(column_type(&t, 1), "text");
        assert_eq!(column_type(&t, 3), "frozen<tuple<bigint>>");
    }

    #[test]
    fn every_sql_type_has_a_cql_type() {
        let pairs = [
            (SqlType::Bool, "boolean"),
            (SqlType::Int2, "smallint"),
            (SqlType::Int8, "bigint"),
            (SqlType::Float4, "float"),
            (SqlType::Float8, "double"),
            (SqlType::Numeric(None), "decimal"),
            (SqlType::Char(Some(2)), "text"),
            (SqlType::Jsonb, "text"),
            (SqlType::Json, "text"),
            (SqlType::Bytea, "blob"),
            (SqlType::Uuid, "uuid"),
            (SqlType::Date, "date"),
            (SqlType::Timestamp, "bigint"),
        ];
        for (ty, cql) in pairs {
            assert_eq!(cql_type(&ty), cql, "{ty:?}");
        }
    }

    #[test]
    fn row_statements_are_lwts_on_the_version() {
        let cql = row_cql("ks", &users());
        let t = "ks.t_users_0192f0c4a1b27c3d8e9f001122334455";
        let all =
            "\"org\", \"handle\", \"email\", \"seen\", \"__version\", \"__live\", \"__claims\", \"__intent\", \"__at\", \"__by\", \"__prev\"";
        assert_eq!(
            cql.read,
            format!("SELECT {all} FROM {t} WHERE \"org\" = ? AND \"handle\" = ?")
        );
        assert_eq!(
            cql.insert,
            format!(
                "INSERT INTO {t} ({all}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS"
            )
        );
        assert_eq!(
            cql.update,
            format!(
                "UPDATE {t} SET \"email\" = ?, \"seen\" = ?, \"__version\" = ?, \"__live\" = ?, \
                 \"__claims\" = ?, \"__intent\" = ?, \"__at\" = ?, \"__by\" = ?, \"__prev\" = ? WHERE \"org\" = ? AND \"handle\" = ? IF \"__version\" = ?"
            )
        );
        assert_eq!(cql.scan_first, format!("SELECT {all} FROM {t} LIMIT ?"));
        assert_eq!(
            cql.scan_after,
            format!("SELECT {all} FROM {t} WHERE token(\"org\", \"handle\") > token(?, ?) LIMIT ?")
        );
    }

    #[test]
    fn claim_and_catalog_statements() {
        let cql = fixed_cql("ks");
        assert_eq!(
            cql.claim_insert,
            "INSERT INTO ks.claims (constraint_id, key, owner, txn) VALUES (?, ?, ?, ?) IF NOT EXISTS"
        );
        assert_eq!(
            cql.claim_restamp,
            "UPDATE ks.claims SET txn = ? WHERE constraint_id = ? AND key = ? IF txn = ? AND owner != ?"
        );
        assert_eq!(
            cql.claim_delete,
            "DELETE FROM ks.claims WHERE constraint_id = ? AND key = ? IF txn = ? AND owner != ?"
        );
        assert_eq!(
            cql.catalog_update,
            "UPDATE ks.catalog SET version = ?, definition = ? WHERE name = ? IF version = ?"
        );
        assert_eq!(
            cql.catalog_delete,
            "DELETE FROM ks.catalog WHERE name = ? IF version = ?"
        );
    }

    #[test]
    fn advisory_lock_statements() {
        let cql = fixed_cql("ks");
        assert_eq!(
            cql.lock_read,
            "SELECT version, holders FROM ks.advisory_locks WHERE key = ?"
        );
        assert_eq!(
            cql.lock_insert,
            "INSERT INTO ks.advisory_locks (key, version, holders) VALUES (?, ?, ?) IF NOT EXISTS"
        );
        assert_eq!(
            cql.lock_update,
            "UPDATE ks.advisory_locks SET version = ?, holders = ? WHERE key = ? IF version = ?"
        );
        assert_eq!(
            create_locks_table("ks"),
            "CREATE TABLE IF NOT EXISTS ks.advisory_locks (key blob PRIMARY KEY, version uuid, holders text)"
        );
    }

    #[test]
    fn index_entry_statements() {
        let cql = fixed_cql("ks");
        // Entries are plain writes: a reader checks every row it finds.
        assert_eq!(
            cql.index_add,
            "INSERT INTO ks.index_entries (index_id, key, pk) VALUES (?, ?, ?)"
        );
        // One partition per key, paged in primary-key order.
        assert_eq!(
            cql.index_read,
            "SELECT pk FROM ks.index_entries WHERE index_id = ? AND key = ? AND pk > ? LIMIT ?"
        );
        assert_eq!(
            create_index_table("ks"),
            "CREATE TABLE IF NOT EXISTS ks.index_entries (index_id text, key blob, pk blob, PRIMARY KEY ((index_id, key), pk))"
        );
    }

    #[test]
    fn transaction_record_and_heartbeat_statements() {
        let cql = fixed_cql("ks");
        // A transaction is decided once: whoever inserts first.
        assert_eq!(
            cql.txn_insert,
            "INSERT INTO ks.txn_records (txn, status, at) VALUES (?, ?, ?) IF NOT EXISTS"
        );
        assert_eq!(
            cql.txn_read,
            "SELECT status, at FROM ks.txn_records WHERE txn = ?"
        );
        assert_eq!(
            cql.heartbeat_write,
            "UPDATE ks.heartbeats SET at = ? WHERE proxy = ?"
        );
        assert_eq!(
            create_txn_records_table("ks"),
            "CREATE TABLE IF NOT EXISTS ks.txn_records (txn uuid PRIMARY KEY, status text, at bigint)"
        );
    }

    #[test]
    fn adopted_tables_keep_their_names() {
        let mut t = users();
        t.cql_table = Some("legacy.Users".into());
        assert_eq!(table_ref("ks", &t), "legacy.\"Users\"");
        assert!(row_cql("ks", &t)
            .read
            .contains(" FROM legacy.\"Users\" WHERE "));
        assert_eq!(
            schema_names("ks", &t),
            ("legacy".to_owned(), "Users".to_owned())
        );
        t.cql_table = Some("users".into());
        assert_eq!(table_ref("ks", &t), "ks.users");
        assert_eq!(
            schema_names("ks", &t),
            ("ks".to_owned(), "users".to_owned())
        );
        t.cql_table = None;
        assert_eq!(
            schema_names("Ks", &t),
            (
                "ks".to_owned(),
                "t_users_0192f0c4a1b27c3d8e9f001122334455".to_owned()
            )
        );
        assert_eq!(
            add_hidden_column("ks.users", VERSION, "uuid"),
            "ALTER TABLE ks.users ADD \"__version\" uuid"
        );
    }

    #[test]
    fn an_existing_column_is_recognised_in_each_servers_words() {
        // Cassandra 4.0's AlterTableStatement, then Cassandra 3 / ScyllaDB.
        assert!(is_existing_column_error(
            "Column with name '__intent' already exists"
        ));
        assert!(is_existing_column_error(
            "Invalid column name __intent because it conflicts with an existing column"
        ));
        assert!(!is_existing_column_error("unconfigured table t_x"));
    }

    #[test]
    fn a_keyspace_follows_the_local_datacenter() {
        assert_eq!(
            create_keyspace("ks", None, 3, Some("dc1")),
            "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}"
        );
        assert_eq!(
            create_keyspace("ks", None, 1, None),
            "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        );
        assert_eq!(
            create_keyspace("ks", Some("NetworkTopologyStrategy"), 3, Some("east")),
            "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'NetworkTopologyStrategy', 'east': 3}"
        );
        let simple: std::collections::HashMap<String, String> = [(
            "class".to_owned(),
            "org.apache.cassandra.locator.SimpleStrategy".to_owned(),
        )]
        .into();
        assert!(replication_warning("ks", &simple, Some("dc1"), 3).is_some());
        assert!(replication_warning("ks", &simple, None, 3).is_none());
        let nts: std::collections::HashMap<String, String> = [
            (
                "class".to_owned(),
                "org.apache.cassandra.locator.NetworkTopologyStrategy".to_owned(),
            ),
            ("dc1".to_owned(), "3".to_owned()),
        ]
        .into();
        assert!(replication_warning("ks", &nts, Some("dc1"), 3).is_none());
        assert!(replication_warning("ks", &nts, Some("dc2"), 3).is_some());
    }

    #[test]
    fn names_with_quotes_are_escaped() {
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(
            create_keyspace("ks", Some("O'Strategy"), 3, None),
            "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'O''Strategy', 'replication_factor': 3}"
        );
    }
}
