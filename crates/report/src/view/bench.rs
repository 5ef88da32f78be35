//! The view of a `loadbench bench` result ([`BenchResult`]): what each format shows, worked
//! out once here and printed by one file per format (`render/*/bench.rs`). The figures are the
//! model's per-cell statistics across rounds (`cells`, `relative`), recomputed from the rounds
//! so a hand-edited file cannot show stale numbers; what a reader must know first
//! (generator-bound steps, errors, noisy cells, limits not enforced) is [`warnings`].

use loadbench_model::bench_stats::{no_interval, t_critical_95};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::resources::Bottleneck;
use loadbench_model::{
    BenchCell, BenchLoad, BenchResult, CellPercentile, LoadShape, Starvation, StarvedCause,
};
use std::borrow::Cow;

/// The percentiles shown per cell, a subset of the model's `CELL_PERCENTILES`.
pub(crate) const TABLE_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// `cells` and `relative` rebuilt from `rounds` (derived data is never trusted from a file).
pub(crate) fn recomputed(result: &BenchResult) -> Cow<'_, BenchResult> {
    let mut r = result.clone();
    r.recompute();
    if r == *result {
        Cow::Borrowed(result)
    } else {
        Cow::Owned(r)
    }
}

/// How serious a warning is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    Error,
    Warn,
}

/// Everything a reader must know before trusting the tables, most serious first.
pub(crate) fn warnings(r: &BenchResult) -> Vec<(Severity, String)> {
    let mut list = Vec::new();
    if r.interrupted {
        list.push((
            Severity::Warn,
            format!(
                "interrupted: {} of {} steps finished; the tables hold those",
                r.steps_done, r.steps_planned
            ),
        ));
    }
    for round in r.rounds.iter().filter(|x| x.error.is_some()) {
        let why = round.error.as_deref().unwrap_or_default();
        list.push((
            Severity::Error,
            format!("step {} ({}): no result: {why}", round.step, round.target),
        ));
    }
    for c in &r.cells {
        list.extend(cell_warnings(r, c));
    }
    list.extend(few_rounds(r).map(|w| (Severity::Warn, w)));
    list.extend(r.warnings.iter().map(|w| (Severity::Warn, w.clone())));
    let lost = r.remote_write.as_ref().and_then(|p| p.lost_line());
    list.extend(lost.map(|w| (Severity::Warn, w)));
    list.sort_by_key(|w| w.0);
    list
}

fn cell_warnings(r: &BenchResult, c: &BenchCell) -> Vec<(Severity, String)> {
    let name = cell_name(r, c);
    let mut list = Vec::new();
    if let Some(why) = &c.nothing {
        list.push((Severity::Error, format!("{name}: measured nothing: {why}")));
    }
    let g = c.bottlenecks.generator_bound;
    if g > 0 && !c.combined {
        let of = c.bottlenecks.generator_bound + c.bottlenecks.target_bound + c.bottlenecks.neither;
        list.push((
            Severity::Warn,
            format!("{name}: {g} of {of} rounds generator-bound: throughput is loadbench's limit, not the target's; give the generator more cores or threads"),
        ));
    }
    if c.errors > 0 {
        list.push((
            Severity::Error,
            format!(
                "{name}: {} errors ({} of attempts), failed requests and non-2xx/3xx responses together",
                c.errors,
                units::percent(c.error_share)
            ),
        ));
    }
    if c.noisy {
        let cv = c.requests_per_sec.map_or(0.0, |s| s.stddev / s.mean);
        list.push((
            Severity::Warn,
            format!("{name}: noisy, req/s varies {} across rounds (coefficient of variation); run more rounds or quieten the machine", units::percent(cv)),
        ));
    }
    list
}

/// Said once when some cell's req/s interval comes from 2 rounds: Student's t with one degree
/// of freedom is 12.7, so the interval is too wide to tell targets apart. (From 1 round the
/// tables print `n/a (1 round)` in its place.)
fn few_rounds(r: &BenchResult) -> Option<String> {
    let two = r
        .cells
        .iter()
        .filter(|c| c.requests_per_sec.is_some_and(|s| s.n == 2))
        .count();
    (two > 0).then(|| {
        format!(
            "{two} of {} cells have only 2 rounds: their 95% confidence intervals use t = {:.1} and are too wide to mean much (lower ends clamped at 0); run 3 or more rounds",
            r.cells.len(),
            t_critical_95(1.0)
        )
    })
}

