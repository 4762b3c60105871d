//! PostgreSQL's JSON operators, which DataFusion does not have: `->`,
//! `->>`, `#>` and `#>>` on json and jsonb (kept as text in the engine,
//! `query::types`) are calls of these functions (`rules::postgres_operators`
//! rewrites them), computed by keyclaim's JSON parser (`types::json`).
//!
//! `->` and `#>` give a value of their operand's type, `->>` and `#>>`
//! text. An element of a json (not jsonb) value prints as jsonb prints
//! it, where PostgreSQL gives json's original text.
//!
//! And `json_build_object` / `json_build_array` (SQLAlchemy's column
//! reflection builds its identity options with one), printed as
//! PostgreSQL prints them (`{"a" : 1, "b" : "x"}`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::row_fn::{map_rows, sql_err, text_of};
use super::types::SQL_TYPE;
use crate::error::{sqlstate, SqlError};
use crate::types::{json_path, JsonStep, SqlType, Value};

/// The operators, with the function each becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// `->`
    Get,
    /// `->>`
    GetText,
    /// `#>`
    Path,
    /// `#>>`
    PathText,
}

impl Op {
    pub(crate) fn function(self) -> &'static str {
        match self {
            Op::Get => "pg_json_get",
            Op::GetText => "pg_json_get_text",
            Op::Path => "pg_json_path",
            Op::PathText => "pg_json_path_text",
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Get => "->",
            Op::GetText => "->>",
            Op::Path => "#>",
            Op::PathText => "#>>",
        }
    }

    fn as_text(self) -> bool {
        matches!(self, Op::GetText | Op::PathText)
    }
}

/// The functions, to register with the engine.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    let operators = [Op::Get, Op::GetText, Op::Path, Op::PathText]
        .into_iter()
        .map(|op| {
            ScalarUDF::from(JsonOp {
                op,
                signature: Signature::user_defined(Volatility::Immutable),
            })
        });
    let builders = [true, false].into_iter().map(|object| {
        ScalarUDF::from(Build {
            object,
            signature: Signature::variadic_any(Volatility::Stable),
        })
    });
    operators.chain(builders).collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonOp {
    op: Op,
    signature: Signature,
}

fn is_text(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

impl JsonOp {
    /// The operand's JSON type, from its field; PostgreSQL's 42883 for
    /// any other operand.
    fn operand_type(
        &self,
        fields: &[FieldRef],
        constants: &[Option<&ScalarValue>],
    ) -> DfResult<&'static str> {
        let [doc, step] = fields else {
            return plan_err!("{} takes two operands", self.op.symbol());
        };
        let tag = doc.metadata().get(SQL_TYPE).map(String::as_str);
        let json = match tag {
            Some("jsonb") if is_text(doc.data_type()) => "jsonb",
            Some("json") if is_text(doc.data_type()) => "json",
            _ => {
                let left = super::types::sql_type(doc)
                    .map(|t| t.pg_name().to_string())
                    .unwrap_or_else(|_| doc.data_type().to_string());
                // A quoted literal is of PostgreSQL's type unknown.
                let literal = constants.get(1).and_then(|c| c.and_then(text_of)).is_some();
                let right = match super::types::sql_type(step) {
                    _ if literal => "unknown".to_owned(),
                    Ok(t) => t.pg_name().to_string(),
                    Err(_) => step.data_type().to_string(),
                };
                return Err(sql_err(SqlError::no_operator(
                    &left,
                    self.op.symbol(),
                    &right,
                )));
            }
        };
        Ok(json)
    }
}

/// The path a `#>` operand spells: a text array, or its literal.
fn path_of(s: &ScalarValue) -> DfResult<Option<Vec<JsonStep>>> {
    let items: Vec<Option<String>> = match s {
        ScalarValue::List(list) => {
            let items = list.value(0);
            (0..items.len())
                .map(|i| {
                    ScalarValue::try_from_array(&items, i).map(|v| text_of(&v).map(str::to_owned))
                })
                .collect::<DfResult<_>>()?
        }
        other => match text_of(other) {
            None => return Ok(None),
            Some(text) => {
                match Value::parse_text(&SqlType::array_of(SqlType::Text), text).map_err(sql_err)? {
                    Value::Array(a) => a
                        .items
                        .iter()
                        .map(|v| match v {
                            Value::Text(t) => Some(t.clone()),
                            _ => None,
                        })
                        .collect(),
                    _ => return Ok(None),
                }
            }
        },
    };
    // A NULL path element leads nowhere.
    Ok(items
        .into_iter()
        .map(|i| i.map(JsonStep::Key))
        .collect::<Option<Vec<_>>>())
}

fn step_of(s: &ScalarValue) -> Option<JsonStep> {
    match s {
        ScalarValue::Int8(i) => i.map(|i| JsonStep::Index(i.into())),
        ScalarValue::Int16(i) => i.map(|i| JsonStep::Index(i.into())),
        ScalarValue::Int32(i) => i.map(|i| JsonStep::Index(i.into())),
        ScalarValue::Int64(i) => i.map(JsonStep::Index),
        other => text_of(other).map(|k| JsonStep::Key(k.to_owned())),
    }
}

