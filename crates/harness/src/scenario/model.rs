//! The scenario's types: targets, their limits and readiness, the built-in backend's settings and
//! requests as serde reads them, and the typed loads ([`ScenarioLoad`], each level a
//! [`LoadShape`]) that `load.rs` makes from each `[[load]]` as written. Checks that span several values live in `validate.rs`
//! and `load.rs`; custom value parsers (durations, sizes, signals, CPU lists, ports, SLOs,
//! levels) in `de.rs`.

use super::de;
use loadbench_plan::{LoadShape, Schedule};
use loadbench_upstream::ServeSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Where the load generator itself runs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    /// CPUs the generator is pinned to.
    #[serde(default)]
    pub cpuset: Option<CpuSet>,
    /// Worker threads; default: one per CPU in `cpuset` (or per core).
    #[serde(default)]
    pub threads: Option<u32>,
}

/// What a target is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// An external program (`command`, `args`).
    #[default]
    Command,
    /// The built-in reference backend (`loadbench serve`), configured by `[target.upstream]`.
    Upstream,
}

/// One process under test.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Distinct name; loads and `{port:NAME}` refer to it.
    pub name: String,
    /// An external program or the built-in backend.
    #[serde(default)]
    pub kind: TargetKind,
    /// Program to run (kind = "command" only); placeholders allowed.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments; placeholders allowed.
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory; default: the per-run directory `{dir}`.
    #[serde(default)]
    pub workdir: Option<String>,
    /// Extra environment variables; values may use placeholders.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Loopback port the target listens on: a number, or "auto" for a free one.
    #[serde(default)]
    pub port: PortSpec,
    /// Name of the target this one forwards to; gives `{upstream}` = `127.0.0.1:<its port>`.
    #[serde(default)]
    pub proxy_to: Option<String>,
    /// URL to load; default `http://127.0.0.1:{port}`.
    #[serde(default)]
    pub url: Option<String>,
    /// Config files rendered into the run directory.
    #[serde(default)]
    pub config: Vec<ConfigFile>,
    /// How to tell that it is ready.
    #[serde(default)]
    pub ready: ReadySpec,
    /// Its CPU and memory limits.
    #[serde(default)]
    pub limits: Limits,
    /// Settings of the built-in backend (kind = "upstream" only).
    #[serde(default)]
    pub upstream: Option<UpstreamSpec>,
    /// Signal sent to stop the target: TERM, INT, QUIT, HUP, KILL, USR1, USR2.
    #[serde(default = "sigterm", deserialize_with = "de::signal")]
    pub stop_signal: i32,
    /// How long to wait after the stop signal before killing the process group.
    #[serde(default = "five_seconds", deserialize_with = "de::duration")]
    pub stop_timeout: Duration,
    /// Record an on-CPU profile of its process tree with `perf` during one extra, unmeasured
    /// run of its last load, drawn as a flame graph into the run folder.
    #[serde(default)]
    pub profile: bool,
    /// `slo`: gates judged on every cell of this target once the bench finished
    /// (docs/gates.md).
    #[serde(default, deserialize_with = "de::opt_gates")]
    pub slo: Option<loadbench_model::Gates>,
}

/// A loopback port: fixed or allocated per run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PortSpec {
    /// A free port, picked for each run.
    #[default]
    Auto,
    /// This port.
    Fixed(u16),
}

/// A config file rendered from a template into the per-run directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Inline template text.
    #[serde(default)]
    pub template: Option<String>,
    /// Template file, relative to the scenario file.
    #[serde(default)]
    pub template_file: Option<PathBuf>,
    /// Where to write it, relative to the per-run directory.
    pub path: PathBuf,
    /// The template text, from `template` or the contents of `template_file` (filled by load).
    #[serde(skip)]
    pub text: String,
}

/// How to tell that a target is ready; by default a TCP connect to its port.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadySpec {
    /// URL that must answer with a 2xx/3xx status; placeholders allowed.
    #[serde(default)]
    pub http: Option<String>,
    /// `host:port` that must accept a TCP connection; placeholders allowed.
    #[serde(default)]
    pub tcp: Option<String>,
    /// How long to wait; a target not ready by then is an error. The default, 30 s, leaves
    /// a JVM application time to start on a busy core.
    #[serde(default = "thirty_seconds", deserialize_with = "de::duration")]
    pub timeout: Duration,
}

