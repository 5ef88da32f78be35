//! Shared helpers for the CLI's integration tests: run the real binary, start a real nginx on a
//! free loopback port, read saved results.

#![allow(dead_code)]

pub mod nginx;
pub mod raw;

use loadbench_model::RunResult;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadbench"))
}

/// Runs `loadbench` with `args`, saving the JSON result into `dir`; returns the output and the
/// result (if one was saved).
pub fn run(dir: &Path, args: &[&str]) -> (Output, Option<RunResult>) {
    let save = dir.join(format!("result-{}.json", unique()));
    let out = bin()
        .args(args)
        .arg("--save")
        .arg(&save)
        .arg("--quiet")
        .output()
        .expect("the loadbench binary runs");
    let result = std::fs::read_to_string(&save)
        .ok()
        .map(|t| RunResult::from_json(&t).expect("saved result reads back"));
    (out, result)
}

pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) * 1000 + u64::from(std::process::id() % 1000)
}

pub fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "loadbench-test-{name}-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether a program is on PATH; tests that need it skip without it, except under CI where
/// `.ci/run` must have installed it.
pub fn have(program: &str) -> bool {
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