impl ScalarUDFImpl for JsonOp {
    fn name(&self) -> &str {
        self.op.function()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, given: &[DataType]) -> DfResult<Vec<DataType>> {
        let [doc, step] = given else {
            return plan_err!("{} takes two operands", self.op.symbol());
        };
        let step = match (self.op, step) {
            (Op::Get | Op::GetText, DataType::Int8 | DataType::Int16 | DataType::Int32) => {
                DataType::Int64
            }
            (_, DataType::List(_)) => step.clone(),
            _ => DataType::Utf8,
        };
        let doc = if is_text(doc) {
            DataType::Utf8
        } else {
            doc.clone()
        };
        Ok(vec![doc, step])
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let json = self.operand_type(args.arg_fields, args.scalar_arguments)?;
        let field = Field::new(self.name(), DataType::Utf8, true);
        Ok(Arc::new(if self.op.as_text() {
            field
        } else {
            field.with_metadata(HashMap::from([(SQL_TYPE.to_owned(), json.to_owned())]))
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let op = self.op;
        map_rows(&args.args, args.number_rows, &DataType::Utf8, |row| {
            let [doc, step] = row else {
                return plan_err!("{} takes two operands", op.symbol());
            };
            let path = match op {
                Op::Get | Op::GetText => step_of(step).map(|s| vec![s]),
                Op::Path | Op::PathText => path_of(step)?,
            };
            let (Some(doc), Some(path)) = (text_of(doc), path) else {
                return Ok(ScalarValue::Utf8(None));
            };
            let found = json_path(doc, &path, op.as_text()).map_err(sql_err)?;
            Ok(ScalarValue::Utf8(found))
        })
    }
}

/// `json_build_object(k, v, ...)` (`object`) or `json_build_array(v, ...)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Build {
    object: bool,
    signature: Signature,
}

/// A value as PostgreSQL's `to_json` writes it; `field` tells json from text.
fn to_json(v: &ScalarValue, field: &Field) -> Result<String, SqlError> {
    if v.is_null() {
        return Ok("null".into());
    }
    let tagged = field.metadata().get(SQL_TYPE).map(String::as_str);
    if matches!(tagged, Some("json" | "jsonb")) {
        if let Some(text) = text_of(v) {
            return Ok(text.to_owned());
        }
    }
    let ty = super::types::sql_type(field)?;
    let value = super::types::from_scalar(v.clone(), &ty)?;
    Ok(match value {
        Value::Bool(b) => b.to_string(),
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Numeric(_) => {
            value.to_text().unwrap_or_default()
        }
        Value::Float4(_) | Value::Float8(_) => {
            let text = value.to_text().unwrap_or_default();
            if text.parse::<f64>().is_ok_and(f64::is_finite) {
                text
            } else {
                json_string(&text)
            }
        }
        Value::Array(a) => {
            let elem = Field::new("", super::types::arrow_type(&a.elem), true);
            let items = a
                .items
                .iter()
                .map(|item| {
                    let scalar = super::types::to_scalar(item, &a.elem)?;
                    to_json(&scalar, &elem)
                })
                .collect::<Result<Vec<_>, SqlError>>()?;
            format!("[{}]", items.join(","))
        }
        // ISO 8601, as PostgreSQL's JSON writes a date/time.
        Value::Timestamp(_) | Value::TimestampTz(_) => {
            let text = value.to_text().unwrap_or_default().replacen(' ', "T", 1);
            let text = match text.strip_suffix("+00") {
                Some(t) if matches!(value, Value::TimestampTz(_)) => format!("{t}+00:00"),
                _ => text,
            };
            json_string(&text)
        }
        other => json_string(&other.to_text().unwrap_or_default()),
    })
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl ScalarUDFImpl for Build {
    fn name(&self) -> &str {
        if self.object {
            "json_build_object"
        } else {
            "json_build_array"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        if self.object && args.arg_fields.len() % 2 == 1 {
            return Err(sql_err(
                SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "argument list must have even number of elements",
                )
                .with_hint("The arguments of json_build_object() must consist of alternating keys and values."),
            ));
        }
        let field = Field::new(self.name(), DataType::Utf8, false);
        Ok(Arc::new(field.with_metadata(HashMap::from([(
            SQL_TYPE.to_owned(),
            "json".to_owned(),
        )]))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let object = self.object;
        let fields = args.arg_fields.clone();
        map_rows(&args.args, args.number_rows, &DataType::Utf8, |row| {
            let mut items = Vec::with_capacity(row.len());
            for (i, (v, field)) in row.iter().zip(&fields).enumerate() {
                let key = object && i % 2 == 0;
                if key && v.is_null() {
                    return Err(sql_err(SqlError::new(
                        "22004",
                        "null value not allowed for object key",
                    )));
                }
                let text = if key {
                    json_string(&v.to_string())
                } else {
                    to_json(v, field).map_err(sql_err)?
                };
                items.push(text);
            }
            let text = if object {
                let pairs: Vec<String> = items
                    .chunks(2)
                    .map(|kv| format!("{} : {}", kv[0], kv.get(1).map_or("null", String::as_str)))
                    .collect();
                format!("{{{}}}", pairs.join(", "))
            } else {
                format!("[{}]", items.join(", "))
            };
            Ok(ScalarValue::Utf8(Some(text)))
        })
    }
}
