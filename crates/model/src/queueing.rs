//! The queueing view of a bench sweep: what the levels of a load say about the target as a
//! queue. Little's law gives, per level, how many requests were in the target at once
//! (throughput × mean service time) and in the generator (throughput × mean latency from the
//! intended send); over the levels, the knee is where throughput stops growing while latency
//! climbs; a Universal Scalability Law fit ([`usl`]) separates contention from coherency and
//! predicts the peak; and when throughput levels off at about N ÷ (the service time at low
//! load), the target behaves like a pool of about N workers. Each result becomes a [`Finding`].
//!
//! Pure functions of a [`BenchResult`]'s rounds: [`analyse`] is called by
//! [`BenchResult::recompute`], so the view is derived data, rebuilt whenever a result is read.

pub mod usl;

use crate::bench::{BenchLoad, BenchResult, BenchRound};
use crate::why::{Finding, FindingKind};
use crate::{LoadShape, RunResult, Starvation, StarvedCause, Stats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use usl::UslFit;

/// A sweep needs at least this many levels with a result to be analysed.
pub const MIN_LEVELS: usize = 3;

/// The next level's throughput grew by less than this share (or less than a quarter of the
/// level's own growth, whichever is smaller): throughput stopped growing. Doubling the load for
/// under 15% more throughput is a stall; so is 100 → 105 connections for under 1.25%.
pub const KNEE_GAIN: f64 = 0.15;

/// The lowest level shows the bare service time only when it scaled: from it to the next level
/// throughput grew by at least this share of the level's growth (a linear target: all of it),
/// or by this share outright when the level more than doubled (the pool may fill in between).
pub const LINEAR_SHARE: f64 = 0.5;

/// Why an open load gets no fit (nor a pool): past its capacity the target's backlog grows
/// through the whole round, so neither its throughput nor its concurrency is a steady state.
pub const OPEN_NO_FIT: &str = "an open load's levels are rates: past the target's capacity its backlog grows through the whole round and only requests sent and answered within it count, so throughput and concurrency are no steady state to fit (nor to size a pool from); sweep connections in a closed load for those";

/// A scalability fit worse than this (R²) is not reported as a finding: the levels do not
/// follow the law (noise, or a limit it does not model).
pub const MIN_R_SQUARED: f64 = 0.5;

/// After the knee, throughput staying within this share of its median is "levelled off", the
/// mark of a fixed pool (a falling throughput is coherency, not a pool).
pub const POOL_SPREAD: f64 = 0.20;

/// A fit whose limit (its predicted peak, or the ceiling it approaches) lies more than this
/// many times beyond the largest level (or throughput) measured is not evidence: the levels
/// never came near it, so "not enough evidence" is said instead of a finding.
pub const FIT_REACH: f64 = 4.0;

/// Levels with connections left without an answer by a connection limit needed to size a
/// pool from them.
pub const STARVED_LEVELS: usize = 2;

/// The served connections of the starved levels must agree within this ratio (max ÷ min) to
/// be one pool.
pub const SERVED_AGREE: f64 = 1.25;

/// A sweep is bound by a fixed wait when its mean service time stays within this ratio
/// (max ÷ min) over the levels while every connection is in service.
pub const WAIT_SPREAD: f64 = 1.3;

/// Little's law over one measured window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Little {
    /// Throughput, requests per second (see [`Little::of_stats`]).
    pub requests_per_sec: f64,
    /// Mean latency from the intended send time, µs.
    pub mean_latency_us: f64,
    /// Mean service time (actual send to the last byte), µs.
    pub mean_service_us: f64,
}

impl Little {
    /// The figures of a run (see [`Little::of_stats`]).
    pub fn of(run: &RunResult) -> Option<Little> {
        Little::of_stats(
            &run.stats,
            matches!(run.config.load, LoadShape::Closed { .. }),
        )
    }

