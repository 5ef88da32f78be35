//! HTTP/2 end to end (`--http2`, `--streams`): `loadbench run` against a real nginx started by
//! the test, over h2c (prior knowledge) and h2 over TLS with a certificate made at test time.
//! nginx's access log (whose request lines say `HTTP/2.0`) must hold exactly what loadbench
//! counted; a server limit on concurrent streams is honoured (no REFUSED_STREAM, the recorded
//! most-in-flight stays at the limit); a GOAWAY after a request limit loses no request (and the
//! text report counts the GOAWAYs); and a server without HTTP/2 is one line and exit code 2,
//! before any load.

use crate::support::nginx::Nginx;
use crate::support::{have, tempdir, Run};
use crate::tls::{make_pki, path, Pki};
use loadbench_model::{ErrorKind, RunResult};

/// nginx speaking h2c (prior knowledge) with `extra` in its server block.
pub(crate) fn nginx_h2c(extra: &str) -> Nginx {
    Nginx::start_with(
        "http2;",
        &format!("location = /missing {{ return 404; }}\n    {extra}"),
    )
}

/// Every line nginx logged was an HTTP/2 request, and there were `n`.
pub(crate) fn assert_logged_h2(nginx: &Nginx, n: u64) {
    assert_eq!(nginx.logged_requests(), n, "nginx's access log agrees");
    let lines = nginx.log_lines();
    assert!(
        lines.iter().all(|l| l.contains(" HTTP/2.0\"")),
        "{:?}",
        lines.first()
    );
}

/// nginx speaking h2 over TLS (ALPN) with the server certificate of `pki`.
pub(crate) fn nginx_h2_tls(pki: &Pki) -> Nginx {
    Nginx::start_with(
        &format!(
            "ssl http2;\n    ssl_certificate {};\n    ssl_certificate_key {};",
            path(&pki.server_cert),
            path(&pki.server_key)
        ),
        "",
    )
}

fn assert_clean(r: &RunResult, requests: u64) {
    assert_eq!(r.stats.requests, requests);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert_eq!(r.stats.sent, requests);
}

#[test]
fn h2c_with_eight_streams_on_two_connections_counts_what_nginx_logged() {
    if !have("nginx") {
        return;
    }
    let nginx = nginx_h2c("");
    let r = Run::new(&nginx.url("/"))
        .args(["--http2", "--streams", "8", "-c", "2", "-n", "400"])
        .ok();
    assert_clean(&r, 400);
    assert_eq!(r.stats.status.0.get(&200), Some(&400));
    assert_eq!(r.stats.body.total, 400 * "hello world".len() as u64);
    assert_eq!(r.stats.protocols.h2, 2, "two h2 connections");
    assert_eq!(r.stats.connections_opened, 2);
    let most = r.stats.h2.max_streams_in_flight;
    assert!((1..=8).contains(&most), "{most}");
    assert_eq!(r.config.http2_streams, Some(8));
    assert_logged_h2(&nginx, 400);

    let missing = Run::new(&nginx.url("/missing"))
        .args(["--http2", "--streams", "4", "-c", "1", "-n", "60"])
        .ok();
    assert_eq!(missing.stats.status.0.get(&404), Some(&60));
    assert_eq!(missing.stats.errors.total(), 0);
    assert_logged_h2(&nginx, 460);
}

