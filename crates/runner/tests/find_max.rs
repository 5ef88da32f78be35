//! find-max as a library call against the reference backend set up with a known capacity.

use loadbench_model::{FailReason, FindMaxResult, StopReason, Verdict};
use loadbench_plan::LoadSpec;
use loadbench_runner::find_max::{search, FindMaxSpec};
use loadbench_runner::{Control, Quiet};
use loadbench_upstream::{parse_delay, Server, ServerConfig};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The backend serving at most `slots` requests at once, each taking `delay`; with
/// `keep_abandoned`, it finishes the requests of clients that have gone, like Tomcat or Go's
/// net/http, so an overload leaves a backlog behind.
fn backend(slots: usize, delay: &str, keep_abandoned: bool) -> Server {
    Server::start(ServerConfig {
        max_concurrency: Some(slots),
        delay: Some(parse_delay(delay).unwrap()),
        keep_abandoned,
        threads: 2,
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts")
}

fn spec(server: &Server, slo: &str) -> FindMaxSpec {
    let url = format!("http://{}/", server.local_addr());
    let base = LoadSpec {
        threads: Some(1),
        warmup: Duration::from_secs(1),
        ..LoadSpec::closed(&url, 1, Duration::from_secs(1))
    };
    FindMaxSpec::new(base, loadbench_plan::parse_slo(slo).unwrap())
}

fn run(spec: &FindMaxSpec) -> FindMaxResult {
    let stop = Arc::new(AtomicBool::new(false));
    search(
        spec,
        Control {
            stop: &stop,
            observer: &Quiet,
        },
    )
    .expect("the search runs")
}

fn steps(r: &FindMaxResult) -> String {
    let line = |s: &loadbench_model::FindMaxStep| {
        format!(
            "{} {:?} p99 {:?} {} {:?}",
            s.target_rate, s.verdict, s.p99_us, s.detail, s.recovery
        )
    };
    r.steps.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// A capacity far below what any machine can drive (2 slots × 20 ms = 100 req/s), so the
/// assertion is on the search, not on this machine's speed.
#[test]
fn finds_the_capacity_of_a_100_per_second_backend_in_process() {
    let server = backend(2, "20ms", false);
    let mut spec = FindMaxSpec {
        start_rate: 25.0,
        step_duration: Duration::from_secs(1),
        ..spec(&server, "p99<100ms")
    };
    spec.base.warmup = Duration::from_millis(500);
    let r = run(&spec);
    assert_eq!(r.search.warmup_ms, 500, "the caller's warm-up is kept");
    assert!(r.steps.iter().all(|s| s.run.config.warmup_ms == 500));
    let max = r.max_rate.expect("a rate held");
    assert!((85.0..=115.0).contains(&max), "max {max}\n{}", steps(&r));
    assert_eq!(r.stop_reason, Some(StopReason::Precision), "{}", steps(&r));
    assert!(
        r.baseline_us.is_some_and(|b| b >= 20_000.0),
        "{:?}",
        r.baseline_us
    );
    let sent: u64 = r.steps.iter().map(|s| s.run.stats.sent).sum();
    assert!(
        server.stats().route("/") >= sent,
        "the probes come on top of the steps"
    );
}

/// The case, scaled to a rate any loaded machine drives: a server of 200 req/s (2 at
/// once, 10 ms each) that keeps working on abandoned requests. Without waiting for recovery,
/// every step after the first overload measured the backlog and the search reported 80% of
/// the capacity (1,600 of 2,000 in the issue). With it, the search lands within 5% of 200 and
/// the steps after a failure record how long the target took to recover. (5% over the
/// capacity queues 30 requests in a 3 s step: a 150 ms wait, past the 100 ms SLO.) The
/// connection limit is far above the ~800 requests a 400/s step leaves in flight: a full pool
/// would hold sends back, which is the generator's failure and ends the search.
#[test]
fn finds_200_per_second_after_overloads_that_leave_a_backlog() {
    let server = backend(2, "10ms", true);
    let r = run(&FindMaxSpec {
        start_rate: 50.0,
        step_duration: Duration::from_secs(3),
        max_connections: 3_000,
        ..spec(&server, "p99<100ms")
    });
    let max = r.max_rate.expect("a rate held");
    assert!((190.0..=210.0).contains(&max), "max {max}\n{}", steps(&r));
    let failed: Vec<_> = r
        .steps
        .iter()
        .filter(|s| s.verdict == Verdict::Fail)
        .collect();
    assert!(!failed.is_empty(), "{}", steps(&r));
    for step in &failed[..failed.len() - 1] {
        let rec = step
            .recovery
            .as_ref()
            .expect("a failed step before another records its wait");
        assert!(rec.recovered && rec.probes >= 2, "{rec:?}");
    }
    let first = failed[0]
        .recovery
        .as_ref()
        .unwrap_or_else(|| panic!("the first failure is followed by a step\n{}", steps(&r)));
    assert!(first.waited_ms > 0, "{first:?}");
}

/// A target that never comes back (every answer after the first overload takes 2 s, far above
/// twice its idle latency) ends the search with that reason and no maximum.
#[test]
fn a_target_that_does_not_recover_ends_the_search_without_a_rate() {
    let server = backend(1, "50ms", true);
    let r = run(&FindMaxSpec {
        start_rate: 10.0,
        step_duration: Duration::from_millis(1500),
        recovery_timeout: Duration::from_millis(300),
        max_connections: 200,
        ..spec(&server, "p99<200ms")
    });
    assert_eq!(
        r.stop_reason,
        Some(StopReason::TargetNotRecovered),
        "{}",
        steps(&r)
    );
    assert_eq!(r.max_rate, None);
    let last = r.steps.last().unwrap();
    let rec = last
        .recovery
        .as_ref()
        .expect("the failed step records the wait");
    assert!(!rec.recovered && rec.waited_ms >= 300, "{rec:?}");
}

/// Past its capacity (2 slots × 20 ms = 100 req/s, far below what any machine can drive) the
/// target completes no more, however much is sent: steps at 2× and 5× the capacity record the
/// full rate as sent, a completed rate at the capacity (the plateau), and fail on throughput.
#[test]
fn a_step_past_the_capacity_completes_the_capacity_not_what_was_sent() {
    let server = backend(2, "20ms", false);
    let mut completed = Vec::new();
    for rate in [200.0, 500.0] {
        let mut spec = FindMaxSpec {
            start_rate: rate,
            max_steps: 1,
            step_duration: Duration::from_secs(2),
            max_connections: 1_500,
            ..spec(&server, "p99<100ms")
        };
        spec.base.warmup = Duration::ZERO;
        let r = run(&spec);
        let step = &r.steps[0];
        let stats = &step.run.stats;
        assert!(stats.requests < stats.sent, "{}", steps(&r));
        assert!(
            step.completed_rate < 0.6 * step.achieved_rate,
            "{}",
            steps(&r)
        );
        assert!(
            (60.0..=115.0).contains(&step.completed_rate),
            "completed {} at {rate}/s\n{}",
            step.completed_rate,
            steps(&r)
        );
        assert_eq!(step.reason, Some(FailReason::Throughput), "{}", steps(&r));
        assert!(step.detail.starts_with("completed "), "{}", step.detail);
        completed.push(step.completed_rate);
    }
    assert!(
        (completed[1] - completed[0]).abs() < 0.25 * completed[0],
        "2.5 times the rate sent, about the same completed: {completed:?}"
    );
}
