//! HTTP/2 as a [`Protocol`] of the worker loop: its slots are [`H2Conn`]s, each keeping up to
//! `--streams` requests in flight. What is its own in the open model (`--http2 --rate`): the
//! rule is streams first, then connections. A due request takes a free stream on an open
//! connection, preferring the one with the most requests in flight (fewer connections, fuller
//! writes); every request of a send window queued on one connection goes out in one write.
//! A request a GOAWAY took back goes again before the next due one. With no stream free the
//! pool grows by the worker's rule, one connect covering `streams` waiting requests
//! ([`covered`]); a closed slot past its backoff connects again before a new one is added.

use super::conn::{H2Conn, H2Phase};
use super::{H2Setup, Req, Shared};
use crate::ctx::{Ctx, WorkerConfig};
use crate::pacer::Pacer;
use crate::worker::{Connection, Due, Protocol};
use crate::WorkerLimits;
use loadbench_model::{ErrorKind, ErrorReason, Stats};
use mio::Token;
use std::time::{Duration, Instant};

/// A connection that carries several requests at once, each on a stream of its own: HTTP/2's
/// ([`H2Conn`]) or HTTP/3's (`h3::conn::H3Conn`). [`Http2`] drives either, the same way.
pub(crate) trait StreamConn: Connection {
    /// The connection keeps timers of its own (QUIC's), which the worker's poll wakes for.
    const TIMERS: bool = false;
    /// An idle slot for up to `streams` requests in flight (`grpc`: counting `grpc-status`).
    fn create(token: Token, streams: u32, grpc: bool, now: Instant) -> Self;
    /// Closed model: connects, or fills its free streams.
    fn begin(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant);
    /// A readiness event (`closed`: the peer's FIN or an error is queued).
    fn on_event(&mut self, ctx: &mut Ctx, sh: &mut Shared, closed: bool);
    /// The connect failure not handed to the worker yet.
    fn take_failure(&mut self) -> Option<(ErrorKind, Option<ErrorReason>)>;
    /// Fails a connect past `connect` and streams past `timeout`.
    fn expire(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        now: Instant,
        timeout: Duration,
        connect: Duration,
    );
    /// Streams a due request may take now.
    fn free_streams(&self) -> u32;
    /// Requests in flight.
    fn in_flight(&self) -> u32;
    /// No connection, past any backoff: the pool may connect it again.
    fn reusable(&self, now: Instant) -> bool;
    /// Open model: connects.
    fn connect_open(&mut self, ctx: &mut Ctx, now: Instant);
    /// Open model: starts `req`, due at `intended`, on a free stream.
    fn open_stream(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        req: Req,
        intended: Instant,
        resend: bool,
        now: Instant,
    );
    /// Open model: writes what the batch queued.
    fn send_out(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant);
    /// When its next own timer is due ([`StreamConn::TIMERS`]).
    fn timer(&self) -> Option<Instant> {
        None
    }
    /// Its timer is due.
    fn on_timer(&mut self, _ctx: &mut Ctx, _sh: &mut Shared, _now: Instant) {}
}

/// The growth rule: waiting requests (oldest first) that the connects in progress will
/// serve, each new connection taking `per_conn` streams. A connect begins while the first
/// waiting request beyond these is due. (HTTP/1.1's rule with `per_conn` = 1.)
pub(crate) fn covered(connecting: usize, per_conn: u32) -> u64 {
    connecting as u64 * u64::from(per_conn.max(1))
}

/// A worker's HTTP/2 (or, with `C` = `H3Conn`, HTTP/3) connections and what they share.
pub(crate) struct Http2<'a, C: StreamConn = H2Conn> {
    conns: Vec<C>,
    sh: Shared<'a>,
    /// `--streams`.
    streams: u32,
    /// A `grpc://` load: the connections count each answer's `grpc-status`.
    grpc: bool,
    /// Open model: slots without a connection, which the pool may connect again.
    closed: Vec<usize>,
    /// Open model: the connections the current batch queued requests on.
    batch: Vec<usize>,
}

impl<'a, C: StreamConn> Http2<'a, C> {
    /// The closed model's connection slots (none in the open model: its pool opens later).
    pub(crate) fn new(cfg: &WorkerConfig<'a>, setup: &'a H2Setup, now: Instant) -> Self {
        Http2 {
            conns: (0..cfg.connections)
                .map(|i| C::create(Token(i), setup.streams, setup.grpc, now))
                .collect(),
            sh: Shared::new(setup),
            streams: setup.streams,
            grpc: setup.grpc,
            closed: Vec::new(),
            batch: Vec::new(),
        }
    }

    /// One more connection slot, not connected yet; its index.
    fn add_slot(&mut self, now: Instant) -> usize {
        let i = self.conns.len();
        self.conns
            .push(C::create(Token(i), self.streams, self.grpc, now));
        i
    }

