//! The hostile-server matrix for WebSocket (issue 41): a raw server of this file that takes
//! the upgrade (or refuses it) and then misbehaves on purpose, one way per mode, counting the
//! messages it reads. Every mode runs in-process in the closed (timed), `-n` and open models
//! with short durations and timeouts; each run must end in time, report only the expected
//! error classes (a failed upgrade is a connect error, with its reason), keep the accounting
//! identity `requests + (errors − errors before sending) + abandoned = sent` exactly, and
//! never have sent fewer messages than the server read (nor, where it reads, more than it
//! read and the run abandoned). A second test floods every connection (endless
//! fragments, pings it never reads the pongs of) at `-c 4` for 5 s in a child process and
//! reads its peak RSS.

use crate::support::{
    base_spec, check, check_run, child_peak_rss_kb, is_timeout, matrix, run_all_then_print_rss,
    run_timed, Base, RawListener,
};
use base64::Engine as _;
use loadbench_engine::ws::frame::server_frame;
use loadbench_model::{ErrorKind, ErrorReason, Stats};
use loadbench_plan::{Body, LoadSpec};
use sha1::{Digest, Sha1};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One way for a WebSocket server to misbehave (or, for `SlowDrip`, to be slow but correct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Reads the upgrade request and never answers it.
    NeverUpgrade,
    /// Answers the upgrade with `200 OK` and a body.
    Answer200,
    /// Answers the upgrade 16 bytes at a time, and echoes every message one byte at a time,
    /// a millisecond apart.
    SlowDrip,
    /// Answers each message with a text frame without FIN, then continuation frames without
    /// end.
    EndlessFragments,
    /// Answers each message with a frame of a reserved opcode (3).
    ReservedOpcode,
    /// Answers each message with a frame head claiming 2^64 − 1 payload bytes.
    HugeLength,
    /// Answers each message with a close frame, code 1011, then hangs up.
    Close1011,
    /// After the upgrade, sends pings without end and never reads again.
    PingFloodNoRead,
}

const MODES: [Mode; 8] = [
    Mode::NeverUpgrade,
    Mode::Answer200,
    Mode::SlowDrip,
    Mode::EndlessFragments,
    Mode::ReservedOpcode,
    Mode::HugeLength,
    Mode::Close1011,
    Mode::PingFloodNoRead,
];

/// The most one flood writes.
const FLOOD_MAX: usize = 48 << 20;

/// The raw server, counting whole messages read from the generator.
fn start(mode: Mode) -> RawListener {
    RawListener::start(move |conn, messages, stop| serve(conn, mode, messages, stop))
}

/// Reads into `rx` until it holds `want` bytes; false at EOF, an error, stop or 15 s.
fn fill(conn: &mut TcpStream, rx: &mut Vec<u8>, want: usize, stop: &AtomicBool) -> bool {
    let started = Instant::now();
    let mut buf = [0u8; 16 * 1024];
    while rx.len() < want {
        if stop.load(Ordering::Relaxed) || started.elapsed() > Duration::from_secs(15) {
            return false;
        }
        match conn.read(&mut buf) {
            Err(e) if is_timeout(&e) => continue,
            Ok(0) | Err(_) => return false,
            Ok(n) => rx.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// The upgrade request's head, read whole and taken out of `rx`; its key.
fn read_upgrade(conn: &mut TcpStream, rx: &mut Vec<u8>, stop: &AtomicBool) -> Option<String> {
    loop {
        if let Some(at) = rx.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&rx[..at]).to_string();
            rx.drain(..at + 4);
            return head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("sec-websocket-key")
                    .then(|| value.trim().to_string())
            });
        }
        let want = rx.len() + 1;
        if !fill(conn, rx, want, stop) {
            return None;
        }
    }
}

/// A client frame (masked): its opcode and unmasked payload, taken out of `rx`.
fn read_frame(conn: &mut TcpStream, rx: &mut Vec<u8>, stop: &AtomicBool) -> Option<(u8, Vec<u8>)> {
    if !fill(conn, rx, 2, stop) {
        return None;
    }
    let (opcode, short) = (rx[0] & 0x0F, usize::from(rx[1] & 0x7F));
    let (len, at) = match short {
        126 => {
            fill(conn, rx, 4, stop).then_some(())?;
            (usize::from(u16::from_be_bytes([rx[2], rx[3]])), 4)
        }
        127 => {
            fill(conn, rx, 10, stop).then_some(())?;
            (
                u64::from_be_bytes(rx[2..10].try_into().unwrap()) as usize,
                10,
            )
        }
        n => (n, 2),
    };
    if !fill(conn, rx, at + 4 + len, stop) {
        return None;
    }
    let mask = [rx[at], rx[at + 1], rx[at + 2], rx[at + 3]];
    let payload = rx[at + 4..at + 4 + len]
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ mask[i & 3])
        .collect();
    rx.drain(..at + 4 + len);
    Some((opcode, payload))
}

