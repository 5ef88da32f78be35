//! One HTTP/3 connection of a worker: a UDP socket of its own, connected to the target and
//! registered under the slot's token; QUIC's state machine ([`Quic`], from `quinn-proto`)
//! fed each datagram as it comes and asked for what to send after each batch; its timers
//! (loss detection, acknowledgements, idle) kept in [`H3Conn::timer`], which the worker's
//! poll wakes for. On top, HTTP/3: our control stream with an empty SETTINGS, the server's
//! control stream read for GOAWAY (its QPACK streams are read and dropped: we allow no
//! dynamic table), and up to `--streams` requests in flight, each on its own bidirectional
//! stream, timed from its HEADERS write as HTTP/2's are.

use super::frame::{self, code, kind, FrameReader, Piece};
use super::qpack;
use crate::ctx::Ctx;
use crate::h2::{GrpcMessages, Req, Shared};
use bytes::{Bytes, BytesMut};
use loadbench_model::{ErrorKind, ErrorReason};
use loadbench_plan::Draw;
use mio::{Interest, Token};
use quinn_proto::{
    ClientConfig, Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint,
    EndpointConfig, Event, ReadError, StreamEvent, StreamId, VarInt,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// First wait before reconnecting after a failed connect; doubles per failure.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest wait between reconnects after failed connects.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The largest response field section read (as HTTP/1.1's head limit).
const MAX_SECTION: usize = 64 * 1024;
/// A TLS alert `no_application_protocol` as a QUIC CRYPTO_ERROR (0x100 + 120).
const NO_ALPN: u64 = 0x178;

/// A QUIC client connection with its own endpoint: what the worker and the preflight drive.
pub(crate) struct Quic {
    endpoint: Endpoint,
    handle: ConnectionHandle,
    /// The connection's state machine.
    pub(crate) conn: Connection,
    /// Datagrams to send (one at a time), and the endpoint's own answers.
    out: Vec<u8>,
}

impl Quic {
    /// Begins a handshake with `remote` for the server name `name`.
    pub(crate) fn connect(
        config: &ClientConfig,
        name: &str,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Quic, quinn_proto::ConnectError> {
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let (handle, conn) = endpoint.connect(now, config.clone(), remote, name)?;
        Ok(Quic {
            endpoint,
            handle,
            conn,
            out: Vec::with_capacity(1500),
        })
    }

    /// A datagram from `from`.
    pub(crate) fn datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        let data = BytesMut::from(data);
        self.out.clear();
        let ev = self
            .endpoint
            .handle(now, from, None, None, data, &mut self.out);
        if let Some(DatagramEvent::ConnectionEvent(h, ev)) = ev {
            if h == self.handle {
                self.conn.handle_event(ev);
            }
        }
    }

    /// Hands the endpoint what the connection told it, then sends every datagram due.
    pub(crate) fn transmit(
        &mut self,
        now: Instant,
        mut send: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) {
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(back);
            }
        }
        loop {
            self.out.clear();
            let Some(t) = self.conn.poll_transmit(now, 1, &mut self.out) else {
                break;
            };
            // A full socket buffer drops the datagram: QUIC's loss recovery sends it again.
            let _ = send(&self.out[..t.size]);
        }
    }

    /// When the connection's next timer is due.
    pub(crate) fn timer(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    /// Runs the timers due by `now`.
    pub(crate) fn on_timer(&mut self, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
    }

    /// Preflight: `Some(Ok)` once the handshake completed with ALPN h3, `Some(Err(why))` when
    /// it failed, `None` while it goes on.
    pub(crate) fn poll_handshake(&mut self) -> Option<Result<(), String>> {
        while let Some(ev) = self.conn.poll() {
            match ev {
                Event::Connected => {
                    return Some(match alpn(&self.conn).as_deref() {
                        Some(b"h3") => Ok(()),
                        other => Err(format!(
                            "ALPN chose {}",
                            other
                                .map_or("none".into(), |p| String::from_utf8_lossy(p).into_owned())
                        )),
                    })
                }
                Event::ConnectionLost { reason } => return Some(Err(lost_why(&reason))),
                _ => {}
            }
        }
        None
    }

    /// Closes the connection with the HTTP/3 code `code`.
    pub(crate) fn close(&mut self, now: Instant, code: u64) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::from_u32(0x100));
        self.conn.close(now, code, Bytes::new());
    }
}

/// The protocol ALPN chose.
fn alpn(conn: &Connection) -> Option<Vec<u8>> {
    let data = conn.crypto_session().handshake_data()?;
    let data = data
        .downcast::<quinn_proto::crypto::rustls::HandshakeData>()
        .ok()?;
    data.protocol
}

/// Why a connection was lost, in words for the preflight's line.
fn lost_why(e: &ConnectionError) -> String {
    match e {
        ConnectionError::ConnectionClosed(c) if u64::from(c.error_code) == NO_ALPN => {
            "the server refused ALPN h3 with a no_application_protocol alert".into()
        }
        ConnectionError::TimedOut => "no answer on UDP".into(),
        other => other.to_string(),
    }
}

