//! The byte stream under HTTP/1.1: plain TCP, TLS over TCP, or a Unix socket, as variants of
//! one [`Stream`], so the connection state machine reads and writes them alike (TLS adds only
//! a handshake phase after the connect).

use crate::tls::{TlsClient, TlsStream};
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// A connection's byte stream.
pub enum Stream {
    /// Plain TCP (non-blocking, `TCP_NODELAY`).
    Tcp(TcpStream),
    /// TLS over TCP (boxed: the session is large, and plain TCP must not pay for it).
    Tls(Box<TlsStream>),
    /// A Unix stream socket (`--unix-socket`).
    Unix(UnixStream),
}

/// Where a worker's connections go.
#[derive(Debug, Clone, Copy)]
pub enum Dest<'a> {
    /// A TCP address, from `source` when given.
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(&'a std::path::Path),
}

impl Stream {
    /// Starts a non-blocking connect, from `source` (port 0: any free one) when given;
    /// completion is signalled by writability.
    pub fn connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<Stream> {
        Ok(Stream::Tcp(tcp_connect(addr, source)?))
    }

    /// Starts a non-blocking connect to `dest`; over TCP with `tls`, the stream is a TLS
    /// client whose handshake starts once the connect is done.
    pub fn open(
        dest: Dest<'_>,
        source: Option<IpAddr>,
        tls: Option<&TlsClient>,
    ) -> io::Result<Stream> {
        match (dest, tls) {
            (Dest::Unix(path), _) => Ok(Stream::Unix(UnixStream::connect(path)?)),
            (Dest::Tcp(addr), None) => Stream::connect(addr, source),
            (Dest::Tcp(addr), Some(t)) => {
                Ok(Stream::Tls(Box::new(t.wrap(tcp_connect(addr, source)?)?)))
            }
        }
    }

    /// Plain TCP: asks the kernel to stamp each received segment (`SO_TIMESTAMPNS`), so
    /// [`Stream::read_stamped`] can say when a response arrived however late the worker reads
    /// it. Other streams: nothing (their reads carry no stamp).
    #[allow(unsafe_code)]
    pub fn stamp_receives(&self) -> io::Result<()> {
        let Stream::Tcp(s) = self else {
            return Ok(());
        };
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and a c_int option of the right size.
        let rc = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(s),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                std::ptr::from_ref(&on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Reads as [`Read::read`] does; on plain TCP with [`Stream::stamp_receives`] also when
    /// the last segment read arrived (`CLOCK_REALTIME`, since the Unix epoch), else `None`.
    #[inline]
    pub fn read_stamped(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        match self {
            Stream::Tcp(s) => recv_stamped(std::os::fd::AsRawFd::as_raw_fd(s), buf),
            other => other.read(buf).map(|n| (n, None)),
        }
    }

    /// The TLS session, when this stream has one (its handshake follows the connect).
    pub fn tls_mut(&mut self) -> Option<&mut TlsStream> {
        match self {
            Stream::Tls(t) => Some(t),
            _ => None,
        }
    }
}

/// One `recvmsg` into `buf`, with room for the kernel's receive stamp (`SCM_TIMESTAMPNS`).
#[allow(unsafe_code)]
fn recv_stamped(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one timespec's control message, 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: a zeroed msghdr is a valid empty one; its pointers are set to live buffers
    // below, which outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (over `buf`) and `control`, both alive for the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled, within
    // `msg_controllen`; the stamp is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// A non-blocking TCP connect with `TCP_NODELAY`, from `source` when given.
fn tcp_connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<TcpStream> {
    let s = match source {
        None => TcpStream::connect(addr)?,
        Some(ip) => connect_from(addr, ip)?,
    };
    s.set_nodelay(true)?;
    Ok(s)
}

impl Stream {
    /// Registers the stream in a worker's poll under `token`.
    pub fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => registry.register(s, token, interest),
            Stream::Tls(t) => registry.register(t.socket_mut(), token, interest),
            Stream::Unix(s) => registry.register(s, token, interest),
        }
    }

    /// Registers the stream again with the same interests, so that data still waiting raises
    /// a new (edge-triggered) event: a connection that stopped reading before it drained its
    /// socket, to let the others have a turn, resumes on a later poll. A cold path.
    #[cold]
    pub fn rearm(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        match self {
            Stream::Tcp(s) => registry.reregister(s, token, interest),
            Stream::Tls(t) => registry.reregister(t.socket_mut(), token, interest),
            Stream::Unix(s) => registry.reregister(s, token, interest),
        }
    }

    /// `Ok(true)` once connected, `Ok(false)` while still connecting, `Err` if the connect failed.
    pub fn connect_status(&self) -> io::Result<bool> {
        match self {
            Stream::Tcp(s) => tcp_status(s),
            Stream::Tls(t) => tcp_status(t.socket()),
            Stream::Unix(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                peer_status(s.peer_addr().map(drop))
            }
        }
    }
}

impl Stream {
    /// After the peer closed the connection with no byte of an answer: whether the bytes
    /// written last were discarded by the peer's kernel rather than read by the server. The
    /// peer reset them (a reset is pending: `ECONNRESET`, or `EPIPE` after its FIN), or some
    /// are still unacknowledged in the send queue (the peer closed before they arrived; its
    /// close after reading them carries their ACK, and a close with unread data is a reset).
    /// A cold path: only a failed request on a reused connection asks.
    #[cold]
    #[allow(unsafe_code)]
    pub fn discarded_unread(&self) -> bool {
        use std::os::fd::AsRawFd;
        let (fd, pending) = match self {
            Stream::Tcp(s) => (s.as_raw_fd(), s.take_error()),
            Stream::Tls(t) => (t.socket().as_raw_fd(), t.socket().take_error()),
            Stream::Unix(s) => (s.as_raw_fd(), s.take_error()),
        };
        let reset = matches!(
            pending.ok().flatten().map(|e| e.kind()),
            Some(io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe)
        );
        let mut unacked: libc::c_int = 0;
        // SAFETY: `fd` is this stream's open socket; TIOCOUTQ (SIOCOUTQ) writes one int.
        let ok = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut unacked) } == 0;
        reset || (ok && unacked > 0)
    }
}

