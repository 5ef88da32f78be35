//! The plots of a bench. Per load: each target's req/s at each level as bars (the median of
//! the rounds) with the 95% confidence interval of the mean as whiskers, and per level the
//! latency percentiles of each target; for a closed sweep with a scalability fit, throughput
//! against concurrency with the fitted curve. Over the whole run: every target's CPU and memory and
//! the generator's CPU on one timeline, each measured step shaded in its target's colour, so a
//! reader sees which step loaded whom and what the other targets did meanwhile.

use super::axis::{Axis, Scale, Unit};
#[cfg(test)]
use super::draw;
use super::{Band, Extras, Line, Plot, Style, Whisker, GREY, PALETTE};
use loadbench_model::resources::Samples;
use loadbench_model::{queueing, BenchCell, BenchLoad, BenchResult};
use plotters::style::RGBColor;

/// Share of a category's width the bars of all targets take together.
const GROUP_WIDTH: f64 = 0.8;
const MIB: f64 = 1024.0 * 1024.0;

pub(crate) fn plots(r: &BenchResult) -> Vec<Plot> {
    let mut plots = Vec::new();
    for (li, load) in r.loads.iter().enumerate() {
        plots.push(rps(r, li as u32, load));
        if r.queueing
            .iter()
            .any(|q| q.load == li as u32 && q.usl.is_some())
        {
            plots.push(scalability(r, li as u32, load));
        }
        for level in 0..load.levels.len() as u32 {
            plots.push(latency(r, li as u32, level, load));
        }
    }
    plots.push(cpu(r));
    plots.push(rss(r));
    plots
}

/// A target's colour: its place among the bench's targets.
pub(crate) fn target_color(r: &BenchResult, target: &str) -> RGBColor {
    let i = r.targets.iter().position(|t| t.name == target);
    PALETTE[i.unwrap_or(r.targets.len()) % PALETTE.len()]
}

/// `bench-rps-closed`: a file stem and HTML id from the load's index and name.
pub(crate) fn chart_name(kind: &str, load: &BenchLoad, level: Option<u32>) -> String {
    let slug: String = load
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    match level {
        Some(l) => format!("bench-{kind}-{slug}-{}", l + 1),
        None => format!("bench-{kind}-{slug}"),
    }
}

