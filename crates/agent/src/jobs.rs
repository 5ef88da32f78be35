//! What the agent does with the admin's calls: start a trigger's shard on its own thread and
//! answer at once, stop it on `/kill` or at `executorTimeout`, keep its progress lines for
//! `/log`, write its result and call back. A job's state lives only while it runs.

use crate::client::{self, AdminUrl};
use crate::logs::Logs;
use crate::protocol::{self, Callback, JobIdParam, LogParam, TriggerParam};
use crate::{
    trigger_time, upload, AgentConfig, Loads, ShardOf, Trigger, TriggerWatch, Watch, HANDLER,
};
use loadbench_model::human::counted;
use loadbench_model::RunResult;
use loadbench_plan::{LoadSpec, Shard};
use loadbench_runner::shard::result_file_name;
use loadbench_runner::{Control, Live, Observer, Plan, ShardSpec};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The agent's shared state: its configuration and the jobs that run now.
pub(crate) struct Agent {
    pub(crate) config: AgentConfig,
    pub(crate) admin: AdminUrl,
    loads: Arc<dyn Loads>,
    running: Mutex<HashMap<i64, Running>>,
    logs: Logs,
    watch: Option<Arc<dyn Watch>>,
}

/// A running trigger, by job id.
struct Running {
    log_id: i64,
    stop: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

/// How a load ended, for the callback's code.
enum End {
    Done(RunResult),
    Killed(RunResult),
    TimedOut(RunResult),
    /// Cut short by the agent's own shutdown (SIGTERM, Ctrl-C): the result is `interrupted`.
    CutShort(RunResult),
    Failed(String),
}

impl Agent {
    pub(crate) fn new(
        config: AgentConfig,
        admin: AdminUrl,
        loads: Arc<dyn Loads>,
        logs: Logs,
        watch: Option<Arc<dyn Watch>>,
    ) -> Agent {
        Agent {
            config,
            admin,
            loads,
            running: Mutex::new(HashMap::new()),
            logs,
            watch,
        }
    }

    pub(crate) fn token(&self) -> Option<&str> {
        self.config
            .access_token
            .as_deref()
            .filter(|t| !t.is_empty())
    }

    /// `/run`: refuse what this executor never runs, else start the shard and answer at once.
    pub(crate) fn trigger(self: &Arc<Self>, t: TriggerParam) -> Value {
        if !t.glue_type.eq_ignore_ascii_case("BEAN") {
            return protocol::fail(format!(
                "glueType {} refused: loadbench runs only BEAN jobs with handler {HANDLER} (no scripts run on a load host)",
                t.glue_type
            ));
        }
        if t.executor_handler != HANDLER {
            return protocol::fail(format!(
                "job handler [{}] not found: this executor has only [{HANDLER}]",
                t.executor_handler
            ));
        }
        let mut running = self.lock();
        if let Some(old) = running.get(&t.job_id) {
            if t.executor_block_strategy != "COVER_EARLY" {
                return protocol::fail(format!(
                    "job {} is still running (log {}); block strategy {}: this trigger is discarded",
                    t.job_id, old.log_id, t.executor_block_strategy
                ));
            }
            old.killed.store(true, Ordering::Relaxed);
            old.stop.store(true, Ordering::Relaxed);
        }
        let job = Arc::new(Job::new(t));
        self.logs.open(job.t.log_id);
        self.logs.running(job.t.log_id, job.t.log_date_time);
        let agent = Arc::clone(self);
        let (stop, killed) = (Arc::clone(&job.stop), Arc::clone(&job.killed));
        let (job_id, log_id) = (job.t.job_id, job.t.log_id);
        let thread = std::thread::spawn(move || agent.execute(&job));
        running.insert(
            job_id,
            Running {
                log_id,
                stop,
                killed,
                thread,
            },
        );
        protocol::ok()
    }

    /// `/kill`: stop the job's load within a tick; it still writes its partial result.
    pub(crate) fn kill(&self, p: &JobIdParam) -> Value {
        match self.lock().get(&p.job_id) {
            Some(r) => {
                r.killed.store(true, Ordering::Relaxed);
                r.stop.store(true, Ordering::Relaxed);
                self.logs.push(r.log_id, "kill: the admin stopped the job");
                protocol::ok()
            }
            None => protocol::json_ok_msg("job thread already killed."),
        }
    }

    /// `/idleBeat`: busy while the job runs.
    pub(crate) fn idle_beat(&self, p: &JobIdParam) -> Value {
        if self.lock().contains_key(&p.job_id) {
            protocol::fail("job thread is running or has trigger queue.")
        } else {
            protocol::ok()
        }
    }

