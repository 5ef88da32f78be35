//! One connection's state machine: connect, write the pre-rendered request, read the response,
//! and either reuse the connection or replace it. The hot path is `send` + `on_readable`: one
//! `write` and usually one `read` per request, no allocation, no epoll_ctl (sockets are registered
//! once, edge-triggered, for both directions).

use crate::ctx::Ctx;
use crate::http1::{EofOutcome, ParseError, Progress, ResponseParser};
use crate::transport::Stream;
use crate::vu::Vu;
use loadbench_model::{ErrorKind, ReopenReason};
use loadbench_plan::{split_answer, Answer, Draw, Flow, MAX_KEPT_RESPONSE};
use mio::{Interest, Token};
use std::io::{self, ErrorKind as IoKind, Read, Write};
use std::time::{Duration, Instant};

mod pipeline;
mod proto;
mod scripted;
pub(crate) use pipeline::least_unanswered;
pub use pipeline::Pipe;
pub(crate) use proto::{free_conn, Http1};

/// First wait before reconnecting after a failed connect (closed model); doubles per failure.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest wait between reconnects after failed connects.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Full reads (of the worker's 64 KiB buffer) one event may take before an HTTP/2 or
/// WebSocket connection yields to the others: a server sending without pause cannot hold
/// the worker.
pub(crate) const READS_PER_TURN: usize = 16;

/// Where a connection is in its request cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No request claimed: the run's request budget is spent, or the run is over.
    Idle,
    /// A request is claimed and the TCP connection is being established.
    Connecting,
    /// TLS only: the TCP connection is up, the TLS handshake is under way.
    Handshaking,
    /// The request is partly written; waiting for the socket to take the rest.
    Writing,
    /// The request is written; reading the response.
    Reading,
}

/// What came after a complete response on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Nothing (yet): the connection may be reused.
    Clean,
    /// More bytes in the same read: a body longer than its `Content-Length`.
    Extra,
    /// The server's close (EOF queued behind the response, or the response ended at EOF).
    Closed,
}

/// One connection slot of a worker: its socket (when open), the request being written and
/// the response being read.
pub struct Conn {
    token: Token,
    stream: Option<Stream>,
    /// Where the connection is in its request cycle.
    pub phase: Phase,
    written: usize,
    parser: ResponseParser,
    /// When the current request was sent (or, while connecting, when the connect began;
    /// idle in the open model, when the connection became free: see `Conn::go_idle`).
    pub since: Instant,
    /// When the current request was due: its send time in the closed model, its scheduled
    /// time in the open model. Latency counts from here.
    pub intended: Instant,
    /// When the last byte of the current request was written.
    wrote_at: Instant,
    /// When the first byte of the current response was read.
    first_byte_at: Instant,
    /// Requests this connection (slot) completed in the measured window.
    pub completed: u32,
    /// When the request that was still in flight as the window ended was due, if it was
    /// answered (or failed) only after the end: at the end the slot counts as it stood at the
    /// window's end (starved, if it completed nothing in it), not as the idle slot it became
    /// while its worker was still catching up. Cold: set at most once per run.
    in_flight_at_end: Option<Instant>,
    /// The claimed request lies in the measured window.
    pub measured: bool,
    /// Bytes of the current response read so far.
    read_bytes: u64,
    /// The current request went out on a connection that had served one before.
    reused: bool,
    /// The current request was already sent again after a dead keep-alive connection.
    retried: bool,
    /// Closed model: wait before the next connect after a failed one (zero: none).
    backoff: Duration,
    /// Closed model: when the backed-off connection may connect again.
    pub wake_at: Instant,
    /// Which request of the mix is in flight (0 without a mix).
    endpoint: u16,
    /// Open model: connecting with no request of its own (the pool grows, or opens before
    /// the schedule); once connected it joins the idle ones.
    spare: bool,
    /// Open model: a spare connected and has served no request yet (its first request is
    /// not a keep-alive one).
    fresh: bool,
    /// A counted spare's connect time (and TLS handshake time, whether resumed), recorded
    /// when a measured request first goes out on it: so each measured connection is counted
    /// once, by the request that used it, as when a request connects itself.
    opened: Option<(Duration, Option<(Duration, bool)>)>,
    /// `--pipeline N` (N > 1): the requests in flight on this connection; `None` at depth 1.
    pipe: Option<Box<Pipe>>,
    /// The current request assembled with its values (empty: it is fixed bytes, written
    /// from the context). Kept until the next request, so a resend writes the same values.
    out: Vec<u8>,
    /// A flow: this connection's virtual user (`None` without a flow).
    vu: Option<Box<Vu>>,
    /// `--script`: requests in the current write (a `request()` may pipeline several).
    batch_len: u32,
    /// `--script`: answers of the current write still to come after the one being read.
    batch_left: u32,
    /// `--script`: the current write's first request is a HEAD (`None`: not the script's).
    script_head: Option<bool>,
    /// `--script` with `response()`: the answer being read, kept for it (at most
    /// [`MAX_KEPT_RESPONSE`]).
    kept: Vec<u8>,
}