/// Why an open connection was lost, by its code where the server gave one.
fn lost_reason(e: &ConnectionError) -> ErrorReason {
    match e {
        ConnectionError::ApplicationClosed(c) => {
            ErrorReason::h3_code(true, u64::from(c.error_code))
        }
        ConnectionError::ConnectionClosed(c) => ErrorReason::quic_code(u64::from(c.error_code)),
        ConnectionError::TimedOut => ErrorReason::QuicIdleTimeout,
        ConnectionError::Reset => ErrorReason::QuicStatelessReset,
        ConnectionError::TransportError(_) => ErrorReason::QuicBroken,
        _ => ErrorReason::QuicLost,
    }
}

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum H3Phase {
    /// No socket: not started, failed, or the run needs no more requests.
    Idle,
    /// The QUIC handshake (and TLS within it) is under way.
    Handshaking,
    /// Requests may go.
    Open,
}

/// A request stream: one request in flight (`id` `None`: free).
#[derive(Debug, Clone)]
struct Slot {
    id: Option<StreamId>,
    endpoint: u16,
    draw: Option<Draw>,
    measured: bool,
    /// When the request was due: latency counts from here.
    since: Instant,
    /// When its HEADERS were written.
    sent_at: Instant,
    /// When its last byte was written (the stream finished).
    wrote_at: Instant,
    first_byte_at: Option<Instant>,
    status: u16,
    body: u64,
    read_bytes: u64,
    resend: bool,
    grpc: Option<u16>,
    messages: GrpcMessages,
    /// The framed request (HEADERS, DATA) and how much of it QUIC took.
    out: Vec<u8>,
    out_pos: usize,
    /// The response's frames: the reader, the current frame's type, the field section.
    reader: FrameReader,
    frame: u64,
    section: Vec<u8>,
}

impl Slot {
    fn free(now: Instant) -> Slot {
        Slot {
            id: None,
            endpoint: 0,
            draw: None,
            measured: false,
            since: now,
            sent_at: now,
            wrote_at: now,
            first_byte_at: None,
            status: 0,
            body: 0,
            read_bytes: 0,
            resend: false,
            grpc: None,
            messages: GrpcMessages::default(),
            out: Vec::new(),
            out_pos: 0,
            reader: FrameReader::default(),
            frame: 0,
            section: Vec::new(),
        }
    }

    /// Frees the slot, keeping its buffers.
    fn clear(&mut self, now: Instant) {
        let (mut out, mut section) = (
            std::mem::take(&mut self.out),
            std::mem::take(&mut self.section),
        );
        out.clear();
        section.clear();
        *self = Slot {
            out,
            section,
            ..Slot::free(now)
        };
    }
}

/// A server-opened unidirectional stream: its type once read, and its frames.
#[derive(Debug, Clone)]
struct Uni {
    id: StreamId,
    /// The stream type's bytes so far (a varint of up to 8 bytes).
    head: Vec<u8>,
    kind: Option<u64>,
    reader: FrameReader,
    frame: u64,
    payload: Vec<u8>,
}

/// What ends a connection: its class and reason.
type Failure = (ErrorKind, Option<ErrorReason>);

/// What a connection opened before the measured window records when a measured request
/// first uses it (as HTTP/2's open model).
#[derive(Debug, Default, Clone, Copy)]
struct Deferred {
    handshake: Option<Duration>,
    h3: bool,
}

/// One HTTP/3 connection slot of a worker.
pub(crate) struct H3Conn {
    token: Token,
    sock: Option<mio::net::UdpSocket>,
    quic: Option<Box<Quic>>,
    remote: SocketAddr,
    /// Where the connection is.
    pub(crate) phase: H3Phase,
    /// When the connect (or the phase before `Open`) began, for `--connect-timeout`.
    pub(crate) since: Instant,
    slots: Vec<Slot>,
    active: u32,
    limit: u32,
    /// No new streams: a GOAWAY came.
    draining: bool,
    /// The GOAWAY's stream id: streams at or past it were not processed.
    goaway: Option<u64>,
    served: bool,
    opened_at: Instant,
    /// Slots whose request QUIC has not taken whole yet (flow control).
    pending: Vec<usize>,
    /// A request stream opened ahead, so a due request never finds the server's stream
    /// limit after it was taken (`None`: the limit is reached).
    spare: Option<StreamId>,
    uni: Vec<Uni>,
    /// When QUIC's next timer is due.
    pub(crate) timer: Option<Instant>,
    /// Requests this slot completed in the measured window.
    pub(crate) completed: u32,
    backoff: Duration,
    /// When a backed-off slot may connect again.
    pub(crate) wake_at: Instant,
    failed: Option<Failure>,
    deferred: Deferred,
    grpc: bool,
}

