//! "Results merge by design" (DESIGN.md), at the model's level: every `merge` is associative,
//! the counters and histograms of a merge are those of the union of what was recorded, the
//! empty `Stats` is the identity, and a histogram survives its saved (base64) form unchanged.

use loadbench_model::{
    ErrorCounts, ErrorKind, GeneratorTime, Histo, Latency, PerConnection, SecondCounts, Series,
    SeriesPoint, Stats, StatusCounts,
};
use proptest::prelude::*;
use proptest::sample::select;

/// Durations in ns: mostly realistic latencies, some at the edges (0, beyond an hour).
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 1_000u64..10_000_000_000,
        2 => 1u64..2_000,
        1 => Just(0u64),
        1 => 3_000_000_000_000u64..u64::MAX,
    ]
}

fn values() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(value(), 0..40)
}

fn histo(values: &[u64]) -> Histo {
    let mut h = Histo::new();
    for &v in values {
        h.record_ns(v);
    }
    h
}

fn merged(a: &Histo, b: &Histo) -> Histo {
    let mut m = a.clone();
    m.merge(b);
    m
}

/// A point's counters and the latencies recorded in it.
#[derive(Debug, Clone)]
struct Second {
    counts: (u64, u64, u64, u64, u64),
    /// Open model: requests the schedule called for in this second.
    target: Option<u64>,
    values: Vec<u64>,
}

impl Second {
    fn counts(&self) -> SecondCounts {
        let (requests, errors, sent, bytes_read, bytes_written) = self.counts;
        SecondCounts {
            requests,
            errors,
            sent,
            bytes_read,
            bytes_written,
            // Some of the answers failed: a count of its own that must add exactly too.
            failed: requests / 3,
        }
    }

    fn point(&self, second: u32) -> SeriesPoint {
        let mut p = SeriesPoint::new(second, self.counts(), &histo(&self.values));
        p.target = self.target;
        p
    }
}

fn second() -> impl Strategy<Value = Second> {
    let n = 0u64..1_000_000;
    (
        (n.clone(), n.clone(), n.clone(), n.clone(), n),
        target(),
        prop::collection::vec(value(), 0..12),
    )
        .prop_map(|(counts, target, values)| Second {
            counts,
            target,
            values,
        })
}

/// A per-second target: the count of requests the schedule (or a shard's share of it) calls
/// for in that second.
fn target() -> impl Strategy<Value = Option<u64>> {
    prop::option::of(0u64..100_000)
}

/// Seconds 0..8, each present or not (a series is sorted, at most one point per second).
fn seconds() -> impl Strategy<Value = Vec<Option<Second>>> {
    prop::collection::vec(prop::option::of(second()), 0..8)
}

fn series(seconds: &[Option<Second>]) -> Series {
    let points = seconds
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().map(|s| s.point(i as u32)))
        .collect();
    Series(points)
}

fn merge_series(a: &Series, b: &Series) -> Series {
    let mut m = a.clone();
    m.merge(b);
    m
}

fn error_adds() -> impl Strategy<Value = Vec<(ErrorKind, u64)>> {
    prop::collection::vec((select(ErrorKind::ALL.to_vec()), 0u64..1_000), 0..20)
}

fn status_adds() -> impl Strategy<Value = Vec<(u16, u64)>> {
    let code = select(vec![100u16, 200, 204, 301, 404, 500, 503, 999]);
    prop::collection::vec((code, 0u64..1_000), 0..20)
}

fn errors_of(adds: &[(ErrorKind, u64)]) -> ErrorCounts {
    let mut e = ErrorCounts::default();
    for &(k, n) in adds {
        e.add(k, n);
    }
    e
}

/// Bodies of a few responses, sizes depending on the count so the sides differ.
fn body_of(requests: u64) -> loadbench_model::BodySizes {
    let mut b = loadbench_model::BodySizes::default();
    (0..requests % 4).for_each(|i| b.add(requests * 10 + i));
    b
}

fn status_of(adds: &[(u16, u64)]) -> StatusCounts {
    let mut s = StatusCounts::default();
    for &(k, n) in adds {
        s.add(k, n);
    }
    s
}

