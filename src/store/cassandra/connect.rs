//! Connecting: the driver session with the settings LWTs need, the
//! keyspace and keyclaim's own tables, and the report `keyclaim --check` prints.

use std::sync::Arc;
use std::time::Duration;

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::{Consistency, SerialConsistency};

use super::cql;
use crate::config::{self, StoreConfig};

pub fn consistency(c: config::Consistency) -> Consistency {
    match c {
        config::Consistency::LocalQuorum => Consistency::LocalQuorum,
        config::Consistency::Quorum => Consistency::Quorum,
        config::Consistency::EachQuorum => Consistency::EachQuorum,
        config::Consistency::All => Consistency::All,
    }
}

pub fn serial_consistency(c: config::SerialConsistency) -> SerialConsistency {
    match c {
        config::SerialConsistency::LocalSerial => SerialConsistency::LocalSerial,
        config::SerialConsistency::Serial => SerialConsistency::Serial,
    }
}

/// The consistency of reads that decide something: a SERIAL read sees every
/// Paxos round that completed, and completes one left in flight.
pub fn serial_read(c: config::SerialConsistency) -> Consistency {
    match c {
        config::SerialConsistency::LocalSerial => Consistency::LocalSerial,
        config::SerialConsistency::Serial => Consistency::Serial,
    }
}

/// A driver session configured for the claim protocol: the never-retry
/// policy (a driver retry of an LWT would hide an ambiguous outcome; the
/// protocol repeats steps itself, with the same txn), token-aware routing,
/// and the configured consistency and timeout.
pub async fn session(cfg: &StoreConfig) -> Result<Session, String> {
    let mut lbp = DefaultPolicy::builder().token_aware(true);
    if let Some(dc) = &cfg.local_datacenter {
        lbp = lbp.prefer_datacenter(dc.clone()).permit_dc_failover(false);
    }
    let profile = ExecutionProfile::builder()
        .consistency(consistency(cfg.consistency))
        .serial_consistency(Some(serial_consistency(cfg.serial_consistency)))
        .request_timeout(Some(Duration::from_millis(cfg.request_timeout_ms)))
        .retry_policy(Arc::new(FallthroughRetryPolicy::new()))
        .load_balancing_policy(lbp.build())
        .build();
    // Heartbeats: a node that stops answering (paused, frozen: its TCP
    // connections stay open, so nothing else tells the driver) loses its
    // connections within about 1.7 node timeouts, and with them its place
    // in every request's plan; waiting for the request timeout instead
    // stalled every statement whose partition it leads for the whole pause.
    let node_timeout = Duration::from_millis(cfg.node_timeout_ms);
    let mut builder = SessionBuilder::new()
        .known_nodes(&cfg.contact_points)
        .default_execution_profile_handle(profile.into_handle())
        .keepalive_interval(node_timeout * 2 / 3)
        .keepalive_timeout(node_timeout)
        .connection_timeout(Duration::from_millis(cfg.request_timeout_ms).min(node_timeout * 2));
    if let (Some(user), Some(password)) = (&cfg.username, &cfg.password) {
        builder = builder.user(user, password);
    }
    builder = tls(builder, cfg)?;
    builder.build().await.map_err(|e| {
        format!(
            "cannot connect to Cassandra at {}: {e}",
            cfg.contact_points.join(", ")
        )
    })
}

#[cfg(feature = "cassandra-tls")]
fn tls(builder: SessionBuilder, cfg: &StoreConfig) -> Result<SessionBuilder, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls;
    let Some(ca) = &cfg.tls_ca_file else {
        return Ok(builder);
    };
    let read_err = |p: &std::path::Path, e: &dyn std::fmt::Display| format!("{}: {e}", p.display());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| read_err(ca, &e))? {
        roots
            .add(cert.map_err(|e| read_err(ca, &e))?)
            .map_err(|e| read_err(ca, &e))?;
    }
    // The driver's rustls feature brings aws-lc-rs too; name the provider
    // keyclaim already uses rather than rely on a process default.
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS to Cassandra: {e}"))?
    .with_root_certificates(roots);
    let config = match (&cfg.tls_cert_file, &cfg.tls_key_file) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(|e| read_err(cert, &e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| read_err(cert, &e))?;
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| read_err(key, &e))?;
            config
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| read_err(key, &e))?
        }
        _ => config.with_no_client_auth(),
    };
    Ok(builder.tls_context(Some(Arc::new(config))))
}

#[cfg(not(feature = "cassandra-tls"))]
fn tls(builder: SessionBuilder, cfg: &StoreConfig) -> Result<SessionBuilder, String> {
    // Config validation already refuses TLS files in a build without TLS.
    match cfg.tls_ca_file {
        None => Ok(builder),
        Some(_) => Err("this keyclaim was built without the cassandra-tls feature".into()),
    }
}

