//! WebSocket as a [`Protocol`] of the worker loop: its slots are [`WsConn`]s, one message in
//! flight each. In the open model (`--rate`) a due message takes an idle connection as an
//! HTTP/1.1 request does (a closed one connects and upgrades again), and the pool grows by
//! one spare connect per waiting message no connect in progress covers.
//!
//! `--ws-idle`: the worker's share of the idle connections lives beside the slots, in
//! `held` (their tokens from [`HELD_BASE`] on, so no slot's index is one of theirs): opened a
//! batch at a time while the run goes, then silent until [`WebSocket::add_stats`] closes them
//! at the end and counts how each went (`WsStats::idle`).

use super::conn::{Held, Shared, WsConn, WsPhase};
use super::{Rng, WsSetup};
use crate::conn::free_conn;
use crate::ctx::{Ctx, WorkerConfig};
use crate::pacer::Pacer;
use crate::worker::{Connection, Due, Protocol};
use crate::WorkerLimits;
use loadbench_model::{ErrorKind, Stats, WsStats};
use mio::Token;
use std::time::Instant;

/// The first token of the held connections (`--ws-idle`): slot `i` of `held` has token
/// `HELD_BASE + i`, far above any request slot's (the pacer's timer is `usize::MAX`).
const HELD_BASE: usize = usize::MAX / 2 + 1;

/// Held connections begun between two polls, at most.
const HELD_BATCH: usize = 64;

/// Held connections opening at once, at most: a few listen backlogs' worth, so the server's
/// accept queue is not flooded (dropped SYNs are retried only a second later).
const HELD_OPENING_MAX: usize = 256;

/// A worker's WebSocket connections and what they share.
pub(crate) struct WebSocket<'a> {
    conns: Vec<WsConn>,
    sh: Shared<'a>,
    /// `--ws-idle`: this worker's idle connections (see [`HELD_BASE`]).
    held: Vec<WsConn>,
    /// How many of `held` have begun.
    held_begun: usize,
    /// How many of `held` are opening (connecting, in TLS, upgrading).
    held_opening: usize,
}

impl<'a> WebSocket<'a> {
    /// The closed model's connection slots (none in the open model: its pool opens later).
    pub(crate) fn new(cfg: &WorkerConfig<'a>, setup: &'a WsSetup, now: Instant) -> Self {
        WebSocket {
            conns: (0..cfg.connections)
                .map(|i| WsConn::new(Token(i), now))
                .collect(),
            sh: Shared {
                setup,
                rng: Rng::new(cfg.first_source as u64 + 1),
                stats: WsStats::default(),
                scratch: Vec::new(),
            },
            held: (0..cfg.ws_idle)
                .map(|i| WsConn::new(Token(HELD_BASE + i), now))
                .collect(),
            held_begun: 0,
            held_opening: 0,
        }
    }
}

impl WebSocket<'_> {
    /// Open model: one more slot, connecting and upgrading with no message of its own.
    fn add_spare(&mut self, ctx: &mut Ctx, now: Instant, counted: bool) {
        let i = self.conns.len();
        self.conns.push(WsConn::new(Token(i), now));
        self.conns[i].connect_spare(ctx, now, counted);
    }
}