fn stats() -> impl Strategy<Value = Stats> {
    let n = 0u64..1_000_000_000;
    (
        (
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
        ),
        (n.clone(), prop::option::of(n.clone()), n.clone()),
        error_adds(),
        status_adds(),
        (values(), values(), values(), values(), values()),
        seconds(),
        (values(), n.clone(), per_connection()),
    )
        .prop_map(
            |(counters, open, errors, status, hists, secs, unanswered)| {
                let (
                    elapsed_us,
                    requests,
                    bytes_read,
                    bytes_written,
                    connections_opened,
                    abandoned,
                ) = counters;
                let (sent, scheduled, sent_late) = open;
                let latency = |values: &[u64]| Latency {
                    hist: histo(values),
                };
                let (censored, waiting, per_connection) = unanswered;
                Stats {
                    elapsed_us,
                    requests,
                    errors: errors_of(&errors),
                    status: status_of(&status),
                    bytes_read,
                    bytes_written,
                    connections_opened,
                    sent,
                    scheduled,
                    sent_late,
                    abandoned,
                    waiting,
                    latency: latency(&hists.0),
                    latency_censored: latency(&censored),
                    per_connection,
                    service: latency(&hists.1),
                    send_lag: latency(&hists.2),
                    connect: latency(&hists.3),
                    first_byte: latency(&hists.4),
                    series: series(&secs),
                    ..Stats::default()
                }
            },
        )
        .prop_map(with_derived_counters)
}

/// The counters derived from others in [`stats`]: the body, keep-alive reuse, stale
/// connections, connect backoff and the request phases.
fn with_derived_counters(mut s: Stats) -> Stats {
    s.body = body_of(s.requests);
    s.keepalive_requests = s.requests / 2;
    s.stale_retries = s.sent_late / 2;
    s.stale_closes = s.abandoned / 2;
    s.connect_backoffs = s.bytes_read % 7;
    s.backoff_us = s.bytes_written % 11;
    s.phases = loadbench_model::RequestPhases {
        write: s.connect.clone(),
        wait: s.first_byte.clone(),
        read: s.send_lag.clone(),
    };
    s.generator = GeneratorTime {
        worker_us: s.elapsed_us,
        cpu_us: s.bytes_read % 13,
        pool_full_us: s.waiting % 17,
    };
    s.endpoints = endpoints_of(&s);
    s
}

/// A mix of one to three requests (labels fixed by index, as every worker and shard of one
/// run has them), whose counts and histograms come from the totals: some merges meet an
/// endpoint on one side only.
fn endpoints_of(s: &Stats) -> Vec<loadbench_model::EndpointStats> {
    (0..=(s.requests % 3) as u32)
        .map(|i| loadbench_model::EndpointStats {
            index: i,
            name: None,
            method: "GET".into(),
            url: format!("http://127.0.0.1:8080/e{i}"),
            weight: i + 1,
            requests: s.requests >> i,
            errors: s.errors.clone(),
            status: s.status.clone(),
            latency: if i == 0 {
                s.latency.clone()
            } else {
                s.connect.clone()
            },
        })
        .collect()
}

/// Connections as the engine adds them at the end: completed count, age of the one in flight.
fn per_connection() -> impl Strategy<Value = PerConnection> {
    let conn = (0u64..100_000, prop::option::of(0u64..10_000_000_000));
    prop::collection::vec(conn, 0..20).prop_map(|conns| {
        let mut p = PerConnection::default();
        conns.into_iter().for_each(|(n, age)| p.add(n, age));
        p
    })
}

fn merge_stats(a: &Stats, b: &Stats) -> Stats {
    let mut m = a.clone();
    m.merge(b);
    m
}

