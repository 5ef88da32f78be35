//! The one error type of this crate. Every variant renders as a single line that names the
//! fix, because the CLI shows it to the user as is (exit code 2).

use std::io;
use std::net::SocketAddr;

/// What can go wrong when configuring or starting the reference backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// Another socket already listens on the address.
    #[error("address {0} is already in use: pick another with --listen")]
    AddrInUse(SocketAddr),
    /// The address does not belong to this host.
    #[error("address {0} is not available on this host: pick a local address with --listen")]
    AddrNotAvailable(SocketAddr),
    /// Privileged port without the privilege.
    #[error("no permission to listen on {0}: pick a port above 1023 with --listen")]
    PermissionDenied(SocketAddr),
    /// Any other failure to open the listening socket.
    #[error("cannot listen on {addr}: {cause}")]
    Listen {
        /// The address the server was asked to listen on.
        addr: SocketAddr,
        /// What the operating system answered.
        cause: io::Error,
    },
    /// A size such as `1KiB` that does not parse.
    #[error("invalid size {input:?}: {reason}")]
    InvalidSize {
        /// The text as given.
        input: String,
        /// Why it is rejected, as the shared units parser words it.
        reason: String,
    },
    /// A delay such as `200ms` or `exp:20ms` that does not parse.
    #[error("invalid delay {input:?}: {reason}")]
    InvalidDelay {
        /// The text as given.
        input: String,
        /// Why it is rejected (a bad duration, an unknown distribution, a value out of range).
        reason: String,
    },
    /// A hiccup such as `300ms/1s` (stall/period) that does not parse.
    #[error("invalid hiccup {input:?}: {reason}")]
    InvalidHiccup {
        /// The text as given.
        input: String,
        /// Why it is rejected (not `STALL/EVERY`, a bad duration, a zero or too long stall).
        reason: String,
    },
    /// A server option out of range (threads, status, fail rate, body size, concurrency,
    /// hiccup).
    #[error("invalid server option: {0}")]
    InvalidConfig(String),
    /// The TLS identity is unusable: a file that cannot be read, no certificate or key in
    /// it, or a key that does not match.
    #[error("TLS: {0}")]
    Tls(String),
    /// The Unix socket cannot be listened on.
    #[error("cannot listen on the Unix socket {path}: {cause}: pick another path with --unix")]
    Unix {
        /// The path asked for.
        path: String,
        /// What the operating system answered.
        cause: io::Error,
    },
    /// The UDP socket of HTTP/3 (beside TLS, on the TCP listener's port number) cannot be
    /// bound.
    #[error("cannot listen for HTTP/3 on UDP {addr}: {cause}: pick another port with --listen, or serve without HTTP/3 (--no-h3)")]
    H3Listen {
        /// The UDP address asked for.
        addr: SocketAddr,
        /// What the operating system answered.
        cause: io::Error,
    },
    /// The tokio runtime, its thread or the signal handlers could not be set up.
    #[error("cannot start the server runtime: {0}")]
    Runtime(io::Error),
}

impl UpstreamError {
    /// Classifies a failed `bind` so the common mistakes get their own one-line fix.
    pub(crate) fn from_bind(addr: SocketAddr, cause: io::Error) -> Self {
        match cause.kind() {
            io::ErrorKind::AddrInUse => Self::AddrInUse(addr),
            io::ErrorKind::AddrNotAvailable => Self::AddrNotAvailable(addr),
            io::ErrorKind::PermissionDenied => Self::PermissionDenied(addr),
            _ => Self::Listen { addr, cause },
        }
    }
}
