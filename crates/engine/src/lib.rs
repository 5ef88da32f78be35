//! The load engine.
//!
//! In: a [`loadbench_plan::Plan`] (request bytes already rendered, host already resolved).
//! Out: a [`loadbench_model::Stats`] per run, merged from one per worker, plus the wall-clock
//! window and whether the run was interrupted.
//! Inside: thread-per-core workers (`worker.rs`: one epoll loop, generic over the connection
//! protocol and monomorphised for each), each owning its connections (HTTP/1.1 in [`conn`]
//! with a streaming response reader in [`http1`]; HTTP/2 in [`h2`]; WebSocket in [`ws`]), its context ([`ctx`]) and
//! a [`recorder`]. Nothing is locked, sent over a channel or allocated per request; workers
//! meet only at the end, in one merge.
//! Neighbours: the CLI and (later) the harness drive it; the report renders what it returns.

pub mod conn;
pub mod ctx;
pub mod growth;
pub mod h2;
pub mod h3;
pub mod http1;
pub mod mix;
pub mod pacer;
pub mod pulse;
pub mod recorder;
pub mod script;
mod start;
pub mod tls;
pub mod transport;
mod vu;
mod worker;
pub mod ws;

use conn::Http1;
use ctx::WorkerConfig;
use h2::Http2;
use loadbench_model::Stats;
use loadbench_plan::{LoadShape, Plan, Schedule, Stop};
use pacer::Pacing;
pub use pulse::{FlowPulse, Pulse, PulseSlot};
use start::StartLine;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use tls::TlsClient;
use worker::Worker;

/// Why a run could not start. Failures *during* a run are counted, never returned here.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Preflight: the target refused the connection, so nothing listens at this address.
    #[error("nothing is listening on {0} (connection refused): start the target or fix the URL")]
    NothingListening(SocketAddr),
    /// Preflight: no local port was free (`EADDRNOTAVAIL`): the ephemeral ports are used up.
    #[error("cannot connect to {0}: no free local port (ephemeral ports exhausted, often by connections in TIME_WAIT after a --no-keepalive run): wait a minute, keep connections alive, widen net.ipv4.ip_local_port_range, or for a loopback target spread the connections over more source addresses with --source-addrs 127.0.0.2-127.0.0.254")]
    NoLocalPort(SocketAddr),
    /// Preflight: connecting failed for another reason (timeout, network unreachable, …).
    #[error("cannot connect to {0} ({1}): check that the target is up and reachable")]
    Unreachable(SocketAddr, std::io::Error),
    /// Preflight: a `--source-addrs` address cannot be used toward the target.
    #[error("--source-addrs {local} cannot be used to reach {target} ({why}): give addresses of this host that can reach the target (for a loopback target, 127.0.0.0/8 or ::1), or leave --source-addrs out")]
    SourceAddr {
        /// The address that failed.
        local: IpAddr,
        /// The target.
        target: SocketAddr,
        /// Why it cannot be used.
        why: String,
    },
    /// Preflight: nothing accepts connections on the `--unix-socket` path.
    #[error("cannot connect to the Unix socket {0} ({1}): start the target or fix --unix-socket")]
    UnixSocket(String, std::io::Error),
    /// The TLS setup is unusable (a bad PEM file or server name), or the preflight handshake
    /// failed (an untrusted certificate names `--cacert` and `--insecure`): one line.
    #[error("{0}")]
    Tls(String),
    /// `--http2`: the server does not speak HTTP/2 here (no h2 through ALPN, or no SETTINGS
    /// answer to the h2c preface), or a request cannot be sent over it: one line.
    #[error("{0}")]
    Http2(String),
    /// `ws://`: the server did not answer the WebSocket upgrade with 101 (and the right
    /// `Sec-WebSocket-Accept`): one line naming the fix.
    #[error("{0}")]
    WebSocket(String),
    /// The open-file limit is too low for the connections and could not be raised.
    #[error("{}", fd_limit_message(*connections, *needed, *soft, *hard))]
    FdLimit {
        /// The user's `-c`.
        connections: u64,
        /// File descriptors needed: the connections plus 64 to spare.
        needed: u64,
        /// The soft limit in place (the engine raises it to the hard limit when that is enough).
        soft: u64,
        /// The hard limit: only root can raise it (the engine does, when it runs as root).
        hard: u64,
    },
    /// A worker could not be set up, or its event loop failed (epoll, timer, socket).
    #[error("the engine could not start a worker: {0}")]
    Io(#[from] std::io::Error),
}

