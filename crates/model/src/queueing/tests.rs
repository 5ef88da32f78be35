//! The queueing view on sweeps whose answer is known by construction: closed loads against
//! a fixed number of slots (Little's law exactly), linear targets, a saturated first level, a
//! noisy fast target and an open sweep, so each figure and finding is checked against the
//! pool, knee and fit that produced the data.

use super::*;
use crate::Histo;

/// A level of a closed sweep against `workers` slots of `service_us` each, with the
/// generator's connections as the only other queue: Little's law exactly.
fn pool_level(level: u32, connections: f64, workers: f64, service_us: f64) -> LevelPoint {
    let x = connections.min(workers) / (service_us / 1e6);
    let latency = connections / x * 1e6;
    let little = Little {
        requests_per_sec: x,
        mean_latency_us: latency,
        mean_service_us: latency,
    };
    LevelPoint::of(level, connections, &[little]).unwrap()
}

fn pool_sweep(levels: &[f64], workers: f64, service_us: f64) -> Vec<LevelPoint> {
    levels
        .iter()
        .enumerate()
        .map(|(i, &c)| pool_level(i as u32, c, workers, service_us))
        .collect()
}

fn closed_load(levels: &[f64]) -> BenchLoad {
    BenchLoad {
        name: "sweep".into(),
        targets: vec!["backend".into()],
        together: false,
        levels: levels
            .iter()
            .map(|&c| LoadShape::Closed {
                connections: c as u32,
            })
            .collect(),
        duration_ms: 1_000,
        warmup_ms: 0,
        method: "GET".into(),
        path: "/".into(),
        keepalive: true,
        insecure: false,
        http2_streams: None,
        pipeline: 1,
    }
}

const LEVELS: [f64; 5] = [5.0, 10.0, 20.0, 40.0, 80.0];

#[test]
fn littles_law_multiplies_throughput_by_the_mean_time() {
    assert!((concurrency(200.0, 100_000.0) - 20.0).abs() < 1e-12);
    let mut stats = Stats {
        elapsed_us: 2_000_000,
        requests: 400,
        ..Stats::default()
    };
    let mut latency = Histo::new();
    let mut service = Histo::new();
    for i in 0..400u64 {
        latency.record_ns(50_000_000 + (i % 2) * 100_000_000);
        service.record_ns(40_000_000);
    }
    stats.latency.hist = latency;
    stats.service.hist = service;
    let l = Little::of_stats(&stats, false).unwrap();
    assert!((l.requests_per_sec - 200.0).abs() < 1e-9);
    // Means of 50 and 150 ms, and 40 ms, within the histogram's precision.
    assert!((l.in_generator() - 20.0).abs() < 0.05, "{l:?}");
    assert!((l.in_target() - 8.0).abs() < 0.02, "{l:?}");
    assert_eq!(Little::of_stats(&Stats::default(), true), None);
    // The closed model counts what was sent: 440 sent in the window, 40 still in flight at
    // its end, so 220 answers a second came back, not the 200 sent and answered in it.
    stats.sent = 440;
    let closed = Little::of_stats(&stats, true).unwrap();
    assert!((closed.requests_per_sec - 220.0).abs() < 1e-9);
}

#[test]
fn a_run_without_service_times_uses_its_latency() {
    let mut stats = Stats {
        elapsed_us: 1_000_000,
        requests: 10,
        ..Stats::default()
    };
    (0..10).for_each(|_| stats.latency.hist.record_ns(10_000_000));
    let l = Little::of_stats(&stats, true).unwrap();
    assert_eq!(l.mean_service_us, l.mean_latency_us);
    assert!((l.in_target() - 0.1).abs() < 0.001, "{l:?}");
}

#[test]
fn level_points_are_medians_over_rounds() {
    let rounds = [190.0, 210.0, 200.0].map(|x| Little {
        requests_per_sec: x,
        mean_latency_us: 100_000.0,
        mean_service_us: 100_000.0,
    });
    let p = LevelPoint::of(2, 20.0, &rounds).unwrap();
    assert_eq!(p.requests_per_sec, 200.0);
    assert_eq!(p.rounds, 3);
    assert!((p.in_target - 20.0).abs() < 1e-9);
    assert_eq!(LevelPoint::of(0, 1.0, &[]), None);
    assert_eq!(median(&[1.0, 4.0, 2.0, 3.0]), Some(2.5));
}

#[test]
fn a_pool_of_twenty_has_its_knee_at_twenty_connections_and_two_hundred_per_second() {
    let points = pool_sweep(&LEVELS, 20.0, 100_000.0);
    let k = knee(&points).unwrap();
    assert_eq!((k.level, k.value), (2, 20.0));
    assert!((k.requests_per_sec - 200.0).abs() < 1e-9, "{k:?}");
    assert!(k.next_gain.abs() < 1e-9 && (k.next_latency_rise - 1.0).abs() < 1e-9);
    let p = worker_pool(&points, &k).unwrap();
    assert_eq!(p.workers, 20);
    assert!((p.estimate - 20.0).abs() < 1e-9);
    assert_eq!(p.low_load_value, 5.0);
}

