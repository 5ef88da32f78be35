//! The formats and the one entry point of the reports: any [`SavedResult`] in any [`Format`].
//! The CLI's `report`, `run`, `find-max` and `bench` all come through [`render`], so a kind
//! never misses a format in one command that it has in another; [`formats_for`] is the one
//! table of which kind renders in which format, and [`Unsupported`] the one-line answer for a
//! pair it lacks.
//!
//! Beneath this module, one file per format and kind of result (`render/text/run.rs`,
//! `render/csv/find_max.rs`, `render/html/bench.rs`, …), declared in the blocks below. A
//! renderer takes what it shows from the views, the words and the markup, never from another
//! renderer; [`Kinds`] is the dispatch. A new format is its [`Format`] variant and name, its
//! block of three files, and one arm of [`renderers`]; the CLI takes its
//! names and help lines from [`Format`] (see [`Format::about`]).

use crate::charts::{self, Chart, ChartFile};
use crate::options::{RenderOptions, Renderer};
use crate::view::bench::recomputed;
use loadbench_model::{BenchResult, FindMaxResult, ResultKind, RunResult, SavedResult};
use std::fmt;
use std::io;
use std::str::FromStr;

/// The terminal report, in the style of wrk, ab, hey and berf.
pub mod text {
    pub(crate) mod bench;
    pub(crate) mod find_max;
    pub(crate) mod run;
    pub use run::TextRenderer;
}

/// The result itself as pretty JSON: the model is the schema.
pub mod json {
    pub(crate) mod bench;
    pub(crate) mod find_max;
    pub(crate) mod run;
    pub use run::JsonRenderer;
}

/// Flat comma-separated rows for spreadsheets and scripts.
pub mod csv {
    pub(crate) mod bench;
    pub(crate) mod find_max;
    pub(crate) mod run;
    pub use run::CsvRenderer;
}

/// GitHub-flavoured Markdown tables, for a pull request.
pub mod markdown {
    pub(crate) mod bench;
    pub(crate) mod find_max;
    pub(crate) mod run;
    pub use find_max::render as render_find_max;
    pub use run::{render_run, Markdown};
}

/// A self-contained page with SVG charts, plus the chart files to write beside it.
pub mod html {
    pub(crate) mod bench;
    pub(crate) mod find_max;
    pub(crate) mod run;
    pub use bench::{render_bench, write_bench_chart_files};
    pub use find_max::{render_find_max, write_find_max_chart_files};
    pub use run::{render_run, write_chart_files, Html};
}

/// JUnit XML for CI test summaries: one test case per gate (docs/gates.md).
pub mod junit {
    pub(crate) mod bench;
    pub(crate) mod find_max;
    pub(crate) mod run;
    pub use run::JunitRenderer;
}

/// An output format. Everything the command line says of a format comes from here (its
/// [`name`](Format::name), [`aliases`](Format::aliases) and help line,
/// [`about`](Format::about)), so a new format needs no change in the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A report for a terminal, in the style of wrk, ab and hey (`text`).
    Text,
    /// The result itself as pretty JSON, the schema of docs/result-schema.md (`json`).
    Json,
    /// Flat comma-separated rows for spreadsheets and scripts (`csv`).
    Csv,
    /// GitHub-flavoured Markdown tables, for a pull request (`md` or `markdown`).
    Markdown,
    /// A self-contained page with SVG charts, plus the chart files to write beside it (`html`).
    Html,
    /// JUnit XML, one test case per gate, for CI test summaries (`junit`).
    Junit,
}

