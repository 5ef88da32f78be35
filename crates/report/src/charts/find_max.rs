//! The plots of a find-max search, with the offered rate across: what the target completed
//! against what was sent (a target past its capacity completes no more: the plateau; failed
//! steps marked on it), and how latency grew as the rate
//! rose, each SLO limit drawn as a horizontal line and the maximum sustainable rate as a
//! vertical one. Steps cut short by Ctrl-C measured a partial window and are left out.

use super::axis::{Axis, Scale, Unit};
use super::{solid, Extras, Line, Mark, Plot, Style, GREEN, GREY, PALETTE, RED};
use crate::view::find_max::slo_columns;
use loadbench_model::human as units;
use loadbench_model::{FindMaxResult, FindMaxStep, Verdict};
use plotters::style::RGBColor;

/// The legend of the responses the target completed per second.
const COMPLETED: &str = "completed (responses/s)";
/// The legend of the requests the generator sent per second.
const SENT: &str = "sent (requests/s)";
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

/// Completed (what the target served) and sent (what the generator offered) by target rate.
/// Sent follows the diagonal as long as the generator keeps up; completed leaves it where the
/// target falls behind, which is the figure the search is about.
fn rates(r: &FindMaxResult) -> Plot {
    let steps = steps(r);
    let top = steps.iter().map(|s| s.target_rate).fold(0.0, f64::max);
    let failed = steps.iter().filter(|s| s.verdict == Verdict::Fail);
    let series = |rate: fn(&FindMaxStep) -> f64| -> Vec<(f64, f64)> {
        steps.iter().map(|s| (s.target_rate, rate(s))).collect()
    };
    let lines = vec![
        Line {
            label: "= target".into(),
            color: GREY,
            style: Style::Dashed,
            points: if steps.is_empty() {
                vec![]
            } else {
                vec![(0.0, 0.0), (top, top)]
            },
        },
        Line {
            label: SENT.into(),
            color: PALETTE[1],
            style: Style::Dashed,
            points: series(|s| s.achieved_rate),
        },
        solid(COMPLETED, PALETTE[0], series(|s| s.completed_rate)),
        Line {
            label: "failed step".into(),
            color: RED,
            style: Style::Markers,
            points: failed.map(|s| (s.target_rate, s.completed_rate)).collect(),
        },
    ];
    Plot {
        name: "find-max-rate".into(),
        title: "Completed and sent rate by target rate".into(),
        x: target_axis(),
        y: Axis {
            title: "requests per second",
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
    let lines = slo_columns(r)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    /// The plotted values of one line, rounded to 0.01 req/s.
    fn points(plot: &Plot, label: &str) -> Vec<(f64, f64)> {
        let line = plot.lines.iter().find(|l| l.label == label);
        let round = |v: f64| (v * 100.0).round() / 100.0;
        let points = &line.expect("the line is drawn").points;
        points.iter().map(|&(x, y)| (round(x), round(y))).collect()
    }

    /// Against a 160 req/s target, sent follows the target while completed levels off: the
    /// plateau the chart must show (it used to plot only sent, a straight diagonal).
    #[test]
    fn the_rate_chart_plots_completed_which_levels_off_at_the_capacity() {
        let plot = rates(&fixtures::find_max());
        let sent = points(&plot, SENT);
        assert_eq!(sent, [(100.0, 99.9), (150.0, 149.85), (200.0, 199.8)]);
        let completed = points(&plot, COMPLETED);
        assert_eq!(completed, [(100.0, 99.8), (150.0, 149.7), (200.0, 160.0)]);
        assert!(completed[2].1 - completed[1].1 < 0.25 * (200.0 - 150.0));
        assert_eq!(points(&plot, "failed step"), [(200.0, 160.0)]);
    }
}
