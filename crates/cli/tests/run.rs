//! `loadbench run` end to end: the real binary against a real nginx and against small
//! in-process servers on port 0. Counts are checked on both sides. How the engine classifies
//! each way a server misbehaves is tested in-process in crates/engine/tests/connections.rs; here,
//! what the binary prints and exits with.

use crate::support::nginx::Nginx;
use crate::support::raw::{Mode, RawServer};
use crate::support::{bin, have, tempdir, text, Run};
use loadbench_model::ErrorKind;
use std::time::{Duration, Instant};

#[test]
fn request_count_matches_nginx_access_log_with_keepalive() {
    if !have("nginx") {
        return;
    }
    let nginx = Nginx::start("");
    let r = Run::new(&nginx.url("/"))
        .args(["-n", "3000", "-c", "20", "-t", "2"])
        .ok();
    assert_eq!(r.stats.requests, 3000);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.status.0.get(&200), Some(&3000));
    assert_eq!(
        r.stats.connections_opened, 20,
        "keep-alive reuses each connection"
    );
    assert_eq!(r.stats.latency.hist.len(), 3000);
    assert_eq!(nginx.logged_requests(), 3000);
    assert_eq!(r.stats.bytes_read, 3000 * (r.stats.bytes_read / 3000));
}

#[test]
fn request_count_matches_nginx_access_log_without_keepalive() {
    if !have("nginx") {
        return;
    }
    let nginx = Nginx::start("");
    let r = Run::new(&nginx.url("/"))
        .args(["-n", "500", "-c", "10", "--no-keepalive"])
        .ok();
    assert_eq!(r.stats.requests, 500);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(
        r.stats.connections_opened, 500,
        "a new connection for every request"
    );
    assert_eq!(r.stats.connect.hist.len(), 500);
    assert_eq!(nginx.logged_requests(), 500);
}

#[test]
fn request_count_matches_counting_server_in_process() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let r = Run::new(&server.url("/"))
        .args(["-n", "1234", "-c", "7", "-t", "2"])
        .ok();
    assert_eq!(r.stats.requests, 1234);
    assert_eq!(server.requests(), 1234);
    assert_eq!(r.stats.bytes_read, 1234 * 43);
}

#[test]
fn ipv6_literal_urls_work() {
    let Ok(server) = RawServer::start("[::1]:0", Mode::Count) else {
        eprintln!("skipping: no IPv6 loopback here");
        return;
    };
    let r = Run::new(&server.url("/"))
        .args(["-n", "100", "-c", "2"])
        .ok();
    assert_eq!(r.stats.requests, 100);
    assert_eq!(server.requests(), 100);
}

#[test]
fn timed_run_reports_rate_series_and_percentiles() {
    let _machine = crate::support::measuring();
    if !have("nginx") {
        return;
    }
    let nginx = Nginx::start("location = /missing { return 404; }");
    let ran = Run::new(&nginx.url("/missing"))
        .args(["-d", "2s", "-c", "4", "-t", "1"])
        .json();
    assert!(ran.out.status.success(), "{:?}", ran.text());
    let (stdout, _) = ran.text();
    let r = ran.result();
    for needle in ["Requests/sec", "99.9%", "[404]", "Latency", "connect"] {
        assert!(stdout.contains(needle), "missing {needle} in:\n{stdout}");
    }
    assert!(
        (1.9..2.6).contains(&r.stats.elapsed_secs()),
        "{}",
        r.stats.elapsed_secs()
    );
    assert_eq!(r.stats.series.0.len(), 2);
    let in_series: u64 = r.stats.series.0.iter().map(|p| p.requests).sum();
    assert_eq!(in_series, r.stats.requests);
    assert_eq!(r.stats.status.0.get(&404), Some(&r.stats.requests));
    assert!(r.stats.requests > 100);
    assert_eq!(r.config.connections, 4);
    assert!(!r.interrupted);
}

#[test]
fn warmup_traffic_is_sent_but_not_counted() {
    if !have("nginx") {
        return;
    }
    let nginx = Nginx::start("");
    let r = Run::new(&nginx.url("/"))
        .args(["-n", "200", "-c", "2", "--warmup", "300ms"])
        .ok();
    assert_eq!(r.stats.requests, 200);
    assert!(
        nginx.logged_requests() > 200,
        "warm-up requests reached the server"
    );
}

