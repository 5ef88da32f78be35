//! `loadbench find-max`: the highest rate a target sustains within an SLO. Each step is one
//! open-model run (`RunSpec.rate` + `Plan::resolve` + `run::execute`, nothing of the engine
//! duplicated here) at a fixed rate; the search doubles the rate from `--start-rate` while
//! steps pass, then bisects between the highest pass and the lowest fail. A step fails on the
//! SLO (latency from the intended send time), on the error budget, or because the generator
//! itself could not keep up, which ends the search: higher rates would measure loadbench, not
//! the target. The result is saved atomically after every step, so Ctrl-C keeps what finished.

use crate::args::FindMaxArgs;
use crate::output::OutputFormat;
use crate::{host, save, UserError};
use anyhow::Result;
use clap::Parser;
use loadbench_model::{
    FailReason, FindMaxResult, FindMaxStep, ResultKind, SearchParams, SearchPhase, Slo,
    SloCondition, SloOp, SloStat, SloValue, Stats, StopReason, Verdict, SCHEMA_VERSION,
};
use loadbench_plan::{parse_duration, parse_rate, Plan, RunSpec};
use loadbench_report::units;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A step whose achieved send rate is below this share of its target did not offer the load.
const KEEP_UP: f64 = 0.97;
/// Above this share of its threads' CPU time, the generator is the bottleneck.
const CPU_BUSY: f64 = 0.90;
/// `/proc` reports CPU time in clock ticks of `USER_HZ`, which Linux fixes at 100 per second.
const USER_HZ: f64 = 100.0;

pub fn find_max(args: FindMaxArgs) -> Result<ExitCode> {
    let setup = Setup::parse(&args)?;
    let stop = crate::signals::stop_flag()?;
    let result = search(&setup, &stop)?;
    let saved = loadbench_model::SavedResult::from(result.clone());
    crate::output::print(&saved, setup.format, &Default::default())?;
    if let Some(path) = &args.html {
        crate::output::write(path, &saved, OutputFormat::Html, &Default::default())?;
    }
    Ok(exit_code(&result))
}

/// Runs the search for `bench`: the same flags as the command (so the same defaults), quiet,
/// nothing saved; the result is returned.
pub fn search_for_bench(argv: &[String], stop: &Arc<AtomicBool>) -> Result<FindMaxResult> {
    let args = std::iter::once("find-max".to_string()).chain(argv.iter().cloned());
    let a = crate::args::FindMaxOnly::try_parse_from(args)
        .map_err(|e| UserError(e.render().to_string().lines().next().unwrap_or("").into()))?;
    let mut setup = Setup::parse(&a.args)?;
    setup.quiet = true;
    search(&setup, stop)
}

/// Steps until the search ends, saving the result after every step when asked.
fn search(setup: &Setup, stop: &Arc<AtomicBool>) -> Result<FindMaxResult> {
    let mut result = setup.empty_result();
    let mut search = Search::new(&setup.params);
    loop {
        let (rate, phase) = match search.next() {
            Ok(next) if !stop.load(Ordering::Relaxed) => next,
            Ok(_) => break search.stop(StopReason::Interrupted),
            Err(_) => break,
        };
        let step = run_step(setup, rate, phase, result.steps.len() as u32 + 1, stop)?;
        search.record(rate, step.verdict, step.reason);
        if !setup.quiet {
            eprintln!("{}", loadbench_report::find_max_step_line(&step));
        }
        result.steps.push(step);
        update(&mut result, &search, stop);
        setup.save(&result)?;
    }
    update(&mut result, &search, stop);
    setup.save(&result)?;
    Ok(result)
}

/// Carries the search's state into the result that is saved after every step.
fn update(result: &mut FindMaxResult, search: &Search, stop: &AtomicBool) {
    result.max_rate = search.pass;
    result.precision_reached = search.precision_reached();
    result.stop_reason = search.stopped;
    result.interrupted = stop.load(Ordering::Relaxed);
    result.ended_at = now();
}

