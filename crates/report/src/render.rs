//! The one entry point of the reports: any [`SavedResult`] in any [`Format`]. The CLI's
//! `report`, `run`, `find-max` and `bench` all come through [`render`], so a kind never misses
//! a format in one command that it has in another; [`formats_for`] is the one table of which
//! kind renders in which format, and [`Unsupported`] the one-line answer for a pair it lacks.
//! The renderers themselves stay one per file (`text`, `csv`, `find_max`, `bench/`, `html/`, …).

use crate::charts::{self, Chart, ChartFile};
use crate::{bench, find_max, html, markdown, render_to_string, Format, RenderOptions};
use loadbench_model::{BenchResult, FindMaxResult, ResultKind, RunResult, SavedResult};
use std::fmt;
use std::io;

/// A rendered result: the report itself and, for HTML, the charts to write beside the page.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The report, ready to print or save: the whole page for HTML.
    pub text: String,
    /// HTML only: the charts the page inlines, drawn once for the page and the files.
    charts: Vec<Chart>,
}

impl Rendered {
    fn text(text: String) -> Rendered {
        Rendered {
            text,
            charts: Vec::new(),
        }
    }

    /// The files to write beside an HTML page (each chart as SVG, and as PNG when the system
    /// has a font to draw its text with); none for the other formats. PNGs are drawn here, on
    /// demand, since a page printed to stdout has no files beside it.
    pub fn chart_files(&self) -> io::Result<Vec<ChartFile>> {
        charts::files(&self.charts)
    }
}

/// A format a kind of result cannot be rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsupported {
    /// The kind of result that was to be rendered: run, find-max or bench.
    pub kind: ResultKind,
    /// The format asked for, which that kind does not render in.
    pub format: Format,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = formats_for(self.kind)
            .iter()
            .filter(|f| **f != self.format)
            .map(|f| f.name())
            .collect();
        let list = match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "no format".to_string(),
        };
        write!(
            f,
            "{} is not available for {} results: use {list}",
            self.format,
            self.kind.command()
        )
    }
}

impl std::error::Error for Unsupported {}

/// The formats a kind of result renders in. Every kind has every format today: a find-max
/// search's CSV is its step table, a bench's is one row per round.
pub fn formats_for(kind: ResultKind) -> &'static [Format] {
    match kind {
        ResultKind::Run | ResultKind::FindMax | ResultKind::Bench => &Format::ALL,
    }
}

/// Renders any saved result in `format`; `opts` chooses the percentiles of a run's tables.
pub fn render(
    result: &SavedResult,
    format: Format,
    opts: &RenderOptions,
) -> Result<Rendered, Unsupported> {
    let kind = result.kind();
    if !formats_for(kind).contains(&format) {
        return Err(Unsupported { kind, format });
    }
    Ok(match result {
        SavedResult::Run(r) => run_result(r, format, opts),
        SavedResult::FindMax(r) => find_max_result(r, format, opts),
        SavedResult::Bench(r) => bench_result(r, format),
    })
}

fn run_result(r: &RunResult, format: Format, opts: &RenderOptions) -> Rendered {
    if format != Format::Html {
        return Rendered::text(render_to_string(format, r, opts));
    }
    let charts = charts::run_charts(r);
    Rendered {
        text: html::run_page(r, opts, &charts),
        charts,
    }
}

fn find_max_result(r: &FindMaxResult, format: Format, opts: &RenderOptions) -> Rendered {
    Rendered::text(match format {
        Format::Text => find_max::find_max_text(r),
        Format::Json => find_max::find_max_json(r),
        Format::Csv => find_max::csv::render(r),
        Format::Markdown => markdown::render_find_max(r, opts),
        Format::Html => {
            let charts = charts::find_max_charts(r);
            let text = html::find_max_page(r, &charts);
            return Rendered { text, charts };
        }
    })
}

fn bench_result(r: &BenchResult, format: Format) -> Rendered {
    if format != Format::Html {
        return Rendered::text(bench::render_bench(format, r));
    }
    let r = bench::recomputed(r);
    let charts = charts::bench_charts(&r);
    Rendered {
        text: html::bench_page(&r, &charts),
        charts,
    }
}

#[cfg(test)]
mod tests;
