//! DataFusion's `avg` with PostgreSQL's result type: the average of
//! integers or numerics is a numeric (DataFusion: float8), shown at
//! PostgreSQL's usual 16 fractional digits. It wraps DataFusion's own
//! aggregate and changes only the type its argument is coerced to.
//!
//! A coercion must be idempotent (DataFusion coerces again when it
//! rebuilds a plan), which is why `sum(bigint)` stays bigint here: an
//! int8 made from an int4 cannot be told from one that was an int8.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, GroupsAccumulator, ReversedUDAF, Signature,
    Volatility,
};

/// An aggregate of DataFusion's with PostgreSQL's argument coercion.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Coerced {
    inner: Arc<AggregateUDF>,
    signature: Signature,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Avg,
}

impl Kind {
    /// The type an argument of the given type is computed in; None: the
    /// aggregate does not take it.
    fn coerce(self, dt: &DataType) -> Option<DataType> {
        match self {
            Kind::Avg => avg_input(dt),
        }
    }
}

/// The PostgreSQL-typed aggregates, to register over DataFusion's.
pub(crate) fn postgres_aggregates() -> Vec<Arc<AggregateUDF>> {
    use datafusion::functions_aggregate::average::avg_udaf;
    [(avg_udaf(), Kind::Avg)]
        .into_iter()
        .map(|(inner, kind)| {
            Arc::new(AggregateUDF::from(Coerced {
                inner,
                signature: Signature::user_defined(Volatility::Immutable),
                kind,
            }))
        })
        .collect()
}

/// The scale an average is computed at: DataFusion's average adds four
/// fractional digits, giving PostgreSQL's usual 16.
const AVG_INPUT_SCALE: i8 = 12;

fn avg_input(dt: &DataType) -> Option<DataType> {
    use DataType::*;
    Some(match dt {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Decimal32(..)
        | Decimal64(..) | Decimal128(..) => Decimal128(38, AVG_INPUT_SCALE),
        Float16 | Float32 | Float64 | Null => Float64,
        Duration(u) => Duration(*u),
        _ => return None,
    })
}

impl AggregateUDFImpl for Coerced {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [one] => match self.kind.coerce(one) {
                Some(t) => Ok(vec![t]),
                None => plan_err!("Invalid function '{}'", self.name()),
            },
            _ => plan_err!("Invalid function '{}'", self.name()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(acc_args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        self.inner.create_groups_accumulator(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.create_sliding_accumulator(args)
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }
}
