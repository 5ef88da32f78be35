//! Turns what the user asked for into a validated [`Plan`].
//!
//! In: a [`LoadSpec`], one load with every value already typed (the CLI's value parsers, the
//! scenario loader and the find-max search build it; text is parsed once, at the edge, by
//! [`units`]). Out: a [`Plan`]: the host resolved once to a socket address, the request bytes
//! rendered once, every limit checked. Every mistake becomes a [`PlanError`] whose message is
//! one line naming the problem and the fix. The load's shape is the model's [`LoadShape`],
//! holding the engine's [`Schedule`]; [`parse_stages`] reads a schedule of stages and
//! [`parse_slo`] an SLO into the model's typed [`loadbench_model::Slo`] (how `run`'s flags
//! combine into a load is the CLI's business). [`Shard`] and [`LoadSpec::shard`]
//! split a load exactly into N parts; [`parse_start_at`] reads the shards' common start.
//! [`DataFile`] reads a `--data` file (CSV or JSON Lines) whose rows feed per-request values.
//! Neighbours: the runner resolves and hands the plan to the engine. Depends on units and model.

mod data;
mod flow;
mod grpc;
mod import;
mod input;
mod mix;
mod pacing;
mod pipeline;
mod request;
mod schedule;
mod script;
mod shard;
mod slo;
mod start_at;
mod target;
mod transport;
mod values;
mod websocket;
mod ws_match;

pub use data::{DataFile, DataFormat};
pub use flow::{
    split_answer, Answer, CaptureSpec, CheckFile, Flow, FlowFile, FlowSpec, Scalar, StatusFile,
    Step, StepFile, StepSpec, MAX_KEPT_RESPONSE, MAX_STEPS,
};
pub use grpc::{frame as grpc_frame, timeout_value as grpc_timeout, GrpcCall, REFLECTION_PATHS};
pub use import::{parse_curl, read_har, read_vegeta_targets, CurlRequest};
pub use input::{InputError, InputFile};
pub use loadbench_model::LoadShape;
pub use loadbench_units as units;
pub use mix::{
    parse_request_line, read_requests_file, Endpoint, EndpointSpec, MAX_ENDPOINTS, MAX_WEIGHT,
};
pub use pacing::{
    OpenPacing, DEFAULT_CONNECT_LIMIT, DEFAULT_SEND_BATCH, DEFAULT_SEND_WINDOW, MAX_SEND_BATCH,
    MAX_SEND_WINDOW,
};
pub use pipeline::MAX_PIPELINE;
pub use request::RequestTemplate;
pub use schedule::{
    check_max_rate, parse_stages, rate_over_max, Cursor, Schedule, Segment, MAX_RATE,
    RATE_LIMIT_WHY,
};
pub use script::ScriptSpec;
pub use shard::{Shard, ShardError};
pub use slo::{parse_gates, parse_slo};
pub use start_at::{check_start_at, parse_start_at, StartAtError, MAX_START_AHEAD, MAX_START_LATE};
pub use target::{Route, Target};
pub use transport::{ConnectTo, PemFile, TlsPlan, TransportSpec, MAX_STREAMS};
pub use values::{
    is_name, parse_value, Compiled, DataEnd, DataOrder, DataSpec, DataSplit, Draw, Filter,
    NowFormat, Scratch, Slot, Source, Value, Values, ValuesSpec, BUILT_INS,
};
pub use ws_match::{Miss as WsMiss, WsMatch, MAX_MATCHED as WS_MAX_MATCHED};

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Default percentiles of the text report.
pub const DEFAULT_PERCENTILES: &str = "50,75,90,95,99,99.9,99.99";

/// Default cap on connections in the open model.
pub const DEFAULT_MAX_CONNECTIONS: u32 = loadbench_model::DEFAULT_MAX_CONNECTIONS;

