//! HTTPS for the reference backend: the server's identity (a self-signed certificate made at
//! start with rcgen, for localhost, 127.0.0.1 and ::1, or PEM files given), turned into a
//! tokio-rustls acceptor (ring provider, ALPN `h2` then `http/1.1`) and into the QUIC crypto of
//! the HTTP/3 listener (TLS 1.3, ALPN `h3`). So loadbench's TLS client is testable without
//! outside servers; the generated certificate's PEM is available to write out as the client's
//! `--cacert`.

use crate::UpstreamError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// A certificate chain and its private key, PEM.
#[derive(Clone)]
pub struct TlsIdentity {
    /// The certificate chain, leaf first (PEM).
    pub cert_pem: String,
    /// The leaf's private key (PEM).
    pub key_pem: String,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity").finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// A new self-signed certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn self_signed() -> Result<TlsIdentity, UpstreamError> {
        let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let made = rcgen::generate_simple_self_signed(names)
            .map_err(|e| UpstreamError::Tls(format!("cannot generate a certificate: {e}")))?;
        Ok(TlsIdentity {
            cert_pem: made.cert.pem(),
            key_pem: made.key_pair.serialize_pem(),
        })
    }

    /// The certificate chain and key from PEM files (`--tls-cert`, `--tls-key`).
    pub fn from_files(cert: &Path, key: &Path) -> Result<TlsIdentity, UpstreamError> {
        let read = |flag: &str, p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| UpstreamError::Tls(format!("cannot read {flag} {}: {e}", p.display())))
        };
        Ok(TlsIdentity {
            cert_pem: read("--tls-cert", cert)?,
            key_pem: read("--tls-key", key)?,
        })
    }

    /// The acceptor every connection's handshake goes through.
    pub(crate) fn acceptor(&self) -> Result<TlsAcceptor, UpstreamError> {
        let config = self.server_config(false)?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }

    /// The QUIC crypto of the HTTP/3 listener: the same identity, TLS 1.3 only (QUIC has no
    /// other), ALPN `h3`.
    pub(crate) fn quic(&self) -> Result<quinn::ServerConfig, UpstreamError> {
        let config = self.server_config(true)?;
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(config)
            .map_err(|e| UpstreamError::Tls(format!("cannot serve HTTP/3 with it ({e})")))?;
        let mut quic = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        // As many streams at once as HTTP/2 connections allow (`h2.rs`).
        let mut transport = quinn::TransportConfig::default();
        transport.max_concurrent_bidi_streams(crate::http3::MAX_STREAMS.into());
        quic.transport_config(Arc::new(transport));
        Ok(quic)
    }

    /// rustls's server configuration for TCP (ALPN `h2`, `http/1.1`) or QUIC (ALPN `h3`).
    fn server_config(&self, quic: bool) -> Result<rustls::ServerConfig, UpstreamError> {
        let bad = |m: String| UpstreamError::Tls(m);
        let chain = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("the certificate is not valid PEM ({e})")))?;
        if chain.is_empty() {
            return Err(bad(
                "no certificate in the PEM given: give a -----BEGIN CERTIFICATE----- file".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| bad(format!("no private key in the PEM given ({e})")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider);
        let builder = match quic {
            true => builder.with_protocol_versions(&[&rustls::version::TLS13]),
            false => builder.with_safe_default_protocol_versions(),
        };
        let mut config = builder
            .map_err(|e| bad(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| bad(format!("the key does not fit the certificate ({e})")))?;
        config.alpn_protocols = match quic {
            true => vec![b"h3".to_vec()],
            false => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        };
        Ok(config)
    }
}
