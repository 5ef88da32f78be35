//! Units as people type them: durations (`10s`, `1m`, `500ms`, a bare number of seconds) and
//! percentile lists (`50,90,99.9`).

use crate::{invalid, PlanError};
use std::time::Duration;

/// Parses a duration such as `10s`, `1m30s`, `250ms` or `5` (seconds).
pub fn parse_duration(flag: &str, text: &str) -> Result<Duration, PlanError> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(t).map_err(|_| {
        invalid(format!(
            "{flag} '{text}' is not a duration: use a number with a unit, such as 500ms, 10s, 1m or 1h"
        ))
    })
}

/// Parses a comma-separated list of percentiles in (0, 100].
pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, PlanError> {
    let bad = |item: &str| {
        invalid(format!(
            "--percentiles '{item}' is not a percentile: give numbers above 0 and up to 100, such as 50,99,99.9"
        ))
    };
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let p: f64 = item.parse().map_err(|_| bad(item))?;
        if !(p > 0.0 && p <= 100.0) {
            return Err(bad(item));
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err(bad(text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_common_units() {
        assert_eq!(
            parse_duration("-d", "10s").unwrap(),
            Duration::from_secs(10)
        );
        assert_eq!(parse_duration("-d", "1m").unwrap(), Duration::from_secs(60));
        assert_eq!(
            parse_duration("-d", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(parse_duration("-d", "5").unwrap(), Duration::from_secs(5));
        assert_eq!(
            parse_duration("-d", "1.5").unwrap(),
            Duration::from_millis(1500)
        );
        let e = parse_duration("-d", "ten").unwrap_err().to_string();
        assert!(e.contains("-d 'ten'") && e.contains("10s"), "{e}");
        assert!(parse_duration("-d", "-3").is_err());
    }

    #[test]
    fn percentiles_are_validated() {
        assert_eq!(
            parse_percentiles("50, 99.9,100").unwrap(),
            vec![50.0, 99.9, 100.0]
        );
        assert!(parse_percentiles("0").is_err());
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("p99").is_err());
        assert!(parse_percentiles("").is_err());
    }
}