impl Default for ReadySpec {
    fn default() -> Self {
        Self {
            http: None,
            tcp: None,
            timeout: thirty_seconds(),
        }
    }
}

/// Resource limits, like docker's `--cpuset-cpus`, `--cpus` and `--memory`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// CPUs the target's whole process tree may run on.
    #[serde(default)]
    pub cpuset: Option<CpuSet>,
    /// CPU quota in cores (1.5 = one and a half cores of time per period).
    #[serde(default)]
    pub cpus: Option<f64>,
    /// Memory limit in bytes (written as `512MiB`, `8GiB`, ...).
    #[serde(default, deserialize_with = "de::opt_size")]
    pub memory: Option<u64>,
}

/// Settings of the built-in reference backend: the routes its readiness checks, and how it
/// answers in the backend's own type, each value read by the backend's own parser
/// (`de::UpstreamFile`) and checked with [`ServeSettings::check`] when the file loads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "de::UpstreamFile")]
pub struct UpstreamSpec {
    /// Paths the backend must answer (checked at readiness); default `["/"]`.
    pub routes: Vec<String>,
    /// Everything else: the settings of `loadbench serve`, passed to it as its flags
    /// ([`ServeSettings::to_args`]).
    pub serve: ServeSettings,
}

/// One row of the matrix: a model with its levels, against some targets.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioLoad {
    /// Label in reports; default `<model>-<n>`.
    pub name: Option<String>,
    /// Its levels, one step each, every one the whole shape of that step (all of one model):
    /// closed with its connections, open at a constant rate for `duration` with its cap, or
    /// the one find-max search with its SLO and cap (caps default to
    /// [`loadbench_plan::DEFAULT_MAX_CONNECTIONS`]). Every value checked when the file loads.
    pub levels: Vec<LoadShape<Schedule>>,
    /// Targets loaded one after another (or all at once with `together = true`).
    pub targets: Vec<String>,
    /// Load all targets at the same time in one step.
    pub together: bool,
    /// How long each step is measured.
    pub duration: Duration,
    /// Load applied before measuring, not recorded.
    pub warmup: Duration,
    /// The request sent.
    pub request: RequestSpec,
    /// A request mix (`[[load.requests]]`): when it holds requests, they are sent in proportion
    /// to their weights instead of `request`.
    pub requests: Vec<MixRequest>,
    /// Keep connections open across requests; `false` opens a new connection per request.
    pub keepalive: bool,
    /// Local addresses new connections bind to, round-robin (`source_addrs`, as
    /// `--source-addrs`); empty: the OS picks.
    pub source_addrs: Vec<std::net::IpAddr>,
    /// TLS options for `https://` targets (`insecure`, `cacert`, `cert`/`key`, `tls_resume`).
    pub tls: LoadTls,
    /// `pipeline = N` (as `--pipeline`): HTTP/1.1 requests each connection keeps in flight;
    /// 1 (the default): one at a time. Closed, open and find-max loads, with keep-alive.
    pub pipeline: u16,
    /// `ws_match = "FIELD"` (as `--ws-match`): a WebSocket target's answer is the message whose
    /// JSON FIELD equals the sent one's.
    pub ws_match: Option<String>,
    /// Open and find-max loads: `send_window` and `connect_limit` (as `--send-window` and
    /// `--connect-limit`); the defaults when not given.
    pub pacing: loadbench_plan::OpenPacing,
    /// `http2 = true` (as `--http2`) or `http3 = true`, with `streams = N` (as `--streams`,
    /// default 1): the requests in flight per connection; `None`: HTTP/1.1. Any model (open and
    /// find-max loads: with keep-alive).
    pub http2: Option<u32>,
    /// Per-request values' sources: `data` (relative to the scenario file), `data_order`,
    /// `data_split`, `data_end`, `seed` (docs/request-values.md).
    pub values: loadbench_plan::ValuesSpec,
    /// `[load.flow]`: a flow of steps each connection runs as a virtual user (docs/flows.md);
    /// it replaces `request` and `requests`.
    pub flow: Option<loadbench_plan::FlowSpec>,
    /// `script = "file.lua"` (as `--script`, relative to the scenario file) with
    /// `script_args = [...]` for its `init(args)`: a wrk script builds the requests.
    pub script: Option<loadbench_plan::ScriptSpec>,
    /// Closed and open loads: `slo`, gates judged on each of the load's cells once the bench
    /// finished (docs/gates.md). A find-max load's `slo` is its search's.
    pub gates: Option<loadbench_model::Gates>,
    /// `[load.request]`'s `proto` and `grpc_method` (for `grpc://` targets): the call, read
    /// from the `.proto` file and its JSON `body` encoded, when the file was read.
    pub grpc: Option<loadbench_plan::GrpcCall>,
}

