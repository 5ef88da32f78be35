//! What one worker's connections share (`Ctx`: the requests, the clock window, the recorder,
//! the open model's pool counters) and what a worker is given to run (`WorkerConfig`). Its own
//! module so the connections (`conn`, `h2`) and the worker loop (`worker`) all read it without
//! importing each other.

use crate::growth::Growth;
use crate::mix::Mix;
use crate::pacer::{Pacer, Pacing};
use crate::recorder::Recorder;
use crate::tls::TlsClient;
use crate::transport::{Dest, Sources};
use crate::WorkerLimits;
use loadbench_plan::{Draw, Flow, Source, Values};
use mio::Registry;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

/// Size of the worker's one read buffer, shared by all its connections: responses are parsed
/// as they stream in, so no connection keeps a buffer of its own.
const READ_BUF: usize = 64 * 1024;

/// What the connections of one worker share: the request, the clock window, the recorder.
pub struct Ctx<'a> {
    /// The worker's poll registry, where connections register their sockets.
    pub registry: Registry,
    /// Where connections go: the target's socket address, or a Unix socket.
    pub dest: Dest<'a>,
    /// `https://`: this worker's TLS client (its own session cache).
    pub tls: Option<TlsClient>,
    /// Where new connections bind before connecting (`--source-addrs`).
    pub sources: Sources<'a>,
    /// The rendered request, written as is by every connection.
    pub request: &'a [u8],
    /// The request is HEAD: responses carry no body.
    pub head: bool,
    /// A request mix: which request each send writes (`None`: always `request`).
    pub mix: Option<Mix<'a>>,
    /// Per-request values: requests assembled per request (`None`: all fixed bytes).
    pub values: Option<Source<'a>>,
    /// A flow: each connection is a virtual user running its steps (`None`: no flow).
    pub flow: Option<&'a Flow>,
    /// A flow's answers, split and de-chunked (the worker's one buffer).
    pub answer_body: Vec<u8>,
    /// `--script` with per-request hooks: the worker's script state (`None`: no per-request
    /// call, the request is fixed bytes).
    pub script: Option<Box<dyn crate::script::ScriptHooks>>,
    /// `--script`: its `request()` builds each request.
    pub script_builds: bool,
    /// `--script`: its `response()` reads each answer (each connection keeps its answer).
    pub script_reads: bool,
    /// `--script`: its `delay()` says how long to wait before each request.
    pub script_delays: bool,
    /// Open model, a flow: iterations waiting for their next step (due after the last step's
    /// answer and its think time), in the order they became due; each takes a free
    /// connection before the next scheduled iteration.
    pub(crate) flow_ready: std::collections::VecDeque<(Instant, Box<crate::vu::Vu>)>,
    /// Connections are reused; without keep-alive each request opens one.
    pub keepalive: bool,
    /// The worker's one read buffer, shared by its connections.
    pub buf: Box<[u8]>,
    /// The worker's measurements.
    pub recorder: Recorder,
    /// Connections whose request failed, to restart on the next loop turn (closed model).
    pub retry: Vec<usize>,
    /// Closed model: connections waiting out a connect backoff (see `Conn::wake_at`).
    pub backoff: Vec<usize>,
    /// Open model: requests are paced, and a connection whose request ended waits in `idle`.
    pub open: bool,
    /// Open model: connections free for the next due request, by index.
    pub idle: Vec<usize>,
    /// Measured requests that finished after the deadline but before the worker noticed it:
    /// outside the window, so counted as abandoned like those still in flight.
    past_deadline: u64,
    /// Requests left to claim in the measured window (`None`: until the deadline).
    budget: Option<u64>,
    deadline: Option<Instant>,
    stopping: bool,
    /// When the last poll returned: the kernel had finished every connect it reported by then.
    pub polled_at: Instant,
    /// Open model, plain HTTP/1.1 over TCP: responses carry the kernel's receive stamp, so
    /// the worker may read them late (at its next send wake-up, see `Worker::wait`) and still
    /// time each from when it arrived.
    pub stamped: bool,
    /// Connects (and TLS handshakes) in progress.
    pub connecting: usize,
    /// Open model: spare connects in progress (each will serve a waiting request).
    pub spares: usize,
    /// The most connects in progress at once.
    connects_peak: usize,
    /// Connects begun in the whole run.
    connects: u64,
    /// Open model: when a waiting request may grow the pool (fed each connect's time).
    pub growth: Growth,
    /// Open model: connects begun before `first_second_end` (the initial pool included).
    first_second: u64,
    /// Open model: the end of the schedule's first second, once the start line fixed it.
    first_second_end: Option<Instant>,
    /// Open model: the initial pool is opening (its connects are not in the series).
    opening: bool,
}

