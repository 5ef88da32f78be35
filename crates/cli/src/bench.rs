//! `loadbench bench scenario.toml`: read the scenario, apply the command-line overrides, run it
//! through the harness ([`loadbench_harness::run::run_scenario`]: targets, limits, sampling, the
//! matrix, `result.json` saved after every step), then print the report and write
//! `report.html` into the run folder.

use crate::args::BenchArgs;
use crate::progress::{Bar, Shown};
use crate::UserError;
use anyhow::Result;
use loadbench_harness::run::{run_scenario, BenchError, BenchObserver, RunOptions};
use loadbench_harness::sampler::LatestSample;
use loadbench_harness::scenario::{parse_duration, Scenario};
use loadbench_live::heading::BenchSteps;
use loadbench_model::{BenchResult, BenchRound, FindMaxStep};
use loadbench_plan::Plan;
use loadbench_report::units;
use loadbench_report::Format;
use loadbench_runner::{Live, Observer};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn bench(a: BenchArgs) -> Result<ExitCode> {
    let mut scenario = load(&a)?;
    if let Some(gates) = a.gates.gates() {
        let loads: Vec<_> = scenario.loads.iter().collect();
        scenario
            .check_ratios(&gates.gates, &loads)
            .map_err(|e| UserError(format!("--slo {e}")))?;
        scenario.gates = gates.gates;
    }
    scenario.allow_unjudged = a.gates.slo_allow_unjudged;
    let opts = RunOptions {
        file: a.scenario.clone(),
        text: None,
        results: a.results.clone(),
        upstream_exe: std::env::current_exe()?,
    };
    let (served, shown) = a
        .out
        .start("bench", &Default::default(), &Default::default())?;
    let recorder = a.out.history.recorder(scenario.history.as_deref())?;
    let (mut result, in_place) = run(&scenario, &opts, shown)?;
    // The pushes ended with the loads, after the last save: their counts go in result.json.
    result.remote_write = served.remote_write();
    if in_place && result.remote_write.is_some() {
        let json = serde_json::to_string_pretty(&result).unwrap_or_default();
        let path = Path::new(&result.run_dir).join("result.json");
        crate::run::save_json(&path, "bench", &json, true);
    }
    let saved = loadbench_model::SavedResult::from(result.clone());
    crate::deliver::deliver(&saved, &a.out, &Default::default(), served.web(), true)?;
    crate::history_cmd::record(recorder, &saved, a.out.quiet)?;
    if in_place {
        eprintln!(
            "result saved to {}",
            Path::new(&result.run_dir).join("result.json").display()
        );
    }
    // The exit code already says whether the result is in place.
    let code = exit_code(&result, in_place);
    Ok(crate::live::web::conclude(&served, true, code))
}

/// Runs a scenario with progress on stderr as `shown` asks (the dashboard only when stderr is
/// a terminal), then writes `report.html` into its run folder. The flag is false when
/// `result.json` could not be written there (the one line saying where it went instead is
/// printed, and no `report.html` is written into the broken folder).
pub(crate) fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    shown: Shown,
) -> Result<(BenchResult, bool)> {
    let stop = crate::signals::stop_flag()?;
    let obs = Progress {
        quiet: shown.quiet(),
        bar: Bar::new(shown),
        scenario,
        steps: BenchSteps::new(scenario),
    };
    let result = run_scenario(scenario, opts, &stop, &obs);
    obs.bar.finish();
    let result = match result {
        Ok(result) => result,
        Err(BenchError::SavedElsewhere(fallback, result)) => {
            eprintln!("error: {fallback}");
            return Ok((*result, false));
        }
        Err(BenchError::Save(e)) => return Err(anyhow::anyhow!(e)),
        Err(e) => return Err(UserError(e.to_string()).into()),
    };
    let html = PathBuf::from(&result.run_dir).join("report.html");
    let saved = result.clone().into();
    crate::output::write(&html, &saved, Format::Html, &Default::default())?;
    Ok((result, true))
}

/// Reads the scenario and applies the command-line overrides.
fn load(a: &BenchArgs) -> Result<Scenario, UserError> {
    let mut s = Scenario::load(&a.scenario).map_err(|e| UserError(e.to_string()))?;
    let dur = |flag: &str, text: &Option<String>| -> Result<Option<Duration>, UserError> {
        text.as_deref()
            .map(|t| parse_duration(t).map_err(|e| UserError(format!("{flag}: {e}"))))
            .transpose()
    };
    if let Some(r) = a.rounds {
        if r == 0 {
            return Err(UserError("--rounds 0 runs nothing: give 1 or more".into()));
        }
        s.rounds = r;
    }
    if let Some(c) = dur("--cooldown", &a.cooldown)? {
        s.cooldown = c;
    }
    let duration = dur("--duration", &a.duration)?;
    if duration.is_some_and(|d| d.is_zero()) {
        return Err(UserError("--duration must be above zero, e.g. 2s".into()));
    }
    let warmup = dur("--warmup", &a.warmup)?;
    for l in &mut s.loads {
        if let Some(d) = duration {
            l.set_duration(d);
        }
        l.warmup = warmup.unwrap_or(l.warmup);
    }
    Ok(s)
}

