//! Typed classes of per-request failures. A failure is data: it is counted by class and the
//! run goes on; the exit code is decided at the end.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a request did not produce a complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The target refused the TCP connection (nothing listening, backlog full).
    ConnectRefused,
    /// The TCP connection was not established within `--connect-timeout`.
    ConnectTimeout,
    /// Any other failure to connect (network unreachable, …).
    ConnectError,
    /// The peer reset the connection (RST) while a request was outstanding.
    Reset,
    /// No complete response within `--timeout`; the connection is replaced.
    ReadTimeout,
    /// Writing the request failed (broken pipe, …).
    WriteError,
    /// Reading the response failed for a reason other than a reset.
    ReadError,
    /// The response is not valid HTTP/1.x (status line, headers, chunk sizes).
    MalformedResponse,
    /// The peer closed the connection before the response was complete.
    ClosedBeforeResponseComplete,
    /// No local address/port was free for a new connection (`EADDRNOTAVAIL`): the ephemeral
    /// ports are used up, mostly by connections in TIME_WAIT. Against a loopback target,
    /// `--source-addrs` spreads connections over more local addresses (more ports).
    AddrNotAvailable,
    /// The TLS handshake failed (certificate refused, alert, protocol error, or the peer
    /// closed the connection during it): the request was never written.
    TlsHandshake,
    /// HTTP/2: the server reset the request's stream (RST_STREAM); the reason is its code.
    H2RstStream,
    /// HTTP/2: the server sent GOAWAY and then closed the connection before this request (at
    /// or below the GOAWAY's last stream id) was answered; the reason is the GOAWAY's code.
    H2Goaway,
    /// A flow step's check failed (its status, a text in its body, a JSON value): the answer
    /// came, but not the one the flow expects (docs/flows.md).
    CheckFailed,
    /// A flow step's capture found nothing to take (no such JSON value, header or match):
    /// the flow cannot go on with an empty value, so it starts over (docs/flows.md).
    CaptureMissing,
    /// `--script`: the script's `request()` failed (a Lua error, or it returned no request):
    /// nothing was written for this request (docs/coming-from.md, "wrk scripts").
    Script,
    /// `--script`: the script's `response()` failed on a complete answer.
    ScriptResponse,
    /// HTTP/3: the server reset the request's stream (RESET_STREAM); the reason is its code.
    H3StreamReset,
    /// HTTP/3: the QUIC connection ended while the request was in flight: the server closed
    /// it (the reason is its HTTP/3 or transport code), reset it, or went quiet past the idle
    /// timeout.
    QuicClosed,
    /// `ws://` with `--ws-match FIELD` and per-request values: the message as rendered is not
    /// JSON or has no FIELD, so no answer could match it: it was not sent.
    WsUnmatchable,
}

