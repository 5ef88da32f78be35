//! Per-interval snapshots for live views (the terminal dashboard, the live web page): what each
//! worker publishes at its housekeeping tick, a few times a second, under a lock nobody holds
//! for long. Nothing here runs per request: the worker copies counters it already keeps and the
//! per-second points it has already closed.

use loadbench_model::{ErrorCounts, GrpcStats, Series, SeriesPoint, StatusCounts};
use std::sync::{Mutex, PoisonError};

/// What one worker (or, merged, the whole run) had measured at its last tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pulse {
    /// Responses completed in the measured window.
    pub requests: u64,
    /// Requests sent in the measured window.
    pub sent: u64,
    /// Failures by class.
    pub errors: ErrorCounts,
    /// Responses by status code.
    pub status: StatusCounts,
    /// Connections open at the tick.
    pub open_connections: u64,
    /// Open model: time due requests waited for a free connection so far, µs.
    pub pool_full_us: u64,
    /// Open model: how far the schedule's next due request was behind at the tick, µs.
    pub lag_us: u64,
    /// Per request of a mix or step of a flow, by index: responses completed and requests
    /// failed (every class, a flow's failed checks and missing captures included); empty
    /// for a single-request load.
    pub endpoints: Vec<(u64, u64)>,
    /// A gRPC load's calls by `grpc-status` so far (empty for other loads).
    pub grpc: GrpcStats,
    /// A flow's iterations so far; `None` without a flow.
    pub flow: Option<FlowPulse>,
    /// Closed seconds of the per-second series: every one in a worker's slot; in a merged
    /// pulse from [`PulseSlot::merge`], only the seconds after the caller's `seen`.
    pub series: Vec<SeriesPoint>,
}

/// A flow's iterations counted so far in the measured window (see `FlowStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowPulse {
    /// Iterations whose first step was sent.
    pub started: u64,
    /// Iterations whose every step completed and passed its checks and captures.
    pub completed: u64,
    /// Iterations a failed step ended.
    pub broken: u64,
}

impl FlowPulse {
    fn add(&mut self, o: &FlowPulse) {
        self.started += o.started;
        self.completed += o.completed;
        self.broken += o.broken;
    }
}

impl Pulse {
    fn add(&mut self, o: &Pulse) {
        self.requests += o.requests;
        self.sent += o.sent;
        self.errors.merge(&o.errors);
        self.status.merge(&o.status);
        self.grpc.merge(&o.grpc);
        self.open_connections += o.open_connections;
        self.pool_full_us += o.pool_full_us;
        self.lag_us = self.lag_us.max(o.lag_us);
        if self.endpoints.len() < o.endpoints.len() {
            self.endpoints.resize(o.endpoints.len(), (0, 0));
        }
        for (mine, theirs) in self.endpoints.iter_mut().zip(&o.endpoints) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
        match (&mut self.flow, &o.flow) {
            (Some(mine), Some(theirs)) => mine.add(theirs),
            (None, Some(theirs)) => self.flow = Some(*theirs),
            _ => {}
        }
    }
}

/// One worker's latest pulse.
#[derive(Debug, Default)]
pub struct PulseSlot(Mutex<Pulse>);

impl PulseSlot {
    /// Replaces the counters and appends the seconds closed since the last publish.
    pub fn publish(&self, counters: Pulse, closed: &[SeriesPoint]) {
        let mut p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let known = p.series.len();
        let series = std::mem::take(&mut p.series);
        *p = Pulse { series, ..counters };
        p.series
            .extend_from_slice(closed.get(known..).unwrap_or_default());
    }

    /// All workers' pulses added up; `series` holds the seconds from `seen` on that every
    /// worker has closed, merged point by point. Each slot is locked only to copy it: the
    /// merging (which decodes histograms) happens after, so a worker never waits on it.
    pub fn merge(slots: &[&PulseSlot], seen: usize) -> Pulse {
        let copies: Vec<Pulse> = slots.iter().map(|s| s.copy_from(seen)).collect();
        let closed = copies.iter().map(|p| p.series.len()).min().unwrap_or(0);
        let mut total = Pulse::default();
        let mut series = Series::default();
        for mut p in copies {
            total.add(&p);
            p.series.truncate(closed);
            series.merge(&Series(p.series));
        }
        total.series = series.0;
        total
    }

