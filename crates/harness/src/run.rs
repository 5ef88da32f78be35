//! A scenario run as one library call: [`run_scenario`] creates the run folder, starts the
//! targets (limited, in dependency order), pins the generator, samples the targets, runs the
//! matrix through the runner library, and saves `result.json` atomically after every step.
//! The CLI's `bench` and `demo` call it; it prints nothing (the [`BenchObserver`] sees what
//! happens) and writes no report (the CLI renders `report.html` from the returned result).

use crate::bench::{bench_loads, steps, Matrix};
use crate::limits::set_affinity;
use crate::sampler::{LatestSample, Sampler};
use crate::scenario::{Scenario, ScenarioError};
use crate::targets::{StartOptions, Targets};
use loadbench_model::{BenchResult, BenchRound, ResultKind, ScenarioInfo, SCHEMA_VERSION};
use loadbench_runner::save::{write_atomic, write_or_fallback, Fallback, SaveError};
use loadbench_runner::{host, Observer};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Resource sampling interval.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Where a scenario run keeps its files and what it starts.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The scenario file: named in errors, anchors relative paths, copied into the run folder.
    pub file: PathBuf,
    /// The scenario's text when it did not come from `file` (the demo's bundled scenario).
    pub text: Option<String>,
    /// The folder under which the run folder `<timestamp>-<name>` is created.
    pub results: PathBuf,
    /// The `loadbench` executable, started as `loadbench serve` for upstream targets.
    pub upstream_exe: PathBuf,
}

/// What a caller sees of a scenario run, beside every load's progress.
pub trait BenchObserver: Observer {
    /// The run folder exists.
    fn run_folder(&self, _dir: &Path) {}
    /// The targets are sampled from now on: `latest` holds the newest sample (each target's CPU
    /// cores and memory), updated while the rounds run.
    fn sampling(&self, _latest: &LatestSample) {}
    /// Something the user should know (an unenforced limit, a failed round).
    fn warning(&self, _warning: &str) {}
    /// A step finished with these rounds; `result` holds everything so far and is saved.
    fn rounds_finished(&self, _result: &BenchResult, _rounds: &[BenchRound]) {}
}

/// Why a scenario could not run (failures of rounds are recorded in the result instead).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The scenario, its targets or the run folder: the user's to fix (one line).
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// The run folder cannot be created (one line naming `--results`).
    #[error("{0}")]
    RunFolder(String),
    /// `result.json` could not be written.
    #[error("{0}")]
    Save(#[from] SaveError),
    /// The final `result.json` could not be written: the result went to a fallback file (or
    /// nowhere, as the message says) and is carried here so that it can still be reported.
    #[error("{0}")]
    SavedElsewhere(Box<Fallback>, Box<BenchResult>),
}

