//! Units as people type them, parsed once at the edge.
//!
//! In: text from a command-line flag, a scenario file or a URL query (`10s`, `1.5KiB`, `5k`,
//! `0.1%`, `50,99,99.9`, `Name: value`). Out: typed values (`Duration`, bytes, requests per
//! second, a share in [0, 1], percentiles, a header pair), or a [`UnitError`] whose message is
//! one line saying what was expected. The caller adds which flag or key it came from.
//! Neighbours: the CLI's clap value parsers, the harness's scenario loader, the plan, and the
//! reference backend all call these functions, so every place accepts the same spellings.
//!
//! One rule for a bare number, everywhere: a duration without a unit is seconds (`5` = 5 s),
//! a size without a unit is bytes, a rate without a suffix is requests per second.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// Text that is not the unit expected; the message says what would be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

fn err(msg: impl Into<String>) -> UnitError {
    UnitError(msg.into())
}

/// The longest duration accepted anywhere: a year. Longer ones are typos (or overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

const DURATION_UNITS: &[(&str, f64)] = &[
    ("ns", 1e-9),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("sec", 1.0),
    ("m", 60.0),
    ("min", 60.0),
    ("h", 3600.0),
];

const DURATION_FORMS: &str =
    "use a number with a unit, such as 500ms, 10s, 1m30s or 1h (a bare number is seconds)";

/// Parses `10s`, `1m30s`, `250ms`, `1.5s`, `100us` or a bare number of seconds (`5`, `0.5`).
pub fn duration(text: &str) -> Result<Duration, UnitError> {
    let bad = || err(format!("'{text}' is not a duration: {DURATION_FORMS}"));
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let secs = match number_prefix(t) {
        (n, "") => n.parse::<f64>().map_err(|_| bad())?,
        _ => sum_of_groups(t).ok_or_else(bad)?,
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(bad());
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(err(format!(
            "'{text}' is longer than a year: give a shorter duration such as 10s or 1h"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `1m30s` → 90: every group is a number followed by a unit.
fn sum_of_groups(mut t: &str) -> Option<f64> {
    let mut total = 0.0;
    while !t.is_empty() {
        let (number, rest) = number_prefix(t);
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let (unit, tail) = rest.split_at(unit_len);
        let factor = DURATION_UNITS
            .iter()
            .find(|(name, _)| *name == unit.trim())?
            .1;
        total += number.parse::<f64>().ok()? * factor;
        t = tail.trim_start();
    }
    Some(total)
}

/// Splits `"12.5ms"` into `("12.5", "ms")`.
fn number_prefix(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

const SIZE_UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("b", 1),
    ("k", 1_000),
    ("kb", 1_000),
    ("ki", 1 << 10),
    ("kib", 1 << 10),
    ("m", 1_000_000),
    ("mb", 1_000_000),
    ("mi", 1 << 20),
    ("mib", 1 << 20),
    ("g", 1_000_000_000),
    ("gb", 1_000_000_000),
    ("gi", 1 << 30),
    ("gib", 1 << 30),
    ("t", 1_000_000_000_000),
    ("tb", 1_000_000_000_000),
    ("ti", 1 << 40),
    ("tib", 1 << 40),
];

/// Parses a byte count: `100`, `1k` (1000), `1KiB` (1024), `2m`, `1.5MiB`, `8GiB`.
pub fn size(text: &str) -> Result<u64, UnitError> {
    let bad = || {
        err(format!(
            "'{text}' is not a size: write it like 4096, 1k (1000), 1KiB (1024), 512MiB or 8GiB"
        ))
    };
    let (number, unit) = number_prefix(text.trim());
    let unit = unit.trim().to_ascii_lowercase();
    let factor = SIZE_UNITS
        .iter()
        .find(|(n, _)| *n == unit)
        .ok_or_else(bad)?
        .1;
    if let Ok(whole) = number.parse::<u64>() {
        return whole
            .checked_mul(factor)
            .ok_or_else(|| err(format!("'{text}' is too large")));
    }
    let bytes = number.parse::<f64>().map_err(|_| bad())? * factor as f64;
    if bytes >= u64::MAX as f64 {
        return Err(err(format!("'{text}' is too large")));
    }
    Ok(bytes as u64)
}

/// Parses requests per second: `500`, `2.5k`, `1M` (a non-negative, finite number).
pub fn rate(text: &str) -> Result<f64, UnitError> {
    count(text).ok_or_else(|| {
        err(format!(
            "'{text}' is not a rate: give requests per second, such as 1000, 2.5k or 1M"
        ))
    })
}

/// A rate or a range of rates: `1000` → (1000, None), `1000..20000` → (1000, Some(20000)).
pub fn rate_range(text: &str) -> Result<(f64, Option<f64>), UnitError> {
    let bad = || {
        err(format!(
            "'{text}' is not a rate: give requests per second, such as 1000, or a range such as 1000..20000"
        ))
    };
    match text.split_once("..") {
        Some((a, b)) => Ok((count(a).ok_or_else(bad)?, Some(count(b).ok_or_else(bad)?))),
        None => Ok((count(text).ok_or_else(bad)?, None)),
    }
}

/// A non-negative number with an optional `k`/`M` suffix: `500`, `2.5k`, `1M`.
fn count(s: &str) -> Option<f64> {
    let s = s.trim();
    let (digits, scale) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1e3),
        Some((i, 'M')) => (&s[..i], 1e6),
        _ => (s, 1.0),
    };
    let v: f64 = digits.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * scale)
}

/// A share from 0 to 1, as a percentage (`0.1%`) or a fraction (`0.001`).
pub fn share(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(err(format!(
            "'{text}' is not a share: give a percentage such as 5% or a fraction from 0 to 1 such as 0.05"
        ))),
    }
}

/// A comma-separated list of percentiles in (0, 100]: `50,90,99.9`.
pub fn percentiles(text: &str) -> Result<Vec<f64>, UnitError> {
    let bad = |item: &str| {
        err(format!(
            "'{item}' is not a percentile: give numbers above 0 and up to 100, such as 50,99,99.9"
        ))
    };
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => out.push(p),
            _ => return Err(bad(item)),
        }
    }
    if out.is_empty() {
        return Err(bad(text));
    }
    Ok(out)
}

