//! The server around the protocol: SSL and GSS negotiation, TLS, graceful
//! shutdown, and the command line.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::raw::{negotiation_answer, RawClient, GSSENC_REQUEST, SSL_REQUEST};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

fn tls_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tls")
        .join(name)
}

#[tokio::test]
async fn ssl_and_gss_requests_are_declined_without_tls() {
    let server = common::start().await;
    assert_eq!(negotiation_answer(server.addr, SSL_REQUEST).await, b'N');
    assert_eq!(negotiation_answer(server.addr, GSSENC_REQUEST).await, b'N');
    // After the 'N' the client may start up in plain text, as libpq does.
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(&SSL_REQUEST).await.unwrap();
    assert_eq!(stream.read_u8().await.unwrap(), b'N');
    let (mut client, startup) = RawClient::start(stream, "keyclaim").await;
    assert_eq!(startup.status(), 'I');
    assert_eq!(client.query("SHOW server_version").await.value(), "15.18");
}

#[tokio::test]
async fn tls_when_enabled() {
    let server = common::start_with(|c| {
        c.tls.enabled = true;
        c.tls.cert = Some(tls_file("server.crt"));
        c.tls.key = Some(tls_file("server.key"));
    })
    .await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(&SSL_REQUEST).await.unwrap();
    assert_eq!(stream.read_u8().await.unwrap(), b'S');

    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(tls_file("server.crt")).unwrap();
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, stream).await.unwrap();
    let (mut client, startup) = RawClient::start(tls, "keyclaim").await;
    assert_eq!(startup.status(), 'I');
    assert_eq!(client.query("SHOW server_version").await.value(), "15.18");
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_lets_statements_finish() {
    let server = common::start().await;
    let idle = server.connect().await;
    let busy = server.connect().await;
    let running = tokio::spawn(async move { busy.batch_execute("SELECT pg_sleep(0.5)").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let addr = server.addr;
    let started = Instant::now();
    server.shutdown().await;
    // The running statement finished (and then its connection closed).
    running.await.unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    // The idle connection was closed at once; nobody new gets in.
    assert!(idle.batch_execute("SHOW server_version").await.is_err());
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn shutdown_stops_waiting_after_the_grace_period() {
    let server = common::start_with(|c| c.server.shutdown_grace_ms = 200).await;
    let busy = server.connect().await;
    let running = tokio::spawn(async move { busy.batch_execute("SELECT pg_sleep(30)").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    server.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(running.await.unwrap().is_err());
}

#[test]
fn help_lists_the_flags() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keyclaim"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--config",
        "--listen",
        "KEYCLAIM_LISTEN",
        "KEYCLAIM_CONFIG",
        "--version",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn every_config_problem_is_reported_before_starting() {
    let dir = std::env::temp_dir().join(format!("keyclaim-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"nowhere\"\n[claims]\nlease = 1\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keyclaim"))
        .arg("--config")
        .arg(&path)
        .env("KEYCLAIM_STORE_KIND", "papyrus")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    let errors = String::from_utf8(out.stderr).unwrap();
    for problem in ["server.listen", "unknown field `lease`", "papyrus"] {
        assert!(
            errors.contains(problem),
            "{problem} missing from:\n{errors}"
        );
    }
}

#[test]
fn an_unreachable_cassandra_stops_the_start_with_the_reason() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keyclaim"))
        .args(["--listen", "127.0.0.1:0"])
        .env("KEYCLAIM_STORE_KIND", "cassandra")
        // Nothing listens on port 1.
        .env("KEYCLAIM_STORE_CONTACT_POINTS", "127.0.0.1:1")
        .env("KEYCLAIM_CONFIG", "/dev/null")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let log =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("cannot connect to Cassandra at 127.0.0.1:1"),
        "{log}"
    );
}

#[test]
fn check_reports_an_unreachable_cassandra_and_exits_1() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keyclaim"))
        .arg("--check")
        .env("KEYCLAIM_STORE_KIND", "cassandra")
        .env("KEYCLAIM_STORE_CONTACT_POINTS", "127.0.0.1:1")
        .env("KEYCLAIM_CONFIG", "/dev/null")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("keyclaim --check: cannot connect to Cassandra"),
        "{err}"
    );
}

#[test]
fn check_on_the_embedded_store_has_nothing_to_check() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keyclaim"))
        .arg("--check")
        .env("KEYCLAIM_CONFIG", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to check"));
}

/// `--check` against the test Cassandra, when there is one. With a
/// datacenter named (`KEYCLAIM_TEST_CASSANDRA_DC`), the keyspace it makes
/// replicates there with NetworkTopologyStrategy and the asked-for factor.
#[test]
fn check_describes_the_cluster() {
    let Some(nodes) = common::cassandra_nodes() else {
        return;
    };
    let mut config = keyclaim::config::Config::default();
    common::configure_store(&mut config);
    let keyspace = format!(
        "kc_check_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..16]
    );
    let mut check = std::process::Command::new(env!("CARGO_BIN_EXE_keyclaim"));
    check
        .arg("--check")
        .env("KEYCLAIM_STORE_KIND", "cassandra")
        .env("KEYCLAIM_STORE_CONTACT_POINTS", nodes.join(","))
        .env("KEYCLAIM_STORE_KEYSPACE", &keyspace)
        .env(
            "KEYCLAIM_STORE_REPLICATION_FACTOR",
            config.store.replication_factor.to_string(),
        )
        .env("KEYCLAIM_LOG_LEVEL", "warn")
        .env("KEYCLAIM_CONFIG", "/dev/null");
    if let Some(dc) = &config.store.local_datacenter {
        check.env("KEYCLAIM_STORE_LOCAL_DATACENTER", dc);
    }
    let out = check.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("CQL protocol v4"), "{text}");
    assert!(
        text.contains(&format!(
            "keyspace {keyspace} and keyclaim's tables are ready"
        )),
        "{text}"
    );
    assert!(
        text.contains(&nodes[0]) && text.contains("connected"),
        "{text}"
    );
    // The check made a keyspace: drop it as other tests drop theirs.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let session = scylla::client::session_builder::SessionBuilder::new()
                .known_nodes(&nodes)
                .build()
                .await
                .unwrap();
            let (replication,) = session
                .query_unpaged(
                    "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
                    (&keyspace,),
                )
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .single_row::<(std::collections::HashMap<String, String>,)>()
                .unwrap();
            let factor = config.store.replication_factor.to_string();
            match &config.store.local_datacenter {
                Some(dc) => {
                    assert!(
                        replication["class"].ends_with("NetworkTopologyStrategy"),
                        "{replication:?}"
                    );
                    assert_eq!(replication.get(dc), Some(&factor), "{replication:?}");
                }
                None => assert_eq!(replication.get("replication_factor"), Some(&factor)),
            }
            session
                .query_unpaged(format!("DROP KEYSPACE {keyspace}"), ())
                .await
                .unwrap();
        });
}
