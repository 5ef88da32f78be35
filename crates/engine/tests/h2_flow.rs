//! HTTP/2 request bodies under flow control, against a small h2c server of this file that
//! announces tight windows, checks every DATA frame the engine sends against its frame size
//! and the stream's and the connection's windows, and gives the windows back only in steps.
//! Every body must arrive whole, no frame may break a window, and a body whose window never
//! reopens is counted as in flight at the end (abandoned), not lost.

use loadbench_engine::h2::frame::{self, flag, kind, setting, Event, FrameError, FrameReader};
use loadbench_engine::Engine;
use loadbench_model::Stats;
use loadbench_plan::{Body, LoadSpec, Plan, Stop};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The request body sent: 200 KiB, over twelve of the smallest DATA frames.
const BODY: usize = 200 * 1024;

/// How the server hands out flow-control window.
#[derive(Clone, Copy)]
struct Policy {
    /// Its SETTINGS_INITIAL_WINDOW_SIZE (each stream's window); the connection's stays 65535.
    stream_window: u32,
    /// A stream's received bytes are given back once this many are unacknowledged (0: never).
    stream_credit_at: u32,
    /// The same for the connection (0: never).
    conn_credit_at: u32,
    /// Answer each request as soon as its HEADERS arrive, before its body.
    answer_early: bool,
}

/// 1000 bytes of window per stream and none given back: every body stalls half-sent.
const STALLED: Policy = Policy {
    stream_window: 1000,
    stream_credit_at: 0,
    conn_credit_at: 0,
    answer_early: false,
};

/// What the server saw, over all its connections.
#[derive(Default)]
struct Seen {
    /// Requests answered after their whole body (BODY bytes) arrived.
    answered: AtomicU64,
    /// Bodies that ended with another length.
    wrong_length: AtomicU64,
    /// DATA beyond a window, or a frame over the 16 KiB frame size.
    violations: AtomicU64,
    /// DATA frames that used a window up to its last byte (the window was what held it back).
    windows_drained: AtomicU64,
    /// Streams opened (HEADERS seen).
    streams: AtomicU64,
    /// RST_STREAM frames with CANCEL from the client.
    cancelled: AtomicU64,
}

struct Server {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Server {
    fn start(policy: Policy) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let shared = Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let seen = Arc::clone(&shared);
                std::thread::spawn(move || Conn::new(policy).serve(conn, &seen));
            }
        });
        Server { addr, seen }
    }
}

/// One stream's receive side.
#[derive(Default)]
struct Stream {
    window: i64,
    got: usize,
    unacked: u32,
}

/// One server connection.
struct Conn {
    policy: Policy,
    window: i64,
    unacked: u32,
    streams: HashMap<u32, Stream>,
    out: Vec<u8>,
}

impl Conn {
    fn new(policy: Policy) -> Conn {
        Conn {
            policy,
            window: i64::from(frame::DEFAULT_WINDOW),
            unacked: 0,
            streams: HashMap::new(),
            out: Vec::new(),
        }
    }

    /// Reads the preface, announces the windows, then handles frames until EOF, an error or
    /// 5 s of silence.
    fn serve(mut self, mut sock: TcpStream, seen: &Seen) {
        let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
        let mut preface = [0u8; 24];
        if sock.read_exact(&mut preface).is_err() || preface != frame::PREFACE {
            return;
        }
        let window = self.policy.stream_window;
        frame::settings(&mut self.out, &[(setting::INITIAL_WINDOW_SIZE, window)]);
        let (mut reader, mut payload) = (FrameReader::new(frame::DEFAULT_MAX_FRAME), Vec::new());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if sock.write_all(&self.out).is_err() {
                return;
            }
            self.out.clear();
            let n = match sock.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let fed = reader.feed::<FrameError>(&buf[..n], &mut payload, |ev| {
                self.on_event(ev, seen);
                Ok(())
            });
            if fed.is_err() {
                seen.violations.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }

    fn on_event(&mut self, ev: Event<'_>, seen: &Seen) {
        match ev {
            Event::Data {
                stream, flow, end, ..
            } => self.on_data(stream, flow, end, seen),
            Event::Frame(head, _) if head.kind == kind::HEADERS => {
                seen.streams.fetch_add(1, Ordering::Relaxed);
                if self.policy.answer_early {
                    answer(&mut self.out, head.stream);
                }
                let window = i64::from(self.policy.stream_window);
                self.streams.insert(
                    head.stream,
                    Stream {
                        window,
                        ..Stream::default()
                    },
                );
            }
            Event::Frame(head, _) if head.kind == kind::SETTINGS && head.flags == 0 => {
                frame::frame(&mut self.out, kind::SETTINGS, flag::ACK, 0, &[]);
            }
            Event::Frame(head, p) if head.kind == kind::RST_STREAM => {
                if frame::be32(p, 0) == frame::code::CANCEL {
                    seen.cancelled.fetch_add(1, Ordering::Relaxed);
                }
            }
            Event::Frame(..) => {}
        }
    }

    /// DATA: checked against both windows, counted, given back by the policy; the body's end
    /// is answered `200` when it is whole.
    fn on_data(&mut self, stream: u32, flow: u32, end: bool, seen: &Seen) {
        let Some(s) = self.streams.get_mut(&stream) else {
            seen.violations.fetch_add(1, Ordering::Relaxed);
            return;
        };
        s.window -= i64::from(flow);
        self.window -= i64::from(flow);
        if s.window < 0 || self.window < 0 {
            seen.violations.fetch_add(1, Ordering::Relaxed);
        }
        if flow > 0 && (s.window == 0 || self.window == 0) {
            seen.windows_drained.fetch_add(1, Ordering::Relaxed);
        }
        s.got += flow as usize;
        s.unacked += flow;
        self.unacked += flow;
        let p = self.policy;
        if p.stream_credit_at > 0 && s.unacked >= p.stream_credit_at && !end {
            frame::window_update(&mut self.out, stream, s.unacked);
            s.window += i64::from(s.unacked);
            s.unacked = 0;
        }
        if p.conn_credit_at > 0 && self.unacked >= p.conn_credit_at {
            frame::window_update(&mut self.out, 0, self.unacked);
            self.window += i64::from(self.unacked);
            self.unacked = 0;
        }
        if end {
            let got = self.streams.remove(&stream).map_or(0, |s| s.got);
            let counter = if got == BODY {
                &seen.answered
            } else {
                &seen.wrong_length
            };
            counter.fetch_add(1, Ordering::Relaxed);
            answer(&mut self.out, stream);
        }
    }
}

/// The whole response: `:status: 200` from the static table, ending the stream.
fn answer(out: &mut Vec<u8>, stream: u32) {
    let flags = flag::END_HEADERS | flag::END_STREAM;
    frame::frame(out, kind::HEADERS, flags, stream, &[0x88]);
}

/// POSTs of BODY bytes over h2c, `streams` per connection on `connections`, until `stop`.
fn run(server: &Server, connections: u32, streams: u32, stop: Stop) -> Stats {
    let url = format!("http://{}/upload", server.addr);
    let mut spec = LoadSpec {
        stop,
        threads: Some(1),
        ..LoadSpec::closed(&url, connections, Duration::from_secs(10))
    };
    spec.request.method = "POST".into();
    spec.request.body = Body::Bytes(vec![b'x'; BODY]);
    spec.transport.http2 = true;
    spec.transport.streams = Some(streams);
    let engine = Engine::new(Plan::resolve(&spec).expect("the spec is valid"));
    engine.preflight().expect("the test server speaks h2c");
    engine.run().expect("the engine runs").stats
}

/// `counter` once it reaches `want`, or after 2 s (the server's thread reads what the
/// engine wrote last on its own time).
fn settled(counter: &AtomicU64, want: u64) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while counter.load(Ordering::Relaxed) < want && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    counter.load(Ordering::Relaxed)
}

