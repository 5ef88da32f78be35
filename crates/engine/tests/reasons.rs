//! Error reasons end to end: a raw server written here answers every request with one kind of
//! malformed response, and the run counts each failure under its class and its reason.

use loadbench_engine::{Engine, Outcome};
use loadbench_model::{ErrorKind, ErrorReason};
use loadbench_plan::{LoadSpec, Plan, Stop};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Answers every request on every connection with `answer`, then closes. Serves at most
/// `limit` connections, so the thread ends with the test.
fn serve(answer: &'static [u8], limit: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(limit).flatten() {
            std::thread::spawn(move || answer_once(conn, answer));
        }
    });
    addr
}

fn answer_once(mut conn: TcpStream, answer: &[u8]) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 4096];
    let mut seen = Vec::new();
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let _ = conn.write_all(answer);
}

fn run(addr: SocketAddr, requests: u64) -> Outcome {
    let spec = LoadSpec {
        stop: Stop::Requests(requests),
        ..LoadSpec::closed(&format!("http://{addr}/"), 1, Duration::from_secs(5))
    };
    let engine = Engine::new(Plan::resolve(&spec).expect("the spec is valid"));
    engine.run().expect("the engine runs")
}

#[test]
fn bad_chunk_sizes_are_counted_as_malformed_with_their_reason() {
    let addr = serve(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        20,
    );
    let s = run(addr, 6).stats;
    assert_eq!(
        s.errors.get(ErrorKind::MalformedResponse),
        6,
        "{:?}",
        s.errors
    );
    assert_eq!(s.error_reasons.0.get(&ErrorReason::BadChunkSize), Some(&6));
    assert_eq!(s.error_reasons.0.len(), 1, "{:?}", s.error_reasons);
}

#[test]
fn a_head_over_64_kib_is_named() {
    static HEAD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let head = HEAD.get_or_init(|| {
        let mut h = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        h.extend(std::iter::repeat_n(b'a', 70 * 1024));
        h.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        h
    });
    let addr = serve(head, 20);
    let s = run(addr, 3).stats;
    assert_eq!(
        s.errors.get(ErrorKind::MalformedResponse),
        3,
        "{:?}",
        s.errors
    );
    assert_eq!(s.error_reasons.0.get(&ErrorReason::HeadOver64KiB), Some(&3));
}

#[test]
fn a_header_without_colon_and_a_bad_status_line_are_told_apart() {
    let no_colon = serve(
        b"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n",
        20,
    );
    let s = run(no_colon, 2).stats;
    assert_eq!(s.error_reasons.0.get(&ErrorReason::BadHeaderLine), Some(&2));
    let garbage = serve(b"HTTX/9 abc\r\n\r\n", 20);
    let s = run(garbage, 2).stats;
    assert_eq!(s.error_reasons.0.get(&ErrorReason::BadStatusLine), Some(&2));
}
