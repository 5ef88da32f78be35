//! The result of one load run: its configuration, the host, the wall-clock window and the
//! measurement ([`Stats`]). This struct *is* the JSON schema (see docs/result-schema.md).

use crate::errors::{ErrorCounts, StatusCounts};
use crate::histogram::Latency;
use crate::saved::{checked_as, ResultReadError};
use crate::series::Series;
use crate::starved::PerConnection;
use crate::stats::Spread;
use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 2;

/// What produced a result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    Run,
    FindMax,
    Bench,
}

impl ResultKind {
    pub const ALL: [ResultKind; 3] = [ResultKind::Run, ResultKind::FindMax, ResultKind::Bench];

    /// The value of the `kind` field: `run`, `find_max`, `bench`.
    pub fn name(self) -> &'static str {
        match self {
            ResultKind::Run => "run",
            ResultKind::FindMax => "find_max",
            ResultKind::Bench => "bench",
        }
    }

    /// The command that writes this kind, for people: `run`, `find-max`, `bench`.
    pub fn command(self) -> &'static str {
        match self {
            ResultKind::Run => "run",
            ResultKind::FindMax => "find-max",
            ResultKind::Bench => "bench",
        }
    }

    /// The kind whose [`name`](ResultKind::name) this is.
    pub fn from_name(name: &str) -> Option<ResultKind> {
        ResultKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The machine the generator ran on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: u32,
}

/// How load is offered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum LoadModel {
    /// Each connection sends its next request when the previous response arrived (wrk, ab,
    /// hey). Latency under overload is understated: coordinated omission.
    Closed,
    /// Requests are sent on a schedule whether or not earlier ones returned; latency is
    /// measured from each request's intended send time.
    Open {
        /// The measured schedule (the warm-up runs at the first segment's rate).
        schedule: Vec<RateSegment>,
        /// The most connections (requests in flight) the generator may open.
        max_connections: u32,
    },
}

/// One piece of an open-model schedule: the target rate goes linearly from `from_rate` to
/// `to_rate` requests per second over `duration_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSegment {
    pub duration_ms: u64,
    pub from_rate: f64,
    pub to_rate: f64,
}

/// The configuration of a run, as resolved (units applied, defaults filled in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub url: String,
    /// The socket address the host resolved to (resolved once, before the run).
    pub address: String,
    pub method: String,
    pub headers: Vec<String>,
    pub body_bytes: u64,
    pub connections: u32,
    pub threads: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    pub warmup_ms: u64,
    pub keepalive: bool,
    pub timeout_ms: u64,
    pub connect_timeout_ms: u64,
    pub percentiles: Vec<f64>,
    pub load: LoadModel,
}

/// What was measured. Every field merges associatively (see [`Stats::merge`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Length of the measured window (after warm-up), µs.
    pub elapsed_us: u64,
    /// Complete responses received, whatever their status.
    pub requests: u64,
    /// Requests that produced no complete response, by class.
    pub errors: ErrorCounts,
    /// Complete responses by status code.
    pub status: StatusCounts,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// TCP connections opened successfully during the measured window.
    pub connections_opened: u64,
    /// Requests sent during the measured window.
    pub sent: u64,
    /// Open model: requests the schedule called for in the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<u64>,
    /// Open model: requests sent more than 1 ms after their intended time (the generator
    /// could not keep up: no free connection, or the worker was busy).
    pub sent_late: u64,
    /// Requests still in flight when a timed run ended: neither completed nor failed.
    pub abandoned: u64,
    /// Open model: requests due by the end that were never sent, because every connection the
    /// generator may open was busy (waiting behind starved connections, say). Censored in
    /// `latency_censored` at their age, never dropped silently.
    #[serde(default)]
    pub waiting: u64,
    /// From the request's intended send time to the last byte of the response. In the closed
    /// model the intended time is the actual send time.
    pub latency: Latency,
    /// `latency` plus every request that never got an answer, counted at its age at the end
    /// of the run (a lower bound): those still in flight, measured or claimed in the warm-up,
    /// and in the open model those still waiting for a connection.
    #[serde(default)]
    pub latency_censored: Latency,
    /// Requests completed per connection, connections left without an answer, and the age of
    /// the oldest request in flight at the end.
    #[serde(default)]
    pub per_connection: PerConnection,
    /// From the actual send to the last byte of the response (service time).
    pub service: Latency,
    /// Open model: actual send time minus intended send time.
    pub send_lag: Latency,
    /// TCP connection establishment.
    pub connect: Latency,
    /// From sending the request to the first byte of the response.
    pub first_byte: Latency,
    pub series: Series,
}

