//! One HTTP/2 connection of a worker: connect (TLS with ALPN h2, or h2c with prior
//! knowledge), the preface and SETTINGS, then up to `--streams` requests in flight, each on
//! its own stream, each timed from its own HEADERS write. The server's SETTINGS are honoured
//! (MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE); received DATA is given back
//! with WINDOW_UPDATEs; PINGs are answered; RST_STREAM fails its stream (an error class by
//! code); a GOAWAY drains the connection: streams at or below its last stream id finish,
//! those above it were never processed and go again on a new connection.
//!
//! Frames to send are queued in one per-connection buffer and written in one `write` after
//! each batch of reads; the request frames are copied from blocks encoded before the run.

use super::frame::{self, code, flag, kind, setting, Event, FrameError, FrameReader, Head};
use super::hpack::{self, BadBlock, ResponseDecoder};
use super::{GrpcMessages, Req, Shared};
use crate::conn::{
    connect_error_kind, open_registered, read_error_kind, write_error_kind, READS_PER_TURN,
};
use crate::ctx::Ctx;
use crate::transport::Stream;
use loadbench_model::{ErrorKind, ErrorReason};
use loadbench_plan::Draw;
use mio::Token;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::time::{Duration, Instant};

#[doc(hidden)]
pub mod fuzz;
mod open;
mod send;

/// Our receive windows (stream and connection), as h2load's default (`-w 30 -W 30`).
const OUR_WINDOW: u32 = (1 << 30) - 1;
/// The highest stream id a client may use.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;
/// First wait before reconnecting after a failed connect; doubles per failure.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest wait between reconnects after failed connects.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The largest response header block (HEADERS and its CONTINUATIONs) read: as HTTP/1.1's
/// head limit. A larger one fails the connection (`malformed_response`, `head_over_64_kib`),
/// so a server that sends CONTINUATION frames without end cannot grow the generator's memory.
pub const MAX_HEADER_BLOCK: usize = 64 * 1024;

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H2Phase {
    /// No socket: not started, failed, or the run needs no more requests.
    Idle,
    /// The TCP connect is under way.
    Connecting,
    /// TLS only: the handshake is under way.
    Handshaking,
    /// Our preface is sent; waiting for the server's first SETTINGS before opening streams
    /// (so its MAX_CONCURRENT_STREAMS is known).
    Preface,
    /// Streams may be opened.
    Open,
}

/// A stream slot: one request in flight (`id` 0: free).
#[derive(Debug, Clone, Copy)]
struct Slot {
    id: u32,
    endpoint: u16,
    /// Its values' draw, when it is assembled per request (a GOAWAY's resend keeps it).
    draw: Option<Draw>,
    /// Its body is the connection's `bodies[slot]` (a request with values), not the fixed
    /// request's.
    own_body: bool,
    measured: bool,
    /// When the request was due, latency counts from here: when its HEADERS were queued and
    /// written, or with `--no-keepalive` when its connection began to connect (as HTTP/1.1).
    since: Instant,
    /// When its HEADERS were queued.
    sent_at: Instant,
    /// When its last byte (END_STREAM) was queued: the HEADERS, or the body's last DATA.
    wrote_at: Instant,
    first_byte_at: Option<Instant>,
    status: u16,
    body: u64,
    read_bytes: u64,
    /// DATA bytes received and not yet given back with a WINDOW_UPDATE.
    unacked: u32,
    /// Request body bytes sent so far.
    body_sent: usize,
    /// The stream's send window (the server's INITIAL_WINDOW_SIZE, its WINDOW_UPDATEs, less
    /// what was sent).
    window: i64,
    /// Its body is not all sent: the slot is in the connection's `sending` queue.
    sending: bool,
    /// It was sent before and refused by a GOAWAY: a second refusal is an error.
    resend: bool,
    /// The answer's `grpc-status`, once a header block carried one.
    grpc: Option<u16>,
    /// A gRPC call's response messages so far.
    messages: GrpcMessages,
}

impl Slot {
    /// A new stream `id` for request `req`, due `since`, with the send window `window`.
    fn stream(
        id: u32,
        req: Req,
        measured: bool,
        since: Instant,
        window: i64,
        now: Instant,
    ) -> Slot {
        Slot {
            id,
            endpoint: req.endpoint,
            draw: req.draw,
            own_body: req.draw.is_some(),
            measured,
            since,
            window,
            ..Slot::free(now)
        }
    }

    fn free(now: Instant) -> Slot {
        Slot {
            id: 0,
            endpoint: 0,
            draw: None,
            own_body: false,
            measured: false,
            since: now,
            sent_at: now,
            wrote_at: now,
            first_byte_at: None,
            status: 0,
            body: 0,
            read_bytes: 0,
            unacked: 0,
            body_sent: 0,
            window: 0,
            sending: false,
            resend: false,
            grpc: None,
            messages: GrpcMessages::default(),
        }
    }
}

/// A failure that ends the connection: its class and reason.
#[derive(Debug, Clone, Copy)]
struct ConnError(ErrorKind, Option<ErrorReason>);

