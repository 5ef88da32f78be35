//! Deterministic results for the tests: a busy run with errors, odd statuses and a tail, and an
//! empty one (nothing connected, nothing recorded), and a short find-max search. No network, no
//! clock, no randomness.

use loadbench_model::{
    ErrorKind, HostInfo, LoadShape, ResultKind, RunConfig, RunResult, SecondCounts, Series,
    SeriesPoint, Stats, SCHEMA_VERSION,
};
use loadbench_model::{
    FailReason, FindMaxResult, FindMaxStep, SearchParams, SearchPhase, Slo, SloCondition, SloOp,
    SloStat, SloValue, StopReason, Verdict,
};
use loadbench_model::{Histo, Latency};

/// A 10 s closed-model run: 35 120 responses, a long latency tail, a few errors.
pub(crate) fn busy() -> RunResult {
    let mut r = empty();
    r.stats = busy_stats();
    r.finalize();
    r
}

/// The busy run as a WebSocket run (`ws://`): 4 connections upgraded, 12 pings answered,
/// and 5 close frames from the server, 3 with code 1000, 2 with the application's 4000.
pub(crate) fn websocket() -> RunResult {
    let mut r = busy();
    r.config.url = "ws://127.0.0.1:8080/ws".into();
    r.config.body_bytes = 5;
    let ws = &mut r.stats.ws;
    ws.upgrades = 4;
    ws.pings = 12;
    ws.close_codes.insert(1000, 3);
    ws.close_codes.insert(4000, 2);
    r
}

/// The busy run as a gRPC run (`grpc://`), calls by `grpc-status`: 900 `OK`, 60
/// `NOT_FOUND`, 30 `DEADLINE_EXCEEDED`, 4 `OTHER` and 6 answers without one; 4500 response
/// messages (a server-streaming run).
pub(crate) fn grpc() -> RunResult {
    let mut r = busy();
    r.config.url = "grpc://127.0.0.1:50051/grpc.health.v1.Health/Check".into();
    let mut codes = [0u64; 18];
    codes[0] = 900;
    codes[5] = 60;
    codes[4] = 30;
    codes[17] = 4;
    r.stats.grpc = loadbench_model::GrpcStats::from_tally(&codes, 6);
    r.stats.grpc.messages = 4500;
    r.finalize();
    r
}

/// The WebSocket run with `--ws-idle 50`: 48 opened, 2 refused; of the opened, 1 closed by
/// the server with 1001, 47 held to the end.
pub(crate) fn websocket_idle() -> RunResult {
    let mut r = websocket();
    let idle = &mut r.stats.ws.idle;
    idle.requested = 50;
    idle.opened = 48;
    idle.failed
        .insert(loadbench_model::ErrorKind::ConnectRefused, 2);
    idle.closed_early.insert(1001, 1);
    idle.held = 47;
    r
}

/// The WebSocket run with `--ws-match id`: 40 messages that were not answers (1200 bytes),
/// one of them over 64 KiB.
pub(crate) fn websocket_matched() -> RunResult {
    let mut r = websocket();
    r.config.ws_match = Some("id".into());
    let ws = &mut r.stats.ws;
    ws.unmatched = 40;
    ws.unmatched_bytes = 1200;
    ws.unmatched_too_large = 1;
    r
}

/// A run that measured nothing: every histogram and counter is empty.
pub(crate) fn empty() -> RunResult {
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
            host_cores: 2,
        },
        config: config(),
        started_at: "2026-11-22T10:00:00Z".into(),
        ended_at: "2026-11-22T10:00:12Z".into(),
        interrupted: false,
        shards: None,
        summary: None,
        stats: Stats::default(),
        evidence: None,
        why: Default::default(),
        gates: None,
        remote_write: None,
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
        send_window_us: None,
        duration_ms: Some(10_000),
        requests: None,
        warmup_ms: 2_000,
        keepalive: true,
        timeout_ms: 2_000,
        connect_timeout_ms: 1_000,
        source_addrs: vec![],
        tls: None,
        unix_socket: None,
        connect_to: vec![],
        http2_streams: None,
        pipeline: 1,
        ws_match: None,
        percentiles: crate::DEFAULT_PERCENTILES.to_vec(),
        load: LoadShape::Closed { connections: 50 },
        values: None,
    }
}

