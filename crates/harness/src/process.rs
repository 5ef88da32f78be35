//! Target processes that never outlive loadbench.
//!
//! In: a [`ProcessSpec`] (command, args, cwd, env, output files, stop signal and timeout). Out: a
//! running [`TargetProcess`] that can be waited on until ready ([`Readiness`]), stopped
//! gracefully ([`TargetProcess::stop`]: stop signal to the whole process group, then `SIGKILL`)
//! and that kills its whole process group when dropped. Target stdout/stderr go to files (the
//! run folder), and errors quote the tail of the stderr file.
//!
//! How "nothing is left behind" is guaranteed (Linux):
//! - the target runs in its own process group (`setpgid(0, 0)`), so stop and drop signal every
//!   process the target forked (nginx master + workers, `sh -c 'a & b'`);
//! - the direct child gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies even when loadbench itself
//!   is `SIGKILL`ed (no destructor runs then);
//! - `Drop` kills the group, so a panic or an early return leaves nothing behind;
//! - the [`crate::guardian`] kills the whole group when loadbench dies without cleaning up
//!   (`SIGKILL`): the parent-death signal alone reaches only the direct child, not the workers
//!   it forked.
//!
//! Limits:
//! - a process that leaves the target's process group (`setsid`, daemonizing) escapes all of this.
//! - `PR_SET_PDEATHSIG` fires when the *thread* that spawned the target exits: spawn targets from
//!   a thread that outlives them (the main thread or the bench driver thread).

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How often readiness and the stop wait are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Time allowed for one readiness probe (connect, and for HTTP the status line).
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Lines of the target's stderr quoted in errors.
const STDERR_TAIL_LINES: usize = 20;
/// Lines before the tail that name an error, shown ahead of it (see `stderr_tail`).
const EARLIER_ERROR_LINES: usize = 3;
/// After `SIGKILL`, how long to wait for the group members to disappear.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// What to start and where its output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// Human name used in errors ("nginx", "upstream").
    pub name: String,
    /// Program to run (looked up in `PATH` when it has no `/`).
    pub command: PathBuf,
    /// Arguments, as given (no shell).
    pub args: Vec<String>,
    /// Working directory; loadbench's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Extra environment variables (added to loadbench's environment).
    pub env: Vec<(String, String)>,
    /// File that receives the target's stdout (created or truncated; parent dirs created).
    pub stdout_path: PathBuf,
    /// File that receives the target's stderr (quoted in readiness errors).
    pub stderr_path: PathBuf,
    /// Signal sent to the process group by [`TargetProcess::stop`] (default `SIGTERM`).
    pub stop_signal: i32,
    /// How long [`TargetProcess::stop`] waits after the stop signal before `SIGKILL`.
    pub stop_timeout: Duration,
}

impl ProcessSpec {
    /// A spec with no args, no cwd, no extra env, `SIGTERM` and a 5 s stop timeout.
    pub fn new(
        name: impl Into<String>,
        command: impl Into<PathBuf>,
        stdout_path: impl Into<PathBuf>,
        stderr_path: impl Into<PathBuf>,
    ) -> Self {
        ProcessSpec {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdout_path: stdout_path.into(),
            stderr_path: stderr_path.into(),
            stop_signal: libc::SIGTERM,
            stop_timeout: Duration::from_secs(5),
        }
    }

    /// Replaces the arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    fn command_line(&self) -> String {
        let mut line = self.command.display().to_string();
        for arg in &self.args {
            line.push(' ');
            line.push_str(arg);
        }
        line
    }
}

/// When a target counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// A `GET` of this `http://host:port/path` URL answers 2xx or 3xx (docs/scenarios.md).
    Http {
        /// The URL to GET.
        url: String,
    },
    /// A `GET` of this URL answers with any HTTP status line: the reference backend, whose
    /// configured status may well be an error it answers on purpose.
    HttpAnswer {
        /// The URL to GET.
        url: String,
    },
    /// A TCP connect to this address succeeds.
    Tcp {
        /// The address to connect to.
        addr: SocketAddr,
    },
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Readiness::Http { url } => write!(f, "HTTP GET {url} answering 2xx/3xx"),
            Readiness::HttpAnswer { url } => write!(f, "HTTP GET {url}"),
            Readiness::Tcp { addr } => write!(f, "TCP connect to {addr}"),
        }
    }
}