fn accept(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

fn serve(mut conn: TcpStream, mode: Mode, messages: &AtomicU64, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = conn.set_nodelay(true);
    let mut rx = Vec::new();
    let Some(key) = read_upgrade(&mut conn, &mut rx, stop) else {
        return;
    };
    let switch = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept(&key)
    );
    match mode {
        Mode::NeverUpgrade => {
            // Reads on until the generator gives up (or the server stops).
            let _ = fill(&mut conn, &mut rx, usize::MAX, stop);
            return;
        }
        Mode::Answer200 => {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            let _ = fill(&mut conn, &mut rx, usize::MAX, stop);
            return;
        }
        Mode::SlowDrip => {
            if !drip(&mut conn, switch.as_bytes(), 16, stop) {
                return;
            }
        }
        _ => {
            if conn.write_all(switch.as_bytes()).is_err() {
                return;
            }
        }
    }
    if mode == Mode::PingFloodNoRead {
        let ping = server_frame(true, 0x9, b"");
        flood(&mut conn, stop, |out| out.extend_from_slice(&ping));
        return;
    }
    while let Some((opcode, payload)) = read_frame(&mut conn, &mut rx, stop) {
        if opcode == 0x8 {
            return;
        }
        if opcode & 0x8 != 0 {
            continue;
        }
        messages.fetch_add(1, Ordering::SeqCst);
        if !answer(&mut conn, mode, &payload, stop) {
            return;
        }
    }
}

/// Answers one message; false when the connection is done.
fn answer(conn: &mut TcpStream, mode: Mode, payload: &[u8], stop: &AtomicBool) -> bool {
    match mode {
        Mode::SlowDrip => drip(conn, &server_frame(true, 0x1, payload), 1, stop),
        Mode::EndlessFragments => {
            let chunk = vec![b'x'; 16 * 1024];
            let _ = conn.write_all(&server_frame(false, 0x1, &chunk));
            flood(conn, stop, |out| {
                out.extend_from_slice(&server_frame(false, 0x0, &chunk))
            });
            false
        }
        Mode::ReservedOpcode => conn.write_all(&server_frame(true, 0x3, b"?")).is_ok(),
        Mode::HugeLength => {
            let mut head = vec![0x81, 127];
            head.extend_from_slice(&u64::MAX.to_be_bytes());
            head.extend_from_slice(b"abc");
            conn.write_all(&head).is_ok()
        }
        Mode::Close1011 => {
            let _ = conn.write_all(&server_frame(true, 0x8, &1011u16.to_be_bytes()));
            false
        }
        Mode::NeverUpgrade | Mode::Answer200 | Mode::PingFloodNoRead => false,
    }
}

