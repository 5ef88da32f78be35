//! `--pipeline N` for HTTP/1.1 (closed model): a connection keeps up to N requests written
//! before their responses are read. It exists beside the one-request path of `conn.rs`, which
//! stays as it was: a connection at depth 1 has no [`Pipe`], and the only cost it pays is the
//! `is_some` test on that `None`.
//!
//! A pipelined connection keeps a small ring of the requests in flight, in the order written
//! (their intended time, when their write was issued, when their last byte left, which request
//! of the mix). Responses come back in the same order, so the reader always parses the front
//! one; a read that carries several responses hands the rest of its bytes to the next in line.
//! Each request's latency counts from its own write (closed model: its intended time is its
//! claim, at the write), never from the first one's. After the responses of a read are
//! recorded, once no more than N/2 (rounded down) remain unanswered, the ring is topped up
//! to N and the new requests go out in one `write`: between N/2 and N requests are in flight,
//! sent in batches rather than one `write` (and one segment) per response.
//!
//! When the connection ends with requests outstanding (`Connection: close`, EOF, a reset, a
//! timeout, a malformed response), nothing is lost silently: the response being read takes the
//! error if any of it had arrived, or if the connection had answered nothing yet, or if it was
//! already resent once after such a close; every request behind it got no byte of an answer,
//! so it is written again on a new connection (`Stats::pipeline_resent`; its first `sent` is
//! taken back, so it is counted once). Each lost connection answered or failed the request in
//! front, so the resends always move on (a server that closes every connection after 5
//! requests, with 8 pipelined, resends some requests more than once).

use super::{read_error_kind, write_error_kind, Conn, Phase};
use crate::ctx::Ctx;
use crate::http1::{EofOutcome, Progress};
use crate::transport::Stream;
use loadbench_model::{ErrorKind, ReopenReason};
use loadbench_plan::Draw;
use std::collections::VecDeque;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::time::Instant;

mod open;
pub(crate) use open::least_unanswered;

/// One request in a pipelined connection's ring.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// When it was due (closed model: when it was claimed). Latency counts from here.
    intended: Instant,
    /// When its write was issued (its latest, after a resend).
    sent: Instant,
    /// When its last byte left (after `sent` while the socket held the batch back).
    wrote_at: Instant,
    /// Which request of the mix (0 without one).
    endpoint: u16,
    /// Its values' draw, when it is assembled per request (kept, so a resend writes the
    /// same values).
    draw: Option<Draw>,
    /// It lies in the measured window.
    measured: bool,
    /// Claimed, or taken back after a close: to be written on the next connection.
    unsent: bool,
    /// Already written again once after its connection closed unanswered.
    retried: bool,
    /// Not the first request written on its connection (a keep-alive request).
    reused: bool,
    /// Where its bytes end in the pipe's `out` buffer while they are being written (valid
    /// for the `unwritten` entries only).
    out_end: usize,
}

/// The requests in flight on one pipelined connection and the bytes still to write.
#[derive(Debug)]
pub struct Pipe {
    depth: usize,
    ring: VecDeque<Entry>,
    /// Requests queued for the socket; its capacity is kept, so no allocation per request.
    out: Vec<u8>,
    out_pos: usize,
    /// Entries at the back of the ring whose bytes have not all been written.
    unwritten: usize,
    /// Requests written on the current connection.
    written_here: u32,
    /// Open model: when the connection last made room for a request (connected, or an
    /// answer took one off the ring): a request queued now counts as free for it no sooner
    /// (the latest, so a wait for a busy connection is never taken out of a latency).
    room_since: Instant,
}

impl Pipe {
    fn new(depth: u16) -> Pipe {
        let depth = usize::from(depth);
        Pipe {
            depth,
            ring: VecDeque::with_capacity(depth),
            out: Vec::new(),
            out_pos: 0,
            unwritten: 0,
            written_here: 0,
            room_since: Instant::now(),
        }
    }

    /// Requests of the ring that were written and have no outcome yet (measured ones).
    fn written_measured(&self) -> u64 {
        self.ring.iter().filter(|e| e.measured && !e.unsent).count() as u64
    }

