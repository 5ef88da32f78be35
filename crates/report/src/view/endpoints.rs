//! The per-endpoint table of a request mix (docs/request-mix.md), computed once for every
//! format: each request's label, weight and share, its requests, rate, errors, status codes
//! and latency percentiles. Text, Markdown and HTML show the human cells; CSV writes the plain
//! numbers as a second table. A run without a mix has no table. A find-max search shows the
//! table of its highest passing step, a bench each load's requests per target and level.

use crate::view::bench::{cell_row, load_cells};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{
    merge_endpoints, BenchCell, BenchResult, EndpointStats, ErrorKind, FindMaxResult, FindMaxStep,
    Histo, RunResult, Verdict,
};

/// The human table's columns.
pub(crate) const HEAD: [&str; 9] = [
    "#", "Request", "Weight", "Requests", "Req/s", "Errors", "Status", "p50", "p99",
];

/// Which columns hold numbers (right-aligned).
pub(crate) const NUMERIC: [bool; 9] = [true, false, true, true, true, true, false, true, true];

/// The endpoints of a mix, or the steps of a flow; none for a single-request run.
pub(crate) fn of(r: &RunResult) -> &[EndpointStats] {
    let e = &r.stats.endpoints;
    if e.len() < 2 && r.stats.flow.is_none() {
        &[]
    } else {
        e
    }
}

/// The heading of the per-request table: a mix's requests, or a flow's steps.
pub(crate) fn title(r: &RunResult) -> String {
    match &r.stats.flow {
        Some(f) => format!("Per step (flow {})", f.name),
        None => "Per request (mix)".into(),
    }
}

/// A flow's iterations in one line: completed (and per second), broken, and their time;
/// `None` without a flow.
pub(crate) fn flow_line(r: &RunResult) -> Option<String> {
    let f = r.stats.flow.as_ref()?;
    let h = &f.duration.hist;
    let time = if h.is_empty() {
        "no iteration completed".to_string()
    } else {
        format!(
            "an iteration took p50 {}, p99 {}",
            latency(h, 50.0),
            latency(h, 99.0)
        )
    };
    Some(format!(
        "Flow {}: {} steps; {} iterations completed ({}/s), {} broken (a step failed: the virtual user started over); {time}",
        f.name,
        f.steps,
        f.completed,
        units::rate(f.per_sec(r.stats.elapsed_secs())),
        f.broken
    ))
}

/// The unit of an open load's target rate: a flow's schedule starts iterations.
pub(crate) fn target_unit(r: &RunResult) -> &'static str {
    if r.stats.flow.is_some() {
        "iterations/s"
    } else {
        "req/s"
    }
}

/// A flow's iterations started per second, and their share of the open model's target.
pub(crate) fn flow_started(r: &RunResult, target: f64) -> Option<String> {
    let f = r.stats.flow.as_ref()?;
    let per_sec = per_sec(r, f.started);
    let share = if target > 0.0 { per_sec / target } else { 0.0 };
    Some(format!(
        "{} iterations/s started ({} of target)",
        units::rate(per_sec),
        units::percent(share)
    ))
}

/// A mix's weight and share; a flow's step has none (each iteration sends every step).
fn weight_cell(e: &EndpointStats, total_weight: u64) -> String {
    if e.name.is_some() {
        return MISSING.to_string();
    }
    format!(
        "{} ({})",
        e.weight,
        units::percent(share(e.weight, total_weight))
    )
}

/// The request's label: a flow step's name first.
fn label(e: &EndpointStats) -> String {
    match &e.name {
        Some(n) => format!("{n}: {} {}", e.method, e.path()),
        None => format!("{} {}", e.method, e.path()),
    }
}

/// The find-max step whose requests a report breaks down: the highest rate that passed, else
/// the last step; `None` when the search sent no mix.
pub(crate) fn find_max_step(r: &FindMaxResult) -> Option<&FindMaxStep> {
    let passed = r
        .steps
        .iter()
        .filter(|s| s.verdict == Verdict::Pass)
        .max_by(|a, b| a.target_rate.total_cmp(&b.target_rate));
    passed.or(r.steps.last()).filter(|s| !of(&s.run).is_empty())
}

/// The heading of a find-max report's per-request table.
pub(crate) fn find_max_title(step: &FindMaxStep) -> String {
    format!(
        "Per request (mix) at step {}, {} req/s",
        step.step,
        units::rate_short(step.target_rate)
    )
}

/// A bench's per-request table: target and level first, every round of the cell merged.
pub(crate) const BENCH_HEAD: [&str; 10] = [
    "target", "level", "#", "request", "weight", "requests", "errors", "status", "p50", "p99",
];

/// The bench table's text columns (the others are numbers).
pub(crate) const BENCH_TEXT: [usize; 4] = [0, 1, 3, 7];