/// A request header `Name: value` as a (name, value) pair, both trimmed.
pub fn header(text: &str) -> Result<(String, String), UnitError> {
    let bad = || {
        err(format!(
            "'{text}' is not a header: write it as 'Name: value'"
        ))
    };
    let (name, value) = text.split_once(':').ok_or_else(bad)?;
    let name = name.trim();
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(bad());
    }
    if value.contains(['\r', '\n']) {
        return Err(err(format!(
            "header '{name}' has a line break in its value: give it on one line"
        )));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// The most source addresses accepted: more would only cost memory, never add ports.
pub const MAX_SOURCE_ADDRS: u128 = 65_536;

const SOURCE_FORMS: &str =
    "give a range such as 127.0.0.2-127.0.0.9 or a comma list such as 127.0.0.2,127.0.0.3";

/// Source addresses to spread connections over: a range `127.0.0.2-127.0.0.9` (inclusive),
/// a comma list, or both (`127.0.0.2-127.0.0.5,127.0.0.9`); IPv4 or IPv6, one family.
pub fn source_addrs(text: &str) -> Result<Vec<IpAddr>, UnitError> {
    let mut out: Vec<IpAddr> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (first, last) = addr_range(item)?;
        // `last - first` (not + 1): the full IPv6 range would overflow.
        if out.len() as u128 + (last - first) >= MAX_SOURCE_ADDRS {
            return Err(err(format!(
                "'{text}' has more than {MAX_SOURCE_ADDRS} addresses: give a smaller range"
            )));
        }
        let v6 = item.contains(':');
        out.extend((first..=last).map(|n| ip_from(n, v6)));
    }
    match out.first() {
        None => Err(err(format!("'{text}' names no address: {SOURCE_FORMS}"))),
        Some(a) if out.iter().any(|b| b.is_ipv4() != a.is_ipv4()) => Err(err(format!(
            "'{text}' mixes IPv4 and IPv6: give addresses of one family (the target's)"
        ))),
        Some(_) => Ok(out),
    }
}

/// `a-b` or `a` as numbers `(first, last)`, first <= last.
fn addr_range(item: &str) -> Result<(u128, u128), UnitError> {
    let one = |t: &str| {
        t.trim()
            .parse::<IpAddr>()
            .map_err(|_| err(format!("'{t}' is not an IP address: {SOURCE_FORMS}")))
    };
    let (a, b) = match item.split_once('-') {
        Some((a, b)) => (one(a)?, one(b)?),
        None => (one(item)?, one(item)?),
    };
    if a.is_ipv4() != b.is_ipv4() {
        return Err(err(format!(
            "'{item}' mixes IPv4 and IPv6: give addresses of one family (the target's)"
        )));
    }
    let (first, last) = (ip_number(a), ip_number(b));
    if last < first {
        return Err(err(format!(
            "'{item}' is an empty range (it ends before it starts): give the lower address first"
        )));
    }
    Ok((first, last))
}

