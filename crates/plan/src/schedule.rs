//! Rate schedules of the open model: a fixed rate, a linear ramp, or stages, as piecewise
//! linear segments. The schedule answers one question exactly: *when is request k due?* —
//! the first instant at which the cumulative count of scheduled requests exceeds k. Every
//! worker takes every T-th index, so the total rate is exact for any rate, even below the
//! number of workers. A shard's schedule ([`Schedule::shard`]) is the whole one striped: its
//! request k is the whole schedule's request `k·N + I`, due when that one is.

use crate::{PlanError, Shard};
use loadbench_model::RateSegment;
use loadbench_units as units;
use std::time::Duration;

/// The highest rate, requests per second of the whole load, the engine schedules: 10 million.
/// The pacer walks the schedule one request at a time (each request gets its own due instant
/// and, at the end, each one due but never sent is accounted for), about 100 ns of a core per
/// request: above 10M/s walking the schedule alone cannot keep up with the clock, and a run
/// would spend longer accounting for its unsent requests than it ran. Rates above it are
/// refused before the load starts ([`check_max_rate`]).
pub const MAX_RATE: f64 = 10_000_000.0;

/// Refuses a schedule whose rate anywhere (a shard's share of it) is above [`MAX_RATE`] (or
/// not a number); `what` names the setting in the message (`--rate`, `rate`).
pub fn check_max_rate(schedule: &Schedule, what: &str) -> Result<(), PlanError> {
    match rate_over_max(schedule) {
        None => Ok(()),
        Some(r) => Err(crate::invalid(format!(
            "{what} {r} req/s {RATE_LIMIT_WHY}: give 10M or less, and spread a higher load \
             over several generators (--shard)"
        ))),
    }
}

/// Why a rate above [`MAX_RATE`] is refused, for messages: "… req/s {RATE_LIMIT_WHY}".
pub const RATE_LIMIT_WHY: &str = "is above the 10,000,000 req/s (10M) the engine can schedule \
    (its pacer spends about 100 ns per request, so it cannot keep up with the clock above that)";

/// The first rate of `schedule` (a shard's share of it) above [`MAX_RATE`] or not a number.
pub fn rate_over_max(schedule: &Schedule) -> Option<f64> {
    // A shard schedules its share of the whole load's rates.
    let shards = f64::from(schedule.shard.total());
    schedule
        .segments
        .iter()
        .flat_map(|s| [s.from, s.to])
        .find(|r| r.is_nan() || *r / shards > MAX_RATE)
}

/// One piece of a schedule: the rate goes linearly from `from` to `to` req/s over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// How long the segment lasts.
    pub duration: Duration,
    /// Rate at the segment's start, requests per second.
    pub from: f64,
    /// Rate at the segment's end, requests per second.
    pub to: f64,
}

impl Segment {
    fn secs(&self) -> f64 {
        self.duration.as_secs_f64()
    }

    /// Requests scheduled in the first `s` seconds of this segment.
    fn count(&self, s: f64) -> f64 {
        let t = self.secs();
        if t == 0.0 {
            return 0.0;
        }
        let s = s.clamp(0.0, t);
        self.from * s + (self.to - self.from) * s * s / (2.0 * t)
    }

    fn total(&self) -> f64 {
        self.count(self.secs())
    }

    /// The offset into this segment at which `x` requests (0 ≤ x < total) have been scheduled.
    fn time_of(&self, x: f64) -> f64 {
        let t = self.secs();
        let slope = (self.to - self.from) / t;
        let disc = (self.from * self.from + 2.0 * slope * x).max(0.0);
        let s = 2.0 * x / (self.from + disc.sqrt());
        if s.is_finite() {
            s.clamp(0.0, t)
        } else {
            0.0
        }
    }

    /// The target rate `s` seconds into this segment.
    fn rate_at(&self, s: f64) -> f64 {
        let t = self.secs();
        if t == 0.0 {
            return self.to;
        }
        self.from + (self.to - self.from) * (s / t).clamp(0.0, 1.0)
    }
}

/// A sequence of segments; time 0 is the start of the schedule.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schedule {
    /// The segments, back to back, in order: the whole load's rates, even in a shard.
    pub segments: Vec<Segment>,
    /// Which stripe of the whole schedule this one sends ([`Shard::WHOLE`] unless sharded).
    pub shard: Shard,
}

