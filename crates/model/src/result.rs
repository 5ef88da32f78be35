//! The result of one load run: its configuration, the host, the wall-clock window and the
//! measurement ([`Stats`]). This struct *is* the JSON schema (see docs/result-schema.md).

use crate::body::BodySizes;
use crate::errors::{ErrorCounts, StatusCounts};
use crate::histogram::Latency;
use crate::reasons::{ErrorReasons, ReopenReasons};
use crate::saved::{checked_as, ResultReadError};
use crate::series::Series;
use crate::starved::PerConnection;
use crate::stats::Spread;
use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 3;

/// The oldest schema version still read: older files are upgraded when read
/// ([`crate::SavedResult::from_json`]).
pub const OLDEST_SCHEMA_VERSION: u32 = 2;

/// What produced a result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// Written by `loadbench run` (and `demo`): a [`RunResult`].
    Run,
    /// Written by `loadbench find-max`: a `FindMaxResult`.
    FindMax,
    /// Written by `loadbench bench`: a `BenchResult`.
    Bench,
}

impl ResultKind {
    /// Every kind, in the order `run`, `find_max`, `bench`.
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
    /// From `/proc/sys/kernel/hostname`.
    pub hostname: String,
    /// `PRETTY_NAME` of `/etc/os-release`, else the platform name (`linux`).
    pub os: String,
    /// The build target's architecture (`x86_64`, `aarch64`, …).
    pub arch: String,
    /// Kernel release, from `/proc/sys/kernel/osrelease`.
    pub kernel: String,
    /// First `model name` of `/proc/cpuinfo`; empty if there is none.
    pub cpu_model: String,
    /// CPUs this process may use (respects affinity and cpusets: 1 under `taskset -c 0`).
    pub cores: u32,
    /// CPUs online on the machine, whatever this process may use; 0 in files written before
    /// this field.
    #[serde(default)]
    pub host_cores: u32,
}

/// The configuration of a run, as resolved (units applied, defaults filled in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The target URL, normalized (`http://127.0.0.1:8080` → `http://127.0.0.1:8080/`).
    pub url: String,
    /// The socket address the host resolved to (resolved once, before the run).
    pub address: String,
    /// HTTP method, upper-case.
    pub method: String,
    /// The `-H` headers as given (`"Name: value"`); the defaults loadbench adds are not listed.
    pub headers: Vec<String>,
    /// Request body length, bytes.
    pub body_bytes: u64,
    /// Connections (`-c`); in the open model, the most connections that may be open.
    pub connections: u32,
    /// Worker threads actually used (`-t` or the cores, capped by `connections`).
    pub threads: u32,
    /// Open model: the pacer's send window, µs (`--send-window`): each wake-up sends every
    /// request due by then, so a request waits up to this long after its intended time (and
    /// its latency, counted from that time, shows it). 0: each request on a wake-up of its
    /// own. Absent in closed-model runs and in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_window_us: Option<u64>,
    /// Measured duration (`-d`), warm-up excluded, ms; absent in count runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Requests to finish, completed plus failed (`-n`); absent in timed runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Warm-up before the measured window, ms (0: none).
    pub warmup_ms: u64,
    /// `false` with `--no-keepalive`: one connection per request.
    pub keepalive: bool,
    /// Per-request timeout (`--timeout`), ms.
    pub timeout_ms: u64,
    /// TCP connect timeout (`--connect-timeout`), ms.
    pub connect_timeout_ms: u64,
    /// `--source-addrs`: the local addresses connections were bound to, round-robin, as
    /// ranges of consecutive addresses (`"127.0.0.2-127.0.0.9"`) or single ones; absent
    /// (empty) when the OS picked them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_addrs: Vec<String>,
    /// `https://` runs: SNI name, `--insecure`, `--cacert`, `--cert`, session resumption.
    /// Absent for plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::TlsSettings>,
    /// `--unix-socket`: the Unix socket the connections went to instead of `address`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<String>,
    /// `--connect-to` rules as given (`HOST:PORT:ADDR:PORT`); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_to: Vec<String>,
    /// `--http2`: the streams each connection kept in flight (`--streams`); absent for
    /// HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2_streams: Option<u32>,
    /// `--pipeline N`: HTTP/1.1 requests each connection kept written ahead of their
    /// responses; absent (1) without pipelining.
    #[serde(default = "one_u16", skip_serializing_if = "is_one_u16")]
    pub pipeline: u16,
    /// `ws://`, `--ws-match FIELD`: a message's answer was the first message with the same
    /// JSON field FIELD; absent when the answer was the next message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_match: Option<String>,
    /// Percentiles (`--percentiles`) shown by the text and CSV reports; the JSON latency objects
    /// always carry [`STANDARD_PERCENTILES`](crate::STANDARD_PERCENTILES).
    pub percentiles: Vec<f64>,
    /// How load was offered: closed (its connections) or open (its schedule and cap).
    pub load: crate::LoadShape,
    /// Per-request values (docs/request-values.md): the seed, the data file, the sequence's
    /// places this run took; absent when every request was fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<ValuesRecord>,
}

