//! `loadbench compare`: did a change make a run faster or slower, beyond the noise? For each
//! headline metric (req/s, p50, p99) of two run results, the figure of each whole run, the
//! relative change, and Welch's t-test on the per-second values of the two runs (the only
//! repeated measurements a single run has until rounds exist). A change is a regression or an
//! improvement only when it is beyond the threshold *and* significant (p < 0.05) in the same
//! direction. docs/compare.md explains the choice of test and its limits. Pure: results in,
//! a [`Comparison`] and its text or Markdown out.

mod bench;

use crate::markup::markdown::{self, Align};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{LoadShape, RunResult, Welch};

pub use bench::{BenchComparison, BenchRow};

/// Below this p-value a difference counts as significant.
pub const ALPHA: f64 = 0.05;

/// A metric `loadbench compare` judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Requests completed per second (higher is better).
    RequestsPerSec,
    /// Median latency, µs (lower is better).
    P50,
    /// 99th-percentile latency, µs (lower is better).
    P99,
}

impl Metric {
    /// Every metric, in the order the report lists them.
    pub const ALL: [Metric; 3] = [Metric::RequestsPerSec, Metric::P50, Metric::P99];

    /// The metric's name in reports: `req/s`, `p50`, `p99`.
    pub fn label(self) -> &'static str {
        match self {
            Metric::RequestsPerSec => "req/s",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
        }
    }

    /// Whether a rise is good news.
    fn higher_is_better(self) -> bool {
        self == Metric::RequestsPerSec
    }

    /// Whether a regression of this metric fails `compare` (exit code 1).
    pub fn gates(self) -> bool {
        matches!(self, Metric::RequestsPerSec | Metric::P99)
    }

    /// The figure of the whole run (req/s, or latency in µs); `None` when nothing completed.
    fn whole_run(self, r: &RunResult) -> Option<f64> {
        let h = &r.stats.latency.hist;
        match self {
            Metric::RequestsPerSec => Some(r.stats.summary().requests_per_sec),
            _ if h.is_empty() => None,
            Metric::P50 => Some(h.percentile_ns(50.0) as f64 / 1e3),
            Metric::P99 => Some(h.percentile_ns(99.0) as f64 / 1e3),
        }
    }

    /// One value per whole second of the measured window. A trailing partial second would read
    /// as a dip in the rate, so it is left out; for latency, seconds without a response are.
    fn per_second(self, r: &RunResult) -> Vec<f64> {
        let whole = r.stats.elapsed_secs().floor() as u32;
        let points = r.stats.series.0.iter().filter(|p| p.second < whole);
        match self {
            Metric::RequestsPerSec => {
                let mut rates = vec![0.0; whole as usize];
                points.for_each(|p| rates[p.second as usize] = p.requests as f64);
                rates
            }
            Metric::P50 => points
                .filter(|p| p.requests > 0)
                .map(|p| p.p50_us)
                .collect(),
            Metric::P99 => points
                .filter(|p| p.requests > 0)
                .map(|p| p.p99_us)
                .collect(),
        }
    }

    fn format(self, value: f64) -> String {
        match self {
            Metric::RequestsPerSec => units::rate(value),
            Metric::P50 | Metric::P99 => units::duration_us(value),
        }
    }
}

/// What a change amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Beyond the threshold, significant, for the better.
    Improvement,
    /// Beyond the threshold, significant, for the worse.
    Regression,
    /// Significant, but no larger than the threshold.
    WithinThreshold,
    /// Not significant (p ≥ 0.05), or the per-second values moved the other way.
    WithinNoise,
    /// No test possible: fewer than two whole seconds, or nothing completed, on one side.
    Untested,
}

impl Verdict {
    /// The verdict as the report words it: `regression`, `within noise`, ….
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::WithinThreshold => "within threshold",
            Verdict::WithinNoise => "within noise",
            Verdict::Untested => "untested",
        }
    }
}

