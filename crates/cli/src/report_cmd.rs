//! `loadbench report RESULT.json`: re-render a saved result (a `run`, a `find-max` or a
//! `bench`, told apart by the file's `kind`) in any format, to stdout or atomically to a file; with HTML, the
//! chart SVGs go beside the page. Also the one place that reads result files for the CLI
//! (`compare` uses [`load`]), so every malformed or foreign file gets the same one-line
//! diagnosis and exit code 2, and [`write_html_run`] / [`write_html_find_max`] /
//! [`write_html_bench`] for `--html`, and [`render_bench`] for what `bench` prints.

use crate::args::ReportArgs;
use crate::{save, UserError};
use anyhow::Result;
use loadbench_model::{BenchResult, FindMaxResult, ResultReadError, RunResult, SCHEMA_VERSION};
use loadbench_report::{html, markdown, Format, RenderOptions, DEFAULT_PERCENTILES};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A result file read back.
#[derive(Debug)]
pub enum Saved {
    Run(Box<RunResult>),
    FindMax(Box<FindMaxResult>),
    Bench(Box<BenchResult>),
}

pub fn report(a: ReportArgs) -> Result<ExitCode> {
    let format: Format = a
        .format
        .parse()
        .map_err(|e| UserError(format!("--format: {e}")))?;
    let saved = load(&a.result)?;
    let opts = options(&saved, a.percentiles.as_deref())?;
    let rendered = render(&saved, format, &opts)?;
    let Some(path) = &a.output else {
        print!("{rendered}");
        return Ok(ExitCode::SUCCESS);
    };
    save::write_atomic(path, rendered.as_bytes())?;
    let charts = match (&saved, format) {
        (Saved::Run(r), Format::Html) => html::write_chart_files(r, beside(path))?,
        (Saved::FindMax(r), Format::Html) => html::write_find_max_chart_files(r, beside(path))?,
        (Saved::Bench(r), Format::Html) => html::write_bench_chart_files(r, beside(path))?,
        _ => Vec::new(),
    };
    eprintln!("{}", written(path, &charts));
    Ok(ExitCode::SUCCESS)
}

/// The run's own percentiles unless `--percentiles` says otherwise.
fn options(saved: &Saved, percentiles: Option<&str>) -> Result<RenderOptions, UserError> {
    let percentiles = match (percentiles, saved) {
        (Some(text), _) => {
            loadbench_plan::parse_percentiles(text).map_err(|e| UserError(e.to_string()))?
        }
        (None, Saved::Run(r)) if !r.config.percentiles.is_empty() => r.config.percentiles.clone(),
        (None, _) => DEFAULT_PERCENTILES.to_vec(),
    };
    Ok(RenderOptions {
        percentiles,
        color: false,
    })
}

fn render(saved: &Saved, format: Format, opts: &RenderOptions) -> Result<String, UserError> {
    let r = match saved {
        Saved::Run(r) => return Ok(loadbench_report::render_to_string(format, r, opts)),
        Saved::Bench(r) => return Ok(render_bench(format, r)),
        Saved::FindMax(r) => r,
    };
    Ok(match format {
        Format::Text => loadbench_report::find_max_text(r),
        Format::Json => loadbench_report::find_max_json(r),
        Format::Markdown => markdown::render_find_max(r, opts),
        Format::Html => html::render_find_max(r, opts),
        Format::Csv => {
            return Err(UserError(
                "--format csv is not available for a find-max result: use text, md, json or html"
                    .into(),
            ))
        }
    })
}

