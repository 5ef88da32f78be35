//! Live metrics for Prometheus (`--metrics-listen ADDR`, docs/metrics.md): the series of the
//! load running, built from the same pulses the dashboard and the live page read (each worker's
//! counters and closed seconds, published a few times a second), never from the engine's hot
//! path. [`Metrics`] keeps them across the loads of a command: a `run`'s one load, a
//! `find-max`'s steps added up, a bench's steps each under its own labels (target, load, level,
//! round), so every counter only grows. [`Metrics::families`] is one snapshot of every series;
//! [`render`] writes it as Prometheus text exposition and [`serve`] answers `GET /metrics` with
//! it from a thread of its own (hyper on a one-thread tokio runtime).
//!
//! Latency is a classic histogram in seconds whose bucket bounds grow by [`BUCKET_RATIO`]
//! (2^(1/4), 19%) from 100 µs to about 105 s: a quantile read with `histogram_quantile` lies in
//! the same bucket as the true one, so within 19% of it.

use loadbench_engine::Pulse;
use loadbench_model::{ErrorCounts, GrpcStats, Histo, SeriesPoint, StatusCounts};
use loadbench_plan::{LoadShape, Plan, Schedule};
use loadbench_runner::Live;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Each latency bucket's upper bound over its lower one: 2^(1/4).
pub const BUCKET_RATIO: f64 = 1.189_207_115_002_721;
/// The first bucket's upper bound, seconds (100 µs).
pub const FIRST_BOUND_S: f64 = 0.000_1;
/// Latency buckets before `+Inf`: 100 µs · 2^(k/4), k = 0..=80 (the last about 104.9 s).
pub const BUCKETS: usize = 81;
/// The longest wait for a last scrape after the command is done.
const LINGER_MAX: Duration = Duration::from_secs(30);

/// The latency buckets' upper bounds in seconds, lowest first (`+Inf` not included).
pub fn bucket_bounds() -> Vec<f64> {
    (0..BUCKETS)
        .map(|k| FIRST_BOUND_S * 2f64.powf(k as f64 / 4.0))
        .collect()
}

/// The kind of a metric family, as the exposition's `# TYPE` line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (`_total`).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Cumulative buckets with `_bucket{le}`, `_sum` and `_count`.
    Histogram,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Label names and values, in order.
pub type Labels = Vec<(String, String)>;

/// One sample: the family's name plus `suffix` (`_bucket`, `_sum`, `_count` or nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Appended to the family's name.
    pub suffix: &'static str,
    /// The sample's labels.
    pub labels: Labels,
    /// Its value.
    pub value: f64,
}

/// A metric: its name, help, kind and samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// `loadbench_…`.
    pub name: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Every sample (none: the family is left out of the exposition).
    pub samples: Vec<Sample>,
}

/// What a set of loads under one label set counted.
#[derive(Debug, Clone, Default)]
struct Totals {
    requests: u64,
    sent: u64,
    errors: ErrorCounts,
    status: StatusCounts,
    /// A gRPC load's calls by `grpc-status`.
    grpc: GrpcStats,
    connects: u64,
    bytes_read: u64,
    bytes_written: u64,
    scheduled: u64,
    /// Per bucket (not cumulative), the last one `+Inf`.
    buckets: Vec<u64>,
    sum_s: f64,
    count: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.requests += o.requests;
        self.sent += o.sent;
        self.errors.merge(&o.errors);
        self.status.merge(&o.status);
        self.grpc.merge(&o.grpc);
        self.connects += o.connects;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.scheduled += o.scheduled;
        if self.buckets.len() < o.buckets.len() {
            self.buckets.resize(o.buckets.len(), 0);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&o.buckets) {
            *mine += theirs;
        }
        self.sum_s += o.sum_s;
        self.count += o.count;
    }

    /// One closed second's counts and latencies.
    fn add_second(&mut self, p: &SeriesPoint, bounds: &[f64]) {
        self.connects += p.connects;
        self.bytes_read += p.bytes_read;
        self.bytes_written += p.bytes_written;
        self.scheduled += p.target.unwrap_or(0);
        self.add_latency(p, bounds);
    }

    fn add_latency(&mut self, p: &SeriesPoint, bounds: &[f64]) {
        if self.buckets.len() <= bounds.len() {
            self.buckets.resize(bounds.len() + 1, 0);
        }
        let Ok(h) = Histo::from_base64_per_second(&p.hdr) else {
            return;
        };
        for (upper_ns, n) in h.recorded_buckets() {
            let s = upper_ns as f64 / 1e9;
            let i = bounds.partition_point(|&b| b < s);
            self.buckets[i] += n;
            self.sum_s += s * n as f64;
            self.count += n;
        }
    }
}

