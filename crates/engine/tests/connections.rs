//! The engine's connection handling, driven in-process against the raw servers of `raw.rs`:
//! what each way a server can misbehave (stall, reset, close, garbage, a FIN behind a partial
//! response) is counted as, how fast it is noticed, and that chunked answers keep the
//! connection. Regression tests are named after what they guard. The CLI's tests check what
//! the binary prints and exits with on top of this.

use crate::raw::{Mode, RawServer};
use loadbench_engine::{Engine, Outcome};
use loadbench_model::ErrorKind;
use loadbench_plan::{LoadSpec, Plan, Stop};
use std::time::{Duration, Instant};

/// A closed-model run of `requests` requests on `connections` connections to `server`.
fn count_run(server: &RawServer, requests: u64, connections: u32) -> LoadSpec {
    LoadSpec {
        stop: Stop::Requests(requests),
        ..LoadSpec::closed(&server.url("/"), connections, Duration::from_secs(10))
    }
}

/// Resolves `spec` and runs it as `loadbench run` does: preflight, then the run.
fn run(spec: &LoadSpec) -> Outcome {
    let engine = Engine::new(Plan::resolve(spec).expect("the spec is valid"));
    engine.preflight().expect("the test server listens");
    engine.run().expect("the engine runs")
}

#[test]
fn chunked_responses_are_read_to_the_end_and_reused() {
    let server = RawServer::start("127.0.0.1:0", Mode::Chunked).unwrap();
    let stats = run(&count_run(&server, 300, 3)).stats;
    assert_eq!(stats.requests, 300);
    assert_eq!(stats.errors.total(), 0);
    assert_eq!(stats.connections_opened, 3);
}

#[test]
fn stalled_requests_time_out_and_count_as_read_timeouts() {
    let server = RawServer::start("127.0.0.1:0", Mode::Stall).unwrap();
    let started = Instant::now();
    let stats = run(&LoadSpec {
        timeout: Duration::from_millis(300),
        ..count_run(&server, 4, 2)
    })
    .stats;
    assert_eq!(stats.errors.get(ErrorKind::ReadTimeout), 4);
    assert_eq!(stats.requests, 0);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn malformed_responses_are_counted() {
    let server = RawServer::start("127.0.0.1:0", Mode::Malformed).unwrap();
    let stats = run(&count_run(&server, 20, 2)).stats;
    assert_eq!(stats.errors.get(ErrorKind::MalformedResponse), 20);
}

/// Regression: with edge-triggered sockets, a FIN queued behind a partial response raises no
/// new edge; it must be read at once, not left to the request timeout.
#[test]
fn fin_queued_behind_a_partial_response_is_seen_at_once() {
    let server = RawServer::start("127.0.0.1:0", Mode::Truncated).unwrap();
    let started = Instant::now();
    let stats = run(&LoadSpec {
        timeout: Duration::from_secs(5),
        ..count_run(&server, 200, 4)
    })
    .stats;
    assert_eq!(
        stats.errors.get(ErrorKind::ClosedBeforeResponseComplete),
        200,
        "{:?}",
        stats.errors
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn resets_are_counted() {
    let server = RawServer::start("127.0.0.1:0", Mode::Reset).unwrap();
    let stats = run(&count_run(&server, 20, 2)).stats;
    assert_eq!(stats.errors.total(), 20);
    assert_eq!(stats.errors.get(ErrorKind::Reset), 20, "{:?}", stats.errors);
}

/// What nginx's `return 444` does: the request is read, the connection closed without a byte.
#[test]
fn connections_closed_without_response_are_counted() {
    let server = RawServer::start("127.0.0.1:0", Mode::Close).unwrap();
    let stats = run(&count_run(&server, 50, 5)).stats;
    assert_eq!(
        stats.errors.get(ErrorKind::ClosedBeforeResponseComplete),
        50
    );
}

/// Regression: responses finishing after the deadline, before the worker noticed it, were
/// counted nowhere. Every request the server saw is now completed or abandoned.
#[test]
fn timed_run_accounts_for_every_request_the_server_saw() {
    let server = RawServer::start("127.0.0.1:0", Mode::Count).unwrap();
    let stats = run(&LoadSpec {
        threads: Some(2),
        ..LoadSpec::closed(&server.url("/"), 8, Duration::from_secs(1))
    })
    .stats;
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(stats.errors.total(), 0);
    assert_eq!(server.requests(), stats.requests + stats.abandoned);
    assert_eq!(stats.first_byte.hist.len(), stats.requests);
}

/// Regression: a request in flight when the window ended, answered just after the end but
/// before the worker noticed it (it sleeps up to a 100 ms tick; on a loaded machine longer),
/// left its connection counted neither starved nor served, so "24 of 32 connections starved"
/// read "16 of 24". A server answering 270 ms after the request, in a 250 ms run: the
/// connection completed nothing in the window and waited through it, whichever way the race
/// between the answer and the worker's next tick goes; its request is censored once.
#[test]
fn a_request_answered_just_after_the_window_leaves_its_connection_starved() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        // The preflight's connection, then the run's (each on its own thread), for at most 5 s.
        for conn in listener.incoming().take(4) {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                if matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    std::thread::sleep(Duration::from_millis(270));
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    std::thread::sleep(Duration::from_secs(5));
                }
            });
        }
    });
    let spec = LoadSpec {
        threads: Some(1),
        ..LoadSpec::closed(&format!("http://{addr}/"), 1, Duration::from_millis(250))
    };
    let stats = run(&spec).stats;
    let c = &stats.per_connection;
    assert_eq!(stats.requests, 0, "{stats:?}");
    assert_eq!((c.starved, c.connections()), (1, 1), "{c:?}");
    assert!(c.oldest_in_flight_us >= 200_000, "{c:?}");
    assert_eq!(stats.unanswered(), 1, "censored once");
}

/// The same with the request sent in the warm-up (as a bench step's starved connections send
/// theirs): not measured, but in flight through the whole window. Answered just after the
/// window's end, before the worker noticed it, it was counted neither starved nor served
/// ("17 of 32 connections got no response" of the 24 a bench step left unanswered on a
/// loaded machine). A 200 ms warm-up, a 250 ms window, the answer 470 ms after the request.
#[test]
fn a_warm_up_request_answered_just_after_the_window_leaves_its_connection_starved() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        // The preflight's connection, then the run's (each on its own thread), for at most 5 s.
        for conn in listener.incoming().take(4) {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                if matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    std::thread::sleep(Duration::from_millis(470));
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    std::thread::sleep(Duration::from_secs(5));
                }
            });
        }
    });
    let spec = LoadSpec {
        threads: Some(1),
        warmup: Duration::from_millis(200),
        ..LoadSpec::closed(&format!("http://{addr}/"), 1, Duration::from_millis(250))
    };
    let stats = run(&spec).stats;
    let c = &stats.per_connection;
    assert_eq!(
        (stats.requests, stats.sent, stats.abandoned),
        (0, 0, 0),
        "{stats:?}"
    );
    assert_eq!((c.starved, c.connections()), (1, 1), "{c:?}");
    assert!(c.oldest_in_flight_us >= 400_000, "{c:?}");
    assert_eq!(stats.unanswered(), 1, "censored once");
}
