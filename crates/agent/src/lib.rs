//! An xxl-job executor that runs shards of a load: `loadbench agent xxl-job`.
//!
//! In: an [`AgentConfig`] (admin URL, app name, token, listen address, results folder), a
//! [`Loads`] that turns a job's `executorParams` plus its broadcast shard into a typed
//! [`LoadSpec`] (the CLI supplies it, with its own `run` flag parser), and a shutdown flag.
//! Out: registrations at the admin every 30 s, the executor endpoints (`/beat`, `/idleBeat`,
//! `/run`, `/kill`, `/log`), one shard result file per trigger in the results folder (also PUT
//! to `--results-url`, [`upload`]), one callback per trigger, and each trigger's log on disk
//! ([`logs`]), and each trigger's load observed by a [`Watch`] when one is given (the CLI's live
//! series for Prometheus, docs/metrics.md). `--start-in` gives every shard of a broadcast one start and run id
//! ([`trigger_time`]). Loads run through the runner library in this process: no re-exec, no
//! shell, and every glue type but BEAN is refused, so the admin can never run a script here.
//! Neighbours: runner (runs loads), plan (specs), model (results); the wire details are in
//! [`protocol`], checked against the project's protocol notes.

pub mod client;
mod jobs;
pub mod logs;
pub mod params;
pub mod protocol;
mod registry;
mod server;
pub mod trigger_time;
pub mod upload;

pub use loadbench_plan::LoadSpec;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The one BEAN handler this executor has.
pub const HANDLER: &str = "loadbench";

/// How the agent was started (the CLI's flags).
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The admin's base URL, context path included, as given.
    pub admin: String,
    /// The executor group's app name (`registryKey`).
    pub app_name: String,
    /// The shared `XXL-JOB-ACCESS-TOKEN`; `None` only with `insecure_no_token`.
    pub access_token: Option<String>,
    /// Accept an admin without a token (anyone who reaches the port can start loads).
    pub insecure_no_token: bool,
    /// Where the executor endpoints listen.
    pub listen: SocketAddr,
    /// The address registered at the admin [default: the listen address, or the address of
    /// the interface that reaches the admin when listening on all interfaces].
    pub advertise: Option<String>,
    /// Where each trigger's shard result is written.
    pub results_dir: PathBuf,
    /// Where each shard result is also sent with HTTP PUT (`--results-url`).
    pub results_url: Option<upload::ResultsUrl>,
    /// This agent's shard when the admin sends no broadcast (`broadcastTotal` 0, as ratchjob
    /// does for every address): `--shard I/N` of the agent.
    pub shard: Option<ShardOf>,
    /// Where the job logs are kept on disk (`--data-dir`), so `/log` answers after a restart.
    pub data_dir: Option<PathBuf>,
}

/// A job's shard of the broadcast: `broadcastIndex` of `broadcastTotal` (a total of 0 is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardOf {
    /// 0-based position.
    pub index: u32,
    /// Number of shards, at least 1.
    pub total: u32,
}

impl ShardOf {
    /// The admin's broadcast fields as a shard; out-of-range values are one line.
    pub fn from_broadcast(index: i64, total: i64) -> Result<ShardOf, String> {
        let total = if total == 0 { 1 } else { total };
        let fits = |v: i64| u32::try_from(v).ok();
        match (fits(index), fits(total)) {
            (Some(index), Some(total)) if total > 0 && index < total => Ok(ShardOf { index, total }),
            _ => Err(format!(
                "broadcastIndex {index} / broadcastTotal {total} is not a shard: the index must be 0 to total-1"
            )),
        }
    }
}

/// A load ready to run, from a job's parameters.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The shard's load.
    pub spec: LoadSpec,
    /// The run id the shards share (`--run-id`), naming the result file; `None`: one is made
    /// from the job and log ids (unique to the trigger, so give one to merge a broadcast).
    pub run_id: Option<String>,
    /// The shards' common start (`--start-at`); `None`: start when the target checks out.
    pub start_at: Option<std::time::SystemTime>,
    /// A start this long after the trigger (`--start-in`), the same on every shard of the
    /// broadcast ([`trigger_time`]).
    pub start_in: Option<std::time::Duration>,
    /// The job's own `--results-url`, over the agent's.
    pub results_url: Option<upload::ResultsUrl>,
}

/// Turns `executorParams`, split into words, and the broadcast shard into a load. An error is
/// one line naming the fix; it becomes the trigger's failure message.
pub trait Loads: Send + Sync {
    /// The whole load of the `run` command line `args`; the agent takes shard `shard` of it.
    fn prepare(&self, args: &[String], shard: ShardOf) -> Result<Prepared, String>;
}

