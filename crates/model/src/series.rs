//! The per-second series: what happened in each second of the measured window. Each point keeps
//! its own (compressed) latency histogram so that points from different workers or shards merge
//! exactly; p50 and p99 are derived from it.

use crate::histogram::Histo;
use serde::{Deserialize, Serialize};

/// One second of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Seconds since the start of the measured window (0 = the first second).
    pub second: u32,
    /// Responses completed in this second.
    pub requests: u64,
    /// Requests failed in this second.
    pub errors: u64,
    /// Requests sent in this second.
    pub sent: u64,
    /// Open model: requests the schedule called for in this second (the target rate); a
    /// count, so shards' targets add up exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<u64>,
    /// Bytes read for the requests completed or failed in this second.
    pub bytes_read: u64,
    /// Request bytes written in this second (each write counted when it happened).
    pub bytes_written: u64,
    /// Complete answers of this second that failed: an HTTP status outside 200–399, or a gRPC
    /// call whose `grpc-status` was not `OK` under a status in 200–399 (each once): this
    /// second's share of `Stats::failed_answers`. Absent when zero, and in files written
    /// before it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: u64,
    /// Connects begun in this second (the open model's pool growth and every reconnect; the
    /// initial pool, opened before the first second, is `stats.pool.initial`). Absent when
    /// zero, and in files written before it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connects: u64,
    /// Median latency of this second, µs (derived from `hdr`).
    pub p50_us: f64,
    /// 99th percentile latency of this second, µs (derived from `hdr`).
    pub p99_us: f64,
    /// This second's latency histogram (HdrHistogram V2 + DEFLATE, base64).
    pub hdr: String,
}

impl SeriesPoint {
    /// A point built from one second's counters and latency histogram, kept at
    /// [`Histo::per_second`] precision (values within 1%) whatever precision `hist` has.
    pub fn new(second: u32, counts: SecondCounts, hist: &Histo) -> Self {
        let hist = hist.at_per_second_precision();
        SeriesPoint {
            second,
            requests: counts.requests,
            errors: counts.errors,
            sent: counts.sent,
            target: None,
            bytes_read: counts.bytes_read,
            bytes_written: counts.bytes_written,
            failed: counts.failed,
            connects: 0,
            p50_us: hist.percentile_ns(50.0) as f64 / 1000.0,
            p99_us: hist.percentile_ns(99.0) as f64 / 1000.0,
            hdr: hist.to_base64(),
        }
    }

    /// This point's latency histogram, decoded from `hdr`; empty if it does not decode (never
    /// the case for a result read through `from_json`, which checks every point).
    pub fn histogram(&self) -> Histo {
        Histo::from_base64_per_second(&self.hdr).unwrap_or_else(|_| Histo::per_second())
    }

    fn merge(&mut self, other: &SeriesPoint) {
        let mut h = self.histogram();
        h.merge(&other.histogram());
        let counts = SecondCounts {
            requests: self.requests + other.requests,
            errors: self.errors + other.errors,
            sent: self.sent + other.sent,
            bytes_read: self.bytes_read + other.bytes_read,
            bytes_written: self.bytes_written + other.bytes_written,
            failed: self.failed + other.failed,
        };
        let target = match (self.target, other.target) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        let connects = self.connects + other.connects;
        *self = SeriesPoint::new(self.second, counts, &h);
        self.target = target;
        self.connects = connects;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The plain counters of one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SecondCounts {
    /// Responses completed in the second.
    pub requests: u64,
    /// Requests failed in the second.
    pub errors: u64,
    /// Requests sent in the second.
    pub sent: u64,
    /// Bytes read for the requests completed or failed in the second.
    pub bytes_read: u64,
    /// Request bytes written in the second.
    pub bytes_written: u64,
    /// Complete answers that failed in the second (see [`SeriesPoint::failed`]).
    pub failed: u64,
}

/// Per-second points, sorted by second, at most one per second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Series(pub Vec<SeriesPoint>);

impl Series {
    /// Merges point by point; seconds present on one side only are kept as they are.
    pub fn merge(&mut self, other: &Series) {
        let mut merged: Vec<SeriesPoint> = Vec::with_capacity(self.0.len().max(other.0.len()));
        let (mut a, mut b) = (self.0.drain(..).peekable(), other.0.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.second == y.second => {
                    let mut p = a.next().unwrap();
                    p.merge(b.next().unwrap());
                    merged.push(p);
                }
                (Some(x), Some(y)) if x.second < y.second => merged.push(a.next().unwrap()),
                (Some(_), Some(_)) | (None, Some(_)) => merged.push(b.next().unwrap().clone()),
                (Some(_), None) => merged.push(a.next().unwrap()),
                (None, None) => break,
            }
        }
        drop(a);
        self.0 = merged;
    }

    /// Moves every point `by` seconds later (a shard that started that many whole seconds
    /// after the earliest one, so that merged points stand for the same wall-clock second).
    pub fn shift(&mut self, by: u32) {
        for p in &mut self.0 {
            p.second = p.second.saturating_add(by);
        }
    }

    /// Checks every point's histogram and recomputes its derived percentiles, as for every
    /// other latency figure read back from a file.
    pub fn revalidate(&mut self) -> Result<(), crate::histogram::HistoDecodeError> {
        for p in &mut self.0 {
            let h = Histo::from_base64_per_second(&p.hdr)?;
            p.p50_us = h.percentile_ns(50.0) as f64 / 1000.0;
            p.p99_us = h.percentile_ns(99.0) as f64 / 1000.0;
        }
        Ok(())
    }

    /// Requests per second over the whole seconds of a window `elapsed_secs` long: (min, mean,
    /// stdev, max), berf style. A trailing partial second would read as a dip, so it is left
    /// out unless it is all there is.
    pub fn rate_stats(&self, elapsed_secs: f64) -> Option<crate::stats::Spread> {
        let whole = elapsed_secs.floor() as u32;
        let mut rates: Vec<f64> = self
            .0
            .iter()
            .filter(|p| p.second < whole)
            .map(|p| p.requests as f64)
            .collect();
        if rates.is_empty() {
            rates = self.0.iter().map(|p| p.requests as f64).collect();
        }
        crate::stats::Spread::of(&rates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(second: u32, requests: u64, latency_ns: u64) -> SeriesPoint {
        let mut h = Histo::new();
        for _ in 0..requests {
            h.record_ns(latency_ns);
        }
        let counts = SecondCounts {
            requests,
            ..Default::default()
        };
        SeriesPoint::new(second, counts, &h)
    }

    #[test]
    fn merge_interleaves_and_adds_by_second() {
        let mut a = Series(vec![point(0, 2, 1000), point(2, 1, 5000)]);
        let mut b = Series(vec![point(1, 3, 2000), point(2, 1, 7000)]);
        (a.0[1].connects, b.0[1].connects) = (2, 3);
        a.merge(&b);
        let seconds: Vec<u32> = a.0.iter().map(|p| p.second).collect();
        assert_eq!(seconds, vec![0, 1, 2]);
        assert_eq!(a.0[2].requests, 2);
        assert_eq!(a.0[2].connects, 5, "connects add up");
        assert_eq!(a.0[2].histogram().len(), 2);
        assert!(a.0[2].p99_us >= 6.9);
    }
}