/// A bench load's requests, per target and level, each merged over the cell's rounds (as the
/// run's totals merge); none when the load sent no mix.
pub(crate) fn bench_rows(r: &BenchResult, li: u32) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for c in load_cells(r, li) {
        let merged = cell_endpoints(r, c);
        if merged.len() < 2 && merged.iter().all(|e| e.name.is_none()) {
            continue;
        }
        let level = cell_row(r, c).level;
        let total: u64 = merged.iter().map(|e| u64::from(e.weight)).sum();
        for e in &merged {
            let mut row = vec![c.target.clone(), level.clone(), e.index.to_string()];
            row.extend(human_cells(e, total));
            rows.push(row);
        }
    }
    rows
}

/// The heading of a bench load's per-request table: a flow's steps or a mix's requests.
pub(crate) fn bench_title(r: &BenchResult, li: u32) -> String {
    let flow = r
        .rounds
        .iter()
        .filter(|x| x.load == li)
        .filter_map(|x| x.result.as_ref())
        .find_map(|run| run.stats.flow.as_ref());
    match flow {
        Some(f) => format!("Per step (flow {}), all rounds", f.name),
        None => "Per request (mix), all rounds".into(),
    }
}

/// The endpoints of every finished round of cell `c`, merged.
fn cell_endpoints(r: &BenchResult, c: &BenchCell) -> Vec<EndpointStats> {
    let rounds = r.rounds.iter().filter(|x| {
        x.load == c.load && x.level == c.level && x.target == c.target && x.combined == c.combined
    });
    let mut merged = Vec::new();
    for run in rounds.filter_map(|x| x.result.as_ref()) {
        merge_endpoints(&mut merged, &run.stats.endpoints);
    }
    merged
}

/// Request, weight, requests, errors, status and p50/p99 of one endpoint.
fn human_cells(e: &EndpointStats, total_weight: u64) -> Vec<String> {
    let h = &e.latency.hist;
    vec![
        label(e),
        weight_cell(e, total_weight),
        e.requests.to_string(),
        errors(e),
        statuses(e),
        latency(h, 50.0),
        latency(h, 99.0),
    ]
}

/// One human row per endpoint, in index order.
pub(crate) fn rows(r: &RunResult) -> Vec<Vec<String>> {
    let endpoints = of(r);
    let total: u64 = endpoints.iter().map(|e| u64::from(e.weight)).sum();
    endpoints.iter().map(|e| row(r, e, total)).collect()
}

fn row(r: &RunResult, e: &EndpointStats, total_weight: u64) -> Vec<String> {
    let h = &e.latency.hist;
    vec![
        e.index.to_string(),
        label(e),
        weight_cell(e, total_weight),
        e.requests.to_string(),
        units::rate(per_sec(r, e.requests)),
        errors(e),
        statuses(e),
        latency(h, 50.0),
        latency(h, 99.0),
    ]
}

fn share(weight: u32, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        f64::from(weight) / total as f64
    }
}

