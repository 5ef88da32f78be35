//! Any saved result, read one way. A result file is a [`RunResult`], a [`FindMaxResult`] or a
//! [`BenchResult`], told apart by its own `kind` field; [`SavedResult::from_json`] is the one
//! place that checks the schema version and dispatches on that kind, so every reader (the typed
//! `from_json` functions too) rejects a foreign, truncated or newer file with the same one-line
//! [`ResultReadError`]. The JSON of each kind is exactly its struct's: `SavedResult` adds no
//! wrapper and no field of its own.

use crate::bench::BenchResult;
use crate::find_max::FindMaxResult;
use crate::result::{ResultKind, RunResult, OLDEST_SCHEMA_VERSION, SCHEMA_VERSION};
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// A result file of any kind, as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SavedResult {
    /// A `loadbench run` result (`"kind": "run"`).
    Run(Box<RunResult>),
    /// A `loadbench find-max` result (`"kind": "find_max"`).
    FindMax(Box<FindMaxResult>),
    /// A `loadbench bench` result (`"kind": "bench"`).
    Bench(Box<BenchResult>),
}

impl SavedResult {
    /// Reads a saved result of any kind: checks that the text is JSON, that it is a loadbench
    /// result of a schema version this loadbench reads (an older one is upgraded first), and
    /// reads it as the kind it says it is. Derived figures (run summaries, bench cells) are
    /// recomputed, never trusted from the file.
    pub fn from_json(text: &str) -> Result<SavedResult, ResultReadError> {
        let (kind, value) = checked(text)?;
        Ok(match kind {
            ResultKind::Run => RunResult::from_value(value)?.into(),
            ResultKind::FindMax => FindMaxResult::from_value(value)?.into(),
            ResultKind::Bench => BenchResult::from_value(value)?.into(),
        })
    }

    /// The result as pretty JSON with a final newline, exactly as its own struct serializes.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("the model serializes to JSON");
        text.push('\n');
        text
    }

    /// Which kind of result this is (its `kind` field).
    pub fn kind(&self) -> ResultKind {
        match self {
            SavedResult::Run(_) => ResultKind::Run,
            SavedResult::FindMax(_) => ResultKind::FindMax,
            SavedResult::Bench(_) => ResultKind::Bench,
        }
    }

    /// The run result, when this is one.
    pub fn as_run(&self) -> Option<&RunResult> {
        match self {
            SavedResult::Run(r) => Some(r),
            _ => None,
        }
    }

    /// The find-max result, when this is one.
    pub fn as_find_max(&self) -> Option<&FindMaxResult> {
        match self {
            SavedResult::FindMax(r) => Some(r),
            _ => None,
        }
    }

    /// The bench result, when this is one.
    pub fn as_bench(&self) -> Option<&BenchResult> {
        match self {
            SavedResult::Bench(r) => Some(r),
            _ => None,
        }
    }
}

impl From<RunResult> for SavedResult {
    fn from(r: RunResult) -> Self {
        SavedResult::Run(Box::new(r))
    }
}

impl From<FindMaxResult> for SavedResult {
    fn from(r: FindMaxResult) -> Self {
        SavedResult::FindMax(Box::new(r))
    }
}

impl From<BenchResult> for SavedResult {
    fn from(r: BenchResult) -> Self {
        SavedResult::Bench(Box::new(r))
    }
}

/// The one schema-version check: the document as JSON, brought up to this schema when it is
/// of an older version still read, and the kind it says it is.
fn checked(text: &str) -> Result<(ResultKind, Value), ResultReadError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            ResultReadError::Truncated {
                line: e.line(),
                column: e.column(),
            }
        } else {
            ResultReadError::NotJson(e.to_string())
        }
    })?;
    let readable = u64::from(OLDEST_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION);
    let version = match value.get("schema_version").and_then(Value::as_u64) {
        Some(v) if readable.contains(&v) => v,
        Some(v) => return Err(ResultReadError::Version(v)),
        None => return Err(ResultReadError::NotAResult),
    };
    let kind = match value.get("kind") {
        None => return Err(ResultReadError::NoKind),
        Some(Value::String(name)) => ResultKind::from_name(name),
        Some(_) => None,
    };
    let kind = kind.ok_or_else(|| ResultReadError::UnknownKind(kind_text(&value)))?;
    let mut value = value;
    crate::upgrade::upgrade(kind, version, &mut value);
    Ok((kind, value))
}

