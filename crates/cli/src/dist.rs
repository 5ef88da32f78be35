//! Distributed load at the edge (issue 15, docs/distributed.md): `run`'s shard flags (and
//! their Kubernetes environment) turned into one typed [`ShardSpec`], the `--hlog` file, and
//! `loadbench merge`. Everything is checked here, before any load, and every mistake is one
//! line with exit code 2; the shard itself runs through `loadbench_runner::run_shard`.

use crate::args::{MergeArgs, ShardArgs};
use crate::UserError;
use anyhow::Result;
use loadbench_model::human::counted;
use loadbench_model::{merge_shards, RunResult, SavedResult};
use loadbench_plan::{parse_start_at, Shard};
use loadbench_runner::ShardSpec;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::UNIX_EPOCH;

/// Where environment variables come from (the process, or a test's map).
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The shard to run, if any shard flag was given (`--start-at` alone runs the whole load as
/// shard 0/1, started on time).
pub(crate) fn shard_spec(a: &ShardArgs, env: Env<'_>) -> Result<Option<ShardSpec>, UserError> {
    let from_env = |flag: &Option<String>, name: &str| match flag {
        Some(v) => Some(v.clone()),
        None if a.shard_from_env => env(name),
        None => None,
    };
    let start_text = from_env(&a.start_at, "LOADBENCH_START_AT");
    let run_id = from_env(&a.run_id, "LOADBENCH_RUN_ID");
    let shard = match (a.shard, a.shard_from_env) {
        (Some(s), _) => Some(s),
        (None, true) => Some(shard_from_env(a.shard_count, env)?),
        (None, false) => None,
    };
    if shard.is_none() && start_text.is_none() && run_id.is_none() {
        if a.results_dir.is_some() {
            return Err(UserError(
                "--results-dir names files by shard: add --shard I/N (or --shard-from-env)".into(),
            ));
        }
        return Ok(None);
    }
    let start_at = match &start_text {
        Some(t) => Some(parse_start_at(t).map_err(|e| UserError(e.to_string()))?),
        None => None,
    };
    let run_id = match (run_id, start_at) {
        (Some(id), _) => id,
        (None, Some(at)) => format!("start-{}", at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()),
        (None, None) => return Err(UserError(
            "--shard needs --run-id ID (the same on every shard) or --start-at TIME to name the run".into(),
        )),
    };
    let spec = ShardSpec {
        shard: shard.unwrap_or(Shard::WHOLE),
        run_id,
        start_at,
    };
    loadbench_runner::shard::check_run_id(&spec.run_id).map_err(|e| UserError(e.to_string()))?;
    Ok(Some(spec))
}

/// `--shard-from-env`: the index from `JOB_COMPLETION_INDEX`, the count from the flag or
/// `LOADBENCH_SHARD_COUNT`.
fn shard_from_env(count: Option<u32>, env: Env<'_>) -> Result<Shard, UserError> {
    let index = env("JOB_COMPLETION_INDEX").ok_or_else(|| UserError(
        "--shard-from-env: JOB_COMPLETION_INDEX is not set: run in a Kubernetes Indexed Job, set it, or use --shard I/N".into(),
    ))?;
    let index: u32 = index.trim().parse().map_err(|_| {
        UserError(format!("--shard-from-env: JOB_COMPLETION_INDEX '{index}' is not a shard index: it must be a whole number from 0"))
    })?;
    let total = match count {
        Some(n) => n,
        None => {
            let text = env("LOADBENCH_SHARD_COUNT").ok_or_else(|| UserError(
                "--shard-from-env: no shard count: give --shard-count N or set LOADBENCH_SHARD_COUNT".into(),
            ))?;
            text.trim().parse().map_err(|_| UserError(format!(
                "--shard-from-env: LOADBENCH_SHARD_COUNT '{text}' is not a number of shards: give a whole number from 1"
            )))?
        }
    };
    Shard::new(index, total).map_err(|e| UserError(format!("--shard-from-env: {e}")))
}

/// The file a shard's result goes to in `--results-dir`.
pub(crate) fn results_path(dir: &Path, spec: &ShardSpec) -> PathBuf {
    dir.join(loadbench_runner::shard::result_file_name(spec))
}

/// Writes the interval log of `r` to `path` (atomically).
pub(crate) fn write_hlog(path: &Path, r: &RunResult) -> Result<()> {
    let start = humantime::parse_rfc3339_weak(&r.started_at).unwrap_or(UNIX_EPOCH);
    let log = loadbench_model::interval_log(r, start);
    loadbench_runner::save::write_atomic(path, log.as_bytes())?;
    Ok(())
}

/// `loadbench merge`: reads every file, merges, says what was merged (and what is missing),
/// writes the merged result.
pub(crate) fn merge(a: MergeArgs) -> Result<ExitCode> {
    crate::output::check_writable("-o", a.output.as_deref())?;
    let mut runs = Vec::with_capacity(a.results.len());
    for path in &a.results {
        match crate::report_cmd::load(path)? {
            SavedResult::Run(r) => runs.push(*r),
            other => {
                return Err(UserError(format!(
                    "{} is a {} result, not a shard's run result: give files written by `loadbench run --shard`",
                    path.display(),
                    other.kind().command()
                ))
                .into())
            }
        }
    }
    let merged = merge_shards(&runs).map_err(|e| UserError(e.to_string()))?;
    // For CI: a merge that must cover the whole load fails (nothing written) when part of it
    // is missing.
    if a.require_all {
        if let Some(missing) = merged.shards.as_ref().and_then(|s| s.missing_text()) {
            anyhow::bail!(
                "{missing} (--require-all): merge every shard's result, or leave out --require-all to merge what is there"
            );
        }
    }
    if !a.quiet {
        summarize(&merged);
    }
    let json = serde_json::to_string_pretty(&merged)? + "\n";
    match &a.output {
        Some(path) => loadbench_runner::save::write_atomic(path, json.as_bytes())?,
        None => crate::output::stdout(&json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// One line of what was merged, and one naming missing shards.
fn summarize(r: &RunResult) {
    let Some(run) = &r.shards else { return };
    let hosts: Vec<String> = run
        .shards
        .iter()
        .map(|s| format!("{}@{}", s.index, s.hostname))
        .collect();
    let cut = run.interrupted();
    let list = |shards: &[u32]| {
        shards
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let flagged = if cut.is_empty() {
        String::new()
    } else {
        format!(", INTERRUPTED shards {}", list(&cut))
    };
    eprintln!(
        "merged {} of {} of run {}: {}, {}, start skew {:.3} ms ({}){flagged}",
        run.shards.len(),
        counted(u64::from(run.total), "shard"),
        run.run_id,
        counted(r.stats.requests, "request"),
        counted(r.stats.errors.total(), "error"),
        run.start_skew_ns as f64 / 1e6,
        hosts.join(", ")
    );
    if !cut.is_empty() {
        let which = match cut.len() {
            1 => format!("shard {} was", list(&cut)),
            _ => format!("shards {} were", list(&cut)),
        };
        eprintln!(
            "warning: {which} cut short before the end: its counts are partial, and so are the merged ones"
        );
    }
    if let Some(missing) = run.missing_text() {
        eprintln!("warning: {missing}: the merge covers only part of the load (--require-all makes this an error)");
    }
}
