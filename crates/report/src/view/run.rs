//! A run's figures that several formats show beside the latency and the endpoints.

use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{Histo, Stats};

/// hey's "req write", "resp wait" and "resp read" rows; none for results saved before the
/// split was recorded.
pub(crate) fn request_phases(s: &Stats) -> Vec<(&'static str, &Histo)> {
    let p = &s.phases;
    if p.count() == 0 {
        return Vec::new();
    }
    vec![
        ("req write", &p.write.hist),
        ("resp wait", &p.wait.hist),
        ("resp read", &p.read.hist),
    ]
}

/// Below this a phase's time is under what a request's clock readings resolve (a response read
/// in one call records 0, kept as the histogram's 1 ns floor).
const PHASE_RESOLUTION_NS: f64 = 1_000.0;

/// One figure of the phase tables: `-` when nothing was measured, `< 1µs` below the clock's
/// useful resolution (never `1ns` for a phase that took no measurable time), else the
/// duration.
pub(crate) fn phase_duration(h: &Histo, ns: f64) -> String {
    if h.is_empty() || !ns.is_finite() {
        MISSING.to_string()
    } else if ns < PHASE_RESOLUTION_NS {
        "< 1µs".to_string()
    } else {
        units::duration_ns(ns)
    }
}

/// A phase table's row of figures: min, mean, stdev, p50, p99, max, each as
/// [`phase_duration`] says it.
pub(crate) fn phase_cells(h: &Histo) -> [String; 6] {
    [
        h.min_ns() as f64,
        h.mean_ns(),
        h.stdev_ns(),
        h.percentile_ns(50.0) as f64,
        h.percentile_ns(99.0) as f64,
        h.max_ns() as f64,
    ]
    .map(|ns| phase_duration(h, ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35 point 8: a phase read in one call (0, recorded as 1 ns) reads `< 1µs`, an
    /// empty one `-`, a measured one its duration.
    #[test]
    fn phases_below_a_microsecond_read_less_than_one_not_1ns() {
        let mut h = Histo::default();
        assert_eq!(phase_duration(&h, 0.0), "-");
        h.record_ns(0);
        assert_eq!(phase_duration(&h, h.max_ns() as f64), "< 1µs");
        assert_eq!(phase_duration(&h, h.mean_ns()), "< 1µs");
        h.record_ns(250_000);
        assert_eq!(phase_duration(&h, 250_000.0), "250.00µs");
    }
}
