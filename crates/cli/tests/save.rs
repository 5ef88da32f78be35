//! A result whose own file cannot be written after the run is never lost (issue 11, points 2
//! and 3): `--save /dev/full`, or a folder replaced by a file while the load ran, puts the
//! result in `loadbench-<kind>-<stamp>.json` in the working directory, says so in one line on
//! stderr naming the failed path and the reason, and exits 1. For run, find-max and bench.

use crate::support::raw::{Mode, RawServer};
use crate::support::{bin, tempdir, text};
use loadbench_model::{BenchResult, FindMaxResult, RunResult};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `loadbench ARGS` run in the fresh directory `cwd`, output captured.
fn spawn(cwd: &Path, args: &[&str], save: &Path) -> Child {
    bin()
        .current_dir(cwd)
        .args(args)
        .arg("--save")
        .arg(save)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs")
}

/// The one fallback file written into `cwd` for `kind`.
fn fallback(cwd: &Path, kind: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(cwd)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&format!("loadbench-{kind}-")) && name.ends_with(".json")
        })
        .collect();
    assert_eq!(
        files.len(),
        1,
        "one fallback file in {}: {files:?}",
        cwd.display()
    );
    files[0].clone()
}

/// Exit 1, no panic, and exactly one `error:` line naming `failed`, why, and `to`.
fn assert_one_line(out: &Output, failed: &Path, to: &Path) {
    let (_, stderr) = text(out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    let line = errors[0];
    let name = to.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        line.contains(&format!("cannot write {} (", failed.display())),
        "{line}"
    );
    assert!(line.contains(&name) && line.ends_with("instead"), "{line}");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn run_saved_to_dev_full_goes_to_a_fallback_file() {
    let Ok(meta) = std::fs::metadata("/dev/full") else {
        return;
    };
    assert!(!meta.is_file());
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let cwd = tempdir("save-full");
    let save = Path::new("/dev/full");
    let out = spawn(
        &cwd,
        &["run", &server.url("/"), "-n", "30", "-c", "2", "-q"],
        save,
    )
    .wait_with_output()
    .unwrap();
    let to = fallback(&cwd, "run");
    assert_one_line(&out, save, &to);
    let r = RunResult::from_json(&read(&to)).expect("the fallback reads back");
    assert_eq!(
        r.stats.sent,
        server.requests(),
        "every request is in the fallback"
    );
    assert_eq!(r.stats.requests, 30);
    assert!(
        !std::fs::metadata("/dev/full").unwrap().is_file(),
        "still a device"
    );
    let _ = std::fs::remove_dir_all(&cwd);
}

/// Waits (bounded) until `ready` holds, then replaces the directory `dir` by a plain file, so
/// that nothing can be written under it any more (not even by re-creating it).
fn replace_by_file_when(dir: &Path, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::write(dir, b"not a directory").unwrap();
}

#[test]
fn run_whose_folder_is_replaced_during_the_run_goes_to_a_fallback_file() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let cwd = tempdir("save-gone");
    let folder = cwd.join("out");
    let save = folder.join("r.json");
    std::fs::create_dir_all(&folder).unwrap();
    let args = ["run", &server.url("/"), "-d", "3s", "-c", "2", "-q"];
    let child = spawn(&cwd, &args, &save);
    replace_by_file_when(&folder, || server.requests() > 0);
    let out = child.wait_with_output().unwrap();
    let to = fallback(&cwd, "run");
    assert_one_line(&out, &save, &to);
    let r = RunResult::from_json(&read(&to)).expect("the fallback reads back");
    assert_eq!(
        r.stats.sent,
        server.requests(),
        "every request is in the fallback"
    );
    let _ = std::fs::remove_dir_all(&cwd);
}

#[test]
fn find_max_saved_to_dev_full_goes_to_a_fallback_file() {
    if std::fs::metadata("/dev/full").is_err() {
        return;
    }
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let cwd = tempdir("save-find-max");
    let save = Path::new("/dev/full");
    let args = [
        "find-max",
        &server.url("/"),
        "--slo",
        "p99<1s",
        "--max-steps",
        "2",
        "--step-duration",
        "500ms",
        "--warmup",
        "0s",
        "--start-rate",
        "20",
        "-t",
        "1",
        "-q",
    ];
    let out = spawn(&cwd, &args, save).wait_with_output().unwrap();
    let to = fallback(&cwd, "find-max");
    assert_one_line(&out, save, &to);
    let r = FindMaxResult::from_json(&read(&to)).expect("the fallback reads back");
    assert_eq!(r.steps.len(), 2, "both steps are in the fallback");
    let _ = std::fs::remove_dir_all(&cwd);
}

#[test]
fn bench_whose_run_folder_is_replaced_keeps_every_step_in_a_fallback_file() {
    let cwd = tempdir("save-bench");
    let results = cwd.join("results");
    let toml = "name = \"gone\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
                [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [1, 2]\n";
    std::fs::write(cwd.join("gone.toml"), toml).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_loadbench"))
        .current_dir(&cwd)
        .args([
            "bench",
            "gone.toml",
            "--results",
            "results",
            "--duration",
            "1s",
        ])
        .args(["--warmup", "0s", "--rounds", "1", "--cooldown", "0s", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let folder = || {
        std::fs::read_dir(&results)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("result.json").is_file())
    };
    replace_by_file_when(&results, || folder().is_some());
    let out = child.wait_with_output().unwrap();
    let to = fallback(&cwd, "bench");
    let stderr = text(&out).1;
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("result.json (") && errors[0].ends_with("instead"));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let r = BenchResult::from_json(&read(&to)).expect("the fallback reads back");
    assert_eq!(r.rounds.len(), 2, "both steps are in the fallback");
    assert!(r.rounds.iter().all(|x| x.error.is_none()), "{:?}", r.rounds);
    let _ = std::fs::remove_dir_all(&cwd);
}