impl Schedule {
    /// The whole load's segments as a saved result records them (ms; the shard's stripe is
    /// recorded apart, in the result's `shards`).
    pub fn rate_segments(&self) -> Vec<RateSegment> {
        self.segments
            .iter()
            .map(|s| RateSegment {
                duration_ms: s.duration.as_millis() as u64,
                from_rate: s.from,
                to_rate: s.to,
            })
            .collect()
    }

    /// A constant rate for `duration`.
    pub fn constant(rate: f64, duration: Duration) -> Schedule {
        Schedule {
            segments: vec![Segment {
                duration,
                from: rate,
                to: rate,
            }],
            shard: Shard::WHOLE,
        }
    }

    /// The schedule's total length: the segments' durations added.
    pub fn duration(&self) -> Duration {
        self.segments.iter().map(|s| s.duration).sum()
    }

    /// The same schedule with `lead` of the first rate in front (the warm-up).
    pub fn with_lead(&self, lead: Duration) -> Schedule {
        let mut segments = Vec::with_capacity(self.segments.len() + 1);
        if !lead.is_zero() {
            let r = self.segments.first().map_or(0.0, |s| s.from);
            segments.push(Segment {
                duration: lead,
                from: r,
                to: r,
            });
        }
        segments.extend_from_slice(&self.segments);
        Schedule {
            segments,
            shard: self.shard,
        }
    }

    /// Requests this schedule (its shard's stripe) calls for in `[0, t)` seconds; `ceil` of it
    /// is the exact count of requests due before `t`.
    pub fn count_until(&self, t: f64) -> f64 {
        self.shard.share_of_count(self.whole_count_until(t))
    }

    /// The target rate at `t` seconds (this shard's part of the whole rate).
    pub fn rate_at(&self, t: f64) -> f64 {
        self.whole_rate_at(t) / f64::from(self.shard.total())
    }

    /// Requests the whole schedule (every shard) calls for in `[0, t)` seconds.
    pub fn whole_count_until(&self, t: f64) -> f64 {
        let mut start = 0.0;
        let mut total = 0.0;
        for seg in &self.segments {
            if t <= start {
                break;
            }
            total += seg.count(t - start);
            start += seg.secs();
        }
        total
    }

    /// The whole schedule's target rate at `t` seconds.
    pub fn whole_rate_at(&self, t: f64) -> f64 {
        let mut start = 0.0;
        for seg in &self.segments {
            if t < start + seg.secs() {
                return seg.rate_at(t - start);
            }
            start += seg.secs();
        }
        0.0
    }

    /// When request `k` (0-based) is due, in seconds from the start; `None` when the schedule
    /// ends before it.
    pub fn due(&self, k: u64) -> Option<f64> {
        let mut cursor = Cursor::default();
        self.due_from(&mut cursor, k)
    }

    /// Like [`Schedule::due`], for non-decreasing `k`, resuming from `cursor` (O(1) amortized).
    pub fn due_from(&self, cursor: &mut Cursor, k: u64) -> Option<f64> {
        let k = self.shard.global(k) as f64;
        while let Some(seg) = self.segments.get(cursor.segment) {
            let total = seg.total();
            if k < cursor.count + total && total > 0.0 {
                return Some(cursor.start + seg.time_of(k - cursor.count));
            }
            cursor.count += total;
            cursor.start += seg.secs();
            cursor.segment += 1;
        }
        None
    }
}

/// Where a walk along a schedule is: the segment, its start time and the count before it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor {
    segment: usize,
    start: f64,
    count: f64,
}