fn busy_stats() -> Stats {
    let mut s = Stats {
        elapsed_us: 10_000_000,
        requests: 35_120,
        bytes_read: 35_120 * 130,
        bytes_written: 35_120 * 40,
        connections_opened: 52,
        keepalive_requests: 35_120 - 52,
        body: loadbench_model::BodySizes {
            total: 35_120 * 12 + 8,
            min: 12,
            max: 20,
            responses: 35_120,
        },
        abandoned: 4,
        latency: latency(35_120, 20_000, 5_000_000),
        connect: latency(52, 80_000, 200_000),
        first_byte: latency(35_120, 15_000, 4_000_000),
        phases: loadbench_model::RequestPhases {
            write: latency(35_120, 3_000, 20_000),
            wait: latency(35_120, 12_000, 3_900_000),
            read: latency(35_120, 1_000, 900_000),
        },
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
        // A target of 160 req/s: what it completes levels off there.
        completed_rate: (rate * 0.998).min(160.0),
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
        recovery: None,
        run,
    }
}

/// A three-step find-max search over [`busy`] runs: pass at 100, fail (SLO) at 200, pass at
/// 150, stopped by the step limit.
pub(crate) fn find_max() -> FindMaxResult {
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
            recovery_timeout_ms: 60_000,
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
        baseline_us: None,
        no_rate: None,
        remote_write: None,
    }
}

// ---------------------------------------------------------------- bench

use loadbench_model::resources::{Bottleneck, Mark, Sample, Samples, TargetSample, Window};
use loadbench_model::{
    AppliedLimits, BenchLoad, BenchResult, BenchRound, BenchTarget, ScenarioInfo,
};

const BENCH_TARGETS: [&str; 3] = ["direct", "nginx", "haproxy"];
const BENCH_LEVELS: [u32; 2] = [50, 200];
const STEP_MS: u64 = 12_000;
const WINDOW_MS: u64 = 10_000;

/// Per target (index) and level: req/s of rounds 0, 1, 2. haproxy's second round at c=200 was
/// generator-bound (the generator saturated its one core), so it is low and the cell is noisy.
fn bench_rps(target: usize, level: usize) -> [f64; 3] {
    match (target, level) {
        (0, 0) => [40_120.0, 40_480.0, 39_870.0],
        (0, _) => [43_050.0, 43_610.0, 42_740.0],
        (1, 0) => [24_210.0, 24_530.0, 24_090.0],
        (1, _) => [25_880.0, 26_240.0, 25_610.0],
        (2, 0) => [27_940.0, 28_310.0, 27_720.0],
        _ => [30_150.0, 21_400.0, 29_820.0],
    }
}

fn bench_generator_bound(target: usize, level: usize, round: usize) -> bool {
    (target, level, round) == (2, 1, 1)
}

/// A bench of three targets (the reference backend and two proxies in front of it) under a
/// closed load at c=50 and c=200, three rounds each, with the resource series of the whole run.
/// `r` with every round that `pick` chooses sent `sent` requests and never answered one,
/// its cells recomputed: a cell that measured nothing.
pub(crate) fn never_answered(
    mut r: BenchResult,
    pick: impl Fn(&loadbench_model::BenchRound) -> bool,
    sent: u64,
) -> BenchResult {
    for round in r.rounds.iter_mut().filter(|x| pick(x)) {
        let run = round.result.as_mut().expect("a finished round");
        run.stats = loadbench_model::Stats {
            elapsed_us: run.stats.elapsed_us,
            sent,
            abandoned: sent,
            ..Default::default()
        };
        run.finalize();
    }
    r.recompute();
    r
}