impl From<FrameError> for ConnError {
    fn from(_: FrameError) -> Self {
        ConnError(ErrorKind::MalformedResponse, Some(ErrorReason::H2Frame))
    }
}

/// A protocol error in the server's frames.
fn protocol() -> ConnError {
    FrameError::TooLarge.into()
}

/// A response header block over [`MAX_HEADER_BLOCK`].
#[cold]
fn block_too_large() -> ConnError {
    ConnError(
        ErrorKind::MalformedResponse,
        Some(ErrorReason::HeadOver64KiB),
    )
}

/// One HTTP/2 connection slot of a worker.
pub struct H2Conn {
    token: Token,
    stream: Option<Stream>,
    /// Where the connection is.
    pub phase: H2Phase,
    /// When the connect (or the phase before `Open`) began, for `--connect-timeout`.
    pub since: Instant,
    out: Vec<u8>,
    out_pos: usize,
    reader: FrameReader,
    payload: Vec<u8>,
    block: Vec<u8>,
    block_stream: u32,
    block_end: bool,
    decoder: ResponseDecoder,
    slots: Vec<Slot>,
    /// Requests with values: each slot's assembled body (reused from stream to stream).
    bodies: Vec<Vec<u8>>,
    active: u32,
    limit: u32,
    next_id: u32,
    send_window: i64,
    peer_window: i64,
    peer_max_frame: usize,
    unacked: u32,
    /// No new streams: a GOAWAY came, or the stream ids ran out.
    draining: bool,
    /// The GOAWAY's last stream id and code.
    goaway: Option<(u32, u32)>,
    /// The current connection has answered a request (later ones count as reused).
    served: bool,
    /// When the current connection began to connect.
    opened_at: Instant,
    /// Slots whose request body waits for flow-control window, in the order their streams
    /// opened (see `send.rs`).
    sending: Vec<usize>,
    /// Requests this slot completed in the measured window.
    pub completed: u32,
    backoff: Duration,
    /// When a backed-off slot may connect again.
    pub wake_at: Instant,
    /// Open model: why the last connect failed, until the worker takes it.
    failed: Option<(ErrorKind, Option<ErrorReason>)>,
    /// Open model: what a connection opened before the measured window has not recorded yet
    /// (see `open.rs`).
    deferred: open::Deferred,
    /// A `grpc://` load: each measured answer is counted by its `grpc-status` (by the
    /// recorder) and its response messages.
    grpc: bool,
}

impl H2Conn {
    /// An idle slot for up to `streams` requests in flight.
    pub fn new(token: Token, streams: u32, now: Instant) -> Self {
        H2Conn {
            token,
            stream: None,
            phase: H2Phase::Idle,
            since: now,
            out: Vec::new(),
            out_pos: 0,
            reader: FrameReader::new(frame::DEFAULT_MAX_FRAME),
            payload: Vec::new(),
            block: Vec::new(),
            block_stream: 0,
            block_end: false,
            decoder: ResponseDecoder::default(),
            slots: vec![Slot::free(now); streams as usize],
            bodies: Vec::new(),
            active: 0,
            limit: streams,
            next_id: 1,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            peer_window: i64::from(frame::DEFAULT_WINDOW),
            peer_max_frame: frame::DEFAULT_MAX_FRAME as usize,
            unacked: 0,
            draining: false,
            goaway: None,
            served: false,
            opened_at: now,
            sending: Vec::new(),
            completed: 0,
            backoff: Duration::ZERO,
            wake_at: now,
            failed: None,
            deferred: open::Deferred::default(),
            grpc: false,
        }
    }

    /// With `on` (a `grpc://` load), the slot counts each answer's `grpc-status`.
    pub fn counting_grpc(mut self, on: bool) -> Self {
        self.grpc = on;
        self
    }

    /// Closed model: opens the connection if it has none, else fills its free streams.
    pub fn begin(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        match self.phase {
            H2Phase::Idle if ctx.wants_more(now) || !sh.requeue.is_empty() => {
                self.connect(ctx, now)
            }
            H2Phase::Open => self.fill_and_flush(ctx, sh, now),
            _ => {}
        }
    }

    fn connect(&mut self, ctx: &mut Ctx, now: Instant) {
        self.reset_connection(now);
        self.since = Instant::now().max(now);
        self.opened_at = self.since;
        self.phase = H2Phase::Connecting;
        ctx.connect_begun(self.since);
        match open_registered(ctx, self.token) {
            Ok(s) => self.stream = Some(s),
            Err(kind) => self.fail_connect(ctx, kind, now),
        }
    }

