//! Gates: pass/fail conditions on a finished `run` or `bench` (`--slo 'p99<10ms,errors<0.1%'`),
//! each judged after the load into a [`GateVerdict`] stored in the result. A latency gate is
//! find-max's [`SloStat`]; gates add the error share or count, the throughput and, in a bench,
//! the relative speed of two targets. Parsed from text by `plan::parse_gates`.

use crate::bench::{BenchCell, BenchLoad, BenchResult};
use crate::find_max::SloStat;
use crate::result::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The gates of a run or a load, as typed once (`p99<10ms,rps>100`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gates {
    /// As the user typed it.
    pub text: String,
    /// Each gate, parsed; all must pass.
    pub gates: Vec<Gate>,
}

/// One gate, e.g. `p99<10ms`, `errors<0.1%`, `rps>=5000`, `nginx/direct>0.9`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// As the user typed it.
    pub text: String,
    /// What is measured (written flattened: `metric` and its fields).
    #[serde(flatten)]
    pub metric: GateMetric,
    /// How the measured value must compare with `limit`.
    pub op: GateOp,
    /// The limit, in the metric's unit: µs for latency, a share 0–1 for `error_share`, a
    /// count for `error_count`, requests per second for `rps`, a plain number for `ratio`.
    pub limit: f64,
}

/// What a gate measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "metric", rename_all = "snake_case")]
pub enum GateMetric {
    /// A latency percentile or the mean (`p99`, `mean`), from each request's intended send
    /// time, as find-max's SLO measures it.
    Latency(SloStat),
    /// Failed attempts plus responses outside 200–399, as a share of attempts (`errors<0.1%`).
    ErrorShare,
    /// The same, as a count (`errors<=10`).
    ErrorCount,
    /// Complete responses per second of the measured window (`rps>5000`).
    Rps,
    /// Bench only: req/s of one target divided by another's, for the same load and level
    /// (`nginx/direct>0.9`).
    Ratio {
        /// The target whose req/s is divided.
        numerator: String,
        /// The target it is divided by.
        denominator: String,
    },
}

/// How the measured value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GateOp {
    /// Strictly below (`<`).
    #[serde(rename = "<")]
    Lt,
    /// Below or equal (`<=`).
    #[serde(rename = "<=")]
    Le,
    /// Strictly above (`>`).
    #[serde(rename = ">")]
    Gt,
    /// Above or equal (`>=`).
    #[serde(rename = ">=")]
    Ge,
}

impl GateOp {
    /// `<`, `<=`, `>` or `>=`.
    pub fn symbol(self) -> &'static str {
        match self {
            GateOp::Lt => "<",
            GateOp::Le => "<=",
            GateOp::Gt => ">",
            GateOp::Ge => ">=",
        }
    }

    /// Whether `value OP limit` holds.
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            GateOp::Lt => value < limit,
            GateOp::Le => value <= limit,
            GateOp::Gt => value > limit,
            GateOp::Ge => value >= limit,
        }
    }
}

/// A gate's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateOutcome {
    /// Measured and within the limit.
    Pass,
    /// Measured and outside the limit.
    Fail,
    /// Could not be judged (see the verdict's `reason`); counts as a failure unless
    /// `--slo-allow-unjudged`.
    Unjudged,
}

impl fmt::Display for GateOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GateOutcome::Pass => "pass",
            GateOutcome::Fail => "fail",
            GateOutcome::Unjudged => "unjudged",
        })
    }
}