/// A run's per-request values, for the record and for the next run of the same load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValuesRecord {
    /// The random values' seed (`--seed`, or the one drawn): give it to repeat them.
    pub seed: u64,
    /// `--data`: the file, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// The data file's rows.
    #[serde(default)]
    pub rows: u64,
    /// The shard's first place in the sequence, as its count of earlier places: a bench step
    /// or find-max step goes on from where the last one of the same load ended.
    #[serde(default)]
    pub first: u64,
    /// Places (requests, or a flow's iterations) this run took from the sequence.
    #[serde(default)]
    pub places: u64,
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
    /// Why, below the class: counts of a fixed set of reasons (which malformation).
    #[serde(default)]
    pub error_reasons: ErrorReasons,
    /// Complete responses by status code.
    pub status: StatusCounts,
    /// Body bytes of the complete responses: total, smallest, largest (ab's Document Length).
    #[serde(default)]
    pub body: BodySizes,
    /// Complete responses that came on a connection which had already answered one (not opened
    /// for that request): ab's "Keep-Alive requests".
    #[serde(default)]
    pub keepalive_requests: u64,
    /// Bytes read for the counted requests and errors: whole responses as they arrived (status
    /// line, headers, body, chunk framing).
    pub bytes_read: u64,
    /// Request bytes written for measured requests, including failed and in-flight ones.
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
    /// Requests whose reused keep-alive connection turned out closed by the peer (EOF or
    /// reset before any response byte) and that were sent again once on a new connection:
    /// reconnects, not errors. Each such request is counted once in `sent`.
    #[serde(default)]
    pub stale_retries: u64,
    /// `--pipeline`: requests written behind one whose connection the server closed (or that
    /// failed) before answering them, written again on a new connection (counted per resend).
    /// Each request is counted once in `sent`. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub pipeline_resent: u64,
    /// Idle keep-alive connections the peer closed, noticed and dropped before reuse.
    #[serde(default)]
    pub stale_closes: u64,
    /// Why connections were closed and re-opened when the server decided it (not
    /// `--no-keepalive`): counts by reason. Absent when there were none.
    #[serde(default, skip_serializing_if = "ReopenReasons::is_empty")]
    pub reopen_reasons: ReopenReasons,
    /// Closed model: connects delayed by the per-connection backoff after a failed connect
    /// (10 ms doubling to 1 s, reset on success), and the time spent waiting in them, µs.
    #[serde(default)]
    pub connect_backoffs: u64,
    /// Total backoff waited before reconnecting, µs (summed over connections).
    #[serde(default)]
    pub backoff_us: u64,
    /// The worker threads' wall and CPU time and, in the open model, how long the connection
    /// pool was full while a request was due: what explains a run short of its target rate.
    /// Zero in files written before it existed.
    #[serde(default)]
    pub generator: crate::GeneratorTime,
    /// Open model: the connection pool's counts (initial pool, connects, their peak and
    /// limit). Absent in closed-model runs and in files written before it.
    #[serde(default, skip_serializing_if = "crate::PoolCounts::is_empty")]
    pub pool: crate::PoolCounts,
    /// From the request's intended send time to the last byte of the response, less the
    /// generator's own delay in sending it (`generator_delay`, open model). In the closed
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
    /// Open model: the generator's own part of each send lag, from when the request was both
    /// due and had a free connection (stream, pipeline slot) to when it was sent: the send
    /// window's batching and the worker's own work. Taken out of `latency`, which keeps
    /// every wait for a busy connection (the target's). Absent in closed-model runs and in
    /// files written before it existed (whose latency still holds it).
    #[serde(default, skip_serializing_if = "Latency::is_empty")]
    pub generator_delay: Latency,
    /// TCP connection establishment.
    pub connect: Latency,
    /// `https://` runs: the TLS handshake after the TCP connect (a phase beside `connect`),
    /// full and resumed handshakes. Absent for plain HTTP.
    #[serde(default, skip_serializing_if = "crate::TlsStats::is_empty")]
    pub tls: crate::TlsStats,
    /// Connections by the protocol they spoke (`h1`, `h2`); absent for HTTP/1.1 runs, whose
    /// connections all speak HTTP/1.1.
    #[serde(default, skip_serializing_if = "crate::ProtocolCounts::is_empty")]
    pub protocols: crate::ProtocolCounts,
    /// HTTP/2 runs: streams in flight, the server's stream limit, GOAWAYs. Absent for HTTP/1.1.
    #[serde(default, skip_serializing_if = "crate::H2Stats::is_empty")]
    pub h2: crate::H2Stats,
    /// WebSocket runs (`ws://`): upgrades, pings answered, close frames by code. Absent for
    /// HTTP runs and in files written before it existed.
    #[serde(default, skip_serializing_if = "crate::WsStats::is_empty")]
    pub ws: crate::WsStats,
    /// gRPC runs (`grpc://`): the calls by their `grpc-status`. Absent for other runs and in
    /// files written before it existed.
    #[serde(default, skip_serializing_if = "crate::GrpcStats::is_empty")]
    pub grpc: crate::GrpcStats,
    /// From sending the request to the first byte of the response.
    pub first_byte: Latency,
    /// hey's split of each completed request: request write, response wait, response read.
    /// Empty in files written before it existed.
    #[serde(default)]
    pub phases: crate::RequestPhases,
    /// A request mix: each request's own counts and latency, beside the totals above (which
    /// they add up to). Absent for a single-request run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<crate::EndpointStats>,
    /// A flow (docs/flows.md): its iterations completed and broken, and their time; each
    /// step is one entry of `endpoints`. Absent without a flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<crate::FlowStats>,
    /// One point per second of the measured window.
    pub series: Series,
}

