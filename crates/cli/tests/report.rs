//! `loadbench report` and `loadbench compare` end to end, on results saved by the real binary
//! against `loadbench serve` (tests/fixtures, see its README), so no load runs here except for
//! the `run --html` / `find-max --html` checks: snapshots of every format, round trips,
//! regressions, noise and improvements with their exit codes, and every kind of bad input
//! answered by one line and exit code 2.

use crate::support::{bin, tempdir, text};
use loadbench_model::{BenchResult, FindMaxResult, RunResult, SavedResult};
use loadbench_report::units::rate_short;
use loadbench_upstream::{Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture(name: &str) -> PathBuf {
    fixtures().join(name)
}

/// Runs `loadbench ARGS` in the fixtures directory, so file names print without a path.
fn loadbench(args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(fixtures())
        .output()
        .expect("the loadbench binary runs")
}

/// Stdout of a command that must succeed.
fn stdout_of(args: &[&str]) -> String {
    let out = loadbench(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {:?}", text(&out));
    text(&out).0
}

// ---------------------------------------------------------------- report: snapshots

#[test]
fn report_text_of_an_open_model_run() {
    insta::assert_snapshot!(stdout_of(&["report", "run-open.json"]));
}

#[test]
fn report_markdown_of_an_open_model_run() {
    insta::assert_snapshot!(stdout_of(&["report", "run-open.json", "--format", "md"]));
}

#[test]
fn report_csv_of_an_open_model_run() {
    insta::assert_snapshot!(stdout_of(&["report", "run-open.json", "-f", "csv"]));
}

#[test]
fn report_markdown_of_a_closed_model_run() {
    insta::assert_snapshot!(stdout_of(&[
        "report",
        "compare-base.json",
        "-f",
        "markdown"
    ]));
}

#[test]
fn report_text_of_a_find_max_search() {
    insta::assert_snapshot!(stdout_of(&["report", "find-max.json"]));
}

#[test]
fn report_markdown_of_a_find_max_search() {
    insta::assert_snapshot!(stdout_of(&["report", "find-max.json", "-f", "md"]));
}

// ---------------------------------------------------------------- report: round trips

#[test]
fn report_json_round_trips_both_kinds() {
    let run = RunResult::from_json(&stdout_of(&["report", "run-open.json", "-f", "json"]));
    let saved = std::fs::read_to_string(fixture("run-open.json")).unwrap();
    assert_eq!(run.unwrap(), RunResult::from_json(&saved).unwrap());
    let fm = FindMaxResult::from_json(&stdout_of(&["report", "find-max.json", "-f", "json"]));
    let saved = std::fs::read_to_string(fixture("find-max.json")).unwrap();
    assert_eq!(fm.unwrap(), FindMaxResult::from_json(&saved).unwrap());
}

#[test]
fn report_renders_a_re_rendered_json_identically_in_every_format() {
    let dir = tempdir("report-round-trip");
    let copy = dir.join("copy.json");
    let json = stdout_of(&["report", "run-open.json", "-f", "json"]);
    std::fs::write(&copy, json).unwrap();
    for format in ["text", "md", "csv", "json"] {
        let original = stdout_of(&["report", "run-open.json", "-f", format]);
        let again = stdout_of(&["report", copy.to_str().unwrap(), "-f", format]);
        assert_eq!(original, again, "{format}");
    }
}

#[test]
fn report_output_file_holds_what_stdout_would() {
    let dir = tempdir("report-file");
    for format in ["text", "md", "csv", "json"] {
        let file = dir.join(format!("out.{format}"));
        let out = loadbench(&[
            "report",
            "run-open.json",
            "-f",
            format,
            "-o",
            file.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
        assert!(out.stdout.is_empty(), "{format}: nothing on stdout with -o");
        let expected = stdout_of(&["report", "run-open.json", "-f", format]);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            expected,
            "{format}"
        );
    }
}

#[test]
fn report_html_writes_the_page_and_its_charts_beside_it() {
    let dir = tempdir("report-html");
    let page = dir.join("pages/run.html");
    let out = loadbench(&[
        "report",
        "run-open.json",
        "-f",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert_page_and_charts(&page);
    assert!(
        text(&out).1.contains("charts beside it"),
        "{:?}",
        text(&out)
    );
    let fm_page = dir.join("fm/find-max.html");
    let out = loadbench(&[
        "report",
        "find-max.json",
        "-f",
        "html",
        "-o",
        fm_page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert_page_and_charts(&fm_page);
}

fn assert_page_and_charts(page: &Path) {
    let html = std::fs::read_to_string(page).expect("the page was written");
    assert!(
        html.to_ascii_lowercase().starts_with("<!doctype html"),
        "{}",
        &html[..80]
    );
    let svgs = std::fs::read_dir(page.parent().unwrap())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(svgs > 0, "no chart beside {}", page.display());
}

/// Asserts the search's headline is in `report`: `maximum sustainable rate: 300 req/s (within
/// 5%)`, or `… at least 300 req/s` when no higher rate failed.
fn assert_max_rate(report: &str, search: &FindMaxResult) {
    let max = search.max_rate.expect("the search found a maximum");
    let line = report
        .lines()
        .find(|l| l.contains("maximum sustainable rate: "))
        .unwrap_or_else(|| panic!("no maximum in {report}"));
    assert!(
        line.contains(&format!(" {} req/s", rate_short(max))),
        "{max}: {line}"
    );
}

fn saved_search() -> FindMaxResult {
    FindMaxResult::from_json(&std::fs::read_to_string(fixture("find-max.json")).unwrap()).unwrap()
}

#[test]
fn report_prints_a_find_max_page_to_stdout() {
    let html = stdout_of(&["report", "find-max.json", "-f", "html"]);
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80]);
    assert_max_rate(&html, &saved_search());
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn report_csv_of_a_find_max_search_is_its_step_table() {
    let search = saved_search();
    let csv = stdout_of(&["report", "find-max.json", "-f", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + search.steps.len(), "{csv}");
    assert!(
        lines[0].starts_with(
            "step,phase,target_per_sec,sent_per_sec,completed_per_sec,latency_p50_us,latency_p99_us,"
        ),
        "{csv}"
    );
    let max = format!(",{:.2},", search.max_rate.unwrap());
    assert!(
        lines[1..]
            .iter()
            .any(|l| l.contains(&max) && l.contains(",pass,")),
        "{csv}"
    );
}

/// Every kind of saved result in every format: exit 0 and a report that is that format.
#[test]
fn report_renders_every_kind_in_every_format() {
    for file in ["run-open.json", "find-max.json", "bench-base.json"] {
        let saved = std::fs::read_to_string(fixture(file)).unwrap();
        let saved = SavedResult::from_json(&saved).unwrap();
        for format in ["text", "md", "markdown", "csv", "json", "html"] {
            let out = stdout_of(&["report", file, "-f", format]);
            let starts = match format {
                "json" => "{",
                "html" => "<!DOCTYPE html>",
                "md" | "markdown" => "## loadbench ",
                _ => "",
            };
            assert!(
                out.starts_with(starts) && out.len() > 100,
                "{file} {format}: {out}"
            );
            if format == "json" {
                assert_eq!(SavedResult::from_json(&out).unwrap(), saved, "{file}");
            }
        }
    }
}

#[test]
fn report_percentiles_default_to_the_runs_and_can_be_overridden() {
    let md = stdout_of(&["report", "run-open.json", "-f", "md"]);
    assert!(md.contains("| 99.9% |") && !md.contains("| 75% |"), "{md}");
    let md = stdout_of(&["report", "run-open.json", "-f", "md", "--percentiles", "75"]);
    assert!(md.contains("| 75% |") && !md.contains("| 99.9% |"), "{md}");
}

// ---------------------------------------------------------------- compare

/// The verdict column of the row for `metric` (`req/s`, `p50`, `p99`).
fn verdict(stdout: &str, metric: &str) -> String {
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{metric} ")))
        .unwrap_or_else(|| panic!("no {metric} row in\n{stdout}"));
    let tail = row.rsplit("  ").next().unwrap();
    tail.trim().to_string()
}

#[test]
fn compare_flags_a_real_regression_with_exit_1() {
    let out = loadbench(&["compare", "compare-base.json", "compare-slow.json"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for metric in ["req/s", "p50", "p99"] {
        assert_eq!(verdict(&stdout, metric), "regression", "{stdout}");
    }
    assert!(stdout.contains("\nregression: req/s -"), "{stdout}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn compare_of_two_runs_of_the_same_is_within_noise() {
    let out = loadbench(&["compare", "compare-base.json", "compare-same.json"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for metric in ["req/s", "p50", "p99"] {
        assert_eq!(verdict(&stdout, metric), "within noise", "{stdout}");
    }
    assert!(stdout.contains("no significant change"), "{stdout}");
}

#[test]
fn compare_swapped_is_an_improvement_with_exit_0() {
    let out = loadbench(&["compare", "compare-slow.json", "compare-base.json"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for metric in ["req/s", "p50", "p99"] {
        assert_eq!(verdict(&stdout, metric), "improvement", "{stdout}");
    }
    assert!(stdout.contains("\nimprovement: req/s +"), "{stdout}");
}

#[test]
fn compare_threshold_above_the_change_passes() {
    let out = loadbench(&[
        "compare",
        "compare-base.json",
        "compare-slow.json",
        "--threshold",
        "80%",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(verdict(&stdout, "req/s"), "within threshold", "{stdout}");
}

#[test]
fn compare_in_markdown_for_a_pull_request() {
    let out = loadbench(&[
        "compare",
        "compare-base.json",
        "compare-slow.json",
        "-f",
        "md",
    ]);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    insta::assert_snapshot!(text(&out).0);
}

// ---------------------------------------------------------------- bench results

#[test]
fn report_text_of_a_bench() {
    insta::assert_snapshot!(stdout_of(&["report", "bench-base.json"]));
}

#[test]
fn report_of_a_bench_in_every_format() {
    let md = stdout_of(&["report", "bench-base.json", "-f", "md"]);
    assert!(md.starts_with("## loadbench bench proxies:"), "{md}");
    assert_eq!(md.matches("| c=200 |").count(), 3, "{md}");
    let csv = stdout_of(&["report", "bench-base.json", "-f", "csv"]);
    assert_eq!(csv.lines().count(), 1 + 18, "{csv}");
    assert!(csv.starts_with("step,load,model,level,"), "{csv}");
    let json = stdout_of(&["report", "bench-base.json", "-f", "json"]);
    let back = BenchResult::from_json(&json).expect("report -f json reads back");
    assert_eq!(back.rounds.len(), 18);
    // The fixture is a version 2 file: the JSON is the same bench in this schema.
    let original = std::fs::read_to_string(fixture("bench-base.json")).unwrap();
    assert_eq!(back.schema_version, loadbench_model::SCHEMA_VERSION);
    assert_eq!(
        back,
        BenchResult::from_json(&original).unwrap(),
        "the JSON of a bench is the model as saved"
    );
}

/// A real sweep (tests/fixtures/bench-pool.json): the reference backend with 20 slots of
/// 100 ms over 5 to 80 connections. Every format shows the queueing view the file holds.
#[test]
fn report_of_a_sweep_shows_its_queueing_view_in_every_format() {
    let saved = std::fs::read_to_string(fixture("bench-pool.json")).unwrap();
    let r = BenchResult::from_json(&saved).unwrap();
    let a = r.queueing_of(0, "backend").expect("a sweep of 5 levels");
    let pool = a.pool.expect("20 slots behave like a pool");
    assert!((17..=24).contains(&pool.workers), "{pool:?}");
    let plain = stdout_of(&["report", "bench-pool.json"]);
    let md = stdout_of(&["report", "bench-pool.json", "-f", "md"]);
    for f in &a.findings {
        assert!(plain.contains(&f.text), "{}\n{plain}", f.text);
        let escaped = loadbench_report::markup::markdown::escape_text(&f.text);
        assert!(md.contains(&escaped), "{escaped}\n{md}");
    }
    for p in &a.levels {
        let row = format!(
            "| backend | c={} | {:.0} | {} | {} | {:.1} | {:.1} |",
            p.value,
            p.requests_per_sec,
            loadbench_report::units::duration_us(p.mean_latency_us),
            loadbench_report::units::duration_us(p.mean_service_us),
            p.in_target,
            p.in_generator
        );
        assert!(md.contains(&row), "{row}\n{md}");
    }
    // The view is derived: rebuilt on read, it is what the bench saved.
    let json = stdout_of(&["report", "bench-pool.json", "-f", "json"]);
    let queueing =
        |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap()["queueing"].clone();
    // Saved by version 2, whose `model: "closed"` is `closed: true` now; the rest is the same.
    let mut old = queueing(&saved);
    for a in old.as_array_mut().unwrap() {
        let a = a.as_object_mut().unwrap();
        let closed = a.remove("model") == Some("closed".into());
        a.insert("closed".into(), closed.into());
    }
    assert_eq!(queueing(&json), old);
    assert!(queueing(&saved)[0]["findings"].is_array());
    let dir = tempdir("report-pool-html");
    let page = dir.join("pool.html");
    let out = loadbench(&[
        "report",
        "bench-pool.json",
        "-f",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<section id=\"queueing\">"));
    assert!(dir.join("bench-usl-sweep.svg").exists());
}

#[test]
fn report_html_of_a_bench_writes_the_page_and_every_chart_beside_it() {
    let dir = tempdir("report-bench-html");
    let page = dir.join("bench/index.html");
    let out = loadbench(&[
        "report",
        "bench-base.json",
        "-f",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert_page_and_charts(&page);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<table class=\"bench\">"));
    for chart in [
        "bench-rps-closed",
        "bench-latency-closed-1",
        "bench-latency-closed-2",
        "bench-cpu",
        "bench-rss",
    ] {
        let svg = std::fs::read_to_string(dir.join(format!("bench/{chart}.svg")))
            .unwrap_or_else(|e| panic!("{chart}.svg: {e}"));
        assert!(svg.starts_with("<svg"), "{chart}");
        assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
        let png = std::fs::read(dir.join(format!("bench/{chart}.png")))
            .unwrap_or_else(|e| panic!("{chart}.png: {e}"));
        assert_eq!(&png[1..4], b"PNG", "{chart}");
    }
}

#[test]
fn compare_of_a_regressed_bench_exits_1_and_names_the_cells() {
    let out = loadbench(&["compare", "bench-base.json", "bench-regressed.json"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let regressions: Vec<&str> = stdout
        .lines()
        .filter(|l| l.ends_with("regression"))
        .collect();
    assert!(!regressions.is_empty(), "{stdout}");
    assert!(
        regressions.iter().all(|l| l.contains(" nginx ")),
        "{stdout}"
    );
    assert!(
        regressions
            .iter()
            .any(|l| l.contains(" req/s ") && l.contains("-20.00%")),
        "{stdout}"
    );
    assert!(stdout.contains("Welch's t-test across rounds"), "{stdout}");
    assert!(
        stdout.contains("regression: nginx at c=50 (closed) req/s -20.00%"),
        "{stdout}"
    );
}

#[test]
fn compare_of_the_same_bench_exits_0_and_swapped_is_an_improvement() {
    let out = loadbench(&["compare", "bench-base.json", "bench-base.json"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert!(
        text(&out).0.contains("no significant change"),
        "{:?}",
        text(&out)
    );
    let out = loadbench(&[
        "compare",
        "bench-regressed.json",
        "bench-base.json",
        "-f",
        "md",
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let md = text(&out).0;
    assert!(md.contains("| load | level | target | metric |"), "{md}");
    assert!(
        md.contains("**improvement: nginx at c=50 (closed) req/s +25.00%"),
        "{md}"
    );
}

/// `bench-base.json` changed by `edit` and saved as `name` in a fresh folder; its path.
fn edited_bench(name: &str, edit: impl FnOnce(&mut BenchResult)) -> String {
    let text = std::fs::read_to_string(fixture("bench-base.json")).unwrap();
    let mut r = BenchResult::from_json(&text).unwrap();
    edit(&mut r);
    r.recompute();
    let path = tempdir("compare-bench").join(name);
    std::fs::write(&path, loadbench_report::bench_json(&r)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn compare_of_benches_sharing_no_cell_exits_2_naming_what_each_holds() {
    let other = edited_bench("other.json", |r| {
        r.loads[0].name = "open".into();
        r.rounds.retain(|x| x.target == "direct");
    });
    assert_user_error(
        &["compare", "bench-base.json", &other],
        &format!("bench-base.json and {other} share no target × load × level, so nothing was compared: bench-base.json holds direct, nginx, haproxy at c=50, c=200 (load closed); {other} holds direct at c=50, c=200 (load open)"),
    );
}

#[test]
fn compare_of_benches_overlapping_in_part_lists_what_was_not_compared() {
    let part = edited_bench("part.json", |r| r.rounds.retain(|x| x.target != "haproxy"));
    let out = loadbench(&["compare", "bench-base.json", &part]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("note: only in bench-base.json, not compared: haproxy at c=50 (closed), haproxy at c=200 (closed)"),
        "{stdout}"
    );
    assert!(stdout.contains("nginx"), "{stdout}");
    assert!(!stdout.contains("  haproxy"), "{stdout}");
}

#[test]
fn compare_of_a_run_and_a_bench_is_one_clear_line() {
    assert_user_error(
        &["compare", "compare-base.json", "bench-base.json"],
        "compare-base.json is a run result but bench-base.json is a bench result: compare two runs or two benches",
    );
    assert_user_error(
        &["compare", "bench-base.json", "compare-base.json"],
        "is a bench result but compare-base.json is a run result",
    );
}

#[test]
fn malformed_bench_files_are_one_line_and_exit_2() {
    let good = std::fs::read_to_string(fixture("bench-base.json")).unwrap();
    let cases = [
        (
            bad_file(
                "bench-edited.json",
                good.replacen("\"steps_done\":", "\"steps_dome\":", 1)
                    .as_bytes(),
            ),
            "is not a valid loadbench bench result (missing field `steps_done`",
        ),
        (
            bad_file("bench-cut.json", &good.as_bytes()[..good.len() / 3]),
            "is truncated",
        ),
        (
            bad_file(
                "bench-badtype.json",
                good.replacen("\"rounds\": [", "\"rounds\": 3, \"x\": [", 1)
                    .as_bytes(),
            ),
            "is not a valid loadbench bench result",
        ),
    ];
    for (path, expected) in &cases {
        assert_user_error(&["report", path], expected);
        assert_user_error(&["compare", "bench-base.json", path], expected);
    }
}

// ---------------------------------------------------------------- bad input

/// Asserts exit code 2, nothing on stdout, one line on stderr holding `expected`, no panic.
fn assert_user_error(args: &[&str], expected: &str) {
    let out = loadbench(args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
    assert!(stdout.is_empty(), "{args:?}: {stdout}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

/// Writes `content` into a fresh file and returns its path.
fn bad_file(name: &str, content: &[u8]) -> String {
    let path = tempdir("report-bad").join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_string()
}

fn bad_inputs() -> Vec<(String, &'static str)> {
    let good = std::fs::read_to_string(fixture("compare-base.json")).unwrap();
    vec![
        (
            "no-such-file.json".to_string(),
            "cannot read result no-such-file.json",
        ),
        (bad_file("empty.json", b""), "is empty"),
        // Endless: refused from its first block, never read until memory runs out.
        (
            "/dev/zero".to_string(),
            "is a character device, not a regular file",
        ),
        (
            bad_file("text.json", b"Requests/sec: 1234\n"),
            "is not JSON",
        ),
        (
            bad_file("binary.json", &[0xff, 0xfe, 0x00, 0x81]),
            "is not a text file",
        ),
        (
            bad_file("k6.json", br#"{"metrics": {"http_reqs": {"count": 10}}}"#),
            "is JSON but not a loadbench result",
        ),
        (
            bad_file(
                "v4.json",
                good.replacen("\"schema_version\": 2", "\"schema_version\": 4", 1)
                    .as_bytes(),
            ),
            "has schema_version 4, but this loadbench reads schema_version 2 to 3",
        ),
        (
            bad_file("truncated.json", &good.as_bytes()[..good.len() / 2]),
            "is truncated",
        ),
        (
            bad_file(
                "edited.json",
                good.replacen("\"requests\":", "\"requestz\":", 1)
                    .as_bytes(),
            ),
            "is not a valid loadbench run result",
        ),
    ]
    .into_iter()
    .chain(tampered_inputs(&good))
    .chain(absurd_counts(&good))
    .collect()
}

/// Our own file with one figure changed into something no run produces.
fn tampered_inputs(good: &str) -> Vec<(String, &'static str)> {
    vec![
        (
            bad_file(
                "tampered-requests.json",
                good.replacen("\"requests\": 11407", "\"requests\": 3", 1)
                    .as_bytes(),
            ),
            "stats.requests is 3 but stats.latency holds 11407 samples",
        ),
        (
            bad_file(
                "p150.json",
                good.replacen(
                    "\"percentiles\": [\n      50.0",
                    "\"percentiles\": [\n      150.0",
                    1,
                )
                .as_bytes(),
            ),
            "config.percentiles: 150 is outside 0 to 100",
        ),
        (
            bad_file(
                "p-1.json",
                good.replacen(
                    "\"percentiles\": [\n      50.0",
                    "\"percentiles\": [\n      -1.0",
                    1,
                )
                .as_bytes(),
            ),
            "config.percentiles: -1 is outside 0 to 100",
        ),
    ]
}

/// Counts no run produces (issue 33, 10), each refused naming its field.
fn absurd_counts(good: &str) -> Vec<(String, &'static str)> {
    vec![
        // Issue 33 (10): a count no run reaches wrapped the error total into a
        // "35477919172438792.00%" error rate; it is refused, naming the field.
        (
            bad_file(
                "errors-max.json",
                good.replacen(
                    "\"errors\": {},",
                    "\"errors\": {\"connect_refused\": 18446744073709551615, \"read_timeout\": 5},",
                    1,
                )
                .as_bytes(),
            ),
            "stats.errors.connect_refused is 18446744073709551615, more than any run counts",
        ),
        (
            bad_file(
                "sent-max.json",
                good.replacen("\"sent\": 11415", "\"sent\": 18446744073709551615", 1)
                    .as_bytes(),
            ),
            "stats.sent is 18446744073709551615, more than any run counts",
        ),
        // A window of 0 µs that answered 11407 requests ("in 0ns: 0.00 req/s").
        (
            bad_file(
                "elapsed-0.json",
                good.replacen("\"elapsed_us\": 5000000", "\"elapsed_us\": 0", 1)
                    .as_bytes(),
            ),
            "stats.elapsed_us is 0 but the run counted 11415 requests",
        ),
    ]
}

#[test]
fn report_answers_malformed_or_foreign_files_with_one_line_and_exit_2() {
    for (path, expected) in bad_inputs() {
        assert_user_error(&["report", &path], expected);
    }
}

#[test]
fn compare_answers_malformed_or_foreign_files_with_one_line_and_exit_2() {
    for (path, expected) in bad_inputs() {
        assert_user_error(&["compare", "compare-base.json", &path], expected);
        assert_user_error(&["compare", &path, "compare-base.json"], expected);
    }
}

#[test]
fn bad_options_and_unsupported_combinations_exit_2() {
    assert_user_error(
        &["report", "run-open.json", "-f", "xml"],
        "unknown format 'xml'",
    );
    assert_user_error(
        &[
            "find-max",
            "http://127.0.0.1/",
            "--slo",
            "p99<1s",
            "-o",
            "yaml",
        ],
        "--output: unknown format 'yaml': choose one of text, json, csv, md, html or junit",
    );
    assert_user_error(
        &["bench", "no-such.toml", "-o", "xml"],
        "unknown format 'xml'",
    );
    assert_user_error(
        &["report", "run-open.json", "--percentiles", "120"],
        "--percentiles '120'",
    );
    assert_user_error(
        &["compare", "compare-base.json", "find-max.json"],
        "is a find-max result",
    );
    assert_user_error(
        &[
            "compare",
            "compare-base.json",
            "compare-same.json",
            "--threshold",
            "5",
        ],
        "--threshold '5'",
    );
    assert_user_error(
        &[
            "compare",
            "compare-base.json",
            "compare-same.json",
            "-f",
            "csv",
        ],
        "use text or md",
    );
}

// ---------------------------------------------------------------- --html and -o md after a run

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

#[test]
fn run_html_writes_the_page_and_charts_and_md_goes_to_stdout() {
    let server = backend();
    let dir = tempdir("run-html");
    let page = dir.join("run.html");
    let url = format!("http://{}/", server.local_addr());
    let out = bin()
        .args([
            "run", &url, "-n", "300", "-c", "2", "-t", "1", "-o", "md", "-q", "--html",
        ])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let stdout = text(&out).0;
    assert!(
        stdout.starts_with("## loadbench run: `GET http://"),
        "{stdout}"
    );
    assert!(stdout.contains("| 300 |"), "{stdout}");
    assert_page_and_charts(&page);
}

#[test]
fn find_max_html_writes_the_page_and_md_goes_to_stdout() {
    let server = backend();
    let dir = tempdir("find-max-html");
    let page = dir.join("fm.html");
    let url = format!("http://{}/", server.local_addr());
    let out = bin()
        .args([
            "find-max",
            &url,
            "--slo",
            "p99<1s",
            "--step-duration",
            "300ms",
            "--warmup",
            "0s",
        ])
        .args([
            "--start-rate",
            "50",
            "--max-steps",
            "1",
            "-t",
            "1",
            "-o",
            "md",
            "-q",
            "--html",
        ])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let stdout = text(&out).0;
    assert!(
        stdout.starts_with("## loadbench find-max: `http://"),
        "{stdout}"
    );
    assert!(stdout.contains("| 1 | exponential | 50 |"), "{stdout}");
    assert_page_and_charts(&page);
}

#[test]
fn find_max_html_prints_the_page_to_stdout() {
    let server = backend();
    let dir = tempdir("find-max-stdout-html");
    let save = dir.join("fm.json");
    let url = format!("http://{}/", server.local_addr());
    let out = bin()
        .args([
            "find-max",
            &url,
            "--slo",
            "p99<1s",
            "--step-duration",
            "300ms",
        ])
        .args([
            "--warmup",
            "0s",
            "--start-rate",
            "50",
            "--max-steps",
            "2",
            "-t",
            "1",
        ])
        .args(["-o", "html", "-q", "--save"])
        .arg(&save)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let html = text(&out).0;
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    let search = FindMaxResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_max_rate(&html, &search);
    assert!(html.contains("<h1>loadbench find-max</h1>"), "{html}");
}

#[test]
fn bench_html_prints_the_page_of_the_run_folder_to_stdout() {
    let dir = tempdir("bench-stdout-html");
    let file = dir.join("one.toml");
    let scenario =
        "name = \"one\"\nrounds = 1\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
                    [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [2]\n";
    std::fs::write(&file, scenario).unwrap();
    let results = dir.join("results");
    let out = bin()
        .arg("bench")
        .arg(&file)
        .arg("--results")
        .arg(&results)
        .args(["--duration", "300ms", "--warmup", "0s", "--cooldown", "0s"])
        .args(["-o", "html", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let html = text(&out).0;
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    let folder = std::fs::read_dir(&results)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let page = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert_eq!(html, page, "stdout holds the run folder's report.html");
    let saved = std::fs::read_to_string(folder.join("result.json")).unwrap();
    let r = BenchResult::from_json(&saved).unwrap();
    let rps = r.cells[0].requests_per_sec.expect("the round measured");
    assert!(html.contains(&format!(">{:.0}<", rps.median)), "{html}");
}