/// 0: a maximum was found; 1: no rate held; 130: interrupted.
fn exit_code(r: &FindMaxResult) -> ExitCode {
    if r.interrupted {
        ExitCode::from(130)
    } else if r.max_rate.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Everything parsed and checked before the first step.
struct Setup {
    spec: RunSpec,
    slo: Slo,
    max_error_share: f64,
    params: SearchParams,
    format: OutputFormat,
    save: Option<std::path::PathBuf>,
    quiet: bool,
}

impl Setup {
    fn parse(a: &FindMaxArgs) -> Result<Setup, UserError> {
        let slo = parse_slo(a.slo.as_deref().ok_or_else(|| {
            UserError("--slo is required: give conditions such as --slo 'p99<50ms'".into())
        })?)?;
        let step = positive_duration("--step-duration", &a.step_duration)?;
        let warmup = duration("--warmup", &a.warmup)?;
        let spec = base_spec(a);
        let start_rate = parse_one_rate("--start-rate", &a.start_rate)?;
        let max_rate = parse_one_rate("--max-rate", &a.max_rate)?;
        if start_rate > max_rate {
            return Err(UserError(format!(
                "--start-rate {} is above --max-rate {}: lower --start-rate or raise --max-rate",
                a.start_rate, a.max_rate
            )));
        }
        if a.max_steps == 0 {
            return Err(UserError(
                "--max-steps 0 runs nothing: give 1 or more".into(),
            ));
        }
        let plan =
            Plan::resolve(&spec_at(&spec, start_rate)).map_err(|e| UserError(e.to_string()))?;
        Ok(Setup {
            slo,
            max_error_share: parse_share("--max-errors", &a.max_errors, "0.1%", "0.001")?,
            params: SearchParams {
                start_rate,
                max_rate,
                precision: positive_share("--precision", &a.precision)?,
                max_steps: a.max_steps,
                step_duration_ms: step.as_millis() as u64,
                warmup_ms: warmup.as_millis() as u64,
                threads: plan.threads,
            },
            spec,
            format: a.output,
            save: a.save.clone(),
            quiet: a.quiet,
        })
    }

    fn empty_result(&self) -> FindMaxResult {
        FindMaxResult {
            schema_version: SCHEMA_VERSION,
            kind: ResultKind::FindMax,
            loadbench_version: env!("CARGO_PKG_VERSION").to_string(),
            host: host::detect(),
            url: self.spec.url.clone(),
            slo: self.slo.clone(),
            max_error_share: self.max_error_share,
            search: self.params.clone(),
            started_at: now(),
            ended_at: now(),
            interrupted: false,
            steps: Vec::new(),
            max_rate: None,
            precision_reached: None,
            stop_reason: None,
        }
    }

    fn save(&self, result: &FindMaxResult) -> Result<()> {
        match &self.save {
            Some(path) => {
                save::write_atomic(path, loadbench_report::find_max_json(result).as_bytes())
            }
            None => Ok(()),
        }
    }
}

/// The options every step shares; `spec_at` adds the step's rate.
fn base_spec(a: &FindMaxArgs) -> RunSpec {
    RunSpec {
        url: a.url.clone(),
        threads: a.threads,
        duration: Some(a.step_duration.clone()),
        warmup: Some(a.warmup.clone()),
        max_connections: a.max_connections,
        ..crate::run::request_spec(&a.request)
    }
}

fn spec_at(base: &RunSpec, rate: f64) -> RunSpec {
    RunSpec {
        rate: Some(format!("{rate}")),
        ..base.clone()
    }
}

/// Runs one step at `rate` and judges it.
fn run_step(
    setup: &Setup,
    rate: f64,
    phase: SearchPhase,
    number: u32,
    stop: &Arc<AtomicBool>,
) -> Result<FindMaxStep> {
    let plan = Plan::resolve(&spec_at(&setup.spec, rate)).map_err(|e| UserError(e.to_string()))?;
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let run = crate::run::execute(&plan, stop, setup.quiet)?;
    let wall = t0.elapsed().as_secs_f64() * f64::from(plan.threads.max(1));
    let cpu_share = cpu0
        .zip(cpu_seconds())
        .map(|(a, b)| (b - a) / wall.max(1e-9));
    let mut judged = judge(
        &run.stats,
        rate,
        cpu_share,
        &setup.slo,
        setup.max_error_share,
    );
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
        p50_us: SloStat::Percentile { percentile: 50.0 }.measure_us(hist),
        p99_us: SloStat::Percentile { percentile: 99.0 }.measure_us(hist),
        slo_values: judged.slo_values,
        error_share: judged.error_share,
        generator_cpu_share: cpu_share,
        verdict: judged.verdict,
        reason: judged.reason,
        detail: judged.detail,
        run,
    })
}