/// Parses `--stages '10s@1000,30s@5000,10s@0'`: each stage holds its rate for its duration.
pub fn parse_stages(text: &str) -> Result<Schedule, PlanError> {
    let bad = |item: &str| {
        crate::invalid(format!(
            "'{item}' is not DURATION@RATE: write stages like '10s@1000,30s@5000,10s@0'"
        ))
    };
    let mut segments = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (d, r) = item.split_once('@').ok_or_else(|| bad(item))?;
        segments.push(Segment {
            duration: units::duration(d).map_err(|_| bad(item))?,
            from: units::rate(r).map_err(|_| bad(item))?,
            to: units::rate(r).map_err(|_| bad(item))?,
        });
    }
    if segments.is_empty() || segments.iter().all(|s| s.duration.is_zero()) {
        return Err(bad(text));
    }
    Ok(Schedule {
        segments,
        shard: Shard::WHOLE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn rates_above_what_the_engine_can_schedule_are_refused_and_a_shard_checks_its_share() {
        let d = Duration::from_secs(1);
        assert!(check_max_rate(&Schedule::constant(MAX_RATE, d), "--rate").is_ok());
        let over = Schedule::constant(MAX_RATE * 1.5, d);
        let e = check_max_rate(&over, "--rate").unwrap_err().to_string();
        assert!(
            e.contains("15000000 req/s") && e.contains("10,000,000"),
            "{e}"
        );
        assert!(rate_over_max(&Schedule::constant(f64::NAN, d)).is_some());
        assert!(rate_over_max(&Schedule::constant(1e300, d)).is_some());
        let ramp = Schedule {
            segments: vec![Segment {
                duration: d,
                from: 100.0,
                to: 2e7,
            }],
            shard: Shard::WHOLE,
        };
        assert_eq!(rate_over_max(&ramp), Some(2e7));
        let halves = Schedule {
            shard: Shard::new(0, 2).unwrap(),
            ..ramp
        };
        assert_eq!(rate_over_max(&halves), None);
    }

    #[test]
    fn constant_rate_is_evenly_spaced_from_zero() {
        let s = Schedule::constant(4.0, secs(2.0));
        let due: Vec<f64> = (0..9).map_while(|k| s.due(k)).collect();
        assert_eq!(due, vec![0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]);
        assert_eq!(s.count_until(2.0), 8.0);
    }

    #[test]
    fn rate_below_one_per_worker_is_still_exact() {
        let s = Schedule::constant(0.5, secs(10.0));
        let due: Vec<f64> = (0..10).map_while(|k| s.due(k)).collect();
        assert_eq!(due, vec![0.0, 2.0, 4.0, 6.0, 8.0]);
    }

    #[test]
    fn ramp_counts_match_the_integral() {
        let s = Schedule {
            segments: vec![Segment {
                duration: secs(10.0),
                from: 100.0,
                to: 300.0,
            }],
            ..Schedule::default()
        };
        assert!((s.count_until(10.0) - 2000.0).abs() < 1e-9);
        assert!((s.count_until(1.0) - 110.0).abs() < 1e-9);
        let mut c = Cursor::default();
        let mut last = -1.0;
        let mut in_first_second = 0;
        for k in 0..2000 {
            let t = s.due_from(&mut c, k).unwrap();
            assert!(t >= last);
            last = t;
            if t < 1.0 {
                in_first_second += 1;
            }
        }
        assert_eq!(in_first_second, 110);
        assert!(s.due_from(&mut c, 2000).is_none());
    }

    #[test]
    fn ramp_from_zero_and_zero_rate_stages() {
        let s = parse_stages("2s@0, 1s@10").unwrap();
        assert_eq!(s.due(0), Some(2.0));
        assert_eq!(s.due(9), Some(2.9));
        assert_eq!(s.due(10), None);
        let up = Schedule {
            segments: vec![Segment {
                duration: secs(2.0),
                from: 0.0,
                to: 100.0,
            }],
            ..Schedule::default()
        };
        assert!((up.count_until(2.0) - 100.0).abs() < 1e-9);
        assert!((up.due(25).unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn lead_prepends_the_first_rate() {
        let s = Schedule::constant(10.0, secs(1.0)).with_lead(secs(0.5));
        assert_eq!(s.duration(), secs(1.5));
        assert_eq!(s.count_until(1.5), 15.0);
    }

    #[test]
    fn stages_parse_with_clear_errors() {
        let st = parse_stages("10s@1000,30s@5k,10s@0").unwrap();
        assert_eq!(st.duration(), Duration::from_secs(50));
        assert_eq!(st.rate_at(15.0), 5000.0);
        assert!(parse_stages("10s")
            .unwrap_err()
            .to_string()
            .contains("DURATION@RATE"));
        assert!(parse_stages("").is_err());
    }

    #[test]
    fn saved_segments_are_the_whole_schedules_in_ms() {
        let st = parse_stages("1500ms@10,2s@20").unwrap();
        let saved = st.rate_segments();
        assert_eq!(saved.len(), 2);
        assert_eq!((saved[0].duration_ms, saved[0].from_rate), (1500, 10.0));
        assert_eq!((saved[1].duration_ms, saved[1].to_rate), (2000, 20.0));
    }
}