impl Stats {
    /// Combines two measurements of the same window (workers) or of aligned windows (shards):
    /// counts add, histograms add, series add second by second, the window is the longer one.
    pub fn merge(&mut self, o: &Stats) {
        self.elapsed_us = self.elapsed_us.max(o.elapsed_us);
        self.requests += o.requests;
        self.errors.merge(&o.errors);
        self.status.merge(&o.status);
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.connections_opened += o.connections_opened;
        self.sent += o.sent;
        self.scheduled = match (self.scheduled, o.scheduled) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.sent_late += o.sent_late;
        self.abandoned += o.abandoned;
        self.waiting += o.waiting;
        self.latency.merge(&o.latency);
        self.latency_censored.merge(&o.latency_censored);
        self.per_connection.merge(&o.per_connection);
        self.service.merge(&o.service);
        self.send_lag.merge(&o.send_lag);
        self.connect.merge(&o.connect);
        self.first_byte.merge(&o.first_byte);
        self.series.merge(&o.series);
    }

    pub fn elapsed_secs(&self) -> f64 {
        self.elapsed_us as f64 / 1e6
    }

    /// Requests that never got an answer and are censored at their age in
    /// `latency_censored` (0 for results saved before it existed).
    pub fn unanswered(&self) -> u64 {
        self.latency_censored
            .hist
            .len()
            .saturating_sub(self.latency.hist.len())
    }

    /// Requests attempted: completed plus failed.
    pub fn attempts(&self) -> u64 {
        self.requests + self.errors.total()
    }

    fn per_sec(&self, n: u64) -> f64 {
        if self.elapsed_us == 0 {
            0.0
        } else {
            n as f64 / self.elapsed_secs()
        }
    }

    /// The derived headline figures.
    pub fn summary(&self) -> Summary {
        Summary {
            requests_per_sec: self.per_sec(self.requests),
            sent_per_sec: self.per_sec(self.sent),
            target_per_sec: self.scheduled.map(|n| self.per_sec(n)),
            read_bytes_per_sec: self.per_sec(self.bytes_read),
            written_bytes_per_sec: self.per_sec(self.bytes_written),
            errors: self.errors.total(),
            non_success_responses: self.status.non_success(),
            per_second_rate: self.series.rate_stats(self.elapsed_secs()),
        }
    }
}

/// Headline figures derived from [`Stats`]; written for readers, recomputed on load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub requests_per_sec: f64,
    /// Requests sent per second (the achieved rate, in the open model).
    pub sent_per_sec: f64,
    /// Open model: the rate the schedule called for, on average over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_per_sec: Option<f64>,
    pub read_bytes_per_sec: f64,
    pub written_bytes_per_sec: f64,
    pub errors: u64,
    /// Complete responses with a status outside 200–399.
    pub non_success_responses: u64,
    /// Requests per second across the seconds of the series.
    pub per_second_rate: Option<Spread>,
}

/// One `loadbench run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub kind: ResultKind,
    pub loadbench_version: String,
    pub host: HostInfo,
    pub config: RunConfig,
    /// Wall clock at the start of the measured window (RFC 3339, UTC).
    pub started_at: String,
    /// Wall clock at the end of the run (RFC 3339, UTC).
    pub ended_at: String,
    /// True when the run was stopped early (Ctrl-C); what was measured until then is kept.
    pub interrupted: bool,
    /// Derived from `stats`; ignored when read back.
    #[serde(default, skip_deserializing)]
    pub summary: Option<Summary>,
    pub stats: Stats,
}

impl RunResult {
    /// Recomputes the derived summary; call after building or merging.
    pub fn finalize(&mut self) {
        self.summary = Some(self.stats.summary());
    }

    /// Reads a saved run result (see [`crate::SavedResult::from_json`] for any kind).
    pub fn from_json(text: &str) -> Result<RunResult, ResultReadError> {
        RunResult::from_value(checked_as(text, ResultKind::Run)?)
    }

    /// A checked document of kind `run`, with its series revalidated and its summary rebuilt.
    pub(crate) fn from_value(value: serde_json::Value) -> Result<RunResult, ResultReadError> {
        let invalid = |detail: String| ResultReadError::invalid(ResultKind::Run, detail);
        let mut r: RunResult = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        r.stats
            .series
            .revalidate()
            .map_err(|e| invalid(format!("stats.series: {e}")))?;
        r.finalize();
        Ok(r)
    }
}
