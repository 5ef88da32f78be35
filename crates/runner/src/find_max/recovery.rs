//! Waiting for the target to recover after a failed step.
//!
//! A server that keeps working on requests whose client has gone (Tomcat, Go's net/http, any
//! queue in front of a thread pool) is still busy with an overloaded step's backlog when the
//! step ends. The engine closes every connection of ours when a step ends, so nothing of ours
//! is in flight; what is left is the server's own queue. Single probe requests, one at a time,
//! measure it: the target has recovered when two probes in a row are answered about as fast as
//! before the search ([`Prober::baseline`]). Each probe is a one-request run of the engine
//! itself, so it is sent and timed exactly like the load.

use loadbench_engine::Engine;
use loadbench_model::Recovery;
use loadbench_plan::{LoadShape, LoadSpec, Plan, PlanError, Stop};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Probes taken before the first step; their median is the baseline.
const BASELINE_PROBES: usize = 5;
/// Probes in a row that must be near the baseline.
const IN_A_ROW: u32 = 2;
/// Pause between probes, so that probing stays a trickle.
const PAUSE: Duration = Duration::from_millis(20);

/// Probes take their places of the values' sequence from here on (docs/request-values.md),
/// far above any step's, so a probe of a request that writes never repeats a step's id, nor
/// another probe's.
pub(crate) const PROBE_PLACES: u64 = 1 << 40;

/// Sends single requests, one at a time, to the search's target.
#[derive(Debug)]
pub(crate) struct Prober {
    plan: Plan,
    /// Probes sent so far: each takes the next place from [`PROBE_PLACES`].
    sent: std::cell::Cell<u64>,
}

impl Prober {
    /// A prober for the request of `base`: one connection, one request per probe.
    pub(crate) fn new(base: &LoadSpec) -> Result<Prober, PlanError> {
        let spec = LoadSpec {
            load: LoadShape::Closed { connections: 1 },
            threads: Some(1),
            stop: Stop::Requests(1),
            warmup: Duration::ZERO,
            ..base.clone()
        };
        Ok(Prober {
            plan: Plan::resolve(&spec)?,
            sent: std::cell::Cell::new(0),
        })
    }

    /// One request's latency, µs; `None` when it failed, got a 4xx/5xx, or timed out.
    pub(crate) fn probe(&self, timeout: Duration, stop: &AtomicBool) -> Option<f64> {
        let mut plan = self.plan.clone();
        plan.timeout = timeout.clamp(Duration::from_millis(1), plan.timeout);
        if let Some(v) = plan.values.as_mut() {
            v.spec.first = PROBE_PLACES + self.sent.get();
            self.sent.set(self.sent.get() + 1);
        }
        let outcome = Engine::new(plan).run().ok()?;
        let s = &outcome.stats;
        let ok = s.requests == 1 && s.errors.total() == 0 && s.failed_answers() == 0;
        (ok && !stop.load(Ordering::Relaxed)).then(|| s.latency.hist.max_ns() as f64 / 1e3)
    }

    /// The idle target's latency: the median of a few probes, µs; `None` when all failed.
    pub(crate) fn baseline(&self, stop: &AtomicBool) -> Option<f64> {
        let mut seen: Vec<f64> = (0..BASELINE_PROBES)
            .filter_map(|_| self.probe(self.plan.timeout, stop))
            .collect();
        seen.sort_by(f64::total_cmp);
        seen.get(seen.len() / 2).copied()
    }

    /// Waits until [`IN_A_ROW`] probes are within the threshold of `baseline_us`, at most
    /// `bound`; stops early (not recovered) when `stop` is raised.
    pub(crate) fn wait(&self, baseline_us: f64, bound: Duration, stop: &AtomicBool) -> Recovery {
        let start = Instant::now();
        let threshold_us = threshold(baseline_us);
        let (mut probes, mut good, mut last) = (0u32, 0u32, None);
        while good < IN_A_ROW && !stop.load(Ordering::Relaxed) {
            let Some(left) = bound.checked_sub(start.elapsed()).filter(|l| !l.is_zero()) else {
                break;
            };
            probes += 1;
            last = self.probe(left, stop);
            good = if last.is_some_and(|us| us <= threshold_us) {
                good + 1
            } else {
                0
            };
            std::thread::sleep(PAUSE.min(left));
        }
        Recovery {
            waited_ms: start.elapsed().as_millis() as u64,
            probes,
            threshold_us,
            last_probe_us: last,
            recovered: good >= IN_A_ROW,
        }
    }
}

/// "About as fast as before": twice the baseline, and never less than 2 ms above it (so a
/// 100 µs target is not held to 200 µs by scheduling noise).
fn threshold(baseline_us: f64) -> f64 {
    (2.0 * baseline_us).max(baseline_us + 2_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_twice_the_baseline_with_a_floor() {
        assert_eq!(threshold(10_000.0), 20_000.0);
        assert_eq!(threshold(100.0), 2_100.0);
    }

    /// A request that writes (`{{seq}}` as its id) probed again and again never repeats an
    /// id: each probe takes its own place, far above any step's.
    #[test]
    fn probes_of_a_request_with_values_take_places_of_their_own() {
        use loadbench_upstream::{Server, ServerConfig};
        let server = Server::start(ServerConfig::ephemeral()).expect("backend starts");
        let url = format!("http://{}/echo?id={{{{seq}}}}", server.local_addr());
        let base = LoadSpec::closed(&url, 1, Duration::from_secs(1));
        let prober = Prober::new(&base).unwrap();
        let stop = AtomicBool::new(false);
        for _ in 0..3 {
            assert!(prober.probe(Duration::from_secs(5), &stop).is_some());
        }
        let ids: Vec<String> = server
            .echoed()
            .into_iter()
            .filter_map(|e| e.query)
            .collect();
        let first = PROBE_PLACES + 1;
        let want: Vec<String> = (first..first + 3).map(|n| format!("id={n}")).collect();
        assert_eq!(ids, want);
    }
}