proptest! {
    // Counterexamples found so far are pinned as named tests in this file, so no
    // regressions file is written.
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn histo_merge_is_associative_and_commutative(a in values(), b in values(), c in values()) {
        let (a, b, c) = (histo(&a), histo(&b), histo(&c));
        prop_assert_eq!(merged(&merged(&a, &b), &c), merged(&a, &merged(&b, &c)));
        prop_assert_eq!(merged(&a, &b), merged(&b, &a));
    }

    #[test]
    fn histo_merge_equals_recording_the_union(a in values(), b in values()) {
        let union: Vec<u64> = a.iter().chain(&b).copied().collect();
        let (m, u) = (merged(&histo(&a), &histo(&b)), histo(&union));
        prop_assert_eq!(m.len(), union.len() as u64);
        for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            prop_assert_eq!(m.percentile_ns(p), u.percentile_ns(p), "p{}", p);
        }
        prop_assert_eq!((m.min_ns(), m.max_ns()), (u.min_ns(), u.max_ns()));
        prop_assert_eq!(m, u);
    }

    #[test]
    fn histo_survives_base64(v in values()) {
        let h = histo(&v);
        let text = h.to_base64();
        let back = Histo::from_base64(&text).unwrap();
        prop_assert_eq!(back.to_base64(), text);
        prop_assert_eq!(back.len(), h.len());
        prop_assert_eq!((back.min_ns(), back.max_ns()), (h.min_ns(), h.max_ns()));
        prop_assert_eq!(back.percentile_ns(99.0), h.percentile_ns(99.0));
        prop_assert_eq!(back, h);
    }

    #[test]
    fn series_merge_keeps_one_sided_points_and_adds_shared_ones(
        a in seconds(),
        b in seconds(),
    ) {
        let (sa, sb) = (series(&a), series(&b));
        let m = merge_series(&sa, &sb);
        let len = a.len().max(b.len());
        let expected: Vec<u32> = (0..len)
            .filter(|&i| matches!(a.get(i), Some(Some(_))) || matches!(b.get(i), Some(Some(_))))
            .map(|i| i as u32)
            .collect();
        let got: Vec<u32> = m.0.iter().map(|p| p.second).collect();
        prop_assert_eq!(got, expected);
        for p in &m.0 {
            let i = p.second as usize;
            match (a.get(i).and_then(Option::as_ref), b.get(i).and_then(Option::as_ref)) {
                (Some(x), None) | (None, Some(x)) => prop_assert_eq!(p, &x.point(p.second)),
                (Some(x), Some(y)) => {
                    let (cx, cy) = (x.counts(), y.counts());
                    prop_assert_eq!(p.requests, cx.requests + cy.requests);
                    prop_assert_eq!(p.errors, cx.errors + cy.errors);
                    prop_assert_eq!(p.sent, cx.sent + cy.sent);
                    prop_assert_eq!(p.bytes_read, cx.bytes_read + cy.bytes_read);
                    prop_assert_eq!(p.bytes_written, cx.bytes_written + cy.bytes_written);
                    let union: Vec<u64> = x.values.iter().chain(&y.values).copied().collect();
                    // Series points keep per-second precision (2 significant digits).
                    let expected = histo(&union).at_per_second_precision().into_owned();
                    prop_assert_eq!(p.histogram(), expected);
                }
                (None, None) => prop_assert!(false, "second {} came from nowhere", i),
            }
        }
    }

    #[test]
    fn merged_series_percentiles_are_those_of_the_union(x in second(), y in second()) {
        let mut m = Series(vec![x.point(3)]);
        m.merge(&Series(vec![y.point(3)]));
        let union: Vec<u64> = x.values.iter().chain(&y.values).copied().collect();
        // Series points keep per-second precision (2 significant digits).
        let u = histo(&union).at_per_second_precision().into_owned();
        let p = &m.0[0];
        prop_assert_eq!(p.p50_us, u.percentile_ns(50.0) as f64 / 1000.0);
        prop_assert_eq!(p.p99_us, u.percentile_ns(99.0) as f64 / 1000.0);
        let counts = SecondCounts {
            requests: x.counts().requests + y.counts().requests,
            errors: x.counts().errors + y.counts().errors,
            sent: x.counts().sent + y.counts().sent,
            bytes_read: x.counts().bytes_read + y.counts().bytes_read,
            bytes_written: x.counts().bytes_written + y.counts().bytes_written,
            failed: x.counts().failed + y.counts().failed,
        };
        let mut expected = SeriesPoint::new(3, counts, &u);
        expected.target = match (x.target, y.target) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        prop_assert_eq!(p, &expected);
    }

    #[test]
    fn series_merge_is_associative_and_commutative(
        a in seconds(),
        b in seconds(),
        c in seconds(),
    ) {
        let (a, b, c) = (series(&a), series(&b), series(&c));
        prop_assert_eq!(
            merge_series(&merge_series(&a, &b), &c),
            merge_series(&a, &merge_series(&b, &c))
        );
        prop_assert_eq!(merge_series(&a, &b), merge_series(&b, &a));
    }

    /// The same second from three shards, each with its share of the schedule's target.
    #[test]
    fn shared_second_merge_is_associative(x in second(), y in second(), z in second()) {
        let one = |s: &Second| Series(vec![s.point(0)]);
        let (a, b, c) = (one(&x), one(&y), one(&z));
        prop_assert_eq!(
            merge_series(&merge_series(&a, &b), &c),
            merge_series(&a, &merge_series(&b, &c))
        );
    }

    #[test]
    fn error_and_status_counts_merge_as_the_union(
        ea in error_adds(), eb in error_adds(), ec in error_adds(),
        sa in status_adds(), sb in status_adds(), sc in status_adds(),
    ) {
        let (a, b, c) = (errors_of(&ea), errors_of(&eb), errors_of(&ec));
        let mut m = a.clone();
        m.merge(&b);
        let all: Vec<_> = ea.iter().chain(&eb).copied().collect();
        prop_assert_eq!(&m, &errors_of(&all));
        prop_assert!(m.0.values().all(|&n| n > 0), "zero counts are not kept");
        let mut bc = b.clone();
        bc.merge(&c);
        let mut a_bc = a.clone();
        a_bc.merge(&bc);
        m.merge(&c);
        prop_assert_eq!(m, a_bc);

        let (a, b, c) = (status_of(&sa), status_of(&sb), status_of(&sc));
        let mut m = a.clone();
        m.merge(&b);
        let all: Vec<_> = sa.iter().chain(&sb).copied().collect();
        prop_assert_eq!(&m, &status_of(&all));
        prop_assert!(m.0.values().all(|&n| n > 0), "zero counts are not kept");
        let mut bc = b.clone();
        bc.merge(&c);
        let mut a_bc = a.clone();
        a_bc.merge(&bc);
        m.merge(&c);
        prop_assert_eq!(m, a_bc);
    }

    #[test]
    fn per_connection_merge_equals_adding_every_connection_to_one(
        a in prop::collection::vec((0u64..100_000, prop::option::of(0u64..1_000_000)), 0..30),
        b in prop::collection::vec((0u64..100_000, prop::option::of(0u64..1_000_000)), 0..30),
    ) {
        let of = |conns: &[(u64, Option<u64>)]| {
            let mut p = PerConnection::default();
            conns.iter().for_each(|&(n, age)| p.add(n, age));
            p
        };
        let mut m = of(&a);
        m.merge(&of(&b));
        let union: Vec<_> = a.iter().chain(&b).copied().collect();
        let whole = of(&union);
        prop_assert_eq!((m.min(), m.median(), m.max()), (whole.min(), whole.median(), whole.max()));
        prop_assert_eq!(m, whole);
    }

    #[test]
    fn endpoint_counts_and_histograms_merge_as_the_union(a in stats(), b in stats()) {
        let m = merge_stats(&a, &b);
        for e in &m.endpoints {
            let side = |s: &Stats| s.endpoints.iter().find(|x| x.index == e.index).cloned();
            let (x, y) = (side(&a).unwrap_or_default(), side(&b).unwrap_or_default());
            prop_assert_eq!(e.requests, x.requests + y.requests);
            prop_assert_eq!(e.errors.total(), x.errors.total() + y.errors.total());
            prop_assert_eq!(&e.latency.hist, &merged(&x.latency.hist, &y.latency.hist));
            prop_assert_eq!(e.url.as_str(), format!("http://127.0.0.1:8080/e{}", e.index));
        }
        prop_assert_eq!(m.endpoints.len(), a.endpoints.len().max(b.endpoints.len()));
    }

    #[test]
    fn empty_stats_is_the_identity(s in stats()) {
        prop_assert_eq!(merge_stats(&Stats::default(), &s), s.clone());
        prop_assert_eq!(merge_stats(&s, &Stats::default()), s);
    }

    #[test]
    fn stats_merge_is_associative_and_commutative(a in stats(), b in stats(), c in stats()) {
        prop_assert_eq!(
            merge_stats(&merge_stats(&a, &b), &c),
            merge_stats(&a, &merge_stats(&b, &c))
        );
        prop_assert_eq!(merge_stats(&a, &b), merge_stats(&b, &a));
    }
}

/// Regression: per-second targets were `f64`s added on merge, and float addition is not
/// associative (0.1 + 0.2 + 0.3); they are now request counts.
#[test]
fn per_second_targets_merge_associatively() {
    let point = |target| {
        let mut p = SeriesPoint::new(0, SecondCounts::default(), &Histo::new());
        p.target = Some(target);
        Series(vec![p])
    };
    let (a, b, c) = (point(1), point(2), point(3));
    assert_eq!(
        merge_series(&merge_series(&a, &b), &c),
        merge_series(&a, &merge_series(&b, &c))
    );
}
