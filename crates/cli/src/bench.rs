//! `loadbench bench scenario.toml`: read the scenario, start its targets (limited and sampled),
//! run the matrix of loads × levels × rounds, and keep everything in the run folder
//! `results/<timestamp>-<scenario>/`: `result.json` (rewritten atomically after every round),
//! the scenario, the rendered configs and the target logs. The harness does the work; this file
//! wires it to the engine (`run::execute`, `find_max`), the terminal and the disk.

use crate::args::BenchArgs;
use crate::output::OutputFormat;
use crate::{host, save, UserError};
use anyhow::Result;
use loadbench_harness::bench::{bench_loads, steps, Matrix, StepRunner};
use loadbench_harness::limits::set_affinity;
use loadbench_harness::sampler::Sampler;
use loadbench_harness::scenario::{parse_duration, Scenario};
use loadbench_harness::targets::{StartOptions, Targets};
use loadbench_model::{
    BenchResult, BenchRound, FindMaxResult, ResultKind, RunResult, ScenarioInfo, SCHEMA_VERSION,
};
use loadbench_plan::{Plan, RunSpec};
use loadbench_report::units;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Resource sampling interval.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

pub fn bench(a: BenchArgs) -> Result<ExitCode> {
    let (result, path) = run(&a)?;
    let saved = loadbench_model::SavedResult::from(result.clone());
    crate::output::print(&saved, a.output, &Default::default())?;
    if let Some(html) = &a.html {
        crate::output::write(html, &saved, OutputFormat::Html, &Default::default())?;
        eprintln!("HTML report written to {}", html.display());
    }
    eprintln!("result saved to {}", path.display());
    Ok(exit_code(&result))
}

/// Runs the scenario of `a`; returns the finished result and where it is saved.
pub fn run(a: &BenchArgs) -> Result<(BenchResult, PathBuf)> {
    let scenario = load(a)?;
    let run_dir = run_dir(&a.results, &scenario.name)?;
    std::fs::copy(&a.scenario, run_dir.join("scenario.toml")).ok();
    let stop = crate::signals::stop_flag()?;
    let mut result = empty_result(&scenario, &a.scenario, &run_dir);
    if !a.quiet {
        eprintln!("run folder: {}", run_dir.display());
    }
    let opts = StartOptions {
        file: a.scenario.clone(),
        run_dir: run_dir.clone(),
        upstream_exe: std::env::current_exe()?,
        host_cores: host_cores(),
    };
    let mut targets = Targets::start(&scenario, &opts).map_err(|e| UserError(e.to_string()))?;
    result.targets = targets.running.iter().map(|r| r.info.clone()).collect();
    result.warnings.extend(targets.warnings.iter().cloned());
    for w in &targets.warnings {
        eprintln!("warning: {w}");
    }
    pin_generator(&scenario, &mut result)?;
    let sampler = Sampler::start(targets.roots(), SAMPLE_EVERY);
    sampler.mark("ready");
    let path = run_dir.join("result.json");
    save_result(&path, &result)?;
    let mut runner = CliRunner {
        stop: Arc::clone(&stop),
        quiet: a.quiet,
    };
    let mut matrix = Matrix {
        scenario: &scenario,
        targets: &mut targets,
        sampler: &sampler,
        runner: &mut runner,
        stop: &stop,
        threads: Some(result.scenario.generator_threads),
        generator_cores: result.scenario.generator_cores,
    };
    let mut save_error = None;
    matrix.run(&mut result, &mut |r, rounds| {
        if !a.quiet {
            rounds
                .iter()
                .for_each(|round| eprintln!("{}", round_line(r, round)));
        }
        if let Err(e) = save_result(&path, r) {
            save_error.get_or_insert(e);
        }
    });
    targets.stop();
    result.resources = sampler.stop();
    result.ended_at = now();
    result.recompute();
    save_result(&path, &result)?;
    if let Some(e) = save_error {
        return Err(e);
    }
    let saved = result.clone().into();
    let report = run_dir.join("report.html");
    crate::output::write(&report, &saved, OutputFormat::Html, &Default::default())?;
    Ok((result, path))
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
        l.duration = duration.unwrap_or(l.duration);
        l.warmup = warmup.unwrap_or(l.warmup);
    }
    Ok(s)
}

/// `results/<UTC timestamp>-<scenario name>`, created fresh.
fn run_dir(results: &Path, name: &str) -> Result<PathBuf> {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp: String = stamp
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut dir = results.join(format!("{stamp}-{safe}"));
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = results.join(format!("{stamp}-{safe}-{n}"));
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        UserError(format!(
            "cannot create the run folder {}: {e}; use --results DIR to put it elsewhere",
            dir.display()
        ))
    })?;
    // Absolute, because `{dir}` ends up in config files read from the target's own directory.
    Ok(std::fs::canonicalize(&dir)?)
}

