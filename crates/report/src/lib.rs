//! Renders finished results for people and for tools.
//!
//! In: a [`SavedResult`](loadbench_model::SavedResult) from `loadbench-model` (a run, a
//! find-max search or a bench; measured, merged, or read back from JSON) and [`RenderOptions`]
//! (the percentiles the user asked for, colour on or off).
//! Out: through the one entry point [`render`], a [`Rendered`] report in any [`Format`] — a
//! wrk/ab/hey/berf-style text report ([`text`]), the result as pretty JSON ([`json`], the model
//! *is* the schema), flat CSV ([`csv`]), Markdown tables for a pull request ([`markdown`]), or a
//! self-contained HTML page with SVG charts ([`html`]) plus the chart files to write beside it;
//! the find-max and bench views live in [`find_max`] and [`bench`]; and [`compare`], two results
//! set side by side.
//! Neighbours: the CLI picks a [`Format`] and calls [`render`]; nothing here writes files of its
//! own accord or changes the result. One exporter per file; the run's behind the [`Renderer`]
//! trait.

pub mod bench;
mod charts;
pub mod compare;
pub mod csv;
mod distribution;
mod endpoints;
pub mod find_max;
pub mod html;
pub mod json;
pub mod markdown;
mod render;
pub mod text;
pub mod why;
pub use loadbench_model::human as units;

pub use bench::{bench_json, render_bench};
pub use charts::ChartFile;
pub use find_max::{find_max_json, find_max_recovery_line, find_max_step_line, find_max_text};
pub use render::{formats_for, render, Rendered, Unsupported};

use loadbench_model::RunResult;
use std::fmt;
use std::io::Write;
use std::str::FromStr;

/// The percentiles shown when the user gives no `--percentiles`.
pub const DEFAULT_PERCENTILES: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A report for a terminal, in the style of wrk, ab and hey (`text`).
    Text,
    /// The result itself as pretty JSON, the schema of docs/result-schema.md (`json`).
    Json,
    /// Flat comma-separated rows for spreadsheets and scripts (`csv`).
    Csv,
    /// A self-contained page with SVG charts, plus the chart files to write beside it (`html`).
    Html,
    /// GitHub-flavoured Markdown tables, for a pull request (`md` or `markdown`).
    Markdown,
}

impl Format {
    /// Every format, in the order they are offered to the user.
    pub const ALL: [Format; 5] = [
        Format::Text,
        Format::Json,
        Format::Csv,
        Format::Html,
        Format::Markdown,
    ];

    /// The format's name on the command line: `text`, `json`, `csv`, `html`, `md`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
            Format::Markdown => "md",
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
        if s.trim().eq_ignore_ascii_case("markdown") {
            return Ok(Format::Markdown);
        }
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// What the user chose about presentation; the result itself is never altered.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOptions {
    /// Percentiles (0–100) for the text table and the CSV columns, in the order given.
    pub percentiles: Vec<f64>,
    /// ANSI colour in the text report.
    pub color: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            color: false,
        }
    }
}

/// One output format.
pub trait Renderer {
    /// Writes the report of `result` to `out`, with the percentiles and colour of `opts`.
    fn render(
        &self,
        result: &RunResult,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()>;
}

/// The renderer for a format.
pub fn renderer(format: Format) -> Box<dyn Renderer> {
    match format {
        Format::Text => Box::new(text::TextRenderer),
        Format::Json => Box::new(json::JsonRenderer),
        Format::Csv => Box::new(csv::CsvRenderer),
        Format::Html => Box::new(html::Html),
        Format::Markdown => Box::new(markdown::Markdown),
    }
}

/// Renders into a string (tests, HTML embedding, the clipboard).
pub fn render_to_string(format: Format, result: &RunResult, opts: &RenderOptions) -> String {
    let mut buf = Vec::new();
    renderer(format)
        .render(result, opts, &mut buf)
        .expect("writing into memory cannot fail");
    String::from_utf8(buf).expect("renderers write UTF-8")
}

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_name() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert_eq!(" JSON ".parse::<Format>(), Ok(Format::Json));
        assert_eq!("Markdown".parse::<Format>(), Ok(Format::Markdown));
    }

    #[test]
    fn unknown_format_names_the_choices() {
        let err = "xml".parse::<Format>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown format 'xml': choose one of text, json, csv, html, md"
        );
    }

    #[test]
    fn every_format_renders_the_empty_result() {
        let empty = fixtures::empty();
        for f in Format::ALL {
            assert!(!render_to_string(f, &empty, &RenderOptions::default()).is_empty());
        }
    }
}
