//! Whether this proxy can reach a quorum of the keyspace's replicas. When
//! it cannot, nothing is sent: the request fails at once as certainly not
//! applied (53000), where sending it would wait out Cassandra's timeouts
//! (about 2 s a request, and retried) until gossip convicts the dead nodes,
//! some 20 s after the quorum is lost. The driver knows sooner: a killed
//! node refuses its connections, and a frozen one stops answering
//! heartbeats (`store.node_timeout_ms`).
//!
//! The test is a sufficient condition, never a guess: every partition's
//! replicas are nodes of the counted set, so with fewer connected nodes
//! than a quorum no partition can reach one through this proxy. A cluster
//! larger than the replication factor that loses a quorum of some
//! partitions only still fails those requests the slow way.

use scylla::client::session::Session;
use scylla::cluster::metadata::Strategy;

use crate::config::{SerialConsistency, StoreConfig};
use crate::store::{StoreError, StoreResult};

pub struct Reach {
    keyspace: String,
    /// The datacenter whose replicas count, when quorums are local
    /// (LOCAL_SERIAL, with `local_datacenter` set); else every node counts.
    datacenter: Option<String>,
}

impl Reach {
    pub fn new(cfg: &StoreConfig) -> Reach {
        let local = cfg.serial_consistency == SerialConsistency::LocalSerial;
        Reach {
            keyspace: super::cql::schema_keyspace(&cfg.keyspace),
            datacenter: cfg.local_datacenter.clone().filter(|_| local),
        }
    }

    /// Unavailable when fewer nodes than a quorum of the replicas are
    /// connected; Ok otherwise, or when the keyspace's replication is not
    /// known yet.
    pub fn check(&self, session: &Session) -> StoreResult<()> {
        let state = session.get_cluster_state();
        let Some(keyspace) = state.get_keyspace(&self.keyspace) else {
            return Ok(());
        };
        let replicas = match (&keyspace.strategy, &self.datacenter) {
            (Strategy::SimpleStrategy { replication_factor }, _) => *replication_factor,
            (
                Strategy::NetworkTopologyStrategy {
                    datacenter_repfactors,
                },
                Some(dc),
            ) => datacenter_repfactors.get(dc).copied().unwrap_or(0),
            (
                Strategy::NetworkTopologyStrategy {
                    datacenter_repfactors,
                },
                None,
            ) => datacenter_repfactors.values().sum(),
            _ => 0,
        };
        if replicas == 0 {
            return Ok(());
        }
        let quorum = replicas / 2 + 1;
        let (mut nodes, mut connected) = (0, 0);
        for node in state.get_nodes_info().iter().filter(|n| {
            self.datacenter
                .as_ref()
                .is_none_or(|dc| n.datacenter.as_ref() == Some(dc))
        }) {
            nodes += 1;
            connected += usize::from(node.is_connected());
        }
        if connected >= quorum {
            return Ok(());
        }
        let place = self
            .datacenter
            .as_ref()
            .map(|dc| format!(" in {dc}"))
            .unwrap_or_default();
        Err(StoreError::Unavailable(format!(
            "this proxy reaches {connected} of the {nodes} Cassandra nodes{place}; \
             a quorum of the {replicas} replicas needs {quorum}"
        )))
    }
}
