//! PostgreSQL's JSON operators, which DataFusion does not have: `->`,
//! `->>`, `#>` and `#>>` on json and jsonb (kept as text in the engine,
//! `query::types`) are calls of these functions (`rules::postgres_operators`
//! rewrites them), computed by keyclaim's JSON parser (`types::json`).
//!
//! `->` and `#>` give a value of their operand's type, `->>` and `#>>`
//! text. An element of a json (not jsonb) value prints as jsonb prints
//! it, where PostgreSQL gives json's original text.

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
    [Op::Get, Op::GetText, Op::Path, Op::PathText]
        .into_iter()
        .map(|op| {
            ScalarUDF::from(JsonOp {
                op,
                signature: Signature::user_defined(Volatility::Immutable),
            })
        })
        .collect()
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
                return Err(sql_err(
                    SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        format!("operator does not exist: {left} {} {right}", self.op.symbol()),
                    )
                    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."),
                ));
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