/// Open model: the requests `schedule` calls for in second `second` of the window (the
/// engine's own rule for the result's per-second `target`: request k is due when the scheduled
/// count first exceeds k).
fn scheduled_in(schedule: &Schedule, second: u32) -> u64 {
    let due_before = |t: f64| (schedule.count_until(t) - 1e-9).ceil().max(0.0) as u64;
    let s = f64::from(second);
    let end = schedule.duration().as_secs_f64();
    due_before((s + 1.0).min(end)).saturating_sub(due_before(s.min(end)))
}

/// The load running now.
struct Current {
    labels: Labels,
    live: Arc<Live>,
    /// Open model: the schedule, whose per-second counts are the target.
    schedule: Option<Schedule>,
    /// Closed seconds already added to `seconds`.
    seen: usize,
    /// What the closed seconds added (connects, bytes, schedule, latency).
    seconds: Totals,
    /// The latest counters.
    now: Pulse,
    /// The latest closed second (the rates of the gauges).
    last: Option<SeriesPoint>,
}

impl Current {
    /// The latest pulse: its counters, and its new seconds into `seconds`.
    fn read(&mut self, bounds: &[f64]) {
        let pulse = self.live.pulse(self.seen);
        self.seen += pulse.series.len();
        for p in &pulse.series {
            let p = SeriesPoint {
                target: self.schedule.as_ref().map(|s| scheduled_in(s, p.second)),
                ..p.clone()
            };
            self.seconds.add_second(&p, bounds);
            self.last = Some(p);
        }
        self.now = Pulse {
            series: Vec::new(),
            ..pulse
        };
    }

    /// Everything so far as totals.
    fn totals(&self) -> Totals {
        Totals {
            requests: self.now.requests,
            sent: self.now.sent,
            errors: self.now.errors.clone(),
            status: self.now.status.clone(),
            grpc: self.now.grpc.clone(),
            ..self.seconds.clone()
        }
    }
}

/// A bench target's latest resource sample, as gauges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetSample {
    /// The target's name.
    pub target: String,
    /// CPU cores used over the last sampling interval.
    pub cpu_cores: Option<f64>,
    /// Resident memory, bytes.
    pub memory_bytes: Option<f64>,
    /// The CPU limit, cores.
    pub cpu_limit_cores: Option<f64>,
    /// The memory limit, bytes.
    pub memory_limit_bytes: Option<f64>,
}

/// Reads a bench's latest resource samples.
pub type TargetSource = Box<dyn Fn() -> Vec<TargetSample> + Send + Sync>;

#[derive(Default)]
struct State {
    /// Finished loads, added up by label set.
    done: BTreeMap<Labels, Totals>,
    current: Option<Current>,
    /// The labels the next load runs under (a bench's step).
    next_labels: Labels,
    /// A bench's resource samples, read at each scrape.
    targets: Option<TargetSource>,
    finished: bool,
}

