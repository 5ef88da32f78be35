//! The open model's connection pool end to end against the reference backend: the pool grows
//! only as requests wait (no storm of connects; a server that never answers fills it to its
//! cap and the run still ends on time), connects in progress stay under their limit,
//! `-c` with `--rate` is the initial pool and the cap, and the send window is recorded. The
//! connections are counted twice: from the result, and from the server's side of the loopback
//! (its established sockets in /proc/net/tcp, sampled while the run goes on).

use crate::support::Run;
use loadbench_model::RunResult;
use loadbench_upstream::{Server, ServerConfig};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

/// The server's established connections on `port` now (its side of each, from
/// /proc/net/tcp: local port `port`, state 01).
fn established(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&local) && f[3] == "01"
        })
        .count()
}

/// Samples the server's established connections every 2 ms until stopped (at most 60 s):
/// the most seen at once.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<usize>,
}

impl Sampler {
    fn start(addr: SocketAddr) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let (began, mut peak) = (Instant::now(), 0);
            while !flag.load(Ordering::Relaxed) && began.elapsed() < Duration::from_secs(60) {
                peak = peak.max(established(addr.port()));
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        });
        Sampler { stop, handle }
    }

    fn peak(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("the sampler ends")
    }
}

/// `loadbench run` of `path` with `args`, the server's connections sampled meanwhile: the
/// result, its stdout and the most connections the server held at once.
fn sampled(server: &Server, path: &str, args: &[&str]) -> (RunResult, String, usize) {
    let url = format!("http://{}{path}", server.local_addr());
    let sampler = Sampler::start(server.local_addr());
    let ran = Run::new(&url).args(args).json();
    let peak = sampler.peak();
    let (stdout, stderr) = ran.text();
    let code = ran.code();
    let r = ran.result();
    if r.stats.requests == 0 {
        // No silent zero: a run that completed nothing exits 1 and says why, in one line.
        assert_eq!(code, Some(1), "{stdout}\n{stderr}");
        assert!(stderr.contains("none of the"), "{stderr}");
    } else {
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    }
    (r, stdout, peak)
}

/// 1000 req/s of 20 ms each needs about 20 connections: the run opens at most twice what it
/// needs (rate × p99, never less than rate × delay), the server never holds more, and no
/// more connects than the limit were ever in progress at once. Besides its initial pool it
/// opens at most 2 × R × D, D what the server took (at least the 20 ms asked for, more when
/// this shared machine made it late: a connection is held for the service time); the
/// per-second connects of the series add up to every connect but the initial pool's (opened
/// before the first second); every request is accounted for.
#[test]
fn the_pool_grows_to_what_the_rate_needs_and_no_further() {
    let _machine = crate::support::measuring();
    let server = backend();
    let args = ["--rate", "1000", "-d", "2s", "-t", "2"];
    let (r, _, server_peak) = sampled(&server, "/delay/20ms", &args);
    let s = &r.stats;
    let p99 = s.latency.hist.percentile_ns(99.0) as f64 / 1e9;
    let needed = (1000.0 * p99.max(0.020)).ceil() as u64;
    let pool = s.pool;
    assert!(pool.connects <= 2 * needed, "{pool:?}, {needed} needed");
    assert!(server_peak as u64 <= 2 * needed, "{server_peak}, {needed}");
    assert!(pool.connects_peak <= pool.connect_limit, "{pool:?}");
    assert_eq!(pool.connect_limit, 64);
    assert!(pool.initial >= 4, "2 a worker at least: {pool:?}");
    assert_eq!(server.stats().route("/delay"), s.sent);
    assert_eq!(r.config.send_window_us, Some(1000), "the default window");
    let service = s.service.hist.percentile_ns(99.0) as f64 / 1e9;
    let rd = (1000.0 * service.max(0.020)).ceil() as u64;
    assert!(
        pool.connects <= 2 * rd + pool.initial,
        "{pool:?}, R × D {rd}"
    );
    assert_eq!(s.errors.total(), 0);
    assert_eq!(
        s.requests + s.abandoned,
        s.sent,
        "answered or in flight at the end"
    );
    assert_accounted(s);
    let per_second: u64 = s.series.0.iter().map(|p| p.connects).sum();
    assert_eq!(per_second + pool.initial, pool.connects, "{:?}", s.series.0);
    let first = pool.first_second;
    assert!((pool.initial..=pool.connects).contains(&first), "{pool:?}");
}

/// Every request the schedule called for: answered, failed, abandoned in flight, or still
/// waiting for a connection when the window closed (a worker's share may round by one).
fn assert_accounted(s: &loadbench_model::Stats) {
    let scheduled = s.scheduled.expect("an open-model run");
    let accounted = s.requests + s.errors.total() + s.abandoned + s.waiting;
    assert!(
        accounted.abs_diff(scheduled) <= 2,
        "{accounted} of {scheduled}"
    );
}

