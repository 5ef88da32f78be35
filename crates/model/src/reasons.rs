//! Why requests failed, one level below the error class: which malformation made a response
//! unreadable (a bad status line, a head over 64 KiB, a bad chunk size, …). A fixed enum of
//! reasons with a counter each, so memory stays bounded however many errors a run sees, and
//! counts merge exactly across workers, rounds and shards (docs/reliability.md, "Error reasons").

use crate::errors::ErrorKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A reason under one [`ErrorKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    /// Malformed: the status line is not `HTTP/1.x <3-digit code> [reason]`.
    BadStatusLine,
    /// Malformed: a header line without a colon or name, or folded.
    BadHeaderLine,
    /// Malformed: a Content-Length that is not a number or overflows.
    BadContentLength,
    /// Malformed: Content-Length values that disagree.
    ConflictingContentLength,
    /// Malformed: a chunk-size line that is not hex digits, overflows or is over 64 KiB.
    BadChunkSize,
    /// Malformed: chunk data not followed by its line end.
    BadChunkFraming,
    /// Malformed: the header (or trailer) block is over 64 KiB.
    #[serde(rename = "head_over_64_kib")]
    HeadOver64KiB,
}

impl ErrorReason {
    /// Every reason, in the order of [`ErrorReason::index`].
    pub const ALL: [ErrorReason; 7] = [
        ErrorReason::BadStatusLine,
        ErrorReason::BadHeaderLine,
        ErrorReason::BadContentLength,
        ErrorReason::ConflictingContentLength,
        ErrorReason::BadChunkSize,
        ErrorReason::BadChunkFraming,
        ErrorReason::HeadOver64KiB,
    ];

    /// Dense index, for a fixed-size counter array in the engine.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The error class this reason explains.
    pub fn kind(self) -> ErrorKind {
        ErrorKind::MalformedResponse
    }

    /// Human wording for reports.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorReason::BadStatusLine => "bad status line",
            ErrorReason::BadHeaderLine => "header line without colon",
            ErrorReason::BadContentLength => "bad Content-Length",
            ErrorReason::ConflictingContentLength => "conflicting Content-Length",
            ErrorReason::BadChunkSize => "bad chunk size",
            ErrorReason::BadChunkFraming => "bad chunk framing",
            ErrorReason::HeadOver64KiB => "head over 64 KiB",
        }
    }
}

/// Counts by reason. Only reasons that occurred are present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorReasons(pub BTreeMap<ErrorReason, u64>);

impl ErrorReasons {
    /// Counts `n` more of `reason` (a zero count adds no key).
    pub fn add(&mut self, reason: ErrorReason, n: u64) {
        if n > 0 {
            *self.0.entry(reason).or_insert(0) += n;
        }
    }

    /// Adds the other counts, reason by reason.
    pub fn merge(&mut self, other: &ErrorReasons) {
        other.0.iter().for_each(|(&r, &n)| self.add(r, n));
    }

    /// From a dense array indexed by [`ErrorReason::index`].
    pub fn from_array(counts: &[u64; ErrorReason::ALL.len()]) -> Self {
        let mut out = ErrorReasons::default();
        ErrorReason::ALL
            .iter()
            .for_each(|&r| out.add(r, counts[r.index()]));
        out
    }

    /// The reasons under `kind`, most frequent first: `bad chunk size 118, head over 64 KiB 2`;
    /// `None` when none was counted.
    pub fn describe(&self, kind: ErrorKind) -> Option<String> {
        let mut of: Vec<(ErrorReason, u64)> = self
            .0
            .iter()
            .filter(|(r, _)| r.kind() == kind)
            .map(|(&r, &n)| (r, n))
            .collect();
        of.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let parts: Vec<String> = of
            .iter()
            .map(|(r, n)| format!("{} {n}", r.describe()))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_merge_and_read_most_frequent_first() {
        let mut counts = [0u64; ErrorReason::ALL.len()];
        counts[ErrorReason::HeadOver64KiB.index()] = 2;
        counts[ErrorReason::BadChunkSize.index()] = 100;
        let mut a = ErrorReasons::from_array(&counts);
        let mut b = ErrorReasons::default();
        b.add(ErrorReason::BadChunkSize, 18);
        a.merge(&b);
        assert_eq!(
            a.describe(ErrorKind::MalformedResponse).as_deref(),
            Some("bad chunk size 118, head over 64 KiB 2")
        );
        assert_eq!(a.describe(ErrorKind::ReadTimeout), None);
        assert_eq!(a.0.len(), 2, "no entry for reasons that did not occur");
    }
}