/// One gate judged on one measurement: a run, or a bench cell (target × load × level) or a
/// ratio of two cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// The gate.
    pub gate: Gate,
    /// Bench: where it was judged, `target · load · level` (a ratio: `load · level`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    /// The measured value in the gate's unit; `None` when unjudged.
    pub measured: Option<f64>,
    /// Pass, fail or unjudged.
    pub outcome: GateOutcome,
    /// Why it could not be judged; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl GateVerdict {
    /// A verdict from a measured value, or unjudged with `why`.
    pub fn from_measure(gate: &Gate, cell: Option<String>, measured: Result<f64, String>) -> Self {
        let (measured, outcome, reason) = match measured {
            Ok(v) if gate.op.holds(v, gate.limit) => (Some(v), GateOutcome::Pass, None),
            Ok(v) => (Some(v), GateOutcome::Fail, None),
            Err(why) => (None, GateOutcome::Unjudged, Some(why)),
        };
        GateVerdict {
            gate: gate.clone(),
            cell,
            measured,
            outcome,
            reason,
        }
    }

    /// Whether this verdict lets the build pass: a pass, or unjudged when allowed.
    pub fn ok(&self, allow_unjudged: bool) -> bool {
        match self.outcome {
            GateOutcome::Pass => true,
            GateOutcome::Fail => false,
            GateOutcome::Unjudged => allow_unjudged,
        }
    }
}

/// Every gate of a run or a bench, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// `--slo-allow-unjudged`: an unjudged gate does not fail the build.
    pub allow_unjudged: bool,
    /// One verdict per gate (bench: per gate and cell), in order.
    pub verdicts: Vec<GateVerdict>,
}

impl GateReport {
    /// Whether every gate passed (unjudged ones count as passed only when allowed).
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.ok(self.allow_unjudged))
    }

    /// The verdicts that fail the build.
    pub fn failed(&self) -> impl Iterator<Item = &GateVerdict> {
        self.verdicts.iter().filter(|v| !v.ok(self.allow_unjudged))
    }
}

/// The fewest complete responses a latency statistic is judged on: the mean needs one; the
/// percentile q needs `ceil(100 / (100 − q))` (p50: 2, p99: 100, p99.9: 1000), so that at least
/// one response lies above it and it is not merely the slowest one seen; p100 (the maximum)
/// needs one.
pub fn min_samples(stat: SloStat) -> u64 {
    match stat {
        SloStat::Mean => 1,
        SloStat::Percentile { percentile } if percentile >= 100.0 => 1,
        SloStat::Percentile { percentile } => (100.0 / (100.0 - percentile) - 1e-9).ceil() as u64,
    }
}

impl Gate {
    /// Whether this is a bench ratio gate (`a/b>0.9`), judged across targets.
    pub fn is_ratio(&self) -> bool {
        matches!(self.metric, GateMetric::Ratio { .. })
    }

    /// The measured value of a single-measurement gate on `s`, or why it cannot be judged.
    /// Ratio gates are judged by the bench across cells and are unjudged here.
    pub fn measure(&self, s: &Stats) -> Result<f64, String> {
        let attempts = s.attempts();
        let bad = s.errors.total() + s.failed_answers();
        match &self.metric {
            GateMetric::Latency(stat) => {
                let need = min_samples(*stat);
                let have = s.latency.hist.len();
                if have < need {
                    return Err(format!(
                        "{} needs at least {need} complete responses, the run had {have}",
                        stat.label()
                    ));
                }
                stat.measure_us(&s.latency.hist)
                    .ok_or_else(|| "no complete response to measure".to_string())
            }
            GateMetric::ErrorShare if attempts == 0 => Err("no request was attempted".into()),
            GateMetric::ErrorShare => Ok(bad as f64 / attempts as f64),
            GateMetric::ErrorCount if attempts == 0 => Err("no request was attempted".into()),
            GateMetric::ErrorCount => Ok(bad as f64),
            GateMetric::Rps if s.elapsed_us == 0 => Err("the measured window is empty".into()),
            GateMetric::Rps => Ok(s.summary().requests_per_sec),
            GateMetric::Ratio { .. } => Err("a ratio of targets is judged in a bench only".into()),
        }
    }

    /// This gate judged on one measurement.
    pub fn judge(&self, s: &Stats, cell: Option<String>) -> GateVerdict {
        GateVerdict::from_measure(self, cell, self.measure(s))
    }
}

