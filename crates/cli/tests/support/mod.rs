//! Shared helpers for the CLI's integration tests: run the real binary ([`Run`] for `loadbench
//! run`), start a real nginx on a free loopback port, read saved results.

#![allow(dead_code)]

pub(crate) mod admin;
pub(crate) mod caddy;
/// The raw server under `raw` (shared with the engine's tests).
#[path = "../../../engine/tests/listener.rs"]
pub(crate) mod listener;
pub(crate) mod nginx;
/// `examples/orders.toml`'s targets, started without load; the harness's tests use them too.
#[path = "../../../harness/tests/orders_targets.rs"]
pub(crate) mod orders;
pub(crate) mod prometheus;
/// The raw test server lives with the engine's tests, which drive the engine against it.
#[path = "../../../engine/tests/raw.rs"]
pub(crate) mod raw;

use loadbench_model::RunResult;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Refused input: `run` exits 2 with one line on stderr holding `want`, and saved nothing.
pub(crate) fn refused(run: Run, want: &str) {
    let ran = run.json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(want), "want {want:?}: {stderr}");
    assert!(ran.saved.is_none(), "nothing ran");
}

/// A scenario's `[[target]]` for a server the test runs itself: a placeholder process
/// (`sleep`) whose `url` and `ready.tcp` name it, so the server's counts can be read after the
/// bench stopped its targets.
pub(crate) fn placeholder_target(name: &str, url: &str, addr: &str) -> String {
    format!(
        "[[target]]\nname = \"{name}\"\ncommand = \"sleep\"\nargs = [\"300\"]\nurl = \"{url}\"\n\
         [target.ready]\ntcp = \"{addr}\"\n"
    )
}

pub(crate) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadbench"))
}

/// One `loadbench run URL ARGS --save FILE --quiet` of the real binary, its result saved into a
/// fresh directory and read back: `Run::new(&url).args(["-c", "4", "-d", "1s"]).ok()`.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    args: Vec<String>,
}

/// What a [`Run`] gave: the process output and the result it saved (a failed run saves one
/// too; a rejected command line does not).
#[derive(Debug)]
pub(crate) struct Ran {
    pub out: Output,
    pub saved: Option<RunResult>,
}

impl Run {
    pub(crate) fn new(url: &str) -> Run {
        Run {
            args: vec!["run".into(), url.into()],
        }
    }

    /// `loadbench run` without a URL argument (a request mix gives its URLs with `-u` or
    /// `--requests-file`).
    pub(crate) fn without_url() -> Run {
        Run {
            args: vec!["run".into()],
        }
    }

    /// Adds command-line arguments after the URL.
    pub(crate) fn args<S: AsRef<str>>(mut self, args: impl IntoIterator<Item = S>) -> Run {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// Runs it, whatever the exit code, and parses the saved JSON result if there is one.
    pub(crate) fn json(self) -> Ran {
        let dir = tempdir("run");
        let save = dir.join("result.json");
        let out = bin()
            .args(&self.args)
            .arg("--save")
            .arg(&save)
            .arg("--quiet")
            .output()
            .expect("the loadbench binary runs");
        let saved = std::fs::read_to_string(&save)
            .ok()
            .map(|t| RunResult::from_json(&t).expect("saved result reads back"));
        let _ = std::fs::remove_dir_all(&dir);
        Ran { out, saved }
    }

    /// Runs it, asserts exit code 0, and returns the saved result.
    pub(crate) fn ok(self) -> RunResult {
        let args = self.args.join(" ");
        let ran = self.json();
        assert!(ran.out.status.success(), "{args}: {:?}", ran.text());
        ran.result()
    }
}

impl Ran {
    pub(crate) fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    /// Stdout and stderr.
    pub(crate) fn text(&self) -> (String, String) {
        text(&self.out)
    }