/// The directory a page's charts go to: the page's own.
fn beside(page: &Path) -> &Path {
    page.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
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

/// Writes a run's HTML page to `path` (atomically) and its chart SVGs beside it.
pub fn write_html_run(path: &Path, result: &RunResult, opts: &RenderOptions) -> Result<()> {
    let page = loadbench_report::render_to_string(Format::Html, result, opts);
    save::write_atomic(path, page.as_bytes())?;
    html::write_chart_files(result, beside(path))
        .map_err(|e| anyhow::anyhow!("cannot write the charts beside {}: {e}", path.display()))?;
    Ok(())
}

/// Writes a find-max search's HTML page to `path` (atomically) and its chart SVGs beside it.
pub fn write_html_find_max(path: &Path, result: &FindMaxResult) -> Result<()> {
    let page = html::render_find_max(result, &RenderOptions::default());
    save::write_atomic(path, page.as_bytes())?;
    html::write_find_max_chart_files(result, beside(path))
        .map_err(|e| anyhow::anyhow!("cannot write the charts beside {}: {e}", path.display()))?;
    Ok(())
}

/// Writes a bench's HTML page to `path` (atomically) and its chart SVGs and PNGs beside it.
pub fn write_html_bench(path: &Path, result: &BenchResult) -> Result<()> {
    let page = render_bench(Format::Html, result);
    save::write_atomic(path, page.as_bytes())?;
    html::write_bench_chart_files(result, beside(path))
        .map_err(|e| anyhow::anyhow!("cannot write the charts beside {}: {e}", path.display()))?;
    Ok(())
}

/// A bench result in any format (text for the end of `loadbench bench`).
pub fn render_bench(format: Format, result: &BenchResult) -> String {
    loadbench_report::render_bench(format, result)
}

/// What a run, find-max or bench writes, for the hints below.
const WRITERS: &str =
    "`loadbench run --save FILE` (or `-o json`), `loadbench find-max --save FILE` or `loadbench bench`";

/// Reads a saved result of either kind. Every way a file can be wrong is one line naming the
/// file, the problem and the fix.
pub fn load(path: &Path) -> Result<Saved, UserError> {
    let name = path.display();
    let text = std::fs::read(path)
        .map_err(|e| UserError(format!("cannot read {name}: {e}; check the path")))?;
    let text = String::from_utf8(text).map_err(|_| {
        UserError(format!(
            "{name} is not a text file, so not a loadbench result: give a file written by {WRITERS}"
        ))
    })?;
    let probe = probe(&name.to_string(), &text)?;
    let kind = probe.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let read = match kind {
        "run" => RunResult::from_json(&text).map(|r| Saved::Run(Box::new(r))),
        "find_max" => FindMaxResult::from_json(&text).map(|r| Saved::FindMax(Box::new(r))),
        "bench" => BenchResult::from_json(&text).map(|r| Saved::Bench(Box::new(r))),
        other => {
            let what = if other.is_empty() {
                "has no \"kind\"".to_string()
            } else {
                format!("is of kind \"{other}\"")
            };
            return Err(UserError(format!(
                "{name} {what}, which this loadbench cannot read (it reads \"run\", \"find_max\" and \"bench\"): give a file written by {WRITERS}"
            )));
        }
    };
    read.map_err(|e| invalid(&name.to_string(), kind, e))
}

/// Parses just enough to tell JSON from not, a loadbench result from another tool's JSON, and
/// this schema version from another.
fn probe(name: &str, text: &str) -> Result<serde_json::Value, UserError> {
    if text.trim().is_empty() {
        return Err(UserError(format!(
            "{name} is empty: give a file written by {WRITERS}"
        )));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        UserError(if e.is_eof() {
            format!(
                "{name} is truncated (the JSON ends early, at line {} column {}): it was cut off while being written or copied; use the complete file or run the test again",
                e.line(),
                e.column()
            )
        } else {
            format!("{name} is not JSON ({e}): give a file written by {WRITERS}")
        })
    })?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => Ok(value),
        Some(v) => Err(UserError(format!(
            "{name} has schema_version {v}, but this loadbench reads schema_version {SCHEMA_VERSION}: use the loadbench version that wrote it, or run the test again"
        ))),
        None => Err(UserError(format!(
            "{name} is JSON but not a loadbench result (no schema_version): give a file written by {WRITERS}"
        ))),
    }
}

fn invalid(name: &str, kind: &str, e: ResultReadError) -> UserError {
    let detail = match e {
        ResultReadError::Invalid(d) => d.detail,
        ResultReadError::NotJson(d) => d,
        other => other.to_string(),
    };
    UserError(format!(
        "{name} is not a valid loadbench {kind} result ({detail}): it was edited or written by another program; run the test again"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Saved, UserError> {
        let dir =
            std::env::temp_dir().join(format!("loadbench-report-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("r{}.json", text.len()));
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
            message(r#"{"schema_version": 1, "kind": "run", "config": {"#).contains("is truncated")
        );
        assert!(message(r#"{"name": "wrk", "requests": 10}"#).contains("not a loadbench result"));
        assert!(message(r#"{"schema_version": 9, "kind": "run"}"#).contains("schema_version 9"));
        assert!(message(r#"{"schema_version": 1, "kind": "nope"}"#).contains("kind \"nope\""));
        let m = message(r#"{"schema_version": 1, "kind": "bench", "rounds": 3}"#);
        assert!(m.contains("not a valid loadbench bench result ("), "{m}");
        assert!(message(r#"{"schema_version": 1}"#).contains("has no \"kind\""));
        let m = message(r#"{"schema_version": 1, "kind": "run"}"#);
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
            "{\"schema_version\": 1, \"kind\": \"run\", \"stats\": 3}",
        ] {
            assert!(!message(text).contains('\n'), "{text}");
        }
    }

    #[test]
    fn charts_go_beside_the_page() {
        assert_eq!(beside(Path::new("page.html")), Path::new("."));
        assert_eq!(beside(Path::new("out/page.html")), Path::new("out"));
    }
}