/// One metric of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Which metric this row compares.
    pub metric: Metric,
    /// The base run's whole-run figure (req/s, or latency in µs); `None` when nothing completed.
    pub base: Option<f64>,
    /// The new run's whole-run figure (req/s, or latency in µs); `None` when nothing completed.
    pub new: Option<f64>,
    /// `(new − base) / base`; `None` when either is missing or the base is zero.
    pub change: Option<f64>,
    /// Welch's t-test on the per-second values (`t > 0`: new is higher).
    pub test: Option<Welch>,
    /// Per-second values on each side.
    pub samples: (usize, usize),
    /// What the change amounts to, judged on the threshold and the test.
    pub verdict: Verdict,
}

impl Row {
    fn of(metric: Metric, base: &RunResult, new: &RunResult, threshold: f64) -> Row {
        let (b, n) = (metric.whole_run(base), metric.whole_run(new));
        let change = match (b, n) {
            (Some(b), Some(n)) if b > 0.0 => Some((n - b) / b),
            (Some(b), Some(n)) if b == n => Some(0.0),
            _ => None,
        };
        let (sb, sn) = (metric.per_second(base), metric.per_second(new));
        let test = Welch::test(&sb, &sn);
        Row {
            metric,
            base: b,
            new: n,
            change,
            test,
            samples: (sb.len(), sn.len()),
            verdict: verdict(metric, change, test, threshold),
        }
    }
}

fn verdict(metric: Metric, change: Option<f64>, test: Option<Welch>, threshold: f64) -> Verdict {
    let (Some(change), Some(test)) = (change, test) else {
        return Verdict::Untested;
    };
    let same_direction = test.t.signum() == change.signum();
    if test.p >= ALPHA || !same_direction {
        return Verdict::WithinNoise;
    }
    if change.abs() <= threshold {
        return Verdict::WithinThreshold;
    }
    if (change > 0.0) == metric.higher_is_better() {
        Verdict::Improvement
    } else {
        Verdict::Regression
    }
}

/// Two run results compared metric by metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// How each side is named in the report (usually its file name).
    pub names: [String; 2],
    /// Per side: what was loaded (`GET http://…`) and how (model, connections, length).
    pub descriptions: [(String, String); 2],
    /// The smallest relative change that counts, as a share (0.05 = 5%).
    pub threshold: f64,
    /// One row per metric, in the order of [`Metric::ALL`].
    pub rows: Vec<Row>,
    /// What a reader should know before trusting the table.
    pub notes: Vec<String>,
}

impl Comparison {
    /// Compares `new` against `base`; `names` label them in the report.
    pub fn of(names: [&str; 2], base: &RunResult, new: &RunResult, threshold: f64) -> Comparison {
        let rows = Metric::ALL
            .iter()
            .map(|&m| Row::of(m, base, new, threshold))
            .collect::<Vec<_>>();
        let notes = notes(names, [base, new], &rows);
        Comparison {
            names: names.map(String::from),
            descriptions: [describe(base), describe(new)],
            threshold,
            rows,
            notes,
        }
    }