/// This process's user+sys CPU time so far, all threads (finished ones included), seconds.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may contain spaces; fields after it are plain numbers.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// The verdict of one step and what it rests on.
#[derive(Debug)]
struct Judgement {
    achieved: f64,
    error_share: f64,
    slo_values: Vec<SloValue>,
    verdict: Verdict,
    reason: Option<FailReason>,
    detail: String,
}

/// Judges a step. Every broken condition goes into `detail`; the recorded reason is the first
/// of: the generator (then nothing else measured the target), the error budget, the SLO.
fn judge(s: &Stats, target: f64, cpu: Option<f64>, slo: &Slo, budget: f64) -> Judgement {
    let achieved = if s.elapsed_us == 0 {
        0.0
    } else {
        s.sent as f64 / s.elapsed_secs()
    };
    let attempts = s.attempts();
    let bad = s.errors.total() + s.status.non_success();
    let error_share = if attempts == 0 {
        0.0
    } else {
        bad as f64 / attempts as f64
    };
    let slo_values = measure_slo(slo, &s.latency.hist);
    let mut broken: Vec<(FailReason, String)> = Vec::new();
    if let Some(cpu) = cpu.filter(|&c| c > CPU_BUSY && achieved < KEEP_UP * target) {
        broken.push((
            FailReason::Generator,
            format!(
                "sent {}/s of {}/s with the generator at {} CPU",
                units::rate(achieved),
                units::rate_short(target),
                units::percent(cpu)
            ),
        ));
    }
    if error_share > budget {
        broken.push((
            FailReason::Errors,
            format!(
                "errors {} > {}",
                units::percent(error_share),
                units::percent(budget)
            ),
        ));
    }
    for (c, v) in slo.conditions.iter().zip(&slo_values) {
        if !v.ok {
            broken.push((FailReason::Slo, slo_breach(c, v.value_us)));
        }
    }
    let detail = broken
        .iter()
        .map(|(_, d)| d.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let (verdict, reason) = match broken.first() {
        Some((reason, _)) => (Verdict::Fail, Some(*reason)),
        None => (Verdict::Pass, None),
    };
    Judgement {
        achieved,
        error_share,
        slo_values,
        verdict,
        reason,
        detail,
    }
}

fn measure_slo(slo: &Slo, hist: &loadbench_model::Histo) -> Vec<SloValue> {
    slo.conditions
        .iter()
        .map(|c| {
            let value_us = c.stat.measure_us(hist);
            SloValue {
                condition: c.text.clone(),
                value_us,
                ok: value_us.is_some_and(|v| c.holds(v)),
            }
        })
        .collect()
}

fn slo_breach(c: &SloCondition, value: Option<f64>) -> String {
    let Some(value) = value else {
        return format!("{}: no response completed", c.text);
    };
    let negated = match c.op {
        SloOp::Lt => ">=",
        SloOp::Le => ">",
    };
    format!(
        "{} {} {negated} {}",
        c.stat.label(),
        units::duration_us(value),
        units::duration_us(c.limit_us)
    )
}

/// The search: exponential while steps pass, then bisection. Knows nothing of running steps.
#[derive(Debug, Clone)]
struct Search {
    start: f64,
    max: f64,
    precision: f64,
    max_steps: u32,
    done: u32,
    /// The highest rate that passed.
    pass: Option<f64>,
    /// The lowest rate that failed on the target's account (not the generator's).
    fail: Option<f64>,
    stopped: Option<StopReason>,
}

impl Search {
    fn new(p: &SearchParams) -> Search {
        Search {
            start: p.start_rate,
            max: p.max_rate,
            precision: p.precision,
            max_steps: p.max_steps,
            done: 0,
            pass: None,
            fail: None,
            stopped: None,
        }
    }

    /// The next rate to try, or why the search is over (which is then recorded).
    fn next(&mut self) -> Result<(f64, SearchPhase), StopReason> {
        let next = self.propose();
        if let Err(reason) = next {
            self.stop(reason);
        }
        next
    }

    fn propose(&self) -> Result<(f64, SearchPhase), StopReason> {
        if let Some(reason) = self.stopped {
            return Err(reason);
        }
        let next = match (self.pass, self.fail) {
            (None, None) => (self.start, SearchPhase::Exponential),
            (Some(_), Some(_)) if self.narrow_enough() => return Err(StopReason::Precision),
            (Some(p), None) => ((p * 2.0).min(self.max), SearchPhase::Exponential),
            (Some(p), Some(f)) => (round_rate((p + f) / 2.0), SearchPhase::Bisect),
            (None, Some(_)) => return Err(StopReason::NoRateHeld),
        };
        if self.done >= self.max_steps {
            return Err(StopReason::MaxSteps);
        }
        Ok(next)
    }

    /// Within the precision, or so close that the midpoint rounds onto an end.
    fn narrow_enough(&self) -> bool {
        let (Some(p), Some(f)) = (self.pass, self.fail) else {
            return false;
        };
        let mid = round_rate((p + f) / 2.0);
        (f - p) / p < self.precision || mid <= p || mid >= f
    }

    fn record(&mut self, rate: f64, verdict: Verdict, reason: Option<FailReason>) {
        self.done += 1;
        match (verdict, reason) {
            (Verdict::Pass, _) => {
                self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
                if rate >= self.max {
                    self.stop(StopReason::MaxRatePassed);
                }
            }
            (Verdict::Fail, Some(FailReason::Generator)) => self.stop(StopReason::Generator),
            (Verdict::Fail, _) => self.fail = Some(self.fail.map_or(rate, |f| f.min(rate))),
            (Verdict::Interrupted, _) => self.stop(StopReason::Interrupted),
        }
    }

    fn stop(&mut self, reason: StopReason) {
        self.stopped.get_or_insert(reason);
    }

    fn precision_reached(&self) -> Option<f64> {
        self.pass.zip(self.fail).map(|(p, f)| (f - p) / p)
    }
}

/// Midpoints in whole requests per second (hundredths below 10/s): figures people can retype.
fn round_rate(r: f64) -> f64 {
    if r >= 10.0 {
        r.round()
    } else {
        (r * 100.0).round() / 100.0
    }
}

/// `p99<50ms,p99.9<=200ms,mean<10ms`.
fn parse_slo(text: &str) -> Result<Slo, UserError> {
    let conditions = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_condition)
        .collect::<Result<Vec<_>, _>>()?;
    if conditions.is_empty() {
        return Err(UserError(
            "--slo is empty: give conditions such as --slo 'p99<50ms'".into(),
        ));
    }
    Ok(Slo {
        text: text.trim().to_string(),
        conditions,
    })
}

