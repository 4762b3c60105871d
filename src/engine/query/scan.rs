//! The scan of one keyclaim table as a DataFusion execution plan: it reads
//! through the statement's `ReadView` page by page, one Arrow batch per
//! page, by the access path its key filters chose (`provider`).
//!
//! A scan its filters do not pin by key can still become point reads at
//! run time: a hash join pushes a dynamic filter into its probe side, and
//! once the join's build side is read that filter holds the build side's
//! join keys (`key IN (...)` for up to 150 distinct keys). When that list
//! is on a key column of this table, the scan reads those rows by key
//! instead of the whole table: a lookup join, which is what a join along a
//! foreign key to a primary key needs. The join still applies its own
//! condition, so the list only narrows what is read.
//!
//! The scan's row estimate (a few rows when pinned by key, many otherwise)
//! lets DataFusion put the pinned side of a join on the build side,
//! whichever side the query names first.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result as DfResult, Statistics};
use datafusion::config::ConfigOptions;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, DynamicFilterPhysicalExpr, InListExpr, Literal,
};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::limit::LimitStream;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::stream::{self, StreamExt, TryStreamExt};

use super::super::read;
use super::provider::{external, ScanCtx};
use super::types::{column_array, from_scalar};
use crate::catalog::TableDef;
use crate::error::{SqlError, SqlResult};
use crate::sql::expr::Expr;
use crate::sql::plan::{source, Access, Keys, Source};

/// What a scan pinned by key is estimated to give: the keys it reads.
/// An unpinned scan's estimate, larger than any list of keys.
const SCAN_ESTIMATE: usize = 1_000_000;

/// One table's rows, read by the access path its filters chose.
pub(crate) struct ScanExec {
    /// The table's columns this scan gives, in order.
    columns: Vec<usize>,
    src: Source,
    cx: Arc<ScanCtx>,
    limit: Option<usize>,
    /// Dynamic filters pushed here by joins above; only read, never
    /// applied (the join applies its condition itself).
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for ScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScanExec")
            .field("table", &self.src.table.name)
            .field("access", &self.src.access)
            .field("dynamic", &self.dynamic.len())
            .finish()
    }
}