/// Timeouts and the housekeeping period, shared by all workers.
#[derive(Debug, Clone, Copy)]
pub struct WorkerLimits {
    /// Per request: no complete response within it counts as `read_timeout`.
    pub timeout: Duration,
    /// Per connection attempt: not established within it counts as `connect_timeout`.
    pub connect_timeout: Duration,
    /// How often a worker times out requests, closes seconds and publishes progress.
    pub tick: Duration,
}

/// What a worker publishes for live views: its latest [`Pulse`], the one snapshot every view
/// (the dashboard, the progress bar, the live page, the xxl-job agent's log) reads.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pulse: PulseSlot,
}

/// What a progress display may read while the run goes on.
#[derive(Debug)]
pub struct Live {
    workers: Vec<LiveCounters>,
    stop: Arc<AtomicBool>,
}

impl Live {
    /// Requests completed and failed so far in the measured window, all workers together, as
    /// of their last pulse (the counters of [`Live::pulse`], without its seconds).
    pub fn snapshot(&self) -> (u64, u64) {
        let p = self.pulse(usize::MAX);
        (p.requests, p.errors.total())
    }

    /// Everything the workers had published at their last pulse, added up; the series holds
    /// the seconds from `seen` on that every worker has closed (a live view keeps the earlier
    /// ones), each merged exactly as the final result merges it.
    pub fn pulse(&self, seen: usize) -> Pulse {
        let slots: Vec<&PulseSlot> = self.workers.iter().map(|w| &w.pulse).collect();
        PulseSlot::merge(&slots, seen)
    }

    /// Asks every worker to stop at its next loop turn (within a tick).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The stop switch itself, e.g. for a signal handler to raise.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Whether the stop switch has been raised (by [`Live::stop`] or its flag).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// What a run measured.
#[derive(Debug)]
pub struct Outcome {
    /// The measurement, all workers merged.
    pub stats: Stats,
    /// Wall clock at the start of the measured window (after warm-up).
    pub started_at: SystemTime,
    /// Wall clock when every worker had stopped and the results were merged.
    pub ended_at: SystemTime,
    /// True when the stop switch ended the run before its planned end.
    pub interrupted: bool,
    /// Per-request values: the places (requests, a flow's iterations) this run took from the
    /// sequence (0 without values).
    pub places: u64,
}

/// One run of a plan.
pub struct Engine {
    plan: Plan,
    live: Arc<Live>,
    /// `https://`: the TLS client built from the plan, or why it could not be.
    tls: Option<Result<TlsClient, String>>,
    /// How long the preflight's connect took: a round trip, which sizes the open model's
    /// initial pool.
    rtt: OnceLock<Duration>,
    /// `--http2`: the requests encoded for HTTP/2, or why they could not be.
    h2: Option<Result<h2::H2Setup, String>>,
    /// `ws://`: the upgrade request and the message.
    ws: Option<ws::WsSetup>,
    /// `--script`: each worker's request bytes and target address (see [`Engine::with_scripts`]).
    scripted: Vec<(Vec<u8>, bool, Option<SocketAddr>)>,
    /// `--script`: each worker's per-request hooks, taken by the run that starts the workers.
    hooks: std::sync::Mutex<Vec<Option<Box<dyn script::ScriptHooks>>>>,
}

impl Engine {
    /// An engine for `plan`, with a stop switch of its own (see [`Engine::live`]).
    pub fn new(plan: Plan) -> Self {
        Self::with_stop(plan, Arc::new(AtomicBool::new(false)))
    }