impl<'a> Ctx<'a> {
    /// The bytes of request `endpoint` (of the mix; without one, the one request).
    #[inline]
    pub fn request_of(&self, endpoint: u16) -> &'a [u8] {
        match &self.mix {
            None => self.request,
            Some(m) => m.bytes(endpoint),
        }
    }

    /// Whether request `endpoint` is a HEAD (of the mix; without one, the one request).
    #[inline]
    pub fn head_of(&self, endpoint: u16) -> bool {
        match &self.mix {
            None => self.head,
            Some(m) => m.head(endpoint),
        }
    }

    /// Which request of the mix the next send writes (0 without a mix).
    #[inline]
    pub fn pick(&mut self) -> u16 {
        self.mix.as_mut().map_or(0, Mix::pick)
    }

    /// A claimed request's values: its draw, when request `endpoint` is assembled per request
    /// (`None`: it is fixed bytes, written from [`Ctx::request_of`]).
    #[inline]
    pub fn draw(&mut self, endpoint: u16) -> Option<Draw> {
        let v = self.values.as_mut()?;
        v.templated(endpoint).then(|| v.draw())
    }

    /// Assembles request `endpoint` for `draw` on connection `conn` at the end of `out`.
    #[inline]
    pub fn assemble(&mut self, endpoint: u16, draw: Draw, conn: usize, out: &mut Vec<u8>) {
        if let Some(v) = self.values.as_mut() {
            v.assemble(endpoint, draw, conn as u32, &[], out);
        }
    }

    /// Open model, a flow: an iteration's next step is due at `due` (kept in due order).
    pub(crate) fn flow_wait(&mut self, due: Instant, vu: Box<crate::vu::Vu>) {
        let at = self.flow_ready.partition_point(|(d, _)| *d <= due);
        self.flow_ready.insert(at, (due, vu));
    }

    /// Open model, a flow: when the first waiting step is due.
    #[inline]
    pub(crate) fn flow_next(&self) -> Option<Instant> {
        self.flow_ready.front().map(|(d, _)| *d)
    }

    /// Open model, a flow: the waiting steps due by `now`.
    pub(crate) fn flow_due(&self, now: Instant) -> u64 {
        self.flow_ready
            .iter()
            .take_while(|(d, _)| *d <= now)
            .count() as u64
    }

    /// `--script`: the script asked its thread to stop (`thread:stop()`): no request is
    /// claimed from now on.
    #[cold]
    pub fn script_stop(&mut self) {
        self.stopping = true;
    }

    /// `--script` pipelines `n` more requests with the one claimed: they take budget too
    /// (as much as is left).
    #[cold]
    pub fn claim_more(&mut self, measured: bool, n: u64) {
        if let (true, Some(b)) = (measured, self.budget.as_mut()) {
            *b = b.saturating_sub(n);
        }
    }

    /// Claims the next request, if the run wants one more.
    #[inline]
    pub fn claim(&mut self, now: Instant) -> bool {
        if self.stopping || self.deadline.is_some_and(|d| now >= d) {
            return false;
        }
        if !self.recorder.measuring(now) {
            return true;
        }
        match &mut self.budget {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    /// Whether the outcome of a request at `now` is recorded: it must be measured and inside
    /// the window; a measured one past the deadline is counted as abandoned instead, and
    /// censored at its age when the window ended.
    #[inline]
    pub fn records(&mut self, measured: bool, intended: Instant, now: Instant) -> bool {
        if !measured {
            return false;
        }
        if self.in_window(now) {
            return true;
        }
        self.past_deadline += 1;
        let end = self.deadline.unwrap_or(now);
        self.recorder
            .censor(end.saturating_duration_since(intended));
        false
    }

    /// A connect begins at `at`: one more in progress, counted in its second.
    #[inline]
    pub fn connect_begun(&mut self, at: Instant) {
        self.connecting += 1;
        self.connects += 1;
        self.connects_peak = self.connects_peak.max(self.connecting);
        if self.first_second_end.is_none_or(|end| at < end) {
            self.first_second += 1;
        }
        if !self.opening {
            let end = self.deadline;
            self.recorder.connect_begun(at, end);
        }
    }

    /// Open model: the schedule (`pacer`), the measured window and its end start `by` later
    /// (the start line); the schedule's first second is counted from its new origin.
    pub(crate) fn delay(&mut self, pacer: Option<&mut Pacer<'_>>, by: Duration) {
        if let Some(p) = pacer {
            p.delay(by);
            self.first_second_end = Some(p.pacing().origin + Duration::from_secs(1));
        }
        self.deadline = self.deadline.map(|d| d + by);
        self.recorder.delay(by);
    }

    /// Open model, at the end: every request due before `end` and never sent waited until
    /// `end`; counted so, never dropped.
    pub(crate) fn account_unsent(&mut self, pacer: Option<&mut Pacer<'_>>, end: Instant) {
        let Some(p) = pacer else {
            return;
        };
        // A flow's steps due and not sent waited like scheduled requests.
        for (due, _) in std::mem::take(&mut self.flow_ready) {
            if due < end && self.recorder.measuring(due) {
                self.recorder.waited(end.saturating_duration_since(due));
            }
        }
        // One by one while few; a run far behind its schedule (millions due and unsent at a
        // high rate) is accounted for a block of `BLOCK` at a time, each block at its oldest
        // request's age, so the end of a run costs milliseconds, not seconds.
        const ONE_BY_ONE: u64 = 10_000;
        const BLOCK: u64 = 1024;
        let mut counted = 0u64;
        while let Some(due) = p.due().filter(|&d| d < end) {
            let age = end.saturating_duration_since(due);
            let block = counted >= ONE_BY_ONE && p.peek(BLOCK).is_some_and(|d| d < end);
            if block {
                self.recorder.waited_n(age, BLOCK);
                p.skip(BLOCK);
                counted += BLOCK;
            } else {
                self.recorder.waited(age);
                p.advance();
                counted += 1;
            }
        }
    }

    /// Open model: connects begun in the whole run, the most in progress at once, and those
    /// begun in the schedule's first second.
    pub(crate) fn connects(&self) -> (u64, usize, u64) {
        (self.connects, self.connects_peak, self.first_second)
    }

    /// Open model: the initial pool is opening (`true`) or open; its connects are not in the
    /// per-second series.
    pub(crate) fn set_opening(&mut self, opening: bool) {
        self.opening = opening;
    }

    /// Whether [`Ctx::claim`] at `now` could still give a request (nothing is claimed).
    pub fn wants_more(&self, now: Instant) -> bool {
        let over = self.stopping || self.deadline.is_some_and(|d| now >= d);
        !over && (!self.recorder.measuring(now) || self.budget != Some(0))
    }

    /// Gives back a claimed request that was never processed and will be claimed again
    /// (`measured`: it took budget when claimed).
    pub fn unclaim(&mut self, measured: bool) {
        if let (true, Some(n)) = (measured, self.budget.as_mut()) {
            *n += 1;
        }
    }

    /// The request budget of a count run is spent.
    pub fn budget_spent(&self) -> bool {
        self.budget == Some(0)
    }

    /// Measured requests that finished after the deadline (counted as abandoned); from now on
    /// no request is claimed.
    pub fn stop_claiming(&mut self) -> u64 {
        self.stopping = true;
        self.past_deadline
    }

    /// Whether the worker stopped claiming requests (the run is ending).
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stopping
    }

    /// End of the measured window in timed runs.
    pub fn window_end(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether an outcome at `now` still falls inside the measured window.
    #[inline]
    pub fn in_window(&self, now: Instant) -> bool {
        self.deadline.is_none_or(|d| now < d)
    }
}

/// The instant a kernel receive stamp (`CLOCK_REALTIME` since the epoch) stands for, from one
/// reading of both clocks now; never later than now.
#[inline]
pub(crate) fn arrival(stamp: Duration) -> Instant {
    let now = Instant::now();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.checked_sub(wall.saturating_sub(stamp)).unwrap_or(now)
}

impl<'a> Ctx<'a> {
    /// A worker's context from its configuration; `registry` is its poll's.
    pub(crate) fn new(cfg: &mut WorkerConfig<'a>, registry: Registry, now: Instant) -> Self {
        // The protocol may still say no (`Protocol::stamps_arrivals`).
        let stamped = cfg.pacing.is_some()
            && cfg.unix.is_none()
            && cfg.tls.is_none()
            && cfg.pipeline <= 1
            && cfg.script.is_none()
            && cfg.flow.is_none()
            && std::env::var_os("LOADBENCH_NO_STAMPS").is_none();
        Ctx {
            registry,
            dest: cfg.unix.map_or(Dest::Tcp(cfg.addr), Dest::Unix),
            tls: cfg.tls.map(TlsClient::for_worker),
            sources: Sources::new(cfg.source_addrs, cfg.first_source),
            request: cfg.request,
            head: cfg.head,
            mix: Mix::new(cfg.mix),
            values: cfg
                .values
                .map(|(v, counter)| Source::new(v, counter, cfg.first_source as u32)),
            flow: cfg.flow,
            answer_body: Vec::new(),
            script_builds: cfg.script.as_ref().is_some_and(|s| s.builds_requests()),
            script_reads: cfg.script.as_ref().is_some_and(|s| s.reads_responses()),
            script_delays: cfg.script.as_ref().is_some_and(|s| s.delays()),
            script: cfg.script.take(),
            flow_ready: std::collections::VecDeque::new(),
            keepalive: cfg.keepalive,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            recorder: match cfg.flow {
                Some(f) => Recorder::new(cfg.t0, cfg.pacing.is_some()).with_flow(f.steps.len()),
                None => Recorder::new(cfg.t0, cfg.pacing.is_some()).with_endpoints(cfg.mix.len()),
            }
            .with_window(cfg.pacing.map_or(Duration::ZERO, |p| p.window)),
            retry: Vec::with_capacity(cfg.connections),
            backoff: Vec::with_capacity(cfg.connections),
            open: cfg.pacing.is_some(),
            idle: Vec::new(),
            past_deadline: 0,
            budget: cfg.budget,
            deadline: cfg.deadline,
            stopping: false,
            polled_at: now,
            stamped,
            connecting: 0,
            spares: 0,
            connects_peak: 0,
            connects: 0,
            growth: Growth::new(cfg.pacing.map_or(Duration::ZERO, |p| p.window)),
            first_second: 0,
            first_second_end: None,
            opening: false,
        }
    }
}

/// Everything one worker needs to run.
pub struct WorkerConfig<'a> {
    /// The target's socket address.
    pub addr: SocketAddr,
    /// `--unix-socket`: connect here instead of `addr`.
    pub unix: Option<&'a std::path::Path>,
    /// `https://`: the run's TLS client (each worker takes a copy with its own sessions).
    pub tls: Option<&'a TlsClient>,
    /// Source addresses for new connections, round-robin from index `first_source`.
    pub source_addrs: &'a [IpAddr],
    /// This worker's first source address (its index: workers start apart).
    pub first_source: usize,
    /// The rendered request.
    pub request: &'a [u8],
    /// The request is HEAD: responses carry no body.
    pub head: bool,
    /// A request mix (two requests or more; otherwise empty and `request` is sent).
    pub mix: &'a [loadbench_plan::Endpoint],
    /// Per-request values and the process's sequence counter (shared by the workers).
    pub values: Option<(&'a Values, &'a AtomicU64)>,
    /// A flow: its steps' captures and checks (`mix` holds their requests).
    pub flow: Option<&'a Flow>,
    /// `--script` with per-request hooks: this worker's script state.
    pub script: Option<Box<dyn crate::script::ScriptHooks>>,
    /// Reuse connections between requests.
    pub keepalive: bool,
    /// `--pipeline`: requests each connection keeps in flight (1: one at a time).
    pub pipeline: u16,
    /// Connections to open at the start (closed model).
    pub connections: usize,
    /// `--ws-idle`: idle WebSocket connections this worker holds beside its slots.
    pub ws_idle: usize,
    /// Requests this worker may claim in the measured window (count runs); `None`: no limit.
    pub budget: Option<u64>,
    /// Start of the measured window (the end of the warm-up).
    pub t0: Instant,
    /// End of the measured window in timed runs; `None` in count runs.
    pub deadline: Option<Instant>,
    /// Timeouts and the housekeeping tick.
    pub limits: WorkerLimits,
    /// Open model: this worker's share of the schedule (then `connections` is 0: they are
    /// opened on demand).
    pub pacing: Option<Pacing<'a>>,
}
