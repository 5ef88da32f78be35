//! The result of `loadbench bench`: a scenario's targets (with the limits that were enforced),
//! its loads, every finished round (each holding the same [`RunResult`] or [`FindMaxResult`]
//! that `run` and `find-max` save, plus that step's resources and bottleneck), the resource
//! series of the whole run, and the per-cell statistics across rounds.
//!
//! The harness saves this after every round, so `cells`, `relative` and `queueing` are derived
//! data: [`BenchResult::recompute`] rebuilds them from `rounds`, and readers may call it again.

use crate::bench_stats::{cell_stats, relative_speed, CellStats};
use crate::find_max::{FindMaxResult, Verdict};
use crate::load::LoadShape;
use crate::queueing::SweepAnalysis;
use crate::resources::{Bottleneck, ResourceSummary, Samples, Window};
use crate::result::{HostInfo, ResultKind, RunResult};
use crate::saved::{checked_as, ResultReadError};
use serde::{Deserialize, Serialize};

/// Latency percentiles summarised per cell.
pub const CELL_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// A cell whose req/s varies more than this (coefficient of variation) across rounds is noisy.
pub const NOISY_CV: f64 = 0.10;

/// One `loadbench bench` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// The schema version ([`crate::SCHEMA_VERSION`]) the file was written with.
    pub schema_version: u32,
    /// Always [`ResultKind::Bench`].
    pub kind: ResultKind,
    /// Version of the loadbench that ran the bench.
    pub loadbench_version: String,
    /// The generator's machine.
    pub host: HostInfo,
    /// The scenario as run.
    pub scenario: ScenarioInfo,
    /// The run folder (`results/<timestamp>-<scenario>`) holding this file, logs and configs.
    pub run_dir: String,
    /// Wall clock when the first target was started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall clock when the last finished round ended (RFC 3339, UTC).
    pub ended_at: String,
    /// True when Ctrl-C stopped the bench; finished rounds are kept.
    pub interrupted: bool,
    /// Steps planned: targets × loads × levels × rounds.
    pub steps_planned: u32,
    /// Steps finished so far (the file is saved again after every round).
    pub steps_done: u32,
    /// Every target, as started.
    pub targets: Vec<BenchTarget>,
    /// Every `[[load]]` of the scenario, as resolved.
    pub loads: Vec<BenchLoad>,
    /// Every finished round in the order it ran (for `together` loads: one entry per target
    /// plus one combined entry per step).
    pub rounds: Vec<BenchRound>,
    /// Per load × level × target, statistics across rounds (derived from `rounds`).
    pub cells: Vec<BenchCell>,
    /// Per load × level, each target's throughput against the load's first target.
    pub relative: Vec<RelativeSpeed>,
    /// Per closed or open load with 3 or more levels measured, per target: the queueing view
    /// (Little's law per level, the knee, a Universal Scalability Law fit, a worker pool) and
    /// its findings (derived from `rounds`; absent in files written before it existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queueing: Vec<SweepAnalysis>,
    /// CPU and RSS of every target, the generator's CPU and each core's load, every sample
    /// interval through the whole run, with marks at step boundaries.
    pub resources: Samples,
    /// Limits that were not enforced and other facts a reader must know.
    pub warnings: Vec<String>,
    /// The gates (`--slo`, a load's or a target's `slo`) judged per cell and ratio once the
    /// bench finished (docs/gates.md); absent without gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<crate::gate::GateReport>,
    /// `--prometheus-remote-write`: what the pushes of the live series came to; absent
    /// without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_write: Option<crate::RemoteWriteCounts>,
}

/// The scenario as run (after command-line overrides).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// The scenario's `name`, used in result file names and reports.
    pub name: String,
    /// The scenario's free-text `description`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The scenario file as given on the command line.
    pub file: String,
    /// Times every load step is repeated (`rounds`, or `--rounds`).
    pub rounds: u32,
    /// Pause between rounds and steps so targets settle (`cooldown`), ms.
    pub cooldown_ms: u64,
    /// CPUs the generator was pinned to; `None`: all.
    pub generator_cpuset: Option<Vec<usize>>,
    /// Generator worker threads.
    pub generator_threads: u32,
    /// Cores the generator could use (its CPU set, or the host's cores).
    pub generator_cores: f64,
}

