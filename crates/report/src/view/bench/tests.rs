use super::*;
use crate::fixtures;
use crate::{bench_json, render_bench, Format};

fn fixture() -> BenchResult {
    fixtures::bench()
}

#[test]
fn snapshot_text() {
    insta::assert_snapshot!(render_bench(Format::Text, &fixture()));
}

#[test]
fn snapshot_markdown() {
    insta::assert_snapshot!(render_bench(Format::Markdown, &fixture()));
}

#[test]
fn snapshot_sweep_text() {
    insta::assert_snapshot!(render_bench(Format::Text, &fixtures::bench_sweep()));
}

#[test]
fn snapshot_sweep_markdown() {
    insta::assert_snapshot!(render_bench(Format::Markdown, &fixtures::bench_sweep()));
}

#[test]
fn snapshot_csv() {
    insta::assert_snapshot!(render_bench(Format::Csv, &fixture()));
}

#[test]
fn fixture_has_the_shape_the_views_need() {
    let r = fixture();
    assert_eq!(r.rounds.len(), 18);
    assert_eq!(r.cells.len(), 6);
    assert_eq!(r.generator_bound_rounds(), 1);
    let haproxy = r.cell_of(0, 1, "haproxy").unwrap();
    assert!(haproxy.noisy, "{haproxy:?}");
    assert_eq!(haproxy.bottlenecks.generator_bound, 1);
    assert_eq!(haproxy.bottlenecks.target_bound, 2);
    assert!(r.cell_of(0, 0, "direct").unwrap().rss_peak_bytes.is_some());
    assert_eq!(r.relative.len(), 4);
}

#[test]
fn text_puts_warnings_first_and_has_a_row_per_target_and_level() {
    let text = render_bench(Format::Text, &fixture());
    let warn = text.find("warnings:").unwrap();
    let table = text.find("load closed:").unwrap();
    assert!(warn < table, "{text}");
    assert!(text.contains("haproxy at c=200 (load closed): 1 of 3 rounds generator-bound: throughput is loadbench's limit, not the target's"), "{text}");
    assert!(
        text.contains("haproxy at c=200 (load closed): noisy"),
        "{text}"
    );
    assert!(
        text.contains("nginx at c=200 (load closed): 45 errors"),
        "{text}"
    );
    assert!(text.contains("memory limit 256MiB not enforced"), "{text}");
    let rows = text.lines().filter(|l| l.contains("MiB/")).count();
    assert_eq!(rows, 6, "{text}");
    // direct at c=50: median of 40120, 40480, 39870.
    let direct = text
        .lines()
        .find(|l| l.trim_start().starts_with("direct") && l.contains("c=50"))
        .unwrap();
    assert!(direct.contains("40120"), "{direct}");
    assert!(
        direct.contains("target-bound") || direct.contains("neither"),
        "{direct}"
    );
    assert!(
        text.contains("c=50: nginx: 1.65 ± 0.02 times slower than direct"),
        "{text}"
    );
}

#[test]
fn markdown_tables_have_every_column_and_escape_text() {
    let mut r = fixture();
    r.scenario.name = "a|b_c".into();
    let md = render_bench(Format::Markdown, &r);
    assert!(md.starts_with("## loadbench bench a\\|b\\_c:"), "{md}");
    assert!(
        md.contains(
            "| target | level | req/s | 95% CI | best | p50 | p90 | p99 | p99.9 | errors |"
        ),
        "{md}"
    );
    assert_eq!(md.matches("| haproxy | c=200 |").count(), 1, "{md}");
    assert!(md.contains("> **Warning:** haproxy at c=200"), "{md}");
    assert!(
        md.contains("generator-bound") && md.contains("baseline"),
        "{md}"
    );
}

#[test]
fn csv_has_one_row_per_round_with_every_column() {
    let r = fixture();
    let csv = render_bench(Format::Csv, &r);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 18);
    let head: Vec<&str> = lines[0].split(',').collect();
    for col in [
        "requests_per_sec",
        "latency_p99_9_us",
        "rss_peak_bytes",
        "cpu_mean_cores",
        "bottleneck",
    ] {
        assert!(head.contains(&col), "{col}");
    }
    assert!(lines
        .iter()
        .skip(1)
        .all(|l| l.split(',').count() == head.len()));
    let bound: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(",generator_bound,") || l.contains(",generator-bound,"))
        .collect();
    assert_eq!(bound.len(), 1, "{csv}");
    assert!(
        bound[0].contains(",haproxy,") && bound[0].contains(",21400.00,"),
        "{}",
        bound[0]
    );
}