impl Stats {
    /// Combines two measurements of the same window (workers) or of aligned windows (shards):
    /// counts add, histograms add, series add second by second, the window is the longer one.
    ///
    /// Two workers' measurements of the same second merged into one:
    ///
    /// ```
    /// use loadbench_model::{ErrorKind, Stats};
    ///
    /// // 3 responses (200, 200, 503) after 1, 2 and 3 ms, and one connect refused.
    /// let mut a = Stats { elapsed_us: 1_000_000, requests: 3, sent: 3, ..Stats::default() };
    /// a.status.add(200, 2);
    /// a.status.add(503, 1);
    /// [1, 2, 3].iter().for_each(|ms| a.latency.hist.record_ns(ms * 1_000_000));
    /// a.errors.add(ErrorKind::ConnectRefused, 1);
    /// // 2 responses (200) after 10 and 20 ms, over a slightly shorter window.
    /// let mut b = Stats { elapsed_us: 990_000, requests: 2, sent: 2, ..Stats::default() };
    /// b.status.add(200, 2);
    /// [10, 20].iter().for_each(|ms| b.latency.hist.record_ns(ms * 1_000_000));
    ///
    /// let mut merged = a.clone();
    /// merged.merge(&b);
    /// assert_eq!(merged.requests, a.requests + b.requests);
    /// assert_eq!(merged.sent, 5);
    /// assert_eq!(merged.status.0.get(&200), Some(&4));
    /// assert_eq!(merged.status.non_success(), 1);
    /// assert_eq!(merged.errors.total(), 1);
    /// assert_eq!(merged.elapsed_us, 1_000_000, "the longer window");
    /// // The histograms add: every value of both, so the extremes are b's max and a's min.
    /// let hist = &merged.latency.hist;
    /// assert_eq!(hist.len(), 5);
    /// assert_eq!(hist.min_ns(), a.latency.hist.min_ns());
    /// assert_eq!(hist.max_ns(), b.latency.hist.max_ns());
    /// // Merging is associative and order-free: b then a gives the same result.
    /// let mut other_way = b.clone();
    /// other_way.merge(&a);
    /// assert_eq!(other_way, merged);
    /// ```
    pub fn merge(&mut self, o: &Stats) {
        self.elapsed_us = self.elapsed_us.max(o.elapsed_us);
        self.requests += o.requests;
        self.errors.merge(&o.errors);
        self.error_reasons.merge(&o.error_reasons);
        self.status.merge(&o.status);
        self.body.merge(&o.body);
        self.keepalive_requests += o.keepalive_requests;
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
        self.stale_retries += o.stale_retries;
        self.pipeline_resent += o.pipeline_resent;
        self.stale_closes += o.stale_closes;
        self.reopen_reasons.merge(&o.reopen_reasons);
        self.connect_backoffs += o.connect_backoffs;
        self.backoff_us += o.backoff_us;
        self.generator.merge(&o.generator);
        self.pool.merge(&o.pool);
        self.latency.merge(&o.latency);
        self.latency_censored.merge(&o.latency_censored);
        self.per_connection.merge(&o.per_connection);
        self.service.merge(&o.service);
        self.send_lag.merge(&o.send_lag);
        self.generator_delay.merge(&o.generator_delay);
        self.connect.merge(&o.connect);
        self.tls.merge(&o.tls);
        self.protocols.merge(&o.protocols);
        self.h2.merge(&o.h2);
        self.ws.merge(&o.ws);
        self.grpc.merge(&o.grpc);
        self.first_byte.merge(&o.first_byte);
        self.phases.merge(&o.phases);
        crate::merge_endpoints(&mut self.endpoints, &o.endpoints);
        crate::merge_flow(&mut self.flow, &o.flow);
        self.series.merge(&o.series);
    }