impl ErrorKind {
    /// Every class, in the order of [`ErrorKind::index`].
    pub const ALL: [ErrorKind; 20] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::ConnectError,
        ErrorKind::Reset,
        ErrorKind::ReadTimeout,
        ErrorKind::WriteError,
        ErrorKind::ReadError,
        ErrorKind::MalformedResponse,
        ErrorKind::ClosedBeforeResponseComplete,
        ErrorKind::AddrNotAvailable,
        ErrorKind::TlsHandshake,
        ErrorKind::H2RstStream,
        ErrorKind::H2Goaway,
        ErrorKind::CheckFailed,
        ErrorKind::CaptureMissing,
        ErrorKind::Script,
        ErrorKind::ScriptResponse,
        ErrorKind::H3StreamReset,
        ErrorKind::QuicClosed,
        ErrorKind::WsUnmatchable,
    ];

    /// Dense index, for fixed-size counter arrays on the hot path.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Human wording for reports.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect refused",
            ErrorKind::ConnectTimeout => "connect timeout",
            ErrorKind::ConnectError => "connect error",
            ErrorKind::Reset => "connection reset",
            ErrorKind::ReadTimeout => "read timeout",
            ErrorKind::WriteError => "write error",
            ErrorKind::ReadError => "read error",
            ErrorKind::MalformedResponse => "malformed response",
            ErrorKind::ClosedBeforeResponseComplete => "closed before response complete",
            ErrorKind::AddrNotAvailable => {
                "local address not available (ephemeral ports exhausted: widen \
                 net.ipv4.ip_local_port_range, keep connections alive, lower the \
                 --no-keepalive rate, or for a loopback target spread the connections with \
                 --source-addrs 127.0.0.2-127.0.0.254)"
            }
            ErrorKind::TlsHandshake => "TLS handshake failed",
            ErrorKind::H2RstStream => "HTTP/2 stream reset by the server (RST_STREAM)",
            ErrorKind::H2Goaway => "HTTP/2 connection closed after GOAWAY",
            ErrorKind::CheckFailed => "a flow step's check failed",
            ErrorKind::CaptureMissing => "a flow step's capture found nothing",
            ErrorKind::Script => "the script's request() failed (nothing sent)",
            ErrorKind::ScriptResponse => "the script's response() failed",
            ErrorKind::H3StreamReset => "HTTP/3 stream reset by the server (RESET_STREAM)",
            ErrorKind::QuicClosed => "QUIC connection closed while the request was in flight",
            ErrorKind::WsUnmatchable => "a message without the --ws-match field (not sent)",
        }
    }

    /// A failure to open the connection: the request was never written, so it is not in
    /// `sent` (see the accounting identity in docs/result-schema.md).
    pub fn before_send(self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectRefused
                | ErrorKind::ConnectTimeout
                | ErrorKind::ConnectError
                | ErrorKind::AddrNotAvailable
                | ErrorKind::TlsHandshake
                | ErrorKind::Script
                | ErrorKind::WsUnmatchable
        )
    }
}

/// Counts by error class. Only classes that occurred are present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCounts(pub BTreeMap<ErrorKind, u64>);

impl ErrorCounts {
    /// Counts `n` more failures of `kind` (a zero count adds no key).
    pub fn add(&mut self, kind: ErrorKind, n: u64) {
        if n > 0 {
            *self.0.entry(kind).or_insert(0) += n;
        }
    }

    /// Failed requests, all classes together; saturates at `u64::MAX` instead of wrapping
    /// (a file read back is refused before that, see `RunResult`'s checks).
    pub fn total(&self) -> u64 {
        self.0.values().fold(0u64, |sum, &n| sum.saturating_add(n))
    }

    /// Failures of one class (0 when it did not occur).
    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0.get(&kind).copied().unwrap_or(0)
    }

    /// Failures of requests that were never written (connect classes, see
    /// [`ErrorKind::before_send`]).
    pub fn before_send(&self) -> u64 {
        self.0
            .iter()
            .filter(|(k, _)| k.before_send())
            .map(|(_, &n)| n)
            .sum()
    }

    /// Adds the other counts, class by class (union of keys).
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (&k, &n) in &other.0 {
            self.add(k, n);
        }
    }

    /// From a dense array indexed by [`ErrorKind::index`].
    pub fn from_array(counts: &[u64; ErrorKind::ALL.len()]) -> Self {
        let mut e = ErrorCounts::default();
        for kind in ErrorKind::ALL {
            e.add(kind, counts[kind.index()]);
        }
        e
    }
}

/// Responses by HTTP status code.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StatusCounts(pub BTreeMap<u16, u64>);

impl StatusCounts {
    /// Counts `n` more responses with status `code` (a zero count adds no key).
    pub fn add(&mut self, code: u16, n: u64) {
        if n > 0 {
            *self.0.entry(code).or_insert(0) += n;
        }
    }

    /// Adds the other counts, code by code (union of keys).
    pub fn merge(&mut self, other: &StatusCounts) {
        for (&k, &n) in &other.0 {
            self.add(k, n);
        }
    }

    /// Responses whose status is not 2xx or 3xx.
    pub fn non_success(&self) -> u64 {
        self.0
            .iter()
            .filter(|(&code, _)| !(200..400).contains(&code))
            .fold(0u64, |sum, (_, &n)| sum.saturating_add(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_matches_all_order() {
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
    }

    #[test]
    fn error_kinds_serialize_snake_case() {
        let mut e = ErrorCounts::default();
        e.add(ErrorKind::ClosedBeforeResponseComplete, 2);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"{"closed_before_response_complete":2}"#);
    }
}
