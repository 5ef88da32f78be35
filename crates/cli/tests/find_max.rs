//! `loadbench find-max` end to end: the real binary against the reference backend limited to a
//! known capacity (4 requests at once, 10 ms each: 400 req/s), input mistakes, a target that
//! never meets the SLO, and Ctrl-C keeping the finished steps.

use crate::support::{bin, tempdir, text};
use loadbench_model::{FailReason, FindMaxResult, SearchPhase, StopReason, Verdict};
use loadbench_upstream::{parse_delay, Server, ServerConfig};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// The reference backend serving at most `slots` requests at once, each taking `delay`.
fn limited_backend(slots: usize, delay: &str) -> Server {
    Server::start(ServerConfig {
        max_concurrency: Some(slots),
        delay: Some(parse_delay(delay).unwrap()),
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts")
}

fn url(server: &Server) -> String {
    format!("http://{}/", server.local_addr())
}

/// Runs `loadbench find-max URL ARGS --save FILE -q`, returning the output and the saved result.
pub(crate) fn find_max(url: &str, args: &[&str], save: &Path) -> (Output, Option<FindMaxResult>) {
    let out = bin()
        .args(["find-max", url])
        .args(args)
        .arg("--save")
        .arg(save)
        .arg("-q")
        .output()
        .expect("the loadbench binary runs");
    let saved = std::fs::read_to_string(save)
        .ok()
        .map(|t| FindMaxResult::from_json(&t).expect("saved find-max result reads back"));
    (out, saved)
}

const SHORT_STEPS: [&str; 10] = [
    "--step-duration",
    "1s",
    "--warmup",
    "300ms",
    "--start-rate",
    "50",
    "--precision",
    "5%",
    "-t",
    "1",
];

/// On a quiet host the search finds the capacity to within 15%. A busy host stalls the
/// generator and the backend alike, and a stall of a few tens of milliseconds breaks
/// `p99<100ms` at any rate: then the search may settle below the capacity (or hold no rate),
/// but only when every step that failed below the capacity recorded the busy host (its
/// busy-host finding, the advice to rerun on a quiet host), and it never reports more than the
/// backend can serve.
#[test]
fn finds_the_capacity_of_a_backend_limited_to_400_per_second() {
    let _machine = crate::support::measuring();
    let server = limited_backend(4, "10ms");
    let save = tempdir("find-max").join("find-max.json");
    let mut args = SHORT_STEPS.to_vec();
    args.extend(["--slo", "p99<100ms", "-o", "json"]);
    let (out, saved) = find_max(&url(&server), &args, &save);
    let r = saved.expect("the result was saved");
    let stdout = FindMaxResult::from_json(&text(&out).0).expect("-o json prints the result");
    assert_eq!(stdout, r, "stdout and the saved file hold the same result");
    assert!(!r.interrupted);
    check_steps(&r);
    // The steps that failed at a rate the backend serves with room to spare: only a busy
    // host, recorded by the step itself, may fail them.
    let below_capacity: Vec<_> = r
        .steps
        .iter()
        .filter(|s| s.verdict == Verdict::Fail && s.target_rate < 340.0)
        .collect();
    for s in &below_capacity {
        assert!(
            s.run.why.busy_host().is_some(),
            "step {} at {} req/s failed on a host it did not find busy: {:#?}",
            s.step,
            s.target_rate,
            summary(&r)
        );
        assert_ne!(s.reason, Some(FailReason::Errors), "{}", s.detail);
    }
    let Some(max) = r.max_rate else {
        assert!(!below_capacity.is_empty(), "{:#?}", summary(&r));
        assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
        assert_eq!(r.stop_reason, Some(StopReason::NoRateHeld));
        assert!(text(&out).0.contains("no rate held"));
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    eprintln!("find-max measured {max} req/s against a capacity of 400");
    assert!(max <= 460.0, "max {max}: {:#?}", summary(&r));
    assert!(
        max >= 340.0 || !below_capacity.is_empty(),
        "max {max}: {:#?}",
        summary(&r)
    );
    assert_eq!(r.stop_reason, Some(StopReason::Precision));
    assert!(r.precision_reached.unwrap() < 0.05);
    assert!(r.steps.iter().any(|s| s.phase == SearchPhase::Bisect));
    if below_capacity.is_empty() {
        let rates: Vec<f64> = r.steps.iter().map(|s| s.target_rate).collect();
        assert_eq!(&rates[..4], &[50.0, 100.0, 200.0, 400.0], "{rates:?}");
    }
}

/// Every step is in the file, numbered, with its own full run at its own rate; the rate
/// doubles from 50 req/s until a step fails, then bisects.
fn check_steps(r: &FindMaxResult) {
    let first_fail = r
        .steps
        .iter()
        .position(|s| s.verdict != Verdict::Pass)
        .unwrap_or(r.steps.len());
    for (i, s) in r.steps.iter().enumerate() {
        assert_eq!(s.step as usize, i + 1);
        if i <= first_fail {
            assert_eq!(s.phase, SearchPhase::Exponential, "{s:#?}");
            assert_eq!(s.target_rate, 50.0 * f64::from(1u32 << i), "{s:#?}");
        } else {
            assert_eq!(s.phase, SearchPhase::Bisect, "{s:#?}");
        }
        assert_ne!(s.verdict, Verdict::Interrupted);
        assert_eq!(s.slo_values.len(), 1);
        assert_eq!(s.slo_values[0].ok, s.verdict == Verdict::Pass, "{s:#?}");
        assert!(s.run.stats.sent > 0);
        let measured = s.run.stats.elapsed_secs();
        assert!((0.95..1.3).contains(&measured), "measured {measured} s");
        let offered = s.run.summary.as_ref().unwrap().target_per_sec.unwrap();
        assert!((offered - s.target_rate).abs() <= 0.02 * s.target_rate);
    }
    let highest_pass = r
        .steps
        .iter()
        .filter(|s| s.verdict == Verdict::Pass)
        .map(|s| s.target_rate)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    assert_eq!(r.max_rate, highest_pass);
}

fn summary(r: &FindMaxResult) -> Vec<String> {
    r.steps
        .iter()
        .map(|s| {
            format!(
                "{} -> {:.1}/s p99 {:?}us {:?} {}",
                s.target_rate, s.achieved_rate, s.p99_us, s.verdict, s.detail
            )
        })
        .collect()
}

#[test]
fn slo_and_budget_mistakes_exit_2_with_one_line() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--slo", "p99>50ms"],
            "--slo 'p99>50ms' is not a condition",
        ),
        (&["--slo", "p99<50"], "with a unit"),
        (&["--slo", "p200<50ms"], "percentile"),
        (&["--slo", "p99<50ms,latency<1s"], "'latency<1s'"),
        (
            &["--slo", "p99<50ms", "--max-errors", "5"],
            "--max-errors '5'",
        ),
        (&["--slo", "p99<50ms", "--max-errors", "x%"], "0.1%"),
        (&[], "--slo is required"),
    ];
    for (args, needle) in cases {
        let out = bin()
            .args(["find-max", "http://127.0.0.1:9/"])
            .args(args)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// Every request takes 80 ms, so `p50<20ms` fails the first step on any machine. The advice
/// follows what the step recorded: on a host the step found busy, the busy-host finding and
/// "rerun on a quiet host" (a lower rate would not help); otherwise a lower --start-rate.
#[test]
fn a_target_that_never_meets_the_slo_holds_no_rate() {
    let server = limited_backend(64, "80ms");
    let save = tempdir("find-max-none").join("r.json");
    let mut args = SHORT_STEPS.to_vec();
    args.extend(["--slo", "p50<20ms"]);
    let (out, saved) = find_max(&url(&server), &args, &save);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("no rate held"), "{stdout}");
    let r = saved.unwrap();
    assert_eq!(r.steps.len(), 1, "{stdout}");
    let step = &r.steps[0];
    match step.run.why.busy_host() {
        Some(busy) => {
            let host = step.run.evidence.as_ref().and_then(|e| e.host.as_ref());
            assert!(host.is_some_and(|h| h.busy()), "{host:?}: {stdout}");
            let advice = format!("{}: rerun on a quiet host", busy.text);
            assert!(stdout.contains(&advice), "{advice:?} in {stdout}");
            assert!(!stdout.contains("lower --start-rate"), "{stdout}");
        }
        None => {
            assert!(stdout.contains("lower --start-rate"), "{stdout}");
            assert!(!stdout.contains("quiet host"), "{stdout}");
        }
    }
    assert_eq!(r.max_rate, None);
    assert_eq!(r.stop_reason, Some(StopReason::NoRateHeld));
    assert_eq!(r.steps[0].verdict, Verdict::Fail);
}

/// Issue 35 point 9: the generator held far below the rate (2 connections to a backend that
/// takes 200 ms per request: at most 10 req/s of the 50 asked), its CPU idle. The step is the
/// generator's, with the figures, not an SLO failure of the target; the search ends there
/// without a rate and says why in the report and the JSON. Holds on any machine: a slower one
/// sends even less.
#[test]
fn a_generator_held_below_the_rate_is_judged_the_generators_not_the_slo() {
    let server = limited_backend(64, "200ms");
    let save = tempdir("find-max-held").join("r.json");
    let mut args = SHORT_STEPS.to_vec();
    args.extend(["--slo", "p99<5s", "--max-connections", "2"]);
    let (out, saved) = find_max(&url(&server), &args, &save);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let r = saved.unwrap();
    assert_eq!(r.steps.len(), 1, "{stdout}");
    let step = &r.steps[0];
    assert_eq!(step.verdict, Verdict::Fail);
    assert_eq!(step.reason, Some(FailReason::Generator), "{}", step.detail);
    let stats = &step.run.stats;
    assert!(
        (stats.sent as f64) < 0.5 * stats.scheduled.unwrap() as f64,
        "{stats:?}"
    );
    let figures = format!(
        "the generator sent {} of {} scheduled",
        stats.sent,
        stats.scheduled.unwrap()
    );
    assert!(step.detail.starts_with(&figures), "{}", step.detail);
    assert!(
        step.detail.contains("raise --max-connections"),
        "{}",
        step.detail
    );
    assert_eq!(r.stop_reason, Some(StopReason::Generator));
    assert_eq!(r.max_rate, None);
    assert!(
        stdout.contains("no rate held: the generator could not keep up"),
        "{stdout}"
    );
    assert!(stdout.contains("raise --max-connections"), "{stdout}");
    assert!(!stdout.contains("more threads"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let why = json["no_rate"]
        .as_str()
        .expect("the file says why no rate held");
    assert!(
        why.starts_with("no rate held: the generator could not offer the load: step 1, 50 req/s, failed (generator: the generator sent "),
        "{why}"
    );
}

#[test]
fn ctrl_c_keeps_the_finished_steps_and_exits_130() {
    let _machine = crate::support::measuring();
    let server = limited_backend(64, "1ms");
    let save = tempdir("find-max-int").join("r.json");
    let child = bin()
        .args([
            "find-max",
            &url(&server),
            "--slo",
            "p99<1s",
            "-t",
            "1",
            "-q",
        ])
        .args(["--step-duration", "1s", "--warmup", "0s", "--save"])
        .arg(&save)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !save.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid has no memory-safety implications.
    unsafe {
        libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(130), "{stdout}{stderr}");
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    let r = FindMaxResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert!(r.interrupted);
    assert_eq!(r.stop_reason, Some(StopReason::Interrupted));
    assert_eq!(r.steps[0].verdict, Verdict::Pass);
    assert_eq!(r.steps.last().unwrap().verdict, Verdict::Interrupted);
    assert_eq!(r.max_rate, Some(100.0));
}
