//! Client TLS through rustls (ring provider): the configuration built once per run from the
//! plan's [`TlsPlan`] (system roots or `--cacert`, `--insecure`, a client certificate, ALPN
//! `http/1.1`, or `h2` only with `--http2`), one copy per worker with its own session cache (resumption across that
//! worker's connections, no lock shared between workers), the non-blocking [`TlsStream`] the
//! connection state machine drives, and the blocking preflight handshake that turns an
//! untrusted certificate into one line naming `--cacert` and `--insecure`.

use loadbench_plan::TlsPlan;
use mio::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{ring, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::io::{self, ErrorKind as IoKind, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Sessions a worker's cache keeps: enough for every connection of a worker to resume.
const SESSIONS_PER_WORKER: usize = 4096;

/// The preflight's blocking TLS session, handshake done.
pub type BlockingTls = rustls::StreamOwned<ClientConnection, std::net::TcpStream>;

/// A run's TLS client: its configuration and the server name every connection sends.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    resume: bool,
    /// `--http3`: the QUIC client configuration (TLS 1.3, ALPN h3) and the server name.
    quic: Option<(Arc<quinn_proto::ClientConfig>, Arc<str>)>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("name", &self.name)
            .finish()
    }
}

impl TlsClient {
    /// Builds the configuration; a bad PEM file or server name is one line naming the fix.
    pub fn new(plan: &TlsPlan) -> Result<TlsClient, String> {
        let provider = Arc::new(ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup failed: {e}"))?;
        let builder = if plan.insecure {
            let verifier = NoVerification(provider.signature_verification_algorithms);
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
        } else {
            builder.with_root_certificates(roots(plan)?)
        };
        let mut config = match &plan.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = certificates("--cert", &cert.path, &cert.pem)?;
                let key = PrivateKeyDer::from_pem_slice(&key.pem).map_err(|e| {
                    format!("--key {} holds no PEM private key ({e}): give the key of --cert in PEM form", key.path.display())
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    format!("--cert/--key cannot be used ({e}): give a certificate and its own key")
                })?
            }
        };
        config.alpn_protocols = if plan.http3 {
            vec![b"h3".to_vec()]
        } else if plan.http2 {
            vec![b"h2".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        config.resumption = Resumption::disabled();
        let name = ServerName::try_from(plan.server_name.clone()).map_err(|_| {
            format!(
                "'{}' is not a valid TLS server name: fix the URL's host or the Host header",
                plan.server_name
            )
        })?;
        let config = Arc::new(config);
        let quic = match plan.http3 {
            true => Some((
                Arc::new(crate::h3::client_config(Arc::clone(&config))?),
                Arc::from(plan.server_name.as_str()),
            )),
            false => None,
        };
        Ok(TlsClient {
            config,
            name,
            resume: plan.resume,
            quic,
        })
    }

    /// `--http3`: the QUIC client configuration and the server name to send.
    pub fn quic(&self) -> Option<(&quinn_proto::ClientConfig, &str)> {
        self.quic.as_ref().map(|(c, n)| (&**c, &**n))
    }

    /// A copy for one worker: with resumption on, its own session cache, shared by that
    /// worker's connections only.
    pub fn for_worker(&self) -> TlsClient {
        let mut config = (*self.config).clone();
        if self.resume {
            config.resumption = Resumption::in_memory_sessions(SESSIONS_PER_WORKER);
        }
        TlsClient {
            config: Arc::new(config),
            ..self.clone()
        }
    }

    /// Wraps a connected (or connecting) socket in a client session; nothing is sent yet.
    pub fn wrap(&self, sock: TcpStream) -> io::Result<TlsStream> {
        let tls = ClientConnection::new(Arc::clone(&self.config), self.name.clone())
            .map_err(io::Error::other)?;
        Ok(TlsStream { sock, tls })
    }

    /// Preflight: one blocking handshake with `addr` (no resumption, so the load's counts
    /// start clean). `Err` holds the line to show.
    pub fn probe(&self, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
        self.probe_stream(addr, timeout).map(drop)
    }

    /// [`TlsClient::probe`], keeping the blocking session for what the preflight checks
    /// next over it (a `wss://` URL's WebSocket upgrade).
    pub fn probe_stream(&self, addr: SocketAddr, timeout: Duration) -> Result<BlockingTls, String> {
        let fail = |e: io::Error| match no_h2(&e) {
            true if self.http2() => self.not_h2(
                addr,
                "none: the server refused it with a no_application_protocol alert",
            ),
            _ => handshake_refusal(&self.name, addr, &e, timeout),
        };
        let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(fail)?;
        sock.set_read_timeout(Some(timeout)).map_err(fail)?;
        sock.set_write_timeout(Some(timeout)).map_err(fail)?;
        let mut tls = ClientConnection::new(Arc::clone(&self.config), self.name.clone())
            .map_err(|e| fail(io::Error::other(e)))?;
        while tls.is_handshaking() {
            tls.complete_io(&mut sock).map_err(fail)?;
        }
        while tls.wants_write() {
            tls.write_tls(&mut sock).map_err(fail)?;
        }
        if self.http2() && tls.alpn_protocol() != Some(&b"h2"[..]) {
            let got = tls
                .alpn_protocol()
                .map_or("none".into(), |p| String::from_utf8_lossy(p).into_owned());
            return Err(self.not_h2(addr, &got));
        }
        Ok(rustls::StreamOwned::new(tls, sock))
    }

    /// `--http2`: the preflight's one line when ALPN did not settle on h2 (`got`: what it did).
    fn not_h2(&self, addr: SocketAddr, got: &str) -> String {
        format!(
            "the server at {} ({addr}) did not negotiate HTTP/2 (ALPN offered h2, got {got}): enable HTTP/2 on the server (nginx: listen ... ssl http2), or leave --http2 out (a grpcs:// load needs HTTP/2)",
            self.name.to_str()
        )
    }

    /// ALPN offers `h2` (`--http2`).
    fn http2(&self) -> bool {
        self.config.alpn_protocols.iter().any(|p| p == b"h2")
    }
}

/// The preflight's one line: an untrusted certificate names `--cacert` and `--insecure`.
fn handshake_refusal(
    name: &ServerName<'_>,
    addr: SocketAddr,
    e: &io::Error,
    timeout: Duration,
) -> String {
    let name = name.to_str();
    let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    // A blocking socket's timeout reads as EAGAIN ("Resource temporarily unavailable").
    let timed_out = matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    );
    if tls.is_none() && timed_out {
        return format!(
            "the TLS handshake with {name} ({addr}) timed out: no answer within --connect-timeout {} (the server took the connection but never answered the ClientHello): check that the target speaks TLS on this port, or raise --connect-timeout",
            humantime(timeout)
        );
    }
    match tls {
        Some(rustls::Error::InvalidCertificate(why)) => format!(
            "the TLS certificate of {name} ({addr}) is not trusted ({}): pass --cacert FILE with the CA that signed it, or --insecure to skip verification",
            certificate_problem(why)
        ),
        Some(other) => format!(
            "the TLS handshake with {name} ({addr}) failed ({other}): check that the server speaks TLS here, and --cert/--key if it asks for a client certificate"
        ),
        None => format!(
            "the TLS handshake with {name} ({addr}) failed ({e}): check that the target speaks TLS on this port (or use http://)"
        ),
    }
}