/// A started target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchTarget {
    /// The target's distinct name; loads and rounds refer to it.
    pub name: String,
    /// `command` or `upstream` (the reference backend).
    pub kind: String,
    /// The command line as started (placeholders rendered).
    pub command: String,
    /// The URL loads were sent to (before the load's path is appended).
    pub url: String,
    /// Loopback port the target listened on.
    pub port: u16,
    /// The target this one forwards to (`proxy_to`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_to: Option<String>,
    /// The limits that were enforced.
    pub limits: AppliedLimits,
    /// From start to ready.
    pub ready_ms: u64,
    /// The target's stdout log, relative to the run folder.
    pub stdout_log: String,
    /// The target's stderr log, relative to the run folder.
    pub stderr_log: String,
    /// The target's rendered config files, relative to the run folder.
    pub configs: Vec<String>,
    /// Its on-CPU profile (scenario `profile = true`, where perf could record one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<TargetProfile>,
}

/// An on-CPU profile of a target's process tree, recorded by `perf` during one extra,
/// unmeasured run of a load after the measured rounds, and drawn as a flame graph.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetProfile {
    /// The flame graph (SVG), relative to the run folder: `profile-<target>.svg`.
    pub svg: String,
    /// The folded stacks it was drawn from (one `frame;frame;… count` line per stack),
    /// relative to the run folder.
    pub folded: String,
    /// Index of the load that ran (into `loads`).
    pub load: u32,
    /// Index of its level (into the load's `levels`).
    pub level: u32,
    /// How long perf recorded, ms.
    pub duration_ms: u64,
    /// Sampling frequency, Hz.
    pub frequency_hz: u32,
    /// Stacks perf sampled.
    pub samples: u64,
}

/// What was enforced for a target; anything asked for but not enforced is in the warnings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppliedLimits {
    /// CPUs the target's process tree was confined to; `None`: not limited.
    pub cpuset: Option<Vec<usize>>,
    /// CPU quota enforced, in cores (1.0 = one core); `None`: not limited.
    pub cpu_quota_cores: Option<f64>,
    /// Memory limit enforced, bytes; `None`: not limited.
    pub memory_bytes: Option<u64>,
    /// The cgroup directory the target ran in.
    pub cgroup: Option<String>,
    /// Cores the target could use: the quota, else its CPU set, else the host's cores.
    pub cores: f64,
}

/// One `[[load]]` of the scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchLoad {
    /// The scenario's name for it, or one made from the model.
    pub name: String,
    /// Names of the targets loaded (one after another, unless `together`).
    pub targets: Vec<String>,
    /// All targets loaded at the same time in each step.
    pub together: bool,
    /// Its levels, each the whole shape of one step: a closed load's connections, an open
    /// load's constant rate (and cap), or the one find-max search (its SLO and cap). All of
    /// one model.
    pub levels: Vec<LoadShape>,
    /// How long each step is measured, ms.
    pub duration_ms: u64,
    /// Load applied before measuring, not recorded, ms.
    pub warmup_ms: u64,
    /// HTTP method of the request.
    pub method: String,
    /// Path and query, appended to the target's `url`.
    pub path: String,
    /// Connections kept open across requests (HTTP keep-alive); `false`: a new connection per
    /// request, like `ab` without `-k`. Results written before this field existed used keep-alive.
    #[serde(default = "keep_alive")]
    pub keepalive: bool,
    /// `insecure = true`: the `https://` targets' certificates were NOT verified (every bench
    /// report says so). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// `http2 = true`: the load spoke HTTP/2 with this many streams per connection (`streams`,
    /// default 1). Absent for HTTP/1.1 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2_streams: Option<u32>,
    /// `pipeline = N`: HTTP/1.1 requests each connection kept written ahead of their responses
    /// (every bench report says "pipelined ×N"). Absent (1) without pipelining, and in files
    /// written before it existed.
    #[serde(
        default = "crate::result::one_u16",
        skip_serializing_if = "crate::result::is_one_u16"
    )]
    pub pipeline: u16,
}

fn keep_alive() -> bool {
    true
}