    /// Counts no run reaches, read back from a file: any count above [`MAX_COUNT`], counts
    /// whose totals would not fit in 64 bits, and a zero-length window that nevertheless
    /// counted requests. An empty run (nothing sent, nothing counted) may have `elapsed_us`
    /// 0: it was stopped before its window opened. The message names the field.
    pub(crate) fn check_counts(&self) -> Result<(), String> {
        let mut counts: Vec<(String, u64)> = vec![
            ("stats.elapsed_us".into(), self.elapsed_us),
            ("stats.requests".into(), self.requests),
            ("stats.sent".into(), self.sent),
            ("stats.abandoned".into(), self.abandoned),
            ("stats.waiting".into(), self.waiting),
            ("stats.connections_opened".into(), self.connections_opened),
            ("stats.bytes_read".into(), self.bytes_read),
            ("stats.bytes_written".into(), self.bytes_written),
        ];
        counts.extend(
            self.errors
                .0
                .iter()
                .map(|(k, &n)| (format!("stats.errors.{}", kind_name(*k)), n)),
        );
        counts.extend(
            self.status
                .0
                .iter()
                .map(|(code, &n)| (format!("stats.status.{code}"), n)),
        );
        if let Some((field, n)) = counts.iter().find(|(_, n)| *n > MAX_COUNT) {
            return Err(format!(
                "{field} is {n}, more than any run counts (at most 2^53 = {MAX_COUNT})"
            ));
        }
        let counted = self.requests.max(self.sent).max(self.errors.total());
        if self.elapsed_us == 0 && counted > 0 {
            return Err(format!(
                "stats.elapsed_us is 0 but the run counted {counted} requests: a window that \
                 sent or answered requests lasted some time"
            ));
        }
        Ok(())
    }

    /// Length of the measured window, seconds.
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

    /// Complete answers that failed: a status outside 200–399, or a gRPC call whose HTTP
    /// status was 200–399 but whose `grpc-status` was not `OK` or missing (each call once).
    /// What gates, find-max, the success ratio and comparisons count as bad answers, beside
    /// `errors`.
    pub fn failed_answers(&self) -> u64 {
        let beyond = self.grpc.failed_beyond_http();
        self.status.non_success().saturating_add(beyond)
    }

    /// Requests attempted: completed plus failed.
    pub fn attempts(&self) -> u64 {
        self.requests.saturating_add(self.errors.total())
    }