impl Conn {
    /// An idle slot with no socket yet; `token` is its epoll token and index in the worker.
    pub fn new(token: Token, now: Instant) -> Self {
        Conn {
            token,
            stream: None,
            phase: Phase::Idle,
            written: 0,
            parser: ResponseParser::new(),
            since: now,
            intended: now,
            wrote_at: now,
            first_byte_at: now,
            completed: 0,
            in_flight_at_end: None,
            measured: false,
            read_bytes: 0,
            reused: false,
            retried: false,
            backoff: Duration::ZERO,
            wake_at: now,
            endpoint: 0,
            spare: false,
            fresh: false,
            opened: None,
            pipe: None,
            out: Vec::new(),
            vu: None,
            batch_len: 1,
            batch_left: 0,
            script_head: None,
            kept: Vec::new(),
        }
    }

    /// Open model: connects with no request of its own; once connected it is idle, and the
    /// oldest waiting request takes it (or any other free one first). `counted`: its connect
    /// time is recorded (the pool grows in the measured window; not the initial pool).
    pub fn connect_spare(&mut self, ctx: &mut Ctx, now: Instant, counted: bool) {
        self.spare = true;
        ctx.spares += 1;
        self.measured = counted;
        self.connect(ctx, now);
    }

    /// Connected (and through TLS): a spare joins the idle ones, anything else sends.
    fn ready(&mut self, ctx: &mut Ctx, now: Instant) {
        if !self.spare {
            // Its own request waited for this connect: the wait stays in its latency.
            return self.send(ctx, now, now);
        }
        self.left_connect(ctx);
        self.end_spare(ctx);
        self.fresh = true;
        self.go_idle(ctx, now);
    }

    /// A spare's connect ended (done or failed): one fewer covering a waiting request.
    #[inline]
    fn end_spare(&mut self, ctx: &mut Ctx) {
        if self.spare {
            self.spare = false;
            ctx.spares = ctx.spares.saturating_sub(1);
        }
    }

    /// The connect in progress ended (done or failed): one fewer in progress.
    #[inline]
    fn left_connect(&self, ctx: &mut Ctx) {
        if matches!(self.phase, Phase::Connecting | Phase::Handshaking) {
            ctx.connecting = ctx.connecting.saturating_sub(1);
        }
    }

    /// Closed model: claims the next request and starts it at once. A flow claims a whole
    /// iteration at its first step (`-n` counts iterations); its later steps go on while the
    /// run does.
    pub fn begin(&mut self, ctx: &mut Ctx, now: Instant) {
        if self.pipe.is_some() {
            return self.pipe_begin(ctx, now);
        }
        let claimed = if self.mid_flow() {
            !ctx.stopping() && ctx.in_window(now)
        } else {
            ctx.claim(now)
        };
        if !claimed {
            self.phase = Phase::Idle;
            return;
        }
        self.start(ctx, now, now);
    }

    /// Starts a request due at `intended`: on the open connection, or on a new one (pipelined:
    /// queued for the send window's one write, see `Conn::pipe_start`).
    pub fn start(&mut self, ctx: &mut Ctx, intended: Instant, now: Instant) {
        if self.pipe.is_some() {
            return self.pipe_start(ctx, intended, now);
        }
        self.intended = intended;
        self.out.clear();
        if let Some(flow) = ctx.flow {
            self.start_step(ctx, flow, intended);
        } else {
            self.endpoint = ctx.pick();
            if let Some(draw) = ctx.draw(self.endpoint) {
                ctx.assemble(self.endpoint, draw, self.token.0, &mut self.out);
            }
        }
        self.measured = ctx.recorder.measuring(intended) && ctx.in_window(intended);
        if ctx.script_builds && !self.script_request(ctx, now) {
            return;
        }
        self.reused = self.stream.is_some() && !self.fresh;
        self.retried = false;
        if self.fresh {
            self.first_on_spare(ctx);
        }
        if self.stream.is_some() {
            // An idle connection: free since it went idle (`since`, see `Conn::go_idle`).
            self.send(ctx, now, self.since);
        } else {
            self.connect(ctx, now);
        }
    }

    /// Open model: the connection is free for the next due request from `now` on (kept in
    /// `since`, which no idle connection uses otherwise): a request due before then waited
    /// for it, and that wait stays in its latency ([`Recorder::sent`]).
    #[inline]
    pub(crate) fn go_idle(&mut self, ctx: &mut Ctx, now: Instant) {
        self.since = now;
        self.phase = Phase::Idle;
        ctx.idle.push(self.token.0);
    }

