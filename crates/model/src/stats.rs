//! Small statistics over a handful of numbers (per-second rates, rounds): their spread, and
//! Welch's t-test of whether two such sets differ in mean (`loadbench compare`; docs/compare.md).
//! The t distribution is computed here (regularized incomplete beta) rather than pulled in.

use serde::{Deserialize, Serialize};

/// Minimum, mean, sample standard deviation and maximum of a set of numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single value.
    pub stdev: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`, in their unit; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Some(Spread {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            mean,
            stdev: var.sqrt(),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// Welch's t-test of two independent samples whose variances may differ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// `(mean(b) − mean(a)) / standard error`: positive when `b` is larger.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value: the chance of a `|t|` at least this large if the means were equal.
    pub p: f64,
}

impl Welch {
    /// Tests whether `a` and `b` have the same mean. `None` when either has fewer than two
    /// values (no variance to estimate) or a value is not finite.
    pub fn test(a: &[f64], b: &[f64]) -> Option<Welch> {
        if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|v| !v.is_finite()) {
            return None;
        }
        let (sa, sb) = (Spread::of(a)?, Spread::of(b)?);
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let (ea, eb) = (sa.stdev.powi(2) / na, sb.stdev.powi(2) / nb);
        let diff = sb.mean - sa.mean;
        if ea + eb == 0.0 {
            // Both samples constant: the means are equal or certainly not.
            let (t, p) = if diff == 0.0 {
                (0.0, 1.0)
            } else {
                (diff.signum() * f64::INFINITY, 0.0)
            };
            return Some(Welch {
                t,
                df: na + nb - 2.0,
                p,
            });
        }
        let t = diff / (ea + eb).sqrt();
        let df = (ea + eb).powi(2) / (ea.powi(2) / (na - 1.0) + eb.powi(2) / (nb - 1.0));
        Some(Welch {
            t,
            df,
            p: t_two_sided_p(t, df),
        })
    }
}

/// Student's t distribution: `P(T ≤ t)` with `df` degrees of freedom (`df > 0`).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = t_two_sided_p(t, df) / 2.0;
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// `P(|T| ≥ |t|)` for Student's t with `df` degrees of freedom: `I_{df/(df+t²)}(df/2, 1/2)`.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0` and `x` in [0, 1], by
/// its continued fraction (modified Lentz), on the side of `x` where that converges quickly.
pub fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of `I_x(a, b)`; converges for `x < (a + 1) / (a + b + 2)` in
/// O(√max(a, b)) terms.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const MAX_TERMS: u32 = 10_000;
    const EPS: f64 = 1e-15;
    const TINY: f64 = 1e-300;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=MAX_TERMS {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / nonzero(1.0 + even * d);
        c = nonzero(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / nonzero(1.0 + odd * d);
        c = nonzero(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms: about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let series = COEF[1..]
        .iter()
        .enumerate()
        .fold(COEF[0], |sum, (i, c)| sum + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_known_values() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert_eq!(s.mean, 5.0);
        assert!((s.stdev - 2.138).abs() < 0.001);
        assert!(Spread::of(&[]).is_none());
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn incomplete_beta_matches_closed_forms() {
        for x in [0.0, 0.1, 0.37, 0.5, 0.9, 1.0] {
            assert!(close(regularized_incomplete_beta(1.0, 1.0, x), x, 1e-14));
        }
        assert!(close(
            regularized_incomplete_beta(2.5, 1.0, 0.3),
            0.3f64.powf(2.5),
            1e-14
        ));
        // I_0.4(2, 3) = Σ_{j=2..4} C(4, j) 0.4^j 0.6^(4−j) = 0.5248.
        assert!(close(
            regularized_incomplete_beta(2.0, 3.0, 0.4),
            0.5248,
            1e-14
        ));
        assert!(close(
            regularized_incomplete_beta(7.5, 7.5, 0.5),
            0.5,
            1e-14
        ));
        assert!(close(
            regularized_incomplete_beta(300.0, 0.5, 0.999),
            1.0 - regularized_incomplete_beta(0.5, 300.0, 0.001),
            1e-12
        ));
    }

    #[test]
    fn ln_gamma_of_known_values() {
        assert!(close(ln_gamma(1.0), 0.0, 1e-14));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-13));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-14
        ));
        assert!(close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-13));
        assert!(close(ln_gamma(171.5), 709.143_163_030_928_2, 1e-10));
    }

    #[test]
    fn t_distribution_matches_closed_forms_and_tables() {
        // df = 1 is Cauchy, df = 2 has a closed form.
        for t in [-3.0, -0.5, 0.0, 0.7, 4.0] {
            let cauchy = 0.5 + f64::atan(t) / std::f64::consts::PI;
            assert!(close(t_cdf(t, 1.0), cauchy, 1e-13), "t={t}");
            let df2 = 0.5 + t / (2.0 * (2.0 + t * t).sqrt());
            assert!(close(t_cdf(t, 2.0), df2, 1e-13), "t={t}");
        }
        // Two-sided 5% critical values from the t table, and the normal limit.
        assert!(close(
            t_two_sided_p(12.706_204_736_174_698, 1.0),
            0.05,
            1e-10
        ));
        assert!(close(
            t_two_sided_p(2.228_138_851_986_274, 10.0),
            0.05,
            1e-10
        ));
        assert!(close(
            t_two_sided_p(2.042_272_456_301_238, 30.0),
            0.05,
            1e-10
        ));
        assert!(close(t_two_sided_p(1.959_963_984_540_054, 1e7), 0.05, 1e-6));
        assert!(close(t_two_sided_p(0.0, 5.0), 1.0, 1e-15));
        assert!(close(t_two_sided_p(2.0, 10.0), 0.073_388_034_770_4, 1e-10));
    }

    #[test]
    fn welch_reproduces_r_on_the_sleep_data() {
        // R: t.test(extra ~ group, data = sleep) gives t = -1.8608, df = 17.776, p = 0.07939.
        let g1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
        let g2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
        let w = Welch::test(&g2, &g1).unwrap();
        assert!(close(w.t, -1.8608, 1e-4), "{w:?}");
        assert!(close(w.df, 17.776, 1e-3), "{w:?}");
        assert!(close(w.p, 0.07939, 1e-5), "{w:?}");
        let swapped = Welch::test(&g1, &g2).unwrap();
        assert!(close(swapped.t, -w.t, 1e-12) && close(swapped.p, w.p, 1e-12));
    }

    #[test]
    fn welch_without_enough_values_or_spread() {
        assert_eq!(Welch::test(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(Welch::test(&[1.0, f64::NAN], &[1.0, 2.0]), None);
        assert_eq!(Welch::test(&[3.0, 3.0], &[3.0, 3.0, 3.0]).unwrap().p, 1.0);
        let apart = Welch::test(&[3.0, 3.0], &[4.0, 4.0]).unwrap();
        assert_eq!((apart.p, apart.t), (0.0, f64::INFINITY));
        let one_sided_spread = Welch::test(&[3.0, 3.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(
            close(one_sided_spread.df, 2.0, 1e-12),
            "{one_sided_spread:?}"
        );
    }
}
