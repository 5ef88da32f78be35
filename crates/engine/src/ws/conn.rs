//! One WebSocket connection slot: connect (and, for `wss://`, the TLS handshake), upgrade,
//! then one message in flight at a time (closed model: the next is claimed once the answer
//! came; open model: the slot goes idle for the next due one). Its socket is edge-triggered,
//! so every event reads until the socket would block and writes what is pending.

use super::frame::{self, Head};
use super::{accept_key, check_upgrade, new_key, Rng, WsSetup, MAX_HEAD, PONG_BACKLOG};
use crate::conn::{
    back_off, connect_error_kind, connect_took, in_flight_at_end, open_registered, read_error_kind,
    write_error_kind, READS_PER_TURN,
};
use crate::ctx::Ctx;
use crate::transport::Stream;
use loadbench_model::{ErrorKind, ErrorReason, WsStats};
use loadbench_plan::Draw;
use loadbench_plan::WS_MAX_MATCHED;
use mio::Token;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::time::{Duration, Instant};

/// Where a slot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WsPhase {
    /// No connection.
    Idle,
    /// The TCP connect is in progress.
    Connecting,
    /// `wss://`: the TCP connection is up, the TLS handshake under way.
    Handshaking,
    /// The upgrade request is out, its answer not read yet.
    Upgrading,
    /// Upgraded, no message in flight.
    Ready,
    /// A message is out, its answer not complete yet.
    Waiting,
}

/// What a worker's slots share: the setup, the masks' generator, the counts.
pub(crate) struct Shared<'a> {
    pub(crate) setup: &'a WsSetup,
    pub(crate) rng: Rng,
    pub(crate) stats: WsStats,
    /// Per-request values: the message being assembled (the worker's one buffer).
    pub(crate) scratch: Vec<u8>,
}

/// `--ws-idle`: how a held (idle) connection went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// Not a held connection, or not begun yet.
    No,
    /// Connecting or upgrading.
    Opening,
    /// Upgraded, held.
    Open,
    /// Failed to open, with this class.
    Failed(ErrorKind),
    /// Opened, then closed by the server with this code (1006: without a close frame).
    Closed(u16),
}

/// The close code of a connection that ended without a close frame (RFC 6455, 7.1.5).
const ABNORMAL: u16 = 1006;

/// The close code the run's end sends on a held connection.
const NORMAL: u16 = 1000;

/// `--ws-match`: a connection's message buffer grown past this is let go after its message,
/// so only messages arriving at once hold memory (at most `WS_MAX_MATCHED` each).
const MSG_KEEP: usize = 16 << 10;

/// One connection slot.
pub(crate) struct WsConn {
    token: Token,
    stream: Option<Stream>,
    pub(crate) phase: WsPhase,
    /// Bytes to write (the upgrade, a message, pongs, a close) and how many went out.
    out: Vec<u8>,
    written: usize,
    /// What was read and not consumed yet (an upgrade head, a frame's head, a partial control
    /// frame: at most a few hundred bytes; a data frame's payload is never kept, see `skip`).
    rx: Vec<u8>,
    /// Payload bytes of the data frame being read still to come: counted as they arrive and
    /// dropped, so a server sending an endless frame costs no memory.
    skip: u64,
    /// That frame ends its message.
    skip_fin: bool,
    /// The `Sec-WebSocket-Accept` this connection's key expects.
    accept: String,
    /// When the current phase began (the connect, the upgrade, the message's send).
    pub(crate) since: Instant,
    /// When the claimed message was due (its latency counts from here).
    intended: Instant,
    /// A claimed message waits (for the connection) or is in flight.
    has_message: bool,
    /// Per-request values: the claimed message's draw (`None`: the fixed message).
    draw: Option<Draw>,
    /// The claimed message is measured.
    measured: bool,
    /// Bytes read for the message in flight.
    read_bytes: u64,
    /// Payload bytes of the answer so far.
    answer_bytes: u64,
    /// `--ws-match`: the message being received, kept while a message is in flight and it is
    /// at most `WS_MAX_MATCHED` bytes (else only counted).
    msg: Vec<u8>,
    /// `--ws-match`: payload bytes of the message being received.
    msg_len: u64,
    /// `--ws-match` with per-request values: the id of the message in flight (the fixed
    /// message's is the setup's).
    want: Option<serde_json::Value>,
    /// `--ws-match`: the answer is matched by id (a timeout's reason is `ws_no_match`).
    matching: bool,
    /// Messages this connection answered before (for keep-alive's count).
    answered_here: u64,
    /// Messages answered in the measured window.
    pub(crate) completed: u32,
    /// The message in flight when the window ended, answered after it.
    pub(crate) in_flight_at_end: Option<Instant>,
    backoff: Duration,
    pub(crate) wake_at: Instant,
    /// The server closed the connection with a close frame (answered, then dropped).
    closing: bool,
    /// Open model: connecting (and upgrading) with no message of its own, to join the idle
    /// connections (`Ctx::spares` counts it meanwhile).
    spare: bool,
    /// `--ws-idle`: a held connection (upgrades, then sends nothing; never a request slot)
    /// and how it went; `Held::No` for a request slot.
    pub(crate) held: Held,
}

