//! Request bodies under HTTP/2 flow control (RFC 9113 §5.2, §6.9): a body goes as DATA
//! frames no larger than the server's SETTINGS_MAX_FRAME_SIZE and only within the
//! connection's and its stream's send windows. What the windows do not take waits in the
//! connection's `sending` queue, in the order the streams opened; the server's WINDOW_UPDATEs
//! (and a larger INITIAL_WINDOW_SIZE) reopen the windows, and the next batch of reads sends
//! the waiting bodies on, oldest stream first. A stream whose body is half-sent stays in
//! flight like any other: answered, reset, timed out, or at the run's end counted as not
//! completed (`abandoned`), never dropped.
//!
//! Apart from `conn.rs` because a bodyless request (the usual load) never comes here.

use super::{H2Conn, Shared};
use crate::ctx::Ctx;
use crate::h2::frame;
use std::time::Instant;

impl H2Conn {
    /// Slot `i` just sent the HEADERS of a request with a body: the body goes now as far as
    /// the windows allow, the rest waits behind earlier streams' bodies.
    pub(super) fn start_body(&mut self, ctx: &mut Ctx, sh: &Shared, i: usize, now: Instant) {
        self.slots[i].sending = true;
        self.sending.push(i);
        self.send_bodies(ctx, sh, now);
    }

    /// Sends the waiting bodies in order while the connection window is open; a stream whose
    /// own window is shut is passed over, not waited for.
    pub(super) fn send_bodies(&mut self, ctx: &mut Ctx, sh: &Shared, now: Instant) {
        let mut k = 0;
        while k < self.sending.len() && self.send_window > 0 {
            let i = self.sending[k];
            if self.send_body(ctx, sh, i, now) {
                self.sending.remove(k);
            } else {
                k += 1;
            }
        }
    }

    /// Queues as much of slot `i`'s body as the windows and the frame size take; `true` when
    /// its last byte (with END_STREAM) is queued.
    fn send_body(&mut self, ctx: &mut Ctx, sh: &Shared, i: usize, now: Instant) -> bool {
        let s = &mut self.slots[i];
        let body = if s.own_body {
            &self.bodies[i]
        } else {
            &sh.requests[usize::from(s.endpoint)].body
        };
        let before = self.out.len();
        while s.body_sent < body.len() {
            let room = self.send_window.min(s.window);
            let n = usize::try_from(room).unwrap_or(0).min(self.peer_max_frame);
            if n == 0 {
                break;
            }
            let n = n.min(body.len() - s.body_sent);
            let end = s.body_sent + n == body.len();
            frame::data(
                &mut self.out,
                s.id,
                &body[s.body_sent..s.body_sent + n],
                end,
            );
            s.body_sent += n;
            s.window -= n as i64;
            self.send_window -= n as i64;
        }
        if s.measured && self.out.len() > before {
            ctx.recorder.wrote(now, (self.out.len() - before) as u64);
        }
        let done = s.body_sent == body.len();
        if done {
            s.sending = false;
            s.wrote_at = now;
        }
        done
    }

    /// A WINDOW_UPDATE of `increment` for `stream` (0: the connection). Bodies waiting for it
    /// go after this batch of reads.
    pub(super) fn window_update(&mut self, stream: u32, increment: u32) {
        let inc = i64::from(increment);
        if stream == 0 {
            self.send_window += inc;
        } else if let Some(i) = self.slot_of(stream) {
            self.slots[i].window += inc;
        }
    }

    /// The server's SETTINGS_INITIAL_WINDOW_SIZE: new streams start with it, and the streams
    /// in flight gain (or lose) the difference (§6.9.2).
    pub(super) fn initial_window(&mut self, value: u32) {
        let delta = i64::from(value) - self.peer_window;
        self.peer_window = i64::from(value);
        for s in self.slots.iter_mut().filter(|s| s.id != 0) {
            s.window += delta;
        }
    }
}