/// The bench's view on stderr: the run folder, warnings, a progress bar per load, a line per
/// finished round; or the dashboard with the matrix, the round lines printed once it closes.
struct Progress<'a> {
    bar: Bar,
    quiet: bool,
    scenario: &'a Scenario,
    /// Names the step running on the dashboard and the live page.
    steps: BenchSteps,
}

impl Observer for Progress<'_> {
    fn load_started(&self, live: &Arc<Live>, plan: &Plan) {
        if let Some(m) = self.bar.metrics() {
            m.set_labels(self.steps.running_labels().unwrap_or_default());
        }
        self.bar.load_started_as(live, plan, self.steps.running());
    }

    fn load_finished(&self) {
        self.bar.load_finished();
    }

    fn step_finished(&self, step: &FindMaxStep) {
        self.bar.step_finished(step);
    }

    fn recovery_finished(&self, step: &FindMaxStep) {
        self.bar.recovery_finished(step);
    }
}

impl BenchObserver for Progress<'_> {
    fn sampling(&self, latest: &LatestSample) {
        if let Some(m) = self.bar.metrics() {
            m.set_targets(target_source(self.scenario, latest));
        }
        self.bar.on_dashboard(|d| {
            d.set_matrix(loadbench_live::matrix::Matrix::new(self.scenario, latest));
        });
    }

    fn run_folder(&self, dir: &Path) {
        if !self.quiet {
            eprintln!("run folder: {}", dir.display());
        }
    }

    fn warning(&self, warning: &str) {
        eprintln!("warning: {warning}");
    }

    fn rounds_finished(&self, result: &BenchResult, rounds: &[BenchRound]) {
        self.steps.finished(result.steps_done as usize);
        if self.quiet {
            return;
        }
        let lines = rounds.iter().map(|round| round_line(result, round));
        let shown = self.bar.on_dashboard(|d| {
            d.matrix_finished(result.steps_done as usize);
            lines.clone().for_each(|l| d.hold(l));
        });
        if !shown {
            lines.for_each(|l| eprintln!("{l}"));
        }
    }
}

/// Reads the bench targets' latest resource samples beside their limits, for the live series.
fn target_source(
    scenario: &Scenario,
    latest: &LatestSample,
) -> loadbench_live::metrics::TargetSource {
    let limits: Vec<_> = scenario
        .targets
        .iter()
        .map(|t| (t.name.clone(), t.limits.cpus, t.limits.memory))
        .collect();
    let latest = latest.clone();
    Box::new(move || {
        let sample = latest.get();
        limits
            .iter()
            .map(|(name, cpus, memory)| {
                let sampled = sample
                    .as_ref()
                    .and_then(|s| s.targets.iter().find(|t| &t.name == name));
                loadbench_live::metrics::TargetSample {
                    target: name.clone(),
                    cpu_cores: sampled.map(|t| t.cpu_cores),
                    memory_bytes: sampled.map(|t| t.rss_bytes as f64),
                    cpu_limit_cores: *cpus,
                    memory_limit_bytes: memory.map(|m| m as f64),
                }
            })
            .collect()
    })
}

/// The progress line of a finished round.
fn round_line(r: &BenchResult, round: &BenchRound) -> String {
    let load = &r.loads[round.load as usize];
    let head = format!(
        "[{}/{}] {} {} round {}/{} {}:",
        round.step,
        r.steps_planned,
        load.name,
        load.level_label(round.level as usize),
        round.round + 1,
        r.scenario.rounds,
        round.target
    );
    if let Some(e) = &round.error {
        return format!("{head} failed: {e}");
    }
    if let Some(why) = round.nothing_measured() {
        return format!("{head} measured nothing: {why}");
    }
    let mut parts = Vec::new();
    if let Some(rps) = round.throughput() {
        parts.push(format!("{rps:.0} req/s"));
    }
    if let Some(run) = &round.result {
        let h = &run.stats.latency.hist;
        if !h.is_empty() {
            parts.push(format!(
                "p99 {}",
                units::duration_ns(h.percentile_ns(99.0) as f64)
            ));
        }
        let errors = run.stats.errors.total() + run.stats.failed_answers();
        if errors > 0 {
            parts.push(loadbench_model::human::counted(errors, "error"));
        }
    }
    if let Some(res) = &round.resources {
        parts.push(format!(
            "target CPU {:.2} cores, RSS {}",
            res.cpu_mean_cores,
            units::bytes(res.rss_peak_bytes as f64)
        ));
    }
    parts.push(loadbench_report::bottleneck_name(round.bottleneck).to_string());
    format!("{head} {}", parts.join(", "))
}