fn ip_number(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn ip_from(n: u128, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(n))
    } else {
        IpAddr::V4(Ipv4Addr::from(n as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_spelling_and_bare_seconds() {
        let d = |t: &str| duration(t).unwrap();
        assert_eq!(d("10s"), Duration::from_secs(10));
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d("250ms"), Duration::from_millis(250));
        assert_eq!(d("12.5ms"), Duration::from_micros(12_500));
        assert_eq!(d("100us"), Duration::from_micros(100));
        assert_eq!(d("2h"), Duration::from_secs(7200));
        assert_eq!(d("5"), Duration::from_secs(5));
        assert_eq!(d("1.5"), Duration::from_millis(1500));
        assert_eq!(d("0"), Duration::ZERO);
        assert_eq!(d(" 3s "), Duration::from_secs(3));
    }

    #[test]
    fn bad_durations_say_what_works() {
        for bad in ["ten", "", "-3", "5x", "s", "1e400", "10 parsecs"] {
            let e = duration(bad).unwrap_err().0;
            assert!(e.contains("500ms") && !e.contains('\n'), "{bad}: {e}");
        }
        assert!(duration("1000000h")
            .unwrap_err()
            .0
            .contains("longer than a year"));
    }

    #[test]
    fn sizes_are_decimal_or_binary() {
        assert_eq!(size("4096").unwrap(), 4096);
        assert_eq!(size("1k").unwrap(), 1000);
        assert_eq!(size("1KiB").unwrap(), 1024);
        assert_eq!(size("1.5MiB").unwrap(), 1_572_864);
        assert_eq!(size("8GiB").unwrap(), 8 << 30);
        assert_eq!(size("512MB").unwrap(), 512_000_000);
        assert!(size("12 parsecs").is_err());
        assert!(size("99999999999999TiB")
            .unwrap_err()
            .0
            .contains("too large"));
    }

    #[test]
    fn rates_ranges_shares_percentiles() {
        assert_eq!(rate("2.5k").unwrap(), 2500.0);
        assert_eq!(rate("1M").unwrap(), 1e6);
        assert!(rate("-5").is_err());
        assert_eq!(rate_range("10..20k").unwrap(), (10.0, Some(20_000.0)));
        assert_eq!(rate_range("7").unwrap(), (7.0, None));
        assert!(rate_range("1..x").is_err());
        assert_eq!(share("0.1%").unwrap(), 0.001);
        assert_eq!(share("0.05").unwrap(), 0.05);
        assert!(share("5").is_err());
        assert_eq!(
            percentiles("50, 99.9,100").unwrap(),
            vec![50.0, 99.9, 100.0]
        );
        for bad in ["0", "101", "p99", ""] {
            assert!(percentiles(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_are_name_value_pairs() {
        assert_eq!(
            header("Content-Type:  application/json ").unwrap(),
            ("Content-Type".into(), "application/json".into())
        );
        assert_eq!(
            header("X-Empty:").unwrap(),
            ("X-Empty".into(), String::new())
        );
        assert!(header("no colon").is_err());
        assert!(header("Bad Name: x").is_err());
        assert!(header(": x").is_err());
    }

    #[test]
    fn source_addrs_are_ranges_and_lists_of_one_family() {
        let v4 = |t: &str| source_addrs(t).unwrap();
        let ips = |l: &[&str]| {
            l.iter()
                .map(|a| a.parse::<IpAddr>().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            v4("127.0.0.2-127.0.0.5"),
            ips(&["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"])
        );
        assert_eq!(v4("127.0.0.9"), ips(&["127.0.0.9"]));
        assert_eq!(
            v4("127.0.0.2, 127.0.1.255-127.0.2.0"),
            ips(&["127.0.0.2", "127.0.1.255", "127.0.2.0"])
        );
        assert_eq!(v4("::1-::3"), ips(&["::1", "::2", "::3"]));
        assert_eq!(v4("127.0.0.0-127.0.255.255").len(), 65_536);
    }

    #[test]
    fn bad_source_addrs_say_what_is_wrong() {
        let e = |t: &str| source_addrs(t).unwrap_err().0;
        assert!(e("127.0.0.9-127.0.0.2").contains("empty range"));
        assert!(e("127.0.0.0-127.1.0.0").contains("more than 65536"));
        assert!(e("127.0.0.0-127.0.255.255,10.0.0.1").contains("more than 65536"));
        assert!(e("::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff").contains("more than 65536"));
        assert!(e("127.0.0.2,::1").contains("mixes IPv4 and IPv6"));
        assert!(e("127.0.0.2-::1").contains("mixes IPv4 and IPv6"));
        assert!(e("localhost").contains("not an IP address"));
        assert!(e("127.0.0.2-").contains("not an IP address"));
        assert!(e(" , ").contains("names no address"));
        for bad in ["x", "127.0.0.9-127.0.0.2", ""] {
            assert!(!e(bad).contains('\n'), "{bad}");
        }
    }
}
