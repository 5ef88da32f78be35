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
    rendered_formats_show_the_gates(&saved);
}

/// Markdown, HTML and CSV of the saved run with `p50<10ms` failing.
fn rendered_formats_show_the_gates(saved: &Path) {
    // Markdown: a table row per gate.
    let md = report(saved, "md");
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
    let html = report(saved, "html");
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
    let csv = report(saved, "csv");
    let gates = csv.split("\n\n").last().unwrap_or_default();
    assert!(
        gates.starts_with("gate,cell,op,limit,measured,outcome,reason\n"),
        "{csv}"
    );
    assert!(gates.contains("p50<10ms,,<,10000,"), "{csv}");
}

/// `xmllint --schema` on a JUnit file; false (skipped with a message) without xmllint outside CI.
pub(crate) fn valid_junit(file: &Path) -> bool {
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
pub(crate) fn xpath(file: &Path, expr: &str) -> String {
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

/// Two reference backends: `fast` answers at once, `slow` one request at a time after 200 ms
/// (at most 5 req/s), each at two connections for a second; `slow` carries `target_slo`.
fn two_backends(dir: &Path, target_slo: &str) -> PathBuf {
    let text = format!(
        "name = \"gated\"\n\
         [[target]]\nname = \"fast\"\nkind = \"upstream\"\n[target.upstream]\nthreads = 1\n\
         [[target]]\nname = \"slow\"\nkind = \"upstream\"\n{target_slo}\n\
         [target.upstream]\nthreads = 1\ndelay = \"200ms\"\nmax_concurrency = 1\n\
         [[load]]\nname = \"pair\"\nmodel = \"closed\"\ntargets = [\"fast\", \"slow\"]\n\
         connections = [2]\nduration = \"1s\"\n"
    );
    let file = dir.join("gated.toml");
    std::fs::write(&file, text).unwrap();
    file
}

fn bench(
    file: &Path,
    results: &Path,
    args: &[&str],
) -> (Output, Option<loadbench_model::BenchResult>) {
    let (out, saved) = crate::bench::bench(file, results, &[&["--cooldown", "0s"], args].concat());
    (out, saved)
}

#[test]
fn bench_gates_pass_per_cell_and_on_the_relative_speed() {
    let dir = tempdir("gates-bench-pass");
    let file = two_backends(&dir, "");
    let (out, r) = bench(
        &file,
        &dir.join("results"),
        &["--slo", "errors<1%,fast/slow>2"],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let gates = r.unwrap().gates.expect("gates judged");
    // errors on each of the two cells, the ratio on the load's one level.
    let seen: Vec<(&str, Option<&str>, GateOutcome)> = gates
        .verdicts
        .iter()
        .map(|v| (v.gate.text.as_str(), v.cell.as_deref(), v.outcome))
        .collect();
    assert_eq!(
        seen,
        [
            ("errors<1%", Some("fast · pair · c=2"), GateOutcome::Pass),
            ("errors<1%", Some("slow · pair · c=2"), GateOutcome::Pass),
            ("fast/slow>2", Some("pair · c=2"), GateOutcome::Pass),
        ]
    );
    assert!(gates.verdicts[2].measured.unwrap() > 2.0);
}

#[test]
fn a_failing_bench_exits_4_and_its_junit_names_the_failing_cells_with_their_figures() {
    let dir = tempdir("gates-bench-fail");
    let file = two_backends(&dir, "slo = \"p50<10ms\"");
    let junit = dir.join("bench.xml");
    let (out, r) = bench(
        &file,
        &dir.join("results"),
        &["--slo", "slow/fast>0.9", "--junit", junit.to_str().unwrap()],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let r = r.unwrap();
    let gates = r.gates.as_ref().unwrap();
    let failed: Vec<&str> = gates.failed().map(|v| v.gate.text.as_str()).collect();
    assert_eq!(failed, ["p50<10ms", "slow/fast>0.9"]);
    assert!(
        stderr.contains("gate failed: p50<10ms at slow · pair · c=2: measured "),
        "{stderr}"
    );
    assert!(
        stdout.contains("Gates (2 gates: 0 passed, 2 failed)"),
        "{stdout}"
    );
    if !valid_junit(&junit) {
        return;
    }
    assert_eq!(xpath(&junit, "count(//testcase)"), "2");
    assert_eq!(xpath(&junit, "string(//testsuite/@failures)"), "2");
    let cell = xpath(&junit, "string(//testcase[1]/@name)");
    assert_eq!(cell, "p50<10ms at slow · pair · c=2");
    let message = xpath(&junit, "string(//testcase[1]/failure/@message)");
    let p50 = r.gates.as_ref().unwrap().verdicts[0].measured.unwrap();
    assert!(p50 >= 200_000.0, "{p50}");
    assert!(
        message.contains("measured ") && message.ends_with("limit < 10.00ms"),
        "{message}"
    );
    let ratio = xpath(&junit, "string(//testcase[2]/failure/@message)");
    assert!(
        ratio.starts_with("slow/fast>0.9 at pair · c=2: measured 0.")
            && ratio.ends_with("limit > 0.900"),
        "{ratio}"
    );
}

#[test]
fn a_ratio_naming_an_unknown_target_is_exit_2_before_any_target_starts() {
    let dir = tempdir("gates-bench-bad");
    let file = two_backends(&dir, "");
    let results = dir.join("results");
    for (gate, needle) in [
        ("fast/ghost>1", "'ghost', which the scenario does not have"),
        ("p99=1ms", "is not a gate"),
    ] {
        let (out, _) = bench(&file, &results, &["--slo", gate]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{gate}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{gate}: {stderr}");
        assert!(stderr.contains(needle), "{gate}: {stderr}");
    }
    assert!(!results.exists(), "a run folder was made: a load started");
}

/// `find-max --junit`: one test case that passes when a rate held and fails, with why, when
/// none did (50 ms answers against a 10 ms p50).
#[test]
fn find_max_writes_junit_with_whether_a_rate_held() {
    let s = backend();
    for (path, slo, code, failures) in
        [("/", "p99<5s", 0, "0"), ("/delay/50ms", "p50<10ms", 1, "1")]
    {
        let junit = junit_path("find-max.xml");
        let out = bin()
            .args(["find-max", &url(&s, path), "--slo", slo, "-q", "-o", "json"])
            .args(["--start-rate", "20", "--max-rate", "20", "--max-steps", "1"])
            .args([
                "--step-duration",
                "500ms",
                "--warmup",
                "0s",
                "--recovery-timeout",
                "1s",
            ])
            .arg("--junit")
            .arg(&junit)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{slo}: {:?}", text(&out));
        if !valid_junit(&junit) {
            return;
        }
        assert_eq!(xpath(&junit, "count(//testcase)"), "1");
        assert_eq!(
            xpath(&junit, "string(//testsuite/@failures)"),
            failures,
            "{slo}"
        );
        let name = xpath(&junit, "string(//testcase/@name)");
        assert_eq!(name, format!("a rate held under the SLO {slo}"));
    }
}
