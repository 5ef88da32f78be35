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
    let start_in = a
        .start_in
        .as_deref()
        .map(loadbench_agent::trigger_time::parse_start_in)
        .transpose()
        .map_err(UserError)?;
    if shard.is_none() && start_text.is_none() && run_id.is_none() && start_in.is_none() {
        if a.results_url.is_some() {
            return Err(UserError(
                "--results-url names files by shard: add --shard I/N (or --shard-from-env)".into(),
            ));
        }
        if a.results_dir.is_some() {
            return Err(UserError(
                "--results-dir names files by shard: add --shard I/N (or --shard-from-env)".into(),
            ));
        }
        return Ok(None);
    }
    let start_at = match (&start_text, start_in) {
        (Some(t), _) => Some(parse_start_at(t).map_err(|e| UserError(e.to_string()))?),
        // This long after the current whole second (a scheduler's trigger gives the agent a
        // common anchor; a command line has only its own clock).
        (None, Some(d)) => {
            let now = std::time::SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            Some(UNIX_EPOCH + std::time::Duration::from_secs(now.as_secs()) + d)
        }
        (None, None) => None,
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

/// `--results-url`, checked (form and reachability) before any load.
pub(crate) fn results_url(
    a: &ShardArgs,
) -> Result<Option<loadbench_agent::upload::ResultsUrl>, UserError> {
    let Some(text) = &a.results_url else {
        return Ok(None);
    };
    let url = loadbench_agent::upload::ResultsUrl::parse(text).map_err(UserError)?;
    url.check_reachable().map_err(UserError)?;
    Ok(Some(url))
}

/// Uploads a shard's result to its `--results-url` (retried); one line on stderr either way.
pub(crate) fn upload(
    url: &loadbench_agent::upload::ResultsUrl,
    spec: &ShardSpec,
    json: &str,
    quiet: bool,
) -> bool {
    let file = loadbench_runner::shard::result_file_name(spec);
    let target = url.for_shard(loadbench_agent::upload::Naming {
        run_id: &spec.run_id,
        shard: spec.shard.index(),
        total: spec.shard.total(),
        file: &file,
    });
    match loadbench_agent::upload::put_with_retries(&target, json) {
        Ok(()) => {
            if !quiet {
                eprintln!("shard result uploaded to {target}");
            }
            true
        }
        Err(e) => {
            eprintln!("error: the shard result was NOT uploaded: {e}");
            false
        }
    }
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
    let files = match a.results.as_slice() {
        [dir] if dir.is_dir() => from_folder(dir, &a)?,
        _ if a.wait.is_some() || a.run_id.is_some() => {
            return Err(UserError(
                "--wait and --run-id take one folder: give the folder the shard results go to, e.g. `loadbench merge results/ --wait 3`".into(),
            )
            .into())
        }
        _ => a.results.clone(),
    };
    let mut runs = Vec::with_capacity(files.len());
    for path in &files {
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

/// A shard result's file name in a folder: `RUNID-shard-I-of-N.json` → (run id, I, N).
fn shard_file_name(name: &str) -> Option<(&str, u32, u32)> {
    let stem = name.strip_suffix(".json")?;
    let (head, total) = stem.rsplit_once("-of-")?;
    let (run_id, index) = head.rsplit_once("-shard-")?;
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if run_id.is_empty() || !all_digits(index) || !all_digits(total) {
        return None;
    }
    Some((run_id, index.parse().ok()?, total.parse().ok()?))
}

/// The shard files of one run in `dir` (waiting for all `--wait N` of them until the timeout).
/// Files are taken only under their final name and only once they read as results, so a file
/// still being written (a temporary name, or a half-written upload) is waited for.
fn from_folder(dir: &Path, a: &MergeArgs) -> Result<Vec<PathBuf>> {
    if let Some(id) = &a.run_id {
        loadbench_runner::shard::check_run_id(id).map_err(|e| UserError(e.to_string()))?;
    }
    let deadline = std::time::Instant::now() + a.timeout;
    loop {
        let found = scan(dir)?;
        let run_id = pick_run(dir, a.run_id.as_ref(), &found)?;
        let shards = run_id.as_ref().and_then(|id| found.get(id));
        let Some(want) = a.wait else {
            return match shards {
                Some(s) => Ok(s.iter().map(|(_, _, p)| p.clone()).collect()),
                None => Err(UserError(format!(
                    "{} holds no shard result{}: give the folder the shards wrote to",
                    dir.display(),
                    run_id.map(|id| format!(" of run {id}")).unwrap_or_default()
                ))
                .into()),
            };
        };
        let complete: Vec<&(u32, u32, PathBuf)> = shards
            .map(|s| {
                s.iter()
                    .filter(|(_, total, p)| *total == want && readable(p))
                    .collect()
            })
            .unwrap_or_default();
        let have: std::collections::BTreeSet<u32> = complete.iter().map(|(i, _, _)| *i).collect();
        if (0..want).all(|i| have.contains(&i)) {
            return Ok(complete
                .iter()
                .filter(|(i, _, _)| *i < want)
                .map(|(_, _, p)| p.clone())
                .collect());
        }
        if std::time::Instant::now() >= deadline {
            let missing: Vec<String> = (0..want)
                .filter(|i| !have.contains(i))
                .map(|i| i.to_string())
                .collect();
            anyhow::bail!(
                "merge --wait: timed out after {} waiting for run {} in {}: shards {} of {want} are missing",
                humantime::format_duration(a.timeout),
                run_id.as_deref().unwrap_or("(none yet)"),
                dir.display(),
                missing.join(", ")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The run to merge: `--run-id`, or the only run id in the folder (`None`: none there yet).
fn pick_run(dir: &Path, given: Option<&String>, found: &Found) -> Result<Option<String>> {
    let mut ids: Vec<&String> = found.keys().collect();
    ids.sort();
    match (given, ids.as_slice()) {
        (Some(id), _) => Ok(Some(id.clone())),
        (None, [one]) => Ok(Some((*one).clone())),
        (None, []) => Ok(None),
        (None, many) => {
            let list: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
            Err(UserError(format!(
                "{} holds the shards of several runs ({}): pick one with --run-id",
                dir.display(),
                list.join(", ")
            ))
            .into())
        }
    }
}

/// Shard files in `dir` by run id: (index, total, path).
type Found = std::collections::HashMap<String, Vec<(u32, u32, PathBuf)>>;

fn scan(dir: &Path) -> Result<Found> {
    let mut found = Found::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| UserError(format!("{}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((run_id, index, total)) = name.to_str().and_then(shard_file_name) else {
            continue;
        };
        found
            .entry(run_id.to_string())
            .or_default()
            .push((index, total, entry.path()));
    }
    Ok(found)
}

/// A file that reads as a saved result (a complete file, not one still being written).
fn readable(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .is_some_and(|text| RunResult::from_json(&text).is_ok())
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

#[cfg(test)]
mod tests {
    use super::shard_file_name;

    #[test]
    fn folder_files_are_taken_only_under_a_shard_result_name() {
        assert_eq!(
            shard_file_name("job7-1795543200-shard-2-of-3.json"),
            Some(("job7-1795543200", 2, 3))
        );
        assert_eq!(shard_file_name("a-shard-x-of-3.json"), None);
        assert_eq!(shard_file_name("r-shard-0-of-3.log12.json"), None);
        assert_eq!(shard_file_name("r-shard-0-of-3.json.tmp"), None);
        assert_eq!(shard_file_name("-shard-0-of-3.json"), None);
    }
}