#[test]
fn linear_scaling_has_no_knee_and_no_pool() {
    let points = pool_sweep(&LEVELS, 1000.0, 100_000.0);
    assert_eq!(knee(&points), None);
    let a = sweep(0, &closed_load(&LEVELS), "backend", points);
    assert_eq!(a.pool, None);
    // A fixed 100 ms wait: the wait sets the rate, and a fit that predicts no limit within
    // the levels is no evidence of one.
    let kinds: Vec<FindingKind> = a.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::LatencyBound], "{:#?}", a.findings);
    let f = &a.findings[0];
    assert_eq!(f.figures["mean_service_us"], 100_000.0);
    assert!(f.text.contains("the wait sets the rate"), "{}", f.text);
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .starts_with("more concurrency is the lever"));
    let note = a.usl_note.unwrap();
    assert!(note.starts_with("not enough evidence"), "{note}");
}

#[test]
fn a_fitted_limit_far_beyond_the_levels_is_not_enough_evidence() {
    let points = pool_sweep(&LEVELS, 1000.0, 100_000.0);
    let far = UslFit {
        sigma: 0.001,
        kappa: 0.0,
        lambda: 10.0,
        r_squared: 0.99,
        points: 5,
        peak_concurrency: None,
        peak_requests_per_sec: None,
    };
    let top = points
        .iter()
        .map(|p| p.requests_per_sec)
        .fold(0.0, f64::max);
    let err = within_reach(&far, &points, true).unwrap_err();
    assert!(
        err.starts_with("not enough evidence: the fitted throughput ceiling (10000)"),
        "{err}"
    );
    assert!(10_000.0 > FIT_REACH * top);
    let near = UslFit { sigma: 0.02, ..far };
    assert_eq!(within_reach(&near, &points, true), Ok(near));
}

#[test]
fn starved_levels_size_a_pool_the_completed_latency_hides() {
    // 8 slots of 50 ms swept from 8 to 128 connections: only served requests complete, so
    // their latency stays at 50 ms and throughput falls a little: no knee, yet a pool of 8.
    let levels = [8.0, 16.0, 32.0, 64.0, 128.0];
    let mut points: Vec<LevelPoint> = levels
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let x = 160.0 - 4.0 * i as f64;
            let little = Little {
                requests_per_sec: x,
                mean_latency_us: 50_000.0,
                mean_service_us: 50_000.0,
            };
            LevelPoint::of(i as u32, c, &[little]).unwrap()
        })
        .collect();
    for p in points.iter_mut().skip(1) {
        p.starved = p.value - 8.0;
        p.served = 8.0;
    }
    assert_eq!(knee(&points), None);
    let a = sweep(0, &closed_load(&levels), "backend", points);
    let pool = a.pool.expect("a pool from the starved levels");
    assert_eq!((pool.workers, pool.starved_levels), (8, 4));
    let f = &a.findings[0];
    assert_eq!(f.kind, FindingKind::WorkerPool);
    assert!(f.text.contains("a pool of about 8"), "{}", f.text);
    assert!((f.figures["estimate"] - 7.6).abs() < 0.5, "{:?}", f.figures);
    // No contention or coherency read into the limit's curve.
    assert!(a
        .findings
        .iter()
        .all(|f| f.kind != FindingKind::Scalability));
    assert!(a.usl_note.unwrap().starts_with("not enough evidence"));
}

#[test]
fn no_pool_when_the_lowest_level_was_already_saturated_or_throughput_falls() {
    let saturated = pool_sweep(&LEVELS, 4.0, 100_000.0);
    let k = knee(&saturated).unwrap();
    assert_eq!(k.level, 0);
    assert_eq!(worker_pool(&saturated, &k), None);
    let mut falling = pool_sweep(&LEVELS, 20.0, 100_000.0);
    falling[4].requests_per_sec = 120.0;
    let k = knee(&falling).unwrap();
    assert_eq!(worker_pool(&falling, &k), None, "a collapse is not a pool");
}

#[test]
fn no_pool_when_the_lowest_level_waited_in_line() {
    // One slot of 7 ms (143 req/s) swept from 5 connections: c=5 already queues (39 ms), and
    // throughput grows 12% more from a noisy first level; 143 × 39 ms would claim 6 workers.
    let mut points = pool_sweep(&[5.0, 10.0, 15.0, 20.0], 1.0, 7_000.0);
    points[0].requests_per_sec = 127.0;
    points[0].mean_service_us = 39_000.0;
    let k = knee(&points).unwrap();
    assert_eq!(k.value, 5.0, "doubling the load for 12% is a stall: {k:?}");
    assert_eq!(worker_pool(&points, &k), None);
    // Even with the knee one level up, the first step did not scale.
    let later = Knee { level: 1, ..k };
    assert_eq!(worker_pool(&points, &later), None);
}

