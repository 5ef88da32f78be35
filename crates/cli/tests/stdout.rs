//! A stdout that fails must neither panic nor lose the run (issue 11, point 2): the result is
//! saved before it is printed, a closed pipe ends quietly, a full disk is one line and exit 1.

use crate::support::raw::{Mode, RawServer};
use crate::support::{bin, tempdir};
use std::process::Stdio;

/// `run URL -n 20 -c 2 --save FILE` with stdout as given; returns (exit code, stderr, saved).
fn run_with_stdout(stdout: Stdio, name: &str) -> (Option<i32>, String, bool) {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let dir = tempdir(name);
    let save = dir.join("r.json");
    let out = bin()
        .args(["run", &server.url("/"), "-n", "20", "-c", "2", "--save"])
        .arg(&save)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("the loadbench binary runs");
    let saved = std::fs::metadata(&save).is_ok_and(|m| m.len() > 0);
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, saved)
}

#[test]
fn closed_pipe_on_stdout_ends_quietly_and_saves() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let (code, stderr, saved) = run_with_stdout(Stdio::from(writer), "epipe");
    assert!(saved, "r.json written; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn full_disk_on_stdout_is_one_line_and_saves() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let (code, stderr, saved) = run_with_stdout(Stdio::from(full), "full");
    assert!(saved, "r.json written; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(1), "{stderr}");
    let errors: Vec<_> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("stdout"), "{stderr}");
}
