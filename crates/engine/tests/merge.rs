//! "Results merge by design" (DESIGN.md), at the engine's level: a run split over workers, each
//! with its own recorder, must measure exactly what one recorder fed every event would have
//! measured, whatever the split and whatever the order or grouping of the merges.

use loadbench_engine::recorder::Recorder;
use loadbench_model::{ErrorKind, Stats};
use proptest::prelude::*;
use proptest::sample::select;
use std::time::{Duration, Instant};

/// Five seconds of events, in nanoseconds after t0.
const WINDOW_NS: u64 = 5_000_000_000;
const MAX_WORKERS: usize = 4;

/// One call into a recorder, as the worker's connection loop makes it.
#[derive(Debug, Clone)]
enum Call {
    /// `latency_ns` from the intended send, `service_ns` (no longer) from the actual one.
    Response {
        latency_ns: u64,
        service_ns: u64,
        status: u16,
        bytes: u64,
    },
    /// A request sent `lag_ns` after its intended time.
    Sent {
        lag_ns: u64,
    },
    Error {
        kind: ErrorKind,
        bytes: u64,
    },
    Connected(u64),
    FirstByte(u64),
    /// A completed request's write, wait and read times.
    Phases(u64, u64, u64),
    /// A complete response's body bytes, and whether its connection was reused.
    Body(u64, bool),
    /// A failure's reason.
    Reason(loadbench_model::ErrorReason),
    /// `n` request bytes written now (a write the socket did not take at once finishes on a
    /// later loop turn; the connection passes the time of the write itself).
    Wrote {
        n: u64,
    },
    /// The worker's periodic housekeeping.
    Tick,
}

/// A call made at `at_ns` after t0 by worker `worker`.
#[derive(Debug, Clone)]
struct Event {
    at_ns: u64,
    worker: usize,
    call: Call,
}

/// Where the measured window ends, relative to the last event.
#[derive(Debug, Clone, Copy)]
enum End {
    AtLastEvent,
    NextWholeSecond,
    After(u64),
}

#[derive(Debug, Clone)]
struct Run {
    workers: usize,
    /// Open model (paced, service time and send lag apart) or closed.
    open: bool,
    events: Vec<Event>,
    abandoned: Vec<u64>,
    end: End,
    /// A permutation of the workers, for merging in another order.
    order: Vec<usize>,
}

fn offset() -> impl Strategy<Value = u64> {
    // Whole milliseconds hit second boundaries and ties between workers often.
    prop_oneof![
        (0..WINDOW_NS / 1_000_000).prop_map(|ms| ms * 1_000_000),
        0..WINDOW_NS,
    ]
}

fn call() -> impl Strategy<Value = Call> {
    let status = select(vec![200u16, 201, 204, 301, 404, 500, 503, 999]);
    let bytes = 0u64..100_000;
    let latency = 1_000u64..10_000_000_000;
    prop_oneof![
        4 => (latency.clone(), 0u64..=100, status, bytes.clone()).prop_map(
            |(latency_ns, service_pct, status, bytes)| Call::Response {
                latency_ns,
                service_ns: latency_ns / 100 * service_pct,
                status,
                bytes,
            }
        ),
        2 => lag().prop_map(|lag_ns| Call::Sent { lag_ns }),
        2 => (select(ErrorKind::ALL.to_vec()), bytes.clone())
            .prop_map(|(kind, bytes)| Call::Error { kind, bytes }),
        1 => latency.clone().prop_map(Call::Connected),
        1 => latency.clone().prop_map(Call::FirstByte),
        1 => (latency.clone(), latency.clone(), latency)
            .prop_map(|(w, a, b)| Call::Phases(w, a, b)),
        1 => (bytes.clone(), any::<bool>()).prop_map(|(n, reused)| Call::Body(n, reused)),
        1 => select(loadbench_model::ErrorReason::ALL.to_vec()).prop_map(Call::Reason),
        2 => bytes.prop_map(|n| Call::Wrote { n }),
        1 => Just(Call::Tick),
    ]
}

/// Send lags around the 1 ms after which a send counts as late.
fn lag() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        select(vec![999_999u64, 1_000_000, 1_000_001]),
        0u64..50_000_000,
    ]
}

/// Mostly a write taken at once; sometimes one finished up to 300 ms after the send.
fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        Just(End::AtLastEvent),
        Just(End::NextWholeSecond),
        (0u64..1_500_000_000).prop_map(End::After),
    ]
}

fn run() -> impl Strategy<Value = Run> {
    // No `prop_flat_map`: flat independent parts shrink to small counterexamples.
    let event = (offset(), 0..MAX_WORKERS, call()).prop_map(|(at_ns, worker, call)| Event {
        at_ns,
        worker,
        call,
    });
    (
        1..=MAX_WORKERS,
        any::<bool>(),
        prop::collection::vec(event, 0..300),
        prop::collection::vec(0u64..5, MAX_WORKERS),
        end(),
        prop::collection::vec(any::<u32>(), MAX_WORKERS),
    )
        .prop_map(|(workers, open, mut events, mut abandoned, end, keys)| {
            for e in &mut events {
                e.worker %= workers;
            }
            // Each recorder sees its calls in time order, as a worker's loop makes them.
            events.sort_by_key(|e| e.at_ns);
            abandoned.truncate(workers);
            let mut order: Vec<usize> = (0..workers).collect();
            order.sort_by_key(|&i| keys[i]);
            Run {
                workers,
                open,
                events,
                abandoned,
                end,
                order,
            }
        })
}

