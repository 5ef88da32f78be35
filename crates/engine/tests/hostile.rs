//! The hostile-server matrix (issue 11): a raw TCP server that misbehaves on purpose, one way
//! per mode, and counts the requests it reads. Every mode is run in-process in the closed
//! (timed), `-n`, `--no-keepalive`, open and open `--pipeline 4` models with short durations
//! and timeouts; each run
//! must end in time, report the expected error classes, keep the accounting identity
//! `requests + (errors − connect errors) + abandoned = sent` exactly, and — where the server
//! can count what reached it — `sent` equal to the server's count. Modes run in parallel
//! threads so the matrix stays short. Only classes and identities are asserted, never speeds.

use crate::support::{check, check_run, is_timeout, matrix, settled};
use loadbench_engine::Engine;
use loadbench_model::{ErrorKind, ReopenReason, Stats};
use loadbench_plan::{Body, LoadSpec, Plan, RequestSpec, Stop};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One way for the server to misbehave (or, for the last ones, to be awkward but correct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hostile {
    Garbage,
    HugeHead,
    NoColon,
    BadChunk,
    EndlessChunks,
    LongerThanBody,
    ShorterThanBody,
    BothClAndChunked,
    CloseMidHead,
    CloseMidBody,
    RstAtAccept,
    NeverRead,
    Interim,
    Early,
    SlowDrip,
    IdleClose,
    CloseEach,
    HugeBody,
    Mix,
    /// Answers the first request of a connection, reads the second and closes without an
    /// answer, and so on (issue 33, point 4): the close comes after the request was read.
    EverySecond,
    /// Answers right after the head of a request with a 4 MiB body, then reads and discards
    /// the body (issue 33, point 6; not in the matrix, whose requests have no body).
    AnswerAfterHead,
    /// Correct but costly: `Connection: close` on every answer (not in the matrix).
    ConnClose,
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// The raw server: one thread per connection, stopped on drop.
struct Server {
    addr: SocketAddr,
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(mode: Hostile) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        if mode == Hostile::AnswerAfterHead {
            // A small receive buffer (inherited by accepted sockets), so that a 4 MiB body
            // cannot vanish into loopback's buffers before the answer comes.
            let _ = socket2::SockRef::from(&listener).set_recv_buffer_size(64 << 10);
        }
        let addr = listener.local_addr().unwrap();
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (Arc::clone(&count), Arc::clone(&stop));
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (c, s) = (Arc::clone(&c), Arc::clone(&s));
                std::thread::spawn(move || serve(conn, mode, n, &c, &s));
            }
        });
        Server { addr, count, stop }
    }

    /// The server's count once it stopped moving (requests in transit are read by then).
    fn settled_count(&self) -> u64 {
        settled(&self.count)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

/// Reads one request head; false when the peer closed or the server stops, or, with
/// `idle_close`, when no byte of it came within the connection's read timeout. Otherwise the
/// read timeout only makes the thread look at `stop`: a request slow to arrive (a generator
/// held up on a loaded machine) is waited for, as a real server would, not answered with a
/// close the generator would rightly count as an error.
fn read_head(conn: &mut TcpStream, stop: &AtomicBool, idle_close: bool) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if stop.load(Ordering::Relaxed) || head.len() > 64 * 1024 {
            return false;
        }
        match conn.read(&mut byte) {
            Err(e) if is_timeout(&e) && !(idle_close && head.is_empty()) => continue,
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&byte[..n]),
        }
    }
    true
}

fn serve(mut conn: TcpStream, mode: Hostile, nth: usize, count: &AtomicU64, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = conn.set_nodelay(true);
    match mode {
        Hostile::RstAtAccept => return reset(conn),
        Hostile::NeverRead => return park(stop),
        Hostile::AnswerAfterHead => return answer_after_head(conn, count, stop),
        Hostile::Early => {
            let _ = conn.write_all(OK);
        }
        _ => {}
    }
    let mut idle_close = false;
    for i in 0.. {
        if !read_head(&mut conn, stop, idle_close) {
            return;
        }
        count.fetch_add(1, Ordering::SeqCst);
        if mode == Hostile::EverySecond && i % 2 == 1 {
            return;
        }
        let mode = if mode == Hostile::Mix {
            MIX[(nth * 7 + i * 3) % MIX.len()]
        } else {
            mode
        };
        // After an IdleClose answer the connection closes once idle for its read timeout.
        idle_close = mode == Hostile::IdleClose;
        if !answer(&mut conn, mode, stop) {
            return;
        }
    }
}