    /// A flow's virtual user is between the first and the last step of an iteration.
    pub(crate) fn mid_flow(&self) -> bool {
        self.vu.as_ref().is_some_and(|v| v.step > 0)
    }

    /// A flow: the virtual user's current step is the request; a first step begins a new
    /// iteration (its place in the sequence, its random number). The request is assembled
    /// with the variables earlier steps captured.
    fn start_step(&mut self, ctx: &mut Ctx, flow: &Flow, intended: Instant) {
        let vu = self.vu.get_or_insert_with(|| {
            Box::new(Vu {
                step: 0,
                draw: Draw::default(),
                started: intended,
                vars: vec![Vec::new(); flow.vars.len()],
                keep: false,
                answer: Vec::new(),
                scratch: Vec::new(),
            })
        });
        if vu.step == 0 && ctx.recorder.measuring(intended) && ctx.in_window(intended) {
            ctx.recorder.flow_started();
        }
        let Some(values) = ctx.values.as_mut() else {
            return;
        };
        if vu.step == 0 {
            vu.draw = values.draw();
            vu.started = intended;
        }
        self.endpoint = vu.step;
        if values.templated(vu.step) {
            let draw = vu.draw.step(vu.step);
            values.assemble(vu.step, draw, self.token.0 as u32, &vu.vars, &mut self.out);
        }
        vu.keep = flow.steps[usize::from(vu.step)].reads_answer();
        vu.answer.clear();
    }

    /// A flow's step answered: its checks and captures judge it (`Err`: the class its
    /// failure counts as).
    fn judge_step(&mut self, ctx: &mut Ctx) -> Result<(), ErrorKind> {
        let (Some(flow), Some(vu), Some(values)) =
            (ctx.flow, self.vu.as_deref_mut(), ctx.values.as_mut())
        else {
            return Ok(());
        };
        let step = &flow.steps[usize::from(vu.step)];
        let mut body = std::mem::take(&mut ctx.answer_body);
        let head = if vu.keep {
            split_answer(&vu.answer, &mut body)
        } else {
            body.clear();
            &[]
        };
        let answer = Answer {
            status: self.parser.status(),
            head,
            body: &body,
        };
        let draw = vu.draw.step(vu.step);
        let conn = self.token.0 as u32;
        let verdict = step.judge(answer, values, draw, conn, &mut vu.vars, &mut vu.scratch);
        ctx.answer_body = body;
        verdict
    }

    /// After a flow's step: the next step (or, after the last or a failed one, a new
    /// iteration from the first), once the step's think time has passed.
    fn next_step(
        &mut self,
        ctx: &mut Ctx,
        verdict: Result<(), ErrorKind>,
        records: bool,
        now: Instant,
    ) {
        let (Some(flow), Some(vu)) = (ctx.flow, self.vu.as_deref_mut()) else {
            return self.begin(ctx, now);
        };
        let think = flow.steps[usize::from(vu.step)].think;
        if verdict.is_ok() {
            vu.step += 1;
            if usize::from(vu.step) == flow.steps.len() {
                if records {
                    ctx.recorder
                        .flow_completed(now.saturating_duration_since(vu.started));
                }
                vu.step = 0;
            }
        } else {
            if records {
                ctx.recorder.flow_broken();
            }
            vu.step = 0;
        }
        if think.is_zero() {
            return self.begin(ctx, now);
        }
        self.phase = Phase::Idle;
        self.wake_at = now + think;
        ctx.backoff.push(self.token.0);
    }

    /// Open model, after a flow's step: an iteration that goes on waits (off this connection)
    /// for its next step, due after this step's think time; one that ended leaves its virtual
    /// user here at the first step, for the next scheduled iteration.
    fn open_next_step(
        &mut self,
        ctx: &mut Ctx,
        verdict: Result<(), ErrorKind>,
        records: bool,
        now: Instant,
    ) {
        let (Some(flow), Some(vu)) = (ctx.flow, self.vu.as_deref_mut()) else {
            return;
        };
        let think = flow.steps[usize::from(vu.step)].think;
        let last = usize::from(vu.step) + 1 == flow.steps.len();
        match verdict {
            Ok(()) if !last => {
                vu.step += 1;
                if let Some(vu) = self.vu.take() {
                    ctx.flow_wait(now + think, vu);
                }
            }
            Ok(()) => {
                if records {
                    ctx.recorder
                        .flow_completed(now.saturating_duration_since(vu.started));
                }
                vu.step = 0;
            }
            Err(_) => {
                if records {
                    ctx.recorder.flow_broken();
                }
                vu.step = 0;
            }
        }
    }