#[test]
fn bodies_larger_than_the_windows_arrive_whole_and_never_break_a_window() {
    // Four streams of 40 000 bytes each share a connection window of 65 535, given back
    // 60 000 at a time; each stream's window comes back 20 000 at a time. Both bind.
    let server = Server::start(Policy {
        stream_window: 40_000,
        stream_credit_at: 20_000,
        conn_credit_at: 60_000,
        answer_early: false,
    });
    let stats = run(&server, 2, 4, Stop::Requests(40));
    let seen = &server.seen;
    assert_eq!(stats.requests, 40);
    assert_eq!(stats.errors.total(), 0, "{:?}", stats.error_reasons);
    assert_eq!(stats.status.0.get(&200), Some(&40));
    assert_eq!(
        seen.answered.load(Ordering::Relaxed),
        40,
        "every body whole"
    );
    assert_eq!(seen.wrong_length.load(Ordering::Relaxed), 0);
    assert_eq!(
        seen.violations.load(Ordering::Relaxed),
        0,
        "within every window"
    );
    assert!(
        seen.windows_drained.load(Ordering::Relaxed) > 0,
        "the windows held the bodies back, so their reopening was exercised"
    );
    assert!(
        stats.bytes_written > 40 * BODY as u64,
        "{}",
        stats.bytes_written
    );
}

#[test]
fn a_body_whose_window_never_reopens_is_in_flight_at_the_end_not_lost() {
    let server = Server::start(STALLED);
    let stats = run(&server, 1, 2, Stop::Duration(Duration::from_millis(500)));
    let seen = &server.seen;
    assert_eq!(settled(&seen.streams, 2), 2, "two streams opened");
    assert_eq!(seen.answered.load(Ordering::Relaxed), 0);
    assert_eq!(seen.violations.load(Ordering::Relaxed), 0);
    assert_eq!(stats.sent, 2);
    assert_eq!((stats.requests, stats.errors.total()), (0, 0));
    assert_eq!(
        stats.abandoned, 2,
        "both half-sent requests counted as not completed"
    );
}

#[test]
fn an_answer_before_the_whole_body_completes_the_request_and_cancels_the_rest() {
    // The server answers at the HEADERS and never opens a window beyond the first 1000 bytes:
    // the request is complete, and the body it no longer wants is cancelled.
    let server = Server::start(Policy {
        answer_early: true,
        ..STALLED
    });
    let stats = run(&server, 1, 2, Stop::Requests(20));
    assert_eq!(stats.requests, 20);
    assert_eq!(stats.errors.total(), 0, "{:?}", stats.error_reasons);
    assert_eq!(stats.status.0.get(&200), Some(&20));
    let seen = &server.seen;
    assert_eq!(
        seen.answered.load(Ordering::Relaxed),
        0,
        "no body arrived whole"
    );
    assert_eq!(seen.violations.load(Ordering::Relaxed), 0);
    // The cancels follow the answers: the server thread may still be reading the last ones.
    assert_eq!(settled(&seen.cancelled, 20), 20, "every body cancelled");
}
