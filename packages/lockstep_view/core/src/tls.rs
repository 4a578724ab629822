//! Optional TLS (`wss://`): a certificate chain and its private key, both PEM files, served with rustls.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring::default_provider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// Why the certificate or key cannot be used; names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// The file cannot be read or holds no PEM item of the kind needed.
    #[error("{flag} {}: {reason}", path.display())]
    File {
        flag: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// rustls refused the pair (e.g. the key does not belong to the certificate).
    #[error("--tls-cert {} with --tls-key {}: {reason}", cert.display(), key.display())]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
}

/// The largest certificate chain or key file read.
const MAX_PEM_BYTES: u64 = 1 << 20;

/// A TLS server configuration (cheap to clone).
#[derive(Clone)]
pub struct Tls {
    pub(crate) acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls(..)")
    }
}

impl Tls {
    /// Reads the certificate chain (`-----BEGIN CERTIFICATE-----` items, the server's first) and its key.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let file_error = |flag: &'static str, path: &Path, reason: String| TlsError::File {
            flag,
            path: path.to_owned(),
            reason,
        };
        // A FIFO or device would block or never end: only regular files of a sane size are read.
        for (flag, path) in [("--tls-cert", cert), ("--tls-key", key)] {
            lockstep_ranges::file::check_regular(path, MAX_PEM_BYTES)
                .map_err(|e| file_error(flag, path, e.to_string()))?;
        }
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(|e| file_error("--tls-cert", cert, e.to_string()))?
            .collect::<Result<_, _>>()
            .map_err(|e| file_error("--tls-cert", cert, e.to_string()))?;
        if chain.is_empty() {
            let why = "no certificate in the file (expected PEM `-----BEGIN CERTIFICATE-----`)".to_owned();
            return Err(file_error("--tls-cert", cert, why));
        }
        let private = PrivateKeyDer::from_pem_file(key).map_err(|e| {
            let why = format!("{e} (expected a PEM private key: PKCS#8, PKCS#1 or SEC1)");
            file_error("--tls-key", key, why)
        })?;
        let pair = |e: tokio_rustls::rustls::Error| TlsError::Pair {
            cert: cert.to_owned(),
            key: key.to_owned(),
            reason: e.to_string(),
        };
        let config = ServerConfig::builder_with_provider(Arc::new(default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(pair)?
            .with_no_client_auth()
            .with_single_cert(chain, private)
            .map_err(pair)?;
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}
