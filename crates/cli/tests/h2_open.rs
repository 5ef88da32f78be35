//! HTTP/2 in the open model (`--http2 --rate`), end to end: against the reference backend over
//! h2c (its `/stats` counts the requests that arrived as HTTP/2) and against a real nginx over
//! TLS with ALPN h2 (its access log). Due requests take free streams before new connections
//! are opened (read from the pool figures), requests that find no stream wait in the
//! generator with their latency counted from their intended time, every scheduled request is
//! accounted for, and a server's stall shows in the latency as with HTTP/1.1.

use crate::h2::{assert_logged_h2, nginx_h2_tls, nginx_h2c};
use crate::open::{assert_accounted, backend};
use crate::support::{have, tempdir, Run};
use crate::tls::{make_pki, path};
use loadbench_model::RunResult;
use loadbench_upstream::Server;

/// `loadbench run --http2` against `path` on `server` with `args`; it must succeed.
fn load(server: &Server, path: &str, args: &[&str]) -> RunResult {
    crate::open::load(server, path, &[&["--http2"], args].concat())
}

/// `--http2 --rate R -n N` with `--streams` and `more` arguments against nginx over h2c with
/// `extra` in its server block: every request answered without an error, and nginx logged
/// each. A stream a GOAWAY refused went out twice: each send is one in `sent`, the refused
/// one also in `goaway_retries`.
fn nginx_at_a_rate(extra: &str, streams: &str, rate: &str, n: u64, more: &[&str]) -> RunResult {
    let nginx = nginx_h2c(extra);
    let count = n.to_string();
    let args = [
        "--http2",
        "--streams",
        streams,
        "--rate",
        rate,
        "-n",
        &count,
    ];
    let r = Run::new(&nginx.url("/")).args(args).args(more).ok();
    let h2 = &r.stats.h2;
    assert_eq!(
        (r.stats.sent, r.stats.requests),
        (n + h2.goaway_retries, n),
        "{h2:?}"
    );
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert_logged_h2(&nginx, n);
    r
}

#[test]
fn h2c_at_a_fixed_rate_sends_it_and_the_server_counts_every_request_as_h2() {
    let _machine = crate::support::measuring();
    let server = backend();
    let r = load(&server, "/", &["--rate", "500", "-d", "2s", "-t", "2"]);
    let s = &r.stats;
    assert_eq!(s.scheduled, Some(1000));
    let achieved = s.sent as f64 / 1000.0;
    assert!((0.99..=1.01).contains(&achieved), "sent {} of 1000", s.sent);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_accounted(&r);
    let stats = server.stats();
    assert_eq!(
        stats.route("/"),
        s.sent,
        "the server saw every request sent"
    );
    assert_eq!(stats.h2, s.sent, "all of them over HTTP/2: {stats:?}");
    assert!(
        s.protocols.h2 >= 1,
        "the protocol negotiated: {:?}",
        s.protocols
    );
    assert_eq!(r.config.http2_streams, Some(1));
    assert!(s.pool.initial >= 1 && s.pool.connects >= 1, "{:?}", s.pool);
    let per_second: Vec<u64> = s.series.0.iter().map(|p| p.sent).collect();
    assert_eq!(per_second.iter().sum::<u64>(), s.sent, "{per_second:?}");
}