    /// An engine that also stops when `stop` is raised (e.g. by a signal handler).
    pub fn with_stop(plan: Plan, stop: Arc<AtomicBool>) -> Self {
        let workers = (0..plan.threads).map(|_| LiveCounters::default()).collect();
        let live = Arc::new(Live { workers, stop });
        let tls = plan.tls.as_ref().map(TlsClient::new);
        let h2 = plan.http2.map(|streams| h2::H2Setup::new(&plan, streams));
        let ws = plan.target.websocket.then(|| ws::WsSetup::new(&plan));
        Engine {
            plan,
            live,
            tls,
            rtt: OnceLock::new(),
            h2,
            ws,
            scripted: Vec::new(),
            hooks: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// `--script`: worker `i` writes `scripts[i]`'s request (or has its hooks build each one)
    /// and connects to its address, if it gives one. Give one per worker thread of the plan;
    /// the hooks go to the next [`Engine::run`].
    pub fn with_scripts(mut self, scripts: Vec<script::WorkerScript>) -> Self {
        let mut hooks = Vec::with_capacity(scripts.len());
        for s in scripts {
            self.scripted.push((s.request, s.head, s.addr));
            hooks.push(s.hooks);
        }
        self.hooks = std::sync::Mutex::new(hooks);
        self
    }

    /// Progress counters and the stop switch, for the caller's other threads.
    pub fn live(&self) -> Arc<Live> {
        Arc::clone(&self.live)
    }

    /// Checks that enough file descriptors exist, that every source address can be used (on
    /// this host, and loopback only toward a loopback target), and that the target accepts a
    /// connection from the first source address, as the load's first connection will be made.
    pub fn preflight(&self) -> Result<(), EngineError> {
        raise_fd_limit(u64::from(self.plan.connections) + u64::from(self.plan.ws_idle))?;
        let tls = self.tls_client()?;
        if let Some(path) = &self.plan.unix_socket {
            return std::os::unix::net::UnixStream::connect(path)
                .map(drop)
                .map_err(|e| EngineError::UnixSocket(path.display().to_string(), e));
        }
        let addr = self.plan.target.addr;
        let sources = &self.plan.source_addrs;
        check_sources(sources, addr)?;
        let first = sources.first().copied();
        let began = Instant::now();
        if let Some((config, name)) = tls.and_then(TlsClient::quic) {
            self.h2_setup()?;
            let timeout = self.plan.connect_timeout;
            h3::probe(config, name, addr, timeout).map_err(EngineError::Http2)?;
            let _ = self.rtt.set(began.elapsed());
            return Ok(());
        }
        if let Err(e) = transport::probe(addr, first, self.plan.connect_timeout) {
            return Err(preflight_error(addr, e));
        }
        let _ = self.rtt.set(began.elapsed());
        let timeout = self.plan.connect_timeout;
        match (tls, &self.ws) {
            (Some(t), Some(setup)) => {
                let session = t.probe_stream(addr, timeout).map_err(EngineError::Tls)?;
                ws::probe(session, setup).map_err(EngineError::WebSocket)
            }
            (Some(t), None) => t.probe(addr, timeout).map_err(EngineError::Tls),
            (None, _) if self.h2.is_some() => self.probe_h2c(addr),
            (None, Some(setup)) => self.probe_ws(addr, setup),
            (None, None) => Ok(()),
        }
    }

    /// `ws://`: the server must answer one upgrade with 101 and the right accept key (over
    /// TLS, `wss://`, after the handshake: see [`Engine::preflight`]).
    fn probe_ws(&self, addr: SocketAddr, setup: &ws::WsSetup) -> Result<(), EngineError> {
        let timeout = self.plan.connect_timeout;
        let sock = std::net::TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| preflight_error(addr, e))?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        ws::probe(sock, setup).map_err(EngineError::WebSocket)
    }

    /// `--http2` over cleartext: the server must answer the preface with SETTINGS.
    fn probe_h2c(&self, addr: SocketAddr) -> Result<(), EngineError> {
        self.h2_setup()?;
        let timeout = self.plan.connect_timeout;
        let sock = std::net::TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| preflight_error(addr, e))?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        h2::probe_h2c(sock, &addr.to_string()).map_err(EngineError::Http2)
    }

    /// The run's HTTP/2 requests (`None` for HTTP/1.1), or why they could not be encoded.
    fn h2_setup(&self) -> Result<Option<&h2::H2Setup>, EngineError> {
        match &self.h2 {
            None => Ok(None),
            Some(Ok(s)) => Ok(Some(s)),
            Some(Err(e)) => Err(EngineError::Http2(e.clone())),
        }
    }

