//! How connections reach the target, beyond the URL: TLS settings for `https://` (trust,
//! client certificate, resumption), a Unix socket instead of TCP (`--unix-socket`, curl's
//! convention: the URL still gives `Host` and path), and `--connect-to` rules that send a
//! host:port to another address (curl's convention; `Host` and SNI stay the URL's). The
//! files named here are read once, when the plan resolves, like the body file.

use crate::{invalid, PlanError};
use std::path::{Path, PathBuf};

/// The transport options of a load, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportSpec {
    /// `--insecure`: do not verify the server's certificate.
    pub insecure: bool,
    /// `--cacert`: trust the certificates in this PEM file instead of the system's roots.
    pub cacert: Option<PathBuf>,
    /// `--cert`: a PEM client certificate (chain) for mutual TLS; needs `key`.
    pub cert: Option<PathBuf>,
    /// `--key`: the PEM private key of `cert`.
    pub key: Option<PathBuf>,
    /// TLS session resumption across a worker's connections (off with `--no-tls-resume`).
    pub tls_resume: bool,
    /// `--unix-socket`: connect to this Unix socket instead of the URL's host and port.
    pub unix_socket: Option<PathBuf>,
    /// `--connect-to` rules, first match wins.
    pub connect_to: Vec<ConnectTo>,
    /// `--http2`: HTTP/2 (h2 via ALPN for `https://`, h2c with prior knowledge for `http://`).
    pub http2: bool,
    /// `--http3`: HTTP/3 over QUIC (ALPN h3 on UDP; `https://` URLs only).
    pub http3: bool,
    /// `--streams`: HTTP/2 requests in flight per connection (`None`: 1); needs `http2`.
    pub streams: Option<u32>,
    /// `--pipeline N`: HTTP/1.1 requests each connection keeps written ahead of their
    /// responses (1: one at a time, the default).
    pub pipeline: u16,
    /// `--ws-idle N`: WebSocket connections opened (upgraded) beside the active ones that
    /// send nothing and are held until the run ends (0: none); `ws://` and `wss://` only.
    pub ws_idle: u32,
    /// `--ws-match FIELD`: a message's answer is the first message whose JSON field FIELD
    /// equals the sent one's (`None`: the next message); `ws://` and `wss://` only.
    pub ws_match: Option<String>,
}

impl Default for TransportSpec {
    fn default() -> Self {
        TransportSpec {
            insecure: false,
            cacert: None,
            cert: None,
            key: None,
            tls_resume: true,
            unix_socket: None,
            connect_to: Vec::new(),
            http2: false,
            http3: false,
            streams: None,
            pipeline: 1,
            ws_idle: 0,
            ws_match: None,
        }
    }
}

impl TransportSpec {
    /// Where connections go instead of the URL's resolved host (`--connect-to`,
    /// `--unix-socket`).
    pub fn route(&self) -> crate::Route<'_> {
        crate::Route {
            connect_to: &self.connect_to,
            unix: self.unix_socket.is_some(),
        }
    }
}

/// One `--connect-to HOST1:PORT1:HOST2:PORT2` rule: requests for HOST1:PORT1 connect to
/// HOST2:PORT2. An empty HOST1 or PORT1 matches any; an empty HOST2 or PORT2 keeps the URL's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectTo {
    /// The rule as written, for the record.
    pub text: String,
    from_host: String,
    from_port: Option<u16>,
    to_host: String,
    to_port: Option<u16>,
}

impl ConnectTo {
    /// Parses `HOST1:PORT1:HOST2:PORT2` (IPv6 addresses in brackets).
    pub fn parse(text: &str) -> Result<ConnectTo, String> {
        let bad = |why: &str| {
            format!("--connect-to '{text}' {why}: use HOST1:PORT1:HOST2:PORT2, such as example.com:443:127.0.0.1:8443")
        };
        let parts = split_colons(text).ok_or_else(|| bad("has an unclosed '['"))?;
        let [from_host, from_port, to_host, to_port] = parts.as_slice() else {
            return Err(bad("does not have four parts"));
        };
        let port = |p: &str| -> Result<Option<u16>, String> {
            match p {
                "" => Ok(None),
                p => p.parse().map(Some).map_err(|_| bad("has a bad port")),
            }
        };
        Ok(ConnectTo {
            text: text.to_string(),
            from_host: unbracket(from_host).to_ascii_lowercase(),
            from_port: port(from_port)?,
            to_host: unbracket(to_host).to_string(),
            to_port: port(to_port)?,
        })
    }

