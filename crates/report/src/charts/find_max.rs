//! The plots of a find-max search, with the offered rate across: did the generator send what
//! was asked (achieved against target, failed steps marked), and how latency grew as the rate
//! rose, each SLO limit drawn as a horizontal line and the maximum sustainable rate as a
//! vertical one. Steps cut short by Ctrl-C measured a partial window and are left out.

use super::axis::{Axis, Scale, Unit};
use super::{solid, Extras, Line, Mark, Plot, Style, GREEN, GREY, PALETTE, RED};
use crate::units;
use loadbench_model::{FindMaxResult, FindMaxStep, Verdict};
use plotters::style::RGBColor;

/// SLO limits are reds, told apart by shade.
const SLO_COLORS: [RGBColor; 3] = [RED, RGBColor(150, 20, 60), RGBColor(240, 100, 90)];

pub(crate) fn plots(r: &FindMaxResult) -> Vec<Plot> {
    vec![rates(r), latency(r)]
}

/// Finished steps, by offered rate.
fn steps(r: &FindMaxResult) -> Vec<&FindMaxStep> {
    let mut steps: Vec<&FindMaxStep> = r
        .steps
        .iter()
        .filter(|s| s.verdict != Verdict::Interrupted)
        .collect();
    steps.sort_by(|a, b| a.target_rate.total_cmp(&b.target_rate));
    steps
}

fn target_axis() -> Axis {
    Axis {
        title: "target rate (requests per second)",
        scale: Scale::Linear,
        unit: Unit::Rate,
    }
}

/// The vertical line at the highest rate that held.
fn max_rate_mark(r: &FindMaxResult) -> Vec<Mark> {
    r.max_rate
        .map(|rate| Mark {
            label: format!("max sustainable: {} req/s", units::rate_short(rate)),
            color: GREEN,
            at: rate,
        })
        .into_iter()
        .collect()
}

fn rates(r: &FindMaxResult) -> Plot {
    let steps = steps(r);
    let top = steps.iter().map(|s| s.target_rate).fold(0.0, f64::max);
    let failed = steps.iter().filter(|s| s.verdict == Verdict::Fail);
    let mut lines = vec![
        Line {
            label: "achieved = target".into(),
            color: GREY,
            style: Style::Dashed,
            points: if steps.is_empty() {
                vec![]
            } else {
                vec![(0.0, 0.0), (top, top)]
            },
        },
        solid(
            "achieved (sent/s)",
            PALETTE[0],
            steps
                .iter()
                .map(|s| (s.target_rate, s.achieved_rate))
                .collect(),
        ),
    ];
    lines.push(Line {
        label: "failed step".into(),
        color: RED,
        style: Style::Markers,
        points: failed.map(|s| (s.target_rate, s.achieved_rate)).collect(),
    });
    Plot {
        name: "find-max-rate".into(),
        title: "Achieved rate by target rate".into(),
        x: target_axis(),
        y: Axis {
            title: "achieved rate (requests per second)",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
        lines,
        y_marks: vec![],
        x_marks: max_rate_mark(r),
        empty_note: "No step finished: there is nothing to show.",
        extras: Extras::default(),
    }
}

/// p50, p99 and every other statistic the SLO names; log scale, since latency past the
/// maximum rate is often orders of magnitude above it.
fn latency(r: &FindMaxResult) -> Plot {
    let steps = steps(r);
    let lines = crate::find_max::slo_columns(r)
        .into_iter()
        .zip(PALETTE.iter().cycle())
        .map(|(stat, &color)| {
            let points = steps.iter().filter_map(|s| {
                let us = stat.measure_us(&s.run.stats.latency.hist)?;
                Some((s.target_rate, us * 1e3))
            });
            solid(stat.label(), color, points.collect())
        })
        .collect();
    let limits = r.slo.conditions.iter().zip(SLO_COLORS.iter().cycle());
    let limits = limits.map(|(c, &color)| Mark {
        label: format!("SLO {}", c.text),
        color,
        at: c.limit_us * 1e3,
    });
    Plot {
        name: "find-max-latency".into(),
        title: "Latency by target rate".into(),
        x: target_axis(),
        y: Axis {
            title: "latency (from intended send)",
            scale: Scale::Log,
            unit: Unit::Nanos,
        },
        lines,
        y_marks: limits.collect(),
        x_marks: max_rate_mark(r),
        empty_note: "No step completed a response: there is no latency to show.",
        extras: Extras::default(),
    }
}