/// One load, typed: what `run`, every `find-max` step, every bench step and (later) an agent's
/// shard start. Every value is already parsed; [`Plan::resolve`] only checks how they combine,
/// reads the body file, resolves the host and renders the request.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// The URL to load (`http://host:port/path?query`).
    pub url: String,
    /// Method, headers and body.
    pub request: RequestSpec,
    /// A request mix (docs/request-mix.md): when it holds two or more requests, they replace
    /// `url` and `request` (which then describe the first); empty: the one request above.
    pub mix: Vec<EndpointSpec>,
    /// Closed (its connections) or open (its schedule and cap). A find-max shape is a search
    /// of open loads, run by the runner's `find_max`, never resolved into one plan.
    pub load: LoadShape<Schedule>,
    /// Open model: the send window, the initial pool and the limit on connects in progress
    /// (engine tuning beside the shape; unused by the closed model).
    pub pacing: OpenPacing,
    /// When the measured part ends.
    pub stop: Stop,
    /// Worker threads; `None`: one per core (never more than connections).
    pub threads: Option<u32>,
    /// Unmeasured traffic before the measured window.
    pub warmup: Duration,
    /// Reuse connections (HTTP keep-alive).
    pub keepalive: bool,
    /// Per-request timeout.
    pub timeout: Duration,
    /// TCP connection establishment timeout.
    pub connect_timeout: Duration,
    /// Percentiles the reports show.
    pub percentiles: Vec<f64>,
    /// Local addresses new connections bind to, round-robin (empty: the OS picks). Spreading
    /// them over 127.0.0.0/8 multiplies the ephemeral ports to a loopback target.
    pub source_addrs: Vec<IpAddr>,
    /// TLS, Unix socket and `--connect-to`: how connections reach the target.
    pub transport: TransportSpec,
    /// Per-request values: the data file, the seed, the shard (docs/request-values.md).
    pub values: ValuesSpec,
    /// A flow (docs/flows.md): its steps replace `request` (`url` is their base).
    pub flow: Option<FlowSpec>,
    /// `--script`: a wrk Lua script builds the requests (docs/coming-from.md, "wrk scripts").
    pub script: Option<ScriptSpec>,
}

impl LoadSpec {
    /// What this load's URL scheme cannot be combined with (a WebSocket or gRPC URL with
    /// `--http2`, `--pipeline`, a mix, a flow, a script…; a gRPC load without a framed
    /// message), checked from the scheme alone: the host is not resolved and no file is read,
    /// so a scenario checks its loads with it at file load, before any target starts. The
    /// same lines as [`Plan::resolve`] gives.
    pub fn check_protocol(&self) -> Result<(), PlanError> {
        let scheme = self.url.trim().split("://").next().unwrap_or("");
        let scheme = scheme.to_ascii_lowercase();
        websocket::check(self, matches!(scheme.as_str(), "ws" | "wss"))?;
        let grpc = matches!(scheme.as_str(), "grpc" | "grpcs");
        grpc::check(self, grpc)?;
        if self.transport.http3 {
            let t = &self.transport;
            transport::check_http3(t, &Target::parse_routed(&self.url, t.route())?)?;
        }
        if grpc {
            if let Body::Bytes(b) = &self.request.body {
                grpc::check_framed(Some(b))?;
            } else if matches!(self.request.body, Body::None) {
                grpc::check_framed(None)?;
            }
        }
        Ok(())
    }

    /// A closed-model load of `url` on `connections` connections for `duration`, with the
    /// defaults of `loadbench run` for everything else.
    pub fn closed(url: &str, connections: u32, duration: Duration) -> LoadSpec {
        LoadSpec {
            url: url.to_string(),
            request: RequestSpec::default(),
            mix: Vec::new(),
            load: LoadShape::Closed { connections },
            pacing: OpenPacing::default(),
            stop: Stop::Duration(duration),
            threads: None,
            warmup: Duration::ZERO,
            keepalive: true,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            percentiles: default_percentiles(),
            source_addrs: Vec::new(),
            transport: TransportSpec::default(),
            values: ValuesSpec::default(),
            flow: None,
            script: None,
        }
    }

    /// An open-model load of `url` at a constant `rate` for `duration`, on at most
    /// `max_connections` connections.
    pub fn open(url: &str, rate: f64, duration: Duration, max_connections: u32) -> LoadSpec {
        LoadSpec {
            load: LoadShape::Open {
                schedule: Schedule::constant(rate, duration),
                max_connections,
            },
            ..LoadSpec::closed(url, max_connections, duration)
        }
    }
}

/// [`DEFAULT_PERCENTILES`] as numbers.
pub fn default_percentiles() -> Vec<f64> {
    units::percentiles(DEFAULT_PERCENTILES).unwrap_or_default()
}

