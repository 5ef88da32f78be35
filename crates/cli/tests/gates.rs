//! Gates (`--slo` on `run` and `bench`, docs/gates.md) against the reference backend: for each
//! kind (latency, errors, throughput, a bench's relative speed) a passing and a failing case,
//! the exit codes (0 passed, 4 a gate failed, 2 bad input before any load), the gate lines in
//! every report format, and the JUnit file validated with xmllint against a schema written
//! from the format Jenkins and GitLab read (tests/fixtures/junit.xsd). Nothing here depends on
//! the machine's speed: a failing latency gate is a 50 ms answer against a 10 ms limit, a
//! failing throughput gate one connection on 50 ms answers (at most 20 req/s) against 1000.

use crate::support::{bin, have, tempdir, text, Run};
use loadbench_model::{GateOutcome, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::Output;

fn backend() -> Server {
    Server::start(ServerConfig {
        threads: 1,
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts")
}

fn url(s: &Server, path: &str) -> String {
    format!("http://{}{path}", s.local_addr())
}

/// `loadbench run URL -c 2 -n N ARGS`, whatever the exit code, with its saved result.
fn run(url: &str, n: u32, args: &[&str]) -> (Option<i32>, String, RunResult) {
    let ran = Run::new(url)
        .args(["-c", "2", "-t", "1", "-n", &n.to_string()])
        .args(args)
        .json();
    let code = ran.code();
    let (_, stderr) = ran.text();
    (code, stderr, ran.result())
}

fn outcomes(r: &RunResult) -> Vec<GateOutcome> {
    let gates = r.gates.as_ref().expect("gates judged");
    gates.verdicts.iter().map(|v| v.outcome).collect()
}

#[test]
fn latency_gates_pass_under_the_limit_and_fail_over_it_with_exit_4() {
    let s = backend();
    let slow = url(&s, "/delay/50ms");
    let (code, stderr, r) = run(&slow, 20, &["--slo", "p50<5s,mean<5s"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(outcomes(&r), [GateOutcome::Pass, GateOutcome::Pass]);

    let (code, stderr, r) = run(&slow, 20, &["--slo", "p50<10ms"]);
    assert_eq!(code, Some(4), "{stderr}");
    let v = &r.gates.as_ref().unwrap().verdicts[0];
    assert_eq!(v.outcome, GateOutcome::Fail);
    assert!(v.measured.unwrap() >= 50_000.0, "{v:?}");
    assert_eq!(v.gate.limit, 10_000.0);
    let line = stderr.lines().find(|l| l.starts_with("gate failed: "));
    assert!(
        line.is_some_and(|l| l.contains("p50<10ms: measured") && l.contains("limit < 10.00ms")),
        "{stderr}"
    );
}

#[test]
fn error_gates_pass_on_clean_answers_and_fail_on_500s() {
    let s = backend();
    let (code, stderr, r) = run(&url(&s, "/"), 50, &["--slo", "errors<1%,errors<=0"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(outcomes(&r), [GateOutcome::Pass, GateOutcome::Pass]);

    let (code, stderr, r) = run(&url(&s, "/status/500"), 50, &["--slo", "errors<1%"]);
    assert_eq!(code, Some(4), "{stderr}");
    let v = &r.gates.as_ref().unwrap().verdicts[0];
    assert_eq!((v.outcome, v.measured), (GateOutcome::Fail, Some(1.0)));
    assert!(
        stderr.contains("gate failed: errors<1%: measured 100.00%"),
        "{stderr}"
    );
}

#[test]
fn throughput_gates_pass_above_the_limit_and_fail_below_it() {
    let s = backend();
    // 100 answers at any speed a test machine has take far less than 100 s.
    let (code, stderr, r) = run(&url(&s, "/"), 100, &["--slo", "rps>1"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(outcomes(&r), [GateOutcome::Pass]);

    // One connection on 50 ms answers makes at most 20 req/s.
    let ran = Run::new(&url(&s, "/delay/50ms"))
        .args(["-c", "1", "-n", "10", "--slo", "rps>=1000"])
        .json();
    assert_eq!(ran.code(), Some(4), "{:?}", ran.text());
    let r = ran.result();
    let v = &r.gates.as_ref().unwrap().verdicts[0];
    assert_eq!(v.outcome, GateOutcome::Fail);
    assert!(v.measured.unwrap() <= 20.5, "{v:?}");
}

#[test]
fn a_gate_without_enough_responses_is_unjudged_and_fails_unless_allowed() {
    let s = backend();
    let (code, stderr, r) = run(&url(&s, "/"), 20, &["--slo", "p99<5s"]);
    assert_eq!(code, Some(4), "{stderr}");
    let v = &r.gates.as_ref().unwrap().verdicts[0];
    assert_eq!((v.outcome, v.measured), (GateOutcome::Unjudged, None));
    let reason = v.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("at least 100 complete responses, the run had 20"),
        "{reason}"
    );
    assert!(
        stderr.contains("gate failed: p99<5s: unjudged: p99 needs"),
        "{stderr}"
    );

    let (code, stderr, r) = run(
        &url(&s, "/"),
        20,
        &["--slo", "p99<5s", "--slo-allow-unjudged"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(outcomes(&r), [GateOutcome::Unjudged]);
    assert!(r.gates.unwrap().allow_unjudged);
}

#[test]
fn bad_gates_are_one_line_exit_2_and_start_no_load() {
    let s = backend();
    for (gate, needle) in [
        ("p99=5ms", "is not a gate"),
        ("latency<5ms", "unknown metric 'latency'"),
        ("p99<5", "with a unit"),
        ("errors<2.5", "fractional count"),
        ("nginx/direct>0.9", "compares two bench targets"),
    ] {
        let out = bin()
            .args(["run", &url(&s, "/"), "-n", "10", "-c", "1", "--slo", gate])
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{gate}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{gate}: {stderr}");
        assert!(
            stderr.contains("--slo") && stderr.contains(needle),
            "{gate}: {stderr}"
        );
    }
    assert_eq!(s.stats().total, 0, "a rejected gate started a load");
}

/// Renders a saved result with `loadbench report -f FORMAT`.
fn report(saved: &Path, format: &str) -> String {
    let out = bin()
        .args(["report", "-f", format])
        .arg(saved)
        .output()
        .unwrap();
    assert!(out.status.success(), "{format}: {:?}", text(&out));
    text(&out).0
}

#[test]
fn every_format_shows_each_gate_with_its_measured_value_and_result() {
    let s = backend();
    let dir = tempdir("gates-formats");
    let saved = dir.join("r.json");
    let out = bin()
        .args([
            "run",
            &url(&s, "/delay/50ms"),
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "20",
            "-q",
        ])
        .args(["--slo", "p50<10ms,errors<1%", "--save"])
        .arg(&saved)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    // Text, on stdout at the end of the run.
    let gate_line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_default()
    };
    assert!(
        stdout.contains("Gates (2 gates: 1 passed, 1 failed)"),
        "{stdout}"
    );
    let p50 = gate_line("p50<10ms");
    assert!(
        p50.trim_start().starts_with("FAIL") && p50.contains("limit < 10.00ms"),
        "{stdout}"
    );
    assert!(
        gate_line("errors<1%").trim_start().starts_with("pass"),
        "{stdout}"
    );
    // JSON: the typed verdicts.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let verdicts = &json["gates"]["verdicts"];
    assert_eq!(verdicts[0]["gate"]["text"], "p50<10ms");
    assert_eq!(verdicts[0]["gate"]["metric"], "latency");
    assert_eq!(verdicts[0]["outcome"], "fail");
    assert!(verdicts[0]["measured"].as_f64().unwrap() >= 50_000.0);
    assert_eq!(verdicts[1]["gate"]["metric"], "error_share");
    assert_eq!(verdicts[1]["outcome"], "pass");
    // Markdown: a table row per gate.
    let md = report(&saved, "md");
    assert!(md.contains("### Gates"), "{md}");
    let row = md
        .lines()
        .find(|l| l.contains("`p50<10ms`"))
        .unwrap_or_default();
    assert!(
        row.starts_with("| **FAIL** |") && row.contains("\\< 10.00ms"),
        "{md}"
    );
    // HTML: the gates table, the failing row marked.
    let html = report(&saved, "html");
    assert!(html.contains("<section id=\"gates\">"), "gates section");
    let row = html
        .lines()
        .find(|l| l.contains("p50&lt;10ms"))
        .unwrap_or_default();
    assert!(
        row.starts_with("<tr class=\"fail\">") && row.contains("<td>FAIL</td>"),
        "{row}"
    );
    // CSV: a table of its own after a blank line.
    let csv = report(&saved, "csv");
    let gates = csv.split("\n\n").last().unwrap_or_default();
    assert!(
        gates.starts_with("gate,cell,op,limit,measured,outcome,reason\n"),
        "{csv}"
    );
    assert!(gates.contains("p50<10ms,,<,10000,"), "{csv}");
}

/// `xmllint --schema` on a JUnit file; false (skipped with a message) without xmllint outside CI.
fn valid_junit(file: &Path) -> bool {
    if !have("xmllint") {
        return false;
    }
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit.xsd");
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {:?}", file.display(), text(&out));
    true
}

/// An XPath expression's value in a file, by xmllint's parser.
fn xpath(file: &Path, expr: &str) -> String {
    let out: Output = std::process::Command::new("xmllint")
        .args(["--xpath", expr])
        .arg(file)
        .output()
        .unwrap();
    text(&out).0.trim().to_string()
}

fn junit_path(name: &str) -> PathBuf {
    tempdir("gates-junit").join(name)
}

#[test]
fn the_junit_file_of_a_run_has_a_case_per_gate_and_validates() {
    let s = backend();
    let junit = junit_path("run.xml");
    let ran = Run::new(&url(&s, "/delay/50ms"))
        .args([
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "20",
            "--slo",
            "p50<10ms,errors<1%,p99<5s",
        ])
        .args(["--junit", junit.to_str().unwrap()])
        .json();
    assert_eq!(ran.code(), Some(4), "{:?}", ran.text());
    if !valid_junit(&junit) {
        return;
    }
    assert_eq!(xpath(&junit, "count(//testcase)"), "3");
    assert_eq!(xpath(&junit, "string(//testsuite/@failures)"), "2");
    assert_eq!(
        xpath(&junit, "string(//testcase[failure][1]/@name)"),
        "p50<10ms"
    );
    let message = xpath(
        &junit,
        "string(//testcase[@name='p50<10ms']/failure/@message)",
    );
    assert!(
        message.starts_with("p50<10ms: measured ") && message.ends_with("limit < 10.00ms"),
        "{message}"
    );
    assert_eq!(
        xpath(&junit, "string(//testcase[@name='p99<5s']/failure/@type)"),
        "unjudged"
    );
    assert_eq!(xpath(&junit, "count(//testcase[@name='errors<1%']/*)"), "0");

    // Unjudged but allowed: skipped, not failed.
    let junit = junit_path("allowed.xml");
    let ran = Run::new(&url(&s, "/"))
        .args([
            "-c",
            "2",
            "-n",
            "20",
            "--slo",
            "p99<5s",
            "--slo-allow-unjudged",
        ])
        .args(["--junit", junit.to_str().unwrap()])
        .json();
    assert_eq!(ran.code(), Some(0), "{:?}", ran.text());
    assert!(valid_junit(&junit));
    assert_eq!(xpath(&junit, "count(//testcase/skipped)"), "1");
    assert_eq!(xpath(&junit, "string(//testsuite/@failures)"), "0");
}

#[test]
fn a_run_without_gates_is_one_passing_case_in_junit() {
    let s = backend();
    let out = bin()
        .args([
            "run",
            &url(&s, "/"),
            "-c",
            "2",
            "-n",
            "20",
            "-q",
            "-o",
            "junit",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let junit = junit_path("plain.xml");
    std::fs::write(&junit, &out.stdout).unwrap();
    if !valid_junit(&junit) {
        return;
    }
    assert_eq!(xpath(&junit, "count(//testcase)"), "1");
    assert_eq!(xpath(&junit, "string(//testcase/@name)"), "run completed");
    assert_eq!(xpath(&junit, "count(//testcase/failure)"), "0");
    assert_eq!(
        xpath(&junit, "string(//property[@name='requests']/@value)"),
        "20"
    );
}

#[test]
fn saved_find_max_and_bench_results_render_valid_junit() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (name, cases) in [("find-max.json", "1"), ("bench-base.json", "6")] {
        let junit = junit_path(&format!("{name}.xml"));
        std::fs::write(&junit, report(&fixtures.join(name), "junit")).unwrap();
        if !valid_junit(&junit) {
            return;
        }
        assert_eq!(xpath(&junit, "count(//testcase)"), cases, "{name}");
        assert_eq!(xpath(&junit, "count(//testcase/failure)"), "0", "{name}");
    }
}