    /// The run's TLS client (`None` for plain HTTP), or why it could not be built.
    fn tls_client(&self) -> Result<Option<&TlsClient>, EngineError> {
        match &self.tls {
            None => Ok(None),
            Some(Ok(t)) => Ok(Some(t)),
            Some(Err(e)) => Err(EngineError::Tls(e.clone())),
        }
    }

    /// Runs the plan to its end (or until [`Live::stop`]) and merges the workers' results.
    pub fn run(&self) -> Result<Outcome, EngineError> {
        let plan = &self.plan;
        let start = Instant::now();
        let wall_start = SystemTime::now();
        let t0 = start + plan.warmup;
        let deadline = plan.stop.duration().map(|d| t0 + d);
        let paced = match &plan.load {
            LoadShape::Open { schedule, .. } => Some(schedule.with_lead(plan.warmup)),
            LoadShape::Closed { .. } | LoadShape::FindMax { .. } => None,
        };
        let tls = self.tls_client()?;
        let h2 = self.h2_setup()?;
        let ws = self.ws.as_ref();
        // Per-request values: one sequence counter for all workers of this process.
        let first = plan.values.as_ref().map_or(0, |v| v.spec.first);
        let counter = AtomicU64::new(first);
        let paced_at = paced.as_ref().map(|s| (s, start));
        let configs = self.worker_configs(t0, deadline, paced_at, tls, &counter);
        let stop: &AtomicBool = &self.live.stop;
        // Open model: every worker opens its initial pool first; then all start together.
        let line = paced
            .is_some()
            .then(|| StartLine::new(configs.len(), start));
        let line = line.as_ref();
        let results: Vec<std::io::Result<Stats>> = std::thread::scope(|scope| {
            let handles: Vec<_> = configs
                .into_iter()
                .zip(&self.live.workers)
                .map(|(cfg, live)| {
                    scope.spawn(move || run_protocol(cfg, (h2, ws), line, stop, live))
                })
                .collect();
            if let Some(line) = line {
                line.release();
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("worker thread panicked"))
                .collect()
        });
        let delayed = line.map_or(Duration::ZERO, StartLine::delay);
        // The first worker's stats are the start: merged into an empty one, each of its
        // histograms would be copied whole (about 264 KiB each) just to be dropped.
        let mut results = results.into_iter();
        let mut stats = results.next().transpose()?.unwrap_or_default();
        for r in results {
            stats.merge(&r?);
        }
        if let LoadShape::Open { schedule, .. } = &plan.load {
            set_targets(&mut stats, schedule, plan.stop);
        }
        label_endpoints(&mut stats, plan);
        Ok(Outcome {
            stats,
            started_at: wall_start + delayed + plan.warmup,
            ended_at: SystemTime::now(),
            interrupted: self.live.stopped(),
            places: counter.load(Ordering::Relaxed).saturating_sub(first),
        })
    }

