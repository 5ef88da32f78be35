//! The gates of a run or a bench as rows every format shows: the gate, where it was judged
//! (a bench cell), the measured value and the limit in the gate's unit, the outcome and why
//! a gate could not be judged. Plain text; the formats lay it out ([`crate::gates`]).

use loadbench_model::human as units;
use loadbench_model::{Gate, GateMetric, GateOutcome, GateReport, GateVerdict};

/// One verdict, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GateRow {
    /// The gate as typed, e.g. `p99<10ms`.
    pub gate: String,
    /// Bench: `target · load · level`; empty for a run.
    pub cell: String,
    /// The measured value in the gate's unit, or `-`.
    pub measured: String,
    /// `< 10.00ms`.
    pub limit: String,
    /// `pass`, `FAIL`, `unjudged` (allowed) or `UNJUDGED` (failing).
    pub word: &'static str,
    /// Whether the row lets the build pass.
    pub ok: bool,
    /// The outcome itself.
    pub outcome: GateOutcome,
    /// Why it could not be judged.
    pub reason: Option<String>,
}

/// A value in the gate's unit: `12.30ms`, `0.10%`, `3`, `5123.40 req/s`, `0.932`.
pub(crate) fn value(gate: &Gate, v: f64) -> String {
    match gate.metric {
        GateMetric::Latency(_) => units::duration_us(v),
        GateMetric::ErrorShare => precise_percent(v),
        GateMetric::ErrorCount => units::grouped(v.max(0.0).round() as u64),
        GateMetric::Rps => format!("{} req/s", units::rate(v)),
        GateMetric::Ratio { .. } => format!("{v:.3}"),
    }
}

/// A share in percent with enough digits for small limits: `0.10%`, `0.015%`.
fn precise_percent(share: f64) -> String {
    let p = share * 100.0;
    if p != 0.0 && p.abs() < 0.1 {
        format!("{p:.3}%")
    } else {
        units::percent(share)
    }
}

/// `< 10.00ms`: the operator and the limit in the gate's unit.
pub(crate) fn limit(gate: &Gate) -> String {
    format!("{} {}", gate.op.symbol(), value(gate, gate.limit))
}

/// The row of one verdict.
pub(crate) fn row(v: &GateVerdict, allow_unjudged: bool) -> GateRow {
    let ok = v.ok(allow_unjudged);
    GateRow {
        gate: v.gate.text.clone(),
        cell: v.cell.clone().unwrap_or_default(),
        measured: v
            .measured
            .map_or_else(|| units::MISSING.to_string(), |m| value(&v.gate, m)),
        limit: limit(&v.gate),
        word: match (v.outcome, ok) {
            (GateOutcome::Pass, _) => "pass",
            (GateOutcome::Fail, _) => "FAIL",
            (GateOutcome::Unjudged, true) => "unjudged",
            (GateOutcome::Unjudged, false) => "UNJUDGED",
        },
        ok,
        outcome: v.outcome,
        reason: v.reason.clone(),
    }
}

/// Every verdict's row, in order.
pub(crate) fn rows(r: &GateReport) -> Vec<GateRow> {
    r.verdicts
        .iter()
        .map(|v| row(v, r.allow_unjudged))
        .collect()
}

/// `3 gates: 2 passed, 1 failed` (and unjudged ones, saying whether they were allowed).
pub(crate) fn headline(r: &GateReport) -> String {
    let count = |o: GateOutcome| r.verdicts.iter().filter(|v| v.outcome == o).count();
    let (pass, fail, unjudged) = (
        count(GateOutcome::Pass),
        count(GateOutcome::Fail),
        count(GateOutcome::Unjudged),
    );
    let mut out = format!(
        "{}: {pass} passed, {fail} failed",
        units::counted(r.verdicts.len() as u64, "gate")
    );
    if unjudged > 0 {
        let how = if r.allow_unjudged {
            "allowed by --slo-allow-unjudged"
        } else {
            "each fails"
        };
        out += &format!(", {unjudged} unjudged ({how})");
    }
    out
}

/// One verdict in one line, for stderr and JUnit messages: `p99<10ms: measured 52.10ms,
/// limit < 10.00ms`, or `p99<10ms: unjudged: p99 needs at least 100 complete responses, …`.
pub(crate) fn line(v: &GateVerdict) -> String {
    let at = v
        .cell
        .as_ref()
        .map_or(String::new(), |c| format!(" at {c}"));
    match (v.measured, &v.reason) {
        (Some(m), _) => format!(
            "{}{at}: measured {}, limit {}",
            v.gate.text,
            value(&v.gate, m),
            limit(&v.gate)
        ),
        (None, reason) => format!(
            "{}{at}: unjudged: {}",
            v.gate.text,
            reason.as_deref().unwrap_or("nothing to measure")
        ),
    }
}
