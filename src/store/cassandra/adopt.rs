//! Adopting a CQL table that keyclaim did not create: read its shape from
//! `system_schema.columns`, check that the claim protocol can manage it,
//! and add the hidden columns. Its rows keep their data; rows written
//! before adoption have no `__version` and count as version nil (see
//! `values::Named::row`), and the first keyclaim write to one stamps it.

use scylla::client::session::Session;
use scylla::deserialize::row::DeserializeRow;
use scylla::serialize::row::SerializeRow;

use super::cql::{self, HIDDEN};
use super::errors::classify;
use crate::store::{ForeignTable, StoreError, StoreResult};
use crate::types::SqlType;

/// The SQL type a column of CQL type `cql` is served as; None when keyclaim
/// cannot serve it.
pub fn sql_type(cql: &str) -> Option<SqlType> {
    Some(match cql {
        "text" | "varchar" | "ascii" => SqlType::Text,
        "int" => SqlType::Int4,
        "bigint" => SqlType::Int8,
        "smallint" => SqlType::Int2,
        "boolean" => SqlType::Bool,
        "uuid" | "timeuuid" => SqlType::Uuid,
        // CQL timestamps are instants in milliseconds.
        "timestamp" => SqlType::TimestampTz,
        "date" => SqlType::Date,
        "float" => SqlType::Float4,
        "double" => SqlType::Float8,
        "decimal" => SqlType::Numeric(None),
        "blob" => SqlType::Bytea,
        _ => return None,
    })
}

/// One row of `system_schema.columns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaColumn {
    pub name: String,
    /// partition_key, clustering, regular or static.
    pub kind: String,
    pub position: i32,
    pub cql_type: String,
}

/// The table as keyclaim will serve it, or every reason it cannot, at once.
/// Key columns come first in key order, then the others by name (CQL's own
/// column order). Hidden columns already added by an earlier adoption are
/// checked, not served.
pub fn plan(table: &str, columns: &[SchemaColumn]) -> Result<ForeignTable, String> {
    let mut problems = Vec::new();
    if columns.is_empty() {
        return Err(format!("there is no CQL table {table}"));
    }
    let mut key: Vec<&SchemaColumn> = columns
        .iter()
        .filter(|c| c.kind == "partition_key")
        .collect();
    key.sort_by_key(|c| c.position);
    let mut rest: Vec<&SchemaColumn> = columns
        .iter()
        .filter(|c| c.kind != "partition_key")
        .collect();
    rest.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = ForeignTable {
        columns: Vec::new(),
        primary_key: Vec::new(),
    };
    for c in key.iter().chain(&rest) {
        if let Some((_, ty)) = HIDDEN.iter().find(|(h, _)| *h == c.name) {
            if c.cql_type != *ty {
                problems.push(format!("{} is {}, keyclaim needs {ty}", c.name, c.cql_type));
            }
            continue;
        }
        match c.kind.as_str() {
            "clustering" => problems.push(format!(
                "{} is a clustering column: keyclaim needs one row per partition",
                c.name
            )),
            "static" => problems.push(format!("{} is a static column", c.name)),
            _ => {}
        }
        let Some(ty) = sql_type(&c.cql_type) else {
            problems.push(format!(
                "{} has type {}, which keyclaim cannot serve",
                c.name, c.cql_type
            ));
            continue;
        };
        if c.kind == "partition_key" {
            // Equal decimals (1.0, 1.00) or floats (0.0, -0.0) may sit in
            // different partitions already: one key, two rows.
            if matches!(ty, SqlType::Numeric(_) | SqlType::Float4 | SqlType::Float8) {
                problems.push(format!(
                    "{} is a {} partition key: equal values can be different partitions",
                    c.name, c.cql_type
                ));
            }
            out.primary_key.push(out.columns.len());
        }
        out.columns.push((c.name.clone(), ty));
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(format!("cannot adopt {table}: {}", problems.join("; ")))
    }
}