impl BenchLoad {
    /// `c=10`, `1000/s` or `find-max`: how a level is shown (`-` for a level it does not have).
    pub fn level_label(&self, level: usize) -> String {
        self.levels.get(level).map_or("-".into(), LoadShape::label)
    }

    /// The load's model as the JSON writes it (`closed`, `open`, `find_max`): its levels'.
    pub fn model_name(&self) -> &'static str {
        self.levels.first().map_or("closed", LoadShape::model_name)
    }

    /// The find-max load's objective, when it is one.
    pub fn slo(&self) -> Option<&crate::Slo> {
        self.levels.iter().find_map(|l| match l {
            LoadShape::FindMax { slo, .. } => Some(slo),
            _ => None,
        })
    }
}

/// One finished round of one target (or the combination of a `together` step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRound {
    /// Position in the run (1-based); the entries of a `together` step share it.
    pub step: u32,
    /// Index into the result's `loads`.
    pub load: u32,
    /// Index into that load's `levels`.
    pub level: u32,
    /// Round, from 0.
    pub round: u32,
    /// The target's name; for the combined entry of a `together` step, the names joined by `+`.
    pub target: String,
    /// True for the combined entry of a `together` step (its result is the exact merge).
    pub combined: bool,
    /// The measured window on the `resources` timeline.
    pub window: Window,
    /// The run, for closed and open loads (absent when the round has none, see `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// The search, for find-max loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_max: Option<FindMaxResult>,
    /// The target's memory and CPU during the window (`None` for combined entries, or when no
    /// sample fell in the window).
    pub resources: Option<ResourceSummary>,
    /// The generator's mean CPU during the window, in cores (1.0 = one core).
    pub generator_cpu_mean_cores: f64,
    /// Which side saturated: the generator, the target (its CPU, or one of its threads), or
    /// neither.
    pub bottleneck: Bottleneck,
    /// The kernel's and the targets' evidence over the step; absent in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::StepEvidence>,
    /// The findings drawn from `evidence` and the CPU shares, strongest first.
    #[serde(default, skip_serializing_if = "crate::why::Why::is_empty")]
    pub why: crate::why::Why,
    /// Why the round has no result (e.g. the target stopped answering), when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl BenchRound {
    /// The run whose latency and errors the round stands for: its own, or for a find-max
    /// round the step at the highest rate that held.
    pub fn measured_run(&self) -> Option<&RunResult> {
        if let Some(r) = &self.result {
            return Some(r);
        }
        let f = self.find_max.as_ref()?;
        let max = f.max_rate?;
        f.steps
            .iter()
            .rev()
            .find(|s| s.verdict == Verdict::Pass && s.target_rate == max)
            .map(|s| &s.run)
    }

    /// Why the round measured nothing, in one line; `None` when it completed at least one
    /// response (find-max: when a rate held). The round's error (target not ready, exited,
    /// …), the run's [`crate::Stats::nothing_completed`], or the search's
    /// [`FindMaxResult::no_rate_reason`].
    pub fn nothing_measured(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!("no result: {e}"));
        }
        if let Some(run) = &self.result {
            return run.stats.nothing_completed().map(|w| w.to_string());
        }
        match &self.find_max {
            Some(f) => f.no_rate_reason(),
            None => Some("no result recorded".to_string()),
        }
    }

    /// Completed requests per second (find-max: the highest rate that held).
    pub fn throughput(&self) -> Option<f64> {
        if let Some(r) = &self.result {
            return Some(r.stats.summary().requests_per_sec);
        }
        self.find_max.as_ref().and_then(|f| f.max_rate)
    }
}

