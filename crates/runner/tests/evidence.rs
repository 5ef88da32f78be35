//! The kernel's evidence of a run against real listeners on loopback: a listener with a
//! backlog of 1 that accepts slowly, hit by a burst of connections, shows its accept queue
//! overflowing and explains the slow connects; a listener that keeps up stays silent. Kernel
//! counters are host-wide, so "silent" is judged by the run's own listener (its queue never
//! filled), which other tests running in parallel cannot change.

use loadbench_model::FindingKind;
use loadbench_plan::{LoadSpec, Stop};
use loadbench_runner::{Control, Quiet};
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An HTTP/1.1 server on loopback with the given listen backlog that waits `accept_gap`
/// before each accept; every accepted connection is served on its own thread until `stop`.
struct SlowServer {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    responses: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl SlowServer {
    fn start(backlog: i32, accept_gap: Duration) -> SlowServer {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        socket
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        socket.listen(backlog).unwrap();
        let listener: TcpListener = socket.into();
        listener.set_nonblocking(true).unwrap();
        let server = SlowServer {
            addr: listener.local_addr().unwrap(),
            accepted: Arc::default(),
            responses: Arc::default(),
            stop: Arc::default(),
        };
        let (accepted, responses, stop) = (
            server.accepted.clone(),
            server.responses.clone(),
            server.stop.clone(),
        );
        std::thread::spawn(move || {
            accept_loop(&listener, accept_gap, &accepted, &responses, &stop)
        });
        server
    }
}

impl Drop for SlowServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn accept_loop(
    listener: &TcpListener,
    gap: Duration,
    accepted: &AtomicU64,
    responses: &Arc<AtomicU64>,
    stop: &Arc<AtomicBool>,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        std::thread::sleep(gap);
        let Ok((conn, _)) = listener.accept() else {
            continue;
        };
        accepted.fetch_add(1, Ordering::Relaxed);
        let (responses, stop) = (responses.clone(), stop.clone());
        std::thread::spawn(move || serve(conn, &responses, &stop));
    }
}

/// Answers each request (headers only, no body) with a 2-byte 200 until EOF or `stop`.
fn serve(mut conn: TcpStream, responses: &AtomicU64, stop: &AtomicBool) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        }
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if conn.write_all(reply).is_err() {
                return;
            }
            responses.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn run(spec: &LoadSpec) -> loadbench_model::RunResult {
    let stop = Arc::new(AtomicBool::new(false));
    let ctl = Control {
        stop: &stop,
        observer: &Quiet,
    };
    loadbench_runner::run(spec, ctl).expect("the load runs")
}

#[test]
fn a_tiny_backlog_that_accepts_slowly_overflows_and_explains_slow_connects() {
    let server = SlowServer::start(1, Duration::from_millis(100));
    let url = format!("http://{}/", server.addr);
    let spec = LoadSpec {
        threads: Some(1),
        connect_timeout: Duration::from_secs(10),
        ..LoadSpec::closed(&url, 24, Duration::from_secs(4))
    };
    let r = run(&spec);
    let k = r.evidence.as_ref().expect("kernel evidence is recorded");
    assert_eq!(k.ports, [server.addr.port()]);
    assert_eq!(k.sockets.backlog, 1, "{k:?}");
    assert!(k.sockets.accept_queue_peak >= 1, "{k:?}");
    assert!(k.tcp.listen_overflows > 0, "{k:?}");
    // The server also answered the requests still in flight when the timed run ended.
    let served = server.responses.load(Ordering::Relaxed);
    let s = &r.stats;
    assert!(
        (s.requests..=s.requests + s.abandoned).contains(&served),
        "served {served}, completed {}, in flight {}",
        s.requests,
        s.abandoned
    );
    // A busy host (a loaded test machine) ranks first and blames no side: the first after it.
    let f = r
        .why
        .findings
        .iter()
        .find(|f| f.kind != FindingKind::BusyHost)
        .unwrap_or_else(|| panic!("{:#?}", r.why));
    assert_eq!(f.kind, FindingKind::AcceptQueueOverflow, "{:#?}", r.why);
    assert_eq!(f.figures["backlog"], 1.0);
    assert_eq!(f.figures["listen_overflows"], k.tcp.listen_overflows as f64);
    // A dropped SYN is sent again after 1 s: the slowest connect shows it.
    let slowest_us = r.stats.connect.hist.max_ns() as f64 / 1e3;
    assert!(slowest_us >= 900_000.0, "slowest connect {slowest_us} µs");
    assert_eq!(f.figures["connect_max_us"], slowest_us);
    assert!(f.text.contains("(backlog 1,"), "{}", f.text);
    assert!(f.text.contains("the slowest connect took"), "{}", f.text);
    assert!(f.fix.as_deref().unwrap().contains("somaxconn"));
}

#[test]
fn a_listener_that_keeps_up_shows_no_accept_queue_finding() {
    let server = SlowServer::start(128, Duration::from_millis(1));
    let url = format!("http://{}/", server.addr);
    let spec = LoadSpec {
        threads: Some(1),
        stop: Stop::Requests(2000),
        ..LoadSpec::closed(&url, 4, Duration::from_secs(10))
    };
    let r = run(&spec);
    assert_eq!(r.stats.requests, 2000);
    assert_eq!(server.responses.load(Ordering::Relaxed), 2000);
    let accepted = server.accepted.load(Ordering::Relaxed);
    assert!(
        (4..=5).contains(&accepted),
        "4 connections and the preflight's: {accepted}"
    );
    let k = r.evidence.as_ref().expect("kernel evidence is recorded");
    assert_eq!(k.sockets.backlog, 128);
    assert!(k.sockets.accept_queue_peak < 128, "{k:?}");
    let kinds: Vec<FindingKind> = r.why.findings.iter().map(|f| f.kind).collect();
    assert!(
        !kinds.contains(&FindingKind::AcceptQueueOverflow),
        "{:#?}",
        r.why
    );
    assert!(!r.why.looked_at.is_empty());
}
