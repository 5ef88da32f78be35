//! Netlink sock_diag (what `ss` uses): one dump of every TCP socket of the network namespace,
//! IPv4 and IPv6, each with its state, ports and queues. `/proc/net/tcp` shows a listener's
//! accept queue but not its backlog; sock_diag gives both (`rqueue`, `wqueue` of a LISTEN
//! socket), and costs less than formatting and parsing text.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(super) const ESTABLISHED: u8 = 1;
pub(super) const SYN_RECV: u8 = 3;
pub(super) const TIME_WAIT: u8 = 6;
pub(super) const LISTEN: u8 = 10;
pub(super) const NEW_SYN_RECV: u8 = 12;

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const HEADER: usize = 16;
/// `inet_diag_msg`: family, state, timer, retrans (4), sockid (48), expires, rqueue, wqueue,
/// uid, inode (20).
const MESSAGE: usize = 72;

/// One socket as sock_diag reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DiagSocket {
    pub state: u8,
    pub local_port: u16,
    pub remote_port: u16,
    /// The local address as the kernel gives it (an IPv4 address in the first 4 bytes).
    pub local_addr: [u8; 16],
    /// LISTEN: the accept queue; otherwise unread bytes.
    pub rqueue: u32,
    /// LISTEN: the backlog; otherwise unsent bytes.
    pub wqueue: u32,
    /// The socket's inode: `/proc/PID/fd/N` links to `socket:[inode]` in its owners.
    pub inode: u32,
}

/// Every TCP socket with a local or a remote port among `ports`, IPv4 then IPv6: one walk of
/// the kernel's socket tables per family, filtered inside the kernel by a small bytecode
/// program (as `ss 'sport = :P or dport = :P'` does), so a host with many sockets returns only
/// these. A walk costs in proportion to the size of the hash table, not the sockets returned.
#[cfg(test)]
pub(super) fn dump(ports: &[u16]) -> io::Result<Vec<DiagSocket>> {
    dump_families(ports, true, ALL_STATES).map(|(all, _)| all)
}

/// Every TCP state, for [`dump_families`].
pub(super) const ALL_STATES: u32 = u32::MAX;
/// Only listeners, for [`dump_families`]: the kernel then reads its small table of listening
/// sockets and skips the hash table of connections, whose walk is what a dump costs.
pub(super) const LISTENERS: u32 = 1 << LISTEN;

/// [`dump`] of the sockets in `states` (a bit per TCP state), leaving IPv6 out unless `ipv6`;
/// also says how many of the sockets are IPv6.
pub(super) fn dump_families(
    ports: &[u16],
    ipv6: bool,
    states: u32,
) -> io::Result<(Vec<DiagSocket>, usize)> {
    let mut all = Vec::new();
    let v6 = each_socket(ports, ipv6, states, |d| all.push(d))?;
    Ok((all, v6))
}

/// [`dump_families`] handing each socket to `each` as the kernel's messages arrive, instead
/// of collecting them: a reading of tens of thousands of sockets then holds one 64 KiB buffer,
/// not a list of them all. Returns how many were IPv6.
pub(super) fn each_socket(
    ports: &[u16],
    ipv6: bool,
    states: u32,
    mut each: impl FnMut(DiagSocket),
) -> io::Result<usize> {
    if ports.is_empty() {
        return Ok(0);
    }
    let filter = port_filter(ports);
    dump_family(libc::AF_INET as u8, states, &filter, &mut each)?;
    if !ipv6 {
        return Ok(0);
    }
    // A host without IPv6 answers with an error: keep the IPv4 sockets.
    let mut v6 = 0;
    let _ = dump_family(libc::AF_INET6 as u8, states, &filter, &mut |d| {
        v6 += 1;
        each(d);
    });
    Ok(v6)
}

#[allow(unsafe_code)]
fn dump_family(
    family: u8,
    states: u32,
    filter: &[u8],
    each: &mut impl FnMut(DiagSocket),
) -> io::Result<()> {
    let fd = open()?;
    send_request(&fd, &request(family, states, filter))?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: `buf` is valid for writes of its length for the duration of the call.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if parse(&buf[..n as usize], each)? {
            return Ok(());
        }
    }
}

