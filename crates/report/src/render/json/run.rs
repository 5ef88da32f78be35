//! The result as pretty JSON. The serde model *is* the schema, so this exporter adds nothing of
//! its own: it only makes sure the derived summary is present before writing.

use crate::options::{RenderOptions, Renderer};
use loadbench_model::RunResult;
use std::borrow::Cow;
use std::io::Write;

/// Pretty JSON of [`RunResult`], readable back with [`RunResult::from_json`].
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonRenderer;

impl Renderer for JsonRenderer {
    fn render(
        &self,
        result: &RunResult,
        _: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &finalized(result))?;
        writeln!(out)
    }
}

fn finalized(result: &RunResult) -> Cow<'_, RunResult> {
    if result.summary.is_some() {
        return Cow::Borrowed(result);
    }
    let mut owned = result.clone();
    owned.finalize();
    Cow::Owned(owned)
}

#[cfg(test)]
mod tests {
    use crate::{fixtures, render_to_string, Format, RenderOptions};
    use loadbench_model::RunResult;

    #[test]
    fn round_trips_through_from_json() {
        let original = fixtures::busy();
        let text = render_to_string(Format::Json, &original, &RenderOptions::default());
        let back = RunResult::from_json(&text).unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn writes_the_summary_even_when_missing() {
        let mut r = fixtures::busy();
        r.summary = None;
        let text = render_to_string(Format::Json, &r, &RenderOptions::default());
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["summary"]["errors"], 5);
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn empty_result_round_trips() {
        let mut empty = fixtures::empty();
        let text = render_to_string(Format::Json, &empty, &RenderOptions::default());
        empty.finalize();
        assert_eq!(RunResult::from_json(&text).unwrap(), empty);
    }
}
