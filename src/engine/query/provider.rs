//! keyclaim's tables as DataFusion sees them: a table provider whose scan
//! (`scan::ScanExec`) reads through the statement's transaction layer
//! (`ReadView`: committed rows plus the statement's own transaction's
//! intents, never another's).
//!
//! Equality or an IN list on the primary key (or a unique key) among the
//! filters DataFusion pushes down turns the scan into point reads, chosen
//! by the same rule the fast path uses (`sql::plan::source`). The filters
//! are only used to pick the rows to read: DataFusion still applies them.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{
    Column as DfColumn, Constraint, Constraints, DataFusionError, Result as DfResult, ScalarValue,
};
use datafusion::datasource::TableType;
use datafusion::logical_expr::{BinaryExpr, Expr as DfExpr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::super::env::SessionEnv;
use super::scan::ScanExec;
use super::types::{from_scalar, table_schema};
use crate::catalog::TableDef;
use crate::claims::read_view::ReadView;
use crate::error::SqlError;
use crate::sql::expr::{BinOp, Expr};
use crate::sql::plan::{source, Access};
use crate::store::Store;

/// What a scan reads with: set on the session config of each execution
/// (`SessionConfig` extension), so a plan made once reads as the running
/// statement sees the rows.
pub(crate) struct ScanCtx {
    pub store: Arc<dyn Store>,
    pub reads: Arc<ReadView>,
    pub env: Arc<SessionEnv>,
    pub page: usize,
}

impl ScanCtx {
    /// The running statement's, which each execution sets.
    pub fn of(state: &dyn Session) -> DfResult<Arc<ScanCtx>> {
        state.config().get_extension::<ScanCtx>().ok_or_else(|| {
            DataFusionError::Internal("a keyclaim relation read outside a statement".into())
        })
    }
}

/// One keyclaim table.
#[derive(Debug)]
pub(crate) struct Table {
    pub def: Arc<TableDef>,
    schema: SchemaRef,
    /// Its primary key, so that DataFusion knows what PostgreSQL knows:
    /// grouping by it determines every other column of the table (`SELECT
    /// a.name, count(*) ... GROUP BY a.id`, as Django's annotate() sends).
    /// Unique constraints are left out, as PostgreSQL leaves them out.
    constraints: Constraints,
}

impl Table {
    pub fn new(def: Arc<TableDef>) -> Table {
        let schema = table_schema(&def);
        let keys = match def.primary_key.is_empty() {
            true => Vec::new(),
            false => vec![Constraint::PrimaryKey(def.primary_key.clone())],
        };
        let constraints = Constraints::new_unverified(keys);
        Table {
            def,
            schema,
            constraints,
        }
    }

    /// The columns that pick rows by key: the primary key's and each
    /// unique constraint's.
    fn is_key_column(&self, i: usize) -> bool {
        self.def.primary_key.contains(&i)
            || self
                .def
                .uniques
                .iter()
                .any(|u| u.finds_rows() && u.columns.contains(&i))
            || self
                .def
                .indexes
                .iter()
                .any(|x| x.usable() && x.columns.contains(&i))
    }

    fn column_of(&self, c: &DfColumn) -> Option<usize> {
        self.def.column_index(&c.name)
    }

    /// `col = constant` or `col IN (constants)` on a key column (which is
    /// also what `col = ANY (array)` becomes), as the fast path's filter
    /// expression. `planning`: the parameters are not bound yet, so a
    /// parameter counts as a constant (the filter is pushed to the scan,
    /// which sees it bound); a scan never takes an unbound one.
    fn key_filter(&self, e: &DfExpr, planning: bool) -> Option<Expr> {
        let constant = |e: &DfExpr, col: usize| self.constant(e, col, planning);
        match e {
            DfExpr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) => {
                let (col, other) = match (left.as_ref(), right.as_ref()) {
                    (DfExpr::Column(c), other) | (other, DfExpr::Column(c)) => (c, other),
                    _ => return None,
                };
                let i = self.column_of(col).filter(|&i| self.is_key_column(i))?;
                Some(Expr::Binary(
                    BinOp::Eq,
                    Box::new(Expr::Column(i)),
                    Box::new(constant(other, i)?),
                ))
            }
            // DataFusion writes a short IN list, and `col = ANY($1)` of a
            // short array once bound, as equalities joined by OR.
            DfExpr::BinaryExpr(BinaryExpr {
                op: Operator::Or, ..
            }) => {
                let mut equalities = Vec::new();
                ored_equalities(e, &mut equalities)?;
                let (first, _) = equalities.first()?;
                if equalities.iter().any(|(c, _)| c != first) {
                    return None;
                }
                let i = self.column_of(first).filter(|&i| self.is_key_column(i))?;
                let items = equalities
                    .iter()
                    .map(|(_, e)| constant(e, i))
                    .collect::<Option<Vec<_>>>()?;
                Some(Expr::InList(Box::new(Expr::Column(i)), items, false))
            }
            DfExpr::InList(list) if !list.negated => {
                let DfExpr::Column(col) = list.expr.as_ref() else {
                    return None;
                };
                let i = self.column_of(col).filter(|&i| self.is_key_column(i))?;
                let items = list
                    .list
                    .iter()
                    .map(|e| constant(e, i))
                    .collect::<Option<Vec<_>>>()?;
                Some(Expr::InList(Box::new(Expr::Column(i)), items, false))
            }
            // `col = ANY($1)` in a plan optimized before its parameters
            // were bound: the bound array's elements are the keys.
            DfExpr::ScalarFunction(f) if f.name() == "array_has" => {
                let [haystack, DfExpr::Column(col)] = f.args.as_slice() else {
                    return None;
                };
                let i = self.column_of(col).filter(|&i| self.is_key_column(i))?;
                let items = match haystack {
                    DfExpr::Placeholder(_) if planning => Vec::new(),
                    DfExpr::Literal(ScalarValue::List(list), _)
                        if !datafusion::arrow::array::Array::is_null(list.as_ref(), 0) =>
                    {
                        let elements = list.value(0);
                        (0..elements.len())
                            .map(|n| {
                                let s = ScalarValue::try_from_array(&elements, n).ok()?;
                                self.constant(&DfExpr::Literal(s, None), i, planning)
                            })
                            .collect::<Option<Vec<_>>>()?
                    }
                    _ => return None,
                };
                Some(Expr::InList(Box::new(Expr::Column(i)), items, false))
            }
            _ => None,
        }
    }

    /// The value a key is compared with, as a literal of column `col`'s
    /// type: a constant, a constant under a cast (a parameter's cast once
    /// bound) or, while `planning`, a parameter (as NULL: only its shape
    /// matters then).
    fn constant(&self, e: &DfExpr, col: usize, planning: bool) -> Option<Expr> {
        let ty = &self.def.columns[col].ty;
        let value = match e {
            DfExpr::Literal(s, _) => s.clone(),
            DfExpr::Cast(cast) => match cast.expr.as_ref() {
                DfExpr::Literal(s, _) => s.cast_to(cast.field.data_type()).ok()?,
                DfExpr::Placeholder(_) if planning => ScalarValue::Null,
                _ => return None,
            },
            DfExpr::Placeholder(_) if planning => ScalarValue::Null,
            _ => return None,
        };
        Some(Expr::Literal(from_scalar(value, ty).ok()?))
    }
}

