//! Latency histograms: an HDR histogram in nanoseconds that serializes as HdrHistogram V2 +
//! DEFLATE in base64, so that saved results can be merged exactly later (per worker, per round,
//! per shard). Derived figures (min, mean, percentiles, …) are written beside it for readers, and
//! always recomputed from the histogram when a result is read back.

use base64::Engine as _;
use std::io::Write as _;

use flate2::write::ZlibEncoder;
use flate2::Compression;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lowest value tracked: 1 ns.
const LOWEST_NS: u64 = 1;
/// Highest value tracked: one hour. Larger values are clamped to it.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Where HdrHistogram's V2 header holds the highest trackable value (big-endian u64): after
/// the cookie, the payload length, the normalizing offset, the digits and the lowest value.
const V2_HIGHEST_AT: std::ops::Range<usize> = 24..32;
/// The cookie of HdrHistogram's V2 DEFLATE-compressed form.
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// Significant decimal digits kept at every magnitude.
const SIGFIG: u8 = 3;
/// Significant digits of the per-second histograms of a series: values within 1%. A second's
/// p50/p99 need no more, and each second's encoded histogram is then about a tenth of the size,
/// so a long run's memory (one histogram per worker per second) stays nearly flat.
const SECOND_SIGFIG: u8 = 2;

/// The percentiles written into JSON beside every latency histogram.
pub const STANDARD_PERCENTILES: [f64; 9] =
    [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// An HDR histogram of durations in nanoseconds (1 ns to 1 h, 3 significant digits).
///
/// Its counts (up to about 264 KiB at 3 digits, growing with the largest value) are allocated
/// by the first value recorded or merged in, not by [`Histo::new`]: a run keeps about ten
/// histograms per worker, and the ones that never get a value (send lag in the closed model, a TLS phase of a plain run, the merge's
/// starting point) cost nothing. An empty histogram reads, compares and serializes exactly as
/// an allocated one with no values.
#[derive(Clone)]
pub struct Histo {
    counts: Option<Histogram<u64>>,
    sigfig: u8,
}

impl PartialEq for Histo {
    fn eq(&self, other: &Histo) -> bool {
        match (&self.counts, &other.counts) {
            // HdrHistogram compares the first one's counts by index, so the shorter goes first:
            // two histograms grown to different sizes are equal when their values are.
            (Some(a), Some(b)) if a.distinct_values() <= b.distinct_values() => a == b,
            (Some(a), Some(b)) => b == a,
            (Some(h), None) | (None, Some(h)) => h.is_empty() && self.sigfig == other.sigfig,
            (None, None) => self.sigfig == other.sigfig,
        }
    }
}

impl std::fmt::Debug for Histo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Histo(count={}, max={}ns)", self.len(), self.max_ns())
    }
}

impl Default for Histo {
    fn default() -> Self {
        Self::new()
    }
}

/// A histogram could not be decoded from its saved form.
#[derive(Debug, thiserror::Error)]
#[error("invalid latency histogram in result: {0}")]
pub struct HistoDecodeError(String);

/// The counts of an empty histogram with these digits (what an unallocated [`Histo`] reads as).
///
/// They grow with the largest value recorded (HdrHistogram's auto-resize, up to one hour, as
/// values are clamped there): counts for 1 ns to 1 h are about 264 KiB at 3 digits, all written
/// when allocated, where a run whose latencies stay under 100 ms needs about 150 KiB and one
/// under 1 ms about 80 KiB. The bucket layout, and so every value and percentile, is the same at
/// any size, and [`Histo::to_base64`] writes the same text whatever size the counts reached.
fn empty_counts(sigfig: u8) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(LOWEST_NS, 2 * LOWEST_NS, sigfig)
        .expect("constant histogram bounds are valid");
    h.auto(true);
    h
}

impl Histo {
    /// An empty histogram with the fixed bounds (1 ns to 1 h, 3 significant digits).
    pub fn new() -> Self {
        Self::with_sigfig(SIGFIG)
    }