/// A load's TLS options, for its `https://` targets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadTls {
    /// `insecure = true`: do not verify the server's certificate (reports say so).
    pub insecure: bool,
    /// `cacert = "ca.pem"`: trust this PEM file's certificates (relative to the scenario file).
    pub cacert: Option<std::path::PathBuf>,
    /// `cert = "client.pem"` and `key = "client.key"`: a client certificate and its key for
    /// mutual TLS (relative to the scenario file).
    pub client: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// `tls_resume = false`: no session resumption.
    pub resume: bool,
    /// `http3 = true` (as `--http3`): HTTP/3 over QUIC; its streams per connection are
    /// [`ScenarioLoad::http2`]'s.
    pub http3: bool,
}

/// The request sent by a load.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// HTTP method; default `GET`.
    #[serde(default = "get")]
    pub method: String,
    /// Path and query, appended to the target's URL; default `/`.
    #[serde(default = "slash")]
    pub path: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Request body (a `grpc://` call's request message as JSON).
    #[serde(default)]
    pub body: Option<String>,
    /// `grpc://` targets: the `.proto` file defining the service (relative to the scenario
    /// file; as `--proto`).
    #[serde(default)]
    pub proto: Option<std::path::PathBuf>,
    /// `grpc://` targets: the call, `package.Service/Method` (as `--grpc-method`).
    #[serde(default)]
    pub grpc_method: Option<String>,
}

/// One request of a load's mix (`[[load.requests]]`): the keys of `[load.request]` and a
/// weight (docs/request-mix.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixRequest {
    /// HTTP method; default `GET`.
    #[serde(default = "get")]
    pub method: String,
    /// Path and query, appended to the target's URL; default `/`.
    #[serde(default = "slash")]
    pub path: String,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Request body.
    #[serde(default)]
    pub body: Option<String>,
    /// Its share of the requests: `weight / sum of the weights`; default 1.
    #[serde(default = "one")]
    pub weight: u32,
}

impl MixRequest {
    /// The request part, as `[load.request]` holds it.
    pub fn request(&self) -> RequestSpec {
        RequestSpec {
            method: self.method.clone(),
            path: self.path.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            proto: None,
            grpc_method: None,
        }
    }
}

impl Default for RequestSpec {
    fn default() -> Self {
        Self {
            method: get(),
            path: slash(),
            headers: BTreeMap::new(),
            body: None,
            proto: None,
            grpc_method: None,
        }
    }
}

/// A sorted, duplicate-free CPU list, written like `0-1,3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet(pub Vec<usize>);

/// A load's default `pipeline`: one request at a time.
pub(super) fn no_pipelining() -> u16 {
    1
}

pub(super) fn yes() -> bool {
    true
}
pub(super) fn one() -> u32 {
    1
}
fn sigterm() -> i32 {
    libc::SIGTERM
}
fn five_seconds() -> Duration {
    Duration::from_secs(5)
}
pub(super) fn ten_seconds() -> Duration {
    Duration::from_secs(10)
}
fn thirty_seconds() -> Duration {
    Duration::from_secs(30)
}
fn get() -> String {
    "GET".into()
}
fn slash() -> String {
    "/".into()
}