fn parse_condition(item: &str) -> Result<SloCondition, UserError> {
    let bad = |why: &str| UserError(format!("--slo '{item}' {why}"));
    let not_a_condition = || {
        bad("is not a condition: write pNN<DURATION, pNN<=DURATION or mean<DURATION, such as 'p99<50ms,p99.9<200ms'")
    };
    let (lhs, op, rhs) = match item.split_once("<=") {
        Some((l, r)) => (l, SloOp::Le, r),
        None => match item.split_once('<') {
            Some((l, r)) => (l, SloOp::Lt, r),
            None => return Err(not_a_condition()),
        },
    };
    let lhs = lhs.trim().to_ascii_lowercase();
    let stat = match lhs.strip_prefix('p') {
        _ if lhs == "mean" => SloStat::Mean,
        Some(p) => match p.parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => SloStat::Percentile { percentile: p },
            Ok(_) => {
                return Err(bad(
                    "names a percentile outside (0, 100]: use one such as p50, p99 or p99.9",
                ))
            }
            Err(_) => return Err(not_a_condition()),
        },
        None => return Err(not_a_condition()),
    };
    let rhs = rhs.trim();
    let limit = parse_duration("--slo", rhs)
        .ok()
        .filter(|_| rhs.parse::<f64>().is_err())
        .ok_or_else(|| {
            bad("has no valid duration limit: give one with a unit, such as 50ms or 1s")
        })?;
    if limit.is_zero() {
        return Err(bad(
            "has a zero limit: give a positive duration such as 50ms",
        ));
    }
    Ok(SloCondition {
        text: item.to_string(),
        stat,
        op,
        limit_us: limit.as_secs_f64() * 1e6,
    })
}

/// A share as a percentage (`0.1%`) or a fraction (`0.001`), from 0 to 1.
fn parse_share(flag: &str, text: &str, pct: &str, frac: &str) -> Result<f64, UserError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(UserError(format!(
            "{flag} '{text}' is not a share: give a percentage such as {pct} or a fraction from 0 to 1 such as {frac}"
        ))),
    }
}

