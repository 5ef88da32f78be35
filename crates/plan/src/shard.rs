//! Splitting one load into N shards that together offer exactly the whole load (issue 15).
//!
//! A [`Shard`] `I/N` is k6's execution segment `[I/N, (I+1)/N)` in its striped form: of any
//! countable total (connections, `-n` requests, the open model's scheduled requests), shard I
//! takes the units numbered I, I+N, I+2N, … So the shares always add up to the total whatever
//! N, differ by at most one, and a shard gets nothing only when N exceeds the total — which
//! [`LoadSpec::shard`] refuses with a message saying so. The open model's schedule is striped
//! the same way (shard I sends the global schedule's requests I, I+N, …, at their global due
//! times), so N shards started together send exactly the requests one process would.
//! Pure: no clock, no I/O; the CLI, the scenario harness and the xxl-job agent all call it.

use crate::{LoadShape, LoadSpec, Stop};
use std::fmt;
use std::str::FromStr;

/// One shard of a load: `index` (0-based, like Kubernetes' `JOB_COMPLETION_INDEX`) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u32,
    total: u32,
}

/// A shard that cannot be, or a load that cannot be split that way; one line naming the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Text that is not `INDEX/COUNT`.
    #[error("'{0}' is not INDEX/COUNT: give the 0-based shard index and the number of shards, such as 0/4")]
    Syntax(String),
    /// A count of zero shards.
    #[error("{0}/0 has no shards: the count after the slash must be 1 or more, such as 0/4")]
    NoShards(u32),
    /// An index at or beyond the count.
    #[error("{index}/{total}: index {index} is not below the count {total}; shards are numbered 0 to {last} (0-based)", last = total - 1)]
    IndexOutOfRange {
        /// The index given.
        index: u32,
        /// The count given.
        total: u32,
    },
    /// More shards than units of something to split: some shard would get none. This is the
    /// zero-share warning, made a refusal: a shard with no connection or no request cannot
    /// take part, and every shard of that load says so the same way.
    #[error("{what} {amount} cannot be split into {total} shards: shard {total_m1}/{total} would get no {unit}; give {what} {total} or more, or use at most {amount} shards", total_m1 = total - 1)]
    TooManyShards {
        /// The flag or quantity (`-c`, `-n`, `--max-connections`, `the schedule's`).
        what: &'static str,
        /// What is being split.
        unit: &'static str,
        /// Its total.
        amount: u64,
        /// The number of shards.
        total: u32,
    },
}

impl Shard {
    /// The whole load: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, total: 1 };

    /// Shard `index` of `total`; `index` must be below `total`.
    pub fn new(index: u32, total: u32) -> Result<Shard, ShardError> {
        if total == 0 {
            return Err(ShardError::NoShards(index));
        }
        if index >= total {
            return Err(ShardError::IndexOutOfRange { index, total });
        }
        Ok(Shard { index, total })
    }

    /// The 0-based index.
    pub fn index(self) -> u32 {
        self.index
    }

    /// The number of shards.
    pub fn total(self) -> u32 {
        self.total
    }

    /// Shard 0 of 1.
    pub fn is_whole(self) -> bool {
        self.total == 1
    }

    /// This shard's part of `amount` units: how many of 0..amount are ≡ index (mod total).
    /// The parts of all shards add up to `amount` exactly.
    pub fn share(self, amount: u64) -> u64 {
        let (i, n) = (u64::from(self.index), u64::from(self.total));
        if amount <= i {
            return 0;
        }
        (amount - i).div_ceil(n)
    }

    /// This shard's part of a fractional count `c` (the open model's scheduled requests up
    /// to an instant): `ceil` of it is the number of the shard's units below `ceil(c)`.
    pub fn share_of_count(self, c: f64) -> f64 {
        if self.is_whole() {
            return c;
        }
        ((c - f64::from(self.index)) / f64::from(self.total)).max(0.0)
    }

    /// The global unit number of this shard's `k`-th unit.
    pub fn global(self, k: u64) -> u64 {
        k * u64::from(self.total) + u64::from(self.index)
    }

    /// Shard `inner` of this shard, as a shard of the whole (striping composes).
    pub fn within(self, inner: Shard) -> Shard {
        Shard {
            index: self.index + self.total * inner.index,
            total: self.total * inner.total,
        }
    }