    /// The front request's bytes are not all written yet (a large body still going out).
    fn front_unwritten(&self) -> bool {
        let pending = self.out_pos < self.out.len();
        let front_in_batch = self.unwritten >= self.ring.len();
        pending && front_in_batch && self.ring.front().is_some_and(|e| self.out_pos < e.out_end)
    }
}

/// A new request claimed at `now`: due now, written on the next send.
fn claimed(ctx: &mut Ctx, now: Instant) -> Entry {
    due_entry(ctx, now, now)
}

/// A request due at `intended` (open model: its scheduled time), taken at `now`: written on
/// the next send, its latency counted from `intended`.
fn due_entry(ctx: &mut Ctx, intended: Instant, now: Instant) -> Entry {
    let endpoint = ctx.pick();
    Entry {
        intended,
        sent: now,
        wrote_at: now,
        endpoint,
        draw: ctx.draw(endpoint),
        measured: ctx.recorder.measuring(intended) && ctx.in_window(intended),
        unsent: true,
        retried: false,
        reused: false,
        out_end: 0,
    }
}

impl Conn {
    /// `--pipeline N`: this slot keeps up to `depth` requests in flight. Depth 1 (or 0) leaves
    /// the connection as it was: one request at a time, no ring.
    pub fn pipelined(mut self, depth: u16) -> Self {
        if depth > 1 {
            self.pipe = Some(Box::new(Pipe::new(depth)));
        }
        self
    }

    /// Requests written on this connection with no outcome yet that lie in the measured
    /// window: what `abandoned` counts when the run ends.
    pub fn abandoned(&self) -> u64 {
        match &self.pipe {
            Some(p) => p.written_measured(),
            None => u64::from(self.sent_in_flight() && self.measured),
        }
    }