/// What each request carries besides the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// Headers as (name, value) pairs; a `Host` header overrides the URL's host.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: Body,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec {
            method: "GET".into(),
            headers: Vec::new(),
            body: Body::None,
        }
    }
}

/// A request body: none, given bytes, or a file read when the plan resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// These bytes.
    Bytes(Vec<u8>),
    /// The contents of this file.
    File(PathBuf),
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this long (measured after the warm-up).
    Duration(Duration),
    /// After exactly this many requests have finished (completed or failed).
    Requests(u64),
}

impl Stop {
    /// The measured duration of a timed run; `None` for a count run.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Stop::Duration(d) => Some(d),
            Stop::Requests(_) => None,
        }
    }
}

/// A validated, fully resolved run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Closed or open model (never find-max: [`Plan::resolve`] refuses it).
    pub load: LoadShape<Schedule>,
    /// Open model: the send window, the initial pool and the limit on connects in progress.
    pub pacing: OpenPacing,
    /// Where the load goes, resolved.
    pub target: Target,
    /// The request bytes, rendered once (with a mix: those of its first request).
    pub request: RequestTemplate,
    /// A request mix, each request rendered once; empty for a single-request load.
    pub mix: Vec<Endpoint>,
    /// Connections: the closed model's count, or the open model's cap.
    pub connections: u32,
    /// Worker threads.
    pub threads: u32,
    /// When the measured part ends.
    pub stop: Stop,
    /// Unmeasured traffic before the measured window.
    pub warmup: Duration,
    /// Reuse connections.
    pub keepalive: bool,
    /// Per-request timeout.
    pub timeout: Duration,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Percentiles the reports show.
    pub percentiles: Vec<f64>,
    /// Local addresses new connections bind to, round-robin (empty: the OS picks); all of the
    /// target's family.
    pub source_addrs: Vec<IpAddr>,
    /// `https://`: the TLS settings, files read; `None` for plain HTTP.
    pub tls: Option<TlsPlan>,
    /// `--unix-socket`: connections go to this socket (`target.addr` is then unused).
    pub unix_socket: Option<PathBuf>,
    /// `--connect-to` rules as given, for the record (already applied to `target.addr`).
    pub connect_to: Vec<String>,
    /// `--http2`: the requests (streams) in flight per connection; `None` for HTTP/1.1.
    pub http2: Option<u32>,
    /// `--pipeline`: requests each connection keeps in flight (1: one at a time).
    pub pipeline: u16,
    /// `--ws-idle`: idle WebSocket connections held beside the active ones (0: none).
    pub ws_idle: u32,
    /// `--ws-match`: where a WebSocket message's id is; its answer is the first message with
    /// the same id (`None`: the next message).
    pub ws_match: Option<WsMatch>,
    /// Per-request values: the requests assembled per request, the data file; `None` when
    /// every request is fixed bytes.
    pub values: Option<Values>,
    /// A flow: its steps' captures and checks (its requests are `mix`, one per step).
    pub flow: Option<Flow>,
    /// `--script`: the wrk script that builds the requests (run by the runner through
    /// `loadbench-script`; `request` is then the script's until it is loaded).
    pub script: Option<ScriptSpec>,
}

/// A mistake in the options; the message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// One line naming the problem and the fix.
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn invalid(msg: impl Into<String>) -> PlanError {
    PlanError::Invalid(msg.into())
}

