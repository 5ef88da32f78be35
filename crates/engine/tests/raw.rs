//! A small in-process HTTP/1.1 server on port 0, with a few behaviours the tests need: count
//! requests, answer chunked, stall, reset, close, send garbage. Thread per connection; stopped on
//! drop. The engine's connection tests drive the engine against it in-process; the CLI's tests
//! include this same file (`#[path]` in crates/cli/tests/support/mod.rs) for end-to-end runs.

#![allow(dead_code)]

use super::listener::RawListener;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `200 OK` with a Content-Length body; keep-alive unless the request says close.
    Count,
    /// `200 OK` with a chunked body of several chunks and a trailer.
    Chunked,
    /// Reads the request and never answers.
    Stall,
    /// Answers with an invalid status line.
    Malformed,
    /// Reads the request and resets the connection (RST).
    Reset,
    /// Sends part of a response and closes at once, so data and FIN arrive together.
    Truncated,
    /// Reads the request and closes the connection without sending a byte.
    Close,
}

/// The raw server of this file: [`RawListener`], counting the requests it reads.
pub(crate) struct RawServer(RawListener);

impl RawServer {
    pub(crate) fn start(bind: &str, mode: Mode) -> std::io::Result<RawServer> {
        RawListener::bind(bind, move |conn, count, stop| {
            serve(conn, mode, count, stop)
        })
        .map(RawServer)
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.0.addr)
    }

    pub(crate) fn requests(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }
}

/// Reads one request head (and a Content-Length body); `None` at EOF.
fn read_request(conn: &mut TcpStream, pending: &mut Vec<u8>) -> Option<bool> {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = find(pending, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let body = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if pending.len() >= end + 4 + body {
                pending.drain(..end + 4 + body);
                return Some(head.contains("connection: close"));
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn serve(mut conn: TcpStream, mode: Mode, count: &AtomicU64, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut pending = Vec::new();
    while let Some(close) = read_request(&mut conn, &mut pending) {
        count.fetch_add(1, Ordering::Relaxed);
        let reply: &[u8] = match mode {
            Mode::Count => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            Mode::Chunked => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
            Mode::Malformed => b"HTTX/9 abc\r\n\r\n",
            Mode::Truncated => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b",
            Mode::Stall => {
                while !stop.load(Ordering::Relaxed) && conn.read(&mut [0u8; 64]).is_ok_and(|n| n > 0) {}
                return;
            }
            Mode::Close => return,
            Mode::Reset => {
                let _ = socket2::SockRef::from(&conn).set_linger(Some(Duration::ZERO));
                return;
            }
        };
        if conn.write_all(reply).is_err()
            || close
            || matches!(mode, Mode::Malformed | Mode::Truncated)
        {
            return;
        }
    }
}