    /// The next waiting request: one a GOAWAY took back first, else the pacer's if due.
    /// `(intended, Some(endpoint))` for one taken back, `(intended, None)` for the pacer's.
    fn next_waiting(&self, pacer: &Pacer<'a>, now: Instant) -> Option<(Instant, Option<Req>)> {
        match self.sh.requeue.first() {
            Some(&(t, r)) => Some((t, Some(r))),
            None => pacer.due().filter(|&d| d <= now).map(|d| (d, None)),
        }
    }

    /// Takes the request [`Http2::next_waiting`] gave: which request of the mix it is.
    fn take_waiting(&mut self, ctx: &mut Ctx, pacer: &mut Pacer<'a>, again: Option<Req>) -> Req {
        match again {
            Some(r) => {
                self.sh.requeue.remove(0);
                r
            }
            None => {
                pacer.advance();
                Req::claim(ctx)
            }
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

    /// A slot to connect: a closed one past its backoff, else a new one below the cap.
    fn slot_to_connect(&mut self, max: usize, now: Instant) -> Option<usize> {
        let conns = &self.conns;
        match self.closed.iter().position(|&i| conns[i].reusable(now)) {
            Some(k) => Some(self.closed.swap_remove(k)),
            None if self.conns.len() < max => Some(self.add_slot(now)),
            None => None,
        }
    }

    /// The oldest waiting request fails with a connect error `kind` (none waits: nothing).
    #[cold]
    fn fail_waiting(
        &mut self,
        ctx: &mut Ctx,
        pacer: &mut Pacer<'a>,
        (kind, reason): (ErrorKind, Option<ErrorReason>),
        now: Instant,
    ) {
        if let Some((intended, again)) = self.next_waiting(pacer, now) {
            let endpoint = self.take_waiting(ctx, pacer, again).endpoint;
            let measured = ctx.recorder.measuring(intended) && ctx.in_window(intended);
            if measured && ctx.in_window(now) {
                ctx.recorder.error(now, kind, 0);
                if let Some(r) = reason {
                    ctx.recorder.reason(r);
                }
                ctx.recorder.endpoint_error(endpoint, kind);
            }
        }
    }
}

impl<'a, C: StreamConn> Protocol<'a> for Http2<'a, C> {
    type Conn = C;

    fn conns(&self) -> &[C] {
        &self.conns
    }

    fn conns_mut(&mut self) -> &mut [C] {
        &mut self.conns
    }

    fn release(&mut self) {
        self.conns = Vec::new();
    }

    fn next_timer(&self) -> Option<Instant> {
        if !C::TIMERS {
            return None;
        }
        self.conns.iter().filter_map(StreamConn::timer).min()
    }

    fn on_timers(&mut self, ctx: &mut Ctx<'a>, now: Instant) {
        if !C::TIMERS {
            return;
        }
        for c in &mut self.conns {
            if c.timer().is_some_and(|t| t <= now) {
                c.on_timer(ctx, &mut self.sh, now);
            }
        }
    }

    #[inline]
    fn begin(&mut self, ctx: &mut Ctx<'a>, i: usize, now: Instant) {
        self.conns[i].begin(ctx, &mut self.sh, now);
    }

    #[inline]
    fn on_event(&mut self, ctx: &mut Ctx<'a>, i: usize, closed: bool) {
        if let Some(c) = self.conns.get_mut(i) {
            c.on_event(ctx, &mut self.sh, closed);
        }
    }

    /// Slot `i` lost its connection (drained, failed, or never connected): it may connect
    /// again when the pool grows. A failed connect fails the oldest waiting request, as
    /// HTTP/1.1's open model fails the request whose connect failed.
    fn lost(&mut self, ctx: &mut Ctx<'a>, pacer: &mut Pacer<'a>, i: usize, now: Instant) {
        if let Some(failure) = self.conns[i].take_failure() {
            self.fail_waiting(ctx, pacer, failure, now);
        }
        if !self.closed.contains(&i) {
            self.closed.push(i);
        }
    }

    /// Connects not open within `--connect-timeout`, and streams without an answer within
    /// `--timeout`.
    fn expire(&mut self, ctx: &mut Ctx<'a>, now: Instant, limits: &WorkerLimits) {
        let (timeout, connect) = (limits.timeout, limits.connect_timeout);
        for c in &mut self.conns {
            c.expire(ctx, &mut self.sh, now, timeout, connect);
        }
    }

    /// Starts every request waiting (taken back, or due by now) on free streams, then each
    /// connection of the batch writes its requests at once.
    fn send_due(&mut self, d: &mut Due<'_, 'a>) -> bool {
        let now = d.now;
        let mut cur = None;
        let mut blocked = false;
        while let Some((intended, again)) = self.next_waiting(d.pacer, now) {
            if again.is_none() && (!d.ctx.wants_more(now) || !d.ctx.in_window(intended)) {
                break;
            }
            let Some(i) = self.stream_slot(&mut cur) else {
                blocked = true;
                d.grow(self);
                break;
            };
            let req = self.take_waiting(d.ctx, d.pacer, again);
            let resend = again.is_some();
            let c = &mut self.conns[i];
            c.open_stream(d.ctx, &mut self.sh, req, intended, resend, now);
        }
        for i in std::mem::take(&mut self.batch) {
            self.conns[i].send_out(d.ctx, &mut self.sh, now);
        }
        if !blocked {
            d.pool.free(now);
        }
        blocked
    }

    fn requeued(&self) -> usize {
        self.sh.requeue.len()
    }

    /// A closed slot may connect again, so the cap is checked when a slot is taken.
    fn may_connect(&self, _ctx: &Ctx<'a>, _max: usize) -> bool {
        true
    }

    fn covered(&self, ctx: &Ctx<'a>) -> u64 {
        covered(ctx.connecting, self.per_conn())
    }

    fn connect_more(&mut self, ctx: &mut Ctx<'a>, max: usize, now: Instant) -> bool {
        let Some(i) = self.slot_to_connect(max, now) else {
            return false;
        };
        self.conns[i].connect_open(ctx, now);
        // Failed at once: the next loop turn fails a waiting request with it.
        self.conns[i].is_open()
    }

    fn add_to_pool(&mut self, ctx: &mut Ctx<'a>, now: Instant) {
        let i = self.add_slot(now);
        self.conns[i].connect_open(ctx, now);
    }

    /// Each connection is open (the server's SETTINGS came) or failed; a failed connect of
    /// the pool fails no request: none was due yet.
    fn pool_opened(&mut self, ctx: &mut Ctx<'a>) -> usize {
        for i in std::mem::take(&mut ctx.retry) {
            let _ = self.conns[i].take_failure();
            self.closed.push(i);
        }
        self.conns.iter().filter(|c| c.free_streams() > 0).count()
    }

    /// Every request a GOAWAY took back and never sent again is counted as waiting, at its
    /// age, as in HTTP/1.1's open model.
    fn account_waiting(&mut self, ctx: &mut Ctx<'a>, end: Instant) {
        if !ctx.open {
            // The closed model's refused requests not sent again: each is in `sent` and in
            // `goaway_retries` already.
            return self.sh.requeue.clear();
        }
        for (intended, _) in std::mem::take(&mut self.sh.requeue) {
            if ctx.recorder.measuring(intended) && intended < end {
                ctx.recorder.waited(end.saturating_duration_since(intended));
            }
        }
    }

    fn add_stats(&mut self, stats: &mut Stats) {
        stats.h2 = self.sh.stats;
        stats.protocols = self.sh.protocols;
        if self.grpc && stats.grpc.failed_http_ok.is_none() {
            // A gRPC load with no call answered in the window still says so: none failed.
            stats.grpc.failed_http_ok = Some(0);
        }
    }
}

impl StreamConn for H2Conn {
    fn create(token: Token, streams: u32, grpc: bool, now: Instant) -> Self {
        H2Conn::new(token, streams, now).counting_grpc(grpc)
    }
    fn begin(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        H2Conn::begin(self, ctx, sh, now);
    }
    fn on_event(&mut self, ctx: &mut Ctx, sh: &mut Shared, closed: bool) {
        H2Conn::on_event(self, ctx, sh, closed);
    }
    fn take_failure(&mut self) -> Option<(ErrorKind, Option<ErrorReason>)> {
        H2Conn::take_failure(self)
    }
    fn expire(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        now: Instant,
        timeout: Duration,
        connect: Duration,
    ) {
        H2Conn::expire(self, ctx, sh, now, timeout, connect);
    }
    fn free_streams(&self) -> u32 {
        H2Conn::free_streams(self)
    }
    fn in_flight(&self) -> u32 {
        H2Conn::in_flight(self)
    }
    fn reusable(&self, now: Instant) -> bool {
        H2Conn::reusable(self, now)
    }
    fn connect_open(&mut self, ctx: &mut Ctx, now: Instant) {
        H2Conn::connect_open(self, ctx, now);
    }
    fn open_stream(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        req: Req,
        intended: Instant,
        resend: bool,
        now: Instant,
    ) {
        H2Conn::open_stream(self, ctx, sh, req, intended, resend, now);
    }
    fn send_out(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        H2Conn::send_out(self, ctx, sh, now);
    }
}

impl Connection for H2Conn {
    fn wake_at(&self) -> Instant {
        self.wake_at
    }
    fn is_open(&self) -> bool {
        H2Conn::is_open(self)
    }
    fn busy(&self) -> bool {
        self.in_flight() > 0
    }
    fn completed(&self) -> u32 {
        self.completed
    }
    fn abandoned(&self) -> u64 {
        self.measured_in_flight()
    }
    fn oldest(&self) -> Option<Instant> {
        H2Conn::oldest(self)
    }
    fn others(&self) -> impl Iterator<Item = Instant> + '_ {
        self.others_in_flight()
    }
    fn shut(&mut self) {
        self.close();
        self.phase = H2Phase::Idle;
    }
}