/// The series of a command's loads, kept across them; see the module's documentation.
pub struct Metrics {
    /// `run`, `find-max`, `bench`.
    command: String,
    /// Labels on every series after `command` (an agent's trigger: run id, shard, job and log).
    base: Labels,
    bounds: Vec<f64>,
    state: Mutex<State>,
    /// Answers to `GET /metrics` so far.
    scrapes: AtomicU64,
    /// When the last two scrapes came (for how long to wait for a last one).
    scraped: Mutex<(Option<Instant>, Option<Instant>)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Metrics {
    /// No load yet, for `command` (`run`, `find-max`, `bench`).
    pub fn new(command: &str) -> Arc<Metrics> {
        Metrics::with_labels(command, Vec::new())
    }

    /// No load yet, for `command`, every series also labelled with `base` (an agent's
    /// trigger: its run id, shard, job and log ids).
    pub fn with_labels(command: &str, base: Labels) -> Arc<Metrics> {
        Arc::new(Metrics {
            command: command.to_string(),
            base,
            bounds: bucket_bounds(),
            state: Mutex::new(State::default()),
            scrapes: AtomicU64::new(0),
            scraped: Mutex::new((None, None)),
        })
    }

    /// The next load runs under `labels` (a bench's step: target, load, level, round).
    pub fn set_labels(&self, labels: Labels) {
        lock(&self.state).next_labels = labels;
    }

    /// A load of `plan` starts: its pulses are read from now on.
    pub fn load_started(&self, live: &Arc<Live>, plan: &Plan) {
        let schedule = match &plan.load {
            LoadShape::Open { schedule, .. } => Some(schedule.clone()),
            _ => None,
        };
        let mut st = lock(&self.state);
        Self::fold(&mut st, &self.bounds);
        st.current = Some(Current {
            labels: st.next_labels.clone(),
            live: Arc::clone(live),
            schedule,
            seen: 0,
            seconds: Totals::default(),
            now: Pulse::default(),
            last: None,
        });
    }

    /// The load has ended: its last pulse (every worker's final counters and seconds) is
    /// read and added to its label set's totals.
    pub fn load_finished(&self) {
        Self::fold(&mut lock(&self.state), &self.bounds);
    }

    fn fold(st: &mut State, bounds: &[f64]) {
        if let Some(mut c) = st.current.take() {
            c.read(bounds);
            st.done
                .entry(c.labels.clone())
                .or_default()
                .add(&c.totals());
        }
    }

    /// Where a bench's latest resource samples (one per target) are read at each scrape.
    pub fn set_targets(&self, source: TargetSource) {
        lock(&self.state).targets = Some(source);
    }

    /// The command is done (`loadbench_running` goes to 0).
    pub fn finish(&self) {
        let mut st = lock(&self.state);
        Self::fold(&mut st, &self.bounds);
        st.finished = true;
    }

    /// Every series now (the running load's latest pulse read first).
    pub fn families(&self) -> Vec<Family> {
        let mut st = lock(&self.state);
        if let Some(c) = st.current.as_mut() {
            c.read(&self.bounds);
        }
        let mut all = st.done.clone();
        if let Some(c) = &st.current {
            all.entry(c.labels.clone()).or_default().add(&c.totals());
        }
        let mut b = Builder::new(&self.command, &self.base);
        b.totals(&all, &self.bounds);
        b.current(st.current.as_ref(), !st.finished);
        if let Some(source) = &st.targets {
            b.targets(&source());
        }
        b.families
    }

    /// Called for each answered scrape.
    fn scraped(&self) {
        self.scrapes.fetch_add(1, Ordering::Relaxed);
        let mut s = lock(&self.scraped);
        *s = (s.1, Some(Instant::now()));
    }

    /// After [`Metrics::finish`]: when the endpoint has been scraped, waits for one more
    /// scrape (so the final counts reach Prometheus), at most twice the interval seen between
    /// the last two scrapes (at least 2 s, at most 30 s).
    pub fn linger(&self) {
        let before = self.scrapes.load(Ordering::Relaxed);
        let (prev, last) = *lock(&self.scraped);
        if before == 0 {
            return;
        }
        let interval = prev.zip(last).map_or(Duration::from_secs(15), |(a, b)| {
            b.saturating_duration_since(a)
        });
        let wait = (interval * 2).clamp(Duration::from_secs(2), LINGER_MAX);
        let until = Instant::now() + wait;
        while self.scrapes.load(Ordering::Relaxed) == before && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What a metrics endpoint serves: one command's [`Metrics`], or an agent's [`Triggers`].
pub trait Source: Send + Sync + 'static {
    /// Every series now.
    fn families(&self) -> Vec<Family>;
    /// Called for each answered scrape.
    fn scraped(&self) {}
}

impl Source for Metrics {
    fn families(&self) -> Vec<Family> {
        Metrics::families(self)
    }

    fn scraped(&self) {
        Metrics::scraped(self);
    }
}

/// The series of an agent (`loadbench agent xxl-job --metrics-listen`): those of every trigger
/// running now, each under its own labels, and those of the triggers finished since the last
/// start, kept (with their final counts, `loadbench_running` 0) until the next trigger starts.
#[derive(Default)]
pub struct Triggers {
    state: Mutex<TriggerSeries>,
}

#[derive(Default)]
struct TriggerSeries {
    running: Vec<Arc<Metrics>>,
    /// Finished since the last start.
    done: Vec<Arc<Metrics>>,
}

impl Triggers {
    /// A trigger starts: the finished ones' series are dropped, `m`'s served.
    pub fn started(&self, m: &Arc<Metrics>) {
        let mut st = lock(&self.state);
        st.done.clear();
        st.running.push(Arc::clone(m));
    }

    /// A trigger is done ([`Metrics::finish`] called): its series stay until the next start.
    pub fn finished(&self, m: &Arc<Metrics>) {
        let mut st = lock(&self.state);
        st.running.retain(|r| !Arc::ptr_eq(r, m));
        st.done.push(Arc::clone(m));
    }
}

impl Source for Triggers {
    fn families(&self) -> Vec<Family> {
        let all: Vec<Arc<Metrics>> = {
            let st = lock(&self.state);
            st.done.iter().chain(&st.running).cloned().collect()
        };
        let mut out: Vec<Family> = Vec::new();
        for f in all.iter().flat_map(|m| m.families()) {
            match out.iter_mut().find(|o| o.name == f.name) {
                Some(o) => o.samples.extend(f.samples),
                None => out.push(f),
            }
        }
        out
    }
}

/// Builds the families, each with the command's label first, then the base labels.
struct Builder {
    command: String,
    base: Labels,
    families: Vec<Family>,
}

impl Builder {
    fn new(command: &str, base: &[(String, String)]) -> Builder {
        Builder {
            command: command.to_string(),
            base: base.to_vec(),
            families: Vec::new(),
        }
    }

    fn family(&mut self, name: &'static str, kind: Kind, help: &'static str) -> &mut Family {
        if let Some(i) = self.families.iter().position(|f| f.name == name) {
            return &mut self.families[i];
        }
        self.families.push(Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        });
        self.families.last_mut().expect("just pushed")
    }

    fn labels(&self, set: &[(String, String)], extra: &[(&str, String)]) -> Labels {
        let mut l = vec![("command".to_string(), self.command.clone())];
        l.extend(self.base.iter().cloned());
        l.extend(set.iter().cloned());
        l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        l
    }

    fn push(&mut self, name: &'static str, kind: Kind, help: &'static str, s: Sample) {
        self.family(name, kind, help).samples.push(s);
    }

    fn counter(&mut self, name: &'static str, help: &'static str, labels: Labels, v: u64) {
        let s = Sample {
            suffix: "",
            labels,
            value: v as f64,
        };
        self.push(name, Kind::Counter, help, s);
    }

    fn gauge(&mut self, name: &'static str, help: &'static str, labels: Labels, v: f64) {
        let s = Sample {
            suffix: "",
            labels,
            value: v,
        };
        self.push(name, Kind::Gauge, help, s);
    }

    fn totals(&mut self, all: &BTreeMap<Labels, Totals>, bounds: &[f64]) {
        for (set, t) in all {
            let l = |extra: &[(&str, String)]| self.labels(set, extra);
            let base = l(&[]);
            let statuses: Vec<(Labels, u64)> = t
                .status
                .0
                .iter()
                .map(|(code, n)| {
                    let class = format!("{}xx", code / 100);
                    (l(&[("code", code.to_string()), ("class", class)]), *n)
                })
                .collect();
            let errors: Vec<(Labels, u64)> = t
                .errors
                .0
                .iter()
                .map(|(kind, n)| (l(&[("class", error_class(*kind))]), *n))
                .collect();
            let calls: Vec<(Labels, u64)> = t
                .grpc
                .calls
                .iter()
                .map(|(code, n)| (l(&[("code", code.clone())]), *n))
                .collect();
            for (labels, n) in statuses {
                self.counter(RESPONSES, RESPONSES_HELP, labels, n);
            }
            for (labels, n) in errors {
                self.counter(ERRORS, ERRORS_HELP, labels, n);
            }
            for (labels, n) in calls {
                self.counter(GRPC_CALLS, GRPC_CALLS_HELP, labels, n);
            }
            self.counter(SENT, SENT_HELP, base.clone(), t.sent);
            self.counter(CONNECTS, CONNECTS_HELP, base.clone(), t.connects);
            self.counter(READ, READ_HELP, base.clone(), t.bytes_read);
            self.counter(WRITTEN, WRITTEN_HELP, base.clone(), t.bytes_written);
            if t.scheduled > 0 {
                self.counter(SCHEDULED, SCHEDULED_HELP, base.clone(), t.scheduled);
            }
            self.histogram(&base, t, bounds);
        }
    }

    fn histogram(&mut self, base: &Labels, t: &Totals, bounds: &[f64]) {
        let mut cumulative = 0;
        let mut samples = Vec::with_capacity(bounds.len() + 3);
        for (i, bound) in bounds.iter().enumerate() {
            cumulative += t.buckets.get(i).copied().unwrap_or(0);
            let mut labels = base.clone();
            labels.push(("le".into(), format_float(*bound)));
            samples.push(Sample {
                suffix: "_bucket",
                labels,
                value: cumulative as f64,
            });
        }
        let mut labels = base.clone();
        labels.push(("le".into(), "+Inf".into()));
        let sample = |suffix, labels, value| Sample {
            suffix,
            labels,
            value,
        };
        samples.push(sample("_bucket", labels, t.count as f64));
        samples.push(sample("_sum", base.clone(), t.sum_s));
        samples.push(sample("_count", base.clone(), t.count as f64));
        self.family(LATENCY, Kind::Histogram, LATENCY_HELP)
            .samples
            .extend(samples);
    }

    fn current(&mut self, c: Option<&Current>, running: bool) {
        let none: Labels = Vec::new();
        let set = c.map_or(&none, |c| &c.labels);
        let base = self.labels(set, &[]);
        self.gauge(
            RUNNING,
            RUNNING_HELP,
            base.clone(),
            f64::from(u8::from(running)),
        );
        let Some(c) = c.filter(|_| running) else {
            return;
        };
        let p = &c.now;
        let answered = p.requests + p.errors.total() - p.errors.before_send();
        self.gauge(
            IN_FLIGHT,
            IN_FLIGHT_HELP,
            base.clone(),
            p.sent.saturating_sub(answered) as f64,
        );
        self.gauge(OPEN, OPEN_HELP, base.clone(), p.open_connections as f64);
        self.gauge(LAG, LAG_HELP, base.clone(), p.lag_us as f64 / 1e6);
        if let Some(last) = &c.last {
            self.gauge(ACHIEVED, ACHIEVED_HELP, base.clone(), last.requests as f64);
            if let Some(target) = last.target {
                self.gauge(TARGET, TARGET_HELP, base, target as f64);
            }
        }
    }

    fn targets(&mut self, targets: &[TargetSample]) {
        for t in targets {
            let l = self.labels(&[], &[("target", t.target.clone())]);
            let gauges = [
                (TARGET_CPU, TARGET_CPU_HELP, t.cpu_cores),
                (TARGET_MEM, TARGET_MEM_HELP, t.memory_bytes),
                (TARGET_CPU_LIMIT, TARGET_CPU_LIMIT_HELP, t.cpu_limit_cores),
                (
                    TARGET_MEM_LIMIT,
                    TARGET_MEM_LIMIT_HELP,
                    t.memory_limit_bytes,
                ),
            ];
            for (name, help, v) in gauges {
                if let Some(v) = v {
                    self.gauge(name, help, l.clone(), v);
                }
            }
        }
    }
}

/// An error class's name as the result JSON spells it (`read_timeout`).
fn error_class(kind: loadbench_model::ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

const RESPONSES: &str = "loadbench_responses_total";
const RESPONSES_HELP: &str =
    "Responses completed in the measured window, by status code and class (2xx, 5xx, ...).";
const GRPC_CALLS: &str = "loadbench_grpc_calls_total";
const GRPC_CALLS_HELP: &str =
    "gRPC calls answered in the measured window, by grpc-status (OK, UNAVAILABLE, ...).";
const ERRORS: &str = "loadbench_errors_total";
const ERRORS_HELP: &str =
    "Requests failed in the measured window, by error class (as the result's errors).";
const SENT: &str = "loadbench_sent_requests_total";
const SENT_HELP: &str = "Requests sent in the measured window.";
const CONNECTS: &str = "loadbench_connects_total";
const CONNECTS_HELP: &str =
    "Connects begun in the measured window (the open model's initial pool, opened before it, not).";
const READ: &str = "loadbench_read_bytes_total";
const READ_HELP: &str = "Response bytes read.";
const WRITTEN: &str = "loadbench_written_bytes_total";
const WRITTEN_HELP: &str = "Request bytes written.";
const SCHEDULED: &str = "loadbench_scheduled_requests_total";
const SCHEDULED_HELP: &str =
    "Open model: requests the schedule called for in the seconds closed so far.";
const LATENCY: &str = "loadbench_latency_seconds";
const LATENCY_HELP: &str =
    "Response time of completed responses; buckets 100us * 2^(k/4), k = 0..80 (19% wide).";
const RUNNING: &str = "loadbench_running";
const RUNNING_HELP: &str = "1 while the command runs, 0 once it is done.";
const IN_FLIGHT: &str = "loadbench_in_flight_requests";
const IN_FLIGHT_HELP: &str = "Requests sent and not answered yet.";
const OPEN: &str = "loadbench_open_connections";
const OPEN_HELP: &str = "Connections open now.";
const LAG: &str = "loadbench_schedule_lag_seconds";
const LAG_HELP: &str = "Open model: how far the next due request is behind its schedule.";
const ACHIEVED: &str = "loadbench_achieved_requests_per_second";
const ACHIEVED_HELP: &str = "Responses completed in the last closed second.";
const TARGET: &str = "loadbench_target_requests_per_second";
const TARGET_HELP: &str = "Open model: requests the schedule called for in the last closed second.";
const TARGET_CPU: &str = "loadbench_target_cpu_cores";
const TARGET_CPU_HELP: &str = "Bench: the target's CPU use at the last sample, cores.";
const TARGET_MEM: &str = "loadbench_target_memory_bytes";
const TARGET_MEM_HELP: &str = "Bench: the target's memory at the last sample.";
const TARGET_CPU_LIMIT: &str = "loadbench_target_cpu_limit_cores";
const TARGET_CPU_LIMIT_HELP: &str = "Bench: the target's CPU limit, cores.";
const TARGET_MEM_LIMIT: &str = "loadbench_target_memory_limit_bytes";
const TARGET_MEM_LIMIT_HELP: &str = "Bench: the target's memory limit.";

/// A float as the exposition writes it (shortest form that reads back the same).
fn format_float(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    format!("{v}")
}

fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// The families as Prometheus text exposition (format 0.0.4).
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.word());
        for s in &f.samples {
            out.push_str(f.name);
            out.push_str(s.suffix);
            if !s.labels.is_empty() {
                let labels: Vec<String> = s
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                    .collect();
                let _ = write!(out, "{{{}}}", labels.join(","));
            }
            let _ = writeln!(out, " {}", format_float(s.value));
        }
    }
    out
}