impl Format {
    /// Every format, in the order they are offered to the user.
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Json,
        Format::Csv,
        Format::Markdown,
        Format::Html,
        Format::Junit,
    ];

    /// The format's name on the command line: `text`, `json`, `csv`, `md`, `html`, `junit`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "md",
            Format::Html => "html",
            Format::Junit => "junit",
        }
    }

    /// Other names accepted for the format (`markdown` for `md`); never shown in a list.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Format::Markdown => &["markdown"],
            Format::Text | Format::Json | Format::Csv | Format::Html | Format::Junit => &[],
        }
    }

    /// The format's line in `--help`'s list of formats, when its name alone does not say it.
    pub fn about(self) -> Option<&'static str> {
        match self {
            Format::Markdown => Some("Markdown tables, for a pull request"),
            Format::Html => Some("A self-contained page with its charts inline"),
            Format::Junit => Some("JUnit XML, one test case per --slo gate, for CI"),
            Format::Text | Format::Json | Format::Csv => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let choices: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        write!(
            f,
            "unknown format '{}': choose one of {}",
            self.0,
            choices.join(", ")
        )
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        Format::ALL
            .into_iter()
            .find(|f| {
                std::iter::once(f.name())
                    .chain(f.aliases().iter().copied())
                    .any(|n| n.eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// Which file renders each kind of result in one format.
struct Kinds {
    run: &'static dyn Renderer,
    find_max: fn(&FindMaxResult, &RenderOptions) -> String,
    bench: fn(&BenchResult) -> String,
}

/// The dispatch: one arm per format. (HTML's pages are drawn with their charts by [`page`].)
fn renderers(format: Format) -> Kinds {
    match format {
        Format::Text => Kinds {
            run: &text::TextRenderer,
            find_max: |r, _| text::find_max::render(r),
            bench: text::bench::render,
        },
        Format::Json => Kinds {
            run: &json::JsonRenderer,
            find_max: |r, _| json::find_max::render(r),
            bench: json::bench::render,
        },
        Format::Csv => Kinds {
            run: &csv::CsvRenderer,
            find_max: |r, _| csv::find_max::render(r),
            bench: csv::bench::render,
        },
        Format::Html => Kinds {
            run: &html::Html,
            find_max: html::find_max::render_find_max,
            bench: html::bench::render_bench,
        },
        Format::Markdown => Kinds {
            run: &markdown::Markdown,
            find_max: markdown::find_max::render,
            bench: markdown::bench::render,
        },
        Format::Junit => Kinds {
            run: &junit::JunitRenderer,
            find_max: |r, _| junit::find_max::render(r),
            bench: junit::bench::render,
        },
    }
}

/// The renderer of a run in a format.
pub fn renderer(format: Format) -> &'static dyn Renderer {
    renderers(format).run
}

/// Renders a run into a string (tests, HTML embedding, the clipboard).
pub fn render_to_string(format: Format, result: &RunResult, opts: &RenderOptions) -> String {
    let mut buf = Vec::new();
    renderer(format)
        .render(result, opts, &mut buf)
        .expect("writing into memory cannot fail");
    String::from_utf8(buf).expect("renderers write UTF-8")
}

/// A bench result in any format, as a string (what `loadbench bench` prints at the end and
/// `loadbench report` writes); `cells` and `relative` are recomputed from the rounds first.
pub fn render_bench(format: Format, result: &BenchResult) -> String {
    (renderers(format).bench)(&recomputed(result))
}

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
///
/// A run of 120 requests against the reference backend, as text and as Markdown:
///
/// ```
/// use loadbench_model::SavedResult;
/// use loadbench_plan::Stop;
/// use loadbench_report::{render, Format, RenderOptions};
/// use loadbench_runner::{Control, LoadSpec, Quiet};
/// use loadbench_upstream::{Server, ServerConfig};
/// use std::sync::atomic::AtomicBool;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let server = Server::start(ServerConfig::ephemeral())?;
/// let url = format!("http://{}/", server.local_addr());
/// let spec = LoadSpec {
///     stop: Stop::Requests(120),
///     threads: Some(1),
///     ..LoadSpec::closed(&url, 2, Duration::from_secs(10))
/// };
/// let stop = Arc::new(AtomicBool::new(false));
/// let run = loadbench_runner::run(&spec, Control { stop: &stop, observer: &Quiet })?;
/// let saved = SavedResult::Run(Box::new(run));
///
/// let text = render(&saved, Format::Text, &RenderOptions::default())?.text;
/// let markdown = render(&saved, Format::Markdown, &RenderOptions::default())?.text;
/// let completed = text.lines().find(|l| l.trim_start().starts_with("Requests completed:"));
/// assert!(completed.is_some_and(|l| l.ends_with(" 120")), "{text}");
/// assert!(text.contains("[200] 120 responses"), "{text}");
/// // The headline table's row starts with the request count.
/// assert!(markdown.lines().any(|l| l.starts_with("| 120 | ")), "{markdown}");
/// assert!(markdown.contains("| 200 | 120 | "), "{markdown}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render(
    result: &SavedResult,
    format: Format,
    opts: &RenderOptions,
) -> Result<Rendered, Unsupported> {
    let kind = result.kind();
    if !formats_for(kind).contains(&format) {
        return Err(Unsupported { kind, format });
    }
    if format == Format::Html {
        return Ok(page(result, opts));
    }
    let kinds = renderers(format);
    Ok(Rendered::text(match result {
        SavedResult::Run(r) => render_to_string(format, r, opts),
        SavedResult::FindMax(r) => (kinds.find_max)(r, opts),
        SavedResult::Bench(r) => (kinds.bench)(&recomputed(r)),
    }))
}

/// An HTML page around its charts, drawn once for the page and the files beside it.
fn page(result: &SavedResult, opts: &RenderOptions) -> Rendered {
    match result {
        SavedResult::Run(r) => {
            let charts = charts::run_charts(r);
            let text = html::run::run_page(r, opts, &charts);
            Rendered { text, charts }
        }
        SavedResult::FindMax(r) => {
            let charts = charts::find_max_charts(r);
            let text = html::find_max::find_max_page(r, &charts);
            Rendered { text, charts }
        }
        SavedResult::Bench(r) => {
            let r = recomputed(r);
            let charts = charts::bench_charts(&r);
            let text = html::bench::bench_page(&r, &charts);
            Rendered { text, charts }
        }
    }
}

#[cfg(test)]
mod tests;
