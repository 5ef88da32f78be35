//! Human-scaled numbers for the text report: durations, byte counts, rates and percentile
//! labels. Every unit is chosen *after* rounding, so a value never prints as `1000.00µs` when it
//! is `1.00ms`, and every function accepts zero, NaN and infinities without panicking.

/// Shown wherever there is no measurement (empty histogram, zero requests).
pub const MISSING: &str = "-";

const DURATION_UNITS: [(&str, f64); 4] = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];
const BYTE_UNITS: [(&str, f64); 5] = [
    ("B", 1.0),
    ("KiB", 1024.0),
    ("MiB", 1024.0 * 1024.0),
    ("GiB", 1024.0 * 1024.0 * 1024.0),
    ("TiB", 1024.0 * 1024.0 * 1024.0 * 1024.0),
];
const COUNT_UNITS: [(&str, f64); 4] = [("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9)];

/// A duration in nanoseconds: `812ns`, `45.20µs`, `1.23ms`, `2.50s`.
pub fn duration_ns(ns: f64) -> String {
    scaled(ns, &DURATION_UNITS, 1000.0, 0)
}

/// A duration in microseconds, scaled like [`duration_ns`].
pub fn duration_us(us: f64) -> String {
    duration_ns(us * 1e3)
}

/// A configured duration in milliseconds, kept short when it is whole seconds: `10s`, `1.50s`.
pub fn duration_ms_short(ms: u64) -> String {
    if ms.is_multiple_of(1000) && ms > 0 {
        format!("{}s", ms / 1000)
    } else {
        duration_ns(ms as f64 * 1e6)
    }
}

/// How a step or round starts: ` after 2s warm-up`, or `, no warm-up` (never "0ns warm-up").
pub fn after_warmup(ms: u64) -> String {
    if ms == 0 {
        ", no warm-up".to_string()
    } else {
        format!(" after {} warm-up", duration_ms_short(ms))
    }
}

/// A byte count: `512B`, `1.50KiB`, `3.20MiB`, `1.00GiB`.
pub fn bytes(n: f64) -> String {
    scaled(n, &BYTE_UNITS, 1024.0, 0)
}

/// A count or rate with an SI suffix, wrk style: `950.00`, `12.34k`, `1.20M`.
pub fn si(n: f64) -> String {
    scaled(n, &COUNT_UNITS, 1000.0, 2)
}

/// A rate that stays exact-ish: `35123.45`.
pub fn rate(n: f64) -> String {
    if n.is_finite() {
        format!("{n:.2}")
    } else {
        MISSING.to_string()
    }
}

/// A count with thousands grouped: `12,400`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate as a whole number with thousands grouped, for lines a person reads as they go:
/// `17,240` (not `17239.50`); `-` when not finite.
pub fn rate_grouped(n: f64) -> String {
    if n.is_finite() {
        grouped(n.max(0.0).round() as u64)
    } else {
        MISSING.to_string()
    }
}

/// `1 thread`, `2 threads`: a count and its noun, which agree.
pub fn counted(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A rate without needless decimals: `1000`, `2.5`, `12500`.
pub fn rate_short(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        rate(n)
    }
}

/// A share in percent: `93.69%`.
pub fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.2}%", share * 100.0)
    } else {
        MISSING.to_string()
    }
}

/// A percentile label without trailing zeros: `50%`, `99.9%`, `99.99%`.
pub fn percentile_label(p: f64) -> String {
    format!("{p}%")
}

/// Picks the largest unit whose *rounded* value stays below `step`. The base unit prints
/// `base_decimals` decimals (none for ns and bytes), larger units two.
fn scaled(value: f64, units: &[(&str, f64)], step: f64, base_decimals: usize) -> String {
    if !value.is_finite() {
        return MISSING.to_string();
    }
    let decimals = |i: usize| if i == 0 { base_decimals } else { 2 };
    let fits = |i: usize| round_to(value.abs() / units[i].1, decimals(i)) < step;
    let index = (0..units.len())
        .find(|&i| fits(i))
        .unwrap_or(units.len() - 1);
    let (name, div) = units[index];
    format!("{:.*}{name}", decimals(index), value / div)
}