    /// The saved result, which must exist.
    pub(crate) fn result(self) -> RunResult {
        let output = self.text();
        self.saved
            .unwrap_or_else(|| panic!("no result saved: {output:?}"))
    }
}

/// Who may use the 2 cores while a test measures rates or timings. All modules share one
/// process, so a test checking that a rate holds to the second could otherwise share the
/// machine with a bench of nginx and HAProxy at full load (as separate binaries, cargo ran
/// find_max.rs, open.rs and bench.rs one after another).
static MACHINE: RwLock<()> = RwLock::new(());

/// Held by a test whose assertions depend on rates or timings: it runs beside no [`loading`]
/// test and no other measuring one.
pub(crate) fn measuring() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a test that keeps the cores busy for seconds; such tests may run side by side.
pub(crate) fn loading() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Checks a concurrency that loadbench estimated by Little's law (throughput × mean time in
/// service) for a target that serves at most `limit` requests at once (by construction, such
/// as the reference backend's `max_served_conns`). No estimate can be above the limit by more
/// than a window's edges allow (25%). On a quiet host it is about the limit (at least 75% of
/// it); on a host the run itself found busy (its busy-host finding, `busy`), the generator
/// may have had no CPU to send the next request at once, which lowers the estimate by any
/// amount, and the run says every figure is unreliable: then it need only be above zero.
/// What the estimate rests on is the machine's speed; the bound and the warning are behaviour.
pub(crate) fn assert_little(estimate: f64, limit: f64, busy: bool, context: &dyn std::fmt::Debug) {
    assert!(
        estimate > 0.0 && estimate <= 1.25 * limit,
        "{estimate} for a limit of {limit}: {context:?}"
    );
    assert!(
        busy || estimate >= 0.75 * limit,
        "{estimate} for a limit of {limit} on a host not found busy: {context:?}"
    );
}

/// Shells spinning on the host's cores until dropped (each ends by itself after 2 minutes).
pub(crate) struct BusyLoop(Vec<std::process::Child>);

impl BusyLoop {
    /// One shell spinning on one core.
    pub(crate) fn start() -> BusyLoop {
        BusyLoop::spin(1)
    }

    /// `n` shells, each spinning on a core.
    pub(crate) fn spin(n: usize) -> BusyLoop {
        BusyLoop(
            (0..n)
                .map(|_| {
                    Command::new("timeout")
                        .args(["120", "sh", "-c", "while :; do :; done"])
                        .spawn()
                        .expect("timeout and sh")
                })
                .collect(),
        )
    }

    /// A busy loop started by the caller (pinned, say).
    pub(crate) fn of(child: std::process::Child) -> BusyLoop {
        BusyLoop(vec![child])
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // TERM, which `timeout` passes on to its shell (a KILL would leave the shell
            // spinning until its 2 minutes are up).
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
    }
}

pub(crate) fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) * 1000 + u64::from(std::process::id() % 1000)
}

/// A fresh directory for one test, under this test process's own folder in the temp dir
/// (`loadbench-tests-PID/NAME-N`). Tests leave their folders behind (a failed one is worth
/// reading); the first call in a process removes the folders of test processes that are no longer
/// running, so runs do not pile up in the temp dir.
pub(crate) fn tempdir(name: &str) -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| {
        remove_dead_test_dirs();
        std::env::temp_dir().join(format!("loadbench-tests-{}", std::process::id()))
    });
    let d = root.join(format!("{name}-{}", unique()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes `loadbench-tests-PID` folders (and the older flat `loadbench-test-NAME-PID-N` ones)
/// whose process is gone.
fn remove_dead_test_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = if let Some(pid) = name.strip_prefix("loadbench-tests-") {
            pid.parse::<u32>().ok()
        } else if name.starts_with("loadbench-test-") {
            name.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok())
        } else {
            None
        };
        let gone = pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether a program is on PATH; tests that need it skip without it, except under CI where
/// `.ci/run` must have installed it.
pub(crate) fn have(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("CI").is_some() {
        panic!("{program} is not installed, but CI must install it (see .ci/run)");
    }
    if !found {
        eprintln!("skipping: {program} is not installed");
    }
    found
}