impl H3Conn {
    /// An idle slot for up to `streams` requests in flight.
    pub(crate) fn new(token: Token, streams: u32, now: Instant) -> Self {
        H3Conn {
            token,
            sock: None,
            quic: None,
            remote: SocketAddr::from(([127, 0, 0, 1], 0)),
            phase: H3Phase::Idle,
            since: now,
            slots: (0..streams).map(|_| Slot::free(now)).collect(),
            active: 0,
            limit: streams,
            draining: false,
            goaway: None,
            served: false,
            opened_at: now,
            pending: Vec::new(),
            spare: None,
            uni: Vec::new(),
            timer: None,
            completed: 0,
            backoff: Duration::ZERO,
            wake_at: now,
            failed: None,
            deferred: Deferred::default(),
            grpc: false,
        }
    }

    /// With `on` (a `grpc://` load), the slot counts each answer's `grpc-status`.
    pub(crate) fn counting_grpc(mut self, on: bool) -> Self {
        self.grpc = on;
        self
    }

    /// Closed model: opens the connection if it has none, else fills its free streams.
    pub(crate) fn begin(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        match self.phase {
            H3Phase::Idle if ctx.wants_more(now) || !sh.requeue.is_empty() => {
                self.connect(ctx, now)
            }
            H3Phase::Open => self.drive(ctx, sh, now),
            _ => {}
        }
    }

    fn connect(&mut self, ctx: &mut Ctx, now: Instant) {
        self.reset_connection(now);
        self.since = Instant::now().max(now);
        self.opened_at = self.since;
        self.phase = H3Phase::Handshaking;
        ctx.connect_begun(self.since);
        match self.open_socket(ctx) {
            Ok(()) => self.flush(now),
            Err(kind) => self.fail_connect(ctx, (kind, None), now),
        }
    }

