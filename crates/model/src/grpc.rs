//! How a gRPC run's calls ended (`grpc://` URLs, docs/transport.md): the calls counted by
//! their `grpc-status`, by the code's name. Each call is also a request of the ordinary
//! figures (latency, `requests`, HTTP status), whatever its gRPC status.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The gRPC status codes' names, by code (0 to 16).
pub const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// What the calls' counts are kept under when their `grpc-status` is not a code 0 to 16.
pub const GRPC_OTHER: &str = "OTHER";

/// A gRPC run's own counts; empty (and absent from the JSON) for other runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcStats {
    /// Calls answered with a `grpc-status`, by the code's name (`OK`, `NOT_FOUND`, …;
    /// `OTHER` for a value that is no code of the protocol).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls: BTreeMap<String, u64>,
    /// Answers that ended without a `grpc-status` (not a gRPC server, or a proxy's own
    /// answer): their HTTP status is in the ordinary figures.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub no_status: u64,
    /// Response messages received whole in the answered calls: one per `OK` unary call, every
    /// message of a server-streaming call's stream.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub messages: u64,
    /// Calls that failed by gRPC (a non-`OK` `grpc-status`, or none at all, which a gRPC
    /// client takes as an error) though their HTTP status was 200–399: with the HTTP
    /// statuses outside 200–399 they make the run's failed answers, each call counted once.
    /// `None` in files written before it (there every non-`OK` call counts, see
    /// [`GrpcStats::failed_beyond_http`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_http_ok: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A code's name: `NOT_FOUND` for 5, [`GRPC_OTHER`] beyond 16.
pub fn grpc_code_name(code: u16) -> &'static str {
    GRPC_CODES
        .get(usize::from(code))
        .copied()
        .unwrap_or(GRPC_OTHER)
}

impl GrpcStats {
    /// Calls answered with a `grpc-status` other than `OK` (`OTHER` included): failed calls,
    /// whatever their HTTP status. An answer without a `grpc-status` is judged by its HTTP
    /// status alone.
    pub fn failed(&self) -> u64 {
        self.calls
            .iter()
            .filter(|(name, _)| name.as_str() != "OK")
            .fold(0u64, |sum, (_, &n)| sum.saturating_add(n))
    }

    /// Nothing recorded (not a gRPC run).
    pub fn is_empty(&self) -> bool {
        *self == GrpcStats::default()
    }

    /// From a worker's tally: `codes[c]` calls ended with code `c` (the last entry: any other
    /// value), `no_status` without one.
    pub fn from_tally(codes: &[u64; 18], no_status: u64) -> GrpcStats {
        GrpcStats::from_counts(codes, no_status, None)
    }

