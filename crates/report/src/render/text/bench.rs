//! The terminal view of a bench: the warnings first, then per load a table of every target ×
//! level (median req/s with the 95% confidence interval's half-width, the best round, p50 and
//! p99, errors, the target's CPU and memory, and who ran out of CPU), the relative speeds, the
//! queueing view of a sweep (Little's law per level, the knee, the scalability fit, a worker
//! pool), the findings, the profiles, and the targets.

use crate::markup::text::aligned;
use crate::view::bench::{
    cell_row, generator_delay_lines, headline, limits_text, load_cells, load_line, relative_lines,
    warnings, Severity, GENERATOR_DELAY_TITLE,
};
use crate::view::endpoints;
use crate::view::profile::{path, profiled, what, NOTE};
use crate::view::queueing;
use loadbench_model::BenchResult;

const HEAD: [&str; 12] = [
    "target",
    "level",
    "req/s",
    "95% CI",
    "best",
    "p50",
    "p99",
    "errors",
    "CPU",
    "RSS start",
    "peak/trough",
    "verdict",
];

pub(crate) fn render(r: &BenchResult) -> String {
    let mut lines = vec![format!("loadbench bench {}", headline(r))];
    lines.push(format!(
        "  started {}, ended {}, results in {}",
        r.started_at, r.ended_at, r.run_dir
    ));
    lines.extend(warning_lines(r));
    if let Some(gates) = &r.gates {
        lines.push(String::new());
        lines.extend(crate::gates::text_lines(gates));
    }
    for li in 0..r.loads.len() as u32 {
        lines.push(String::new());
        lines.extend(load_section(r, li));
    }
    let why = crate::why::bench_text_lines(r);
    if !why.is_empty() {
        lines.push(String::new());
        lines.extend(why);
    }
    let profiles = profile_lines(r);
    if !profiles.is_empty() {
        lines.push(String::new());
        lines.extend(profiles);
    }
    lines.push(String::new());
    lines.extend(targets(r));
    lines.join("\n") + "\n"
}

fn warning_lines(r: &BenchResult) -> Vec<String> {
    let list = warnings(r);
    if list.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![String::new(), "warnings:".to_string()];
    lines.extend(list.iter().map(|(s, w)| match s {
        Severity::Error => format!("  error: {w}"),
        Severity::Warn => format!("  warning: {w}"),
    }));
    lines
}

fn load_section(r: &BenchResult, li: u32) -> Vec<String> {
    let load = &r.loads[li as usize];
    let mut lines = vec![format!("load {}: {}", load.name, load_line(load))];
    let mut rows = vec![HEAD.map(String::from).to_vec()];
    for c in load_cells(r, li) {
        let row = cell_row(r, c);
        rows.push(vec![
            row.target,
            row.level,
            row.rps,
            row.rps_ci,
            row.rps_best,
            row.latency[0].clone(),
            row.latency[2].clone(),
            row.errors,
            row.cpu,
            row.rss_start,
            format!("{}/{}", row.rss_peak, row.rss_trough),
            row.verdict,
        ]);
    }
    if rows.len() == 1 {
        lines.push("  (no round finished)".to_string());
        return lines;
    }
    lines.extend(aligned(&rows, &[0, 1, 11]));
    let relative = relative_lines(r, li);
    if !relative.is_empty() {
        lines.push("relative speed (mean req/s):".to_string());
        lines.extend(relative.iter().map(|l| format!("  {l}")));
    }
    let delay = generator_delay_lines(r, li);
    if !delay.is_empty() {
        lines.push(format!("{GENERATOR_DELAY_TITLE}:"));
        lines.extend(delay.iter().map(|l| format!("  {l}")));
    }
    let mix = endpoints::bench_rows(r, li);
    if !mix.is_empty() {
        use endpoints::{BENCH_HEAD, BENCH_TEXT};
        lines.push(format!("{}:", endpoints::bench_title(r, li).to_lowercase()));
        let mut rows = vec![BENCH_HEAD.map(String::from).to_vec()];
        rows.extend(mix);
        lines.extend(aligned(&rows, &BENCH_TEXT));
    }
    lines.extend(queueing_lines(r, li));
    lines
}

/// The load's queueing table and sentences, each fix on the line below its finding.
fn queueing_lines(r: &BenchResult, li: u32) -> Vec<String> {
    let rows = queueing::rows(r, li);
    if rows.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!("queueing ({}):", queueing::INTRO)];
    let mut table = vec![queueing::HEAD.map(String::from).to_vec()];
    table.extend(rows);
    lines.extend(aligned(&table, &[0, 1]));
    for s in queueing::sentences(r, li) {
        lines.push(format!("  {}", s.text));
        lines.extend(s.fix.map(|f| format!("    fix: {f}")));
    }
    lines
}

fn targets(r: &BenchResult) -> Vec<String> {
    let mut lines = vec!["targets:".to_string()];
    for t in &r.targets {
        lines.push(format!(
            "  {} ({}) {}: {}",
            t.name, t.kind, t.url, t.command
        ));
        lines.push(format!("    limits: {}", limits_text(&t.limits)));
    }
    lines
}

/// The profiles' lines (empty without profiles).
pub(crate) fn profile_lines(r: &BenchResult) -> Vec<String> {
    let mut lines: Vec<String> = profiled(r)
        .map(|(t, p)| format!("  {}: {} ({})", t.name, path(r, p), what(r, p)))
        .collect();
    if !lines.is_empty() {
        lines.insert(0, format!("profiles (on-CPU flame graphs, {NOTE}):"));
    }
    lines
}
