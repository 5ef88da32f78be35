//! Merging measurements, on measurements built from arbitrary bytes: the merge must never
//! panic, must be commutative and associative, must keep every count, and its result must
//! survive the JSON round trip (the path shards and rounds take).
//!
//! Speed matters here (ten million executions is the bar): every histogram the merge touches is
//! DEFLATE-encoded, so the inputs are kept small where that costs no coverage. Each second's
//! histogram holds at most three values from a small range, a side has at most three points
//! within the first nine seconds (so sides overlap often), and a point's encoded histogram is
//! built once per distinct set of values (a bounded cache: encoding is not what is tested).
//! The merge itself always runs on the real code; the associativity check (three more merges)
//! runs on one input in four and the JSON round trip on one in eight, chosen by the first byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadbench_model::{
    ErrorCounts, ErrorKind, Histo, SecondCounts, Series, SeriesPoint, StatusCounts,
};
use std::cell::RefCell;
use std::collections::HashMap;

/// Reads little-endian numbers off the input, zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u64(&mut self) -> u64 {
        let n = self.0.len().min(8);
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(head);
        u64::from_le_bytes(b)
    }

    fn byte(&mut self) -> u8 {
        let Some((&first, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        first
    }

    fn small(&mut self, below: u64) -> u64 {
        if below <= 256 {
            u64::from(self.byte()) % below
        } else {
            self.u64() % below
        }
    }
}

/// The parts of a measurement whose merge is loadbench's own code (counts by class and status,
/// the per-second series); whole [`Stats`] values are too large (seven full histograms) for a
/// fuzzer to try millions of, and their field-by-field sum is covered by the merge proptests.
#[derive(Clone, Debug, PartialEq)]
struct Parts {
    errors: ErrorCounts,
    status: StatusCounts,
    series: Series,
}

/// A latency from a small range: 1–256 steps of 1 ns, 1 µs, 1 ms or 1 s (so both ends of the
/// histogram's range are reached while its encoded form stays short).
fn latency(b: &mut Bytes) -> u64 {
    let unit = [1, 1_000, 1_000_000, 1_000_000_000][b.small(4) as usize];
    (1 + b.small(256)) * unit
}

thread_local! {
    static POINTS: RefCell<HashMap<Vec<u64>, SeriesPoint>> = RefCell::new(HashMap::new());
}

/// A point at `second` with these counts and a histogram of `values`, built by
/// [`SeriesPoint::new`] (once per distinct `values`; the cache is bounded).
fn point(second: u32, counts: SecondCounts, values: Vec<u64>) -> SeriesPoint {
    let mut p = POINTS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() > 4096 {
            cache.clear();
        }
        let built = cache.entry(values).or_insert_with_key(|values| {
            let mut h = Histo::per_second();
            values.iter().for_each(|&ns| h.record_ns(ns));
            SeriesPoint::new(0, SecondCounts::default(), &h)
        });
        built.clone()
    });
    p.second = second;
    (p.requests, p.errors, p.sent) = (counts.requests, counts.errors, counts.sent);
    (p.bytes_read, p.bytes_written) = (counts.bytes_read, counts.bytes_written);
    p
}

fn series(b: &mut Bytes) -> Series {
    let mut points = Vec::new();
    let mut second = 0u32;
    for _ in 0..b.small(4) {
        second += b.small(3) as u32;
        let values = (0..b.small(4)).map(|_| latency(b)).collect();
        let counts = SecondCounts {
            requests: b.small(1 << 20),
            errors: b.small(1 << 20),
            sent: b.small(1 << 20),
            ..SecondCounts::default()
        };
        let mut p = point(second, counts, values);
        if b.small(4) == 0 {
            p.target = Some(b.small(1 << 20));
        }
        points.push(p);
        second += 1;
    }
    Series(points)
}

fn parts(b: &mut Bytes) -> Parts {
    let mut errors = ErrorCounts::default();
    for _ in 0..b.small(4) {
        let kind = ErrorKind::ALL[b.small(ErrorKind::ALL.len() as u64) as usize];
        errors.add(kind, b.small(1 << 20));
    }
    let mut status = StatusCounts::default();
    for _ in 0..b.small(4) {
        status.add(100 + b.small(900) as u16, b.small(1 << 20));
    }
    let series = series(b);
    Parts {
        errors,
        status,
        series,
    }
}

fn merged(a: &Parts, b: &Parts) -> Parts {
    let mut m = a.clone();
    m.errors.merge(&b.errors);
    m.status.merge(&b.status);
    m.series.merge(&b.series);
    m
}

fn sum(s: &Series, f: fn(&SeriesPoint) -> u64) -> u64 {
    s.0.iter().map(f).sum()
}

fn latencies(s: &Series) -> u64 {
    s.0.iter().map(|p| p.histogram().len()).sum()
}

/// Every count of `ab` is the sum of `a`'s and `b`'s, and its points are one per second.
fn check_counts(ab: &Parts, a: &Parts, b: &Parts) {
    assert_eq!(ab.errors.total(), a.errors.total() + b.errors.total());
    let counts: [fn(&SeriesPoint) -> u64; 3] = [|p| p.requests, |p| p.errors, |p| p.sent];
    for f in counts {
        assert_eq!(sum(&ab.series, f), sum(&a.series, f) + sum(&b.series, f));
    }
    let target = |p: &SeriesPoint| p.target.unwrap_or(0);
    assert_eq!(
        sum(&ab.series, target),
        sum(&a.series, target) + sum(&b.series, target)
    );
    assert_eq!(
        latencies(&ab.series),
        latencies(&a.series) + latencies(&b.series)
    );
    let seconds: Vec<u32> = ab.series.0.iter().map(|p| p.second).collect();
    assert!(
        seconds.windows(2).all(|w| w[0] < w[1]),
        "one point per second, in order"
    );
}

fn check_round_trip(s: &Series) {
    let json = serde_json::to_string(s).expect("a merged series serializes");
    let mut back: Series = serde_json::from_str(&json).expect("a merged series reads back");
    back.revalidate().expect("every merged histogram decodes");
    let hdrs = |s: &Series| {
        s.0.iter()
            .map(|p| (p.second, p.hdr.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(hdrs(&back), hdrs(s), "the JSON round trip keeps the series");
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let checks = bytes.byte();
    let (a, b) = (parts(&mut bytes), parts(&mut bytes));
    let ab = merged(&a, &b);
    assert_eq!(ab, merged(&b, &a), "merge is commutative");
    check_counts(&ab, &a, &b);
    if checks % 4 == 0 {
        let c = parts(&mut bytes);
        assert_eq!(
            merged(&ab, &c),
            merged(&a, &merged(&b, &c)),
            "merge is associative"
        );
    }
    if checks % 8 == 1 {
        check_round_trip(&ab.series);
    }
});
