//! A worker: one OS thread with its own epoll loop (mio), its connections and its recorder.
//! Nothing is shared with other workers but a stop flag (read) and two progress counters
//! (written a few times a second).

use crate::conn::{least_unanswered, Conn, Phase};
use crate::ctx::{Ctx, WorkerConfig};
use crate::pacer::Pacer;
use crate::{LiveCounters, Pulse, WorkerLimits};
use loadbench_model::{ErrorKind, GeneratorTime, PoolCounts, Stats};
use mio::{Events, Poll, Token};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Connections a closed-model worker begins between two polls at the start.
const START_BATCH: usize = 16;

/// One worker thread's event loop: its poll, connections, context and pacer.
pub struct Worker<'a> {
    poll: Poll,
    conns: Vec<Conn>,
    ctx: Ctx<'a>,
    limits: WorkerLimits,
    pacer: Option<Pacer<'a>>,
    pool: PoolClock,
    /// Open model: the last dispatch left a due request without a connection, so only an
    /// event (a connection freed or connected) can let it go: no timer until then.
    blocked: bool,
    /// Open model: connections opened before the schedule started.
    initial: usize,
    /// Open model, blocked: when the oldest request no connect covers may grow the pool
    /// (`None`: only an event can unblock it).
    grow_at: Option<Instant>,
    /// `--pipeline N`: requests each connection keeps in flight (1: one at a time).
    pipeline: u16,
    /// Open model, pipelined: connections given requests in this send window, to write once
    /// all its due requests are placed.
    queued: Vec<usize>,
    /// When the last [`Pulse`] was published (at most one per [`PULSE_EVERY`]).
    pulsed_at: Option<Instant>,
}

/// How often a worker publishes its [`Pulse`] for the live views: a few times a second,
/// whatever the tick.
const PULSE_EVERY: Duration = Duration::from_millis(100);

/// Open model: how long requests were due while every allowed connection was busy.
#[derive(Default)]
pub(crate) struct PoolClock {
    full_since: Option<Instant>,
    pub(crate) full: Duration,
}

impl PoolClock {
    /// A due request found no free connection at `now`.
    #[inline]
    pub(crate) fn full(&mut self, now: Instant) {
        self.full_since.get_or_insert(now);
    }

    /// Every due request got a connection by `now`.
    #[inline]
    pub(crate) fn free(&mut self, now: Instant) {
        if let Some(since) = self.full_since.take() {
            self.full += now.saturating_duration_since(since);
        }
    }

    /// The time the pool was full until `now`, the current stretch included.
    pub(crate) fn full_until(&self, now: Instant) -> Duration {
        self.full
            + self
                .full_since
                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }
}

/// CPU time this thread has used, µs, from /proc/thread-self/schedstat (nanoseconds on a CPU
/// first); `None` where the kernel does not provide it.
pub(crate) fn thread_cpu_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1_000)
}

pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl crate::start::PoolSteps for Worker<'_> {
    fn begin_connects(&mut self, now: Instant) -> bool {
        self.begin_pool(now)
    }
    fn poll_events(&mut self, events: &mut Events, timeout: Duration) -> io::Result<()> {
        self.poll_once(events, timeout)?;
        self.handle(events);
        Ok(())
    }
    fn set_opening(&mut self, opening: bool) {
        self.ctx.set_opening(opening);
    }
}

impl<'a> Worker<'a> {
    /// Sets up the poll, the connection slots and (open model) the pacer; nothing is sent yet.
    pub fn new(cfg: WorkerConfig<'a>) -> io::Result<Self> {
        let poll = Poll::new()?;
        let now = Instant::now();
        let ctx = Ctx::new(&cfg, poll.registry().try_clone()?, now);
        let conns = (0..cfg.connections)
            .map(|i| Conn::new(Token(i), now).pipelined(cfg.pipeline))
            .collect();
        let pacer = match cfg.pacing {
            Some(p) => Some(Pacer::new(p, poll.registry())?),
            None => None,
        };
        Ok(Worker {
            poll,
            conns,
            ctx,
            limits: cfg.limits,
            pacer,
            pool: PoolClock::default(),
            blocked: false,
            initial: 0,
            grow_at: None,
            pipeline: cfg.pipeline,
            queued: Vec::new(),
            pulsed_at: None,
        })
    }

    /// Open model: opens the initial pool before the schedule starts, at most the connect
    /// limit at once, and waits until each is connected or failed (within the connect
    /// timeout; one still pending then joins the idle ones when it connects).
    pub fn open_pool(&mut self) -> io::Result<()> {
        if self.pacer.is_none() {
            return Ok(());
        }
        let deadline = Instant::now() + self.limits.connect_timeout;
        crate::start::open_until(self, deadline)?;
        self.initial = self.conns.iter().filter(|c| c.is_open()).count();
        Ok(())
    }