pub async fn adopt(session: &Session, keyspace: &str, name: &str) -> StoreResult<ForeignTable> {
    let (ks, table) = cql::split_table(keyspace, name);
    let columns = read_columns(session, ks, table).await?;
    let foreign = plan(name, &columns).map_err(StoreError::Unavailable)?;
    let target = format!("{}.{}", cql::ident(ks), cql::ident(table));
    // Proxies starting together adopt the same table at once: a column
    // another one added meanwhile is refused as existing, which is fine
    // once its type is checked (below).
    let mut raced = false;
    for (column, ty) in HIDDEN {
        if !columns.iter().any(|c| c.name == column) {
            match session
                .query_unpaged(cql::add_hidden_column(&target, column, ty), ())
                .await
            {
                Ok(_) => {}
                Err(e) if cql::is_existing_column_error(&e.to_string()) => raced = true,
                Err(e) => return Err(classify(&e, false)),
            }
        }
    }
    session
        .await_schema_agreement()
        .await
        .map_err(|e| StoreError::Unknown(format!("schema agreement: {e}")))?;
    if raced {
        let columns = read_columns(session, ks, table).await?;
        plan(name, &columns).map_err(StoreError::Unavailable)?;
    }
    Ok(foreign)
}

pub(super) async fn read_columns(
    session: &Session,
    ks: &str,
    table: &str,
) -> StoreResult<Vec<SchemaColumn>> {
    let rows: Vec<(String, String, i32, String)> =
        schema_rows(session, cql::FOREIGN_COLUMNS, (ks, table)).await?;
    Ok(rows
        .into_iter()
        .map(|(name, kind, position, cql_type)| SchemaColumn {
            name,
            kind,
            position,
            cql_type,
        })
        .collect())
}

/// The rows a `system_schema` query answers, typed.
pub(super) async fn schema_rows<R>(
    session: &Session,
    query: &str,
    binds: impl SerializeRow,
) -> StoreResult<Vec<R>>
where
    R: for<'f> DeserializeRow<'f, 'f>,
{
    let unreadable =
        |e: &dyn std::fmt::Display| StoreError::Unavailable(format!("reading system_schema: {e}"));
    let result = session
        .query_unpaged(query, binds)
        .await
        .map_err(|e| classify(&e, false))?;
    let rows = result.into_rows_result().map_err(|e| unreadable(&e))?;
    let typed = rows.rows::<R>().map_err(|e| unreadable(&e))?;
    typed.map(|r| r.map_err(|e| unreadable(&e))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, kind: &str, position: i32, cql_type: &str) -> SchemaColumn {
        SchemaColumn {
            name: name.into(),
            kind: kind.into(),
            position,
            cql_type: cql_type.into(),
        }
    }

    #[test]
    fn key_first_then_columns_by_name() {
        let cols = [
            col("email", "regular", -1, "text"),
            col("handle", "partition_key", 1, "text"),
            col("org", "partition_key", 0, "int"),
            col("at", "regular", -1, "timestamp"),
            col("__version", "regular", -1, "uuid"),
        ];
        let t = plan("ks.users", &cols).unwrap();
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["org", "handle", "at", "email"]);
        assert_eq!(t.primary_key, [0, 1]);
        assert_eq!(t.columns[2].1, SqlType::TimestampTz);
    }

    #[test]
    fn every_reason_to_refuse_is_reported() {
        let cols = [
            col("id", "partition_key", 0, "decimal"),
            col("seq", "clustering", 0, "int"),
            col("tags", "regular", -1, "set<text>"),
            col("__live", "regular", -1, "int"),
        ];
        let e = plan("ks.t", &cols).unwrap_err();
        for part in [
            "id is a decimal partition key",
            "seq is a clustering",
            "set<text>",
            "__live is int",
        ] {
            assert!(e.contains(part), "{e}");
        }
        assert_eq!(
            plan("ks.none", &[]).unwrap_err(),
            "there is no CQL table ks.none"
        );
    }
}