    /// `n` per second of the measured time; 0 when nothing was measured.
    pub fn per_sec(&self, n: u64) -> f64 {
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
            non_success_responses: self.failed_answers(),
            per_second_rate: self.series.rate_stats(self.elapsed_secs()),
            status_per_sec: self
                .status
                .0
                .iter()
                .map(|(&c, &n)| (c, self.per_sec(n)))
                .collect(),
            body_bytes_mean: self.body.mean(),
            time_per_request_us: self.time_per_request_us(1),
        }
    }

    /// ab's "Time per request": `concurrency × elapsed / requests`, µs. With 1 it is the mean
    /// across all concurrent requests; with the connections, the mean per user.
    pub fn time_per_request_us(&self, concurrency: u32) -> Option<f64> {
        (self.requests > 0)
            .then(|| f64::from(concurrency) * self.elapsed_us as f64 / self.requests as f64)
    }
}

/// Headline figures derived from [`Stats`]; written for readers, recomputed on load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Complete responses per second of the window (`requests / elapsed`); 0 for an empty window.
    pub requests_per_sec: f64,
    /// Requests sent per second (the achieved rate, in the open model).
    pub sent_per_sec: f64,
    /// Open model: the rate the schedule called for, on average over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_per_sec: Option<f64>,
    /// Bytes read per second of the window.
    pub read_bytes_per_sec: f64,
    /// Bytes written per second of the window.
    pub written_bytes_per_sec: f64,
    /// Failed requests: the sum of `stats.errors`.
    pub errors: u64,
    /// Complete responses with a status outside 200–399, and gRPC calls answered with a
    /// `grpc-status` other than `OK` ([`Stats::failed_answers`]).
    pub non_success_responses: u64,
    /// Requests per second across the seconds of the series.
    pub per_second_rate: Option<Spread>,
    /// Complete responses per second of the window, by status code (berf's per-status rate).
    #[serde(default)]
    pub status_per_sec: std::collections::BTreeMap<u16, f64>,
    /// Mean response body bytes (ab's Document Length, hey's Size/request); absent with no
    /// response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes_mean: Option<f64>,
    /// ab's "Time per request (mean, across all concurrent requests)": elapsed / requests, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_per_request_us: Option<f64>,
}

/// One `loadbench run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The schema version ([`SCHEMA_VERSION`]) the file was written with.
    pub schema_version: u32,
    /// What produced the file: always [`ResultKind::Run`] here.
    pub kind: ResultKind,
    /// Version of the loadbench that measured it.
    pub loadbench_version: String,
    /// The generator's machine.
    pub host: HostInfo,
    /// The run as resolved, units applied and defaults filled in.
    pub config: RunConfig,
    /// Wall clock at the start of the measured window (RFC 3339, UTC).
    pub started_at: String,
    /// Wall clock at the end of the run (RFC 3339, UTC).
    pub ended_at: String,
    /// True when the run was stopped early (Ctrl-C); what was measured until then is kept.
    pub interrupted: bool,
    /// A shard of a distributed run, or the merge of shards: the run id, the shards, how
    /// they started (docs/distributed.md); absent for an ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<crate::shard::ShardRun>,
    /// Derived from `stats`; ignored when read back.
    #[serde(default, skip_deserializing)]
    pub summary: Option<Summary>,
    /// The measurement.
    pub stats: Stats,
    /// What the kernel saw during the run (the generator's host: listen queue of the target's
    /// port, retransmits, resets, ephemeral ports); absent when not collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::KernelEvidence>,
    /// The findings drawn from `evidence` and the generator's CPU, strongest first.
    #[serde(default, skip_serializing_if = "crate::why::Why::is_empty")]
    pub why: crate::why::Why,
    /// `--slo`: each gate judged on this run (docs/gates.md); absent without gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<crate::gate::GateReport>,
    /// `--prometheus-remote-write`: what the pushes of the live series came to; absent
    /// without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_write: Option<RemoteWriteCounts>,
}