fn tcp_status(s: &TcpStream) -> io::Result<bool> {
    if let Some(e) = s.take_error()? {
        return Err(e);
    }
    peer_status(s.peer_addr().map(drop))
}

/// A socket with a peer is connected; "not connected" or "in progress" means still connecting.
fn peer_status(peer: io::Result<()>) -> io::Result<bool> {
    match peer {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A non-blocking connect from `source`: bind to it with port 0, then connect (`EINPROGRESS`
/// is the expected answer). Only on connect, never per request.
fn connect_from(addr: SocketAddr, source: IpAddr) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    defer_port_choice(&socket);
    socket.bind(&SocketAddr::new(source, 0).into())?;
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(socket.into()))
}

/// `IP_BIND_ADDRESS_NO_PORT`: the bind to a source address leaves the port to `connect`,
/// which picks it for the whole 4-tuple (a port in use towards another server, or in
/// TIME_WAIT, can serve again) instead of one free for every peer. Without it, bind's search
/// for a free port slows as tens of thousands are taken, and the ports of earlier runs'
/// TIME_WAIT sockets stay out of reach for a minute. Best effort: without it (an old kernel),
/// the bind picks the port as before.
#[allow(unsafe_code)]
fn defer_port_choice(socket: &Socket) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: the fd is `socket`'s, open; the option reads one int from a live local.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            std::ptr::addr_of!(one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// A blocking connect (at most `timeout`) from `source`, as the load would make it; closed at
/// once. The preflight check.
pub fn probe(addr: SocketAddr, source: Option<IpAddr>, timeout: Duration) -> io::Result<()> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(ip) = source {
        defer_port_choice(&socket);
        socket.bind(&SocketAddr::new(ip, 0).into())?;
    }
    socket.connect_timeout(&addr.into(), timeout)
}

/// Whether a socket can bind to `ip` (any port): the address is one of this host's.
pub fn bind_probe(ip: IpAddr) -> io::Result<()> {
    let domain = Domain::for_address(SocketAddr::new(ip, 0));
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.bind(&SocketAddr::new(ip, 0).into())
}

/// The source addresses new connections bind to, taken round-robin.
pub struct Sources<'a> {
    addrs: &'a [IpAddr],
    next: usize,
}

impl<'a> Sources<'a> {
    /// Round-robin over `addrs` from index `first` (workers start apart so all are used).
    pub fn new(addrs: &'a [IpAddr], first: usize) -> Self {
        Sources { addrs, next: first }
    }

    /// The address for the next connection; `None` when the OS picks.
    pub fn take(&mut self) -> Option<IpAddr> {
        if self.addrs.is_empty() {
            return None;
        }
        let ip = self.addrs[self.next % self.addrs.len()];
        self.next = self.next.wrapping_add(1);
        Some(ip)
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// One stamped read of bytes already sent (a non-blocking socket: retried for up to 5 s).
    fn read_when_ready(stream: &mut Stream, buf: &mut [u8]) -> (usize, Option<Duration>) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match stream.read_stamped(buf) {
                Ok(r) => return r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// A response read late is timed from when it arrived: the kernel's stamp, not the read.
    #[test]
    fn a_stamped_read_says_when_the_bytes_arrived_not_when_they_were_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut stream = Stream::connect(addr, None).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        stream.stamp_receives().unwrap();
        let mut buf = [0u8; 64];
        // The kernel turns receive stamping on for the whole host in deferred work once the
        // first socket asks for it, so a segment that comes right after may still have none
        // (a product read then falls back to the read's own time): wait for stamped bytes.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            server.write_all(b"x").unwrap();
            let (n, stamp) = read_when_ready(&mut stream, &mut buf);
            assert_eq!(&buf[..n], b"x");
            if stamp.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "no segment stamped in 5 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Connected once the peer accepted; the client's connect completes with it.
        let sent = Instant::now();
        server.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let (n, stamp) = read_when_ready(&mut stream, &mut buf);
        let read_at = Instant::now();
        assert_eq!(&buf[..n], b"HTTP/1.1 200 OK\r\n");
        let arrived = crate::ctx::arrival(stamp.expect("the kernel stamped the segment"));
        // It arrived after the write began and at least the 50 ms sleep before the read.
        assert!(
            arrived >= sent.checked_sub(Duration::from_millis(1)).unwrap(),
            "{:?}",
            sent.saturating_duration_since(arrived)
        );
        assert!(
            read_at.saturating_duration_since(arrived) >= Duration::from_millis(45),
            "read {:?} after it arrived",
            read_at.saturating_duration_since(arrived)
        );
    }

    /// Without `stamp_receives` (or on other streams) a read carries no stamp.
    #[test]
    fn an_unstamped_read_has_no_stamp() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut stream = Stream::connect(listener.local_addr().unwrap(), None).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server.write_all(b"x").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(read_when_ready(&mut stream, &mut buf), (1, None));
    }
}
