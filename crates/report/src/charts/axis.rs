//! Axes of the report's charts: how a value maps onto the drawing (linear, logarithmic, or the
//! HdrHistogram "nines" scale of a percentile spectrum), where the ticks go (1-2-5 steps, so a
//! tick reads `2ms`, never `1.87ms`) and how a tick is labelled. The drawing code sees only
//! coordinates and the ticks chosen here, so every chart has one coordinate type.

use loadbench_model::human as units;

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// From zero (or the smallest value, when negative) up to the largest value.
    Linear,
    /// Powers of ten, for values spanning several magnitudes (latency as load rises).
    Log,
    /// Percentiles 0–100 as "nines": 0%, 90%, 99%, 99.9%, … equally spaced, so the tail gets
    /// as much room as the median (the HdrHistogram percentile plot).
    Nines,
}

/// What the numbers on an axis are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Nanoseconds, labelled `20µs`, `1.5ms`.
    Nanos,
    /// Requests per second, labelled `950`, `12.5k`.
    Rate,
    /// Seconds of the measured window, labelled `10s`.
    Seconds,
    /// A percentile, 0–100.
    Percentile,
    /// CPU use in cores (1 = one core busy), labelled `0.5`.
    Cores,
    /// Mebibytes (values already divided by 2^20, so ticks fall on round MiB), `20MiB`.
    Mebibytes,
    /// A share in percent (values already multiplied by 100), `0.5%`.
    Percent,
}

/// One axis: its scale, what it measures and its title.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub title: &'static str,
    pub scale: Scale,
    pub unit: Unit,
}

/// The drawable span of an axis, in coordinates, with its ticks (also coordinates).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

/// Most nines on a spectrum axis: 99.999%.
pub(crate) const MAX_NINES: f64 = 5.0;

impl Axis {
    /// The coordinate of a value, `None` where the scale cannot show it (zero on a log axis).
    pub(crate) fn coord(&self, v: f64) -> Option<f64> {
        let c = match self.scale {
            Scale::Linear => v,
            Scale::Log if v > 0.0 => v.log10(),
            Scale::Log => return None,
            Scale::Nines => -(1.0 - v / 100.0).log10(),
        };
        c.is_finite().then_some(c)
    }

    /// The value at a coordinate (the inverse of [`Axis::coord`]).
    pub(crate) fn value(&self, c: f64) -> f64 {
        match self.scale {
            Scale::Linear => c,
            Scale::Log => 10f64.powf(c),
            Scale::Nines => 100.0 * (1.0 - 10f64.powf(-c)),
        }
    }

    /// The span that holds every given coordinate, with a little room above them when
    /// `headroom` (the vertical axis).
    pub(crate) fn span(&self, coords: &[f64], headroom: bool) -> Span {
        let lo = coords.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = coords.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let room = if headroom { HEADROOM } else { 1.0 };
        match self.scale {
            Scale::Linear => linear_span(lo.min(0.0), hi * room),
            Scale::Log => log_span(lo, hi + room.log10()),
            Scale::Nines => nines_span(hi),
        }
    }

    /// A tick's label: `2ms`, `12.5k`, `30s`, `99.9%`.
    pub(crate) fn label(&self, c: f64) -> String {
        if self.scale == Scale::Nines {
            return nines_label(c);
        }
        let v = self.value(c);
        match self.unit {
            Unit::Nanos => trim_zeros(&units::duration_ns(v)),
            Unit::Rate => trim_zeros(&units::si(v)),
            Unit::Seconds => format!("{}s", trim_zeros(&format!("{v:.2}"))),
            Unit::Percentile => units::percentile_label(v),
            Unit::Cores => trim_zeros(&format!("{v:.2}")),
            Unit::Mebibytes => format!("{}MiB", trim_zeros(&format!("{v:.2}"))),
            Unit::Percent => format!("{}%", trim_zeros(&format!("{v:.2}"))),
        }
    }
}

/// Room above the highest value, so that the top line does not run along the frame.
const HEADROOM: f64 = 1.08;
/// About this many ticks on a linear axis.
const TICKS: f64 = 6.0;

fn linear_span(lo: f64, hi: f64) -> Span {
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let step = nice_step((hi - lo) / TICKS);
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    let count = ((hi - lo) / step).round() as i64;
    let ticks = (0..=count).map(|i| lo + i as f64 * step).collect();
    Span { lo, hi, ticks }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|&m| m * magnitude >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0);
    m * magnitude
}