#[test]
fn json_is_the_model_and_round_trips() {
    let r = fixture();
    let text = render_bench(Format::Json, &r);
    let back = BenchResult::from_json(&text).unwrap();
    assert_eq!(back.rounds.len(), r.rounds.len());
    assert_eq!(back.cells.len(), r.cells.len());
    assert_eq!(bench_json(&back), text);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kind"], "bench");
}

#[test]
fn stale_cells_are_recomputed_before_rendering() {
    let mut r = fixture();
    r.cells.clear();
    r.relative.clear();
    assert_eq!(
        render_bench(Format::Text, &r),
        render_bench(Format::Text, &fixture())
    );
}

#[test]
fn a_bench_without_rounds_still_renders() {
    let mut r = fixture();
    r.rounds.clear();
    r.resources.samples.clear();
    r.steps_done = 0;
    r.interrupted = true;
    for f in Format::ALL {
        assert!(!render_bench(f, &r).is_empty(), "{f}");
    }
    let text = render_bench(Format::Text, &r);
    assert!(text.contains("(no round finished)"), "{text}");
    assert!(
        text.contains("interrupted: 0 of 18 steps finished"),
        "{text}"
    );
}

/// The CLI's fixtures (crates/cli/tests/fixtures/bench-*.json) are these results as schema
/// version 2 saved them (kept as written: old files must keep reading): each reads back as the
/// fixture. Run with `LOADBENCH_UPDATE_FIXTURES=1` to write them again after changing the
/// fixture (in this schema).
#[test]
fn cli_fixture_files_are_the_fixtures_saved() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures");
    for (name, r) in [
        ("bench-base.json", fixtures::bench()),
        ("bench-regressed.json", fixtures::bench_regressed()),
    ] {
        let path = dir.join(name);
        let json = bench_json(&r);
        if std::env::var_os("LOADBENCH_UPDATE_FIXTURES").is_some() {
            std::fs::write(&path, &json).unwrap();
        }
        let saved = std::fs::read_to_string(&path).unwrap_or_default();
        let read = |text: &str| BenchResult::from_json(text).ok();
        assert!(
            read(&saved).is_some() && read(&saved) == read(&json),
            "{name} is stale: run with LOADBENCH_UPDATE_FIXTURES=1"
        );
    }
}

/// A file edited by hand may point rounds at loads, levels or targets that do not exist, and
/// hold samples without targets: every format still renders, with `-` where a figure is missing.
#[test]
fn rounds_pointing_nowhere_render_without_panicking() {
    let mut r = fixture();
    r.rounds[0].load = 7;
    r.rounds[1].level = 9;
    r.rounds[2].target = "ghost".into();
    r.rounds[3].result = None;
    r.rounds[3].error = Some("target stopped answering".into());
    r.resources.samples[5].targets.clear();
    r.recompute();
    for f in Format::ALL {
        assert!(!render_bench(f, &r).is_empty(), "{f}");
    }
    let text = render_bench(Format::Text, &r);
    assert!(
        text.contains("error: step 4 (direct): no result: target stopped answering"),
        "{text}"
    );
    let c = crate::compare::BenchComparison::of(["a", "b"], &r, &fixture(), 0.05);
    assert!(c.text().contains("ghost at c=50 (closed)"), "{}", c.text());
}

/// The fixture with only its first `rounds` rounds of every cell.
fn truncated(rounds: u32) -> BenchResult {
    let mut r = fixture();
    r.rounds.retain(|x| x.round < rounds);
    r.scenario.rounds = rounds;
    r.recompute();
    r
}

