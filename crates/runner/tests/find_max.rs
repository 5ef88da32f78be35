//! find-max as a library call against the reference backend set up with a known capacity.

use loadbench_model::{FailReason, FindMaxResult, StopReason, Verdict};
use loadbench_plan::LoadSpec;
use loadbench_runner::find_max::{search, FindMaxSpec};
use loadbench_runner::{Control, Observer, Quiet};
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
/// assertion is on the search, not on this machine's speed. The backend enforces it, so no
/// rate above 110/s can hold a 100 ms p99 over a 1 s step on any machine; reaching 85/s needs
/// steps that keep the SLO, which a loaded machine's scheduling delays can break at any rate:
/// there the steps' own busy-host finding must say so.
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
    let busy = r.steps.iter().any(|s| s.run.why.busy_host().is_some());
    if let Some(max) = r.max_rate {
        assert!(max <= 115.0, "max {max}\n{}", steps(&r));
    }
    if !busy {
        let max = r.max_rate.expect("a rate held");
        assert!(max >= 85.0, "max {max}\n{}", steps(&r));
        assert_eq!(r.stop_reason, Some(StopReason::Precision), "{}", steps(&r));
    }
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
///
/// The capacity is enforced by construction, so no rate above 207/s can pass on any machine.
/// That the search also reaches 190/s needs the steps at and below the capacity to keep a
/// 100 ms p99, which a loaded machine's scheduling delays can break at any rate (even the first,
/// then no rate held): there the steps' own busy-host finding must say so.
#[test]
fn finds_200_per_second_after_overloads_that_leave_a_backlog() {
    let server = backend(2, "10ms", true);
    let r = run(&FindMaxSpec {
        start_rate: 50.0,
        step_duration: Duration::from_secs(3),
        max_connections: 3_000,
        ..spec(&server, "p99<100ms")
    });
    let busy = r.steps.iter().any(|s| s.run.why.busy_host().is_some());
    assert!(
        r.max_rate.is_some() || busy,
        "no rate held on a host not found busy\n{}",
        steps(&r)
    );
    let Some(max) = r.max_rate else {
        // On a busy host the generator may also fall behind its schedule first.
        assert!(
            matches!(
                r.stop_reason,
                Some(StopReason::NoRateHeld | StopReason::Generator)
            ),
            "{:?}\n{}",
            r.stop_reason,
            steps(&r)
        );
        return;
    };
    assert!(max <= 210.0, "max {max}\n{}", steps(&r));
    assert!(
        max >= 190.0 || busy,
        "max {max} on a host not found busy\n{}",
        steps(&r)
    );
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

/// A target that stops answering after the first step (the test takes its only slot with a
/// request that waits a minute, as a deadlocked or wedged server would) never comes back: the
/// next step fails, the wait for recovery ends at its bound, and the search ends with that
/// reason and no maximum. Every outcome holds by construction, however slow the machine: the
/// first step sends 4 requests a second to a 100-per-second backend under a 2 s SLO, and once
/// the slot is taken no answer can come before the minute is up.
#[test]
fn a_target_that_does_not_recover_ends_the_search_without_a_rate() {
    let server = backend(1, "10ms", false);
    let wedge = Wedge::after_step(1, &server);
    let spec = FindMaxSpec {
        start_rate: 4.0,
        step_duration: Duration::from_millis(1500),
        recovery_timeout: Duration::from_millis(300),
        max_connections: 200,
        ..spec(&server, "p99<2s")
    };
    let stop = Arc::new(AtomicBool::new(false));
    let r = search(
        &spec,
        Control {
            stop: &stop,
            observer: &wedge,
        },
    )
    .expect("the search runs");
    assert!(wedge.taken(), "{}", steps(&r));
    assert_eq!(r.steps.len(), 2, "{}", steps(&r));
    assert_eq!(r.steps[0].verdict, Verdict::Pass, "{}", steps(&r));
    assert_eq!(r.steps[1].verdict, Verdict::Fail, "{}", steps(&r));
    assert_eq!(
        r.stop_reason,
        Some(StopReason::TargetNotRecovered),
        "{}",
        steps(&r)
    );
    assert_eq!(
        r.max_rate, None,
        "a pass, but the search could not bound it"
    );
    assert_eq!(r.precision_reached, None);
    let last = r.steps.last().unwrap();
    let rec = last
        .recovery
        .as_ref()
        .expect("the failed step records the wait");
    assert!(
        !rec.recovered && rec.waited_ms >= 300 && rec.probes >= 1,
        "{rec:?}"
    );
    assert_eq!(rec.last_probe_us, None, "no probe was answered: {rec:?}");
}

/// An observer that, when step `after` has been judged, takes the backend's only slot with a
/// request that waits a minute and keeps its connection open (until dropped), so the backend
/// answers nothing else.
struct Wedge<'a> {
    after: u32,
    server: &'a Server,
    held: std::sync::Mutex<Option<std::net::TcpStream>>,
}

impl Wedge<'_> {
    fn after_step(after: u32, server: &Server) -> Wedge<'_> {
        Wedge {
            after,
            server,
            held: std::sync::Mutex::new(None),
        }
    }

    fn taken(&self) -> bool {
        self.held.lock().unwrap().is_some()
    }
}

impl Observer for Wedge<'_> {
    fn step_finished(&self, step: &loadbench_model::FindMaxStep) {
        use std::io::Write;
        if step.step != self.after {
            return;
        }
        let mut conn = std::net::TcpStream::connect(self.server.local_addr()).expect("connects");
        conn.write_all(b"GET /delay/60s HTTP/1.1\r\nHost: wedge\r\n\r\n")
            .expect("the request goes out");
        // Bounded: the slot is free (the step's connections are closed), so it is taken at
        // once on any machine; 30 s allows for a very slow one.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.server.stats().in_service == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the wedge never took the slot"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        *self.held.lock().unwrap() = Some(conn);
    }
}

/// Past its capacity (1 slot × 50 ms = 20 req/s, far below what any machine can drive) the
/// target completes no more, however much is sent: steps at 3× and 7.5× the capacity record
/// what was sent, a completed rate at most the capacity (the plateau), and fail on throughput.
/// The backend enforces its capacity by construction (one answer at a time, each at least
/// 50 ms after the one before), so the bound holds however slow the machine; a slow machine
/// only completes less, which is still a shortfall.
#[test]
fn a_step_past_the_capacity_completes_the_capacity_not_what_was_sent() {
    let server = backend(1, "50ms", false);
    for rate in [60.0, 150.0] {
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
        assert!(stats.requests > 0, "{}", steps(&r));
        assert!(stats.requests < stats.sent, "{}", steps(&r));
        // 20/s, plus the one answer that may end inside the window's last 50 ms.
        let capacity = 20.0 + 1.0 / stats.elapsed_secs();
        assert!(
            step.completed_rate <= capacity,
            "completed {} at {rate}/s, above the capacity\n{}",
            step.completed_rate,
            steps(&r)
        );
        assert!(
            step.completed_rate < 0.6 * step.achieved_rate,
            "{}",
            steps(&r)
        );
        assert_eq!(step.reason, Some(FailReason::Throughput), "{}", steps(&r));
        assert!(step.detail.starts_with("completed "), "{}", step.detail);
    }
}