fn round_to(x: f64, decimals: usize) -> f64 {
    let scale = 10f64.powi(decimals as i32);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35 point 8: counts agree with their noun; rates a person reads as they go are
    /// whole and grouped.
    #[test]
    fn counts_agree_and_rates_group_their_thousands() {
        assert_eq!(counted(1, "stream"), "1 stream");
        assert_eq!(counted(0, "stream"), "0 streams");
        assert_eq!(counted(2, "request"), "2 requests");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(12_400), "12,400");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(rate_grouped(17_239.5), "17,240");
        assert_eq!(rate_grouped(0.4), "0");
        assert_eq!(rate_grouped(f64::NAN), MISSING);
    }

    #[test]
    fn no_warm_up_is_said_in_words() {
        assert_eq!(after_warmup(0), ", no warm-up");
        assert_eq!(after_warmup(2000), " after 2s warm-up");
    }

    #[test]
    fn durations_scale_at_each_boundary() {
        assert_eq!(duration_ns(0.0), "0ns");
        assert_eq!(duration_ns(812.0), "812ns");
        assert_eq!(duration_ns(999.0), "999ns");
        assert_eq!(duration_ns(999.6), "1.00µs");
        assert_eq!(duration_ns(1000.0), "1.00µs");
        assert_eq!(duration_ns(45_200.0), "45.20µs");
        assert_eq!(duration_ns(999_994.0), "999.99µs");
        assert_eq!(duration_ns(999_996.0), "1.00ms");
        assert_eq!(duration_ns(1_234_000.0), "1.23ms");
        assert_eq!(duration_ns(2_500_000_000.0), "2.50s");
        assert_eq!(duration_ns(3_600e9), "3600.00s");
    }

    #[test]
    fn durations_from_other_units() {
        assert_eq!(duration_us(45.2), "45.20µs");
        assert_eq!(duration_ms_short(10_000), "10s");
        assert_eq!(duration_ms_short(1_500), "1.50s");
        assert_eq!(duration_ms_short(0), "0ns");
    }

    #[test]
    fn bytes_scale_by_1024() {
        assert_eq!(bytes(0.0), "0B");
        assert_eq!(bytes(1023.0), "1023B");
        assert_eq!(bytes(1024.0), "1.00KiB");
        assert_eq!(bytes(1536.0), "1.50KiB");
        assert_eq!(bytes(1024.0 * 1024.0 - 1.0), "1.00MiB");
        assert_eq!(bytes(3.2 * 1024.0 * 1024.0), "3.20MiB");
        assert_eq!(bytes(1024f64.powi(3)), "1.00GiB");
        assert_eq!(bytes(1024f64.powi(4) * 2.0), "2.00TiB");
    }

    #[test]
    fn si_counts_and_rates() {
        assert_eq!(si(0.0), "0.00");
        assert_eq!(si(950.0), "950.00");
        assert_eq!(si(999.996), "1.00k");
        assert_eq!(si(12_340.0), "12.34k");
        assert_eq!(si(1_200_000.0), "1.20M");
        assert_eq!(rate(35_123.454), "35123.45");
        assert_eq!(percent(0.93694), "93.69%");
    }

    #[test]
    fn non_finite_values_print_missing() {
        assert_eq!(duration_ns(f64::NAN), MISSING);
        assert_eq!(bytes(f64::INFINITY), MISSING);
        assert_eq!(rate(f64::NAN), MISSING);
        assert_eq!(percent(f64::NAN), MISSING);
        assert_eq!(si(f64::NAN), MISSING);
    }

    #[test]
    fn percentile_labels_drop_trailing_zeros() {
        assert_eq!(percentile_label(50.0), "50%");
        assert_eq!(percentile_label(99.9), "99.9%");
        assert_eq!(percentile_label(99.99), "99.99%");
    }
}
