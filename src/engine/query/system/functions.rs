//! The catalog and session functions clients call, answered from the
//! execution's snapshot: `format_type`, `pg_get_indexdef`,
//! `pg_get_constraintdef`, `pg_table_is_visible`, `to_regclass`, the
//! `::regclass` and `::regtype` casts (`rules` turns them into calls),
//! `current_user`, `version()` and the like.
//!
//! They are evaluated row by row: their inputs are catalog rows and
//! constants, a few hundred at most.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{pg_catalog, pg_types, Snapshot};
use crate::error::SqlError;

/// One function's body: the snapshot and one row's arguments.
type Body = fn(&Snapshot, &[ScalarValue]) -> Result<ScalarValue, SqlError>;

/// What a function takes and gives.
struct Spec {
    name: &'static str,
    /// Each accepted argument list.
    takes: &'static [&'static [Arg]],
    gives: Ret,
    body: Body,
}

#[derive(Clone, Copy)]
enum Arg {
    Oid,
    Int,
    Text,
    Bool,
    Any,
}

#[derive(Clone, Copy)]
enum Ret {
    Oid,
    Int,
    Int8,
    Text,
    Bool,
    TextList,
}

impl Ret {
    fn data_type(self) -> DataType {
        match self {
            Ret::Oid => DataType::UInt32,
            Ret::Int => DataType::Int32,
            Ret::Int8 => DataType::Int64,
            Ret::Text => DataType::Utf8,
            Ret::Bool => DataType::Boolean,
            Ret::TextList => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        }
    }
}

fn oid_arg(v: Option<&ScalarValue>) -> Option<u32> {
    match v? {
        ScalarValue::UInt32(n) => *n,
        ScalarValue::Int64(n) => n.and_then(|n| u32::try_from(n).ok()),
        ScalarValue::Int32(n) => n.and_then(|n| u32::try_from(n).ok()),
        ScalarValue::Utf8(s) => s.as_deref().and_then(|s| s.parse().ok()),
        _ => None,
    }
}

fn int_arg(v: Option<&ScalarValue>) -> Option<i64> {
    match v? {
        ScalarValue::Int32(n) => n.map(i64::from),
        ScalarValue::Int64(n) => *n,
        ScalarValue::Int16(n) => n.map(i64::from),
        ScalarValue::UInt32(n) => n.map(i64::from),
        _ => None,
    }
}

/// A `pretty` flag: false when absent or NULL.
fn bool_arg(v: Option<&ScalarValue>) -> bool {
    matches!(v, Some(ScalarValue::Boolean(Some(true))))
}

fn text_arg(v: Option<&ScalarValue>) -> Option<String> {
    match v? {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s.clone(),
        other if !other.is_null() => Some(other.to_string()),
        _ => None,
    }
}

fn text(s: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(s)
}

/// A `reg*` input: an OID as digits, else the name `lookup` finds, else
/// `missing`'s error.
fn reg_in(
    args: &[ScalarValue],
    lookup: impl Fn(&str) -> Option<u32>,
    missing: impl Fn(&str) -> SqlError,
) -> Result<ScalarValue, SqlError> {
    let Some(n) = text_arg(args.first()) else {
        return Ok(ScalarValue::UInt32(None));
    };
    let oid = match n.parse::<u32>() {
        Ok(oid) => oid,
        Err(_) => lookup(&n).ok_or_else(|| missing(&n))?,
    };
    Ok(ScalarValue::UInt32(Some(oid)))
}

fn truth(_: &Snapshot, _: &[ScalarValue]) -> Result<ScalarValue, SqlError> {
    Ok(ScalarValue::Boolean(Some(true)))
}

fn nothing(_: &Snapshot, _: &[ScalarValue]) -> Result<ScalarValue, SqlError> {
    Ok(ScalarValue::Utf8(None))
}

fn user(s: &Snapshot, _: &[ScalarValue]) -> Result<ScalarValue, SqlError> {
    Ok(text(Some(s.user.clone())))
}

fn database(s: &Snapshot, _: &[ScalarValue]) -> Result<ScalarValue, SqlError> {
    Ok(text(Some(s.database.clone())))
}