    /// A UDP socket connected to the target, registered for reads, and QUIC's first flight.
    fn open_socket(&mut self, ctx: &mut Ctx) -> Result<(), ErrorKind> {
        let crate::transport::Dest::Tcp(remote) = ctx.dest else {
            return Err(ErrorKind::ConnectError);
        };
        let Some((config, name)) = ctx.tls.as_ref().and_then(|t| t.quic()) else {
            return Err(ErrorKind::ConnectError);
        };
        let local = match (ctx.sources.take(), remote.is_ipv4()) {
            (Some(ip), _) => SocketAddr::new(ip, 0),
            (None, true) => SocketAddr::from(([0, 0, 0, 0], 0)),
            (None, false) => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
        };
        let mut sock = mio::net::UdpSocket::bind(local).map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrNotAvailable => ErrorKind::AddrNotAvailable,
            _ => ErrorKind::ConnectError,
        })?;
        sock.connect(remote).map_err(|_| ErrorKind::ConnectError)?;
        ctx.registry
            .register(&mut sock, self.token, Interest::READABLE)
            .map_err(|_| ErrorKind::ConnectError)?;
        let quic = Quic::connect(config, name, remote, Instant::now())
            .map_err(|_| ErrorKind::ConnectError)?;
        self.remote = remote;
        self.sock = Some(sock);
        self.quic = Some(Box::new(quic));
        Ok(())
    }

    /// A new connection's state.
    fn reset_connection(&mut self, now: Instant) {
        self.slots.iter_mut().for_each(|s| s.clear(now));
        self.active = 0;
        self.limit = self.slots.len() as u32;
        self.draining = false;
        self.goaway = None;
        self.served = false;
        self.pending.clear();
        self.spare = None;
        self.uni.clear();
        self.deferred = Deferred::default();
    }

    /// A readiness event: every datagram queued is read, then the connection is driven.
    pub(crate) fn on_event(&mut self, ctx: &mut Ctx, sh: &mut Shared, _closed: bool) {
        if self.phase == H3Phase::Idle {
            return;
        }
        let mut buf = std::mem::take(&mut ctx.buf);
        if let (Some(sock), Some(quic)) = (self.sock.as_mut(), self.quic.as_mut()) {
            let mut drained = false;
            for _ in 0..crate::conn::READS_PER_TURN * 4 {
                match sock.recv(&mut buf) {
                    Ok(n) => quic.datagram(Instant::now(), self.remote, &buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    // WouldBlock, or an ICMP error (port unreachable) the idle timer covers.
                    Err(_) => {
                        drained = true;
                        break;
                    }
                }
            }
            if !drained {
                // A server that never stops sending: the others get their turn, and a new
                // edge (epoll is edge-triggered) resumes this one.
                let _ = ctx
                    .registry
                    .reregister(sock, self.token, Interest::READABLE);
            }
        }
        ctx.buf = buf;
        self.drive(ctx, sh, Instant::now());
    }

    /// QUIC's timer is due.
    pub(crate) fn on_timer(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        if let Some(q) = self.quic.as_mut() {
            q.on_timer(now);
        }
        self.drive(ctx, sh, now);
    }

    /// Handles what QUIC has to say, starts requests (closed model), sends, re-arms the timer.
    fn drive(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        while let Some(ev) = self.quic.as_mut().and_then(|q| q.conn.poll()) {
            self.on_quic(ctx, sh, ev, Instant::now());
            if self.quic.is_none() {
                return;
            }
        }
        if self.phase == H3Phase::Open {
            self.refill_spare();
            if !self.pending.is_empty() {
                self.write_pending(now);
            }
            if !self.draining && !ctx.open {
                self.fill(ctx, sh, now);
            }
            if self.draining && self.active == 0 {
                return self.reopen(ctx, now);
            }
        }
        self.flush(now);
    }

    /// Sends what QUIC queued, and keeps its next timer.
    fn flush(&mut self, now: Instant) {
        let (Some(sock), Some(quic)) = (self.sock.as_ref(), self.quic.as_mut()) else {
            return;
        };
        quic.transmit(now, |d| sock.send(d).map(drop));
        self.timer = quic.timer();
    }

    fn on_quic(&mut self, ctx: &mut Ctx, sh: &mut Shared, ev: Event, now: Instant) {
        match ev {
            Event::Connected => self.on_connected(ctx, sh, now),
            Event::ConnectionLost { reason } => self.on_lost(ctx, &reason, now),
            Event::Stream(StreamEvent::Readable { id }) => self.on_readable(ctx, sh, id, now),
            Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => self.accept_uni(ctx, sh, now),
            Event::Stream(StreamEvent::Writable { .. }) => self.write_pending(now),
            Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => self.refill_spare(),
            _ => {}
        }
    }

    /// The handshake completed: ALPN must have chosen h3; our control stream opens.
    fn on_connected(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        let Some(q) = self.quic.as_mut() else { return };
        if alpn(&q.conn).as_deref() != Some(b"h3") {
            return self.fail_connect(ctx, (ErrorKind::TlsHandshake, None), now);
        }
        let mut control = Vec::with_capacity(4);
        frame::put_varint(&mut control, frame::uni::CONTROL);
        frame::frame(&mut control, kind::SETTINGS, &[]);
        if let Some(id) = q.conn.streams().open(Dir::Uni) {
            let _ = q.conn.send_stream(id).write(&control);
        }
        self.left_connect(ctx);
        let took = now.saturating_duration_since(self.since);
        ctx.growth.connected(took);
        if ctx.recorder.measuring(self.since) && ctx.in_window(now) {
            // QUIC's connect is its handshake: both phases get it.
            ctx.recorder.connected(took);
            ctx.recorder.handshake(took, false);
            sh.protocols.h3 += 1;
        } else if ctx.open {
            self.deferred = Deferred {
                handshake: Some(took),
                h3: true,
            };
        }
        self.phase = H3Phase::Open;
        self.since = now;
    }

    /// The connection ended: before it opened, as a failed connect; after, every stream in
    /// flight fails with why.
    fn on_lost(&mut self, ctx: &mut Ctx, reason: &ConnectionError, now: Instant) {
        if self.phase != H3Phase::Open {
            let kind = match reason {
                ConnectionError::TimedOut => ErrorKind::ConnectTimeout,
                ConnectionError::TransportError(_) | ConnectionError::ConnectionClosed(_) => {
                    ErrorKind::TlsHandshake
                }
                _ => ErrorKind::ConnectError,
            };
            return self.fail_connect(ctx, (kind, None), now);
        }
        let failure = match reason {
            ConnectionError::LocallyClosed => (ErrorKind::ClosedBeforeResponseComplete, None),
            other => (ErrorKind::QuicClosed, Some(lost_reason(other))),
        };
        if self.active == 0 && self.goaway.is_some() {
            return self.reopen(ctx, now);
        }
        if self.active == 0 {
            ctx.recorder.stale_close();
        }
        self.fail_all(ctx, failure, now);
    }

    /// Every stream in flight fails with `failure`; the slot connects anew.
    #[cold]
    fn fail_all(&mut self, ctx: &mut Ctx, failure: Failure, now: Instant) {
        for i in 0..self.slots.len() {
            if self.slots[i].id.is_some() {
                self.fail_stream(ctx, i, failure, now);
            }
        }
        self.close();
        self.phase = H3Phase::Idle;
        ctx.retry.push(self.token.0);
    }

    /// Reads a readable stream: one of our requests' answers, or a server stream.
    fn on_readable(&mut self, ctx: &mut Ctx, sh: &mut Shared, id: StreamId, now: Instant) {
        if id.dir() == Dir::Uni {
            return self.read_uni(ctx, sh, id, now);
        }
        let Some(i) = self.slots.iter().position(|s| s.id == Some(id)) else {
            return;
        };
        let Some(q) = self.quic.as_mut() else { return };
        let mut recv = q.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut end: Option<Result<(), Failure>> = None;
        let grpc = self.grpc;
        let s = &mut self.slots[i];
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    s.read_bytes += chunk.bytes.len() as u64;
                    if let Err(f) = read_answer(ctx, s, &chunk.bytes, grpc, now) {
                        end = Some(Err(f));
                        break;
                    }
                }
                Ok(None) => {
                    end = Some(Ok(()));
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    let reason = ErrorReason::h3_code(false, u64::from(code));
                    end = Some(Err((ErrorKind::H3StreamReset, Some(reason))));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        match end {
            Some(Ok(())) if s.reader.at_boundary() => self.complete(ctx, i, now),
            Some(Ok(())) => {
                let f = (ErrorKind::MalformedResponse, Some(ErrorReason::H3Frame));
                self.fail_stream(ctx, i, f, now);
            }
            Some(Err(f)) => {
                if let Some(q) = self.quic.as_mut() {
                    let _ = q.conn.recv_stream(id).stop(VarInt::from_u32(0x10c));
                }
                self.fail_stream(ctx, i, f, now);
            }
            None => {}
        }
    }

    /// The server's new unidirectional streams.
    fn accept_uni(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        while let Some(id) = self
            .quic
            .as_mut()
            .and_then(|q| q.conn.streams().accept(Dir::Uni))
        {
            self.uni.push(Uni {
                id,
                head: Vec::new(),
                kind: None,
                reader: FrameReader::default(),
                frame: 0,
                payload: Vec::new(),
            });
            self.read_uni(ctx, sh, id, now);
        }
    }

    /// A server stream: the control stream's frames are read (GOAWAY drains the
    /// connection); any other stream's bytes are dropped.
    fn read_uni(&mut self, ctx: &mut Ctx, sh: &mut Shared, id: StreamId, now: Instant) {
        let Some(u) = self.uni.iter().position(|u| u.id == id) else {
            return;
        };
        let Some(q) = self.quic.as_mut() else { return };
        let mut recv = q.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut goaway = None;
        let uni = &mut self.uni[u];
        while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
            let mut data = &chunk.bytes[..];
            if uni.kind.is_none() {
                while uni.kind.is_none() && !data.is_empty() {
                    uni.head.push(data[0]);
                    data = &data[1..];
                    uni.kind = frame::varint(&uni.head).map(|(k, _)| k);
                }
            }
            if uni.kind != Some(frame::uni::CONTROL) {
                continue;
            }
            let (frames, payload) = (&mut uni.frame, &mut uni.payload);
            let _ = uni.reader.feed::<()>(data, |p| {
                match p {
                    Piece::Start { kind, .. } => {
                        *frames = kind;
                        payload.clear();
                    }
                    Piece::Payload { bytes, end } if *frames == kind::GOAWAY => {
                        if payload.len() < 16 {
                            payload.extend_from_slice(bytes);
                        }
                        if end {
                            goaway = frame::varint(payload).map(|(v, _)| v);
                        }
                    }
                    Piece::Payload { .. } => {}
                }
                Ok(())
            });
        }
        let _ = chunks.finalize();
        if let Some(last) = goaway {
            self.on_goaway(ctx, sh, last, now);
        }
    }

    /// GOAWAY: no new streams; those at or past its stream id were not processed and go
    /// again on a new connection, once (as HTTP/2's).
    #[cold]
    fn on_goaway(&mut self, ctx: &mut Ctx, sh: &mut Shared, last: u64, now: Instant) {
        self.draining = true;
        self.goaway = Some(last);
        if ctx.recorder.measuring(now) && ctx.in_window(now) {
            sh.stats.goaways += 1;
        }
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            let Some(id) = s.id else { continue };
            if id.index() * 4 < last {
                continue;
            }
            if s.resend {
                let f = (
                    ErrorKind::ClosedBeforeResponseComplete,
                    Some(ErrorReason::H3GoawayRefused),
                );
                self.fail_stream(ctx, i, f, now);
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
                ctx.records(true, s.since, now);
            }
            self.release(i, now);
        }
    }

    /// Starts requests while a stream is free and the run wants more (closed model).
    fn fill(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        while self.active < self.limit {
            // The stream first: a request is taken only when one is there for it.
            let Some(id) = self.spare.take() else { return };
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
                None => {
                    self.spare = Some(id);
                    return;
                }
            };
            let measured = ctx.recorder.measuring(since) && ctx.in_window(since);
            if measured {
                if again.is_some() {
                    ctx.recorder.resent(now);
                } else {
                    ctx.recorder.sent(now, now, now);
                }
            }
            self.start(ctx, sh, id, req, (since, measured), again.is_some(), now);
            self.refill_spare();
            if !ctx.keepalive {
                self.draining = true;
                return;
            }
        }
    }

    /// Opens the next request stream ahead when the server's limit allows.
    fn refill_spare(&mut self) {
        if self.spare.is_none() && !self.draining {
            self.spare = self
                .quic
                .as_mut()
                .and_then(|q| q.conn.streams().open(Dir::Bi));
        }
    }

    /// Starts `req` on stream `id` and writes its frames as far as QUIC takes them.
    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        id: StreamId,
        req: Req,
        (since, measured): (Instant, bool),
        resend: bool,
        now: Instant,
    ) {
        let Some(i) = self.slots.iter().position(|s| s.id.is_none()) else {
            return;
        };
        let s = &mut self.slots[i];
        s.out.clear();
        let https = true;
        match req.draw {
            None => {
                let fixed = &sh.requests[usize::from(req.endpoint)];
                frame::frame(&mut s.out, kind::HEADERS, &fixed.block);
                if !fixed.body.is_empty() {
                    frame::frame(&mut s.out, kind::DATA, &fixed.body);
                }
            }
            Some(draw) => {
                sh.scratch.clear();
                ctx.assemble(req.endpoint, draw, self.token.0, &mut sh.scratch);
                let body_at = qpack::encode_http1(&sh.scratch, https, &mut sh.block)
                    .unwrap_or(sh.scratch.len());
                frame::frame(&mut s.out, kind::HEADERS, &sh.block);
                if body_at < sh.scratch.len() {
                    frame::frame(&mut s.out, kind::DATA, &sh.scratch[body_at..]);
                }
            }
        }
        s.id = Some(id);
        s.endpoint = req.endpoint;
        s.draw = req.draw;
        s.measured = measured;
        s.since = since;
        s.sent_at = now;
        s.resend = resend;
        if measured {
            ctx.recorder.wrote(now, s.out.len() as u64);
        }
        self.active += 1;
        sh.stats.max_streams_in_flight = sh.stats.max_streams_in_flight.max(self.active);
        self.pending.push(i);
        self.write_pending(now);
    }

    /// Writes the requests QUIC has not taken whole; a finished one ends its stream.
    fn write_pending(&mut self, now: Instant) {
        let Some(q) = self.quic.as_mut() else { return };
        let slots = &mut self.slots;
        self.pending.retain(|&i| {
            let s = &mut slots[i];
            let Some(id) = s.id else { return false };
            let mut send = q.conn.send_stream(id);
            while s.out_pos < s.out.len() {
                match send.write(&s.out[s.out_pos..]) {
                    Ok(n) => s.out_pos += n,
                    // Blocked by flow control: the Writable event resumes it.
                    Err(_) => return true,
                }
            }
            let _ = send.finish();
            s.wrote_at = now;
            false
        });
    }

    /// A complete response on slot `i`: recorded as HTTP/2's are.
    fn complete(&mut self, ctx: &mut Ctx, i: usize, now: Instant) {
        let s = &self.slots[i];
        if s.status == 0 {
            let f = (ErrorKind::MalformedResponse, Some(ErrorReason::H3Frame));
            return self.fail_stream(ctx, i, f, now);
        }
        if ctx.records(s.measured, s.since, now) {
            self.completed = self.completed.saturating_add(1);
            let latency = now.saturating_duration_since(s.since);
            let sent = if ctx.open { s.sent_at } else { s.since };
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
    fn fail_stream(&mut self, ctx: &mut Ctx, i: usize, (kind, reason): Failure, now: Instant) {
        let s = &self.slots[i];
        if ctx.records(s.measured, s.since, now) {
            ctx.recorder.error(now, kind, s.read_bytes);
            if let Some(r) = reason {
                ctx.recorder.reason(r);
            }
            ctx.recorder.endpoint_error(s.endpoint, kind);
        }
        self.release(i, now);
    }

    fn release(&mut self, i: usize, now: Instant) {
        if let Some(k) = self.pending.iter().position(|&p| p == i) {
            // Answered (or failed) before its request was all sent: the rest is not wanted.
            self.pending.remove(k);
            if let (Some(q), Some(id)) = (self.quic.as_mut(), self.slots[i].id) {
                let cancel = VarInt::from_u32(code::REQUEST_CANCELLED as u32);
                let _ = q.conn.send_stream(id).reset(cancel);
            }
        }
        self.slots[i].clear(now);
        self.active -= 1;
    }

    /// A drained connection (a GOAWAY, or `--no-keepalive`'s one request answered) closes;
    /// the slot connects anew on the next loop turn.
    #[cold]
    fn reopen(&mut self, ctx: &mut Ctx, now: Instant) {
        let refused = self.goaway.is_some() && !self.served;
        self.close();
        self.phase = H3Phase::Idle;
        if refused {
            self.back_off(ctx, now);
            if !ctx.open {
                return ctx.backoff.push(self.token.0);
            }
        }
        ctx.retry.push(self.token.0);
    }

    #[cold]
    fn back_off(&mut self, ctx: &mut Ctx, now: Instant) {
        self.backoff = (self.backoff * 2).clamp(BACKOFF_MIN, BACKOFF_MAX);
        self.wake_at = now + self.backoff;
        if !ctx.open && ctx.recorder.measuring(now) && ctx.in_window(now) {
            let end = ctx.window_end().unwrap_or(self.wake_at).min(self.wake_at);
            ctx.recorder.backoff(end.saturating_duration_since(now));
        }
    }

    /// The handshake ended (or failed): one fewer connect in progress.
    fn left_connect(&self, ctx: &mut Ctx) {
        if self.phase == H3Phase::Handshaking {
            ctx.connecting = ctx.connecting.saturating_sub(1);
        }
    }

    /// A connection that never opened: one claimed request fails with the class (so a dead
    /// target ends a count run), and the slot backs off before it connects again. In the
    /// open model the worker fails the oldest waiting request with it.
    #[cold]
    fn fail_connect(&mut self, ctx: &mut Ctx, (kind, reason): Failure, now: Instant) {
        self.left_connect(ctx);
        self.close();
        self.phase = H3Phase::Idle;
        self.back_off(ctx, now);
        if ctx.open {
            self.failed = Some((kind, reason));
            return ctx.retry.push(self.token.0);
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
        ctx.backoff.push(self.token.0);
    }

    /// Housekeeping: a handshake not done within `--connect-timeout`, and streams without an
    /// answer within `--timeout` (each cancelled and counted as `read_timeout`).
    pub(crate) fn expire(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        now: Instant,
        timeout: Duration,
        connect_timeout: Duration,
    ) {
        match self.phase {
            H3Phase::Idle => return,
            H3Phase::Handshaking => {
                if now.saturating_duration_since(self.since) > connect_timeout {
                    self.fail_connect(ctx, (ErrorKind::ConnectTimeout, None), now);
                }
                return;
            }
            H3Phase::Open => {}
        }
        let mut expired = false;
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            let Some(id) = s.id else { continue };
            let from = if ctx.open { s.sent_at } else { s.since };
            if now.saturating_duration_since(from) > timeout {
                if let Some(q) = self.quic.as_mut() {
                    let cancel = VarInt::from_u32(code::REQUEST_CANCELLED as u32);
                    let _ = q.conn.send_stream(id).reset(cancel);
                    let _ = q.conn.recv_stream(id).stop(cancel);
                }
                self.fail_stream(ctx, i, (ErrorKind::ReadTimeout, None), now);
                expired = true;
            }
        }
        if expired {
            self.drive(ctx, sh, now);
        }
    }

    /// Drops the socket and the QUIC state; the slot stays and may connect again.
    pub(crate) fn close(&mut self) {
        // The server learns at once (CONNECTION_CLOSE, H3_NO_ERROR) instead of by its idle
        // timeout; a connection already closed sends nothing.
        if let (Some(q), Some(sock)) = (self.quic.as_mut(), self.sock.as_ref()) {
            let now = Instant::now();
            q.close(now, code::NO_ERROR);
            q.transmit(now, |d| sock.send(d).map(drop));
        }
        // Dropping the socket closes it, and epoll forgets a closed descriptor.
        self.sock = None;
        self.quic = None;
        self.spare = None;
        self.timer = None;
    }

    /// Has a socket, for the live views' open-connection count.
    pub(crate) fn is_open(&self) -> bool {
        self.sock.is_some()
    }

    /// Measured requests written and unanswered.
    pub(crate) fn measured_in_flight(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.id.is_some() && s.measured)
            .count() as u64
    }

    /// When the oldest request in flight was due.
    pub(crate) fn oldest(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter(|s| s.id.is_some())
            .map(|s| s.since)
            .min()
    }

    /// When each other request in flight was due.
    pub(crate) fn others_in_flight(&self) -> impl Iterator<Item = Instant> + '_ {
        let mut oldest = self.oldest();
        self.slots
            .iter()
            .filter(|s| s.id.is_some())
            .map(|s| s.since)
            .filter(move |&t| oldest.take_if(|o| *o == t).is_none())
    }

    // The open model.

    /// Streams a due request may take now.
    pub(crate) fn free_streams(&self) -> u32 {
        if self.phase == H3Phase::Open && !self.draining && self.spare.is_some() {
            self.limit.saturating_sub(self.active)
        } else {
            0
        }
    }

    /// No socket, and any backoff is over: the pool may connect this slot again.
    pub(crate) fn reusable(&self, now: Instant) -> bool {
        self.phase == H3Phase::Idle && self.sock.is_none() && self.wake_at <= now
    }

    /// Open model: connects this slot.
    pub(crate) fn connect_open(&mut self, ctx: &mut Ctx, now: Instant) {
        self.connect(ctx, now);
    }

    /// Open model: starts a request due at `intended` on a free stream.
    pub(crate) fn open_stream(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        req: Req,
        intended: Instant,
        resend: bool,
        now: Instant,
    ) {
        let measured = ctx.recorder.measuring(intended) && ctx.in_window(intended);
        let mut start = intended;
        if measured {
            let d = std::mem::take(&mut self.deferred);
            if let Some(took) = d.handshake {
                ctx.recorder.connected(took);
                ctx.recorder.handshake(took, false);
            }
            if d.h3 {
                sh.protocols.h3 += 1;
            }
            if resend {
                ctx.recorder.resent(now);
            } else {
                // A stream was free for it since the slot was freed, and not before the
                // connection opened (a wait for the connect stays in the latency), as HTTP/2's.
                let free = self.slots.iter().find(|s| s.id.is_none());
                let free_at = free.map_or(now, |s| s.since).max(self.since);
                start = ctx.recorder.sent(now, intended, free_at);
            }
        }
        match self.spare.take() {
            Some(id) => self.start(ctx, sh, id, req, (start, measured), resend, now),
            // Not reached: `free_streams` is 0 without a spare stream.
            None => sh.requeue.push((intended, req)),
        }
        self.refill_spare();
    }

    /// Sends what the batch queued.
    pub(crate) fn send_out(&mut self, _ctx: &mut Ctx, _sh: &mut Shared, now: Instant) {
        self.flush(now);
    }

    /// The connect failure this slot has not handed to the worker yet.
    pub(crate) fn take_failure(&mut self) -> Option<Failure> {
        self.failed.take()
    }
}

