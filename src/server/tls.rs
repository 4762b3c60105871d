//! TLS from `[tls]`: a rustls acceptor for the certificate and key files.

use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;

pub(super) struct Tls {
    pub(super) acceptor: TlsAcceptor,
    /// The certificate as PEM, which SCRAM-SHA-256-PLUS binds to.
    pub(super) cert_pem: Vec<u8>,
}

pub(super) fn load(config: &TlsConfig) -> Result<Tls, String> {
    let (Some(cert_path), Some(key_path)) = (&config.cert, &config.key) else {
        return Err("tls.cert and tls.key are required when tls.enabled = true".into());
    };
    let read = |field: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| format!("{field}: {}: {e}", path.display()))
    };
    let cert_pem = read("tls.cert", cert_path)?;
    let certs = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<CertificateDer<'static>>, _>>()
        .map_err(|e| format!("tls.cert: {}: {e}", cert_path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "tls.cert: {}: no PEM certificate in it",
            cert_path.display()
        ));
    }
    let key_pem = read("tls.key", key_path)?;
    let key = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| format!("tls.key: {}: {e}", key_path.display()))?
        .ok_or_else(|| format!("tls.key: {}: no PEM private key in it", key_path.display()))?;
    let mut server = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls: the certificate and key do not work together: {e}"))?;
    // Direct TLS (PostgreSQL 17's sslnegotiation=direct) requires this ALPN.
    server.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Tls {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        cert_pem,
    })
}
