//! Running one shard of a distributed load (issue 15): the same [`crate::run_plan`] path as
//! every load, with three steps around it — take the shard's exact share of the spec
//! ([`LoadSpec::shard`]), wait until the common start instant after the target has been
//! checked, and stamp the result with the run id, the shard and how late it actually started.
//! The CLI's `run --shard`, a Kubernetes pod and the xxl-job agent all call [`run_shard`].

use crate::{run_engine, Control, RunError};
use loadbench_model::{RunResult, ShardRun, ShardStart};
use loadbench_plan::{check_start_at, LoadSpec, Plan, Shard, ShardError, StartAtError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Which shard to run and when: everything a distributed run adds to a [`LoadSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSpec {
    /// Shard I of N.
    pub shard: Shard,
    /// The id every shard of the run shares (the merge checks it).
    pub run_id: String,
    /// The common start instant (`--start-at`); `None`: start as soon as the target checks out.
    pub start_at: Option<SystemTime>,
}

/// Why a shard did not run (before any load); one line naming the fix.
#[derive(Debug, thiserror::Error)]
pub enum ShardRunError {
    /// The load cannot be split this way.
    #[error("{0}")]
    Shard(#[from] ShardError),
    /// The start instant is too far off or past.
    #[error("{0}")]
    StartAt(#[from] StartAtError),
    /// An empty run id, or one that cannot name a file.
    #[error("--run-id '{0}' cannot name a result file: use letters, digits, '-', '_' and '.' (1 to 100 of them)")]
    RunId(String),
    /// The load itself could not start.
    #[error("{0}")]
    Run(#[from] RunError),
}

impl ShardRunError {
    /// A mistake of the user's: exit code 2 in the CLI.
    pub fn is_user_error(&self) -> bool {
        match self {
            ShardRunError::Run(e) => e.is_user_error(),
            _ => true,
        }
    }
}

/// Checks a run id: 1 to 100 of `[A-Za-z0-9._-]`, not starting with a dot, so that
/// `RUNID-shard-I.json` is a plain file name on every volume.
pub fn check_run_id(id: &str) -> Result<(), ShardRunError> {
    let ok = (1..=100).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ShardRunError::RunId(id.to_string()))
    }
}

/// The file name a shard's result goes by on a shared volume: `RUNID-shard-I-of-N.json`.
pub fn result_file_name(spec: &ShardSpec) -> String {
    format!(
        "{}-shard-{}-of-{}.json",
        spec.run_id,
        spec.shard.index(),
        spec.shard.total()
    )
}

/// Runs shard `shard` of `spec`: checks everything (split, run id, start instant, target)
/// before any load, waits for the start instant (the stop flag ends the wait: the result is
/// then an empty, interrupted one), runs, and stamps the result.
pub fn run_shard(
    spec: &LoadSpec,
    shard: &ShardSpec,
    ctl: Control<'_>,
) -> Result<RunResult, ShardRunError> {
    check_run_id(&shard.run_id)?;
    let part = spec.shard(shard.shard)?;
    if let Some(at) = shard.start_at {
        check_start_at(at, SystemTime::now(), &rfc3339_ns(at))?;
    }
    let plan = Plan::resolve(&part).map_err(RunError::from)?;
    let (engine, script) = crate::engine_for(&plan, &ctl)?;
    engine.preflight().map_err(RunError::Preflight)?;
    if let Some(at) = shard.start_at {
        wait_until(at, &ctl);
    }
    let started = SystemTime::now();
    let mut r = run_engine(&plan, engine, ctl)?;
    crate::script_done(script.as_ref(), &r);
    let mut run = shard_run(shard, started, r.host.hostname.clone());
    run.shards[0].interrupted = r.interrupted;
    r.shards = Some(run);
    Ok(r)
}

/// Sleeps until `at` (to within a fraction of a millisecond: coarse sleeps, then short ones),
/// or until the stop flag is raised.
fn wait_until(at: SystemTime, ctl: &Control<'_>) {
    loop {
        let Ok(left) = at.duration_since(SystemTime::now()) else {
            return;
        };
        if ctl.stopped() || left.is_zero() {
            return;
        }
        let nap = if left > Duration::from_millis(60) {
            (left - Duration::from_millis(50)).min(Duration::from_millis(50))
        } else {
            left.min(Duration::from_micros(200))
        };
        std::thread::sleep(nap);
    }
}

/// The result's record of this shard: one entry, skew 0.
fn shard_run(spec: &ShardSpec, started: SystemTime, hostname: String) -> ShardRun {
    let ns = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64;
    let started_ns = ns(started);
    ShardRun {
        run_id: spec.run_id.clone(),
        total: spec.shard.total(),
        start_at: spec.start_at.map(rfc3339_ns),
        start_at_unix_ns: spec.start_at.map(ns),
        shards: vec![ShardStart {
            index: spec.shard.index(),
            hostname,
            started_at: rfc3339_ns(started),
            started_at_unix_ns: started_ns,
            start_offset_ns: spec
                .start_at
                .map(|at| (i128::from(started_ns) - i128::from(ns(at))) as i64),
            interrupted: false,
        }],
        start_skew_ns: 0,
    }
}

/// RFC 3339 UTC with nanoseconds.
pub fn rfc3339_ns(t: SystemTime) -> String {
    humantime::format_rfc3339_nanos(t).to_string()
}