impl Gates {
    /// Every gate judged on one run's statistics.
    pub fn judge(&self, s: &Stats, allow_unjudged: bool) -> GateReport {
        GateReport {
            allow_unjudged,
            verdicts: self.gates.iter().map(|g| g.judge(s, None)).collect(),
        }
    }
}

/// The gates of a bench: those of every cell (`--slo`), of one load (its `slo`) and of one
/// target (its `slo`). Ratio gates among them are judged per load × level, on every load that
/// runs both targets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchGates {
    /// Every cell's (`bench --slo`).
    pub all: Vec<Gate>,
    /// By load index: that load's cells'.
    pub loads: Vec<Vec<Gate>>,
    /// By target name: that target's cells'.
    pub targets: BTreeMap<String, Vec<Gate>>,
}

impl BenchGates {
    /// Whether no gate was given anywhere.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
            && self.loads.iter().all(Vec::is_empty)
            && self.targets.values().all(Vec::is_empty)
    }

    /// The gates that apply to the cells of `target` in load `load`, in order: every cell's,
    /// the load's, the target's.
    fn of(&self, load: u32, target: &str) -> Vec<&Gate> {
        let load = self.loads.get(load as usize).into_iter().flatten();
        let target = self.targets.get(target).into_iter().flatten();
        self.all.iter().chain(load).chain(target).collect()
    }

    /// Every ratio gate that applies to load `load` (any target's counts for every load).
    fn ratios(&self, load: u32) -> Vec<&Gate> {
        let of_load = self.loads.get(load as usize).into_iter().flatten();
        let of_targets = self.targets.values().flatten();
        self.all
            .iter()
            .chain(of_load)
            .chain(of_targets)
            .filter(|g| g.is_ratio())
            .collect()
    }

    /// Judges every gate on a finished bench: each single-measurement gate on each of its
    /// cells (latency and errors over the cell's rounds together, `rps` as the median of the
    /// rounds' req/s), each ratio gate on each level of each load that runs both targets (the
    /// ratio of the two cells' mean req/s, as the relative-speed lines).
    pub fn judge(&self, r: &BenchResult, allow_unjudged: bool) -> GateReport {
        let mut verdicts = Vec::new();
        for c in &r.cells {
            let Some(load) = r.loads.get(c.load as usize) else {
                continue;
            };
            let label = format!(
                "{} · {} · {}",
                c.target,
                load.name,
                load.level_label(c.level as usize)
            );
            for g in self
                .of(c.load, &c.target)
                .into_iter()
                .filter(|g| !g.is_ratio())
            {
                let measured = measure_cell(g, r, c);
                verdicts.push(GateVerdict::from_measure(g, Some(label.clone()), measured));
            }
        }
        for (li, load) in r.loads.iter().enumerate() {
            for g in self.ratios(li as u32) {
                verdicts.extend(judge_ratio(g, r, li as u32, load));
            }
        }
        GateReport {
            allow_unjudged,
            verdicts,
        }
    }
}

/// A ratio gate on each level of one load: nothing when the load does not run both targets.
fn judge_ratio(g: &Gate, r: &BenchResult, li: u32, load: &BenchLoad) -> Vec<GateVerdict> {
    let GateMetric::Ratio {
        numerator,
        denominator,
    } = &g.metric
    else {
        return Vec::new();
    };
    if !load.targets.contains(numerator) || !load.targets.contains(denominator) {
        return Vec::new();
    }
    (0..load.levels.len())
        .map(|level| {
            let rps = |t: &str| {
                r.cells
                    .iter()
                    .find(|c| c.load == li && c.level == level as u32 && c.target == t)
                    .and_then(|c| c.requests_per_sec)
                    .map(|s| s.mean)
            };
            let measured = match (rps(numerator), rps(denominator)) {
                (Some(a), Some(b)) if b > 0.0 => Ok(a / b),
                (_, Some(b)) if b <= 0.0 => Err(format!("{denominator} completed nothing")),
                (a, _) => Err(format!(
                    "no measured req/s of {} at this level",
                    if a.is_none() { numerator } else { denominator }
                )),
            };
            let label = format!("{} · {}", load.name, load.level_label(level));
            GateVerdict::from_measure(g, Some(label), measured)
        })
        .collect()
}

