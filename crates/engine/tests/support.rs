//! What the hostile-server tests share: a raw server that runs one thread per connection and
//! counts what its `serve` function says it read, the checks' error text, and a run that a
//! watchdog stops if it would never end.

pub(crate) use crate::listener::{settled, RawListener};
use loadbench_engine::Engine;
use loadbench_model::Stats;
use loadbench_plan::{LoadSpec, Plan};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A read or write that timed out (the server threads poll their stop flag between them).
pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// A hostile run's own accounting: it ended within `limit`, and
/// `requests + (errors − errors before sending) + abandoned + retried = sent` (`retried`:
/// HTTP/2's requests refused by a GOAWAY and sent again, 0 elsewhere).
pub(crate) fn check_run(
    s: &Stats,
    (took, limit): (Duration, Duration),
    retried: u64,
    what: &str,
) -> Result<(), String> {
    check(took <= limit, "finished in time", what)?;
    let unsent = s.errors.before_send();
    check(
        s.requests + s.errors.total() - unsent + s.abandoned + retried == s.sent,
        "identity",
        what,
    )
}

/// `Err("what: detail")` unless `ok`.
pub(crate) fn check(ok: bool, what: &str, detail: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: {detail}"))
    }
}

/// Runs `spec` in-process; a watchdog raises the stop flag after `limit` + 5 s, so a run that
/// would never end fails the time check instead of hanging the test.
pub(crate) fn run_bounded(spec: &LoadSpec, limit: Duration) -> Result<Stats, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let (s, d) = (Arc::clone(&stop), Arc::clone(&done));
    std::thread::spawn(move || {
        let until = Instant::now() + limit + Duration::from_secs(5);
        while !d.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        s.store(true, Ordering::Relaxed);
    });
    let plan = Plan::resolve(spec).map_err(|e| e.to_string())?;
    let out = Engine::with_stop(plan, stop)
        .run()
        .map_err(|e| e.to_string());
    done.store(true, Ordering::Relaxed);
    Ok(out?.stats)
}

/// Runs `case` for every mode and model, the modes in parallel threads (the models of a mode
/// one after the other); the failures' text, all of them.
pub(crate) fn matrix<M, L>(
    modes: &[M],
    models: &[L],
    case: fn(M, L) -> Result<(), String>,
) -> Vec<String>
where
    M: Copy + Send + Sync,
    L: Copy + Send + Sync,
{
    std::thread::scope(|scope| {
        let handles: Vec<_> = modes
            .iter()
            .map(|&mode| {
                scope.spawn(move || {
                    models
                        .iter()
                        .filter_map(|&m| case(mode, m).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("no panic"))
            .collect()
    })
}

/// Runs every spec at once, one thread each, each over one worker thread for `secs`
/// seconds; then prints this process's peak RSS (see [`print_peak_rss`]).
pub(crate) fn run_all_then_print_rss(specs: Vec<LoadSpec>, secs: u64) {
    std::thread::scope(|scope| {
        for mut spec in specs {
            scope.spawn(move || {
                spec.threads = Some(1);
                spec.stop = loadbench_plan::Stop::Duration(Duration::from_secs(secs));
                Engine::new(Plan::resolve(&spec).unwrap()).run().unwrap();
            });
        }
    });
    print_peak_rss();
}

/// Prints this process's peak RSS (VmHWM) for [`child_peak_rss_kb`].
pub(crate) fn print_peak_rss() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim();
    println!("PEAK_RSS {hwm}");
}

/// Runs the ignored test `probe` (`module::name`) alone in a child process of this test
/// binary, with the environment variable `env` set, and reads the peak RSS (kB) it printed
/// with [`print_peak_rss`]: no other test's memory is in the figure.
pub(crate) fn child_peak_rss_kb(probe: &str, env: &str) -> u64 {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", probe, "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(env, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find_map(|l| l.split_once("PEAK_RSS ").map(|(_, v)| v))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or_else(|| panic!("no PEAK_RSS line in {text}"))
}

/// The load models the hostile matrices share.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Base {
    /// Four connections over two threads for the window.
    Closed,
    /// The same, `-n 12`.
    Count,
    /// The open model at 40/s over at most eight connections, for the window.
    Open,
}

/// The load of `base` against `url`, with `timeout` for connects and answers.
pub(crate) fn base_spec(url: &str, base: Base, timeout: Duration, window: Duration) -> LoadSpec {
    let closed = LoadSpec {
        timeout,
        connect_timeout: timeout,
        threads: Some(2),
        ..LoadSpec::closed(url, 4, window)
    };
    match base {
        Base::Closed => closed,
        Base::Count => LoadSpec {
            stop: loadbench_plan::Stop::Requests(12),
            ..closed
        },
        Base::Open => LoadSpec {
            timeout,
            connect_timeout: timeout,
            threads: Some(2),
            ..LoadSpec::open(url, 40.0, window, 8)
        },
    }
}

/// Runs `spec` (see [`run_bounded`]) within `window + timeout + 1 s`, three times that for a
/// count run (twelve requests, each held up to a timeout or a backoff on four connections):
/// the stats, how long it took, and the limit.
pub(crate) fn run_timed(
    spec: &LoadSpec,
    count: bool,
    timeout: Duration,
    window: Duration,
) -> Result<(Stats, Duration, Duration), String> {
    let limit = window + timeout + Duration::from_secs(1);
    let limit = if count { limit * 3 } else { limit };
    let started = Instant::now();
    let s = run_bounded(spec, limit)?;
    Ok((s, started.elapsed(), limit))
}