impl Run {
    fn end_ns(&self) -> u64 {
        let last = self.events.last().map_or(0, |e| e.at_ns);
        match self.end {
            End::AtLastEvent => last,
            End::NextWholeSecond => (last / 1_000_000_000 + 1) * 1_000_000_000,
            End::After(ns) => last + ns,
        }
    }
}

fn apply(r: &mut Recorder, t0: Instant, e: &Event) {
    let now = t0 + Duration::from_nanos(e.at_ns);
    match e.call {
        Call::Response {
            latency_ns,
            service_ns,
            status,
            bytes,
        } => {
            let latency = Duration::from_nanos(latency_ns);
            let sent = now - Duration::from_nanos(service_ns);
            r.response(now, latency, sent, status, bytes)
        }
        Call::Sent { lag_ns } => {
            // Free for the second half of its lag: that half is the generator's own delay.
            let intended = now - Duration::from_nanos(lag_ns);
            r.sent(now, intended, intended + Duration::from_nanos(lag_ns / 2));
        }
        Call::Error { kind, bytes } => r.error(now, kind, bytes),
        Call::Connected(ns) => r.connected(Duration::from_nanos(ns)),
        Call::FirstByte(ns) => r.first_byte(Duration::from_nanos(ns)),
        Call::Phases(w, a, b) => r.phases(
            Duration::from_nanos(w),
            Duration::from_nanos(a),
            Duration::from_nanos(b),
        ),
        Call::Body(n, reused) => r.body(n, reused),
        Call::Reason(reason) => r.reason(reason),
        Call::Wrote { n } => r.wrote(now, n),
        Call::Tick => r.tick(now),
    }
}

/// What one recorder fed every event measures, and what each worker's recorder measures.
fn record(run: &Run) -> (Stats, Vec<Stats>) {
    let t0 = Instant::now();
    let end = t0 + Duration::from_nanos(run.end_ns());
    let mut all = Recorder::new(t0, run.open);
    let mut parts: Vec<Recorder> = (0..run.workers)
        .map(|_| Recorder::new(t0, run.open))
        .collect();
    for e in &run.events {
        apply(&mut all, t0, e);
        apply(&mut parts[e.worker], t0, e);
    }
    let whole = all.finish(end, run.abandoned.iter().sum());
    let parts = parts
        .into_iter()
        .zip(&run.abandoned)
        .map(|(r, &a)| r.finish(end, a))
        .collect();
    (whole, parts)
}

/// Merges as the engine does: from an empty `Stats`, one part after the other.
fn merge_left<'a>(parts: impl IntoIterator<Item = &'a Stats>) -> Stats {
    let mut acc = Stats::default();
    for p in parts {
        acc.merge(p);
    }
    acc
}

/// `p0 + (p1 + (p2 + …))`: the other grouping.
fn merge_right(parts: &[Stats]) -> Stats {
    let mut acc = Stats::default();
    for p in parts.iter().rev() {
        let mut next = p.clone();
        next.merge(&acc);
        acc = next;
    }
    acc
}

/// `(p0 + p1) + (p2 + p3)`: pairs first.
fn merge_pairs(parts: &[Stats]) -> Stats {
    let pairs: Vec<Stats> = parts.chunks(2).map(merge_left).collect();
    merge_left(&pairs)
}

