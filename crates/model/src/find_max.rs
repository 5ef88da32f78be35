//! The result of `loadbench find-max`: the SLO and search parameters, every step of the search
//! (each with its full [`RunResult`]), the highest rate that held and why the search stopped.
//! Like [`RunResult`], this struct *is* the JSON schema; it is saved after every step, so a
//! file read back mid-search has `stop_reason: null`.

use crate::histogram::Histo;
use crate::result::{HostInfo, ResultKind, RunResult};
use crate::saved::{checked_as, ResultReadError};
use serde::{Deserialize, Serialize};

/// One `loadbench find-max`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMaxResult {
    /// The schema version ([`crate::SCHEMA_VERSION`]) the file was written with.
    pub schema_version: u32,
    /// Always [`ResultKind::FindMax`].
    pub kind: ResultKind,
    /// Version of the loadbench that ran the search.
    pub loadbench_version: String,
    /// The generator's machine.
    pub host: HostInfo,
    /// The target URL.
    pub url: String,
    /// The service-level objective each step is judged against.
    pub slo: Slo,
    /// Largest share (0–1) of attempts that may fail or get a status outside 200–399.
    pub max_error_share: f64,
    /// How the search was asked to run.
    pub search: SearchParams,
    /// Wall clock when the first step started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall clock when the last finished step ended (RFC 3339, UTC).
    pub ended_at: String,
    /// True when Ctrl-C stopped the search; the finished steps are kept.
    pub interrupted: bool,
    /// Every step run, in order.
    pub steps: Vec<FindMaxStep>,
    /// The highest rate (requests per second) that passed; `None` when none did.
    pub max_rate: Option<f64>,
    /// `(lowest failing rate − max_rate) / max_rate`: how far the true maximum may lie above
    /// `max_rate`. `None` when no rate above `max_rate` failed on the target's account.
    pub precision_reached: Option<f64>,
    /// Why the search ended; `None` while it is still going on.
    pub stop_reason: Option<StopReason>,
    /// Latency of a single request to the idle target before the first step (median of a few
    /// probes), µs: what "recovered" is judged against. `None` when the probes failed.
    #[serde(default)]
    pub baseline_us: Option<f64>,
    /// Why the search ended without a rate that held (see [`FindMaxResult::no_rate_reason`]);
    /// absent when a rate held or the search is still going on. Recomputed on load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_rate: Option<String>,
    /// `--prometheus-remote-write`: what the pushes of the live series came to; absent
    /// without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_write: Option<crate::RemoteWriteCounts>,
}

/// Conditions on latency measured from each request's intended send time; all must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// As the user typed it, e.g. `p99<50ms,p99.9<200ms`.
    pub text: String,
    /// Each condition, parsed; all must hold.
    pub conditions: Vec<SloCondition>,
}

/// One condition, e.g. `p99<50ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloCondition {
    /// As the user typed it, e.g. `p99<50ms`.
    pub text: String,
    /// The statistic measured (written flattened: `stat` and, for a percentile, `percentile`).
    #[serde(flatten)]
    pub stat: SloStat,
    /// How the measured value must compare with `limit_us`.
    pub op: SloOp,
    /// The limit, microseconds.
    pub limit_us: f64,
}

/// What an SLO condition measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stat", rename_all = "snake_case")]
pub enum SloStat {
    /// A percentile (0–100] of the latency distribution.
    Percentile {
        /// Which percentile, in (0, 100].
        percentile: f64,
    },
    /// The mean latency.
    Mean,
}

/// How the measured value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SloOp {
    /// The value must be strictly below the limit (`<`).
    #[serde(rename = "<")]
    Lt,
    /// The value may equal the limit (`<=`).
    #[serde(rename = "<=")]
    Le,
}

impl SloOp {
    /// `<` or `<=`, as written in the SLO and in JSON.
    pub fn symbol(self) -> &'static str {
        match self {
            SloOp::Lt => "<",
            SloOp::Le => "<=",
        }
    }
}