    /// Where to connect for `host:port`, when this rule applies.
    pub(crate) fn apply(&self, host: &str, port: u16) -> Option<(String, u16)> {
        let host_ok = self.from_host.is_empty() || self.from_host.eq_ignore_ascii_case(host);
        let port_ok = self.from_port.is_none_or(|p| p == port);
        if !(host_ok && port_ok) {
            return None;
        }
        let to_host = match self.to_host.as_str() {
            "" => host.to_string(),
            h => h.to_string(),
        };
        Some((to_host, self.to_port.unwrap_or(port)))
    }
}

/// Splits at colons outside brackets; `None` when a bracket is not closed.
fn split_colons(text: &str) -> Option<Vec<String>> {
    let (mut parts, mut cur, mut depth) = (Vec::new(), String::new(), 0u32);
    for ch in text.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth = depth.checked_sub(1)?,
            ':' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    (depth == 0).then(|| {
        parts.push(cur);
        parts
    })
}

/// A host without the brackets of an IPv6 literal.
pub(crate) fn unbracket(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// TLS for an `https://` target, resolved: the name to send and check, and the PEM files'
/// contents, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPlan {
    /// SNI and the name the certificate must carry: the `Host` header's host when one is
    /// given, else the URL's host (an IP address is checked as one and sends no SNI).
    pub server_name: String,
    /// Skip certificate verification.
    pub insecure: bool,
    /// `--cacert`: its path and PEM contents.
    pub cacert: Option<PemFile>,
    /// `--cert` and `--key`: the client certificate chain and its key.
    pub client: Option<(PemFile, PemFile)>,
    /// Session resumption across a worker's connections.
    pub resume: bool,
    /// `--http2`: ALPN offers `h2` only (else `http/1.1` only).
    pub http2: bool,
    /// `--http3`: QUIC with ALPN `h3` (TLS 1.3).
    pub http3: bool,
}

/// A PEM file read when the plan resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemFile {
    /// Where it was read from, for messages and the record.
    pub path: PathBuf,
    /// Its contents.
    pub pem: Vec<u8>,
}

impl PemFile {
    fn read(flag: &'static str, path: &Path) -> Result<PemFile, PlanError> {
        let pem = crate::InputFile::PEM.named(flag).read(path)?;
        Ok(PemFile {
            path: path.to_path_buf(),
            pem,
        })
    }
}

impl TlsPlan {
    /// The TLS settings of an `https://` target whose certificate must name `server_name`.
    pub(crate) fn resolve(spec: &TransportSpec, server_name: String) -> Result<Self, PlanError> {
        let cacert = match &spec.cacert {
            Some(p) => Some(PemFile::read("--cacert", p)?),
            None => None,
        };
        let client = match (&spec.cert, &spec.key) {
            (Some(c), Some(k)) => Some((PemFile::read("--cert", c)?, PemFile::read("--key", k)?)),
            (None, None) => None,
            _ => {
                return Err(invalid(
                    "--cert and --key go together: give both the client certificate and its key",
                ))
            }
        };
        Ok(TlsPlan {
            server_name,
            insecure: spec.insecure,
            cacert,
            client,
            resume: spec.tls_resume,
            http2: spec.http2,
            http3: spec.http3,
        })
    }
}

/// TLS options with an `http://` URL are a mistake worth one line, not a silent no-op.
pub(crate) fn check_plain(spec: &TransportSpec) -> Result<(), PlanError> {
    let flag = if spec.insecure {
        "--insecure"
    } else if spec.cacert.is_some() {
        "--cacert"
    } else if spec.cert.is_some() || spec.key.is_some() {
        "--cert/--key"
    } else {
        return Ok(());
    };
    Err(invalid(format!(
        "{flag} applies to https:// URLs only (and wss://): use an https:// or wss:// URL, or leave {flag} out"
    )))
}

/// `--http3` against the rest of the load: QUIC is always TLS over UDP, one HTTP version.
pub(crate) fn check_http3(spec: &TransportSpec, target: &crate::Target) -> Result<(), PlanError> {
    if !spec.http3 {
        return Ok(());
    }
    let fix = if spec.http2 {
        "--http2 and --http3 each choose the HTTP version: give one of them"
    } else if target.websocket || target.grpc {
        "--http3 loads https:// URLs (WebSocket and gRPC run over TCP here): leave out --http3"
    } else if spec.unix_socket.is_some() {
        "--http3 runs over UDP, not a Unix socket: leave out --unix-socket or --http3"
    } else if !target.tls {
        "--http3 needs an https:// URL (QUIC is always encrypted): use https:// or leave out --http3"
    } else if spec.pipeline > 1 {
        "--pipeline is HTTP/1.1 pipelining: with --http3, keep several requests in flight per connection with --streams N instead"
    } else {
        return Ok(());
    };
    Err(invalid(fix))
}