    /// `/log`: the trigger's lines from `fromLineNum` on.
    pub(crate) fn log(&self, p: &LogParam) -> Value {
        let s = self.logs.read(p.log_id, p.from_line_num);
        protocol::log_answer(s.from, s.to, &s.content, s.is_end)
    }

    /// At start: the triggers a former agent on this `--data-dir` was running when it stopped
    /// without calling back (kill -9, a crash, a reboot) are reported failed, so the admin does
    /// not show them running for ever.
    pub(crate) fn report_lost(&self) {
        let msg = "lost: the agent stopped while this trigger ran (killed, crashed or the host restarted) and started again; no result";
        for (log_id, at) in self.logs.lost(&format!("end: 500 {msg}")) {
            eprintln!(
                "loadbench agent: log {log_id} was lost by a former agent; reporting it failed"
            );
            self.call_back(log_id, at, 500, msg.to_string());
        }
    }

    /// Shutdown: stop every running load and wait for their callbacks.
    pub(crate) fn stop_all(&self) {
        let jobs: Vec<Running> = self.lock().drain().map(|(_, r)| r).collect();
        for r in &jobs {
            r.stop.store(true, Ordering::Relaxed);
        }
        for r in jobs {
            let _ = r.thread.join();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The job's thread: prepare, run, save, call back, forget.
    fn execute(&self, job: &Job) {
        let t = &job.t;
        self.logs.push(
            t.log_id,
            format!(
                "trigger: job {} log {} shard {}/{} params: {}",
                t.job_id, t.log_id, t.broadcast_index, t.broadcast_total, t.executor_params
            ),
        );
        let (code, msg) = match self.prepare(t) {
            Ok(ready) => self.finish(job, &ready),
            Err(e) => (500, e),
        };
        self.logs.push(t.log_id, format!("end: {code} {msg}"));
        self.call_back(t.log_id, t.log_date_time, code, msg);
        self.logs.done(t.log_id);
        let mut running = self.lock();
        if running.get(&t.job_id).is_some_and(|r| r.log_id == t.log_id) {
            running.remove(&t.job_id);
        }
    }

    /// The load, its shard and where its result goes: the broadcast's index and total (or the
    /// agent's `--shard` when the admin sends total 0), the parameters' run id (or one derived
    /// from the job and the trigger time, see [`crate::trigger_time`]) and start instant.
    fn prepare(&self, t: &TriggerParam) -> Result<Ready, String> {
        let of = match (t.broadcast_total, self.config.shard) {
            (0, Some(static_shard)) => static_shard,
            _ => ShardOf::from_broadcast(t.broadcast_index, t.broadcast_total)?,
        };
        let words = crate::params::split(&t.executor_params)?;
        let prepared = self.loads.prepare(&words, of)?;
        let start_at = match prepared.start_in {
            Some(d) => Some(trigger_time::start(t.log_date_time, d)?),
            None => prepared.start_at,
        };
        let run_id = match (prepared.run_id, prepared.start_in) {
            (Some(id), _) => id,
            (None, Some(_)) => trigger_time::run_id(t.job_id, t.log_date_time)?,
            (None, None) => trigger_time::run_id(t.job_id, t.log_date_time)
                .unwrap_or_else(|_| format!("job{}-log{}", t.job_id, t.log_id)),
        };
        let results_url = prepared
            .results_url
            .or_else(|| self.config.results_url.clone());
        if let Some(url) = &results_url {
            url.check_reachable()?;
        }
        let shard = ShardSpec {
            shard: Shard::new(of.index, of.total).map_err(|e| e.to_string())?,
            run_id,
            start_at,
        };
        loadbench_runner::shard::check_run_id(&shard.run_id).map_err(|e| e.to_string())?;
        Ok(Ready {
            spec: prepared.spec,
            shard,
            results_url,
        })
    }

    /// Runs the load, saves what it measured and says how it went.
    fn finish(&self, job: &Job, ready: &Ready) -> (u16, String) {
        let shard = &ready.shard;
        let (end, pushed) = self.run_watched(job, ready);
        let (code, what, mut result) = match outcome(end, job.t.executor_timeout) {
            Ok(o) => o,
            Err(e) => return (500, e),
        };
        result.remote_write = pushed;
        let (path, renamed) = unused_path(&self.config.results_dir, shard, job.t.log_id);
        let json = match to_json(&result) {
            Ok(json) => json,
            Err(e) => return (500, format!("{what}: the result cannot be written: {e}")),
        };
        let mut saved = match loadbench_runner::save::write_atomic(&path, json.as_bytes()) {
            Ok(()) if result.interrupted => {
                format!("partial result saved to {}", path.display())
            }
            Ok(()) => format!("saved to {}", path.display()),
            Err(e) => {
                return (
                    500,
                    format!("{what}: {}; {e}", counted(result.stats.requests, "request")),
                )
            }
        };
        if renamed {
            saved.push_str(" (a result of this run id was already there: kept, not overwritten)");
        }
        let code = match self.upload(ready, &path, &json) {
            Some(Err(e)) => {
                saved.push_str(&format!("; NOT uploaded: {e}"));
                500
            }
            Some(Ok(target)) => {
                saved.push_str(&format!("; uploaded to {target}"));
                code
            }
            None => code,
        };
        (
            code,
            format!(
                "shard {}: {what}: {}; {saved}",
                shard.shard,
                summary(&result)
            ),
        )
    }

    /// Runs the load, its live series watched when the agent serves or pushes them; what the
    /// pushes came to (one line in the trigger's log when some were lost).
    fn run_watched(
        &self,
        job: &Job,
        ready: &Ready,
    ) -> (End, Option<loadbench_model::RemoteWriteCounts>) {
        let shard = &ready.shard;
        let watch = self.watch.as_ref().map(|w| {
            w.trigger(&Trigger {
                job_id: job.t.job_id,
                log_id: job.t.log_id,
                run_id: shard.run_id.clone(),
                shard: ShardOf {
                    index: shard.shard.index(),
                    total: shard.shard.total(),
                },
            })
        });
        let end = job.run(&ready.spec, shard, &self.logs, watch.as_deref());
        let pushed = watch.and_then(|w| w.finish());
        if let Some(p) = pushed.as_ref().filter(|p| p.lost > 0) {
            let line = format!(
                "remote write: {} of {} pushes to {} were lost; the result itself is complete",
                p.lost, p.pushes, p.url
            );
            self.logs.push(job.t.log_id, line);
        }
        (end, pushed)
    }

    /// Sends the saved result to the `--results-url`, if any: the URL it went to, or why not.
    fn upload(&self, ready: &Ready, path: &Path, json: &str) -> Option<Result<String, String>> {
        let url = ready.results_url.as_ref()?;
        let shard = &ready.shard;
        let file = path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        let target = url.for_shard(upload::Naming {
            run_id: &shard.run_id,
            shard: shard.shard.index(),
            total: shard.shard.total(),
            file: &file,
        });
        Some(upload::put_with_retries(&target, json).map(|()| target))
    }

    /// Reports the outcome, retrying a few times: the admin may restart meanwhile.
    fn call_back(&self, log_id: i64, log_date_time: i64, code: u16, msg: String) {
        let body = serde_json::json!([Callback {
            log_id,
            log_date_tim: log_date_time,
            handle_code: code,
            handle_msg: msg,
        }]);
        for attempt in 1..=3 {
            match client::post(&self.admin, "/api/callback", self.token(), &body) {
                Ok(_) => return self.logs.end(log_id, "callback: accepted by the admin"),
                Err(e) if attempt == 3 => {
                    eprintln!("loadbench agent: callback of log {log_id} failed: {e}");
                    return self.logs.end(log_id, format!("callback failed: {e}"));
                }
                Err(_) => std::thread::sleep(Duration::from_secs(1)),
            }
        }
    }
}

/// One trigger being run.
struct Job {
    t: TriggerParam,
    stop: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
    received: Instant,
}

impl Job {
    fn new(t: TriggerParam) -> Job {
        Job {
            t,
            stop: Arc::new(AtomicBool::new(false)),
            killed: Arc::new(AtomicBool::new(false)),
            received: Instant::now(),
        }
    }

    /// Runs the load on a scoped thread while this one watches the clock: a progress line each
    /// second, the stop flag raised at `executorTimeout`.
    fn run(
        &self,
        spec: &LoadSpec,
        shard: &ShardSpec,
        logs: &Logs,
        watch: Option<&dyn TriggerWatch>,
    ) -> End {
        let progress = Progress {
            live: Mutex::default(),
            watch,
        };
        let timeout = u64::try_from(self.t.executor_timeout)
            .ok()
            .filter(|&s| s > 0)
            .map(Duration::from_secs);
        let mut timed_out = false;
        let outcome = std::thread::scope(|s| {
            let ctl = Control {
                stop: &self.stop,
                observer: &progress,
            };
            let load = s.spawn(move || loadbench_runner::run_shard(spec, shard, ctl));
            let mut next_line = Duration::from_secs(1);
            while !load.is_finished() {
                std::thread::sleep(Duration::from_millis(20));
                let elapsed = self.received.elapsed();
                if timeout.is_some_and(|t| elapsed >= t) && !timed_out {
                    timed_out = true;
                    self.stop.store(true, Ordering::Relaxed);
                }
                if elapsed >= next_line {
                    logs.push(self.t.log_id, progress.line(elapsed));
                    next_line += Duration::from_secs(1);
                }
            }
            load.join()
        });
        match outcome {
            Err(_) => End::Failed("the load panicked; see the agent's stderr".into()),
            Ok(Err(e)) => End::Failed(e.to_string()),
            Ok(Ok(r)) if self.killed.load(Ordering::Relaxed) => End::Killed(r),
            Ok(Ok(r)) if timed_out => End::TimedOut(r),
            Ok(Ok(r)) if r.interrupted => End::CutShort(r),
            Ok(Ok(r)) => End::Done(r),
        }
    }
}

/// Reads the running load's live counters for the progress lines: the engine's pulses, the
/// same snapshots the dashboard and the live page read; and feeds the trigger's live series.
struct Progress<'a> {
    live: Mutex<Option<Arc<Live>>>,
    watch: Option<&'a dyn TriggerWatch>,
}

impl Observer for Progress<'_> {
    fn load_started(&self, live: &Arc<Live>, plan: &Plan) {
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(live));
        if let Some(w) = self.watch {
            w.load_started(live, plan);
        }
    }

