//! A worker: one OS thread with its own epoll loop (mio), its connections and its recorder.
//! Nothing is shared with other workers but a stop flag (read) and two progress counters
//! (written a few times a second).
//!
//! One loop for every protocol: [`Worker`] is generic over a [`Protocol`] (HTTP/1.1, pipelined
//! HTTP/1.1 in `conn/proto.rs`, HTTP/2 in `h2/proto.rs`) and monomorphised for each, so the
//! hot path has no dynamic call. The loop owns what is the same for all: starting, polling,
//! retries and backoffs, timeouts, pulses, the end's accounting and the open model's pacer,
//! send window and pool growth (`worker/open.rs`). The protocol decides where a due request
//! goes and how bytes become responses.

use crate::ctx::{Ctx, WorkerConfig};
use crate::pacer::Pacer;
use crate::{LiveCounters, Pulse, WorkerLimits};
use loadbench_model::{GeneratorTime, Stats};
use mio::{Events, Poll};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod open;
mod protocol;
pub(crate) use open::{Due, PoolClock};
pub(crate) use protocol::{Connection, Protocol};

/// Connections a closed-model worker begins between two polls at the start, at least: as many
/// as the last poll returned events, when that is more, up to [`START_BATCH_MAX`] (see
/// [`Worker::start_some`]).
const START_BATCH: usize = 16;

/// At most this many connects between two polls: a connect costs the worker some 10–20 µs, so
/// a batch adds at most a few milliseconds to the connect time of its first connection.
const START_BATCH_MAX: usize = 128;

/// How often a worker publishes its [`Pulse`] for the live views: a few times a second,
/// whatever the tick.
const PULSE_EVERY: Duration = Duration::from_millis(100);

/// One worker thread's event loop: its poll, its protocol's connections, context and pacer.
pub(crate) struct Worker<'a, P> {
    poll: Poll,
    proto: P,
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
    /// When the last [`Pulse`] was published (at most one per [`PULSE_EVERY`]).
    pulsed_at: Option<Instant>,
    /// Open model with stamped reads: the coming wait is a sleep until the next batch, then
    /// a poll that does not wait (see `Pacer::nap`), not a poll that any response would end.
    napping: bool,
}

