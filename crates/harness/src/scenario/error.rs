//! One user mistake in a scenario file as one line: file, line (when toml knows it), key path,
//! problem and fix. Also maps toml's errors (a message and a byte span) to that line, finding
//! the key path from the table headers above the span.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

const DOCS: &str = "see docs/scenarios.md";

/// One user mistake in a scenario file, displayed as one line: file, key, problem, fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The scenario file.
    pub file: PathBuf,
    /// The line, when toml knows it (syntax, type and unknown-key errors).
    pub line: Option<usize>,
    /// Key path such as `target[1].ready.timeout`.
    pub key: String,
    /// What is wrong, one line.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}: {}; fix: {}", self.key, self.problem, self.fix)
    }
}

impl ScenarioError {
    /// An error about `key` in `file`; also for runtime failures (exits at once, never ready).
    pub fn new(file: &Path, key: impl Into<String>, problem: impl Into<String>, fix: &str) -> Self {
        Self {
            file: file.to_path_buf(),
            line: None,
            key: key.into(),
            problem: one_line(&problem.into()),
            fix: fix.to_string(),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Maps toml's error (message + byte span) to one line with the line number and key path.
pub(super) fn toml_error(file: &Path, text: &str, e: &toml::de::Error) -> ScenarioError {
    let start = e.span().map_or(0, |s| s.start).min(text.len());
    let msg = one_line(e.message());
    // A key missing from the top level: toml gives an empty span at the document's start, whose
    // first line may belong to a table (or to another key); the table that lacks it is the top
    // level. A table's own missing key spans that table.
    let whole = e.span().is_none_or(|s| s.start == 0 && s.is_empty());
    if msg.starts_with("missing field") && whole {
        return ScenarioError::new(file, "(top level)", msg, "add the missing key at the top of the file, before the first [table] (see docs/scenarios.md)");
    }
    let line = text[..start].matches('\n').count() + 1;
    let key = key_path_at(text, line);
    let fix = if msg.starts_with("unknown field") {
        "remove the key or correct its spelling (every key is listed in docs/scenarios.md)"
    } else if msg.starts_with("missing field") {
        "add the missing key (see docs/scenarios.md)"
    } else {
        DOCS
    };
    ScenarioError {
        line: Some(line),
        ..ScenarioError::new(file, key, msg, fix)
    }
}

/// The dotted key path (`target[1].ready.timeout`) of the key on `line` (1-based), found from the
/// table headers above it; good enough for errors in files written with `[table]` headers.
fn key_path_at(text: &str, line: usize) -> String {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut table = String::new();
    let mut key = String::new();
    for l in text.lines().take(line) {
        let l = l.trim();
        if let Some(h) = l.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            let h = h.trim().to_string();
            counts.retain(|k, _| !k.starts_with(&format!("{h}.")));
            let n = *counts.entry(h.clone()).and_modify(|n| *n += 1).or_insert(0);
            table = format!("{}[{n}]", index_parents(&h, &counts));
            key.clear();
        } else if let Some(h) = l.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = index_parents(h.trim(), &counts);
            key.clear();
        } else if let Some((k, _)) = l.split_once('=') {
            key = k.trim().trim_matches('"').to_string();
        }
    }
    match (table.is_empty(), key.is_empty()) {
        (true, true) => "(top level)".into(),
        (true, false) => key,
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    }
}

/// `target.ready` → `target[1].ready` when `target` is an array of tables seen twice.
fn index_parents(header: &str, counts: &HashMap<String, usize>) -> String {
    let parts: Vec<&str> = header.split('.').collect();
    let mut out = Vec::new();
    for i in 0..parts.len() {
        let prefix = parts[..=i].join(".");
        match counts.get(&prefix) {
            Some(n) if i + 1 < parts.len() => out.push(format!("{}[{n}]", parts[i])),
            _ => out.push(parts[i].to_string()),
        }
    }
    out.join(".")
}