/// `haproxy at c=200 (load closed)`.
pub(crate) fn cell_name(r: &BenchResult, c: &BenchCell) -> String {
    let level = load_of(r, c.load).map_or(MISSING.to_string(), |l| l.level_label(c.level as usize));
    let load = load_of(r, c.load).map_or("?", |l| l.name.as_str());
    format!("{} at {level} (load {load})", c.target)
}

pub(crate) fn load_of(r: &BenchResult, load: u32) -> Option<&BenchLoad> {
    r.loads.get(load as usize)
}

/// The cells of one load, level by level, in the load's target order (combined entries last).
pub(crate) fn load_cells(r: &BenchResult, load: u32) -> Vec<&BenchCell> {
    let mut cells: Vec<&BenchCell> = r.cells.iter().filter(|c| c.load == load).collect();
    let order = |c: &BenchCell| {
        let targets = load_of(r, load).map(|l| &l.targets);
        let pos = targets.and_then(|t| t.iter().position(|n| *n == c.target));
        (c.level, pos.unwrap_or(usize::MAX))
    };
    cells.sort_by_key(|c| order(c));
    cells
}

/// One row of a summary table, every figure formatted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellRow {
    pub target: String,
    pub level: String,
    pub rounds: String,
    /// Median req/s.
    pub rps: String,
    /// Half-width of the 95% confidence interval of the mean req/s: `± 760` (its lower end
    /// may be clamped at 0, see `rps_range`); `n/a (1 round)` from a single round.
    pub rps_ci: String,
    /// `39470–40840`, the lower end clamped at 0; `n/a (1 round)` from a single round.
    pub rps_range: String,
    /// Best of the rounds (the highest req/s; the seed's "best of several").
    pub rps_best: String,
    /// p50, p90, p99, p99.9 medians.
    pub latency: Vec<String>,
    pub errors: String,
    pub cpu: String,
    pub rss_start: String,
    pub rss_peak: String,
    pub rss_trough: String,
    pub verdict: String,
    /// Against the load's first target, by mean req/s: `baseline`, `1.65 ± 0.02× slower`,
    /// `3.19× slower, ± n/a (1 round)`.
    pub relative: String,
}

pub(crate) fn cell_row(r: &BenchResult, c: &BenchCell) -> CellRow {
    let load = load_of(r, c.load);
    let rps = c.requests_per_sec;
    CellRow {
        target: c.target.clone(),
        level: load.map_or(MISSING.to_string(), |l| l.level_label(c.level as usize)),
        rounds: c.rounds.to_string(),
        rps: rps.map_or(MISSING.to_string(), |s| format!("{:.0}", s.median)),
        rps_ci: rps.map_or(MISSING.to_string(), |s| match s.n {
            0 | 1 => no_interval(s.n),
            _ => format!("± {:.0}", s.ci95_high - s.mean),
        }),
        rps_range: rps.map_or(MISSING.to_string(), |s| match s.n {
            0 | 1 => no_interval(s.n),
            _ => format!("{:.0}–{:.0}", s.ci95_low, s.ci95_high),
        }),
        rps_best: rps.map_or(MISSING.to_string(), |s| format!("{:.0}", s.best)),
        latency: TABLE_PERCENTILES
            .iter()
            .map(|&p| percentile(&c.latency_us, p))
            .collect(),
        errors: errors(c),
        cpu: c
            .cpu_mean_cores
            .map_or(MISSING.to_string(), |s| format!("{:.2}", s.median)),
        rss_start: bytes(c.rss_start_bytes),
        rss_peak: bytes(c.rss_peak_bytes),
        rss_trough: bytes(c.rss_trough_bytes),
        verdict: match &c.nothing {
            Some(why) => format!("measured nothing: {why}"),
            None => with_starvation(r, c, verdict(c)),
        },
        relative: relative(r, c),
    }
}