    fn load_finished(&self) {
        if let Some(w) = self.watch {
            w.load_finished();
        }
    }
}

impl Progress<'_> {
    fn line(&self, elapsed: Duration) -> String {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        match live.as_ref() {
            Some(l) => {
                let (requests, errors) = l.snapshot();
                format!(
                    "{}s: {requests} requests, {errors} errors",
                    elapsed.as_secs()
                )
            }
            None => format!("{}s: waiting to start", elapsed.as_secs()),
        }
    }
}

/// How a load ended: the callback's code, a few words, and the result to save.
fn outcome(end: End, executor_timeout: i64) -> Result<(u16, String, RunResult), String> {
    Ok(match end {
        End::Failed(e) => return Err(e),
        End::Done(r) if r.stats.requests == 0 && r.stats.errors.total() > 0 => {
            (500, "every request failed".to_string(), r)
        }
        End::Done(r) => (200, "done".to_string(), r),
        End::Killed(r) => (500, "killed by the admin, partial result".to_string(), r),
        End::CutShort(r) => (
            500,
            "cut short by the agent's shutdown (SIGTERM), partial result".to_string(),
            r,
        ),
        End::TimedOut(r) => (
            502,
            format!(
                "timed out after executorTimeout {}s, partial result",
                executor_timeout
            ),
            r,
        ),
    })
}

