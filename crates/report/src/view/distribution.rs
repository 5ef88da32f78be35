//! Figures the text report derives from a latency histogram that the model does not offer:
//! hey's response-time histogram (its bars log-spaced over the distribution's body) and
//! wrk's "+/- Stdev" share. Both walk the HDR histogram's
//! recorded buckets, so they cost nothing per request and never need the raw samples.

use loadbench_model::Histo;

/// How many bars hey draws.
pub(crate) const BAR_COUNT: u64 = 10;

/// One bar of the response-time histogram: samples in `(previous upper, upper_ns]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bar {
    pub upper_ns: u64,
    pub count: u64,
}

/// Where the body of the distribution starts and ends: its bars span p0.1 to p90 on a log
/// scale, so a few slow outliers (or one fast one) cannot squeeze every other request into one
/// bar; then a bar to p99 and a last one to the max.
const BODY_FROM: f64 = 0.1;
const BODY_TO: f64 = 90.0;
const TAIL: f64 = 99.0;

/// Eight log-spaced bars over the body of the distribution (p0.1 to p90; the first also holds
/// the fastest 0.1%), a bar to p99 and a last one to the max: ten in all, fewer when edges
/// coincide. Empty for an empty histogram; one bar when every sample fell into the same HDR
/// bucket, since there is no span to divide. A bar holds most of the requests only when they
/// took (nearly) the same time.
pub(crate) fn bars(hist: &Histo) -> Vec<Bar> {
    if hist.is_empty() {
        return Vec::new();
    }
    let (min, max) = (hist.min_ns(), hist.max_ns());
    if max <= min {
        return vec![Bar {
            upper_ns: max,
            count: hist.len(),
        }];
    }
    let at = |p: f64| hist.percentile_ns(p).clamp(min.max(1), max);
    let (low, body, tail) = (at(BODY_FROM), at(BODY_TO), at(TAIL));
    let mut uppers = if body > low && body < max {
        let mut edges = log_edges(low, body, BAR_COUNT - 2);
        edges.extend([tail, max]);
        edges
    } else {
        log_edges(low, max, BAR_COUNT)
    };
    uppers.dedup();
    uppers.retain(|&e| e > 0);
    let mut bars: Vec<Bar> = Vec::with_capacity(uppers.len());
    for upper_ns in uppers {
        if bars.last().is_none_or(|b: &Bar| upper_ns > b.upper_ns) {
            bars.push(Bar { upper_ns, count: 0 });
        }
    }
    let last = bars.len() - 1;
    for (value, count) in hist.recorded_buckets() {
        let i = bars.partition_point(|b| b.upper_ns < value).min(last);
        bars[i].count += count;
    }
    bars
}

/// `n` upper edges spaced evenly in log between `low` and `high` (the last is `high`),
/// strictly increasing: edges that round to the same nanosecond are one.
fn log_edges(low: u64, high: u64, n: u64) -> Vec<u64> {
    let (a, b) = ((low.max(1) as f64).ln(), (high.max(1) as f64).ln());
    let mut edges: Vec<u64> = Vec::with_capacity(n as usize);
    for i in 1..=n {
        let edge = if i == n {
            high
        } else {
            (a + (b - a) * i as f64 / n as f64).exp().round() as u64
        };
        if edges.last().is_none_or(|&last| edge > last) {
            edges.push(edge);
        }
    }
    edges
}