    /// A new connection's state: no streams, default windows and limits, a fresh HPACK table.
    fn reset_connection(&mut self, now: Instant) {
        self.out.clear();
        self.out_pos = 0;
        self.reader = FrameReader::new(frame::DEFAULT_MAX_FRAME);
        self.block_stream = 0;
        self.decoder = ResponseDecoder::default();
        self.slots.iter_mut().for_each(|s| *s = Slot::free(now));
        self.active = 0;
        self.limit = self.slots.len() as u32;
        self.next_id = 1;
        self.send_window = i64::from(frame::DEFAULT_WINDOW);
        self.peer_window = i64::from(frame::DEFAULT_WINDOW);
        self.peer_max_frame = frame::DEFAULT_MAX_FRAME as usize;
        self.unacked = 0;
        self.draining = false;
        self.goaway = None;
        self.served = false;
        self.sending.clear();
        self.deferred = open::Deferred::default();
    }

    /// Handles a readiness event. `read_closed`: the peer's FIN (or an error) is queued.
    pub fn on_event(&mut self, ctx: &mut Ctx, sh: &mut Shared, read_closed: bool) {
        match self.phase {
            H2Phase::Connecting => self.on_connect_ready(ctx, sh),
            H2Phase::Handshaking => self.drive_handshake(ctx, sh),
            H2Phase::Preface | H2Phase::Open => self.on_ready(ctx, sh, read_closed),
            H2Phase::Idle => {}
        }
    }

    fn on_connect_ready(&mut self, ctx: &mut Ctx, sh: &mut Shared) {
        let Some(stream) = self.stream.as_ref() else {
            return;
        };
        let now = Instant::now();
        match stream.connect_status() {
            Ok(false) => {}
            Ok(true) => {
                let took = now.saturating_duration_since(self.since);
                ctx.growth.connected(took);
                if ctx.recorder.measuring(self.since) && ctx.in_window(now) {
                    ctx.recorder.connected(took);
                } else if ctx.open {
                    self.deferred.connect = Some(took);
                }
                if ctx.tls.is_some() {
                    self.since = now;
                    self.phase = H2Phase::Handshaking;
                    return self.drive_handshake(ctx, sh);
                }
                self.start_h2(ctx, sh, now);
            }
            Err(e) => self.fail_connect(ctx, connect_error_kind(&e), now),
        }
    }

    /// TLS: the handshake as far as the socket allows; once done, ALPN must have chosen h2.
    #[cold]
    fn drive_handshake(&mut self, ctx: &mut Ctx, sh: &mut Shared) {
        let Some(tls) = self.stream.as_mut().and_then(Stream::tls_mut) else {
            return;
        };
        match tls.handshake() {
            Ok(false) => {}
            Ok(true) if tls.alpn() != Some(&b"h2"[..]) => {
                self.fail_connect(ctx, ErrorKind::TlsHandshake, Instant::now())
            }
            Ok(true) => {
                let now = Instant::now();
                let took = now.saturating_duration_since(self.since);
                ctx.growth.connected(took);
                if ctx.recorder.measuring(self.since) && ctx.in_window(now) {
                    ctx.recorder.handshake(took, tls.resumed());
                } else if ctx.open {
                    self.deferred.handshake = Some((took, tls.resumed()));
                }
                self.start_h2(ctx, sh, now);
            }
            Err(_) => self.fail_connect(ctx, ErrorKind::TlsHandshake, Instant::now()),
        }
    }

