//! One `[[load]]` table: read as written ([`LoadFile`]: the shared keys and every model's keys,
//! each value parsed by serde so that a bad one is reported with its line), then typed into a
//! [`ScenarioLoad`] whose levels are [`LoadShape`]s holding exactly its model's settings, every
//! value checked against what a run can do. So nothing a file can say fails later, after targets started, with
//! a message about command-line flags: errors name the key (`load[2].rate`) and the fix.
//!
//! Why not serde's internally tagged enum on `model`: serde buffers such a table before it picks
//! the variant, and toml then knows only the table's header, so errors could name `load[2]` but
//! never `load[2].slo` or its line.

use super::model::{no_pipelining, ten_seconds, yes};
use super::{de, MixRequest, RequestSpec, ScenarioError, ScenarioLoad};
use loadbench_model::{Gates, Slo};
use loadbench_plan::{LoadShape, Schedule};
use serde::Deserialize;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

/// The most connections one load opens to one target: the ports of one source address (the
/// generator connects from one loopback address).
pub const MAX_CONNECTIONS: u32 = 65_535;

/// The longest `duration` or `warmup` of a load step.
pub const MAX_STEP: Duration = Duration::from_secs(24 * 3600);

/// Open files the engine needs beside its connections (it checks the same sum).
const SPARE_FILES: u64 = 64;

/// A `[[load]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoadFile {
    #[serde(default)]
    name: Option<String>,
    model: ModelName,
    targets: Vec<String>,
    #[serde(default)]
    together: bool,
    #[serde(default, deserialize_with = "de::opt_levels")]
    connections: Option<Vec<u32>>,
    #[serde(default, deserialize_with = "de::opt_levels")]
    rate: Option<Vec<f64>>,
    /// Find-max: the search's SLO; closed and open: the load's gates (both when it is a
    /// latency SLO).
    #[serde(default, deserialize_with = "de::opt_load_slo")]
    slo: Option<(Option<Slo>, Gates)>,
    #[serde(default)]
    max_connections: Option<u32>,
    #[serde(default = "ten_seconds", deserialize_with = "de::duration")]
    duration: Duration,
    #[serde(default, deserialize_with = "de::duration")]
    warmup: Duration,
    #[serde(default)]
    request: RequestSpec,
    #[serde(default)]
    requests: Vec<MixRequest>,
    #[serde(default = "yes")]
    keepalive: bool,
    #[serde(default, deserialize_with = "de::source_addrs")]
    source_addrs: Vec<std::net::IpAddr>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    cacert: Option<std::path::PathBuf>,
    #[serde(default)]
    cert: Option<std::path::PathBuf>,
    #[serde(default)]
    key: Option<std::path::PathBuf>,
    #[serde(default = "yes")]
    tls_resume: bool,
    #[serde(default = "no_pipelining")]
    pipeline: u16,
    #[serde(default, deserialize_with = "de::opt_duration")]
    send_window: Option<Duration>,
    #[serde(default)]
    send_batch: Option<u32>,
    #[serde(default)]
    connect_limit: Option<u32>,
    #[serde(default)]
    http2: bool,
    #[serde(default)]
    http3: bool,
    #[serde(default)]
    ws_match: Option<String>,
    #[serde(default)]
    streams: Option<u32>,
    #[serde(default)]
    data: Option<std::path::PathBuf>,
    #[serde(default)]
    data_order: Option<DataOrderName>,
    #[serde(default)]
    data_split: Option<DataSplitName>,
    #[serde(default)]
    data_end: Option<DataEndName>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    flow: Option<loadbench_plan::FlowFile>,
    #[serde(default)]
    script: Option<std::path::PathBuf>,
    #[serde(default)]
    script_args: Vec<String>,
}

/// `data_order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum DataOrderName {
    InOrder,
    Random,
}

/// `data_split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum DataSplitName {
    Split,
    Copy,
}

/// `data_end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum DataEndName {
    Wrap,
    Stop,
}

/// The `model` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ModelName {
    Closed,
    Open,
    FindMax,
}

/// A mistake in one load: the key under `load[i]`, what is wrong, and the fix.
#[derive(Debug, PartialEq)]
struct Bad {
    key: &'static str,
    problem: String,
    fix: String,
}

