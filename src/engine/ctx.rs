//! One statement's context, built once by the engine and passed down to
//! every stage (reads, writes, RETURNING), instead of repacking its parts
//! into a bundle per stage.

use std::sync::Arc;

use super::env::SessionEnv;
use crate::catalog::TableDef;
use crate::claims::intents::Peers;
use crate::claims::read_view::ReadView;
use crate::claims::{ClaimConfig, ClaimStats, RowWrite};
use crate::stop::Stop;
use crate::store::Store;
use crate::txn::OpenTxn;
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
    /// The explicit transaction this statement writes in, once it has one.
    pub open: Option<OpenTxn>,
    pub peers: &'a Peers,
    /// What this statement's reads have learnt of other transactions.
    pub reads: Arc<ReadView>,
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
            own: self.open.as_ref().map(|o| o.id),
            peers: Some(self.peers),
            born_ms: self.txn.born_ms,
        }
    }
}
