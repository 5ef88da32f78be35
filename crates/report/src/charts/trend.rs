//! The trend charts of one series of the history (a target × load over runs, oldest first):
//! req/s and p99 with each run's 95% confidence interval as whiskers, p50, and the error
//! share. x is the run's place in the series (1 = oldest shown).

use super::{solid, Axis, Extras, Plot, Whisker, BLUE, GREEN, ORANGE, RED};
use crate::charts::axis::{Scale, Unit};
use crate::trend::Series;

/// The four charts of `s`, their names prefixed with `prefix`.
pub(crate) fn plots(s: &Series, prefix: &str) -> Vec<Plot> {
    let x = |i: usize| (i + 1) as f64;
    let points = |f: &dyn Fn(&crate::trend::Run) -> Option<f64>| -> Vec<(f64, f64)> {
        s.runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((x(i), f(r)?)))
            .collect()
    };
    let whiskers = |f: &dyn Fn(&crate::trend::Run) -> Option<(f64, f64)>, scale: f64| {
        s.runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let (lo, hi) = f(r)?;
                Some(Whisker {
                    x: x(i),
                    low: (lo * scale).max(0.0),
                    high: hi * scale,
                })
            })
            .collect::<Vec<_>>()
    };
    let plot = |name: &str, title: String, y: Axis, line, ws: Vec<Whisker>| Plot {
        name: format!("{prefix}-{name}"),
        title,
        x: Axis {
            title: "run (oldest first)",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
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
    };
    let nanos = |title| Axis {
        title,
        scale: Scale::Linear,
        unit: Unit::Nanos,
    };
    let ci_words = |ws: &[Whisker]| if ws.is_empty() { "" } else { ", 95% CI" };
    let rps_ci = whiskers(&|r| r.rps_ci, 1.0);
    let p99_ci = whiskers(&|r| r.p99_ci, 1e3);
    vec![
        plot(
            "rps",
            format!("Requests per second{}", ci_words(&rps_ci)),
            Axis {
                title: "requests per second",
                scale: Scale::Linear,
                unit: Unit::Rate,
            },
            solid("req/s", BLUE, points(&|r| r.requests_per_sec)),
            rps_ci,
        ),
        plot(
            "p50",
            "Median latency (p50)".into(),
            nanos("latency"),
            solid("p50", GREEN, points(&|r| r.p50_us.map(|v| v * 1e3))),
            vec![],
        ),
        plot(
            "p99",
            format!("p99 latency{}", ci_words(&p99_ci)),
            nanos("latency"),
            solid("p99", ORANGE, points(&|r| r.p99_us.map(|v| v * 1e3))),
            p99_ci,
        ),
        plot(
            "errors",
            "Errors (failed or non-2xx/3xx, % of attempts)".into(),
            Axis {
                title: "errors",
                scale: Scale::Linear,
                unit: Unit::Percent,
            },
            solid("errors", RED, points(&|r| r.error_ratio.map(|v| v * 100.0))),
            vec![],
        ),
    ]
}
