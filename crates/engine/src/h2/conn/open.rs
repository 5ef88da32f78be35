//! An HTTP/2 connection in the open model (`--http2 --rate`): the worker, not the connection,
//! decides when a request starts. It hands a due request to a connection with a free stream
//! ([`H2Conn::open_stream`]), whose latency counts from its intended time; the frames of every
//! request handed over in one send window go out in one write ([`H2Conn::send_out`]). A
//! connection connects when the worker's pool grows ([`H2Conn::connect_open`]); while it
//! connects (TCP, TLS, the server's first SETTINGS) it counts as a connect in progress.
//!
//! Apart from `conn.rs` so the closed model's path stays as it was.

use super::{H2Conn, H2Phase, Slot, LAST_STREAM_ID};
use crate::ctx::Ctx;
use crate::h2::{Req, Shared};
use loadbench_model::{ErrorKind, ErrorReason};
use std::time::{Duration, Instant};

/// What a connection opened before the measured window (the initial pool, or during the
/// warm-up) records when a measured request first uses it, as HTTP/1.1's open model does: so
/// every connection the window used is counted once, with its connect, handshake and protocol.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Deferred {
    pub(super) connect: Option<Duration>,
    pub(super) handshake: Option<(Duration, bool)>,
    pub(super) h2: bool,
}

impl H2Conn {
    /// Streams a due request may take now: open, not draining, below our `--streams` and the
    /// server's MAX_CONCURRENT_STREAMS.
    #[inline]
    pub fn free_streams(&self) -> u32 {
        let usable = self.phase == H2Phase::Open && !self.draining;
        if usable && self.next_id <= LAST_STREAM_ID {
            self.limit.saturating_sub(self.active)
        } else {
            0
        }
    }

    /// No socket, and any connect backoff is over: the pool may connect this slot again.
    pub fn reusable(&self, now: Instant) -> bool {
        self.phase == H2Phase::Idle && self.stream.is_none() && self.wake_at <= now
    }

    /// Open model: connects this slot (the pool grows, or opens before the schedule).
    pub fn connect_open(&mut self, ctx: &mut Ctx, now: Instant) {
        self.connect(ctx, now);
    }

    /// Starts a request of `endpoint` due at `intended` on a free stream: its HEADERS (and
    /// as much of its body as the windows take) are queued, to go out with the others of the
    /// batch in [`H2Conn::send_out`]. `resend`: it was sent before on a connection that
    /// never processed it (a GOAWAY), so its send lag was recorded then.
    pub fn open_stream(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        req: Req,
        intended: Instant,
        resend: bool,
        now: Instant,
    ) {
        let free = self.slots.iter().position(|s| s.id == 0).unwrap_or(0);
        let before = self.out.len();
        let id = self.next_id;
        self.queue_headers(ctx, sh, free, id, req);
        let measured = ctx.recorder.measuring(intended) && ctx.in_window(intended);
        let mut start = intended;
        if measured {
            self.record_deferred(ctx, sh);
            if resend {
                ctx.recorder.resent(now);
            } else {
                // The stream was free for it since it was freed, and not before the
                // connection opened (a wait for the connect stays in the latency).
                let free_at = self.slots[free].since.max(self.since);
                start = ctx.recorder.sent(now, intended, free_at);
            }
            ctx.recorder.wrote(now, (self.out.len() - before) as u64);
        }
        let mut slot = Slot::stream(id, req, measured, start, self.peer_window, now);
        slot.resend = resend;
        self.occupy(ctx, sh, free, slot, now);
    }

    /// The first measured request on a connection opened before the window: its connect,
    /// handshake and protocol are recorded now.
    #[inline]
    fn record_deferred(&mut self, ctx: &mut Ctx, sh: &mut Shared) {
        let d = std::mem::take(&mut self.deferred);
        if let Some(took) = d.connect {
            ctx.recorder.connected(took);
        }
        if let Some((took, resumed)) = d.handshake {
            ctx.recorder.handshake(took, resumed);
        }
        if d.h2 {
            sh.protocols.h2 += 1;
        }
    }

    /// Writes what the batch queued (one write for all its requests, as the socket takes it).
    pub fn send_out(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        self.flush(ctx, sh, now);
    }

    /// Where a stream's service time, first byte and timeout count from: its HEADERS write in
    /// the open model (its latency counts from its intended time), else as before.
    #[inline]
    pub(super) fn sent_from(&self, ctx: &Ctx, s: &Slot) -> Instant {
        if ctx.open {
            s.sent_at
        } else {
            s.since
        }
    }

    /// The connect (TCP, TLS or the wait for the server's SETTINGS) ended: one fewer in
    /// progress.
    #[inline]
    pub(super) fn left_connect(&self, ctx: &mut Ctx) {
        let pending = matches!(
            self.phase,
            H2Phase::Connecting | H2Phase::Handshaking | H2Phase::Preface
        );
        if pending {
            ctx.connecting = ctx.connecting.saturating_sub(1);
        }
    }

    /// Open model: a connection that never opened held no request; the failure is handed to
    /// the worker, which fails the oldest waiting request with it (as HTTP/1.1's open model
    /// fails the request whose connect failed). The slot waits out a backoff before the pool
    /// may connect it again.
    #[cold]
    pub(super) fn fail_open_connect(
        &mut self,
        ctx: &mut Ctx,
        failure: (ErrorKind, Option<ErrorReason>),
        now: Instant,
    ) {
        self.close();
        self.phase = H2Phase::Idle;
        self.back_off(ctx, now);
        self.failed = Some(failure);
        ctx.retry.push(self.token.0);
    }

    /// The connect failure (class and reason) this slot has not handed to the worker yet.
    pub fn take_failure(&mut self) -> Option<(ErrorKind, Option<ErrorReason>)> {
        self.failed.take()
    }
}
