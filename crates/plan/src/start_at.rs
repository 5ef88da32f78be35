//! The shards' common start instant, `--start-at` (issue 15): parsed once at the edge into a
//! `SystemTime` and checked against the caller's clock, so every front end (the CLI, the
//! Kubernetes env, the xxl-job agent) accepts the same spellings and refuses the same mistakes
//! with the same one line. Pure: the caller passes `now`; waiting is the runner's job.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far ahead a start instant may be: a day. Farther is surely a typo (a wrong date).
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// How far in the past a start instant may be and still count as "now": the shards then
/// start at once and record how late they were.
pub const MAX_START_LATE: Duration = Duration::from_secs(5);

/// A start instant that cannot be used; one line naming the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartAtError {
    /// Neither RFC 3339 nor unix seconds.
    #[error("--start-at '{0}' is not a time: give RFC 3339 such as 2026-11-24T18:00:00Z (or +01:00) or unix seconds such as 1795543200")]
    Syntax(String),
    /// More than [`MAX_START_AHEAD`] away.
    #[error("--start-at {0} is more than 24 hours away: give a start within the next day")]
    TooFar(String),
    /// Already past by more than [`MAX_START_LATE`].
    #[error("--start-at {text} was {late_secs:.1} s ago: give a time in the future (every shard must see it before it comes)")]
    Past {
        /// The instant as given.
        text: String,
        /// How long ago it was.
        late_secs: f64,
    },
}

/// Parses `--start-at`: RFC 3339 (`2026-11-24T18:00:00Z`, `…T18:00:00.5+01:00`, a space for
/// the `T`) or unix seconds (`1795543200`, `1795543200.25`).
pub fn parse_start_at(text: &str) -> Result<SystemTime, StartAtError> {
    let t = text.trim();
    let syntax = || StartAtError::Syntax(text.to_string());
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !t.is_empty() {
        let secs: f64 = t.parse().map_err(|_| syntax())?;
        let d = Duration::try_from_secs_f64(secs).map_err(|_| syntax())?;
        return UNIX_EPOCH.checked_add(d).ok_or_else(syntax);
    }
    let (local, offset) = split_offset(t).ok_or_else(syntax)?;
    let utc = humantime::parse_rfc3339_weak(local).map_err(|_| syntax())?;
    apply_offset(utc, offset).ok_or_else(syntax)
}

/// Splits a trailing `Z` or `±HH:MM` off; the offset in seconds east of UTC.
fn split_offset(t: &str) -> Option<(&str, i64)> {
    if let Some(local) = t.strip_suffix(['Z', 'z']) {
        return Some((local, 0));
    }
    let cut = t.len().checked_sub(6)?;
    let (local, off) = (t.get(..cut)?, t.get(cut..)?.as_bytes());
    let sign = match off[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = |a: u8, b: u8| -> Option<i64> {
        (a.is_ascii_digit() && b.is_ascii_digit()).then(|| i64::from((a - b'0') * 10 + b - b'0'))
    };
    let (h, m) = (digits(off[1], off[2])?, digits(off[4], off[5])?);
    (off[3] == b':' && h < 24 && m < 60).then_some((local, sign * (h * 3600 + m * 60)))
}

/// The UTC instant of a local time `offset` seconds east of UTC.
fn apply_offset(local: SystemTime, offset: i64) -> Option<SystemTime> {
    let d = Duration::from_secs(offset.unsigned_abs());
    if offset >= 0 {
        local.checked_sub(d)
    } else {
        local.checked_add(d)
    }
}

/// Checks a start instant against `now`; returns how long to wait (zero when it is up to
/// [`MAX_START_LATE`] past: start at once and record the lateness).
pub fn check_start_at(
    at: SystemTime,
    now: SystemTime,
    text: &str,
) -> Result<Duration, StartAtError> {
    match at.duration_since(now) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(StartAtError::TooFar(text.to_string())),
        Ok(ahead) => Ok(ahead),
        Err(late) if late.duration() > MAX_START_LATE => Err(StartAtError::Past {
            text: text.to_string(),
            late_secs: late.duration().as_secs_f64(),
        }),
        Err(_) => Ok(Duration::ZERO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, nanos: u32) -> SystemTime {
        UNIX_EPOCH + Duration::new(secs, nanos)
    }

    #[test]
    fn reads_rfc3339_with_any_offset_and_unix_seconds() {
        let want = at(1_795_543_200, 0); // 2026-11-24T18:00:00Z
        for text in [
            "2026-11-24T18:00:00Z",
            "2026-11-24 18:00:00Z",
            "2026-11-24T19:00:00+01:00",
            "2026-11-24T13:30:00-04:30",
            "1795543200",
            " 1795543200 ",
        ] {
            assert_eq!(parse_start_at(text), Ok(want), "{text}");
        }
        assert_eq!(
            parse_start_at("2026-11-24T18:00:00.25Z"),
            Ok(at(1_795_543_200, 250_000_000))
        );
        assert_eq!(
            parse_start_at("1795543200.5"),
            Ok(at(1_795_543_200, 500_000_000))
        );
    }

    #[test]
    fn refuses_what_is_not_a_time_in_one_line() {
        for bad in [
            "",
            "soon",
            "2026-11-24",
            "2026-11-24T18:00:00+1:00",
            "18:00",
            "1.2.3",
            "2026-11-24T18:00:00+25:00",
            "2026-13-24T18:00:00Z",
        ] {
            let e = parse_start_at(bad).unwrap_err().to_string();
            assert!(e.contains("RFC 3339") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn waits_for_the_future_starts_at_once_when_just_late_refuses_far_off() {
        let now = at(1_000_000, 0);
        let check = |t| check_start_at(t, now, "T");
        assert_eq!(check(at(1_000_010, 0)), Ok(Duration::from_secs(10)));
        assert_eq!(check(at(999_998, 0)), Ok(Duration::ZERO));
        let e = check(at(999_000, 0)).unwrap_err().to_string();
        assert!(e.contains("1000.0 s ago") && e.contains("future"), "{e}");
        let e = check(at(1_000_000 + 2 * 86_400, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("24 hours"), "{e}");
    }
}
