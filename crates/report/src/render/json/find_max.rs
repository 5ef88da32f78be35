//! A find-max search as pretty JSON: the model is the schema.

use loadbench_model::FindMaxResult;
use std::borrow::Cow;

/// The result as pretty JSON, with every step's derived summary present.
pub fn render(result: &FindMaxResult) -> String {
    let finalized = finalized(result);
    let mut text =
        serde_json::to_string_pretty(finalized.as_ref()).expect("the model serializes to JSON");
    text.push('\n');
    text
}

fn finalized(result: &FindMaxResult) -> Cow<'_, FindMaxResult> {
    if result.steps.iter().all(|s| s.run.summary.is_some()) {
        return Cow::Borrowed(result);
    }
    let mut owned = result.clone();
    owned.steps.iter_mut().for_each(|s| s.run.finalize());
    Cow::Owned(owned)
}
