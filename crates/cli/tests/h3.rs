//! `--http3` against a real HTTP/3 server: Caddy (Debian's package serves h3 on UDP beside h1
//! and h2 on TCP, on the same port), trusted through its local CA with `--cacert`. Every
//! request loadbench counts as answered is one Caddy logged over `HTTP/3.0`, in the closed and
//! the open model, with several streams per connection. Bad input (`--http3` with http://, or
//! with --http2, or against a server without HTTP/3) is one line and exit 2 before any load.

use crate::support::caddy::Caddy;
use crate::support::nginx::Nginx;
use crate::support::{free_port, have, refused, tempdir, Run};
use crate::tls::make_pki;
use loadbench_model::{ErrorKind, RunResult};
use loadbench_report::Format;
use loadbench_upstream::Server;
use std::path::PathBuf;

const BODY: &str = "hello over h3";

fn caddy() -> Option<Caddy> {
    have("caddy").then(|| Caddy::start(&format!("respond /missing 404\n\trespond \"{BODY}\" 200")))
}

fn run(caddy: &Caddy, path: &str, args: &[&str]) -> RunResult {
    let ca = caddy.root_ca();
    let mut all = vec!["--http3", "--cacert", ca.to_str().unwrap()];
    all.extend_from_slice(args);
    Run::new(&caddy.url(path)).args(all).ok()
}

/// What loadbench counted as answered with `status`.
fn answered(r: &RunResult, status: u16) -> u64 {
    r.stats.status.0.get(&status).copied().unwrap_or(0)
}

#[test]
fn http3_against_caddy_counts_equal_its_access_log() {
    let Some(caddy) = caddy() else { return };
    // Closed model: 2 connections, 4 streams each, a fixed count.
    let r = run(&caddy, "/", &["-c", "2", "--streams", "4", "-n", "200"]);
    assert_eq!(answered(&r, 200), 200, "{:?}", r.stats.status);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.protocols.h3, 2, "{:?}", r.stats.protocols);
    assert_eq!(r.stats.body.total, 200 * BODY.len() as u64);
    assert!(r.stats.h2.max_streams_in_flight >= 2, "{:?}", r.stats.h2);
    assert!(r.stats.h2.max_streams_in_flight <= 4, "{:?}", r.stats.h2);
    assert_eq!(caddy.logged("HTTP/3.0"), 200);
    // A status other than 200 is counted as the server logged it.
    let missing = run(&caddy, "/missing", &["-c", "1", "-n", "30"]);
    assert_eq!(answered(&missing, 404), 30, "{:?}", missing.stats.status);
    assert_eq!(caddy.logged_status("HTTP/3.0", 404), 30);
    // The open model: due requests take free streams, latency from their intended times.
    let open = run(
        &caddy,
        "/",
        &["--rate", "200", "-n", "150", "--streams", "8"],
    );
    assert_eq!(answered(&open, 200), 150, "{:?}", open.stats);
    assert_eq!(open.stats.errors.total(), 0, "{:?}", open.stats.errors);
    assert!(open.stats.protocols.h3 >= 1, "{:?}", open.stats.protocols);
    assert_eq!(caddy.logged("HTTP/3.0"), 200 + 30 + 150);
    // Nothing went over TCP: the preflight is a QUIC handshake, no request.
    assert_eq!(caddy.logged("HTTP/2.0") + caddy.logged("HTTP/1.1"), 0);
}

