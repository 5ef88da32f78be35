//! HTTP/1.1 (and `--pipeline N`) as a [`Protocol`] of the worker loop: its slots are
//! [`Conn`]s. What is its own: in the open model a due request takes an idle connection (a
//! closed one connects again) or, pipelined, a connected slot with fewer than N unanswered;
//! each pipelined connection writes the requests it took in one `write` once the send window's
//! requests are all placed.

use super::{least_unanswered, Conn, Phase};
use crate::ctx::{Ctx, WorkerConfig};
use crate::pacer::Pacer;
use crate::worker::{Connection, Due, Protocol};
use crate::WorkerLimits;
use loadbench_model::ErrorKind;
use mio::Token;
use std::time::Instant;

/// A worker's HTTP/1.1 connections.
pub(crate) struct Http1 {
    conns: Vec<Conn>,
    /// `--pipeline N`: requests each connection keeps in flight (1: one at a time).
    pipeline: u16,
    /// Open model, pipelined: connections given requests in this send window, to write once
    /// all its due requests are placed.
    queued: Vec<usize>,
}

impl Http1 {
    /// The closed model's connection slots (none in the open model: its pool opens later).
    pub(crate) fn new(cfg: &WorkerConfig<'_>, now: Instant) -> Self {
        Http1 {
            conns: (0..cfg.connections)
                .map(|i| Conn::new(Token(i), now).pipelined(cfg.pipeline))
                .collect(),
            pipeline: cfg.pipeline,
            queued: Vec::new(),
        }
    }

    /// Open model: one more connection slot, connecting with no request of its own;
    /// `counted`: its connect time is recorded (see [`Conn::connect_spare`]).
    fn add_spare(&mut self, ctx: &mut Ctx, now: Instant, counted: bool) {
        let i = self.conns.len();
        self.conns
            .push(Conn::new(Token(i), now).pipelined(self.pipeline));
        self.conns[i].connect_spare(ctx, now, counted);
    }

    /// Open model, `--pipeline N`: a connected slot with fewer than N requests unanswered
    /// for the oldest waiting request: the last idle one when it is open, else the one with
    /// the fewest unanswered (least head-of-line wait). `None` when pipelining is off or
    /// every connected slot holds N: then [`Http1::free_conn`] reconnects or grows the pool.
    fn pipe_conn(&mut self, ctx: &mut Ctx) -> Option<usize> {
        if self.pipeline < 2 {
            return None;
        }
        if let Some(&i) = ctx.idle.last() {
            if self.conns[i].pipe_room().is_some() {
                return ctx.idle.pop();
            }
        }
        let i = least_unanswered(&self.conns)?;
        if let Some(k) = ctx.idle.iter().position(|&j| j == i) {
            ctx.idle.swap_remove(k);
        }
        Some(i)
    }

    fn free_conn(&mut self, d: &mut Due<'_, '_>) -> Option<usize> {
        free_conn(self, d)
    }

    /// Open model, `--pipeline N`: each connection that took requests in this send window
    /// writes them, in one `write` when the socket takes it.
    fn write_queued(&mut self, ctx: &mut Ctx, now: Instant) {
        for k in 0..self.queued.len() {
            let i = self.queued[k];
            self.conns[i].pipe_send(ctx, now);
        }
        self.queued.clear();
    }

    fn place_due(&mut self, d: &mut Due<'_, '_>) -> bool {
        let now = d.now;
        while let Some((due, step)) = next_due(d, now) {
            let Some(i) = self.pipe_conn(d.ctx).or_else(|| self.free_conn(d)) else {
                return true;
            };
            if d.ctx.stopping() || !d.ctx.in_window(due) {
                if !self.conns[i].in_flight() {
                    d.ctx.idle.push(i);
                }
                return false;
            }
            match d.ctx.flow_ready.pop_front().filter(|_| step) {
                Some((_, vu)) => self.conns[i].take_step(vu),
                None => d.pacer.advance(),
            }
            self.conns[i].start(d.ctx, due, now);
            if self.conns[i].pipe_first_queued() {
                self.queued.push(i);
            }
        }
        d.pool.free(now);
        false
    }
}

/// A free connection for the oldest waiting request: an idle one (a closed one connects
/// again, if the connect limit allows). With none, the pool grows ([`Due::grow`]). One
/// request in flight per connection: HTTP/1.1 and WebSocket.
pub(crate) fn free_conn<'a, P: Protocol<'a>>(proto: &mut P, d: &mut Due<'_, 'a>) -> Option<usize> {
    let limit = d.pacer.pacing().connect_limit;
    *d.grow_at = None;
    if let Some(&i) = d.ctx.idle.last() {
        if proto.conns()[i].is_open() || d.ctx.connecting < limit {
            return d.ctx.idle.pop();
        }
        return None;
    }
    d.grow(proto);
    // A spare whose connect failed at once is idle (closed): the request takes it.
    d.ctx.idle.pop()
}