/// Creates the keyspace (when missing) and keyclaim's claims and catalog tables.
pub async fn ensure_schema(session: &Session, cfg: &StoreConfig) -> Result<(), String> {
    let ks = &cfg.keyspace;
    let statements = [
        cql::create_keyspace(
            ks,
            cfg.replication_class.as_deref(),
            cfg.replication_factor,
            cfg.local_datacenter.as_deref(),
        ),
        cql::create_claims_table(ks),
        cql::create_catalog_table(ks),
        cql::create_txn_records_table(ks),
        cql::create_heartbeats_table(ks),
        cql::create_locks_table(ks),
        cql::create_index_table(ks),
    ];
    for text in statements {
        session
            .query_unpaged(text.as_str(), ())
            .await
            .map_err(|e| format!("{text}: {e}"))?;
    }
    // A keyspace made before commit stamps has records without `at`.
    let at = cql::add_hidden_column(&format!("{ks}.{}", cql::TXN_RECORDS_TABLE), "at", "bigint");
    match session.query_unpaged(at.as_str(), ()).await {
        Ok(_) => {}
        Err(e) if cql::is_existing_column_error(&e.to_string()) => {}
        Err(e) => return Err(format!("{at}: {e}")),
    }
    session
        .await_schema_agreement()
        .await
        .map_err(|e| format!("the nodes do not agree on the schema: {e}"))?;
    Ok(())
}

/// What `keyclaim --check` found.
#[derive(Debug, Clone)]
pub struct ClusterReport {
    pub protocol_version: u8,
    pub cluster_name: String,
    pub release_version: String,
    pub keyspace: String,
    /// address, datacenter, rack, connected
    pub nodes: Vec<(String, String, String, bool)>,
    /// What is wrong with the keyspace's replication, if anything.
    pub warnings: Vec<String>,
}

impl std::fmt::Display for ClusterReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "cluster \"{}\", release {}, CQL protocol v{}",
            self.cluster_name, self.release_version, self.protocol_version
        )?;
        writeln!(
            f,
            "keyspace {} and keyclaim's tables are ready",
            self.keyspace
        )?;
        writeln!(f, "{} node(s):", self.nodes.len())?;
        for (addr, dc, rack, up) in &self.nodes {
            let state = if *up { "connected" } else { "not connected" };
            writeln!(f, "  {addr}  dc={dc} rack={rack}  {state}")?;
        }
        for w in &self.warnings {
            writeln!(f, "WARNING: {w}")?;
        }
        Ok(())
    }
}

/// Connects, makes sure the schema is there, and describes the cluster.
pub async fn check(cfg: &StoreConfig) -> Result<ClusterReport, String> {
    let session = session(cfg).await?;
    ensure_schema(&session, cfg).await?;
    let local = session
        .query_unpaged("SELECT cluster_name, release_version FROM system.local", ())
        .await
        .map_err(|e| format!("reading system.local: {e}"))?
        .into_rows_result()
        .map_err(|e| format!("reading system.local: {e}"))?;
    let (cluster_name, release_version) = local
        .maybe_first_row::<(Option<String>, Option<String>)>()
        .map_err(|e| format!("reading system.local: {e}"))?
        .unwrap_or_default();
    let replication = session
        .query_unpaged(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (cfg.keyspace.as_str(),),
        )
        .await
        .map_err(|e| format!("reading system_schema.keyspaces: {e}"))?
        .into_rows_result()
        .map_err(|e| format!("reading system_schema.keyspaces: {e}"))?
        .maybe_first_row::<(std::collections::HashMap<String, String>,)>()
        .map_err(|e| format!("reading system_schema.keyspaces: {e}"))?
        .map(|(r,)| r)
        .unwrap_or_default();
    let warnings = cql::replication_warning(
        &cfg.keyspace,
        &replication,
        cfg.local_datacenter.as_deref(),
        cfg.replication_factor,
    )
    .into_iter()
    .collect();
    let state = session.get_cluster_state();
    let nodes = state
        .get_nodes_info()
        .iter()
        .map(|n| {
            (
                n.address.to_string(),
                n.datacenter.clone().unwrap_or_default(),
                n.rack.clone().unwrap_or_default(),
                n.is_connected(),
            )
        })
        .collect();
    Ok(ClusterReport {
        // The driver speaks protocol v4 only (ScyllaDB's and Cassandra's
        // common version); connecting succeeded, so it was accepted.
        protocol_version: 4,
        cluster_name: cluster_name.unwrap_or_default(),
        release_version: release_version.unwrap_or_default(),
        keyspace: cfg.keyspace.clone(),
        nodes,
        warnings,
    })
}
