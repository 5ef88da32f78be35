//! What one finished result puts in the history: its kind, target, load, headline figures and,
//! for a bench, one row per target × load × level.

use loadbench_model::bench_stats::t_critical_95;
use loadbench_model::Verdict;
use loadbench_model::{BenchResult, FindMaxResult, RunResult, SavedResult};

/// The command that produced a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `loadbench run`.
    Run,
    /// `loadbench find-max`.
    FindMax,
    /// `loadbench bench`.
    Bench,
}

impl Kind {
    /// Every kind, in the order of the commands.
    pub const ALL: [Kind; 3] = [Kind::Run, Kind::FindMax, Kind::Bench];

    /// `run`, `find-max` or `bench`, as stored and as `--kind` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::FindMax => "find-max",
            Kind::Bench => "bench",
        }
    }

    /// The kind named `name` ([`Kind::name`]).
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The headline figures of a run, a find-max search or a bench cell. Latency is from the
/// intended send time, µs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Completed requests per second (find-max: the highest rate that held).
    pub requests_per_sec: Option<f64>,
    /// Median latency, µs.
    pub p50_us: Option<f64>,
    /// 99th-percentile latency, µs.
    pub p99_us: Option<f64>,
    /// Failed requests plus non-2xx/3xx responses, over all attempts (0–1).
    pub error_ratio: Option<f64>,
    /// Completed requests.
    pub count: Option<u64>,
    /// 95% confidence interval of req/s: for a run, of the mean of its per-second rates
    /// (Student's t over the whole seconds, at least two); for a bench cell, of the mean
    /// across rounds.
    pub rps_ci: Option<(f64, f64)>,
    /// 95% confidence interval of p99: for a run, of the mean of its per-second p99s; for a
    /// bench cell, of the mean across rounds.
    pub p99_ci: Option<(f64, f64)>,
}

/// One target × load × level of a bench, as the history keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The target's name (`a+b` for a combined entry).
    pub target: String,
    /// The load's name in the scenario.
    pub load: String,
    /// The level: `c=10`, `1000/s`, `find-max`.
    pub level: String,
    /// Its figures, across rounds.
    pub figures: Figures,
}

/// What one result puts in the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The command that produced it.
    pub kind: Kind,
    /// When it started (RFC 3339, UTC, the result's `started_at`).
    pub time: String,
    /// The URL (run, find-max) or the scenario's name (bench).
    pub target: String,
    /// How load was offered: `closed c=50`, `open 1000/s`, `find-max p99<10ms`, `scenario`.
    pub load: String,
    /// The headline figures (a bench has its figures in `cells`).
    pub figures: Figures,
    /// A bench's cells; empty otherwise.
    pub cells: Vec<Cell>,
    /// The whole result as JSON (`loadbench report` reads it back).
    pub result_json: String,
}

impl Entry {
    /// The entry of `result`, whose JSON text is `result_json`.
    pub fn of(result: &SavedResult, result_json: String) -> Entry {
        match result {
            SavedResult::Run(r) => Entry {
                kind: Kind::Run,
                time: r.started_at.clone(),
                target: r.config.url.clone(),
                load: run_load(r),
                figures: run_figures(r),
                cells: Vec::new(),
                result_json,
            },
            SavedResult::FindMax(r) => Entry {
                kind: Kind::FindMax,
                time: r.started_at.clone(),
                target: r.url.clone(),
                load: format!("find-max {}", r.slo.text),
                figures: find_max_figures(r),
                cells: Vec::new(),
                result_json,
            },
            SavedResult::Bench(r) => Entry {
                kind: Kind::Bench,
                time: r.started_at.clone(),
                target: r.scenario.name.clone(),
                load: "scenario".into(),
                figures: Figures {
                    count: Some(r.cells.iter().map(|c| c.requests).sum()),
                    ..Figures::default()
                },
                cells: bench_cells(r),
                result_json,
            },
        }
    }
}

/// `closed c=50` or `open 1000/s`: the model and its level, the key a run's series is kept
/// under with its URL.
pub(crate) fn run_load(r: &RunResult) -> String {
    format!("{} {}", r.config.load.model_name(), r.config.load.label())
}

