//! A flow's own figures (docs/flows.md): virtual users running a named sequence of steps.
//! Each step is also one entry of `Stats::endpoints` (its requests, statuses, errors and
//! latency); here are the flow's whole iterations: completed, broken by a failed step, and
//! how long a completed one took from its first step's start to its last step's answer,
//! think times included. Merges exactly, across workers, rounds and shards.

use crate::histogram::Latency;
use serde::{Deserialize, Serialize};

/// One flow's iterations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowStats {
    /// The flow's name.
    pub name: String,
    /// Its steps, in order.
    pub steps: u32,
    /// Iterations whose first step was sent in the measured window (in the open model, the
    /// schedule's rate is iterations started per second).
    #[serde(default)]
    pub started: u64,
    /// Iterations whose every step completed (and passed its checks and captures) in the
    /// measured window.
    pub completed: u64,
    /// Iterations a failed step ended (an error, a failed check, a missing capture): the
    /// virtual user started over at the first step.
    pub broken: u64,
    /// A completed iteration's time, from its first step's start (closed model: its send;
    /// open model: its intended start) to its last step's answer, think times included.
    pub duration: Latency,
}

impl FlowStats {
    /// Adds the other's counts and histogram (the name and steps taken from `other` when
    /// this one has none yet).
    pub fn merge(&mut self, other: &FlowStats) {
        if self.name.is_empty() {
            self.name.clone_from(&other.name);
            self.steps = other.steps;
        }
        self.started += other.started;
        self.completed += other.completed;
        self.broken += other.broken;
        self.duration.merge(&other.duration);
    }

    /// Completed iterations per second over `elapsed_s` (0 for an empty window).
    pub fn per_sec(&self, elapsed_s: f64) -> f64 {
        if elapsed_s > 0.0 {
            self.completed as f64 / elapsed_s
        } else {
            0.0
        }
    }
}

/// Merges an optional flow into another.
pub fn merge_flow(mine: &mut Option<FlowStats>, other: &Option<FlowStats>) {
    match (mine.as_mut(), other) {
        (Some(m), Some(o)) => m.merge(o),
        (None, Some(o)) => *mine = Some(o.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_keeps_the_label() {
        let mut a = None;
        let mut b = FlowStats {
            name: "checkout".into(),
            steps: 3,
            completed: 5,
            broken: 1,
            ..FlowStats::default()
        };
        b.duration.hist.record_ns(1_000_000);
        merge_flow(&mut a, &Some(b.clone()));
        merge_flow(&mut a, &Some(b));
        merge_flow(&mut a, &None);
        let a = a.unwrap();
        assert_eq!(
            (a.name.as_str(), a.steps, a.completed, a.broken),
            ("checkout", 3, 10, 2)
        );
        assert_eq!(a.duration.hist.len(), 2);
        assert!((a.per_sec(2.0) - 5.0).abs() < 1e-9);
    }
}
