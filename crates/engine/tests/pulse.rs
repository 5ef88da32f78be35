//! The live views' snapshots ([`loadbench_engine::Live::pulse`]) against a real run: what a
//! view read while the run went on never exceeds the result, the last pulse equals it, and
//! every second a view saw closed is the result's own second, point for point. The counters of
//! the progress bar and the agent's `/log` lines (`Live::snapshot`) are the pulses' own.

use crate::raw::{Mode, RawServer};
use loadbench_engine::Engine;
use loadbench_plan::{LoadSpec, Plan};
use std::time::Duration;

#[test]
fn pulses_agree_with_the_result() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let spec = LoadSpec {
        threads: Some(2),
        ..LoadSpec::closed(&server.url("/"), 4, Duration::from_millis(2500))
    };
    let engine = Engine::new(Plan::resolve(&spec).unwrap());
    engine.preflight().unwrap();
    let live = engine.live();
    let (outcome, seen) = std::thread::scope(|s| {
        let run = s.spawn(|| engine.run().unwrap());
        let mut seen = Vec::new();
        let mut last = 0;
        while !run.is_finished() {
            std::thread::sleep(Duration::from_millis(250));
            let p = live.pulse(seen.len());
            assert!(p.requests >= last, "counters only grow");
            let (requests, errors) = live.snapshot();
            assert!(
                requests >= p.requests && errors >= p.errors.total(),
                "the progress line's counters come from the same pulses"
            );
            last = p.requests;
            seen.extend(p.series);
        }
        (run.join().unwrap(), seen)
    });
    let s = &outcome.stats;
    let last = live.pulse(0);
    assert_eq!(last.requests, s.requests);
    assert_eq!(last.sent, s.sent);
    assert_eq!(last.status, s.status);
    assert_eq!(last.errors, s.errors);
    assert_eq!(
        live.snapshot(),
        (s.requests, s.errors.total()),
        "the progress line and the agent's log read the last pulse too"
    );
    assert_eq!(
        last.open_connections, 0,
        "every connection is closed at the end"
    );
    assert!(
        !seen.is_empty(),
        "at least one second closed during a 2.5 s run"
    );
    for p in &seen {
        assert_eq!(
            Some(p),
            s.series.0.get(p.second as usize),
            "second {}",
            p.second
        );
    }
}

/// A request mix: the last pulse's per-request counts are the result's, request by request,
/// and a mix has no flow.
#[test]
fn a_mix_pulse_counts_each_request_as_the_result_does() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let base = LoadSpec::closed(&server.url("/"), 2, Duration::from_millis(1200));
    let request = |path: &str, weight| loadbench_plan::EndpointSpec {
        url: server.url(path),
        request: base.request.clone(),
        weight,
    };
    let spec = LoadSpec {
        threads: Some(2),
        mix: vec![request("/a", 3), request("/b", 1)],
        ..base.clone()
    };
    let engine = Engine::new(Plan::resolve(&spec).unwrap());
    engine.preflight().unwrap();
    let live = engine.live();
    let outcome = engine.run().unwrap();
    let last = live.pulse(0);
    let result: Vec<(u64, u64)> = (outcome.stats.endpoints.iter())
        .map(|e| (e.requests, e.errors.total()))
        .collect();
    assert_eq!(result.len(), 2);
    assert!(result.iter().all(|r| r.0 > 0), "{result:?}");
    assert_eq!(last.endpoints, result);
    assert_eq!(last.flow, None);
}