/// What the frames of one read amounted to.
/// What one read of the socket got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    /// Bytes, appended to `rx`, less than the buffer holds (the socket is drained).
    Data,
    /// A full buffer, appended to `rx`: more may be waiting.
    Full,
    /// Nothing for now (it would block, or there is no socket).
    Nothing,
    /// The peer's end of stream.
    Eof,
}

enum Read1 {
    /// Keep reading.
    More,
    /// The answer of the message in flight is complete.
    Answered,
    /// The server sent a close frame.
    Closed,
}

impl WsConn {
    pub(crate) fn new(token: Token, now: Instant) -> WsConn {
        WsConn {
            token,
            stream: None,
            phase: WsPhase::Idle,
            out: Vec::new(),
            written: 0,
            rx: Vec::new(),
            skip: 0,
            skip_fin: false,
            accept: String::new(),
            since: now,
            intended: now,
            has_message: false,
            draw: None,
            measured: false,
            read_bytes: 0,
            answer_bytes: 0,
            msg: Vec::new(),
            msg_len: 0,
            want: None,
            matching: false,
            answered_here: 0,
            completed: 0,
            in_flight_at_end: None,
            backoff: Duration::ZERO,
            wake_at: now,
            closing: false,
            spare: false,
            held: Held::No,
        }
    }

    /// `--ws-idle`: connects and upgrades with no message, then stays open and silent (pings
    /// answered) until the run ends; tried once. Nothing of it is recorded as a request's.
    pub(crate) fn hold(&mut self, ctx: &mut Ctx, now: Instant) {
        self.held = Held::Opening;
        self.has_message = false;
        self.measured = false;
        self.connect(ctx, now);
    }

    fn is_held(&self) -> bool {
        self.held != Held::No
    }

    /// A held connection failed or ended: how it went (failed to open, or closed early
    /// without a close frame), then its socket is dropped.
    #[cold]
    fn lose_held(&mut self, ctx: &mut Ctx, kind: ErrorKind) {
        if self.held == Held::Opening {
            self.held = Held::Failed(kind);
        } else if self.held == Held::Open {
            self.held = Held::Closed(ABNORMAL);
        }
        self.drop_conn(ctx);
    }

    /// The run's end on a held connection: a close frame with code 1000 goes out (best
    /// effort: the socket is dropped right after); its count by how it went.
    pub(crate) fn release(&mut self, sh: &mut Shared) -> Held {
        if self.held == Held::Open && self.stream.is_some() {
            frame::encode(
                &mut self.out,
                frame::OP_CLOSE,
                &NORMAL.to_be_bytes(),
                sh.rng.mask(),
            );
            let _ = self.flush();
        }
        self.close();
        self.held
    }

    /// Open model: starts a message due at `intended` on this idle slot (connecting first
    /// when its connection is gone).
    pub(crate) fn start(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        intended: Instant,
        now: Instant,
    ) {
        self.intended = intended;
        self.measured = ctx.recorder.measuring(intended) && ctx.in_window(intended);
        self.has_message = true;
        self.draw = ctx.draw(0);
        self.read_bytes = 0;
        match self.phase {
            WsPhase::Ready => {
                // Free since it went idle: a message due before then waited for it.
                let free = self.since;
                self.send_message(ctx, sh, now, free);
            }
            WsPhase::Idle => self.connect(ctx, now),
            _ => {}
        }
    }

    /// Open model: connects and upgrades with no message of its own; `counted`: its connect
    /// time is recorded (the pool grows in the measured window).
    pub(crate) fn connect_spare(&mut self, ctx: &mut Ctx, now: Instant, counted: bool) {
        self.spare = true;
        ctx.spares += 1;
        self.has_message = false;
        self.measured = counted;
        self.connect(ctx, now);
    }

    /// A spare's connect ended (upgraded or failed).
    fn end_spare(&mut self, ctx: &mut Ctx) {
        if self.spare {
            self.spare = false;
            ctx.spares = ctx.spares.saturating_sub(1);
        }
    }

    /// Open model: free for the next due message from `now` on.
    fn go_idle(&mut self, ctx: &mut Ctx, now: Instant) {
        self.phase = WsPhase::Ready;
        self.since = now;
        ctx.idle.push(self.token.0);
    }