/// Runs the whole scenario and returns its result, saved as `<run folder>/result.json`.
///
/// A `[target.upstream]` target is started as `<upstream_exe> serve --listen 127.0.0.1:PORT`
/// followed by its settings' flags ([`loadbench_upstream::ServeSettings::to_args`]). The
/// `loadbench` binary gives its own path; any program that answers `serve` with the reference
/// backend will do, and this example is one: when the harness starts it again with `serve`, it
/// serves (until the harness stops it) instead of running the scenario. One closed load of
/// 200 ms on 2 connections, one round, against a backend answering `202 Accepted`:
///
/// ```standalone_crate
/// use clap::Parser;
/// use loadbench_harness::run::{run_scenario, BenchObserver, RunOptions};
/// use loadbench_harness::scenario::Scenario;
/// use loadbench_runner::Observer;
/// use loadbench_upstream::{run_until_signal, ServeSettings, ServerConfig};
/// use std::sync::atomic::AtomicBool;
/// use std::sync::Arc;
///
/// const SCENARIO: &str = r#"
/// name = "doc"
/// [generator]
/// threads = 1
/// [[target]]
/// name = "backend"
/// kind = "upstream"
/// [target.upstream]
/// status = 202
/// threads = 1
/// [[load]]
/// model = "closed"
/// targets = ["backend"]
/// connections = [2]
/// duration = "200ms"
/// "#;
///
/// /// `loadbench serve`'s arguments: where to listen, and the backend's settings.
/// #[derive(Parser)]
/// struct Serve {
///     #[arg(long)]
///     listen: std::net::SocketAddr,
///     #[command(flatten)]
///     settings: ServeSettings,
/// }
///
/// /// Sees nothing of the run (every method has a default).
/// struct Unseen;
/// impl Observer for Unseen {}
/// impl BenchObserver for Unseen {}
///
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     if std::env::args().nth(1).as_deref() == Some("serve") {
///         let serve = Serve::parse_from(std::env::args().skip(1));
///         let config = ServerConfig { listen: serve.listen, ..ServerConfig::default() };
///         run_until_signal(config.with_settings(&serve.settings))?;
///         return Ok(());
///     }
///     let dir = std::env::temp_dir().join(format!("loadbench-doc-{}", std::process::id()));
///     let file = dir.join("doc.toml");
///     let scenario = Scenario::parse(SCENARIO, &file)?;
///     let opts = RunOptions {
///         file,
///         text: Some(SCENARIO.to_string()),
///         results: dir.join("results"),
///         upstream_exe: std::env::current_exe()?,
///     };
///     let stop = Arc::new(AtomicBool::new(false));
///     let result = run_scenario(&scenario, &opts, &stop, &Unseen)?;
///
///     assert_eq!((result.steps_done, result.rounds.len()), (1, 1));
///     let run = result.rounds[0].result.as_ref().expect("the round measured");
///     assert!(run.stats.requests > 0);
///     assert_eq!(run.stats.errors.total(), 0);
///     // Every response came from the target as `[target.upstream]` set it up.
///     assert_eq!(run.stats.status.0.get(&202), Some(&run.stats.requests));
///     let saved = std::path::Path::new(&result.run_dir).join("result.json");
///     assert!(std::fs::read_to_string(saved)?.contains("\"steps_done\": 1"));
///     std::fs::remove_dir_all(&dir)?;
///     Ok(())
/// }
/// ```
pub fn run_scenario(
    scenario: &Scenario,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
    obs: &dyn BenchObserver,
) -> Result<BenchResult, BenchError> {
    let run_dir = run_dir(&opts.results, &scenario.name)?;
    copy_scenario(opts, &run_dir);
    obs.run_folder(&run_dir);
    let mut result = empty_result(scenario, &opts.file, &run_dir);
    let start = StartOptions {
        file: opts.file.clone(),
        run_dir: run_dir.clone(),
        upstream_exe: opts.upstream_exe.clone(),
        host_cores: host_cores(),
    };
    let mut targets = Targets::start(scenario, &start)?;
    result.targets = targets.running.iter().map(|r| r.info.clone()).collect();
    result.warnings.extend(targets.warnings.iter().cloned());
    pin_generator(scenario, &mut result);
    result.warnings.iter().for_each(|w| obs.warning(w));
    let sampler = Sampler::start(targets.roots(), SAMPLE_EVERY);
    obs.sampling(&sampler.latest());
    sampler.mark("ready");
    let path = run_dir.join("result.json");
    save(&path, &result)?;
    let save_error = run_matrix(
        scenario,
        &mut targets,
        &sampler,
        &mut result,
        stop,
        obs,
        &path,
    );
    targets.stop();
    result.resources = sampler.stop();
    result.ended_at = now();
    result.recompute();
    let gates = scenario.bench_gates();
    if !gates.is_empty() {
        result.gates = Some(gates.judge(&result, scenario.allow_unjudged));
    }
    let json = serde_json::to_string_pretty(&result).unwrap_or_default();
    if let Err(fallback) = write_or_fallback(&path, "bench", json.as_bytes()) {
        return Err(BenchError::SavedElsewhere(fallback, Box::new(result)));
    }
    save_error.map_or(Ok(result), |e| Err(e.into()))
}

/// Runs every step, saving after each; returns the first save error (the run goes on).
fn run_matrix(
    scenario: &Scenario,
    targets: &mut Targets,
    sampler: &Sampler,
    result: &mut BenchResult,
    stop: &Arc<AtomicBool>,
    obs: &dyn BenchObserver,
    path: &Path,
) -> Option<SaveError> {
    let mut matrix = Matrix {
        scenario,
        targets,
        sampler,
        observer: obs,
        stop,
        threads: Some(result.scenario.generator_threads),
        generator_cores: result.scenario.generator_cores,
        host_cores: f64::from(result.host.cores),
        places: Default::default(),
    };
    let mut save_error = None;
    matrix.run(result, &mut |r, rounds| {
        obs.rounds_finished(r, rounds);
        if let Err(e) = save(path, r) {
            save_error.get_or_insert(e);
        }
    });
    let run_dir = path.parent().unwrap_or(Path::new("."));
    let (profiles, warnings) = crate::profile::profile_targets(&matrix, run_dir);
    for (name, p) in profiles {
        if let Some(t) = result.targets.iter_mut().find(|t| t.name == name) {
            t.profile = Some(p);
        }
    }
    for w in warnings {
        obs.warning(&w);
        result.warnings.push(w);
    }
    save_error
}

fn copy_scenario(opts: &RunOptions, run_dir: &Path) {
    let to = run_dir.join("scenario.toml");
    // The copy is for the record; a run does not fail for it.
    let _ = match &opts.text {
        Some(text) => std::fs::write(to, text),
        None => std::fs::copy(&opts.file, to).map(|_| ()),
    };
}

/// `results/<UTC timestamp>-<scenario name>`, created fresh.
fn run_dir(results: &Path, name: &str) -> Result<PathBuf, BenchError> {
    let stamp = loadbench_runner::save::stamp();
    let safe: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
            _ => '-',
        })
        .collect();
    let mut dir = results.join(format!("{stamp}-{safe}"));
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = results.join(format!("{stamp}-{safe}-{n}"));
    }
    let fail = |e: std::io::Error| {
        BenchError::RunFolder(format!(
            "cannot create the run folder {}: {e}; use --results DIR to put it elsewhere",
            dir.display()
        ))
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    // Absolute, because `{dir}` ends up in config files read from the target's own directory.
    std::fs::canonicalize(&dir).map_err(fail)
}

