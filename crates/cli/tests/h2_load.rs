//! HTTP/2 beyond small GETs, end to end: request bodies larger than a DATA frame and the
//! servers' windows (200 KiB POSTs) against a real nginx that proxies them to the reference
//! backend, and straight to the reference backend over h2c; `--no-keepalive` with `--http2`
//! (one request per connection); and scenario loads with `http2 = true`, over h2c to the
//! reference backend and over mutual TLS (`cert`, `key`) to nginx. nginx's access log and the
//! backend's `/stats` must hold what loadbench counted.

use crate::support::nginx::Nginx;
use crate::support::{have, tempdir, text as output_text, Run};
use crate::tls::{make_pki, path};
use loadbench_model::{RunResult, Stats};
use loadbench_upstream::{Server, ServerConfig};
use std::path::Path;

/// The POSTed body: 200 KiB, so it needs several DATA frames (16 KiB each by default) and
/// more than nginx's 64 KiB stream window.
const BODY: usize = 200 * 1024;

/// POSTs the body `n` times to `url` over HTTP/2 on 2 connections × `streams`: every request
/// answered 200, none failed, and each answer (the backend's `/echo` of the whole body) the
/// same size, above the body's.
fn post(url: &str, streams: u32, n: u64) {
    let dir = tempdir("h2-body");
    let file = dir.join("body.bin");
    std::fs::write(&file, vec![b'x'; BODY]).unwrap();
    let (streams, count) = (streams.to_string(), n.to_string());
    let r = Run::new(url)
        .args(["--http2", "--streams", &streams, "-c", "2", "-n", &count])
        .args(["-m", "POST", "--body-file", &file.display().to_string()])
        .ok();
    assert_eq!(r.stats.requests, n);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert_eq!(r.stats.status.0.get(&200), Some(&n));
    let body = r.stats.body.total;
    assert!(body > n * BODY as u64 && body.is_multiple_of(n), "{body}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_200_kib_post_over_h2c_reaches_nginx_and_the_backend_whole() {
    if !have("nginx") {
        return;
    }
    let backend = Server::start(ServerConfig::ephemeral()).unwrap();
    let nginx = Nginx::start_logging(
        "'$request_method $status $content_length $request_length $server_protocol'",
        "http2;",
        &format!(
            "location = /upload {{ client_max_body_size 1m; client_body_buffer_size 1m; \
             proxy_pass http://{}/echo; }}",
            backend.local_addr()
        ),
    );
    post(&nginx.url("/upload"), 4, 60);
    assert_eq!(nginx.logged_requests(), 60, "nginx's access log agrees");
    for line in nginx.log_lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f[..3], ["POST", "200", "204800"], "{line}");
        let length: usize = f[3].parse().unwrap();
        assert!(length > BODY, "the request with its body: {line}");
        assert_eq!(f[4], "HTTP/2.0", "{line}");
    }
    assert_eq!(
        backend.stats().route("/echo"),
        60,
        "the backend's /stats agrees"
    );
}

#[test]
fn a_200_kib_post_to_the_reference_backend_over_h2c_is_counted_there_as_h2() {
    let backend = Server::start(ServerConfig::ephemeral()).unwrap();
    post(&format!("http://{}/echo", backend.local_addr()), 8, 50);
    let stats = backend.stats();
    assert_eq!((stats.route("/echo"), stats.h2), (50, 50), "{stats:?}");
}

#[test]
fn no_keepalive_with_http2_sends_one_request_per_connection() {
    if !have("nginx") {
        return;
    }
    let nginx = Nginx::start_logging(
        "'$connection $connection_requests $server_protocol $status'",
        "http2;",
        "",
    );
    let r = Run::new(&nginx.url("/"))
        .args(["--http2", "--no-keepalive", "-c", "2", "-n", "50"])
        .ok();
    assert_eq!(r.stats.requests, 50);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert_eq!(
        r.stats.keepalive_requests, 0,
        "no request reused a connection"
    );
    // A connection may open just before another takes the last request: at most one per
    // connection slot beyond the requests.
    let opened = r.stats.connections_opened;
    assert!((50..=51).contains(&opened), "{opened}");
    assert_eq!(r.stats.protocols.h2, opened);
    assert_eq!(nginx.logged_requests(), 50, "nginx's access log agrees");
    let lines = nginx.log_lines();
    let mut connections = std::collections::HashSet::new();
    for line in &lines {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f[1..], ["1", "HTTP/2.0", "200"], "{line}");
        connections.insert(f[0].to_string());
    }
    assert_eq!(connections.len(), 50, "50 connections, one request each");
}