/// A trigger as its live series name it ([`Watch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// The admin's job id.
    pub job_id: i64,
    /// The admin's log id of this trigger (one per shard).
    pub log_id: i64,
    /// The run id the shards of the trigger share.
    pub run_id: String,
    /// This agent's shard of it.
    pub shard: ShardOf,
}

/// The live series of each trigger (the agent's `--metrics-listen` and
/// `--prometheus-remote-write`); the CLI supplies it.
pub trait Watch: Send + Sync {
    /// Trigger `t`'s load is about to run: what observes it.
    fn trigger(&self, t: &Trigger) -> Box<dyn TriggerWatch>;
}

/// Observes one trigger's load.
pub trait TriggerWatch: loadbench_runner::Observer + Send {
    /// The load is over: the series say so (and are pushed a last time); what the pushes came
    /// to, for the result.
    fn finish(&self) -> Option<loadbench_model::RemoteWriteCounts>;
}

/// Why the agent could not start (one line naming the fix).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A flag is missing or wrong.
    #[error("{0}")]
    Config(String),
    /// The listen address cannot be had.
    #[error("cannot listen on {addr}: {source}; pick a free port with --listen")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
}

/// Runs the executor until `shutdown` is raised: registers, serves, runs jobs (each observed
/// by `watch`, when given); then removes
/// its registration, stops running loads (they keep their partial results and call back) and
/// returns.
pub fn run(
    config: AgentConfig,
    loads: Arc<dyn Loads>,
    watch: Option<Arc<dyn Watch>>,
    shutdown: &AtomicBool,
) -> Result<(), AgentError> {
    let admin = client::AdminUrl::parse(&config.admin).map_err(AgentError::Config)?;
    if config.access_token.as_deref().is_none_or(str::is_empty) && !config.insecure_no_token {
        return Err(AgentError::Config(
            "--access-token is required: give the admin's xxl.job.accessToken, or set LOADBENCH_XXL_JOB_TOKEN (or --insecure-no-token to let anyone who reaches the port start loads)".into(),
        ));
    }
    let logs = match &config.data_dir {
        Some(dir) => logs::Logs::on_disk(dir).map_err(AgentError::Config)?,
        None => logs::Logs::default(),
    };
    let listener = TcpListener::bind(config.listen).map_err(|source| AgentError::Listen {
        addr: config.listen,
        source,
    })?;
    let local = listener.local_addr().map_err(|source| AgentError::Listen {
        addr: config.listen,
        source,
    })?;
    let address = advertised(&config, local, &admin);
    eprintln!(
        "loadbench agent: executor {} on {local}, registering {address} at {}",
        config.app_name, config.admin
    );
    let agent = Arc::new(jobs::Agent::new(config, admin, loads, logs, watch));
    std::thread::scope(|s| {
        s.spawn(|| registry::keep_registered(&agent, &address, shutdown));
        s.spawn(|| agent.report_lost());
        let served = server::serve(listener, Arc::clone(&agent), shutdown);
        agent.stop_all();
        served
    })
}

/// The executor address the admin should call.
fn advertised(config: &AgentConfig, local: SocketAddr, admin: &client::AdminUrl) -> String {
    if let Some(a) = &config.advertise {
        return if a.ends_with('/') {
            a.clone()
        } else {
            format!("{a}/")
        };
    }
    let ip = if local.ip().is_unspecified() {
        route_to(&admin.authority).unwrap_or(local.ip())
    } else {
        local.ip()
    };
    format!("http://{}/", SocketAddr::new(ip, local.port()))
}

/// The local address of the interface that reaches `authority` (no packet is sent).
fn route_to(authority: &str) -> Option<std::net::IpAddr> {
    use std::net::ToSocketAddrs;
    let target = authority.to_socket_addrs().ok()?.next()?;
    let bind: SocketAddr = if target.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(target).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_total_of_zero_is_one_shard_and_bad_indexes_are_refused() {
        assert_eq!(
            ShardOf::from_broadcast(0, 0),
            Ok(ShardOf { index: 0, total: 1 })
        );
        assert_eq!(
            ShardOf::from_broadcast(2, 3),
            Ok(ShardOf { index: 2, total: 3 })
        );
        assert!(ShardOf::from_broadcast(3, 3)
            .unwrap_err()
            .contains("0 to total-1"));
        assert!(ShardOf::from_broadcast(-1, 3).is_err());
    }
}