/// What the pushes of the live series to a Prometheus remote-write receiver came to
/// (docs/metrics.md). A lost push never changes the measurement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteWriteCounts {
    /// The receiver's URL.
    pub url: String,
    /// Pushes made (each a snapshot of every series, every 5 s and once at the end).
    pub pushes: u64,
    /// Pushes the receiver accepted.
    pub sent: u64,
    /// Pushes lost: refused, dropped from the full retry buffer, or unsent at the end.
    pub lost: u64,
}

impl RemoteWriteCounts {
    /// The report's one line when pushes were lost; `None` when none was.
    pub fn lost_line(&self) -> Option<String> {
        (self.lost > 0).then(|| {
            format!(
                "remote write: {} of {} pushes to {} were lost; the measurement is complete",
                self.lost, self.pushes, self.url
            )
        })
    }

    /// Adds another shard's pushes (the URL stays the first's).
    pub fn add(&mut self, o: &RemoteWriteCounts) {
        self.pushes += o.pushes;
        self.sent += o.sent;
        self.lost += o.lost;
    }
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
        r.check_consistent().map_err(invalid)?;
        r.finalize();
        Ok(r)
    }

    /// Ranges and counts a run of ours always has: a closed or open load, percentiles within
    /// 0..=100 and one latency sample per completed request (a tampered `requests` would make
    /// every rate wrong).
    fn check_consistent(&self) -> Result<(), String> {
        if let crate::LoadShape::FindMax { .. } = self.config.load {
            return Err("config.load: a run's model is closed or open, not find_max".into());
        }
        if let Some(p) = self
            .config
            .percentiles
            .iter()
            .find(|p| !(0.0..=100.0).contains(*p))
        {
            return Err(format!("config.percentiles: {p} is outside 0 to 100"));
        }
        let (requests, samples) = (self.stats.requests, self.stats.latency.hist.len());
        if requests != samples {
            return Err(format!(
                "stats.requests is {requests} but stats.latency holds {samples} samples"
            ));
        }
        self.stats.check_counts()
    }
}

/// An error class as the file spells it (`connect_refused`).
fn kind_name(kind: crate::ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// The largest count (and the longest window, µs, and the most bytes) a result file may hold:
/// 2^53, beyond which an `f64` rate is no longer exact, and far beyond any run (285 years in
/// µs, 9·10^15 requests). Sums of counts up to it cannot wrap.
pub const MAX_COUNT: u64 = 1 << 53;

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

pub(crate) fn one_u16() -> u16 {
    1
}

pub(crate) fn is_one_u16(n: &u16) -> bool {
    *n == 1
}

impl RunConfig {
    /// "pipelined ×N" when the run pipelined its requests (`--pipeline N`, N > 1), for the
    /// header of every report.
    pub fn pipelined(&self) -> Option<String> {
        (self.pipeline > 1).then(|| format!("pipelined ×{}", self.pipeline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn an_empty_window_is_an_empty_run_but_never_one_that_counted() {
        assert_eq!(
            Stats::default().check_counts(),
            Ok(()),
            "stopped before its window"
        );
        let answered = Stats {
            sent: 3,
            ..Stats::default()
        };
        assert_eq!(
            answered.check_counts().unwrap_err(),
            "stats.elapsed_us is 0 but the run counted 3 requests: a window that sent or \
             answered requests lasted some time"
        );
    }

    #[test]
    fn counts_no_run_reaches_are_named_and_totals_never_wrap() {
        let mut s = Stats {
            elapsed_us: 1_000_000,
            ..Stats::default()
        };
        s.errors.add(ErrorKind::ConnectRefused, u64::MAX);
        s.errors.add(ErrorKind::ReadTimeout, 5);
        assert_eq!(s.errors.total(), u64::MAX, "saturates instead of wrapping");
        assert_eq!(s.attempts(), u64::MAX);
        let message = s.check_counts().unwrap_err();
        assert!(
            message.starts_with("stats.errors.connect_refused is 18446744073709551615"),
            "{message}"
        );
        let mut s = Stats {
            elapsed_us: 1_000_000,
            ..Stats::default()
        };
        s.status.add(503, MAX_COUNT + 1);
        assert!(s
            .check_counts()
            .unwrap_err()
            .starts_with("stats.status.503 is"));
        s.status = Default::default();
        s.status.add(503, MAX_COUNT);
        assert_eq!(s.check_counts(), Ok(()), "2^53 itself is allowed");
    }
}