/// The `kind` field as the user wrote it, for the error message.
fn kind_text(value: &Value) -> String {
    match &value["kind"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// For the typed readers (`RunResult::from_json`, …): the document, checked, when it is of
/// the `expected` kind.
pub(crate) fn checked_as(text: &str, expected: ResultKind) -> Result<Value, ResultReadError> {
    let (kind, value) = checked(text)?;
    if kind != expected {
        let detail = format!("its kind is \"{}\"", kind.name());
        return Err(ResultReadError::invalid(expected, detail));
    }
    Ok(value)
}

/// A saved result could not be read. Every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum ResultReadError {
    /// The text is not JSON; the parser's message.
    #[error("not JSON ({0})")]
    NotJson(String),
    /// The JSON ends early.
    #[error("truncated: the JSON ends early, at line {line} column {column}")]
    Truncated {
        /// Line where the text ended, 1-based.
        line: usize,
        /// Column where the text ended, 1-based.
        column: usize,
    },
    /// Valid JSON without a `schema_version` field: some other file.
    #[error("not a loadbench result (no schema_version field)")]
    NotAResult,
    /// A `schema_version` outside [`OLDEST_SCHEMA_VERSION`] to [`SCHEMA_VERSION`]; the
    /// version found.
    #[error("schema_version {0} is not supported by this loadbench (it reads {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})")]
    Version(u64),
    /// A result without a `kind` field.
    #[error("no \"kind\" field, so not a result this loadbench reads ({KINDS})")]
    NoKind,
    /// A `kind` this loadbench does not read; the value found, as written.
    #[error("kind \"{0}\" is not a result this loadbench reads ({KINDS})")]
    UnknownKind(String),
    /// A known kind whose content does not fit it (a missing field, a broken histogram).
    #[error("invalid loadbench {0}")]
    Invalid(InvalidResult),
}

/// The kinds a file may have, for the messages above.
const KINDS: &str = "\"run\", \"find_max\" or \"bench\"";

impl ResultReadError {
    pub(crate) fn invalid(kind: ResultKind, detail: impl Into<String>) -> Self {
        ResultReadError::Invalid(InvalidResult {
            kind,
            detail: detail.into(),
        })
    }
}

/// A file of a known kind whose content does not fit that kind (a missing field, a broken
/// histogram).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidResult {
    /// The kind the file says it is (or was expected to be).
    pub kind: ResultKind,
    /// What is wrong, one line.
    pub detail: String,
}

impl fmt::Display for InvalidResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} result: {}", self.kind.name(), self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> ResultReadError {
        SavedResult::from_json(text).unwrap_err()
    }

    #[test]
    fn each_way_a_file_can_be_wrong_is_one_line() {
        let cases = [
            ("hello", "not JSON ("),
            (
                r#"{"schema_version": 2, "kind": "run", "config": {"#,
                "truncated: the JSON ends early, at line 1 column",
            ),
            (r#"{"requests": 10}"#, "not a loadbench result"),
            ("[1, 2]", "not a loadbench result"),
            (
                r#"{"schema_version": 7, "kind": "run"}"#,
                "schema_version 7 is not supported by this loadbench (it reads 2 to 3)",
            ),
            (r#"{"schema_version": 2}"#, "no \"kind\" field"),
            (
                r#"{"schema_version": 2, "kind": "nope"}"#,
                "kind \"nope\" is not a result this loadbench reads",
            ),
            (r#"{"schema_version": 2, "kind": 3}"#, "kind \"3\""),
            (
                r#"{"schema_version": 2, "kind": "bench", "rounds": 3}"#,
                "invalid loadbench bench result: ",
            ),
        ];
        for (text, expected) in cases {
            let message = error(text).to_string();
            assert!(message.starts_with(expected), "{text}: {message}");
            assert!(!message.contains('\n'), "{text}: {message}");
        }
    }

    #[test]
    fn errors_carry_what_the_caller_needs() {
        assert!(matches!(
            error(r#"{"schema_version": 2, "kind": "run", "#),
            ResultReadError::Truncated { line: 1, .. }
        ));
        assert!(matches!(
            error(r#"{"schema_version": 1, "kind": "run"}"#),
            ResultReadError::Version(1)
        ));
        let ResultReadError::Invalid(invalid) =
            error(r#"{"schema_version": 2, "kind": "find_max"}"#)
        else {
            panic!("a find_max file missing its fields is invalid");
        };
        assert_eq!(invalid.kind, ResultKind::FindMax);
        assert!(invalid.detail.starts_with("missing field"), "{invalid}");
    }

    #[test]
    fn typed_readers_name_the_kind_they_were_given() {
        let text = r#"{"schema_version": 2, "kind": "bench"}"#;
        let message = RunResult::from_json(text).unwrap_err().to_string();
        assert_eq!(
            message,
            "invalid loadbench run result: its kind is \"bench\""
        );
    }
}