/// Complete responses per second of the run's window.
pub(crate) fn per_sec(r: &RunResult, n: u64) -> f64 {
    let secs = r.stats.elapsed_secs();
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `0`, or the total and its classes: `3 (reset 2, read_timeout 1)`.
fn errors(e: &EndpointStats) -> String {
    let total = e.errors.total();
    if total == 0 {
        return "0".into();
    }
    format!("{total} ({})", classes(e, " "))
}

/// Error classes with their counts, by their JSON names, `sep` between name and count.
pub(crate) fn classes(e: &EndpointStats, sep: &str) -> String {
    e.errors
        .0
        .iter()
        .map(|(&k, n)| format!("{}{sep}{n}", kind_name(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn kind_name(k: ErrorKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| k.describe().to_string())
}

/// `200: 300, 404: 2`; `-` without a response.
fn statuses(e: &EndpointStats) -> String {
    if e.status.0.is_empty() {
        return MISSING.to_string();
    }
    status_list(e, ": ", ", ")
}

/// Status codes with their counts.
pub(crate) fn status_list(e: &EndpointStats, sep: &str, between: &str) -> String {
    e.status
        .0
        .iter()
        .map(|(code, n)| format!("{code}{sep}{n}"))
        .collect::<Vec<_>>()
        .join(between)
}

/// The latency at percentile `p`, or `-` without a response.
pub(crate) fn latency(h: &Histo, p: f64) -> String {
    if h.is_empty() {
        MISSING.to_string()
    } else {
        units::duration_ns(h.percentile_ns(p) as f64)
    }
}

#[cfg(test)]
mod tests {
    use crate::{fixtures, render_to_string, Format, RenderOptions};
    use loadbench_model::{EndpointStats, ErrorKind, RunResult};

    /// The busy fixture as a 3:1 mix: `/` all 200s, `/missing` 404s and one reset, each with
    /// latencies of its own.
    fn mixed() -> RunResult {
        let mut r = fixtures::busy();
        let mut a = EndpointStats {
            index: 0,
            method: "GET".into(),
            url: "http://127.0.0.1:8080/".into(),
            weight: 3,
            requests: 300,
            ..Default::default()
        };
        a.status.add(200, 300);
        let mut b = EndpointStats {
            index: 1,
            method: "POST".into(),
            url: "http://127.0.0.1:8080/missing?x=1".into(),
            weight: 1,
            requests: 100,
            ..Default::default()
        };
        b.status.add(404, 100);
        b.errors.add(ErrorKind::Reset, 1);
        for i in 0..300u64 {
            a.latency.hist.record_ns(1_000_000 + i * 10_000);
        }
        for i in 0..100u64 {
            b.latency.hist.record_ns(20_000_000 + i * 100_000);
        }
        r.stats.endpoints = vec![a, b];
        r
    }

    fn opts() -> RenderOptions {
        RenderOptions {
            percentiles: vec![50.0, 99.0],
            color: false,
        }
    }

    /// The cells every human format must show for an endpoint, from the result itself.
    fn expected(e: &EndpointStats) -> [String; 3] {
        let h = &e.latency.hist;
        let at = |p| crate::units::duration_ns(h.percentile_ns(p) as f64);
        [e.requests.to_string(), at(50.0), at(99.0)]
    }

    /// The line (text, Markdown) or row (HTML) of the table that names `e`'s request.
    fn line_of<'a>(out: &'a str, e: &EndpointStats) -> &'a str {
        let label = format!("{} {}", e.method, e.path());
        out.lines()
            .find(|l| l.contains(&label))
            .unwrap_or_else(|| panic!("no line with {label} in:\n{out}"))
    }

    #[test]
    fn text_markdown_and_html_show_each_requests_counts_and_percentiles() {
        let r = mixed();
        for format in [Format::Text, Format::Markdown, Format::Html] {
            let out = render_to_string(format, &r, &opts());
            assert!(out.contains("Per request (mix)"), "{format:?}");
            for e in &r.stats.endpoints {
                let line = line_of(&out, e);
                for cell in expected(e) {
                    assert!(line.contains(&cell), "{format:?}: {cell} not in {line}");
                }
            }
            let missing = line_of(&out, &r.stats.endpoints[1]);
            assert!(missing.contains("404: 100"), "{format:?}: {missing}");
            assert!(missing.contains("1 (reset 1)"), "{format:?}: {missing}");
            let weight = format!("1 ({})", crate::units::percent(0.25));
            assert!(missing.contains(&weight), "{format:?}: {missing}");
        }
    }

    #[test]
    fn csv_adds_a_second_table_with_plain_numbers() {
        let r = mixed();
        let out = render_to_string(Format::Csv, &r, &opts());
        let tables: Vec<&str> = out.split("\n\n").collect();
        assert_eq!(tables.len(), 2, "{out}");
        let rows: Vec<Vec<&str>> = tables[1].lines().map(|l| l.split(',').collect()).collect();
        let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
        for (e, row) in r.stats.endpoints.iter().zip(&rows[1..]) {
            let h = &e.latency.hist;
            assert_eq!(row[col("requests")], e.requests.to_string());
            let p99 = format!("{:.3}", h.percentile_ns(99.0) as f64 / 1e3);
            assert_eq!(row[col("p99_us")], p99);
            assert_eq!(
                row[col("err_reset")],
                e.errors.get(ErrorKind::Reset).to_string()
            );
            assert_eq!(row[col("url")], e.url);
        }
        assert_eq!(rows[2][col("status")], "404=100");
    }

    #[test]
    fn json_carries_the_field_and_a_single_request_run_has_no_table() {
        let r = mixed();
        let json = render_to_string(Format::Json, &r, &opts());
        let back = RunResult::from_json(&json).unwrap();
        assert_eq!(back.stats.endpoints, r.stats.endpoints);
        let single = fixtures::busy();
        for format in [Format::Text, Format::Markdown, Format::Html, Format::Csv] {
            let out = render_to_string(format, &single, &opts());
            assert!(!out.contains("Per request"), "{format:?}");
            assert!(!out.contains("\n\n") || format != Format::Csv);
        }
        assert!(!render_to_string(Format::Json, &single, &opts()).contains("\"endpoints\""));
    }

    /// The find-max fixture (pass at 100, fail at 200, pass at 150) with a mix in every step,
    /// each step's counts its own.
    #[test]
    fn find_max_reports_break_down_the_highest_passing_step() {
        let mut f = fixtures::find_max();
        for step in &mut f.steps {
            let mut e = mixed().stats.endpoints;
            e.iter_mut()
                .for_each(|e| e.requests += u64::from(step.step) * 1000);
            step.run.stats.endpoints = e;
        }
        let best = &f.steps[2];
        assert_eq!(best.target_rate, 150.0);
        let opts = RenderOptions::default();
        let outputs = [
            crate::find_max_text(&f),
            crate::markdown::render_find_max(&f, &opts),
            crate::html::render_find_max(&f, &opts),
        ];
        for out in outputs {
            assert!(
                out.contains("Per request (mix) at step 3, 150 req/s"),
                "{out}"
            );
            for e in &best.run.stats.endpoints {
                let line = line_of(&out, e);
                for cell in expected(e) {
                    assert!(line.contains(&cell), "{cell} not in {line}");
                }
            }
        }
        let csv = crate::render::csv::find_max::render(&f);
        let tables: Vec<&str> = csv.split("\n\n").collect();
        assert_eq!(tables.len(), 2, "{csv}");
        let rows: Vec<Vec<&str>> = tables[1].lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 1 + 2 * f.steps.len(), "{csv}");
        let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
        for (step, e, row) in f
            .steps
            .iter()
            .flat_map(|s| s.run.stats.endpoints.iter().map(move |e| (s, e)))
            .zip(&rows[1..])
            .map(|((s, e), row)| (s, e, row))
        {
            assert_eq!(row[col("step")], step.step.to_string());
            assert_eq!(row[col("requests")], e.requests.to_string());
            let p99 = format!("{:.3}", e.latency.hist.percentile_ns(99.0) as f64 / 1e3);
            assert_eq!(row[col("p99_us")], p99);
        }
        let last = crate::find_max_text(&f);
        assert!(
            last.trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with("maximum"),
            "{last}"
        );
        assert!(!crate::find_max_text(&fixtures::find_max()).contains("Per request"));
    }

    /// The bench fixture with a mix in every round, each round's counts its own: the bench
    /// reports show each target and level's requests merged over its rounds.
    #[test]
    fn bench_reports_merge_each_cells_rounds_per_request() {
        let mut b = fixtures::bench();
        for round in &mut b.rounds {
            let mut e = mixed().stats.endpoints;
            e.iter_mut()
                .for_each(|e| e.requests += u64::from(round.round) * 7);
            round.result.as_mut().unwrap().stats.endpoints = e;
        }
        let cell = crate::view::bench::load_cells(&b, 0)[0];
        let rounds: Vec<_> = b
            .rounds
            .iter()
            .filter(|x| x.target == cell.target && x.level == cell.level && x.load == 0)
            .collect();
        assert!(rounds.len() > 1);
        let total = |i: usize| -> u64 {
            rounds
                .iter()
                .map(|x| x.result.as_ref().unwrap().stats.endpoints[i].requests)
                .sum()
        };
        let mut merged = mixed().stats.endpoints[1].latency.hist.clone();
        for _ in 1..rounds.len() {
            merged.merge(&mixed().stats.endpoints[1].latency.hist);
        }
        let p99 = crate::units::duration_ns(merged.percentile_ns(99.0) as f64);
        for format in [Format::Text, Format::Markdown, Format::Html] {
            let out = crate::render_bench(format, &b);
            let level = crate::view::bench::cell_row(&b, cell).level;
            let row = |label: &str| {
                out.lines()
                    .find(|l| l.contains(&cell.target) && l.contains(&level) && l.contains(label))
                    .unwrap_or_else(|| panic!("{format:?}: no {label} row in {out}"))
            };
            assert!(row("GET /").contains(&total(0).to_string()), "{format:?}");
            let post = row("POST /missing?x=1");
            assert!(post.contains(&total(1).to_string()), "{format:?}: {post}");
            assert!(post.contains(&p99), "{format:?}: {post} lacks {p99}");
        }
        let csv = crate::render_bench(Format::Csv, &b);
        let tables: Vec<&str> = csv.split("\n\n").collect();
        assert_eq!(tables.len(), 2, "{csv}");
        let rows: Vec<Vec<&str>> = tables[1].lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 1 + 2 * b.rounds.len());
        let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
        for (i, round) in b.rounds.iter().enumerate() {
            let e = &round.result.as_ref().unwrap().stats.endpoints;
            let row = &rows[1 + 2 * i];
            assert_eq!(
                (row[col("step")], row[col("target")]),
                (round.step.to_string().as_str(), round.target.as_str())
            );
            assert_eq!(row[col("requests")], e[0].requests.to_string());
        }
        let plain = crate::render_bench(Format::Text, &fixtures::bench());
        assert!(!plain.contains("per request"));
        assert!(!crate::render_bench(Format::Csv, &fixtures::bench()).contains("\n\n"));
    }
}
