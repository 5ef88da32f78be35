//! `loadbench compare BASE.json NEW.json`: read two saved run results (or two bench results),
//! compare them with `loadbench_report::compare` (Welch's t-test on per-second values of runs,
//! across rounds of benches; docs/compare.md), print the table, and turn the verdict into an exit code a CI job can gate on: 1 when req/s fell or p99
//! rose beyond the threshold with p < 0.05, 0 otherwise, 2 for bad input (including two
//! benches that share no target × load × level: nothing compared must never pass), 3 when
//! either result was measured on a busy host (no verdict; `--ignore-host` judges anyway).

use crate::args::CompareArgs;
use crate::report_cmd::load;
use crate::UserError;
use anyhow::Result;
use clap::ValueEnum;
use loadbench_model::{BenchResult, RunResult, SavedResult};
use loadbench_report::compare::{BenchComparison, Comparison};
use std::path::Path;
use std::process::ExitCode;

/// What `compare -f` can ask for: a comparison is a table for people, not a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompareFormat {
    Text,
    /// Markdown, for a pull request.
    #[value(alias = "markdown")]
    Md,
}

pub(crate) fn compare(a: CompareArgs) -> Result<ExitCode> {
    let threshold = parse_threshold(&a.threshold)?;
    let format = a.format;
    let new_path = a.new.as_deref().ok_or_else(|| {
        UserError(
            "compare needs two results, BASE.json NEW.json (or --against-history LABELS NEW.json)"
                .into(),
        )
    })?;
    let names = [a.base.display().to_string(), new_path.display().to_string()];
    let names = [names[0].as_str(), names[1].as_str()];
    let (base, new) = (comparable(&a.base)?, comparable(new_path)?);
    let busy = [base.busy_host(), new.busy_host()];
    let (report, failing) = match (base, new) {
        (Side::Run(base), Side::Run(new)) => {
            let c = Comparison::of(names, &base, &new, threshold);
            (
                pick(format, c.text(), c.markdown()),
                !c.failing().is_empty(),
            )
        }
        (Side::Bench(base), Side::Bench(new)) => {
            let c = BenchComparison::of(names, &base, &new, threshold);
            if let Some(line) = c.nothing_shared {
                return Err(UserError(line).into());
            }
            (
                pick(format, c.text(), c.markdown()),
                !c.failing().is_empty(),
            )
        }
        (base, new) => return Err(mixed(names, &base, &new).into()),
    };
    crate::output::stdout(&report)?;
    if !a.ignore_host {
        if let Some(line) = not_judged(names, &busy, failing) {
            eprintln!("{line}");
            return Ok(ExitCode::from(3));
        }
    }
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn pick(format: CompareFormat, text: String, markdown: String) -> String {
    match format {
        CompareFormat::Md => markdown,
        CompareFormat::Text => text,
    }
}

/// A result compare can read: a run or a bench.
enum Side {
    Run(Box<RunResult>),
    Bench(Box<BenchResult>),
}

impl Side {
    /// The busy-host finding's sentence: of the run, or of the first bench step that has one.
    fn busy_host(&self) -> Option<String> {
        match self {
            Side::Run(r) => r.why.busy_host().map(|f| f.text.clone()),
            Side::Bench(b) => b.rounds.iter().find_map(|r| {
                r.why
                    .busy_host()
                    .map(|f| format!("{} (step {}, {})", f.text, r.step, r.target))
            }),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Side::Run(_) => "run",
            Side::Bench(_) => "bench",
        }
    }
}

/// The line `compare` prints instead of a verdict when a side was measured on a busy host.
fn not_judged(names: [&str; 2], busy: &[Option<String>; 2], failing: bool) -> Option<String> {
    let sides: Vec<String> = names
        .iter()
        .zip(busy)
        .filter_map(|(n, b)| b.as_ref().map(|b| format!("{n}: {b}")))
        .collect();
    if sides.is_empty() {
        return None;
    }
    let would = if failing {
        "the difference above would read as a regression"
    } else {
        "no regression is seen above"
    };
    Some(format!(
        "not judged (exit 3): measured on a busy host, {}; {would}, but a busy host moves req/s and latency by itself: rerun both on a quiet host, or pass --ignore-host to judge anyway",
        sides.join("; ")
    ))
}

fn mixed(names: [&str; 2], base: &Side, new: &Side) -> UserError {
    UserError(format!(
        "{} is a {} result but {} is a {} result: compare two runs or two benches",
        names[0],
        base.kind(),
        names[1],
        new.kind()
    ))
}

fn comparable(path: &Path) -> Result<Side, UserError> {
    match load(path)? {
        SavedResult::Run(r) => Ok(Side::Run(r)),
        SavedResult::Bench(r) => Ok(Side::Bench(r)),
        SavedResult::FindMax(_) => Err(UserError(format!(
            "{} is a find-max result; compare reads `loadbench run` and `loadbench bench` results: compare the runs themselves (`loadbench run --save`), or read both searches with `loadbench report`",
            path.display()
        ))),
    }
}

/// `5%` or `0.05`. A bare number above 1 is refused: `5` most likely means 5%, not 500%.
pub(crate) fn parse_threshold(text: &str) -> Result<f64, UserError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0).ok(),
        None => t.parse::<f64>().ok().filter(|v| *v <= 1.0),
    };
    match value {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(UserError(format!(
            "--threshold '{text}' is not a share: give a percentage such as 5% or a fraction such as 0.05"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_as_percent_or_fraction() {
        assert_eq!(parse_threshold("5%").unwrap(), 0.05);
        assert_eq!(parse_threshold(" 12.5 % ").unwrap(), 0.125);
        assert_eq!(parse_threshold("0.05").unwrap(), 0.05);
        assert_eq!(parse_threshold("0").unwrap(), 0.0);
        assert_eq!(parse_threshold("150%").unwrap(), 1.5);
        for bad in ["5", "-1%", "x", "", "NaN%", "inf"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_are_text_or_markdown() {
        use crate::args::Cli;
        use clap::Parser;
        let format = |f: &str| {
            let args = ["loadbench", "compare", "a.json", "b.json", "-f", f];
            match Cli::try_parse_from(args).map(|c| c.command) {
                Ok(crate::args::Command::Compare(a)) => Ok(a.format),
                Ok(_) => unreachable!("compare parses as compare"),
                Err(e) => Err(e.to_string()),
            }
        };
        assert_eq!(format("md").unwrap(), CompareFormat::Md);
        assert_eq!(format("markdown").unwrap(), CompareFormat::Md);
        let csv = format("csv").unwrap_err();
        assert!(
            csv.contains("--format csv is not available for compare: use text or md"),
            "{csv}"
        );
    }
}
