//! The target: an `http://`, `https://`, `ws://` or `wss://` URL parsed, its host resolved once to one socket
//! address (or sent elsewhere by a `--connect-to` rule, or not resolved at all with
//! `--unix-socket`), and the `Host` header value and request path derived from it.

use crate::transport::{unbracket, ConnectTo};
use crate::{invalid, PlanError};
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given (normalized).
    pub url: String,
    /// The address the host resolved to (the first one; IPv4 and IPv6 literals as they are).
    pub addr: SocketAddr,
    /// The `Host` header value: host, plus `:port` when it is not the scheme's default.
    pub authority: String,
    /// Path and query sent on the request line.
    pub path: String,
    /// An `https://`, `wss://` or `grpcs://` URL: the connection speaks TLS.
    pub tls: bool,
    /// A `ws://` or `wss://` URL: each connection upgrades to WebSocket and each request is
    /// one message (docs/transport.md).
    pub websocket: bool,
    /// A `grpc://` URL (h2c with prior knowledge) or `grpcs://` (HTTP/2 over TLS, ALPN `h2`):
    /// each request is a gRPC call, unary or server-streaming (docs/transport.md, "gRPC").
    pub grpc: bool,
    /// The URL's host, without the brackets of an IPv6 literal.
    pub host: String,
}

/// Where a URL's connections go instead of its resolved host.
#[derive(Debug, Clone, Copy, Default)]
pub struct Route<'a> {
    /// `--connect-to` rules, first match wins.
    pub connect_to: &'a [ConnectTo],
    /// `--unix-socket`: the host is not resolved at all.
    pub unix: bool,
}

impl Target {
    /// Parses an `http://` or `https://` URL and resolves its host once. Anything else (no
    /// host, a name that does not resolve) is a [`PlanError`] naming the fix.
    pub fn parse(text: &str) -> Result<Target, PlanError> {
        Target::parse_routed(text, Route::default())
    }

    /// [`Target::parse`], with the connections sent where `route` says.
    pub fn parse_routed(text: &str, route: Route<'_>) -> Result<Target, PlanError> {
        let url = url::Url::parse(text.trim()).map_err(|e| {
            invalid(format!(
                "invalid URL '{text}' ({e}): give a full URL such as http://127.0.0.1:8080/"
            ))
        })?;
        let (tls, websocket) = match url.scheme() {
            "http" | "grpc" => (false, false),
            "https" | "grpcs" => (true, false),
            "ws" => (false, true),
            "wss" => (true, true),
            other => {
                return Err(invalid(format!(
                    "unknown scheme '{other}://' in '{text}': use an http://, https://, ws://, wss://, grpc:// or grpcs:// URL"
                )))
            }
        };
        let host = url.host_str().ok_or_else(|| {
            invalid(format!(
                "URL '{text}' has no host: give one, such as http://127.0.0.1:8080/"
            ))
        })?;
        let grpc = matches!(url.scheme(), "grpc" | "grpcs");
        if grpc && url.port().is_none() {
            return Err(invalid(format!(
                "'{text}' has no port: give {}://HOST:PORT (gRPC has no default port)",
                url.scheme()
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let addr = route.address(unbracket(host), port)?;
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(Target {
            url: url.to_string(),
            addr,
            authority,
            path,
            tls,
            websocket,
            grpc,
            host: unbracket(host).to_string(),
        })
    }
}

impl Route<'_> {
    /// The address connections to `host:port` go to.
    fn address(&self, host: &str, port: u16) -> Result<SocketAddr, PlanError> {
        if self.unix {
            // Never used to connect; the record shows the socket's path instead.
            return Ok(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)));
        }
        match self.connect_to.iter().find_map(|r| r.apply(host, port)) {
            Some((to_host, to_port)) => resolve(&to_host, to_port),
            None => resolve(host, port),
        }
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, PlanError> {
    let bare = unbracket(host);
    let unresolvable = |why: String| {
        invalid(format!(
            "cannot resolve host '{bare}' ({why}): check the spelling or use an IP address"
        ))
    };
    let mut addrs = (bare, port)
        .to_socket_addrs()
        .map_err(|e| unresolvable(e.to_string()))?;
    addrs
        .next()
        .ok_or_else(|| unresolvable("no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_ipv6_and_default_port() {
        let t = Target::parse("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/a?b=1");
        let t = Target::parse("http://[::1]:9000").unwrap();
        assert_eq!(t.addr, "[::1]:9000".parse().unwrap());
        assert_eq!(t.authority, "[::1]:9000");
        assert_eq!(t.path, "/");
        let t = Target::parse("http://localhost/").unwrap();
        assert_eq!(t.addr.port(), 80);
        assert_eq!(t.authority, "localhost");
    }

    #[test]
    fn bad_urls_name_the_fix() {
        let e = |u| Target::parse(u).unwrap_err().to_string();
        assert!(Target::parse("https://127.0.0.1/").unwrap().tls);
        assert_eq!(
            Target::parse("https://localhost/").unwrap().addr.port(),
            443
        );
        assert!(e("ftp://127.0.0.1/").contains("unknown scheme"));
        let ws = Target::parse("ws://127.0.0.1:9000/ws").unwrap();
        assert!(ws.websocket && !ws.tls);
        assert_eq!((ws.addr.port(), ws.path.as_str()), (9000, "/ws"));
        let wss = Target::parse("wss://127.0.0.1/ws").unwrap();
        assert!(wss.websocket && wss.tls);
        assert_eq!(wss.addr.port(), 443, "wss:// defaults to 443");
        assert!(e("127.0.0.1:80").contains("http://"));
        assert!(e("not a url").contains("invalid URL"));
        assert!(e("http://no-such-host.invalid/").contains("cannot resolve host"));
    }
}
