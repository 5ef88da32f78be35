//! The HTTP/2 worker loop: the loop of `worker.rs` (start connections in batches, poll,
//! handle events, retry, back off, housekeeping, pulses, the end's accounting) over
//! [`H2Conn`]s, each keeping up to `--streams` requests in flight. A loop of its own, so the
//! HTTP/1.1 hot path does not branch on the protocol. The open model's parts (the pacer, the
//! pool, which stream a due request takes) are in `worker/open.rs`.

use super::conn::{H2Conn, H2Phase};
use super::{H2Setup, Shared};
use crate::ctx::{Ctx, WorkerConfig};
use crate::pacer::Pacer;
use crate::worker::{micros, thread_cpu_us, PoolClock};
use crate::{LiveCounters, Pulse, WorkerLimits};
use loadbench_model::{GeneratorTime, Stats};
use mio::{Events, Poll, Token};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod open;

/// Connections begun between two polls at the start.
const START_BATCH: usize = 16;
/// How often the worker publishes its pulse for the live views.
const PULSE_EVERY: Duration = Duration::from_millis(100);

/// One worker thread's HTTP/2 event loop.
pub struct H2Worker<'a> {
    poll: Poll,
    conns: Vec<H2Conn>,
    ctx: Ctx<'a>,
    sh: Shared<'a>,
    limits: WorkerLimits,
    pulsed_at: Option<Instant>,
    /// Open model: the schedule's pacer (`None` in the closed model).
    pacer: Option<Pacer<'a>>,
    /// Open model: how long requests were due with no stream free and the pool at its cap.
    pool: PoolClock,
    /// Open model: the last dispatch left a due request without a stream.
    blocked: bool,
    /// Open model, blocked: when the oldest waiting request not covered by a connect in
    /// progress may grow the pool ([`crate::growth`]); the worker wakes then.
    grow_at: Option<Instant>,
    /// Open model: connections opened before the schedule started.
    initial: usize,
    /// `--streams`.
    streams: u32,
    /// Open model: slots without a connection, which the pool may connect again.
    closed: Vec<usize>,
    /// Open model: the connections the current batch queued requests on.
    batch: Vec<usize>,
}

impl<'a> H2Worker<'a> {
    /// Sets up the poll and the connection slots; nothing is sent yet.
    pub fn new(cfg: WorkerConfig<'a>, setup: &'a H2Setup) -> io::Result<Self> {
        let poll = Poll::new()?;
        let now = Instant::now();
        let ctx = Ctx::new(&cfg, poll.registry().try_clone()?, now);
        let conns = (0..cfg.connections)
            .map(|i| H2Conn::new(Token(i), setup.streams, now))
            .collect();
        let pacer = match cfg.pacing {
            Some(p) => Some(Pacer::new(p, poll.registry())?),
            None => None,
        };
        Ok(H2Worker {
            poll,
            conns,
            ctx,
            sh: Shared::new(setup),
            limits: cfg.limits,
            pulsed_at: None,
            pacer,
            pool: PoolClock::default(),
            blocked: false,
            grow_at: None,
            initial: 0,
            streams: setup.streams,
            closed: Vec::new(),
            batch: Vec::new(),
        })
    }