impl SloStat {
    /// `p99`, `p99.9`, `mean`.
    pub fn label(self) -> String {
        match self {
            SloStat::Percentile { percentile } => format!("p{percentile}"),
            SloStat::Mean => "mean".to_string(),
        }
    }

    /// The value in µs; `None` when the histogram is empty (nothing to judge).
    pub fn measure_us(self, hist: &Histo) -> Option<f64> {
        if hist.is_empty() {
            return None;
        }
        let ns = match self {
            SloStat::Percentile { percentile } => hist.percentile_ns(percentile) as f64,
            SloStat::Mean => hist.mean_ns(),
        };
        Some(ns / 1e3)
    }
}

impl SloCondition {
    /// Whether a measured value (µs) meets the condition.
    pub fn holds(&self, value_us: f64) -> bool {
        match self.op {
            SloOp::Lt => value_us < self.limit_us,
            SloOp::Le => value_us <= self.limit_us,
        }
    }
}

/// How the search was asked to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchParams {
    /// The first rate tried, requests per second.
    pub start_rate: f64,
    /// The highest rate tried; the search stops when it passes.
    pub max_rate: f64,
    /// Bisection stops when `(fail − pass) / pass` is below this.
    pub precision: f64,
    /// The most steps the search may run.
    pub max_steps: u32,
    /// Measured time of each step.
    pub step_duration_ms: u64,
    /// Unmeasured traffic at the step's rate before each measured window.
    pub warmup_ms: u64,
    /// Generator worker threads.
    pub threads: u32,
    /// The longest wait, after a failed step, for the target to recover before the next step.
    #[serde(default)]
    pub recovery_timeout_ms: u64,
}

/// Which part of the search a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchPhase {
    /// Doubling from the start rate while steps pass.
    Exponential,
    /// Halving the interval between the highest pass and the lowest fail.
    Bisect,
}

/// The outcome of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every SLO condition held, the errors stayed within the budget and the generator kept up.
    Pass,
    /// The step broke the SLO or the error budget, or the generator could not keep up; see
    /// `reason`.
    Fail,
    /// Stopped by Ctrl-C before its end: neither pass nor fail.
    Interrupted,
}

/// Why a step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailReason {
    /// An SLO condition was broken (or no response completed to judge it).
    Slo,
    /// The share of failed or non-2xx/3xx attempts was above the budget.
    Errors,
    /// The generator could not keep up (it sent too little while its CPU was saturated): the
    /// step measured loadbench, not the target.
    Generator,
    /// The target completed clearly fewer responses than were sent to it (below 97% of those
    /// sent, after allowing for the requests normally still in flight when the step ended): it
    /// fell behind, however fast the few responses that did come back were.
    Throughput,
}

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The highest pass and the lowest fail are within the precision.
    Precision,
    /// The `max_rate` itself passed.
    MaxRatePassed,
    /// `max_steps` steps were run.
    MaxSteps,
    /// The generator could not keep up; higher rates would measure the generator.
    Generator,
    /// The first step failed: no rate held.
    NoRateHeld,
    /// After a failed step the target did not come back to its idle latency within the
    /// recovery timeout: later steps would measure its backlog, not their own rate.
    TargetNotRecovered,
    /// Ctrl-C.
    Interrupted,
}

