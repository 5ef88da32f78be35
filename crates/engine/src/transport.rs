//! The byte stream under HTTP/1.1. Plain TCP today; TLS slots in as another variant of
//! [`Stream`] without touching the connection state machine.

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// A connection's byte stream.
pub enum Stream {
    /// Plain TCP (non-blocking, `TCP_NODELAY`).
    Tcp(TcpStream),
}

impl Stream {
    /// Starts a non-blocking connect, from `source` (port 0: any free one) when given;
    /// completion is signalled by writability.
    pub fn connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<Stream> {
        let s = match source {
            None => TcpStream::connect(addr)?,
            Some(ip) => connect_from(addr, ip)?,
        };
        s.set_nodelay(true)?;
        Ok(Stream::Tcp(s))
    }

    /// Registers the stream in a worker's poll under `token`.
    pub fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => registry.register(s, token, interest),
        }
    }

    /// `Ok(true)` once connected, `Ok(false)` while still connecting, `Err` if the connect failed.
    pub fn connect_status(&self) -> io::Result<bool> {
        match self {
            Stream::Tcp(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// A non-blocking connect from `source`: bind to it with port 0, then connect (`EINPROGRESS`
/// is the expected answer). Only on connect, never per request.
fn connect_from(addr: SocketAddr, source: IpAddr) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.bind(&SocketAddr::new(source, 0).into())?;
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(socket.into()))
}

/// A blocking connect (at most `timeout`) from `source`, as the load would make it; closed at
/// once. The preflight check.
pub fn probe(addr: SocketAddr, source: Option<IpAddr>, timeout: Duration) -> io::Result<()> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(ip) = source {
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
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
