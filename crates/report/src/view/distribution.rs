//! Figures the text report derives from a latency histogram that the model does not offer:
//! hey's evenly spaced buckets and wrk's "+/- Stdev" share. Both walk the HDR histogram's
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

/// Evenly spaced buckets between min and max, hey style. Empty for an empty histogram; one bar
/// when every sample fell into the same HDR bucket, since there is no span to divide.
pub(crate) fn bars(hist: &Histo) -> Vec<Bar> {
    if hist.is_empty() {
        return Vec::new();
    }
    let (min, max) = (hist.min_ns(), hist.max_ns());
    let n = if max > min { BAR_COUNT } else { 1 };
    let width = (max - min) as f64 / n as f64;
    let mut bars: Vec<Bar> = (1..=n)
        .map(|i| Bar {
            upper_ns: upper(min, width, i),
            count: 0,
        })
        .collect();
    bars[n as usize - 1].upper_ns = max;
    for (value, count) in hist.recorded_buckets() {
        bars[bar_index(value, min, width, n)].count += count;
    }
    bars
}

fn upper(min: u64, width: f64, i: u64) -> u64 {
    min + (width * i as f64).round() as u64
}

/// The bar whose half-open range `(upper - width, upper]` holds `value`; `min` goes to the first.
fn bar_index(value: u64, min: u64, width: f64, n: u64) -> usize {
    if width <= 0.0 || value <= min {
        return 0;
    }
    let position = ((value - min) as f64 / width).ceil() as u64;
    (position.clamp(1, n) - 1) as usize
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
        assert_eq!(bars[0].count, 2);
        assert_eq!(bars[4].count, 1);
        assert_eq!(bars[9].count, 1);
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