/// Everything that can go wrong with a target process.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The stdout or stderr log cannot be created.
    #[error("cannot open output file {path} for target `{name}`: {source}")]
    OutputFile {
        /// The target.
        name: String,
        /// The log file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The program cannot be started (not found, not executable).
    #[error("cannot start target `{name}` (`{command}`): {source}")]
    Spawn {
        /// The target.
        name: String,
        /// The program.
        command: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    #[error(
        "target `{name}` exited before it was ready ({status}); last lines of {}:\n{stderr_tail}",
        stderr_path.display()
    )]
    /// The process ended before its readiness check succeeded.
    ExitedEarly {
        /// The target.
        name: String,
        /// The exit code, `None` when killed by a signal.
        code: Option<i32>,
        /// How it ended.
        status: ExitStatus,
        /// Its stderr log.
        stderr_path: PathBuf,
        /// The last lines of that log.
        stderr_tail: String,
    },
    #[error(
        "target `{name}` was not ready after {timeout:?} ({check} never succeeded{}); last lines \
         of {}:\n{stderr_tail}\nhint: check that the target listens on the address of the \
         readiness check, or raise the readiness timeout if it starts slowly",
        last_status_note(*last_status),
        stderr_path.display()
    )]
    /// The readiness check never succeeded within the timeout.
    NotReady {
        /// The target.
        name: String,
        /// The check, for people (`HTTP GET http://…`).
        check: String,
        /// How long it was tried.
        timeout: Duration,
        /// The last HTTP status the check got, when it got one that does not count as ready.
        last_status: Option<u16>,
        /// Its stderr log.
        stderr_path: PathBuf,
        /// The last lines of that log.
        stderr_tail: String,
    },
    /// The readiness check itself is malformed (e.g. a URL that is not `http://`).
    #[error("bad readiness check for target `{name}`: {reason}")]
    BadReadiness {
        /// The target.
        name: String,
        /// What is wrong with the check.
        reason: String,
    },
    /// Signalling or waiting for the process failed.
    #[error("cannot {action} target `{name}`: {source}")]
    Io {
        /// The target.
        name: String,
        /// What was being done (`stop`, `wait for`).
        action: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// How a [`TargetProcess::stop`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopOutcome {
    /// Exit status of the direct child.
    pub status: ExitStatus,
    /// `true` when the group did not stop within the stop timeout and was `SIGKILL`ed.
    pub forced: bool,
}

/// A running target; its whole process group is killed on drop.
#[derive(Debug)]
pub struct TargetProcess {
    spec: ProcessSpec,
    child: Child,
    pgid: u32,
    status: Option<ExitStatus>,
    /// Set once the group has been stopped and the child reaped.
    finished: Option<StopOutcome>,
}

impl TargetProcess {
    /// Starts the target in its own process group, with output to the spec's files.
    pub fn spawn(spec: &ProcessSpec) -> Result<TargetProcess, ProcessError> {
        Self::spawn_with(spec, |_| {})
    }

    /// As [`TargetProcess::spawn`], letting `configure` adjust the command first (e.g. to join
    /// a cgroup and set CPU affinity in the child before exec, so no worker escapes the limits).
    pub fn spawn_with(
        spec: &ProcessSpec,
        configure: impl FnOnce(&mut Command),
    ) -> Result<TargetProcess, ProcessError> {
        let stdout = open_output(spec, &spec.stdout_path)?;
        let stderr = open_output(spec, &spec.stderr_path)?;
        let mut cmd = Command::new(&spec.command);
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        die_with_parent(&mut cmd);
        configure(&mut cmd);
        let child = cmd.spawn().map_err(|source| ProcessError::Spawn {
            name: spec.name.clone(),
            command: spec.command_line(),
            source,
        })?;
        let pgid = child.id();
        crate::guardian::watch(pgid);
        Ok(TargetProcess {
            spec: spec.clone(),
            child,
            pgid,
            status: None,
            finished: None,
        })
    }