/// PostgreSQL's pg_size_pretty: bytes, then kB, MB, GB, TB, PB, each unit
/// taken once the number reaches 10240 of the one before, rounded half up.
fn size_pretty(bytes: i64) -> String {
    let mut n = bytes;
    let mut unit = "bytes";
    for next in ["kB", "MB", "GB", "TB", "PB"] {
        if n.abs() < 10 * 1024 {
            break;
        }
        n = (n + n.signum() * 512) / 1024;
        unit = next;
    }
    format!("{n} {unit}")
}

/// `current_setting(name [, missing_ok])`: the session's value, as SHOW
/// prints it; PostgreSQL's 42704 for an unknown name unless `missing_ok`.
fn setting(s: &Snapshot, args: &[ScalarValue]) -> Result<ScalarValue, SqlError> {
    let Some(name) = text_arg(args.first()) else {
        return Ok(text(None));
    };
    let found = s
        .settings
        .iter()
        .find(|(guc, _)| guc.name.eq_ignore_ascii_case(&name));
    match found {
        Some((_, value)) => Ok(text(Some(value.clone()))),
        None if bool_arg(args.get(1)) => Ok(text(None)),
        None => Err(crate::session::settings::unrecognized(&name)),
    }
}

const OID: &[&[Arg]] = &[&[Arg::Oid]];
const NONE: &[&[Arg]] = &[&[]];
/// An object's definition, `pretty` or not (`pg_get_constraintdef`).
const OID_PRETTY: &[&[Arg]] = &[&[Arg::Oid], &[Arg::Oid, Arg::Bool]];
const PRIVILEGE: &[&[Arg]] = &[
    &[Arg::Any, Arg::Text],
    &[Arg::Any, Arg::Any, Arg::Text],
    &[Arg::Any, Arg::Any, Arg::Any, Arg::Text],
];