/// One line: requests, errors, rate and p99.
fn summary(r: &RunResult) -> String {
    let rate = r.summary.as_ref().map_or(0.0, |s| s.requests_per_sec);
    format!(
        "{}, {}, {rate:.0} req/s",
        counted(r.stats.requests, "request"),
        counted(r.stats.errors.total(), "error")
    )
}

/// The result as the JSON a saved file holds.
fn to_json(result: &RunResult) -> Result<String, String> {
    let mut result = result.clone();
    result.finalize();
    serde_json::to_string_pretty(&result).map_err(|e| e.to_string())
}

/// Where a trigger's result goes: `RUNID-shard-I-of-N.json`, or, when a result of that name is
/// already there (a fixed `--run-id` fired again, a trigger covered under COVER_EARLY),
/// `RUNID-shard-I-of-N.log<LOGID>.json`: a result a callback named is never overwritten. True
/// when renamed.
fn unused_path(dir: &Path, shard: &ShardSpec, log_id: i64) -> (PathBuf, bool) {
    let name = result_file_name(shard);
    let path = dir.join(&name);
    if !path.exists() {
        return (path, false);
    }
    let stem = name.trim_end_matches(".json");
    (dir.join(format!("{stem}.log{log_id}.json")), true)
}

/// A trigger ready to run: the shard's load, which shard and run, where its result goes.
struct Ready {
    spec: LoadSpec,
    shard: ShardSpec,
    results_url: Option<upload::ResultsUrl>,
}
