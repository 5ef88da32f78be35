//! The one way a load is started, whoever starts it.
//!
//! In: a typed [`LoadSpec`] (the CLI's `run`, every `find-max` step, every bench step, a
//! distributed shard through [`run_shard`]), a [`Control`] (the stop flag and an
//! [`Observer`] for progress).
//! Out: a [`RunResult`] built here, with the host facts and the configuration recorded; or for
//! [`find_max::search`], a [`loadbench_model::FindMaxResult`].
//! Inside: resolve the spec into a [`Plan`], check the target (preflight), run the engine,
//! build the result. Nothing here parses text or prints.
//! Neighbours: engine (runs plans), plan (specs and plans), model (results). The harness runs
//! its matrix through this crate; the CLI only parses arguments into specs and prints results.

pub mod find_max;
pub mod host;
pub mod kernel;
mod result;
pub mod save;
pub mod shard;

pub use loadbench_engine::Live;
pub use loadbench_plan::{LoadSpec, Plan};
pub use result::{build_result, explain_with_generator, generator_cores, run_config};
pub use shard::{run_shard, ShardRunError, ShardSpec};

use loadbench_engine::{Engine, EngineError};
use loadbench_model::{FindMaxStep, RunResult};
use loadbench_plan::PlanError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why a load did not run. Failures *during* a run are counted in its result instead.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The spec's values do not combine (one line naming the fix).
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// The target is not there, or the host cannot give the connections (one line).
    #[error("{0}")]
    Preflight(EngineError),
    /// The engine could not start a worker.
    #[error("{0}")]
    Engine(EngineError),
    /// `--script`: the script cannot run (a missing file, a syntax error, a failure in its
    /// top level, `setup`, `init` or first `request()`): one line naming the file and line.
    #[error("{0}")]
    Script(String),
}

impl RunError {
    /// A mistake of the user's (bad spec, no target): exit code 2 in the CLI.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, RunError::Engine(_))
    }
}

/// What a caller sees while loads run. Every method has a default that does nothing, so an
/// observer implements only what it shows. Called from the thread that started the load.
pub trait Observer: Sync {
    /// A load is about to run; `live` counts its requests until [`Observer::load_finished`].
    fn load_started(&self, _live: &Arc<Live>, _plan: &Plan) {}
    /// The load started last has ended.
    fn load_finished(&self) {}
    /// A find-max step has been judged.
    fn step_finished(&self, _step: &FindMaxStep) {}
    /// After a failed find-max step, the wait for the target to recover has ended
    /// (`step.recovery` says how it went).
    fn recovery_finished(&self, _step: &FindMaxStep) {}
}

/// An observer that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Observer for Quiet {}

/// How a caller steers a load: a stop flag it may raise at any time (a signal handler, `/kill`)
/// and an observer.
#[derive(Clone, Copy)]
pub struct Control<'a> {
    /// Raised: every running load stops within a tick and keeps what it measured.
    pub stop: &'a Arc<AtomicBool>,
    /// Progress.
    pub observer: &'a dyn Observer,
}

impl Control<'_> {
    /// True once the stop flag is raised.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Resolves `spec`, checks the target, runs the load and builds its result.
///
/// A closed-model load of exactly 50 requests on 2 connections, against the reference backend
/// started in this process:
///
/// ```
/// use loadbench_plan::Stop;
/// use loadbench_runner::{Control, LoadSpec, Quiet};
/// use loadbench_upstream::{Server, ServerConfig};
/// use std::sync::atomic::AtomicBool;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let server = Server::start(ServerConfig::ephemeral())?;
/// let url = format!("http://{}/", server.local_addr());
/// let spec = LoadSpec {
///     stop: Stop::Requests(50),
///     threads: Some(1),
///     ..LoadSpec::closed(&url, 2, Duration::from_secs(10))
/// };
/// let stop = Arc::new(AtomicBool::new(false));
/// let result = loadbench_runner::run(&spec, Control { stop: &stop, observer: &Quiet })?;
///
/// assert_eq!(result.stats.requests, 50);
/// assert_eq!(result.stats.status.0.get(&200), Some(&50));
/// assert_eq!(result.config.requests, Some(50));
/// assert_eq!(server.stats().route("/"), 50, "the backend answered each one");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run(spec: &LoadSpec, ctl: Control<'_>) -> Result<RunResult, RunError> {
    let plan = Plan::resolve(spec)?;
    run_plan(&plan, ctl)
}

/// Runs an already resolved plan (find-max resolves once and reuses it).
pub fn run_plan(plan: &Plan, ctl: Control<'_>) -> Result<RunResult, RunError> {
    let (engine, script) = engine_for(plan, &ctl)?;
    engine.preflight().map_err(RunError::Preflight)?;
    let result = run_engine(plan, engine, ctl)?;
    script_done(script.as_ref(), &result);
    Ok(result)
}

/// The plan's engine; with `--script`, the script loaded (every mistake in it refused here,
/// before any connection) and each worker given its part.
pub(crate) fn engine_for(
    plan: &Plan,
    ctl: &Control<'_>,
) -> Result<(Engine, Option<loadbench_script::Session>), RunError> {
    let engine = Engine::with_stop(plan.clone(), Arc::clone(ctl.stop));
    let Some(spec) = &plan.script else {
        return Ok((engine, None));
    };
    let session = loadbench_script::Session::load(spec, plan).map_err(RunError::Script)?;
    let engine = engine.with_scripts(session.workers());
    Ok((engine, Some(session)))
}

/// After a scripted run: the script's failures during the load (how many, the first one's
/// message) on stderr, then its `done()` with the merged result.
pub(crate) fn script_done(script: Option<&loadbench_script::Session>, result: &RunResult) {
    let Some(s) = script else {
        return;
    };
    if let Some(line) = s.errors() {
        eprintln!("warning: {line}");
    }
    if let Err(e) = s.done(result) {
        eprintln!("error: {e}");
    }
}

/// Runs a checked engine (preflight done) and builds the result.
fn run_engine(plan: &Plan, engine: Engine, ctl: Control<'_>) -> Result<RunResult, RunError> {
    ctl.observer.load_started(&engine.live(), plan);
    let host = kernel::HostWatch::start(plan.target.addr, plan.unix_socket.is_some());
    let watch = kernel::KernelWatch::start(vec![plan.target.addr.port()]);
    let outcome = engine.run();
    let host = host.finish();
    let mut evidence = watch.finish();
    evidence.host = host;
    ctl.observer.load_finished();
    let mut result = build_result(plan, outcome.map_err(RunError::Engine)?);
    result::explain(&mut result, evidence);
    Ok(result)
}
