//! HTTP/2 in the reference backend, checked with outside clients (curl and h2load, both built
//! on nghttp2): h2c with prior knowledge on the cleartext port beside HTTP/1.1, HTTP/2 over
//! TLS chosen by ALPN, every ordinary route answering as over HTTP/1.1, and `/stats` counting
//! each request once, with the HTTP/2 ones under `protocols.h2`.

use crate::support::have;
use loadbench_upstream::{Server, ServerConfig, TlsIdentity};
use std::process::Command;

/// The routes and what they answer, whatever the protocol.
const ROUTES: [(&str, &str); 8] = [
    ("/", "200"),
    ("/json", "200"),
    ("/bytes/2k", "200"),
    ("/chunked/5k", "200"),
    ("/delay/10ms", "200"),
    ("/status/503", "503"),
    ("/echo", "200"),
    ("/nope", "404"),
];

/// curl fetching every route, printing the protocol version and the status of each: `2 200`.
/// One curl per route: curl 7.88 cannot reuse an h2c prior-knowledge connection ("Connection
/// seems to be dead"; the same against nginx's h2c), so each route gets a connection of its own.
fn curl(base: &str, flags: &[&str]) -> Vec<String> {
    let fetch = |path: &str| {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "10", "-o", "/dev/null"])
            .args(["-w", "%{http_version} %{http_code}"])
            .args(flags)
            .arg(format!("{base}{path}"))
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    ROUTES.iter().map(|(path, _)| fetch(path)).collect()
}

fn expected(version: &str) -> Vec<String> {
    ROUTES
        .iter()
        .map(|(_, s)| format!("{version} {s}"))
        .collect()
}

#[test]
fn h2c_with_prior_knowledge_and_http1_share_the_cleartext_port() {
    if !have("curl") {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let base = format!("http://{}", server.local_addr());
    assert_eq!(curl(&base, &["--http2-prior-knowledge"]), expected("2"));
    let stats = server.stats();
    assert_eq!((stats.total, stats.h2), (8, 8), "{stats:?}");
    assert_eq!(stats.route("unmatched"), 1);
    assert_eq!(curl(&base, &["--http1.1"]), expected("1.1"));
    let stats = server.stats();
    assert_eq!(
        (stats.total, stats.h2),
        (16, 8),
        "HTTP/1.1 is not counted as h2"
    );
    let json: serde_json::Value = serde_json::from_str(&stats.to_json()).unwrap();
    let protocols = serde_json::json!({"h2": 8, "h3": 0, "http1": 8});
    assert_eq!(json["protocols"], protocols);
}

#[test]
fn tls_offers_h2_by_alpn_and_still_serves_http1() {
    if !have("curl") {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let cfg = ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        ..ServerConfig::ephemeral()
    };
    let server = Server::start(cfg).unwrap();
    let base = format!("https://{}", server.local_addr());
    assert_eq!(curl(&base, &["--http2", "-k"]), expected("2"));
    assert_eq!(curl(&base, &["--http1.1", "-k"]), expected("1.1"));
    let stats = server.stats();
    assert_eq!((stats.total, stats.h2), (16, 8), "{stats:?}");
}

/// h2load's summary: the protocol it negotiated and its succeeded count.
fn h2load(url: &str, requests: u64) -> (String, u64) {
    let out = Command::new("h2load")
        .args(["-n", &requests.to_string(), "-c", "2", "-m", "8", url])
        .output()
        .expect("h2load runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let protocol = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Application protocol: "))
        .unwrap_or("none")
        .trim()
        .to_string();
    let succeeded = stdout
        .lines()
        .find(|l| l.starts_with("requests: "))
        .and_then(|l| l.split(", ").find(|p| p.ends_with(" succeeded")))
        .and_then(|p| p.trim_end_matches(" succeeded").parse().ok())
        .unwrap_or(0);
    (protocol, succeeded)
}

#[test]
fn h2load_speaks_h2c_and_h2_and_the_counts_match() {
    if !have("h2load") {
        eprintln!("skipped: h2load is not installed");
        return;
    }
    let plain = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = format!("http://{}/", plain.local_addr());
    assert_eq!(h2load(&url, 400), ("h2c".to_string(), 400));
    assert_eq!((plain.stats().route("/"), plain.stats().h2), (400, 400));

    let tls = Server::start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let url = format!("https://{}/json", tls.local_addr());
    assert_eq!(h2load(&url, 400), ("h2".to_string(), 400));
    assert_eq!((tls.stats().route("/json"), tls.stats().h2), (400, 400));
}