/// Statistics of one load × level × target across its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchCell {
    /// Index into the result's `loads`.
    pub load: u32,
    /// Index into that load's `levels`.
    pub level: u32,
    /// The target's name (names joined by `+` for a combined entry).
    pub target: String,
    /// True for the combined entries of a `together` load.
    pub combined: bool,
    /// Rounds with a result.
    pub rounds: u32,
    /// Completed requests per second; for find-max, the highest rate that held.
    pub requests_per_sec: Option<CellStats>,
    /// Latency from the intended send time, per percentile of [`CELL_PERCENTILES`] (find-max:
    /// at the highest rate that held, see [`BenchRound::measured_run`]).
    pub latency_us: Vec<CellPercentile>,
    /// Mean latency from the intended send time across rounds, µs.
    pub mean_latency_us: Option<CellStats>,
    /// Open model: the generator's own delay in sending (kept out of the latency, see
    /// `Stats::generator_delay`), p50 and p99 across rounds, µs. Empty for closed loads and in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generator_delay_us: Vec<CellPercentile>,
    /// Completed requests, summed over rounds.
    pub requests: u64,
    /// Failed requests plus non-2xx/3xx responses, summed over rounds.
    pub errors: u64,
    /// `errors / (requests + failed)`.
    pub error_share: f64,
    /// RSS at the start of the window (the ready state), the lowest over rounds, bytes.
    pub rss_start_bytes: Option<u64>,
    /// Highest RSS sampled in any round's window, bytes.
    pub rss_peak_bytes: Option<u64>,
    /// Lowest RSS sampled in any round's window, bytes.
    pub rss_trough_bytes: Option<u64>,
    /// The target's mean CPU of each round, summarised, in cores (1.0 = one core).
    pub cpu_mean_cores: Option<CellStats>,
    /// Highest CPU sample of any round, in cores.
    pub cpu_max_cores: Option<f64>,
    /// The generator's mean CPU of each round, summarised, in cores.
    pub generator_cpu_mean_cores: Option<CellStats>,
    /// Rounds ending with each bottleneck verdict; reports show the majority.
    pub bottlenecks: BottleneckCounts,
    /// req/s varied more than [`NOISY_CV`] across rounds.
    pub noisy: bool,
    /// Why the cell measured nothing, when none of its rounds completed a response (no
    /// silent zero): each distinct round reason ([`BenchRound::nothing_measured`]), joined by
    /// `; `. Absent when some round measured something. Recomputed from `rounds` on load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nothing: Option<String>,
}

/// One latency percentile of a cell across rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellPercentile {
    /// Percentile, 0–100.
    pub p: f64,
    /// That percentile's latency across rounds, µs.
    pub stats: CellStats,
}

/// How many rounds of a cell ended with each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BottleneckCounts {
    /// Rounds in which the generator used ≥ 90% of its cores while the target did not.
    pub generator_bound: u32,
    /// Rounds in which the target saturated while the generator did not.
    pub target_bound: u32,
    /// Rounds in which neither saturated, or both did.
    pub neither: u32,
}

impl BottleneckCounts {
    fn add(&mut self, b: Bottleneck) {
        match b {
            Bottleneck::GeneratorBound => self.generator_bound += 1,
            Bottleneck::TargetBound => self.target_bound += 1,
            Bottleneck::Neither => self.neither += 1,
        }
    }

    /// The verdict of most rounds (ties: generator-bound first, as the one to warn about).
    pub fn majority(&self) -> Bottleneck {
        let g = self.generator_bound;
        let t = self.target_bound;
        if g > 0 && g >= t && g >= self.neither {
            Bottleneck::GeneratorBound
        } else if t > 0 && t >= self.neither {
            Bottleneck::TargetBound
        } else {
            Bottleneck::Neither
        }
    }
}

/// A target's throughput against the baseline (the load's first target) at one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelativeSpeed {
    /// Index into the result's `loads`.
    pub load: u32,
    /// Index into that load's `levels`.
    pub level: u32,
    /// Name of the baseline target: the load's first.
    pub baseline: String,
    /// Name of the target compared with it.
    pub target: String,
    /// `mean(target req/s) / mean(baseline req/s)`, with hyperfine's propagated error.
    pub ratio: f64,
    /// The ratio's uncertainty, propagated from both standard deviations; no estimate (0)
    /// when `rounds` is below 2.
    pub ratio_err: f64,
    /// Rounds with a value on the side with fewer (0 in files written before this field).
    #[serde(default)]
    pub rounds: u32,
    /// "nginx: 1.80 ± 0.10 times faster than direct".
    pub text: String,
}

impl BenchResult {
    /// Reads a saved bench result (see [`crate::SavedResult::from_json`] for any kind).
    pub fn from_json(text: &str) -> Result<BenchResult, ResultReadError> {
        BenchResult::from_value(checked_as(text, ResultKind::Bench)?)
    }

