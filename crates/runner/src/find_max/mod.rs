//! `find-max` as a library: the highest rate a target sustains within an SLO.
//!
//! Each step is one open-model run through [`crate::run_plan`] at a fixed rate; [`search`]
//! doubles the rate from the start rate while steps pass, then bisects between the highest pass
//! and the lowest fail ([`search`] module). A step fails on the SLO (latency from the intended
//! send time), on the error budget, on throughput (the target completed clearly fewer
//! responses than were sent), or because the generator itself could not keep up, which
//! ends the search ([`judge`]). After a failed step the search waits, bounded and recorded,
//! until the target has worked off what the step left behind ([`recovery`]), so no step is
//! judged on an earlier step's backlog; every step also runs on connections of its own, so no
//! response to an earlier step's request is ever counted. The result can be saved atomically
//! after every step, so an interrupted search keeps what finished.

mod judge;
mod recovery;
mod search;

use crate::{host, run_plan, save, Control, RunError};
use judge::{cpu_seconds, judge};
use loadbench_model::{
    FindMaxResult, FindMaxStep, ResultKind, SearchParams, SearchPhase, Slo, SloStat, StopReason,
    Verdict, SCHEMA_VERSION,
};
use loadbench_plan::{LoadShape, LoadSpec, Plan, Schedule, Stop};
use recovery::Prober;
use search::Search;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// Everything a search needs, typed.
#[derive(Debug, Clone)]
pub struct FindMaxSpec {
    /// URL, request, threads, warm-up (before each step), keep-alive, timeouts, percentiles.
    /// Its load and stop are replaced by each step's.
    pub base: LoadSpec,
    /// Conditions every passing step meets.
    pub slo: Slo,
    /// Largest share of attempts that may fail or get a non-2xx/3xx status.
    pub max_error_share: f64,
    /// The first rate tried, requests per second.
    pub start_rate: f64,
    /// The highest rate tried.
    pub max_rate: f64,
    /// Bisection stops when (lowest fail − highest pass) / highest pass is below this.
    pub precision: f64,
    /// The most steps to run.
    pub max_steps: u32,
    /// Measured time of each step.
    pub step_duration: Duration,
    /// The most connections (requests in flight) a step opens.
    pub max_connections: u32,
    /// Each step's send window and pool (the open model's `--send-window`, `-c`,
    /// `--connect-limit`).
    pub pacing: loadbench_plan::OpenPacing,
    /// The longest wait after a failed step for the target to recover.
    pub recovery_timeout: Duration,
    /// Where to save the result after every step (atomically), if anywhere. A step whose save
    /// fails does not end the search (nothing measured is dropped); the caller writes the
    /// returned result once more at the end and reports a failure then (with a fallback).
    pub save: Option<PathBuf>,
}

impl FindMaxSpec {
    /// A search of `base`'s URL under `slo` with `loadbench find-max`'s defaults.
    /// `base.warmup` is the warm-up before every step (`loadbench find-max` gives 1 s).
    pub fn new(base: LoadSpec, slo: Slo) -> FindMaxSpec {
        FindMaxSpec {
            base,
            slo,
            max_error_share: 0.001,
            start_rate: 100.0,
            max_rate: 1_000_000.0,
            precision: 0.05,
            max_steps: 20,
            step_duration: Duration::from_secs(10),
            max_connections: loadbench_plan::DEFAULT_MAX_CONNECTIONS,
            pacing: loadbench_plan::OpenPacing::default(),
            recovery_timeout: Duration::from_secs(60),
            save: None,
        }
    }

    /// The load of one step at `rate`.
    fn step_spec(&self, rate: f64) -> LoadSpec {
        LoadSpec {
            load: LoadShape::Open {
                schedule: Schedule::constant(rate, self.step_duration),
                max_connections: self.max_connections,
            },
            pacing: self.pacing,
            stop: Stop::Duration(self.step_duration),
            ..self.base.clone()
        }
    }

    /// Checks the values that only make sense together; one line naming the fix.
    pub fn check(&self) -> Result<(), String> {
        let problem = if !(self.start_rate > 0.0 && self.max_rate.is_finite()) {
            "the start rate must be above 0 and the max rate finite: give rates such as 100 and 1M"
        } else if self.max_rate > loadbench_plan::MAX_RATE {
            "the max rate is above the 10,000,000 req/s (10M) the engine can schedule (its pacer spends about 100 ns per request): give 10M or less"
        } else if self.start_rate > self.max_rate {
            "the start rate is above the max rate: lower the start rate or raise the max rate"
        } else if self.max_steps == 0 {
            "max steps 0 runs nothing: give 1 or more"
        } else if self.precision <= 0.0 {
            "a precision of 0 never stops the bisection: give a positive share such as 5%"
        } else if self.step_duration.is_zero() {
            "the step duration is zero: give a positive duration such as 10s"
        } else {
            return Ok(());
        };
        Err(problem.to_string())
    }
}