/// `INET_DIAG_BC_JMP`: always takes `no`. `INET_DIAG_BC_S_EQ` / `INET_DIAG_BC_D_EQ`: the
/// source / destination port equals the next op's `no` field.
const BC_JMP: u8 = 1;
const BC_S_EQ: u8 = 11;
const BC_D_EQ: u8 = 12;

/// The inet_diag bytecode for "local port in `ports` or remote port in `ports`". Each op is
/// `{code, yes, no}` (jumps in bytes); the program accepts a socket when a jump lands exactly
/// on its end. The kernel checks a program by following `yes` from the start, and every `no`
/// must land on an op of that path, so each test is laid out as
/// `[test port: yes → next op, no → next test] [JMP: no → the end (accept), yes → next test]`,
/// and the last test's `no` goes 4 bytes past the end (reject).
fn port_filter(ports: &[u16]) -> Vec<u8> {
    let tests: Vec<(u8, u16)> = ports
        .iter()
        .flat_map(|&p| [(BC_S_EQ, p), (BC_D_EQ, p)])
        .collect();
    let total = tests.len() * 12;
    let mut bc = Vec::with_capacity(total);
    let mut op = |code: u8, yes: usize, no: usize| {
        bc.push(code);
        bc.push(yes as u8);
        bc.extend_from_slice(&(no as u16).to_ne_bytes());
    };
    for (i, (code, port)) in tests.into_iter().enumerate() {
        let left = total - i * 12;
        op(code, 8, if left == 12 { left + 4 } else { 12 });
        op(0, 0, usize::from(port));
        op(BC_JMP, 4, left - 8);
    }
    bc
}

#[allow(unsafe_code)]
fn open() -> io::Result<OwnedFd> {
    let kind = libc::SOCK_DGRAM | libc::SOCK_CLOEXEC;
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, kind, libc::NETLINK_SOCK_DIAG) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `nlmsghdr` + `inet_diag_req_v2` asking for `family`'s TCP sockets in `states`, then the
/// filter as an `INET_DIAG_REQ_BYTECODE` attribute.
fn request(family: u8, states: u32, filter: &[u8]) -> Vec<u8> {
    const REQ: usize = 56;
    const ATTR: usize = 4;
    const INET_DIAG_REQ_BYTECODE: u16 = 1;
    let mut req = vec![0u8; HEADER + REQ + ATTR + filter.len()];
    let len = req.len() as u32;
    req[0..4].copy_from_slice(&len.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[HEADER] = family;
    req[HEADER + 1] = libc::IPPROTO_TCP as u8;
    req[HEADER + 4..HEADER + 8].copy_from_slice(&states.to_ne_bytes());
    let attr = HEADER + REQ;
    let attr_len = (ATTR + filter.len()) as u16;
    req[attr..attr + 2].copy_from_slice(&attr_len.to_ne_bytes());
    req[attr + 2..attr + 4].copy_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
    req[attr + ATTR..].copy_from_slice(filter);
    req
}

#[allow(unsafe_code)]
fn send_request(fd: &OwnedFd, req: &[u8]) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr_nl is valid; the family is set below.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: `req` and `kernel` are valid for reads of the lengths passed.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            req.as_ptr().cast(),
            req.len(),
            0,
            std::ptr::addr_of!(kernel).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Parses one datagram of messages into `out`; true when the dump is done.
fn parse(mut data: &[u8], each: &mut impl FnMut(DiagSocket)) -> io::Result<bool> {
    while data.len() >= HEADER {
        let len = u32_at(data, 0) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        if len < HEADER || len > data.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "short netlink message",
            ));
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno =
                    i32::from_ne_bytes(data[HEADER..HEADER + 4].try_into().unwrap_or_default());
                return Err(io::Error::from_raw_os_error(-errno));
            }
            _ if len >= HEADER + MESSAGE => each(socket(&data[HEADER..])),
            _ => {}
        }
        data = &data[len.next_multiple_of(4).min(data.len())..];
    }
    Ok(false)
}