    /// [`GrpcStats::from_tally`], with the calls that failed by gRPC under an HTTP status of
    /// 200–399 (see [`GrpcStats::failed_http_ok`]).
    pub fn from_counts(
        codes: &[u64; 18],
        no_status: u64,
        failed_http_ok: Option<u64>,
    ) -> GrpcStats {
        let calls = codes
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| (grpc_code_name(c as u16).to_string(), *n))
            .collect();
        GrpcStats {
            calls,
            no_status,
            messages: 0,
            failed_http_ok,
        }
    }

    /// The failed calls not already counted by an HTTP status outside 200–399:
    /// [`GrpcStats::failed_http_ok`], or, for a file written before it, every non-`OK` call.
    pub fn failed_beyond_http(&self) -> u64 {
        self.failed_http_ok.unwrap_or_else(|| self.failed())
    }

    /// Counts add.
    pub fn merge(&mut self, o: &GrpcStats) {
        // Before the calls add (a file without the field counts its own non-OK calls).
        if self.failed_http_ok.is_some() || o.failed_http_ok.is_some() {
            let sum = self.failed_beyond_http() + o.failed_beyond_http();
            self.failed_http_ok = Some(sum);
        }
        for (name, n) in &o.calls {
            *self.calls.entry(name.clone()).or_default() += n;
        }
        self.no_status += o.no_status;
        self.messages += o.messages;
    }

    /// Calls answered (with a `grpc-status` or without).
    pub fn answered(&self) -> u64 {
        self.calls.values().sum::<u64>() + self.no_status
    }

    /// Response messages per answered call (0 without answers).
    pub fn messages_per_call(&self) -> f64 {
        match self.answered() {
            0 => 0.0,
            n => self.messages as f64 / n as f64,
        }
    }

    /// Calls counted under `name` (`OK`, `NOT_FOUND`, …).
    pub fn count(&self, name: &str) -> u64 {
        self.calls.get(name).copied().unwrap_or(0)
    }

    /// `OK 120, NOT_FOUND 3`, codes in their protocol order (`OTHER` last), then the answers
    /// without a status; `None` when nothing was counted.
    pub fn text(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = GRPC_CODES
            .iter()
            .chain(std::iter::once(&GRPC_OTHER))
            .filter_map(|name| self.calls.get(*name).map(|n| format!("{name} {n}")))
            .collect();
        if self.no_status > 0 {
            parts.push(format!("no grpc-status {}", self.no_status));
        }
        Some(parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Non-OK calls are failed answers beside the HTTP statuses outside 200–399; an answer
    /// without a grpc-status is judged by its HTTP status only.
    #[test]
    fn non_ok_calls_are_failed_answers_in_the_summary() {
        let mut codes = [0u64; 18];
        codes[0] = 7;
        codes[5] = 2;
        codes[14] = 3;
        codes[17] = 1;
        let mut s = crate::Stats {
            grpc: GrpcStats::from_tally(&codes, 4),
            ..crate::Stats::default()
        };
        assert_eq!(s.grpc.failed(), 6);
        s.status.0.insert(200, 13);
        s.status.0.insert(502, 4);
        assert_eq!(s.failed_answers(), 10);
        assert_eq!(s.summary().non_success_responses, 10);
        assert_eq!(crate::Stats::default().failed_answers(), 0);
    }

    /// Counted once: a proxy's 503 that also carries UNAVAILABLE is one failed answer, and a
    /// 200 without a grpc-status is one too (gRPC clients take it as an error).
    #[test]
    fn each_failed_call_counts_once_whether_http_or_grpc_says_so() {
        let mut codes = [0u64; 18];
        codes[0] = 5;
        codes[14] = 3;
        // Of the 3 UNAVAILABLE, 2 came with a 503; 1 answer had no status under a 200.
        let mut s = crate::Stats {
            grpc: GrpcStats::from_counts(&codes, 2, Some(2)),
            ..crate::Stats::default()
        };
        s.status.0.insert(200, 7);
        s.status.0.insert(503, 3);
        // 503 ×3 (two UNAVAILABLE, one without a status) + 1 UNAVAILABLE under 200 + 1
        // without a status under 200.
        assert_eq!(s.failed_answers(), 5);
        let mut other = s.grpc.clone();
        other.merge(&s.grpc);
        assert_eq!(other.failed_http_ok, Some(4));
        // A file from before the field: every non-OK call counts, as it did.
        let old = GrpcStats::from_tally(&codes, 2);
        assert_eq!(old.failed_beyond_http(), 3);
        let mut mixed = old.clone();
        mixed.merge(&s.grpc);
        assert_eq!(mixed.failed_http_ok, Some(5));
    }

    #[test]
    fn tallies_merge_by_name_and_read_back_from_old_files() {
        let mut codes = [0u64; 18];
        codes[0] = 7;
        codes[5] = 2;
        codes[17] = 1;
        let mut a = GrpcStats::from_tally(&codes, 0);
        a.messages = 30;
        let mut b = [0u64; 18];
        b[0] = 3;
        b[14] = 1;
        let mut b = GrpcStats::from_tally(&b, 2);
        b.messages = 12;
        a.merge(&b);
        // 42 messages in the 16 calls answered (with a status or without).
        assert_eq!((a.messages, a.answered()), (42, 16));
        assert!((a.messages_per_call() - 42.0 / 16.0).abs() < 1e-9);
        assert_eq!(GrpcStats::default().messages_per_call(), 0.0);
        assert_eq!(
            (a.count("OK"), a.count("NOT_FOUND"), a.count("UNAVAILABLE")),
            (10, 2, 1)
        );
        assert_eq!(
            a.text().unwrap(),
            "OK 10, NOT_FOUND 2, UNAVAILABLE 1, OTHER 1, no grpc-status 2"
        );
        assert_eq!(grpc_code_name(4), "DEADLINE_EXCEEDED");
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<GrpcStats>(&json).unwrap(), a);
        assert!(serde_json::from_str::<GrpcStats>("{}").unwrap().is_empty());
        assert_eq!(GrpcStats::default().text(), None);
    }
}
