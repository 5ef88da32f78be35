//! `--pipeline N` in the open model (docs/transport.md, "HTTP/1.1 pipelining"): a due request
//! goes to a connection with fewer than N unanswered, and its latency counts from its intended
//! time. Against nginx, whose access log marks a request read behind another in the same
//! buffer (`$pipe` = `p`), the count equals ours and pipelined requests really arrived;
//! against the reference backend, a slow request holds up the fast ones pipelined behind it
//! and their latency shows it; a server that closes every connection after K requests loses
//! nothing.

use crate::support::nginx::Nginx;
use crate::support::{bin, have, text, Run};
use loadbench_model::RunResult;
use loadbench_upstream::{Server, ServerConfig};

/// Every request sent was completed, failed or abandoned at the end: none vanished.
fn assert_accounted(r: &RunResult) {
    let s = &r.stats;
    assert_eq!(s.requests + s.errors.total() + s.abandoned, s.sent, "{s:?}");
}

/// `--pipeline 4 --rate 1000 -c 2` for `length` (`-d 2s`, `-n 2000`) against the nginx
/// `start` gives (`None`: nginx is not installed, the test is skipped). One
/// worker and a 4 ms send window: each wake-up places about four due requests on the two
/// connections, two each, written in one `write` per connection (nginx's `$pipe` is `p` for
/// the second of each pair). With a 1 ms window, a fast server answers each request before
/// the next is due, and nothing would need pipelining.
fn at_rate(start: impl FnOnce() -> Nginx, length: [&str; 2]) -> Option<(Nginx, RunResult)> {
    if !have("nginx") {
        eprintln!("skipped: nginx is not installed");
        return None;
    }
    let _machine = crate::support::measuring();
    let nginx = start();
    let r = Run::new(&nginx.url("/"))
        .args(["--pipeline", "4", "--rate", "1000", "-c", "2"])
        .args(["-t", "1", "--send-window", "4ms"])
        .args(length)
        .ok();
    Some((nginx, r))
}

#[test]
fn pipelined_at_a_rate_nginx_counts_ours_and_saw_pipelined_requests() {
    let log = || Nginx::start_logging("'$connection $connection_requests $pipe'", "", "");
    let Some((nginx, r)) = at_rate(log, ["-d", "2s"]) else {
        return;
    };
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    // The rate is sent in full unless the run itself recorded why not: a host it found busy
    // (the generator or nginx off a CPU while requests fell due), or time with both
    // connections 4 deep while a request was due (it then waits in the generator, and those
    // still waiting at the end are not sent).
    let achieved = s.sent as f64 / 2000.0;
    let held_back = r.why.busy_host().is_some() || s.generator.pool_full_us > 0;
    assert!(
        achieved <= 1.01 && (held_back || achieved >= 0.99),
        "sent {} of 2000, pool full {} µs, {:#?}",
        s.sent,
        s.generator.pool_full_us,
        r.why
    );
    assert_eq!(s.scheduled, Some(2000), "{s:?}");
    assert!(
        (s.sent + s.waiting).abs_diff(2000) <= 2,
        "every due request sent or left waiting: {s:?}"
    );
    assert_accounted(&r);
    assert_eq!(nginx.logged_requests(), s.sent, "nginx's log == ours");
    assert!(s.connections_opened <= 2, "{}", s.connections_opened);
    let lines = nginx.log_lines();
    let conns: std::collections::BTreeSet<&str> =
        lines.iter().filter_map(|l| l.split(' ').next()).collect();
    assert!(conns.len() <= 2, "nginx saw {} connections", conns.len());
    let piped = lines.iter().filter(|l| l.ends_with(" p")).count();
    assert!(
        piped as u64 >= s.sent / 4,
        "{piped} of {} pipelined at nginx",
        s.sent
    );
    assert_eq!(r.config.pipeline, 4, "the result records the depth");
}

#[test]
fn a_slow_request_holds_up_those_pipelined_behind_it_and_their_latency_shows_it() {
    let _machine = crate::support::measuring();
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let b = format!("http://{}", server.local_addr());
    // One request in 50 takes 100 ms; one connection, 4 deep, at 200/s: the three requests
    // placed behind a slow one (due 5, 10 and 15 ms after it) wait for its answer.
    let r = Run::without_url()
        .args([
            "-u",
            &format!("{b}/ weight=49"),
            "-u",
            &format!("{b}/delay/100ms"),
        ])
        .args(["--pipeline", "4", "--rate", "200", "-n", "400", "-c", "1"])
        .args(["-t", "1"])
        .ok();
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 400, "an -n run ends with its last answer");
    let stats = server.stats();
    let e = &s.endpoints;
    assert_eq!(
        e[0].requests,
        stats.route("/"),
        "every fast request counted"
    );
    assert_eq!(e[1].requests, stats.route("/delay"), "every slow one too");
    assert_eq!(s.requests, stats.total);
    assert!(e[1].requests >= 5, "{} slow requests", e[1].requests);
    assert!(s.connections_opened <= 1, "{}", s.connections_opened);
    let fast = &e[0].latency.hist;
    let ms = |ns: u64| ns as f64 / 1e6;
    // The fast route alone answers in well under a millisecond; behind a slow one it waits
    // for the rest of the 100 ms (at most 15 ms of which passed before it was due).
    assert!(
        ms(fast.max_ns()) >= 85.0,
        "fast max {} ms",
        ms(fast.max_ns())
    );
    let p99 = ms(fast.percentile_ns(99.0));
    assert!(p99 >= 75.0, "fast p99 {p99} ms: the wait is hidden");
}

#[test]
fn nginx_closing_after_k_requests_at_a_rate_loses_and_doubles_no_request() {
    let closing = || Nginx::start("keepalive_requests 10;");
    let Some((nginx, r)) = at_rate(closing, ["-n", "2000"]) else {
        return;
    };
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 2000, "an -n run ends with its last answer");
    assert_eq!(nginx.logged_requests(), 2000, "nginx's log == ours");
    assert_eq!(s.sent, 2000, "a resent request is counted once");
    assert!(
        s.pipeline_resent > 0,
        "requests behind the 10th were resent"
    );
    assert!(
        s.connections_opened >= 200,
        "a connection per 10: {}",
        s.connections_opened
    );
}

#[test]
fn find_max_pipelines_each_step_and_says_so() {
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let url = format!("http://{}/", server.local_addr());
    let out = bin()
        .args(["find-max", &url, "--pipeline", "4", "--slo", "p99<1s"])
        .args([
            "--start-rate",
            "100",
            "--max-rate",
            "100",
            "--max-steps",
            "1",
        ])
        .args(["--step-duration", "1s", "--warmup", "0s", "-q"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("pipelined ×4"), "{stdout}");
    assert!(server.stats().total >= 100, "{}", server.stats().total);
}