fn socket(m: &[u8]) -> DiagSocket {
    DiagSocket {
        state: m[1],
        // Ports are in network byte order at the start of the sockid.
        local_port: u16::from_be_bytes([m[4], m[5]]),
        remote_port: u16::from_be_bytes([m[6], m[7]]),
        local_addr: m[8..24].try_into().unwrap_or_default(),
        rqueue: u32_at(m, 56),
        wqueue: u32_at(m, 60),
        inode: u32_at(m, 68),
    }
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A loopback listener with the given backlog (std always asks for 128).
    #[allow(unsafe_code)]
    pub(crate) fn listener(backlog: i32) -> TcpListener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        // SAFETY: listen(2) again on our own bound socket only changes its backlog.
        let rc = unsafe { libc::listen(l.as_raw_fd(), backlog) };
        assert_eq!(rc, 0);
        l
    }

    #[test]
    fn the_dump_sees_a_listener_of_ours() {
        let l = listener(5);
        let port = l.local_addr().unwrap().port();
        let ours = dump(&[port]).unwrap();
        let listening: Vec<_> = ours.iter().filter(|s| s.state == LISTEN).collect();
        assert_eq!(listening.len(), 1, "{ours:?}");
        assert_eq!((listening[0].wqueue, listening[0].rqueue), (5, 0));
        assert!(ours.iter().all(|s| s.local_port == port), "{ours:?}");
    }

    #[test]
    fn the_kernel_returns_both_ends_of_a_connection_to_the_port_and_nothing_else() {
        let (a, b) = (listener(8), listener(8));
        let (pa, pb) = (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        );
        let client = std::net::TcpStream::connect(("127.0.0.1", pa)).unwrap();
        let (_server, _) = a.accept().unwrap();
        let _other = std::net::TcpStream::connect(("127.0.0.1", pb)).unwrap();
        let mine = client.local_addr().unwrap().port();
        let ours = dump(&[pa]).unwrap();
        let on = |local, remote, state| {
            ours.iter()
                .filter(|s| s.local_port == local && s.remote_port == remote && s.state == state)
                .count()
        };
        // The listener, the accepted socket, and the client's end (remote port = the port).
        assert_eq!(on(pa, 0, LISTEN), 1, "{ours:?}");
        assert_eq!(on(pa, mine, ESTABLISHED), 1, "{ours:?}");
        assert_eq!(on(mine, pa, ESTABLISHED), 1, "{ours:?}");
        // Nothing of the other listener's port came back: the kernel filtered.
        assert!(
            ours.iter()
                .all(|s| s.local_port == pa || s.remote_port == pa),
            "{ours:?}"
        );
        let (listening, _) = dump_families(&[pa], true, LISTENERS).unwrap();
        assert_eq!(listening.len(), 1, "{listening:?}");
        assert_eq!(listening[0].state, LISTEN);
        let both = dump(&[pa, pb]).unwrap();
        assert!(both.iter().any(|s| s.local_port == pb && s.state == LISTEN));
        assert!(dump(&[]).unwrap().is_empty());
    }

    #[test]
    fn the_filter_accepts_on_any_test_and_rejects_past_the_last() {
        let bc = port_filter(&[80, 443]);
        assert_eq!(bc.len(), 48);
        let ops: Vec<(u8, u8, u16)> = bc
            .chunks(4)
            .map(|c| (c[0], c[1], u16::from_ne_bytes([c[2], c[3]])))
            .collect();
        #[rustfmt::skip]
        assert_eq!(
            ops,
            [
                (BC_S_EQ, 8, 12), (0, 0, 80), (BC_JMP, 4, 40),
                (BC_D_EQ, 8, 12), (0, 0, 80), (BC_JMP, 4, 28),
                (BC_S_EQ, 8, 12), (0, 0, 443), (BC_JMP, 4, 16),
                (BC_D_EQ, 8, 16), (0, 0, 443), (BC_JMP, 4, 4),
            ]
        );
    }
}