impl Plan {
    /// Checks how the spec's values combine and resolves everything the run needs.
    pub fn resolve(spec: &LoadSpec) -> Result<Plan, PlanError> {
        script::check(spec)?;
        websocket::check_idle_beside(spec)?;
        let expanded = flow::expand(spec)?;
        let spec = expanded.as_ref().unwrap_or(spec);
        let mut marks = values::Marks::default();
        if let Some(f) = &spec.flow {
            marks.vars = flow::var_names(f);
        }
        let marked = values::mark_spec(&mut marks, spec)?;
        let mut plan = Plan::resolve_marked(&marked)?;
        if spec.flow.is_some() && plan.mix.is_empty() {
            // A one-step flow: its step is still a request of the per-step breakdown.
            plan.mix.push(Endpoint {
                url: plan.target.url.clone(),
                weight: 1,
                request: plan.request.clone(),
            });
        }
        plan.values = values::compile_plan(&mut marks, &marked, &mut plan)?;
        values::apply_row_budget(&mut plan, spec)?;
        if let (Some(s), Some(_)) = (&spec.script, &plan.values) {
            return Err(invalid(format!(
                "--script {} builds its own requests: leave the {{{{ … }}}} values out of the URL, headers and body (give them in the script)",
                s.path.display()
            )));
        }
        if plan.target.grpc && plan.values.is_some() {
            return Err(invalid(
                "per-request values ({{ … }}) cannot be used with a grpc:// URL yet: give a fixed message with --body",
            ));
        }
        plan.ws_match = websocket::resolve_match(spec, &plan)?;
        plan.script = spec.script.clone();
        Ok(plan)
    }

    /// [`Plan::resolve`] of a spec whose values are markers (or that has none).
    fn resolve_marked(spec: &LoadSpec) -> Result<Plan, PlanError> {
        let connections = match &spec.load {
            LoadShape::Closed { connections } => check_connections(*connections, spec.stop)?,
            LoadShape::Open {
                max_connections,
                schedule,
            } => {
                check_max_rate(schedule, "--rate")?;
                spec.pacing.check(*max_connections)?;
                check_open(*max_connections, spec.stop)?
            }
            LoadShape::FindMax { .. } => {
                return Err(invalid(
                    "a find-max load is a search of open loads, not one run: run it with find-max (the runner's find_max::search)",
                ))
            }
        };
        let threads = resolve_threads(spec.threads, connections)?;
        let t = &spec.transport;
        let route = t.route();
        let (url, first) = match spec.mix.first() {
            Some(e) => (&e.url, &e.request),
            None => (&spec.url, &spec.request),
        };
        let target = Target::parse_routed(url, route)?;
        websocket::check(spec, target.websocket)?;
        grpc::check(spec, target.grpc)?;
        let tls = resolve_tls(spec, &target)?;
        let body = read_body(&first.body)?;
        let request = render_first(spec, &target, first, body)?;
        let mix = mix::resolve_mix(&spec.mix, &target, spec.keepalive, route)?;
        let open = matches!(spec.load, LoadShape::Open { .. });
        let http2 = grpc::http2(t, target.grpc, open, spec.keepalive)?;
        Ok(Plan {
            http2,
            load: spec.load.clone(),
            pacing: spec.pacing,
            request,
            mix,
            connections,
            threads,
            stop: spec.stop,
            warmup: spec.warmup,
            keepalive: spec.keepalive,
            timeout: positive("--timeout", spec.timeout)?,
            connect_timeout: positive("--connect-timeout", spec.connect_timeout)?,
            percentiles: spec.percentiles.clone(),
            source_addrs: check_sources(&spec.source_addrs, &target)?,
            target,
            tls,
            unix_socket: t.unix_socket.clone(),
            connect_to: t.connect_to.iter().map(|r| r.text.clone()).collect(),
            pipeline: pipeline::check(spec)?,
            ws_idle: t.ws_idle,
            ws_match: None,
            values: None,
            flow: None,
            script: None,
        })
    }
}

/// The request (the mix's first) rendered once; a `grpc://` target's as a gRPC call.
fn render_first(
    spec: &LoadSpec,
    target: &Target,
    first: &RequestSpec,
    body: Option<Vec<u8>>,
) -> Result<RequestTemplate, PlanError> {
    if target.grpc {
        return grpc::render(target, &first.headers, body, spec);
    }
    RequestTemplate::render(target, &first.method, &first.headers, body, spec.keepalive)
}

/// The TLS settings of an `https://` target (refusing TLS flags on `http://`, and TLS or
/// source addresses over a Unix socket).
fn resolve_tls(spec: &LoadSpec, target: &Target) -> Result<Option<TlsPlan>, PlanError> {
    let t = &spec.transport;
    transport::check_http3(t, target)?;
    if t.unix_socket.is_some() && !spec.source_addrs.is_empty() {
        return Err(invalid(
            "--source-addrs does not apply to --unix-socket: leave one of them out",
        ));
    }
    if !target.tls {
        transport::check_plain(t)?;
        return Ok(None);
    }
    if t.unix_socket.is_some() {
        return Err(invalid(
            "https:// over --unix-socket is not supported: use an http:// URL with --unix-socket",
        ));
    }
    // gRPC is HTTP/2: a grpcs:// target offers ALPN h2 as --http2 does.
    let t = &crate::TransportSpec {
        http2: t.http2 || target.grpc,
        ..t.clone()
    };
    TlsPlan::resolve(t, server_name(&spec.request.headers, target)).map(Some)
}

