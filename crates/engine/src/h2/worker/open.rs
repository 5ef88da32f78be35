//! The HTTP/2 worker in the open model (`--http2 --rate`): the pacer says when each request
//! is due, and the rule is streams first, then connections. A due request takes a free stream
//! on an open connection, preferring the one with the most requests in flight (fewer
//! connections, fuller writes); every request of a send window queued on one connection goes
//! out in one write. With no stream free anywhere the request waits (its latency still counts
//! from its intended time) and the pool grows: one connect for each `streams` waiting requests
//! no connect in progress will serve yet ([`covered`]) and that has waited the growth
//! threshold (HTTP/1.1's rule, [`crate::growth`]), within the cap and `--connect-limit`.

use super::H2Worker;
use crate::h2::conn::H2Conn;
use crate::pacer::Pacer;
use crate::start::{PoolSteps, Pooled};
use loadbench_model::{ErrorKind, PoolCounts};
use mio::{Events, Token};
use std::io;
use std::time::{Duration, Instant};

/// The growth rule: waiting requests (oldest first) that the connects in progress will
/// serve, each new connection taking `per_conn` streams. A connect begins while the first
/// waiting request beyond these is due. (HTTP/1.1's rule with `per_conn` = 1.)
pub(crate) fn covered(connecting: usize, per_conn: u32) -> u64 {
    connecting as u64 * u64::from(per_conn.max(1))
}

impl<'a> H2Worker<'a> {
    /// Opens the initial pool before the schedule starts, at most the connect limit at once,
    /// and waits until each connection is open (the server's SETTINGS came) or failed, within
    /// the connect timeout.
    pub fn open_pool(&mut self) -> io::Result<()> {
        if self.pacer.is_none() {
            return Ok(());
        }
        let deadline = Instant::now() + self.limits.connect_timeout;
        crate::start::open_until(self, deadline)?;
        // A failed connect of the pool fails no request: none was due yet.
        for i in std::mem::take(&mut self.ctx.retry) {
            let _ = self.conns[i].take_failure();
            self.closed.push(i);
        }
        self.initial = self.conns.iter().filter(|c| c.free_streams() > 0).count();
        Ok(())
    }

    /// The schedule, the measured window and its end all start `by` later.
    pub fn delay(&mut self, by: Duration) {
        self.ctx.delay(self.pacer.as_mut(), by);
    }

    /// One more connection slot, not connected yet; its index.
    fn add_slot(&mut self, now: Instant) -> usize {
        let i = self.conns.len();
        self.conns.push(H2Conn::new(Token(i), self.streams, now));
        i
    }

    /// Once the first waiting request's send window has ended (or a GOAWAY left requests to
    /// send again), starts every request due by now on free streams.
    pub(super) fn dispatch(&mut self) {
        let Some(mut pacer) = self.pacer.take() else {
            return;
        };
        let now = Instant::now();
        self.blocked = false;
        if !self.sh.requeue.is_empty() || pacer.open(now) {
            self.send_due(&mut pacer, now);
        }
        self.pacer = Some(pacer);
    }

    /// The next waiting request: one a GOAWAY took back first, else the pacer's if due.
    /// `(intended, Some(endpoint))` for one taken back, `(intended, None)` for the pacer's.
    fn next_waiting(&self, pacer: &Pacer<'a>, now: Instant) -> Option<(Instant, Option<u16>)> {
        match self.sh.requeue.first() {
            Some(&(t, e)) => Some((t, Some(e))),
            None => pacer.due().filter(|&d| d <= now).map(|d| (d, None)),
        }
    }

    /// Takes the request [`H2Worker::next_waiting`] gave: which request of the mix it is.
    fn take_waiting(&mut self, pacer: &mut Pacer<'a>, again: Option<u16>) -> u16 {
        match again {
            Some(e) => {
                self.sh.requeue.remove(0);
                e
            }
            None => {
                pacer.advance();
                self.ctx.pick()
            }
        }
    }

    fn send_due(&mut self, pacer: &mut Pacer<'a>, now: Instant) {
        let mut cur = None;
        while let Some((intended, again)) = self.next_waiting(pacer, now) {
            if again.is_none() && (!self.ctx.wants_more(now) || !self.ctx.in_window(intended)) {
                break;
            }
            let Some(i) = self.stream_slot(&mut cur) else {
                self.blocked = true;
                self.grow(pacer, now);
                break;
            };
            let endpoint = self.take_waiting(pacer, again);
            let resend = again.is_some();
            let c = &mut self.conns[i];
            c.open_stream(&mut self.ctx, &mut self.sh, endpoint, intended, resend, now);
        }
        for i in std::mem::take(&mut self.batch) {
            self.conns[i].send_out(&mut self.ctx, &mut self.sh, now);
        }
        if !self.blocked {
            self.pool.free(now);
        }
    }

