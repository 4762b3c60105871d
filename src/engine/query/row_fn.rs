//! Scalar functions computed one row at a time over DataFusion scalars:
//! what `query::dates`, `query::json`, `query::like` and the catalog
//! functions (`query::system::functions`) share. Their work per value
//! (parsing a JSON document, splitting a timestamp into fields) outweighs
//! the scalar conversion, so they need no vectorised kernels.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::ColumnarValue;

use crate::error::SqlError;

/// `f` applied to each row of `args` (once, when every argument is a
/// constant), its results of type `out`.
pub(super) fn map_rows(
    args: &[ColumnarValue],
    rows: usize,
    out: &DataType,
    f: impl Fn(&[ScalarValue]) -> DfResult<ScalarValue>,
) -> DfResult<ColumnarValue> {
    let constant = args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
    if constant {
        let row: Vec<ScalarValue> = args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => s.clone(),
                ColumnarValue::Array(_) => unreachable!("all constant"),
            })
            .collect();
        return Ok(ColumnarValue::Scalar(f(&row)?.cast_to(out)?));
    }
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let mut results = Vec::with_capacity(rows);
    let mut row = Vec::with_capacity(arrays.len());
    for i in 0..rows {
        row.clear();
        for a in &arrays {
            row.push(ScalarValue::try_from_array(a, i)?);
        }
        results.push(f(&row)?.cast_to(out)?);
    }
    if results.is_empty() {
        return Ok(ColumnarValue::Array(
            datafusion::arrow::array::new_empty_array(out),
        ));
    }
    Ok(ColumnarValue::Array(ScalarValue::iter_to_array(results)?))
}

/// A keyclaim error as DataFusion carries it (the engine's error mapping
/// gives it back to the client unchanged).
pub(super) fn sql_err(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The text of a constant argument (a field name, a time zone), if it is one.
pub(super) fn text_of(s: &ScalarValue) -> Option<&str> {
    match s {
        ScalarValue::Utf8(t) | ScalarValue::LargeUtf8(t) | ScalarValue::Utf8View(t) => t.as_deref(),
        _ => None,
    }
}