    /// Claims the next message and sends it (connecting and upgrading first when needed).
    pub(crate) fn begin(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        if !ctx.claim(now) {
            self.has_message = false;
            return;
        }
        self.intended = now;
        self.measured = ctx.recorder.measuring(now) && ctx.in_window(now);
        self.has_message = true;
        self.draw = ctx.draw(0);
        self.read_bytes = 0;
        match self.phase {
            WsPhase::Ready => self.send_message(ctx, sh, now, now),
            WsPhase::Idle => self.connect(ctx, now),
            _ => {}
        }
    }

    fn connect(&mut self, ctx: &mut Ctx, now: Instant) {
        self.since = now;
        self.rx.clear();
        self.skip = 0;
        self.msg.clear();
        self.msg_len = 0;
        self.out.clear();
        self.written = 0;
        self.closing = false;
        match open_registered(ctx, self.token) {
            Ok(s) => {
                self.stream = Some(s);
                self.phase = WsPhase::Connecting;
                if !self.is_held() {
                    ctx.connect_begun(now);
                }
            }
            Err(kind) => self.fail(ctx, kind, now),
        }
    }

    /// A readiness event; `closed`: the peer's FIN (or an error) is queued.
    pub(crate) fn on_event(&mut self, ctx: &mut Ctx, sh: &mut Shared, closed: bool) {
        match self.phase {
            WsPhase::Idle => {}
            WsPhase::Connecting => self.on_connected(ctx, sh),
            WsPhase::Handshaking => self.drive_handshake(ctx, sh),
            WsPhase::Upgrading | WsPhase::Ready | WsPhase::Waiting => self.on_io(ctx, sh, closed),
        }
    }

    fn on_connected(&mut self, ctx: &mut Ctx, sh: &mut Shared) {
        let Some(stream) = self.stream.as_ref() else {
            return;
        };
        let now = Instant::now();
        match stream.connect_status() {
            Ok(false) => {}
            Ok(true) => {
                if self.measured && ctx.recorder.measuring(self.since) {
                    let took = connect_took(self.since, ctx.polled_at, now);
                    ctx.recorder.connected(took);
                }
                if ctx.tls.is_some() {
                    self.since = now;
                    self.phase = WsPhase::Handshaking;
                    return self.drive_handshake(ctx, sh);
                }
                self.upgrade(ctx, sh, now);
            }
            Err(e) => self.fail(ctx, connect_error_kind(&e), now),
        }
    }

    /// `wss://`: the TLS handshake as far as the socket allows (ALPN offers `http/1.1`, as
    /// for `https://`); once done, its time is recorded and the upgrade goes out over it. A
    /// failure is the `tls_handshake` error class.
    #[cold]
    fn drive_handshake(&mut self, ctx: &mut Ctx, sh: &mut Shared) {
        let Some(tls) = self.stream.as_mut().and_then(Stream::tls_mut) else {
            return;
        };
        match tls.handshake() {
            Ok(false) => {}
            Ok(true) => {
                let now = Instant::now();
                let resumed = tls.resumed();
                if self.measured && ctx.recorder.measuring(self.since) {
                    ctx.recorder
                        .handshake(now.saturating_duration_since(self.since), resumed);
                }
                self.upgrade(ctx, sh, now);
            }
            Err(_) => self.fail(ctx, ErrorKind::TlsHandshake, Instant::now()),
        }
    }

    /// Sends the upgrade request with a fresh key, then reads what came (over TLS, records
    /// may have arrived with the handshake: no new edge announces them).
    fn upgrade(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        let key = new_key(&mut sh.rng);
        self.accept = accept_key(&key);
        self.out.clear();
        self.written = 0;
        sh.setup.handshake(&key, &mut self.out);
        self.phase = WsPhase::Upgrading;
        self.since = now;
        self.on_io(ctx, sh, false);
    }

    /// Writes what is pending, then reads and handles what arrived, one buffer at a time:
    /// what was read is handled before the next read, so a server that writes faster than
    /// this loop reads (a message without end, a flood of pings) never piles up in `rx`.
    fn on_io(&mut self, ctx: &mut Ctx, sh: &mut Shared, closed: bool) {
        let now = Instant::now();
        if let Err(kind) = self.flush() {
            return self.fail(ctx, kind, now);
        }
        for _ in 0..READS_PER_TURN {
            let read = match self.read_some(ctx) {
                Ok(read) => read,
                Err(kind) => return self.fail(ctx, kind, Instant::now()),
            };
            let eof = read == Got::Eof || (closed && read == Got::Nothing);
            self.handle_read(ctx, sh, eof);
            // A failure, a close or a new connection (a retry) ends this event's reading; so
            // does a short read, which drained the socket (a later byte raises a new edge),
            // unless a FIN is queued behind the data (no edge would announce it).
            let reading = matches!(
                self.phase,
                WsPhase::Upgrading | WsPhase::Ready | WsPhase::Waiting
            );
            let more = read == Got::Full || (read == Got::Data && closed);
            if !more || !reading || self.stream.is_none() {
                return;
            }
        }
        // A server that never stops sending: the other connections (and the timeouts) get
        // their turn, and a new event resumes this one.
        if let Some(stream) = self.stream.as_mut() {
            let _ = stream.rearm(&ctx.registry, self.token);
        }
    }