/// One rate tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMaxStep {
    /// 1-based.
    pub step: u32,
    /// Which part of the search the step belongs to.
    pub phase: SearchPhase,
    /// The rate offered, requests per second.
    pub target_rate: f64,
    /// Requests SENT per second in the measured window: the load the generator actually
    /// offered (`run.stats.sent / window`). It says whether the generator kept up, not whether
    /// the target did: against an overloaded target it still equals the target rate.
    pub achieved_rate: f64,
    /// Responses COMPLETED per second in the measured window, whatever their status
    /// (`run.stats.requests / window`): what the target actually served. Below `achieved_rate`
    /// when the target falls behind (the difference is still in flight or failed at the end);
    /// above its capacity it stays at the capacity, the plateau. Steps are judged on it.
    /// Missing in files written before it existed: then recomputed from `run` on load.
    #[serde(default)]
    pub completed_rate: f64,
    /// Median latency from the intended send time, µs; `None` when no response completed.
    pub p50_us: Option<f64>,
    /// 99th percentile latency from the intended send time, µs; `None` when no response completed.
    pub p99_us: Option<f64>,
    /// Every SLO condition's measured value, in the SLO's order.
    pub slo_values: Vec<SloValue>,
    /// Failed attempts plus non-2xx/3xx responses, over attempts (0 when there were none).
    pub error_share: f64,
    /// The generator's user+sys CPU over the step ÷ (wall time × threads); `None` where the
    /// process's CPU time cannot be read.
    pub generator_cpu_share: Option<f64>,
    /// Whether the rate held: pass, fail, or interrupted before the step's end.
    pub verdict: Verdict,
    /// Set when the verdict is `fail`.
    pub reason: Option<FailReason>,
    /// Every broken condition, for people: `p99 312ms >= 50ms; errors 2.1% > 0.1%`.
    pub detail: String,
    /// After a failed step: how long the target took to work off what the step left behind,
    /// waited for before the next step. `None` after a passing step.
    #[serde(default)]
    pub recovery: Option<Recovery>,
    /// The step's complete measurement.
    pub run: RunResult,
}

/// The wait after a failed step until single probe requests are answered about as fast as
/// before the search (the target's backlog worked off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// From the step's end until the target was judged recovered (or the timeout).
    pub waited_ms: u64,
    /// Probe requests sent.
    pub probes: u32,
    /// A probe counts as recovered at or below this latency, µs.
    pub threshold_us: f64,
    /// The last probe's latency, µs; `None` when it failed or got no answer in time.
    pub last_probe_us: Option<f64>,
    /// False when the timeout ran out first (the search then stops).
    pub recovered: bool,
}

/// One SLO condition's value in one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloValue {
    /// The condition, as typed.
    pub condition: String,
    /// Measured, µs; `None` when no response completed.
    pub value_us: Option<f64>,
    /// Whether the condition held (false when there was nothing to measure).
    pub ok: bool,
}

impl FailReason {
    /// The reason as the JSON spells it: `slo`, `errors`, `generator`, `throughput`.
    pub fn name(self) -> &'static str {
        match self {
            FailReason::Slo => "slo",
            FailReason::Errors => "errors",
            FailReason::Generator => "generator",
            FailReason::Throughput => "throughput",
        }
    }
}

impl FindMaxResult {
    /// Why a search that has ended found no rate that held, in one line (no silent zero):
    /// the first step's failure and its detail, the generator's limit, a target that did not
    /// recover, or an interruption. `None` while a rate held or the search goes on.
    pub fn no_rate_reason(&self) -> Option<String> {
        if self.max_rate.is_some() {
            return None;
        }
        let stop = self.stop_reason?;
        let failed = |s: &FindMaxStep| {
            let reason = s.reason.map_or("fail", FailReason::name);
            format!(
                "step {}, {} req/s, failed ({reason}: {})",
                s.step,
                crate::human::rate_short(s.target_rate),
                s.detail
            )
        };
        let Some(first) = self.steps.first() else {
            return Some("no step ran".to_string());
        };
        Some(match stop {
            StopReason::Interrupted => "interrupted (Ctrl-C) before any step passed".to_string(),
            StopReason::Generator => {
                let step = self
                    .steps
                    .iter()
                    .rev()
                    .find(|s| s.reason == Some(FailReason::Generator))
                    .unwrap_or(first);
                format!(
                    "no rate held: the generator could not offer the load: {}",
                    failed(step)
                )
            }
            StopReason::TargetNotRecovered => {
                let step = self.steps.iter().rev().find(|s| s.recovery.is_some());
                format!(
                    "no maximum: the target did not recover within the recovery timeout after {}",
                    failed(step.unwrap_or(first))
                )
            }
            _ => format!(
                "no rate held: the first {}",
                failed(first).replacen(&format!("step {}", first.step), "step", 1)
            ),
        })
    }