#[test]
fn bad_http3_input_is_one_line_and_exit_2_before_any_load() {
    let port = free_port();
    let plain = format!("http://127.0.0.1:{port}/");
    refused(
        Run::new(&plain).args(["--http3", "-c", "1", "-n", "5"]),
        "--http3 needs an https:// URL",
    );
    let https = format!("https://127.0.0.1:{port}/");
    refused(
        Run::new(&https).args(["--http3", "--http2", "-c", "1", "-n", "5"]),
        "give one of them",
    );
    // Nothing listens on UDP there: no QUIC handshake.
    refused(
        Run::new(&https).args(["--http3", "-c", "1", "-n", "5", "--connect-timeout", "2s"]),
        "did not answer HTTP/3 over QUIC",
    );
    // A real HTTPS server without HTTP/3 (nginx over TCP only).
    if !have("nginx") {
        return;
    }
    let pki = make_pki(&tempdir("h3-no-quic"));
    let tls = format!(
        "ssl_certificate {};\n    ssl_certificate_key {};",
        pki.server_cert.display(),
        pki.server_key.display()
    );
    let nginx = Nginx::start_tls(&tls);
    let ca = pki.ca.to_str().unwrap().to_string();
    let url = nginx.https_url("/");
    refused(
        Run::new(&url).args([
            "--http3",
            "--cacert",
            &ca,
            "-c",
            "1",
            "-n",
            "5",
            "--connect-timeout",
            "2s",
        ]),
        "did not answer HTTP/3 over QUIC",
    );
    assert_eq!(nginx.logged_requests(), 0);
}

/// The reference backend over TLS (HTTP/3 on UDP beside it, as by default) and its
/// certificate's file for `--cacert`.
fn serve_tls(name: &str) -> (Server, PathBuf) {
    crate::tls::tls_backend(&tempdir(name))
}

/// The error reasons counted, by their JSON key.
fn reasons(r: &RunResult) -> Vec<(String, u64)> {
    let key = |k| serde_json::to_string(k).unwrap();
    r.stats
        .error_reasons
        .0
        .iter()
        .map(|(k, n)| (key(k), *n))
        .collect()
}

/// The reference backend answers HTTP/3 beside `--tls` (`loadbench serve`): its own count of
/// h3 requests, by route, equals loadbench's, with the certificate trusted by `--cacert`.
#[test]
fn http3_against_the_reference_backend_counts_equal_its_stats() {
    let (server, ca) = serve_tls("h3-serve");
    let port = server.local_addr().port();
    let url = |path: &str| format!("https://localhost:{port}{path}");
    let ca = ca.to_str().unwrap();
    let base = ["--http3", "--cacert", ca];
    let sized = Run::new(&url("/bytes/10KiB"))
        .args(
            base.iter()
                .chain(&["-c", "2", "--streams", "3", "-n", "60"]),
        )
        .ok();
    assert_eq!(answered(&sized, 200), 60, "{:?}", sized.stats.status);
    assert_eq!(sized.stats.body.total, 60 * 10 * 1024);
    let failing = Run::new(&url("/status/503"))
        .args(base.iter().chain(&["--rate", "100", "-n", "40"]))
        .ok();
    assert_eq!(answered(&failing, 503), 40, "{:?}", failing.stats.status);
    let stats = server.stats();
    assert_eq!((stats.h3, stats.total), (100, 100), "{stats:?}");
    assert_eq!(stats.route("/bytes"), 60, "{stats:?}");
}