/// Whole decades around the values; ticks at 1, 2 and 5 of each when there are few decades.
fn log_span(lo: f64, hi: f64) -> Span {
    let lo = lo.floor();
    let hi = hi.ceil().max(lo + 1.0);
    let multiples: &[f64] = if hi - lo <= 3.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let decades = (lo as i32)..(hi as i32);
    let mut ticks: Vec<f64> = decades
        .flat_map(|d| multiples.iter().map(move |m| d as f64 + m.log10()))
        .collect();
    ticks.push(hi);
    Span { lo, hi, ticks }
}

/// From 0% to the nines the data reaches (at least 99%, at most [`MAX_NINES`]).
fn nines_span(hi: f64) -> Span {
    // 3.0000000001 nines is 99.9% with rounding noise, not a reason to show 99.99%.
    let hi = (hi - 1e-6).ceil().clamp(2.0, MAX_NINES);
    let mut ticks: Vec<f64> = (0..=hi as i32).map(f64::from).collect();
    // The median sits at 0.3 nines, between "0%" and "90%": without its own tick it reads as 30%.
    ticks.insert(1, P50);
    Span { lo: 0.0, hi, ticks }
}

/// The coordinate of the median on the nines scale.
const P50: f64 = std::f64::consts::LOG10_2;

/// `0%`, `90%`, `99%`, `99.9%`, … for whole nines; the percentile otherwise.
fn nines_label(c: f64) -> String {
    if (c - P50).abs() < 1e-9 {
        return "p50".to_string();
    }
    let n = c.round();
    if (c - n).abs() > 1e-9 || n < 0.0 {
        return units::percentile_label((100.0 * (1.0 - 10f64.powf(-c)) * 1e3).round() / 1e3);
    }
    let n = n as usize;
    match n {
        0 => "0%".to_string(),
        1 => "90%".to_string(),
        2 => "99%".to_string(),
        _ => format!("99.{}%", "9".repeat(n - 2)),
    }
}

/// `2.00ms` → `2ms`, `12.50k` → `12.5k`, `950.00` → `950`.
fn trim_zeros(text: &str) -> String {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    };
    format!("{number}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(scale: Scale, unit: Unit) -> Axis {
        Axis {
            title: "",
            scale,
            unit,
        }
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_values_with_headroom() {
        let a = axis(Scale::Linear, Unit::Nanos);
        let span = a.span(&[0.0, 4_700_000.0], true);
        assert_eq!(span.lo, 0.0);
        assert!(span.hi >= 4_700_000.0 * HEADROOM);
        let labels: Vec<String> = span.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["0ns", "1ms", "2ms", "3ms", "4ms", "5ms", "6ms"]);
    }

    #[test]
    fn a_single_value_still_gets_a_span() {
        let span = axis(Scale::Linear, Unit::Rate).span(&[0.0], true);
        assert!(span.hi > span.lo);
        let span = axis(Scale::Log, Unit::Nanos).span(&[3.0], true);
        assert!(span.hi > span.lo);
        let span = axis(Scale::Linear, Unit::Rate).span(&[], false);
        assert!(span.hi > span.lo);
    }

    #[test]
    fn log_ticks_are_decades_labelled_in_units() {
        let a = axis(Scale::Log, Unit::Nanos);
        let coords: Vec<f64> = [20_000.0, 300_000_000.0]
            .iter()
            .map(|&v| a.coord(v).unwrap())
            .collect();
        let span = a.span(&coords, false);
        let labels: Vec<String> = span.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["10µs", "100µs", "1ms", "10ms", "100ms", "1s"]);
        assert_eq!(a.coord(0.0), None);
    }

    #[test]
    fn nines_axis_spaces_the_tail_evenly() {
        let a = axis(Scale::Nines, Unit::Percentile);
        assert!((a.coord(99.9).unwrap() - 3.0).abs() < 1e-9);
        assert!((a.value(2.0) - 99.0).abs() < 1e-9);
        let span = a.span(&[0.0, 4.2], true);
        let labels: Vec<String> = span.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(
            labels,
            ["0%", "p50", "90%", "99%", "99.9%", "99.99%", "99.999%"]
        );
        assert!((a.value(span.ticks[1]) - 50.0).abs() < 1e-9);
        assert_eq!(a.span(&[0.0, 0.5], false).hi, 2.0);
    }

    #[test]
    fn labels_drop_needless_decimals() {
        assert_eq!(trim_zeros("2.50ms"), "2.5ms");
        assert_eq!(trim_zeros("950.00"), "950");
        assert_eq!(trim_zeros("12.34k"), "12.34k");
        assert_eq!(trim_zeros("800ns"), "800ns");
        assert_eq!(axis(Scale::Linear, Unit::Seconds).label(10.0), "10s");
    }
}
