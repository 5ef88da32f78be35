//! The bench matrix and its statistics: the order in which `targets × loads × rounds` runs,
//! per-cell summaries (median, min, max, mean, stddev, 95% confidence interval, best-of) of any
//! per-round number (req/s, a latency percentile), and the relative speed of one target against
//! a baseline in hyperfine's "1.80 ± 0.10 times faster" form.
//!
//! Pure functions: no I/O, no clocks. Units are the caller's throughout.

use crate::stats::{t_two_sided_p, Spread};
use serde::{Deserialize, Serialize};

/// One run of the matrix: round `round` of target `target` at load level `load` (all indices
/// from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Step {
    /// Round, from 0.
    pub round: usize,
    /// Index of the load level.
    pub load: usize,
    /// Index of the target.
    pub target: usize,
}

/// The order in which the matrix runs: for each load, for each round, every target
/// (A B C A B C … at load 0, then the same at load 1, …).
///
/// Why this order:
/// - Targets are interleaved within a round, so slow machine drift (thermal throttling,
///   background work, page cache) lands on every target about equally instead of on whichever
///   target happened to run last; round `r` of every target runs close together in time.
/// - Loads are the outer loop, so all the samples that are compared with each other (the same
///   load across targets) are collected close in time, and a target is not switched between
///   load levels more often than needed.
///
/// Every cell `(load, target)` gets exactly `rounds` steps, with rounds in increasing order.
/// Any of the three counts being 0 gives an empty plan.
pub fn interleave(targets: usize, loads: usize, rounds: usize) -> Vec<Step> {
    let mut steps = Vec::with_capacity(targets * loads * rounds);
    for load in 0..loads {
        for round in 0..rounds {
            for target in 0..targets {
                steps.push(Step {
                    round,
                    load,
                    target,
                });
            }
        }
    }
    steps
}

/// A summary of one cell's per-round values (e.g. req/s, or the p99 latency, of each round).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    /// Number of values.
    pub n: usize,
    /// The median (mean of the two middle values when `n` is even).
    pub median: f64,
    /// Smallest value, in the unit of the field holding these stats.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator); 0 when `n` is 1.
    pub stddev: f64,
    /// Lower end of the 95% confidence interval of the mean (Student's t, n − 1 df), clamped
    /// at 0 when no value is negative (req/s, latency and CPU cannot be).
    pub ci95_low: f64,
    /// Upper end of the 95% confidence interval of the mean.
    pub ci95_high: f64,
    /// "Best of": the maximum when higher is better (throughput), the minimum otherwise
    /// (latency).
    pub best: f64,
}

/// Summarizes a cell's values. `higher_is_better` picks `best`: `max` for throughput, `min`
/// for latency.
///
/// The confidence interval is `mean ± t(0.975, n − 1) · stddev / √n`. With a single value
/// there is no spread to estimate: the interval collapses to that value (`ci95_low ==
/// ci95_high == value`), which says nothing about the uncertainty — run more rounds for that.
/// When every value is ≥ 0 (the quantity cannot be negative), the lower end is clamped at 0:
/// with two rounds `t` is 12.7 and the raw interval easily reaches below zero.
///
/// `None` when `values` is empty or holds a value that is not finite.
pub fn cell_stats(values: &[f64], higher_is_better: bool) -> Option<CellStats> {
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let spread = Spread::of(values)?;
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let half = if n > 1 {
        t_critical_95((n - 1) as f64) * spread.stdev / (n as f64).sqrt()
    } else {
        0.0
    };
    Some(CellStats {
        n,
        median,
        min: spread.min,
        max: spread.max,
        mean: spread.mean,
        stddev: spread.stdev,
        ci95_low: if spread.min >= 0.0 {
            (spread.mean - half).max(0.0)
        } else {
            spread.mean - half
        },
        ci95_high: spread.mean + half,
        best: if higher_is_better {
            spread.max
        } else {
            spread.min
        },
    })
}