/// ~20 requests in flight (200/s × 100 ms) with 8 streams a connection: with `-c 4` (the
/// initial pool and the cap) never more than 4 connections; without `-c` the pool starts
/// small and grows by whole connections only as the streams fill, so no more than
/// ceil(20 / 8) + 1.
#[test]
fn streams_fill_before_connections_open() {
    let _machine = crate::support::measuring();
    let server = backend();
    let capped = load(
        &server,
        "/delay/100ms",
        &["--streams", "8", "-c", "4", "--rate", "200", "-d", "2s"],
    );
    let s = &capped.stats;
    assert_eq!(capped.config.connections, 4, "the cap");
    assert!(s.pool.connects <= 4, "{:?}", s.pool);
    assert!(s.protocols.h2 <= 4, "{:?}", s.protocols);
    assert!(s.h2.max_streams_in_flight > 1, "{:?}", s.h2);
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_accounted(&capped);

    let grown = load(
        &server,
        "/delay/100ms",
        &["--streams", "8", "--rate", "200", "-d", "2s", "-t", "1"],
    );
    let s = &grown.stats;
    assert!(
        (1..=4).contains(&s.pool.connects),
        "ceil(20 / 8) + 1 at most: {:?}",
        s.pool
    );
    assert!(s.h2.max_streams_in_flight >= 5, "{:?}", s.h2);
    assert_eq!(s.sent + s.waiting, 400, "every scheduled request counted");
    let achieved = s.sent as f64 / 400.0;
    assert!((0.99..=1.01).contains(&achieved), "sent {} of 400", s.sent);
    assert_accounted(&grown);
}

/// One connection with one stream serves 10 req/s of 100 ms answers; at 50 req/s the rest
/// wait in the generator: their latency counts from the intended time (p50 past the
/// service time), the send lag shows the wait, and every scheduled request is sent or
/// counted as waiting.
#[test]
fn requests_that_find_no_stream_wait_in_plain_sight() {
    let _machine = crate::support::loading();
    let server = backend();
    let args = ["--streams", "1", "-c", "1", "--rate", "50", "-d", "2s"];
    let r = load(&server, "/delay/100ms", &args);
    let s = &r.stats;
    assert_eq!(s.pool.connects, 1, "-c 1 is the cap: {:?}", s.pool);
    assert!(s.waiting > 40, "waiting {}", s.waiting);
    assert_eq!(s.sent + s.waiting, s.scheduled.unwrap(), "{s:?}");
    assert_accounted(&r);
    assert!(s.latency.hist.percentile_ns(50.0) >= 100_000_000);
    assert!(
        s.latency.hist.percentile_ns(50.0) > s.service.hist.percentile_ns(50.0),
        "waits show in latency, not in service time"
    );
    assert!(s.send_lag.hist.percentile_ns(50.0) >= 100_000_000);
    assert!(s.sent_late > 0 && r.stats.generator.pool_full_us > 0);
    assert_eq!(server.stats().h2, s.sent);
}

/// The idea of the HTTP/1.1 stall test over HTTP/2: a server that stops answering for 500 ms
/// once a second; at 200 req/s on one connection the requests due during the stall wait, and
/// the open model's p99 shows it, while the closed model on the same connection hides it.
#[test]
fn a_stall_shows_in_the_open_models_p99() {
    let _machine = crate::support::measuring();
    let server = backend();
    let path = "/?hiccup=500ms/1s";
    let args = [
        "--streams",
        "4",
        "--rate",
        "200",
        "-c",
        "1",
        "-d",
        "2s",
        "-t",
        "1",
    ];
    let open = load(&server, path, &args);
    let latency = &open.stats.latency.hist;
    assert!(latency.percentile_ns(99.0) >= 400_000_000, "{latency:?}");
    assert!(open.stats.send_lag.hist.percentile_ns(99.0) >= 300_000_000);
    assert_accounted(&open);
    let closed = load(&server, path, &["-c", "1", "-d", "2s", "-t", "1"]);
    assert!(closed.stats.latency.hist.percentile_ns(99.0) < 400_000_000);
}

#[test]
fn h2_over_tls_at_a_rate_counts_what_nginx_logged() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("nginx-h2-open");
    let pki = make_pki(&dir);
    let nginx = nginx_h2_tls(&pki);
    let args = ["--http2", "--streams", "4", "--rate", "300", "-n", "300"];
    let r = Run::new(&nginx.https_url("/"))
        .args(args)
        .args(["--cacert", &path(&pki.ca)])
        .ok();
    assert_eq!((r.stats.sent, r.stats.requests), (300, 300));
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert!(r.stats.protocols.h2 >= 1, "{:?}", r.stats.protocols);
    assert_logged_h2(&nginx, 300);
    let _ = std::fs::remove_dir_all(&dir);
}

