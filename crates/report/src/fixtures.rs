//! Deterministic results for the tests: a busy run with errors, odd statuses and a tail, and an
//! empty one (nothing connected, nothing recorded), and a short find-max search. No network, no
//! clock, no randomness.

use loadbench_model::{
    ErrorKind, HostInfo, LoadModel, ResultKind, RunConfig, RunResult, SecondCounts, Series,
    SeriesPoint, Stats, SCHEMA_VERSION,
};
use loadbench_model::{
    FailReason, FindMaxResult, FindMaxStep, SearchParams, SearchPhase, Slo, SloCondition, SloOp,
    SloStat, SloValue, StopReason, Verdict,
};
use loadbench_model::{Histo, Latency};

/// A 10 s closed-model run: 35 120 responses, a long latency tail, a few errors.
pub fn busy() -> RunResult {
    let mut r = empty();
    r.stats = busy_stats();
    r.finalize();
    r
}

/// A run that measured nothing: every histogram and counter is empty.
pub fn empty() -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::Run,
        loadbench_version: "0.1.0".into(),
        host: HostInfo {
            hostname: "bench-1".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            kernel: "6.1.0".into(),
            cpu_model: "Test CPU".into(),
            cores: 2,
        },
        config: config(),
        started_at: "2026-11-22T10:00:00Z".into(),
        ended_at: "2026-11-22T10:00:12Z".into(),
        interrupted: false,
        summary: None,
        stats: Stats::default(),
    }
}

fn config() -> RunConfig {
    RunConfig {
        url: "http://127.0.0.1:8080/".into(),
        address: "127.0.0.1:8080".into(),
        method: "GET".into(),
        headers: vec![],
        body_bytes: 0,
        connections: 50,
        threads: 2,
        duration_ms: Some(10_000),
        requests: None,
        warmup_ms: 2_000,
        keepalive: true,
        timeout_ms: 2_000,
        connect_timeout_ms: 1_000,
        percentiles: crate::DEFAULT_PERCENTILES.to_vec(),
        load: LoadModel::Closed,
    }
}

fn busy_stats() -> Stats {
    let mut s = Stats {
        elapsed_us: 10_000_000,
        requests: 35_120,
        bytes_read: 35_120 * 130,
        bytes_written: 35_120 * 40,
        connections_opened: 52,
        abandoned: 4,
        latency: latency(35_120, 20_000, 5_000_000),
        connect: latency(52, 80_000, 200_000),
        first_byte: latency(35_120, 15_000, 4_000_000),
        series: series(),
        ..Stats::default()
    };
    s.errors.add(ErrorKind::ConnectRefused, 3);
    s.errors.add(ErrorKind::ReadTimeout, 2);
    s.status.add(200, 35_100);
    s.status.add(404, 15);
    s.status.add(503, 5);
    s
}

/// `n` samples of `floor + u³ · spread` ns with `u` from a fixed LCG: most near the floor, a tail.
fn latency(n: u64, floor_ns: u64, spread_ns: u64) -> Latency {
    let mut hist = Histo::new();
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..n {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        hist.record_ns(floor_ns + (u * u * u * spread_ns as f64) as u64);
    }
    Latency { hist }
}

fn series() -> Series {
    let per_second = [
        3_400, 3_550, 3_600, 3_480, 3_520, 3_530, 3_490, 3_510, 3_560, 3_480,
    ];
    let points = per_second.iter().enumerate().map(|(i, &requests)| {
        let counts = SecondCounts {
            requests,
            bytes_read: requests * 130,
            ..Default::default()
        };
        SeriesPoint::new(
            i as u32,
            counts,
            &latency(requests / 100, 20_000, 1_000_000).hist,
        )
    });
    Series(points.collect())
}
fn find_max_step(n: u32, rate: f64, verdict: Verdict, reason: Option<FailReason>) -> FindMaxStep {
    let run = busy();
    FindMaxStep {
        step: n,
        phase: if n <= 2 {
            SearchPhase::Exponential
        } else {
            SearchPhase::Bisect
        },
        target_rate: rate,
        achieved_rate: rate * 0.999,
        p50_us: Some(20.0),
        p99_us: Some(5_000.0),
        slo_values: vec![SloValue {
            condition: "p99.9<50ms".into(),
            value_us: Some(5_000.0),
            ok: verdict == Verdict::Pass,
        }],
        error_share: 0.0,
        generator_cpu_share: Some(0.25),
        verdict,
        reason,
        detail: if verdict == Verdict::Fail {
            "p99.9 5.00ms >= 50ms".into()
        } else {
            String::new()
        },
        run,
    }
}

/// A three-step find-max search over [`busy`] runs: pass at 100, fail (SLO) at 200, pass at
/// 150, stopped by the step limit.
pub fn find_max() -> FindMaxResult {
    FindMaxResult {
        schema_version: SCHEMA_VERSION,
        kind: loadbench_model::ResultKind::FindMax,
        loadbench_version: "0.1.0".into(),
        host: busy().host,
        url: "http://127.0.0.1:8080/".into(),
        slo: Slo {
            text: "p99.9<50ms".into(),
            conditions: vec![SloCondition {
                text: "p99.9<50ms".into(),
                stat: SloStat::Percentile { percentile: 99.9 },
                op: SloOp::Lt,
                limit_us: 50_000.0,
            }],
        },
        max_error_share: 0.001,
        search: SearchParams {
            start_rate: 100.0,
            max_rate: 1e6,
            precision: 0.05,
            max_steps: 20,
            step_duration_ms: 10_000,
            warmup_ms: 1_000,
            threads: 2,
        },
        started_at: "2026-11-22T10:00:00Z".into(),
        ended_at: "2026-11-22T10:01:00Z".into(),
        interrupted: false,
        steps: vec![
            find_max_step(1, 100.0, Verdict::Pass, None),
            find_max_step(2, 200.0, Verdict::Fail, Some(FailReason::Slo)),
            find_max_step(3, 150.0, Verdict::Pass, None),
        ],
        max_rate: Some(150.0),
        precision_reached: Some(50.0 / 150.0),
        stop_reason: Some(StopReason::MaxSteps),
    }
}
