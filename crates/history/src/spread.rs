//! Is a new value outside the normal spread of the last N runs? The statistic of
//! `compare --against-history` (docs/history.md):
//!
//! - the history's mean `m` and sample standard deviation `s` over its `n` values;
//! - the 95% prediction interval of one more run from the same process,
//!   `m ± t(0.975, n − 1) · s · √(1 + 1/n)` (Student's t): where a new run falls 95% of the
//!   time when nothing changed;
//! - a regression is a new value outside that interval on the worse side *and* a change from
//!   `m` larger than the threshold (`compare --threshold`, 5% by default): noise rarely
//!   alarms, nor does a significant but tiny change.

use loadbench_model::bench_stats::t_critical_95;

/// The fewest history values a verdict is drawn from.
pub const MIN_HISTORY: usize = 3;

/// What a new value amounts to against the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Outside the interval on the better side and beyond the threshold.
    Improvement,
    /// Outside the interval on the worse side and beyond the threshold.
    Regression,
    /// Inside the interval, or no larger than the threshold.
    WithinSpread,
}

impl Verdict {
    /// `regression`, `improvement`, `within spread`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::WithinSpread => "within spread",
        }
    }
}

/// One metric judged against its history.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// History values used.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation.
    pub stdev: f64,
    /// The 95% prediction interval of one more run.
    pub interval: (f64, f64),
    /// The new value.
    pub new: f64,
    /// `(new − mean) / mean`; `None` when the mean is 0.
    pub change: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Judges `new` against `history` (at least [`MIN_HISTORY`] values, else `None`).
/// `higher_is_better` says which side is worse; `threshold` is the smallest relative change
/// that counts (0.1 = 10%).
pub fn judge(
    history: &[f64],
    new: f64,
    higher_is_better: bool,
    threshold: f64,
) -> Option<Judgement> {
    let n = history.len();
    if n < MIN_HISTORY || !new.is_finite() || history.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mean = history.iter().sum::<f64>() / n as f64;
    let stdev = (history.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let half = t_critical_95((n - 1) as f64) * stdev * (1.0 + 1.0 / n as f64).sqrt();
    let interval = (mean - half, mean + half);
    let change = (mean != 0.0).then(|| (new - mean) / mean.abs());
    let beyond = change.is_some_and(|c| c.abs() > threshold);
    let (worse, better) = if higher_is_better {
        (new < interval.0, new > interval.1)
    } else {
        (new > interval.1, new < interval.0)
    };
    let verdict = match (beyond, worse, better) {
        (true, true, _) => Verdict::Regression,
        (true, _, true) => Verdict::Improvement,
        _ => Verdict::WithinSpread,
    };
    Some(Judgement {
        n,
        mean,
        stdev,
        interval,
        new,
        change,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_values_give_no_verdict() {
        assert!(judge(&[1.0, 2.0], 3.0, false, 0.1).is_none());
        assert!(judge(&[1.0, 2.0, f64::NAN], 3.0, false, 0.1).is_none());
    }

    #[test]
    fn outside_the_interval_and_beyond_the_threshold_is_a_regression() {
        let h = [100.0, 102.0, 98.0, 101.0, 99.0];
        // Latency (lower is better): 150 is far outside and +50%.
        let j = judge(&h, 150.0, false, 0.1).unwrap();
        assert_eq!(j.verdict, Verdict::Regression);
        assert!(j.interval.0 < 100.0 && j.interval.1 > 100.0 && j.interval.1 < 110.0);
        // 106 is outside the interval (s ≈ 1.58, half-width ≈ 4.8) but only +6%.
        assert_eq!(
            judge(&h, 106.0, false, 0.1).unwrap().verdict,
            Verdict::WithinSpread
        );
        assert_eq!(
            judge(&h, 106.0, false, 0.05).unwrap().verdict,
            Verdict::Regression
        );
        // Throughput (higher is better): the same fall is a regression, a rise an improvement.
        assert_eq!(
            judge(&h, 50.0, true, 0.1).unwrap().verdict,
            Verdict::Regression
        );
        assert_eq!(
            judge(&h, 150.0, true, 0.1).unwrap().verdict,
            Verdict::Improvement
        );
    }

    #[test]
    fn a_wide_history_absorbs_a_large_change() {
        // Noisy history: 200 is +60% but inside mean ± t·s·√(1 + 1/n).
        let h = [60.0, 180.0, 90.0, 170.0, 125.0];
        let j = judge(&h, 200.0, false, 0.1).unwrap();
        assert_eq!(j.verdict, Verdict::WithinSpread, "{j:?}");
    }
}