    /// Pid of the direct child.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Process group of the target (equal to [`Self::pid`]).
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// The spec it was started from.
    pub fn spec(&self) -> &ProcessSpec {
        &self.spec
    }

    /// Whether the direct child is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.try_status(), Ok(None))
    }

    /// How the direct child ended, once it has (reaped without blocking); `None` while it runs.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.try_status().ok().flatten()
    }

    /// Pids of the live (non-zombie) processes of the target's group, read from `/proc`.
    pub fn group_pids(&self) -> Vec<u32> {
        live_group_members(self.pgid)
    }

    /// Polls `readiness` every 50 ms until it succeeds, the target exits, or `timeout` passes.
    pub fn wait_ready(
        &mut self,
        readiness: &Readiness,
        timeout: Duration,
    ) -> Result<(), ProcessError> {
        let probe = Probe::new(readiness).map_err(|reason| ProcessError::BadReadiness {
            name: self.spec.name.clone(),
            reason,
        })?;
        let deadline = Instant::now() + timeout;
        let mut last_status = None;
        loop {
            if let Some(status) = self.try_status()? {
                return Err(self.exited_early(status));
            }
            match probe.check() {
                Ok(()) => return Ok(()),
                Err(seen) => last_status = seen.or(last_status),
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.not_ready(readiness, timeout, last_status));
            }
            thread::sleep(POLL_INTERVAL.min(deadline - now));
        }
    }

    /// Sends the stop signal to the group, waits up to the stop timeout for every member to
    /// exit, then `SIGKILL`s the group and reaps the child. Calling it again returns the outcome.
    pub fn stop(&mut self) -> Result<StopOutcome, ProcessError> {
        if let Some(outcome) = self.finished {
            return Ok(outcome);
        }
        let _ = signal_group(self.pgid, self.spec.stop_signal);
        let deadline = Instant::now() + self.spec.stop_timeout;
        let forced = loop {
            let leader_done = self.try_status()?.is_some();
            if leader_done && live_group_members(self.pgid).is_empty() {
                break false;
            }
            if Instant::now() >= deadline {
                let _ = signal_group(self.pgid, libc::SIGKILL);
                break true;
            }
            thread::sleep(POLL_INTERVAL / 2);
        };
        if forced {
            wait_group_gone(self.pgid, KILL_GRACE);
        }
        crate::guardian::forget(self.pgid);
        let status = self.reap()?;
        let outcome = StopOutcome { status, forced };
        self.finished = Some(outcome);
        Ok(outcome)
    }

    /// Reaps the direct child if it exited; never blocks.
    fn try_status(&mut self) -> Result<Option<ExitStatus>, ProcessError> {
        if self.status.is_none() {
            self.status = self
                .child
                .try_wait()
                .map_err(|e| self.io_error("poll", e))?;
        }
        Ok(self.status)
    }

    fn reap(&mut self) -> Result<ExitStatus, ProcessError> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = self.child.wait().map_err(|e| self.io_error("reap", e))?;
        self.status = Some(status);
        Ok(status)
    }

    fn io_error(&self, action: &'static str, source: io::Error) -> ProcessError {
        ProcessError::Io {
            name: self.spec.name.clone(),
            action,
            source,
        }
    }

    fn exited_early(&self, status: ExitStatus) -> ProcessError {
        ProcessError::ExitedEarly {
            name: self.spec.name.clone(),
            code: status.code(),
            status,
            stderr_path: self.spec.stderr_path.clone(),
            stderr_tail: stderr_tail(&self.spec.stderr_path),
        }
    }

    fn not_ready(
        &self,
        readiness: &Readiness,
        timeout: Duration,
        last_status: Option<u16>,
    ) -> ProcessError {
        ProcessError::NotReady {
            name: self.spec.name.clone(),
            check: readiness.to_string(),
            timeout,
            last_status,
            stderr_path: self.spec.stderr_path.clone(),
            stderr_tail: stderr_tail(&self.spec.stderr_path),
        }
    }
}