/// Every function answered here.
const SPECS: &[Spec] = &[
    Spec {
        name: "pg_table_is_visible",
        takes: OID,
        gives: Ret::Bool,
        body: |s, a| {
            Ok(ScalarValue::Boolean(
                oid_arg(a.first()).and_then(|o| s.visible(o)),
            ))
        },
    },
    Spec {
        name: "pg_type_is_visible",
        takes: OID,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "pg_collation_is_visible",
        takes: OID,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "pg_function_is_visible",
        takes: OID,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "format_type",
        takes: &[&[Arg::Oid, Arg::Int]],
        gives: Ret::Text,
        body: |_, a| {
            let typmod = int_arg(a.get(1)).and_then(|m| i32::try_from(m).ok());
            Ok(text(
                oid_arg(a.first()).map(|o| pg_types::format(o, typmod)),
            ))
        },
    },
    Spec {
        name: "pg_get_indexdef",
        takes: &[&[Arg::Oid], &[Arg::Oid, Arg::Int, Arg::Bool]],
        gives: Ret::Text,
        body: |s, a| {
            let Some(oid) = oid_arg(a.first()) else {
                return Ok(text(None));
            };
            match int_arg(a.get(1)).unwrap_or(0) {
                0 => Ok(text(pg_catalog::indexdef(s, oid, bool_arg(a.get(2))))),
                col => Ok(text(s.indexes().find(|i| i.oid == oid).and_then(|i| {
                    let c = *i.columns.get(usize::try_from(col - 1).ok()?)?;
                    Some(crate::catalog::naming::quote_ident(
                        &i.table.columns[c].name,
                    ))
                }))),
            }
        },
    },
    Spec {
        name: "pg_get_constraintdef",
        takes: OID_PRETTY,
        gives: Ret::Text,
        body: |s, a| {
            Ok(text(oid_arg(a.first()).and_then(|o| {
                pg_catalog::constraintdef(s, o, bool_arg(a.get(1)))
            })))
        },
    },
    Spec {
        // keyclaim has no triggers (PostgreSQL's foreign key triggers are
        // internal, and psql shows none of them).
        name: "pg_get_triggerdef",
        takes: OID_PRETTY,
        gives: Ret::Text,
        body: nothing,
    },
    Spec {
        // A set, always empty in keyclaim (`empty_set_selects`): this
        // gives it its type only.
        name: "pg_partition_ancestors",
        takes: &[&[Arg::Any]],
        gives: Ret::Oid,
        body: |_, _| Ok(ScalarValue::UInt32(None)),
    },
    Spec {
        name: REGCLASS_OUT,
        takes: OID,
        gives: Ret::Text,
        body: |s, a| Ok(text(oid_arg(a.first()).map(|o| s.regclass_text(o)))),
    },
    Spec {
        // regtypeout: a type's name as format_type gives it, `-` for 0.
        name: REGTYPE_OUT,
        takes: OID,
        gives: Ret::Text,
        body: |_, a| {
            Ok(text(oid_arg(a.first()).map(|o| match o {
                0 => "-".to_string(),
                o => pg_types::format(o, None),
            })))
        },
    },
    Spec {
        // keyclaim keeps expressions as their text already.
        name: "pg_get_expr",
        takes: &[&[Arg::Text, Arg::Oid], &[Arg::Text, Arg::Oid, Arg::Bool]],
        gives: Ret::Text,
        body: |_, a| Ok(text(text_arg(a.first()))),
    },
    Spec {
        name: "obj_description",
        takes: &[&[Arg::Oid], &[Arg::Oid, Arg::Text]],
        gives: Ret::Text,
        body: |s, a| {
            let t = oid_arg(a.first()).and_then(|oid| s.table_by_oid(oid));
            Ok(text(t.and_then(|t| t.comment.clone())))
        },
    },
    Spec {
        name: "col_description",
        takes: &[&[Arg::Oid, Arg::Int]],
        gives: Ret::Text,
        body: |s, a| {
            let t = oid_arg(a.first()).and_then(|oid| s.table_by_oid(oid));
            let attnum = int_arg(a.get(1));
            let column = t.and_then(|t| {
                let i = (0..t.visible().len()).find(|&i| Some(t.attnum(i) as i64) == attnum)?;
                t.columns[i].comment.clone()
            });
            Ok(text(column))
        },
    },
    Spec {
        name: "shobj_description",
        takes: &[&[Arg::Oid, Arg::Text]],
        gives: Ret::Text,
        body: nothing,
    },
    Spec {
        name: "pg_get_viewdef",
        takes: OID_PRETTY,
        gives: Ret::Text,
        body: nothing,
    },
    Spec {
        name: "to_regclass",
        takes: &[&[Arg::Text]],
        gives: Ret::Oid,
        body: |s, a| {
            Ok(ScalarValue::UInt32(
                text_arg(a.first()).and_then(|n| s.relation_oid(&n)),
            ))
        },
    },
    Spec {
        name: "to_regtype",
        takes: &[&[Arg::Text]],
        gives: Ret::Oid,
        body: |_, a| {
            Ok(ScalarValue::UInt32(
                text_arg(a.first()).and_then(|n| pg_types::oid_by_name(&n)),
            ))
        },
    },
    Spec {
        name: REGCLASS,
        takes: &[&[Arg::Text]],
        gives: Ret::Oid,
        body: |s, a| reg_in(a, |n| s.relation_oid(n), SqlError::undefined_table),
    },
    Spec {
        name: REGTYPE,
        takes: &[&[Arg::Text]],
        gives: Ret::Oid,
        body: |_, a| {
            reg_in(a, pg_types::oid_by_name, |n| {
                SqlError::new("42704", format!("type \"{n}\" does not exist"))
            })
        },
    },
    Spec {
        name: "has_table_privilege",
        takes: PRIVILEGE,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "has_schema_privilege",
        takes: PRIVILEGE,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "has_database_privilege",
        takes: PRIVILEGE,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "has_sequence_privilege",
        takes: PRIVILEGE,
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "has_column_privilege",
        takes: &[
            &[Arg::Any, Arg::Any, Arg::Text],
            &[Arg::Any, Arg::Any, Arg::Any, Arg::Text],
        ],
        gives: Ret::Bool,
        body: truth,
    },
    Spec {
        name: "has_any_column_privilege",
        takes: PRIVILEGE,
        gives: Ret::Bool,
        body: truth,
    },
    // keyclaim does not know how much a relation holds in the store:
    // sizes are NULL (psql's `\dt+` shows them blank).
    Spec {
        name: "pg_table_size",
        takes: OID,
        gives: Ret::Int8,
        body: |_, _| Ok(ScalarValue::Int64(None)),
    },
    Spec {
        name: "pg_relation_size",
        takes: &[&[Arg::Oid], &[Arg::Oid, Arg::Text]],
        gives: Ret::Int8,
        body: |_, _| Ok(ScalarValue::Int64(None)),
    },
    Spec {
        name: "pg_total_relation_size",
        takes: OID,
        gives: Ret::Int8,
        body: |_, _| Ok(ScalarValue::Int64(None)),
    },
    Spec {
        name: "pg_indexes_size",
        takes: OID,
        gives: Ret::Int8,
        body: |_, _| Ok(ScalarValue::Int64(None)),
    },
    Spec {
        name: "pg_database_size",
        takes: &[&[Arg::Any]],
        gives: Ret::Int8,
        body: |_, _| Ok(ScalarValue::Int64(None)),
    },
    Spec {
        name: "pg_size_pretty",
        takes: &[&[Arg::Any]],
        gives: Ret::Text,
        body: |_, a| Ok(text(int_arg(a.first()).map(size_pretty))),
    },
    Spec {
        name: "current_setting",
        takes: &[&[Arg::Text], &[Arg::Text, Arg::Bool]],
        gives: Ret::Text,
        body: setting,
    },
    Spec {
        name: "current_user",
        takes: NONE,
        gives: Ret::Text,
        body: user,
    },
    Spec {
        name: "session_user",
        takes: NONE,
        gives: Ret::Text,
        body: user,
    },
    Spec {
        name: "current_role",
        takes: NONE,
        gives: Ret::Text,
        body: user,
    },
    Spec {
        name: "user",
        takes: NONE,
        gives: Ret::Text,
        body: user,
    },
    Spec {
        name: "current_database",
        takes: NONE,
        gives: Ret::Text,
        body: database,
    },
    Spec {
        name: "current_catalog",
        takes: NONE,
        gives: Ret::Text,
        body: database,
    },
    Spec {
        name: "current_schema",
        takes: NONE,
        gives: Ret::Text,
        body: |_, _| Ok(text(Some("public".into()))),
    },
    Spec {
        name: "current_schemas",
        takes: &[&[Arg::Bool]],
        gives: Ret::TextList,
        body: |_, a| {
            let implicit = matches!(a.first(), Some(ScalarValue::Boolean(Some(true))));
            let names: &[&str] = if implicit {
                &["pg_catalog", "public"]
            } else {
                &["public"]
            };
            let items: Vec<ScalarValue> = names.iter().map(|n| text(Some(n.to_string()))).collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &items,
                &DataType::Utf8,
            )))
        },
    },
    Spec {
        name: "version",
        takes: NONE,
        gives: Ret::Text,
        body: |_, _| Ok(text(Some(crate::version_string()))),
    },
    Spec {
        name: "pg_backend_pid",
        takes: NONE,
        gives: Ret::Int,
        body: |_, _| Ok(ScalarValue::Int32(Some(std::process::id() as i32))),
    },
    Spec {
        name: "pg_get_userbyid",
        takes: OID,
        gives: Ret::Text,
        body: |s, a| {
            Ok(text(oid_arg(a.first()).map(|o| {
                if o == super::oids::SUPERUSER {
                    s.user.clone()
                } else if o == super::oids::DATABASE_OWNER {
                    "pg_database_owner".into()
                } else {
                    format!("unknown (OID={o})")
                }
            })))
        },
    },
    Spec {
        name: "pg_encoding_to_char",
        takes: &[&[Arg::Int]],
        gives: Ret::Text,
        body: |_, a| {
            Ok(text(int_arg(a.first()).map(|e| {
                if e == 6 {
                    "UTF8".into()
                } else {
                    String::new()
                }
            })))
        },
    },
    Spec {
        name: "pg_get_statisticsobjdef_columns",
        takes: OID,
        gives: Ret::Text,
        body: nothing,
    },
    Spec {
        name: "pg_relation_is_publishable",
        takes: &[&[Arg::Any]],
        gives: Ret::Bool,
        body: |_, _| Ok(ScalarValue::Boolean(Some(false))),
    },
    Spec {
        name: "pg_is_in_recovery",
        takes: NONE,
        gives: Ret::Bool,
        body: |_, _| Ok(ScalarValue::Boolean(Some(false))),
    },
    Spec {
        name: "pg_my_temp_schema",
        takes: NONE,
        gives: Ret::Oid,
        body: |_, _| Ok(ScalarValue::UInt32(Some(0))),
    },
    Spec {
        name: "pg_is_other_temp_schema",
        takes: OID,
        gives: Ret::Bool,
        body: |_, _| Ok(ScalarValue::Boolean(Some(false))),
    },
    Spec {
        name: "pg_tablespace_location",
        takes: OID,
        gives: Ret::Text,
        body: |_, _| Ok(text(Some(String::new()))),
    },
    Spec {
        name: "quote_ident",
        takes: &[&[Arg::Text]],
        gives: Ret::Text,
        body: |_, a| {
            Ok(text(
                text_arg(a.first()).map(|s| crate::catalog::naming::quote_ident(&s)),
            ))
        },
    },
    Spec {
        name: "pg_get_serial_sequence",
        takes: &[&[Arg::Text, Arg::Text]],
        gives: Ret::Text,
        body: |s, a| {
            let (Some(table), Some(column)) = (text_arg(a.first()), text_arg(a.get(1))) else {
                return Ok(text(None));
            };
            let name = crate::engine::sequence::relation_name(&table)?;
            let t = s
                .named(&name)
                .ok_or_else(|| SqlError::undefined_table(&name))?;
            let sequence = |seq: &str| s.named(seq).cloned().map(Arc::new);
            Ok(text(crate::engine::sequence::serial_sequence(
                t, &column, sequence,
            )?))
        },
    },
];

