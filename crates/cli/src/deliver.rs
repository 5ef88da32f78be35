//! The start and the end that `run`, `find-max` and `bench` share, around their flattened
//! output flags ([`OutputArgs`]): before the load, [`OutputArgs::start`] checks `--live-web`,
//! `--metrics-listen` and `--html`, starts the live page and the metrics endpoint and says what
//! stderr shows; after it (and after each command
//! saved its own files), [`deliver`] gives the live page the final result, writes `--html` and
//! prints the result in `-o`'s format. The exit code is the command's.

use crate::args::OutputArgs;
use crate::progress::Shown;
use crate::UserError;
use anyhow::Result;
use loadbench_live::metrics::Metrics;
use loadbench_live::remote_write::RemoteWrite;
use loadbench_live::web::LiveWeb;
use loadbench_model::SavedResult;
use loadbench_report::Format;
use loadbench_report::RenderOptions;
use std::sync::Arc;

/// What a command serves while it runs: the live page (`--live-web`) and the live series
/// (`--metrics-listen`), each when asked for.
#[derive(Default)]
pub(crate) struct Served {
    web: Option<Arc<LiveWeb>>,
    metrics: Option<Arc<Metrics>>,
    push: Option<Arc<RemoteWrite>>,
}

/// Who pushes (`--prometheus-remote-write`): the run id and shard of a distributed run's shard
/// (a run of its own otherwise), added to every pushed series with the host.
#[derive(Debug, Default, Clone)]
pub(crate) struct PushId {
    pub run_id: Option<String>,
    pub shard: Option<String>,
}

impl PushId {
    fn labels(&self, command: &str) -> loadbench_live::metrics::Labels {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let run_id = self
            .run_id
            .clone()
            .unwrap_or_else(|| format!("{command}-{at}-{}", std::process::id()));
        vec![
            ("job".into(), "loadbench".into()),
            ("run_id".into(), run_id),
            (
                "shard".into(),
                self.shard.clone().unwrap_or_else(|| "0/1".into()),
            ),
            ("host".into(), loadbench_runner::host::detect().hostname),
        ]
    }
}

impl Served {
    /// The live page, if one is served.
    pub(crate) fn web(&self) -> Option<&LiveWeb> {
        self.web.as_deref()
    }

    /// The live series, if they are served.
    pub(crate) fn metrics(&self) -> Option<&Metrics> {
        self.metrics.as_deref()
    }

    /// What the pushes of `--prometheus-remote-write` came to (final once the loads are done).
    pub(crate) fn remote_write(&self) -> Option<loadbench_model::RemoteWriteCounts> {
        self.push.as_deref().map(pushed)
    }
}

/// What the pushes of `p` came to, as a result records them.
pub(crate) fn pushed(p: &RemoteWrite) -> loadbench_model::RemoteWriteCounts {
    let c = p.counts();
    loadbench_model::RemoteWriteCounts {
        url: p.url().to_string(),
        pushes: c.made,
        sent: c.sent,
        lost: c.lost,
    }
}

impl OutputArgs {
    /// Before the load: `--live-web`, `--metrics-listen` and `--html` checked, the live page
    /// and the metrics endpoint started when asked for, and what stderr shows while `command`
    /// runs (nothing with `-q`, the dashboard unless `--no-live`, the page and the series
    /// beside it).
    pub(crate) fn start(
        &self,
        command: &'static str,
        opts: &RenderOptions,
        id: &PushId,
    ) -> Result<(Served, Shown), UserError> {
        let addr = crate::live::web::asked(&self.live_web)?;
        let metrics_addr = self
            .metrics
            .metrics_listen
            .as_deref()
            .map(|t| loadbench_live::metrics::parse_addr(t, self.metrics.metrics_public))
            .transpose()
            .map_err(|e| UserError(e.to_string()))?;
        crate::output::check_writable("--html", self.html.as_deref())?;
        crate::output::check_writable("--junit", self.junit.as_deref())?;
        let push_url = self.metrics.prometheus_remote_write.as_deref();
        let metrics = (metrics_addr.is_some() || push_url.is_some()).then(|| Metrics::new(command));
        if let (Some(a), Some(m)) = (metrics_addr, &metrics) {
            loadbench_live::metrics::serve(a, m).map_err(|e| UserError(e.to_string()))?;
        }
        let push = match (push_url, &metrics) {
            (Some(url), Some(m)) => Some(Arc::new(
                RemoteWrite::start(
                    url,
                    m,
                    id.labels(command),
                    self.metrics.prometheus_push_interval,
                )
                .map_err(|e| UserError(e.to_string()))?,
            )),
            _ => None,
        };
        let web = crate::live::web::start(addr, opts, command)?;
        let shown = Shown::live(self.quiet, !self.no_live, command)
            .with_web(web.clone())
            .with_metrics(metrics.clone(), push.clone());
        Ok((Served { web, metrics, push }, shown))
    }
}

/// The common end of `run`, `find-max` and `bench`, once each has saved its own files: the live
/// page takes the final result, `--html` is written (and said on stderr when `announce_html`),
/// and the result is printed to stdout in `-o`'s format. The command then says its exit code
/// ([`crate::live::web::conclude`]).
pub(crate) fn deliver(
    saved: &SavedResult,
    out: &OutputArgs,
    opts: &RenderOptions,
    web: Option<&LiveWeb>,
    announce_html: bool,
) -> Result<()> {
    if let Some(web) = web {
        web.finish(saved);
    }
    if let Some(path) = &out.html {
        crate::output::write(path, saved, Format::Html, opts)?;
        if announce_html {
            eprintln!("HTML report written to {}", path.display());
        }
    }
    if let Some(path) = &out.junit {
        crate::output::write(path, saved, Format::Junit, opts)?;
        if announce_html {
            eprintln!("JUnit report written to {}", path.display());
        }
    }
    crate::output::print(saved, out.output, opts)
}