/// nginx sends GOAWAY after 50 requests on a connection: the streams above its last stream
/// id were never processed, so they are sent again on another connection; none is lost or
/// counted twice, and nginx's log holds exactly the count. One connection at a time (`-c 1`):
/// every connection but the last serves its 50 and gets its GOAWAY within the run, however
/// the host delays the requests (with more connections, a stall spreads the 400 requests
/// over connections that never reach 50).
#[test]
fn a_goaway_at_a_rate_loses_no_request() {
    if !have("nginx") {
        return;
    }
    let r = nginx_at_a_rate("keepalive_requests 50;", "4", "400", 400, &["-c", "1"]);
    assert!(r.stats.h2.goaways >= 7, "{:?}", r.stats.h2);
    assert!(r.stats.connections_opened >= 8, "{:?}", r.stats);
}

/// A server that allows 2 streams a connection: a due request never takes a third, so no
/// stream is refused, and the pool opens connections for the rest.
#[test]
fn the_servers_stream_limit_is_honoured_at_a_rate() {
    if !have("nginx") {
        return;
    }
    let r = nginx_at_a_rate("http2_max_concurrent_streams 2;", "8", "300", 300, &[]);
    assert_eq!(r.stats.h2.server_max_streams, 2);
    assert!(r.stats.h2.max_streams_in_flight <= 2, "{:?}", r.stats.h2);
}

/// A scenario's open load with `http2 = true` runs the same way: its rate sent over h2c, and
/// every request the reference backend served arrived as HTTP/2.
#[test]
fn a_scenario_open_load_with_http2_sends_its_rate_as_h2() {
    let _machine = crate::support::measuring();
    let server = backend();
    let addr = server.local_addr().to_string();
    let dir = tempdir("bench-h2-open");
    let url = format!("http://{addr}/");
    let keys = "model = \"open\"\nrate = [200]\nmax_connections = 4\nhttp2 = true\nstreams = 4\n";
    let run = crate::h2_load::bench_round(&dir, &url, &addr, keys);
    assert_eq!(run.config.http2_streams, Some(4));
    let s = &run.stats;
    assert_eq!(s.scheduled, Some(200));
    assert!((198..=202).contains(&s.sent), "sent {}", s.sent);
    assert_eq!(s.errors.total(), 0, "{:?}", s.error_reasons);
    // The pool opened before the window: its connections are counted when the window uses them.
    assert!(
        s.protocols.h2 >= 1,
        "the protocol negotiated: {:?}",
        s.protocols
    );
    assert_eq!(s.connections_opened, s.protocols.h2);
    let served = server.stats();
    assert_eq!(served.h2, served.total, "all of it HTTP/2: {served:?}");
    assert!((s.requests..=s.sent).contains(&served.h2), "{served:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `find-max --http2` steps through rates in the open model over HTTP/2: each step's run says
/// HTTP/2 with its streams, and the backend saw only HTTP/2 requests.
#[test]
fn find_max_over_http2_runs_its_steps_as_h2() {
    let _machine = crate::support::loading();
    let server = backend();
    let dir = tempdir("find-max-h2");
    let args = [
        "--http2",
        "--streams",
        "4",
        "--slo",
        "p99<500ms",
        "--start-rate",
        "100",
        "--max-rate",
        "200",
        "--step-duration",
        "1s",
        "--max-steps",
        "2",
        "--recovery-timeout",
        "1s",
    ];
    let url = format!("http://{}/", server.local_addr());
    let (out, saved) = crate::find_max::find_max(&url, &args, &dir.join("fm.json"));
    let saved = saved.unwrap_or_else(|| panic!("{:?}", crate::support::text(&out)));
    assert!(!saved.steps.is_empty());
    for step in &saved.steps {
        assert_eq!(step.run.config.http2_streams, Some(4));
        assert!(step.run.stats.protocols.h2 >= 1, "{:?}", step.run.stats);
        assert_eq!(step.run.stats.errors.total(), 0);
    }
    let served = server.stats();
    assert_eq!(served.h2, served.total, "all of it HTTP/2: {served:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