    /// Runs until the deadline, the request budget is spent, or `stop` is raised.
    pub fn run(mut self, stop: &AtomicBool, live: &LiveCounters) -> io::Result<Stats> {
        let mut events = Events::with_capacity(1024);
        let mut now = Instant::now();
        let (started, cpu0) = (now, thread_cpu_us());
        // The closed model's connections (the open model's pool is open already).
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
            now = Instant::now();
            std::mem::swap(&mut self.ctx.retry, &mut retry_work);
            for i in retry_work.drain(..) {
                if self.pacer.is_some() {
                    self.slot_closed(i, now);
                } else {
                    self.conns[i].begin(&mut self.ctx, &mut self.sh, now);
                }
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

    /// Hands each readiness event of the last poll to its connection.
    fn handle(&mut self, events: &Events) {
        self.ctx.polled_at = Instant::now();
        for ev in events.iter() {
            if let Some(c) = self.conns.get_mut(ev.token().0) {
                let closed = ev.is_read_closed() || ev.is_error();
                c.on_event(&mut self.ctx, &mut self.sh, closed);
            }
        }
    }

    /// Begins the next few connections not started yet (see `Worker::start_some`).
    fn start_some(&mut self, unstarted: &mut std::ops::Range<usize>) -> bool {
        let end = (unstarted.start + START_BATCH).min(unstarted.end);
        for c in &mut self.conns[unstarted.start..end] {
            c.begin(&mut self.ctx, &mut self.sh, Instant::now());
        }
        unstarted.start = end;
        end < unstarted.end
    }

    /// Connections whose connect backoff has passed connect again.
    #[cold]
    fn wake_backed_off(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.ctx.backoff.len() {
            let c = self.ctx.backoff[i];
            if self.conns[c].wake_at <= now {
                self.ctx.backoff.swap_remove(i);
                self.conns[c].begin(&mut self.ctx, &mut self.sh, now);
            } else {
                i += 1;
            }
        }
    }

    /// Until the next tick, sooner for retries, a backoff's end or (open model) the next
    /// batch of due requests.
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
        let limit = wake
            .map_or(next_tick, |w| w.min(next_tick))
            .saturating_duration_since(now);
        self.open_wait(now, limit)
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
        if self.ctx.window_end().is_some_and(|d| now >= d) {
            return true;
        }
        if let Some(done) = self.open_finished() {
            return done;
        }
        self.ctx.budget_spent()
            && self.ctx.retry.is_empty()
            && self.conns.iter().all(|c| c.in_flight() == 0)
    }

    /// A few times a second: time out connects and streams, close quiet seconds, publish.
    fn housekeeping(&mut self, now: Instant, live: &LiveCounters) {
        let (timeout, connect) = (self.limits.timeout, self.limits.connect_timeout);
        for c in &mut self.conns {
            c.expire(&mut self.ctx, &mut self.sh, now, timeout, connect);
        }
        self.ctx.recorder.tick(now);
        if self
            .pulsed_at
            .is_none_or(|t| now.duration_since(t) >= PULSE_EVERY)
        {
            self.pulsed_at = Some(now);
            self.publish_pulse(live);
        }
    }

    fn publish_pulse(&self, live: &LiveCounters) {
        let now = Instant::now();
        let lag = self.pacer.as_ref().and_then(Pacer::due);
        let pulse = Pulse {
            open_connections: self.conns.iter().filter(|c| c.is_open()).count() as u64,
            pool_full_us: micros(self.pool.full_until(now)),
            lag_us: lag.map_or(0, |d| micros(now.saturating_duration_since(d))),
            ..self.ctx.recorder.pulse()
        };
        live.pulse.publish(pulse, self.ctx.recorder.closed());
    }

    /// At the end: each connection's completed requests and its oldest request in flight,
    /// the measured requests still in flight as abandoned, and the HTTP/2 figures.
    fn finish(mut self, now: Instant, live: &LiveCounters) -> Stats {
        let past_deadline = self.ctx.stop_claiming();
        let end = self.ctx.window_end().map_or(now, |d| now.min(d));
        self.account_waiting(end);
        let mut abandoned = past_deadline;
        for c in &mut self.conns {
            abandoned += c.measured_in_flight();
            let age = c.oldest().map(|t| end.saturating_duration_since(t));
            self.ctx.recorder.connection_end(c.completed, age);
            for since in c.others_in_flight() {
                self.ctx
                    .recorder
                    .censor(end.saturating_duration_since(since));
            }
            c.close();
            c.phase = H2Phase::Idle;
        }
        self.publish_pulse(live);
        let pool = self.pool_counts();
        let mut stats = self.ctx.recorder.finish(end, abandoned);
        stats.h2 = self.sh.stats;
        stats.protocols = self.sh.protocols;
        stats.pool = pool;
        stats
    }
}