#[test]
fn a_big_first_step_may_fill_the_pool_on_the_way() {
    // 1 → 5 connections against 2 slots: throughput doubles, not fivefold, yet c=1 was alone.
    let points = pool_sweep(&[1.0, 5.0, 10.0, 20.0], 2.0, 10_000.0);
    let k = knee(&points).unwrap();
    assert_eq!(k.value, 5.0);
    assert_eq!(worker_pool(&points, &k).unwrap().workers, 2);
}

#[test]
fn a_poor_fit_is_no_finding_and_says_why() {
    let mut points = pool_sweep(&[5.0, 10.0, 15.0, 20.0], 1000.0, 1_000.0);
    for (p, x) in points.iter_mut().zip([5738.0, 11301.0, 21181.0, 10850.0]) {
        p.requests_per_sec = x;
    }
    let a = sweep(0, &closed_load(&[5.0, 10.0, 15.0, 20.0]), "backend", points);
    assert_eq!(a.usl, None);
    let note = a.usl_note.unwrap();
    assert!(
        note.starts_with("not enough evidence: the fit was poor (R² "),
        "{note}"
    );
    assert!(a
        .findings
        .iter()
        .all(|f| f.kind != FindingKind::Scalability));
}

#[test]
fn a_fine_sweep_of_a_linear_target_is_not_a_knee() {
    // 100 → 105 connections: a linear target gains 5%, latency stays put.
    let points = pool_sweep(&[100.0, 105.0, 110.0], 1000.0, 1_000.0);
    assert_eq!(knee(&points), None);
}

#[test]
fn the_sweep_of_a_pool_gives_its_three_findings_with_their_figures() {
    let a = sweep(
        0,
        &closed_load(&LEVELS),
        "backend",
        pool_sweep(&LEVELS, 20.0, 100_000.0),
    );
    let kinds: Vec<FindingKind> = a.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            FindingKind::WorkerPool,
            FindingKind::Knee,
            FindingKind::Scalability
        ]
    );
    let pool = &a.findings[0];
    assert!(
        pool.text.starts_with("backend behaves like a pool of about 20 workers: throughput levelled off at 200 req/s while a request took 100.0 ms at c=5"),
        "{}",
        pool.text
    );
    assert_eq!(pool.figures["workers"], 20.0);
    assert!(pool.fix.as_deref().unwrap().contains("about 20"));
    let knee = &a.findings[1];
    assert!(
        knee.text
            .contains("stopped growing at c=20 (200 req/s): at c=40 it changed +0.0% while mean latency rose 100%"),
        "{}",
        knee.text
    );
    let usl = a.usl.unwrap();
    assert_eq!(usl.points, 5);
    assert!(a.findings[2]
        .text
        .contains(&format!("σ = {}", sig3(usl.sigma))));
    assert_eq!(a.findings[2].figures["r_squared"], usl.r_squared);
    // 20 slots level off, they do not peak: the fit defers to the pool.
    assert!(a.findings[2]
        .fix
        .as_deref()
        .unwrap()
        .contains("about 20 workers"));
}

#[test]
fn three_levels_give_a_knee_but_no_fit_and_say_why() {
    let levels = [5.0, 20.0, 80.0];
    let a = sweep(
        0,
        &closed_load(&levels),
        "backend",
        pool_sweep(&levels, 20.0, 100_000.0),
    );
    assert!(a.knee.is_some());
    assert_eq!(a.usl, None);
    assert!(a.usl_note.as_deref().unwrap().contains("needs 4"), "{a:?}");
}

#[test]
fn an_open_sweep_has_a_knee_but_no_fit_and_no_pool() {
    let mut load = closed_load(&[]);
    load.levels = [50.0, 100.0, 250.0, 400.0, 600.0]
        .iter()
        .map(|&rate| LoadShape::constant(rate, 1_000, 100))
        .collect();
    let points: Vec<LevelPoint> = load
        .levels
        .iter()
        .enumerate()
        .map(|(i, level)| {
            let rate = level.amount().unwrap();
            let x = rate.min(250.0);
            let service = if rate <= 250.0 { 20_000.0 } else { 200_000.0 };
            let l = Little {
                requests_per_sec: x,
                mean_latency_us: service,
                mean_service_us: service,
            };
            LevelPoint::of(i as u32, rate, &[l]).unwrap()
        })
        .collect();
    let a = sweep(0, &load, "backend", points);
    assert_eq!(level_label(a.closed, a.knee.unwrap().value), "250/s");
    assert_eq!((a.pool, a.usl), (None, None));
    assert_eq!(a.usl_note.as_deref(), Some(OPEN_NO_FIT));
    let kinds: Vec<FindingKind> = a.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::Knee]);
}

#[test]
fn three_significant_digits_without_exponent() {
    assert_eq!(sig3(0.049123), "0.0491");
    assert_eq!(sig3(0.000_123_4), "0.000123");
    assert_eq!(sig3(10.06), "10.1");
    assert_eq!(sig3(200.4), "200");
    assert_eq!(sig3(0.0), "0");
}