    /// The figures of a run's stats; `None` when no request completed.
    ///
    /// Throughput: in the closed model, requests *sent* per second. Each connection sends as
    /// the previous answer arrives, so that is the rate of answers in the window, not
    /// shortened by the requests still in flight when it ends (a run counts only requests sent
    /// and answered in its window, `req/s`, which falls short by about the requests at once ÷
    /// the window: 20% for 200 in flight at 200 req/s over 1 s). In the open model, answers
    /// per second: an overloaded target answers fewer than the schedule sends.
    ///
    /// Results without service times (written before they existed) use the latency, which
    /// equals it in the closed model.
    pub fn of_stats(stats: &Stats, closed: bool) -> Option<Little> {
        if stats.requests == 0 || stats.latency.hist.is_empty() {
            return None;
        }
        let latency = stats.latency.hist.mean_ns() / 1e3;
        let service = &stats.service.hist;
        let summary = stats.summary();
        Some(Little {
            requests_per_sec: if closed && stats.sent > 0 {
                summary.sent_per_sec
            } else {
                summary.requests_per_sec
            },
            mean_latency_us: latency,
            mean_service_us: if service.is_empty() {
                latency
            } else {
                service.mean_ns() / 1e3
            },
        })
    }

    /// Requests in the target at once: throughput × mean service time.
    pub fn in_target(&self) -> f64 {
        concurrency(self.requests_per_sec, self.mean_service_us)
    }

    /// Requests in the generator at once (sent or waiting to be): throughput × mean latency.
    pub fn in_generator(&self) -> f64 {
        concurrency(self.requests_per_sec, self.mean_latency_us)
    }
}

/// Little's law: `L = λ W`, requests at once from req/s and a mean time in µs.
pub fn concurrency(requests_per_sec: f64, mean_us: f64) -> f64 {
    requests_per_sec * mean_us / 1e6
}

/// One level of a sweep: medians over its rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LevelPoint {
    /// Index into the load's `levels`.
    pub level: u32,
    /// The level: connections (closed) or the offered rate (open).
    pub value: f64,
    /// Rounds with a result.
    pub rounds: u32,
    /// Throughput: requests sent per second in the closed model (the rate of answers, not
    /// shortened by the requests in flight at the window's end), answered per second in the
    /// open one (see [`Little::of_stats`]).
    pub requests_per_sec: f64,
    /// Mean latency from the intended send time, µs.
    pub mean_latency_us: f64,
    /// Mean service time, µs.
    pub mean_service_us: f64,
    /// Requests in the target at once (Little's law: req/s × mean service time).
    pub in_target: f64,
    /// Requests in the generator at once (req/s × mean latency): the connections in the closed
    /// model, the requests in flight or waiting for a connection in the open one.
    pub in_generator: f64,
    /// Connections a connection limit left without an answer (median over the rounds; 0:
    /// none). Only served requests complete, so their latency never shows these.
    #[serde(default)]
    pub starved: f64,
    /// Connections served at once when some starved (median over the rounds; 0: none starved).
    #[serde(default)]
    pub served: f64,
}

impl LevelPoint {
    /// The medians of a level's rounds; `None` without any.
    pub fn of(level: u32, value: f64, rounds: &[Little]) -> Option<LevelPoint> {
        let m = |f: fn(&Little) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
        Some(LevelPoint {
            level,
            value,
            rounds: rounds.len() as u32,
            requests_per_sec: m(|l| l.requests_per_sec)?,
            mean_latency_us: m(|l| l.mean_latency_us)?,
            mean_service_us: m(|l| l.mean_service_us)?,
            in_target: m(Little::in_target)?,
            in_generator: m(Little::in_generator)?,
            starved: 0.0,
            served: 0.0,
        })
    }
}

/// Where throughput stopped growing while latency climbed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Index into the load's `levels` of the last level before throughput stalled.
    pub level: u32,
    /// That level's value (connections or rate).
    pub value: f64,
    /// Throughput there, req/s.
    pub requests_per_sec: f64,
    /// Mean latency there, µs.
    pub mean_latency_us: f64,
    /// The next level: its value.
    pub next_value: f64,
    /// Relative change of throughput to the next level (0.02: +2%).
    pub next_gain: f64,
    /// Relative change of mean latency to the next level.
    pub next_latency_rise: f64,
}