    /// The schedule, the measured window and its end all start `by` later: the time the
    /// initial pool took to open (every worker's, so all start together).
    pub fn delay(&mut self, by: Duration) {
        self.ctx.delay(self.pacer.as_mut(), by);
    }

    /// Open model: begins the initial pool's connects (at most the connect limit at once);
    /// whether every one has ended. Counted when a measured request first uses one: without a
    /// warm-up, the window's first requests (they connected themselves before the pool
    /// existed).
    fn begin_pool(&mut self, now: Instant) -> bool {
        let (want, limit) = self.pacer.as_ref().map_or((0, 1), Pacer::initial_pool);
        while self.conns.len() < want && self.ctx.connecting < limit {
            self.add_spare(now, true);
        }
        self.ctx.connecting == 0 && self.conns.len() >= want
    }

    /// Open model: one more connection slot, connecting with no request of its own;
    /// `counted`: its connect time is recorded (see [`Conn::connect_spare`]).
    fn add_spare(&mut self, now: Instant, counted: bool) {
        let i = self.conns.len();
        self.conns
            .push(Conn::new(Token(i), now).pipelined(self.pipeline));
        self.conns[i].connect_spare(&mut self.ctx, now, counted);
    }

    /// Hands each readiness event of the last poll to its connection.
    fn handle(&mut self, events: &Events) {
        self.ctx.polled_at = Instant::now();
        for ev in events.iter() {
            if let Some(c) = self.conns.get_mut(ev.token().0) {
                c.on_event(&mut self.ctx, ev.is_read_closed() || ev.is_error());
            }
        }
    }

    /// Runs until the deadline, the request budget is spent, or `stop` is raised.
    pub fn run(mut self, stop: &AtomicBool, live: &LiveCounters) -> io::Result<Stats> {
        let mut events = Events::with_capacity(1024);
        let mut now = Instant::now();
        let (started, cpu0) = (now, thread_cpu_us());
        // The closed model's connections, started a batch at a time (the open model's pool is
        // open already, its connections idle until `dispatch` gives them a due request).
        let closed = if self.pacer.is_some() {
            0
        } else {
            self.conns.len()
        };
        let mut unstarted = 0..closed;
        let mut next_tick = now + self.limits.tick;
        let mut retry_work = Vec::with_capacity(self.conns.len());
        loop {
            let starting = self.start_some(&mut unstarted);
            self.dispatch();
            let wait = if starting {
                Duration::ZERO
            } else {
                self.wait(now, next_tick)
            };
            self.poll_once(&mut events, wait)?;
            self.handle(&events);
            // Every record uses a clock read taken when it happens, in order, so each second
            // of the series gets exactly what happened in it.
            now = Instant::now();
            std::mem::swap(&mut self.ctx.retry, &mut retry_work);
            for i in retry_work.drain(..) {
                self.conns[i].begin(&mut self.ctx, now);
            }
            if !self.ctx.backoff.is_empty() {
                self.wake_backed_off(now);
            }
            if now >= next_tick {
                self.housekeeping(now, live);
                next_tick = now + self.limits.tick;
            }
            if stop.load(Ordering::Relaxed) || self.finished(now) {
                break;
            }
        }
        self.pool.free(now);
        let pool_full = self.pool.full;
        let mut stats = self.finish(now, live);
        stats.generator = GeneratorTime {
            worker_us: micros(now.saturating_duration_since(started)),
            cpu_us: cpu0
                .zip(thread_cpu_us())
                .map_or(0, |(a, b)| b.saturating_sub(a)),
            pool_full_us: micros(pool_full),
        };
        Ok(stats)
    }

    /// Closed model: begins the next few of the connections not started yet, so the poll
    /// between batches sees each connect complete soon after the kernel finished it (issuing
    /// hundreds of connects before the first poll would add that whole loop to every connect
    /// time). Returns whether some are still to start.
    fn start_some(&mut self, unstarted: &mut std::ops::Range<usize>) -> bool {
        let end = (unstarted.start + START_BATCH).min(unstarted.end);
        for c in &mut self.conns[unstarted.start..end] {
            c.begin(&mut self.ctx, Instant::now());
        }
        unstarted.start = end;
        end < unstarted.end
    }

    /// Closed model: connections whose connect backoff has passed connect again.
    #[cold]
    fn wake_backed_off(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.ctx.backoff.len() {
            let c = self.ctx.backoff[i];
            if self.conns[c].wake_at <= now {
                self.ctx.backoff.swap_remove(i);
                self.conns[c].begin(&mut self.ctx, now);
            } else {
                i += 1;
            }
        }
    }