    /// Splits `amount`, refusing when some shard (the last) would get none of a non-zero
    /// total: every shard of the same load refuses alike, not only the unlucky ones.
    fn split(self, what: &'static str, unit: &'static str, amount: u64) -> Result<u64, ShardError> {
        if amount > 0 && amount < u64::from(self.total) {
            return Err(ShardError::TooManyShards {
                what,
                unit,
                amount,
                total: self.total,
            });
        }
        Ok(self.share(amount))
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.total)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    /// Parses `I/N` (`0/4`, `3/4`).
    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(text.to_string());
        let (i, n) = text.trim().split_once('/').ok_or_else(syntax)?;
        let index = i.trim().parse::<u32>().map_err(|_| syntax())?;
        let total = n.trim().parse::<u32>().map_err(|_| syntax())?;
        Shard::new(index, total)
    }
}

impl LoadSpec {
    /// This load's shard `shard`: an exact share of the connections (closed model), of the
    /// connection cap and of the scheduled requests (open model: the schedule is striped, so
    /// rates, ramps and stages are all shared, per second too), and of `-n`. Duration, warm-up
    /// and everything else stay. Refuses a split that would leave a shard with nothing.
    pub fn shard(&self, shard: Shard) -> Result<LoadSpec, ShardError> {
        if shard.is_whole() {
            return Ok(self.clone());
        }
        let mut out = self.clone();
        let pacing = &mut out.pacing;
        match &mut out.load {
            LoadShape::Closed { connections } => {
                *connections = shard.split("-c", "connection", (*connections).into())? as u32
            }
            LoadShape::Open {
                schedule,
                max_connections,
            } => {
                let cap = u64::from(*max_connections);
                *max_connections = shard.split("--max-connections", "connection", cap)? as u32;
                if let Some(c) = pacing.initial_connections {
                    let share = shard.split("-c", "connection", c.into())?;
                    pacing.initial_connections = Some(share as u32);
                }
                let limit = u64::from(pacing.connect_limit);
                pacing.connect_limit = shard
                    .split("--connect-limit", "connect", limit)
                    .unwrap_or(1) as u32;
                let due = scheduled_total(schedule, self.stop);
                shard.split("the schedule's", "request", due)?;
                schedule.shard = schedule.shard.within(shard);
            }
            LoadShape::FindMax {
                max_connections, ..
            } => {
                let cap = u64::from(*max_connections);
                *max_connections = shard.split("--max-connections", "connection", cap)? as u32;
            }
        }
        out.values.shard = out.values.shard.within(shard);
        if let Stop::Requests(n) = self.stop {
            out.stop = Stop::Requests(shard.split("-n", "request", n)?);
        }
        Ok(out)
    }
}