/// The modes the random mix draws from (not those that never answer or never read).
const MIX: [Hostile; 6] = [
    Hostile::Garbage,
    Hostile::CloseMidBody,
    Hostile::CloseEach,
    Hostile::Interim,
    Hostile::BadChunk,
    Hostile::ShorterThanBody,
];

/// Answers one request; false when the connection is done.
fn answer(conn: &mut TcpStream, mode: Hostile, stop: &AtomicBool) -> bool {
    let w = |conn: &mut TcpStream, b: &[u8]| conn.write_all(b).is_ok();
    match mode {
        Hostile::Garbage => last(conn, b"HTTP/9 what\r\n\r\n"),
        Hostile::HugeHead => {
            let big = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(70_000));
            last(conn, big.as_bytes())
        }
        Hostile::NoColon => last(conn, b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"),
        Hostile::BadChunk => {
            last(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        }
        Hostile::EndlessChunks => endless_chunks(conn, stop),
        Hostile::LongerThanBody => {
            last(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        }
        Hostile::ShorterThanBody => {
            last(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")
        }
        Hostile::BothClAndChunked => w(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        ),
        Hostile::CloseMidHead => last(conn, b"HTTP/1.1 200 OK\r\nContent-Le"),
        Hostile::CloseMidBody => {
            last(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        }
        Hostile::Interim => w(conn, b"HTTP/1.1 100 Continue\r\n\r\n") && w(conn, OK),
        Hostile::SlowDrip => OK.iter().all(|b| {
            std::thread::sleep(Duration::from_millis(2));
            w(conn, &[*b])
        }),
        Hostile::CloseEach => last(conn, OK),
        Hostile::ConnClose => last(
            conn,
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        ),
        Hostile::HugeBody => {
            let head = b"HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n";
            w(conn, head) && w(conn, &vec![b'x'; 4 << 20])
        }
        Hostile::Early | Hostile::EverySecond | Hostile::AnswerAfterHead => w(conn, OK),
        // Idle keep-alive close: answer, then close the connection after 100 ms idle.
        _ => {
            let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
            w(conn, OK)
        }
    }
}

/// Writes a final answer; the connection is done after it (closed by the caller).
fn last(conn: &mut TcpStream, bytes: &[u8]) -> bool {
    let _ = conn.write_all(bytes);
    false
}

fn endless_chunks(conn: &mut TcpStream, stop: &AtomicBool) -> bool {
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(5) {
        if conn.write_all(b"4\r\nmore\r\n").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// The body the early-answer test sends.
const BIG_BODY: usize = 4 << 20;

/// Point 6: reads a head (byte by byte, so no body byte is taken with it), answers at once,
/// waits a little (the answer lands while the generator is still writing) and then reads and
/// discards the `BIG_BODY` bytes of body, for as long as the generator sends requests on the
/// connection.
fn answer_after_head(mut conn: TcpStream, count: &AtomicU64, stop: &AtomicBool) {
    loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match conn.read(&mut byte) {
                _ if stop.load(Ordering::Relaxed) => return,
                Err(e) if is_timeout(&e) => continue,
                Ok(0) | Err(_) => return,
                Ok(_) => head.push(byte[0]),
            }
        }
        count.fetch_add(1, Ordering::SeqCst);
        if conn.write_all(OK).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut left = BIG_BODY;
        let mut buf = vec![0u8; 64 << 10];
        while left > 0 {
            match conn.read(&mut buf[..left.min(64 << 10)]) {
                _ if stop.load(Ordering::Relaxed) => return,
                Err(e) if is_timeout(&e) => continue,
                Ok(0) | Err(_) => return,
                Ok(n) => left -= n,
            }
        }
    }
}

fn reset(conn: TcpStream) {
    let _ = socket2::SockRef::from(&conn).set_linger(Some(Duration::ZERO));
}

fn park(stop: &AtomicBool) {
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The load models of the matrix.
#[derive(Debug, Clone, Copy)]
enum Model {
    Closed,
    Count,
    NoKeepalive,
    Open,
    /// The open model with `--pipeline 4`.
    OpenPipelined,
}

const TIMEOUT: Duration = Duration::from_secs(1);
const WINDOW: Duration = Duration::from_millis(800);

fn spec(url: &str, model: Model) -> LoadSpec {
    let base = LoadSpec {
        timeout: TIMEOUT,
        connect_timeout: TIMEOUT,
        threads: Some(2),
        ..LoadSpec::closed(url, 4, WINDOW)
    };
    match model {
        Model::Closed => base,
        Model::Count => LoadSpec {
            stop: Stop::Requests(12),
            ..base
        },
        Model::NoKeepalive => LoadSpec {
            keepalive: false,
            ..base
        },
        Model::Open => LoadSpec {
            timeout: TIMEOUT,
            connect_timeout: TIMEOUT,
            threads: Some(2),
            ..LoadSpec::open(url, 40.0, WINDOW, 8)
        },
        // The open model's pipelined code path (its ring, reads, resends) under the same
        // expectations: at 40/s over 8 connections a request nearly always finds an idle one,
        // so the server (which reads one head at a time and cannot count requests pipelined
        // into one read) sees one request at a time (crates/cli/tests/pipeline_open.rs
        // pipelines for real against nginx).
        Model::OpenPipelined => {
            let mut s = spec(url, Model::Open);
            s.transport.pipeline = 4;
            s
        }
    }
}

/// What a mode must produce: the error classes allowed, whether some requests must complete,
/// whether errors are allowed at all, and whether `sent` must equal the server's count.
struct Expect {
    classes: &'static [ErrorKind],
    completes: bool,
    counted: bool,
}

fn expect(mode: Hostile) -> Expect {
    use ErrorKind::*;
    let e = |classes, completes, counted| Expect {
        classes,
        completes,
        counted,
    };
    match mode {
        Hostile::Garbage | Hostile::HugeHead | Hostile::NoColon | Hostile::BadChunk => {
            e(&[MalformedResponse], false, true)
        }
        // Chunks never end: each request times out (the server cannot count more than it read).
        Hostile::EndlessChunks => e(&[ReadTimeout], false, true),
        Hostile::LongerThanBody | Hostile::CloseMidHead | Hostile::CloseMidBody => {
            e(&[ClosedBeforeResponseComplete], false, true)
        }
        // The extra bytes after the body are a protocol error on the reused connection.
        Hostile::ShorterThanBody => e(&[MalformedResponse], true, true),
        Hostile::BothClAndChunked | Hostile::Interim | Hostile::SlowDrip => e(&[], true, true),
        Hostile::IdleClose | Hostile::CloseEach | Hostile::HugeBody | Hostile::ConnClose => {
            e(&[], true, true)
        }
        // RST before anything is read: the server cannot count. Depending on timing the
        // connect check, the write or the read sees it.
        Hostile::RstAtAccept => e(
            &[
                Reset,
                WriteError,
                ClosedBeforeResponseComplete,
                ConnectError,
            ],
            false,
            false,
        ),
        // Never read: nothing is counted by the server, every request times out.
        Hostile::NeverRead => e(&[ReadTimeout], false, false),
        // The unsolicited answer is taken as the first request's response (indistinguishable
        // on the wire), so each connection's last request was answered before the server read
        // it: `sent` exceeds the server's count by up to one per connection; not compared.
        Hostile::Early => e(&[], true, false),
        Hostile::Mix => e(
            &[MalformedResponse, ClosedBeforeResponseComplete],
            true,
            true,
        ),
        // The server read the request it hung up on: its failure, not a stale connection.
        Hostile::EverySecond => e(&[ClosedBeforeResponseComplete], true, true),
        Hostile::AnswerAfterHead => e(&[], true, true),
    }
}

fn run_case(mode: Hostile, model: Model) -> Result<(), String> {
    let server = Server::start(mode);
    let spec = spec(&format!("http://{}/", server.addr), model);
    let started = Instant::now();
    let engine = Engine::new(Plan::resolve(&spec).map_err(|e| e.to_string())?);
    let s: Stats = engine.run().map_err(|e| e.to_string())?.stats;
    let took = started.elapsed();
    let what = format!("{mode:?}/{model:?}: {took:?} {:?} {s:?}", s.errors);
    let limit = WINDOW + TIMEOUT + Duration::from_secs(1);
    let limit = if matches!(model, Model::Count) {
        limit * 3
    } else {
        limit
    };
    check_run(&s, (took, limit), 0, &what)?;
    let e = expect(mode);
    let stray = s.errors.0.keys().find(|k| !e.classes.contains(k));
    check(stray.is_none(), "only the expected classes", &what)?;
    check(!e.completes || s.requests > 0, "some completed", &what)?;
    check(e.completes || s.requests == 0, "none completed", &what)?;
    if e.counted {
        // Exact, except that requests abandoned at the deadline may be lost on the server's
        // side: the generator closes their sockets (RST when an answer was left unread) and
        // the server's kernel may drop a request its thread had not read yet.
        let server = server.settled_count();
        let what = format!("server {server}, {what}");
        let ok = server <= s.sent && server + s.abandoned >= s.sent;
        check(ok, "sent == server's count", &what)?;
    }
    Ok(())
}

const MODES: [Hostile; 20] = [
    Hostile::Garbage,
    Hostile::HugeHead,
    Hostile::NoColon,
    Hostile::BadChunk,
    Hostile::EndlessChunks,
    Hostile::LongerThanBody,
    Hostile::ShorterThanBody,
    Hostile::BothClAndChunked,
    Hostile::CloseMidHead,
    Hostile::CloseMidBody,
    Hostile::RstAtAccept,
    Hostile::NeverRead,
    Hostile::Interim,
    Hostile::Early,
    Hostile::SlowDrip,
    Hostile::IdleClose,
    Hostile::CloseEach,
    Hostile::HugeBody,
    Hostile::Mix,
    Hostile::EverySecond,
];

#[test]
fn hostile_server_matrix() {
    let models = [
        Model::Closed,
        Model::Count,
        Model::NoKeepalive,
        Model::Open,
        Model::OpenPipelined,
    ];
    let failures = matrix(&MODES, &models, run_case);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Point 4: an outage must not turn into a tight reconnect loop. Nothing listens for the whole
/// 2 s run on 8 connections: each backs off (10 ms doubling to 1 s), so the refusals stay far
/// below one per 10 ms per connection, the backoff is reported, and the run ends on time.
#[test]
fn refused_connects_back_off_and_the_run_ends_on_time() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let spec = LoadSpec {
        threads: Some(2),
        ..LoadSpec::closed(&format!("http://{addr}/"), 8, Duration::from_secs(2))
    };
    let started = Instant::now();
    let s = Engine::new(Plan::resolve(&spec).unwrap())
        .run()
        .unwrap()
        .stats;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let refused = s.errors.get(ErrorKind::ConnectRefused);
    assert!(refused > 0 && refused < 8 * 2000 / 10 / 4, "{:?}", s.errors);
    assert_eq!(s.connect_backoffs, refused);
    assert!(s.backoff_us > 0 && s.backoff_us <= 8 * 2_000_000);
    assert_eq!(s.sent, 0);
    assert_eq!(s.abandoned, 0);
}

/// Point 1: a server that closes idle keep-alive connections after 100 ms, loaded at a low
/// open-model rate (every connection idles past the timeout between requests). Each dead
/// connection is noticed while idle or its request is retried once on a new one: no error, and
/// every request sent reached the server and was answered. What happened is visible.
#[test]
fn idle_keepalive_closes_are_not_blamed_on_the_server() {
    let server = Server::start(Hostile::IdleClose);
    let url = format!("http://{}/", server.addr);
    let spec = LoadSpec {
        threads: Some(1),
        ..LoadSpec::open(&url, 5.0, Duration::from_millis(1500), 2)
    };
    let s = Engine::new(Plan::resolve(&spec).unwrap())
        .run()
        .unwrap()
        .stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests + s.abandoned, s.sent);
    assert_eq!(server.settled_count(), s.sent);
    assert!(s.requests >= 5, "{}", s.requests);
    assert!(s.stale_closes + s.stale_retries > 0, "{s:?}");
}

/// Issue 11: a request retried once after a dead keep-alive connection counts as sent once, in
/// the second it was finally sent: over runs crossing second boundaries with many such retries
/// (a server closing after every response without `Connection: close`, closed model) and idle
/// closes (open model), the per-second `sent` adds up to the total exactly, and the total is
/// what the server read.
#[test]
fn per_second_sent_adds_up_to_the_total_and_the_servers_count_with_stale_retries() {
    let cases = [
        (Hostile::CloseEach, Model::Closed),
        (Hostile::IdleClose, Model::Open),
    ];
    for (mode, model) in cases {
        let server = Server::start(mode);
        let url = format!("http://{}/", server.addr);
        let spec = LoadSpec {
            timeout: TIMEOUT,
            threads: Some(2),
            ..match model {
                Model::Open => LoadSpec::open(&url, 20.0, Duration::from_millis(2300), 2),
                _ => LoadSpec::closed(&url, 4, Duration::from_millis(2300)),
            }
        };
        let s = Engine::new(Plan::resolve(&spec).unwrap())
            .run()
            .unwrap()
            .stats;
        let what = format!("{mode:?}/{model:?}: {s:?}");
        let per_second: u64 = s.series.0.iter().map(|p| p.sent).sum();
        assert_eq!(per_second, s.sent, "{what}");
        assert_eq!(s.errors.total(), 0, "{what}");
        assert_eq!(s.requests + s.abandoned, s.sent, "{what}");
        let server = server.settled_count();
        assert!(
            server <= s.sent && server + s.abandoned >= s.sent,
            "server {server}: {what}"
        );
        if mode == Hostile::CloseEach {
            assert!(s.stale_retries > 0, "{what}");
        }
    }
}

fn run_stats(mode: Hostile, model: Model) -> (Stats, Server) {
    let server = Server::start(mode);
    let spec = spec(&format!("http://{}/", server.addr), model);
    let s = Engine::new(Plan::resolve(&spec).unwrap())
        .run()
        .unwrap()
        .stats;
    (s, server)
}

/// Point 8: why connections were re-opened is counted, by reason, only when the server caused
/// it: `Connection: close` on every answer, a close after every answer without it, bytes after
/// the body (a `Content-Length` shorter than the body); nothing with `--no-keepalive`.
#[test]
fn reopened_connections_are_counted_by_reason() {
    use ReopenReason::*;
    let (s, _server) = run_stats(Hostile::ConnClose, Model::Count);
    let what = format!("{:?} {s:?}", s.reopen_reasons);
    assert_eq!(s.requests, 12, "{what}");
    assert_eq!(
        s.reopen_reasons.0.get(&ConnectionClose),
        Some(&12),
        "{what}"
    );
    assert_eq!(s.reopen_reasons.0.len(), 1, "{what}");

    // Each answer is followed by the server's close: seen right after the answer, or when the
    // next request was written into the closed connection (then resent). One re-open per
    // answer, give or take the requests in flight at either end of the window.
    let (s, _server) = run_stats(Hostile::CloseEach, Model::Closed);
    let what = format!("{:?} {s:?}", s.reopen_reasons);
    let allowed = [ClosedAfterResponse, StaleRetry];
    assert!(
        s.reopen_reasons.0.keys().all(|k| allowed.contains(k)),
        "{what}"
    );
    let total = s.reopen_reasons.total();
    assert!(s.requests > 0 && total.abs_diff(s.requests) <= 8, "{what}");
    assert_eq!(
        s.reopen_reasons.0.get(&StaleRetry).copied().unwrap_or(0),
        s.stale_retries
    );

    let (s, _server) = run_stats(Hostile::ShorterThanBody, Model::Count);
    let what = format!("{:?} {s:?}", s.reopen_reasons);
    let extra = s.reopen_reasons.0.get(&ExtraBytes).copied().unwrap_or(0);
    assert!(extra > 0 && extra <= s.requests, "{what}");
    assert_eq!(s.reopen_reasons.0.len(), 1, "{what}");

    let (s, _server) = run_stats(Hostile::CloseEach, Model::NoKeepalive);
    assert!(s.requests > 0 && s.reopen_reasons.is_empty(), "{s:?}");
}

/// Issue 33, point 4: a server that answers a connection's first request, reads the second
/// and hangs up. The hang-up came after the request was read, so it is not a stale keep-alive
/// connection: every second request is `closed_before_response_complete`, none is resent,
/// and `sent` is exactly what the server read (before the fix: 0 errors, the server read more
/// requests than were sent). Closed `-n` and timed runs; the matrix covers the others.
#[test]
fn a_server_that_reads_every_second_request_and_hangs_up_is_counted_not_retried() {
    for stop in [Stop::Requests(40), Stop::Duration(WINDOW)] {
        let server = Server::start(Hostile::EverySecond);
        let spec = LoadSpec {
            timeout: TIMEOUT,
            threads: Some(2),
            stop,
            ..LoadSpec::closed(&format!("http://{}/", server.addr), 4, WINDOW)
        };
        let s = Engine::new(Plan::resolve(&spec).unwrap())
            .run()
            .unwrap()
            .stats;
        let failed = s.errors.get(ErrorKind::ClosedBeforeResponseComplete);
        let what = format!("{stop:?}: {:?} {s:?}", s.errors);
        assert_eq!(s.errors.total(), failed, "{what}");
        assert_eq!(s.stale_retries, 0, "{what}");
        assert_eq!(s.requests + failed + s.abandoned, s.sent, "{what}");
        // Each connection alternates answered / hung up: about half fail (± one per
        // connection at the end).
        assert!(failed > 0 && failed.abs_diff(s.requests) <= 4, "{what}");
        let read = server.settled_count();
        assert!(
            read <= s.sent && read + s.abandoned >= s.sent,
            "server {read}: {what}"
        );
        if matches!(stop, Stop::Requests(_)) {
            assert_eq!((s.sent, read), (40, 40), "{what}");
        }
    }
}

/// Issue 33, point 6: a server that answers right after the head of a request with a 4 MiB
/// body, then drains the body. The answer lands while the body is still being written: it is
/// counted, the rest of the body is not sent and the connection is closed (re-open reason
/// `answered_before_body`), never a phantom `read_timeout` (before the fix nearly every
/// request of `-c 1 -n 60 --timeout 2s` timed out). `-n`, timed closed, open and open
/// `--pipeline 4` models, and `-c 1 -n 60 --pipeline 4`, where four 4 MiB requests are queued
/// at once: an answer to a request still being written closes the connection there too (the
/// requests behind it, of which no byte went out, are sent on a new one), so the server reads
/// exactly the 60 requests counted `sent`.
#[test]
fn an_answer_before_the_body_is_written_is_counted_without_a_timeout() {
    let server = Server::start(Hostile::AnswerAfterHead);
    let url = format!("http://{}/", server.addr);
    let request = RequestSpec {
        method: "POST".into(),
        body: Body::Bytes(vec![b'b'; BIG_BODY]),
        ..RequestSpec::default()
    };
    let timeout = Duration::from_secs(2);
    let count = LoadSpec {
        stop: Stop::Requests(60),
        ..LoadSpec::closed(&url, 1, WINDOW)
    };
    let closed = LoadSpec::closed(&url, 2, WINDOW);
    let open = LoadSpec::open(&url, 20.0, WINDOW, 4);
    let mut pipelined = open.clone();
    pipelined.transport.pipeline = 4;
    let mut count_pipelined = count.clone();
    count_pipelined.transport.pipeline = 4;
    let cases = [
        ("-n 60", count),
        ("closed", closed),
        ("open", open),
        ("open --pipeline 4", pipelined),
        ("-n 60 --pipeline 4", count_pipelined),
    ];
    for (what, spec) in cases {
        let spec = LoadSpec {
            request: request.clone(),
            timeout,
            threads: Some(1),
            ..spec
        };
        let before = server.settled_count();
        let started = Instant::now();
        let s = Engine::new(Plan::resolve(&spec).unwrap())
            .run()
            .unwrap()
            .stats;
        let took = started.elapsed();
        let read = server.settled_count() - before;
        let what = format!("{what}: {took:?} server {read} {:?} {s:?}", s.errors);
        assert_eq!(s.errors.total(), 0, "{what}");
        assert!(s.requests > 0, "{what}");
        assert_eq!(s.requests + s.abandoned, s.sent, "{what}");
        assert!(read <= s.sent && read + s.abandoned >= s.sent, "{what}");
        // Pipelined or not, an answer to a request still being written ends its connection
        // (before the fix a pipelined one wrote the body to its end): the only re-opens.
        let early = s.reopen_reasons.0.get(&ReopenReason::AnsweredBeforeBody);
        assert!(early.is_some_and(|&n| n > 0), "{what}");
        assert_eq!(s.reopen_reasons.total(), *early.unwrap(), "{what}");
        if spec.stop == Stop::Requests(60) {
            assert_eq!((s.requests, s.sent, read), (60, 60, 60), "{what}");
        }
        if spec.stop == Stop::Requests(60) && spec.transport.pipeline == 4 {
            // Requests queued behind a cut-short one went out on a new connection.
            assert!(s.pipeline_resent > 0, "{what}");
        }
    }
}