    /// An empty histogram for one second of a series: the same bounds with 2 significant
    /// digits (values within 1%), which keeps a long run's per-second series small.
    pub fn per_second() -> Self {
        Self::with_sigfig(SECOND_SIGFIG)
    }

    /// This histogram at [`Histo::per_second`] precision: itself if it already is, else a
    /// copy with every count re-recorded (each value moves by under 1%).
    pub fn at_per_second_precision(&self) -> std::borrow::Cow<'_, Histo> {
        if self.sigfig == SECOND_SIGFIG {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut h = Histo::per_second();
        h.merge(self);
        std::borrow::Cow::Owned(h)
    }

    fn with_sigfig(sigfig: u8) -> Self {
        Histo {
            counts: None,
            sigfig,
        }
    }

    /// The counts, allocated on first use (once per histogram, never per value).
    #[inline]
    fn counts_mut(&mut self) -> &mut Histogram<u64> {
        if self.counts.is_none() {
            self.allocate();
        }
        self.counts.as_mut().expect("allocated above")
    }

    #[cold]
    #[inline(never)]
    fn allocate(&mut self) {
        self.counts = Some(empty_counts(self.sigfig));
    }

    /// Records one duration; values beyond one hour are clamped so nothing is ever dropped.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        // Clamped here, so the counts grow at most to one hour: recording cannot fail.
        let _grown = self.counts_mut().record(ns.clamp(LOWEST_NS, HIGHEST_NS));
    }

    /// Records one duration `n` times (clamped as [`Histo::record_ns`]).
    pub fn record_ns_n(&mut self, ns: u64, n: u64) {
        let _grown = self
            .counts_mut()
            .record_n(ns.clamp(LOWEST_NS, HIGHEST_NS), n);
    }

    /// Adds every count of `other` to this histogram (the associative merge).
    pub fn merge(&mut self, other: &Histo) {
        match &other.counts {
            Some(o) if !o.is_empty() => self
                .counts_mut()
                .add(o)
                .expect("histograms with the same bounds always add"),
            _ => {}
        }
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.counts.as_ref().map_or(0, Histogram::len)
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every value recorded, keeping the bounds (and the counts' memory, if any).
    pub fn reset(&mut self) {
        if let Some(h) = &mut self.counts {
            h.reset();
        }
    }

    /// The allocated counts of a histogram with values; `None` when empty.
    fn recorded(&self) -> Option<&Histogram<u64>> {
        self.counts.as_ref().filter(|h| !h.is_empty())
    }

    /// Lowest value recorded, ns (0 when empty).
    pub fn min_ns(&self) -> u64 {
        self.recorded().map_or(0, Histogram::min)
    }

    /// Highest value recorded (the top of its bucket), ns; 0 when empty.
    pub fn max_ns(&self) -> u64 {
        self.recorded().map_or(0, Histogram::max)
    }

    /// Mean of the values recorded, ns.
    pub fn mean_ns(&self) -> f64 {
        self.recorded().map_or(0.0, Histogram::mean)
    }

    /// Population standard deviation of the values recorded, ns.
    pub fn stdev_ns(&self) -> f64 {
        self.recorded().map_or(0.0, Histogram::stdev)
    }

    /// The value at percentile `p` (0–100), in nanoseconds.
    pub fn percentile_ns(&self, p: f64) -> u64 {
        self.recorded().map_or(0, |h| h.value_at_percentile(p))
    }

    /// `(upper_bound_ns, count)` of every recorded bucket (for histograms and spectra).
    pub fn recorded_buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.recorded().into_iter().flat_map(|h| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
        })
    }

    /// The underlying HdrHistogram (for the interval log writer): an empty one when nothing
    /// was recorded.
    pub(crate) fn inner(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        match &self.counts {
            Some(h) => std::borrow::Cow::Borrowed(h),
            None => std::borrow::Cow::Owned(empty_counts(self.sigfig)),
        }
    }

    /// HdrHistogram V2 + DEFLATE, base64: the interchange form other HDR tools read too.
    ///
    /// The header's highest trackable value is always one hour, the bound every `Histo`
    /// tracks, whatever size its counts have grown to: the saved form depends on the values
    /// alone (merging in any order saves the same text), and is the one earlier versions wrote.
    pub fn to_base64(&self) -> String {
        let mut plain = Vec::new();
        V2Serializer::new()
            .serialize(&self.inner(), &mut plain)
            .expect("serializing into memory cannot fail");
        plain[V2_HIGHEST_AT].copy_from_slice(&HIGHEST_NS.to_be_bytes());
        let mut bytes = Vec::with_capacity(plain.len() / 2 + 16);
        bytes.extend_from_slice(&V2_DEFLATE_COOKIE.to_be_bytes());
        bytes.extend_from_slice(&[0; 4]);
        let mut zlib = ZlibEncoder::new(&mut bytes, Compression::default());
        zlib.write_all(&plain)
            .and_then(|()| zlib.finish().map(drop))
            .expect("compressing into memory cannot fail");
        let compressed = u32::try_from(bytes.len() - 8).expect("a histogram is far under 4 GiB");
        bytes[4..8].copy_from_slice(&compressed.to_be_bytes());
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Decodes the form [`Histo::to_base64`] writes (any HdrHistogram V2 + DEFLATE in base64);
    /// values are re-recorded into this crate's bounds.
    pub fn from_base64(text: &str) -> Result<Histo, HistoDecodeError> {
        Self::decode_into(text, Histo::new())
    }

    /// Decodes like [`Histo::from_base64`] into a [`Histo::per_second`] histogram (a series
    /// point's).
    pub fn from_base64_per_second(text: &str) -> Result<Histo, HistoDecodeError> {
        Self::decode_into(text, Histo::per_second())
    }

    fn decode_into(text: &str, mut h: Histo) -> Result<Histo, HistoDecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| HistoDecodeError(e.to_string()))?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistoDecodeError(format!("{e:?}")))?;
        if !decoded.is_empty() {
            h.counts_mut()
                .add(&decoded)
                .map_err(|e| HistoDecodeError(format!("{e:?}")))?;
        }
        Ok(h)
    }

    /// The derived figures, in microseconds, for the given percentiles.
    pub fn summary(&self, percentiles: &[f64]) -> LatencySummary {
        LatencySummary {
            count: self.len(),
            min_us: ns_to_us(self.min_ns() as f64),
            mean_us: ns_to_us(self.mean_ns()),
            stdev_us: ns_to_us(self.stdev_ns()),
            max_us: ns_to_us(self.max_ns() as f64),
            percentiles: percentiles
                .iter()
                .map(|&p| Percentile {
                    p,
                    us: ns_to_us(self.percentile_ns(p) as f64),
                })
                .collect(),
        }
    }
}

