//! `loadbench agent xxl-job`: the flags into an [`AgentConfig`], and the one thing the agent
//! library needs from the CLI — `run`'s own flag parser, so a job's `executorParams` mean
//! exactly what they mean on the command line. Parsed in this process, never re-executed.

use crate::args::{Cli, Command, MetricsArgs, RunArgs, XxlJobArgs};
use crate::UserError;
use anyhow::Result;
use clap::Parser;
use loadbench_agent::{AgentConfig, Loads, Prepared, ShardOf, Trigger, TriggerWatch, Watch};
use loadbench_live::metrics::{Labels, Metrics, Triggers};
use loadbench_live::remote_write::RemoteWrite;
use loadbench_runner::{Live, Observer, Plan};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn xxl_job(a: XxlJobArgs) -> Result<ExitCode> {
    let listen = a.listen.parse().map_err(|_| {
        UserError(format!(
            "--listen '{}' is not IP:PORT: give e.g. 0.0.0.0:9999",
            a.listen
        ))
    })?;
    let results_url = a
        .results_url
        .as_deref()
        .map(loadbench_agent::upload::ResultsUrl::parse)
        .transpose()
        .map_err(UserError)?;
    if let Some(url) = &results_url {
        url.check_reachable().map_err(UserError)?;
    }
    let shard = a.shard.map(|s| ShardOf {
        index: s.index(),
        total: s.total(),
    });
    let data_dir = Some(a.data_dir.unwrap_or_else(|| a.results_dir.join("logs")));
    let config = AgentConfig {
        admin: a.admin,
        app_name: a.app_name,
        access_token: a.access_token,
        insecure_no_token: a.insecure_no_token,
        listen,
        advertise: a.advertise,
        results_dir: a.results_dir,
        results_url,
        shard,
        data_dir,
    };
    // Before the admin hears of this agent: the endpoint listens and the receiver answers.
    let watch = Series::start(&a.metrics)?.map(|s| Arc::new(s) as Arc<dyn Watch>);
    let stop = crate::signals::stop_flag()?;
    loadbench_agent::run(config, Arc::new(RunFlags), watch, &stop).map_err(|e| match e {
        loadbench_agent::AgentError::Config(m) => UserError(m),
        other => UserError(other.to_string()),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The agent's live series (docs/metrics.md, "The agent"): one endpoint for its life serving
/// the triggers running now and those finished since the last start, and a pusher per trigger.
struct Series {
    triggers: Arc<Triggers>,
    push: Option<String>,
    every: Duration,
    host: String,
}

impl Series {
    /// `--metrics-listen` listening and `--prometheus-remote-write` probed; `None` without
    /// either. A mistake is one line.
    fn start(m: &MetricsArgs) -> Result<Option<Series>, UserError> {
        let line = |e: &dyn std::fmt::Display| UserError(e.to_string());
        let addr = m
            .metrics_listen
            .as_deref()
            .map(|t| loadbench_live::metrics::parse_addr(t, m.metrics_public))
            .transpose()
            .map_err(|e| line(&e))?;
        if let Some(url) = &m.prometheus_remote_write {
            RemoteWrite::probe(url).map_err(|e| line(&e))?;
        }
        if addr.is_none() && m.prometheus_remote_write.is_none() {
            return Ok(None);
        }
        let triggers = Arc::new(Triggers::default());
        if let Some(addr) = addr {
            loadbench_live::metrics::serve(addr, &triggers).map_err(|e| line(&e))?;
        }
        Ok(Some(Series {
            triggers,
            push: m.prometheus_remote_write.clone(),
            every: m.prometheus_push_interval,
            host: loadbench_runner::host::detect().hostname,
        }))
    }
}

impl Watch for Series {
    fn trigger(&self, t: &Trigger) -> Box<dyn TriggerWatch> {
        let pair = |k: &str, v: String| (k.to_string(), v);
        let labels: Labels = vec![
            pair("run_id", t.run_id.clone()),
            pair("shard", format!("{}/{}", t.shard.index, t.shard.total)),
            pair("job_id", t.job_id.to_string()),
            pair("log_id", t.log_id.to_string()),
        ];
        let metrics = Metrics::with_labels("run", labels.clone());
        self.triggers.started(&metrics);
        let push = self.push.as_deref().and_then(|url| {
            let mut labels = labels;
            labels.extend([
                pair("job", "loadbench".into()),
                pair("host", self.host.clone()),
            ]);
            RemoteWrite::start_unprobed(url, &metrics, labels, self.every)
                .map_err(|e| eprintln!("loadbench agent: log {}: no pushes: {e}", t.log_id))
                .ok()
        });
        Box::new(Watched {
            metrics,
            push,
            triggers: Arc::clone(&self.triggers),
        })
    }
}

/// One trigger's series and pusher.
struct Watched {
    metrics: Arc<Metrics>,
    push: Option<RemoteWrite>,
    triggers: Arc<Triggers>,
}

impl Observer for Watched {
    fn load_started(&self, live: &Arc<Live>, plan: &Plan) {
        self.metrics.load_started(live, plan);
    }

    fn load_finished(&self) {
        self.metrics.load_finished();
    }
}

impl TriggerWatch for Watched {
    fn finish(&self) -> Option<loadbench_model::RemoteWriteCounts> {
        self.metrics.finish();
        self.triggers.finished(&self.metrics);
        let push = self.push.as_ref()?;
        push.finish();
        Some(crate::deliver::pushed(push))
    }
}

/// `executorParams` as `loadbench run` flags.
struct RunFlags;

impl Loads for RunFlags {
    fn prepare(&self, words: &[String], _shard: ShardOf) -> Result<Prepared, String> {
        let argv = ["loadbench", "run"].into_iter().map(str::to_string);
        let cli = Cli::try_parse_from(argv.chain(without_command(words).iter().cloned()))
            .map_err(clap_line)?;
        let Command::Run(args) = cli.command else {
            return Err(
                "executorParams: give `run` arguments, e.g. http://10.0.0.5:8080/ -c 100 -d 30s"
                    .into(),
            );
        };
        refuse_outputs(&args)?;
        let spec = crate::run::spec(&args).map_err(|e| format!("executorParams: {}", e.0))?;
        let start_at = args
            .dist
            .start_at
            .as_deref()
            .map(|t| loadbench_plan::parse_start_at(t).map_err(|e| format!("executorParams: {e}")))
            .transpose()?;
        // Like `run --start-at` without --run-id: the run is named by its start.
        let run_id = args.dist.run_id.clone().or_else(|| {
            let at = start_at?.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(format!("start-{}", at.as_secs()))
        });
        if let Some(id) = &run_id {
            loadbench_runner::shard::check_run_id(id)
                .map_err(|e| format!("executorParams: {e}"))?;
        }
        let start_in = args
            .dist
            .start_in
            .as_deref()
            .map(loadbench_agent::trigger_time::parse_start_in)
            .transpose()
            .map_err(|e| format!("executorParams: {e}"))?;
        let results_url = args
            .dist
            .results_url
            .as_deref()
            .map(loadbench_agent::upload::ResultsUrl::parse)
            .transpose()
            .map_err(|e| format!("executorParams: {e}"))?;
        Ok(Prepared {
            spec,
            run_id,
            start_at,
            start_in,
            results_url,
        })
    }
}

/// Flags that choose the shard (the broadcast does), write files elsewhere on the load host
/// (the agent's --results-dir does) or serve a live page or the live series there.
fn refuse_outputs(a: &RunArgs) -> Result<(), String> {
    if a.out.live_web.live_web.is_some() {
        return Err("executorParams: --live-web is not taken by the agent: it would serve a page on the load host; the job's log shows the progress".into());
    }
    if !a.gates.slo.is_empty() || a.gates.slo_allow_unjudged {
        return Err("executorParams: --slo is not taken by the agent: gates judge a whole run, and a trigger runs one shard of it".into());
    }
    if a.out.metrics.metrics_listen.is_some() || a.out.metrics.prometheus_remote_write.is_some() {
        return Err("executorParams: --metrics-listen and --prometheus-remote-write are not taken by the agent: give them to `loadbench agent xxl-job` itself, which serves and pushes every trigger's series".into());
    }
    let given = [
        ("--save", a.save.is_some()),
        ("--html", a.out.html.is_some()),
        ("--junit", a.out.junit.is_some()),
        ("--hlog", a.hlog.is_some()),
        ("--results-dir", a.dist.results_dir.is_some()),
        ("--shard", a.dist.shard.is_some()),
        ("--shard-from-env", a.dist.shard_from_env),
    ];
    match given.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(format!(
            "executorParams: {flag} is not taken by the agent: the broadcast gives the shard and each result goes to the agent's --results-dir"
        )),
        None => Ok(()),
    }
}

/// The words after an optional leading `loadbench run` or `run`.
fn without_command(words: &[String]) -> &[String] {
    let words = match words.first() {
        Some(w) if w == "loadbench" => &words[1..],
        _ => words,
    };
    match words.first() {
        Some(w) if w == "run" => &words[1..],
        _ => words,
    }
}

/// clap's error as one line, with the executorParams prefix.
fn clap_line(e: clap::Error) -> String {
    let source = std::error::Error::source(&e).map(ToString::to_string);
    let line = match source {
        Some(s) if s.starts_with('-') => s,
        _ => {
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .next()
                .unwrap_or("invalid arguments")
                .to_string();
            first.trim_start_matches("error: ").to_string()
        }
    };
    format!("executorParams: {line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        loadbench_agent::params::split(s).unwrap()
    }

    #[test]
    fn executor_params_are_run_flags_with_a_run_id_and_a_start() {
        let shard = ShardOf { index: 1, total: 3 };
        let p = RunFlags
            .prepare(
                &words("run http://127.0.0.1:1/ -c 10 -n 100 --run-id r1 --start-at=1795543200"),
                shard,
            )
            .unwrap();
        let connections = loadbench_plan::LoadShape::Closed { connections: 10 };
        assert_eq!(
            (&p.spec.load, p.run_id.as_deref()),
            (&connections, Some("r1"))
        );
        let at = p
            .start_at
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert_eq!(at.as_secs(), 1_795_543_200);
        let e = RunFlags
            .prepare(&words("http://h/ -c x"), shard)
            .unwrap_err();
        assert!(
            e.starts_with("executorParams: ") && !e.contains('\n'),
            "{e}"
        );
        let e = RunFlags
            .prepare(&words("http://h/ --save /etc/x"), shard)
            .unwrap_err();
        assert!(e.contains("--save is not taken"), "{e}");
        let e = RunFlags
            .prepare(&words("http://h/ --live-web"), shard)
            .unwrap_err();
        assert!(e.contains("--live-web is not taken"), "{e}");
        let e = RunFlags
            .prepare(&words("http://h/ --metrics-listen 127.0.0.1:0"), shard)
            .unwrap_err();
        assert!(
            e.contains("--metrics-listen and --prometheus-remote-write are not taken"),
            "{e}"
        );
        let e = RunFlags
            .prepare(&words("http://h/ --shard 0/2"), shard)
            .unwrap_err();
        assert!(e.contains("--shard is not taken"), "{e}");
        let e = RunFlags
            .prepare(&words("http://h/ --run-id"), shard)
            .unwrap_err();
        assert!(e.contains("a value is required for '--run-id"), "{e}");
        let e = RunFlags
            .prepare(&words("http://h/ --start-at soon"), shard)
            .unwrap_err();
        assert!(e.contains("--start-at 'soon'"), "{e}");
    }
}