pub(crate) fn bench() -> BenchResult {
    let mut b = BenchResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::Bench,
        loadbench_version: "0.1.0".into(),
        host: busy().host,
        scenario: bench_scenario(),
        run_dir: "results/20261122T100000Z-proxies".into(),
        started_at: "2026-11-22T10:00:00Z".into(),
        ended_at: "2026-11-22T10:03:36Z".into(),
        interrupted: false,
        steps_planned: 18,
        steps_done: 18,
        targets: BENCH_TARGETS.iter().map(|t| bench_target(t)).collect(),
        loads: vec![bench_load()],
        rounds: Vec::new(),
        cells: Vec::new(),
        relative: Vec::new(),
        queueing: Vec::new(),
        resources: bench_samples(),
        warnings: vec![
            "haproxy: memory limit 256MiB not enforced: the cgroup v2 memory controller is not delegated to this user".into(),
        ],
        gates: None,
        remote_write: None,
    };
    b.rounds = bench_rounds(&b.resources);
    b.recompute();
    b
}

fn bench_scenario() -> ScenarioInfo {
    ScenarioInfo {
        name: "proxies".into(),
        description: Some("the reference backend, direct and behind nginx and haproxy".into()),
        file: "scenarios/proxies.toml".into(),
        rounds: 3,
        cooldown_ms: 2_000,
        generator_cpuset: Some(vec![0]),
        generator_threads: 1,
        generator_cores: 1.0,
    }
}

fn bench_target(name: &str) -> BenchTarget {
    let (kind, command, port, proxy_to) = match name {
        "direct" => (
            "upstream",
            "loadbench serve --port 18080".to_string(),
            18080,
            None,
        ),
        "nginx" => (
            "command",
            "nginx -c results/20261122T100000Z-proxies/nginx.conf -g 'daemon off;'".to_string(),
            18081,
            Some("direct".to_string()),
        ),
        _ => (
            "command",
            "haproxy -f results/20261122T100000Z-proxies/haproxy.cfg".to_string(),
            18082,
            Some("direct".to_string()),
        ),
    };
    BenchTarget {
        name: name.into(),
        kind: kind.into(),
        command,
        url: format!("http://127.0.0.1:{port}"),
        port,
        proxy_to,
        limits: AppliedLimits {
            cpuset: Some(vec![1]),
            cpu_quota_cores: Some(1.0),
            memory_bytes: (name != "haproxy").then_some(256 << 20),
            cgroup: Some(format!("/sys/fs/cgroup/loadbench/{name}")),
            cores: 1.0,
        },
        ready_ms: 40 + port as u64 % 10 * 15,
        stdout_log: format!("{name}.stdout.log"),
        stderr_log: format!("{name}.stderr.log"),
        configs: if kind == "command" {
            vec![format!("{name}.conf")]
        } else {
            vec![]
        },
        profile: None,
    }
}

fn bench_load() -> BenchLoad {
    BenchLoad {
        name: "closed".into(),
        targets: BENCH_TARGETS.map(String::from).to_vec(),
        together: false,
        levels: BENCH_LEVELS
            .map(|connections| LoadShape::Closed { connections })
            .to_vec(),
        duration_ms: WINDOW_MS,
        warmup_ms: 2_000,
        method: "GET".into(),
        path: "/plaintext".into(),
        keepalive: true,
        insecure: false,
        http2_streams: None,
        pipeline: 1,
    }
}

/// Steps in the harness's order: per level, per round, every target.
fn bench_steps() -> Vec<(u32, usize, usize, usize)> {
    let mut steps = Vec::new();
    for level in 0..BENCH_LEVELS.len() {
        for round in 0..3 {
            for target in 0..BENCH_TARGETS.len() {
                steps.push((steps.len() as u32 + 1, target, level, round));
            }
        }
    }
    steps
}

fn step_window(step: u32) -> Window {
    let from_ms = u64::from(step - 1) * STEP_MS + 1_000;
    Window {
        from_ms,
        to_ms: from_ms + WINDOW_MS,
    }
}

/// CPU of each target and of the generator during a step, in cores.
fn step_cpu(target: usize, level: usize, round: usize) -> (f64, f64) {
    if bench_generator_bound(target, level, round) {
        (0.62, 0.97)
    } else if level == 1 {
        (0.95, 0.58 + 0.04 * target as f64)
    } else {
        (0.71 + 0.03 * target as f64, 0.47)
    }
}

