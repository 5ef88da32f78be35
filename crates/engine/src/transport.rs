//! The byte stream under HTTP/1.1. Plain TCP today; TLS slots in as another variant of
//! [`Stream`] without touching the connection state machine.

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use std::io::{self, Read, Write};
use std::net::SocketAddr;

/// A connection's byte stream.
pub enum Stream {
    /// Plain TCP (non-blocking, `TCP_NODELAY`).
    Tcp(TcpStream),
}

impl Stream {
    /// Starts a non-blocking connect; completion is signalled by writability.
    pub fn connect(addr: SocketAddr) -> io::Result<Stream> {
        let s = TcpStream::connect(addr)?;
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