    /// Open model, a flow: the next step of a waiting iteration goes on this connection (its
    /// virtual user, variables and draw with it).
    pub(crate) fn take_step(&mut self, vu: Box<Vu>) {
        self.vu = Some(vu);
    }

    /// The first request on a spare: its connect (and handshake) is recorded now, if both
    /// are measured.
    #[cold]
    fn first_on_spare(&mut self, ctx: &mut Ctx) {
        self.fresh = false;
        let Some((connect, handshake)) = self.opened.take() else {
            return;
        };
        if self.measured {
            ctx.recorder.connected(connect);
            if let Some((took, resumed)) = handshake {
                ctx.recorder.handshake(took, resumed);
            }
        }
    }

    fn connect(&mut self, ctx: &mut Ctx, now: Instant) {
        // A fresh clock for the connect time: the caller's `now` may be from before a batch of
        // earlier connects (all of a closed run's connections start in one loop).
        self.since = Instant::now().max(now);
        self.phase = Phase::Connecting;
        ctx.connect_begun(self.since);
        match open_registered(ctx, self.token) {
            Ok(s) => self.stream = Some(s),
            Err(kind) => self.fail(ctx, kind, now),
        }
    }

    /// The request went into a keep-alive connection the peer had already closed: it never
    /// reached the server, so it is sent once more on a new connection, keeping its intended
    /// time. Counted as a stale retry, not an error (and in `sent` once: the server never
    /// read the first send). Only when it cannot have reached the server: a reused
    /// connection, no byte of the answer, and the close arrived before or while the request
    /// was written — the write failed, or the peer reset it, or discarded it unread (see
    /// `Stream::discarded_unread`). A clean close after the server read the request (a server
    /// that reads it and hangs up) is its failure: `closed_before_response_complete`.
    /// Returns false when this is not such a case (then the caller counts the failure).
    fn retry_stale(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) -> bool {
        if !self.reused || self.retried || self.parser.started() || self.batch_len > 1 {
            return false;
        }
        let unread = self.phase == Phase::Writing
            || kind == ErrorKind::Reset
            || self.stream.as_ref().is_some_and(Stream::discarded_unread);
        if !unread {
            return false;
        }
        if self.measured {
            ctx.recorder.stale_retry(self.since, now);
        }
        self.close();
        self.reused = false;
        self.retried = true;
        self.connect(ctx, now);
        true
    }

    /// Handles a readiness event for this connection. `read_closed`: the peer's FIN (or an
    /// error) is already queued, so reading must go on until it shows.
    pub fn on_event(&mut self, ctx: &mut Ctx, read_closed: bool) {
        match self.phase {
            Phase::Writing | Phase::Reading if self.pipe.is_some() => {
                self.pipe_event(ctx, read_closed)
            }
            Phase::Connecting => self.on_connect_ready(ctx),
            Phase::Handshaking => self.drive_handshake(ctx),
            Phase::Writing => self.on_writing_event(ctx, read_closed),
            Phase::Reading => self.on_readable(ctx, read_closed),
            Phase::Idle => self.on_idle_event(ctx, read_closed),
        }
    }

    /// An event while the request was still being written (a large body): writes what the
    /// socket takes, then reads what arrived, because the server may answer before it read
    /// the whole body (after the head: legal), and that edge would not come again. An answer
    /// that completes first ends the write there (see `Conn::complete`). A cold path: small
    /// requests are written whole by `send`.
    #[cold]
    fn on_writing_event(&mut self, ctx: &mut Ctx, read_closed: bool) {
        self.write_rest(ctx, Instant::now());
        if matches!(self.phase, Phase::Writing | Phase::Reading) {
            self.on_readable(ctx, read_closed);
        }
    }

    /// An idle keep-alive connection the peer closed (FIN or error): dropped now, so the next
    /// request opens a new one instead of being written into a dead socket.
    fn on_idle_event(&mut self, ctx: &mut Ctx, read_closed: bool) {
        if read_closed && self.stream.is_some() {
            self.close();
            ctx.recorder.stale_close();
        }
    }

    fn on_connect_ready(&mut self, ctx: &mut Ctx) {
        let Some(stream) = self.stream.as_ref() else {
            return;
        };
        let now = Instant::now();
        match stream.connect_status() {
            Ok(false) => {}
            Ok(true) => {
                self.backoff = Duration::ZERO;
                let took = connect_took(self.since, ctx.polled_at, now);
                ctx.growth.connected(took);
                if self.spare {
                    self.opened = self.records_connect(ctx).then_some((took, None));
                } else if self.records_connect(ctx) {
                    ctx.recorder.connected(took);
                }
                if ctx.tls.is_some() {
                    self.since = now;
                    self.phase = Phase::Handshaking;
                    return self.drive_handshake(ctx);
                }
                self.ready(ctx, now);
            }
            Err(e) => self.fail(ctx, connect_error_kind(&e), now),
        }
    }