/// The `column = expression` terms of `a = 1 OR a = 2 OR ...`; None when
/// some term is not one.
fn ored_equalities<'e>(e: &'e DfExpr, out: &mut Vec<(&'e DfColumn, &'e DfExpr)>) -> Option<()> {
    match e {
        DfExpr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            ored_equalities(left, out)?;
            ored_equalities(right, out)
        }
        DfExpr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => match (left.as_ref(), right.as_ref()) {
            (DfExpr::Column(c), other) | (other, DfExpr::Column(c)) => {
                out.push((c, other));
                Some(())
            }
            _ => None,
        },
        _ => None,
    }
}

#[async_trait]
impl TableProvider for Table {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn constraints(&self) -> Option<&Constraints> {
        Some(&self.constraints)
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&DfExpr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match self.key_filter(f, true) {
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[DfExpr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let cx = ScanCtx::of(state)?;
        // The key conjuncts pick the access path; the fast path's rule.
        let keys = filters
            .iter()
            .filter_map(|f| self.key_filter(f, false))
            .reduce(|a, b| Expr::Binary(BinOp::And, Box::new(a), Box::new(b)));
        let mut src = source(self.def.clone(), keys);
        if matches!(src.access, Access::Scan) {
            src.filter = None;
        }
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.def.visible().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        Ok(Arc::new(ScanExec::new(schema, columns, src, cx, limit)))
    }
}

/// A keyclaim error carried through DataFusion, unwrapped again in `errors`.
pub(crate) fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