/// Runs a one-load scenario for 1 s against a server this test started at `addr` (a
/// placeholder process stands for the target, so the server can be read after the bench):
/// 2 connections, `load` the load's further keys. The round's run.
fn bench_load(dir: &Path, url: &str, addr: &str, load: &str) -> RunResult {
    let load = format!("model = \"closed\"\nconnections = [2]\n{load}");
    let run = bench_round(dir, url, addr, &load);
    let stats = &run.stats;
    assert_eq!(stats.protocols.h2, 2, "two h2 connections");
    assert!(stats.requests > 0);
    assert_eq!(stats.errors.total(), 0, "{:?}", stats.error_reasons);
    assert_eq!(stats.requests + stats.abandoned, stats.sent);
    run
}

/// Runs a one-load scenario (`load`: its keys besides `targets`) for 1 s, one round, against
/// a server this test started at `addr`; the round's run, whose load says HTTP/2 as the
/// result's load does.
pub(crate) fn bench_round(dir: &Path, url: &str, addr: &str, load: &str) -> RunResult {
    let text = format!(
        "name = \"h2\"\n[[target]]\nname = \"server\"\ncommand = \"/bin/sleep\"\n\
         args = [\"30\"]\nurl = \"{url}\"\n[target.ready]\ntcp = \"{addr}\"\n\
         [[load]]\ntargets = [\"server\"]\n{load}"
    );
    let file = dir.join("h2.toml");
    std::fs::write(&file, text).unwrap();
    let args = [
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--rounds",
        "1",
        "--cooldown",
        "0s",
    ];
    let (out, r) = crate::bench::bench(&file, &dir.join("results"), &args);
    assert!(out.status.success(), "{:?}", output_text(&out));
    let mut r = r.expect("result.json saved");
    assert_eq!(r.rounds.len(), 1);
    let run = r.rounds.remove(0).result.expect("a run");
    assert_eq!(
        r.loads[0].http2_streams, run.config.http2_streams,
        "the load says HTTP/2"
    );
    run
}

/// The server served every request we counted, and at most those in flight at the end besides.
fn assert_served(served: u64, stats: &Stats) {
    assert!(
        (stats.requests..=stats.sent).contains(&served),
        "the server {served}, ours {} answered of {} sent",
        stats.requests,
        stats.sent
    );
}

#[test]
fn a_scenario_load_with_http2_reaches_the_reference_backend_as_h2() {
    let backend = Server::start(ServerConfig::ephemeral()).unwrap();
    let addr = backend.local_addr().to_string();
    let dir = tempdir("bench-h2");
    let url = format!("http://{addr}/");
    let run = bench_load(&dir, &url, &addr, "http2 = true\nstreams = 4\n");
    assert_eq!(run.config.http2_streams, Some(4));
    let served = backend.stats();
    assert_eq!(served.h2, served.total, "all of it HTTP/2: {served:?}");
    assert_served(served.h2, &run.stats);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scenario_load_sends_its_client_certificate_over_h2_to_nginx_requiring_one() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("bench-h2-mtls");
    let pki = make_pki(&dir);
    let nginx = Nginx::start_with(
        &format!(
            "ssl http2;\n    ssl_certificate {};\n    ssl_certificate_key {};\n    \
             ssl_client_certificate {};\n    ssl_verify_client on;",
            path(&pki.server_cert),
            path(&pki.server_key),
            path(&pki.ca)
        ),
        "",
    );
    let load = format!(
        "http2 = true\nstreams = 2\ncacert = \"{}\"\ncert = \"{}\"\nkey = \"{}\"\n",
        path(&pki.ca),
        path(&pki.client_cert),
        path(&pki.client_key)
    );
    let addr = format!("127.0.0.1:{}", nginx.port);
    let run = bench_load(&dir, &nginx.https_url("/"), &addr, &load);
    // Without the certificate nginx would answer 400 to every request.
    let ok = run.stats.status.0.get(&200).copied();
    assert_eq!(ok, Some(run.stats.requests), "{:?}", run.stats.status);
    let lines = nginx.log_lines();
    assert!(
        lines.iter().all(|l| l.contains(" HTTP/2.0\" 200 ")),
        "{:?}",
        lines.first()
    );
    assert_served(nginx.logged_requests(), &run.stats);
    let _ = std::fs::remove_dir_all(&dir);
}
