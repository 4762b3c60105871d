//! DataFusion's `avg` with PostgreSQL's result type: the average of
//! integers or numerics is a numeric (DataFusion: float8), shown at
//! PostgreSQL's usual 16 fractional digits. It wraps DataFusion's own
//! aggregate and changes only the type its argument is coerced to.
//!
//! And `single_value`, which `rules` wraps around the expression of a
//! scalar subquery DataFusion could not decorrelate otherwise: the one
//! row's value, NULL for none, and PostgreSQL's 21000 for more than one.
//!
//! A coercion must be idempotent (DataFusion coerces again when it
//! rebuilds a plan), which is why `sum(bigint)` stays bigint here: an
//! int8 made from an int4 cannot be told from one that was an int8.

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{plan_err, DataFusionError, Result, ScalarValue};
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
        .chain(std::iter::once(Arc::new(AggregateUDF::from(SingleValue {
            signature: Signature::any(1, Volatility::Immutable),
        }))))
        .collect()
}

/// The name of the aggregate a scalar subquery's value is taken with.
pub(crate) const SINGLE_VALUE: &str = "single_value";

/// The value of the one row a scalar subquery returns.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SingleValue {
    signature: Signature,
}

impl AggregateUDFImpl for SingleValue {
    fn name(&self) -> &str {
        SINGLE_VALUE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [one] => Ok(one.clone()),
            _ => plan_err!("{SINGLE_VALUE} takes one argument"),
        }
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(OneRow {
            value: ScalarValue::try_from(acc_args.return_field.data_type())?,
            rows: 0,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                "value",
                args.return_field.data_type().clone(),
                true,
            )),
            Arc::new(Field::new("rows", DataType::Int64, false)),
        ])
    }
}

#[derive(Debug)]
struct OneRow {
    value: ScalarValue,
    rows: i64,
}

impl OneRow {
    fn add(&mut self, value: ScalarValue, rows: i64) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        self.rows += rows;
        if self.rows > 1 {
            let e = crate::error::SqlError::new(
                crate::error::sqlstate::CARDINALITY_VIOLATION,
                "more than one row returned by a subquery used as an expression",
            );
            return Err(DataFusionError::External(Box::new(e)));
        }
        self.value = value;
        Ok(())
    }
}

impl Accumulator for OneRow {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(array) = values.first() else {
            return Ok(());
        };
        for i in 0..array.len() {
            self.add(ScalarValue::try_from_array(array, i)?, 1)?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(values), Some(rows)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        for i in 0..values.len() {
            let n = match ScalarValue::try_from_array(rows, i)? {
                ScalarValue::Int64(Some(n)) => n,
                _ => 0,
            };
            self.add(ScalarValue::try_from_array(values, i)?, n)?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            self.value.clone(),
            ScalarValue::Int64(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size() - std::mem::size_of_val(&self.value)
    }
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
