//! The plots of one run. The percentile spectrum (HdrHistogram's plot: the tail gets as much
//! room as the median) shows the whole latency distribution, service time beside it in the open
//! model; the per-second plots show whether the run was steady (rate against its target, p50 and
//! p99 second by second).

use super::axis::{Axis, Scale, Unit, MAX_NINES};
use super::{solid, Extras, Line, Plot, Style, BLUE, GREEN, GREY, ORANGE, PURPLE, RED};
use loadbench_model::{Histo, LoadShape, RunResult, SeriesPoint};

/// Points sampled along the spectrum.
const SPECTRUM_SAMPLES: u32 = 250;

pub(crate) fn plots(r: &RunResult) -> Vec<Plot> {
    vec![spectrum(r), rate(r), latency_over_time(r)]
}

fn is_open(r: &RunResult) -> bool {
    matches!(r.config.load, LoadShape::Open { .. })
}

fn spectrum(r: &RunResult) -> Plot {
    let s = &r.stats;
    let lines = if is_open(r) {
        vec![
            spectrum_line("latency (from intended send)", BLUE, &s.latency.hist),
            spectrum_line("service time (from actual send)", ORANGE, &s.service.hist),
        ]
    } else {
        vec![spectrum_line("latency", BLUE, &s.latency.hist)]
    };
    Plot {
        name: "latency-spectrum".into(),
        title: "Latency by percentile".into(),
        x: Axis {
            title: "percentile",
            scale: Scale::Nines,
            unit: Unit::Percentile,
        },
        y: latency_axis(),
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No response completed: there is no latency to show.",
        extras: Extras::default(),
    }
}

fn latency_axis() -> Axis {
    Axis {
        title: "latency",
        scale: Scale::Linear,
        unit: Unit::Nanos,
    }
}

/// The value at percentiles spread evenly in nines, up to as many nines as the sample count
/// resolves (beyond that every percentile is the maximum).
fn spectrum_line(label: &str, color: plotters::style::RGBColor, h: &Histo) -> Line {
    let points = if h.is_empty() {
        Vec::new()
    } else {
        let top = (h.len() as f64).log10().ceil().clamp(2.0, MAX_NINES);
        (0..=SPECTRUM_SAMPLES)
            .map(|i| {
                let nines = top * f64::from(i) / f64::from(SPECTRUM_SAMPLES);
                let p = 100.0 * (1.0 - 10f64.powf(-nines));
                (p, h.percentile_ns(p) as f64)
            })
            .collect()
    };
    Line {
        label: label.to_string(),
        color,
        style: Style::Solid { markers: false },
        points,
    }
}

/// The whole seconds of the series: a trailing partial second would read as a dip. All of them
/// when there is no whole second.
fn seconds(r: &RunResult) -> &[SeriesPoint] {
    let points = &r.stats.series.0;
    let whole = r.stats.elapsed_secs().floor() as u32;
    let n = points.iter().take_while(|p| p.second < whole).count();
    if n == 0 {
        points
    } else {
        &points[..n]
    }
}

/// A point at the end of its second: second 0 is plotted at 1s.
fn per_second<'a>(
    points: impl IntoIterator<Item = &'a SeriesPoint>,
    value: impl Fn(&SeriesPoint) -> f64,
) -> Vec<(f64, f64)> {
    points
        .into_iter()
        .map(|p| (f64::from(p.second) + 1.0, value(p)))
        .collect()
}

fn rate(r: &RunResult) -> Plot {
    let points = seconds(r);
    let mut lines = vec![solid(
        "completed/s",
        BLUE,
        per_second(points, |p| p.requests as f64),
    )];
    let open = points.iter().any(|p| p.target.is_some());
    if open {
        let sent = per_second(points, |p| p.sent as f64);
        lines.push(solid("sent/s", ORANGE, sent));
    }
    if points.iter().any(|p| p.errors > 0) {
        let errors = per_second(points, |p| p.errors as f64);
        lines.push(solid("errors/s", RED, errors));
    }
    if points.iter().any(|p| p.failed > 0) {
        // Answers that came but failed (a 5xx, a non-OK gRPC call): not in errors/s.
        let failed = per_second(points, |p| p.failed as f64);
        lines.push(solid("failed answers/s", PURPLE, failed));
    }
    if points.iter().any(|p| p.connects > 0) {
        let connects = per_second(points, |p| p.connects as f64);
        lines.push(solid("connects/s", GREEN, connects));
    }
    if open {
        // Last, so that it stays visible on top of a rate that meets it.
        let target = points.iter().filter(|p| p.target.is_some());
        lines.push(Line {
            label: "target/s".into(),
            color: GREY,
            style: Style::Dashed,
            points: per_second(target, |p| p.target.unwrap_or(0) as f64),
        });
    }
    Plot {
        name: "rate-over-time".into(),
        title: "Requests per second".into(),
        x: time_axis(),
        y: Axis {
            title: "requests per second",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No per-second series was recorded.",
        extras: Extras::default(),
    }
}

fn time_axis() -> Axis {
    Axis {
        title: "time into the measured window",
        scale: Scale::Linear,
        unit: Unit::Seconds,
    }
}

/// p50 and p99 of each second that completed a response (a quiet second has no latency).
fn latency_over_time(r: &RunResult) -> Plot {
    let answered = || seconds(r).iter().filter(|p| p.requests > 0);
    let lines = vec![
        solid("p50", BLUE, per_second(answered(), |p| p.p50_us * 1e3)),
        solid("p99", RED, per_second(answered(), |p| p.p99_us * 1e3)),
    ];
    Plot {
        name: "latency-over-time".into(),
        title: "Latency per second (p50, p99)".into(),
        x: time_axis(),
        y: latency_axis(),
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No second completed a response: there is no latency to show.",
        extras: Extras::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    /// Failed answers per second get their own line, with each second's count, and none when
    /// no answer failed.
    #[test]
    fn the_rate_chart_draws_failed_answers_per_second() {
        let mut r = fixtures::busy();
        let labels = |r: &RunResult| -> Vec<String> {
            rate(r).lines.iter().map(|l| l.label.clone()).collect()
        };
        assert!(!labels(&r).contains(&"failed answers/s".to_string()));
        let failed: Vec<u64> = (0..r.stats.series.0.len() as u64)
            .map(|i| i % 3 * 7)
            .collect();
        for (p, n) in r.stats.series.0.iter_mut().zip(&failed) {
            p.failed = *n;
        }
        let plot = rate(&r);
        let line = plot
            .lines
            .iter()
            .find(|l| l.label == "failed answers/s")
            .expect("a line of failed answers");
        let drawn: Vec<u64> = line.points.iter().map(|&(_, y)| y as u64).collect();
        assert_eq!(drawn, failed);
        assert_eq!(line.points[0].0, 1.0, "second 0 is drawn at its end");
    }
}