fn bench_samples() -> Samples {
    let steps = bench_steps();
    let end = u64::from(steps.len() as u32) * STEP_MS;
    let mut marks = vec![Mark {
        label: "ready".into(),
        t_ms: 500,
    }];
    for &(step, ..) in &steps {
        let w = step_window(step);
        marks.push(Mark {
            label: format!("step:{step}:start"),
            t_ms: w.from_ms,
        });
        marks.push(Mark {
            label: format!("step:{step}:end"),
            t_ms: w.to_ms,
        });
    }
    let samples = (1..=end / 1_000)
        .map(|s| bench_sample(s * 1_000, &steps))
        .collect();
    Samples {
        interval_ms: 1_000,
        samples,
        marks,
    }
}

fn bench_sample(t_ms: u64, steps: &[(u32, usize, usize, usize)]) -> Sample {
    let active = steps.iter().find(|&&(step, ..)| {
        let w = step_window(step);
        t_ms > w.from_ms && t_ms <= w.to_ms
    });
    let wobble = ((t_ms / 1_000) % 5) as f64 * 0.004;
    let targets = BENCH_TARGETS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let busy = active.filter(|a| a.1 == i);
            let cpu = round3(busy.map_or(0.01, |a| step_cpu(a.1, a.2, a.3).0 - wobble));
            let base: u64 = [22, 9, 14][i] << 20;
            let growth = (t_ms / 1_000) * ([40, 12, 20][i] << 10);
            let load = busy.map_or(0, |a| ([6, 3, 4][i] << 20) * (a.2 as u64 + 1));
            TargetSample {
                name: (*name).into(),
                cpu_cores: cpu,
                rss_bytes: base + growth + load,
                processes: [1, 3, 2][i],
            }
        })
        .collect();
    let generator = round3(active.map_or(0.02, |a| step_cpu(a.1, a.2, a.3).1 + wobble));
    let target_busy: f64 = active.map_or(0.0, |a| step_cpu(a.1, a.2, a.3).0);
    Sample {
        t_ms,
        targets,
        generator_cpu_cores: generator,
        core_busy: vec![generator.min(1.0), round3(target_busy + 0.01).min(1.0)],
        irq_cores: 0.0,
    }
}

/// Short decimals, so that the saved fixture reads back bit for bit.
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn bench_rounds(samples: &Samples) -> Vec<BenchRound> {
    bench_steps()
        .into_iter()
        .map(|(step, target, level, round)| {
            let window = step_window(step);
            let name = BENCH_TARGETS[target];
            let rps = bench_rps(target, level)[round];
            let mut run = bench_run(name, target, level, rps);
            run.started_at = format!("2026-11-22T10:{:02}:{:02}Z", step * 12 / 60, step * 12 % 60);
            let generator: Vec<f64> = samples
                .samples
                .iter()
                .filter(|s| s.t_ms > window.from_ms && s.t_ms <= window.to_ms)
                .map(|s| s.generator_cpu_cores)
                .collect();
            BenchRound {
                step,
                load: 0,
                level: level as u32,
                round: round as u32,
                target: name.into(),
                combined: false,
                window,
                result: Some(run),
                find_max: None,
                resources: samples.summary_in(name, window).ok().map(|mut s| {
                    s.cpu_mean_cores = round3(s.cpu_mean_cores);
                    s
                }),
                generator_cpu_mean_cores: round3(
                    generator.iter().sum::<f64>() / generator.len() as f64,
                ),
                bottleneck: samples.bottleneck(1.0, 1.0, window),
                evidence: None,
                why: Default::default(),
                error: None,
            }
        })
        .collect()
}