#[test]
fn one_round_prints_no_interval_in_every_table() {
    let r = truncated(1);
    let text = render_bench(Format::Text, &r);
    assert!(!text.contains("± 0"), "{text}");
    let direct = text
        .lines()
        .find(|l| l.trim_start().starts_with("direct") && l.contains("c=50"))
        .unwrap();
    assert!(direct.contains("n/a (1 round)"), "{direct}");
    assert!(
        text.contains("c=50: nginx: 1.66 times slower than direct, ± n/a (1 round)"),
        "{text}"
    );
    let md = render_bench(Format::Markdown, &r);
    assert!(!md.contains("± 0"), "{md}");
    assert!(md.contains("| n/a (1 round) |"), "{md}");
    assert!(md.contains("× slower, ± n/a (1 round) |"), "{md}");
    let html = render_bench(Format::Html, &r);
    assert!(!html.contains("± 0"), "{html}");
    assert!(html.contains("<td>n/a (1 round)</td>") || html.contains(">n/a (1 round)<"));
}

#[test]
fn two_rounds_warn_that_the_interval_says_little_and_clamp_it_at_zero() {
    let mut r = truncated(2);
    // Two rounds far apart: the raw interval of the mean reaches far below 0.
    let round = r
        .rounds
        .iter_mut()
        .find(|x| x.target == "direct" && x.level == 0 && x.round == 1)
        .unwrap();
    round.result.as_mut().unwrap().stats.requests /= 40;
    r.recompute();
    let cell = r.cell_of(0, 0, "direct").unwrap().requests_per_sec.unwrap();
    assert_eq!(cell.ci95_low, 0.0, "{cell:?}");
    let text = render_bench(Format::Text, &r);
    assert!(
        text.contains("6 of 6 cells have only 2 rounds: their 95% confidence intervals use t = 12.7 and are too wide to mean much"),
        "{text}"
    );
    let json = render_bench(Format::Json, &r);
    assert!(!json.contains("\"ci95_low\": -"), "{json}");
    // Three rounds: no such warning.
    assert!(!render_bench(Format::Text, &fixture()).contains("only 2 rounds"));
}

#[test]
fn the_load_heading_says_when_keep_alive_is_off() {
    let mut r = fixture();
    let on = render_bench(Format::Text, &r);
    assert!(!on.contains("keep-alive off"), "{on}");
    r.loads[0].keepalive = false;
    for format in [Format::Text, Format::Markdown] {
        let off = render_bench(format, &r);
        let heading = off.lines().find(|l| l.contains("closed model")).unwrap();
        assert!(
            heading.contains("keep-alive off (a new connection per request)"),
            "{heading}"
        );
    }
}

#[test]
fn text_and_markdown_show_the_queueing_view_of_a_sweep_as_computed() {
    let r = fixtures::bench_sweep();
    let a = r.queueing_of(0, "backend").unwrap();
    let text = render_bench(Format::Text, &r);
    let md = render_bench(Format::Markdown, &r);
    let section = &text[text.find("queueing (Little's law").expect(&text)..];
    for p in &a.levels {
        let row = section
            .lines()
            .find(|l| l.contains(&format!(" c={} ", p.value)))
            .unwrap_or_else(|| panic!("c={}: {section}", p.value));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[2], format!("{:.0}", p.requests_per_sec), "{row}");
        assert_eq!(
            cells[cells.len() - 2],
            format!("{:.1}", p.in_target),
            "{row}"
        );
        assert_eq!(
            cells[cells.len() - 1],
            format!("{:.1}", p.in_generator),
            "{row}"
        );
        let md_row = format!(
            "| backend | c={} | {:.0} | {} |",
            p.value,
            p.requests_per_sec,
            units::duration_us(p.mean_latency_us)
        );
        assert!(md.contains(&md_row), "{md_row}\n{md}");
    }
    for f in &a.findings {
        assert!(section.contains(&format!("  {}", f.text)), "{}", f.text);
        let fix = f.fix.as_deref().unwrap();
        assert!(section.contains(&format!("    fix: {fix}")), "{fix}");
    }
    assert!(md.contains("#### Queueing"), "{md}");
    assert!(
        md.contains("behaves like a pool of about 20 workers"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_bench(Format::Json, &r)).unwrap();
    assert_eq!(json["queueing"][0]["pool"]["workers"], 20);
    assert_eq!(json["queueing"][0]["knee"]["value"], 20.0);
}

