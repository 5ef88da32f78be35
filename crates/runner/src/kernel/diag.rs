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
    /// LISTEN: the accept queue; otherwise unread bytes.
    pub rqueue: u32,
    /// LISTEN: the backlog; otherwise unsent bytes.
    pub wqueue: u32,
}

/// Every TCP socket with local port `sport` and remote port `dport` (0: any), IPv4 then IPv6.
/// A remote port leaves listeners out.
pub(super) fn dump(sport: u16, dport: u16) -> io::Result<Vec<DiagSocket>> {
    let mut all = dump_family(libc::AF_INET as u8, sport, dport)?;
    // A host without IPv6 answers with an error: keep the IPv4 sockets.
    all.extend(dump_family(libc::AF_INET6 as u8, sport, dport).unwrap_or_default());
    Ok(all)
}

#[allow(unsafe_code)]
fn dump_family(family: u8, sport: u16, dport: u16) -> io::Result<Vec<DiagSocket>> {
    let fd = open()?;
    send_request(&fd, &request(family, sport, dport))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: `buf` is valid for writes of its length for the duration of the call.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if parse(&buf[..n as usize], &mut out)? {
            return Ok(out);
        }
    }
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

/// `nlmsghdr` + `inet_diag_req_v2` asking for `family`'s TCP sockets in every state, with the
/// ports the kernel filters on (network byte order, 0: any).
fn request(family: u8, sport: u16, dport: u16) -> [u8; HEADER + 56] {
    let mut req = [0u8; HEADER + 56];
    let len = req.len() as u32;
    req[0..4].copy_from_slice(&len.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[HEADER] = family;
    req[HEADER + 1] = libc::IPPROTO_TCP as u8;
    req[HEADER + 4..HEADER + 8].copy_from_slice(&u32::MAX.to_ne_bytes());
    req[HEADER + 8..HEADER + 10].copy_from_slice(&sport.to_be_bytes());
    req[HEADER + 10..HEADER + 12].copy_from_slice(&dport.to_be_bytes());
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
fn parse(mut data: &[u8], out: &mut Vec<DiagSocket>) -> io::Result<bool> {
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
            _ if len >= HEADER + MESSAGE => out.push(socket(&data[HEADER..])),
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
        rqueue: u32_at(m, 56),
        wqueue: u32_at(m, 60),
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
        let ours = dump(port, 0).unwrap();
        let listening: Vec<_> = ours.iter().filter(|s| s.state == LISTEN).collect();
        assert_eq!(listening.len(), 1, "{ours:?}");
        assert_eq!((listening[0].wqueue, listening[0].rqueue), (5, 0));
        // The kernel filtered: every socket dumped is on the port asked for.
        assert!(ours.iter().all(|s| s.local_port == port), "{ours:?}");
        assert!(dump(0, port).unwrap().iter().all(|s| s.remote_port == port));
    }

    #[test]
    fn a_truncated_message_is_an_error_not_a_panic() {
        let mut out = Vec::new();
        let mut data = vec![0u8; 20];
        data[0..4].copy_from_slice(&200u32.to_ne_bytes());
        assert!(parse(&data, &mut out).is_err());
        assert!(!parse(&[], &mut out).unwrap());
    }
}