/// A timeout as a user would write it: `3s`, `500ms`, `1.5s`.
fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// The server ended the handshake with a `no_application_protocol` alert: it speaks none of
/// the protocols ALPN offered (OpenSSL servers answer an `h2`-only offer so when they lack h2).
fn no_h2(e: &io::Error) -> bool {
    let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    matches!(
        tls,
        Some(rustls::Error::AlertReceived(
            rustls::AlertDescription::NoApplicationProtocol
        ))
    )
}

/// Why a certificate was refused, in a few words (rustls' own names for the rare cases).
fn certificate_problem(e: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    match e {
        C::UnknownIssuer => "UnknownIssuer: self-signed, or signed by a CA not trusted here".into(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "NotValidForName: it does not name this host".into()
        }
        C::Expired | C::ExpiredContext { .. } => "Expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => "NotValidYet".into(),
        other => format!("{other:?}"),
    }
}

/// The trust anchors: `--cacert`'s certificates, else the system's roots.
fn roots(plan: &TlsPlan) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    if let Some(ca) = &plan.cacert {
        for cert in certificates("--cacert", &ca.path, &ca.pem)? {
            store.add(cert).map_err(|e| {
                format!(
                    "--cacert {}: a certificate cannot be used as a trust anchor ({e})",
                    ca.path.display()
                )
            })?;
        }
        return Ok(store);
    }
    let found = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(found.certs);
    if store.is_empty() {
        return Err("no system root certificates were found: install the ca-certificates package, pass --cacert FILE, or --insecure to skip verification".into());
    }
    Ok(store)
}

