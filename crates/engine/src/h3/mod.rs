//! HTTP/3 for the load engine (`--http3`): QUIC from `quinn-proto`, a sans-I/O state machine
//! the worker loop drives (one UDP socket per connection, registered in the worker's poll;
//! its timers are the connection's, see [`conn`]), and our own HTTP/3 framing ([`frame`]) and
//! QPACK without a dynamic table ([`qpack`]). HTTP/3 shares HTTP/2's protocol of the worker
//! loop (streams first, then connections: `h2::proto`), its requests (encoded once, with
//! QPACK here) and its per-worker figures.

pub(crate) mod conn;
mod frame;
mod qpack;

use crate::h2::hpack::H2Request;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Encodes one endpoint's request (a rendered HTTP/1.1 request) as an HTTP/3 HEADERS frame's
/// field section and its body.
pub fn request(bytes: &[u8], https: bool) -> Result<H2Request, String> {
    let mut block = Vec::new();
    let body_at = qpack::encode_http1(bytes, https, &mut block)?;
    Ok(H2Request {
        block,
        body: bytes[body_at..].to_vec(),
    })
}

/// The transport settings every connection of the run uses: an idle timeout the server's
/// silence is judged by, and keep-alives so a quiet wait for a slow answer does not end it.
pub fn transport() -> quinn_proto::TransportConfig {
    let mut t = quinn_proto::TransportConfig::default();
    let idle = quinn_proto::IdleTimeout::try_from(Duration::from_secs(30)).ok();
    t.max_idle_timeout(idle);
    t.keep_alive_interval(Some(Duration::from_secs(10)));
    // The server's control and QPACK streams (and anything it opens besides).
    t.max_concurrent_uni_streams(16u32.into());
    // We open every bidirectional stream; the server opens none.
    t.max_concurrent_bidi_streams(0u32.into());
    t
}

/// Preflight: one QUIC handshake with `addr` on a blocking socket, within `timeout`. `Err`
/// is the one line to show: no answer on UDP, no h3 by ALPN, a certificate refused.
pub fn probe(
    config: &quinn_proto::ClientConfig,
    name: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(), String> {
    let fail = |why: String| {
        format!("the server at {name} ({addr}) did not answer HTTP/3 over QUIC ({why}): enable HTTP/3 on the server (Caddy serves it by default; nginx: listen PORT quic), check that UDP port {} is open, or leave --http3 out", addr.port())
    };
    let local: SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local).map_err(|e| fail(format!("bind: {e}")))?;
    sock.connect(addr)
        .map_err(|e| fail(format!("connect: {e}")))?;
    let mut quic = conn::Quic::connect(config, name, addr, Instant::now())
        .map_err(|e| fail(format!("{e}")))?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 65536];
    loop {
        let now = Instant::now();
        quic.transmit(now, |d| sock.send(d).map(drop));
        match quic.poll_handshake() {
            Some(Ok(())) => {
                quic.close(now, 0x100);
                quic.transmit(now, |d| sock.send(d).map(drop));
                return Ok(());
            }
            Some(Err(why)) => return Err(fail(why)),
            None => {}
        }
        if now >= deadline {
            return Err(fail(format!("no handshake within {timeout:?}")));
        }
        let wake = quic.timer().unwrap_or(deadline).min(deadline);
        let wait = wake
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        sock.set_read_timeout(Some(wait))
            .map_err(|e| fail(format!("{e}")))?;
        match sock.recv(&mut buf) {
            Ok(n) => quic.datagram(Instant::now(), addr, &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                quic.on_timer(Instant::now());
            }
            // An ICMP port unreachable comes back as a refused read.
            Err(e) => return Err(fail(format!("{e}"))),
        }
    }
}

/// The QUIC client configuration from the run's TLS client settings (ALPN `h3`, TLS 1.3).
pub fn client_config(tls: Arc<rustls::ClientConfig>) -> Result<quinn_proto::ClientConfig, String> {
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("--http3 needs TLS 1.3 ({e})"))?;
    let mut config = quinn_proto::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport()));
    Ok(config)
}