/// The requests a whole open-model schedule calls for before the run stops.
fn scheduled_total(schedule: &crate::Schedule, stop: Stop) -> u64 {
    match stop {
        Stop::Requests(n) => n,
        Stop::Duration(d) => (schedule.count_until(d.as_secs_f64()) - 1e-9)
            .ceil()
            .max(0.0) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Schedule, Segment};
    use std::time::Duration;

    fn parse(t: &str) -> Result<Shard, String> {
        t.parse::<Shard>().map_err(|e| e.to_string())
    }

    #[test]
    fn parses_index_over_count_with_one_line_errors() {
        assert_eq!(parse("3/4").unwrap(), Shard::new(3, 4).unwrap());
        assert_eq!(parse(" 0 / 1 ").unwrap(), Shard::WHOLE);
        assert_eq!(Shard::new(2, 5).unwrap().to_string(), "2/5");
        for bad in ["3/2", "0/0", "a/b", "1", "", "-1/2", "1/2/3", "4/4"] {
            let e = parse(bad).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{bad}: {e}");
        }
        assert!(parse("3/2").unwrap_err().contains("numbered 0 to 1"));
        assert!(parse("0/0").unwrap_err().contains("1 or more"));
        assert!(parse("a/b").unwrap_err().contains("INDEX/COUNT"));
    }

    #[test]
    fn shares_always_add_up_and_differ_by_at_most_one() {
        for total in (0..200u64).chain([1_000, 65_535, 1_000_003, u64::from(u32::MAX)]) {
            for n in 1..=40u32 {
                let shares: Vec<u64> = (0..n)
                    .map(|i| Shard::new(i, n).unwrap().share(total))
                    .collect();
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {n}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{total} over {n}: {shares:?}");
                assert_eq!(shares.iter().all(|&s| s > 0), total >= u64::from(n));
            }
        }
    }

    #[test]
    fn fractional_counts_round_to_the_exact_shares() {
        for c in [0.0, 0.4, 1.0, 7.5, 99.999, 1000.0, 12_345.678] {
            for n in 1..=9u32 {
                let whole = (c - 1e-9f64).ceil().max(0.0) as u64;
                let parts: u64 = (0..n)
                    .map(|i| {
                        let s = Shard::new(i, n).unwrap().share_of_count(c);
                        (s - 1e-9f64).ceil().max(0.0) as u64
                    })
                    .sum();
                assert_eq!(parts, whole, "count {c} over {n}");
            }
        }
    }

    fn connections(spec: &LoadSpec) -> u32 {
        match spec.load {
            LoadShape::Closed { connections } => connections,
            _ => panic!("closed"),
        }
    }

    fn closed(c: u32, stop: Stop) -> LoadSpec {
        LoadSpec {
            stop,
            ..LoadSpec::closed("http://127.0.0.1:1/", c, Duration::from_secs(3))
        }
    }

    #[test]
    fn closed_model_splits_connections_and_requests() {
        let spec = closed(10, Stop::Requests(1001));
        let parts: Vec<LoadSpec> = (0..3)
            .map(|i| spec.shard(Shard::new(i, 3).unwrap()).unwrap())
            .collect();
        let conns: Vec<u32> = parts.iter().map(connections).collect();
        assert_eq!(conns, vec![4, 3, 3]);
        let reqs: Vec<Stop> = parts.iter().map(|p| p.stop).collect();
        assert_eq!(
            reqs,
            vec![
                Stop::Requests(334),
                Stop::Requests(334),
                Stop::Requests(333)
            ]
        );
        let timed = closed(5, Stop::Duration(Duration::from_secs(7)));
        let one = timed.shard(Shard::new(4, 5).unwrap()).unwrap();
        assert_eq!((connections(&one), one.stop), (1, timed.stop));
        assert_eq!(connections(&timed.shard(Shard::WHOLE).unwrap()), 5);
    }

    #[test]
    fn too_many_shards_are_refused_with_the_reason() {
        let e = closed(3, Stop::Duration(Duration::from_secs(1)))
            .shard(Shard::new(0, 4).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("-c 3 cannot be split into 4 shards"), "{e}");
        assert!(e.contains("-c 4 or more"), "{e}");
        let few = LoadSpec::open("http://127.0.0.1:1/", 2.0, Duration::from_secs(1), 100);
        let e = few
            .shard(Shard::new(1, 3).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("the schedule's 2 cannot be split"), "{e}");
    }

    fn due_times(spec: &LoadSpec) -> Vec<f64> {
        let LoadShape::Open { schedule, .. } = &spec.load else {
            panic!("open")
        };
        (0..).map_while(|k| schedule.due(k)).collect()
    }

    #[test]
    fn open_model_shards_send_exactly_the_whole_schedule() {
        let ramp = Schedule {
            segments: vec![
                Segment {
                    duration: Duration::from_secs(2),
                    from: 10.0,
                    to: 40.0,
                },
                Segment {
                    duration: Duration::from_secs(1),
                    from: 7.0,
                    to: 7.0,
                },
            ],
            ..Schedule::default()
        };
        let spec = LoadSpec {
            load: LoadShape::Open {
                schedule: ramp,
                max_connections: 10,
            },
            ..LoadSpec::open("http://127.0.0.1:1/", 1.0, Duration::from_secs(3), 10)
        };
        let whole = due_times(&spec);
        for n in 1..=7u32 {
            let mut merged: Vec<f64> = (0..n)
                .flat_map(|i| due_times(&spec.shard(Shard::new(i, n).unwrap()).unwrap()))
                .collect();
            merged.sort_by(f64::total_cmp);
            assert_eq!(merged, whole, "{n} shards");
        }
        let LoadShape::Open {
            schedule,
            max_connections,
            ..
        } = spec.shard(Shard::new(1, 4).unwrap()).unwrap().load
        else {
            panic!("open")
        };
        assert_eq!(max_connections, 3); // 10 over 4: 3, 3, 2, 2
        assert_eq!(schedule.rate_at(2.5), 7.0 / 4.0);
    }

    #[test]
    fn open_model_with_n_splits_the_count_and_nesting_composes() {
        let spec = LoadSpec {
            stop: Stop::Requests(10),
            ..LoadSpec::open("http://127.0.0.1:1/", 10.0, Duration::from_secs(1), 4)
        };
        let s = spec.shard(Shard::new(1, 2).unwrap()).unwrap();
        assert_eq!(s.stop, Stop::Requests(5));
        assert_eq!(due_times(&s), vec![0.1, 0.3, 0.5, 0.7, 0.9]);
        let nested = s.shard(Shard::new(1, 2).unwrap()).unwrap();
        assert_eq!(due_times(&nested), vec![0.3, 0.7]);
    }
}