    /// How long to sleep: until the next tick, sooner for retries, a backoff's end or a due
    /// request.
    fn wait(&mut self, now: Instant, next_tick: Instant) -> Duration {
        if !self.ctx.retry.is_empty() {
            return Duration::ZERO;
        }
        let wake = self
            .ctx
            .backoff
            .iter()
            .map(|&i| self.conns[i].wake_at)
            .min();
        let next = wake.map_or(next_tick, |w| w.min(next_tick));
        let limit = next.saturating_duration_since(now);
        let can_send = !self.blocked;
        match (self.pacer.as_mut(), self.grow_at.filter(|_| self.blocked)) {
            (Some(p), Some(at)) => p.wake_at(now, at, limit),
            (Some(p), None) => p.wait(now, limit, can_send),
            (None, _) => limit,
        }
    }

    /// Open model: once the first waiting request's send window has ended, starts every
    /// request due by now, each on an idle connection. With none free the request waits
    /// (its latency still counts from when it was due, and its send lag shows the wait) and
    /// the pool grows for it. Pipelined, a connection with fewer than N unanswered takes it,
    /// and each connection writes the requests it took in one `write` at the end.
    fn dispatch(&mut self) {
        let Some(mut pacer) = self.pacer.take() else {
            return;
        };
        // A fresh clock: events handled since the loop's `now` may have moved the recorder on.
        let now = Instant::now();
        self.blocked = false;
        if pacer.open(now) {
            self.send_due(&mut pacer, now);
            self.write_queued(now);
        }
        self.pacer = Some(pacer);
    }

    fn send_due(&mut self, pacer: &mut Pacer<'a>, now: Instant) {
        while let Some(due) = pacer.due().filter(|&d| d <= now) {
            let Some(i) = self.pipe_conn().or_else(|| self.free_conn(pacer, now)) else {
                self.blocked = true;
                return;
            };
            if self.ctx.stopping || !self.ctx.in_window(due) {
                if !self.conns[i].in_flight() {
                    self.ctx.idle.push(i);
                }
                return;
            }
            pacer.advance();
            self.conns[i].start(&mut self.ctx, due, now);
            if self.conns[i].pipe_first_queued() {
                self.queued.push(i);
            }
        }
        self.pool.free(now);
    }

    /// Open model, `--pipeline N`: a connected slot with fewer than N requests unanswered
    /// for the oldest waiting request: the last idle one when it is open, else the one with
    /// the fewest unanswered (least head-of-line wait). `None` when pipelining is off or
    /// every connected slot holds N: then [`Worker::free_conn`] reconnects or grows the pool.
    fn pipe_conn(&mut self) -> Option<usize> {
        if self.pipeline < 2 {
            return None;
        }
        if let Some(&i) = self.ctx.idle.last() {
            if self.conns[i].pipe_room().is_some() {
                return self.ctx.idle.pop();
            }
        }
        let i = least_unanswered(&self.conns)?;
        if let Some(k) = self.ctx.idle.iter().position(|&j| j == i) {
            self.ctx.idle.swap_remove(k);
        }
        Some(i)
    }

    /// Open model, `--pipeline N`: each connection that took requests in this send window
    /// writes them, in one `write` when the socket takes it.
    fn write_queued(&mut self, now: Instant) {
        for k in 0..self.queued.len() {
            let i = self.queued[k];
            self.conns[i].pipe_send(&mut self.ctx, now);
        }
        self.queued.clear();
    }

    /// A free connection for the oldest waiting request: an idle one (a closed one connects
    /// again, if the connect limit allows). With none, the pool grows by a connect for each
    /// waiting request not yet covered by one in progress that has waited the growth
    /// threshold ([`Growth`]), within the cap and the connect limit: a pending connect is
    /// never a reason to begin another for the same request.
    fn free_conn(&mut self, pacer: &Pacer<'a>, now: Instant) -> Option<usize> {
        let limit = pacer.pacing().connect_limit;
        self.grow_at = None;
        if let Some(&i) = self.ctx.idle.last() {
            if self.conns[i].is_open() || self.ctx.connecting < limit {
                return self.ctx.idle.pop();
            }
            return None;
        }
        let max = pacer.max_connections();
        while self.conns.len() < max && self.ctx.connecting < limit && self.ctx.idle.is_empty() {
            let Some(due) = pacer.peek(self.ctx.spares as u64).filter(|&d| d <= now) else {
                break;
            };
            self.grow_at = self
                .ctx
                .growth
                .not_before(pacer.release(due), now, self.ctx.polled_at);
            if self.grow_at.is_some() {
                break;
            }
            if let Err(at) = self.ctx.growth.take_connect(self.conns.len(), now) {
                self.grow_at = Some(at);
                break;
            }
            let counted = self.ctx.recorder.measuring(now) && self.ctx.in_window(now);
            self.add_spare(now, counted);
        }
        if self.conns.len() >= max {
            self.pool.full(now);
        }
        // A spare whose connect failed at once is idle (closed): the request takes it.
        self.ctx.idle.pop()
    }