/// The function `::regclass` becomes (`rules`).
pub(crate) const REGCLASS: &str = "regclass";
/// The function `::regtype` becomes (`rules`).
pub(crate) const REGTYPE: &str = "regtype";
/// A regclass as text: its relation's name (`rules` calls it where a
/// regclass is shown or cast to text).
pub(crate) const REGCLASS_OUT: &str = "regclassout";
pub(crate) const REGTYPE_OUT: &str = "regtypeout";

/// Whether a function (by its unqualified lower-case name) is answered here.
pub(crate) fn is_system_function(name: &str) -> bool {
    SPECS.iter().any(|s| s.name == name)
}

/// The functions, reading `snap`.
pub(super) fn udfs(snap: &Arc<Snapshot>) -> Vec<Arc<ScalarUDF>> {
    SPECS
        .iter()
        .map(|spec| {
            Arc::new(ScalarUDF::from(SnapshotFn {
                spec,
                signature: signature(spec),
                snap: snap.clone(),
            }))
        })
        .collect()
}

fn signature(spec: &Spec) -> Signature {
    if spec.takes.iter().all(|args| args.is_empty()) {
        Signature::nullary(Volatility::Stable)
    } else {
        Signature::user_defined(Volatility::Stable)
    }
}

/// The types a call's arguments are cast to: those of the form with as
/// many arguments (`Any` keeps what it is given).
fn coerce(spec: &Spec, given: &[DataType]) -> DfResult<Vec<DataType>> {
    let form = spec
        .takes
        .iter()
        .find(|args| args.len() == given.len())
        .ok_or_else(|| {
            let types: Vec<String> = given.iter().map(|t| t.to_string()).collect();
            DataFusionError::Plan(format!(
                "No function matches the given name and argument types '{}({})'",
                spec.name,
                types.join(", ")
            ))
        })?;
    Ok(form
        .iter()
        .zip(given)
        .map(|(a, g)| match a {
            Arg::Oid => DataType::UInt32,
            Arg::Int => DataType::Int32,
            Arg::Text => DataType::Utf8,
            Arg::Bool => DataType::Boolean,
            Arg::Any => g.clone(),
        })
        .collect())
}

/// One function, with the snapshot it reads.
struct SnapshotFn {
    spec: &'static Spec,
    signature: Signature,
    snap: Arc<Snapshot>,
}

impl std::fmt::Debug for SnapshotFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spec.name)
    }
}

impl PartialEq for SnapshotFn {
    fn eq(&self, other: &Self) -> bool {
        self.spec.name == other.spec.name && Arc::ptr_eq(&self.snap, &other.snap)
    }
}

impl Eq for SnapshotFn {}

impl Hash for SnapshotFn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.spec.name.hash(state);
    }
}

impl ScalarUDFImpl for SnapshotFn {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(self.spec.gives.data_type())
    }

    fn coerce_types(&self, given: &[DataType]) -> DfResult<Vec<DataType>> {
        coerce(self.spec, given)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        // No rows, no calls: a batch of none (psql's `\d` asks for column
        // defaults through a subquery that may find none) has nothing to
        // read its arguments from.
        let ty = self.spec.gives.data_type();
        super::super::row_fn::map_rows(&args.args, args.number_rows, &ty, |row| {
            (self.spec.body)(&self.snap, row).map_err(super::super::row_fn::sql_err)
        })
    }
}