/// Every certificate of a PEM file; none is a mistake naming the file.
fn certificates(
    flag: &str,
    path: &std::path::Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |why: String| {
        format!(
            "{flag} {} {why}: give a PEM file with -----BEGIN CERTIFICATE----- blocks",
            path.display()
        )
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("is not valid PEM ({e})")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    Ok(certs)
}

/// `--insecure`: any certificate is accepted; the handshake's signatures are still checked,
/// so the session keys are the server's.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// A TLS client session over a non-blocking socket. Reads and writes keep the plain socket's
/// contract the connection relies on: a read shorter than the buffer means the socket is
/// drained (it hit `WouldBlock` or EOF), so edge-triggered readiness is never lost.
pub struct TlsStream {
    sock: TcpStream,
    tls: ClientConnection,
}

impl TlsStream {
    /// The socket, to register and to check the connect.
    pub fn socket(&self) -> &TcpStream {
        &self.sock
    }

    /// The socket, to register it.
    pub fn socket_mut(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    /// Drives the handshake as far as the socket allows: `Ok(true)` once done, `Ok(false)`
    /// while waiting for the peer, `Err` when it failed (an alert, a refused certificate, or
    /// the peer closing the connection).
    pub fn handshake(&mut self) -> io::Result<bool> {
        loop {
            self.flush_tls()?;
            if !self.tls.is_handshaking() {
                return Ok(true);
            }
            if self.tls.wants_write() {
                return Ok(false);
            }
            match self.tls.read_tls(&mut self.sock) {
                Ok(0) => return Err(IoKind::UnexpectedEof.into()),
                Ok(_) => self.process()?,
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The protocol ALPN settled on (`h2`, `http/1.1`), if the server chose one.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.tls.alpn_protocol()
    }

    /// Whether the finished handshake resumed an earlier session.
    pub fn resumed(&self) -> bool {
        self.tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
    }

    /// Processes received records; on a TLS error the alert goes out (best effort) first.
    fn process(&mut self) -> io::Result<()> {
        if let Err(e) = self.tls.process_new_packets() {
            let _ = self.flush_tls();
            return Err(io::Error::new(IoKind::InvalidData, e));
        }
        Ok(())
    }

    /// Sends what the session has queued until the socket would block.
    fn flush_tls(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(0) => return Err(IoKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Plaintext already decrypted into `buf`: `Some(n)` (0: the peer closed), `None` if none.
    fn plaintext(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.tls.reader().read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == IoKind::WouldBlock => Ok(None),
            // A close without close_notify: an EOF like a plain socket's.
            Err(e) if e.kind() == IoKind::UnexpectedEof => Ok(Some(0)),
            Err(e) => Err(e),
        }
    }
}

impl Read for TlsStream {
    /// Fills `buf` from decrypted records, reading the socket until it would block, so a
    /// short read means drained. Returns 0 at the peer's close.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.flush_tls()?;
        let mut filled = 0;
        loop {
            match self.plaintext(&mut buf[filled..])? {
                Some(0) => return Ok(filled),
                Some(n) => {
                    filled += n;
                    if filled == buf.len() {
                        return Ok(filled);
                    }
                    continue;
                }
                None => {}
            }
            match self.tls.read_tls(&mut self.sock) {
                Ok(0) => return Ok(filled),
                Ok(_) => self.process()?,
                Err(e) if e.kind() == IoKind::WouldBlock && filled > 0 => return Ok(filled),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for TlsStream {
    /// Encrypts `buf` and sends what the socket takes; the rest goes out on the next read,
    /// write or writable edge. `WouldBlock` only while earlier records are still queued.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.flush_tls()?;
        if self.tls.wants_write() {
            return Err(IoKind::WouldBlock.into());
        }
        let n = self.tls.writer().write(buf)?;
        self.flush_tls()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_tls()
    }
}
