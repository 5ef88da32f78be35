//! The reference backend driven by `loadbench run`: every route and fault, checked on both sides
//! (what loadbench reports, and what the backend's `/stats` counted). Also `loadbench serve` and
//! `loadbench demo` as processes.

use crate::support::{bin, tempdir, text, Ran, Run};
use loadbench_model::{ErrorKind, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

/// `loadbench run` against `path` on `server`, whatever its exit code.
fn load(server: &Server, path: &str, extra: &[&str]) -> Ran {
    Run::new(&format!("http://{}{path}", server.local_addr()))
        .args(extra)
        .json()
}

/// Asserts a route answered `n` times with `status`, and the backend counted `n` under `route`.
fn check_ok(server: &Server, path: &str, route: &str, status: u16, extra: &[&str]) -> RunResult {
    let before = server.stats().route(route);
    let ran = load(server, path, extra);
    assert!(ran.out.status.success(), "{path}: {:?}", ran.text());
    let r = ran.result();
    assert_eq!(r.stats.errors.total(), 0, "{path}: {:?}", r.stats.errors);
    assert_eq!(
        r.stats.status.0.get(&status),
        Some(&r.stats.requests),
        "{path}"
    );
    assert_eq!(
        server.stats().route(route) - before,
        r.stats.requests,
        "{path}: /stats agrees"
    );
    r
}

#[test]
fn plain_routes_answer_and_are_counted() {
    let server = backend();
    let r = check_ok(&server, "/", "/", 200, &["-n", "500", "-c", "4"]);
    assert_eq!(r.stats.requests, 500);
    let r = check_ok(&server, "/json", "/json", 200, &["-n", "300", "-c", "3"]);
    assert_eq!(r.stats.requests, 300);
    let r = check_ok(
        &server,
        "/bytes/1KiB",
        "/bytes",
        200,
        &["-n", "100", "-c", "2"],
    );
    assert!(r.stats.bytes_read >= 100 * 1024, "{}", r.stats.bytes_read);
    let r = check_ok(
        &server,
        "/chunked/10k",
        "/chunked",
        200,
        &["-n", "100", "-c", "2"],
    );
    assert!(r.stats.bytes_read >= 100 * 10_000);
    assert_eq!(
        r.stats.connections_opened, 2,
        "chunked responses keep the connection"
    );
    check_ok(
        &server,
        "/status/503",
        "/status",
        503,
        &["-n", "50", "-c", "2"],
    );
    let body = ["-n", "20", "-c", "1", "-m", "POST", "--body", "ping"];
    check_ok(&server, "/echo", "/echo", 200, &body);
}

#[test]
fn stats_route_counts_and_resets_through_loadbench() {
    let server = backend();
    let base = format!("http://{}", server.local_addr());
    Run::new(&format!("{base}/json"))
        .args(["-n", "30", "-c", "3"])
        .ok();
    let r = Run::new(&format!("{base}/stats"))
        .args(["-n", "5", "-c", "1"])
        .ok();
    assert_eq!(r.stats.status.0.get(&200), Some(&5));
    assert_eq!(
        server.stats().route("/json"),
        30,
        "/stats itself is not counted"
    );
    let r = Run::new(&format!("{base}/stats/reset"))
        .args(["-n", "1", "-c", "1", "-m", "POST"])
        .ok();
    assert_eq!(r.stats.status.0.get(&200), Some(&1));
    assert_eq!(
        server.stats().total,
        0,
        "POST /stats/reset zeroes the counters"
    );
}

#[test]
fn delays_show_in_latency() {
    let server = backend();
    let r = check_ok(
        &server,
        "/delay/50ms",
        "/delay",
        200,
        &["-n", "20", "-c", "4"],
    );
    assert!(r.stats.latency.hist.percentile_ns(50.0) >= 50_000_000);
    let r = check_ok(
        &server,
        "/json?delay=30ms",
        "/json",
        200,
        &["-n", "20", "-c", "4"],
    );
    assert!(r.stats.latency.hist.min_ns() >= 30_000_000);
    let r = check_ok(
        &server,
        "/?delay=uniform:10ms..20ms",
        "/",
        200,
        &["-n", "40", "-c", "4"],
    );
    assert!(r.stats.latency.hist.min_ns() >= 10_000_000);
    assert!(r.stats.latency.hist.percentile_ns(50.0) < 40_000_000);
}

/// Each fault gives its own error class, the run goes on, and the backend counted every hit.
#[test]
fn faults_are_classified() {
    let server = backend();
    let cases = [
        ("/fault/reset", ErrorKind::Reset),
        ("/fault/close", ErrorKind::ClosedBeforeResponseComplete),
        ("/fault/malformed", ErrorKind::MalformedResponse),
        ("/fault/short", ErrorKind::ClosedBeforeResponseComplete),
    ];
    for (path, kind) in cases {
        let ran = load(&server, path, &["-n", "40", "-c", "4"]);
        assert_eq!(ran.code(), Some(1), "{path}: every request failed");
        let r = ran.result();
        assert_eq!(r.stats.errors.get(kind), 40, "{path}: {:?}", r.stats.errors);
        assert_eq!(server.stats().route(path), 40, "{path}");
    }
    let started = Instant::now();
    let r = load(
        &server,
        "/fault/stall",
        &["-n", "4", "-c", "2", "--timeout", "300ms"],
    )
    .result();
    assert_eq!(r.stats.errors.get(ErrorKind::ReadTimeout), 4);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn slow_bodies_take_their_time() {
    let server = backend();
    let r = check_ok(
        &server,
        "/fault/slow?bps=2000&size=1000",
        "/fault/slow",
        200,
        &["-n", "2", "-c", "2"],
    );
    assert!(
        r.stats.latency.hist.min_ns() >= 400_000_000,
        "{:?}",
        r.stats.latency.hist
    );
}

#[test]
fn fail_rate_turns_a_share_into_500s() {
    let server = Server::start(ServerConfig {
        fail_rate: 0.25,
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let ran = load(&server, "/", &["-n", "2000", "-c", "4"]);
    assert!(ran.out.status.success());
    let r = ran.result();
    let failed = *r.stats.status.0.get(&500).unwrap_or(&0) as f64 / 2000.0;
    assert!((0.20..0.30).contains(&failed), "{failed}");
}

#[test]
fn serve_runs_until_sigterm_and_reports_address_in_use() {
    let port = crate::support::free_port();
    let listen = format!("127.0.0.1:{port}");
    let flags = [
        "--threads",
        "1",
        "--body-size",
        "2KiB",
        "--status",
        "201",
        "--delay",
        "5ms",
    ];
    let mut child = bin()
        .args(["serve", "--listen", &listen])
        .args(flags)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains(&listen), "{line}");
    let r = Run::new(&format!("http://{listen}/json"))
        .args(["-n", "200", "-c", "2"])
        .ok();
    assert_eq!(r.stats.requests, 200);
    assert!(
        r.stats.latency.hist.min_ns() >= 5_000_000,
        "--delay applies to every route"
    );
    let r = Run::new(&format!("http://{listen}/"))
        .args(["-n", "20", "-c", "2"])
        .ok();
    assert_eq!(
        r.stats.status.0.get(&201),
        Some(&20),
        "--status sets the status of /"
    );
    assert!(
        r.stats.bytes_read >= 20 * 2048,
        "--body-size sets the body of /"
    );
    let clash = bin().args(["serve", "--listen", &listen]).output().unwrap();
    assert_eq!(clash.status.code(), Some(2));
    assert!(
        text(&clash).1.contains("already in use"),
        "{:?}",
        text(&clash)
    );
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid has no memory-safety implications.
    unsafe {
        libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// One GET with `Connection: close` on a new connection; the whole response as text.
fn raw_get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serve_keep_abandoned_finishes_requests_whose_client_left() {
    let listen = format!("127.0.0.1:{}", crate::support::free_port());
    let flags = [
        "--threads",
        "1",
        "--max-concurrency",
        "1",
        "--delay",
        "100ms",
    ];
    let mut child = bin()
        .args(["serve", "--listen", &listen, "--keep-abandoned"])
        .args(flags)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let sent = Instant::now();
    let mut leaving = TcpStream::connect(&listen).unwrap();
    leaving
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !raw_get(&listen, "/stats").contains("\"in_service\":1") {
        assert!(
            Instant::now() < deadline,
            "the first request never took its slot"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(leaving);
    let answer = raw_get(&listen, "/");
    let took = sent.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The request of the client that left still held the only slot for its 100ms.
    assert!(took >= Duration::from_millis(200), "{took:?}");
    let stats = raw_get(&listen, "/stats");
    assert!(stats.contains("\"abandoned_completed\":1"), "{stats}");
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid has no memory-safety implications.
    unsafe {
        libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGTERM);
    }
    assert!(child.wait().unwrap().success());
}

#[test]
fn serve_rejects_bad_flags_with_one_line() {
    for (args, needle) in [
        (vec!["serve", "--listen", "nowhere"], "--listen"),
        (vec!["serve", "--delay", "soon"], "delay"),
        (vec!["serve", "--body-size", "huge"], "size"),
    ] {
        let out = bin().args(&args).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.to_lowercase().contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn demo_runs_the_quickstart_scenario_with_no_setup_and_saves_the_run_folder() {
    let _machine = crate::support::loading();
    let dir = tempdir("demo");
    let out = bin()
        .arg("demo")
        .arg("--quiet")
        .current_dir(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for needle in [
        "load plaintext",
        "load delay-20ms",
        "direct  c=50",
        "run folder",
    ] {
        assert!(stdout.contains(needle), "missing {needle}:\n{stdout}");
    }
    let folder = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(folder.join("report.html").is_file());
    let text = std::fs::read_to_string(folder.join("result.json")).unwrap();
    let r = loadbench_model::BenchResult::from_json(&text).unwrap();
    let with_nginx = r.targets.iter().any(|t| t.name == "nginx");
    assert_eq!(
        with_nginx,
        std::path::Path::new("/usr/sbin/nginx").is_file()
    );
    assert_eq!(r.steps_done, r.steps_planned);
    assert_eq!(r.rounds.len(), if with_nginx { 12 } else { 6 });
    for round in &r.rounds {
        let run = round.result.as_ref().expect("every round has a result");
        assert!(run.stats.requests > 0, "{}", round.target);
        assert_eq!(run.stats.errors.total(), 0, "{}", round.target);
    }
    if with_nginx {
        assert!(stdout.contains("than direct"), "relative speed: {stdout}");
    }
}
