//! Issue 16 point 8: wrk's headline (requests, req/s, p50/p99, errors) sits within the first
//! five lines of `loadbench run`'s text, and says exactly what the detailed sections below and
//! the saved JSON say: closed model, open model, a `-n` run, and `loadbench report` of the file.

use crate::support::{bin, tempdir, text};
use loadbench_model::RunResult;
use loadbench_report::units;
use loadbench_upstream::{Server, ServerConfig};

/// The figures of the headline, or of the sections below, as printed.
#[derive(Debug, PartialEq)]
struct Figures {
    requests: String,
    elapsed: String,
    rate: String,
    p50: String,
    p99: String,
    errors: String,
}

/// `loadbench run URL ARGS --save FILE`: its stdout, the saved result and `loadbench report`
/// of that file.
fn run(args: &[&str]) -> (String, RunResult, String) {
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let url = format!("http://{}/", server.local_addr());
    let dir = tempdir("headline");
    let save = dir.join("result.json");
    let mut cmd = bin();
    cmd.args(["run", &url]).args(args).arg("--save").arg(&save);
    let out = cmd.output().expect("the loadbench binary runs");
    assert!(out.status.success(), "{args:?}: {:?}", text(&out));
    let saved = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let report = bin().arg("report").arg(&save).output().unwrap();
    assert!(report.status.success(), "{:?}", text(&report));
    let _ = std::fs::remove_dir_all(&dir);
    (text(&out).0, saved, text(&report).0)
}

/// `  N requests in 1.00s: R req/s[ (target T req/s)], p50 A, p99 B, E errors[ (P)]`, found
/// among the first five lines; also returns the target rate when there is one.
fn headline(report: &str) -> (Figures, Option<String>) {
    let first: Vec<&str> = report.lines().take(5).collect();
    let line = first
        .iter()
        .find(|l| l.contains(" requests in ") && l.contains(" req/s") && l.contains(", p50 "))
        .unwrap_or_else(|| panic!("no headline in the first five lines:\n{}", first.join("\n")));
    let (requests, rest) = line.trim().split_once(" in ").unwrap();
    let (elapsed, rest) = rest.split_once(": ").unwrap();
    let parts: Vec<&str> = rest.split(", ").collect();
    assert_eq!(parts.len(), 4, "{line}");
    let (rate, target) = match parts[0].split_once(" req/s (target ") {
        Some((rate, t)) => (rate, Some(t.trim_end_matches(" req/s)").to_string())),
        None => (parts[0].trim_end_matches(" req/s"), None),
    };
    let figures = Figures {
        requests: first_word(requests),
        elapsed: elapsed.to_string(),
        rate: rate.to_string(),
        p50: parts[1].strip_prefix("p50 ").unwrap().to_string(),
        p99: parts[2].strip_prefix("p99 ").unwrap().to_string(),
        errors: first_word(parts[3]),
    };
    (figures, target)
}

fn first_word(s: &str) -> String {
    s.split_whitespace().next().unwrap_or_default().to_string()
}

/// The value of a `  Key:   value` line of the Summary (its first word).
fn value(report: &str, key: &str) -> String {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} line:\n{report}"));
    first_word(line.split_once(':').unwrap().1)
}

/// The cells of the first line whose first word is `first`.
fn row<'a>(report: &'a str, first: &str) -> Vec<&'a str> {
    let line = report
        .lines()
        .find(|l| l.split_whitespace().next() == Some(first))
        .unwrap_or_else(|| panic!("no {first} row:\n{report}"));
    line.split_whitespace().collect()
}

/// The same figures read from the Summary, the latency distribution and the Phases table.
fn details(report: &str) -> Figures {
    let (p50, p99) = (row(report, "50%")[1], row(report, "99%")[1]);
    let total = row(report, "total");
    assert_eq!((total[4], total[5]), (p50, p99), "Phases' total row");
    Figures {
        requests: value(report, "Requests completed"),
        elapsed: value(report, "Elapsed"),
        rate: value(report, "Requests/sec"),
        p50: p50.to_string(),
        p99: p99.to_string(),
        errors: value(report, "Errors"),
    }
}

/// The same figures computed from the saved JSON.
fn saved(r: &RunResult) -> Figures {
    let s = &r.stats;
    let h = &s.latency.hist;
    Figures {
        requests: s.requests.to_string(),
        elapsed: units::duration_us(s.elapsed_us as f64),
        rate: units::rate(s.summary().requests_per_sec),
        p50: units::duration_ns(h.percentile_ns(50.0) as f64),
        p99: units::duration_ns(h.percentile_ns(99.0) as f64),
        errors: s.errors.total().to_string(),
    }
}

/// Runs `loadbench run ARGS` and checks its headline; returns the target rate it names, if
/// any, and the text.
fn check(args: &[&str]) -> (Option<String>, String) {
    let (stdout, result, report) = run(args);
    assert!(result.stats.requests > 0, "{stdout}");
    let (figures, target) = headline(&stdout);
    assert_eq!(figures, details(&stdout), "{stdout}");
    assert_eq!(figures, saved(&result), "{stdout}");
    assert_eq!(headline(&report), (figures, target.clone()), "{report}");
    (target, stdout)
}

#[test]
fn headline_in_the_first_five_lines_matches_the_details_and_the_saved_json() {
    assert_eq!(check(&["-d", "1s", "-c", "4", "-t", "1"]).0, None);
    assert_eq!(check(&["-n", "300", "-c", "2", "-t", "1"]).0, None);
    let (target, stdout) = check(&["--rate", "200", "-d", "1s", "-t", "1"]);
    assert_eq!(target, Some(value(&stdout, "Target rate")), "{stdout}");
}