fn run_figures(r: &RunResult) -> Figures {
    let stats = &r.stats;
    let summary = stats.summary();
    let h = &stats.latency.hist;
    let pct = |p: f64| (!h.is_empty()).then(|| h.percentile_ns(p) as f64 / 1e3);
    let failed = summary.errors;
    let attempts = stats.requests + failed;
    let bad = failed + summary.non_success_responses;
    // Whole seconds only: a trailing partial second would read as a dip in the rate.
    let whole = stats.elapsed_secs().floor() as u32;
    let points: Vec<_> = stats.series.0.iter().filter(|p| p.second < whole).collect();
    let mut rates = vec![0.0; whole as usize];
    points
        .iter()
        .for_each(|p| rates[p.second as usize] = p.requests as f64);
    let p99s: Vec<f64> = points
        .iter()
        .filter(|p| p.requests > 0)
        .map(|p| p.p99_us)
        .collect();
    Figures {
        requests_per_sec: Some(summary.requests_per_sec),
        p50_us: pct(50.0),
        p99_us: pct(99.0),
        error_ratio: (attempts > 0).then(|| bad as f64 / attempts as f64),
        count: Some(stats.requests),
        rps_ci: mean_ci(&rates),
        p99_ci: mean_ci(&p99s),
    }
}

/// The 95% confidence interval of the mean of `values` (Student's t, n − 1 degrees of
/// freedom); `None` with fewer than two values.
pub(crate) fn mean_ci(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t_critical_95((n - 1) as f64) * var.sqrt() / (n as f64).sqrt();
    Some((mean - half, mean + half))
}

fn find_max_figures(r: &FindMaxResult) -> Figures {
    let held = r.max_rate.and_then(|rate| {
        r.steps
            .iter()
            .rev()
            .find(|s| s.verdict == Verdict::Pass && s.target_rate == rate)
    });
    Figures {
        requests_per_sec: r.max_rate,
        p50_us: held.and_then(|s| s.p50_us),
        p99_us: held.and_then(|s| s.p99_us),
        error_ratio: held.map(|s| s.error_share),
        ..Figures::default()
    }
}

fn bench_cells(r: &BenchResult) -> Vec<Cell> {
    r.cells
        .iter()
        .map(|c| {
            let load = r.loads.get(c.load as usize);
            let level = load
                .and_then(|l| l.levels.get(c.level as usize))
                .map_or_else(|| format!("level {}", c.level), |l| l.label());
            let pct = |p: f64| c.latency_us.iter().find(|x| x.p == p).map(|x| &x.stats);
            let ci = |s: &loadbench_model::bench_stats::CellStats| {
                (s.n >= 2).then_some((s.ci95_low, s.ci95_high))
            };
            Cell {
                target: c.target.clone(),
                load: load.map_or_else(|| format!("load {}", c.load), |l| l.name.clone()),
                level,
                figures: Figures {
                    requests_per_sec: c.requests_per_sec.as_ref().map(|s| s.mean),
                    p50_us: pct(50.0).map(|s| s.mean),
                    p99_us: pct(99.0).map(|s| s.mean),
                    error_ratio: Some(c.error_share),
                    count: Some(c.requests),
                    rps_ci: c.requests_per_sec.as_ref().and_then(ci),
                    p99_ci: pct(99.0).and_then(ci),
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_ci_is_t_times_standard_error() {
        assert_eq!(mean_ci(&[1.0]), None);
        let (lo, hi) = mean_ci(&[1.0, 3.0]).unwrap();
        // mean 2, s = √2, t(1) = 12.706: half-width 12.706 · √2 / √2.
        assert!((lo - (2.0 - 12.706_2)).abs() < 1e-3, "{lo}");
        assert!((hi - (2.0 + 12.706_2)).abs() < 1e-3, "{hi}");
    }

    #[test]
    fn kinds_parse_back() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
        }
        assert_eq!(Kind::parse("runs"), None);
    }
}