    fn worker_configs<'a>(
        &'a self,
        t0: Instant,
        deadline: Option<Instant>,
        paced: Option<(&'a Schedule, Instant)>,
        tls: Option<&'a TlsClient>,
        counter: &'a AtomicU64,
    ) -> Vec<WorkerConfig<'a>> {
        let plan = &self.plan;
        let threads = plan.threads.max(1) as usize;
        let conns = split(u64::from(plan.connections), threads);
        let budgets: Vec<Option<u64>> = match plan.stop {
            _ if paced.is_some() => vec![None; threads],
            Stop::Requests(n) => split_by(n, &conns).into_iter().map(Some).collect(),
            Stop::Duration(_) => vec![None; threads],
        };
        let pool = self.pool_plan(threads, &conns);
        let pacing = |i: usize, max: u64| {
            paced.map(|(schedule, origin)| Pacing {
                schedule,
                origin,
                first: i as u64,
                stride: threads as u64,
                max_connections: max as usize,
                window: pool.window,
                initial: pool.initial[i] as usize,
                connect_limit: pool.connect_limit[i].max(1) as usize,
                end: deadline,
                batch: u64::from(pool.batch),
            })
        };
        let limits = WorkerLimits {
            timeout: plan.timeout,
            connect_timeout: plan.connect_timeout,
            tick: (plan.timeout.min(plan.connect_timeout) / 4)
                .clamp(Duration::from_millis(1), Duration::from_millis(100)),
        };
        let mut hooks = std::mem::take(&mut *self.hooks.lock().unwrap_or_else(|e| e.into_inner()));
        hooks.resize_with(threads, || None);
        let scripted = |i: usize| self.scripted.get(i);
        conns
            .into_iter()
            .zip(budgets)
            .zip(hooks)
            .enumerate()
            .map(|(i, ((c, budget), script))| WorkerConfig {
                addr: scripted(i).and_then(|s| s.2).unwrap_or(plan.target.addr),
                unix: plan.unix_socket.as_deref(),
                tls,
                source_addrs: &plan.source_addrs,
                first_source: i,
                request: scripted(i).map_or(&plan.request.bytes, |s| &s.0),
                head: scripted(i).map_or(plan.request.head, |s| s.1),
                script,
                mix: &plan.mix,
                values: plan.values.as_ref().map(|v| (v, counter)),
                flow: plan.flow.as_ref(),
                keepalive: plan.keepalive,
                pipeline: plan.pipeline,
                connections: if paced.is_some() { 0 } else { c as usize },
                ws_idle: split(u64::from(plan.ws_idle), threads)[i] as usize,
                budget,
                t0,
                deadline,
                limits,
                pacing: pacing(i, c),
            })
            .collect()
    }
}

/// One worker thread with the run's protocol: HTTP/2 (`--http2`), WebSocket (`ws://`) or
/// HTTP/1.1.
fn run_protocol<'a>(
    cfg: WorkerConfig<'a>,
    (h2, ws): (Option<&'a h2::H2Setup>, Option<&'a ws::WsSetup>),
    line: Option<&StartLine>,
    stop: &AtomicBool,
    live: &LiveCounters,
) -> std::io::Result<Stats> {
    match (h2, ws) {
        (Some(setup), _) if setup.http3 => {
            let http3 = |cfg: &_, now| Http2::<h3::conn::H3Conn>::new(cfg, setup, now);
            run_worker(Worker::new(cfg, http3), line, stop, live)
        }
        (Some(setup), _) => {
            let http2 = |cfg: &_, now| Http2::<h2::conn::H2Conn>::new(cfg, setup, now);
            run_worker(Worker::new(cfg, http2), line, stop, live)
        }
        (None, Some(setup)) => {
            let websocket = |cfg: &_, now| ws::WebSocket::new(cfg, setup, now);
            run_worker(Worker::new(cfg, websocket), line, stop, live)
        }
        (None, None) => run_worker(Worker::new(cfg, Http1::new), line, stop, live),
    }
}

/// One worker thread: builds its worker, opens its pool at the start line (open model), runs.
fn run_worker<'a, P: worker::Protocol<'a>>(
    worker: std::io::Result<Worker<'a, P>>,
    line: Option<&StartLine>,
    stop: &AtomicBool,
    live: &LiveCounters,
) -> std::io::Result<Stats> {
    match line {
        Some(line) => line.worker(worker)?.run(stop, live),
        None => worker?.run(stop, live),
    }
}

/// The open model's pool, per worker: the send window, the initial pool and the limit on
/// connects in progress.
struct PoolPlan {
    window: Duration,
    batch: u32,
    initial: Vec<u64>,
    connect_limit: Vec<u64>,
}

/// Connections each worker opens before the schedule starts at least (when the rate asks
/// for fewer): a send batch's worth (`--send-batch`'s default), so the requests that leave
/// together find one each instead of waiting for each other.
const MIN_INITIAL_POOL: u64 = loadbench_plan::DEFAULT_SEND_BATCH as u64;

/// The expected latency that sizes the initial pool when the preflight's round trip is
/// shorter (or unknown): rate × this is the concurrency the first requests need.
const MIN_EXPECTED_LATENCY: Duration = Duration::from_millis(1);

