//! HTTP/2 in the result: the protocol each connection spoke, and how a run's streams went
//! (the most in flight on one connection, the servers' stream limit, GOAWAYs and the requests
//! they sent back to a new connection). Both are absent from HTTP/1.1 results, so files written
//! before HTTP/2 existed read the same.

use serde::{Deserialize, Serialize};

/// Connections by the protocol they spoke, counted once each when it was settled (after the
/// TLS handshake's ALPN, or the h2c preface). An HTTP/1.1 run leaves this empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolCounts {
    /// Connections that spoke HTTP/1.1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub h1: u64,
    /// Connections that spoke HTTP/2 (h2 over TLS, or h2c with prior knowledge).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub h2: u64,
    /// Connections that spoke HTTP/3 (h3 over QUIC).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub h3: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero32(n: &u32) -> bool {
    *n == 0
}

impl ProtocolCounts {
    /// Nothing counted (an HTTP/1.1 run, or a file from before HTTP/2).
    pub fn is_empty(&self) -> bool {
        self.h1 == 0 && self.h2 == 0 && self.h3 == 0
    }

    /// Counts add.
    pub fn merge(&mut self, o: &ProtocolCounts) {
        self.h1 += o.h1;
        self.h2 += o.h2;
        self.h3 += o.h3;
    }
}

/// How an HTTP/2 run's streams went. Its `goaway_retries` are a term of the accounting
/// identity (docs/result-schema.md): each refused send is in `sent`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Stats {
    /// The most streams in flight at once on one connection (at most `--streams`, and at most
    /// the server's `SETTINGS_MAX_CONCURRENT_STREAMS`).
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub max_streams_in_flight: u32,
    /// The lowest `SETTINGS_MAX_CONCURRENT_STREAMS` a server announced (absent: none did).
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub server_max_streams: u32,
    /// GOAWAY frames received.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub goaways: u64,
    /// Requests on streams above a GOAWAY's last stream id: never processed by the server, so
    /// sent again on a new connection (not errors; their first send is taken back from `sent`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub goaway_retries: u64,
    /// Connections on which the server announced `SETTINGS_MAX_CONCURRENT_STREAMS` 0 (no
    /// request can go until it raises it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zero_streams: u64,
}

impl H2Stats {
    /// Nothing recorded (an HTTP/1.1 run).
    pub fn is_empty(&self) -> bool {
        *self == H2Stats::default()
    }

    /// Counts add, the maximum is the larger, the server's limit the lower one announced.
    pub fn merge(&mut self, o: &H2Stats) {
        self.max_streams_in_flight = self.max_streams_in_flight.max(o.max_streams_in_flight);
        self.server_max_streams = match (self.server_max_streams, o.server_max_streams) {
            (0, b) => b,
            (a, 0) => a,
            (a, b) => a.min(b),
        };
        self.goaways += o.goaways;
        self.goaway_retries += o.goaway_retries;
        self.zero_streams += o.zero_streams;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_keep_the_extremes_and_add_counts() {
        let mut a = H2Stats {
            max_streams_in_flight: 2,
            server_max_streams: 0,
            goaways: 1,
            goaway_retries: 3,
            zero_streams: 1,
        };
        a.merge(&H2Stats {
            max_streams_in_flight: 1,
            server_max_streams: 100,
            goaways: 2,
            goaway_retries: 0,
            zero_streams: 0,
        });
        assert_eq!(a.max_streams_in_flight, 2);
        assert_eq!(a.server_max_streams, 100);
        assert_eq!((a.goaways, a.goaway_retries, a.zero_streams), (3, 3, 1));
        let mut p = ProtocolCounts {
            h1: 0,
            h2: 2,
            h3: 0,
        };
        p.merge(&ProtocolCounts {
            h1: 0,
            h2: 3,
            h3: 1,
        });
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"h2":5,"h3":1}"#);
        assert!(H2Stats::default().is_empty() && ProtocolCounts::default().is_empty());
    }
}
