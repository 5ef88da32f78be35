//! What every renderer takes: the user's presentation choices ([`RenderOptions`]) and, for a
//! run, the [`Renderer`] trait each format's run renderer implements. Nothing here knows a
//! format; the formats and the dispatch are in `render`.

use loadbench_model::RunResult;
use std::io::Write;

/// The percentiles shown when the user gives no `--percentiles`.
pub const DEFAULT_PERCENTILES: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];

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