fn rps(r: &BenchResult, li: u32, load: &BenchLoad) -> Plot {
    let n = load.targets.len().max(1) as f64;
    let half = GROUP_WIDTH / n / 2.0;
    let mut lines = Vec::new();
    let mut whiskers = Vec::new();
    let mut single = 0;
    for (ti, target) in load.targets.iter().enumerate() {
        let offset = (ti as f64 + 0.5) * GROUP_WIDTH / n - GROUP_WIDTH / 2.0;
        let cells = (0..load.levels.len() as u32).filter_map(|level| {
            let s = r.cell_of(li, level, target)?.requests_per_sec?;
            Some((f64::from(level) + offset, s))
        });
        let mut points = Vec::new();
        for (x, s) in cells {
            points.push((x, s.median));
            match whisker(x, &s) {
                Some(w) => whiskers.push(w),
                None => single += 1,
            }
        }
        lines.push(Line {
            label: target.clone(),
            color: target_color(r, target),
            style: Style::Bars,
            points,
        });
    }
    let ci = ci_words(whiskers.is_empty(), single);
    Plot {
        name: chart_name("rps", load, None),
        title: format!("Requests per second, load {} ({ci})", load.name),
        x: Axis {
            title: "load level",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
        y: Axis {
            title: "requests per second",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No round of this load finished: there is no throughput to show.",
        extras: Extras {
            categories: (0..load.levels.len())
                .map(|l| load.level_label(l))
                .collect(),
            bar_half_width: half,
            whiskers,
            bands: vec![],
        },
    }
}

/// A bar's 95% confidence interval; none from one round (the tables say `n/a (1 round)`):
/// then no stroke and no cap.
fn whisker(x: f64, s: &loadbench_model::bench_stats::CellStats) -> Option<Whisker> {
    (s.n >= 2).then(|| Whisker {
        x,
        low: s.ci95_low.max(0.0),
        high: s.ci95_high,
    })
}

/// What the rps chart's title says of its intervals, `single` bars from one round.
fn ci_words(none_drawn: bool, single: usize) -> &'static str {
    match (none_drawn, single) {
        (_, 0) => "median, 95% CI",
        (true, _) => "median; CI n/a: 1 round",
        (false, _) => "median, 95% CI; n/a: 1 round",
    }
}

/// Points of the fitted curve drawn per target.
const FIT_POINTS: usize = 60;

/// Per target of a sweep: the measured req/s at each concurrency as dots, and the Universal
/// Scalability Law fit over them as a dashed curve (to 20% beyond the last level).
fn scalability(r: &BenchResult, li: u32, load: &BenchLoad) -> Plot {
    let mut lines = Vec::new();
    for a in r.queueing.iter().filter(|q| q.load == li) {
        let color = target_color(r, &a.target);
        let measured: Vec<(f64, f64)> = a
            .levels
            .iter()
            .map(|p| (queueing::usl_concurrency(a.closed, p), p.requests_per_sec))
            .collect();
        let top = measured.iter().map(|p| p.0).fold(0.0, f64::max) * 1.2;
        if let Some(fit) = &a.usl {
            let curve = (1..=FIT_POINTS)
                .map(|i| top * i as f64 / FIT_POINTS as f64)
                .map(|n| (n, fit.throughput(n)))
                .collect();
            lines.push(Line {
                label: format!("{} (USL fit)", a.target),
                color,
                style: Style::Dashed,
                points: curve,
            });
        }
        lines.push(Line {
            label: format!("{} (measured)", a.target),
            color,
            style: Style::Markers,
            points: measured,
        });
    }
    Plot {
        name: chart_name("usl", load, None),
        title: format!(
            "Throughput against concurrency, load {} (measured, and the scalability fit)",
            load.name
        ),
        x: Axis {
            title: "requests at once (connections)",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
        y: Axis {
            title: "requests per second",
            scale: Scale::Linear,
            unit: Unit::Rate,
        },
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No level of this load has a throughput to show.",
        extras: Extras::default(),
    }
}

/// The median of each summarised percentile, per target, on the nines scale.
fn latency(r: &BenchResult, li: u32, level: u32, load: &BenchLoad) -> Plot {
    let lines = load
        .targets
        .iter()
        .map(|t| {
            let points = r
                .cell_of(li, level, t)
                .map_or(Vec::new(), percentile_points);
            super::solid(t.clone(), target_color(r, t), points)
        })
        .collect();
    Plot {
        name: chart_name("latency", load, Some(level)),
        title: format!(
            "Latency percentiles, load {} at {} (median of rounds)",
            load.name,
            load.level_label(level as usize)
        ),
        x: Axis {
            title: "percentile",
            scale: Scale::Nines,
            unit: Unit::Percentile,
        },
        y: Axis {
            title: "latency",
            scale: Scale::Log,
            unit: Unit::Nanos,
        },
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No round at this level completed a response: there is no latency to show.",
        extras: Extras::default(),
    }
}

fn percentile_points(c: &BenchCell) -> Vec<(f64, f64)> {
    c.latency_us
        .iter()
        .map(|p| (p.p, p.stats.median * 1e3))
        .collect()
}

fn time_axis() -> Axis {
    Axis {
        title: "time since sampling started",
        scale: Scale::Linear,
        unit: Unit::Seconds,
    }
}

/// Each measured step of a single target, in that target's colour.
fn step_bands(r: &BenchResult) -> Vec<Band> {
    r.rounds
        .iter()
        .filter(|round| !round.combined)
        .map(|round| Band {
            from: round.window.from_ms as f64 / 1e3,
            to: round.window.to_ms as f64 / 1e3,
            color: target_color(r, &round.target),
        })
        .collect()
}

/// Per target, one value per sample taken while the target ran: samples after it stopped
/// (no process left, so 0 cores and 0 bytes) are left out, so its line ends instead of
/// falling to 0 as if it had crashed.
fn per_target(
    r: &BenchResult,
    value: impl Fn(&loadbench_model::resources::TargetSample) -> f64,
) -> Vec<Line> {
    let s: &Samples = &r.resources;
    let names = s
        .samples
        .first()
        .map(|x| x.targets.iter().map(|t| t.name.clone()));
    names
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, name)| {
            let points = s.samples.iter().filter_map(|x| {
                let t = x.targets.get(i).filter(|t| t.processes > 0)?;
                Some((x.t_ms as f64 / 1e3, value(t)))
            });
            let color = target_color(r, &name);
            super::solid(name, color, points.collect())
        })
        .collect()
}

fn cpu(r: &BenchResult) -> Plot {
    let mut lines = per_target(r, |t| t.cpu_cores);
    let generator = r.resources.samples.iter();
    lines.push(Line {
        label: "generator (loadbench)".into(),
        color: GREY,
        style: Style::Dashed,
        points: generator
            .map(|s| (s.t_ms as f64 / 1e3, s.generator_cpu_cores))
            .collect(),
    });
    Plot {
        name: "bench-cpu".into(),
        title: "CPU over time (steps shaded in their target's colour)".into(),
        x: time_axis(),
        y: Axis {
            title: "CPU (cores)",
            scale: Scale::Linear,
            unit: Unit::Cores,
        },
        lines,
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No resource sample was recorded.",
        extras: Extras {
            bands: step_bands(r),
            ..Extras::default()
        },
    }
}

