//! How a WebSocket run's connections went (`ws://` URLs, docs/transport.md): upgrades
//! completed, pings answered, and the close frames the server sent, by close code. Each
//! message's round trip is a request of the ordinary figures (latency, `requests`, errors).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A WebSocket run's own counts; empty (and absent from the JSON) for HTTP runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WsStats {
    /// Connections upgraded (the server answered the handshake with 101 and the right
    /// `Sec-WebSocket-Accept`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub upgrades: u64,
    /// Pings the server sent, each answered with a pong.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pings: u64,
    /// Close frames the server sent, by close code (1005: a close frame without a code).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub close_codes: BTreeMap<u16, u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl WsStats {
    /// Nothing recorded (an HTTP run).
    pub fn is_empty(&self) -> bool {
        *self == WsStats::default()
    }

    /// Counts add.
    pub fn merge(&mut self, o: &WsStats) {
        self.upgrades += o.upgrades;
        self.pings += o.pings;
        for (code, n) in &o.close_codes {
            *self.close_codes.entry(*code).or_default() += n;
        }
    }

    /// Close frames received, all codes.
    pub fn closes(&self) -> u64 {
        self.close_codes.values().sum()
    }

    /// `1000 ×3, 4000 ×1`, the close codes for a report; `None` when no close came.
    pub fn close_text(&self) -> Option<String> {
        if self.close_codes.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .close_codes
            .iter()
            .map(|(code, n)| format!("{code} ×{n}"))
            .collect();
        Some(parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_reads_back_from_old_files() {
        let mut a = WsStats::default();
        a.close_codes.insert(1000, 2);
        let mut b = WsStats {
            upgrades: 3,
            pings: 1,
            ..WsStats::default()
        };
        b.close_codes.insert(1000, 1);
        b.close_codes.insert(4000, 1);
        a.merge(&b);
        assert_eq!((a.upgrades, a.pings, a.closes()), (3, 1, 4));
        assert_eq!(a.close_text().unwrap(), "1000 ×3, 4000 ×1");
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<WsStats>(&json).unwrap(), a);
        assert!(serde_json::from_str::<WsStats>("{}").unwrap().is_empty());
    }
}