    /// A checked document of kind `bench`: runs revalidated, derived figures recomputed.
    pub(crate) fn from_value(value: serde_json::Value) -> Result<BenchResult, ResultReadError> {
        let invalid = |detail: String| ResultReadError::invalid(ResultKind::Bench, detail);
        let mut r: BenchResult =
            serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        for (i, round) in r.rounds.iter_mut().enumerate() {
            if let Some(run) = &mut round.result {
                run.stats
                    .series
                    .revalidate()
                    .map_err(|e| invalid(format!("rounds[{i}].result.stats.series: {e}")))?;
                run.stats
                    .check_counts()
                    .map_err(|e| invalid(format!("rounds[{i}].result.{e}")))?;
                run.finalize();
            }
        }
        r.recompute();
        Ok(r)
    }

    /// Rebuilds `cells`, `relative` and `queueing` from `rounds`.
    pub fn recompute(&mut self) {
        self.cells = self.cell_keys().map(|k| self.cell(&k)).collect();
        self.relative = self.relative_speeds();
        self.queueing = crate::queueing::analyse(self);
    }

    /// The queueing view of one load and target, if it has one.
    pub fn queueing_of(&self, load: u32, target: &str) -> Option<&SweepAnalysis> {
        self.queueing
            .iter()
            .find(|q| q.load == load && q.target == target)
    }

    /// The rounds of one cell.
    pub fn rounds_of<'a>(
        &'a self,
        load: u32,
        level: u32,
        target: &'a str,
    ) -> impl Iterator<Item = &'a BenchRound> + 'a {
        self.rounds
            .iter()
            .filter(move |r| r.load == load && r.level == level && r.target == target)
    }

    /// The cell of one load × level × target, if any round of it finished.
    pub fn cell_of(&self, load: u32, level: u32, target: &str) -> Option<&BenchCell> {
        self.cells
            .iter()
            .find(|c| c.load == load && c.level == level && c.target == target)
    }

    /// Distinct (load, level, target, combined) in the order of first appearance, sorted by load
    /// and level so tables read top to bottom.
    fn cell_keys(&self) -> impl Iterator<Item = (u32, u32, String, bool)> {
        let mut keys: Vec<(u32, u32, String, bool)> = Vec::new();
        for r in &self.rounds {
            let k = (r.load, r.level, r.target.clone(), r.combined);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys.sort_by_key(|k| (k.0, k.1));
        keys.into_iter()
    }

    fn cell(&self, key: &(u32, u32, String, bool)) -> BenchCell {
        let (load, level, target, combined) = key;
        let rounds: Vec<&BenchRound> = self.rounds_of(*load, *level, target).collect();
        let runs: Vec<&RunResult> = rounds.iter().filter_map(|r| r.measured_run()).collect();
        let throughput: Vec<f64> = rounds.iter().filter_map(|r| r.throughput()).collect();
        let res: Vec<&ResourceSummary> =
            rounds.iter().filter_map(|r| r.resources.as_ref()).collect();
        let requests: u64 = runs.iter().map(|r| r.stats.requests).sum();
        let failed: u64 = runs.iter().map(|r| r.stats.errors.total()).sum();
        let non_success: u64 = runs.iter().map(|r| r.stats.failed_answers()).sum();
        let attempts = requests + failed;
        let mut bottlenecks = BottleneckCounts::default();
        rounds.iter().for_each(|r| bottlenecks.add(r.bottleneck));
        let rps = cell_stats(&throughput, true);
        BenchCell {
            load: *load,
            level: *level,
            target: target.clone(),
            combined: *combined,
            rounds: throughput.len() as u32,
            latency_us: percentile_cells(&runs, &CELL_PERCENTILES, |r| &r.stats.latency),
            generator_delay_us: percentile_cells(&runs, &[50.0, 99.0], |r| {
                &r.stats.generator_delay
            }),
            mean_latency_us: cell_stats(
                &runs
                    .iter()
                    .filter(|r| !r.stats.latency.hist.is_empty())
                    .map(|r| r.stats.latency.hist.mean_ns() / 1e3)
                    .collect::<Vec<_>>(),
                false,
            ),
            requests,
            errors: failed + non_success,
            error_share: if attempts == 0 {
                0.0
            } else {
                (failed + non_success) as f64 / attempts as f64
            },
            rss_start_bytes: res.iter().map(|r| r.rss_start_bytes).min(),
            rss_peak_bytes: res.iter().map(|r| r.rss_peak_bytes).max(),
            rss_trough_bytes: res.iter().map(|r| r.rss_trough_bytes).min(),
            cpu_mean_cores: cell_stats(
                &res.iter().map(|r| r.cpu_mean_cores).collect::<Vec<_>>(),
                false,
            ),
            cpu_max_cores: res.iter().map(|r| r.cpu_max_cores).reduce(f64::max),
            generator_cpu_mean_cores: cell_stats(
                &rounds
                    .iter()
                    .map(|r| r.generator_cpu_mean_cores)
                    .collect::<Vec<_>>(),
                false,
            ),
            bottlenecks,
            noisy: rps.is_some_and(|s| s.n > 1 && s.mean > 0.0 && s.stddev / s.mean > NOISY_CV),
            requests_per_sec: rps,
            nothing: nothing_measured(&rounds),
        }
    }

    /// The cells that measured nothing, each with its reason (see [`BenchCell::nothing`]).
    pub fn empty_cells(&self) -> impl Iterator<Item = (&BenchCell, &str)> + '_ {
        self.cells
            .iter()
            .filter_map(|c| c.nothing.as_deref().map(|why| (c, why)))
    }

    fn relative_speeds(&self) -> Vec<RelativeSpeed> {
        let mut out = Vec::new();
        for (li, load) in self.loads.iter().enumerate() {
            let Some(baseline) = load.targets.first() else {
                continue;
            };
            for level in 0..load.levels.len() as u32 {
                let values = |t: &str| -> Vec<f64> {
                    self.rounds_of(li as u32, level, t)
                        .filter_map(BenchRound::throughput)
                        .collect()
                };
                let base = values(baseline);
                for t in load.targets.iter().skip(1) {
                    if let Some(rel) = relative_speed(&base, &values(t)) {
                        out.push(RelativeSpeed {
                            load: li as u32,
                            level,
                            baseline: baseline.clone(),
                            target: t.clone(),
                            ratio: rel.ratio,
                            ratio_err: rel.ratio_err,
                            rounds: rel.rounds as u32,
                            text: rel.describe(t, baseline),
                        });
                    }
                }
            }
        }
        out
    }

    /// Steps whose bottleneck was the generator: their throughput is loadbench's limit.
    pub fn generator_bound_rounds(&self) -> usize {
        self.rounds
            .iter()
            .filter(|r| !r.combined && r.bottleneck == Bottleneck::GeneratorBound)
            .count()
    }
}

