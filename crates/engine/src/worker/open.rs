//! The worker loop in the open model (`--rate`), for every protocol: the pacer says when each
//! request is due; once the first waiting request's send window has ended, the protocol
//! places every request due by then ([`Protocol::send_due`]: a free connection, a free
//! pipeline slot, a free stream). With none free the request waits (its latency still counts
//! from when it was due, and its send lag shows the wait) and the pool grows by the one rule
//! here ([`Due::grow`], [`crate::growth`]). Also the initial pool before the start line
//! ([`crate::start`]) and the pool's counts at the end.

use super::{Protocol, Worker};
use crate::ctx::Ctx;
use crate::pacer::Pacer;
use crate::start::{PoolSteps, Pooled};
use loadbench_model::PoolCounts;
use mio::Events;
use std::io;
use std::time::{Duration, Instant};

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

/// What a protocol placing due requests works with: the context, the schedule, the pool's
/// clock and when the pool may grow next; `now` is the dispatch's clock.
pub(crate) struct Due<'w, 'a> {
    /// The worker's context.
    pub(crate) ctx: &'w mut Ctx<'a>,
    /// The schedule.
    pub(crate) pacer: &'w mut Pacer<'a>,
    /// How long the pool was full.
    pub(crate) pool: &'w mut PoolClock,
    /// When the oldest request no connect covers may grow the pool (`None`: only an event
    /// can unblock it); set by [`Due::grow`].
    pub(crate) grow_at: &'w mut Option<Instant>,
    /// When the dispatch began.
    pub(crate) now: Instant,
}

impl<'a> Due<'_, 'a> {
    /// No connection is free: the pool grows by a connect for each waiting request not yet
    /// covered by one in progress ([`Protocol::covered`]) that has waited the growth
    /// threshold ([`crate::growth`]), within the cap and the connect limit: a pending connect
    /// is never a reason to begin another for the same request. A request taken back (an
    /// HTTP/2 GOAWAY) is a reason at once.
    pub(crate) fn grow<P: Protocol<'a>>(&mut self, proto: &mut P) {
        let (limit, max) = (
            self.pacer.pacing().connect_limit,
            self.pacer.max_connections(),
        );
        let now = self.now;
        *self.grow_at = None;
        // Requests taken back and a flow's steps due wait before any scheduled one.
        let again = proto.requeued() as u64 + self.ctx.flow_due(now);
        while self.ctx.connecting < limit && proto.may_connect(self.ctx, max) {
            if !self.may_grow(proto.covered(self.ctx), again) {
                break;
            }
            if let Err(at) = self.ctx.growth.take_connect(proto.conns().len(), now) {
                *self.grow_at = Some(at);
                break;
            }
            if !proto.connect_more(self.ctx, max, now) {
                break;
            }
        }
        if proto.conns().len() >= max {
            self.pool.full(now);
        }
    }

    /// Whether the `k`-th waiting request (0: the oldest; the first `again` were taken back)
    /// is a reason to connect now: one taken back at once; a due one once it has waited the
    /// growth threshold since its send window released it, else `grow_at` says when.
    fn may_grow(&mut self, k: u64, again: u64) -> bool {
        if k < again {
            return true;
        }
        let Some(due) = self.pacer.peek(k - again).filter(|&d| d <= self.now) else {
            return false;
        };
        let released = self.pacer.release(due);
        *self.grow_at = self
            .ctx
            .growth
            .not_before(released, self.now, self.ctx.polled_at);
        self.grow_at.is_none()
    }
}

impl<'a, P: Protocol<'a>> Worker<'a, P> {
    /// Open model: once the first waiting request's send window has ended (or a request taken
    /// back waits), the protocol starts every request due by now.
    pub(super) fn dispatch(&mut self) {
        let Some(mut pacer) = self.pacer.take() else {
            return;
        };
        // A fresh clock: events handled since the loop's `now` may have moved the recorder on.
        let now = Instant::now();
        self.blocked = false;
        let steps_due = self.ctx.flow_next().is_some_and(|d| d <= now);
        if self.proto.requeued() > 0 || steps_due || pacer.open(now) {
            let mut due = Due {
                ctx: &mut self.ctx,
                pacer: &mut pacer,
                pool: &mut self.pool,
                grow_at: &mut self.grow_at,
                now,
            };
            self.blocked = self.proto.send_due(&mut due);
        }
        self.pacer = Some(pacer);
    }

    /// How long the loop may sleep, at most `limit`: no time while a request taken back can
    /// go, else until the pool may grow for a blocked request or the next send window.
    pub(super) fn open_wait(&mut self, now: Instant, limit: Duration) -> Duration {
        let can_send = !self.blocked;
        if can_send && self.proto.requeued() > 0 {
            return Duration::ZERO;
        }
        let next_step = self.ctx.flow_next().filter(|_| can_send);
        match (self.pacer.as_mut(), self.grow_at.filter(|_| self.blocked)) {
            (Some(p), Some(at)) => p.wake_at(now, at, limit),
            (Some(p), None) if next_step.is_some() => {
                let at = p.next_release().into_iter().chain(next_step).min();
                at.map_or(limit, |at| p.wake_at(now, at, limit))
            }
            (Some(p), None) if can_send && self.ctx.stamped => match p.nap(limit) {
                Some(d) => {
                    self.napping = true;
                    d
                }
                None => limit,
            },
            (Some(p), None) => p.wait(now, limit, can_send),
            (None, _) => limit,
        }
    }

    /// Open model: opens the initial pool before the schedule starts, at most the connect
    /// limit at once, and waits until each is connected or failed (within the connect
    /// timeout; one still pending then joins the free ones when it connects).
    pub(crate) fn open_pool(&mut self) -> io::Result<()> {
        if self.pacer.is_none() {
            return Ok(());
        }
        let deadline = Instant::now() + self.limits.connect_timeout;
        crate::start::open_until(self, deadline)?;
        self.initial = self.proto.pool_opened(&mut self.ctx);
        Ok(())
    }

    /// The schedule, the measured window and its end all start `by` later: the time the
    /// initial pool took to open (every worker's, so all start together).
    pub(crate) fn delay(&mut self, by: Duration) {
        self.ctx.delay(self.pacer.as_mut(), by);
    }

    /// Open model: the pool's counts (none in the closed model).
    pub(super) fn pool_counts(&self) -> PoolCounts {
        let Some(p) = &self.pacer else {
            return PoolCounts::default();
        };
        let (connects, peak, first_second) = self.ctx.connects();
        PoolCounts {
            initial: self.initial as u64,
            connects,
            connects_peak: peak as u64,
            connect_limit: p.pacing().connect_limit as u64,
            first_second,
        }
    }
}

impl<'a, P: Protocol<'a>> PoolSteps for Worker<'a, P> {
    /// Begins the initial pool's connects (at most the connect limit at once); whether
    /// every one has ended. Counted when a measured request first uses one.
    fn begin_connects(&mut self, now: Instant) -> bool {
        let (want, limit) = self.pacer.as_ref().map_or((0, 1), Pacer::initial_pool);
        while self.proto.conns().len() < want && self.ctx.connecting < limit {
            self.proto.add_to_pool(&mut self.ctx, now);
        }
        self.ctx.connecting == 0 && self.proto.conns().len() >= want
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

impl<'a, P: Protocol<'a>> Pooled for Worker<'a, P> {
    fn open_pool(&mut self) -> io::Result<()> {
        Worker::open_pool(self)
    }
    fn delay(&mut self, by: Duration) {
        Worker::delay(self, by);
    }
}