/// A reset stream and a closed QUIC connection are counted by the code the server sent: the
/// reference backend's HTTP/3 fault routes reset with `code=` (`H3_INTERNAL_ERROR` by default)
/// or close the connection with it, and every request it saw on them is one error of
/// loadbench's, under that code.
#[test]
fn http3_resets_and_closes_are_counted_by_the_code_the_backend_sent() {
    let _busy = crate::support::loading();
    let (server, ca) = serve_tls("h3-codes");
    let port = server.local_addr().port();
    // Every request fails, so each run exits 1 (nothing completed) and saves its result.
    let run = |path: &str, args: &[&str]| {
        let url = format!("https://localhost:{port}{path}");
        let mut all = vec!["--http3", "--cacert", ca.to_str().unwrap()];
        all.extend_from_slice(args);
        let ran = Run::new(&url).args(all).json();
        assert_eq!(ran.code(), Some(1), "{:?}", ran.text());
        ran.result()
    };
    let reset = run("/fault/reset", &["-c", "2", "--streams", "2", "-n", "30"]);
    assert_eq!(reset.stats.errors.get(ErrorKind::H3StreamReset), 30);
    assert_eq!(reset.stats.errors.total(), 30, "{:?}", reset.stats.errors);
    assert_eq!(
        reasons(&reset),
        [("\"h3_reset_internal_error\"".into(), 30)]
    );
    let cancelled = run("/fault/malformed?code=0x10c", &["--rate", "50", "-n", "20"]);
    assert_eq!(cancelled.stats.errors.get(ErrorKind::H3StreamReset), 20);
    let want = [("\"h3_reset_request_cancelled\"".to_string(), 20)];
    assert_eq!(reasons(&cancelled), want);
    // One stream per connection: each close fails the one request in flight on it.
    let closed = run("/fault/close?code=0x107", &["-c", "1", "-n", "10"]);
    assert_eq!(closed.stats.errors.get(ErrorKind::QuicClosed), 10);
    assert_eq!(closed.stats.errors.total(), 10, "{:?}", closed.stats.errors);
    let want = [("\"h3_close_excessive_load\"".to_string(), 10)];
    assert_eq!(reasons(&closed), want);
    assert!(
        closed.stats.protocols.h3 >= 10,
        "{:?}",
        closed.stats.protocols
    );
    let opts = loadbench_report::RenderOptions::default();
    let text = loadbench_report::render_to_string(Format::Text, &closed, &opts);
    let line = "QUIC connection closed while the request was in flight: 10 (H3_EXCESSIVE_LOAD 10)";
    assert!(text.contains(line), "{text}");
    let stats = server.stats();
    assert_eq!(stats.h3, 60, "{stats:?}");
    assert_eq!(
        (
            stats.route("/fault/reset"),
            stats.route("/fault/malformed"),
            stats.route("/fault/close")
        ),
        (30, 20, 10),
        "{stats:?}"
    );
}

/// A server that never answers (the backend's `/fault/stall` over HTTP/3) or trickles its
/// body (`/fault/slow`) cannot hold the run: a stalled request fails at `--timeout` as a read
/// timeout (its stream cancelled, the connection kept), a trickling one is still in flight at
/// the end (abandoned, censored at its age); both runs end on time, every request accounted
/// for, and the server saw every stream.
#[test]
fn a_stalling_or_trickling_http3_server_cannot_hold_the_run() {
    let _busy = crate::support::loading();
    let (server, ca) = serve_tls("h3-hostile");
    let port = server.local_addr().port();
    let run = |path: &str, args: &[&str]| {
        let url = format!("https://localhost:{port}{path}");
        let began = std::time::Instant::now();
        let mut all = vec!["--http3", "--cacert", ca.to_str().unwrap()];
        all.extend_from_slice(&["-c", "2", "--streams", "2", "-d", "2s", "-t", "1"]);
        all.extend_from_slice(args);
        let ran = Run::new(&url).args(all).json();
        let took = began.elapsed();
        assert!(took < std::time::Duration::from_secs(15), "{took:?}");
        assert_eq!(ran.code(), Some(1), "nothing completed: {:?}", ran.text());
        let r = ran.result();
        let s = &r.stats;
        assert_eq!(s.requests + s.errors.total() + s.abandoned, s.sent, "{s:?}");
        assert_eq!(
            s.protocols.h3, 2,
            "the connections are kept: {:?}",
            s.protocols
        );
        r
    };
    let stalled = run("/fault/stall", &["--timeout", "300ms"]);
    let s = &stalled.stats;
    let timeouts = s.errors.get(ErrorKind::ReadTimeout);
    // Four streams, each timing out every 300 ms over 2 s (fewer on a loaded machine).
    assert!(timeouts >= 4, "{:?}", s.errors);
    assert_eq!(s.errors.total(), timeouts, "{:?}", s.errors);
    assert_eq!(s.abandoned, 4, "the streams in flight at the end");
    let trickled = run("/fault/slow?bps=1000&size=1MiB", &[]);
    assert_eq!((trickled.stats.sent, trickled.stats.abandoned), (4, 4));
    let stats = server.stats();
    assert_eq!(stats.h3, s.sent + 4, "{stats:?}");
}