/// Nanoseconds to microseconds, kept to the nanosecond.
fn ns_to_us(ns: f64) -> f64 {
    (ns).round() / 1000.0
}

impl Serialize for Histo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for Histo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Histo::from_base64(&text).map_err(serde::de::Error::custom)
    }
}

/// One percentile of a latency distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// Percentile, 0–100.
    pub p: f64,
    /// Its value in microseconds.
    pub us: f64,
}

/// Figures derived from a histogram; informative only, never read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Lowest value, µs (0.0 when `count` is 0).
    pub min_us: f64,
    /// Mean, µs (0.0 when `count` is 0).
    pub mean_us: f64,
    /// Standard deviation, µs (0.0 when `count` is 0).
    pub stdev_us: f64,
    /// Highest value, µs (0.0 when `count` is 0).
    pub max_us: f64,
    /// Values at the requested percentiles, µs (in JSON always [`STANDARD_PERCENTILES`]).
    pub percentiles: Vec<Percentile>,
}

/// A latency distribution as saved: derived figures for readers plus the histogram itself
/// (`hdr`), from which everything is recomputed on load.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Latency {
    /// The histogram, ns; written as `hdr` beside the derived figures and the only part read back.
    pub hist: Histo,
}

#[derive(Serialize)]
struct LatencyOut<'a> {
    #[serde(flatten)]
    summary: LatencySummary,
    hdr: &'a Histo,
}

#[derive(Deserialize)]
struct LatencyIn {
    hdr: Histo,
}