/// A `--metrics-listen` address that cannot be served as asked: one line naming the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ListenError(String);

/// The address of `--metrics-listen ADDR`: IP:PORT or an IP alone (a free port); anything but
/// loopback only with `public` (`--metrics-public`).
pub fn parse_addr(text: &str, public: bool) -> Result<SocketAddr, ListenError> {
    let addr = text
        .parse::<SocketAddr>()
        .or_else(|_| text.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| {
            ListenError(format!(
                "--metrics-listen {text} is not an address: give IP:PORT such as 127.0.0.1:9464"
            ))
        })?;
    if !addr.ip().is_loopback() && !public {
        return Err(ListenError(format!(
            "--metrics-listen {text} is not a loopback address and the series name the target: \
             add --metrics-public to serve them there"
        )));
    }
    Ok(addr)
}

/// Listens on `addr` (before any load: a port in use is the user's to fix) and serves
/// `metrics` at `GET /metrics` from a thread of its own for the rest of the process; prints the
/// URL on stderr. Returns the bound address.
pub fn serve<S: Source>(addr: SocketAddr, metrics: &Arc<S>) -> Result<SocketAddr, ListenError> {
    let cannot = |e: std::io::Error| {
        ListenError(format!(
            "--metrics-listen {addr}: cannot listen there ({e}): give a free port, or port 0 for any"
        ))
    };
    let listener = TcpListener::bind(addr).map_err(cannot)?;
    let bound = listener.local_addr().map_err(cannot)?;
    listener.set_nonblocking(true).map_err(cannot)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(cannot)?;
    let metrics: Arc<dyn Source> = Arc::clone(metrics) as Arc<dyn Source>;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || runtime.block_on(accept(listener, metrics)))
        .map_err(cannot)?;
    if !bound.ip().is_loopback() {
        eprintln!(
            "warning: the metrics at http://{bound}/metrics can be reached from other hosts and \
             name the target"
        );
    }
    eprintln!("metrics: http://{bound}/metrics");
    Ok(bound)
}