/// The oldest request due by `now`: a flow's waiting step (`true`) before a scheduled one
/// due at the same time or later.
#[inline]
fn next_due(d: &Due<'_, '_>, now: Instant) -> Option<(Instant, bool)> {
    let step = d.ctx.flow_next().filter(|&t| t <= now);
    let scheduled = d.pacer.due().filter(|&t| t <= now);
    match (step, scheduled) {
        (Some(s), Some(p)) if s <= p => Some((s, true)),
        (Some(s), None) => Some((s, true)),
        (_, Some(p)) => Some((p, false)),
        (None, None) => None,
    }
}

impl<'a> Protocol<'a> for Http1 {
    type Conn = Conn;

    fn stamps_arrivals(&self) -> bool {
        true
    }

    fn conns(&self) -> &[Conn] {
        &self.conns
    }

    fn conns_mut(&mut self) -> &mut [Conn] {
        &mut self.conns
    }

    fn release(&mut self) {
        self.conns = Vec::new();
    }

    #[inline]
    fn begin(&mut self, ctx: &mut Ctx<'a>, i: usize, now: Instant) {
        self.conns[i].begin(ctx, now);
    }

    #[inline]
    fn on_event(&mut self, ctx: &mut Ctx<'a>, i: usize, closed: bool) {
        if let Some(c) = self.conns.get_mut(i) {
            c.on_event(ctx, closed);
        }
    }

    fn lost(&mut self, ctx: &mut Ctx<'a>, _pacer: &mut Pacer<'a>, i: usize, now: Instant) {
        self.conns[i].begin(ctx, now);
    }

    fn expire(&mut self, ctx: &mut Ctx<'a>, now: Instant, limits: &WorkerLimits) {
        for c in &mut self.conns {
            let age = now.saturating_duration_since(c.since);
            let kind = match c.phase {
                Phase::Connecting if age > limits.connect_timeout => ErrorKind::ConnectTimeout,
                Phase::Handshaking if age > limits.connect_timeout => ErrorKind::TlsHandshake,
                Phase::Writing | Phase::Reading if age > limits.timeout => ErrorKind::ReadTimeout,
                _ => continue,
            };
            c.fail(ctx, kind, now);
        }
    }

    /// Starts every request due by now, each on an idle connection (pipelined: a connection
    /// with fewer than N unanswered takes it), then writes the pipelined ones.
    fn send_due(&mut self, d: &mut Due<'_, 'a>) -> bool {
        let blocked = self.place_due(d);
        self.write_queued(d.ctx, d.now);
        blocked
    }

    fn may_connect(&self, ctx: &Ctx<'a>, max: usize) -> bool {
        self.conns.len() < max && ctx.idle.is_empty()
    }

    /// Each spare connecting serves one waiting request.
    fn covered(&self, ctx: &Ctx<'a>) -> u64 {
        ctx.spares as u64
    }

    fn connect_more(&mut self, ctx: &mut Ctx<'a>, _max: usize, now: Instant) -> bool {
        let counted = ctx.recorder.measuring(now) && ctx.in_window(now);
        self.add_spare(ctx, now, counted);
        true
    }

    fn add_to_pool(&mut self, ctx: &mut Ctx<'a>, now: Instant) {
        self.add_spare(ctx, now, true);
    }

    fn pool_opened(&mut self, _ctx: &mut Ctx<'a>) -> usize {
        self.conns.iter().filter(|c| c.is_open()).count()
    }
}

impl Connection for Conn {
    fn wake_at(&self) -> Instant {
        self.wake_at
    }
    fn is_open(&self) -> bool {
        Conn::is_open(self)
    }
    fn busy(&self) -> bool {
        // A flow's virtual user between two steps (thinking) has an iteration to finish.
        self.in_flight() || self.mid_flow()
    }
    fn completed(&self) -> u32 {
        self.completed
    }
    fn abandoned(&self) -> u64 {
        Conn::abandoned(self)
    }
    fn oldest(&self) -> Option<Instant> {
        self.in_flight().then_some(self.intended)
    }
    fn answered_late(&self) -> Option<Instant> {
        self.in_flight_at_end
    }
    fn others(&self) -> impl Iterator<Item = Instant> + '_ {
        self.queued_behind()
    }
    fn shut(&mut self) {
        self.close();
    }
}