    /// Handles what `rx` holds; `eof`: the peer closed its side.
    fn handle_read(&mut self, ctx: &mut Ctx, sh: &mut Shared, eof: bool) {
        let now = Instant::now();
        if self.phase == WsPhase::Upgrading && !self.upgrade_answered(ctx, sh, now) {
            if eof && self.phase == WsPhase::Upgrading {
                self.fail(ctx, ErrorKind::ClosedBeforeResponseComplete, now);
            }
            return;
        }
        let answered = match self.frames(sh) {
            Ok(Read1::More) => false,
            Ok(Read1::Answered) => true,
            Ok(Read1::Closed) => {
                return self.server_closed(ctx, now);
            }
            Err(_) => return self.fail(ctx, ErrorKind::MalformedResponse, now),
        };
        if answered {
            self.complete(ctx, sh, now);
        } else if eof {
            // The peer's FIN with no close frame: the connection is gone.
            let kind = ErrorKind::ClosedBeforeResponseComplete;
            return self.fail(ctx, kind, now);
        }
        // Pongs (and a close answer) queued while reading go out now.
        if let Err(kind) = self.flush() {
            self.fail(ctx, kind, now);
        }
    }

    /// The upgrade's answer, once its head is all there: checked, then the slot is ready
    /// (and sends its claimed message). `false`: not ready (waiting for more, or failed).
    fn upgrade_answered(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) -> bool {
        let Some(at) = memchr::memmem::find(&self.rx, b"\r\n\r\n") else {
            if self.rx.len() > MAX_HEAD {
                self.fail_upgrade(ctx, now);
            }
            return false;
        };
        let end = at + 4;
        let ok = check_upgrade(&self.rx[..end], &self.accept, sh.setup.offered.as_deref());
        if ok.is_err() {
            self.fail_upgrade(ctx, now);
            return false;
        }
        self.rx.drain(..end);
        self.phase = WsPhase::Ready;
        if self.is_held() {
            self.held = Held::Open;
            return true;
        }
        ctx.connecting = ctx.connecting.saturating_sub(1);
        self.backoff = Duration::ZERO;
        sh.stats.upgrades += 1;
        self.answered_here = 0;
        self.end_spare(ctx);
        if self.has_message {
            self.send_message(ctx, sh, now, now);
        } else if ctx.open {
            self.go_idle(ctx, now);
        }
        self.phase != WsPhase::Idle
    }

    /// A refused upgrade (a connect error, see [`upgrade_failure`]); the slot backs off
    /// before trying again.
    #[cold]
    fn fail_upgrade(&mut self, ctx: &mut Ctx, now: Instant) {
        self.fail(ctx, ErrorKind::MalformedResponse, now);
    }

    /// `free`: when the connection became free for this message (see `Recorder::sent`).
    fn send_message(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant, free: Instant) {
        if let Some(draw) = self.draw {
            sh.scratch.clear();
            ctx.assemble(0, draw, self.token.0, &mut sh.scratch);
            if let Some(m) = sh.setup.matcher.as_ref() {
                match m.value_of(&sh.scratch) {
                    Ok(id) => self.want = Some(id),
                    Err(_) => return self.unmatchable(ctx, now),
                }
            }
        }
        if self.measured {
            self.intended = ctx.recorder.sent(now, self.intended, free);
        }
        self.matching = sh.setup.matcher.is_some();
        self.since = now;
        self.answer_bytes = 0;
        self.read_bytes = 0;
        let before = self.out.len() - self.written;
        let mask = sh.rng.mask();
        match self.draw {
            Some(_) => sh.setup.frame(&sh.scratch, mask, &mut self.out),
            None => sh.setup.message(mask, &mut self.out),
        }
        let n = (self.out.len() - self.written - before) as u64;
        if self.measured {
            ctx.recorder.wrote(now, n);
        }
        self.phase = WsPhase::Waiting;
        if let Err(kind) = self.flush() {
            self.fail(ctx, kind, now);
        }
    }