#[test]
fn h2_over_tls_negotiated_by_alpn_counts_what_nginx_logged_and_says_so_in_the_report() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("nginx-h2-tls");
    let pki = make_pki(&dir);
    let nginx = nginx_h2_tls(&pki);
    let url = nginx.https_url("/");
    let args = ["--http2", "--streams", "4", "-c", "2", "-n", "300"];
    let r = Run::new(&url)
        .args(args)
        .args(["--cacert", &path(&pki.ca)])
        .ok();
    assert_clean(&r, 300);
    assert_eq!(r.stats.protocols.h2, 2);
    assert_eq!(
        r.stats.tls.full + r.stats.tls.resumed,
        2,
        "{:?}",
        r.stats.tls
    );
    assert_logged_h2(&nginx, 300);
    let text = Run::new(&url)
        .args([
            "--http2",
            "--streams",
            "4",
            "-c",
            "2",
            "-n",
            "20",
            "-o",
            "text",
        ])
        .args(["--cacert", &path(&pki.ca)])
        .json();
    let (stdout, stderr) = text.text();
    assert_eq!(text.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("HTTP/2 (h2 over TLS), 2 connections × 4 streams"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_without_http2_is_one_line_and_exit_2_before_any_load() {
    if !have("nginx") {
        return;
    }
    let plain = Nginx::start("");
    let ran = Run::new(&plain.url("/"))
        .args(["--http2", "-n", "10", "-c", "1"])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("did not answer HTTP/2"), "{stderr}");

    let dir = tempdir("nginx-h1-tls");
    let pki = make_pki(&dir);
    let tls = Nginx::start_tls(&format!(
        "ssl_certificate {};\n    ssl_certificate_key {};",
        path(&pki.server_cert),
        path(&pki.server_key)
    ));
    let ran = Run::new(&tls.https_url("/"))
        .args(["--http2", "-n", "10", "-c", "1", "--cacert", &path(&pki.ca)])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("did not negotiate HTTP/2 (ALPN offered h2, got"),
        "{stderr}"
    );
    assert_eq!(tls.logged_requests(), 0, "nothing was sent");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_servers_max_concurrent_streams_is_honoured() {
    if !have("nginx") {
        return;
    }
    let nginx = nginx_h2c("http2_max_concurrent_streams 2;");
    let r = Run::new(&nginx.url("/"))
        .args(["--http2", "--streams", "8", "-c", "2", "-n", "300"])
        .ok();
    assert_clean(&r, 300);
    assert_eq!(
        r.stats.errors.get(ErrorKind::H2RstStream),
        0,
        "no REFUSED_STREAM"
    );
    assert_eq!(r.stats.h2.server_max_streams, 2);
    let most = r.stats.h2.max_streams_in_flight;
    assert!(
        (1..=2).contains(&most),
        "at most 2 in flight per connection: {most}"
    );
    assert_logged_h2(&nginx, 300);
}

#[test]
fn a_goaway_after_a_request_limit_loses_no_request() {
    if !have("nginx") {
        return;
    }
    // After 50 requests on a connection nginx sends GOAWAY; streams above its last stream id
    // are sent again on a new connection.
    let nginx = nginx_h2c("keepalive_requests 50;");
    let ran = Run::new(&nginx.url("/"))
        .args([
            "--http2",
            "--streams",
            "4",
            "-c",
            "2",
            "-n",
            "400",
            "-o",
            "text",
        ])
        .json();
    let (stdout, stderr) = ran.text();
    assert_eq!(ran.code(), Some(0), "{stderr}");
    let r = ran.result();
    // Every send counts in `sent`, the ones sent again after a GOAWAY too (docs/reliability.md):
    // requests + goaway_retries = sent.
    assert_eq!(r.stats.requests, 400);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert_eq!(
        r.stats.sent,
        400 + r.stats.h2.goaway_retries,
        "{:?}",
        r.stats.h2
    );
    assert!(r.stats.h2.goaways >= 7, "{:?}", r.stats.h2);
    assert!(
        r.stats.connections_opened >= 8,
        "{}",
        r.stats.connections_opened
    );
    assert_logged_h2(&nginx, 400);
    // The text report says how many GOAWAYs came and what they sent again, as the result has.
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("HTTP/2 GOAWAY:"))
        .unwrap_or_else(|| panic!("no GOAWAY line: {stdout}"));
    let resent = match r.stats.h2.goaway_retries {
        0 => "no request had to be sent again".to_string(),
        1 => "1 request above its last stream id, never processed, sent again on a new connection".to_string(),
        n => format!("{n} requests above its last stream id, never processed, sent again on a new connection"),
    };
    let want = format!(
        "the server sent GOAWAY {} times (each ends its connection: no new streams on it, which is re-opened); {resent}",
        r.stats.h2.goaways
    );
    assert!(line.ends_with(&want), "{line}\nwant: {want}");
}

#[test]
fn http2_flags_that_do_not_combine_are_one_line_and_exit_2() {
    for (args, says) in [
        (vec!["--streams", "4", "-n", "10", "-c", "1"], "add --http2"),
        (
            vec!["--http2", "--rate", "10", "-d", "1s", "--no-keepalive"],
            "leave out --no-keepalive",
        ),
        (
            vec!["--http2", "--streams", "0", "-n", "10", "-c", "1"],
            "--streams 1 or more",
        ),
        (
            vec![
                "--http2",
                "--streams",
                "4",
                "--no-keepalive",
                "-n",
                "10",
                "-c",
                "1",
            ],
            "--no-keepalive",
        ),
    ] {
        let ran = Run::new("http://127.0.0.1:9/").args(&args).json();
        let (_, stderr) = ran.text();
        assert_eq!(ran.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_weighted_mix_over_h2c_keeps_per_endpoint_counts_that_match_nginx() {
    if !have("nginx") {
        return;
    }
    let nginx = nginx_h2c("");
    let (ok, missing) = (nginx.url("/"), nginx.url("/missing"));
    let r = Run::without_url()
        .args(["-u", &format!("{ok} weight=3"), "-u", &missing])
        .args(["--http2", "--streams", "4", "-c", "2", "-n", "400"])
        .ok();
    let e = &r.stats.endpoints;
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].requests + e[1].requests, 400);
    assert_eq!(e[0].status.0.get(&200).copied(), Some(e[0].requests));
    assert_eq!(e[1].status.0.get(&404).copied(), Some(e[1].requests));
    let logged_404 = nginx
        .log_lines()
        .iter()
        .filter(|l| l.contains("GET /missing HTTP/2.0\" 404"))
        .count() as u64;
    assert_logged_h2(&nginx, 400);
    assert_eq!(logged_404, e[1].requests, "nginx's 404 lines agree");
    // Smooth weighted round-robin: within a couple of requests of 3:1 per worker.
    assert!((95..=105).contains(&e[1].requests), "{}", e[1].requests);
}