/// 130 when interrupted; 1 when a round failed, a cell measured nothing (no silent zero: one
/// `error:` line per such cell on stderr, with why) or the result is not where it belongs;
/// else 0.
pub(crate) fn exit_code(r: &BenchResult, in_place: bool) -> ExitCode {
    let empty = empty_cell_lines(r);
    empty.iter().for_each(|l| eprintln!("error: {l}"));
    if r.interrupted {
        ExitCode::from(130)
    } else if !in_place || !empty.is_empty() || r.rounds.iter().any(|x| x.error.is_some()) {
        ExitCode::from(1)
    } else {
        crate::run::gates_code(r.gates.as_ref())
    }
}

/// `haproxy at c=50 (load closed) measured nothing: …`, one per cell that completed nothing.
fn empty_cell_lines(r: &BenchResult) -> Vec<String> {
    r.empty_cells()
        .map(|(c, why)| {
            let load = r.loads.get(c.load as usize);
            let level = load.map_or("?".to_string(), |l| l.level_label(c.level as usize));
            let name = load.map_or("?", |l| l.name.as_str());
            format!(
                "{} at {level} (load {name}) measured nothing: {why}",
                c.target
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::round_line;
    use loadbench_model::BenchResult;

    /// The saved bench of the CLI tests, its rounds given windows that make their rates
    /// fractional and of every size: 0.5, 7.8, 123.5, 4 012.3 and 40 120.0 req/s.
    fn bench_with_odd_rates() -> BenchResult {
        let text = include_str!("../tests/fixtures/bench-base.json");
        let mut r = BenchResult::from_json(text).expect("the CLI fixture reads");
        let requests = [1, 78, 1_235, 40_123, 401_200];
        for (round, n) in r.rounds.iter_mut().zip(requests.iter().cycle()) {
            let stats = &mut round.result.as_mut().expect("a finished round").stats;
            stats.requests = *n;
            stats.elapsed_us = 2_000_000 + 8_000_000 * u64::from(*n > 1);
        }
        r
    }

    /// Issue 16 point 9: "whole numbers for req/s in round lines, one number format per row".
    #[test]
    fn round_lines_give_req_per_sec_as_whole_numbers_in_one_format() {
        let r = bench_with_odd_rates();
        for round in &r.rounds {
            let line = round_line(&r, round);
            let figure = line
                .split(": ")
                .nth(1)
                .and_then(|rest| rest.split(" req/s").next())
                .unwrap_or_else(|| panic!("no req/s in {line:?}"));
            assert!(
                !figure.is_empty() && figure.chars().all(|c| c.is_ascii_digit()),
                "{line}"
            );
            let rate = round.throughput().expect("a finished round");
            assert_eq!(figure, format!("{rate:.0}"), "{line}");
            assert_eq!(line.matches(" req/s").count(), 1, "{line}");
        }
    }

    /// Issue 35 point 8: the round line spells the verdict as every report does
    /// (`target-bound`, never `targetbound`) and a single error in the singular.
    #[test]
    fn round_lines_spell_the_verdict_as_the_reports_do() {
        use loadbench_model::resources::Bottleneck;
        let mut r = bench_with_odd_rates();
        let round = &mut r.rounds[0];
        round.bottleneck = Bottleneck::TargetBound;
        let stats = &mut round.result.as_mut().expect("a finished round").stats;
        stats.errors = Default::default();
        stats.status = Default::default();
        stats.errors.add(loadbench_model::ErrorKind::ReadTimeout, 1);
        let line = round_line(&r, &r.rounds[0]);
        assert!(line.ends_with(", target-bound"), "{line}");
        assert!(line.contains(", 1 error,"), "{line}");
        r.rounds[0].bottleneck = Bottleneck::GeneratorBound;
        assert!(round_line(&r, &r.rounds[0]).ends_with(", generator-bound"));
    }

    /// A round that completed nothing says why on its progress line, not `0 req/s, neither`.
    #[test]
    fn a_round_that_measured_nothing_says_why_on_its_line() {
        let mut r = bench_with_odd_rates();
        let round = &mut r.rounds[0];
        let stats = &mut round.result.as_mut().expect("a finished round").stats;
        *stats = loadbench_model::Stats {
            elapsed_us: stats.elapsed_us,
            sent: 4,
            abandoned: 4,
            ..Default::default()
        };
        let line = round_line(&r, &r.rounds[0]);
        assert!(
            line.ends_with(": measured nothing: none of the 4 requests sent was answered (4 still in flight at the end): the server did not respond within the run; give it a longer duration or timeout, or look at the server"),
            "{line}"
        );
        assert!(!line.contains("req/s"), "{line}");
    }
}