    /// TLS: takes the handshake as far as the socket allows; once done, records its time
    /// (from the TCP connect's end) and whether it resumed a session, then sends. A failure is
    /// the `tls_handshake` error class (the request was never written).
    #[cold]
    fn drive_handshake(&mut self, ctx: &mut Ctx) {
        let Some(tls) = self.stream.as_mut().and_then(Stream::tls_mut) else {
            return;
        };
        match tls.handshake() {
            Ok(false) => {}
            Ok(true) => {
                let now = Instant::now();
                let resumed = tls.resumed();
                let took = now.saturating_duration_since(self.since);
                if let Some(opened) = self.opened.as_mut().filter(|_| self.spare) {
                    opened.1 = Some((took, resumed));
                } else if !self.spare && self.records_connect(ctx) {
                    ctx.recorder.handshake(took, resumed);
                }
                self.ready(ctx, now);
            }
            Err(_) => self.fail(ctx, ErrorKind::TlsHandshake, Instant::now()),
        }
    }

    /// Whether this connect's (or handshake's) time is recorded: measured and begun in the
    /// window (a spare's is kept until a measured request uses it).
    fn records_connect(&self, ctx: &Ctx) -> bool {
        self.measured && ctx.recorder.measuring(self.since)
    }

    /// Writes the request; waits for writability only if the socket did not take it all.
    /// `free`: when the connection became free for this request (see [`Recorder::sent`]).
    #[inline]
    fn send(&mut self, ctx: &mut Ctx, now: Instant, free: Instant) {
        self.left_connect(ctx);
        if self.pipe.is_some() {
            return self.pipe_send_free(ctx, now, free);
        }
        self.since = now;
        if self.measured {
            if self.retried {
                ctx.recorder.resent(now);
            } else {
                let start = ctx.recorder.sent(now, self.intended, free);
                if self.batch_len > 1 {
                    self.batch_sent(ctx, now, free);
                }
                self.intended = start;
            }
        }
        self.written = 0;
        self.read_bytes = 0;
        self.kept.clear();
        let head = match self.script_head {
            Some(head) => head,
            None => ctx.head_of(self.endpoint),
        };
        self.parser.reset(head);
        self.phase = Phase::Writing;
        self.write_rest(ctx, now);
    }