    /// This slot's pulse with only the seconds from `seen` on.
    fn copy_from(&self, seen: usize) -> Pulse {
        let p = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Pulse {
            series: p.series.get(seen..).unwrap_or_default().to_vec(),
            errors: p.errors.clone(),
            status: p.status.clone(),
            grpc: p.grpc.clone(),
            endpoints: p.endpoints.clone(),
            ..*p
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_model::{Histo, SecondCounts};

    fn point(second: u32, requests: u64, latency_ms: u64) -> SeriesPoint {
        let mut h = Histo::per_second();
        for _ in 0..requests {
            h.record_ns(latency_ms * 1_000_000);
        }
        let counts = SecondCounts {
            requests,
            sent: requests,
            ..Default::default()
        };
        SeriesPoint::new(second, counts, &h)
    }

    fn counters(requests: u64) -> Pulse {
        Pulse {
            requests,
            sent: requests + 1,
            open_connections: 2,
            lag_us: requests,
            ..Default::default()
        }
    }

    #[test]
    fn merge_adds_counters_and_keeps_only_seconds_every_worker_closed() {
        let (a, b) = (PulseSlot::default(), PulseSlot::default());
        a.publish(counters(10), &[point(0, 4, 1), point(1, 6, 2)]);
        b.publish(counters(5), &[point(0, 5, 3)]);
        let m = PulseSlot::merge(&[&a, &b], 0);
        assert_eq!((m.requests, m.sent, m.open_connections), (15, 17, 4));
        assert_eq!(m.lag_us, 10, "the lag is the worst worker's");
        assert_eq!(m.series.len(), 1, "second 1 is not closed by worker b yet");
        let mut expected = Series(vec![point(0, 4, 1)]);
        expected.merge(&Series(vec![point(0, 5, 3)]));
        assert_eq!(
            m.series, expected.0,
            "merged as the final result merges them"
        );
    }

    #[test]
    fn merge_adds_endpoints_by_index_and_flow_iterations() {
        let (a, b, c) = (
            PulseSlot::default(),
            PulseSlot::default(),
            PulseSlot::default(),
        );
        let flow = |started, completed, broken| {
            Some(FlowPulse {
                started,
                completed,
                broken,
            })
        };
        a.publish(
            Pulse {
                endpoints: vec![(10, 1), (7, 0)],
                flow: flow(12, 6, 1),
                ..counters(17)
            },
            &[],
        );
        b.publish(
            Pulse {
                endpoints: vec![(4, 2), (3, 1), (1, 0)],
                flow: flow(5, 2, 2),
                ..counters(8)
            },
            &[],
        );
        c.publish(counters(1), &[]);
        let m = PulseSlot::merge(&[&a, &b, &c], 0);
        assert_eq!(m.endpoints, vec![(14, 3), (10, 1), (1, 0)]);
        assert_eq!(m.flow, flow(17, 8, 3));
        let none = PulseSlot::merge(&[&c], 0);
        assert!(none.endpoints.is_empty() && none.flow.is_none());
    }

    #[test]
    fn publish_appends_new_seconds_and_merge_skips_the_seen_ones() {
        let (a, b) = (PulseSlot::default(), PulseSlot::default());
        a.publish(counters(1), &[point(0, 1, 1)]);
        a.publish(counters(2), &[point(0, 1, 1), point(1, 2, 1)]);
        b.publish(counters(3), &[point(0, 3, 1), point(1, 4, 1)]);
        let m = PulseSlot::merge(&[&a, &b], 1);
        assert_eq!(
            m.requests, 5,
            "the latest counters replace the earlier ones"
        );
        assert_eq!(m.series.len(), 1);
        assert_eq!((m.series[0].second, m.series[0].requests), (1, 6));
        assert!(PulseSlot::merge(&[&a, &b], 2).series.is_empty());
    }
}
