//! A bench as pretty JSON: the model is the schema.

use loadbench_model::BenchResult;

/// The result as pretty JSON: the model is the schema.
pub fn render(result: &BenchResult) -> String {
    let mut text = serde_json::to_string_pretty(result).expect("the model serializes to JSON");
    text.push('\n');
    text
}