/// Field by field first, so that a failure names what differs; then the whole.
fn assert_same(merged: &Stats, whole: &Stats) -> Result<(), TestCaseError> {
    prop_assert_eq!(merged.elapsed_us, whole.elapsed_us);
    prop_assert_eq!(merged.requests, whole.requests);
    prop_assert_eq!(&merged.errors, &whole.errors);
    prop_assert_eq!(&merged.status, &whole.status);
    prop_assert_eq!(&merged.body, &whole.body);
    prop_assert_eq!(&merged.error_reasons, &whole.error_reasons);
    prop_assert_eq!(merged.keepalive_requests, whole.keepalive_requests);
    prop_assert_eq!(merged.bytes_read, whole.bytes_read);
    prop_assert_eq!(merged.bytes_written, whole.bytes_written);
    prop_assert_eq!(merged.connections_opened, whole.connections_opened);
    prop_assert_eq!(merged.sent, whole.sent);
    prop_assert_eq!(merged.scheduled, whole.scheduled);
    prop_assert_eq!(merged.sent_late, whole.sent_late);
    prop_assert_eq!(merged.abandoned, whole.abandoned);
    prop_assert_eq!(&merged.latency.hist, &whole.latency.hist);
    prop_assert_eq!(&merged.service.hist, &whole.service.hist);
    prop_assert_eq!(&merged.send_lag.hist, &whole.send_lag.hist);
    prop_assert_eq!(&merged.generator_delay.hist, &whole.generator_delay.hist);
    prop_assert_eq!(&merged.connect.hist, &whole.connect.hist);
    prop_assert_eq!(&merged.first_byte.hist, &whole.first_byte.hist);
    prop_assert_eq!(&merged.phases, &whole.phases);
    let seconds = |s: &Stats| s.series.0.iter().map(|p| p.second).collect::<Vec<_>>();
    prop_assert_eq!(seconds(merged), seconds(whole));
    for (m, w) in merged.series.0.iter().zip(&whole.series.0) {
        let at = m.second;
        prop_assert_eq!(m.requests, w.requests, "requests in second {}", at);
        prop_assert_eq!(m.errors, w.errors, "errors in second {}", at);
        prop_assert_eq!(m.sent, w.sent, "sent in second {}", at);
        prop_assert_eq!(m.target, w.target, "target of second {}", at);
        prop_assert_eq!(m.bytes_read, w.bytes_read, "bytes_read in second {}", at);
        prop_assert_eq!(
            m.bytes_written,
            w.bytes_written,
            "bytes_written in second {}",
            at
        );
        // The encoding is deterministic: equal strings, equal histograms.
        prop_assert_eq!(&m.hdr, &w.hdr, "histogram of second {}", at);
        prop_assert_eq!(m.p50_us, w.p50_us, "p50 of second {}", at);
        prop_assert_eq!(m.p99_us, w.p99_us, "p99 of second {}", at);
    }
    prop_assert_eq!(merged, whole);
    Ok(())
}

proptest! {
    // Counterexamples found so far are pinned as named tests in this file, so no
    // regressions file is written.
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() })]

    #[test]
    fn merged_workers_equal_one_recorder(run in run()) {
        let (whole, parts) = record(&run);
        assert_same(&merge_left(&parts), &whole)?;
    }

    #[test]
    fn merge_order_and_grouping_do_not_matter(run in run()) {
        let (_, parts) = record(&run);
        let in_order = merge_left(&parts);
        let shuffled = merge_left(run.order.iter().map(|&i| &parts[i]));
        assert_same(&shuffled, &in_order)?;
        assert_same(&merge_right(&parts), &in_order)?;
        assert_same(&merge_pairs(&parts), &in_order)?;
    }
}

/// The window is reported the same by every part and by the merge, to the microsecond.
#[test]
fn elapsed_is_the_window_not_a_sum() {
    let t0 = Instant::now();
    let end = t0 + Duration::from_micros(2_345_678);
    let parts: Vec<Stats> = (0..3)
        .map(|_| Recorder::new(t0, false).finish(end, 0))
        .collect();
    let merged = merge_left(&parts);
    assert_eq!(merged.elapsed_us, 2_345_678);
    assert_eq!(merged.series.0.len(), 3);
}

/// Bytes written in the same instant as another worker's response that opens a new second
/// belong to that second (they used to go to the writer's last rolled second).
#[test]
fn bytes_written_count_in_the_second_they_were_written() {
    let t0 = Instant::now();
    let at = t0 + Duration::from_secs(1);
    let (mut whole, mut a, mut b) = (
        Recorder::new(t0, false),
        Recorder::new(t0, false),
        Recorder::new(t0, false),
    );
    for r in [&mut whole, &mut a] {
        let d = Duration::from_micros(1);
        r.response(at, d, at - d, 200, 0);
    }
    for r in [&mut whole, &mut b] {
        r.wrote(at, 1);
    }
    let merged = merge_left(&[a.finish(at, 0), b.finish(at, 0)]);
    assert_eq!(merged, whole.finish(at, 0));
}

/// A write finished after other workers have moved to the next second, for a request sent in
/// the previous one: the split run and the single recorder must still agree.
#[test]
fn late_write_of_a_request_sent_in_an_earlier_second() {
    let t0 = Instant::now();
    let ms = |n| t0 + Duration::from_millis(n);
    let (mut whole, mut a, mut b) = (
        Recorder::new(t0, false),
        Recorder::new(t0, false),
        Recorder::new(t0, false),
    );
    for r in [&mut whole, &mut a] {
        let d = Duration::from_micros(1);
        r.response(ms(1_100), d, ms(1_100) - d, 200, 0);
    }
    // Worker b sent at 0.990 s; the socket took the last bytes at 1.200 s. The engine passes
    // the time of the write itself (conn.rs, `write_rest`), not the send time, so every
    // recorder sees its events in time order and the byte lands in second 1 everywhere.
    for r in [&mut whole, &mut b] {
        r.wrote(ms(1_200), 1);
    }
    let merged = merge_left(&[a.finish(ms(1_500), 0), b.finish(ms(1_500), 0)]);
    assert_eq!(merged, whole.finish(ms(1_500), 0));
}
