//! How a WebSocket run's connections went (`ws://` URLs, docs/transport.md): upgrades
//! completed, pings answered, and the close frames the server sent, by close code. Each
//! message's round trip is a request of the ordinary figures (latency, `requests`, errors).
//! `--ws-idle` connections, upgraded and then silent, are counted apart ([`WsIdle`]).

use crate::ErrorKind;
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
    /// `--ws-match`: whole data messages received that were not an answer (a server's
    /// pushes, broadcasts, answers to nothing: no message in flight had their id).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unmatched: u64,
    /// `--ws-match`: the payload bytes of the unmatched messages (not in `body`, which holds
    /// the answers' alone).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unmatched_bytes: u64,
    /// `--ws-match`: of the unmatched messages, those over 64 KiB: not kept, so never read
    /// for their id (an answer that long is never matched: its message times out).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unmatched_too_large: u64,
    /// `--ws-idle`: the idle connections, counted apart from the active ones above.
    #[serde(default, skip_serializing_if = "WsIdle::is_empty")]
    pub idle: WsIdle,
}

/// `--ws-idle N`: connections opened beside the active ones that upgrade, then send nothing
/// until the run ends (pings answered), each tried once. None of their figures is in the
/// active connections' (no upgrade, ping, close, request or error of theirs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WsIdle {
    /// Idle connections asked for.
    #[serde(default)]
    pub requested: u64,
    /// Opened: the server answered the upgrade (101 with the right key).
    #[serde(default)]
    pub opened: u64,
    /// Failed to open (connect, TLS handshake or upgrade), by error class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<ErrorKind, u64>,
    /// Opened, then closed by the server before the run ended, by close code (1006: the
    /// connection ended without a close frame).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub closed_early: BTreeMap<u16, u64>,
    /// Still open when the run ended (then closed with code 1000).
    #[serde(default)]
    pub held: u64,
    /// Still connecting or upgrading when the run ended.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unopened: u64,
    /// Pings the server sent on them, each answered with a pong.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pings: u64,
}

impl WsIdle {
    /// No `--ws-idle`.
    pub fn is_empty(&self) -> bool {
        *self == WsIdle::default()
    }

    /// Counts add.
    pub fn merge(&mut self, o: &WsIdle) {
        self.requested += o.requested;
        self.opened += o.opened;
        add_counts(&mut self.failed, &o.failed);
        add_counts(&mut self.closed_early, &o.closed_early);
        self.held += o.held;
        self.unopened += o.unopened;
        self.pings += o.pings;
    }

    /// Failed to open, every class.
    pub fn failures(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Closed by the server early, every code.
    pub fn closed(&self) -> u64 {
        self.closed_early.values().sum()
    }

    /// `50 requested: 48 opened, 2 failed to open (connect refused ×2), 1 closed early by
    /// the server (1001 ×1), 47 held to the end` for a report.
    pub fn text(&self) -> String {
        let failed = self
            .failed
            .iter()
            .map(|(k, n)| format!("{} ×{n}", k.describe()))
            .collect::<Vec<_>>()
            .join(", ");
        let closed = self
            .closed_early
            .iter()
            .map(|(c, n)| format!("{c} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let paren = |s: String| {
            if s.is_empty() {
                s
            } else {
                format!(" ({s})")
            }
        };
        let mut text = format!(
            "{} requested: {} opened, {} failed to open{}, {} closed early by the server{}, {} held to the end",
            self.requested,
            self.opened,
            self.failures(),
            paren(failed),
            self.closed(),
            paren(closed),
            self.held
        );
        if self.unopened > 0 {
            text.push_str(&format!(", {} still opening at the end", self.unopened));
        }
        text
    }
}

fn add_counts<K: Ord + Copy>(into: &mut BTreeMap<K, u64>, from: &BTreeMap<K, u64>) {
    for (k, n) in from {
        *into.entry(*k).or_default() += n;
    }
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
        add_counts(&mut self.close_codes, &o.close_codes);
        self.unmatched += o.unmatched;
        self.unmatched_bytes += o.unmatched_bytes;
        self.unmatched_too_large += o.unmatched_too_large;
        self.idle.merge(&o.idle);
    }

    /// `--ws-match FIELD`: `answers matched by JSON field id; 12 unmatched messages (570
    /// bytes), 1 over 64 KiB (not read)` for a report.
    pub fn match_text(&self, field: &str) -> String {
        let mut text = format!(
            "answers matched by JSON field {field}; {} unmatched messages ({} bytes)",
            self.unmatched, self.unmatched_bytes
        );
        if self.unmatched_too_large > 0 {
            text.push_str(&format!(
                ", {} over 64 KiB (not read)",
                self.unmatched_too_large
            ));
        }
        text
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

    #[test]
    fn unmatched_messages_merge_exactly() {
        let a = WsStats {
            upgrades: 2,
            unmatched: 5,
            unmatched_bytes: 500,
            unmatched_too_large: 1,
            ..WsStats::default()
        };
        let b = WsStats {
            unmatched: 7,
            unmatched_bytes: 70,
            ..WsStats::default()
        };
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba, "the order of workers or shards does not matter");
        assert_eq!(
            (ab.unmatched, ab.unmatched_bytes, ab.unmatched_too_large),
            (12, 570, 1)
        );
        let json = serde_json::to_string(&ab).unwrap();
        assert!(json.contains("\"unmatched\":12"), "{json}");
        assert_eq!(serde_json::from_str::<WsStats>(&json).unwrap(), ab);
        assert!(
            !serde_json::to_string(&WsStats::default())
                .unwrap()
                .contains("unmatched"),
            "absent without --ws-match"
        );
        assert_eq!(
            ab.match_text("id"),
            "answers matched by JSON field id; 12 unmatched messages (570 bytes), 1 over 64 KiB (not read)"
        );
    }

    #[test]
    fn idle_connections_are_counted_apart_and_merge() {
        let mut a = WsStats::default();
        a.idle.requested = 3;
        a.idle.opened = 2;
        a.idle.held = 1;
        a.idle.failed.insert(ErrorKind::ConnectRefused, 1);
        a.idle.closed_early.insert(1001, 1);
        let b = a.clone();
        a.merge(&b);
        assert_eq!((a.upgrades, a.closes()), (0, 0), "not the active ones'");
        assert_eq!(
            a.idle.text(),
            "6 requested: 4 opened, 2 failed to open (connect refused ×2), 2 closed early by the server (1001 ×2), 2 held to the end"
        );
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains("\"connect_refused\":2"), "{json}");
        assert_eq!(serde_json::from_str::<WsStats>(&json).unwrap(), a);
    }
}