/// Why a cell measured nothing: its rounds' distinct reasons, or `None` as soon as one round
/// measured something (or the cell has no round).
fn nothing_measured(rounds: &[&BenchRound]) -> Option<String> {
    let mut reasons: Vec<String> = Vec::new();
    for r in rounds {
        let why = r.nothing_measured()?;
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// Percentiles `ps` of one latency of the runs (those that recorded it), across rounds.
fn percentile_cells(
    runs: &[&RunResult],
    ps: &[f64],
    of: impl Fn(&RunResult) -> &crate::Latency,
) -> Vec<CellPercentile> {
    let runs: Vec<&&RunResult> = runs.iter().filter(|r| !of(r).hist.is_empty()).collect();
    ps.iter()
        .filter_map(|&p| {
            let values: Vec<f64> = runs
                .iter()
                .map(|r| of(r).hist.percentile_ns(p) as f64 / 1e3)
                .collect();
            cell_stats(&values, false).map(|stats| CellPercentile { p, stats })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_without_keepalive_reads_as_keep_alive_on() {
        let mut load = serde_json::json!({
            "name": "closed", "targets": ["nginx"], "together": false,
            "levels": [{"model": "closed", "connections": 10}], "duration_ms": 1000, "warmup_ms": 0, "method": "GET", "path": "/"
        });
        let read: BenchLoad = serde_json::from_value(load.clone()).unwrap();
        assert!(read.keepalive);
        load["keepalive"] = false.into();
        let read: BenchLoad = serde_json::from_value(load).unwrap();
        assert!(!read.keepalive);
        let written = serde_json::to_value(&read).unwrap();
        assert_eq!(written["keepalive"], false);
    }
}