/// Why a search could not run (failures of steps are results, not errors).
#[derive(Debug, thiserror::Error)]
pub enum FindMaxError {
    /// A value that does not combine with another (one line).
    #[error("{0}")]
    Invalid(String),
    /// A step could not start.
    #[error("{0}")]
    Run(#[from] RunError),
}

impl FindMaxError {
    /// A mistake of the user's: exit code 2 in the CLI.
    pub fn is_user_error(&self) -> bool {
        match self {
            FindMaxError::Invalid(_) => true,
            FindMaxError::Run(e) => e.is_user_error(),
        }
    }
}

/// Runs the search to its end (or until the stop flag), saving after every step when asked.
///
/// A short search against the reference backend set up with a known capacity: one request
/// served at a time, each taking 100 ms, is 10 requests per second. Three steps of one second
/// from 5/s (5/s, 10/s, then 20/s or a bisection below 10/s): the rate found is at most the
/// capacity, a rate above it fails, and the search stops at its step limit.
///
/// ```
/// use loadbench_model::{StopReason, Verdict};
/// use loadbench_runner::find_max::{search, FindMaxSpec};
/// use loadbench_runner::{Control, LoadSpec, Quiet};
/// use loadbench_upstream::{parse_delay, Server, ServerConfig};
/// use std::sync::atomic::AtomicBool;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let server = Server::start(ServerConfig {
///     max_concurrency: Some(1),
///     delay: Some(parse_delay("100ms")?),
///     ..ServerConfig::ephemeral()
/// })?;
/// let url = format!("http://{}/", server.local_addr());
/// let base = LoadSpec {
///     threads: Some(1),
///     ..LoadSpec::closed(&url, 1, Duration::from_secs(1))
/// };
/// let spec = FindMaxSpec {
///     start_rate: 5.0,
///     step_duration: Duration::from_secs(1),
///     max_steps: 3,
///     max_connections: 100,
///     recovery_timeout: Duration::from_secs(5),
///     ..FindMaxSpec::new(base, loadbench_plan::parse_slo("p99<400ms")?)
/// };
/// let stop = Arc::new(AtomicBool::new(false));
/// let result = search(&spec, Control { stop: &stop, observer: &Quiet })?;
///
/// assert_eq!(result.steps.len(), 3);
/// assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
/// let max = result.max_rate.expect("5/s is half the capacity: it passes");
/// assert!((5.0..=10.0).contains(&max), "max {max}/s");
/// // 20/s, like any rate above 10/s, cannot be served: a step failed.
/// assert!(result.steps.iter().any(|s| s.verdict == Verdict::Fail));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn search(spec: &FindMaxSpec, ctl: Control<'_>) -> Result<FindMaxResult, FindMaxError> {
    spec.check().map_err(FindMaxError::Invalid)?;
    let first = Plan::resolve(&spec.step_spec(spec.start_rate)).map_err(RunError::from)?;
    let prober = Prober::new(&spec.base).map_err(RunError::from)?;
    let mut result = empty_result(spec, first.threads);
    result.baseline_us = prober.baseline(ctl.stop);
    let mut search = Search::new(&result.search);
    while let Some((rate, phase)) = next_step(&mut search, &mut result, spec, &prober, ctl) {
        // The sequence goes on from the earlier steps (a write's ids stay unique).
        let first = spec.base.values.first
            + result
                .steps
                .iter()
                .filter_map(|s| s.run.config.values.as_ref())
                .map(|v| v.places)
                .sum::<u64>();
        let step = run_step(spec, rate, phase, result.steps.len() as u32 + 1, first, ctl)?;
        search.record(rate, step.verdict, step.reason);
        ctl.observer.step_finished(&step);
        result.steps.push(step);
        update(&mut result, &search, ctl);
        // A failure here is reported by the caller's final save, which has a fallback.
        let _ = save_to(spec, &result);
    }
    update(&mut result, &search, ctl);
    Ok(result)
}

