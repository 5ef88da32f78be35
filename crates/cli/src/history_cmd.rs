//! The history (docs/history.md) on the command line: `--history` and `--label` of `run`,
//! `find-max` and `bench` ([`HistoryArgs::recorder`] opens and checks the database before the
//! load, [`Recorder::append`] files the result after it), and `loadbench history` (the list,
//! `trend`, `html`). The storage is `loadbench_history`; this module only parses and prints.

use crate::args::{HistoryArgs, HistoryCmdArgs, HistoryFilter, HistoryView};
use crate::UserError;
use anyhow::Result;
use loadbench_history::{Entry, Figures, Git, History, HistoryError, Labels, Point, Query};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::SavedResult;
use loadbench_report::Format;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The path a history flag names: itself, or the default when empty or absent.
pub(crate) fn resolve(path: Option<&Path>) -> Result<PathBuf, UserError> {
    match path.filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => Ok(p.to_path_buf()),
        None => loadbench_history::default_path().ok_or_else(|| {
            UserError("no default history path: neither XDG_DATA_HOME nor HOME is set; give the path (--history=PATH, --db PATH)".into())
        }),
    }
}

/// A history error: the user's wrong file (exit 2) or a failure (exit 1).
pub(crate) fn history_error(e: HistoryError) -> anyhow::Error {
    if e.is_user_error() {
        UserError(e.to_string()).into()
    } else {
        anyhow::anyhow!(e)
    }
}

/// An existing history for reading; a missing one is the user's mistake.
pub(crate) fn open_existing(db: Option<&Path>) -> Result<History> {
    let path = resolve(db)?;
    if !path.exists() {
        return Err(UserError(format!(
            "no history database at {}: append results with --history first, or give --db PATH",
            path.display()
        ))
        .into());
    }
    History::open(&path).map_err(history_error)
}

/// The open database a command appends its result to, with the labels to file it under.
pub(crate) struct Recorder {
    history: History,
    labels: Labels,
    git: Git,
}

impl HistoryArgs {
    /// Before the load: the database of `--history` (or of the scenario's `history = …`,
    /// `scenario`) opened and checked, so a wrong file stops the command before anything
    /// runs; `None` when no history is asked for. `--label` without a history is refused.
    pub(crate) fn recorder(&self, scenario: Option<&Path>) -> Result<Option<Recorder>> {
        let path =
            match (&self.history, scenario) {
                (Some(p), _) => p.as_path(),
                (None, Some(p)) => p,
                (None, None) if self.labels.is_empty() => return Ok(None),
                (None, None) => return Err(UserError(
                    "--label files the result in the history: add --history (or --history=PATH)"
                        .into(),
                )
                .into()),
            };
        let history = History::open(&resolve(Some(path))?).map_err(history_error)?;
        Ok(Some(Recorder {
            history,
            labels: Labels::from_pairs(self.labels.iter().cloned()),
            git: Git::of_current_dir(),
        }))
    }
}

impl Recorder {
    /// After the load: files `saved` (its full JSON and its headline figures); one line on
    /// stderr unless `quiet`.
    pub(crate) fn append(mut self, saved: &SavedResult, quiet: bool) -> Result<()> {
        let json = loadbench_report::render(saved, Format::Json, &Default::default())
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .text;
        let entry = Entry::of(saved, json);
        let id = self
            .history
            .append(&entry, &self.labels, &self.git)
            .map_err(history_error)?;
        if !quiet {
            eprintln!(
                "result appended to the history {} as run {id}",
                self.history.path().display()
            );
        }
        Ok(())
    }
}

/// Appends `saved` when a recorder was opened; a failure is reported as the command's error
/// after its output (the result itself is already printed and saved).
pub(crate) fn record(recorder: Option<Recorder>, saved: &SavedResult, quiet: bool) -> Result<()> {
    match recorder {
        Some(r) => r.append(saved, quiet),
        None => Ok(()),
    }
}

/// `loadbench history`.
pub(crate) fn history(a: HistoryCmdArgs) -> Result<ExitCode> {
    match a.view {
        None => list(&a.filter),
        Some(HistoryView::Trend(f)) => trend(&f),
        Some(HistoryView::Html(h)) => html(&h.output, &h.filter),
        Some(HistoryView::Show(s)) => show(s.id, s.db.as_deref()),
    }?;
    Ok(ExitCode::SUCCESS)
}

fn query(f: &HistoryFilter) -> Query {
    Query {
        labels: Labels::from_pairs(f.labels.iter().cloned()),
        target: f.target.clone(),
        load: f.load.clone(),
        kind: f.kind,
        last: f.last,
    }
}

/// The stored result JSON of run `id`.
fn show(id: i64, db: Option<&Path>) -> Result<()> {
    let history = open_existing(db)?;
    match history.result_json(id).map_err(history_error)? {
        Some(json) => crate::output::stdout(&json),
        None => Err(UserError(format!(
            "no run {id} in {}: `loadbench history` lists the ids",
            history.path().display()
        ))
        .into()),
    }
}