fn rss(r: &BenchResult) -> Plot {
    Plot {
        name: "bench-rss".into(),
        title: "Memory (RSS) over time (steps shaded in their target's colour)".into(),
        x: time_axis(),
        y: Axis {
            title: "resident memory",
            scale: Scale::Linear,
            unit: Unit::Mebibytes,
        },
        lines: per_target(r, |t| t.rss_bytes as f64 / MIB),
        y_marks: vec![],
        x_marks: vec![],
        empty_note: "No resource sample was recorded.",
        extras: Extras {
            bands: step_bands(r),
            ..Extras::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    /// The x of every SVG `<text>` whose content is `label`.
    fn text_x(svg: &str, label: &str) -> Vec<f64> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let (attrs, rest) = t.split_once('>')?;
                let content = rest.split("</text>").next()?.trim();
                (content == label).then_some(attrs)
            })
            .filter_map(|a| a.split("x=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect()
    }

    /// The bench fixture (3 targets × 2 levels × 3 rounds) with only `keep` rounds of
    /// `target`.
    fn rounds_of(target: &str, keep: u32) -> BenchResult {
        let mut r = fixtures::bench();
        r.rounds.retain(|x| x.target != target || x.round < keep);
        r.recompute();
        r
    }

    /// The rps chart's SVG, and the polylines it has beyond those of the same chart without
    /// any whisker (each whisker is 3 strokes: the interval and its two caps).
    fn whisker_strokes(r: &BenchResult) -> (String, usize) {
        let plot = plots(r)
            .into_iter()
            .find(|p| p.name.contains("rps"))
            .unwrap();
        let svg = draw::svg(&plot, draw::WIDE).unwrap();
        let mut bare = plot;
        bare.extras.whiskers.clear();
        let base = draw::svg(&bare, draw::WIDE).unwrap();
        let strokes = svg.matches("<polyline").count() - base.matches("<polyline").count();
        (svg, strokes)
    }

    /// Issue 35 point 7: a bar whose CI is `n/a (1 round)` gets no interval and no cap, and the
    /// title says n/a; bars with a real CI keep theirs.
    #[test]
    fn bars_from_one_round_draw_no_confidence_interval_and_say_n_a() {
        let all = fixtures::bench();
        let cells = all.cells.len();
        assert_eq!(cells, 6, "3 targets × 2 levels");
        let (svg, strokes) = whisker_strokes(&all);
        assert_eq!(strokes, 3 * cells, "every bar its interval and two caps");
        assert!(svg.contains("(median, 95% CI)"), "{svg}");

        // One target down to a single round: its 2 bars lose their whiskers, the others keep them.
        let target = all.targets[0].name.clone();
        let mixed = rounds_of(&target, 1);
        let (svg, strokes) = whisker_strokes(&mixed);
        assert_eq!(strokes, 3 * (cells - 2), "{svg}");
        assert!(svg.contains("n/a: 1 round"), "{svg}");

        // Every target from one round: no whisker at all.
        let mut one = all.clone();
        one.rounds.retain(|x| x.round < 1);
        one.recompute();
        let (svg, strokes) = whisker_strokes(&one);
        assert_eq!(strokes, 0, "{svg}");
        assert!(svg.contains("CI n/a: 1 round"), "{svg}");
    }

    #[test]
    fn percentile_axis_has_a_p50_tick_where_the_median_sits() {
        let r = fixtures::bench();
        let plot = plots(&r)
            .into_iter()
            .find(|p| p.name.contains("latency"))
            .unwrap();
        let svg = draw::svg(&plot, draw::WIDE).unwrap();
        let (zero, p50, ninety) = (text_x(&svg, "0%"), text_x(&svg, "p50"), text_x(&svg, "90%"));
        assert_eq!((zero.len(), p50.len(), ninety.len()), (1, 1, 1), "{svg}");
        // Tick labels are centred on their tick: p50 sits 30% of the way from 0% to 90%.
        let share = (p50[0] - zero[0]) / (ninety[0] - zero[0]);
        assert!(
            (0.2..0.4).contains(&share),
            "p50 at {share} of the 0%..90% gap"
        );
    }

    #[test]
    fn resource_lines_end_at_the_last_sample_taken_while_the_target_ran() {
        let mut r = fixtures::bench();
        let last_ran = r.resources.samples.last().unwrap().clone();
        let mut stopped = last_ran.clone();
        stopped.t_ms += 100;
        for t in &mut stopped.targets {
            (t.cpu_cores, t.rss_bytes, t.processes) = (0.0, 0, 0);
        }
        r.resources.samples.push(stopped);
        for name in ["bench-cpu", "bench-rss"] {
            let plot = plots(&r).into_iter().find(|p| p.name == name).unwrap();
            for (line, t) in plot.lines.iter().zip(&last_ran.targets) {
                let end = *line.points.last().unwrap();
                assert_eq!(end.0, last_ran.t_ms as f64 / 1e3, "{name} {}", line.label);
                assert!(end.1 > 0.0, "{name} {} falls to 0", line.label);
                let want = if name == "bench-cpu" {
                    t.cpu_cores
                } else {
                    t.rss_bytes as f64 / MIB
                };
                assert_eq!(end.1, want);
            }
        }
    }
}
