//! The kernel's view of a load, read on the generator's host: TCP counters from
//! `/proc/net/netstat` and `/proc/net/snmp` at the start and the end of the window, and the
//! target port's sockets (states, the listener's backlog and accept queue, the generator's
//! ephemeral ports) through netlink sock_diag every 100 ms, keeping peaks. It lives here so
//! `run` records it for every load; the harness watches a bench step the same way. Nothing is
//! read per request: one thread wakes ten times a second.

mod cpu;
mod diag;
mod watch;

pub use cpu::HostWatch;
pub use watch::KernelWatch;

use loadbench_model::{PortSockets, TcpCounters};
use std::collections::HashMap;
use std::time::Duration;

/// How often the sockets are read.
pub const SOCKET_INTERVAL: Duration = Duration::from_millis(100);

/// Set (to any value) in the environment, no thread reads the sockets during a load (the
/// counters are still read at its start and end): the switch for measuring what that thread
/// costs the generator (docs/diagnostics.md).
pub const NO_SOCKET_WATCH_ENV: &str = "LOADBENCH_NO_SOCKET_WATCH";

/// The kernel's TCP counters now (zeros where unreadable).
pub fn read_counters() -> TcpCounters {
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    counters_from(&netstat, &snmp)
}

/// Counters from the text of `/proc/net/netstat` and `/proc/net/snmp`.
pub fn counters_from(netstat: &str, snmp: &str) -> TcpCounters {
    let ext = |k: &str| field(netstat, "TcpExt", k);
    let tcp = |k: &str| field(snmp, "Tcp", k);
    TcpCounters {
        listen_overflows: ext("ListenOverflows"),
        listen_drops: ext("ListenDrops"),
        syn_retransmits: ext("TCPSynRetrans"),
        retransmitted_segments: tcp("RetransSegs"),
        resets_sent: tcp("OutRsts"),
        established_resets: tcp("EstabResets"),
        attempt_fails: tcp("AttemptFails"),
    }
}

/// One value of a `Prefix: names…` / `Prefix: values…` pair of lines; 0 when absent.
fn field(text: &str, prefix: &str, name: &str) -> u64 {
    let head = format!("{prefix}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&head));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return 0;
    };
    let at = names.split_whitespace().position(|n| n == name);
    at.and_then(|i| values.split_whitespace().nth(i))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `net.ipv4.ip_local_port_range` as (low, high); (0, 0) when unreadable.
pub fn port_range() -> (u16, u16) {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range");
    let text = text.unwrap_or_default();
    let mut parts = text.split_whitespace().map(|p| p.parse::<u16>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b),
        _ => (0, 0),
    }
}

/// One reading of the sockets on `ports`: the target side's states and listener, and the
/// generator's ephemeral ports in use toward them: the most from one local address (each
/// source address has the whole port range toward a peer, so with `--source-addrs` the
/// pressure is the busiest address's). `None` when netlink failed.
pub fn read_sockets(ports: &[u16]) -> Option<(PortSockets, u64)> {
    let mut t = Tally::default();
    diag::each_socket(ports, true, diag::ALL_STATES, |d| t.add(&d, ports)).ok()?;
    Some(t.finish())
}

/// One reading's sockets on some ports, counted one socket at a time.
#[derive(Debug)]
struct Tally {
    sockets: PortSockets,
    /// Connections toward the ports, per local address.
    toward: HashMap<[u8; 16], u64>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            sockets: PortSockets {
                readings: 1,
                ..Default::default()
            },
            toward: HashMap::new(),
        }
    }
}

impl Tally {
    fn add(&mut self, d: &diag::DiagSocket, ports: &[u16]) {
        let s = &mut self.sockets;
        let ours = ports.contains(&d.local_port);
        let peer = ports.contains(&d.remote_port);
        match d.state {
            diag::LISTEN if ours => {
                s.backlog = s.backlog.max(u64::from(d.wqueue));
                s.accept_queue_peak = s.accept_queue_peak.max(u64::from(d.rqueue));
            }
            diag::ESTABLISHED if ours => s.established += 1,
            diag::SYN_RECV | diag::NEW_SYN_RECV if ours => s.syn_recv += 1,
            diag::TIME_WAIT if ours || peer => s.time_wait += 1,
            _ => {}
        }
        if peer && d.state != diag::LISTEN {
            *self.toward.entry(d.local_addr).or_default() += 1;
        }
    }

