//! Prometheus remote write (`--prometheus-remote-write URL`, docs/metrics.md): the series of
//! [`Metrics`] pushed every [`PUSH_EVERY`] (or `--prometheus-push-interval`) and once more at
//! the end, as the remote-write 1.0 spec wants them: a protobuf `WriteRequest` (its four
//! messages declared here with prost's derive), snappy block-compressed, POSTed with
//! `Content-Encoding: snappy`. Each series gets the run id, the shard and the host as labels,
//! so the shards of one run add up in a query.
//!
//! Pushes run on a thread of their own, never on the engine's: a push that fails (the endpoint
//! is gone, answers 5xx or 429) stays in a buffer of at most [`MAX_BUFFERED`] pushes and is sent
//! again, oldest first, at the next tick; one the endpoint refuses (another 4xx) or that falls
//! out of the full buffer is lost. [`RemoteWrite::finish`] makes the final push, tries what is
//! left a few times, and counts the rest as lost.
//!
//! Before any load, [`RemoteWrite::start`] probes the URL with an empty `WriteRequest`: anything
//! but a 2xx answer (nothing listening, a server that is not a remote-write receiver) is the
//! user's to fix.

use crate::metrics::{Labels, Metrics};
use bytes::Bytes;
use prost::Message;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the series are pushed unless `--prometheus-push-interval` says otherwise.
pub const PUSH_EVERY: Duration = Duration::from_secs(5);
/// The shortest and the longest push interval taken.
pub const PUSH_EVERY_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(300);
/// The most pushes kept for a retry (5 minutes of them at 5 s); an older one is dropped (lost).
pub const MAX_BUFFERED: usize = 60;
/// One push's connect-to-answer budget.
const PUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times the end retries what is left, and how long it waits between.
const FINAL_TRIES: u32 = 3;
const FINAL_PAUSE: Duration = Duration::from_millis(500);

#[derive(Clone, PartialEq, prost::Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

/// A remote-write URL that cannot be used: one line naming the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RemoteWriteError(String);

/// What the pushes came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushCounts {
    /// Pushes made (each a snapshot of every series).
    pub made: u64,
    /// Pushes the endpoint accepted.
    pub sent: u64,
    /// Pushes lost: refused, dropped from the full buffer, or still unsent at the end.
    pub lost: u64,
    /// The last failure, if any.
    pub last_error: Option<String>,
}

/// Where pushes go.
#[derive(Debug, Clone)]
struct Endpoint {
    url: String,
    /// `host:port` to connect to.
    authority: String,
    /// Path and query.
    path: String,
}

impl Endpoint {
    fn parse(text: &str) -> Result<Endpoint, RemoteWriteError> {
        let url = url::Url::parse(text).map_err(|e| {
            RemoteWriteError(format!(
                "--prometheus-remote-write {text}: not a URL ({e}): give one such as \
                 http://127.0.0.1:9090/api/v1/write"
            ))
        })?;
        if url.scheme() != "http" {
            return Err(RemoteWriteError(format!(
                "--prometheus-remote-write {text}: only http:// is supported: push to a \
                 receiver on http (a local Prometheus or agent can forward over https)"
            )));
        }
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path = format!("{path}?{q}");
        }
        let authority = match url.host() {
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        Ok(Endpoint {
            url: text.to_string(),
            authority,
            path,
        })
    }
}

/// A pusher on its own thread; see the module's documentation.
pub struct RemoteWrite {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    endpoint: Endpoint,
    metrics: Arc<Metrics>,
    /// `run_id`, `shard`, `host` (and `job`), added to every series.
    labels: Labels,
    /// The push interval.
    every: Duration,
    stop: AtomicBool,
    counts: Mutex<PushCounts>,
}

impl RemoteWrite {
    /// Checks `url` (an empty `WriteRequest` must get a 2xx answer), then pushes `metrics`
    /// with `labels` every `every` from a thread of its own.
    pub fn start(
        url: &str,
        metrics: &Arc<Metrics>,
        labels: Labels,
        every: Duration,
    ) -> Result<RemoteWrite, RemoteWriteError> {
        RemoteWrite::probe(url)?;
        RemoteWrite::start_unprobed(url, metrics, labels, every)
    }

    /// Checks `url` with an empty `WriteRequest`: anything but a 2xx answer is one line naming
    /// the fix.
    pub fn probe(url: &str) -> Result<(), RemoteWriteError> {
        let endpoint = Endpoint::parse(url)?;
        let runtime = runtime().map_err(|e| RemoteWriteError(e.to_string()))?;
        let empty = snappy(&WriteRequest::default().encode_to_vec());
        runtime.block_on(post(&endpoint, empty)).map_err(|e| {
            RemoteWriteError(format!(
                "--prometheus-remote-write {url}: {e}: give the URL of a remote-write \
                     receiver (Prometheus with --web.enable-remote-write-receiver: \
                     http://HOST:9090/api/v1/write)"
            ))
        })
    }

