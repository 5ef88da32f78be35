//! The fields users of ab, hey and berf read, end to end against the reference backend: ab's
//! Document Length and Keep-Alive requests, the per-user time per request, berf's per-status
//! rate, and that the text report shows them below the headline.

use crate::support::Run;
use loadbench_model::RunResult;
use loadbench_report::{text::TextRenderer, RenderOptions, Renderer};
use loadbench_upstream::{Server, ServerConfig};

fn backend(fail_rate: f64) -> Server {
    Server::start(ServerConfig {
        fail_rate,
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts")
}

fn load(server: &Server, path: &str, args: &[&str]) -> RunResult {
    Run::new(&format!("http://{}{path}", server.local_addr()))
        .args(args)
        .ok()
}

fn text(r: &RunResult) -> String {
    let mut out = Vec::new();
    TextRenderer
        .render(r, &RenderOptions::default(), &mut out)
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn document_length_is_the_body_size_and_keepalive_requests_reuse_connections() {
    let server = backend(0.0);
    for path in ["/bytes/1234", "/chunked/1234"] {
        let r = load(&server, path, &["-n", "300", "-c", "4", "-t", "1"]);
        let s = &r.stats;
        assert_eq!(s.requests, 300, "{path}");
        assert_eq!((s.body.min, s.body.max), (1234, 1234), "{path}");
        assert_eq!(s.body.total, 300 * 1234, "{path}");
        assert_eq!(r.summary.as_ref().unwrap().body_bytes_mean, Some(1234.0));
        assert_eq!(s.keepalive_requests, s.requests - s.connections_opened);
        assert!(s.keepalive_requests >= 296, "{path}: {s:?}");
        let report = text(&r);
        assert!(report.contains("Document length:"), "{report}");
        assert!(report.contains("1234 bytes"), "{report}");
        assert!(report.contains("per connection"), "{report}");
    }
}

#[test]
fn without_keepalive_no_request_reuses_a_connection() {
    let server = backend(0.0);
    let r = load(&server, "/", &["-n", "50", "-c", "2", "--no-keepalive"]);
    assert_eq!(r.stats.requests, 50);
    assert_eq!(r.stats.keepalive_requests, 0);
    assert_eq!(r.stats.connections_opened, 50);
}

#[test]
fn per_status_rates_match_the_counts_of_a_backend_failing_a_quarter() {
    let server = backend(0.25);
    let r = load(&server, "/", &["-n", "2000", "-c", "4"]);
    let (s, sum) = (&r.stats, r.summary.as_ref().unwrap());
    let failed = s.status.0[&500];
    assert_eq!(s.status.0[&200] + failed, 2000);
    assert!((400..600).contains(&failed), "{failed}");
    for (code, n) in &s.status.0 {
        let rate = sum.status_per_sec[code];
        assert!((rate * s.elapsed_secs() - *n as f64).abs() < 1e-6 * *n as f64 + 1e-9);
    }
    let report = text(&r);
    assert!(
        report.contains(&format!("[500] {failed:>4} responses")),
        "{report}"
    );
    assert!(report.contains(&format!("{:.2}/s", sum.status_per_sec[&500])));
}

#[test]
fn time_to_first_byte_is_recorded_per_request_within_the_total() {
    let server = backend(0.0);
    let r = load(&server, "/bytes/100k", &["-n", "200", "-c", "2"]);
    let s = &r.stats;
    assert_eq!(s.first_byte.hist.len(), s.requests);
    assert!(s.first_byte.hist.max_ns() <= s.latency.hist.max_ns());
    assert!(s.first_byte.hist.mean_ns() <= s.latency.hist.mean_ns());
}

/// hey's split against a backend that waits 20 ms before answering: the wait phase carries the
/// delay, writing and reading a small request and response are small beside it, and the three
/// phases add up to no more than the latency.
#[test]
fn request_write_response_wait_and_read_split_the_latency_around_the_delay() {
    let server = backend(0.0);
    let r = load(&server, "/delay/20ms", &["-n", "40", "-c", "2", "-t", "1"]);
    let (s, p) = (&r.stats, &r.stats.phases);
    let ms = |ns: f64| ns / 1e6;
    assert_eq!(s.requests, 40);
    for h in [&p.write.hist, &p.wait.hist, &p.read.hist] {
        assert_eq!(h.len(), s.requests);
    }
    // Each request's write + wait spans the server's 20 ms (HDR keeps 3 significant digits:
    // at least 19.98 ms). A generator descheduled right after its write stamps the write's end
    // late, moving time from wait to write, so the bound is on the fastest wait plus the
    // slowest write, which holds on a loaded machine too.
    let (wait_min, write_max) = (p.wait.hist.min_ns() as f64, p.write.hist.max_ns() as f64);
    assert!(ms(wait_min + write_max) >= 19.98, "{p:?}");
    let (write, read) = (ms(p.write.hist.mean_ns()), ms(p.read.hist.mean_ns()));
    assert!(
        write < 2.0 && read < 2.0,
        "write {write} ms, read {read} ms"
    );
    let sum = write + ms(p.wait.hist.mean_ns()) + read;
    let latency = ms(s.latency.hist.mean_ns());
    assert!(
        sum <= latency * 1.002,
        "phases {sum} ms > latency {latency} ms"
    );
    let report = text(&r);
    for row in ["req write", "resp wait", "resp read"] {
        assert!(report.contains(row), "{report}");
    }
}