/// The runs, oldest first: one line each.
fn list(f: &HistoryFilter) -> Result<()> {
    let history = open_existing(f.db.as_deref())?;
    let runs = history.runs(&query(f)).map_err(history_error)?;
    let mut rows = vec![header(
        &["id", "time", "kind", "target", "load"],
        &["labels"],
    )];
    for r in &runs {
        let mut row = vec![
            r.id.to_string(),
            r.time.clone(),
            r.kind.name().to_string(),
            r.target.clone(),
            r.load.clone(),
        ];
        row.extend(figure_cells(&r.figures));
        row.push(r.labels.joined());
        rows.push(row);
    }
    let mut out = aligned(&rows);
    out.push_str(&format!(
        "{} in {}\n",
        units::counted(runs.len() as u64, "run"),
        history.path().display()
    ));
    crate::output::stdout(&out)
}

/// The column heads: `first`, the figures, `last`.
fn header(first: &[&str], last: &[&str]) -> Vec<String> {
    let figures = ["req/s", "95% CI", "p50", "p99", "errors", "requests"];
    first
        .iter()
        .chain(figures.iter())
        .chain(last.iter())
        .map(ToString::to_string)
        .collect()
}

/// req/s, its CI, p50, p99, errors, requests.
fn figure_cells(f: &Figures) -> Vec<String> {
    let or_missing = |v: Option<String>| v.unwrap_or_else(|| MISSING.to_string());
    vec![
        or_missing(f.requests_per_sec.map(units::rate)),
        or_missing(
            f.rps_ci
                .map(|(lo, hi)| format!("{}–{}", units::rate(lo.max(0.0)), units::rate(hi))),
        ),
        or_missing(f.p50_us.map(units::duration_us)),
        or_missing(f.p99_us.map(units::duration_us)),
        or_missing(f.error_ratio.map(units::percent)),
        or_missing(f.count.map(|c| c.to_string())),
    ]
}

/// Rows as left-aligned columns two spaces apart.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            match widths.get_mut(i) {
                Some(x) => *x = (*x).max(w),
                None => widths.push(w),
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The points grouped by series (target × load), in order of first appearance.
pub(crate) fn series(points: Vec<Point>) -> Vec<((String, String), Vec<Point>)> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut by: BTreeMap<(String, String), Vec<Point>> = BTreeMap::new();
    for p in points {
        let key = (p.target.clone(), p.load.clone());
        if !by.contains_key(&key) {
            order.push(key.clone());
        }
        by.entry(key).or_default().push(p);
    }
    order
        .into_iter()
        .map(|k| {
            let v = by.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect()
}

fn points(f: &HistoryFilter) -> Result<Vec<Point>> {
    let history = open_existing(f.db.as_deref())?;
    history.points(&query(f)).map_err(history_error)
}

/// One table per series, a row per run.
fn trend(f: &HistoryFilter) -> Result<()> {
    let all = series(points(f)?);
    if all.is_empty() {
        return crate::output::stdout("no runs match\n");
    }
    let mut out = String::new();
    for ((target, load), points) in &all {
        out.push_str(&format!(
            "{target} × {load} ({})\n",
            units::counted(points.len() as u64, "run")
        ));
        let mut rows = vec![header(&["run", "time"], &["commit"])];
        for p in points {
            let mut row = vec![p.run_id.to_string(), p.time.clone()];
            row.extend(figure_cells(&p.figures));
            row.push(short_commit(&p.labels));
            rows.push(row);
        }
        out.push_str(&aligned(&rows));
        out.push('\n');
    }
    crate::output::stdout(&out)
}

fn short_commit(labels: &Labels) -> String {
    labels
        .0
        .get("commit")
        .map_or_else(|| MISSING.to_string(), |c| c.chars().take(10).collect())
}

/// The trend page: charts per series, written atomically.
fn html(output: &Path, f: &HistoryFilter) -> Result<()> {
    crate::output::check_writable("-o", Some(output))?;
    let all = series(points(f)?);
    let trends: Vec<loadbench_report::trend::Series> = all
        .into_iter()
        .map(|((target, load), points)| loadbench_report::trend::Series {
            target,
            load,
            runs: points
                .iter()
                .map(|p| loadbench_report::trend::Run {
                    label: format!("#{}", p.run_id),
                    time: p.time.clone(),
                    commit: p.labels.0.get("commit").cloned(),
                    requests_per_sec: p.figures.requests_per_sec,
                    rps_ci: p.figures.rps_ci,
                    p50_us: p.figures.p50_us,
                    p99_us: p.figures.p99_us,
                    p99_ci: p.figures.p99_ci,
                    error_ratio: p.figures.error_ratio,
                })
                .collect(),
        })
        .collect();
    let page = loadbench_report::trend::page(&trends);
    loadbench_runner::save::write_atomic(output, page.as_bytes())?;
    eprintln!("trend page written to {}", output.display());
    Ok(())
}
