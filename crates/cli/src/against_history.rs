//! `loadbench compare --against-history LABELS NEW.json`: the new result's headline figures
//! against the spread of the last N runs in the history with those labels and the same target
//! and load (a bench: each target × load × level), judged by
//! [`loadbench_history::spread::judge`] (outside the 95% prediction interval and beyond the
//! threshold; docs/history.md). Exit codes as `compare`'s: 1 on a regression, 0 otherwise,
//! 2 for bad input, 3 for no verdict (fewer than 3 matching runs in the history for every
//! series; or a new result measured on a busy host, unless `--ignore-host`).

use crate::args::CompareArgs;
use crate::compare_cmd::{parse_threshold, CompareFormat};
use crate::history_cmd::{aligned, history_error, open_existing};
use crate::UserError;
use anyhow::Result;
use loadbench_history::spread::{judge, Judgement, Verdict, MIN_HISTORY};
use loadbench_history::{Entry, Figures, Kind, Labels, Query};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::SavedResult;
use loadbench_report::markup::markdown::{self, Align};
use std::process::ExitCode;

/// A headline figure judged against the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Rps,
    P50,
    P99,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Rps => "req/s",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
        }
    }

    fn of(self, f: &Figures) -> Option<f64> {
        match self {
            Metric::Rps => f.requests_per_sec,
            Metric::P50 => f.p50_us,
            Metric::P99 => f.p99_us,
        }
    }

    fn format(self, v: f64) -> String {
        match self {
            Metric::Rps => units::rate(v),
            Metric::P50 | Metric::P99 => units::duration_us(v),
        }
    }
}

/// `--metrics rps,p50,p99`.
fn metrics(text: &str) -> Result<Vec<Metric>, UserError> {
    let mut out = Vec::new();
    for m in text.split(',').map(str::trim) {
        let metric = match m {
            "rps" | "req/s" => Metric::Rps,
            "p50" => Metric::P50,
            "p99" => Metric::P99,
            _ => {
                return Err(UserError(format!(
                    "--metrics '{text}': '{m}' is not a metric: give rps, p50 and/or p99, comma-separated"
                )))
            }
        };
        if !out.contains(&metric) {
            out.push(metric);
        }
    }
    Ok(out)
}

/// `--against-history 'branch=main,env=ci'`; empty for any run.
fn labels(text: &str) -> Result<Labels, UserError> {
    let mut pairs = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let pair = Labels::parse_one(part).map_err(|_| {
            UserError(format!(
                "--against-history '{text}': '{part}' is not key=value: give labels such as 'branch=main' (comma-separated), or '' for any run"
            ))
        })?;
        pairs.push(pair);
    }
    Ok(Labels::from_pairs(pairs))
}

/// One series of the new result: its target, load and figures.
struct Subject {
    target: String,
    load: String,
    figures: Figures,
}

pub(crate) fn compare(a: &CompareArgs) -> Result<ExitCode> {
    let threshold = parse_threshold(&a.threshold)?;
    let labels = labels(a.against_history.as_deref().unwrap_or_default())?;
    let metrics = metrics(&a.metrics)?;
    if a.last < MIN_HISTORY {
        return Err(UserError(format!(
            "--last {} is too few to judge a spread: give {MIN_HISTORY} or more",
            a.last
        ))
        .into());
    }
    let saved = crate::report_cmd::load(&a.base)?;
    let entry = Entry::of(&saved, String::new());
    let history = open_existing(a.db.as_deref())?;
    let mut judging = Judging {
        rows: Vec::new(),
        judged: 0,
        failing: false,
        too_few: Vec::new(),
    };
    for s in &subjects(&entry) {
        let q = Query {
            labels: labels.clone(),
            target: Some(s.target.clone()),
            load: Some(s.load.clone()),
            kind: Some(entry.kind),
            last: None,
        };
        let mut points = history.points(&q).map_err(history_error)?;
        // The new result itself, when it was already appended, is no part of its history.
        points.retain(|p| p.time != entry.time);
        let skip = points.len().saturating_sub(a.last);
        let figures: Vec<Figures> = points[skip..].iter().map(|p| p.figures.clone()).collect();
        judging.subject(s, &figures, &metrics, threshold);
    }
    if !judging.rows.is_empty() {
        let labels_text = match labels.joined() {
            t if t.is_empty() => "any labels".to_string(),
            t => t,
        };
        let intro = format!(
            "{} against the last {} runs with {labels_text} in {} (regression: outside the 95% prediction interval and beyond {})\n\n",
            a.base.display(),
            a.last,
            history.path().display(),
            units::percent(threshold)
        );
        crate::output::stdout(&format!("{intro}{}", judging.table(a.format)))?;
    }
    Ok(judging.exit_code(a, busy_host(&saved).as_deref()))
}

/// The rows so far and what they add up to.
struct Judging {
    rows: Vec<Vec<String>>,
    /// Metrics with a verdict.
    judged: usize,
    /// A regression among them.
    failing: bool,
    /// The series with too few runs in the history, said as such.
    too_few: Vec<String>,
}