/// The next rate, after the target recovered from a failed last step; `None` when the search
/// is over (its reason then recorded in `search`).
fn next_step(
    search: &mut Search,
    result: &mut FindMaxResult,
    spec: &FindMaxSpec,
    prober: &Prober,
    ctl: Control<'_>,
) -> Option<(f64, SearchPhase)> {
    if ctl.stopped() {
        search.stop(StopReason::Interrupted);
    }
    let next = search.next().ok()?;
    let (Some(last), Some(baseline)) = (result.steps.last_mut(), result.baseline_us) else {
        return Some(next);
    };
    if last.verdict != Verdict::Fail {
        return Some(next);
    }
    let recovery = prober.wait(baseline, spec.recovery_timeout, ctl.stop);
    let recovered = recovery.recovered;
    last.recovery = Some(recovery);
    ctl.observer.recovery_finished(last);
    if ctl.stopped() {
        search.stop(StopReason::Interrupted);
        return None;
    }
    if !recovered {
        search.stop(StopReason::TargetNotRecovered);
        return None;
    }
    Some(next)
}

/// Runs one step at `rate` and judges it.
fn run_step(
    spec: &FindMaxSpec,
    rate: f64,
    phase: SearchPhase,
    number: u32,
    first: u64,
    ctl: Control<'_>,
) -> Result<FindMaxStep, RunError> {
    let mut step_spec = spec.step_spec(rate);
    step_spec.values.first = first;
    let plan = Plan::resolve(&step_spec)?;
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let run = run_plan(&plan, ctl)?;
    let wall = t0.elapsed().as_secs_f64() * f64::from(plan.threads.max(1));
    let cpu_share = cpu0
        .zip(cpu_seconds())
        .map(|(a, b)| (b - a) / wall.max(1e-9));
    let mut judged = judge(&run.stats, rate, cpu_share, &spec.slo, spec.max_error_share);
    if run.interrupted {
        (judged.verdict, judged.reason) = (Verdict::Interrupted, None);
        judged.detail = "stopped by Ctrl-C before the step's end".into();
    }
    let hist = &run.stats.latency.hist;
    Ok(FindMaxStep {
        step: number,
        phase,
        target_rate: rate,
        achieved_rate: judged.achieved,
        completed_rate: judged.completed,
        p50_us: SloStat::Percentile { percentile: 50.0 }.measure_us(hist),
        p99_us: SloStat::Percentile { percentile: 99.0 }.measure_us(hist),
        slo_values: judged.slo_values,
        error_share: judged.error_share,
        generator_cpu_share: cpu_share,
        verdict: judged.verdict,
        reason: judged.reason,
        detail: judged.detail,
        recovery: None,
        run,
    })
}

/// Carries the search's state into the result that is saved after every step. A search that
/// stopped because the target did not recover reports no maximum: the passes so far are in
/// the steps, but the search could not bound the maximum from above.
fn update(result: &mut FindMaxResult, search: &Search, ctl: Control<'_>) {
    result.stop_reason = search.stopped;
    let unbounded = search.stopped == Some(StopReason::TargetNotRecovered);
    result.max_rate = search.pass.filter(|_| !unbounded);
    result.precision_reached = search.precision_reached().filter(|_| !unbounded);
    result.interrupted = ctl.stopped();
    result.no_rate = result.no_rate_reason();
    result.ended_at = now();
}

fn save_to(spec: &FindMaxSpec, result: &FindMaxResult) -> Result<(), save::SaveError> {
    let Some(path) = &spec.save else {
        return Ok(());
    };
    let json = serde_json::to_string_pretty(result).unwrap_or_default();
    save::write_atomic(path, json.as_bytes())
}

fn empty_result(spec: &FindMaxSpec, threads: u32) -> FindMaxResult {
    FindMaxResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::FindMax,
        loadbench_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host::detect(),
        url: spec.base.url.clone(),
        slo: spec.slo.clone(),
        max_error_share: spec.max_error_share,
        search: SearchParams {
            start_rate: spec.start_rate,
            max_rate: spec.max_rate,
            precision: spec.precision,
            max_steps: spec.max_steps,
            step_duration_ms: spec.step_duration.as_millis() as u64,
            warmup_ms: spec.base.warmup.as_millis() as u64,
            threads,
            recovery_timeout_ms: spec.recovery_timeout.as_millis() as u64,
        },
        started_at: now(),
        ended_at: now(),
        interrupted: false,
        steps: Vec::new(),
        max_rate: None,
        precision_reached: None,
        stop_reason: None,
        baseline_us: None,
        no_rate: None,
        remote_write: None,
    }
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