fn positive_share(flag: &str, text: &str) -> Result<f64, UserError> {
    match parse_share(flag, text, "5%", "0.05")? {
        v if v > 0.0 => Ok(v),
        _ => Err(UserError(format!(
            "{flag} {text} never stops the bisection: give a positive share such as 5%"
        ))),
    }
}

fn parse_one_rate(flag: &str, text: &str) -> Result<f64, UserError> {
    let bad = || {
        UserError(format!(
            "{flag} '{text}' is not a rate: give requests per second above 0, such as 100 or 5k"
        ))
    };
    match parse_rate(text) {
        Ok((r, None)) if r > 0.0 => Ok(r),
        _ => Err(bad()),
    }
}

fn duration(flag: &str, text: &str) -> Result<Duration, UserError> {
    parse_duration(flag, text).map_err(|e| UserError(e.to_string()))
}

fn positive_duration(flag: &str, text: &str) -> Result<Duration, UserError> {
    match duration(flag, text)? {
        d if d.is_zero() => Err(UserError(format!(
            "{flag} {text} is zero: give a positive duration such as 10s"
        ))),
        d => Ok(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(start: f64, max: f64, max_steps: u32) -> SearchParams {
        SearchParams {
            start_rate: start,
            max_rate: max,
            precision: 0.05,
            max_steps,
            step_duration_ms: 1_000,
            warmup_ms: 0,
            threads: 1,
        }
    }

    /// Runs the search against a target that holds exactly `capacity`.
    fn simulate(p: &SearchParams, capacity: f64) -> (Search, Vec<f64>) {
        let mut s = Search::new(p);
        let mut rates = Vec::new();
        while let Ok((rate, _)) = s.next() {
            rates.push(rate);
            let verdict = if rate <= capacity {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            s.record(
                rate,
                verdict,
                Some(FailReason::Slo).filter(|_| verdict == Verdict::Fail),
            );
        }
        (s, rates)
    }

    #[test]
    fn doubles_then_bisects_to_within_the_precision() {
        let (s, rates) = simulate(&params(50.0, 1e6, 20), 400.0);
        assert_eq!(&rates[..5], &[50.0, 100.0, 200.0, 400.0, 800.0]);
        assert_eq!(rates[5], 600.0);
        assert_eq!(s.stopped, Some(StopReason::Precision));
        assert_eq!(s.pass, Some(400.0));
        assert!(s.precision_reached().unwrap() < 0.05);
    }

    #[test]
    fn stops_when_the_max_rate_passes() {
        let (s, rates) = simulate(&params(100.0, 300.0, 20), 1e9);
        assert_eq!(rates, vec![100.0, 200.0, 300.0]);
        assert_eq!(s.stopped, Some(StopReason::MaxRatePassed));
        assert_eq!(s.precision_reached(), None);
    }

    #[test]
    fn stops_at_max_steps_and_when_nothing_held() {
        let (s, rates) = simulate(&params(100.0, 1e6, 3), 1e9);
        assert_eq!(rates.len(), 3);
        assert_eq!(s.stopped, Some(StopReason::MaxSteps));
        let (s, rates) = simulate(&params(100.0, 1e6, 20), 10.0);
        assert_eq!(rates, vec![100.0]);
        assert_eq!(s.stopped, Some(StopReason::NoRateHeld));
        assert_eq!(s.pass, None);
    }

    #[test]
    fn a_generator_limit_ends_the_search_without_a_target_failure() {
        let mut s = Search::new(&params(100.0, 1e6, 20));
        s.next().unwrap();
        s.record(100.0, Verdict::Pass, None);
        s.next().unwrap();
        s.record(200.0, Verdict::Fail, Some(FailReason::Generator));
        assert!(s.next().is_err());
        assert_eq!(s.stopped, Some(StopReason::Generator));
        assert_eq!((s.pass, s.fail), (Some(100.0), None));
    }

    /// One second in which `sent` requests went out and `ok` of them got a 200 after 10 ms.
    fn stats(sent: u64, ok: u64, failed: u64) -> Stats {
        let mut s = Stats {
            elapsed_us: 1_000_000,
            sent,
            requests: ok,
            ..Stats::default()
        };
        (0..ok).for_each(|_| s.latency.hist.record_ns(10_000_000));
        s.status.add(200, ok);
        s.errors
            .add(loadbench_model::ErrorKind::ReadTimeout, failed);
        s
    }

    #[test]
    fn judges_slo_errors_and_the_generator_in_that_order_of_blame() {
        let slo = parse_slo("p99<20ms").unwrap();
        let pass = judge(&stats(1000, 1000, 0), 1000.0, Some(0.5), &slo, 0.001);
        assert_eq!((pass.verdict, pass.reason), (Verdict::Pass, None));
        assert_eq!(pass.achieved, 1000.0);
        let tight = parse_slo("p99<5ms").unwrap();
        let slow = judge(&stats(1000, 1000, 0), 1000.0, None, &tight, 0.001);
        assert_eq!(slow.reason, Some(FailReason::Slo));
        assert!(slow.detail.starts_with("p99 10.0"), "{}", slow.detail);
        let errors = judge(&stats(1000, 990, 10), 1000.0, None, &tight, 0.001);
        assert_eq!(errors.reason, Some(FailReason::Errors));
        assert!((errors.error_share - 0.01).abs() < 1e-9);
        assert!(
            errors.detail.contains("; p99"),
            "both are named: {}",
            errors.detail
        );
        let busy = judge(&stats(900, 900, 0), 1000.0, Some(0.95), &slo, 0.001);
        assert_eq!(busy.reason, Some(FailReason::Generator));
        let idle = judge(&stats(900, 900, 0), 1000.0, Some(0.30), &slo, 0.001);
        assert_eq!(idle.verdict, Verdict::Pass, "slow sends alone blame no one");
    }

    #[test]
    fn nothing_completed_breaks_the_slo() {
        let slo = parse_slo("p99<1s").unwrap();
        let j = judge(&stats(100, 0, 0), 100.0, None, &slo, 0.001);
        assert_eq!(j.reason, Some(FailReason::Slo));
        assert_eq!(j.detail, "p99<1s: no response completed");
    }

    #[test]
    fn slo_conditions_parse_as_typed() {
        let slo = parse_slo("p50<10ms, p99.9<=200ms,mean<1s").unwrap();
        let c = &slo.conditions;
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].stat, SloStat::Percentile { percentile: 50.0 });
        assert_eq!((c[0].op, c[0].limit_us), (SloOp::Lt, 10_000.0));
        assert_eq!(c[1].stat, SloStat::Percentile { percentile: 99.9 });
        assert_eq!((c[1].op, c[1].limit_us), (SloOp::Le, 200_000.0));
        assert_eq!((c[2].stat, c[2].limit_us), (SloStat::Mean, 1e6));
        assert_eq!(c[1].text, "p99.9<=200ms");
    }

    #[test]
    fn slo_mistakes_name_the_fix() {
        for (bad, needle) in [
            ("p99>50ms", "is not a condition"),
            ("99<50ms", "is not a condition"),
            ("p101<50ms", "outside (0, 100]"),
            ("p99<50", "with a unit"),
            ("p99<fast", "with a unit"),
            ("p99<0ms", "zero limit"),
            (" , ", "is empty"),
        ] {
            let e = parse_slo(bad).unwrap_err().0;
            assert!(e.contains(needle), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn shares_read_as_percent_or_fraction() {
        assert_eq!(parse_share("--max-errors", "0.1%", "", "").unwrap(), 0.001);
        assert_eq!(parse_share("--max-errors", "0.001", "", "").unwrap(), 0.001);
        assert_eq!(parse_share("--max-errors", "0", "", "").unwrap(), 0.0);
        assert!(parse_share("--max-errors", "5", "", "").is_err());
        assert!(parse_share("--max-errors", "abc%", "", "").is_err());
        assert!(positive_share("--precision", "0%").is_err());
        assert_eq!(positive_share("--precision", "5%").unwrap(), 0.05);
    }

    #[test]
    fn rates_accept_suffixes_but_not_ranges() {
        assert_eq!(parse_one_rate("--start-rate", "5k").unwrap(), 5_000.0);
        assert!(parse_one_rate("--start-rate", "0").is_err());
        assert!(parse_one_rate("--start-rate", "1..2").is_err());
    }

    #[test]
    fn proc_stat_cpu_time_is_readable_and_grows() {
        let Some(a) = cpu_seconds() else { return };
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(cpu_seconds().unwrap() >= a && x > 0);
    }
}
