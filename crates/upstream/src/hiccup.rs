//! Hiccups: a periodic, server-wide stall like a stop-the-world GC pause. Time since the server
//! started is cut into periods of `every`; during the first `stall` of each period no answer
//! leaves the server, and answers that fall due then are sent when the window ends.
//! Windows are a pure function of the server clock, so the server and `?hiccup=` requests share
//! them without any shared state or lock.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use crate::units::{parse_duration, DurationText};
use crate::UpstreamError;

const HICCUP_FORM: &str = "expected STALL/EVERY, like 300ms/1s (a 300ms stall every second)";

/// A periodic stall: for the first `stall` of every `every` since the server started, no
/// answer is sent (`0 <= stall < every`). Written `STALL/EVERY`, such as `300ms/1s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hiccup {
    /// The period; windows start at server start, then every `every`.
    pub every: Duration,
    /// How long each window lasts, from the start of its period; shorter than `every`.
    pub stall: Duration,
}

impl Hiccup {
    /// Why the hiccup cannot be used, if it cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.stall.is_zero() {
            return Err("the stall must be longer than zero".into());
        }
        if self.stall >= self.every {
            return Err("the stall must be shorter than the period (STALL/EVERY)".into());
        }
        Ok(())
    }

    /// If `at` falls inside a stall window counted from `epoch`, the end of that window.
    pub(crate) fn window_end(&self, epoch: Instant, at: Instant) -> Option<Instant> {
        let phase = at.saturating_duration_since(epoch).as_nanos() % self.every.as_nanos();
        let stall = self.stall.as_nanos();
        // Both fit in u64: durations parse up to one hour.
        (phase < stall).then(|| at + Duration::from_nanos((stall - phase) as u64))
    }

    /// Waits until no stall window is open (at once when none is); returns the end of the
    /// window it waited for, if any.
    pub(crate) async fn wait_out(&self, epoch: Instant) -> Option<Instant> {
        let mut waited = None;
        while let Some(end) = self.window_end(epoch, Instant::now()) {
            tokio::time::sleep_until(end).await;
            waited = Some(end);
        }
        waited
    }
}

impl fmt::Display for Hiccup {
    /// `STALL/EVERY`, which `parse_hiccup` reads back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = DurationText;
        write!(f, "{}/{}", d.of(self.stall), d.of(self.every))
    }
}

/// Parses a hiccup written `STALL/EVERY`: `300ms/1s` stalls the first 300ms of every second.
/// Both are durations as `parse_delay` reads them; the stall must be above zero and shorter
/// than the period.
pub fn parse_hiccup(s: &str) -> Result<Hiccup, UpstreamError> {
    parse_hiccup_inner(s.trim()).map_err(|reason| UpstreamError::InvalidHiccup {
        input: s.to_string(),
        reason,
    })
}

fn parse_hiccup_inner(s: &str) -> Result<Hiccup, String> {
    let (stall, every) = s.split_once('/').ok_or(HICCUP_FORM)?;
    let duration = |part: &str| {
        parse_duration(part).map_err(|e| match loadbench_units::duration(part) {
            Err(_) => format!("{:?} is not a duration; {HICCUP_FORM}", part.trim()),
            Ok(_) => e,
        })
    };
    let hiccup = Hiccup {
        stall: duration(stall)?,
        every: duration(every)?,
    };
    hiccup.check()?;
    Ok(hiccup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parses_stall_then_period() {
        let h = parse_hiccup("300ms/1s").unwrap();
        assert_eq!((h.stall, h.every), (ms(300), ms(1000)));
        assert_eq!(parse_hiccup(" 1.5s / 1m ").unwrap().stall, ms(1500));
        assert_eq!(h.to_string(), "300ms/1s");
    }

    #[test]
    fn rejects_other_forms_with_a_reason() {
        let cases = [
            ("300ms", "STALL/EVERY"),
            ("", "STALL/EVERY"),
            ("1s/300ms", "shorter than the period"),
            ("1s/1s", "shorter than the period"),
            ("0/1s", "longer than zero"),
            ("300/1s", "shorter than the period"),
            ("abc/1s", "\"abc\" is not a duration"),
            ("300ms/", "is not a duration; expected STALL/EVERY"),
            ("300ms/2h", "at most 1h"),
        ];
        for (input, reason) in cases {
            let err = parse_hiccup(input).unwrap_err().to_string();
            assert!(err.starts_with("invalid hiccup"), "{input}: {err}");
            assert!(err.contains(reason), "{input}: {err}");
        }
    }

    #[test]
    fn windows_open_at_each_period_start() {
        let h = parse_hiccup("300ms/1s").unwrap();
        let epoch = Instant::now();
        let at = |n| epoch + ms(n);
        assert_eq!(h.window_end(epoch, at(0)), Some(at(300)));
        assert_eq!(h.window_end(epoch, at(100)), Some(at(300)));
        assert_eq!(h.window_end(epoch, at(300)), None);
        assert_eq!(h.window_end(epoch, at(999)), None);
        assert_eq!(h.window_end(epoch, at(2250)), Some(at(2300)));
    }
}
