//! Merging measurements, on measurements built from arbitrary bytes: the merge must never
//! panic, must be commutative and associative, must keep every count, and its result must
//! survive the JSON round trip (the path shards and rounds take).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadbench_model::{
    ErrorCounts, ErrorKind, Histo, SecondCounts, Series, SeriesPoint, StatusCounts,
};

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

    fn small(&mut self, below: u64) -> u64 {
        self.u64() % below
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
    let mut points = Vec::new();
    let mut second = 0u32;
    for _ in 0..b.small(5) {
        second += 1 + b.small(3) as u32;
        let mut h = Histo::per_second();
        for _ in 0..b.small(4) {
            h.record_ns(b.u64());
        }
        let counts = SecondCounts {
            requests: b.small(1 << 20),
            errors: b.small(1 << 20),
            ..SecondCounts::default()
        };
        points.push(SeriesPoint::new(second, counts, &h));
    }
    Parts {
        errors,
        status,
        series: Series(points),
    }
}

fn merged(a: &Parts, b: &Parts) -> Parts {
    let mut m = a.clone();
    m.errors.merge(&b.errors);
    m.status.merge(&b.status);
    m.series.merge(&b.series);
    m
}

fn requests(s: &Series) -> u64 {
    s.0.iter().map(|p| p.requests).sum()
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let (a, b, c) = (parts(&mut bytes), parts(&mut bytes), parts(&mut bytes));
    let ab = merged(&a, &b);
    assert_eq!(ab, merged(&b, &a), "merge is commutative");
    assert_eq!(merged(&ab, &c), merged(&a, &merged(&b, &c)), "merge is associative");
    assert_eq!(ab.errors.total(), a.errors.total() + b.errors.total());
    assert_eq!(requests(&ab.series), requests(&a.series) + requests(&b.series));
    let seconds: Vec<u32> = ab.series.0.iter().map(|p| p.second).collect();
    assert!(seconds.windows(2).all(|w| w[0] < w[1]), "one point per second, in order");
    let json = serde_json::to_string(&ab.series).expect("a merged series serializes");
    let mut back: Series = serde_json::from_str(&json).expect("a merged series reads back");
    back.revalidate().expect("every merged histogram decodes");
    let hdrs = |s: &Series| s.0.iter().map(|p| (p.second, p.hdr.clone())).collect::<Vec<_>>();
    assert_eq!(hdrs(&back), hdrs(&ab.series), "the JSON round trip keeps the series");
});