/// The first level after which throughput stops growing (gain under [`KNEE_GAIN`], or under
/// a quarter of the level's own growth) while mean latency climbs (by more than the same
/// share); `points` in increasing level order.
pub fn knee(points: &[LevelPoint]) -> Option<Knee> {
    points.windows(2).find_map(|w| {
        let (a, b) = (&w[0], &w[1]);
        let step = (b.value / a.value - 1.0).max(0.0);
        let gain = b.requests_per_sec / a.requests_per_sec - 1.0;
        let rise = b.mean_latency_us / a.mean_latency_us - 1.0;
        let threshold = KNEE_GAIN.min(step / 4.0);
        (step > 0.0 && gain < threshold && rise > threshold).then_some(Knee {
            level: a.level,
            value: a.value,
            requests_per_sec: a.requests_per_sec,
            mean_latency_us: a.mean_latency_us,
            next_value: b.value,
            next_gain: gain,
            next_latency_rise: rise,
        })
    })
}

/// A target whose throughput levels off at about N ÷ (service time at low load).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkerPool {
    /// The pool's size, rounded.
    pub workers: u32,
    /// `requests_per_sec × low_load_service_us`, unrounded.
    pub estimate: f64,
    /// Median throughput from the knee on, req/s.
    pub requests_per_sec: f64,
    /// Mean service time at the lowest level, µs.
    pub low_load_service_us: f64,
    /// The lowest level's value.
    pub low_load_value: f64,
    /// Spread of the throughput from the knee on, `(max − min) / median`.
    pub spread: f64,
    /// Levels whose starved connections sized the pool (0: found from the knee).
    #[serde(default)]
    pub starved_levels: u32,
}

/// Worker-pool detection: the knee is above the lowest level, which scaled to the next one
/// (throughput grew by at least [`LINEAR_SHARE`] of the level's growth: it was not saturated
/// and shows the bare service time, not a wait in line), and throughput from the knee on stays
/// within [`POOL_SPREAD`]; the pool is that throughput × the lowest level's service time.
pub fn worker_pool(points: &[LevelPoint], knee: &Knee) -> Option<WorkerPool> {
    let [low, next, ..] = points else {
        return None;
    };
    let scaled = next.requests_per_sec / low.requests_per_sec - 1.0
        >= LINEAR_SHARE * (next.value / low.value - 1.0).min(1.0);
    if low.level == knee.level || !scaled {
        return None;
    }
    let after: Vec<f64> = points
        .iter()
        .skip_while(|p| p.level != knee.level)
        .map(|p| p.requests_per_sec)
        .collect();
    let x = median(&after)?;
    let spread = (after.iter().fold(0.0, |a: f64, &b| a.max(b))
        - after.iter().fold(f64::MAX, |a: f64, &b| a.min(b)))
        / x;
    let estimate = concurrency(x, low.mean_service_us);
    (spread <= POOL_SPREAD && estimate >= 0.5).then_some(WorkerPool {
        workers: estimate.round() as u32,
        estimate,
        requests_per_sec: x,
        low_load_service_us: low.mean_service_us,
        low_load_value: low.value,
        spread,
        starved_levels: 0,
    })
}

/// A pool sized from the levels where a connection limit left connections without an answer
/// (at least [`STARVED_LEVELS`], their served connections agreeing within [`SERVED_AGREE`]):
/// the completed requests' latency never rises there, so no knee shows it. Its size is
/// Little's law at those levels: throughput × mean service time, the median over them.
pub fn starved_pool(points: &[LevelPoint]) -> Option<WorkerPool> {
    let starved: Vec<&LevelPoint> = points.iter().filter(|p| p.starved > 0.0).collect();
    if starved.len() < STARVED_LEVELS {
        return None;
    }
    let served: Vec<f64> = starved.iter().map(|p| p.served).collect();
    let (lo, hi) = min_max(&served);
    if lo <= 0.0 || hi / lo > SERVED_AGREE {
        return None;
    }
    let estimate = median(&starved.iter().map(|p| p.in_target).collect::<Vec<_>>())?;
    let rates: Vec<f64> = starved.iter().map(|p| p.requests_per_sec).collect();
    let x = median(&rates)?;
    let (rlo, rhi) = min_max(&rates);
    let service = median(
        &starved
            .iter()
            .map(|p| p.mean_service_us)
            .collect::<Vec<_>>(),
    )?;
    (estimate >= 0.5).then_some(WorkerPool {
        workers: estimate.round() as u32,
        estimate,
        requests_per_sec: x,
        low_load_service_us: service,
        low_load_value: starved[0].value,
        spread: (rhi - rlo) / x,
        starved_levels: starved.len() as u32,
    })
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)))
}