async fn accept(listener: TcpListener, metrics: Arc<dyn Source>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let metrics = Arc::clone(&metrics);
                async move { Ok::<_, Infallible>(answer(&req, &*metrics)) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

fn answer<B>(req: &hyper::Request<B>, metrics: &dyn Source) -> hyper::Response<String> {
    let (status, kind, body) = match (req.method(), req.uri().path()) {
        (&hyper::Method::GET, "/metrics") => {
            let text = render(&metrics.families());
            metrics.scraped();
            (200, "text/plain; version=0.0.4; charset=utf-8", text)
        }
        (&hyper::Method::GET, "/") => (
            200,
            "text/plain; charset=utf-8",
            "loadbench: the series are at /metrics\n".to_string(),
        ),
        _ => (
            404,
            "text/plain; charset=utf-8",
            "not found: GET /metrics\n".to_string(),
        ),
    };
    hyper::Response::builder()
        .status(status)
        .header("Content-Type", kind)
        .body(body)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_grow_by_the_ratio_from_100us_to_over_100s() {
        let b = bucket_bounds();
        assert_eq!(b.len(), BUCKETS);
        assert!((b[0] - 0.0001).abs() < 1e-12);
        assert!((b[4] - 0.0002).abs() < 1e-12, "four buckets an octave");
        assert!(b[BUCKETS - 1] > 100.0);
        for w in b.windows(2) {
            assert!((w[1] / w[0] - BUCKET_RATIO).abs() < 1e-9);
        }
    }

    #[test]
    fn a_second_lands_in_its_bucket_and_the_exposition_is_cumulative() {
        let bounds = bucket_bounds();
        let mut h = Histo::per_second();
        for _ in 0..3 {
            h.record_ns(1_000_000); // 1 ms
        }
        h.record_ns(50_000_000); // 50 ms
        let point = SeriesPoint::new(0, Default::default(), &h);
        let mut t = Totals::default();
        t.add_second(&point, &bounds);
        assert_eq!(t.count, 4);
        let mut all = BTreeMap::new();
        all.insert(Vec::new(), t);
        let mut b = Builder::new("run", &[]);
        b.totals(&all, &bounds);
        let text = render(&b.families);
        assert!(text.contains("# TYPE loadbench_latency_seconds histogram"));
        // 1 ms is between 0.000951 and 0.00113 s: the bucket up to 0.00113 holds 3.
        let le = |v: f64| {
            let i = bounds.partition_point(|&x| x < v);
            format!(
                "loadbench_latency_seconds_bucket{{command=\"run\",le=\"{}\"}} ",
                format_float(bounds[i])
            )
        };
        let count_at = |v: f64| -> f64 {
            let line = text.lines().find(|l| l.starts_with(&le(v))).unwrap();
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert_eq!(count_at(0.00101), 3.0);
        assert_eq!(count_at(0.0505), 4.0);
        assert_eq!(count_at(0.0009), 0.0);
        assert!(text.contains("loadbench_latency_seconds_count{command=\"run\"} 4\n"));
    }

    /// A gRPC load's calls are a counter by grpc-status, with the counts of the pulse.
    #[test]
    fn grpc_calls_are_counted_by_their_status() {
        let mut codes = [0u64; 18];
        (codes[0], codes[4]) = (97, 3);
        let t = Totals {
            grpc: GrpcStats::from_counts(&codes, 0, Some(3)),
            ..Totals::default()
        };
        let mut all = BTreeMap::new();
        all.insert(Vec::new(), t);
        let mut b = Builder::new("run", &[]);
        b.totals(&all, &bucket_bounds());
        let text = render(&b.families);
        assert!(
            text.contains("# TYPE loadbench_grpc_calls_total counter"),
            "{text}"
        );
        for line in [
            "loadbench_grpc_calls_total{command=\"run\",code=\"OK\"} 97\n",
            "loadbench_grpc_calls_total{command=\"run\",code=\"DEADLINE_EXCEEDED\"} 3\n",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        // An HTTP load has no such series.
        let mut http = Totals::default();
        http.status.add(200, 5);
        let mut all = BTreeMap::new();
        all.insert(Vec::new(), http);
        let mut b = Builder::new("run", &[]);
        b.totals(&all, &bucket_bounds());
        let text = render(&b.families);
        assert!(text.contains("loadbench_responses_total"), "{text}");
        assert!(!text.contains("loadbench_grpc_calls_total"), "{text}");
    }

    /// The value of the `loadbench_running` sample labelled `log_id`, if any.
    fn running_of(t: &Triggers, log_id: &str) -> Option<f64> {
        let f = Source::families(t);
        let running = f.iter().find(|f| f.name == RUNNING)?;
        let s = running
            .samples
            .iter()
            .find(|s| s.labels.contains(&("log_id".into(), log_id.into())))?;
        Some(s.value)
    }

    #[test]
    fn an_agent_serves_its_running_triggers_and_the_finished_until_the_next_start() {
        let t = Triggers::default();
        let job = |log: &str| Metrics::with_labels("run", vec![("log_id".into(), log.into())]);
        let (a, b, c) = (job("1"), job("2"), job("3"));
        t.started(&a);
        t.started(&b);
        assert_eq!(
            (running_of(&t, "1"), running_of(&t, "2")),
            (Some(1.0), Some(1.0))
        );
        let text = render(&Source::families(&t));
        assert_eq!(
            text.matches("# TYPE loadbench_running gauge").count(),
            1,
            "{text}"
        );
        a.finish();
        t.finished(&a);
        assert_eq!(running_of(&t, "1"), Some(0.0), "kept with its final state");
        t.started(&c);
        assert_eq!(running_of(&t, "1"), None, "gone once the next starts");
        assert_eq!(
            (running_of(&t, "2"), running_of(&t, "3")),
            (Some(1.0), Some(1.0))
        );
        let families = Source::families(&t);
        let running = families.iter().find(|f| f.name == RUNNING).unwrap();
        assert_eq!(
            running.samples[0].labels,
            [
                ("command".into(), "run".into()),
                ("log_id".into(), "2".into())
            ],
            "the command first, then the trigger's labels"
        );
    }

    #[test]
    fn labels_are_escaped_and_non_loopback_needs_the_flag() {
        let f = Family {
            name: "loadbench_x_total",
            help: "h",
            kind: Kind::Counter,
            samples: vec![Sample {
                suffix: "",
                labels: vec![("target".into(), "a\"b\\c".into())],
                value: 2.0,
            }],
        };
        assert_eq!(
            render(&[f]),
            "# HELP loadbench_x_total h\n# TYPE loadbench_x_total counter\n\
             loadbench_x_total{target=\"a\\\"b\\\\c\"} 2\n"
        );
        assert!(parse_addr("0.0.0.0:9464", false)
            .unwrap_err()
            .to_string()
            .contains("--metrics-public"));
        assert!(parse_addr("0.0.0.0:9464", true).is_ok());
        assert_eq!(parse_addr("127.0.0.1", false).unwrap().port(), 0);
        assert!(parse_addr("nowhere", false).is_err());
    }
}