impl Drop for TargetProcess {
    fn drop(&mut self) {
        if self.finished.is_some() {
            return;
        }
        // Kill before reaping: while the leader is unreaped its pid (= pgid) cannot be reused.
        let _ = signal_group(self.pgid, libc::SIGKILL);
        crate::guardian::forget(self.pgid);
        if self.status.is_none() {
            let _ = self.child.wait();
        }
    }
}

fn open_output(spec: &ProcessSpec, path: &Path) -> Result<File, ProcessError> {
    let err = |source| ProcessError::OutputFile {
        name: spec.name.clone(),
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(err)?;
    }
    File::create(path).map_err(err)
}

/// Makes the kernel `SIGKILL` the child when the spawning thread dies, even by `SIGKILL`.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec. It only calls prctl(2) and
    // getppid(2), which are async-signal-safe, and it allocates nothing (`last_os_error` and
    // `from_raw_os_error` build an error from an integer).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would kill us.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Sends `signal` to every process of group `pgid`. Refuses pgids 0 and 1, which would address
/// loadbench's own group or every process.
#[allow(unsafe_code)]
fn signal_group(pgid: u32, signal: i32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|&p| p > 1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad process group"))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; `-pgid` (pgid > 1)
    // addresses exactly the target's process group.
    let rc = unsafe { libc::kill(-pgid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Live (non-zombie) pids whose process group is `pgid`, from `/proc/*/stat`.
fn live_group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            matches!(parse_stat(&stat), Some((state, group)) if group == pgid && state != 'Z')
        })
        .collect()
}

/// `(state, pgrp)` from a `/proc/PID/stat` line (the comm field may contain spaces and parens).
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

fn wait_group_gone(pgid: u32, grace: Duration) {
    let deadline = Instant::now() + grace;
    while !live_group_members(pgid).is_empty() && Instant::now() < deadline {
        thread::sleep(POLL_INTERVAL / 5);
    }
}

/// The last [`STDERR_TAIL_LINES`] lines of a file (at most its last 64 KiB), indented, after
/// the last [`EARLIER_ERROR_LINES`] lines before them that name an error: a program's own
/// message often comes before a long epilogue (mariadb-install-db's "Installation of system
/// tables failed!" and its advice bury the `ERROR` line that says why).
fn stderr_tail(path: &Path) -> String {
    const MAX_BYTES: u64 = 64 * 1024;
    let read = || -> io::Result<String> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(MAX_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) if text.trim().is_empty() => "  (stderr is empty)".to_string(),
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let (before, tail) = lines.split_at(lines.len().saturating_sub(STDERR_TAIL_LINES));
            let mut errors: Vec<String> = before
                .iter()
                .rev()
                .filter(|l| l.to_ascii_lowercase().contains("error"))
                .take(EARLIER_ERROR_LINES)
                .map(|l| format!("  (earlier) {l}"))
                .collect();
            errors.reverse();
            errors
                .into_iter()
                .chain(tail.iter().map(|l| format!("  {l}")))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Err(e) => format!("  (cannot read stderr: {e})"),
    }
}

/// A prepared readiness probe.
enum Probe {
    Tcp(SocketAddr),
    Http {
        addr: SocketAddr,
        host: String,
        path: String,
        /// Any status counts (the reference backend), not only 2xx/3xx.
        any_status: bool,
    },
}

impl Probe {
    fn new(readiness: &Readiness) -> Result<Probe, String> {
        match readiness {
            Readiness::Tcp { addr } => Ok(Probe::Tcp(*addr)),
            Readiness::Http { url } => parse_http_url(url, false),
            Readiness::HttpAnswer { url } => parse_http_url(url, true),
        }
    }

