//! Sizes and delays as people type them (`1KiB`, `2m`, `200ms`, `exp:20ms`). The server parses
//! them from URLs on every request that carries one, and the CLI parses `--delay` and
//! `--body-size` with the same functions, so both accept exactly the same spellings.
//!
//! Sizes: `k`, `m`, `g`, `t` (optionally followed by `b`) are decimal (1k = 1000); `ki`, `mi`,
//! `gi`, `ti` (optionally followed by `b`) are binary (1KiB = 1024). Case does not matter.
//! Durations: a number followed by `ns`, `us`, `ms`, `s`, `m` or `h`, or a bare number of
//! seconds. Sizes and durations follow the one rule of [`loadbench_units`], shared with every
//! flag and scenario key; this module adds the delay distributions.

use std::fmt;
use std::time::Duration;

use crate::rng::Rng;
use crate::UpstreamError;

/// The longest delay the server accepts or samples; longer ones are almost surely typos.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

pub(crate) const DELAY_FORMS: &str =
    "expected a duration like 200ms or 1s, or uniform:10ms..50ms, exp:20ms, normal:50ms,10ms";

/// How long the server waits before answering: fixed, or drawn per request from a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelaySpec {
    /// Always the same delay (`200ms`).
    Fixed(Duration),
    /// Uniform between two bounds (`uniform:10ms..50ms`).
    Uniform {
        /// The shortest delay drawn.
        low: Duration,
        /// The longest delay drawn.
        high: Duration,
    },
    /// Exponential with the given mean (`exp:20ms`).
    Exp {
        /// The average delay.
        mean: Duration,
    },
    /// Normal with mean and standard deviation, clamped at zero (`normal:50ms,10ms`).
    Normal {
        /// The average delay.
        mean: Duration,
        /// The standard deviation around it.
        stddev: Duration,
    },
}

impl DelaySpec {
    /// Draws one delay; every result lies in `0..=MAX_DELAY`.
    pub(crate) fn sample(&self, rng: &Rng) -> Duration {
        let secs = match *self {
            Self::Fixed(d) => return d,
            Self::Uniform { low, high } => {
                low.as_secs_f64() + (high - low).as_secs_f64() * rng.next_f64()
            }
            Self::Exp { mean } => -mean.as_secs_f64() * (1.0 - rng.next_f64()).ln(),
            Self::Normal { mean, stddev } => {
                mean.as_secs_f64() + stddev.as_secs_f64() * standard_normal(rng)
            }
        };
        Duration::from_secs_f64(secs.clamp(0.0, MAX_DELAY.as_secs_f64()))
    }
}

/// Box–Muller; `1 - u` keeps the logarithm's argument in `(0, 1]`.
fn standard_normal(rng: &Rng) -> f64 {
    let (u1, u2) = (1.0 - rng.next_f64(), rng.next_f64());
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl fmt::Display for DelaySpec {
    /// The canonical spelling, which `parse_delay` reads back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = DurationText;
        match *self {
            Self::Fixed(x) => write!(f, "{}", d.of(x)),
            Self::Uniform { low, high } => write!(f, "uniform:{}..{}", d.of(low), d.of(high)),
            Self::Exp { mean } => write!(f, "exp:{}", d.of(mean)),
            Self::Normal { mean, stddev } => write!(f, "normal:{},{}", d.of(mean), d.of(stddev)),
        }
    }
}

pub(crate) struct DurationText;

impl DurationText {
    /// The largest unit that represents the duration exactly.
    pub(crate) fn of(&self, d: Duration) -> String {
        let ns = d.as_nanos();
        let unit = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
            .into_iter()
            .find(|(n, _)| ns.checked_rem(*n) == Some(0));
        match unit {
            Some((n, name)) => format!("{}{name}", ns / n),
            None => format!("{ns}ns"),
        }
    }
}

/// Parses a delay: `200ms`, `1.5s`, `uniform:10ms..50ms`, `exp:20ms` (mean) or
/// `normal:50ms,10ms` (mean, standard deviation).
pub fn parse_delay(s: &str) -> Result<DelaySpec, UpstreamError> {
    parse_delay_inner(s.trim()).map_err(|reason| UpstreamError::InvalidDelay {
        input: s.to_string(),
        reason,
    })
}

fn parse_delay_inner(s: &str) -> Result<DelaySpec, String> {
    let Some((kind, args)) = s.split_once(':') else {
        return Ok(DelaySpec::Fixed(parse_duration(s)?));
    };
    match kind.trim().to_ascii_lowercase().as_str() {
        "uniform" => parse_uniform(args),
        "exp" => Ok(DelaySpec::Exp {
            mean: parse_duration(args)?,
        }),
        "normal" => parse_normal(args),
        other => Err(format!("unknown distribution {other:?}; {DELAY_FORMS}")),
    }
}

fn parse_uniform(args: &str) -> Result<DelaySpec, String> {
    let (low, high) = args
        .split_once("..")
        .ok_or("uniform needs two bounds, like uniform:10ms..50ms")?;
    let (low, high) = (parse_duration(low)?, parse_duration(high)?);
    if low > high {
        return Err("the lower bound of uniform is above the upper one".into());
    }
    Ok(DelaySpec::Uniform { low, high })
}

fn parse_normal(args: &str) -> Result<DelaySpec, String> {
    let (mean, stddev) = args
        .split_once(',')
        .ok_or("normal needs a mean and a standard deviation, like normal:50ms,10ms")?;
    Ok(DelaySpec::Normal {
        mean: parse_duration(mean)?,
        stddev: parse_duration(stddev)?,
    })
}