    /// The intended times of the requests in flight behind the first one (pipelined only),
    /// to censor at their age when the run ends.
    pub fn queued_behind(&self) -> impl Iterator<Item = Instant> + '_ {
        let ring = self.pipe.as_ref().map(|p| &p.ring);
        ring.into_iter()
            .flat_map(|r| r.iter().skip(1).map(|e| e.intended))
    }

    /// Whether requests wait in the ring (for a reconnect, or their answers).
    pub(super) fn pipe_holds(&self) -> bool {
        self.pipe.as_ref().is_some_and(|p| !p.ring.is_empty())
    }

    /// Closed model: begins with a claimed request (or those waiting to be resent) on a new
    /// connection; the rest of the ring is claimed once it is up.
    pub(super) fn pipe_begin(&mut self, ctx: &mut Ctx, now: Instant) {
        let Some(pipe) = self.pipe.as_deref_mut() else {
            return;
        };
        if pipe.ring.is_empty() {
            if !ctx.claim(now) {
                self.phase = Phase::Idle;
                return;
            }
            pipe.ring.push_back(claimed(ctx, now));
        }
        self.front_changed(ctx);
        if self.stream.is_some() {
            self.pipe_send(ctx, now);
        } else {
            self.connect(ctx, now);
        }
    }

    /// The front of the ring changed (a response completed, or a new connection starts): the
    /// parser and the fields the housekeeping and the end of the run read follow it.
    fn front_changed(&mut self, ctx: &Ctx) {
        let Some(e) = self.pipe.as_ref().and_then(|p| p.ring.front().copied()) else {
            return;
        };
        self.intended = e.intended;
        self.since = e.sent;
        self.measured = e.measured;
        self.endpoint = e.endpoint;
        self.retried = e.retried;
        self.read_bytes = 0;
        self.parser.reset(ctx.head_of(e.endpoint));
    }

    /// [`Conn::pipe_send`] on a connection free for its requests from `free` on (connected
    /// then, for requests that waited for the connect).
    pub(crate) fn pipe_send_free(&mut self, ctx: &mut Ctx, now: Instant, free: Instant) {
        if let Some(pipe) = self.pipe.as_deref_mut() {
            pipe.room_since = pipe.room_since.max(free);
        }
        self.pipe_send(ctx, now);
    }

    /// Writes what waits to be resent, then claims requests up to the depth (closed model;
    /// the open model's were queued by [`Conn::start`]), all in one buffer and (when the
    /// socket takes it) one `write`.
    pub(crate) fn pipe_send(&mut self, ctx: &mut Ctx, now: Instant) {
        let Some(pipe) = self.pipe.as_deref_mut() else {
            return;
        };
        // The front is new when nothing of it was written yet (a new connection, or the ring
        // ran empty): the parser starts on its response.
        let fresh_front = pipe.ring.front().is_none_or(|e| e.unsent);
        // Topped up only once half the ring is answered, so requests go out at least N/2 per
        // write: one `write` (and segment) per response cost a third more CPU than wrk's
        // batches of N.
        if !ctx.open && pipe.ring.len() <= pipe.depth / 2 {
            while pipe.ring.len() < pipe.depth && ctx.claim(now) {
                pipe.ring.push_back(claimed(ctx, now));
            }
        }
        let free = pipe.room_since;
        for e in pipe.ring.iter_mut().filter(|e| e.unsent) {
            queue(
                &mut pipe.out,
                e,
                ctx,
                now,
                free,
                pipe.written_here,
                self.token.0,
            );
            pipe.written_here += 1;
            pipe.unwritten += 1;
        }
        if fresh_front {
            self.front_changed(ctx);
        }
        self.pipe_flush(ctx, now);
    }

    /// Writes what the socket takes of the queued requests; once all is out, their last byte
    /// left now.
    fn pipe_flush(&mut self, ctx: &mut Ctx, now: Instant) {
        let (Some(stream), Some(pipe)) = (self.stream.as_mut(), self.pipe.as_deref_mut()) else {
            return;
        };
        let counted = ctx.recorder.measuring(now) && ctx.in_window(now);
        while pipe.out_pos < pipe.out.len() {
            match stream.write(&pipe.out[pipe.out_pos..]) {
                Ok(0) => return self.pipe_lost(ctx, ErrorKind::WriteError, Instant::now()),
                Ok(n) => {
                    pipe.out_pos += n;
                    if counted {
                        ctx.recorder.wrote(now, n as u64);
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => {
                    self.phase = Phase::Writing;
                    return;
                }
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return self.pipe_lost(ctx, write_error_kind(&e), Instant::now()),
            }
        }
        pipe.out.clear();
        pipe.out_pos = 0;
        let done = Instant::now();
        let n = pipe.unwritten;
        pipe.ring
            .iter_mut()
            .rev()
            .take(n)
            .for_each(|e| e.wrote_at = done);
        pipe.unwritten = 0;
        self.phase = if pipe.ring.is_empty() {
            Phase::Idle
        } else {
            Phase::Reading
        };
    }

    /// A readiness event on a pipelined connection: write what waits, read what arrived,
    /// then top the ring up again (open model: once every request is answered, the connection
    /// joins the idle ones).
    pub(super) fn pipe_event(&mut self, ctx: &mut Ctx, read_closed: bool) {
        if self.phase == Phase::Writing {
            self.pipe_flush(ctx, Instant::now());
        }
        if self.stream.is_some() && self.pipe_read(ctx, read_closed) {
            self.pipe_send(ctx, Instant::now());
            if ctx.open && !self.pipe_holds() {
                ctx.idle.push(self.token.0);
            }
        }
    }

    /// Reads until the socket is drained (a short read), or on to EOF when the peer's FIN is
    /// queued. Returns whether the connection is still up.
    fn pipe_read(&mut self, ctx: &mut Ctx, read_closed: bool) -> bool {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.read(&mut ctx.buf) {
                Ok(0) => {
                    self.pipe_eof(ctx);
                    return false;
                }
                Ok(n) => {
                    if !self.pipe_feed(ctx, n, Instant::now()) {
                        return false;
                    }
                    if n < ctx.buf.len() && !read_closed {
                        return true;
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return true,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => {
                    self.pipe_lost(ctx, read_error_kind(&e), Instant::now());
                    return false;
                }
            }
        }
    }

    /// Feeds `n` bytes of the worker's buffer to the responses in line: each complete one is
    /// recorded, and the next in line parses the rest. Returns false when the connection was
    /// given up (the server closes it, bytes nobody asked for, a malformed response).
    fn pipe_feed(&mut self, ctx: &mut Ctx, n: usize, now: Instant) -> bool {
        let mut off = 0;
        while off < n {
            if !self.pipe_holds() {
                ctx.recorder.reopened(ReopenReason::ExtraBytes);
                self.pipe_broken(ctx, None, now);
                return false;
            }
            if !self.parser.started() {
                self.first_byte(ctx, now);
            }
            match self.parser.feed(&ctx.buf[off..n]) {
                Ok(Progress::Complete { consumed }) => {
                    off += consumed;
                    self.read_bytes += consumed as u64;
                    if !self.pipe_complete(ctx, now) {
                        return false;
                    }
                }
                Ok(Progress::NeedMore) => {
                    self.read_bytes += (n - off) as u64;
                    off = n;
                }
                Err(e) => {
                    if self.measured && ctx.in_window(now) {
                        ctx.recorder.reason(e.reason());
                    }
                    self.pipe_broken(ctx, Some(ErrorKind::MalformedResponse), now);
                    return false;
                }
            }
        }
        true
    }

    /// The front response is complete: record it, and the next in line becomes the front.
    /// Returns false when the response ended the connection (`Connection: close`, HTTP/1.0),
    /// or came before its request was all written: as on a one-request connection, the rest
    /// of that request is not sent and the connection cannot carry another (the server still
    /// expects the body's end), so it is closed (`answered_before_body`) and the requests
    /// behind it, of which no byte was written, go on a new one.
    fn pipe_complete(&mut self, ctx: &mut Ctx, now: Instant) -> bool {
        let cut_short = self.pipe.as_deref().is_some_and(Pipe::front_unwritten);
        let keep = ctx.keepalive && self.parser.keep_alive() && !cut_short;
        let reason = if cut_short {
            ReopenReason::AnsweredBeforeBody
        } else if self.parser.connection_close() {
            ReopenReason::ConnectionClose
        } else {
            ReopenReason::NotReusable
        };
        if cut_short {
            // The write ends at the answer (as `Conn::first_byte` has it for one request).
            if let Some(e) = self.pipe.as_deref_mut().and_then(|p| p.ring.front_mut()) {
                e.wrote_at = self.first_byte_at;
            }
        }
        self.record_front(ctx, now);
        self.reused = true;
        if keep {
            self.front_changed(ctx);
            return true;
        }
        if ctx.keepalive {
            ctx.recorder.reopened(reason);
        }
        self.pipe_broken(ctx, None, now);
        false
    }

    /// Takes the front request off the ring and records its response.
    fn record_front(&mut self, ctx: &mut Ctx, now: Instant) {
        let Some(pipe) = self.pipe.as_deref_mut() else {
            return;
        };
        let Some(e) = pipe.ring.pop_front() else {
            return;
        };
        pipe.room_since = now;
        if !ctx.records(e.measured, e.intended, now) {
            return;
        }
        self.completed = self.completed.saturating_add(1);
        let latency = now.saturating_duration_since(e.intended);
        let status = self.parser.status();
        ctx.recorder
            .response(now, latency, e.sent, status, self.read_bytes);
        if ctx.recorder.per_endpoint() {
            ctx.recorder.endpoint_response(e.endpoint, latency, status);
        }
        ctx.recorder.body(self.parser.body_bytes(), e.reused);
        ctx.recorder.phases(
            e.wrote_at.saturating_duration_since(e.sent),
            self.first_byte_at.saturating_duration_since(e.wrote_at),
            now.saturating_duration_since(self.first_byte_at),
        );
    }

    /// The peer closed the connection: a response ended by the close is complete; one cut
    /// short is an error; every request behind it is resent.
    fn pipe_eof(&mut self, ctx: &mut Ctx) {
        let now = Instant::now();
        if !self.pipe_holds() {
            if ctx.keepalive {
                ctx.recorder.reopened(ReopenReason::ClosedAfterResponse);
            }
            return self.pipe_broken(ctx, None, now);
        }
        match self.parser.on_eof() {
            EofOutcome::Complete => {
                self.record_front(ctx, now);
                self.pipe_broken(ctx, None, now);
            }
            EofOutcome::NothingReceived => {
                self.pipe_lost(ctx, ErrorKind::ClosedBeforeResponseComplete, now)
            }
            EofOutcome::Truncated => {
                let kind = ErrorKind::ClosedBeforeResponseComplete;
                self.pipe_broken(ctx, Some(kind), now);
            }
        }
    }

    /// The connection failed with `kind`. When no byte of the front response had arrived on
    /// a connection that had already answered and the server cannot have read what was
    /// written (a failed write, a reset, bytes discarded unread: see `Conn::retry_stale`),
    /// the front request is resent like those behind it; otherwise it takes the error.
    fn pipe_lost(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) {
        let stale = self.reused
            && !self.retried
            && !self.parser.started()
            && (matches!(kind, ErrorKind::Reset | ErrorKind::WriteError)
                || self.stream.as_ref().is_some_and(Stream::discarded_unread));
        self.pipe_broken(ctx, (!stale).then_some(kind), now);
    }

    /// The connection is given up: the front request takes `front_error` (when given), every
    /// written request behind it is resent on a new connection, and the slot reconnects on
    /// the next loop turn (closed model: after a backoff when the connect failed). Open
    /// model: a slot with nothing left to resend joins the idle ones (closed), as
    /// `Conn::fail` leaves a one-request connection.
    pub(super) fn pipe_broken(
        &mut self,
        ctx: &mut Ctx,
        front_error: Option<ErrorKind>,
        now: Instant,
    ) {
        if let Some(kind) = front_error {
            if let Some(e) = self.pipe.as_mut().and_then(|p| p.ring.pop_front()) {
                record_error(ctx, &e, kind, self.read_bytes, now);
            }
        }
        if let Some(pipe) = self.pipe.as_deref_mut() {
            pipe.ring.iter_mut().for_each(|e| take_back(ctx, e, now));
            pipe.out.clear();
            pipe.out_pos = 0;
            pipe.unwritten = 0;
            pipe.written_here = 0;
        }
        self.close();
        self.reused = false;
        self.phase = Phase::Idle;
        self.front_changed(ctx);
        if ctx.open && !self.pipe_holds() {
            ctx.idle.push(self.token.0);
        } else if !ctx.open && front_error.is_some_and(ErrorKind::before_send) {
            self.back_off(ctx, now);
        } else {
            ctx.retry.push(self.token.0);
        }
    }
}

/// Queues request `e` for writing at `now` and counts it sent (once: a resend's first send
/// was taken back).
#[allow(clippy::too_many_arguments)]
fn queue(
    out: &mut Vec<u8>,
    e: &mut Entry,
    ctx: &mut Ctx,
    now: Instant,
    free: Instant,
    written_here: u32,
    conn: usize,
) {
    match e.draw {
        Some(draw) => ctx.assemble(e.endpoint, draw, conn, out),
        None => out.extend_from_slice(ctx.request_of(e.endpoint)),
    }
    e.out_end = out.len();
    e.sent = now;
    e.wrote_at = now;
    e.unsent = false;
    e.reused = written_here > 0;
    if e.measured {
        if e.retried {
            ctx.recorder.resent(now);
        } else {
            e.intended = ctx.recorder.sent(now, e.intended, free);
        }
    }
}

/// A request behind a lost connection: kept, to be written again on the next one (its send
/// taken back, so `sent` counts it once). Never counted as an error here: the connection was
/// lost ahead of it, and each loss either answered or failed the request in front, so resending
/// always moves the run on.
fn take_back(ctx: &mut Ctx, e: &mut Entry, now: Instant) {
    if e.unsent {
        return;
    }
    if e.measured {
        ctx.recorder.pipeline_resend(e.sent, now);
    }
    e.retried = true;
    e.unsent = true;
}

/// A request without a complete response: counted as `kind` (as `Conn::fail` counts one).
fn record_error(ctx: &mut Ctx, e: &Entry, kind: ErrorKind, bytes: u64, now: Instant) {
    let unsent_late = kind.before_send() && !ctx.in_window(now);
    if !unsent_late && ctx.records(e.measured, e.intended, now) {
        ctx.recorder.error(now, kind, bytes);
        ctx.recorder.endpoint_error(e.endpoint, kind);
    }
}
