//! The Universal Scalability Law (Gunther): `X(N) = λN / (1 + σ(N−1) + κN(N−1))`, throughput
//! at concurrency `N` from the throughput of one request at a time (`λ`), contention (`σ`, the
//! serial share) and coherency (`κ`, crosstalk between the concurrent requests). A fit over a
//! sweep says which of the two limits scaling and, when `κ > 0`, where throughput peaks.
//!
//! The fit is linear: `N/X = (1 + σ(N−1) + κN(N−1)) / λ` is a linear combination of `1`, `N−1`
//! and `N(N−1)`, solved by least squares weighted by `(X/N)²` so every point counts by its
//! relative error (the highest levels would dominate otherwise). σ and κ cannot be negative:
//! when the free solution has one below zero, the best solution with it held at 0 is taken.
//! No iteration, no starting guess, the same answer every time.

use serde::{Deserialize, Serialize};

/// A fit needs at least this many distinct concurrency levels (three parameters, and one
/// more so the quality of the fit means something).
pub const MIN_POINTS: usize = 4;

/// Beyond this many times the largest measured concurrency, a predicted peak is not a
/// prediction any more: it is reported as none (κ ≈ 0).
pub const PEAK_EXTRAPOLATION: f64 = 100.0;

/// A Universal Scalability Law fit over (concurrency, throughput) points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Contention: the share of the work that is serialised (0: none).
    pub sigma: f64,
    /// Coherency: the cost of crosstalk between every pair of concurrent requests (0: none).
    pub kappa: f64,
    /// Throughput of one request at a time, req/s (the fit's `X(1)`).
    pub lambda: f64,
    /// Coefficient of determination of the fitted throughput against the measured one (1:
    /// perfect; 0: no better than their mean).
    pub r_squared: f64,
    /// Distinct concurrency levels fitted.
    pub points: u32,
    /// Concurrency of the predicted peak `N* = sqrt((1−σ)/κ)`; `None`: no peak predicted (κ ≈ 0,
    /// or the peak lies beyond [`PEAK_EXTRAPOLATION`] times the largest measured level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_concurrency: Option<f64>,
    /// Throughput at the predicted peak, req/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_requests_per_sec: Option<f64>,
}

impl UslFit {
    /// The fitted throughput at concurrency `n`, req/s.
    pub fn throughput(&self, n: f64) -> f64 {
        model(self.sigma, self.kappa, self.lambda, n)
    }

    /// The throughput approached as concurrency grows when κ = 0 (`λ/σ`); `None` when σ is 0
    /// too (no limit seen) or κ > 0 (throughput peaks and falls instead).
    pub fn ceiling(&self) -> Option<f64> {
        (self.kappa == 0.0 && self.sigma > 0.0).then(|| self.lambda / self.sigma)
    }
}

fn model(sigma: f64, kappa: f64, lambda: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the law to `(concurrency, req/s)` points; `Err` says why no fit was made (fewer than
/// [`MIN_POINTS`] distinct levels with a positive throughput, or no solution).
pub fn fit(points: &[(f64, f64)]) -> Result<UslFit, String> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, x)| n.is_finite() && x.is_finite() && n > 0.0 && x > 0.0)
        .collect();
    let distinct = distinct_levels(&pts);
    if distinct < MIN_POINTS {
        return Err(format!(
            "{distinct} distinct concurrency levels with a throughput; the fit needs {MIN_POINTS}"
        ));
    }
    let candidates: Vec<([bool; 2], Params)> = FREE
        .iter()
        .filter_map(|free| Some((*free, solve(&pts, free)?)))
        .collect();
    let best = best_of(&pts, candidates.iter())
        .ok_or("the least-squares system has no solution with σ, κ ≥ 0")?;
    let (sigma, kappa, lambda) = without_noise_kappa(&pts, best, &candidates);
    let max_n = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let (peak_concurrency, peak_requests_per_sec) = peak(sigma, kappa, lambda, max_n);
    Ok(UslFit {
        sigma,
        kappa,
        lambda,
        r_squared: r_squared(&pts, |n| model(sigma, kappa, lambda, n)),
        points: distinct as u32,
        peak_concurrency,
        peak_requests_per_sec,
    })
}

fn distinct_levels(pts: &[(f64, f64)]) -> usize {
    let mut ns: Vec<f64> = pts.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs().max(1.0));
    ns.len()
}

/// (σ, κ, λ).
type Params = (f64, f64, f64);

fn best_of<'a>(
    pts: &[(f64, f64)],
    c: impl Iterator<Item = &'a ([bool; 2], Params)>,
) -> Option<([bool; 2], Params)> {
    c.copied()
        .min_by(|a, b| relative_sse(pts, a.1).total_cmp(&relative_sse(pts, b.1)))
}

