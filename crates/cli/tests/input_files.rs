//! Every file the CLI reads as input goes through one bounded reader (issue 33, point 9): a
//! FIFO without a writer, a device such as `/dev/zero`, a directory and a file over the kind's
//! limit are each refused with one line, exit 2, at once: before any load or target starts,
//! never blocking and never filling memory. Each command is killed after 20 s, which fails the
//! test (a FIFO blocked `report` and `bench` forever before).

use crate::support::{bin, tempdir, text};
use loadbench_upstream::{Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// How long a refusal may take before the test calls the command hung (it takes milliseconds).
const HUNG: Duration = Duration::from_secs(20);

/// Runs `loadbench ARGS`, killed after [`HUNG`] (and the test failed).
fn loadbench(args: &[&str]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > HUNG {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{args:?} still ran after {HUNG:?}: {:?}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Asserts exit 2 and one line on stderr holding every one of `expected`.
fn assert_refused(args: &[&str], expected: &[&str]) {
    let out = loadbench(args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    for e in expected {
        assert!(stderr.contains(e), "{args:?}: no {e:?} in {stderr}");
    }
}

/// The four kinds of file that are not one to read, each with what its refusal says. The
/// sparse file is `over` bytes long but holds no disk blocks. With an extension (`.csv`: a
/// `--data` file is typed by it), each name ends with it and the device is a link to
/// `/dev/zero`.
fn hostile_files(dir: &Path, over: u64, ext: &str) -> Vec<(PathBuf, Vec<&'static str>)> {
    let fifo = dir.join(format!("fifo{ext}"));
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let sparse = dir.join(format!("sparse{ext}"));
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(over)
        .unwrap();
    let (zero, folder) = if ext.is_empty() {
        (PathBuf::from("/dev/zero"), dir.to_path_buf())
    } else {
        let zero = dir.join(format!("zero{ext}"));
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let folder = dir.join(format!("folder{ext}"));
        std::fs::create_dir(&folder).unwrap();
        (zero, folder)
    };
    let give_regular = "give a regular file";
    vec![
        (
            zero,
            vec!["is a character device, not a regular file", give_regular],
        ),
        (
            fifo,
            vec!["is a FIFO (named pipe), not a regular file", give_regular],
        ),
        (
            folder,
            vec!["is a directory, not a regular file", "give a file in it"],
        ),
        (sparse, vec!["over the limit of"]),
    ]
}

const MIB: u64 = 1 << 20;

#[test]
fn report_compare_and_merge_refuse_what_is_not_a_result_file_at_once() {
    let dir = tempdir("input-results");
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare-base.json");
    let good = good.to_str().unwrap();
    for (path, expected) in hostile_files(&dir, 257 * MIB, "") {
        let path = path.to_str().unwrap();
        let mut expected = expected.clone();
        expected.push("result ");
        if path.ends_with("/sparse") {
            expected.push("is 257.0 MiB, over the limit of 256.0 MiB");
        }
        assert_refused(&["report", path], &expected);
        assert_refused(&["compare", good, path], &expected);
        if Path::new(path).is_dir() {
            // merge reads a folder of shard results (`merge FOLDER`, docs/distributed.md):
            // this one holds none (only the FIFO and the sparse file), and it says so.
            assert_refused(
                &["merge", path],
                &[
                    "holds no shard result",
                    "give the folder the shards wrote to",
                ],
            );
        } else {
            assert_refused(&["merge", path], &expected);
        }
    }
}

#[test]
fn bench_refuses_what_is_not_a_scenario_file_before_any_target_starts() {
    let dir = tempdir("input-scenario");
    for (path, expected) in hostile_files(&dir, 2 * MIB, "") {
        let mut expected = expected.clone();
        expected.push("scenario ");
        assert_refused(&["bench", path.to_str().unwrap()], &expected);
    }
}

#[test]
fn run_refuses_flow_requests_body_and_data_files_that_are_not_files_before_any_load() {
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let url = format!("http://{}/", server.local_addr());
    let cases: [(&str, &str, u64, &str); 4] = [
        ("--flow", "--flow ", 2 * MIB, ""),
        ("--requests-file", "--requests-file ", 17 * MIB, ""),
        ("--body-file", "--body-file ", 257 * MIB, ""),
        ("--data", "--data ", 5 << 30, ".csv"),
    ];
    for (flag, named, over, ext) in cases {
        let dir = tempdir("input-run");
        for (path, expected) in hostile_files(&dir, over, ext) {
            let mut expected = expected.clone();
            expected.push(named);
            if path.file_stem().is_some_and(|n| n == "sparse") {
                expected.push(if flag == "--data" {
                    "split it"
                } else {
                    "check that it is the right file"
                });
            }
            let path = path.to_str().unwrap();
            assert_refused(&["run", &url, "-n", "1", "-c", "1", flag, path], &expected);
        }
    }
    assert_eq!(server.stats().total, 0, "no load started");
}