    /// The regressions that fail `compare`: req/s down or p99 up beyond the threshold, p < 0.05.
    pub fn failing(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.metric.gates() && r.verdict == Verdict::Regression)
            .collect()
    }

    /// The report for a terminal: the two sides, an aligned table, the method, the outcome.
    pub fn text(&self) -> String {
        let mut lines = self.sides();
        lines.push(String::new());
        let mut rows = vec![HEADER.map(String::from).to_vec()];
        rows.extend(self.rows.iter().map(cells));
        lines.extend(aligned(&rows));
        lines.push(String::new());
        lines.push(self.method());
        lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
        lines.push(self.outcome());
        lines.join("\n") + "\n"
    }

    /// The same report as GitHub-flavoured Markdown, for a pull request.
    pub fn markdown(&self) -> String {
        use markdown::{code, escape_text};
        let mut out = String::from("## loadbench compare\n\n");
        let sides = ["base", "new"]
            .iter()
            .zip(self.names.iter().zip(&self.descriptions));
        for (side, (name, (target, load))) in sides {
            let (name, target, load) = (code(name), code(target), escape_text(load));
            out += &format!("- **{side}** {name}: {target} ({load})\n");
        }
        let rows: Vec<Vec<String>> = self.rows.iter().map(cells).collect();
        out += "\n";
        out += &markdown::table(&HEADER, &ALIGN, &rows);
        out += &format!("\n{}\n", escape_text(&self.method()));
        for n in &self.notes {
            out += &format!("\n> **Note:** {}\n", escape_text(n));
        }
        out += &format!("\n**{}**\n", escape_text(&self.outcome()));
        out
    }

    fn sides(&self) -> Vec<String> {
        let w = self
            .names
            .iter()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(0);
        ["base", "new"]
            .iter()
            .zip(self.names.iter().zip(&self.descriptions))
            .map(|(side, (name, (target, load)))| {
                format!("{side:<4}  {name:<w$}  {target} ({load})")
            })
            .collect()
    }

    fn method(&self) -> String {
        let (a, b) = self.rows.first().map_or((0, 0), |r| r.samples);
        format!(
            "threshold {}; significant when p < {ALPHA}: Welch's t-test on per-second values ({a} and {b} whole seconds), which are autocorrelated, so p-values are optimistic (docs/compare.md)",
            units::percent(self.threshold)
        )
    }

    /// `regression: req/s -50.00% (p < 0.0001)`, an improvement likewise, or neither.
    fn outcome(&self) -> String {
        let gating = |verdict: Verdict| -> Vec<String> {
            let rows = self.rows.iter();
            rows.filter(|r| r.metric.gates() && r.verdict == verdict)
                .map(|r| {
                    format!(
                        "{} {} ({})",
                        r.metric.label(),
                        change_text(r.change),
                        p_text(r)
                    )
                })
                .collect()
        };
        outcome_line(&gating(Verdict::Regression), &gating(Verdict::Improvement))
    }
}

/// The closing line of a comparison: the gating regressions, else the improvements, else none.
pub(crate) fn outcome_line(worse: &[String], better: &[String]) -> String {
    if !worse.is_empty() {
        format!("regression: {}", worse.join(", "))
    } else if !better.is_empty() {
        format!("improvement: {}", better.join(", "))
    } else {
        "no significant change beyond the threshold in req/s or p99".to_string()
    }
}

const HEADER: [&str; 6] = ["metric", "base", "new", "change", "p-value", "verdict"];
const ALIGN: [Align; 6] = {
    use Align::{Left, Right};
    [Left, Right, Right, Right, Right, Left]
};

fn cells(r: &Row) -> Vec<String> {
    let value = |v: Option<f64>| v.map_or(MISSING.to_string(), |v| r.metric.format(v));
    vec![
        r.metric.label().to_string(),
        value(r.base),
        value(r.new),
        change_text(r.change),
        p_text(r),
        r.verdict.label().to_string(),
    ]
}

fn change_text(change: Option<f64>) -> String {
    change.map_or(MISSING.to_string(), |c| format!("{:+.2}%", c * 100.0))
}

fn p_text(r: &Row) -> String {
    match r.test {
        None => MISSING.to_string(),
        Some(t) if t.p < 1e-4 => "p < 0.0001".to_string(),
        Some(t) => format!("p = {:.4}", t.p),
    }
}

/// Columns two spaces apart: the first and last left-aligned, numbers right-aligned.
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..HEADER.len()).map(width).collect();
    rows.iter()
        .map(|row| {
            let cells = row.iter().zip(&widths).enumerate().map(|(i, (c, &w))| {
                if i == 0 || i == HEADER.len() - 1 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            });
            format!("  {}", cells.collect::<Vec<_>>().join("  "))
                .trim_end()
                .to_string()
        })
        .collect()
}

/// `("GET http://…/", "closed model, 8 connections, 5.00s measured")`.
fn describe(r: &RunResult) -> (String, String) {
    let c = &r.config;
    let load = match &c.load {
        LoadShape::Closed { .. } => format!("closed model, {} connections", c.connections),
        LoadShape::Open { schedule, .. } => {
            let rates: Vec<String> = schedule
                .iter()
                .map(|s| units::rate_short(s.to_rate))
                .collect();
            format!("open model, {} req/s", rates.join("→"))
        }
        LoadShape::FindMax { slo, .. } => format!("find-max search, {}", slo.text),
    };
    let length = units::duration_us(r.stats.elapsed_us as f64);
    (
        format!("{} {}", c.method, c.url),
        format!("{load}, {length} measured"),
    )
}