/// A response stream's bytes: HEADERS give the status (and the first byte's time), DATA is
/// counted, other frames are skipped. `Err` when the framing or QPACK is broken.
fn read_answer(
    ctx: &mut Ctx,
    s: &mut Slot,
    data: &[u8],
    grpc: bool,
    now: Instant,
) -> Result<(), Failure> {
    let bad = |r| (ErrorKind::MalformedResponse, Some(r));
    let (frame, section, body, messages) =
        (&mut s.frame, &mut s.section, &mut s.body, &mut s.messages);
    let (status, grpc_status, first) = (&mut s.status, &mut s.grpc, &mut s.first_byte_at);
    let mut first_now = false;
    s.reader.feed(data, |p| {
        match p {
            Piece::Start { kind, len } => {
                *frame = kind;
                match kind {
                    kind::HEADERS if len > MAX_SECTION as u64 => {
                        return Err(bad(ErrorReason::HeadOver64KiB))
                    }
                    kind::HEADERS => section.clear(),
                    kind::PUSH_PROMISE | kind::SETTINGS | kind::GOAWAY => {
                        return Err(bad(ErrorReason::H3Frame))
                    }
                    _ => {}
                }
            }
            Piece::Payload { bytes, end } => match *frame {
                kind::DATA => {
                    *body += bytes.len() as u64;
                    if grpc {
                        messages.feed(bytes);
                    }
                }
                kind::HEADERS => {
                    section.extend_from_slice(bytes);
                    if end {
                        let h = qpack::decode(section).map_err(|_| bad(ErrorReason::Qpack))?;
                        if first.is_none() {
                            *first = Some(now);
                            first_now = true;
                        }
                        if h.grpc.is_some() {
                            *grpc_status = h.grpc;
                        }
                        // An interim answer (1xx) is not the status; trailers carry none.
                        if let Some(code) = h.status.filter(|&c| c >= 200) {
                            *status = code;
                        }
                    }
                }
                _ => {}
            },
        }
        Ok(())
    })?;
    if first_now && s.measured && ctx.in_window(now) {
        let from = if ctx.open { s.sent_at } else { s.since };
        ctx.recorder.first_byte(now.saturating_duration_since(from));
    }
    Ok(())
}

