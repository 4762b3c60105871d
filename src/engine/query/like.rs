//! `LIKE` / `ILIKE` with an `ESCAPE` other than the backslash, which
//! DataFusion refuses: `x LIKE p ESCAPE '/'` is `pg_like(x, p, '/')`
//! (`rules::postgres_operators`), matched by keyclaim's own LIKE
//! (`sql::expr::like_escaped`, linear in time as PostgreSQL's). An escape
//! of more than one character is PostgreSQL's 22025.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::row_fn::{map_rows, sql_err, text_of};
use crate::error::SqlError;

/// The function `LIKE ... ESCAPE` becomes (`ILIKE`: `case_insensitive`).
pub(crate) fn function(case_insensitive: bool) -> &'static str {
    if case_insensitive {
        "pg_ilike"
    } else {
        "pg_like"
    }
}

/// The functions, to register with the engine.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    [false, true]
        .into_iter()
        .map(|case_insensitive| {
            ScalarUDF::from(Like {
                case_insensitive,
                signature: Signature::user_defined(Volatility::Immutable),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Like {
    case_insensitive: bool,
    signature: Signature,
}

/// The escape character an `ESCAPE` string names (None for `''`).
fn escape_of(text: &str) -> Result<Option<char>, SqlError> {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(SqlError::new("22025", "invalid escape string")
            .with_hint("Escape string must be empty or one character.")),
    }
}

impl ScalarUDFImpl for Like {
    fn name(&self) -> &str {
        function(self.case_insensitive)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, given: &[DataType]) -> DfResult<Vec<DataType>> {
        match given.len() {
            3 => Ok(vec![DataType::Utf8; 3]),
            _ => plan_err!("{} takes three arguments", self.name()),
        }
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let fold = self.case_insensitive;
        map_rows(&args.args, args.number_rows, &DataType::Boolean, |row| {
            let [s, pattern, escape] = row else {
                return plan_err!("LIKE takes three arguments");
            };
            let (Some(s), Some(pattern), Some(escape)) =
                (text_of(s), text_of(pattern), text_of(escape))
            else {
                return Ok(ScalarValue::Boolean(None));
            };
            let escape = escape_of(escape).map_err(sql_err)?;
            let matched = if fold {
                crate::sql::expr::like_escaped(&s.to_lowercase(), &pattern.to_lowercase(), escape)
            } else {
                crate::sql::expr::like_escaped(s, pattern, escape)
            };
            Ok(ScalarValue::Boolean(Some(matched.map_err(sql_err)?)))
        })
    }
}