#[test]
fn method_headers_and_body_reach_the_server() {
    if !have("nginx") {
        return;
    }
    let nginx = Nginx::start("");
    let r = Run::new(&nginx.url("/"))
        .args(["-n", "10", "-c", "1", "-m", "POST", "--body", "{\"a\":1}"])
        .args(["-H", "Host: example.test", "-H", "X-Test: yes"])
        .ok();
    assert_eq!(r.stats.requests, 10);
    let lines = nginx.log_lines();
    assert_eq!(lines.len(), 10);
    assert!(lines[0].contains("POST / HTTP/1.1"), "{}", lines[0]);
    let r = Run::new(&nginx.url("/"))
        .args(["-n", "5", "-c", "1", "-m", "HEAD"])
        .ok();
    assert_eq!(r.stats.requests, 5, "HEAD responses end after the headers");
}

/// Every request failing, however the server failed them (the engine's tests check each is
/// classified right): exit code 1, one line saying so, and the result still saved with every
/// failure in it.
#[test]
fn a_run_where_every_request_failed_exits_1_and_keeps_its_result() {
    for (mode, n) in [
        (Mode::Stall, 4),
        (Mode::Malformed, 20),
        (Mode::Truncated, 20),
        (Mode::Reset, 20),
        (Mode::Close, 20),
    ] {
        let server = RawServer::start("127.0.0.1:0", mode).unwrap();
        let ran = Run::new(&server.url("/"))
            .args(["-n", &n.to_string(), "-c", "2", "--timeout", "300ms"])
            .json();
        let (_, stderr) = ran.text();
        assert_eq!(ran.code(), Some(1), "{mode:?}: {stderr}");
        assert!(
            stderr.contains("every request failed"),
            "{mode:?}: {stderr}"
        );
        let r = ran.saved.expect("a failed run still saves its result");
        assert_eq!(r.stats.errors.total(), n, "{mode:?}: {:?}", r.stats.errors);
        assert_eq!(r.stats.requests, 0, "{mode:?}");
    }
}

/// No silent zero (issue 33): a run that completed nothing and counted no error (every request
/// still in flight at the end: a server that never answers within the run) exits 1 with one
/// line saying why, in the closed and the open model, and still saves its result.
#[test]
fn a_run_that_completed_nothing_without_errors_exits_1_and_says_why() {
    let server = RawServer::start("127.0.0.1:0", Mode::Stall).unwrap();
    let closed = ["-c", "2", "-d", "1s", "--timeout", "10s"];
    let open = ["--rate", "10", "-d", "1s", "--timeout", "10s"];
    for args in [&closed[..], &open[..]] {
        let ran = Run::new(&server.url("/")).args(args).json();
        let (_, stderr) = ran.text();
        assert_eq!(ran.code(), Some(1), "{args:?}: {stderr}");
        let why: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(why.len(), 1, "{args:?}: {stderr}");
        assert!(why[0].contains("was answered"), "{args:?}: {stderr}");
        let r = ran.saved.expect("the result is still saved");
        assert_eq!(r.stats.requests, 0, "{args:?}");
        assert!(r.stats.sent > 0 && r.stats.errors.total() == 0, "{args:?}");
    }
}

#[test]
fn target_dying_mid_run_is_counted_not_fatal() {
    let _machine = crate::support::loading();
    if !have("nginx") {
        return;
    }
    let mut nginx = Some(Nginx::start(""));
    let url = nginx.as_ref().unwrap().url("/");
    let dir = tempdir("dying");
    let save = dir.join("r.json");
    let child = bin()
        .args([
            "run", &url, "-d", "2s", "-c", "4", "-t", "1", "--quiet", "--save",
        ])
        .arg(&save)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    nginx.take();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "some requests succeeded, so the run succeeds"
    );
    let r = loadbench_model::RunResult::from_json(&std::fs::read_to_string(save).unwrap()).unwrap();
    assert!(r.stats.requests > 0);
    let refused = r.stats.errors.get(ErrorKind::ConnectRefused);
    assert!(refused > 0, "{:?}", r.stats.errors);
}