/// CPU time this thread has used, µs, from /proc/thread-self/schedstat (nanoseconds on a CPU
/// first); `None` where the kernel does not provide it.
fn thread_cpu_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1_000)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl<'a, P: Protocol<'a>> Worker<'a, P> {
    /// Sets up the poll, the connection slots (`proto` builds them from the configuration)
    /// and (open model) the pacer; nothing is sent yet.
    pub(crate) fn new(
        mut cfg: WorkerConfig<'a>,
        proto: impl FnOnce(&WorkerConfig<'a>, Instant) -> P,
    ) -> io::Result<Self> {
        let poll = Poll::new()?;
        let now = Instant::now();
        let mut ctx = Ctx::new(&mut cfg, poll.registry().try_clone()?, now);
        let proto = proto(&cfg, now);
        ctx.stamped &= proto.stamps_arrivals();
        let pacer = match cfg.pacing {
            Some(p) => Some(Pacer::new(p, poll.registry())?),
            None => None,
        };
        Ok(Worker {
            poll,
            proto,
            ctx,
            limits: cfg.limits,
            pacer,
            pool: PoolClock::default(),
            blocked: false,
            initial: 0,
            grow_at: None,
            pulsed_at: None,
            napping: false,
        })
    }

    /// Hands each readiness event of the last poll to its connection.
    /// Returns how many events there were.
    fn handle(&mut self, events: &Events) -> usize {
        self.ctx.polled_at = Instant::now();
        let mut n = 0;
        for ev in events.iter() {
            let closed = ev.is_read_closed() || ev.is_error();
            self.proto.on_event(&mut self.ctx, ev.token().0, closed);
            n += 1;
        }
        n
    }

    /// Runs until the deadline, the request budget is spent, or `stop` is raised.
    #[allow(unsafe_code)]
    pub(crate) fn run(mut self, stop: &AtomicBool, live: &LiveCounters) -> io::Result<Stats> {
        let mut events = Events::with_capacity(1024);
        if self.ctx.stamped {
            // Its naps end on time: no timer slack (50 µs by default) on this thread.
            // SAFETY: prctl with an integer argument changes only this thread's slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        }
        let mut now = Instant::now();
        let (started, cpu0) = (now, thread_cpu_us());
        // The closed model's connections, started a batch at a time (the open model's pool is
        // open already, its connections idle until `dispatch` gives them a due request).
        let closed = if self.pacer.is_some() {
            0
        } else {
            self.proto.conns().len()
        };
        let mut unstarted = 0..closed;
        let mut next_tick = now + self.limits.tick;
        let mut retry_work = Vec::with_capacity(self.proto.conns().len());
        let mut handled = 0;
        loop {
            let starting =
                self.start_some(&mut unstarted, handled) | self.proto.open_held(&mut self.ctx, now);
            self.dispatch();
            let wait = if starting {
                Duration::ZERO
            } else {
                self.wait(now, next_tick)
            };
            self.poll_once(&mut events, wait)?;
            handled = self.handle(&events);
            // Every record uses a clock read taken when it happens, in order, so each second
            // of the series gets exactly what happened in it.
            now = Instant::now();
            self.proto.on_timers(&mut self.ctx, now);
            std::mem::swap(&mut self.ctx.retry, &mut retry_work);
            for i in retry_work.drain(..) {
                match self.pacer.as_mut() {
                    Some(p) => self.proto.lost(&mut self.ctx, p, i, now),
                    None => self.proto.begin(&mut self.ctx, i, now),
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

    /// Closed model: begins the next few of the connections not started yet, so the poll
    /// between batches sees each connect complete soon after the kernel finished it (issuing
    /// hundreds of connects before the first poll would add that whole loop to every connect
    /// time). Returns whether some are still to start.
    ///
    /// At least [`START_BATCH`], and as many as the last poll's events (`handled`), up to
    /// [`START_BATCH_MAX`]: once the started connections' own traffic fills the loop, a turn
    /// takes longer, and a fixed 16 a turn left most of a large pool unopened for the whole run
    /// (about 4,000 of 16,667 connections in 20 s on a shared core). Keeping pace with the
    /// traffic keeps the connects' share of each turn about half.
    fn start_some(&mut self, unstarted: &mut std::ops::Range<usize>, handled: usize) -> bool {
        let batch = handled.clamp(START_BATCH, START_BATCH_MAX);
        let end = (unstarted.start + batch).min(unstarted.end);
        for i in unstarted.start..end {
            self.proto.begin(&mut self.ctx, i, Instant::now());
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
            if self.proto.conns()[c].wake_at() <= now {
                self.ctx.backoff.swap_remove(i);
                self.proto.begin(&mut self.ctx, c, now);
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
        let conns = self.proto.conns();
        let wake = self.ctx.backoff.iter().map(|&i| conns[i].wake_at()).min();
        let next = wake.map_or(next_tick, |w| w.min(next_tick));
        let next = self.proto.next_timer().map_or(next, |t| t.min(next));
        self.open_wait(now, next.saturating_duration_since(now))
    }

    fn poll_once(&mut self, events: &mut Events, wait: Duration) -> io::Result<()> {
        let wait = if std::mem::take(&mut self.napping) && !wait.is_zero() {
            std::thread::sleep(wait);
            Duration::ZERO
        } else {
            wait
        };
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
        let busy = self.proto.requeued() > 0
            || !self.ctx.flow_ready.is_empty()
            || self.proto.conns().iter().any(|c| c.busy());
        if let Some(p) = &self.pacer {
            // A timed open-model run lasts its whole window; an `-n` one ends with its last answer.
            let timed = self.ctx.window_end().is_some();
            return !timed && p.due().is_none() && !busy;
        }
        (self.ctx.budget_spent() || self.ctx.stopping()) && self.ctx.retry.is_empty() && !busy
    }

    /// A few times a second: time out stuck requests, close quiet seconds, publish progress.
    fn housekeeping(&mut self, now: Instant, live: &LiveCounters) {
        self.proto.expire(&mut self.ctx, now, &self.limits);
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
        live.pulse
            .publish(self.pulse_now(now), self.ctx.recorder.closed());
    }

    /// The counters of [`Worker::publish_pulse`], without the seconds.
    fn pulse_now(&self, now: Instant) -> Pulse {
        let pool_full = self.pool.full_until(now);
        let lag = self.pacer.as_ref().and_then(Pacer::due);
        let open = self.proto.conns().iter().filter(|c| c.is_open()).count();
        Pulse {
            open_connections: open as u64,
            pool_full_us: micros(pool_full),
            lag_us: lag.map_or(0, |d| micros(now.saturating_duration_since(d))),
            ..self.ctx.recorder.pulse()
        }
    }

    /// At the end: each connection's completed requests, and every request without an
    /// answer (in flight on a connection, or in the open model still waiting for one) at its
    /// age, so starved connections and their requests are reported, never dropped. Returns
    /// the measured requests written and never answered (abandoned).
    fn account_unanswered(&mut self, end: Instant) -> u64 {
        let mut abandoned = 0;
        let recorder = &mut self.ctx.recorder;
        for c in self.proto.conns_mut() {
            abandoned += c.abandoned();
            let age = c.oldest().map(|t| end.saturating_duration_since(t));
            let late = c.answered_late().map(|t| end.saturating_duration_since(t));
            recorder.connection_end(c.completed(), age, late);
            for intended in c.others() {
                recorder.censor(end.saturating_duration_since(intended));
            }
            c.shut();
        }
        self.proto.account_waiting(&mut self.ctx, end);
        self.ctx.account_unsent(self.pacer.as_mut(), end);
        abandoned
    }

    fn finish(mut self, now: Instant, live: &LiveCounters) -> Stats {
        let past_deadline = self.ctx.stop_claiming();
        let end = self.ctx.window_end().map_or(now, |d| now.min(d));
        let abandoned = past_deadline + self.account_unanswered(end);
        let pulse = self.pulse_now(now);
        live.pulse
            .publish(pulse.clone(), self.ctx.recorder.closed());
        let pool = self.pool_counts();
        self.proto.release();
        let mut stats = self.ctx.recorder.finish(end, abandoned);
        // Once more with every second `finish` closed (the last, partial one too), so a live
        // view's latency (the metrics endpoint's histogram) ends where the result's does.
        live.pulse.publish(pulse, &stats.series.0);
        stats.pool = pool;
        self.proto.add_stats(&mut stats);
        stats
    }
}