impl Judging {
    /// Judges each metric of `s` against `history` (its series' figures, oldest first).
    fn subject(&mut self, s: &Subject, history: &[Figures], metrics: &[Metric], threshold: f64) {
        if history.len() < MIN_HISTORY {
            self.too_few.push(format!(
                "{} × {}: {} matching",
                s.target,
                s.load,
                history.len()
            ));
            return;
        }
        for &m in metrics {
            let values: Vec<f64> = history.iter().filter_map(|f| m.of(f)).collect();
            let j = m
                .of(&s.figures)
                .and_then(|new| judge(&values, new, m == Metric::Rps, threshold));
            if let Some(j) = &j {
                self.judged += 1;
                self.failing |= j.verdict == Verdict::Regression;
            }
            self.rows.push(row(s, m, values.len(), j.as_ref()));
        }
    }

    fn table(&self, format: CompareFormat) -> String {
        let head = [
            "target",
            "load",
            "metric",
            "history",
            "n",
            "95% interval",
            "new",
            "change",
            "verdict",
        ];
        match format {
            CompareFormat::Text => {
                let mut all = vec![head.iter().map(ToString::to_string).collect()];
                all.extend(self.rows.iter().cloned());
                aligned(&all)
            }
            CompareFormat::Md => {
                let mut align = vec![Align::Left; 3];
                align.extend([Align::Right; 5]);
                align.push(Align::Left);
                markdown::table(&head, &align, &self.rows)
            }
        }
    }

    /// 3 when nothing could be judged or the new result was measured on a `busy` host (unless
    /// --ignore-host), else 1 on a regression, else 0; the reason for a 3 on stderr.
    fn exit_code(&self, a: &CompareArgs, busy: Option<&str>) -> ExitCode {
        if self.judged == 0 {
            eprintln!(
                "not judged (exit 3): too few runs in the history to judge a spread (at least {MIN_HISTORY} needed): {}; append more with --history and matching --label",
                self.too_few.join("; ")
            );
            return ExitCode::from(3);
        }
        if !self.too_few.is_empty() {
            eprintln!(
                "not judged, too few runs in the history: {}",
                self.too_few.join("; ")
            );
        }
        if let (Some(b), false) = (busy, a.ignore_host) {
            let would = if self.failing {
                "the figures above would read as a regression"
            } else {
                "no regression is seen above"
            };
            eprintln!("not judged (exit 3): {} was measured on a busy host, {b}; {would}, but a busy host moves req/s and latency by itself: rerun on a quiet host, or pass --ignore-host to judge anyway", a.base.display());
            return ExitCode::from(3);
        }
        if self.failing {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// The series of the new result: a run's one, a bench's cells.
fn subjects(entry: &Entry) -> Vec<Subject> {
    match entry.kind {
        Kind::Bench => entry
            .cells
            .iter()
            .map(|c| Subject {
                target: c.target.clone(),
                load: format!("{} {}", c.load, c.level),
                figures: c.figures.clone(),
            })
            .collect(),
        _ => vec![Subject {
            target: entry.target.clone(),
            load: entry.load.clone(),
            figures: entry.figures.clone(),
        }],
    }
}

fn row(s: &Subject, m: Metric, n: usize, j: Option<&Judgement>) -> Vec<String> {
    let mut row = vec![s.target.clone(), s.load.clone(), m.name().to_string()];
    match j {
        Some(j) => row.extend([
            format!("{} ± {}", m.format(j.mean), m.format(j.stdev)),
            j.n.to_string(),
            format!(
                "{}–{}",
                m.format(j.interval.0.max(0.0)),
                m.format(j.interval.1)
            ),
            m.format(j.new),
            j.change
                .map_or_else(|| MISSING.to_string(), |c| format!("{:+.1}%", c * 100.0)),
            j.verdict.label().to_string(),
        ]),
        None => row.extend([
            MISSING.to_string(),
            n.to_string(),
            MISSING.to_string(),
            m.of(&s.figures)
                .map_or_else(|| MISSING.to_string(), |v| m.format(v)),
            MISSING.to_string(),
            "untested".to_string(),
        ]),
    }
    row
}

/// The busy-host finding of the new result (a bench: of its first step that has one).
fn busy_host(saved: &SavedResult) -> Option<String> {
    match saved {
        SavedResult::Run(r) => r.why.busy_host().map(|f| f.text.clone()),
        SavedResult::Bench(b) => b
            .rounds
            .iter()
            .find_map(|r| r.why.busy_host().map(|f| f.text.clone())),
        SavedResult::FindMax(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_and_labels_parse() {
        assert_eq!(metrics("p50").unwrap(), [Metric::P50]);
        assert_eq!(metrics("rps, p99,rps").unwrap(), [Metric::Rps, Metric::P99]);
        assert!(metrics("p90").unwrap_err().0.starts_with("--metrics 'p90'"));
        assert_eq!(
            labels("branch=main,env=ci").unwrap().joined(),
            "branch=main,env=ci"
        );
        assert!(labels("").unwrap().0.is_empty());
        assert!(labels("main")
            .unwrap_err()
            .0
            .starts_with("--against-history"));
    }
}