/// SNI: the `Host` header's host when the user gave one (a virtual host behind an address),
/// else the URL's host.
fn server_name(headers: &[(String, String)], target: &Target) -> String {
    let given = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.trim());
    match given {
        Some(v) if v.starts_with('[') => v[1..].split(']').next().unwrap_or("").to_string(),
        Some(v) if !v.is_empty() => v.split(':').next().unwrap_or(v).to_string(),
        _ => target.host.clone(),
    }
}

/// The source addresses must be of the target's family, or no connection could be opened.
fn check_sources(sources: &[IpAddr], target: &Target) -> Result<Vec<IpAddr>, PlanError> {
    let v4 = target.addr.is_ipv4();
    let family = if v4 { "IPv4" } else { "IPv6" };
    match sources.iter().find(|a| a.is_ipv4() != v4) {
        Some(a) => Err(invalid(format!(
            "--source-addrs {a} is not of the target's family ({} is {family}): give {family} source addresses",
            target.addr
        ))),
        None => Ok(sources.to_vec()),
    }
}

fn check_connections(connections: u32, stop: Stop) -> Result<u32, PlanError> {
    if connections == 0 {
        return Err(invalid("-c 0 opens no connection: give -c 1 or more"));
    }
    match stop {
        Stop::Requests(0) => Err(invalid("-n 0 sends nothing: give -n 1 or more")),
        Stop::Requests(n) if n < u64::from(connections) => Err(invalid(format!(
            "-n {n} is below -c {connections}: every connection needs a request; raise -n or lower -c"
        ))),
        Stop::Duration(d) if d.is_zero() => Err(invalid(
            "-d/--duration is zero: give a positive duration such as 10s",
        )),
        _ => Ok(connections),
    }
}

fn check_open(max_connections: u32, stop: Stop) -> Result<u32, PlanError> {
    if max_connections == 0 {
        return Err(invalid(
            "--max-connections 0 allows no request: give 1 or more",
        ));
    }
    if stop == Stop::Requests(0) {
        return Err(invalid("-n 0 sends nothing: give -n 1 or more"));
    }
    Ok(max_connections)
}

fn resolve_threads(threads: Option<u32>, connections: u32) -> Result<u32, PlanError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    match threads {
        Some(0) => Err(invalid("-t 0 runs no worker: give -t 1 or more")),
        Some(t) => Ok(t.min(connections)),
        None => Ok(cores.min(connections)),
    }
}

pub(crate) fn read_body(body: &Body) -> Result<Option<Vec<u8>>, PlanError> {
    match body {
        Body::None => Ok(None),
        Body::Bytes(b) => Ok(Some(b.clone())),
        Body::File(path) => Ok(Some(InputFile::BODY.named("--body-file").read(path)?)),
    }
}