fn percentile(cells: &[CellPercentile], p: f64) -> String {
    cells
        .iter()
        .find(|c| c.p == p)
        .map_or(MISSING.to_string(), |c| units::duration_us(c.stats.median))
}

fn errors(c: &BenchCell) -> String {
    if c.errors == 0 {
        "0".to_string()
    } else {
        format!("{} ({})", c.errors, units::percent(c.error_share))
    }
}

fn bytes(b: Option<u64>) -> String {
    b.map_or(MISSING.to_string(), |b| units::bytes(b as f64))
}

/// The verdict's name in every report and line: `generator-bound`, `target-bound`, `neither`.
pub fn bottleneck_name(b: Bottleneck) -> &'static str {
    match b {
        Bottleneck::GeneratorBound => "generator-bound",
        Bottleneck::TargetBound => "target-bound",
        Bottleneck::Neither => "neither",
    }
}

/// The verdict, led by the starved connections of the cell's rounds when a server left
/// connections without an answer: `24 of 32 conns got no response: serves at most 8 at once
/// (3/3 rounds); target-bound`. The worst round's finding is shown.
fn with_starvation(r: &BenchResult, c: &BenchCell, verdict: String) -> String {
    let rounds: Vec<_> = r
        .rounds
        .iter()
        .filter(|x| x.load == c.load && x.level == c.level && x.target == c.target)
        .filter_map(|x| x.measured_run().map(|run| (run, &x.why)))
        .collect();
    let found: Vec<(Starvation, StarvedCause)> = rounds
        .iter()
        .filter_map(|(run, why)| Starvation::of(&run.stats).map(|s| (s, s.cause_in(why))))
        .collect();
    let Some((worst, cause)) = found.iter().max_by_key(|(s, _)| s.starved) else {
        return verdict;
    };
    let share = format!("{}/{} rounds", found.len(), rounds.len());
    format!("{} ({share}); {verdict}", worst.short_for(*cause))
}

/// The majority verdict, with the count when the rounds disagree: `target-bound (2/3)`.
pub(crate) fn verdict(c: &BenchCell) -> String {
    let b = c.bottlenecks;
    let majority = b.majority();
    let total = b.generator_bound + b.target_bound + b.neither;
    let agree = match majority {
        Bottleneck::GeneratorBound => b.generator_bound,
        Bottleneck::TargetBound => b.target_bound,
        Bottleneck::Neither => b.neither,
    };
    let name = bottleneck_name(majority);
    if total == 0 {
        MISSING.to_string()
    } else if agree == total {
        name.to_string()
    } else {
        format!("{name} ({agree}/{total})")
    }
}

fn relative(r: &BenchResult, c: &BenchCell) -> String {
    let rel = r
        .relative
        .iter()
        .find(|x| x.load == c.load && x.level == c.level && x.target == c.target);
    match rel {
        Some(x) if x.rounds < 2 => {
            let (factor, word) = if x.ratio >= 1.0 {
                (x.ratio, "faster")
            } else {
                (1.0 / x.ratio, "slower")
            };
            format!("{factor:.2}× {word}, ± {}", no_interval(x.rounds as usize))
        }
        Some(x) if x.ratio >= 1.0 => format!("{:.2} ± {:.2}× faster", x.ratio, x.ratio_err),
        Some(x) => format!(
            "{:.2} ± {:.2}× slower",
            1.0 / x.ratio,
            x.ratio_err / (x.ratio * x.ratio)
        ),
        None if load_of(r, c.load).and_then(|l| l.targets.first()) == Some(&c.target) => {
            "baseline".to_string()
        }
        None => MISSING.to_string(),
    }
}