/// One round's run: `rps` over 10 s, latency about `connections / rps` with a tail.
fn bench_run(name: &str, target: usize, level: usize, rps: f64) -> RunResult {
    let mut r = empty();
    let port = 18080 + target;
    r.config.url = format!("http://127.0.0.1:{port}/plaintext");
    r.config.address = format!("127.0.0.1:{port}");
    r.config.connections = BENCH_LEVELS[level];
    r.config.load = LoadShape::Closed {
        connections: BENCH_LEVELS[level],
    };
    let connections = f64::from(BENCH_LEVELS[level]);
    r.config.threads = 1;
    let mean_ns = connections / rps * 1e9;
    let requests = (rps * 10.0).round() as u64;
    let per_second = requests / 10;
    let points = (0..10u32).map(|i| {
        let n = per_second + u64::from(i % 3) * 40 - 40;
        let h = latency(200, (mean_ns * 0.6) as u64, (mean_ns * 2.0) as u64).hist;
        let counts = SecondCounts {
            requests: n,
            sent: n,
            bytes_read: n * 130,
            ..Default::default()
        };
        SeriesPoint::new(i, counts, &h)
    });
    r.stats = Stats {
        elapsed_us: 10_000_000,
        requests,
        sent: requests,
        bytes_read: requests * 130,
        bytes_written: requests * 40,
        connections_opened: connections as u64,
        latency: latency(4_000, (mean_ns * 0.6) as u64, (mean_ns * 2.0) as u64),
        series: Series(points.collect()),
        ..Stats::default()
    };
    if name == "nginx" && level == 1 {
        r.stats.status.add(200, requests - 12);
        r.stats.status.add(502, 12);
        r.stats.errors.add(ErrorKind::ReadTimeout, 3);
    } else {
        r.stats.status.add(200, requests);
    }
    r.finalize();
    r
}

/// [`bench`] after a change that made nginx 20% slower and 400 µs later at every level.
pub(crate) fn bench_regressed() -> BenchResult {
    let mut r = bench();
    for round in r.rounds.iter_mut().filter(|x| x.target == "nginx") {
        let Some(run) = round.result.as_mut() else {
            continue;
        };
        run.stats.requests = (run.stats.requests as f64 * 0.8) as u64;
        let mut h = Histo::new();
        for (v, n) in run
            .stats
            .latency
            .hist
            .recorded_buckets()
            .collect::<Vec<_>>()
        {
            (0..n).for_each(|_| h.record_ns(v + 400_000));
        }
        run.stats.latency.hist = h;
        run.finalize();
    }
    r.recompute();
    r
}

const SWEEP_LEVELS: [u32; 5] = [5, 10, 20, 40, 80];

/// A concurrency sweep of the reference backend with 20 slots of 100 ms (`max_concurrency =
/// 20`, `delay = "100ms"`), one round per level: 50, 100, then 200 req/s from c=20 on, each
/// request's latency `connections / req/s` (Little's law, the closed model).
pub(crate) fn bench_sweep() -> BenchResult {
    let mut b = bench();
    b.scenario.name = "pool".into();
    b.scenario.rounds = 1;
    b.targets = vec![BenchTarget {
        name: "backend".into(),
        ..bench_target("direct")
    }];
    b.loads = vec![BenchLoad {
        name: "sweep".into(),
        targets: vec!["backend".into()],
        levels: SWEEP_LEVELS
            .map(|connections| LoadShape::Closed { connections })
            .to_vec(),
        ..bench_load()
    }];
    b.rounds = (0..SWEEP_LEVELS.len()).map(sweep_round).collect();
    b.steps_planned = b.rounds.len() as u32;
    b.steps_done = b.steps_planned;
    b.resources = Samples::default();
    b.warnings.clear();
    b.recompute();
    b
}

fn sweep_round(level: usize) -> BenchRound {
    let step = level as u32 + 1;
    BenchRound {
        step,
        load: 0,
        level: level as u32,
        round: 0,
        target: "backend".into(),
        combined: false,
        window: step_window(step),
        result: Some(sweep_run(SWEEP_LEVELS[level])),
        find_max: None,
        resources: None,
        generator_cpu_mean_cores: 0.05,
        bottleneck: Bottleneck::Neither,
        error: None,
        evidence: None,
        why: Default::default(),
    }
}

fn sweep_run(level: u32) -> RunResult {
    let connections = f64::from(level);
    let rps = connections.min(20.0) * 10.0;
    let requests = (rps * 10.0) as u64;
    let latency_ns = (connections / rps * 1e9) as u64;
    let mut r = empty();
    r.config.connections = level;
    r.config.load = LoadShape::Closed { connections: level };
    r.stats = Stats {
        elapsed_us: 10_000_000,
        requests,
        sent: requests,
        latency: latency(requests, latency_ns, 0),
        service: latency(requests, latency_ns, 0),
        ..Stats::default()
    };
    r.stats.status.add(200, requests);
    r.finalize();
    r
}