#[test]
fn a_bench_without_a_sweep_has_no_queueing_section() {
    let r = fixture();
    assert!(r.queueing.is_empty(), "two levels are not a sweep");
    assert!(!render_bench(Format::Text, &r).contains("queueing"));
    assert!(!render_bench(Format::Markdown, &r).contains("Queueing"));
    assert!(!render_bench(Format::Json, &r).contains("\"queueing\""));
}

#[test]
fn an_http2_load_says_so_in_every_bench_report() {
    let mut r = fixture();
    r.loads[0].http2_streams = Some(8);
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render_bench(format, &r);
        assert!(
            out.contains("HTTP/2 × 8 streams per connection"),
            "{format:?}"
        );
    }
    let json = render_bench(Format::Json, &r);
    assert!(json.contains("\"http2_streams\": 8"), "{json}");
}

#[test]
fn a_pipelined_load_says_so_in_every_bench_report() {
    let mut r = fixture();
    assert!(!render_bench(Format::Json, &r).contains("\"pipeline\""));
    r.loads[0].pipeline = 16;
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render_bench(format, &r);
        assert!(out.contains("pipelined ×16"), "{format:?}");
    }
    let json = render_bench(Format::Json, &r);
    assert!(json.contains("\"pipeline\": 16"), "{json}");
}

#[test]
fn an_insecure_load_says_so_in_every_bench_report() {
    let mut r = fixture();
    r.loads[0].insecure = true;
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render_bench(format, &r);
        assert!(
            out.contains("TLS certificate NOT verified (insecure = true)"),
            "{format:?}"
        );
    }
}

/// The fixture with every round of haproxy at its second level sent and never answered.
fn with_an_empty_cell() -> BenchResult {
    fixtures::never_answered(fixture(), |x| x.target == "haproxy" && x.level == 1, 50)
}

/// Issue 35 point 3: a cell that completed nothing says why in every table, the warnings and
/// the JSON; the other cells say nothing of the kind.
#[test]
fn a_cell_that_measured_nothing_says_why_in_tables_warnings_and_json() {
    let r = with_an_empty_cell();
    let empty: Vec<_> = r.empty_cells().collect();
    assert_eq!(empty.len(), 1, "{empty:?}");
    let (cell, why) = empty[0];
    assert_eq!((cell.target.as_str(), cell.level), ("haproxy", 1));
    assert!(
        why.starts_with("none of the 50 requests sent was answered (50 still in flight"),
        "{why}"
    );
    assert!(r.cells.iter().filter(|c| c.nothing.is_none()).count() == r.cells.len() - 1);
    let row = cell_row(&r, cell);
    assert_eq!(row.verdict, format!("measured nothing: {why}"));
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render_bench(format, &r);
        // Once in the cell's row, once among the warnings above the tables.
        assert!(
            out.matches("measured nothing: none of the 50 requests sent was answered")
                .count()
                >= 2,
            "{format:?}:\n{out}"
        );
    }
    assert!(warnings(&r).iter().any(|(sev, w)| *sev == Severity::Error
        && w.starts_with("haproxy at ")
        && w.contains("measured nothing: none of the 50")));
    let json: serde_json::Value = serde_json::from_str(&bench_json(&r)).unwrap();
    let cells = json["cells"].as_array().unwrap();
    let with_reason: Vec<_> = cells
        .iter()
        .filter(|c| c.get("nothing").is_some())
        .collect();
    assert_eq!(with_reason.len(), 1);
    assert_eq!(with_reason[0]["nothing"], why);
    let back = BenchResult::from_json(&bench_json(&r)).unwrap();
    assert_eq!(back.empty_cells().count(), 1, "recomputed on load");
}

/// A round that failed (target not ready, exited) gives its error as the cell's reason.
#[test]
fn a_failed_round_is_the_reason_of_its_empty_cell() {
    let mut r = fixture();
    for round in r
        .rounds
        .iter_mut()
        .filter(|x| x.target == "haproxy" && x.level == 1)
    {
        round.result = None;
        round.error = Some("the target exited with status 1 before it was ready".into());
    }
    r.recompute();
    let cell = r.cell_of(0, 1, "haproxy").expect("the cell is kept");
    assert_eq!(
        cell.nothing.as_deref(),
        Some("no result: the target exited with status 1 before it was ready")
    );
}