/// Ctrl-C ends a 60 s run as soon as the run sees it (within a second on an idle machine;
/// the test allows 15 s, for a loaded one: what it checks is that the run stops at the signal,
/// not when its duration ends) and keeps what was measured up to the signal. The signal is
/// sent once the backend has answered, so the run has started however slow the machine.
#[test]
fn ctrl_c_stops_the_run_at_the_signal_and_keeps_the_result() {
    use loadbench_upstream::parse_delay;
    use loadbench_upstream::{Server, ServerConfig};
    // 10 ms answers: 4 connections make 400 req/s, a light load that needs no machine lock.
    let server = Server::start(ServerConfig {
        threads: 1,
        delay: Some(parse_delay("10ms").unwrap()),
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts");
    let dir = tempdir("sigint");
    let save = dir.join("r.json");
    let spawned = Instant::now();
    let child = bin()
        .args([
            "run",
            &format!("http://{}/", server.local_addr()),
            "-d",
            "60s",
            "-c",
            "4",
            "-t",
            "1",
            "--quiet",
            "--save",
        ])
        .arg(&save)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while server.stats().total == 0 {
        assert!(
            spawned.elapsed() < Duration::from_secs(50),
            "no request reached the backend"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let first = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    let pid = i32::try_from(child.id()).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid has no memory-safety implications.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stopped = sent.elapsed();
    assert!(stopped < Duration::from_secs(15), "stopped in {stopped:?}");
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    let r = loadbench_model::RunResult::from_json(&std::fs::read_to_string(save).unwrap()).unwrap();
    assert!(r.interrupted);
    assert!(r.stats.requests > 0);
    // The window ran from before the first answer to the signal or a little after, no further.
    let window = r.stats.elapsed_secs();
    // (10 ms of slack for the result's rounding.)
    let least = (sent - first).as_secs_f64() - 0.01;
    let most = spawned.elapsed().as_secs_f64();
    assert!(
        (least..=most).contains(&window),
        "window {window} s, signal {least} s after the first answer, exit {most} s after the start"
    );
}

#[test]
fn json_and_csv_outputs_on_stdout() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let out = bin()
        .args([
            "run",
            &server.url("/"),
            "-n",
            "50",
            "-c",
            "2",
            "-o",
            "json",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let r = loadbench_model::RunResult::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(r.stats.requests, 50);
    let out = bin()
        .args([
            "run",
            &server.url("/"),
            "-n",
            "50",
            "-c",
            "2",
            "-o",
            "csv",
            "-q",
        ])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
}

/// Each mistake: exit code 2, one line on stderr that names the fix, no panic.
#[test]
fn bad_input_gives_one_clear_line_and_exit_code_2() {
    let closed = format!("http://127.0.0.1:{}/", crate::support::free_port());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "not a url"], "invalid URL"),
        (vec!["run", "ftp://127.0.0.1/"], "unknown scheme"),
        (
            vec!["run", "http://no-such-host.invalid/"],
            "cannot resolve host",
        ),
        (vec!["run", &closed], "nothing is listening"),
        (vec!["run", "http://127.0.0.1/", "-c", "0"], "-c 1 or more"),
        (
            vec!["run", "http://127.0.0.1/", "-n", "5", "-c", "10"],
            "raise -n or lower -c",
        ),
        (
            vec!["run", "http://127.0.0.1/", "--body-file", "/nonexistent/x"],
            "cannot read --body-file",
        ),
        (
            vec!["run", "http://127.0.0.1/", "-d", "1s", "-n", "100"],
            "use one of them",
        ),
        (
            vec!["run", "http://127.0.0.1/", "-d", "soon"],
            "not a duration",
        ),
        (
            vec!["run", "http://127.0.0.1/", "-o", "xml"],
            "unknown format",
        ),
        (
            vec!["run", "http://127.0.0.1/", "--percentiles", "120"],
            "--percentiles",
        ),
        (
            vec!["run", "http://127.0.0.1/", "-H", "broken"],
            "Name: value",
        ),
        (
            vec!["run", "http://127.0.0.1/", "--frobnicate"],
            "--frobnicate",
        ),
        (vec!["run", "http://127.0.0.1/", "-c", "many"], "-c"),
    ];
    assert_one_line_refusals(cases);
}

/// TLS and transport flag mistakes: the same one line and exit code 2.
#[test]
fn transport_flag_mistakes_give_one_clear_line_and_exit_code_2() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "http://127.0.0.1/", "--cacert", "ca.pem"],
            "https:// URLs only",
        ),
        (
            vec![
                "run",
                "https://127.0.0.1/",
                "--cacert",
                "/nonexistent/ca.pem",
            ],
            "cannot read --cacert",
        ),
        (
            vec!["run", "http://127.0.0.1/", "--connect-to", "a:1:b"],
            "HOST1:PORT1:HOST2:PORT2",
        ),
    ];
    assert_one_line_refusals(cases);
}