    /// Writes what the socket takes; `now` is when, so written bytes land in their second.
    #[inline]
    fn write_rest(&mut self, ctx: &mut Ctx, now: Instant) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let request = if self.out.is_empty() {
            ctx.request_of(self.endpoint)
        } else {
            &self.out[..]
        };
        let failed = loop {
            if self.written >= request.len() {
                break None;
            }
            match stream.write(&request[self.written..]) {
                Ok(0) => break Some(ErrorKind::WriteError),
                Ok(n) => {
                    self.written += n;
                    if self.measured {
                        ctx.recorder.wrote(now, n as u64);
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => break Some(write_error_kind(&e)),
            }
        };
        if let Some(kind) = failed {
            return self.fail_sent(ctx, kind, Instant::now());
        }
        // The one clock read the split adds: `now` is from before the write calls.
        self.wrote_at = Instant::now();
        self.phase = Phase::Reading;
    }

    /// Reads what arrived. A short read means the socket is drained: for a request/response
    /// protocol without pipelining, any later byte raises a new edge, so no extra `read` to
    /// collect `EAGAIN` is needed. The exception is a FIN that was queued behind the data
    /// (`read_closed`): no new edge will announce it, so then we read on until EOF.
    #[inline]
    fn on_readable(&mut self, ctx: &mut Ctx, read_closed: bool) {
        loop {
            let since = self.since;
            let Some(stream) = self.stream.as_mut() else {
                return;
            };
            match read_timed(stream, ctx, since) {
                Ok((0, _)) => return self.on_eof(ctx),
                Ok((n, now)) => {
                    if !self.parser.started() {
                        self.first_byte(ctx, now);
                    }
                    self.read_bytes += n as u64;
                    if let Some(vu) = self.vu.as_deref_mut().filter(|v| v.keep) {
                        let room = MAX_KEPT_RESPONSE.saturating_sub(vu.answer.len());
                        vu.answer.extend_from_slice(&ctx.buf[..n.min(room)]);
                    }
                    if ctx.script_reads {
                        self.keep(&ctx.buf[..n]);
                    }
                    let mut from = 0;
                    loop {
                        match self.parser.feed(&ctx.buf[from..n]) {
                            Ok(Progress::Complete { consumed }) => {
                                let end = from + consumed;
                                if let Some(vu) = self.vu.as_deref_mut().filter(|v| v.keep) {
                                    let extra = n - end;
                                    let keep = vu.answer.len().saturating_sub(extra);
                                    vu.answer.truncate(keep);
                                }
                                if self.batch_left > 0 {
                                    self.batch_answered(ctx, now, end, n);
                                    from = end;
                                    continue;
                                }
                                if ctx.script_reads {
                                    let keep = self.kept.len().saturating_sub(n - end);
                                    self.kept.truncate(keep);
                                }
                                let tail = match (end < n, read_closed) {
                                    (true, _) => Tail::Extra,
                                    (false, true) => Tail::Closed,
                                    (false, false) => Tail::Clean,
                                };
                                return self.complete(ctx, now, tail);
                            }
                            Ok(Progress::NeedMore) if n < ctx.buf.len() && !read_closed => return,
                            Ok(Progress::NeedMore) => break,
                            Err(e) => return self.fail_malformed(ctx, e, now),
                        }
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return self.fail_sent(ctx, read_error_kind(&e), Instant::now()),
            }
        }
    }

    /// The first byte of the response was read at `now`.
    #[inline]
    fn first_byte(&mut self, ctx: &mut Ctx, now: Instant) {
        self.first_byte_at = now;
        if self.phase == Phase::Writing {
            // Answered before the body was all written: the write ends here.
            self.wrote_at = now;
        }
        if self.measured && ctx.in_window(now) {
            ctx.recorder
                .first_byte(now.saturating_duration_since(self.since));
        }
    }

    /// A written request failed: retried once if its reused connection was dead, else counted.
    #[cold]
    fn fail_sent(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) {
        if !self.retry_stale(ctx, kind, now) {
            self.fail(ctx, kind, now);
        }
    }

    fn on_eof(&mut self, ctx: &mut Ctx) {
        let now = Instant::now();
        match self.parser.on_eof() {
            EofOutcome::Complete => self.complete(ctx, now, Tail::Closed),
            EofOutcome::NothingReceived | EofOutcome::Truncated => {
                self.fail_sent(ctx, ErrorKind::ClosedBeforeResponseComplete, now)
            }
        }
    }

    /// A complete response: record it, then start the next request on this connection if it
    /// may be reused, or on a new one.
    #[inline]
    fn complete(&mut self, ctx: &mut Ctx, now: Instant, tail: Tail) {
        let verdict = if self.vu.is_some() {
            self.judge_step(ctx)
        } else if ctx.script_reads {
            self.script_response(ctx)
        } else {
            Ok(())
        };
        let records = self.record(ctx, now, verdict);
        if self.batch_left > 0 {
            // A batch's answer that ended the connection (EOF): the rest never came.
            self.batch_cut(ctx, records, now);
        }
        // Answered before the whole request was written: the rest is not sent, and the
        // connection cannot carry another request (the server still expects the body's end).
        let cut_short = self.phase == Phase::Writing;
        if cut_short || !(tail == Tail::Clean && ctx.keepalive && self.parser.keep_alive()) {
            if records && ctx.keepalive {
                ctx.recorder.reopened(self.reopen_reason(tail, cut_short));
            }
            self.close();
        }
        if ctx.open {
            if self.vu.is_some() {
                self.open_next_step(ctx, verdict, records, now);
            }
            self.go_idle(ctx, now);
        } else if self.vu.is_some() {
            self.next_step(ctx, verdict, records, now);
        } else if ctx.script_delays {
            self.script_wait(ctx, now);
        } else {
            self.begin(ctx, now);
        }
    }

    /// Records a complete answer judged `verdict` (a response, or the error its check or
    /// script found), if it is measured and in the window; returns whether it was.
    #[inline]
    fn record(&mut self, ctx: &mut Ctx, now: Instant, verdict: Result<(), ErrorKind>) -> bool {
        let records = ctx.records(self.measured, self.intended, now);
        if !records {
            self.past_window(ctx, now);
        }
        if let (true, Err(kind)) = (records, verdict) {
            ctx.recorder.error(now, kind, self.read_bytes);
            ctx.recorder.endpoint_error(self.endpoint, kind);
        } else if records {
            self.completed = self.completed.saturating_add(1);
            let latency = now.saturating_duration_since(self.intended);
            let status = self.parser.status();
            ctx.recorder
                .response(now, latency, self.since, status, self.read_bytes);
            if ctx.recorder.per_endpoint() {
                ctx.recorder
                    .endpoint_response(self.endpoint, latency, status);
            }
            ctx.recorder.body(self.parser.body_bytes(), self.reused);
            ctx.recorder.phases(
                self.wrote_at.saturating_duration_since(self.since),
                self.first_byte_at.saturating_duration_since(self.wrote_at),
                now.saturating_duration_since(self.first_byte_at),
            );
        }
        records
    }

    /// Why the server ended this connection after a complete response (`tail`: what followed
    /// it; `cut_short`: it came before the request was all written): that first, bytes after
    /// the body next, then what the response said, then a bare close.
    #[cold]
    fn reopen_reason(&self, tail: Tail, cut_short: bool) -> ReopenReason {
        if cut_short {
            ReopenReason::AnsweredBeforeBody
        } else if tail == Tail::Extra {
            ReopenReason::ExtraBytes
        } else if self.parser.connection_close() {
            ReopenReason::ConnectionClose
        } else if !self.parser.keep_alive() {
            ReopenReason::NotReusable
        } else {
            ReopenReason::ClosedAfterResponse
        }
    }

    /// A malformed response: its reason is counted, then it fails like any other.
    #[cold]
    fn fail_malformed(&mut self, ctx: &mut Ctx, e: ParseError, now: Instant) {
        if self.measured && ctx.in_window(now) {
            ctx.recorder.reason(e.reason());
        }
        self.fail(ctx, ErrorKind::MalformedResponse, now);
    }

    /// A request sent before the window ended and answered or failed only after it: it was
    /// in flight at the end, which the slot's end-of-run account must still see. One sent in
    /// the warm-up (not measured) is censored here at its age at the end, as it would have
    /// been had it still been in flight then (a measured one was, by [`Ctx::records`]); one
    /// sent after the end (its worker had not noticed the end yet) was never in flight at it.
    #[cold]
    fn past_window(&mut self, ctx: &mut Ctx, now: Instant) {
        in_flight_at_end(
            ctx,
            now,
            self.intended,
            self.measured,
            &mut self.in_flight_at_end,
        );
    }

    /// A failed request: count it, drop the connection, and retry on the next loop turn (never
    /// recursively, so a target that refuses at once cannot spin the worker).
    pub fn fail(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) {
        if self.pipe.is_some() {
            self.left_connect(ctx);
            self.end_spare(ctx);
            return self.pipe_broken(ctx, Some(kind), now);
        }
        // A request that was never written (failed connect) past the deadline is neither
        // sent nor abandoned: it is left out, so the accounting identity stays exact.
        let unsent_late = kind.before_send() && !ctx.in_window(now);
        if !self.spare && !unsent_late {
            self.past_window(ctx, now);
        }
        if !self.spare && !unsent_late && ctx.records(self.measured, self.intended, now) {
            ctx.recorder.error(now, kind, self.read_bytes);
            ctx.recorder.endpoint_error(self.endpoint, kind);
            if self.vu.is_some() {
                ctx.recorder.flow_broken();
            }
            if self.batch_left > 0 {
                self.batch_failed(ctx, kind, now);
            }
        }
        self.batch_left = 0;
        if let Some(vu) = self.vu.as_deref_mut() {
            // The iteration ends here: the virtual user starts over at the first step.
            vu.step = 0;
        }
        self.left_connect(ctx);
        self.end_spare(ctx);
        self.close();
        self.phase = Phase::Idle;
        if ctx.open {
            ctx.idle.push(self.token.0);
        } else if kind.before_send() {
            self.back_off(ctx, now);
        } else {
            ctx.retry.push(self.token.0);
        }
    }

    /// Closed model: a failed connect waits (10 ms doubling to 1 s, reset by a successful
    /// connect) before the slot connects again, so an outage is not a tight retry loop.
    #[cold]
    fn back_off(&mut self, ctx: &mut Ctx, now: Instant) {
        self.wake_at = back_off(ctx, &mut self.backoff, now);
        ctx.backoff.push(self.token.0);
    }

    /// Drops the socket (closing it); the slot stays and may connect again.
    pub fn close(&mut self) {
        self.stream = None;
        self.fresh = false;
        self.opened = None;
    }

    /// Has a socket (connecting or connected), for the live views' open-connection count.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Holds a claimed request that has not finished (a spare connecting holds none;
    /// pipelined: also requests waiting to be resent on a new connection).
    pub fn in_flight(&self) -> bool {
        (self.phase != Phase::Idle && !self.spare) || self.pipe_holds()
    }

    /// Holds a request that was written (fully or in part) and has no outcome yet: what
    /// `abandoned` counts when the run ends. A connection still connecting has sent nothing.
    pub fn sent_in_flight(&self) -> bool {
        matches!(self.phase, Phase::Writing | Phase::Reading)
    }
}

/// A request due at `intended` answered (or failed) at `now`, after the window ended: if it
/// was sent before the end it was in flight then, kept in `at_end` for the slot's end-of-run
/// account (see `Conn::past_window`); a warm-up one is censored at its age at the end.
/// HTTP/1.1 and WebSocket both.
#[cold]
pub(crate) fn in_flight_at_end(
    ctx: &mut Ctx,
    now: Instant,
    intended: Instant,
    measured: bool,
    at_end: &mut Option<Instant>,
) {
    let Some(end) = ctx.window_end() else {
        return;
    };
    if now < end || intended >= end || at_end.is_some() {
        return;
    }
    *at_end = Some(intended);
    if !measured {
        ctx.recorder.censor(end.saturating_duration_since(intended));
    }
}

/// Closed model: the next wait of a slot whose connect failed (`backoff` doubled, 10 ms to
/// 1 s), recorded while measuring; returns when it may connect again.
#[cold]
pub(crate) fn back_off(ctx: &mut Ctx, backoff: &mut Duration, now: Instant) -> Instant {
    *backoff = (*backoff * 2).clamp(BACKOFF_MIN, BACKOFF_MAX);
    let wake_at = now + *backoff;
    if ctx.recorder.measuring(now) && ctx.in_window(now) {
        let end = ctx.window_end().unwrap_or(wake_at).min(wake_at);
        ctx.recorder.backoff(end.saturating_duration_since(now));
    }
    wake_at
}

/// One read into the worker's buffer, and when its bytes arrived: in a stamped run
/// (`Ctx::stamped`) the kernel's receive stamp, not when this worker got to them (never before
/// `floor`, the request's send); otherwise now. Only a stamped run pays for `recvmsg` and its
/// control message.
#[inline]
fn read_timed(stream: &mut Stream, ctx: &mut Ctx, floor: Instant) -> io::Result<(usize, Instant)> {
    if ctx.stamped {
        let (n, stamp) = stream.read_stamped(&mut ctx.buf)?;
        let at = stamp.map_or_else(Instant::now, |s| crate::ctx::arrival(s).max(floor));
        Ok((n, at))
    } else {
        stream.read(&mut ctx.buf).map(|n| (n, Instant::now()))
    }
}

/// Opens a connection to the worker's destination (from its next source address) and registers
/// it for reads and writes; the error class when either fails. HTTP/1.1 and HTTP/2 both.
pub(crate) fn open_registered(ctx: &mut Ctx, token: Token) -> Result<Stream, ErrorKind> {
    let source = ctx.sources.take();
    let mut s =
        Stream::open(ctx.dest, source, ctx.tls.as_ref()).map_err(|e| connect_error_kind(&e))?;
    if ctx.stamped {
        s.stamp_receives().map_err(|_| ErrorKind::ConnectError)?;
    }
    s.register(
        &ctx.registry,
        token,
        Interest::READABLE | Interest::WRITABLE,
    )
    .map_err(|_| ErrorKind::ConnectError)?;
    Ok(s)
}

/// The error class of a failed connect.
pub(crate) fn connect_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        IoKind::AddrNotAvailable => ErrorKind::AddrNotAvailable,
        IoKind::ConnectionRefused => ErrorKind::ConnectRefused,
        IoKind::TimedOut => ErrorKind::ConnectTimeout,
        _ => ErrorKind::ConnectError,
    }
}

/// The error class of a failed write.
pub(crate) fn write_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        IoKind::ConnectionReset => ErrorKind::Reset,
        _ => ErrorKind::WriteError,
    }
}

/// The error class of a failed read.
pub(crate) fn read_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        IoKind::ConnectionReset | IoKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::ReadError,
    }
}

/// A connect's duration: from the connect call to the poll return that reported it done (the
/// kernel finished it before then), not to when this connection's event was handled, which may
/// be after many others of the same batch. A connect begun after that poll returned (its
/// socket reused a token of the batch) is timed to `now`.
pub(crate) fn connect_took(started: Instant, polled_at: Instant, now: Instant) -> Duration {
    let done = if polled_at >= started { polled_at } else { now };
    done.saturating_duration_since(started)
}

#[cfg(test)]
mod connect_time_tests {
    use super::connect_took;
    use std::time::{Duration, Instant};

    #[test]
    fn a_connect_ends_when_the_poll_reported_it_not_when_its_event_was_handled() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Connect at 0, reported by the poll at 1 ms, handled at 25 ms after 500 other events.
        assert_eq!(connect_took(t0, t0 + ms(1), t0 + ms(25)), ms(1));
        // Begun after the poll returned: timed to now.
        assert_eq!(connect_took(t0 + ms(2), t0 + ms(1), t0 + ms(3)), ms(1));
    }
}
