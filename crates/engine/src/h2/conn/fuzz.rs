//! Fuzzing only (`fuzz/fuzz_targets/h2_frames.rs`): a connection's receive path without a
//! socket. The server's bytes after our preface go through the connection's own frame reader,
//! header-block assembly, HPACK decoder, SETTINGS, flow control and stream bookkeeping, as
//! [`H2Conn`] reads them from the network; what the connection would write is dropped, as if
//! the socket took it. Nothing connects: a connection that fails or is drained stops here.

use super::{H2Conn, H2Phase};
use crate::ctx::{Ctx, WorkerConfig};
use crate::h2::hpack::H2Request;
use crate::h2::{H2Setup, Shared};
use crate::recorder::Recorder;
use crate::WorkerLimits;
use mio::Token;
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What one connection did with the bytes it was given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Received {
    /// Bytes fed before the connection stopped reading (failed, or drained and closed).
    pub fed: usize,
    /// The connection is still open at the end.
    pub open: bool,
    /// The largest header block it ever held.
    pub largest_block: usize,
    /// The largest capacity of its header-block buffer.
    pub block_capacity: usize,
    /// The largest capacity of its frame payload buffer.
    pub payload_capacity: usize,
    /// Measured requests sent (each send of a request a GOAWAY refused counts again).
    pub sent: u64,
    /// Responses completed.
    pub requests: u64,
    /// Requests failed after they were sent (errors less the connect classes).
    pub failed: u64,
    /// Requests still in flight at the end: what a run counts as abandoned.
    pub in_flight: u64,
    /// Sends a GOAWAY refused (`h2.goaway_retries`).
    pub goaway_retries: u64,
    /// GOAWAY frames counted (`h2.goaways`).
    pub goaways: u64,
}

/// The request every stream carries: a POST whose body is larger than the default
/// flow-control window (so the window and early-answer paths run), or a bodyless GET. Encoded
/// once per process.
fn setup(body: bool) -> &'static H2Setup {
    static SETUPS: [OnceLock<H2Setup>; 2] = [OnceLock::new(), OnceLock::new()];
    SETUPS[usize::from(body)].get_or_init(|| {
        let request = if body {
            let mut r =
                b"POST /upload HTTP/1.1\r\nhost: fuzz\r\ncontent-length: 70000\r\n\r\n".to_vec();
            r.resize(r.len() + 70_000, b'x');
            r
        } else {
            b"GET / HTTP/1.1\r\nhost: fuzz\r\n\r\n".to_vec()
        };
        let encoded = H2Request::from_http1(&request, false).expect("a valid request");
        H2Setup {
            requests: vec![encoded],
            streams: 8,
            grpc: true,
            http3: false,
        }
    })
}

/// One worker's configuration for the connection: a closed-model run without a request limit
/// or a deadline (what a stream's answer lets it send is bounded by the input) that never
/// connects anywhere.
fn config(now: Instant) -> WorkerConfig<'static> {
    WorkerConfig {
        // Never connected to: the connection starts after its connect.
        addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 9)),
        unix: None,
        tls: None,
        source_addrs: &[],
        first_source: 0,
        request: b"",
        head: false,
        script: None,
        mix: &[],
        values: None,
        flow: None,
        keepalive: true,
        pipeline: 1,
        connections: 1,
        ws_idle: 0,
        budget: None,
        t0: now,
        deadline: None,
        limits: WorkerLimits {
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            tick: Duration::from_millis(100),
        },
        pacing: None,
    }
}