/// Each case exits 2 with one line on stderr holding its needle, and no panic.
fn assert_one_line_refusals(cases: Vec<(Vec<&str>, &str)>) {
    for (args, needle) in cases {
        let out = bin().args(&args).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?}: one line, got:\n{stderr}"
        );
        assert!(
            stderr.contains(needle),
            "{args:?}: expected '{needle}' in: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Above fs.nr_open, which not even root may pass: the refusal, whoever runs it.
#[test]
fn fd_limit_refusal_names_the_users_c_and_both_limits() {
    if !have("prlimit") {
        return;
    }
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .map_or(1 << 20, |t| t.trim().parse().unwrap_or(1 << 20));
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let out = std::process::Command::new("prlimit")
        .arg("--nofile=256:512")
        .arg(env!("CARGO_BIN_EXE_loadbench"))
        .args(["run", &server.url("/"), "-c", &nr_open.to_string()])
        .args(["-d", "1s", "--quiet"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let needs = format!("-c {nr_open} needs about {}", nr_open + 64);
    assert!(stderr.contains(&needs), "{stderr}");
    assert!(stderr.contains("limit is 256 (hard limit 512)"), "{stderr}");
    assert!(stderr.contains("use -c 448 or fewer"), "{stderr}");
    assert!(!stderr.contains("ulimit -n 32768"), "{stderr}");
    assert_eq!(server.requests(), 0, "no load before the refusal");
}

/// Whether this process may raise its hard limits (CAP_SYS_RESOURCE, bit 24 of CapEff).
fn may_raise_hard_limits() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 24) != 0)
}

/// Issue 36: 100,000 connections need more open files than a default hard limit. Run as root,
/// loadbench raises the hard limit itself; without the capability it refuses, naming root.
#[test]
fn root_raises_the_hard_open_files_limit_itself() {
    if !have("nginx") || !have("prlimit") {
        return;
    }
    let nginx = Nginx::start("");
    let save = tempdir("fd-raise").join("r.json");
    let out = std::process::Command::new("prlimit")
        .arg("--nofile=256:256")
        .arg(env!("CARGO_BIN_EXE_loadbench"))
        .args(["run", &nginx.url("/"), "-c", "400", "-n", "2000", "-t", "1"])
        .args(["--quiet", "--save", save.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    if !may_raise_hard_limits() {
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("run loadbench as root"), "{stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r =
        loadbench_model::RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(r.stats.requests, 2000, "{stderr}");
    assert_eq!(r.stats.connections_opened, 400, "all 400 connections open");
    assert_eq!(r.stats.errors.total(), 0);
}

#[test]
fn unwritable_save_and_html_paths_exit_2_before_any_load() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let file = tempdir("unwritable").join("file");
    std::fs::write(&file, "not a directory").unwrap();
    let under_file = file.join("r.json");
    let cases = [
        ("--save", "/proc/loadbench-no/r.json"),
        ("--html", "/proc/r.html"),
        ("--save", under_file.to_str().unwrap()),
    ];
    for (flag, path) in cases {
        let started = Instant::now();
        let out = bin()
            .args(["run", &server.url("/"), "-d", "30s", "-c", "2", flag, path])
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{flag} {path}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: {flag} {path}")),
            "{stderr}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "refused before the 30 s run"
        );
    }
    assert_eq!(server.requests(), 0, "no load started");
}

/// `--source-addrs` mistakes (`run` and `find-max`): exit code 2 and one line naming the flag,
/// before any load starts.
#[test]
fn bad_source_addrs_give_one_line_naming_the_flag() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--source-addrs",
                "127.0.0.9-127.0.0.2",
            ],
            "empty range",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--source-addrs",
                "127.0.0.2,::1",
            ],
            "mixes IPv4 and IPv6",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--source-addrs",
                "127.0.0.0-127.1.0.0",
            ],
            "more than 65536",
        ),
        (
            vec!["run", "http://127.0.0.1/", "--source-addrs", "lo"],
            "not an IP address",
        ),
        (
            vec!["run", "http://[::1]:1/", "--source-addrs", "127.0.0.2"],
            "give IPv6 source addresses",
        ),
        (
            vec![
                "find-max",
                "http://127.0.0.1/",
                "--slo",
                "p99<1s",
                "--source-addrs",
                "::1",
            ],
            "give IPv4 source addresses",
        ),
    ];
    for (args, needle) in cases {
        let out = bin().args(&args).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("--source-addrs"), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: expected '{needle}' in: {stderr}"
        );
    }
}

