//! `--pipeline N` end to end (docs/transport.md, "HTTP/1.1 pipelining"): against the
//! reference backend, whose `/stats` counts what it served, our count must equal its count,
//! per request of a mix too (with a 404 and a HEAD among them, whose bodyless answers must
//! not throw the reading of the responses behind them off); against a real nginx that closes
//! each connection after 100 requests (`keepalive_requests 100`) while requests are still
//! pipelined behind the 100th, no request is lost or counted twice (nginx's access log ==
//! ours). Every report says the run was pipelined; bad combinations exit 2 in one line.

use crate::support::nginx::Nginx;
use crate::support::{bin, have, text, Run};
use loadbench_upstream::{Server, ServerConfig};

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

#[test]
fn pipelined_requests_match_the_backends_count() {
    let server = backend();
    let url = format!("http://{}/", server.local_addr());
    let r = Run::new(&url)
        .args(["-n", "3000", "-c", "4", "-t", "2", "--pipeline", "16"])
        .ok();
    assert_eq!(r.stats.requests, 3000);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(server.stats().route("/"), 3000, "/stats agrees");
    assert_eq!(r.stats.sent, 3000);
    assert_eq!(r.stats.connections_opened, 4, "one connection each, kept");
    assert_eq!(r.config.pipeline, 16, "the result records the depth");
}

#[test]
fn a_pipelined_mix_with_a_404_and_a_head_counts_each_request_right() {
    let server = backend();
    let b = format!("http://{}", server.local_addr());
    let r = Run::without_url()
        .args(["-u", &format!("{b}/ weight=3"), "-u", &format!("{b}/nope")])
        .args([
            "-u",
            &format!("HEAD {b}/json"),
            "-u",
            &format!("{b}/bytes/3000"),
        ])
        .args(["-n", "2000", "-c", "4", "-t", "2", "--pipeline", "16"])
        .ok();
    assert_eq!(r.stats.requests, 2000);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    let stats = server.stats();
    let e = &r.stats.endpoints;
    assert_eq!(e[0].requests, stats.route("/"));
    assert_eq!(e[1].requests, stats.route("unmatched"));
    assert_eq!(e[2].requests, stats.route("/json"));
    assert_eq!(e[3].requests, stats.route("/bytes"));
    assert_eq!(stats.total, 2000);
    let only = |i: usize, code: u16| {
        assert_eq!(e[i].status.0.get(&code), Some(&e[i].requests), "{i}");
    };
    only(0, 200);
    only(1, 404);
    only(2, 200);
    only(3, 200);
}

#[test]
fn nginx_closing_mid_pipeline_loses_and_doubles_no_request() {
    if !have("nginx") {
        eprintln!("skipped: nginx is not installed");
        return;
    }
    // A server-level keepalive_requests overrides the helper's http-level one.
    let nginx = Nginx::start("keepalive_requests 100;");
    let r = Run::new(&nginx.url("/"))
        .args(["-n", "2000", "-c", "4", "-t", "2", "--pipeline", "16"])
        .ok();
    assert_eq!(r.stats.requests, 2000);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(nginx.logged_requests(), 2000, "nginx's log == ours");
    assert_eq!(r.stats.sent, 2000, "a resent request is counted once");
    assert!(
        r.stats.pipeline_resent > 0,
        "requests behind the 100th were resent"
    );
    assert!(r.stats.connections_opened >= 20, "a connection per 100");
}

#[test]
fn every_report_says_the_run_was_pipelined() {
    let server = backend();
    let url = format!("http://{}/", server.local_addr());
    // The closed model, and the open one (docs/transport.md: pipelining at a rate).
    for (format, model) in ["text", "md", "html"]
        .into_iter()
        .flat_map(|f| [(f, ["-c", "1"]), (f, ["--rate", "500"])])
    {
        let out = bin()
            .args(["run", &url, "-n", "64", "--pipeline", "8"])
            .args(model)
            .args(["-o", format])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{format}: {stderr}");
        assert!(stdout.contains("pipelined ×8"), "{format}: {stdout}");
    }
    let json = bin()
        .args(["run", &url, "-n", "8", "-c", "1", "-o", "json"])
        .output()
        .unwrap();
    let (stdout, _) = text(&json);
    assert!(
        !stdout.contains("\"pipeline\""),
        "no pipelining, no field: {stdout}"
    );
}

#[test]
fn bad_pipeline_combinations_exit_2_in_one_line_naming_the_fix() {
    let server = backend();
    let url = format!("http://{}/", server.local_addr());
    for (args, fix) in [
        (
            vec!["-n", "10", "-c", "1", "--pipeline", "0"],
            "give 1 to 1024",
        ),
        (
            vec![
                "-d",
                "1s",
                "--rate",
                "100",
                "--pipeline",
                "4",
                "--no-keepalive",
            ],
            "leave out --no-keepalive",
        ),
        (
            vec!["-n", "10", "-c", "1", "--pipeline", "4", "--no-keepalive"],
            "leave out --no-keepalive",
        ),
    ] {
        let ran = Run::new(&url).args(&args).json();
        let (_, stderr) = ran.text();
        assert_eq!(ran.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(fix), "{stderr}");
    }
    assert_eq!(server.stats().total, 0, "nothing was sent");
}
