//! The report's charts, drawn by the project as SVG: what a run or a find-max search looks like
//! as a picture. Each chart is first a [`Plot`] (lines in value space, reference lines, axes),
//! built from the model by [`run`] or [`find_max`]; [`draw`] alone turns a plot into SVG with
//! `plotters`. The HTML page inlines the SVG, and the same text is written as `NAME.svg` files
//! for pasting into documents.

mod axis;
mod bench;
mod draw;
mod find_max;
mod png;
mod run;
mod trend;

use plotters::style::RGBColor;
use std::io;
use std::path::{Path, PathBuf};

pub(crate) use axis::Axis;

/// A chart ready for a page or a file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chart {
    /// File stem and HTML id: `latency-spectrum`.
    pub name: String,
    pub title: String,
    /// The drawings, or a sentence saying why there is nothing to show.
    pub svg: Result<Drawn, String>,
}

/// One chart drawn at two sizes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Drawn {
    /// For laptops and documents (the `NAME.svg` file).
    pub wide: String,
    /// For phones.
    pub compact: String,
}

/// What to draw, in value space.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    pub name: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    /// Horizontal reference lines (an SLO limit), at a y value.
    pub y_marks: Vec<Mark>,
    /// Vertical reference lines (the maximum sustainable rate), at an x value.
    pub x_marks: Vec<Mark>,
    /// Shown instead of the chart when no line has a point.
    pub empty_note: &'static str,
    /// Bars, whiskers, shaded spans and named categories, for the charts that need them.
    pub extras: Extras,
}

/// What only some charts draw besides lines.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extras {
    /// Named positions 0, 1, 2, … across: the x axis is categorical, ticks at each.
    pub categories: Vec<String>,
    /// Half the width of a bar (lines of [`Style::Bars`]), in x coordinates.
    pub bar_half_width: f64,
    /// Vertical error bars (a confidence interval), in value space.
    pub whiskers: Vec<Whisker>,
    /// Shaded stretches of x behind the data (the steps of a bench), in value space.
    pub bands: Vec<Band>,
}

/// An interval `low..high` drawn as a vertical bar with caps at `x`.
#[derive(Debug, Clone)]
pub(crate) struct Whisker {
    pub x: f64,
    pub low: f64,
    pub high: f64,
}

/// A shaded stretch `from..to` of the x axis.
#[derive(Debug, Clone)]
pub(crate) struct Band {
    pub from: f64,
    pub to: f64,
    pub color: RGBColor,
}

/// One data series.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub label: String,
    pub color: RGBColor,
    pub style: Style,
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A line, with a dot at each point when there are few enough to tell apart.
    Solid {
        markers: bool,
    },
    Dashed,
    /// Dots only.
    Markers,
    /// A filled bar from zero up to each point (categorical charts).
    Bars,
}

/// A labelled reference line across the plot.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    pub label: String,
    pub color: RGBColor,
    pub at: f64,
}

pub(crate) const BLUE: RGBColor = RGBColor(31, 119, 180);
pub(crate) const ORANGE: RGBColor = RGBColor(255, 127, 14);
pub(crate) const GREEN: RGBColor = RGBColor(44, 160, 44);
pub(crate) const RED: RGBColor = RGBColor(214, 39, 40);
pub(crate) const PURPLE: RGBColor = RGBColor(148, 103, 189);
pub(crate) const BROWN: RGBColor = RGBColor(140, 86, 75);
pub(crate) const GREY: RGBColor = RGBColor(110, 110, 110);
/// Colours for lines that have no colour of their own, in order.
pub(crate) const PALETTE: [RGBColor; 5] = [BLUE, ORANGE, PURPLE, BROWN, GREEN];

/// Lines with at most this many points get a dot at each.
const MARKERS_UP_TO: usize = 40;

/// A solid line, dotted at each point when the points are few.
pub(crate) fn solid(label: impl Into<String>, color: RGBColor, points: Vec<(f64, f64)>) -> Line {
    Line {
        label: label.into(),
        color,
        style: Style::Solid {
            markers: points.len() <= MARKERS_UP_TO,
        },
        points,
    }
}

impl Plot {
    fn has_points(&self) -> bool {
        self.lines.iter().any(|l| !l.points.is_empty())
    }

    /// The chart: drawn, or the note saying why not.
    pub(crate) fn chart(&self) -> Chart {
        let svg = if self.has_points() {
            let drawn = draw::svg(self, draw::WIDE).and_then(|wide| {
                let compact = draw::svg(self, draw::COMPACT)?;
                Ok(Drawn { wide, compact })
            });
            drawn.map_err(|e| format!("the chart could not be drawn: {e}"))
        } else {
            Err(self.empty_note.to_string())
        };
        Chart {
            name: self.name.clone(),
            title: self.title.clone(),
            svg,
        }
    }
}

/// The charts of one run: latency by percentile, requests per second, latency per second.
pub(crate) fn run_charts(result: &loadbench_model::RunResult) -> Vec<Chart> {
    run::plots(result).iter().map(Plot::chart).collect()
}

/// The charts of a find-max search: achieved rate and latency against the offered rate.
pub(crate) fn find_max_charts(result: &loadbench_model::FindMaxResult) -> Vec<Chart> {
    find_max::plots(result).iter().map(Plot::chart).collect()
}

/// The charts of a bench: req/s with confidence intervals, latency percentiles, and the
/// targets' and the generator's CPU and memory over the whole run.
pub(crate) fn bench_charts(result: &loadbench_model::BenchResult) -> Vec<Chart> {
    bench::plots(result).iter().map(Plot::chart).collect()
}

/// The charts of one series of the history, named `prefix-rps`, `prefix-p50`, ….
pub(crate) fn trend_charts(series: &crate::trend::Series, prefix: &str) -> Vec<Chart> {
    trend::plots(series, prefix)
        .iter()
        .map(Plot::chart)
        .collect()
}

/// A chart as a file to write beside the HTML page: `latency-spectrum.svg` or `.png`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFile {
    /// The file name, relative to the page's directory.
    pub name: String,
    /// The file's contents: SVG text or PNG image data.
    pub bytes: Vec<u8>,
}

/// Every drawn chart as `NAME.svg`, and as `NAME.png` after it when the system has a font to
/// draw its text with; charts with nothing to show are skipped.
pub(crate) fn files(charts: &[Chart]) -> io::Result<Vec<ChartFile>> {
    let png = png::Rasterizer::with_system_fonts();
    let mut files = Vec::new();
    for chart in charts {
        let Ok(drawn) = &chart.svg else {
            continue;
        };
        files.push(ChartFile {
            name: format!("{}.svg", chart.name),
            bytes: drawn.wide.clone().into_bytes(),
        });
        if let Some(r) = &png {
            let bytes = r
                .png(&drawn.wide)
                .map_err(|e| io::Error::other(format!("cannot render {}.png: {e}", chart.name)))?;
            let name = format!("{}.png", chart.name);
            files.push(ChartFile { name, bytes });
        }
    }
    Ok(files)
}

/// Writes [`files`] into `dir` (beside the page) and returns their paths.
pub(crate) fn write_files(charts: &[Chart], dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for file in files(charts)? {
        let path = dir.join(&file.name);
        std::fs::write(&path, &file.bytes)?;
        written.push(path);
    }
    Ok(written)
}
