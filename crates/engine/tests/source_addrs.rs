//! `--source-addrs`: each new connection binds to the next source address, round-robin, so a
//! loopback target sees its connections come from every address given and from no other.

use loadbench_engine::Engine;
use loadbench_plan::{LoadSpec, Plan, Stop};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Accepts connections one at a time, answers one request on each with `Connection: close`,
/// and returns the peer address of every connection once `stop` is raised.
fn serve(listener: TcpListener, stop: Arc<AtomicBool>) -> JoinHandle<Vec<IpAddr>> {
    std::thread::spawn(move || {
        let mut peers = Vec::new();
        for conn in listener.incoming() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let Ok(mut conn) = conn else { continue };
            peers.push(conn.peer_addr().unwrap().ip());
            answer(&mut conn);
        }
        peers
    })
}

fn answer(conn: &mut TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
}

#[test]
fn connections_come_from_every_source_address_and_no_other() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let server = serve(listener, Arc::clone(&stop));
    let sources = loadbench_plan::units::source_addrs("127.0.0.2-127.0.0.5").unwrap();
    let spec = LoadSpec {
        stop: Stop::Requests(40),
        keepalive: false,
        threads: Some(2),
        source_addrs: sources.clone(),
        ..LoadSpec::closed(&format!("http://{addr}/"), 4, Duration::from_secs(10))
    };
    let stats = Engine::new(Plan::resolve(&spec).unwrap())
        .run()
        .unwrap()
        .stats;
    stop.store(true, Ordering::Relaxed);
    let _ = TcpStream::connect(addr);
    let peers = server.join().unwrap();
    assert_eq!(stats.requests, 40, "{:?}", stats.errors);
    assert_eq!(stats.connections_opened, 40);
    assert_eq!(peers.len(), 40, "{peers:?}");
    let seen: BTreeSet<IpAddr> = peers.into_iter().collect();
    assert_eq!(seen, sources.into_iter().collect::<BTreeSet<_>>());
}
