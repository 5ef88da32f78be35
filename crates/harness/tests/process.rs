//! Lifecycle of target processes: readiness, early exit, stop, drop, and the parent being killed.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use loadbench_harness::process::{ProcessError, ProcessSpec, Readiness, TargetProcess};

/// Set when the test binary is re-executed as a parent that gets `SIGKILL`ed.
const HELPER_ENV: &str = "LOADBENCH_PROCESS_TEST_HELPER";
/// The helper's full name in the test binary (tests.rs declares this file as `mod process`).
const HELPER_TEST: &str = "process::helper_parent_holding_a_target";

/// A fresh run folder for one test.
fn run_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadbench-process-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn spec(dir: &Path, name: &str, command: &str, args: &[&str]) -> ProcessSpec {
    ProcessSpec::new(
        name,
        command,
        dir.join(format!("{name}.stdout")),
        dir.join(format!("{name}.stderr")),
    )
    .args(args.iter().copied())
}

fn sh(dir: &Path, name: &str, script: &str) -> ProcessSpec {
    spec(dir, name, "sh", &["-c", script])
}

/// A 127.0.0.1 port that nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Gone means no `/proc` entry, or a zombie waiting for a (possibly non-reaping) init.
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap() + 1..]
            .trim_start()
            .starts_with('Z'),
    }
}

fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Spawns `sh -c 'sleep 300 & sleep 300'` and returns it with the pids of its group (>= 2).
fn forking_target(dir: &Path, name: &str) -> (TargetProcess, Vec<u32>) {
    let target = TargetProcess::spawn(&sh(dir, name, "sleep 300 & sleep 300")).unwrap();
    assert!(wait_until(Duration::from_secs(5), || target
        .group_pids()
        .len()
        >= 2));
    let pids = target.group_pids();
    assert!(
        pids.contains(&target.pid()),
        "{pids:?} lacks the leader {}",
        target.pid()
    );
    (target, pids)
}

fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

#[test]
fn http_server_becomes_ready_via_tcp_and_http() {
    let dir = run_dir("ready");
    let port = free_port().to_string();
    let args = ["-m", "http.server", port.as_str(), "--bind", "127.0.0.1"];
    let mut spec = spec(&dir, "pyhttp", python(), &args);
    spec.cwd = Some(std::env::temp_dir());
    let mut target = TargetProcess::spawn(&spec).unwrap();
    assert_eq!(target.pgid(), target.pid());

    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    target
        .wait_ready(&Readiness::Tcp { addr }, Duration::from_secs(10))
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    target
        .wait_ready(&Readiness::Http { url }, Duration::from_secs(5))
        .unwrap();
    assert!(target.is_running());

    let outcome = target.stop().unwrap();
    assert!(
        !outcome.forced,
        "python should stop on SIGTERM: {outcome:?}"
    );
    assert!(!target.is_running());
    assert!(is_gone(target.pid()));
}

#[test]
fn never_ready_times_out_with_stderr_tail() {
    let dir = run_dir("never");
    let script = "echo warming up >&2; echo still-not-listening >&2; exec sleep 30";
    let mut target = TargetProcess::spawn(&sh(&dir, "mute", script)).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();

    let started = Instant::now();
    let err = target
        .wait_ready(&Readiness::Tcp { addr }, Duration::from_millis(500))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(matches!(err, ProcessError::NotReady { .. }), "{err:?}");
    let msg = err.to_string();
    for needle in [
        "`mute`",
        "500ms",
        &addr.to_string(),
        "still-not-listening",
        "hint:",
    ] {
        assert!(msg.contains(needle), "{needle:?} missing from:\n{msg}");
    }
    let pid = target.pid();
    drop(target);
    assert!(is_gone(pid));
}

#[test]
fn exit_at_once_reports_status_and_stderr() {
    let dir = run_dir("boom");
    let script = "echo hello-out; echo boom >&2; exit 3";
    let mut target = TargetProcess::spawn(&sh(&dir, "boomer", script)).unwrap();
    let url = format!("http://127.0.0.1:{}/", free_port());

    let err = target
        .wait_ready(&Readiness::Http { url }, Duration::from_secs(10))
        .unwrap_err();
    let ProcessError::ExitedEarly {
        code,
        ref stderr_tail,
        ..
    } = err
    else {
        panic!("expected ExitedEarly, got {err:?}");
    };
    assert_eq!(code, Some(3));
    assert!(stderr_tail.contains("boom"));
    let msg = err.to_string();
    assert!(
        msg.contains("exit status: 3") && msg.contains("boom"),
        "{msg}"
    );
    let stdout = std::fs::read_to_string(dir.join("boomer.stdout")).unwrap();
    assert_eq!(stdout, "hello-out\n");
    assert!(!target.is_running());
    assert_eq!(target.stop().unwrap().status.code(), Some(3));
}

#[test]
fn missing_program_is_a_spawn_error() {
    let dir = run_dir("missing");
    let spec = spec(&dir, "ghost", "/nonexistent/loadbench-target", &[]);
    let err = TargetProcess::spawn(&spec).unwrap_err();
    assert!(matches!(err, ProcessError::Spawn { .. }), "{err:?}");
    assert!(err.to_string().contains("ghost"));
}

#[test]
fn stop_terminates_a_forking_group() {
    let dir = run_dir("stop");
    let (mut target, pids) = forking_target(&dir, "forker");
    let outcome = target.stop().unwrap();
    assert!(!outcome.forced, "SIGTERM should suffice: {outcome:?}");
    for pid in &pids {
        assert!(is_gone(*pid), "pid {pid} survived stop");
    }
    assert_eq!(target.stop().unwrap(), outcome, "stop is idempotent");
}