    /// `Ok` when ready; otherwise the HTTP status seen, if any, that did not count.
    fn check(&self) -> Result<(), Option<u16>> {
        match self {
            Probe::Tcp(addr) => TcpStream::connect_timeout(addr, PROBE_TIMEOUT)
                .map(drop)
                .map_err(|_| None),
            Probe::Http {
                addr,
                host,
                path,
                any_status,
            } => match http_status(addr, host, path) {
                Ok(status) if *any_status || (200..400).contains(&status) => Ok(()),
                Ok(status) => Err(Some(status)),
                Err(_) => Err(None),
            },
        }
    }
}

/// `; last status 404` for a readiness failure that saw a status, else nothing.
pub(crate) fn last_status_note(status: Option<u16>) -> String {
    status.map_or_else(String::new, |s| format!("; last status {s}"))
}

/// `http://host:port/path` → probe; only plain `http` is supported.
fn parse_http_url(url: &str, any_status: bool) -> Result<Probe, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{url}` is not an http:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if authority
        .rsplit(':')
        .next()
        .is_some_and(|p| p.parse::<u16>().is_ok())
        && !authority.ends_with(']')
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{authority}` in `{url}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{authority}` in `{url}` resolves to no address"))?;
    Ok(Probe::Http {
        addr,
        host: authority.to_string(),
        path: path.to_string(),
        any_status,
    })
}

/// Sends a `GET` and returns the status of the answer's HTTP status line.
fn http_status(addr: &SocketAddr, host: &str, path: &str) -> io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(addr, PROBE_TIMEOUT)?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT))?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    if is_status_line(&head) {
        Ok(head[9..12]
            .iter()
            .fold(0, |n, d| n * 10 + u16::from(d - b'0')))
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not an HTTP status line",
        ))
    }
}

/// `HTTP/x.y NNN` (the first 12 bytes of a status line).
fn is_status_line(head: &[u8; 12]) -> bool {
    head.starts_with(b"HTTP/") && head[8] == b' ' && head[9..12].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stderr_tail_keeps_the_error_lines_a_long_epilogue_pushed_out() {
        let path = std::env::temp_dir().join(format!("lb-tail-{}.log", std::process::id()));
        let mut text =
            String::from("starting\nERROR: 1051  Unknown table 'mysql.x'\n[ERROR] Aborting\n");
        for i in 0..STDERR_TAIL_LINES + 5 {
            text.push_str(&format!("advice {i}\n"));
        }
        std::fs::write(&path, &text).unwrap();
        let got = stderr_tail(&path);
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines.len(), 2 + STDERR_TAIL_LINES, "{got}");
        assert_eq!(lines[0], "  (earlier) ERROR: 1051  Unknown table 'mysql.x'");
        assert_eq!(lines[1], "  (earlier) [ERROR] Aborting");
        assert_eq!(lines[2], "  advice 5");
        assert_eq!(
            lines[lines.len() - 1],
            format!("  advice {}", STDERR_TAIL_LINES + 4)
        );
        assert!(!got.contains("starting"), "{got}");
    }

    #[test]
    fn parses_stat_with_odd_comm() {
        let stat = "123 (a) b (c) S 1 456 456 0 -1";
        assert_eq!(parse_stat(stat), Some(('S', 456)));
    }

    #[test]
    fn recognises_status_lines() {
        assert!(is_status_line(b"HTTP/1.0 200"));
        assert!(is_status_line(b"HTTP/1.1 503"));
        assert!(!is_status_line(b"SSH-2.0-Open"));
    }

    #[test]
    fn parses_http_urls() {
        let Ok(Probe::Http {
            addr, host, path, ..
        }) = parse_http_url("http://127.0.0.1:8080/health", false)
        else {
            panic!("not parsed");
        };
        assert_eq!(addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (host.as_str(), path.as_str()),
            ("127.0.0.1:8080", "/health")
        );
        assert!(parse_http_url("https://127.0.0.1/", false).is_err());
    }

    #[test]
    fn refuses_dangerous_groups() {
        assert!(signal_group(0, 0).is_err());
        assert!(signal_group(1, 0).is_err());
    }
}