/// A closed sweep bound by a fixed wait: no knee, every connection in service at every level
/// (Little's law: requests in the target ≥ the diagnosis's share of the connections), the
/// mean service time within [`WAIT_SPREAD`] over the levels and at least the diagnosis's
/// minimum wait: throughput = connections ÷ latency.
pub fn wait_bound(points: &[LevelPoint]) -> bool {
    use crate::diagnose::{WAIT_IN_SERVICE_SHARE, WAIT_MIN_US};
    let services: Vec<f64> = points.iter().map(|p| p.mean_service_us).collect();
    let (lo, hi) = min_max(&services);
    let all_in = points
        .iter()
        .all(|p| p.starved == 0.0 && p.in_target >= WAIT_IN_SERVICE_SHARE * p.value);
    !points.is_empty() && all_in && lo >= WAIT_MIN_US && hi / lo <= WAIT_SPREAD
}

/// The queueing view of one target over one load's levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAnalysis {
    /// Index into the result's `loads`.
    pub load: u32,
    /// The target's name.
    pub target: String,
    /// What the levels are: connections (a closed load, `true`) or offered rates (open).
    pub closed: bool,
    /// Every level with a result, in increasing order.
    pub levels: Vec<LevelPoint>,
    /// Where throughput stopped growing, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
    /// The Universal Scalability Law fit over (connections, throughput); closed loads only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usl: Option<UslFit>,
    /// Why there is no fit, when there is none (an open load, too few levels, or a fit under
    /// [`MIN_R_SQUARED`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usl_note: Option<String>,
    /// The pool of workers the target behaves like, if it does; closed loads only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<WorkerPool>,
    /// The findings (worker pool, knee, USL), strongest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

/// The queueing view of every closed and open load with at least [`MIN_LEVELS`] levels
/// measured, per target (combined entries of `together` loads left out).
pub fn analyse(r: &BenchResult) -> Vec<SweepAnalysis> {
    let mut out = Vec::new();
    for (li, load) in r.loads.iter().enumerate() {
        if load.slo().is_some() {
            continue;
        }
        for target in &load.targets {
            let points = level_points(r, li as u32, load, target);
            if points.len() >= MIN_LEVELS {
                out.push(sweep(li as u32, load, target, points));
            }
        }
    }
    out
}

fn level_points(r: &BenchResult, li: u32, load: &BenchLoad, target: &str) -> Vec<LevelPoint> {
    let mut points: Vec<LevelPoint> = (0..load.levels.len() as u32)
        .filter_map(|level| {
            let measured: Vec<&BenchRound> = r
                .rounds_of(li, level, target)
                .filter(|x| !x.combined && x.measured_run().is_some())
                .collect();
            let rounds: Vec<Little> = measured
                .iter()
                .filter_map(|x| x.measured_run())
                .filter_map(Little::of)
                .collect();
            let mut point = LevelPoint::of(level, load.levels[level as usize].amount()?, &rounds)?;
            // A connection limit's starved connections, as each round's findings judged them.
            let limited: Vec<(f64, f64)> = measured
                .iter()
                .map(|x| {
                    let s = x.measured_run().and_then(|run| Starvation::of(&run.stats));
                    match s {
                        Some(s) if s.cause_in(&x.why) == StarvedCause::ConnectionLimit => {
                            (s.starved as f64, s.served as f64)
                        }
                        _ => (0.0, 0.0),
                    }
                })
                .collect();
            point.starved = median(&limited.iter().map(|p| p.0).collect::<Vec<_>>()).unwrap_or(0.0);
            if point.starved > 0.0 {
                point.served = median(
                    &limited
                        .iter()
                        .filter(|p| p.0 > 0.0)
                        .map(|p| p.1)
                        .collect::<Vec<_>>(),
                )
                .unwrap_or(0.0);
            }
            Some(point)
        })
        .collect();
    points.sort_by(|a, b| a.value.total_cmp(&b.value));
    points
}