impl<'a> Protocol<'a> for WebSocket<'a> {
    type Conn = WsConn;

    fn conns(&self) -> &[WsConn] {
        &self.conns
    }

    fn conns_mut(&mut self) -> &mut [WsConn] {
        &mut self.conns
    }

    fn release(&mut self) {
        self.conns = Vec::new();
    }

    #[inline]
    fn begin(&mut self, ctx: &mut Ctx<'a>, i: usize, now: Instant) {
        self.conns[i].begin(ctx, &mut self.sh, now);
    }

    #[inline]
    fn on_event(&mut self, ctx: &mut Ctx<'a>, i: usize, closed: bool) {
        if let Some(c) = self.conns.get_mut(i) {
            c.on_event(ctx, &mut self.sh, closed);
        } else if let Some(c) = i.checked_sub(HELD_BASE).and_then(|j| self.held.get_mut(j)) {
            let opening = c.opening();
            c.on_event(ctx, &mut self.sh, closed);
            if opening && !c.opening() {
                self.held_opening -= 1;
            }
        }
    }

    /// `--ws-idle`: begins the next batch of held connections, keeping at most
    /// [`HELD_OPENING_MAX`] opening; whether more may begin at once.
    fn open_held(&mut self, ctx: &mut Ctx<'a>, now: Instant) -> bool {
        let room = HELD_OPENING_MAX.saturating_sub(self.held_opening);
        let end = (self.held_begun + room.min(HELD_BATCH)).min(self.held.len());
        for c in &mut self.held[self.held_begun..end] {
            c.hold(ctx, now);
            self.held_opening += usize::from(c.opening());
        }
        self.held_begun = end;
        end < self.held.len() && self.held_opening < HELD_OPENING_MAX
    }

    /// Open model: a failed slot is put back on the idle list by the slot itself.
    fn lost(&mut self, _ctx: &mut Ctx<'a>, _pacer: &mut Pacer<'a>, _i: usize, _now: Instant) {}

    /// Connects, TLS handshakes and upgrades not done within `--connect-timeout`, messages
    /// without an answer within `--timeout`.
    fn expire(&mut self, ctx: &mut Ctx<'a>, now: Instant, limits: &WorkerLimits) {
        for c in &mut self.conns {
            let age = now.saturating_duration_since(c.since);
            let kind = match c.phase {
                WsPhase::Connecting if age > limits.connect_timeout => ErrorKind::ConnectTimeout,
                WsPhase::Handshaking if age > limits.connect_timeout => ErrorKind::TlsHandshake,
                WsPhase::Upgrading if age > limits.connect_timeout => ErrorKind::ReadTimeout,
                WsPhase::Waiting if age > limits.timeout => ErrorKind::ReadTimeout,
                _ => continue,
            };
            c.fail(ctx, kind, now);
        }
        for c in &mut self.held {
            let late = match c.phase {
                WsPhase::Connecting => ErrorKind::ConnectTimeout,
                WsPhase::Handshaking => ErrorKind::TlsHandshake,
                WsPhase::Upgrading => ErrorKind::ReadTimeout,
                _ => continue,
            };
            if now.saturating_duration_since(c.since) > limits.connect_timeout {
                c.fail(ctx, late, now);
                self.held_opening -= 1;
            }
        }
    }

    /// Starts every message due by now, each on an idle connection.
    fn send_due(&mut self, d: &mut Due<'_, 'a>) -> bool {
        let now = d.now;
        while let Some(due) = d.pacer.due().filter(|&t| t <= now) {
            let Some(i) = free_conn(self, d) else {
                return true;
            };
            if d.ctx.stopping() || !d.ctx.in_window(due) {
                d.ctx.idle.push(i);
                return false;
            }
            d.pacer.advance();
            self.conns[i].start(d.ctx, &mut self.sh, due, now);
        }
        d.pool.free(now);
        false
    }

    fn may_connect(&self, ctx: &Ctx<'a>, max: usize) -> bool {
        self.conns.len() < max && ctx.idle.is_empty()
    }

    /// Each spare connecting serves one waiting message.
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

    /// The counts; and the end of the held connections (closed with code 1000), each counted
    /// by how it went.
    fn add_stats(&mut self, stats: &mut Stats) {
        let idle = &mut self.sh.stats.idle;
        idle.requested = self.held.len() as u64;
        for c in &mut self.held {
            let end = c.release(&mut self.sh);
            let idle = &mut self.sh.stats.idle;
            match end {
                Held::No | Held::Opening => idle.unopened += 1,
                Held::Open => idle.held += 1,
                Held::Failed(kind) => *idle.failed.entry(kind).or_default() += 1,
                Held::Closed(code) => *idle.closed_early.entry(code).or_default() += 1,
            }
            if matches!(end, Held::Open | Held::Closed(_)) {
                idle.opened += 1;
            }
        }
        stats.ws = std::mem::take(&mut self.sh.stats);
    }
}

impl Connection for WsConn {
    fn wake_at(&self) -> Instant {
        self.wake_at
    }
    fn is_open(&self) -> bool {
        WsConn::is_open(self)
    }
    fn busy(&self) -> bool {
        WsConn::busy(self)
    }
    fn completed(&self) -> u32 {
        self.completed
    }
    fn abandoned(&self) -> u64 {
        WsConn::abandoned(self)
    }
    fn oldest(&self) -> Option<Instant> {
        WsConn::oldest(self)
    }
    fn answered_late(&self) -> Option<Instant> {
        self.in_flight_at_end
    }
    fn others(&self) -> impl Iterator<Item = Instant> + '_ {
        std::iter::empty()
    }
    fn shut(&mut self) {
        self.close();
    }
}