    /// Reads a saved find-max result (see [`crate::SavedResult::from_json`] for any kind).
    pub fn from_json(text: &str) -> Result<FindMaxResult, ResultReadError> {
        FindMaxResult::from_value(checked_as(text, ResultKind::FindMax)?)
    }

    /// A checked document of kind `find_max`, every step's series revalidated and summary rebuilt.
    pub(crate) fn from_value(value: serde_json::Value) -> Result<FindMaxResult, ResultReadError> {
        let invalid = |detail: String| ResultReadError::invalid(ResultKind::FindMax, detail);
        let mut r: FindMaxResult =
            serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        for s in &mut r.steps {
            s.run
                .stats
                .series
                .revalidate()
                .map_err(|e| invalid(format!("steps[{}].run.stats.series: {e}", s.step)))?;
            s.run
                .stats
                .check_counts()
                .map_err(|e| invalid(format!("steps[{}].run.{e}", s.step)))?;
            s.run.finalize();
            if s.completed_rate == 0.0 {
                s.completed_rate = s.run.stats.summary().requests_per_sec;
            }
        }
        r.no_rate = r.no_rate_reason();
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(stat: SloStat, op: SloOp, limit_us: f64) -> SloCondition {
        SloCondition {
            text: String::new(),
            stat,
            op,
            limit_us,
        }
    }

    #[test]
    fn conditions_compare_strictly_or_not() {
        let lt = cond(SloStat::Mean, SloOp::Lt, 50.0);
        let le = cond(SloStat::Mean, SloOp::Le, 50.0);
        assert!(lt.holds(49.9) && !lt.holds(50.0));
        assert!(le.holds(50.0) && !le.holds(50.1));
    }

    #[test]
    fn stats_measure_the_histogram_and_nothing_when_empty() {
        let mut h = Histo::new();
        assert_eq!(SloStat::Mean.measure_us(&h), None);
        for _ in 0..99 {
            h.record_ns(1_000_000);
        }
        h.record_ns(100_000_000);
        let p50 = SloStat::Percentile { percentile: 50.0 };
        let p99_9 = SloStat::Percentile { percentile: 99.9 };
        assert!((p50.measure_us(&h).unwrap() - 1_000.0).abs() < 5.0);
        assert!(p99_9.measure_us(&h).unwrap() > 99_000.0);
        assert_eq!(p99_9.label(), "p99.9");
        assert_eq!(SloStat::Mean.label(), "mean");
    }

    #[test]
    fn conditions_serialize_flat_with_the_operator_as_typed() {
        let c = SloCondition {
            text: "p99.9<=200ms".into(),
            ..cond(
                SloStat::Percentile { percentile: 99.9 },
                SloOp::Le,
                200_000.0,
            )
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["stat"], "percentile");
        assert_eq!(v["percentile"], 99.9);
        assert_eq!(v["op"], "<=");
        assert_eq!(v["limit_us"], 200_000.0);
        assert_eq!(serde_json::from_value::<SloCondition>(v).unwrap(), c);
        let mean = serde_json::to_value(cond(SloStat::Mean, SloOp::Lt, 1.0)).unwrap();
        assert_eq!(mean["stat"], "mean");
        assert!(mean.get("percentile").is_none());
    }

    #[test]
    fn from_json_rejects_a_plain_run_result() {
        let text = format!(
            r#"{{"schema_version": {}, "kind": "run"}}"#,
            crate::SCHEMA_VERSION
        );
        assert!(matches!(
            FindMaxResult::from_json(&text),
            Err(ResultReadError::Invalid(_))
        ));
        assert!(matches!(
            FindMaxResult::from_json(r#"{"schema_version": 99}"#),
            Err(ResultReadError::Version(99))
        ));
    }
}
