//! One statement's context, built once by the engine and passed down to
//! every stage (reads, writes, RETURNING), instead of repacking its parts
//! into a bundle per stage.

use std::sync::Arc;

use super::env::SessionEnv;
use crate::catalog::TableDef;
use crate::claims::{ClaimConfig, ClaimStats, RowWrite};
use crate::stop::Stop;
use crate::store::Store;
use crate::txn::StmtTxn;
use crate::types::Value;

pub(crate) struct StmtCtx<'a> {
    pub store: &'a Arc<dyn Store>,
    pub claims: &'a ClaimConfig,
    pub stats: &'a ClaimStats,
    /// Rows fetched per store page when scanning.
    pub scan_page: usize,
    /// The transaction this statement runs in, and its lock deadline.
    pub txn: StmtTxn,
    /// What expressions see of the session; owned, since row streams
    /// outlive the statement's borrows.
    pub env: Arc<SessionEnv>,
    pub params: Arc<Vec<Value>>,
    /// Lets a cancel or statement_timeout stop the writes at safe points.
    pub stop: Option<&'a Stop>,
}

impl StmtCtx<'_> {
    /// What one row write of this statement on `table` needs.
    pub fn row_write<'t>(&'t self, table: &'t TableDef) -> RowWrite<'t> {
        RowWrite {
            store: self.store.as_ref(),
            cfg: self.claims,
            stats: self.stats,
            table,
            deadline: self.txn.lock_deadline,
            stop: self.stop,
        }
    }
}