/// Issue 11: the preflight binds the source addresses the load will use, so one that cannot
/// be used (not on this host; loopback toward another host) is refused with one line and exit
/// 2 before any load, instead of a run of connect errors. No packet leaves the host: the
/// loopback case is refused before any connect.
#[test]
fn unusable_source_addrs_are_refused_before_any_load() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let url = server.url("/");
    let cases = [
        (url.as_str(), "192.0.2.1", "not an address of this host"),
        (
            "http://192.0.2.1:9/",
            "127.0.0.2",
            "a loopback address cannot reach another host",
        ),
    ];
    for (target, sources, needle) in cases {
        let args = [
            "run",
            target,
            "-n",
            "10",
            "-c",
            "1",
            "--source-addrs",
            sources,
        ];
        let out = bin().args(args).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        let head = format!("--source-addrs {sources} cannot be used");
        assert!(stderr.contains(&head), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    assert_eq!(server.requests(), 0, "no load started");
    let ok = Run::new(&url)
        .args([
            "-n",
            "10",
            "-c",
            "2",
            "--source-addrs",
            "127.0.0.2-127.0.0.3",
        ])
        .ok();
    assert_eq!(ok.stats.requests, 10);
    assert_eq!(server.requests(), 10);
}

/// Issue 33, point 5: a rate above the 10M req/s the engine can schedule (a constant rate, a
/// ramp's end) is refused before the load: exit 2, one line with the figure, nothing sent.
#[test]
fn a_rate_above_what_the_engine_can_schedule_is_refused_up_front() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let url = server.url("/");
    let cases: [&[&str]; 3] = [
        &["--rate", "1e8", "-d", "1s"],
        &["--rate", "1e300", "-n", "10"],
        &["--rate", "100..2e7", "--ramp", "1s", "-d", "1s"],
    ];
    for args in cases {
        let out = bin().arg("run").arg(&url).args(args).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let line = stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "{args:?}: {line}");
        assert!(line.contains("10,000,000 req/s"), "{args:?}: {line}");
    }
    assert_eq!(server.requests(), 0);
}

/// `loadbench run` at the highest rate allowed (10M req/s) against a counting server.
fn max_rate_run(url: &str, duration: &str, save: &std::path::Path) -> std::process::Command {
    let mut cmd = bin();
    cmd.args([
        "run",
        url,
        "--rate",
        "10M",
        "-c",
        "8",
        "-t",
        "1",
        "--timeout",
        "1s",
    ])
    .args(["-q", "-d", duration, "--save"])
    .arg(save);
    cmd
}

fn saved(path: &std::path::Path) -> loadbench_model::RunResult {
    loadbench_model::RunResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Issue 33, point 5: at the highest rate allowed a run ends by itself within its duration +
/// timeout + 1 s (before: `--rate 1e7 -d 1s` took up to 4.9 s accounting for its unsent
/// requests one by one), with every scheduled request sent or counted as waiting.
#[test]
fn the_highest_allowed_rate_ends_by_itself() {
    let _machine = crate::support::loading();
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let save = tempdir("max-rate").join("timed.json");
    let started = Instant::now();
    let out = max_rate_run(&server.url("/"), "1s", &save)
        .output()
        .unwrap();
    let took = started.elapsed();
    let (_, stderr) = text(&out);
    // Duration + timeout + 1 s, and half a second for the process to start on a busy host.
    assert!(
        took < Duration::from_millis(3500),
        "took {took:?}: {stderr}"
    );
    let s = saved(&save).stats;
    assert!(s.requests > 0, "{stderr}");
    let unsent = s.errors.before_send();
    let answered = s.requests + s.errors.total() - unsent + s.abandoned;
    assert_eq!(answered, s.sent, "{s:?}");
    assert_eq!(s.scheduled, Some(10_000_000), "{s:?}");
    assert_eq!(s.sent + s.waiting + unsent, 10_000_000, "{s:?}");
}

/// Issue 33, point 5: SIGTERM ends a run at the highest rate allowed within 1 s, with its
/// result saved (before: 1.5 s and more, growing with the rate).
#[test]
fn sigterm_ends_a_run_at_the_highest_allowed_rate_within_a_second() {
    let _machine = crate::support::loading();
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let save = tempdir("max-rate-term").join("sigterm.json");
    let child = max_rate_run(&server.url("/"), "60s", &save)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    let pid = i32::try_from(child.id()).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid has no memory-safety implications.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    let stopped = sent.elapsed();
    assert!(stopped < Duration::from_secs(1), "stopped in {stopped:?}");
    assert_eq!(out.status.code(), Some(130));
    let r = saved(&save);
    assert!(r.interrupted);
    assert!(r.stats.requests > 0);
}
