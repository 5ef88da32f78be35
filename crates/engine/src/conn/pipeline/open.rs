//! `--pipeline N` in the open model: the pacer, not the connection, decides when a request
//! goes. The worker hands each due request to a connected slot with fewer than N unanswered
//! ([`Conn::pipe_room`] says how many it holds) and queues it there ([`Conn::start`] →
//! [`Conn::pipe_start`]); once the send window's due requests are all placed, each connection
//! that took some writes them in one `write` ([`Conn::pipe_send`]). The ring, the reading of
//! the responses and the resends after a lost connection are the closed model's
//! (`pipeline.rs`); only the top-up differs: an open-model connection never claims requests of
//! its own, and joins the worker's idle ones once every request it holds is answered.

use super::due_entry;
use crate::conn::{Conn, Phase};
use crate::ctx::Ctx;
use std::time::Instant;

impl Conn {
    /// Open model: queues a request due at `intended` (its latency counts from there). On a
    /// connected slot it waits for the window's one write; a closed slot connects for it.
    pub(in crate::conn) fn pipe_start(&mut self, ctx: &mut Ctx, intended: Instant, now: Instant) {
        let e = due_entry(ctx, intended, now);
        if self.fresh {
            self.measured = e.measured;
            self.first_on_spare(ctx);
        }
        let Some(pipe) = self.pipe.as_deref_mut() else {
            return;
        };
        pipe.ring.push_back(e);
        if self.stream.is_none() {
            self.reused = false;
            self.front_changed(ctx);
            self.connect(ctx, now);
        }
    }

    /// Open model: the requests this connection holds unanswered, when it can take one more
    /// now (connected, fewer than the depth); `None` otherwise, or without pipelining.
    pub fn pipe_room(&self) -> Option<usize> {
        let pipe = self.pipe.as_deref()?;
        let connected = matches!(self.phase, Phase::Idle | Phase::Writing | Phase::Reading);
        let held = pipe.ring.len();
        (connected && self.stream.is_some() && held < pipe.depth).then_some(held)
    }

    /// Open model: the request just queued is the first of this send window on a connected
    /// slot, so the slot is to be written once the window's requests are placed.
    pub fn pipe_first_queued(&self) -> bool {
        let Some(pipe) = self.pipe.as_deref() else {
            return false;
        };
        let unsent = pipe.ring.iter().rev().take_while(|e| e.unsent).count();
        unsent == 1
            && self.stream.is_some()
            && self.phase != Phase::Connecting
            && self.phase != Phase::Handshaking
    }
}

/// The connected slot with the fewest requests unanswered (an idle one first): the least
/// head-of-line wait for the next request; `None` when every one holds the depth.
pub(crate) fn least_unanswered(conns: &[Conn]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, c) in conns.iter().enumerate() {
        let Some(held) = c.pipe_room() else {
            continue;
        };
        if held == 0 {
            return Some(i);
        }
        if best.is_none_or(|(_, b)| held < b) {
            best = Some((i, held));
        }
    }
    best.map(|(i, _)| i)
}
