//! A sequence read as a table (`SELECT * FROM s`, `SELECT last_value FROM
//! s`): one row of PostgreSQL's `last_value`, `log_cnt` and `is_called`,
//! read from the sequence's counter when the query runs
//! (`sequence::counter_state`).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::datasource::TableType;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr as DfExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::stream;

use super::super::sequence::counter_state;
use super::provider::{external, ScanCtx};
use crate::catalog::SequenceDef;
use crate::error::SqlError;

/// One sequence relation.
#[derive(Debug)]
pub(crate) struct SequenceTable {
    def: SequenceDef,
    schema: SchemaRef,
}

impl SequenceTable {
    pub fn new(def: SequenceDef) -> SequenceTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new("last_value", DataType::Int64, false),
            Field::new("log_cnt", DataType::Int64, false),
            Field::new("is_called", DataType::Boolean, false),
        ]));
        SequenceTable { def, schema }
    }
}

#[async_trait]
impl TableProvider for SequenceTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[DfExpr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let cx = ScanCtx::of(state)?;
        let counter = Arc::new(Counter {
            def: self.def.clone(),
            schema: self.schema.clone(),
            cx,
        });
        Ok(Arc::new(StreamingTableExec::try_new(
            self.schema.clone(),
            vec![counter],
            projection,
            Vec::new(),
            false,
            None,
        )?))
    }
}

/// The row of one sequence, read when the scan runs.
struct Counter {
    def: SequenceDef,
    schema: SchemaRef,
    cx: Arc<ScanCtx>,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("counter", &self.def.counter)
            .finish()
    }
}

impl PartitionStream for Counter {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (def, schema, store) = (self.def.clone(), self.schema.clone(), self.cx.store.clone());
        let row = stream::once(async move {
            let (last, called) = counter_state(store.as_ref(), &def)
                .await
                .map_err(external)?;
            // log_cnt: values PostgreSQL has logged ahead; keyclaim logs
            // none beyond the reserved blocks.
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(vec![last])),
                Arc::new(Int64Array::from(vec![0])),
                Arc::new(BooleanArray::from(vec![called])),
            ];
            RecordBatch::try_new(schema, columns)
                .map_err(|e| external(SqlError::internal(e.to_string())))
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), row))
    }
}