/// A duration by the shared rule ([`loadbench_units::duration`]: a bare number is seconds),
/// at most [`MAX_DELAY`].
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = loadbench_units::duration(s).map_err(|e| format!("{e}; {DELAY_FORMS}"))?;
    if d > MAX_DELAY {
        return Err("a delay can be at most 1h".into());
    }
    Ok(d)
}

/// Parses a byte count by the shared rule ([`loadbench_units::size`]): `100`, `1k` (1000),
/// `1KiB` (1024), `2m`, `1.5MiB`, `1GiB`.
pub fn parse_size(s: &str) -> Result<u64, UpstreamError> {
    loadbench_units::size(s).map_err(|e| UpstreamError::InvalidSize {
        input: s.to_string(),
        reason: e.to_string(),
    })
}

/// Decodes `%XX` escapes and `+` in a query value; values without either borrow the input.
pub(crate) fn percent_decode(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains(['%', '+']) {
        return s.into();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        let (byte, used) = match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => (byte, 3),
            (b'+', _) => (b' ', 1),
            (other, _) => (other, 1),
        };
        out.push(byte);
        i += used;
    }
    String::from_utf8_lossy(&out).into_owned().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::DEFAULT_SEED;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn sizes_accept_decimal_and_binary_suffixes() {
        let cases = [
            ("0", 0),
            ("100", 100),
            ("1k", 1000),
            ("1K", 1000),
            ("1kb", 1000),
            ("1KiB", 1024),
            ("1ki", 1024),
            ("2m", 2_000_000),
            ("1MiB", 1 << 20),
            ("1.5KiB", 1536),
            ("1GiB", 1 << 30),
            (" 7 b ", 7),
        ];
        for (input, want) in cases {
            assert_eq!(parse_size(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn sizes_reject_garbage_with_the_accepted_forms() {
        for input in ["", "abc", "1x", "-1", "1.2.3k", "k", "99999999999999999999"] {
            let err = parse_size(input).unwrap_err().to_string();
            assert!(err.starts_with("invalid size"), "{input}: {err}");
        }
        let err = parse_size("12 parsecs").unwrap_err().to_string();
        assert!(err.contains("1k (1000), 1KiB (1024)"), "{err}");
    }

    #[test]
    fn fixed_delays_parse_with_units() {
        let cases = [
            ("200ms", ms(200)),
            ("1s", ms(1000)),
            ("1.5s", ms(1500)),
            ("250us", Duration::from_micros(250)),
            ("2m", Duration::from_secs(120)),
            ("0", Duration::ZERO),
            ("2", Duration::from_secs(2)),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_delay(input).unwrap(),
                DelaySpec::Fixed(want),
                "{input}"
            );
        }
    }

    #[test]
    fn distributions_parse() {
        let uniform = DelaySpec::Uniform {
            low: ms(10),
            high: ms(50),
        };
        assert_eq!(parse_delay("uniform:10ms..50ms").unwrap(), uniform);
        assert_eq!(
            parse_delay("exp:20ms").unwrap(),
            DelaySpec::Exp { mean: ms(20) }
        );
        let normal = DelaySpec::Normal {
            mean: ms(50),
            stddev: ms(10),
        };
        assert_eq!(parse_delay("normal:50ms,10ms").unwrap(), normal);
    }

    #[test]
    fn delays_reject_garbage_with_a_reason() {
        let cases = [
            ("abc", "expected a duration"),
            ("5000", "at most 1h"),
            ("5 parsecs", "is not a duration"),
            ("poisson:1s", "unknown distribution"),
            ("uniform:50ms..10ms", "lower bound"),
            ("uniform:10ms", "two bounds"),
            ("normal:50ms", "standard deviation"),
            ("2h", "at most 1h"),
        ];
        for (input, reason) in cases {
            let err = parse_delay(input).unwrap_err().to_string();
            assert!(err.starts_with("invalid delay"), "{input}: {err}");
            assert!(err.contains(reason), "{input}: {err}");
        }
    }

    #[test]
    fn display_round_trips() {
        for input in [
            "200ms",
            "1s",
            "uniform:10ms..50ms",
            "exp:20ms",
            "normal:50ms,10ms",
        ] {
            assert_eq!(parse_delay(input).unwrap().to_string(), input);
        }
    }

    #[test]
    fn samples_stay_in_range_with_the_right_mean() {
        let rng = Rng::new(DEFAULT_SEED);
        let mean_of = |spec: DelaySpec| {
            let draws: Vec<f64> = (0..20_000)
                .map(|_| spec.sample(&rng).as_secs_f64() * 1e3)
                .collect();
            assert!(draws.iter().all(|&d| d >= 0.0));
            draws.iter().sum::<f64>() / draws.len() as f64
        };
        let uniform = mean_of(parse_delay("uniform:10ms..50ms").unwrap());
        assert!((uniform - 30.0).abs() < 1.0, "{uniform}");
        let exp = mean_of(parse_delay("exp:20ms").unwrap());
        assert!((exp - 20.0).abs() < 1.0, "{exp}");
        let normal = mean_of(parse_delay("normal:50ms,10ms").unwrap());
        assert!((normal - 50.0).abs() < 1.0, "{normal}");
        let clamped = mean_of(parse_delay("normal:0ms,10ms").unwrap());
        assert!(clamped > 3.0, "negative draws clamp to zero: {clamped}");
    }

    #[test]
    fn percent_decoding_handles_escapes_and_plus() {
        assert_eq!(percent_decode("uniform%3A10ms..50ms"), "uniform:10ms..50ms");
        assert_eq!(percent_decode("a+b%2Cc"), "a b,c");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