/// The two-sided 95% critical value of Student's t with `df > 0` degrees of freedom: the `t`
/// with `P(|T| ≥ t) = 0.05` (12.706 for df = 1, 4.303 for df = 2, → 1.960). Found by
/// bisection on the model's t distribution, whose tail falls monotonically in `t`.
pub fn t_critical_95(df: f64) -> f64 {
    let mut lo = 0.0_f64;
    let mut hi = 16.0_f64;
    while t_two_sided_p(hi, df) > 0.05 && hi < 1e12 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if t_two_sided_p(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// How fast a target is against a baseline: `ratio ± ratio_err` times the baseline's
/// throughput (ratio > 1: faster).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Relative {
    /// `mean(other) / mean(baseline)`.
    pub ratio: f64,
    /// The ratio's standard error propagated from both standard deviations:
    /// `ratio · √((sd_b / mean_b)² + (sd_o / mean_o)²)` (as hyperfine does).
    pub ratio_err: f64,
    /// Values on the side with fewer; below 2 there is no spread, so `ratio_err` (0) is no
    /// estimate and [`Relative::describe`] says so.
    #[serde(default)]
    pub rounds: usize,
}

/// Relative speed of `other` against `baseline` from throughput samples (higher is better):
/// the ratio of the means with hyperfine's error propagation. Single-value samples contribute
/// no error.
///
/// `None` when either sample is empty, holds a value that is not finite, or has a mean that
/// is not positive (no meaningful ratio of throughputs).
pub fn relative_speed(baseline: &[f64], other: &[f64]) -> Option<Relative> {
    if baseline.iter().chain(other).any(|v| !v.is_finite()) {
        return None;
    }
    let (b, o) = (Spread::of(baseline)?, Spread::of(other)?);
    if b.mean <= 0.0 || o.mean <= 0.0 {
        return None;
    }
    let ratio = o.mean / b.mean;
    let ratio_err = ratio * ((b.stdev / b.mean).powi(2) + (o.stdev / o.mean).powi(2)).sqrt();
    Some(Relative {
        ratio,
        ratio_err,
        rounds: baseline.len().min(other.len()),
    })
}

impl Relative {
    /// One line for people: `"nginx: 1.80 ± 0.10 times faster than direct"`. A ratio below 1
    /// is shown as `1 / ratio` times slower, its error scaled the same way (first-order:
    /// `ratio_err / ratio²`, i.e. the same relative error). A ratio of exactly 1 reads as
    /// "1.00 ± … times faster". From a single round there is no error to give: `"proxy: 3.19
    /// times slower than direct, ± n/a (1 round)"`.
    pub fn describe(&self, name: &str, baseline_name: &str) -> String {
        let (factor, err, word) = if self.ratio >= 1.0 {
            (self.ratio, self.ratio_err, "faster")
        } else {
            (
                1.0 / self.ratio,
                self.ratio_err / (self.ratio * self.ratio),
                "slower",
            )
        };
        if self.rounds < 2 {
            return format!(
                "{name}: {factor:.2} times {word} than {baseline_name}, ± {}",
                no_interval(self.rounds)
            );
        }
        format!("{name}: {factor:.2} ± {err:.2} times {word} than {baseline_name}")
    }
}

/// What an interval from fewer than two values is shown as: `n/a (1 round)`.
pub fn no_interval(rounds: usize) -> String {
    let s = if rounds == 1 { "" } else { "s" };
    format!("n/a ({rounds} round{s})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn interleave_runs_targets_round_robin_within_each_round() {
        let order: Vec<(usize, usize, usize)> = interleave(3, 2, 2)
            .iter()
            .map(|s| (s.load, s.round, s.target))
            .collect();
        assert_eq!(
            order,
            vec![
                (0, 0, 0),
                (0, 0, 1),
                (0, 0, 2),
                (0, 1, 0),
                (0, 1, 1),
                (0, 1, 2),
                (1, 0, 0),
                (1, 0, 1),
                (1, 0, 2),
                (1, 1, 0),
                (1, 1, 1),
                (1, 1, 2),
            ]
        );
    }

    #[test]
    fn interleave_gives_every_cell_exactly_rounds_steps() {
        let (targets, loads, rounds) = (4, 3, 5);
        let steps = interleave(targets, loads, rounds);
        assert_eq!(steps.len(), targets * loads * rounds);
        let mut cells: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for s in &steps {
            assert!(s.target < targets && s.load < loads && s.round < rounds);
            cells.entry((s.load, s.target)).or_default().push(s.round);
        }
        assert_eq!(cells.len(), targets * loads);
        for rounds_seen in cells.values() {
            assert_eq!(*rounds_seen, (0..rounds).collect::<Vec<_>>());
        }
    }

    #[test]
    fn interleave_with_a_zero_dimension_is_empty() {
        assert!(interleave(0, 2, 3).is_empty());
        assert!(interleave(2, 0, 3).is_empty());
        assert!(interleave(2, 3, 0).is_empty());
        assert_eq!(interleave(1, 1, 1).len(), 1);
    }

    #[test]
    fn t_critical_matches_tables() {
        assert!(close(t_critical_95(1.0), 12.706_204_736_174_698, 1e-9));
        assert!(close(t_critical_95(2.0), 4.302_652_729_911_275, 1e-9));
        assert!(close(t_critical_95(10.0), 2.228_138_851_986_274, 1e-9));
        assert!(close(t_critical_95(30.0), 2.042_272_456_301_238, 1e-9));
        assert!(close(t_critical_95(1e7), 1.959_963_984_540_054, 1e-5));
    }

    #[test]
    fn cell_stats_of_three_values_by_hand() {
        let s = cell_stats(&[14.0, 10.0, 12.0], true).unwrap();
        assert_eq!(s.n, 3);
        assert_eq!((s.min, s.median, s.max), (10.0, 12.0, 14.0));
        assert!(close(s.mean, 12.0, 1e-12));
        assert!(close(s.stddev, 2.0, 1e-12));
        let half = 4.302_652_729_911_275 * 2.0 / 3f64.sqrt();
        assert!(close(s.ci95_low, 12.0 - half, 1e-9), "{s:?}");
        assert!(close(s.ci95_high, 12.0 + half, 1e-9), "{s:?}");
        assert_eq!(s.best, 14.0);
        assert_eq!(cell_stats(&[14.0, 10.0, 12.0], false).unwrap().best, 10.0);
    }

    #[test]
    fn cell_stats_median_of_even_count() {
        let s = cell_stats(&[4.0, 1.0, 3.0, 2.0], false).unwrap();
        assert_eq!(s.median, 2.5);
        assert_eq!(s.best, 1.0);
        assert!(s.ci95_low < s.mean && s.mean < s.ci95_high);
    }

    #[test]
    fn cell_stats_of_one_value_collapses_the_interval() {
        let s = cell_stats(&[7.5], true).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(
            (s.median, s.min, s.max, s.mean, s.best),
            (7.5, 7.5, 7.5, 7.5, 7.5)
        );
        assert_eq!(s.stddev, 0.0);
        assert_eq!((s.ci95_low, s.ci95_high), (7.5, 7.5));
    }

    #[test]
    fn cell_stats_of_nothing_or_non_finite_is_none() {
        assert_eq!(cell_stats(&[], true), None);
        assert_eq!(cell_stats(&[1.0, f64::NAN], true), None);
        assert_eq!(cell_stats(&[1.0, f64::INFINITY], false), None);
    }

    #[test]
    fn cell_stats_round_trips_through_json() {
        let s = cell_stats(&[1.0, 2.0, 4.0], true).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        let back: CellStats = serde_json::from_str(&json).unwrap();
        // serde_json's default float parsing may differ from the original in the last bit.
        assert_eq!(back.n, s.n);
        for (a, b) in [
            (back.median, s.median),
            (back.min, s.min),
            (back.max, s.max),
            (back.mean, s.mean),
            (back.stddev, s.stddev),
            (back.ci95_low, s.ci95_low),
            (back.ci95_high, s.ci95_high),
            (back.best, s.best),
        ] {
            assert!(close(a, b, 1e-12 * b.abs().max(1.0)), "{back:?} vs {s:?}");
        }
    }

    #[test]
    fn relative_speed_by_hand() {
        // baseline: mean 100, sd 10; other: mean 180, sd 9.
        let r = relative_speed(&[90.0, 100.0, 110.0], &[171.0, 180.0, 189.0]).unwrap();
        assert!(close(r.ratio, 1.8, 1e-12));
        let err = 1.8 * (0.1f64.powi(2) + 0.05f64.powi(2)).sqrt();
        assert!(close(r.ratio_err, err, 1e-12), "{r:?}");
        // Single values: no error.
        let r = relative_speed(&[200.0], &[50.0]).unwrap();
        assert_eq!((r.ratio, r.ratio_err, r.rounds), (0.25, 0.0, 1));
    }

    #[test]
    fn relative_speed_without_a_meaningful_ratio_is_none() {
        assert_eq!(relative_speed(&[], &[1.0]), None);
        assert_eq!(relative_speed(&[1.0], &[]), None);
        assert_eq!(relative_speed(&[0.0, 0.0], &[1.0]), None);
        assert_eq!(relative_speed(&[1.0], &[0.0]), None);
        assert_eq!(relative_speed(&[1.0, f64::NAN], &[1.0]), None);
    }

    #[test]
    fn describe_faster() {
        let r = Relative {
            ratio: 1.8,
            ratio_err: 0.1,
            rounds: 3,
        };
        assert_eq!(
            r.describe("nginx", "direct"),
            "nginx: 1.80 ± 0.10 times faster than direct"
        );
    }

    #[test]
    fn describe_slower_inverts_ratio_and_scales_error() {
        // 0.5 ± 0.05 (10%) → 2.00 ± 0.20 (10%) times slower.
        let r = Relative {
            ratio: 0.5,
            ratio_err: 0.05,
            rounds: 3,
        };
        assert_eq!(
            r.describe("proxy", "direct"),
            "proxy: 2.00 ± 0.20 times slower than direct"
        );
        let r = relative_speed(&[100.0, 100.0], &[80.0, 80.0]).unwrap();
        assert_eq!(r.describe("b", "a"), "b: 1.25 ± 0.00 times slower than a");
    }

    #[test]
    fn describe_from_one_round_gives_no_interval() {
        let r = relative_speed(&[3190.0], &[1000.0]).unwrap();
        assert_eq!(
            r.describe("proxy", "direct"),
            "proxy: 3.19 times slower than direct, ± n/a (1 round)"
        );
    }

    #[test]
    fn cell_stats_clamps_the_lower_bound_of_what_cannot_be_negative() {
        // Two rounds: t = 12.7, the raw interval is 2550 ± 31 115.
        let s = cell_stats(&[100.0, 5000.0], true).unwrap();
        assert_eq!(s.ci95_low, 0.0, "{s:?}");
        assert!(s.ci95_high > 30_000.0, "{s:?}");
        // A quantity that can be negative keeps its interval.
        let s = cell_stats(&[-100.0, 5000.0], true).unwrap();
        assert!(s.ci95_low < -10_000.0, "{s:?}");
    }
}
