//! The help lines a new user reads first must say what the commands really do (issue 16,
//! "never mislead"): these pin the key sentences of `--help`, so that a reworded doc comment
//! cannot silently bring back a false claim (`demo` "in-process", `compare` for runs only, ...).

use crate::support::{bin, free_port, text};

/// `loadbench ARGS` (a `--help`), its stdout with every run of whitespace made one space, so
/// the checks do not depend on where clap wraps the lines.
fn help(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(out.status.success(), "loadbench {args:?} failed: {out:?}");
    let (stdout, _) = text(&out);
    stdout.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn assert_says(help: &str, what: &str) {
    assert!(help.contains(what), "help should say {what:?}:\n{help}");
}

#[test]
fn demo_says_it_starts_the_reference_backend_and_nginx_as_processes() {
    for page in [help(&["demo", "--help"]), help(&["--help"])] {
        assert!(
            !page.contains("in-process"),
            "demo is not in-process:\n{page}"
        );
        assert_says(
            &page,
            "start the reference backend (`loadbench serve`, as a process)",
        );
        assert_says(&page, "when nginx is installed, nginx in front of it");
    }
}

#[test]
fn report_says_it_reads_runs_find_max_and_bench_results_and_writes_charts_beside_html() {
    let page = help(&["report", "--help"]);
    assert_says(&page, "(run, find-max or bench)");
    assert_says(
        &page,
        "`loadbench find-max --save` or `loadbench bench` (its `result.json`)",
    );
    assert_says(&page, "with html, the chart SVGs and PNGs");
    assert_says(&page, "are written beside it");
}

#[test]
fn compare_says_it_reads_two_runs_or_two_benches_but_not_find_max() {
    let page = help(&["compare", "--help"]);
    assert_says(&page, "Compare two saved run results or two bench results");
    assert_says(&page, "a `loadbench bench` result.json");
    assert_says(&page, "Not a find-max result");
    let top = help(&["--help"]);
    assert_says(&top, "Compare two saved run results or two bench results");
}

#[test]
fn run_says_n_must_be_at_least_c_and_refuses_less() {
    let page = help(&["run", "--help"]);
    assert_says(&page, "N must be at least -c");
    // What the help promises is what the command does: -n below -c is refused before any
    // connection is made (nothing listens on the port), with exit code 2.
    let url = format!("http://127.0.0.1:{}/", free_port());
    let out = bin()
        .args(["run", &url, "-n", "3", "-c", "4", "-q"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("-n 3 is below -c 4"), "{stderr}");
}

/// Issue 35 point 8: every error line of the CLI reads `error: …` (lower case, as clap's own),
/// never `Error:`: a usage mistake, a bad value, a missing file, a refused connection, a file
/// of the wrong kind. Each is one line.
#[test]
fn every_error_line_starts_with_lower_case_error() {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("lb-error-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_json = dir.join("not.json");
    std::fs::write(&not_json, "hello").unwrap();
    let not_json = not_json.to_str().unwrap();
    let refused = format!("http://127.0.0.1:{port}/");
    let cases: [&[&str]; 7] = [
        &["run"],
        &["run", "http://127.0.0.1:1/", "--nonsense"],
        &["run", &refused, "-c", "0"],
        &["run", &refused, "-n", "2", "-c", "1"],
        &["report", "/nonexistent/result.json"],
        &["report", not_json],
        &["merge", "/nonexistent/shard.json"],
    ];
    for args in cases {
        let out = bin().args(args).output().unwrap();
        let (_, err) = text(&out);
        assert!(!out.status.success(), "{args:?} succeeded: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("Error:"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