fn empty_result(s: &Scenario, file: &Path, run_dir: &Path) -> BenchResult {
    let cpuset = s.generator.cpuset.as_ref().map(|c| c.0.clone());
    let cores = cpuset.as_ref().map_or(host_cores(), Vec::len);
    let threads = s.generator.threads.unwrap_or(cores as u32);
    // The generator's workers can keep at most `threads` cores busy.
    let cores = cores.min(threads.max(1) as usize);
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
        loads: bench_loads(s),
        rounds: Vec::new(),
        cells: Vec::new(),
        relative: Vec::new(),
        queueing: Vec::new(),
        resources: Default::default(),
        warnings: Vec::new(),
        gates: None,
        remote_write: None,
    }
}

/// Pins this process (the generator) to its CPU set, after the targets started so that they do
/// not inherit it.
fn pin_generator(s: &Scenario, result: &mut BenchResult) {
    if let Some(set) = &s.generator.cpuset {
        if let Err(e) = set_affinity(0, &set.0) {
            result
                .warnings
                .push(format!("generator CPU set {set} not enforced: {e}"));
            result.scenario.generator_cpuset = None;
            result.scenario.generator_cores = host_cores() as f64;
        }
    }
}

fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn save(path: &Path, r: &BenchResult) -> Result<(), SaveError> {
    let json = serde_json::to_string_pretty(r).unwrap_or_default();
    write_atomic(path, json.as_bytes())
}