/// A single-measurement gate on one bench cell.
fn measure_cell(g: &Gate, r: &BenchResult, c: &BenchCell) -> Result<f64, String> {
    if let Some(why) = &c.nothing {
        return Err(format!("the cell measured nothing: {why}"));
    }
    if g.metric == GateMetric::Rps {
        return c
            .requests_per_sec
            .map(|s| s.median)
            .ok_or_else(|| "no round measured req/s".to_string());
    }
    let mut runs = r
        .rounds
        .iter()
        .filter(|x| x.load == c.load && x.level == c.level && x.target == c.target)
        .filter_map(|x| x.measured_run());
    let Some(first) = runs.next() else {
        return Err("no round measured anything".into());
    };
    let mut stats = first.stats.clone();
    runs.for_each(|run| stats.merge(&run.stats));
    g.measure(&stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(metric: GateMetric, op: GateOp, limit: f64) -> Gate {
        Gate {
            text: "g".into(),
            metric,
            op,
            limit,
        }
    }

    #[test]
    fn gates_round_trip_through_json() {
        for g in [
            gate(
                GateMetric::Latency(SloStat::Percentile { percentile: 99.9 }),
                GateOp::Lt,
                10_000.0,
            ),
            gate(GateMetric::Latency(SloStat::Mean), GateOp::Le, 5.0),
            gate(GateMetric::ErrorShare, GateOp::Lt, 0.001),
            gate(GateMetric::ErrorCount, GateOp::Le, 3.0),
            gate(GateMetric::Rps, GateOp::Ge, 5000.0),
            gate(
                GateMetric::Ratio {
                    numerator: "nginx".into(),
                    denominator: "direct".into(),
                },
                GateOp::Gt,
                0.9,
            ),
        ] {
            let json = serde_json::to_string(&g).unwrap();
            let back: Gate = serde_json::from_str(&json).unwrap();
            assert_eq!(back, g, "{json}");
        }
        let json = serde_json::to_value(gate(
            GateMetric::Latency(SloStat::Percentile { percentile: 99.0 }),
            GateOp::Lt,
            1.0,
        ))
        .unwrap();
        assert_eq!(json["metric"], "latency");
        assert_eq!(json["stat"], "percentile");
        assert_eq!(json["percentile"], 99.0);
        assert_eq!(json["op"], "<");
    }

    #[test]
    fn percentiles_need_enough_samples() {
        let p = |q| min_samples(SloStat::Percentile { percentile: q });
        assert_eq!(p(50.0), 2);
        assert_eq!(p(90.0), 10);
        assert_eq!(p(99.0), 100);
        assert_eq!(p(99.9), 1000);
        assert_eq!(p(100.0), 1);
        assert_eq!(min_samples(SloStat::Mean), 1);
    }

    #[test]
    fn an_empty_run_is_unjudged_and_fails_unless_allowed() {
        let s = Stats::default();
        let gates = Gates {
            text: "p99<1ms,errors<1%,rps>1".into(),
            gates: vec![
                gate(
                    GateMetric::Latency(SloStat::Percentile { percentile: 99.0 }),
                    GateOp::Lt,
                    1000.0,
                ),
                gate(GateMetric::ErrorShare, GateOp::Lt, 0.01),
                gate(GateMetric::Rps, GateOp::Gt, 1.0),
            ],
        };
        let report = gates.judge(&s, false);
        assert!(report
            .verdicts
            .iter()
            .all(|v| v.outcome == GateOutcome::Unjudged && v.reason.is_some()));
        assert!(!report.passed());
        assert!(gates.judge(&s, true).passed());
    }
}