    /// A connection with a free stream: `cur` while it has one, else the one with the most
    /// requests in flight (it joins the batch to write).
    fn stream_slot(&mut self, cur: &mut Option<usize>) -> Option<usize> {
        if let Some(i) = cur.filter(|&i| self.conns[i].free_streams() > 0) {
            return Some(i);
        }
        let (best, _) = self
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.free_streams() > 0)
            .max_by_key(|(_, c)| c.in_flight())?;
        *cur = Some(best);
        self.batch.push(best);
        Some(best)
    }

    /// Streams a new connection will take: `--streams`, or the server's lower limit once
    /// one announced it.
    fn per_conn(&self) -> u32 {
        match self.sh.stats.server_max_streams {
            0 => self.streams,
            s => self.streams.min(s),
        }
    }

    /// Whether the `k`-th waiting request (0: the oldest) is a reason to connect at `now`: one
    /// a GOAWAY took back at once; a due one once it has waited the growth threshold since its
    /// send window released it (HTTP/1.1's rule, [`crate::growth`]), else `grow_at` says when.
    fn may_grow(&mut self, pacer: &Pacer<'a>, k: u64, now: Instant) -> bool {
        let again = self.sh.requeue.len() as u64;
        if k < again {
            return true;
        }
        let Some(due) = pacer.peek(k - again).filter(|&d| d <= now) else {
            return false;
        };
        self.grow_at = self
            .ctx
            .growth
            .not_before(pacer.release(due), now, self.ctx.polled_at);
        self.grow_at.is_none()
    }

    /// No stream is free: connects for the waiting requests no connect in progress covers
    /// and that waited the growth threshold, within the connect limit and the cap (a slot
    /// whose connection closed first).
    fn grow(&mut self, pacer: &Pacer<'a>, now: Instant) {
        let (limit, max) = (pacer.pacing().connect_limit, pacer.max_connections());
        let per_conn = self.per_conn();
        self.grow_at = None;
        while self.ctx.connecting < limit
            && self.may_grow(pacer, covered(self.ctx.connecting, per_conn), now)
        {
            if let Err(at) = self.ctx.growth.take_connect(self.conns.len(), now) {
                self.grow_at = Some(at);
                break;
            }
            let Some(i) = self.slot_to_connect(max, now) else {
                break;
            };
            self.conns[i].connect_open(&mut self.ctx, now);
            if !self.conns[i].is_open() {
                break; // failed at once: the next loop turn fails a waiting request with it
            }
        }
        if self.conns.len() >= max {
            self.pool.full(now);
        }
    }

    /// A slot to connect: a closed one past its backoff, else a new one below the cap.
    fn slot_to_connect(&mut self, max: usize, now: Instant) -> Option<usize> {
        let conns = &self.conns;
        match self.closed.iter().position(|&i| conns[i].reusable(now)) {
            Some(k) => Some(self.closed.swap_remove(k)),
            None if self.conns.len() < max => Some(self.add_slot(now)),
            None => None,
        }
    }

    /// Slot `i` lost its connection (drained, failed, or never connected): it may connect
    /// again when the pool grows. A failed connect fails the oldest waiting request, as
    /// HTTP/1.1's open model fails the request whose connect failed.
    pub(super) fn slot_closed(&mut self, i: usize, now: Instant) {
        if let Some(kind) = self.conns[i].take_failure() {
            self.fail_waiting(kind, now);
        }
        if !self.closed.contains(&i) {
            self.closed.push(i);
        }
    }

    /// The oldest waiting request fails with a connect error `kind` (none waits: nothing).
    #[cold]
    fn fail_waiting(&mut self, kind: ErrorKind, now: Instant) {
        let Some(mut pacer) = self.pacer.take() else {
            return;
        };
        if let Some((intended, again)) = self.next_waiting(&pacer, now) {
            let endpoint = self.take_waiting(&mut pacer, again);
            let measured = self.ctx.recorder.measuring(intended) && self.ctx.in_window(intended);
            if measured && self.ctx.in_window(now) {
                self.ctx.recorder.error(now, kind, 0);
                self.ctx.recorder.endpoint_error(endpoint, kind);
            }
        }
        self.pacer = Some(pacer);
    }

    /// Open model: how long the loop may sleep, at most `limit` (see [`Pacer::wait`]).
    pub(super) fn open_wait(&mut self, now: Instant, limit: Duration) -> Duration {
        let can_send = !self.blocked;
        if can_send && !self.sh.requeue.is_empty() {
            return Duration::ZERO;
        }
        match (self.pacer.as_mut(), self.grow_at.filter(|_| self.blocked)) {
            (Some(p), Some(at)) => p.wake_at(now, at, limit),
            (Some(p), None) => p.wait(now, limit, can_send),
            (None, _) => limit,
        }
    }

    /// Open model: whether a run without a deadline (`-n`) is done: every request sent and
    /// answered. `None` in the closed model.
    pub(super) fn open_finished(&self) -> Option<bool> {
        let p = self.pacer.as_ref()?;
        let timed = self.ctx.window_end().is_some();
        let idle = self.sh.requeue.is_empty() && self.conns.iter().all(|c| c.in_flight() == 0);
        Some(!timed && p.due().is_none() && idle)
    }

    /// At the end: every request due and never sent (waiting for a stream, or taken back by
    /// a GOAWAY) is counted as waiting, at its age, as in HTTP/1.1's open model.
    pub(super) fn account_waiting(&mut self, end: Instant) {
        for (intended, _) in std::mem::take(&mut self.sh.requeue) {
            if self.ctx.recorder.measuring(intended) && intended < end {
                self.ctx
                    .recorder
                    .waited(end.saturating_duration_since(intended));
            }
        }
        self.ctx.account_unsent(self.pacer.as_mut(), end);
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

impl PoolSteps for H2Worker<'_> {
    fn begin_connects(&mut self, now: Instant) -> bool {
        let (want, limit) = self.pacer.as_ref().map_or((0, 1), Pacer::initial_pool);
        while self.conns.len() < want && self.ctx.connecting < limit {
            let i = self.add_slot(now);
            self.conns[i].connect_open(&mut self.ctx, now);
        }
        self.ctx.connecting == 0 && self.conns.len() >= want
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

impl Pooled for H2Worker<'_> {
    fn open_pool(&mut self) -> io::Result<()> {
        H2Worker::open_pool(self)
    }
    fn delay(&mut self, by: Duration) {
        H2Worker::delay(self, by);
    }
}