    /// Sends the preface, our SETTINGS and the connection window, then reads what came.
    fn start_h2(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        self.phase = H2Phase::Preface;
        self.since = now;
        self.out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut self.out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, OUR_WINDOW),
            ],
        );
        frame::window_update(&mut self.out, 0, OUR_WINDOW - frame::DEFAULT_WINDOW);
        // A TLS stream may hold records read during the handshake: no new edge announces them.
        self.on_ready(ctx, sh, false);
    }

    /// Reads until drained, handles every frame, opens free streams, writes what is queued.
    fn on_ready(&mut self, ctx: &mut Ctx, sh: &mut Shared, read_closed: bool) {
        // The worker's one buffer is lent out for the reads (the recorder is in `ctx` too).
        let mut buf = std::mem::take(&mut ctx.buf);
        let result = self.read_all(ctx, sh, &mut buf, read_closed);
        ctx.buf = buf;
        let now = Instant::now();
        match result {
            Ok(true) => self.after_read(ctx, sh, now),
            Ok(false) => self.on_eof(ctx, sh, now),
            Err(e) => self.fail_conn(ctx, sh, e, now),
        }
    }

    /// `Ok(false)` at the peer's close. A short read means drained (as for HTTP/1.1), unless
    /// the FIN is queued behind the data.
    fn read_all(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        buf: &mut [u8],
        read_closed: bool,
    ) -> Result<bool, ConnError> {
        for _ in 0..READS_PER_TURN {
            let Some(stream) = self.stream.as_mut() else {
                return Ok(true);
            };
            match stream.read(buf) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.process(ctx, sh, &buf[..n], Instant::now())?;
                    if n < buf.len() && !read_closed {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(ConnError(read_error_kind(&e), None)),
            }
        }
        // A server that never stops sending: the others (and the timeouts) get their turn,
        // and a new event resumes this one.
        if let Some(stream) = self.stream.as_mut() {
            let _ = stream.rearm(&ctx.registry, self.token);
        }
        Ok(true)
    }

    /// Feeds the frame reader; each frame is handled as it completes.
    fn process(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        data: &[u8],
        now: Instant,
    ) -> Result<(), ConnError> {
        let mut reader = std::mem::replace(&mut self.reader, FrameReader::new(0));
        let mut payload = std::mem::take(&mut self.payload);
        let result = reader.feed(data, &mut payload, |ev| self.on_frame(ctx, sh, ev, now));
        self.reader = reader;
        self.payload = payload;
        result
    }

    fn on_frame(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        ev: Event<'_>,
        now: Instant,
    ) -> Result<(), ConnError> {
        match ev {
            Event::Data {
                stream,
                flow,
                body,
                bytes,
                end,
            } => {
                if self.block_stream != 0 {
                    return Err(protocol());
                }
                self.on_data(ctx, stream, (flow, body, bytes), end, now)
            }
            Event::Frame(head, payload) => {
                if self.block_stream != 0 && head.kind != kind::CONTINUATION {
                    return Err(protocol());
                }
                self.on_control(ctx, sh, head, payload, now)
            }
        }
    }

    /// Body bytes of a stream: counted, given back to the windows, and the end completes it.
    #[inline]
    /// `(flow, body, bytes)`: the bytes against the windows, the body bytes among them and
    /// those bytes (a gRPC call's messages are counted in them).
    fn on_data(
        &mut self,
        ctx: &mut Ctx,
        stream: u32,
        (flow, body, bytes): (u32, u32, &[u8]),
        end: bool,
        now: Instant,
    ) -> Result<(), ConnError> {
        self.unacked += flow;
        let Some(i) = self.slot_of(stream) else {
            return Ok(());
        };
        let grpc = self.grpc;
        let s = &mut self.slots[i];
        if s.status == 0 {
            // DATA before the response's final HEADERS: a frame out of order.
            return Err(protocol());
        }
        if grpc {
            s.messages.feed(bytes);
        }
        s.body += u64::from(body);
        s.read_bytes += u64::from(flow);
        s.unacked += flow;
        if end {
            self.complete(ctx, i, now);
            return Ok(());
        }
        if s.unacked >= OUR_WINDOW / 2 {
            frame::window_update(&mut self.out, stream, s.unacked);
            s.unacked = 0;
        }
        Ok(())
    }

    /// Every frame but DATA.
    fn on_control(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        head: Head,
        payload: &[u8],
        now: Instant,
    ) -> Result<(), ConnError> {
        match head.kind {
            kind::HEADERS => {
                if head.stream == 0 {
                    return Err(protocol());
                }
                let fragment = frame::headers_fragment(head, payload)?;
                if fragment.len() > MAX_HEADER_BLOCK {
                    return Err(block_too_large());
                }
                self.block.clear();
                self.block.extend_from_slice(fragment);
                self.block_stream = head.stream;
                self.block_end = head.flags & flag::END_STREAM != 0;
                self.header_fragment_end(ctx, head, now)
            }
            kind::CONTINUATION => {
                if head.stream != self.block_stream || head.stream == 0 {
                    return Err(protocol());
                }
                if self.block.len() + payload.len() > MAX_HEADER_BLOCK {
                    return Err(block_too_large());
                }
                self.block.extend_from_slice(payload);
                self.header_fragment_end(ctx, head, now)
            }
            kind::RST_STREAM => {
                if let Some(i) = self.slot_of(head.stream) {
                    let reason = ErrorReason::h2_code(false, frame::be32(payload, 0));
                    self.fail_stream(ctx, i, ErrorKind::H2RstStream, Some(reason), now);
                }
                Ok(())
            }
            kind::SETTINGS => self.on_settings(ctx, sh, head, payload),
            kind::PING if head.flags & flag::ACK == 0 => {
                frame::frame(&mut self.out, kind::PING, flag::ACK, 0, payload);
                Ok(())
            }
            kind::GOAWAY => {
                self.on_goaway(ctx, sh, payload, now);
                Ok(())
            }
            kind::WINDOW_UPDATE => {
                self.window_update(head.stream, frame::be32(payload, 0) & frame::MAX_WINDOW);
                Ok(())
            }
            kind::PUSH_PROMISE => Err(protocol()),
            _ => Ok(()),
        }
    }

    /// A HEADERS or CONTINUATION frame ended; with END_HEADERS the block is decoded (always,
    /// so the HPACK table stays in step) and its stream gets its status, or completes.
    fn header_fragment_end(
        &mut self,
        ctx: &mut Ctx,
        head: Head,
        now: Instant,
    ) -> Result<(), ConnError> {
        if head.flags & flag::END_HEADERS == 0 {
            return Ok(());
        }
        let stream = std::mem::take(&mut self.block_stream);
        let heads = self.decoder.decode(&self.block).map_err(|BadBlock| {
            ConnError(ErrorKind::MalformedResponse, Some(ErrorReason::H2Hpack))
        })?;
        let Some(i) = self.slot_of(stream) else {
            return Ok(());
        };
        let s = &mut self.slots[i];
        s.read_bytes += self.block.len() as u64 + 9;
        if s.first_byte_at.is_none() {
            s.first_byte_at = Some(now);
            if s.measured && ctx.in_window(now) {
                let from = if ctx.open { s.sent_at } else { s.since };
                ctx.recorder.first_byte(now.saturating_duration_since(from));
            }
        }
        if heads.grpc.is_some() {
            s.grpc = heads.grpc;
        }
        match heads.status {
            // An interim response (1xx): the final one follows.
            Some(code) if code < 200 && !self.block_end => {}
            Some(code) => s.status = code,
            None => {}
        }
        if self.block_end {
            self.complete(ctx, i, now);
        }
        Ok(())
    }

    /// The server's SETTINGS: acknowledged and applied; the first one opens the connection.
    fn on_settings(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        head: Head,
        payload: &[u8],
    ) -> Result<(), ConnError> {
        if head.flags & flag::ACK != 0 {
            return Ok(());
        }
        if head.stream != 0 || !payload.len().is_multiple_of(6) {
            return Err(protocol());
        }
        for pair in payload.chunks_exact(6) {
            let value = frame::be32(pair, 2);
            match u16::from_be_bytes([pair[0], pair[1]]) {
                setting::MAX_CONCURRENT_STREAMS => {
                    self.limit = value.min(self.slots.len() as u32);
                    sh.server_max_streams(value);
                    if value == 0 && ctx.in_window(Instant::now()) {
                        sh.stats.zero_streams += 1;
                    }
                }
                setting::INITIAL_WINDOW_SIZE if value > frame::MAX_WINDOW => return Err(protocol()),
                setting::INITIAL_WINDOW_SIZE => self.initial_window(value),
                setting::MAX_FRAME_SIZE => {
                    let v = value.clamp(frame::DEFAULT_MAX_FRAME, frame::MAX_FRAME_LIMIT);
                    self.peer_max_frame = v as usize;
                }
                _ => {}
            }
        }
        frame::frame(&mut self.out, kind::SETTINGS, flag::ACK, 0, &[]);
        if self.phase == H2Phase::Preface {
            self.left_connect(ctx);
            self.phase = H2Phase::Open;
            let now = Instant::now();
            self.since = now;
            if ctx.recorder.measuring(self.since) && ctx.in_window(now) {
                sh.protocols.h2 += 1;
            } else if ctx.open {
                self.deferred.h2 = true;
            }
        }
        Ok(())
    }

    /// GOAWAY: no new streams here; those above its last stream id were never processed, so
    /// they go again on a new connection (`sh.requeue`, before any new request), once: their
    /// send stays counted (each send is one in `sent`, the refused one also in
    /// `goaway_retries`), and a request refused a second time fails as `h2_goaway` with the
    /// GOAWAY's code, so a server that refuses every stream cannot make a run re-send forever.
    #[cold]
    fn on_goaway(&mut self, ctx: &mut Ctx, sh: &mut Shared, payload: &[u8], now: Instant) {
        let last = frame::be32(payload, 0) & frame::MAX_WINDOW;
        let code = frame::be32(payload, 4);
        self.draining = true;
        self.goaway = Some((last, code));
        if ctx.recorder.measuring(now) && ctx.in_window(now) {
            sh.stats.goaways += 1;
        }
        for i in 0..self.slots.len() {
            let s = self.slots[i];
            if s.id == 0 || s.id <= last {
                continue;
            }
            if s.resend {
                let reason = Some(ErrorReason::h2_code(true, code));
                self.fail_stream(ctx, i, ErrorKind::H2Goaway, reason, now);
                continue;
            }
            if s.measured && ctx.in_window(now) {
                sh.stats.goaway_retries += 1;
            }
            if ctx.in_window(now) {
                let req = Req {
                    endpoint: s.endpoint,
                    draw: s.draw,
                };
                sh.requeue.push((s.since, req));
            } else if s.measured {
                // Past the deadline it will not go again: counted as abandoned.
                ctx.records(true, s.since, now);
            }
            self.release(i, now);
        }
    }

    /// The slot holding `stream`, if it is one of ours in flight.
    #[inline]
    fn slot_of(&self, stream: u32) -> Option<usize> {
        if stream == 0 {
            return None;
        }
        self.slots.iter().position(|s| s.id == stream)
    }

    /// Frees slot `i` (and takes it out of the queue of bodies to send).
    #[inline]
    fn release(&mut self, i: usize, now: Instant) {
        if self.slots[i].sending {
            self.sending.retain(|&w| w != i);
        }
        self.slots[i] = Slot::free(now);
        self.active -= 1;
    }

    /// A complete response on slot `i`: recorded as HTTP/1.1's are.
    #[inline]
    fn complete(&mut self, ctx: &mut Ctx, i: usize, now: Instant) {
        let s = self.slots[i];
        if s.status == 0 {
            let reason = Some(ErrorReason::H2Hpack);
            return self.fail_stream(ctx, i, ErrorKind::MalformedResponse, reason, now);
        }
        if s.sending {
            // The server answered before the whole body went: the rest is not wanted.
            frame::rst_stream(&mut self.out, s.id, code::CANCEL);
        }
        if ctx.records(s.measured, s.since, now) {
            self.completed = self.completed.saturating_add(1);
            let latency = now.saturating_duration_since(s.since);
            let sent = self.sent_from(ctx, &s);
            ctx.recorder
                .response(now, latency, sent, s.status, s.read_bytes);
            if ctx.recorder.per_endpoint() {
                ctx.recorder
                    .endpoint_response(s.endpoint, latency, s.status);
            }
            ctx.recorder.body(s.body, self.served);
            if self.grpc {
                ctx.recorder.grpc_answer(s.status, s.grpc, s.messages.whole);
            }
            let first = s.first_byte_at.unwrap_or(now);
            ctx.recorder.phases(
                s.wrote_at.saturating_duration_since(s.sent_at),
                first.saturating_duration_since(s.wrote_at),
                now.saturating_duration_since(first),
            );
        }
        self.served = true;
        self.backoff = Duration::ZERO;
        self.release(i, now);
    }

    /// A stream that ended without a complete response: counted, freed.
    #[cold]
    fn fail_stream(
        &mut self,
        ctx: &mut Ctx,
        i: usize,
        kind: ErrorKind,
        reason: Option<ErrorReason>,
        now: Instant,
    ) {
        let s = self.slots[i];
        if ctx.records(s.measured, s.since, now) {
            ctx.recorder.error(now, kind, s.read_bytes);
            if let Some(r) = reason {
                ctx.recorder.reason(r);
            }
            ctx.recorder.endpoint_error(s.endpoint, kind);
        }
        self.release(i, now);
    }

    /// After a batch of reads: give back the connection window, close a drained connection,
    /// open free streams, write.
    fn after_read(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        if self.unacked >= OUR_WINDOW / 2 {
            frame::window_update(&mut self.out, 0, self.unacked);
            self.unacked = 0;
        }
        if self.draining && self.active == 0 {
            return self.reopen(ctx, now);
        }
        self.fill_and_flush(ctx, sh, now);
    }

    /// A drained connection (after GOAWAY, out of stream ids, or its one request answered
    /// with `--no-keepalive`) says GOAWAY and is closed; the slot connects anew on the next
    /// loop turn.
    ///
    /// A connection the server sent GOAWAY on before it answered anything is a refusal: if
    /// no stream was ever opened on it, it fails like a connect (`connect_error`,
    /// `h2_goaway_at_open`); else its refused streams go again. Either way the slot backs off
    /// (10 ms doubling to 1 s, as after a failed connect) before it connects again, so a
    /// server that refuses every connection cannot make the generator reconnect in a loop.
    #[cold]
    fn reopen(&mut self, ctx: &mut Ctx, now: Instant) {
        frame::goaway(&mut self.out, code::NO_ERROR);
        if let Some(s) = self.stream.as_mut() {
            let _ = s.write(&self.out[self.out_pos..]);
        }
        let refused = self.goaway.is_some() && !self.served;
        if refused && self.next_id == 1 {
            if self.phase == H2Phase::Open {
                // Counted as a connect again, so failing it as one leaves the count right.
                self.phase = H2Phase::Preface;
                ctx.connecting += 1;
            }
            let reason = Some(ErrorReason::H2GoawayAtOpen);
            return self.fail_connect_for(ctx, ErrorKind::ConnectError, reason, now);
        }
        self.close();
        self.phase = H2Phase::Idle;
        if refused {
            self.back_off(ctx, now);
            if !ctx.open {
                return ctx.backoff.push(self.token.0);
            }
        }
        ctx.retry.push(self.token.0);
    }

    /// The slot waits before it connects again: 10 ms, doubling per failure to 1 s, until a
    /// response completes.
    #[cold]
    fn back_off(&mut self, ctx: &mut Ctx, now: Instant) {
        self.backoff = (self.backoff * 2).clamp(BACKOFF_MIN, BACKOFF_MAX);
        self.wake_at = now + self.backoff;
        if !ctx.open && ctx.recorder.measuring(now) && ctx.in_window(now) {
            let end = ctx.window_end().unwrap_or(self.wake_at).min(self.wake_at);
            ctx.recorder.backoff(end.saturating_duration_since(now));
        }
    }

    /// Sends the bodies the windows now take, opens streams up to the limits, then writes.
    #[inline]
    fn fill_and_flush(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        if self.phase == H2Phase::Open {
            if !self.sending.is_empty() {
                self.send_bodies(ctx, sh, now);
            }
            if !self.draining && !ctx.open {
                self.fill(ctx, sh, now);
            }
        }
        self.flush(ctx, sh, now);
    }

    /// Starts requests while a stream is free (our `--streams` and the server's limit) and the
    /// run wants more; each body goes as far as the windows let it (`send.rs`). With
    /// `--no-keepalive` a connection carries one request.
    fn fill(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        let mut free = 0;
        while self.active < self.limit {
            if self.next_id > LAST_STREAM_ID {
                self.draining = true;
                return;
            }
            // A request a GOAWAY refused goes again first, on its own claim.
            let again = if ctx.in_window(now) && !ctx.stopping() {
                sh.requeue.pop()
            } else {
                None
            };
            let (req, since) = match again {
                Some((since, req)) => (req, since),
                None if ctx.claim(now) => {
                    let since = if ctx.keepalive { now } else { self.opened_at };
                    (Req::claim(ctx), since)
                }
                None => return,
            };
            while self.slots[free].id != 0 {
                free += 1;
            }
            let before = self.out.len();
            let id = self.next_id;
            self.queue_headers(ctx, sh, free, id, req);
            let measured = ctx.recorder.measuring(since) && ctx.in_window(since);
            if measured {
                if again.is_some() {
                    ctx.recorder.resent(now);
                } else {
                    ctx.recorder.sent(now, now, now);
                }
                ctx.recorder.wrote(now, (self.out.len() - before) as u64);
            }
            let mut slot = Slot::stream(id, req, measured, since, self.peer_window, now);
            slot.resend = again.is_some();
            self.occupy(ctx, sh, free, slot, now);
            if !ctx.keepalive {
                self.draining = true;
                return;
            }
        }
    }

    /// Slot `free` holds a new stream (its HEADERS queued): one more in flight, and its body
    /// goes as far as the windows let it (`send.rs`).
    fn occupy(&mut self, ctx: &mut Ctx, sh: &mut Shared, free: usize, slot: Slot, now: Instant) {
        let bodyless = if slot.own_body {
            self.bodies[free].is_empty()
        } else {
            sh.requests[usize::from(slot.endpoint)].body.is_empty()
        };
        self.slots[free] = slot;
        self.next_id += 2;
        self.active += 1;
        sh.stats.max_streams_in_flight = sh.stats.max_streams_in_flight.max(self.active);
        if !bodyless {
            self.start_body(ctx, sh, free, now);
        }
    }

    /// Queues the HEADERS of stream `id` carrying `req` on slot `free`: the fixed request's
    /// block, or (with values) the request assembled as HTTP/1.1, encoded, its body kept in
    /// the slot's `bodies` entry.
    fn queue_headers(&mut self, ctx: &mut Ctx, sh: &mut Shared, free: usize, id: u32, req: Req) {
        let Some(draw) = req.draw else {
            let fixed = &sh.requests[usize::from(req.endpoint)];
            let bodyless = fixed.body.is_empty();
            return frame::headers(
                &mut self.out,
                id,
                &fixed.block,
                bodyless,
                self.peer_max_frame,
            );
        };
        sh.scratch.clear();
        ctx.assemble(req.endpoint, draw, self.token.0, &mut sh.scratch);
        let https = ctx.tls.is_some();
        // The plan rendered this request's shape; its values cannot break the head's end.
        let body_at =
            hpack::encode_http1(&sh.scratch, https, &mut sh.block).unwrap_or(sh.scratch.len());
        if self.bodies.len() < self.slots.len() {
            self.bodies.resize_with(self.slots.len(), Vec::new);
        }
        let body = &mut self.bodies[free];
        body.clear();
        body.extend_from_slice(&sh.scratch[body_at..]);
        let bodyless = body.is_empty();
        frame::headers(&mut self.out, id, &sh.block, bodyless, self.peer_max_frame);
    }

    /// Writes the queued frames until done or the socket is full (the writable edge resumes).
    fn flush(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        while self.out_pos < self.out.len() {
            match stream.write(&self.out[self.out_pos..]) {
                Ok(0) => {
                    return self.fail_conn(ctx, sh, ConnError(ErrorKind::WriteError, None), now)
                }
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => {
                    let kind = write_error_kind(&e);
                    return self.fail_conn(ctx, sh, ConnError(kind, None), now);
                }
            }
        }
        self.out.clear();
        self.out_pos = 0;
    }

    /// The peer closed the connection.
    fn on_eof(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        if self.active == 0 && self.phase == H2Phase::Open {
            if self.goaway.is_none() {
                ctx.recorder.stale_close();
            }
            return self.reopen(ctx, now);
        }
        self.fail_conn(
            ctx,
            sh,
            ConnError(ErrorKind::ClosedBeforeResponseComplete, None),
            now,
        );
    }

    /// The connection failed: before it was open, as a connect failure; after, every stream in
    /// flight fails (as `h2_goaway CODE` when a GOAWAY had promised to finish it).
    #[cold]
    fn fail_conn(&mut self, ctx: &mut Ctx, sh: &mut Shared, e: ConnError, now: Instant) {
        let _ = sh;
        if self.phase != H2Phase::Open {
            return match e {
                ConnError(kind, _) if kind.before_send() => self.fail_connect(ctx, kind, now),
                // The server broke the framing before the connection opened (a bad SETTINGS).
                ConnError(_, Some(_)) => {
                    let reason = Some(ErrorReason::H2BadPreface);
                    self.fail_connect_for(ctx, ErrorKind::ConnectError, reason, now)
                }
                ConnError(..) => self.fail_connect(ctx, ErrorKind::ConnectError, now),
            };
        }
        if let Some(r) = e.1 {
            let code = match r {
                ErrorReason::H2Hpack => code::COMPRESSION_ERROR,
                _ => code::PROTOCOL_ERROR,
            };
            frame::goaway(&mut self.out, code);
            if let Some(s) = self.stream.as_mut() {
                let _ = s.write(&self.out[self.out_pos..]);
            }
        }
        for i in 0..self.slots.len() {
            let id = self.slots[i].id;
            if id == 0 {
                continue;
            }
            match self.goaway {
                Some((last, code)) if id <= last => {
                    let reason = Some(ErrorReason::h2_code(true, code));
                    self.fail_stream(ctx, i, ErrorKind::H2Goaway, reason, now);
                }
                _ => self.fail_stream(ctx, i, e.0, e.1, now),
            }
        }
        self.close();
        self.phase = H2Phase::Idle;
        ctx.retry.push(self.token.0);
    }

    /// A connection that never opened: one claimed request fails with `kind` (so a dead
    /// target ends a count run, as with HTTP/1.1), and the slot backs off before it connects
    /// again.
    #[cold]
    fn fail_connect(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) {
        self.fail_connect_for(ctx, kind, None, now);
    }

    /// [`H2Conn::fail_connect`] with the reason below the class, if any.
    #[cold]
    fn fail_connect_for(
        &mut self,
        ctx: &mut Ctx,
        kind: ErrorKind,
        reason: Option<ErrorReason>,
        now: Instant,
    ) {
        self.left_connect(ctx);
        if ctx.open {
            return self.fail_open_connect(ctx, (kind, reason), now);
        }
        if ctx.claim(now) {
            let measured = ctx.recorder.measuring(now) && ctx.in_window(now);
            if ctx.records(measured, now, now) {
                ctx.recorder.error(now, kind, 0);
                if let Some(r) = reason {
                    ctx.recorder.reason(r);
                }
                ctx.recorder.endpoint_error(0, kind);
            }
        }
        self.close();
        self.phase = H2Phase::Idle;
        self.back_off(ctx, now);
        ctx.backoff.push(self.token.0);
    }

    /// Housekeeping: a connection not open within `--connect-timeout`, and streams without an
    /// answer within `--timeout` (each reset with CANCEL and counted as `read_timeout`).
    pub fn expire(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        now: Instant,
        timeout: Duration,
        connect_timeout: Duration,
    ) {
        let age = now.saturating_duration_since(self.since);
        match self.phase {
            H2Phase::Idle => return,
            H2Phase::Connecting | H2Phase::Preface if age > connect_timeout => {
                return self.fail_connect(ctx, ErrorKind::ConnectTimeout, now)
            }
            H2Phase::Handshaking if age > connect_timeout => {
                return self.fail_connect(ctx, ErrorKind::TlsHandshake, now)
            }
            // Open, but the server allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0) and
            // has not raised it within `--timeout`: no request can go; fails like a connect.
            H2Phase::Open if self.limit == 0 && self.active == 0 && age > timeout => {
                self.phase = H2Phase::Preface;
                ctx.connecting += 1;
                let reason = Some(ErrorReason::H2ZeroStreams);
                return self.fail_connect_for(ctx, ErrorKind::ConnectError, reason, now);
            }
            H2Phase::Open => {}
            _ => return,
        }
        let mut expired = false;
        for i in 0..self.slots.len() {
            let s = self.slots[i];
            if s.id != 0 && now.saturating_duration_since(self.sent_from(ctx, &s)) > timeout {
                frame::rst_stream(&mut self.out, s.id, code::CANCEL);
                self.fail_stream(ctx, i, ErrorKind::ReadTimeout, None, now);
                expired = true;
            }
        }
        if expired {
            self.after_read(ctx, sh, now);
        }
    }

    /// Drops the socket; the slot stays and may connect again.
    pub fn close(&mut self) {
        self.stream = None;
    }

    /// Has a socket, for the live views' open-connection count.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Requests in flight on this connection.
    pub fn in_flight(&self) -> u32 {
        self.active
    }

    /// Measured requests written and unanswered: what `abandoned` counts at the end.
    pub fn measured_in_flight(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.id != 0 && s.measured)
            .count() as u64
    }

    /// When the oldest request in flight was sent.
    pub fn oldest(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter(|s| s.id != 0)
            .map(|s| s.since)
            .min()
    }

    /// When each request in flight but the oldest was sent (or due, in the open model): at
    /// the end each is censored at its age, beside the oldest (the connection's own figure).
    pub fn others_in_flight(&self) -> impl Iterator<Item = Instant> + '_ {
        let mut oldest = self.oldest();
        self.slots
            .iter()
            .filter(|s| s.id != 0)
            .map(|s| s.since)
            .filter(move |&t| oldest.take_if(|o| *o == t).is_none())
    }
}
