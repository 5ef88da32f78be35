//! A run's figures that several formats show beside the latency and the endpoints.

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
