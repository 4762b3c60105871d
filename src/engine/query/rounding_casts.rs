//! Casts of fractional numbers to integers round, as PostgreSQL's do:
//! `numeric` to the nearest integer with halves away from zero (`2.5::int`
//! is 3), `real` and `double precision` to the nearest even integer on a
//! tie (`2.5::float8::int` is 2, as C's rint). Arrow's cast truncates, so
//! after DataFusion's type coercion (which also adds casts of its own) each
//! such cast is given a rounding step first: DataFusion's `round` for
//! decimals, which rounds halves away from zero, and [`Rint`] for floats.

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::{Arc, LazyLock};

/// The analyzer rule: after type coercion, a rounding step under every
/// cast of a decimal or float to an integer type.
#[derive(Debug)]
pub(super) struct RoundingCasts;

impl AnalyzerRule for RoundingCasts {
    fn name(&self) -> &str {
        "keyclaim_rounding_casts"
    }

    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            // A node's expressions read its inputs' columns.
            let schema = merge_schema(&plan.inputs());
            plan.map_expressions(|e| e.transform_up(|e| round_before_cast(e, &schema)))
        })
        .data()
    }
}

fn round_before_cast(e: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    let Expr::Cast(Cast { expr, field }) = &e else {
        return Ok(Transformed::no(e));
    };
    if !field.data_type().is_integer() || is_rounded(expr) {
        return Ok(Transformed::no(e));
    }
    // A type not known here (a parameter not yet bound) is left as it is.
    let rounding = match expr.get_type(schema) {
        Ok(
            DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..),
        ) => datafusion::functions::math::round(),
        Ok(DataType::Float16 | DataType::Float32 | DataType::Float64) => RINT.clone(),
        _ => return Ok(Transformed::no(e)),
    };
    let rounded = Expr::ScalarFunction(ScalarFunction::new_udf(rounding, vec![*expr.clone()]));
    Ok(Transformed::yes(Expr::Cast(Cast::new_from_field(
        Box::new(rounded),
        field.clone(),
    ))))
}

/// Already given its rounding step (the analyzer may see a plan twice).
fn is_rounded(e: &Expr) -> bool {
    matches!(e, Expr::ScalarFunction(f) if matches!(f.func.name(), "round" | RINT_NAME))
}

const RINT_NAME: &str = "keyclaim_rint";

static RINT: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(Rint::new())));

/// A float rounded to the nearest integer, halves to the even one (C's
/// rint, which PostgreSQL's float-to-integer casts use).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Rint {
    signature: Signature,
}

impl Rint {
    fn new() -> Rint {
        Rint {
            signature: Signature::uniform(
                1,
                vec![DataType::Float64, DataType::Float32],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for Rint {
    fn name(&self) -> &str {
        RINT_NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        Ok(args.first().cloned().unwrap_or(DataType::Float64))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(DataFusionError::Plan(format!(
                "{RINT_NAME} takes one argument"
            )));
        };
        Ok(match arg {
            ColumnarValue::Scalar(ScalarValue::Float64(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float64(v.map(f64::round_ties_even)))
            }
            ColumnarValue::Scalar(ScalarValue::Float32(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float32(v.map(f32::round_ties_even)))
            }
            ColumnarValue::Array(a) => ColumnarValue::Array(rint_array(a)?),
            other => {
                return Err(DataFusionError::Plan(format!(
                    "{RINT_NAME} of a {}",
                    other.data_type()
                )))
            }
        })
    }
}

fn rint_array(a: &ArrayRef) -> DfResult<ArrayRef> {
    Ok(match a.data_type() {
        DataType::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(f64::round_ties_even),
        ),
        DataType::Float32 => Arc::new(
            a.as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(f32::round_ties_even),
        ),
        other => return Err(DataFusionError::Plan(format!("{RINT_NAME} of a {other}"))),
    })
}