impl Engine {
    /// `-c` when given; else the rate at the start × the expected latency (the preflight's
    /// round trip, at least 1 ms), at least [`MIN_INITIAL_POOL`] a worker; never above a
    /// worker's cap (`caps`).
    fn pool_plan(&self, threads: usize, caps: &[u64]) -> PoolPlan {
        let pacing = &self.plan.pacing;
        let LoadShape::Open { schedule, .. } = &self.plan.load else {
            return PoolPlan {
                window: Duration::ZERO,
                batch: 0,
                initial: vec![0; threads],
                connect_limit: vec![0; threads],
            };
        };
        let initial = match pacing.initial_connections {
            Some(c) => split(u64::from(c), threads),
            None => {
                let latency = self.rtt.get().copied().unwrap_or_default();
                let latency = latency.max(MIN_EXPECTED_LATENCY).as_secs_f64();
                let need = (schedule.rate_at(0.0) * latency).ceil() as u64;
                // HTTP/2: a connection takes `--streams` requests at once.
                let (per_conn, least) = match self.plan.http2 {
                    Some(streams) => (u64::from(streams.max(1)), 1),
                    None => (1, MIN_INITIAL_POOL),
                };
                split(need.div_ceil(per_conn), threads)
                    .into_iter()
                    .map(|n| n.max(least))
                    .collect()
            }
        };
        PoolPlan {
            window: pacing.send_window,
            batch: pacing.send_batch,
            initial: initial
                .iter()
                .zip(caps)
                .map(|(n, cap)| *n.min(cap))
                .collect(),
            connect_limit: split(u64::from(pacing.connect_limit), threads),
        }
    }
}

/// Names each request of a mix in the statistics: its method, URL and weight (the workers
/// count by index only).
fn label_endpoints(stats: &mut Stats, plan: &Plan) {
    for (e, m) in stats.endpoints.iter_mut().zip(&plan.mix) {
        e.method.clone_from(&m.request.method);
        e.url.clone_from(&m.url);
        e.weight = m.weight;
    }
    if let (Some(f), Some(s)) = (&plan.flow, stats.flow.as_mut()) {
        s.name.clone_from(&f.name);
        s.steps = f.steps.len() as u32;
        for (e, step) in stats.endpoints.iter_mut().zip(&f.steps) {
            e.name = Some(step.name.clone());
        }
    }
}

/// Every distinct source address can be bound here, and is loopback only for a loopback
/// target (the kernel cannot route from 127.0.0.0/8 to another host).
fn check_sources(sources: &[IpAddr], target: SocketAddr) -> Result<(), EngineError> {
    let refuse = |local, why: String| EngineError::SourceAddr { local, target, why };
    let mut seen = std::collections::HashSet::new();
    for &ip in sources.iter().filter(|ip| seen.insert(**ip)) {
        if ip.is_loopback() && !target.ip().is_loopback() {
            return Err(refuse(
                ip,
                "a loopback address cannot reach another host".into(),
            ));
        }
        if let Err(e) = transport::bind_probe(ip) {
            return Err(refuse(ip, format!("not an address of this host: {e}")));
        }
    }
    Ok(())
}

/// Why the preflight connect failed, named for the user.
fn preflight_error(addr: SocketAddr, e: std::io::Error) -> EngineError {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => EngineError::NothingListening(addr),
        std::io::ErrorKind::AddrNotAvailable => EngineError::NoLocalPort(addr),
        _ => EngineError::Unreachable(addr, e),
    }
}

/// Open model: what the schedule called for, in all and in each second of the window (the
/// warm-up lead is not part of `schedule`, so its time 0 is the window's start).
fn set_targets(stats: &mut Stats, schedule: &Schedule, stop: Stop) {
    let end = match stop {
        Stop::Duration(d) => d.as_secs_f64(),
        Stop::Requests(_) => schedule.duration().as_secs_f64(),
    };
    let window = end.min(stats.elapsed_secs().max(0.0));
    // Request k is due when the scheduled count first exceeds k, so the requests due in
    // [a, b) are those with ceil(C(a)) <= k < ceil(C(b)).
    let due_before = |t: f64| (schedule.count_until(t) - 1e-9).ceil().max(0.0) as u64;
    stats.scheduled = Some(due_before(window));
    for p in &mut stats.series.0 {
        let s = f64::from(p.second);
        let upto = (s + 1.0).min(window);
        p.target = Some(due_before(upto) - due_before(s));
    }
}