    /// [`RemoteWrite::start`] without the probe, for a URL probed before (an agent's, once at
    /// its start): a receiver gone since costs pushes, counted, never the load.
    pub fn start_unprobed(
        url: &str,
        metrics: &Arc<Metrics>,
        labels: Labels,
        every: Duration,
    ) -> Result<RemoteWrite, RemoteWriteError> {
        let endpoint = Endpoint::parse(url)?;
        let runtime = runtime().map_err(|e| RemoteWriteError(e.to_string()))?;
        let shared = Arc::new(Shared {
            endpoint,
            metrics: Arc::clone(metrics),
            labels,
            every,
            stop: AtomicBool::new(false),
            counts: Mutex::new(PushCounts::default()),
        });
        let pushing = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("remote-write".into())
            .spawn(move || pushing.run(&runtime))
            .map_err(|e| RemoteWriteError(e.to_string()))?;
        Ok(RemoteWrite {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The URL pushed to.
    pub fn url(&self) -> &str {
        &self.shared.endpoint.url
    }

    /// Ends the pushing (call after [`Metrics::finish`], so the final push has the final
    /// counts): the final push is made and what is left is tried a few more times; returns
    /// what the pushes came to.
    pub fn finish(&self) -> PushCounts {
        self.shared.stop.store(true, Ordering::Relaxed);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = thread {
            let _ = t.join();
        }
        self.counts()
    }

    /// What the pushes came to so far.
    pub fn counts(&self) -> PushCounts {
        self.shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl PushCounts {
    /// The one line for the end of the command when pushes were lost.
    pub fn lost_line(&self, url: &str) -> Option<String> {
        (self.lost > 0).then(|| {
            let why = self
                .last_error
                .as_deref()
                .map_or(String::new(), |e| format!(" (last failure: {e})"));
            format!(
                "warning: remote write: {} of {} pushes to {url} were lost{why}; the result itself is complete",
                self.lost, self.made
            )
        })
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

impl Shared {
    fn run(&self, runtime: &tokio::runtime::Runtime) {
        let mut buffer: VecDeque<Bytes> = VecDeque::new();
        let mut next = Instant::now() + self.every;
        while !self.stop.load(Ordering::Relaxed) {
            if Instant::now() < next {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            next += self.every;
            self.snapshot(&mut buffer);
            self.flush(runtime, &mut buffer);
        }
        self.snapshot(&mut buffer);
        for i in 0..FINAL_TRIES {
            self.flush(runtime, &mut buffer);
            if buffer.is_empty() {
                break;
            }
            if i + 1 < FINAL_TRIES {
                std::thread::sleep(FINAL_PAUSE);
            }
        }
        self.count(|c| c.lost += buffer.len() as u64);
    }

    fn count(&self, f: impl FnOnce(&mut PushCounts)) {
        f(&mut self.counts.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Every series now, encoded, at the back of the buffer (the oldest dropped when full).
    fn snapshot(&self, buffer: &mut VecDeque<Bytes>) {
        let body = snappy(&encode(&self.metrics, &self.labels, now_ms()).encode_to_vec());
        buffer.push_back(body);
        self.count(|c| c.made += 1);
        while buffer.len() > MAX_BUFFERED {
            buffer.pop_front();
            self.count(|c| {
                c.lost += 1;
                c.last_error = Some(format!("more than {MAX_BUFFERED} pushes waiting"));
            });
        }
    }

    /// Sends the buffered pushes oldest first until one fails with a retryable failure.
    fn flush(&self, runtime: &tokio::runtime::Runtime, buffer: &mut VecDeque<Bytes>) {
        while let Some(body) = buffer.front().cloned() {
            match runtime.block_on(post(&self.endpoint, body)) {
                Ok(()) => {
                    buffer.pop_front();
                    self.count(|c| c.sent += 1);
                }
                Err(PushError::Refused(e)) => {
                    buffer.pop_front();
                    self.count(|c| {
                        c.lost += 1;
                        c.last_error = Some(e);
                    });
                }
                Err(PushError::Retry(e)) => {
                    self.count(|c| c.last_error = Some(e));
                    return;
                }
            }
        }
    }
}

fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Every series of `metrics` at `ms`, with `extra` labels; labels sorted by name, as the spec
/// requires.
fn encode(metrics: &Metrics, extra: &Labels, ms: i64) -> WriteRequest {
    let mut timeseries = Vec::new();
    for family in metrics.families() {
        for s in family.samples {
            let mut labels: Vec<Label> = std::iter::once((
                "__name__".to_string(),
                format!("{}{}", family.name, s.suffix),
            ))
            .chain(s.labels)
            .chain(extra.iter().cloned())
            .map(|(name, value)| Label { name, value })
            .collect();
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            labels.dedup_by(|a, b| a.name == b.name);
            timeseries.push(TimeSeries {
                labels,
                samples: vec![Sample {
                    value: s.value,
                    timestamp: ms,
                }],
            });
        }
    }
    WriteRequest { timeseries }
}

fn snappy(raw: &[u8]) -> Bytes {
    Bytes::from(
        snap::raw::Encoder::new()
            .compress_vec(raw)
            .unwrap_or_default(),
    )
}

/// Why a push did not go through.
#[derive(Debug)]
enum PushError {
    /// Worth sending again (no connection, a timeout, 5xx, 429).
    Retry(String),
    /// The receiver will never take it (another 4xx).
    Refused(String),
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushError::Retry(e) | PushError::Refused(e) => f.write_str(e),
        }
    }
}

/// One POST of a snappy-compressed `WriteRequest`, on a connection of its own.
async fn post(to: &Endpoint, body: Bytes) -> Result<(), PushError> {
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(&to.authority)
            .await
            .map_err(|e| PushError::Retry(format!("cannot connect to {}: {e}", to.authority)))?;
        let io = hyper_util::rt::TokioIo::new(stream);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| PushError::Retry(e.to_string()))?;
        tokio::spawn(conn);
        let req = hyper::Request::post(&to.path)
            .header("Host", &to.authority)
            .header("Content-Type", "application/x-protobuf")
            .header("Content-Encoding", "snappy")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .header(
                "User-Agent",
                concat!("loadbench/", env!("CARGO_PKG_VERSION")),
            )
            .body(http_body_util::Full::new(body))
            .map_err(|e| PushError::Refused(e.to_string()))?;
        let res = sender
            .send_request(req)
            .await
            .map_err(|e| PushError::Retry(e.to_string()))?;
        let status = res.status();
        if status.is_success() {
            Ok(())
        } else if status.is_server_error() || status.as_u16() == 429 {
            Err(PushError::Retry(format!("the receiver answered {status}")))
        } else {
            Err(PushError::Refused(format!(
                "the receiver answered {status}"
            )))
        }
    };
    match tokio::time::timeout(PUSH_TIMEOUT, exchange).await {
        Ok(r) => r,
        Err(_) => Err(PushError::Retry(format!(
            "no answer from {} in {PUSH_TIMEOUT:?}",
            to.authority
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_request_has_sorted_labels_with_the_extra_ones_and_reads_back() {
        let m = Metrics::new("run");
        m.finish();
        let extra = vec![
            ("run_id".to_string(), "r1".to_string()),
            ("shard".to_string(), "0/3".to_string()),
            ("host".to_string(), "h".to_string()),
        ];
        let req = encode(&m, &extra, 1234);
        assert!(!req.timeseries.is_empty());
        for ts in &req.timeseries {
            let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted);
            for want in ["__name__", "run_id", "shard", "host", "command"] {
                assert!(names.contains(&want), "{names:?}");
            }
            assert_eq!(ts.samples[0].timestamp, 1234);
        }
        let running = req
            .timeseries
            .iter()
            .find(|t| t.labels.iter().any(|l| l.value == "loadbench_running"))
            .expect("loadbench_running pushed");
        assert_eq!(running.samples[0].value, 0.0);
        let wire = snappy(&req.encode_to_vec());
        let raw = snap::raw::Decoder::new().decompress_vec(&wire).unwrap();
        assert_eq!(WriteRequest::decode(raw.as_slice()).unwrap(), req);
    }

    #[test]
    fn only_http_urls_are_taken() {
        let e = Endpoint::parse("http://127.0.0.1:9090/api/v1/write?x=1").unwrap();
        assert_eq!(e.authority, "127.0.0.1:9090");
        assert_eq!(e.path, "/api/v1/write?x=1");
        assert!(Endpoint::parse("https://h/api/v1/write").is_err());
        assert!(Endpoint::parse("nowhere").is_err());
    }

    #[test]
    fn the_lost_line_names_the_count_and_the_last_failure() {
        let c = PushCounts {
            made: 4,
            sent: 1,
            lost: 3,
            last_error: Some("cannot connect".into()),
        };
        let line = c.lost_line("http://x/").unwrap();
        assert!(line.contains("3 of 4 pushes"), "{line}");
        assert!(line.contains("cannot connect"), "{line}");
        assert_eq!(PushCounts::default().lost_line("u"), None);
    }
}