#[test]
fn stop_kills_a_group_that_ignores_the_stop_signal() {
    let dir = run_dir("stubborn");
    let mut spec = sh(&dir, "stubborn", "trap '' TERM; sleep 300 & sleep 300");
    spec.stop_timeout = Duration::from_millis(300);
    let mut target = TargetProcess::spawn(&spec).unwrap();
    assert!(wait_until(Duration::from_secs(5), || target
        .group_pids()
        .len()
        >= 2));
    thread::sleep(Duration::from_millis(100));
    let pids = target.group_pids();

    let started = Instant::now();
    let outcome = target.stop().unwrap();
    assert!(outcome.forced);
    assert!(started.elapsed() < Duration::from_secs(3));
    for pid in &pids {
        assert!(is_gone(*pid), "pid {pid} survived SIGKILL");
    }
}

#[test]
fn drop_kills_the_group() {
    let dir = run_dir("drop");
    let (target, pids) = forking_target(&dir, "dropped");
    drop(target);
    assert!(wait_until(Duration::from_secs(1), || pids
        .iter()
        .all(|p| is_gone(*p))));
}

#[test]
fn drop_during_panic_kills_the_group() {
    let dir = run_dir("panic");
    let pids = std::sync::Mutex::new(Vec::new());
    let result = std::panic::catch_unwind(|| {
        let (_target, group) = forking_target(&dir, "panicky");
        *pids.lock().unwrap() = group;
        panic!("bench failed mid-run");
    });
    assert!(result.is_err());
    let pids = pids.into_inner().unwrap();
    assert!(!pids.is_empty());
    assert!(wait_until(Duration::from_secs(1), || pids
        .iter()
        .all(|p| is_gone(*p))));
}

/// The key guarantee: loadbench is `SIGKILL`ed (no destructor runs) and its target still dies.
#[test]
fn sigkilled_parent_leaves_no_target_behind() {
    let exe = std::env::current_exe().unwrap();
    let mut parent = Command::new(exe)
        .args(["--exact", HELPER_TEST, "--nocapture", "--test-threads=1"])
        .env(HELPER_ENV, run_dir("orphan"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let target_pid = read_target_pid(parent.stdout.take().unwrap());
    assert!(
        !is_gone(target_pid),
        "target {target_pid} should be running"
    );

    parent.kill().unwrap(); // SIGKILL
    parent.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(1), || is_gone(target_pid)),
        "target {target_pid} outlived its SIGKILLed parent"
    );
}

fn read_target_pid(stdout: std::process::ChildStdout) -> u32 {
    for line in BufReader::new(stdout).lines() {
        // libtest prints `test NAME ... ` on the same line first.
        let line = line.unwrap();
        if let Some((_, pid)) = line.split_once("TARGET_PID=") {
            return pid.trim().parse().unwrap();
        }
    }
    panic!("the helper exited without printing TARGET_PID");
}

/// Not a test on its own: when re-executed with [`HELPER_ENV`], it plays loadbench holding a
/// target, prints the target's pid and waits to be killed.
#[test]
fn helper_parent_holding_a_target() {
    let Some(dir) = std::env::var_os(HELPER_ENV) else {
        return;
    };
    let target = TargetProcess::spawn(&spec(Path::new(&dir), "orphan", "sleep", &["300"])).unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "TARGET_PID={}", target.pid()).unwrap();
    out.flush().unwrap();
    thread::sleep(Duration::from_secs(30));
    drop(target);
}

/// A loopback HTTP server answering every request with `status(time since start)`; it logs each
/// status (before answering) and stops after 20 s or 2,000 connections.
fn status_server(
    status: impl Fn(Duration) -> u16 + Send + 'static,
) -> (SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<u16>>>) {
    use std::io::Read;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = served.clone();
    listener.set_nonblocking(true).unwrap();
    let started = Instant::now();
    thread::spawn(move || {
        let mut answered = 0;
        while started.elapsed() < Duration::from_secs(20) && answered < 2_000 {
            let Ok((mut conn, _)) = listener.accept() else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            answered += 1;
            let _ = conn.set_nonblocking(false);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = conn.read(&mut [0u8; 1024]);
            let code = status(started.elapsed());
            log.lock().unwrap().push(code);
            let head =
                format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = conn.write_all(head.as_bytes());
        }
    });
    (addr, served)
}

#[test]
fn http_readiness_waits_for_2xx_past_a_503() {
    let dir = run_dir("ready503");
    let (addr, served) = status_server(|t| {
        if t < Duration::from_millis(500) {
            503
        } else {
            200
        }
    });
    let mut target = TargetProcess::spawn(&sh(&dir, "warming", "exec sleep 30")).unwrap();
    let url = format!("http://{addr}/health");
    target
        .wait_ready(&Readiness::Http { url }, Duration::from_secs(15))
        .unwrap();
    let served = served.lock().unwrap().clone();
    assert!(served.contains(&503), "the probe saw the 503s: {served:?}");
    assert_eq!(served.last(), Some(&200), "ready only at a 200: {served:?}");
    drop(target);
}

#[test]
fn http_readiness_that_only_sees_404_fails_naming_the_status() {
    let dir = run_dir("ready404");
    let (addr, served) = status_server(|_| 404);
    let mut target = TargetProcess::spawn(&sh(&dir, "lost", "exec sleep 30")).unwrap();
    let url = format!("http://{addr}/health");
    let started = Instant::now();
    let err = target
        .wait_ready(&Readiness::Http { url }, Duration::from_millis(700))
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(700));
    assert!(
        matches!(
            err,
            ProcessError::NotReady {
                last_status: Some(404),
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("last status 404"), "{msg}");
    assert!(msg.contains("2xx/3xx"), "{msg}");
    assert!(!served.lock().unwrap().is_empty());
}