/// The solution with κ held at 0 (σ as free as in `best`) instead of `best` when κ does not
/// improve the fit more than noise would (an F test at 95%: one parameter more, `n − p`
/// degrees of freedom left), so measurement noise does not predict a peak far beyond the data.
fn without_noise_kappa(
    pts: &[(f64, f64)],
    (free, best): ([bool; 2], Params),
    candidates: &[([bool; 2], Params)],
) -> Params {
    let nested = [free[0], false];
    let Some(&(_, flat)) = candidates.iter().find(|c| c.0 == nested && free[1]) else {
        return best;
    };
    let (with, without) = (relative_sse(pts, best), relative_sse(pts, flat));
    let params = 2 + usize::from(free[0]);
    let df = pts.len().saturating_sub(params).max(1);
    let f = (without - with) / (with / df as f64);
    if f.is_nan() || f >= f_critical_95(df) {
        best
    } else {
        flat
    }
}

/// The 95% critical value of the F distribution with (1, `df`) degrees of freedom.
fn f_critical_95(df: usize) -> f64 {
    const TABLE: [f64; 10] = [
        161.4, 18.51, 10.13, 7.71, 6.61, 5.99, 5.59, 5.32, 5.12, 4.96,
    ];
    match df {
        1..=10 => TABLE[df - 1],
        11..=30 => 4.3,
        _ => 3.9,
    }
}

/// Which of (σ, κ) are free in each candidate solution; the others are held at 0.
const FREE: [[bool; 2]; 4] = [[true, true], [true, false], [false, true], [false, false]];

/// The weighted least-squares solution with the given parameters free, as (σ, κ, λ), if it
/// exists and has λ > 0, σ ≥ 0, κ ≥ 0.
fn solve(pts: &[(f64, f64)], free: &[bool; 2]) -> Option<Params> {
    let basis = |n: f64| {
        let mut row = vec![1.0];
        if free[0] {
            row.push(n - 1.0);
        }
        if free[1] {
            row.push(n * (n - 1.0));
        }
        row
    };
    let rows: Vec<(Vec<f64>, f64, f64)> = pts
        .iter()
        .map(|&(n, x)| (basis(n), n / x, (x / n).powi(2)))
        .collect();
    let coef = least_squares(&rows)?;
    let a = coef[0];
    let mut rest = coef[1..].iter();
    let sigma = if free[0] { *rest.next()? / a } else { 0.0 };
    let kappa = if free[1] { *rest.next()? / a } else { 0.0 };
    (a > 0.0 && sigma >= 0.0 && kappa >= 0.0).then_some((sigma, kappa, 1.0 / a))
}

/// Solves the normal equations of `Σ w (y − row·c)²` for `c`: (row, y, w) per point.
fn least_squares(rows: &[(Vec<f64>, f64, f64)]) -> Option<Vec<f64>> {
    let k = rows.first()?.0.len();
    let mut m = vec![vec![0.0; k + 1]; k];
    for (row, y, w) in rows {
        for i in 0..k {
            for j in 0..k {
                m[i][j] += w * row[i] * row[j];
            }
            m[i][k] += w * row[i] * y;
        }
    }
    gauss(m)
}

/// Gaussian elimination with partial pivoting on an augmented `k × (k+1)` matrix.
fn gauss(mut m: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = m.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        m.swap(col, pivot);
        let scale = m[col].iter().map(|v| v.abs()).fold(0.0, f64::max);
        if m[col][col].abs() <= 1e-12 * scale {
            return None;
        }
        for r in 0..k {
            if r != col {
                let f = m[r][col] / m[col][col];
                let pivot_row = m[col].clone();
                m[r].iter_mut()
                    .zip(&pivot_row)
                    .for_each(|(v, p)| *v -= f * p);
            }
        }
    }
    Some((0..k).map(|i| m[i][k] / m[i][i]).collect())
}

fn relative_sse(pts: &[(f64, f64)], (sigma, kappa, lambda): Params) -> f64 {
    pts.iter()
        .map(|&(n, x)| ((x - model(sigma, kappa, lambda, n)) / x).powi(2))
        .sum()
}

/// `1 − SSE/SST` of the fitted throughput against the measured one.
fn r_squared(pts: &[(f64, f64)], fitted: impl Fn(f64) -> f64) -> f64 {
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let sse: f64 = pts.iter().map(|&(n, x)| (x - fitted(n)).powi(2)).sum();
    let sst: f64 = pts.iter().map(|&(_, x)| (x - mean).powi(2)).sum();
    if sst > 0.0 {
        1.0 - sse / sst
    } else if sse <= 1e-12 * mean * mean {
        1.0
    } else {
        0.0
    }
}

