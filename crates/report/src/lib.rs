//! Renders finished results for people and for tools.
//!
//! In: a [`SavedResult`](loadbench_model::SavedResult) from `loadbench-model` (a run, a
//! find-max search or a bench; measured, merged, or read back from JSON) and [`RenderOptions`]
//! (the percentiles the user asked for, colour on or off).
//! Out: through the one entry point [`render`], a [`Rendered`] report in any [`Format`] — a
//! wrk/ab/hey/berf-style text report ([`text`]), the result as pretty JSON ([`json`], the model
//! *is* the schema), flat CSV ([`csv`]), Markdown tables for a pull request ([`markdown`]), or a
//! self-contained HTML page with SVG charts ([`html`]) plus the chart files to write beside it;
//! and [`compare`], two results set side by side.
//! Neighbours: the CLI picks a [`Format`] and calls [`render`]; nothing here writes files of its
//! own accord or changes the result.
//!
//! Inside, four layers, each importing only those below it:
//! - `render`: the [`Format`]s and the dispatch, and beneath it one file per format and kind
//!   of result (`render/text/run.rs`, `render/html/bench.rs`, …). A renderer imports views,
//!   words and markup, never another renderer, so a new format is one file per kind plus one
//!   dispatch arm.
//! - `view`: per kind, the numbers, rows and sentences a renderer shows, worked out once for
//!   every format (a mix's endpoints, the find-max conclusion, a bench's cells and warnings,
//!   the queueing view, the profiles); `charts` draws from the views.
//! - `words` and [`why`]: wording shared across kinds and formats.
//! - [`markup`]: Markdown and HTML escaping and tables, CSV quoting, aligned text columns.
//!
//! [`options`] holds what every renderer takes ([`RenderOptions`], the [`Renderer`] trait).

mod charts;
pub mod compare;
pub mod gates;
pub mod markup;
pub mod options;
mod render;
pub mod trend;
mod view;
pub mod why;
mod words;
pub use loadbench_model::human as units;

pub use charts::ChartFile;
pub use options::{RenderOptions, Renderer, DEFAULT_PERCENTILES};
pub use render::{csv, html, json, junit, markdown, text};
pub use render::{
    formats_for, render, render_bench, render_to_string, renderer, Format, Rendered, UnknownFormat,
    Unsupported,
};
pub use view::bench::bottleneck_name;
pub use view::find_max::{find_max_recovery_line, find_max_step_line};

/// The find-max report people read (the text format of a search).
pub use render::text::find_max::render as find_max_text;

/// A find-max search as pretty JSON, every step's derived summary present.
pub use render::json::find_max::render as find_max_json;

/// A bench as pretty JSON: the model is the schema.
pub use render::json::bench::render as bench_json;

#[cfg(test)]
pub(crate) mod fixtures;
