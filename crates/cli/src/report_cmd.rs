//! `loadbench report RESULT.json`: re-render a saved result (a `run`, a `find-max` or a
//! `bench`, told apart by the file's `kind`) in any format, to stdout or atomically to a file;
//! with HTML, the chart files go beside the page (both through [`crate::output`]). Also the one
//! place that reads result files for the CLI (`compare` uses [`load`]), so every malformed or
//! foreign file gets the same one-line diagnosis naming the file and the fix, and exit code 2.

use crate::args::ReportArgs;
use crate::{output, UserError};
use anyhow::Result;
use loadbench_model::{ResultReadError, SavedResult, OLDEST_SCHEMA_VERSION, SCHEMA_VERSION};
use loadbench_report::{RenderOptions, DEFAULT_PERCENTILES};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) fn report(a: ReportArgs) -> Result<ExitCode> {
    let saved = load(&a.result)?;
    let opts = options(&saved, a.percentiles.as_deref())?;
    let Some(path) = &a.output else {
        output::print(&saved, a.format, &opts)?;
        return Ok(ExitCode::SUCCESS);
    };
    let charts = output::write(path, &saved, a.format, &opts)?;
    eprintln!("{}", written(path, &charts));
    Ok(ExitCode::SUCCESS)
}

/// The run's own percentiles unless `--percentiles` says otherwise.
fn options(saved: &SavedResult, percentiles: Option<&str>) -> Result<RenderOptions, UserError> {
    let own = saved.as_run().map(|r| &r.config.percentiles);
    let percentiles = match (percentiles, own) {
        (Some(text), _) => loadbench_plan::units::percentiles(text)
            .map_err(|e| UserError(format!("--percentiles {e}")))?,
        (None, Some(own)) if !own.is_empty() => own.clone(),
        (None, _) => DEFAULT_PERCENTILES.to_vec(),
    };
    Ok(RenderOptions {
        percentiles,
        color: false,
    })
}

fn written(page: &Path, charts: &[PathBuf]) -> String {
    let mut line = format!("report written to {}", page.display());
    if !charts.is_empty() {
        let names: Vec<String> = charts
            .iter()
            .map(|c| {
                c.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        line += &format!(", charts beside it: {}", names.join(", "));
    }
    line
}

/// What a run, find-max or bench writes, for the hints below.
const WRITERS: &str =
    "`loadbench run --save FILE` (or `-o json`), `loadbench find-max --save FILE` or `loadbench bench`";

/// Reads a saved result of any kind. Every way a file can be wrong is one line naming the
/// file, the problem and the fix.
pub(crate) fn load(path: &Path) -> Result<SavedResult, UserError> {
    let name = path.display().to_string();
    let not_text = || {
        UserError(format!(
            "{name} is not a text file, so not a loadbench result: give a file written by {WRITERS}"
        ))
    };
    let text = loadbench_plan::InputFile::RESULT
        .read(path)
        .map_err(|e| UserError(e.to_string()))?;
    if text.contains(&0) {
        return Err(not_text());
    }
    let text = String::from_utf8(text).map_err(|_| not_text())?;
    if text.trim().is_empty() {
        return Err(UserError(format!(
            "{name} is empty: give a file written by {WRITERS}"
        )));
    }
    SavedResult::from_json(&text).map_err(|e| unreadable(&name, e))
}

/// The model's reason, worded for the file at hand with the fix.
fn unreadable(name: &str, e: ResultReadError) -> UserError {
    let kinds = "(it reads \"run\", \"find_max\" and \"bench\"): give a file written by";
    UserError(match e {
        ResultReadError::NotJson(detail) => {
            format!("{name} is not JSON ({detail}): give a file written by {WRITERS}")
        }
        ResultReadError::Truncated { line, column } => format!(
            "{name} is truncated (the JSON ends early, at line {line} column {column}): it was cut off while being written or copied; use the complete file or run the test again"
        ),
        ResultReadError::NotAResult => format!(
            "{name} is JSON but not a loadbench result (no schema_version): give a file written by {WRITERS}"
        ),
        ResultReadError::Version(v) => format!(
            "{name} has schema_version {v}, but this loadbench reads schema_version {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION}: use the loadbench version that wrote it, or run the test again"
        ),
        ResultReadError::NoKind => {
            format!("{name} has no \"kind\", which this loadbench cannot read {kinds} {WRITERS}")
        }
        ResultReadError::UnknownKind(kind) => format!(
            "{name} is of kind \"{kind}\", which this loadbench cannot read {kinds} {WRITERS}"
        ),
        ResultReadError::Invalid(i) => format!(
            "{name} is not a valid loadbench {} result ({}): it was edited or written by another program; run the test again",
            i.kind.name(),
            i.detail
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<SavedResult, UserError> {
        let dir =
            std::env::temp_dir().join(format!("loadbench-report-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Tests run in parallel: every call gets a file of its own.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("r{n}.json"));
        std::fs::write(&path, text).unwrap();
        let r = load(&path);
        std::fs::remove_file(&path).unwrap();
        r
    }

    fn message(text: &str) -> String {
        load_text(text).unwrap_err().0
    }

    #[test]
    fn each_kind_of_bad_file_is_named() {
        assert!(message("").contains("is empty"));
        assert!(message("hello").contains("is not JSON"));
        assert!(
            message(r#"{"schema_version": 2, "kind": "run", "config": {"#).contains("is truncated")
        );
        assert!(message(r#"{"name": "wrk", "requests": 10}"#).contains("not a loadbench result"));
        assert!(message(r#"{"schema_version": 9, "kind": "run"}"#).contains("schema_version 9"));
        assert!(message(r#"{"schema_version": 2, "kind": "nope"}"#).contains("kind \"nope\""));
        let m = message(r#"{"schema_version": 2, "kind": "bench", "rounds": 3}"#);
        assert!(m.contains("not a valid loadbench bench result ("), "{m}");
        assert!(message(r#"{"schema_version": 2}"#).contains("has no \"kind\""));
        let m = message(r#"{"schema_version": 2, "kind": "run"}"#);
        assert!(
            m.contains("not a valid loadbench run result (missing field"),
            "{m}"
        );
        assert!(message("[1, 2]").contains("not a loadbench result"));
    }

    #[test]
    fn every_message_is_one_line() {
        for text in [
            "",
            "{",
            "x",
            "{\"schema_version\": 2, \"kind\": \"run\", \"stats\": 3}",
        ] {
            assert!(!message(text).contains('\n'), "{text}");
        }
    }
}
