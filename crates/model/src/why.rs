//! The "why" section: findings that name what limited a run, ranked by the strength of their
//! evidence. Each finding is one sentence with its numbers and the usual fix; its inputs are kept
//! as named figures so a reader (and a test) can check the verdict against what was measured.
//! The rules that produce findings live beside the evidence they read (kernel and target
//! evidence, the queueing view, CPU saturation); this module holds only the shared shape and
//! the ranking, so every report renders them the same way.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a finding is about. Stable identifiers: they are the JSON's `kind` values and the
/// anchors of docs/diagnostics.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The target's listen queue overflowed or dropped SYNs.
    AcceptQueueOverflow,
    /// SYNs were retransmitted (connects waited for a retry).
    SynRetransmits,
    /// Segments were retransmitted.
    Retransmits,
    /// Connections were reset.
    Resets,
    /// The generator ran short of ephemeral ports.
    EphemeralPorts,
    /// The target's cgroup throttled its CPU.
    CpuThrottled,
    /// The target's cgroup reported memory pressure (high, max or OOM events).
    MemoryPressure,
    /// The target's main process ended during the step (an OOM kill, a crash, an exit).
    TargetDied,
    /// One thread of the target used nearly a whole core.
    HotThread,
    /// The target's open file descriptors neared their limit.
    FdLimit,
    /// The target behaved like a fixed pool of workers (Little's law).
    WorkerPool,
    /// The target served a fixed number of connections at once and left the others without
    /// an answer (starved connections; the size by Little's law).
    ConnectionLimit,
    /// A fixed wait set the rate: throughput = connections ÷ latency, the CPU idle; more
    /// concurrency is the lever.
    LatencyBound,
    /// Throughput stopped growing while latency climbed (a sweep's knee).
    Knee,
    /// A Universal Scalability Law fit over a sweep.
    Scalability,
    /// The target used the CPU it may use.
    TargetBound,
    /// The generator used the CPU it may use: the figures are loadbench's limit.
    GeneratorBound,
    /// Other processes used much of the host's CPU: every figure is less reliable.
    BusyHost,
    /// Nothing stood out; `Why::looked_at` says what was examined.
    NoClearBottleneck,
}

/// One finding: a sentence with its numbers, the usual fix, and the figures it was drawn from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What the finding is about.
    pub kind: FindingKind,
    /// Strength of the evidence, 0 (a hint) to 1 (certain); findings are ranked by it.
    pub strength: f64,
    /// One sentence with its numbers, e.g. "accept queue overflowed 12,400 times (backlog 128)".
    pub text: String,
    /// The usual fix, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The measured inputs of the finding, by name (e.g. `listen_overflows`, `backlog`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
}

/// The findings of a run or a bench step, strongest first, and what was looked at.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Why {
    /// Strongest first (see [`Why::new`]).
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The evidence examined, one short phrase each ("listen queues", "cgroup CPU throttling"),
    /// so "no clear bottleneck" can say what it rules out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looked_at: Vec<String>,
}

impl Why {
    /// The busy-host finding, when other processes used enough of the host to make every
    /// figure unreliable (`compare` will not judge such a result).
    pub fn busy_host(&self) -> Option<&Finding> {
        self.findings
            .iter()
            .find(|f| f.kind == FindingKind::BusyHost)
    }

    /// Ranks `findings` by strength (strongest first; ties keep their order).
    pub fn new(mut findings: Vec<Finding>, looked_at: Vec<String>) -> Self {
        findings.sort_by(|a, b| b.strength.total_cmp(&a.strength));
        Why {
            findings,
            looked_at,
        }
    }

    /// True when no finding was made.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(kind: FindingKind, strength: f64) -> Finding {
        Finding {
            kind,
            strength,
            text: format!("{kind:?}"),
            fix: None,
            figures: BTreeMap::new(),
        }
    }

    #[test]
    fn findings_are_ranked_strongest_first_and_ties_keep_their_order() {
        let why = Why::new(
            vec![
                finding(FindingKind::Resets, 0.2),
                finding(FindingKind::HotThread, 0.9),
                finding(FindingKind::Knee, 0.2),
            ],
            vec![],
        );
        let kinds: Vec<FindingKind> = why.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [
                FindingKind::HotThread,
                FindingKind::Resets,
                FindingKind::Knee
            ]
        );
    }

    #[test]
    fn kinds_serialize_as_snake_case_identifiers() {
        let f = finding(FindingKind::AcceptQueueOverflow, 1.0);
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains(r#""kind":"accept_queue_overflow""#), "{json}");
        let back: Finding = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
    }
}