/// The analysis of one target's levels (`points` in increasing order).
pub fn sweep(load: u32, spec: &BenchLoad, target: &str, points: Vec<LevelPoint>) -> SweepAnalysis {
    let knee = knee(&points);
    let closed = matches!(spec.levels.first(), Some(LoadShape::Closed { .. }));
    let pool = if closed {
        starved_pool(&points).or_else(|| knee.as_ref().and_then(|k| worker_pool(&points, k)))
    } else {
        None
    };
    let fit = if closed {
        usl::fit(
            &points
                .iter()
                .map(|p| (usl_concurrency(closed, p), p.requests_per_sec))
                .collect::<Vec<_>>(),
        )
    } else {
        Err(OPEN_NO_FIT.to_string())
    };
    let fit = fit.and_then(|f| {
        if f.r_squared >= MIN_R_SQUARED {
            Ok(f)
        } else {
            Err(format!("not enough evidence: the fit was poor (R² {:.3}, under {MIN_R_SQUARED}): these levels' throughput does not follow the law (noise, or a limit it does not model)", f.r_squared))
        }
    });
    let fit = fit.and_then(|f| within_reach(&f, &points, closed));
    let fit = match pool {
        Some(p) if p.starved_levels > 0 => Err(format!("not enough evidence: a limit of about {} connections left the others without an answer, so throughput counts only the served ones and the curve is that limit, not contention or coherency", p.workers)),
        _ => fit,
    };
    let mut a = SweepAnalysis {
        load,
        target: target.to_string(),
        closed,
        levels: points,
        knee,
        usl: fit.as_ref().ok().copied(),
        usl_note: fit.err(),
        pool,
        findings: Vec::new(),
    };
    a.findings = findings(&a);
    a
}

/// A fit is evidence only when its limit lies within [`FIT_REACH`] times what was measured:
/// its predicted peak near the levels, or the ceiling it approaches near the throughput seen.
/// A fit with neither (throughput in proportion to concurrency) predicts no limit at all.
pub fn within_reach(f: &UslFit, points: &[LevelPoint], closed: bool) -> Result<UslFit, String> {
    let top_n = points
        .iter()
        .map(|p| usl_concurrency(closed, p))
        .fold(0.0, f64::max);
    let top_x = points
        .iter()
        .map(|p| p.requests_per_sec)
        .fold(0.0, f64::max);
    let beyond = |limit: f64, top: f64, what: &str| {
        Err(format!(
            "not enough evidence: the fitted {what} ({limit:.0}) lies {:.0}× beyond the largest measured ({top:.0}); the levels never came near a limit, so the fit says nothing about one",
            limit / top
        ))
    };
    match (f.peak_concurrency, f.ceiling()) {
        (Some(n), _) if n > FIT_REACH * top_n => beyond(n, top_n, "peak concurrency"),
        (None, Some(c)) if c > FIT_REACH * top_x => beyond(c, top_x, "throughput ceiling"),
        (None, None) => Err("not enough evidence: throughput grew in proportion to concurrency, no limit within the measured levels".to_string()),
        _ => Ok(*f),
    }
}

/// The concurrency `N` a level stands for in the scalability fit: the connections in the
/// closed model, the requests in the target (Little's law) in the open one.
pub fn usl_concurrency(closed: bool, p: &LevelPoint) -> f64 {
    if closed {
        p.value
    } else {
        p.in_target
    }
}

/// `c=20` or `200/s`, as the reports show a level.
pub fn level_label(closed: bool, value: f64) -> String {
    if closed {
        format!("c={value}")
    } else {
        format!("{value}/s")
    }
}