impl Latency {
    /// Adds the other distribution's counts to this one (exact, same bounds everywhere).
    pub fn merge(&mut self, other: &Latency) {
        self.hist.merge(&other.hist);
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }
}

impl Serialize for Latency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        LatencyOut {
            summary: self.hist.summary(&STANDARD_PERCENTILES),
            hdr: &self.hist,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = LatencyIn::deserialize(d)?;
        Ok(Latency { hist: raw.hdr })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_base64() {
        let mut h = Histo::new();
        for v in [1_000, 25_000, 25_001, 1_000_000, 9_000_000_000] {
            h.record_ns(v);
        }
        let back = Histo::from_base64(&h.to_base64()).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), 5);
    }

    #[test]
    fn clamps_values_beyond_an_hour_instead_of_dropping_them() {
        let mut h = Histo::new();
        h.record_ns(u64::MAX);
        h.record_ns(0);
        assert_eq!(h.len(), 2);
        assert!(h.max_ns() >= HIGHEST_NS);
    }

    #[test]
    fn rejects_garbage_with_an_error() {
        assert!(Histo::from_base64("not base64!").is_err());
        assert!(Histo::from_base64("AAAA").is_err());
    }

    #[test]
    fn latency_json_recomputes_derived_figures() {
        let mut l = Latency::default();
        l.hist.record_ns(2_000_000);
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["count"], 1);
        assert!((json["max_us"].as_f64().unwrap() - 2000.0).abs() < 2.0);
        let back: Latency = serde_json::from_value(json).unwrap();
        assert_eq!(back, l);
    }

    /// The counts of an empty histogram, allocated: what every `Histo` was before the counts
    /// became lazy.
    fn allocated_empty() -> Histo {
        let mut h = Histo::new();
        h.record_ns(1_000);
        h.reset();
        assert!(h.counts.is_some());
        h
    }

    #[test]
    fn an_unallocated_histogram_reads_saves_and_compares_as_an_empty_one() {
        let (lazy, eager) = (Histo::new(), allocated_empty());
        assert!(lazy.counts.is_none(), "new() allocates nothing");
        assert_eq!(lazy, eager);
        assert_eq!(eager, lazy);
        assert_ne!(
            lazy,
            Histo::per_second(),
            "the digits still tell them apart"
        );
        assert_eq!(lazy.to_base64(), eager.to_base64());
        assert_eq!(
            lazy.summary(&STANDARD_PERCENTILES),
            eager.summary(&STANDARD_PERCENTILES)
        );
        assert_eq!(lazy.recorded_buckets().count(), 0);
        let back = Histo::from_base64(&lazy.to_base64()).unwrap();
        assert!(
            back.counts.is_none(),
            "an empty saved histogram stays unallocated"
        );
        assert_eq!(back, lazy);
    }

    #[test]
    fn merging_empty_histograms_allocates_nothing_and_merges_as_before() {
        let mut lazy = Histo::new();
        lazy.merge(&Histo::new());
        lazy.merge(&allocated_empty());
        assert!(lazy.counts.is_none());
        let mut full = Histo::new();
        [3_000, 40_000, 5_000_000]
            .iter()
            .for_each(|&v| full.record_ns(v));
        let mut from_lazy = Histo::new();
        from_lazy.merge(&full);
        let mut from_eager = allocated_empty();
        from_eager.merge(&full);
        assert_eq!(from_lazy, from_eager);
        assert_eq!(from_lazy.to_base64(), from_eager.to_base64());
        assert_eq!(
            from_lazy.summary(&STANDARD_PERCENTILES),
            full.summary(&STANDARD_PERCENTILES)
        );
        let mut into_full = full.clone();
        into_full.merge(&Histo::new());
        assert_eq!(into_full, full);
    }

    /// A wide second as a loaded target gives it: 100,000 pseudo-random latencies from 50 µs
    /// to about 50 ms, denser at the low end.
    fn wide_second(mut h: Histo) -> Histo {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let spread = 1u64 << (x % 20);
            h.record_ns(50_000 + (x >> 20) % (spread * 48));
        }
        h
    }

    #[test]
    fn a_per_second_histogram_is_far_smaller_and_within_one_percent() {
        let fine = wide_second(Histo::new());
        let coarse = wide_second(Histo::per_second());
        let (fine_len, coarse_len) = (fine.to_base64().len(), coarse.to_base64().len());
        assert!(
            coarse_len * 4 < fine_len,
            "per-second {coarse_len} B vs full {fine_len} B"
        );
        assert_eq!(coarse.len(), fine.len());
        for p in [50.0, 90.0, 99.0, 99.9] {
            let (f, c) = (fine.percentile_ns(p) as f64, coarse.percentile_ns(p) as f64);
            assert!((c - f).abs() <= f * 0.01, "p{p}: {c} vs {f}");
        }
    }

    #[test]
    fn per_second_precision_is_kept_through_a_round_trip_and_a_conversion() {
        let coarse = wide_second(Histo::per_second());
        let back = Histo::from_base64_per_second(&coarse.to_base64()).unwrap();
        assert_eq!(back, coarse);
        let converted = wide_second(Histo::new())
            .at_per_second_precision()
            .into_owned();
        assert_eq!(converted.len(), coarse.len());
        assert_eq!(converted.to_base64().len(), coarse.to_base64().len());
    }

    /// What every `Histo` was before its counts grew with the values: fixed at one hour.
    fn full_range(values: &[u64], sigfig: u8) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, sigfig).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    fn old_base64(h: &Histogram<u64>) -> String {
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(h, &mut bytes)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn counts_grow_with_the_largest_value_and_save_as_the_full_range_did() {
        for sigfig in [SIGFIG, SECOND_SIGFIG] {
            let full = full_range(&[], sigfig).distinct_values();
            let mut h = Histo::with_sigfig(sigfig);
            let fast = [61_000, 58_500, 1_200_000, 75_321];
            for v in fast {
                h.record_ns(v);
            }
            let small = h.counts.as_ref().unwrap().distinct_values();
            assert!(
                small * 2 < full,
                "{small} counts for values under 2 ms, {full} for 1 h"
            );
            assert_eq!(h.to_base64(), old_base64(&full_range(&fast, sigfig)));
            // A value of an hour grows the counts to the full range; the saved form still
            // matches, and so do the figures read back.
            h.record_ns(HIGHEST_NS + 5);
            let all = [61_000, 58_500, 1_200_000, 75_321, HIGHEST_NS];
            assert_eq!(h.counts.as_ref().unwrap().distinct_values(), full);
            assert_eq!(h.to_base64(), old_base64(&full_range(&all, sigfig)));
            let back = Histo::decode_into(&h.to_base64(), Histo::with_sigfig(sigfig)).unwrap();
            assert_eq!(back, h);
            assert_eq!(back.percentile_ns(50.0), h.percentile_ns(50.0));
        }
        // Empty, allocated or not: the old form of an empty histogram.
        assert_eq!(
            Histo::new().to_base64(),
            old_base64(&full_range(&[], SIGFIG))
        );
        assert_eq!(
            allocated_empty().to_base64(),
            old_base64(&full_range(&[], SIGFIG))
        );
    }

    #[test]
    fn histograms_grown_apart_compare_and_merge_by_their_values() {
        let mut big = Histo::new();
        big.record_ns(3_000_000_000);
        let mut small = Histo::new();
        small.record_ns(70_000);
        // Merged in either order: equal, with every value, whichever grew first.
        let mut a = big.clone();
        a.merge(&small);
        let mut b = small.clone();
        b.merge(&big);
        assert_eq!(a, b);
        assert_eq!(b, a);
        assert_eq!(a.to_base64(), b.to_base64());
        assert_eq!(a.len(), 2);
        assert!(a.min_ns().abs_diff(70_000) <= 70, "{}", a.min_ns());
        assert!(
            a.max_ns().abs_diff(3_000_000_000) <= 3_000_000,
            "{}",
            a.max_ns()
        );
        // A small histogram never equals a bigger one that holds more.
        assert_ne!(small, a);
        assert_ne!(a, small);
    }
}