/// Share of samples within one standard deviation of the mean (wrk's "+/- Stdev"), or `None`
/// for an empty histogram.
pub(crate) fn within_stdev(hist: &Histo) -> Option<f64> {
    if hist.is_empty() {
        return None;
    }
    let (mean, stdev) = (hist.mean_ns(), hist.stdev_ns());
    let (low, high) = (mean - stdev, mean + stdev);
    let inside: u64 = hist
        .recorded_buckets()
        .filter(|&(value, _)| (low..=high).contains(&(value as f64)))
        .map(|(_, count)| count)
        .sum();
    Some(inside as f64 / hist.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histo(values: &[u64]) -> Histo {
        let mut h = Histo::new();
        values.iter().for_each(|&v| h.record_ns(v));
        h
    }

    #[test]
    fn bars_sum_to_the_total_count() {
        let values: Vec<u64> = (0..5_000u64)
            .map(|i| 20_000 + (i * i) % 3_000_000)
            .collect();
        let h = histo(&values);
        let bars = bars(&h);
        assert_eq!(bars.len(), BAR_COUNT as usize);
        assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), h.len());
        assert_eq!(bars.last().unwrap().upper_ns, h.max_ns());
        assert!(bars.windows(2).all(|w| w[0].upper_ns < w[1].upper_ns));
    }

    #[test]
    fn bars_put_extremes_in_the_outer_buckets() {
        let bars = bars(&histo(&[100, 100, 150, 200]));
        assert_eq!(bars.len(), BAR_COUNT as usize);
        assert_eq!(bars[0].count, 2);
        assert_eq!(bars[9].count, 1);
        assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), 4);
        // Log-spaced from 100 to 200: 150 lies in (141, 152], the sixth bar.
        assert_eq!(bars[5].count, 1, "{bars:?}");
    }

    /// The largest bar's share of the requests.
    fn largest_share(bars: &[Bar]) -> f64 {
        let total: u64 = bars.iter().map(|b| b.count).sum();
        bars.iter().map(|b| b.count).max().unwrap() as f64 / total as f64
    }

    /// Issue 35 point 8: 100,000 requests between 1 and 5 ms and a few outliers up to 2 s once
    /// put 98,783 of them in the first of ten even buckets. The buckets follow the data: none
    /// holds more than half, the last still ends at the max, and nothing is lost.
    #[test]
    fn outliers_do_not_squeeze_the_body_into_one_bucket() {
        let mut values: Vec<u64> = (0..98_800u64)
            .map(|i| 1_000_000 + (i * 7_919) % 4_000_000)
            .collect();
        values.extend((0..1_200u64).map(|i| 50_000_000 + i * 1_600_000));
        let h = histo(&values);
        let bars = bars(&h);
        assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), 100_000);
        assert_eq!(bars.last().unwrap().upper_ns, h.max_ns());
        assert!(largest_share(&bars) <= 0.5, "{bars:?}");
        assert!(bars.len() >= 8, "{bars:?}");
    }

    /// Skewed data, a long-tailed and an exponential-like one, spread over the bars too.
    #[test]
    fn skewed_distributions_spread_over_the_bars() {
        // exp(-ln(u)) style: a steep head at 1 ms and a tail to 20 ms and beyond.
        let exponential: Vec<u64> = (1..=20_000u64)
            .map(|i| (1_000_000.0 * -(i as f64 / 20_001.0).ln()) as u64 + 1_000)
            .collect();
        // Log-uniform from 100 µs to 1 s.
        let long_tail: Vec<u64> = (0..20_000u64)
            .map(|i| (100_000.0 * 10f64.powf(4.0 * i as f64 / 20_000.0)) as u64)
            .collect();
        for values in [exponential, long_tail] {
            let h = histo(&values);
            let bars = bars(&h);
            assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), h.len());
            assert!(largest_share(&bars) <= 0.5, "{bars:?}");
        }
    }

    /// A loopback run's shape: a narrow peak at 200-300 µs, a shoulder to 1 ms and a few
    /// slow requests to 6 ms. The peak spreads over several bars.
    #[test]
    fn a_narrow_peak_with_a_tail_spreads_over_several_bars() {
        let mut values: Vec<u64> = (0..500u64).map(|i| 200_000 + i * 200).collect();
        values.extend((0..60u64).map(|i| 300_000 + i * 11_000));
        values.extend((0..20u64).map(|i| 1_000_000 + i * 250_000));
        let bars = bars(&histo(&values));
        assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), 580);
        assert!(largest_share(&bars) <= 0.5, "{bars:?}");
        let peak = bars.iter().filter(|b| b.upper_ns <= 310_000).count();
        assert!(peak >= 3, "{bars:?}");
    }

    /// Nearly all requests at one time is degenerate: that bucket may hold them.
    #[test]
    fn a_point_mass_may_fill_one_bucket() {
        let mut values = vec![2_000_000u64; 9_990];
        values.extend([1_000_000, 3_000_000, 9_000_000]);
        let bars = bars(&histo(&values));
        assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), 9_993);
        assert!(largest_share(&bars) > 0.99, "{bars:?}");
    }

    #[test]
    fn bars_of_a_single_value_collapse_to_one() {
        let bars = bars(&histo(&[500, 500, 500]));
        assert_eq!(
            bars,
            vec![Bar {
                upper_ns: 500,
                count: 3
            }]
        );
    }

    #[test]
    fn bars_of_an_empty_histogram_are_empty() {
        assert!(bars(&Histo::new()).is_empty());
        assert!(within_stdev(&Histo::new()).is_none());
    }

    #[test]
    fn within_stdev_of_known_values() {
        // mean 100, stdev ~51.6: 60, 100, 100, 140 lie inside, 20 and 180 outside.
        let share = within_stdev(&histo(&[20, 60, 100, 100, 140, 180])).unwrap();
        assert!((share - 4.0 / 6.0).abs() < 1e-9, "{share}");
    }
}