fn bad(key: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> Bad {
    Bad {
        key,
        problem: problem.into(),
        fix: fix.into(),
    }
}

impl Bad {
    /// The one-line error of this mistake in load `key` (`load[i]`) of `file`.
    fn at(self, key: &str, file: &Path) -> ScenarioError {
        ScenarioError::new(file, format!("{key}.{}", self.key), self.problem, &self.fix)
    }
}

impl LoadFile {
    /// Checks this load (`key` is `load[i]`, `names` the targets of the file) and types it.
    pub(super) fn resolve(
        self,
        key: &str,
        names: &HashSet<String>,
        file: &Path,
    ) -> Result<ScenarioLoad, ScenarioError> {
        let levels = self.check(names).map_err(|b| b.at(key, file))?;
        let pacing = self.pacing();
        let http2 = self.check_http2().map_err(|b| b.at(key, file))?;
        let client = self.client_cert().map_err(|b| b.at(key, file))?;
        let values = self.values(file).map_err(|b| b.at(key, file))?;
        let flow = match self.flow.clone() {
            Some(f) => Some(
                f.typed("flow")
                    .map_err(|e| bad("flow", e, "see docs/flows.md").at(key, file))?,
            ),
            None => None,
        };
        let script = self.script(file).map_err(|b| b.at(key, file))?;
        let grpc = self.grpc(file).map_err(|b| b.at(key, file))?;
        self.check_ws_match().map_err(|b| b.at(key, file))?;
        let load = ScenarioLoad {
            name: self.name,
            levels,
            targets: self.targets,
            together: self.together,
            duration: self.duration,
            warmup: self.warmup,
            request: self.request,
            requests: self.requests,
            keepalive: self.keepalive,
            source_addrs: self.source_addrs,
            tls: super::model::LoadTls {
                insecure: self.insecure,
                cacert: self.cacert.map(|p| relative_to(file, p)),
                client: client.map(|(c, k)| (relative_to(file, c), relative_to(file, k))),
                resume: self.tls_resume,
                http3: self.http3,
            },
            pipeline: self.pipeline,
            ws_match: self.ws_match,
            pacing,
            http2,
            values,
            flow,
            script,
            gates: match self.model {
                ModelName::FindMax => None,
                ModelName::Closed | ModelName::Open => self.slo.map(|(_, gates)| gates),
            },
            grpc,
        };
        check_values(&load).map_err(|b| b.at(key, file))?;
        Ok(load)
    }

    /// `ws_match = "FIELD"` (as `--ws-match`): the field read, and a fixed `body` checked to
    /// hold it (with values, the plan checks the first rendered message when the step starts).
    fn check_ws_match(&self) -> Result<(), Bad> {
        let Some(field) = &self.ws_match else {
            return Ok(());
        };
        let fix = "give the JSON field that carries a message's id, and a body with it (docs/transport.md, WebSocket)";
        let m = loadbench_plan::WsMatch::parse(field)
            .map_err(|e| bad("ws_match", e.to_string(), fix))?;
        match self.request.body.as_deref() {
            Some(body) if !body.contains("{{") => m
                .check_sent(body.as_bytes(), "the message (request.body)")
                .map_err(|e| bad("ws_match", e.to_string(), fix)),
            _ => Ok(()),
        }
    }

    /// `request.proto` and `request.grpc_method` (relative to the scenario file, read now):
    /// the gRPC call with `request.body` as its JSON message, as `--proto` makes it.
    fn grpc(&self, file: &Path) -> Result<Option<loadbench_plan::GrpcCall>, Bad> {
        let r = &self.request;
        let (proto, method) = match (&r.proto, &r.grpc_method) {
            (None, None) => return Ok(None),
            (Some(p), Some(m)) => (relative_to(file, p.clone()), m),
            (Some(_), None) => {
                let fix = "add grpc_method = \"package.Service/Method\"";
                return Err(bad("request.proto", "names no call", fix));
            }
            (None, Some(_)) => {
                let problem = "needs the .proto file that defines it (a scenario does not use server reflection)";
                return Err(bad(
                    "request.grpc_method",
                    problem,
                    "add proto = \"service.proto\"",
                ));
            }
        };
        if !self.requests.is_empty() || self.flow.is_some() {
            let problem = "is one call, and this load also has requests or a flow";
            return Err(bad(
                "request.grpc_method",
                problem,
                "give the gRPC call a load of its own",
            ));
        }
        let json = r.body.as_deref().unwrap_or("{}");
        loadbench_plan::GrpcCall::load(&proto, method, json)
            .map(Some)
            .map_err(|e| bad("request", e.to_string(), "see docs/transport.md, gRPC"))
    }

    /// `script` (relative to the scenario file, read and compiled now) and `script_args`.
    fn script(&self, file: &Path) -> Result<Option<loadbench_plan::ScriptSpec>, Bad> {
        let Some(path) = &self.script else {
            if self.script_args.is_empty() {
                return Ok(None);
            }
            return Err(bad(
                "script_args",
                "are the arguments of a script's init(args), and this load has no script",
                "give script = \"file.lua\" or leave script_args out",
            ));
        };
        let spec = loadbench_plan::ScriptSpec {
            path: relative_to(file, path.clone()),
            args: self.script_args.clone(),
        };
        loadbench_script::check(&spec).map_err(|e| {
            bad(
                "script",
                e,
                "fix the script (docs/coming-from.md, \"wrk scripts\")",
            )
        })?;
        Ok(Some(spec))
    }

    /// `data`, `data_order`, `data_split`, `data_end` and `seed` (as `--data` and its flags):
    /// the data file relative to the scenario file; the options only with a data file.
    fn values(&self, file: &Path) -> Result<loadbench_plan::ValuesSpec, Bad> {
        use loadbench_plan::{DataEnd, DataOrder, DataSpec, DataSplit};
        let options = [
            ("data_order", self.data_order.is_some()),
            ("data_split", self.data_split.is_some()),
            ("data_end", self.data_end.is_some()),
        ];
        if let (None, Some(&(k, _))) = (&self.data, options.iter().find(|(_, given)| *given)) {
            return Err(bad(
                k,
                "is an option of a data file, and this load has none",
                "give data = \"rows.csv\" or leave it out",
            ));
        }
        if self.data_end == Some(DataEndName::Stop) && self.model == ModelName::FindMax {
            return Err(bad(
                "data_end",
                "\"stop\" runs each row once, but find-max runs many steps",
                "use data_end = \"wrap\"",
            ));
        }
        Ok(loadbench_plan::ValuesSpec {
            data: self.data.as_ref().map(|p| DataSpec {
                path: relative_to(file, p.clone()),
                order: match self.data_order {
                    Some(DataOrderName::Random) => DataOrder::Random,
                    _ => DataOrder::InOrder,
                },
                split: match self.data_split {
                    Some(DataSplitName::Copy) => DataSplit::Copy,
                    _ => DataSplit::Split,
                },
                end: match self.data_end {
                    Some(DataEndName::Stop) => DataEnd::Stop,
                    _ => DataEnd::Wrap,
                },
            }),
            seed: self.seed,
            ..Default::default()
        })
    }

    /// The open model's pacing from `send_window`, `send_batch` and `connect_limit` (defaults
    /// otherwise).
    fn pacing(&self) -> loadbench_plan::OpenPacing {
        let d = loadbench_plan::OpenPacing::default();
        loadbench_plan::OpenPacing {
            send_window: self.send_window.unwrap_or(d.send_window),
            send_batch: self.send_batch.unwrap_or(d.send_batch),
            connect_limit: self.connect_limit.unwrap_or(d.connect_limit),
            ..d
        }
    }

    /// Every value of this load, checked; its typed levels.
    fn check(&self, names: &HashSet<String>) -> Result<Vec<LoadShape<Schedule>>, Bad> {
        check_targets(&self.targets, names)?;
        let levels = self.levels()?;
        let at_once = match (self.model, self.together) {
            (ModelName::FindMax, _) | (_, false) => 1,
            (_, true) => self.targets.len() as u64,
        };
        let cap_given = self.max_connections.is_some();
        check_levels(&levels, cap_given, at_once, open_files_limit())?;
        if self.duration.is_zero() {
            return Err(bad(
                "duration",
                "must be longer than zero",
                "use e.g. duration = \"10s\"",
            ));
        }
        check_step("duration", self.duration)?;
        check_step("warmup", self.warmup)?;
        self.check_mix()?;
        self.check_pipeline()?;
        self.check_pacing()?;
        Ok(levels)
    }

    /// `send_window`, `send_batch` and `connect_limit`: on an open or find-max load, in range
    /// (as `--send-window`, `--send-batch` and `--connect-limit`).
    fn check_pacing(&self) -> Result<(), Bad> {
        let given = [
            ("send_window", self.send_window.is_some()),
            ("send_batch", self.send_batch.is_some()),
            ("connect_limit", self.connect_limit.is_some()),
        ];
        if let (ModelName::Closed, Some(&(key, _))) = (self.model, given.iter().find(|(_, g)| *g)) {
            return Err(bad(
                key,
                "only for open and find-max loads",
                format!("use model = \"open\" or leave out {key}"),
            ));
        }
        let max = loadbench_plan::MAX_SEND_WINDOW;
        if let Some(w) = self.send_window.filter(|&w| w > max) {
            return Err(bad(
                "send_window",
                format!("{w:?} is longer than {}ms", max.as_millis()),
                "give send_window = \"1ms\" (the default), or \"0\" for a wake-up per request",
            ));
        }
        let most = loadbench_plan::MAX_SEND_BATCH;
        if let Some(b) = self.send_batch.filter(|b| !(1..=most).contains(b)) {
            return Err(bad(
                "send_batch",
                format!("{b} is out of range"),
                format!(
                    "give 1 to {most} requests (default {})",
                    loadbench_plan::DEFAULT_SEND_BATCH
                ),
            ));
        }
        if self.connect_limit == Some(0) {
            return Err(bad(
                "connect_limit",
                "must be above zero",
                "use e.g. connect_limit = 64 (the default)",
            ));
        }
        Ok(())
    }

    /// `pipeline`: in range, with keep-alive (as `--pipeline`; any model).
    fn check_pipeline(&self) -> Result<(), Bad> {
        let max = loadbench_plan::MAX_PIPELINE;
        if !(1..=max).contains(&self.pipeline) {
            return Err(bad(
                "pipeline",
                format!("{} is out of range", self.pipeline),
                format!("give 1 to {max} requests per connection"),
            ));
        }
        if self.pipeline > 1 && !self.keepalive {
            return Err(bad(
                "pipeline",
                "needs keep-alive connections",
                "leave out keepalive = false or pipeline",
            ));
        }
        Ok(())
    }

    /// `http2` and `streams`, as `--http2` and `--streams`: the streams per connection, or
    /// `None` for HTTP/1.1. Not with `pipeline`; one request per connection with
    /// `keepalive = false`, in closed loads only.
    fn check_http2(&self) -> Result<Option<u32>, Bad> {
        if self.http2 && self.http3 {
            return Err(bad(
                "http3",
                "and http2 = true both choose the HTTP version",
                "give one of them",
            ));
        }
        if !self.http2 && !self.http3 {
            return match self.streams {
                Some(_) => Err(bad(
                    "streams",
                    "applies to HTTP/2 and HTTP/3 only",
                    "add http2 = true (or http3 = true) or leave out streams",
                )),
                None => Ok(None),
            };
        }
        let streams = self.streams.unwrap_or(1);
        let max = loadbench_plan::MAX_STREAMS;
        if !(1..=max).contains(&streams) {
            let fix =
                format!("give 1 to {max} requests per connection (servers allow 100 to 1000)");
            return Err(bad("streams", format!("{streams} is out of range"), fix));
        }
        if !self.keepalive && self.model != ModelName::Closed {
            return Err(bad(
                "http2",
                "with keepalive = false works in closed loads only for now",
                "leave out keepalive = false (streams share connections) or use model = \"closed\"",
            ));
        }
        if self.pipeline > 1 {
            return Err(bad(
                "pipeline",
                "is HTTP/1.1 pipelining and does not apply with http2 = true",
                "keep several requests in flight per connection with streams = N instead",
            ));
        }
        if !self.keepalive && streams > 1 {
            return Err(bad(
                "streams",
                "does not apply with keepalive = false: HTTP/2 then sends one request per connection",
                "leave out streams (or keepalive = false)",
            ));
        }
        Ok(Some(streams))
    }

    /// `cert` and `key` (as `--cert` and `--key`): both or neither.
    fn client_cert(&self) -> Result<Option<(std::path::PathBuf, std::path::PathBuf)>, Bad> {
        match (&self.cert, &self.key) {
            (Some(c), Some(k)) => Ok(Some((c.clone(), k.clone()))),
            (None, None) => Ok(None),
            (Some(_), None) => Err(bad(
                "cert",
                "is given without key",
                "add key = \"client.key\" (the certificate's private key) or leave out cert",
            )),
            (None, Some(_)) => Err(bad(
                "key",
                "is given without cert",
                "add cert = \"client.pem\" (the client certificate) or leave out key",
            )),
        }
    }

    /// A mix replaces `[load.request]`, so not both; every weight from 1 to the plan's limit.
    fn check_mix(&self) -> Result<(), Bad> {
        if self.requests.is_empty() {
            return Ok(());
        }
        if self.request != RequestSpec::default() {
            return Err(bad(
                "requests",
                "is given beside [load.request]",
                "put every request of the load in [[load.requests]] and remove [load.request]",
            ));
        }
        let max = loadbench_plan::MAX_ENDPOINTS;
        if self.requests.len() > max {
            return Err(bad(
                "requests",
                format!("holds {} requests", self.requests.len()),
                format!("give at most {max}"),
            ));
        }
        match self
            .requests
            .iter()
            .find(|r| !(1..=loadbench_plan::MAX_WEIGHT).contains(&r.weight))
        {
            Some(r) => Err(bad(
                "requests",
                format!("weight {} of {} is out of range", r.weight, r.path),
                format!(
                    "give a whole number from 1 to {}",
                    loadbench_plan::MAX_WEIGHT
                ),
            )),
            None => Ok(()),
        }
    }

    /// The typed levels: the model's own settings present (levels not empty), no other
    /// model's; an open level lasts `duration`, a cap defaults to the plan's.
    fn levels(&self) -> Result<Vec<LoadShape<Schedule>>, Bad> {
        let cap = self
            .max_connections
            .unwrap_or(loadbench_plan::DEFAULT_MAX_CONNECTIONS);
        let rate = self.rate.clone();
        let search_slo = match (self.model, &self.slo) {
            (ModelName::FindMax, Some((None, gates))) => {
                return Err(bad(
                    "slo",
                    format!("'{}' is not a latency SLO", gates.text),
                    "a find-max load searches on latency: give pNN<DURATION or mean<DURATION conditions such as \"p99<50ms\"",
                ))
            }
            (ModelName::FindMax, Some((slo, _))) => slo.clone(),
            _ => None,
        };
        let levels = match (self.model, self.connections.clone(), rate, search_slo) {
            (ModelName::Closed, Some(connections), None, None) if !connections.is_empty() => {
                if self.max_connections.is_some() {
                    return Err(bad(
                        "max_connections",
                        "only for open and find-max loads",
                        "closed loads set their connections with connections = [...]",
                    ));
                }
                connections
                    .into_iter()
                    .map(|connections| LoadShape::Closed { connections })
                    .collect()
            }
            (ModelName::Open, None, Some(rate), None) if !rate.is_empty() => rate
                .into_iter()
                .map(|r| LoadShape::Open {
                    schedule: Schedule::constant(r, self.duration),
                    max_connections: cap,
                })
                .collect(),
            (ModelName::FindMax, None, None, Some(slo)) => vec![LoadShape::FindMax {
                slo,
                max_connections: cap,
            }],
            (m, ..) => return Err(mismatch(m)),
        };
        Ok(levels)
    }
}

fn mismatch(m: ModelName) -> Bad {
    let fix = match m {
        ModelName::Closed => "closed loads take connections = [10, 50] (and no rate)",
        ModelName::Open => "open loads take rate = [1000, 5000] (and no connections)",
        ModelName::FindMax => {
            "find-max loads take slo = \"p99<50ms\" (and no rate or connections; cap them with max_connections)"
        }
    };
    bad("model", "its settings do not match the model", fix)
}

fn check_targets(targets: &[String], names: &HashSet<String>) -> Result<(), Bad> {
    if targets.is_empty() {
        return Err(bad(
            "targets",
            "is empty",
            "list target names, e.g. targets = [\"nginx\"]",
        ));
    }
    if let Some(t) = targets.iter().find(|t| !names.contains(*t)) {
        let mut known: Vec<&str> = names.iter().map(String::as_str).collect();
        known.sort_unstable();
        let fix = format!("use one of: {}", known.join(", "));
        return Err(bad("targets", format!("no target named '{t}'"), fix));
    }
    Ok(())
}

/// Every level is one a run can apply, in a process that may hold `open_files` files. Closed
/// loads open all their connections: `at_once` targets loaded together need them all.
/// `max_connections` only caps an open load, so each engine checks it alone, as the engine does;
/// when the file did not set it (`cap_given`), the message says the default was too many.
fn check_levels(
    levels: &[LoadShape<Schedule>],
    cap_given: bool,
    at_once: u64,
    open_files: u64,
) -> Result<(), Bad> {
    let mut cap = None;
    for level in levels {
        match level {
            LoadShape::Closed { connections } => {
                check_connections("connections", *connections, at_once, open_files)?
            }
            LoadShape::Open {
                schedule,
                max_connections,
            } => {
                let r = schedule.rate_at(0.0);
                if !(r.is_finite() && r > 0.0) {
                    let fix = "give requests per second above zero, e.g. rate = [1000, 5000]";
                    return Err(bad("rate", format!("{r} is not a rate above zero"), fix));
                }
                if let Some(r) = loadbench_plan::rate_over_max(schedule) {
                    let why = loadbench_plan::RATE_LIMIT_WHY;
                    let fix = "give 10M (10,000,000) req/s or less";
                    return Err(bad("rate", format!("{r} req/s {why}"), fix));
                }
                cap = Some(*max_connections);
            }
            LoadShape::FindMax {
                max_connections, ..
            } => cap = Some(*max_connections),
        }
    }
    let Some(n) = cap else {
        return Ok(());
    };
    check_connections("max_connections", n, 1, open_files).map_err(|b| match cap_given {
        true => b,
        false => Bad {
            problem: format!("not set, and its default of {}", b.problem),
            ..b
        },
    })
}

/// `n` connections under `key`, to each of `at_once` targets, fit what one process can open.
fn check_connections(key: &'static str, n: u32, at_once: u64, open_files: u64) -> Result<(), Bad> {
    if n == 0 {
        let example = if key == "connections" {
            "[10, 50]"
        } else {
            "1500"
        };
        return Err(bad(
            key,
            "must be above zero",
            format!("use e.g. {key} = {example}"),
        ));
    }
    let ports = (n > MAX_CONNECTIONS)
        .then(|| format!("are more than one source address has ports for ({MAX_CONNECTIONS})"));
    let needed = u64::from(n) * at_once + SPARE_FILES;
    let files = (needed > open_files).then(|| {
        format!(
            "need {needed} open files, above this host's hard limit of {open_files} (ulimit -Hn)"
        )
    });
    if ports.is_none() && files.is_none() {
        return Ok(());
    }
    let each = match at_once {
        1 if ports.is_some() => " to one target".to_string(),
        1 => String::new(),
        _ => format!(" to each of {at_once} targets at once"),
    };
    let why = [ports, files].into_iter().flatten().collect::<Vec<_>>();
    let problem = format!("{n} connections{each} {}", why.join(" and "));
    let most = (open_files.saturating_sub(SPARE_FILES) / at_once).min(u64::from(MAX_CONNECTIONS));
    let fix = if needed > open_files {
        format!(
            "use at most {most}, or raise the hard limit of open files (as root, e.g. nofile in \
             /etc/security/limits.conf)"
        )
    } else {
        format!("use at most {most}")
    };
    Err(bad(key, problem, fix))
}

/// A step of a load lasts at most [`MAX_STEP`].
fn check_step(key: &'static str, d: Duration) -> Result<(), Bad> {
    if d > MAX_STEP {
        let problem = format!("{} is longer than a day", humantime::format_duration(d));
        let fix = format!("use e.g. {key} = \"10s\"; run long tests as several rounds");
        return Err(bad(key, problem, fix));
    }
    Ok(())
}

/// The hard limit of open files of this process (the engine raises its soft limit up to it).
fn open_files_limit() -> u64 {
    rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(u64::MAX, |(_, hard)| hard)
}

/// A path in a scenario file is relative to the file's folder.
fn relative_to(file: &Path, path: std::path::PathBuf) -> std::path::PathBuf {
    match file.parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

/// A load with per-request values (`{{ … }}` in its requests) or a data file: its requests
/// are compiled and its data file read now, as the plan will (against a stand-in address:
/// the target's is not known yet), so a mistake is reported before any target starts.
fn check_values(load: &ScenarioLoad) -> Result<(), Bad> {
    let texts = std::iter::once(&load.request)
        .map(|r| (r.path.as_str(), &r.headers, r.body.as_deref()))
        .chain(
            load.requests
                .iter()
                .map(|r| (r.path.as_str(), &r.headers, r.body.as_deref())),
        );
    let mut templated = false;
    for (path, headers, body) in texts {
        templated |= path.contains("{{")
            || headers.values().any(|v| v.contains("{{"))
            || body.is_some_and(|b| b.contains("{{"));
    }
    if !templated && load.values.data.is_none() && load.flow.is_none() {
        return Ok(());
    }
    let Some(level) = load.levels.first() else {
        return Ok(());
    };
    let level = match level {
        LoadShape::FindMax { .. } => LoadShape::Closed { connections: 1 },
        l => l.clone(),
    };
    let mut spec = load.spec(&level, "http://127.0.0.1:9");
    spec.transport = loadbench_plan::TransportSpec::default();
    loadbench_plan::Plan::resolve(&spec)
        .map(|_| ())
        .map_err(|e| {
            let text = e.to_string();
            let (key, doc) = if text.starts_with("flow ") || text.contains("a flow") {
                ("flow", "see docs/flows.md")
            } else if text.contains("--data") {
                ("data", "see docs/request-values.md")
            } else {
                ("request", "see docs/request-values.md")
            };
            bad(key, text, doc)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_must_fit_the_open_files_of_the_process() {
        let closed = |c: u32| [10, c].map(|connections| LoadShape::Closed { connections });
        assert_eq!(check_levels(&closed(960), false, 1, 1024), Ok(()));
        let e = check_levels(&closed(961), false, 1, 1024).unwrap_err();
        assert_eq!(e.key, "connections");
        assert!(
            e.problem.contains("1025 open files") && e.problem.contains("1024"),
            "{e:?}"
        );
        assert!(e.fix.contains("at most 960"), "{e:?}");
        // Targets loaded together share the process's files.
        assert_eq!(check_levels(&closed(480), false, 2, 1024), Ok(()));
        let e = check_levels(&closed(481), false, 2, 1024).unwrap_err();
        assert!(e.problem.contains("each of 2 targets"), "{e:?}");
    }

    #[test]
    fn a_million_connections_name_the_ports_and_the_open_files_limit() {
        let closed = [LoadShape::Closed {
            connections: 1_000_000,
        }];
        let e = check_levels(&closed, false, 1, 20_000).unwrap_err();
        assert_eq!(e.key, "connections");
        for words in ["65535", "1000064 open files", "hard limit of 20000"] {
            assert!(e.problem.contains(words), "{words}: {e:?}");
        }
        assert!(
            e.fix.contains("at most 19936, or raise the hard limit"),
            "{e:?}"
        );
        // Under a generous limit only the ports bind.
        let e = check_levels(&closed, false, 1, 2_000_000).unwrap_err();
        assert!(!e.problem.contains("open files"), "{e:?}");
        assert_eq!(e.fix, "use at most 65535");
    }

    #[test]
    fn open_loads_check_max_connections_or_its_default() {
        let open = |m: Option<u32>| {
            let max_connections = m.unwrap_or(loadbench_plan::DEFAULT_MAX_CONNECTIONS);
            let schedule = Schedule::constant(100.0, Duration::from_secs(1));
            let level = LoadShape::Open {
                schedule,
                max_connections,
            };
            ([level], m.is_some())
        };
        let check = |(levels, given): ([LoadShape<Schedule>; 1], bool), at_once, files| {
            check_levels(&levels, given, at_once, files)
        };
        assert_eq!(check(open(Some(1000)), 1, 2048), Ok(()));
        let e = check(open(None), 1, 2048).unwrap_err();
        assert_eq!(e.key, "max_connections");
        assert!(
            e.problem.starts_with("not set, and its default of 10000"),
            "{e:?}"
        );
        // A cap, not a demand: targets loaded together are checked one by one, like the engine.
        assert_eq!(check(open(Some(2000)), 2, 4000), Ok(()));
        let e = check(open(Some(2000)), 1, 2000).unwrap_err();
        assert!(e.problem.starts_with("2000 connections need 2064"), "{e:?}");
    }
}