/// Splits `n` into `parts` near-equal shares (the first ones get the remainder).
fn split(n: u64, parts: usize) -> Vec<u64> {
    let p = parts as u64;
    (0..p).map(|i| n / p + u64::from(i < n % p)).collect()
}

/// Splits `n` in proportion to `weights`, exactly: the floor of each share, then one more to
/// the first ones until the remainder is gone.
fn split_by(n: u64, weights: &[u64]) -> Vec<u64> {
    let total = u128::from(weights.iter().sum::<u64>().max(1));
    let mut shares: Vec<u64> = weights
        .iter()
        .map(|&w| (u128::from(n) * u128::from(w) / total) as u64)
        .collect();
    let left = n - shares.iter().sum::<u64>();
    for s in shares.iter_mut().take(left as usize) {
        *s += 1;
    }
    shares
}

fn raise_fd_limit(connections: u64) -> Result<(), EngineError> {
    let needed = connections + 64;
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap_or((1024, 1024));
    if needed <= soft {
        return Ok(());
    }
    if needed <= hard && rlimit::setrlimit(rlimit::Resource::NOFILE, hard, hard).is_ok() {
        return Ok(());
    }
    // Above the hard limit: root (CAP_SYS_RESOURCE) may raise it, up to fs.nr_open; 100,000
    // connections then need no `ulimit -Hn` first. Anyone else gets the refusal below.
    if needed > hard && rlimit::setrlimit(rlimit::Resource::NOFILE, needed, needed).is_ok() {
        return Ok(());
    }
    Err(EngineError::FdLimit {
        connections,
        needed,
        soft,
        hard,
    })
}

/// The refusal with the user's numbers and what can be done: `ulimit -n` up to the hard limit,
/// anything above it only as root; or fewer connections.
fn fd_limit_message(connections: u64, needed: u64, soft: u64, hard: u64) -> String {
    let fewer = format!("use -c {} or fewer", soft.max(hard).saturating_sub(64));
    let fix = if needed <= hard {
        format!("raise the soft limit with `ulimit -n {hard}` (the hard limit), or {fewer}")
    } else {
        format!("{fewer}, or raise the hard limit (run loadbench as root, which raises it itself, or `ulimit -Hn {}` in a root shell, or nofile in /etc/security/limits.conf)", needed.next_power_of_two())
    };
    format!("-c {connections} needs about {needed} file descriptors but the open-file limit is {soft} (hard limit {hard}): {fix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_exhaustion_is_named_in_the_preflight() {
        let addr: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let e = preflight_error(addr, std::io::ErrorKind::AddrNotAvailable.into());
        let text = e.to_string();
        assert!(matches!(e, EngineError::NoLocalPort(_)), "{text}");
        assert!(text.contains("ip_local_port_range"), "{text}");
        let refused = preflight_error(addr, std::io::ErrorKind::ConnectionRefused.into());
        assert!(matches!(refused, EngineError::NothingListening(_)));
    }

    #[test]
    fn splits_are_exact() {
        assert_eq!(split(5, 2), vec![3, 2]);
        assert_eq!(split(2, 2), vec![1, 1]);
        let s = split_by(100, &[2, 1]);
        assert_eq!(s.iter().sum::<u64>(), 100);
        assert_eq!(s, vec![67, 33]);
        assert_eq!(split_by(7, &[1, 1, 1]).iter().sum::<u64>(), 7);
    }

    #[test]
    fn fd_limit_message_has_the_users_numbers_and_a_possible_fix() {
        let m = fd_limit_message(30000, 30064, 256, 1024);
        assert!(m.starts_with("-c 30000 needs about 30064"), "{m}");
        assert!(m.contains("limit is 256 (hard limit 1024)"), "{m}");
        assert!(m.contains("use -c 960 or fewer"), "{m}");
        assert!(m.contains("as root"), "{m}");
        assert!(!m.contains("ulimit -n 32768"), "{m}");
        let m = fd_limit_message(500, 564, 256, 1024);
        assert!(m.contains("`ulimit -n 1024`"), "{m}");
    }
}