/// `closed model, GET /plaintext, 10s per round after 2s warm-up, levels c=50, c=200`.
pub(crate) fn load_line(load: &BenchLoad) -> String {
    let model = match load.levels.first() {
        Some(LoadShape::Open { .. }) => "open model",
        Some(LoadShape::FindMax { .. }) => "find-max search",
        Some(LoadShape::Closed { .. }) | None => "closed model",
    };
    let levels: Vec<String> = (0..load.levels.len())
        .map(|l| load.level_label(l))
        .collect();
    let mut line = format!(
        "{model}, {} {}, {} per round{}, levels {}",
        load.method,
        load.path,
        units::duration_ms_short(load.duration_ms),
        units::after_warmup(load.warmup_ms),
        levels.join(", ")
    );
    if let Some(slo) = load.slo() {
        line += &format!(", SLO {}", slo.text);
    }
    if load.together {
        line += ", all targets loaded together";
    }
    if !load.keepalive {
        line += ", keep-alive off (a new connection per request)";
    }
    if load.insecure {
        line += ", TLS certificate NOT verified (insecure = true)";
    }
    if let Some(streams) = load.http2_streams {
        line += &format!(
            ", HTTP/2 × {} per connection",
            units::counted(u64::from(streams), "stream")
        );
    }
    if load.pipeline > 1 {
        line += &format!(", pipelined ×{}", load.pipeline);
    }
    line
}

/// The title above [`generator_delay_lines`].
pub(crate) const GENERATOR_DELAY_TITLE: &str =
    "the generator's own delay in sending (kept out of the latency; median of the rounds)";

/// Open loads: per target and level, the generator's own delay in sending (the median over the
/// rounds of each round's p50 and p99), which the latency leaves out; empty when no cell of
/// the load recorded one (closed loads, older files).
pub(crate) fn generator_delay_lines(r: &BenchResult, load: u32) -> Vec<String> {
    let level_of = |c: &BenchCell| {
        load_of(r, load).map_or(MISSING.to_string(), |l| l.level_label(c.level as usize))
    };
    load_cells(r, load)
        .into_iter()
        .filter_map(|c| {
            let at = |p: f64| {
                let cell = c.generator_delay_us.iter().find(|x| x.p == p)?;
                Some(units::duration_us(cell.stats.median))
            };
            let (p50, p99) = (at(50.0)?, at(99.0)?);
            Some(format!(
                "{} at {}: p50 {p50}, p99 {p99}",
                c.target,
                level_of(c)
            ))
        })
        .collect()
}

/// The relative-speed lines of a load: `c=50: nginx: 1.65 ± 0.02 times slower than direct`.
pub(crate) fn relative_lines(r: &BenchResult, load: u32) -> Vec<String> {
    let Some(l) = load_of(r, load) else {
        return Vec::new();
    };
    r.relative
        .iter()
        .filter(|x| x.load == load)
        .map(|x| format!("{}: {}", l.level_label(x.level as usize), x.text))
        .collect()
}

/// `proxies: 3 targets, 1 load, 3 rounds, 18 of 18 steps`.
pub(crate) fn headline(r: &BenchResult) -> String {
    format!(
        "{}: {} target{}, {} load{}, {} round{} each, {} of {} steps",
        r.scenario.name,
        r.targets.len(),
        plural(r.targets.len()),
        r.loads.len(),
        plural(r.loads.len()),
        r.scenario.rounds,
        plural(r.scenario.rounds as usize),
        r.steps_done,
        r.steps_planned
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A target's limits as enforced: `CPU 1 core(s), cpuset 1, memory 256.00MiB`.
pub(crate) fn limits_text(l: &loadbench_model::AppliedLimits) -> String {
    let mut parts = Vec::new();
    if let Some(q) = l.cpu_quota_cores {
        parts.push(format!("CPU quota {}", cores(q)));
    }
    if let Some(set) = &l.cpuset {
        parts.push(format!("cpuset {}", cpus(set)));
    }
    if let Some(m) = l.memory_bytes {
        parts.push(format!("memory {}", units::bytes(m as f64)));
    }
    if parts.is_empty() {
        parts.push("none".to_string());
    }
    format!("{} ({} usable)", parts.join(", "), cores(l.cores))
}

/// `1 core`, `1.5 cores`.
fn cores(n: f64) -> String {
    if n == 1.0 {
        "1 core".to_string()
    } else {
        format!("{n} cores")
    }
}

pub(crate) fn cpus(set: &[usize]) -> String {
    let list: Vec<String> = set.iter().map(|c| c.to_string()).collect();
    list.join(",")
}

#[cfg(test)]
mod tests;