impl crate::h2::StreamConn for H3Conn {
    const TIMERS: bool = true;
    fn create(token: Token, streams: u32, grpc: bool, now: Instant) -> Self {
        H3Conn::new(token, streams, now).counting_grpc(grpc)
    }
    fn begin(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        H3Conn::begin(self, ctx, sh, now);
    }
    fn on_event(&mut self, ctx: &mut Ctx, sh: &mut Shared, closed: bool) {
        H3Conn::on_event(self, ctx, sh, closed);
    }
    fn take_failure(&mut self) -> Option<Failure> {
        H3Conn::take_failure(self)
    }
    fn expire(
        &mut self,
        ctx: &mut Ctx,
        sh: &mut Shared,
        now: Instant,
        timeout: Duration,
        connect: Duration,
    ) {
        H3Conn::expire(self, ctx, sh, now, timeout, connect);
    }
    fn free_streams(&self) -> u32 {
        H3Conn::free_streams(self)
    }
    fn in_flight(&self) -> u32 {
        self.active
    }
    fn reusable(&self, now: Instant) -> bool {
        H3Conn::reusable(self, now)
    }
    fn connect_open(&mut self, ctx: &mut Ctx, now: Instant) {
        H3Conn::connect_open(self, ctx, now);
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
        H3Conn::open_stream(self, ctx, sh, req, intended, resend, now);
    }
    fn send_out(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        H3Conn::send_out(self, ctx, sh, now);
    }
    fn timer(&self) -> Option<Instant> {
        self.timer
    }
    fn on_timer(&mut self, ctx: &mut Ctx, sh: &mut Shared, now: Instant) {
        H3Conn::on_timer(self, ctx, sh, now);
    }
}

impl crate::worker::Connection for H3Conn {
    fn wake_at(&self) -> Instant {
        self.wake_at
    }
    fn is_open(&self) -> bool {
        H3Conn::is_open(self)
    }
    fn busy(&self) -> bool {
        self.active > 0
    }
    fn completed(&self) -> u32 {
        self.completed
    }
    fn abandoned(&self) -> u64 {
        self.measured_in_flight()
    }
    fn oldest(&self) -> Option<Instant> {
        H3Conn::oldest(self)
    }
    fn others(&self) -> impl Iterator<Item = Instant> + '_ {
        self.others_in_flight()
    }
    fn shut(&mut self) {
        self.close();
        self.phase = H3Phase::Idle;
    }
}
