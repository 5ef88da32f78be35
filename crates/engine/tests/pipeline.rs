//! `--pipeline N` in the engine, against small servers of this file that read the pipelined
//! requests as they come: each request's latency counts from its own write, and a server that
//! closes the connection with requests still unanswered loses none of them (they are resent,
//! counted once, and the server's count equals ours). In the open model each latency counts
//! from the intended time, so a wait behind a held answer, or for a connection with room, is
//! never hidden.

use loadbench_engine::{Engine, Outcome};
use loadbench_plan::{LoadSpec, Plan, Stop};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

/// A test server: `answer` decides, for the connection's requests read so far (a count), what
/// to do; it runs on a thread per connection and counts every request it answers.
struct Server {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
}

/// What a server does after reading its connection's `n`-th request (1-based).
#[derive(Clone, Copy)]
enum Act {
    /// Waits for more requests before answering (the answers are written later, in one go).
    Hold,
    /// Writes the answers held so far and this one, after sleeping this long.
    AnswerAfter(Duration),
    /// Answers with `Connection: close` and closes, leaving later requests unanswered.
    AnswerAndClose,
}

impl Server {
    fn start(act: fn(u64) -> Act) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&answered);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let count = Arc::clone(&count);
                std::thread::spawn(move || serve(conn, act, &count));
            }
        });
        Server { addr, answered }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// Reads request heads (GET, no body) off `conn` and acts on each; ends at EOF, a close or
/// after 5 s of silence.
fn serve(mut conn: TcpStream, act: fn(u64) -> Act, answered: &AtomicU64) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let (mut pending, mut buf) = (Vec::new(), [0u8; 4096]);
    let (mut seen, mut held) = (0u64, 0u64);
    loop {
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            seen += 1;
            match act(seen) {
                Act::Hold => held += 1,
                Act::AnswerAfter(wait) => {
                    std::thread::sleep(wait);
                    let out = OK.repeat(held as usize + 1);
                    answered.fetch_add(held + 1, Ordering::Relaxed);
                    held = 0;
                    if conn.write_all(&out).is_err() {
                        return;
                    }
                }
                Act::AnswerAndClose => {
                    answered.fetch_add(1, Ordering::Relaxed);
                    let _ = conn.write_all(OK_CLOSE);
                    return linger(conn);
                }
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

/// Closes as nginx does: our side first, then reads (and drops) what the client still sends
/// until it closes too, so the kernel never answers unread requests with a reset.
fn linger(mut conn: TcpStream) {
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let mut buf = [0u8; 4096];
    while let Ok(1..) = conn.read(&mut buf) {}
}

/// `requests` requests on one connection, pipelined `depth` deep.
fn run(server: &Server, requests: u64, depth: u16) -> Outcome {
    let mut spec = LoadSpec {
        stop: Stop::Requests(requests),
        threads: Some(1),
        ..LoadSpec::closed(&server.url(), 1, Duration::from_secs(10))
    };
    spec.transport.pipeline = depth;
    run_spec(&spec)
}

fn run_spec(spec: &LoadSpec) -> Outcome {
    let engine = Engine::new(Plan::resolve(spec).expect("the spec is valid"));
    engine.preflight().expect("the test server listens");
    engine.run().expect("the engine runs")
}

/// Open model: `requests` at `rate` per second on at most one connection, pipelined `depth`
/// deep, woken once per `window`.
fn run_open(server: &Server, rate: f64, requests: u64, depth: u16, window: Duration) -> Outcome {
    let lasts = Duration::from_secs_f64(requests as f64 / rate);
    let mut spec = LoadSpec {
        stop: Stop::Requests(requests),
        threads: Some(1),
        ..LoadSpec::open(&server.url(), rate, lasts, 1)
    };
    spec.pacing.send_window = window;
    spec.transport.pipeline = depth;
    run_spec(&spec)
}

/// A server that holds its connection's first three requests and answers them with the
/// fourth 300 ms after the fourth arrived; later ones at once.
fn holding_four() -> Server {
    Server::start(|n| match n {
        1..=3 => Act::Hold,
        4 => Act::AnswerAfter(Duration::from_millis(300)),
        _ => Act::AnswerAfter(Duration::ZERO),
    })
}

/// Eight requests against [`holding_four`]: all answered, each once.
fn assert_all_eight(server: &Server, stats: &loadbench_model::Stats) {
    assert_eq!(stats.requests, 8, "{:?}", stats.errors);
    assert_eq!(stats.sent, 8);
    assert_eq!(server.answered.load(Ordering::Relaxed), 8);
}

#[test]
fn each_request_is_timed_from_its_own_write_not_the_first_ones() {
    // The first four are answered together 300 ms after the fourth arrived; the four written
    // after those answers are answered at once. Timed from the connection's first write, the
    // last four would take 300 ms too.
    let server = holding_four();
    let stats = run(&server, 8, 4).stats;
    assert_all_eight(&server, &stats);
    let latency = &stats.latency.hist;
    assert!(latency.max_ns() >= 300_000_000, "the held four waited");
    let quick = latency
        .recorded_buckets()
        .filter(|&(ns, _)| ns < 200_000_000)
        .map(|(_, n)| n)
        .sum::<u64>();
    assert_eq!(quick, 4, "the last four count from their own write");
    assert_eq!(stats.connections_opened, 1);
}

/// A server that answers every fifth request of a connection with `Connection: close`, as
/// nginx does at `keepalive_requests`: the requests pipelined behind it get no answer.
fn closing_after_five() -> Server {
    Server::start(|n| match n {
        5 => Act::AnswerAndClose,
        _ => Act::AnswerAfter(Duration::ZERO),
    })
}

/// 200 requests against [`closing_after_five`]: each answered once, none lost, the ones
/// behind a close resent and counted once.
fn assert_none_lost(server: &Server, stats: &loadbench_model::Stats) {
    assert_eq!(stats.requests, 200, "{:?}", stats.errors);
    assert_eq!(stats.errors.total(), 0);
    assert_eq!(server.answered.load(Ordering::Relaxed), 200, "none twice");
    assert_eq!(stats.sent, 200, "a resent request is counted once");
    assert!(
        stats.pipeline_resent > 0,
        "requests behind the close were resent"
    );
    assert_eq!(stats.connections_opened, 40, "five answers per connection");
}

#[test]
fn a_close_with_requests_outstanding_resends_them_and_loses_none() {
    let server = closing_after_five();
    assert_none_lost(&server, &run(&server, 200, 8).stats);
}

#[test]
fn open_model_latency_counts_from_the_intended_time_behind_a_held_answer() {
    // Due every 10 ms on one connection 4 deep: the first four are held until 300 ms after
    // the fourth arrived; the next four find the connection full and wait in the generator
    // until those answers free it. Every one of the eight waited about 260 ms or more after
    // its intended time, and its latency shows it, wherever it waited.
    let server = holding_four();
    let stats = run_open(&server, 100.0, 8, 4, Duration::from_millis(1)).stats;
    assert_all_eight(&server, &stats);
    assert!(
        stats.latency.hist.min_ns() >= 250_000_000,
        "fastest {} ns",
        stats.latency.hist.min_ns()
    );
    assert_eq!(stats.connections_opened, 1);
}

#[test]
fn open_model_a_close_with_requests_outstanding_resends_them_and_loses_none() {
    // An 8 ms window places about eight due requests at once on the one connection: four
    // written together, the rest waiting for room.
    let server = closing_after_five();
    let stats = run_open(&server, 1000.0, 200, 4, Duration::from_millis(8)).stats;
    assert_none_lost(&server, &stats);
}
