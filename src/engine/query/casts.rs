//! Casts into the types the query engine keeps as text (`uuid`, `json`,
//! `jsonb`), which DataFusion has no type for: `x::uuid` is the function
//! `pg_to_uuid(x)` (`rules::text_type_casts`), which checks each value as
//! PostgreSQL's input function does (22P02 for a malformed one), answers
//! it in PostgreSQL's output form, and tags its result field with the type
//! so that the client is told a uuid, not a text. SQLAlchemy's bulk insert
//! (`SELECT p0::UUID, p2::JSONB FROM (VALUES ...)`) needs these.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use crate::types::{SqlType, Value};

/// The function a cast into `ty` becomes, when it is one of these types.
pub(crate) fn function_for(ty: &SqlType) -> Option<&'static str> {
    Some(match ty {
        SqlType::Uuid => "pg_to_uuid",
        SqlType::Json => "pg_to_json",
        SqlType::Jsonb => "pg_to_jsonb",
        _ => return None,
    })
}

/// The cast functions, to register with the engine.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    [SqlType::Uuid, SqlType::Json, SqlType::Jsonb]
        .into_iter()
        .map(|ty| ScalarUDF::from(TextTypeCast::new(ty)))
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TextTypeCast {
    name: &'static str,
    ty: SqlType,
    signature: Signature,
}

impl TextTypeCast {
    fn new(ty: SqlType) -> TextTypeCast {
        TextTypeCast {
            name: function_for(&ty).expect("a text-kept type"),
            ty,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TextTypeCast {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Whatever it is given is read as text first, as PostgreSQL reads an
    /// untyped literal or a text value it casts.
    fn coerce_types(&self, given: &[DataType]) -> DfResult<Vec<DataType>> {
        Ok(vec![DataType::Utf8; given.len()])
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        let field = Field::new(self.name, DataType::Utf8, nullable);
        Ok(Arc::new(field.with_metadata(HashMap::from([(
            super::types::SQL_TYPE.to_owned(),
            self.ty.pg_name().to_owned(),
        )]))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(DataFusionError::Plan(format!(
                "{} takes one argument",
                self.name
            )));
        };
        let cast = |text: Option<&str>| -> DfResult<Option<String>> {
            let Some(text) = text else {
                return Ok(None);
            };
            let value = Value::parse_text(&self.ty, text)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            Ok(value.to_text())
        };
        match arg {
            ColumnarValue::Scalar(s) => {
                let text = match s {
                    ScalarValue::Utf8(t) | ScalarValue::LargeUtf8(t) | ScalarValue::Utf8View(t) => {
                        t.as_deref()
                    }
                    _ if s.is_null() => None,
                    other => {
                        return Err(DataFusionError::Plan(format!(
                            "{} of a {}",
                            self.name,
                            other.data_type()
                        )))
                    }
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(cast(text)?)))
            }
            ColumnarValue::Array(a) => {
                let a = datafusion::arrow::compute::cast(a, &DataType::Utf8)?;
                let texts = a
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| DataFusionError::Plan(format!("{} of a non-text", self.name)))?;
                let out = (0..texts.len())
                    .map(|i| cast((!texts.is_null(i)).then(|| texts.value(i))))
                    .collect::<DfResult<Vec<_>>>()?;
                Ok(ColumnarValue::Array(Arc::new(StringArray::from(out))))
            }
        }
    }
}
