//! The trend charts of one series of the history (a target × load over runs, oldest first):
//! req/s and p99 with each run's 95% confidence interval as whiskers, p50, and the error
//! share. x is the run's place in the series, oldest first, one slot per run, labelled with the
//! run's name (`#12`; with many runs, every few runs).

use super::{solid, Axis, Extras, Line, Plot, Whisker, BLUE, GREEN, ORANGE, RED};
use crate::charts::axis::{Scale, Unit};
use crate::trend::{Run, Series};

/// The four charts of `s`, their names prefixed with `prefix`.
pub(crate) fn plots(s: &Series, prefix: &str) -> Vec<Plot> {
    let rps_ci = whiskers(s, |r| r.rps_ci, 1.0);
    let p99_ci = whiskers(s, |r| r.p99_ci, 1e3);
    let rps_title = format!("Requests per second{}", ci_words(&rps_ci));
    let p99_title = format!("p99 latency{}", ci_words(&p99_ci));
    let names = categories(s);
    let mut plots = vec![
        plot(
            (prefix, "rps", rps_title),
            axis("requests per second", Unit::Rate),
            solid("req/s", BLUE, points(s, |r| r.requests_per_sec)),
            rps_ci,
        ),
        plot(
            (prefix, "p50", "Median latency (p50)".into()),
            axis("latency", Unit::Nanos),
            solid("p50", GREEN, points(s, |r| r.p50_us.map(|v| v * 1e3))),
            vec![],
        ),
        plot(
            (prefix, "p99", p99_title),
            axis("latency", Unit::Nanos),
            solid("p99", ORANGE, points(s, |r| r.p99_us.map(|v| v * 1e3))),
            p99_ci,
        ),
        plot(
            (
                prefix,
                "errors",
                "Errors (failed or non-2xx/3xx, % of attempts)".into(),
            ),
            axis("errors", Unit::Percent),
            solid(
                "errors",
                RED,
                points(s, |r| r.error_ratio.map(|v| v * 100.0)),
            ),
            vec![],
        ),
    ];
    for p in &mut plots {
        p.extras.categories.clone_from(&names);
    }
    plots
}

/// Run `i` (0-based, oldest first) sits in slot i.
fn x(i: usize) -> f64 {
    i as f64
}

/// Most labels under the x axis; with more runs, every few runs are named.
const MAX_X_LABELS: usize = 10;

/// The slots' names: the runs' labels, blank between the named ones when there are many.
fn categories(s: &Series) -> Vec<String> {
    let every = s.runs.len().div_ceil(MAX_X_LABELS).max(1);
    s.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if i % every == 0 {
                r.label.clone()
            } else {
                String::new()
            }
        })
        .collect()
}

fn points(s: &Series, value: impl Fn(&Run) -> Option<f64>) -> Vec<(f64, f64)> {
    s.runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((x(i), value(r)?)))
        .collect()
}

/// The runs' intervals, multiplied by `scale` (µs to the axis's ns).
fn whiskers(s: &Series, ci: impl Fn(&Run) -> Option<(f64, f64)>, scale: f64) -> Vec<Whisker> {
    s.runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let (lo, hi) = ci(r)?;
            Some(Whisker {
                x: x(i),
                low: (lo * scale).max(0.0),
                high: hi * scale,
            })
        })
        .collect()
}

fn ci_words(ws: &[Whisker]) -> &'static str {
    if ws.is_empty() {
        ""
    } else {
        ", 95% CI"
    }
}

fn axis(title: &'static str, unit: Unit) -> Axis {
    Axis {
        title,
        scale: Scale::Linear,
        unit,
    }
}

fn plot(
    (prefix, name, title): (&str, &str, String),
    y: Axis,
    line: Line,
    ws: Vec<Whisker>,
) -> Plot {
    Plot {
        name: format!("{prefix}-{name}"),
        title,
        x: axis("run (oldest first)", Unit::Rate),
        y,
        lines: vec![line],
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No run of this series has this figure.",
        extras: Extras {
            bar_half_width: 0.25,
            whiskers: ws,
            ..Extras::default()
        },
    }
}