impl ScanExec {
    pub fn new(
        schema: SchemaRef,
        columns: Vec<usize>,
        src: Source,
        cx: Arc<ScanCtx>,
        limit: Option<usize>,
    ) -> ScanExec {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        ScanExec {
            columns,
            src,
            cx,
            limit,
            dynamic: Vec::new(),
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    fn with(&self, limit: Option<usize>, dynamic: Vec<Arc<dyn PhysicalExpr>>) -> ScanExec {
        ScanExec {
            columns: self.columns.clone(),
            src: self.src.clone(),
            cx: self.cx.clone(),
            limit,
            dynamic,
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The source this scan reads at run time: its own, or, for a scan not
    /// pinned by key, the keys a join's dynamic filter lists by now.
    fn run_source(&self) -> Source {
        if !matches!(self.src.access, Access::Scan) {
            return self.src.clone();
        }
        let listed = self.dynamic.iter().find_map(|f| {
            let f = f.downcast_ref::<DynamicFilterPhysicalExpr>()?;
            self.key_list(&f.current().ok()?)
        });
        match listed {
            Some(keys) => {
                let src = source(self.src.table.clone(), Some(keys));
                match src.access {
                    Access::Scan => self.src.clone(),
                    _ => src,
                }
            }
            None => self.src.clone(),
        }
    }

    /// `key IN (constants)` on a key column of this table, found in a
    /// conjunction, as the fast path's filter expression.
    fn key_list(&self, e: &Arc<dyn PhysicalExpr>) -> Option<Expr> {
        if let Some(b) = e.downcast_ref::<BinaryExpr>() {
            return match b.op() {
                Operator::And => self.key_list(b.left()).or_else(|| self.key_list(b.right())),
                _ => None,
            };
        }
        let list = e.downcast_ref::<InListExpr>()?;
        if list.negated() {
            return None;
        }
        let column = list.expr().downcast_ref::<Column>()?;
        let &i = self.columns.get(column.index())?;
        let def = &self.src.table;
        if def.columns[i].name != column.name() || !is_key_column(def, i) {
            return None;
        }
        let items = list
            .list()
            .iter()
            .map(|item| {
                let value = item.downcast_ref::<Literal>()?.value().clone();
                from_scalar(value, &def.columns[i].ty).ok()
            })
            // A NULL join key matches nothing; it is not a key to read.
            .filter(|v| !matches!(v, Some(crate::types::Value::Null)))
            .map(|v| v.map(Expr::Literal))
            .collect::<Option<Vec<_>>>()?;
        Some(Expr::InList(Box::new(Expr::Column(i)), items, false))
    }
}

/// Whether column `i` alone picks rows by key: a one-column primary key
/// or unique constraint.
fn is_key_column(def: &TableDef, i: usize) -> bool {
    def.looks_up(&[i])
}

impl DisplayAs for ScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ScanExec: {} {:?}", self.src.table.name, self.src.access)
    }
}

impl ExecutionPlan for ScanExec {
    fn name(&self) -> &str {
        "ScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    /// The dynamic filters it holds, so that a join sees its filter has a
    /// reader and fills it.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        for e in &self.dynamic {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match children.is_empty() {
            true => Ok(self),
            false => Err(external(SqlError::internal("a table scan has no inputs"))),
        }
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let rows = match &self.src.access {
            Access::Key(_) | Access::Unique(..) => 1,
            Access::KeyList(Keys::Each(keys)) | Access::UniqueList(_, Keys::Each(keys)) => {
                keys.len().max(1)
            }
            // An array's length is known once bound; an ORM's batch is short.
            Access::KeyList(_) | Access::UniqueList(..) => 100,
            // Rows per key of a plain index: unknown; fewer than a scan.
            Access::Index(..) | Access::IndexList(..) => 100,
            Access::Scan => SCAN_ESTIMATE,
        };
        let mut stats = Statistics::new_unknown(&self.schema());
        // Inexact: a key may have no row, and nothing may count on it.
        stats.num_rows = Precision::Inexact(rows);
        Ok(Arc::new(stats))
    }

    fn metrics(&self) -> Option<datafusion::physical_plan::metrics::MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn fetch(&self) -> Option<usize> {
        self.limit
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        Some(Arc::new(self.with(limit, self.dynamic.clone())))
    }

    /// Keeps the dynamic filters pushed here (to read their keys) and
    /// tells the parents none is applied, so they apply every filter.
    fn handle_child_pushdown_result(
        &self,
        _phase: FilterPushdownPhase,
        pushed: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters: Vec<Arc<dyn PhysicalExpr>> = pushed
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        let answer = vec![PushedDown::No; filters.len()];
        let dynamic: Vec<_> = filters
            .into_iter()
            .filter(|f| f.downcast_ref::<DynamicFilterPhysicalExpr>().is_some())
            .collect();
        let mut out = FilterPushdownPropagation::with_parent_pushdown_result(answer);
        if !dynamic.is_empty() {
            let mut all = self.dynamic.clone();
            all.extend(dynamic);
            let node: Arc<dyn ExecutionPlan> = Arc::new(self.with(self.limit, all));
            out = out.with_updated_node(node);
        }
        Ok(out)
    }

    fn execute(
        &self,
        partition: usize,
        _ctx: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema();
        let scan = Arc::new(self.with(self.limit, self.dynamic.clone()));
        // Lazy: the source is chosen at the first poll, which a hash join
        // makes only once its build side is read and its filter filled.
        let batches = stream::once(async move {
            let src = scan.run_source();
            let cx = &scan.cx;
            let rows = read::rows(
                cx.store.clone(),
                cx.reads.clone(),
                src.clone(),
                Arc::new(Vec::new()),
                cx.env.clone(),
                cx.page,
            );
            let (schema, columns, table) = (
                scan.schema(),
                Arc::new(scan.columns.clone()),
                src.table.clone(),
            );
            rows.map_ok(|(_, row)| row.values)
                .try_chunks(cx.page)
                .map_err(|e| e.1)
                .map(move |chunk| {
                    chunk
                        .and_then(|rows| batch(&schema, &table, &columns, &rows))
                        .map_err(external)
                })
        })
        .flatten();
        let stream = Box::pin(RecordBatchStreamAdapter::new(schema, batches));
        Ok(match self.limit {
            None => stream,
            Some(fetch) => {
                let metrics = BaselineMetrics::new(&self.metrics, partition);
                Box::pin(LimitStream::new(stream, 0, Some(fetch), metrics))
            }
        })
    }
}

/// Rows (full table width) as one batch of the projected columns.
fn batch(
    schema: &SchemaRef,
    t: &TableDef,
    columns: &[usize],
    rows: &[Vec<crate::types::Value>],
) -> SqlResult<RecordBatch> {
    let arrays = columns
        .iter()
        .map(|&c| column_array(&t.columns[c].ty, rows.iter().map(|r| &r[c])))
        .collect::<SqlResult<Vec<_>>>()?;
    let options =
        datafusion::arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows.len()));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &options)
        .map_err(|e| SqlError::internal(e.to_string()))
}