    /// `--ws-match` with values: the message as rendered has no id (not JSON, or no field), so
    /// no answer could match it: counted as `ws_unmatchable` and not sent (a connect-like
    /// class: nothing written); the connection takes the next message (closed model: on the
    /// loop's next turn, never by recursion) or goes idle (open model).
    #[cold]
    fn unmatchable(&mut self, ctx: &mut Ctx, now: Instant) {
        if self.measured && ctx.in_window(now) {
            ctx.recorder.error(now, ErrorKind::WsUnmatchable, 0);
        }
        self.has_message = false;
        if ctx.open {
            self.go_idle(ctx, now);
        } else {
            self.phase = WsPhase::Ready;
            ctx.retry.push(self.token.0);
        }
    }

    /// Writes the pending bytes until done or the socket would block.
    fn flush(&mut self) -> Result<(), ErrorKind> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        while self.written < self.out.len() {
            match stream.write(&self.out[self.written..]) {
                Ok(0) => return Err(ErrorKind::WriteError),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(write_error_kind(&e)),
            }
        }
        self.out.clear();
        self.written = 0;
        Ok(())
    }

    /// One read into the worker's buffer, appended to `rx`.
    fn read_some(&mut self, ctx: &mut Ctx) -> Result<Got, ErrorKind> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(Got::Nothing);
        };
        loop {
            match stream.read(&mut ctx.buf) {
                Ok(0) => return Ok(Got::Eof),
                Ok(n) => {
                    self.rx.extend_from_slice(&ctx.buf[..n]);
                    self.read_bytes += n as u64;
                    return Ok(if n == ctx.buf.len() {
                        Got::Full
                    } else {
                        Got::Data
                    });
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(Got::Nothing),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(read_error_kind(&e)),
            }
        }
    }

    /// The rest of a data frame (`skip`) in what was read: counted and dropped. `None` while
    /// more of it is to come; else where the next frame starts in `rx`, and whether that frame
    /// ended the awaited message.
    fn skip_payload(&mut self, sh: &mut Shared) -> Option<(usize, bool)> {
        if self.skip == 0 {
            return Some((0, false));
        }
        let take = self.skip.min(self.rx.len() as u64);
        self.skip -= take;
        self.data(sh, 0..take as usize);
        if self.skip > 0 {
            self.rx.clear();
            return None;
        }
        Some((take as usize, self.skip_fin && self.message_end(sh)))
    }

    /// Payload bytes `range` of `rx` of a data message: the answer's (counted), or with
    /// `--ws-match` the message's being received (kept while it may be an answer).
    #[inline]
    fn data(&mut self, sh: &Shared, range: std::ops::Range<usize>) {
        let n = range.len() as u64;
        if sh.setup.matcher.is_none() {
            self.answer_bytes += n;
            return;
        }
        let kept = self.msg.len() as u64 == self.msg_len;
        self.msg_len += n;
        if kept && self.phase == WsPhase::Waiting && self.msg_len <= WS_MAX_MATCHED as u64 {
            self.msg.extend_from_slice(&self.rx[range]);
        }
    }

    /// A data message ended: whether it answers the message in flight. Without
    /// `--ws-match`, any message does; with it, one whose id is the sent message's, all of it
    /// kept (it began after the send, within the size cap); another is counted as unmatched.
    fn message_end(&mut self, sh: &mut Shared) -> bool {
        let Some(m) = sh.setup.matcher.as_ref() else {
            return self.phase == WsPhase::Waiting;
        };
        let len = std::mem::take(&mut self.msg_len);
        let whole = self.phase == WsPhase::Waiting && len == self.msg.len() as u64;
        let want = self.want.as_ref().or(sh.setup.want.as_ref());
        let answered = whole && m.value_of(&self.msg).is_ok_and(|v| Some(&v) == want);
        self.msg.clear();
        if self.msg.capacity() > MSG_KEEP {
            self.msg = Vec::new();
        }
        if answered {
            self.answer_bytes = len;
        } else if !self.is_held() {
            sh.stats.unmatched += 1;
            sh.stats.unmatched_bytes += len;
            sh.stats.unmatched_too_large += u64::from(len > WS_MAX_MATCHED as u64);
        }
        answered
    }

    /// A data frame of `len` payload bytes from `payload` on in `rx`, not all read: what is
    /// there is counted, the rest left to [`WsConn::skip_payload`]; returns the end of `rx`.
    fn skip_from(&mut self, sh: &Shared, payload: usize, len: usize, fin: bool) -> usize {
        let have = self.rx.len() - payload;
        self.data(sh, payload..self.rx.len());
        self.skip = (len - have) as u64;
        self.skip_fin = fin;
        self.rx.len()
    }

    /// Handles the whole frames read: answers pings, counts a close, and stops at the end of
    /// a message while one is awaited (the next is only sent once its answer is recorded).
    fn frames(&mut self, sh: &mut Shared) -> Result<Read1, &'static str> {
        let Some((mut at, answered)) = self.skip_payload(sh) else {
            return Ok(Read1::More);
        };
        let mut result = if answered {
            Read1::Answered
        } else {
            Read1::More
        };
        while !matches!(result, Read1::Answered) {
            let Some(head) = frame::parse_head(&self.rx[at..])? else {
                break;
            };
            let Head { head_len, len, .. } = head;
            let Ok(len) = usize::try_from(len) else {
                return Err("a frame too long for this machine");
            };
            let Some(whole) = head_len.checked_add(len) else {
                return Err("a frame too long for this machine");
            };
            if self.rx.len() - at < whole {
                if !head.is_control() {
                    // A data frame's payload is counted as it comes, not kept.
                    at = self.skip_from(sh, at + head_len, len, head.fin);
                }
                // A control frame (at most 125 bytes) is kept until the rest comes.
                break;
            }
            let payload = at + head_len..at + whole;
            at += whole;
            match head.opcode {
                frame::OP_PING => self.on_ping(sh, payload),
                frame::OP_PONG => {}
                frame::OP_CLOSE => {
                    self.on_close(sh, payload);
                    result = Read1::Closed;
                    break;
                }
                _ => {
                    self.data(sh, payload);
                    if head.fin && self.message_end(sh) {
                        result = Read1::Answered;
                        break;
                    }
                }
            }
        }
        self.rx.drain(..at);
        if let Read1::Answered = result {
            self.close_behind();
        }
        Ok(result)
    }

    /// A ping: answered with a pong carrying its payload, counted (a held connection's apart).
    /// A server that pings and does not read would pile up pongs without end: past
    /// [`PONG_BACKLOG`] unsent bytes a ping goes unanswered (RFC 6455, 5.5.3 lets a pong
    /// answer only the latest of several).
    fn on_ping(&mut self, sh: &mut Shared, payload: std::ops::Range<usize>) {
        if self.is_held() {
            sh.stats.idle.pings += 1;
        } else {
            sh.stats.pings += 1;
        }
        if self.out.len() - self.written < PONG_BACKLOG {
            let p = self.rx[payload].to_vec();
            frame::encode(&mut self.out, frame::OP_PONG, &p, sh.rng.mask());
        }
    }

    /// A close: answered with a close echoing its code, counted by code (a held connection's
    /// is how it ended).
    fn on_close(&mut self, sh: &mut Shared, payload: std::ops::Range<usize>) {
        let code = frame::close_code(&self.rx[payload]);
        if self.is_held() {
            self.held = Held::Closed(code);
        } else {
            *sh.stats.close_codes.entry(code).or_default() += 1;
        }
        let echo = if code == frame::NO_STATUS {
            Vec::new()
        } else {
            code.to_be_bytes().to_vec()
        };
        frame::encode(&mut self.out, frame::OP_CLOSE, &echo, sh.rng.mask());
    }

    /// A close right behind the answer is seen before the next message goes.
    fn close_behind(&mut self) {
        if let Ok(Some(h)) = frame::parse_head(&self.rx) {
            if h.opcode == frame::OP_CLOSE && self.rx.len() >= h.head_len + h.len as usize {
                self.closing = true;
            }
        }
    }

    /// The answer of the message in flight is complete: recorded, then the next is claimed.
    fn complete(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        let records = ctx.records(self.measured, self.intended, now);
        if !records {
            self.past_window(ctx, now);
        } else {
            self.completed = self.completed.saturating_add(1);
            let latency = now.saturating_duration_since(self.intended);
            ctx.recorder
                .response(now, latency, self.since, 200, self.read_bytes);
            ctx.recorder.body(self.answer_bytes, self.answered_here > 0);
        }
        self.answered_here += 1;
        self.has_message = false;
        self.phase = WsPhase::Ready;
        if ctx.open {
            self.go_idle(ctx, now);
        } else if !self.closing {
            return self.begin(ctx, sh, now);
        }
        if self.closing {
            // Its close frame follows: handled by the next read of what is buffered.
            self.closing = false;
            if let Ok(Read1::Closed) = self.frames(sh) {
                let _ = self.flush();
                // Open model: it stays on the idle list, and connects again when taken.
                self.drop_conn(ctx);
            }
        }
        if !ctx.open {
            self.begin(ctx, sh, now);
        }
    }

    /// The server sent a close frame: answered (best effort), the connection dropped; a
    /// message in flight fails as closed before its answer, else the slot goes on.
    fn server_closed(&mut self, ctx: &mut Ctx, now: Instant) {
        let _ = self.flush();
        if self.phase == WsPhase::Waiting {
            return self.fail(ctx, ErrorKind::ClosedBeforeResponseComplete, now);
        }
        let waiting = self.has_message;
        self.drop_conn(ctx);
        // Open model: an idle connection is on the idle list already (closed, it connects
        // again when a message takes it).
        if waiting && !ctx.open {
            ctx.retry.push(self.token.0);
        }
    }

    /// A message in flight when the window ended, answered after it.
    fn past_window(&mut self, ctx: &mut Ctx, now: Instant) {
        in_flight_at_end(
            ctx,
            now,
            self.intended,
            self.measured,
            &mut self.in_flight_at_end,
        );
    }

    /// A failed message (or connect, or upgrade): counted, the connection dropped, the slot
    /// tries again (after a backoff when it never got to send).
    pub(crate) fn fail(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) {
        // No message was written before the upgrade: such a failure is a connect's, so that
        // `sent` and the errors after sending still add up.
        let (kind, reason) = match self.phase {
            WsPhase::Upgrading => upgrade_failure(kind),
            WsPhase::Handshaking if !kind.before_send() => (ErrorKind::TlsHandshake, None),
            WsPhase::Waiting if kind == ErrorKind::ReadTimeout && self.matching => {
                (kind, Some(ErrorReason::WsNoMatch))
            }
            _ => (kind, None),
        };
        if self.is_held() {
            return self.lose_held(ctx, kind);
        }
        let before_send = kind.before_send();
        // Open model: an idle connection that failed is on the idle list already.
        let listed = ctx.open && self.phase == WsPhase::Ready && !self.has_message;
        self.end_spare(ctx);
        let unsent_late = before_send && !ctx.in_window(now);
        if self.has_message && !unsent_late {
            self.past_window(ctx, now);
            if ctx.records(self.measured, self.intended, now) {
                ctx.recorder.error(now, kind, self.read_bytes);
                if let Some(r) = reason {
                    ctx.recorder.reason(r);
                }
            }
        }
        self.has_message = false;
        self.drop_conn(ctx);
        if ctx.open {
            if !listed {
                ctx.idle.push(self.token.0);
            }
        } else if before_send {
            self.wake_at = back_off(ctx, &mut self.backoff, now);
            ctx.backoff.push(self.token.0);
        } else {
            ctx.retry.push(self.token.0);
        }
    }

    /// Drops the socket (a connect or upgrade in progress no longer counts).
    fn drop_conn(&mut self, ctx: &mut Ctx) {
        if !self.is_held() && self.opening() {
            ctx.connecting = ctx.connecting.saturating_sub(1);
        }
        self.stream = None;
        self.phase = WsPhase::Idle;
        self.rx.clear();
        self.skip = 0;
        self.msg = Vec::new();
        self.msg_len = 0;
        self.out.clear();
        self.written = 0;
    }

    /// The run is over.
    pub(crate) fn close(&mut self) {
        self.stream = None;
        self.phase = WsPhase::Idle;
    }

    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Connecting, in its TLS handshake or upgrading.
    pub(crate) fn opening(&self) -> bool {
        matches!(
            self.phase,
            WsPhase::Connecting | WsPhase::Handshaking | WsPhase::Upgrading
        )
    }

    /// Holds a claimed message without an outcome.
    pub(crate) fn busy(&self) -> bool {
        self.has_message
    }

    /// A measured message written and unanswered.
    pub(crate) fn abandoned(&self) -> u64 {
        u64::from(self.has_message && self.measured && self.phase == WsPhase::Waiting)
    }

    /// When the claimed message was due, while it has no outcome.
    pub(crate) fn oldest(&self) -> Option<Instant> {
        self.has_message.then_some(self.intended)
    }
}