    /// The counts, and the most connections toward the ports from one local address.
    fn finish(self) -> (PortSockets, u64) {
        (self.sockets, self.toward.into_values().max().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NETSTAT: &str = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans\n\
                           TcpExt: 0 12 14 3\n\
                           IpExt: InNoRoutes\nIpExt: 0\n";
    const SNMP: &str = "Tcp: RtoAlgorithm AttemptFails EstabResets RetransSegs OutRsts\n\
                        Tcp: 1 4 5 6 7\n";

    #[test]
    fn counters_are_read_by_name() {
        let c = counters_from(NETSTAT, SNMP);
        assert_eq!(
            (c.listen_overflows, c.listen_drops, c.syn_retransmits),
            (12, 14, 3)
        );
        assert_eq!(
            (
                c.attempt_fails,
                c.established_resets,
                c.retransmitted_segments,
                c.resets_sent
            ),
            (4, 5, 6, 7)
        );
        assert_eq!(counters_from("", ""), TcpCounters::default());
    }

    #[test]
    fn this_hosts_counters_and_port_range_read() {
        let (low, high) = port_range();
        assert!(low > 0 && high >= low, "{low}-{high}");
        // Counters only grow: a second reading is never below the first.
        let a = read_counters();
        let b = read_counters();
        assert_eq!(a.since(&b), TcpCounters::default());
    }

    #[test]
    fn a_listener_shows_its_backlog_and_accept_queue() {
        let listener = diag::tests::listener(7);
        let port = listener.local_addr().unwrap().port();
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let (s, toward) = read_sockets(&[port]).expect("sock_diag answers");
        assert_eq!((s.backlog, s.accept_queue_peak), (7, 3));
        // Other processes' old connections to a reused port may linger in TIME-WAIT.
        assert!(s.established >= 3 && toward >= 3, "{s:?} {toward}");
        drop(clients);
    }

    #[test]
    fn ports_in_use_are_the_busiest_source_address_s() {
        let listener = diag::tests::listener(64);
        let port = listener.local_addr().unwrap().port();
        let from = |ip: [u8; 4]| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            s.bind(&std::net::SocketAddr::from((ip, 0)).into()).unwrap();
            s.connect(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into())
                .unwrap();
            s
        };
        // 3 from 127.0.0.2, 2 from 127.0.0.3: each address has its own ports toward the
        // listener, so 3 are in use at most (5 across both).
        let clients: Vec<_> = [2, 2, 2, 3, 3].map(|b| from([127, 0, 0, b])).into();
        std::thread::sleep(Duration::from_millis(50));
        let (s, toward) = read_sockets(&[port]).expect("sock_diag answers");
        assert!(s.established >= 5, "{s:?}");
        // Other processes' old connections to a reused port may linger in TIME-WAIT, from
        // 127.0.0.1: then those are the busiest address's.
        let from_1 = diag::dump(&[port])
            .unwrap()
            .iter()
            .filter(|d| d.remote_port == port && d.local_addr[..4] == [127, 0, 0, 1])
            .count() as u64;
        assert!(
            toward == 3 || toward == from_1,
            "{toward} ({from_1} from 127.0.0.1)"
        );
        drop(clients);
    }

    fn kernel_threads() -> usize {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap();
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            // A thread's comm keeps 15 bytes of its name.
            .filter(|c| c.trim() == "loadbench-kerne")
            .count()
    }

    #[test]
    fn overlapping_watches_share_one_reading_thread_and_keep_their_own_ports() {
        let (a, b) = (diag::tests::listener(7), diag::tests::listener(9));
        let (pa, pb) = (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        );
        let wa = KernelWatch::start(vec![pa]);
        let _client = std::net::TcpStream::connect(("127.0.0.1", pb)).unwrap();
        let wb = KernelWatch::start(vec![pb]);
        std::thread::sleep(SOCKET_INTERVAL * 4);
        // Other tests of this binary may watch too: still one thread for all of them.
        assert_eq!(kernel_threads(), 1);
        let (ea, eb) = (wa.finish(), wb.finish());
        assert_eq!((ea.sockets.backlog, eb.sockets.backlog), (7, 9));
        assert_eq!(
            (ea.sockets.accept_queue_peak, eb.sockets.accept_queue_peak),
            (0, 1)
        );
        // A reading at the start and one at the end, and the thread's, one per interval.
        for e in [&ea, &eb] {
            assert!(e.sockets.readings >= 2, "{e:?}");
            assert!(e.sockets.readings <= 2 + e.window_ms / 100 + 1, "{e:?}");
        }
        drop((a, b));
    }
}