thread_local! {
    /// The worker context, kept from input to input: a new one costs its recorder's ten
    /// histograms (megabytes to allocate and free), which would make fuzzing a hundred times
    /// slower. Each input's figures are read as differences.
    static WORKER: RefCell<Option<Ctx<'static>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's worker context, ready for a new connection: its recorder is
/// replaced every two seconds (so its per-second series stays short) and the lists a failed
/// connection leaves its slot in are emptied.
fn with_worker<T>(f: impl FnOnce(&mut Ctx<'static>) -> T) -> T {
    WORKER.with(|cell| {
        let mut cell = cell.borrow_mut();
        let now = Instant::now();
        let ctx = cell.get_or_insert_with(|| {
            let poll = mio::Poll::new().expect("an epoll instance");
            let registry = poll.registry().try_clone().expect("a registry");
            Ctx::new(&mut config(now), registry, now)
        });
        if now.saturating_duration_since(ctx.recorder.t0()) > Duration::from_secs(2) {
            ctx.recorder = Recorder::new(now, false)
                .with_endpoints(0)
                .with_window(Duration::ZERO);
        }
        ctx.retry.clear();
        ctx.backoff.clear();
        ctx.connecting = 1;
        f(ctx)
    })
}

/// Feeds a fresh h2c connection that has written its preface and waits for the server's
/// SETTINGS: `first` as one read (when not empty), then `data` in reads of `piece` bytes (as
/// the network splits them), with up to `streams` (1 to 8) requests in flight, each with a
/// body when `body`. After each read the connection does what it does after a read: gives
/// back window, opens streams, queues its frames (which are then dropped as written).
pub fn receive(first: &[u8], data: &[u8], piece: usize, streams: u32, body: bool) -> Received {
    let streams = streams.clamp(1, 8);
    let setup = setup(body);
    with_worker(|ctx| {
        let before = ctx.recorder.pulse();
        let now = Instant::now();
        let mut sh = Shared::new(setup);
        let mut conn = H2Conn::new(Token(0), streams, now).counting_grpc(true);
        conn.phase = H2Phase::Preface;
        let mut got = Received {
            open: true,
            ..Received::default()
        };
        let reads = std::iter::once(first)
            .filter(|f| !f.is_empty())
            .chain(data.chunks(piece.max(1)));
        for chunk in reads {
            let now = Instant::now();
            let result = conn.process(ctx, &mut sh, chunk, now);
            got.fed += chunk.len();
            got.largest_block = got.largest_block.max(conn.block.len());
            got.block_capacity = got.block_capacity.max(conn.block.capacity());
            got.payload_capacity = got.payload_capacity.max(conn.payload.capacity());
            match result {
                Ok(()) => conn.after_read(ctx, &mut sh, now),
                Err(e) => conn.fail_conn(ctx, &mut sh, e, now),
            }
            // What the socket would have taken.
            conn.out.clear();
            conn.out_pos = 0;
            if conn.phase == H2Phase::Idle {
                got.open = false;
                break;
            }
        }
        let after = ctx.recorder.pulse();
        let unsent = |p: &crate::pulse::Pulse| p.errors.before_send();
        got.in_flight = conn.measured_in_flight();
        got.sent = after.sent - before.sent;
        got.requests = after.requests - before.requests;
        got.failed =
            (after.errors.total() - before.errors.total()) - (unsent(&after) - unsent(&before));
        got.goaway_retries = sh.stats.goaway_retries;
        got.goaways = sh.stats.goaways;
        got
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::conn::MAX_HEADER_BLOCK;
    use crate::h2::frame::{self, flag, kind};

    fn settings() -> Vec<u8> {
        let mut wire = Vec::new();
        frame::settings(&mut wire, &[]);
        wire
    }

    /// Each send is answered, failed, in flight or refused: the fuzz target's identity.
    fn accounted(got: &Received) -> bool {
        got.requests + got.failed + got.in_flight + got.goaway_retries == got.sent
    }

    #[test]
    fn a_well_formed_answer_completes_its_stream_at_every_split() {
        let mut wire = Vec::new();
        // :status 200 (static index 8), the end of the stream.
        let flags = flag::END_HEADERS | flag::END_STREAM;
        frame::frame(&mut wire, kind::HEADERS, flags, 1, &[0x88]);
        for piece in [1, 4, 9, 64] {
            let got = receive(&settings(), &wire, piece, 1, false);
            assert_eq!(got.fed, 9 + wire.len(), "{piece}");
            assert!(got.open, "{piece}");
            assert_eq!(got.requests, 1, "{got:?}");
            assert!(got.sent >= 1 && accounted(&got), "{got:?}");
        }
    }

    #[test]
    fn a_continuation_flood_stops_at_the_header_block_cap() {
        let mut wire = Vec::new();
        frame::frame(&mut wire, kind::HEADERS, 0, 1, &[0x40; 16_000]);
        for _ in 0..10 {
            frame::frame(&mut wire, kind::CONTINUATION, 0, 1, &[0x40; 16_000]);
        }
        let got = receive(&settings(), &wire, 4096, 2, false);
        assert!(!got.open, "{got:?}");
        assert!(got.fed < wire.len(), "{got:?}");
        assert!(got.largest_block <= MAX_HEADER_BLOCK, "{got:?}");
        assert!(got.largest_block > MAX_HEADER_BLOCK - 16_000, "{got:?}");
        assert_eq!((got.requests, got.failed), (0, 2), "{got:?}");
        assert!(accounted(&got), "{got:?}");
    }

    #[test]
    fn a_goaway_takes_back_the_streams_above_its_last_id() {
        let mut wire = Vec::new();
        frame::frame(&mut wire, kind::GOAWAY, 0, 0, &[0; 8]);
        let got = receive(&settings(), &wire, 64, 4, true);
        assert_eq!((got.goaways, got.goaway_retries), (1, 4), "{got:?}");
        assert_eq!((got.sent, got.requests, got.failed), (4, 0, 0), "{got:?}");
        assert!(!got.open && accounted(&got), "{got:?}");
    }
}