/// Most requests in flight `--streams` takes per connection (HTTP/2 stream ids and the
/// slots a connection keeps bound it; servers allow about 100 to 1000).
pub const MAX_STREAMS: u32 = 10_000;

/// `--http2` and `--streams`, checked against the rest of the load: the streams per
/// connection, or `None` for HTTP/1.1. With `--no-keepalive` each connection carries one
/// request, so `--streams` above 1 is refused; the open model (`--rate`) reuses connections,
/// so it is refused with `--no-keepalive`.
pub(crate) fn check_http2(
    spec: &TransportSpec,
    open: bool,
    keepalive: bool,
) -> Result<Option<u32>, PlanError> {
    if !spec.http2 && !spec.http3 {
        return match spec.streams {
            Some(_) => Err(invalid(
                "--streams applies to HTTP/2 and HTTP/3 only: add --http2 (or --http3) or leave --streams out",
            )),
            None => Ok(None),
        };
    }
    let streams = spec.streams.unwrap_or(1);
    let fix = if streams == 0 {
        "--streams 0 sends nothing: give --streams 1 or more"
    } else if streams > MAX_STREAMS {
        "--streams is above 10000: give --streams 10000 or fewer (servers allow 100 to 1000)"
    } else if open && !keepalive {
        "--no-keepalive with --http2 or --http3 and --rate (the open model) is not supported yet: leave out --no-keepalive (streams share connections), or --rate"
    } else if !keepalive && streams > 1 {
        "--no-keepalive with --http2 or --http3 sends one request per connection: leave out --streams (or --no-keepalive)"
    } else {
        return Ok(Some(streams));
    };
    Err(invalid(fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_to_rules_follow_curl() {
        let r = ConnectTo::parse("example.com:443:127.0.0.1:8443").unwrap();
        assert_eq!(
            r.apply("example.com", 443),
            Some(("127.0.0.1".into(), 8443))
        );
        assert_eq!(r.apply("example.com", 80), None);
        assert_eq!(r.apply("other.org", 443), None);
        let any = ConnectTo::parse("::[::1]:").unwrap();
        assert_eq!(any.apply("a.b", 81), Some(("::1".into(), 81)));
        let keep = ConnectTo::parse("a.b:80::9000").unwrap();
        assert_eq!(keep.apply("a.b", 80), Some(("a.b".into(), 9000)));
    }

    #[test]
    fn http2_flags_are_checked_against_the_load() {
        let h2 = |streams| TransportSpec {
            http2: true,
            streams,
            ..TransportSpec::default()
        };
        assert_eq!(check_http2(&h2(None), false, true).unwrap(), Some(1));
        assert_eq!(check_http2(&h2(Some(8)), false, true).unwrap(), Some(8));
        assert_eq!(
            check_http2(&TransportSpec::default(), true, false).unwrap(),
            None
        );
        // One request per connection without keep-alive.
        assert_eq!(check_http2(&h2(Some(1)), false, false).unwrap(), Some(1));
        let refused = |spec: &TransportSpec, open, keepalive| {
            check_http2(spec, open, keepalive).unwrap_err().to_string()
        };
        let streams_alone = TransportSpec {
            streams: Some(2),
            ..TransportSpec::default()
        };
        assert!(refused(&streams_alone, false, true).contains("add --http2"));
        assert!(refused(&h2(Some(0)), false, true).contains("--streams 1 or more"));
        assert!(refused(&h2(Some(10_001)), false, true).contains("10000 or fewer"));
        assert_eq!(check_http2(&h2(Some(8)), true, true).unwrap(), Some(8));
        assert!(refused(&h2(None), true, false).contains("leave out --no-keepalive"));
        assert!(refused(&h2(Some(4)), false, false).contains("one request per connection"));
    }

    #[test]
    fn bad_connect_to_rules_name_the_form() {
        for bad in ["a:1:b", "a:x:b:2", "[::1:1:b:2", "a:1:b:99999"] {
            let e = ConnectTo::parse(bad).unwrap_err();
            assert!(e.contains("HOST1:PORT1:HOST2:PORT2"), "{bad}: {e}");
        }
    }
}