/// The findings of an analysis, strongest first.
pub fn findings(a: &SweepAnalysis) -> Vec<Finding> {
    let mut list = Vec::new();
    list.extend(a.pool.map(|p| pool_finding(a, &p)));
    if a.closed && a.pool.is_none() && a.knee.is_none() && wait_bound(&a.levels) {
        list.push(wait_finding(a));
    }
    list.extend(a.knee.map(|k| knee_finding(a, &k)));
    list.extend(a.usl.map(|f| usl_finding(a, &f)));
    crate::Why::new(list, Vec::new()).findings
}

fn figures<const N: usize>(pairs: [(&str, f64); N]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn wait_finding(a: &SweepAnalysis) -> Finding {
    let (first, last) = (&a.levels[0], &a.levels[a.levels.len() - 1]);
    let services: Vec<f64> = a.levels.iter().map(|p| p.mean_service_us).collect();
    let service = median(&services).unwrap_or(first.mean_service_us);
    Finding {
        kind: FindingKind::LatencyBound,
        strength: 0.55,
        text: format!(
            "{}: the wait sets the rate: a request took about {} at every level from {} to {} and throughput grew with the connections ({:.0} → {:.0} req/s): throughput = connections ÷ latency (Little's law)",
            a.target,
            ms(service),
            level_label(a.closed, first.value),
            level_label(a.closed, last.value),
            first.requests_per_sec,
            last.requests_per_sec
        ),
        fix: Some("more concurrency is the lever, not CPU: more connections, or a shorter wait (what the target waits on: a sleep, a downstream call)".to_string()),
        figures: figures([
            ("mean_service_us", service),
            ("first_level", first.value),
            ("last_level", last.value),
            ("first_requests_per_sec", first.requests_per_sec),
            ("last_requests_per_sec", last.requests_per_sec),
        ]),
    }
}

fn pool_finding(a: &SweepAnalysis, p: &WorkerPool) -> Finding {
    let low = level_label(a.closed, p.low_load_value);
    if p.starved_levels > 0 {
        return starved_pool_finding(a, p, &low);
    }
    Finding {
        kind: FindingKind::WorkerPool,
        strength: 0.8 - p.spread,
        text: format!(
            "{} behaves like a pool of about {} worker{}: throughput levelled off at {:.0} req/s while a request took {} at {low} (Little's law: {:.0} req/s × {} ≈ {:.1} requests served at once)",
            a.target,
            p.workers,
            if p.workers == 1 { "" } else { "s" },
            p.requests_per_sec,
            ms(p.low_load_service_us),
            p.requests_per_sec,
            ms(p.low_load_service_us),
            p.estimate
        ),
        fix: Some(format!(
            "look for a limit of about {} in the target (a thread or worker pool, a connection pool to its database, a semaphore) and raise it, or add instances: more load only lengthens its queue",
            p.workers
        )),
        figures: figures([
            ("workers", f64::from(p.workers)),
            ("estimate", p.estimate),
            ("requests_per_sec", p.requests_per_sec),
            ("low_load_service_us", p.low_load_service_us),
            ("low_load_level", p.low_load_value),
        ]),
    }
}

fn starved_pool_finding(a: &SweepAnalysis, p: &WorkerPool, from: &str) -> Finding {
    let served: Vec<f64> = a
        .levels
        .iter()
        .filter(|l| l.starved > 0.0)
        .map(|l| l.served)
        .collect();
    let served = median(&served).unwrap_or(0.0);
    Finding {
        kind: FindingKind::WorkerPool,
        strength: 0.9,
        text: format!(
            "{} behaves like a pool of about {}: from {from} on ({} levels) it served {:.0} connections at once and left the others without an answer, and throughput stayed at about {:.0} req/s (Little's law: {:.0} req/s × {} ≈ {:.1} requests in service); the answered requests' latency hides this, the starved connections show it",
            a.target,
            p.workers,
            p.starved_levels,
            served,
            p.requests_per_sec,
            p.requests_per_sec,
            ms(p.low_load_service_us),
            p.estimate
        ),
        fix: Some(format!(
            "raise the target's limit of about {} (threads per connection, a worker or connection pool, max connections), or add instances: more connections only wait",
            p.workers
        )),
        figures: figures([
            ("workers", f64::from(p.workers)),
            ("estimate", p.estimate),
            ("served", served),
            ("requests_per_sec", p.requests_per_sec),
            ("mean_service_us", p.low_load_service_us),
            ("first_starved_level", p.low_load_value),
            ("starved_levels", f64::from(p.starved_levels)),
        ]),
    }
}

fn knee_finding(a: &SweepAnalysis, k: &Knee) -> Finding {
    let at = level_label(a.closed, k.value);
    Finding {
        kind: FindingKind::Knee,
        strength: 0.6,
        text: format!(
            "{}: throughput stopped growing at {at} ({:.0} req/s): at {} it changed {:+.1}% while mean latency rose {:.0}%",
            a.target,
            k.requests_per_sec,
            level_label(a.closed, k.next_value),
            k.next_gain * 100.0,
            k.next_latency_rise * 100.0
        ),
        fix: Some(format!(
            "load it at or below {at}: past the knee only the queue and the latency grow"
        )),
        figures: figures([
            ("level", k.value),
            ("requests_per_sec", k.requests_per_sec),
            ("mean_latency_us", k.mean_latency_us),
            ("next_gain", k.next_gain),
            ("next_latency_rise", k.next_latency_rise),
        ]),
    }
}

fn usl_finding(a: &SweepAnalysis, f: &UslFit) -> Finding {
    let mut figs = figures([
        ("sigma", f.sigma),
        ("kappa", f.kappa),
        ("lambda", f.lambda),
        ("r_squared", f.r_squared),
    ]);
    if let (Some(n), Some(x)) = (f.peak_concurrency, f.peak_requests_per_sec) {
        figs.insert("peak_concurrency".into(), n);
        figs.insert("peak_requests_per_sec".into(), x);
    }
    // A fixed pool levels off rather than peaks: the fit's coherency then stands in for the
    // hard limit, and the pool finding is the one to act on.
    let (weight, fix) = match a.pool {
        Some(p) => (0.5, Some(format!("throughput levelled off rather than fell: the fit's curve stands in for the hard limit of about {} workers (see that finding)", p.workers))),
        None => (1.0, usl_fix(f)),
    };
    Finding {
        kind: FindingKind::Scalability,
        strength: 0.4 * weight * f.r_squared.clamp(0.0, 1.0),
        text: format!("{}: {}", a.target, usl_sentence(f)),
        fix,
        figures: figs,
    }
}

/// `Universal Scalability Law fit (R² 0.982, 5 levels): contention σ = 0.0491, …`.
pub fn usl_sentence(f: &UslFit) -> String {
    let head = format!(
        "Universal Scalability Law fit (R² {:.3}, {} levels): contention σ = {}, coherency κ = {}, λ = {} req/s",
        f.r_squared,
        f.points,
        sig3(f.sigma),
        sig3(f.kappa),
        sig3(f.lambda)
    );
    match (f.peak_concurrency, f.peak_requests_per_sec, f.ceiling()) {
        (Some(n), Some(x), _) => {
            format!("{head}; predicted peak at about {n:.0} concurrent requests, {x:.0} req/s")
        }
        (_, _, Some(c)) => {
            format!("{head}; κ ≈ 0: no peak predicted, throughput approaches λ/σ = {c:.0} req/s")
        }
        _ => format!("{head}; no peak predicted"),
    }
}

fn usl_fix(f: &UslFit) -> Option<String> {
    if f.peak_concurrency.is_some() && f.kappa > 0.0 {
        Some("past the peak throughput falls as concurrent requests get in each other's way (coherency: lock or cache contention, crosstalk): cap the concurrency near the peak, or remove the shared state".to_string())
    } else if f.sigma > 0.0 {
        Some(
            "a serial part (a lock, one thread, a pool) caps the scaling: shorten it or split it"
                .to_string(),
        )
    } else {
        None
    }
}

/// Three significant digits, no exponent: `0.0491`, `0.000123`, `10.1`, `200`.
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

/// `100.4 ms`, `85 µs`: a mean time given in µs.
fn ms(us: f64) -> String {
    if us >= 1e3 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

/// The median (the mean of the middle two for an even count); `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests;