    fn poll_once(&mut self, events: &mut Events, wait: Duration) -> io::Result<()> {
        match self.poll.poll(events, Some(wait)) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                events.clear();
                Ok(())
            }
            other => other,
        }
    }

    fn finished(&self, now: Instant) -> bool {
        if self.ctx.deadline.is_some_and(|d| now >= d) {
            return true;
        }
        if let Some(p) = &self.pacer {
            // A timed open-model run lasts its whole window; an `-n` one ends with its last answer.
            let timed = self.ctx.deadline.is_some();
            return !timed && p.due().is_none() && !self.conns.iter().any(Conn::in_flight);
        }
        self.ctx.budget == Some(0)
            && self.ctx.retry.is_empty()
            && !self.conns.iter().any(Conn::in_flight)
    }

    /// A few times a second: time out stuck requests, close quiet seconds, publish progress.
    fn housekeeping(&mut self, now: Instant, live: &LiveCounters) {
        for c in &mut self.conns {
            let age = now.saturating_duration_since(c.since);
            let kind = match c.phase {
                Phase::Connecting if age > self.limits.connect_timeout => ErrorKind::ConnectTimeout,
                Phase::Handshaking if age > self.limits.connect_timeout => ErrorKind::TlsHandshake,
                Phase::Writing | Phase::Reading if age > self.limits.timeout => {
                    ErrorKind::ReadTimeout
                }
                _ => continue,
            };
            c.fail(&mut self.ctx, kind, now);
        }
        self.ctx.recorder.tick(now);
        if self
            .pulsed_at
            .is_none_or(|t| now.duration_since(t) >= PULSE_EVERY)
        {
            self.pulsed_at = Some(now);
            self.publish_pulse(now, live);
        }
    }

    /// Copies the counters the recorder keeps anyway, the open connections, the pool's full
    /// time and the schedule's lag into this worker's [`Pulse`] slot.
    fn publish_pulse(&self, now: Instant, live: &LiveCounters) {
        let pool_full = self.pool.full_until(now);
        let lag = self.pacer.as_ref().and_then(Pacer::due);
        let pulse = Pulse {
            open_connections: self.conns.iter().filter(|c| c.is_open()).count() as u64,
            pool_full_us: micros(pool_full),
            lag_us: lag.map_or(0, |d| micros(now.saturating_duration_since(d))),
            ..self.ctx.recorder.pulse()
        };
        live.pulse.publish(pulse, self.ctx.recorder.closed());
    }

    /// At the end: each connection's completed requests, and every request without an
    /// answer (in flight on a connection, or in the open model still waiting for one) at its
    /// age, so starved connections and their requests are reported, never dropped.
    fn account_unanswered(&mut self, end: Instant) {
        for c in &self.conns {
            let age = c
                .in_flight()
                .then(|| end.saturating_duration_since(c.intended));
            self.ctx.recorder.connection_end(c.completed, age);
            for intended in c.queued_behind() {
                self.ctx
                    .recorder
                    .censor(end.saturating_duration_since(intended));
            }
        }
        self.ctx.account_unsent(self.pacer.as_mut(), end);
    }

    fn finish(mut self, now: Instant, live: &LiveCounters) -> Stats {
        self.ctx.stopping = true;
        let end = self.ctx.deadline.map_or(now, |d| now.min(d));
        let abandoned =
            self.ctx.past_deadline + self.conns.iter().map(Conn::abandoned).sum::<u64>();
        self.account_unanswered(end);
        for c in &mut self.conns {
            c.close();
        }
        self.publish_pulse(now, live);
        let pool = self.pool_counts();
        let mut stats = self.ctx.recorder.finish(end, abandoned);
        stats.pool = pool;
        stats
    }

    /// Open model: the pool's counts (none in the closed model).
    fn pool_counts(&self) -> PoolCounts {
        let Some(p) = &self.pacer else {
            return PoolCounts::default();
        };
        PoolCounts {
            initial: self.initial as u64,
            connects: self.ctx.connects,
            connects_peak: self.ctx.connects_peak as u64,
            connect_limit: p.pacing().connect_limit as u64,
            first_second: self.ctx.first_second,
        }
    }
}

impl crate::start::Pooled for Worker<'_> {
    fn open_pool(&mut self) -> io::Result<()> {
        Worker::open_pool(self)
    }
    fn delay(&mut self, by: Duration) {
        Worker::delay(self, by);
    }
}