/// Writes `bytes` `step` at a time, a millisecond apart.
fn drip(conn: &mut TcpStream, bytes: &[u8], step: usize, stop: &AtomicBool) -> bool {
    for piece in bytes.chunks(step) {
        if stop.load(Ordering::Relaxed) || conn.write_all(piece).is_err() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Writes `more` (about 16 KiB at a time) until the peer stops taking it, [`FLOOD_MAX`] is
/// written, the server stops or 12 s pass.
fn flood(conn: &mut TcpStream, stop: &AtomicBool, mut more: impl FnMut(&mut Vec<u8>)) {
    let _ = conn.set_write_timeout(Some(Duration::from_millis(200)));
    let (started, mut written, mut out) = (Instant::now(), 0, Vec::new());
    while written < FLOOD_MAX && started.elapsed() < Duration::from_secs(12) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        out.clear();
        while out.len() < 16 * 1024 {
            more(&mut out);
        }
        match conn.write_all(&out) {
            Err(e) if is_timeout(&e) => continue,
            Err(_) => break,
            Ok(()) => written += out.len(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Model {
    Closed,
    Count,
    Open,
}

const TIMEOUT: Duration = Duration::from_millis(400);
const WINDOW: Duration = Duration::from_millis(1200);

fn spec(url: &str, mode: Mode, model: Model) -> LoadSpec {
    let base = match model {
        Model::Closed => Base::Closed,
        Model::Count => Base::Count,
        Model::Open => Base::Open,
    };
    let mut s = base_spec(url, base, TIMEOUT, WINDOW);
    s.request.body = Body::Bytes(b"hello".to_vec());
    if mode == Mode::SlowDrip {
        // Slow but correct: a loaded machine's late wake-ups must not turn it into timeouts.
        s.timeout = Duration::from_secs(2);
        s.connect_timeout = Duration::from_secs(2);
    }
    s
}

/// The error classes a mode may produce, whether messages must complete, and the reason a
/// failed upgrade must be counted under.
fn expect(mode: Mode) -> (&'static [ErrorKind], bool, Option<ErrorReason>) {
    use ErrorKind::*;
    match mode {
        // A failed upgrade is a connect error: no message was sent.
        Mode::NeverUpgrade => (&[ConnectError], false, Some(ErrorReason::WsUpgradeTimeout)),
        Mode::Answer200 => (&[ConnectError], false, Some(ErrorReason::WsUpgradeRefused)),
        Mode::ReservedOpcode | Mode::HugeLength => (&[MalformedResponse], false, None),
        Mode::SlowDrip => (&[], true, None),
        // The server gives up after FLOOD_MAX bytes and hangs up mid-message.
        Mode::EndlessFragments => (&[ReadTimeout, ClosedBeforeResponseComplete], false, None),
        Mode::PingFloodNoRead => (&[ReadTimeout], false, None),
        Mode::Close1011 => (&[ClosedBeforeResponseComplete], false, None),
    }
}

fn run_case(mode: Mode, model: Model) -> Result<(), String> {
    let server = start(mode);
    let spec = spec(&format!("ws://{}/", server.addr), mode, model);
    let count = matches!(model, Model::Count);
    let (s, took, limit) = run_timed(&spec, count, TIMEOUT, WINDOW)?;
    let what = format!(
        "{mode:?}/{model:?}: {took:?} requests {} sent {} abandoned {} {:?} {:?} {:?}",
        s.requests, s.sent, s.abandoned, s.errors, s.error_reasons, s.ws
    );
    check_run(&s, (took, limit), 0, &what)?;
    let (classes, completes, reason) = expect(mode);
    let stray = s.errors.0.keys().find(|k| !classes.contains(k));
    check(stray.is_none(), "only the expected classes", &what)?;
    if let Some(r) = reason {
        let got = s.error_reasons.0.get(&r).copied().unwrap_or(0);
        check(
            got == s.errors.total(),
            "each failed upgrade has its reason",
            &what,
        )?;
    }
    check(
        completes == (s.requests > 0),
        "completed as expected",
        &what,
    )?;
    check(completes || s.errors.total() > 0, "failures counted", &what)?;
    check_mode(mode, &s, &what)?;
    if matches!(model, Model::Count) {
        check(
            s.requests + s.errors.total() == 12,
            "-n 12 accounted",
            &what,
        )?;
    }
    let server = server.settled();
    let what = format!("server {server}, {what}");
    check(server <= s.sent, "the server read no more than sent", &what)?;
    // A server that stops reading cannot count what was sent to it.
    let reads = mode != Mode::PingFloodNoRead;
    check(
        !reads || server + s.abandoned >= s.sent,
        "every message sent reached the server",
        &what,
    )?;
    Ok(())
}

/// What each mode leaves in the WebSocket counts.
fn check_mode(mode: Mode, s: &Stats, what: &str) -> Result<(), String> {
    match mode {
        Mode::NeverUpgrade | Mode::Answer200 => check(
            s.ws.upgrades == 0 && s.sent == 0,
            "nothing upgraded or sent",
            what,
        )?,
        Mode::Close1011 => check(
            s.ws.close_codes.get(&1011).copied().unwrap_or(0) > 0,
            "close 1011 counted",
            what,
        )?,
        Mode::PingFloodNoRead => check(s.ws.pings > 0, "pings counted", what)?,
        _ => check(s.ws.upgrades > 0, "upgraded", what)?,
    }
    Ok(())
}

#[test]
fn hostile_ws_server_matrix() {
    let models = [Model::Closed, Model::Count, Model::Open];
    let failures = matrix(&MODES, &models, run_case);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The environment variable that makes [`ws_rss_probe`] run (only in the child process).
const PROBE: &str = "LOADBENCH_WS_RSS_PROBE";

/// Runs in a child process: the two flooding modes at once, `-c 4` each for 5 s, then prints
/// the process's peak RSS (VmHWM).
#[test]
#[ignore = "run by peak_rss_stays_bounded_against_flooding_ws_servers in a child process"]
fn ws_rss_probe() {
    if std::env::var_os(PROBE).is_none() {
        return;
    }
    let modes = [Mode::EndlessFragments, Mode::PingFloodNoRead];
    let servers: Vec<RawListener> = modes.iter().map(|&m| start(m)).collect();
    let specs = servers
        .iter()
        .map(|server| {
            let url = format!("ws://{}/", server.addr);
            let mut spec = spec(&url, Mode::EndlessFragments, Model::Closed);
            spec.timeout = Duration::from_secs(2);
            spec
        })
        .collect();
    run_all_then_print_rss(specs, 5);
}

/// Peak RSS against servers that flood every connection (a message that never ends, pings
/// whose pongs are never read) stays under 64 MiB: each writes up to 48 MiB per connection,
/// so a generator that kept what it reads, or queued every pong, would hold hundreds of MiB.
#[test]
fn peak_rss_stays_bounded_against_flooding_ws_servers() {
    let kb = child_peak_rss_kb("hostile_ws::ws_rss_probe", PROBE);
    assert!(kb < 64 * 1024, "peak RSS {kb} kB");
}