fn notes(names: [&str; 2], runs: [&RunResult; 2], rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    let [base, new] = runs;
    if base.config.url != new.config.url
        || base.config.method != new.config.method
        || base.config.load != new.config.load
        || base.config.connections != new.config.connections
    {
        notes
            .push("the two runs differ in target or load; the table compares them as given".into());
    }
    for (name, r) in names.iter().zip(runs) {
        if r.interrupted {
            notes.push(format!("{name} was interrupted: it holds a partial run"));
        }
        let (errors, non_success) = (r.stats.errors.total(), r.stats.failed_answers());
        if errors + non_success > 0 {
            notes.push(format!(
                "{name} has {errors} errors and {non_success} failed answers (non-2xx/3xx, or non-OK gRPC calls); req/s counts every completed response"
            ));
        }
        if let Some(calls) = r.stats.grpc.text() {
            notes.push(format!("{name}'s gRPC calls by status: {calls}"));
        }
    }
    if rows.iter().any(|r| r.verdict == Verdict::Untested) {
        notes.push(
            "untested: a side has fewer than two whole seconds (or no response); run for 10s or more for a useful test".into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use loadbench_model::{Histo, SecondCounts, Series, SeriesPoint};

    /// A run whose seconds completed `rates` requests at `latency_us` each.
    fn run(rates: &[u64], latency_us: u64) -> RunResult {
        let mut r = fixtures::empty();
        let mut all = Histo::new();
        let points = rates.iter().enumerate().map(|(i, &n)| {
            let mut h = Histo::new();
            (0..n).for_each(|k| h.record_ns(latency_us * 1000 + k % 7 * 1000));
            all.merge(&h);
            let counts = SecondCounts {
                requests: n,
                ..SecondCounts::default()
            };
            SeriesPoint::new(i as u32, counts, &h)
        });
        r.stats.series = Series(points.collect());
        r.stats.latency.hist = all;
        r.stats.requests = rates.iter().sum();
        r.stats.elapsed_us = rates.len() as u64 * 1_000_000;
        r.finalize();
        r
    }

    fn verdicts(c: &Comparison) -> Vec<Verdict> {
        c.rows.iter().map(|r| r.verdict).collect()
    }

    const BASE: [u64; 6] = [1000, 1010, 990, 1005, 995, 1000];

    #[test]
    fn a_slower_target_is_a_regression_that_fails() {
        let slow = run(&[500, 505, 495, 502, 498, 500], 200);
        let c = Comparison::of(["a", "b"], &run(&BASE, 100), &slow, 0.05);
        assert_eq!(verdicts(&c), vec![Verdict::Regression; 3]);
        assert_eq!(c.failing().len(), 2, "req/s and p99 gate, p50 does not");
        assert!((c.rows[0].change.unwrap() + 0.5).abs() < 0.01);
        assert!(
            c.text()
                .contains("regression: req/s -50.00% (p < 0.0001), p99 +94.33%"),
            "{}",
            c.text()
        );
    }

    #[test]
    fn the_swap_is_an_improvement() {
        let slow = run(&[500, 505, 495, 502, 498, 500], 200);
        let c = Comparison::of(["a", "b"], &slow, &run(&BASE, 100), 0.05);
        assert_eq!(verdicts(&c), vec![Verdict::Improvement; 3]);
        assert!(c.failing().is_empty());
        assert!(
            c.text()
                .contains("\nimprovement: req/s +100.00% (p < 0.0001), p99 -"),
            "{}",
            c.text()
        );
    }

    #[test]
    fn the_same_run_is_within_noise_and_small_significant_changes_within_threshold() {
        let again = run(&[1005, 995, 1000, 1010, 990, 1000], 100);
        let c = Comparison::of(["a", "b"], &run(&BASE, 100), &again, 0.05);
        assert_eq!(c.rows[0].verdict, Verdict::WithinNoise);
        assert!(c.rows[0].test.unwrap().p > 0.5);
        let a_bit_slower = run(&[980, 990, 970, 985, 975, 980], 100);
        let c = Comparison::of(["a", "b"], &run(&BASE, 100), &a_bit_slower, 0.05);
        assert_eq!(c.rows[0].verdict, Verdict::WithinThreshold);
        assert!(c.failing().is_empty());
    }

    #[test]
    fn too_short_runs_are_untested_not_passed_off_as_noise() {
        let c = Comparison::of(["a", "b"], &run(&[1000], 100), &run(&[10], 900), 0.05);
        assert_eq!(verdicts(&c), vec![Verdict::Untested; 3]);
        assert!(c.failing().is_empty());
        assert!(c.text().contains("note: untested"), "{}", c.text());
    }

    #[test]
    fn nothing_completed_leaves_latency_untested() {
        let c = Comparison::of(["a", "b"], &run(&BASE, 100), &fixtures::empty(), 0.05);
        assert!(c.rows[1].base.is_some());
        assert_eq!(c.rows[1].new, None);
        assert_eq!(c.rows[1].verdict, Verdict::Untested);
    }

    #[test]
    fn the_partial_last_second_is_left_out_and_quiet_seconds_count_as_zero() {
        let mut r = run(&[1000, 0, 1000, 300], 100);
        r.stats.elapsed_us = 3_400_000;
        r.stats.series.0.remove(1);
        assert_eq!(
            Metric::RequestsPerSec.per_second(&r),
            vec![1000.0, 0.0, 1000.0]
        );
        assert_eq!(Metric::P50.per_second(&r).len(), 2);
    }

    #[test]
    fn text_table_lines_up() {
        let c = Comparison::of(
            ["base.json", "new.json"],
            &run(&BASE, 100),
            &run(&BASE, 100),
            0.05,
        );
        let text = c.text();
        let table: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(table.len(), 4, "{text}");
        assert!(table[0].starts_with("  metric"), "{text}");
        let verdict_at = table[0].find("verdict").unwrap();
        assert!(
            table[1..].iter().all(|l| l.chars().count() > verdict_at),
            "{text}"
        );
        assert!(
            text.contains("base  base.json  GET http://127.0.0.1:8080/"),
            "{text}"
        );
    }

    #[test]
    fn markdown_is_a_table_with_escaped_cells() {
        let mut base = run(&BASE, 100);
        base.config.url = "http://h/?a=1|2".into();
        let c = Comparison::of(["a|b.json", "new.json"], &base, &run(&BASE, 100), 0.05);
        let md = c.markdown();
        assert!(
            md.contains("| metric | base | new | change | p-value | verdict |"),
            "{md}"
        );
        assert!(md.contains("|:---|---:|---:|---:|---:|:---|"), "{md}");
        assert!(
            md.contains("- **base** `a|b.json`: `GET http://h/?a=1|2` (closed model"),
            "{md}"
        );
    }

    /// gRPC runs: each side's calls by `grpc-status` in the notes, in text and Markdown.
    #[test]
    fn grpc_statuses_of_each_side_are_noted() {
        let mut base = run(&BASE, 100);
        let mut codes = [0u64; 18];
        codes[0] = 90;
        codes[5] = 10;
        base.stats.grpc = loadbench_model::GrpcStats::from_tally(&codes, 0);
        let c = Comparison::of(["base.json", "new.json"], &base, &run(&BASE, 100), 0.05);
        let text = c.text();
        assert!(
            text.contains("base.json's gRPC calls by status: OK 90, NOT_FOUND 10"),
            "{text}"
        );
        assert!(!text.contains("new.json's gRPC"), "{text}");
        let md = c.markdown();
        assert!(md.contains("gRPC calls by status: OK 90, NOT"), "{md}");
        assert!(md.contains("FOUND 10"), "{md}");
    }
}
