//! TLS handshake failures during a load are an error class, counted, never a crash: the
//! engine runs (without the preflight, which would refuse these targets) against servers that
//! answer a ClientHello with plain text, or never answer it at all.

use loadbench_engine::Engine;
use loadbench_model::{ErrorKind, Stats};
use loadbench_plan::{LoadSpec, Plan, Stop};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

/// Accepts up to `limit` connections; on each reads once, then writes `answer` (if any) and
/// closes, or with `None` holds the connection silent for a few seconds.
fn serve(answer: Option<&'static [u8]>, limit: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().take(limit).flatten() {
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(3)));
                let _ = conn.read(&mut [0u8; 4096]);
                match answer {
                    Some(a) => drop(conn.write_all(a)),
                    None => std::thread::sleep(Duration::from_secs(3)),
                }
            });
        }
    });
    addr
}

/// `connections` connections, one request each, over TLS without verification.
fn run(addr: SocketAddr, connections: u32, connect_timeout: Duration) -> Stats {
    let mut spec = LoadSpec {
        stop: Stop::Requests(u64::from(connections)),
        connect_timeout,
        ..LoadSpec::closed(
            &format!("https://{addr}/"),
            connections,
            Duration::from_secs(5),
        )
    };
    spec.transport.insecure = true;
    let engine = Engine::new(Plan::resolve(&spec).expect("the spec is valid"));
    engine.run().expect("the engine runs").stats
}

#[test]
fn a_plain_http_answer_to_the_client_hello_is_a_counted_handshake_failure() {
    let addr = serve(
        Some(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
        8,
    );
    let s = run(addr, 4, Duration::from_secs(5));
    assert_eq!(s.errors.get(ErrorKind::TlsHandshake), 4, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 4);
    assert_eq!((s.requests, s.sent), (0, 0), "no request was written");
    assert_eq!(s.connections_opened, 4, "the TCP connects succeeded");
    assert!(s.tls.is_empty(), "no handshake finished: {:?}", s.tls);
}

#[test]
fn a_server_that_never_answers_the_client_hello_times_out_as_a_handshake_failure() {
    let addr = serve(None, 8);
    let s = run(addr, 3, Duration::from_millis(200));
    assert_eq!(s.errors.get(ErrorKind::TlsHandshake), 3, "{:?}", s.errors);
    assert_eq!((s.requests, s.sent), (0, 0));
}

/// Issue 33, point 8: the preflight against a server that takes the connection and never
/// answers the ClientHello says the handshake timed out within `--connect-timeout` (before:
/// "Resource temporarily unavailable (os error 11)").
#[test]
fn the_preflight_names_the_connect_timeout_when_the_client_hello_is_never_answered() {
    let addr = serve(None, 2);
    let mut spec = LoadSpec {
        stop: Stop::Requests(1),
        connect_timeout: Duration::from_millis(300),
        ..LoadSpec::closed(&format!("https://{addr}/"), 1, Duration::from_secs(1))
    };
    spec.transport.insecure = true;
    let engine = Engine::new(Plan::resolve(&spec).expect("the spec is valid"));
    let started = std::time::Instant::now();
    let e = engine.preflight().expect_err("no handshake").to_string();
    assert!(started.elapsed() < Duration::from_secs(2), "{e}");
    assert!(e.contains("timed out"), "{e}");
    assert!(e.contains("--connect-timeout 300ms"), "{e}");
    assert!(!e.contains("os error"), "{e}");
}