/// `N* = sqrt((1−σ)/κ)` and `X(N*)`, unless κ ≈ 0 (no peak within reach of the data).
fn peak(sigma: f64, kappa: f64, lambda: f64, max_n: f64) -> (Option<f64>, Option<f64>) {
    if kappa <= 0.0 || sigma >= 1.0 {
        return (None, None);
    }
    let n = ((1.0 - sigma) / kappa).sqrt();
    if n > PEAK_EXTRAPOLATION * max_n {
        return (None, None);
    }
    (Some(n), Some(model(sigma, kappa, lambda, n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVELS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

    fn synthetic(sigma: f64, kappa: f64, lambda: f64, noise: &[f64]) -> Vec<(f64, f64)> {
        LEVELS
            .iter()
            .zip(noise.iter().cycle())
            .map(|(&n, e)| (n, model(sigma, kappa, lambda, n) * (1.0 + e)))
            .collect()
    }

    fn within(got: f64, want: f64, share: f64) -> bool {
        (got - want).abs() <= share * want
    }

    #[test]
    fn exact_data_recovers_sigma_kappa_and_lambda() {
        let f = fit(&synthetic(0.08, 0.0005, 1000.0, &[0.0])).unwrap();
        assert!(within(f.sigma, 0.08, 1e-6), "{f:?}");
        assert!(within(f.kappa, 0.0005, 1e-6), "{f:?}");
        assert!(within(f.lambda, 1000.0, 1e-6), "{f:?}");
        assert!(f.r_squared > 0.999_999, "{f:?}");
        let n_star = (0.92f64 / 0.0005).sqrt();
        assert!(within(f.peak_concurrency.unwrap(), n_star, 1e-6), "{f:?}");
        let x_star = model(0.08, 0.0005, 1000.0, n_star);
        assert!(within(f.peak_requests_per_sec.unwrap(), x_star, 1e-6));
        assert_eq!(f.points, 8);
    }

    #[test]
    fn noisy_data_recovers_sigma_and_kappa_within_ten_percent() {
        // ±1% of measurement noise, a fixed pattern so the test never flakes.
        let noise = [0.01, -0.008, 0.004, -0.01, 0.007, -0.003, 0.009, -0.006];
        for (sigma, kappa) in [(0.08, 0.0005), (0.2, 0.002), (0.03, 0.0001)] {
            let f = fit(&synthetic(sigma, kappa, 500.0, &noise)).unwrap();
            assert!(within(f.sigma, sigma, 0.10), "σ {sigma}: {f:?}");
            assert!(within(f.kappa, kappa, 0.10), "κ {kappa}: {f:?}");
            assert!(f.r_squared > 0.99, "{f:?}");
        }
    }

    #[test]
    fn without_coherency_no_peak_is_predicted_and_the_ceiling_is_lambda_over_sigma() {
        let noise = [0.005, -0.004, 0.002, -0.005];
        let f = fit(&synthetic(0.1, 0.0, 200.0, &noise)).unwrap();
        assert!(within(f.sigma, 0.1, 0.10), "{f:?}");
        assert_eq!(f.kappa, 0.0, "noise is not coherency: {f:?}");
        assert_eq!(f.peak_concurrency, None, "{f:?}");
        assert!(within(f.ceiling().unwrap(), 2000.0, 0.10), "{f:?}");
    }

    #[test]
    fn negative_estimates_are_held_at_zero() {
        // Perfectly linear scaling with a little super-linear noise at the top.
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0]
            .iter()
            .map(|&n| (n, 100.0 * n * if n == 16.0 { 1.02 } else { 1.0 }))
            .collect();
        let f = fit(&pts).unwrap();
        assert!(f.sigma >= 0.0 && f.kappa >= 0.0, "{f:?}");
        assert_eq!(f.peak_concurrency, None);
    }

    #[test]
    fn fewer_than_four_distinct_levels_are_refused_with_the_reason() {
        let pts = [(5.0, 50.0), (10.0, 100.0), (10.0, 101.0), (20.0, 190.0)];
        let err = fit(&pts).unwrap_err();
        assert!(err.contains("3 distinct concurrency levels"), "{err}");
        assert!(err.contains("needs 4"), "{err}");
        let with_zero = [(5.0, 50.0), (10.0, 0.0), (20.0, 190.0), (40.0, 200.0)];
        assert!(fit(&with_zero).unwrap_err().contains("3 distinct"));
    }
}