fn positive(flag: &str, d: Duration) -> Result<Duration, PlanError> {
    if d.is_zero() {
        return Err(invalid(format!(
            "{flag} is zero: give a positive duration such as 10s"
        )));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str) -> LoadSpec {
        LoadSpec::closed(url, 50, Duration::from_secs(10))
    }

    fn err(s: LoadSpec) -> String {
        Plan::resolve(&s).unwrap_err().to_string()
    }

    #[test]
    fn tls_server_name_comes_from_the_host_header_else_the_url() {
        let name = |url: &str, host: Option<&str>| {
            let mut s = spec(url);
            if let Some(h) = host {
                s.request.headers.push(("Host".into(), h.into()));
            }
            Plan::resolve(&s).unwrap().tls.unwrap().server_name
        };
        assert_eq!(name("https://127.0.0.1:8443/", None), "127.0.0.1");
        assert_eq!(name("https://[::1]:8443/", None), "::1");
        assert_eq!(
            name("https://127.0.0.1/", Some("api.example.com:8443")),
            "api.example.com"
        );
        assert_eq!(name("https://127.0.0.1/", Some("[::1]:9")), "::1");
        assert!(Plan::resolve(&spec("http://127.0.0.1/"))
            .unwrap()
            .tls
            .is_none());
    }

    #[test]
    fn transport_options_that_do_not_combine_name_the_fix() {
        let mut s = spec("https://127.0.0.1/");
        s.transport.unix_socket = Some("/tmp/x.sock".into());
        assert!(err(s).contains("--unix-socket"));
        let mut s = spec("http://127.0.0.1/");
        s.transport.cacert = Some("ca.pem".into());
        assert!(err(s).contains("https:// URLs only"));
        let mut s = spec("https://127.0.0.1/");
        s.transport.cert = Some("c.pem".into());
        assert!(err(s).contains("--cert and --key go together"));
        let mut s = spec("https://127.0.0.1/");
        s.transport.cacert = Some("/no/such/ca.pem".into());
        assert!(err(s).contains("cannot read --cacert /no/such/ca.pem"));
        let mut s = spec("http://localhost/");
        s.transport.unix_socket = Some("/tmp/x.sock".into());
        s.source_addrs = vec!["127.0.0.2".parse().unwrap()];
        assert!(err(s).contains("--source-addrs does not apply to --unix-socket"));
    }

    #[test]
    fn connect_to_changes_the_address_but_not_the_host_header() {
        let mut s = spec("http://backend.invalid:8080/x");
        s.transport.connect_to =
            vec![ConnectTo::parse("backend.invalid:8080:127.0.0.1:9000").unwrap()];
        let plan = Plan::resolve(&s).unwrap();
        assert_eq!(plan.target.addr, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(plan.target.authority, "backend.invalid:8080");
        assert_eq!(plan.connect_to, vec!["backend.invalid:8080:127.0.0.1:9000"]);
    }

    #[test]
    fn defaults_are_ten_seconds_and_threads_capped_by_connections() {
        let p = Plan::resolve(&LoadSpec {
            load: LoadShape::Closed { connections: 1 },
            ..spec("http://127.0.0.1:8080/")
        })
        .unwrap();
        assert_eq!(p.stop, Stop::Duration(Duration::from_secs(10)));
        assert_eq!(p.threads, 1);
        assert_eq!(p.percentiles.len(), 7);
    }

    #[test]
    fn source_addrs_must_be_of_the_targets_family() {
        let with = |url: &str, a: &str| LoadSpec {
            source_addrs: vec![a.parse().unwrap()],
            ..spec(url)
        };
        let p = Plan::resolve(&with("http://127.0.0.1:8080/", "127.0.0.2")).unwrap();
        assert_eq!(p.source_addrs, vec!["127.0.0.2".parse::<IpAddr>().unwrap()]);
        let e = err(with("http://127.0.0.1:8080/", "::1"));
        assert!(
            e.starts_with("--source-addrs ::1") && e.contains("IPv4"),
            "{e}"
        );
        let e = err(with("http://[::1]:8080/", "127.0.0.2"));
        assert!(e.contains("give IPv6 source addresses"), "{e}");
    }

    #[test]
    fn rejects_contradictions_with_the_fix() {
        let c0 = LoadSpec {
            load: LoadShape::Closed { connections: 0 },
            ..spec("http://127.0.0.1/")
        };
        assert!(err(c0).contains("-c 1 or more"));
        let n_below_c = LoadSpec {
            stop: Stop::Requests(10),
            ..spec("http://127.0.0.1/")
        };
        assert!(err(n_below_c).contains("raise -n or lower -c"));
    }

    #[test]
    fn a_find_max_shape_is_a_search_not_a_plan() {
        let s = LoadSpec {
            load: LoadShape::FindMax {
                slo: parse_slo("p99<50ms").unwrap(),
                max_connections: 10,
            },
            ..spec("http://127.0.0.1/")
        };
        assert!(err(s).contains("run it with find-max"));
    }

    #[test]
    fn unreadable_body_file_names_the_path() {
        let mut s = spec("http://127.0.0.1/");
        s.request.body = Body::File("/nonexistent/body.json".into());
        assert!(err(s).contains("/nonexistent/body.json"));
    }
}