/// A server that never answers: the pool grows to its cap and no further (one connect per
/// connection: the server closes none), the run ends on time instead of waiting for an
/// answer, the worker sleeps while it waits (no spin), and every request is accounted for:
/// the 20 sent abandoned in flight, the others unsent, counted as waiting.
#[test]
fn a_server_that_never_answers_fills_the_pool_to_its_cap_and_the_run_ends_on_time() {
    let _machine = crate::support::loading();
    let server = backend();
    let args: Vec<&str> = "--rate 200 --max-connections 20 -d 2s -t 1"
        .split(' ')
        .collect();
    let began = Instant::now();
    let (r, _, server_peak) = sampled(&server, "/fault/stall", &args);
    let took = began.elapsed();
    let s = &r.stats;
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(
        s.elapsed_us.abs_diff(2_000_000) < 100_000,
        "{}",
        s.elapsed_us
    );
    assert_eq!(
        (s.pool.connects, s.sent, s.abandoned),
        (20, 20, 20),
        "{s:?}"
    );
    assert!(server_peak <= 20, "the server held {server_peak}");
    assert_eq!(server.stats().route("/fault/stall"), 20);
    assert_eq!(s.requests, 0);
    assert!(s.waiting >= 300, "waiting {}", s.waiting);
    assert_accounted(s);
    let g = s.generator;
    assert!(g.cpu_us * 4 < g.worker_us, "a blocked worker sleeps: {g:?}");
}

/// With at most 2 connects in progress, the pool still grows to the ~20 connections the
/// rate needs, 2 at a time, and the recorded peak says so.
#[test]
fn connects_in_progress_never_exceed_the_limit() {
    let _machine = crate::support::measuring();
    let server = backend();
    let args = [
        "--rate",
        "1000",
        "-d",
        "2s",
        "-t",
        "1",
        "--connect-limit",
        "2",
    ];
    let (r, _, _) = sampled(&server, "/delay/20ms", &args);
    let pool = r.stats.pool;
    assert_eq!(pool.connect_limit, 2, "{pool:?}");
    assert!((1..=2).contains(&pool.connects_peak), "{pool:?}");
    assert!(
        pool.connects >= 15,
        "the pool grew past its start: {pool:?}"
    );
    let scheduled = r.stats.scheduled.unwrap();
    assert!(
        r.stats.sent * 10 >= scheduled * 9,
        "{} of {scheduled}",
        r.stats.sent
    );
}

/// `--rate 200 -c 4` against 50 ms answers (4 connections serve 80/s): never more than 4
/// connections, on our side or the server's; the requests that found none wait in the
/// generator and are counted, their latency from the intended time; the header says so.
#[test]
fn c_with_a_rate_is_the_initial_pool_and_the_cap() {
    let _machine = crate::support::measuring();
    let server = backend();
    let args = ["--rate", "200", "-c", "4", "-d", "2s", "-t", "2"];
    let (r, stdout, server_peak) = sampled(&server, "/delay/50ms", &args);
    let s = &r.stats;
    assert_eq!(r.config.connections, 4, "the cap");
    assert_eq!((s.pool.initial, s.pool.connects), (4, 4), "{:?}", s.pool);
    assert!(server_peak <= 4, "the server held {server_peak}");
    assert!(s.waiting > 100, "waiting {}", s.waiting);
    let scheduled = s.scheduled.unwrap();
    let accounted = s.requests + s.errors.total() + s.abandoned + s.waiting;
    assert!(
        accounted.abs_diff(scheduled) <= 2,
        "{accounted} of {scheduled}"
    );
    assert!(
        s.latency.hist.percentile_ns(50.0) > 200_000_000,
        "waits show in latency"
    );
    assert!(s.service.hist.percentile_ns(50.0) < 200_000_000);
    assert!(stdout.contains("up to 4 connections"), "{stdout}");
    assert!(stdout.contains("initial pool 4 connections"), "{stdout}");
    assert!(stdout.contains("send window 1.00ms"), "{stdout}");
}

/// A zero window is recorded as such; `-c` above the cap and a pacing flag without a rate
/// are refused before any load, with the fix.
#[test]
fn the_window_is_recorded_and_bad_pacing_flags_are_refused() {
    let _machine = crate::support::loading();
    let server = backend();
    let url = format!("http://{}/", server.local_addr());
    let args = ["--rate", "100", "-n", "50", "--send-window", "0"];
    let r = Run::new(&url).args(args).ok();
    assert_eq!(r.config.send_window_us, Some(0));
    assert_eq!(r.stats.sent, 50);
    for (args, needle) in [
        (
            vec!["--rate", "100", "-c", "20", "--max-connections", "10"],
            "-c 20 is above --max-connections 10",
        ),
        (
            vec!["-c", "2", "--send-window", "1ms"],
            "--send-window is for the open model",
        ),
        (
            vec!["--rate", "100", "--send-window", "1s"],
            "--send-window",
        ),
        (
            vec!["--rate", "100", "--connect-limit", "0"],
            "--connect-limit 0",
        ),
    ] {
        let ran = Run::new(&url).args(&args).json();
        let (_, stderr) = ran.text();
        assert_eq!(ran.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert_eq!(
        server.stats().route("/"),
        50,
        "no load from the refused ones"
    );
}