/// How a failure while the upgrade is awaited counts: as a connect error (nothing was sent),
/// with the reason: a wrong answer, none in time, or the connection gone.
fn upgrade_failure(kind: ErrorKind) -> (ErrorKind, Option<ErrorReason>) {
    let reason = match kind {
        k if k.before_send() => return (k, None),
        ErrorKind::MalformedResponse => ErrorReason::WsUpgradeRefused,
        ErrorKind::ReadTimeout => ErrorReason::WsUpgradeTimeout,
        _ => ErrorReason::WsUpgradeClosed,
    };
    (ErrorKind::ConnectError, Some(reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use frame::server_frame;
    use loadbench_plan::WsMatch;

    /// A setup whose fixed message is `{"id":7}`, matched by `field` when given.
    fn setup(field: Option<&str>) -> WsSetup {
        let message = br#"{"id":7}"#.to_vec();
        let matcher = field.map(|f| WsMatch::parse(f).unwrap());
        let want = matcher.as_ref().and_then(|m| m.value_of(&message).ok());
        WsSetup {
            head: Vec::new(),
            message,
            text: true,
            offered: None,
            url: String::new(),
            matcher,
            want,
        }
    }

    fn shared(setup: &WsSetup) -> Shared<'_> {
        Shared {
            setup,
            rng: Rng::new(1),
            stats: WsStats::default(),
            scratch: Vec::new(),
        }
    }

    /// A server streaming one huge data frame costs no memory: its payload is counted as it
    /// comes and dropped; the message is answered when the frame ends, the next head kept.
    #[test]
    fn a_huge_data_frame_is_counted_as_it_comes_not_kept() {
        let setup = setup(None);
        let mut sh = shared(&setup);
        let mut c = WsConn::new(Token(0), Instant::now());
        c.phase = WsPhase::Waiting;
        const LEN: usize = 10_000_000;
        let mut head = vec![0x81, 127];
        head.extend_from_slice(&(LEN as u64).to_be_bytes());
        c.rx.extend_from_slice(&head);
        c.rx.extend_from_slice(&[b'x'; 1000]);
        assert!(matches!(c.frames(&mut sh), Ok(Read1::More)));
        assert!(c.rx.is_empty());
        let mut fed = 1000;
        while fed + 65_536 < LEN {
            c.rx.extend_from_slice(&[b'x'; 65_536]);
            assert!(matches!(c.frames(&mut sh), Ok(Read1::More)));
            assert!(c.rx.is_empty(), "nothing of the payload is kept");
            fed += 65_536;
        }
        assert!(c.rx.capacity() < 1 << 17, "{}", c.rx.capacity());
        c.rx.extend(std::iter::repeat_n(b'x', LEN - fed));
        c.rx.extend_from_slice(&[0x81, 5, b'h']);
        assert!(matches!(c.frames(&mut sh), Ok(Read1::Answered)));
        assert_eq!(c.answer_bytes, LEN as u64);
        assert_eq!(c.rx, [0x81, 5, b'h'], "the next frame's head is kept");
    }

    /// `--ws-match id`: pushes, an answer to another id, a message over 64 KiB (fed a piece
    /// at a time, never kept whole) and a fragmented answer: only the last answers; the
    /// others are counted, their bytes apart from the answer's.
    #[test]
    fn with_ws_match_only_the_message_with_the_sent_id_answers() {
        let setup = setup(Some("id"));
        let mut sh = shared(&setup);
        let mut c = WsConn::new(Token(0), Instant::now());
        c.phase = WsPhase::Waiting;
        c.rx.extend(server_frame(true, frame::OP_TEXT, br#"{"push":1}"#));
        c.rx.extend(server_frame(true, frame::OP_TEXT, br#"{"id":"7"}"#));
        c.rx.extend(server_frame(true, frame::OP_TEXT, b"not json"));
        assert!(matches!(c.frames(&mut sh), Ok(Read1::More)));
        assert_eq!((sh.stats.unmatched, sh.stats.unmatched_bytes), (3, 28));
        let big = server_frame(true, frame::OP_BINARY, &vec![b'x'; 70_000]);
        for piece in big.chunks(4096) {
            c.rx.extend_from_slice(piece);
            assert!(matches!(c.frames(&mut sh), Ok(Read1::More)));
            assert!(
                c.msg.len() <= WS_MAX_MATCHED,
                "never more than the cap kept"
            );
        }
        assert_eq!(sh.stats.unmatched_too_large, 1);
        assert_eq!(sh.stats.unmatched, 4);
        c.rx.extend(server_frame(false, frame::OP_TEXT, br#"{"id""#));
        c.rx.extend(server_frame(true, frame::OP_PING, b"p"));
        c.rx.extend(server_frame(
            true,
            frame::OP_CONTINUATION,
            br#":7,"m":"x"}"#,
        ));
        assert!(matches!(c.frames(&mut sh), Ok(Read1::Answered)));
        assert_eq!(c.answer_bytes, 16, "the answer's bytes alone");
        assert_eq!(sh.stats.unmatched_bytes, 28 + 70_000);
        assert_eq!(sh.stats.pings, 1);

        // With no message in flight, nothing is kept or read: a message is unmatched.
        c.phase = WsPhase::Ready;
        c.rx.extend(server_frame(true, frame::OP_TEXT, br#"{"id":7}"#));
        assert!(matches!(c.frames(&mut sh), Ok(Read1::More)));
        assert_eq!(sh.stats.unmatched, 5);
        assert!(c.msg.is_empty());
    }
}