fn empty_result(s: &Scenario, file: &Path, run_dir: &Path) -> BenchResult {
    let cpuset = s.generator.cpuset.as_ref().map(|c| c.0.clone());
    let cores = cpuset.as_ref().map_or(host_cores(), Vec::len);
    let threads = s.generator.threads.unwrap_or(cores as u32);
    // The generator's workers can keep at most `threads` cores busy.
    let cores = cores.min(threads.max(1) as usize);
    let loads = bench_loads(s);
    BenchResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::Bench,
        loadbench_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host::detect(),
        scenario: ScenarioInfo {
            name: s.name.clone(),
            description: s.description.clone(),
            file: file.display().to_string(),
            rounds: s.rounds,
            cooldown_ms: s.cooldown.as_millis() as u64,
            generator_cpuset: cpuset,
            generator_threads: threads,
            generator_cores: cores as f64,
        },
        run_dir: run_dir.display().to_string(),
        started_at: now(),
        ended_at: now(),
        interrupted: false,
        steps_planned: steps(s).len() as u32,
        steps_done: 0,
        targets: Vec::new(),
        loads,
        rounds: Vec::new(),
        cells: Vec::new(),
        relative: Vec::new(),
        resources: Default::default(),
        warnings: Vec::new(),
    }
}

/// Pins this process (the generator) to its CPU set, after the targets started so that they do
/// not inherit it.
fn pin_generator(s: &Scenario, result: &mut BenchResult) -> Result<()> {
    if let Some(set) = &s.generator.cpuset {
        if let Err(e) = set_affinity(0, &set.0) {
            let w = format!("generator CPU set {set} not enforced: {e}");
            eprintln!("warning: {w}");
            result.warnings.push(w);
            result.scenario.generator_cpuset = None;
            result.scenario.generator_cores = host_cores() as f64;
        }
    }
    Ok(())
}

fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn save_result(path: &Path, r: &BenchResult) -> Result<()> {
    let json = serde_json::to_string_pretty(r)?;
    save::write_atomic(path, json.as_bytes())
}

/// Runs steps with the engine, one `run::execute` per spec, all at once for `together`.
struct CliRunner {
    stop: Arc<AtomicBool>,
    quiet: bool,
}

impl CliRunner {
    fn one(&self, spec: &RunSpec, quiet: bool) -> Result<RunResult, String> {
        let plan = Plan::resolve(spec).map_err(|e| e.to_string())?;
        crate::run::execute(&plan, &self.stop, quiet).map_err(|e| format!("{e:#}"))
    }
}

impl StepRunner for CliRunner {
    fn run(&mut self, specs: &[RunSpec]) -> Vec<Result<RunResult, String>> {
        if let [spec] = specs {
            return vec![self.one(spec, self.quiet)];
        }
        let this = &*self;
        std::thread::scope(|scope| {
            let handles: Vec<_> = specs
                .iter()
                .map(|spec| scope.spawn(move || this.one(spec, true)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("the load thread failed".into()))
                })
                .collect()
        })
    }

    fn find_max(&mut self, base: &RunSpec, slo: &str) -> Result<FindMaxResult, String> {
        let mut argv = vec![
            base.url.clone(),
            "--slo".into(),
            slo.into(),
            "--step-duration".into(),
            base.duration.clone().unwrap_or_else(|| "10s".into()),
            "--warmup".into(),
            base.warmup.clone().unwrap_or_else(|| "1s".into()),
            "--method".into(),
            base.method.clone(),
        ];
        if let Some(t) = base.threads {
            argv.extend(["--threads".into(), t.to_string()]);
        }
        argv.extend(["--max-connections".into(), base.max_connections.to_string()]);
        for h in &base.headers {
            argv.extend(["--header".into(), h.clone()]);
        }
        if let Some(b) = &base.body {
            argv.extend(["--body".into(), b.clone()]);
        }
        crate::find_max::search_for_bench(&argv, &self.stop).map_err(|e| format!("{e:#}"))
    }
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
    let mut parts = Vec::new();
    if let Some(rps) = round.throughput() {
        parts.push(format!("{} req/s", units::rate(rps)));
    }
    if let Some(run) = &round.result {
        let h = &run.stats.latency.hist;
        if !h.is_empty() {
            parts.push(format!(
                "p99 {}",
                units::duration_ns(h.percentile_ns(99.0) as f64)
            ));
        }
        let errors = run.stats.errors.total() + run.stats.status.non_success();
        if errors > 0 {
            parts.push(format!("{errors} errors"));
        }
    }
    if let Some(res) = &round.resources {
        parts.push(format!(
            "target CPU {:.2} cores, RSS {}",
            res.cpu_mean_cores,
            units::bytes(res.rss_peak_bytes as f64)
        ));
    }
    parts.push(format!("{:?}", round.bottleneck).to_lowercase());
    format!("{head} {}", parts.join(", "))
}

/// 130 when interrupted, 1 when a round failed, else 0.
pub fn exit_code(r: &BenchResult) -> ExitCode {
    if r.interrupted {
        ExitCode::from(130)
    } else if r.rounds.iter().any(|x| x.error.is_some()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
