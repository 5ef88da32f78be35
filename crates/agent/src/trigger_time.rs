//! A start and a run id every shard of one broadcast agrees on, from what the admin sends with
//! each shard (issue 40): `--start-in D` in a job's parameters means "D after the trigger".
//!
//! The admin writes one log row per shard, so the `logDateTime` of one broadcast's shards can
//! differ by milliseconds (xxl-job), or be the same whole second (ratchjob). Schedulers fire on
//! whole seconds and the shards follow within milliseconds, so the rule is: **round the
//! trigger time to the nearest whole second** — the anchor — and start at `anchor + D`; the
//! run id is `job<jobId>-<anchor as unix seconds>`. Every shard reads the admin's clock, not
//! its own, so no agreement between clocks beyond NTP's is needed, and the next trigger (at
//! least a second later) gets another run id.
//!
//! The failure case: shards whose trigger times straddle a half second (`…​.500`) would round
//! apart. That needs the admin to send a shard 400 ms or more after the whole second (an
//! overloaded admin, or a manual "run once" at an arbitrary moment). A shard whose trigger time
//! falls within [`GUARD_MS`] of a half second refuses with a FAIL callback naming this, rather
//! than start alone; as long as one broadcast's shards are less than [`GUARD_MS`] apart, any
//! broadcast that straddles has such a shard, so it fails loudly instead of merging wrongly.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How near a half second a trigger time may not be (ms either side of `…​.500`).
pub const GUARD_MS: i64 = 100;

/// The longest `--start-in`: a day, as for `--start-at`.
pub const MAX_START_IN: Duration = Duration::from_secs(24 * 3600);

/// The whole second every shard of the broadcast fired at `log_date_time_ms` agrees on.
pub fn anchor(log_date_time_ms: i64) -> Result<i64, String> {
    if log_date_time_ms <= 0 {
        return Err(format!(
            "--start-in needs the trigger time, but the admin sent logDateTime {log_date_time_ms}: use --start-at with this admin"
        ));
    }
    let within = log_date_time_ms.rem_euclid(1000);
    if (within - 500).abs() < GUARD_MS {
        return Err(format!(
            "--start-in: the trigger time {}.{within:03} is too near half a second for the shards to agree on a start (they round to the nearest second); trigger again, or use --start-at",
            log_date_time_ms.div_euclid(1000)
        ));
    }
    Ok((log_date_time_ms + 500).div_euclid(1000))
}

/// The start instant `start_in` after the anchor of `log_date_time_ms`.
pub fn start(log_date_time_ms: i64, start_in: Duration) -> Result<SystemTime, String> {
    let secs = u64::try_from(anchor(log_date_time_ms)?).unwrap_or(0);
    Ok(UNIX_EPOCH + Duration::from_secs(secs) + start_in)
}

/// The run id of a trigger: `job<jobId>-<anchor>`, the same on every shard of the broadcast.
pub fn run_id(job_id: i64, log_date_time_ms: i64) -> Result<String, String> {
    Ok(format!("job{job_id}-{}", anchor(log_date_time_ms)?))
}

/// Checks a `--start-in` text: a duration (`10s`, `1m30s`, `500ms`) from 0 to 24 h.
pub fn parse_start_in(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "--start-in {text} is negative: give a delay from 0 to 24h, e.g. 10s"
        ));
    }
    let d = loadbench_units::duration(t).map_err(|e| format!("--start-in: {e}"))?;
    if d > MAX_START_IN {
        return Err(format!(
            "--start-in {text} is more than 24 hours: give a delay of at most 24h"
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_milliseconds_apart_share_the_anchor_and_the_run_id() {
        let t = 1_795_543_200_000;
        for spread in [0, 3, 27, 399] {
            assert_eq!(anchor(t + spread), Ok(1_795_543_200), "{spread}");
        }
        // An admin a little behind the whole second still agrees (rounds up).
        assert_eq!(anchor(t - 20), Ok(1_795_543_200));
        assert_eq!(run_id(7, t + 12).unwrap(), "job7-1795543200");
        assert_ne!(run_id(7, t + 12), run_id(7, t + 1012), "the next trigger");
        let at = start(t + 12, Duration::from_secs(10)).unwrap();
        assert_eq!(
            at.duration_since(UNIX_EPOCH).unwrap(),
            Duration::from_secs(1_795_543_210)
        );
    }

    #[test]
    fn a_trigger_near_half_a_second_fails_loudly() {
        let t = 1_795_543_200_000;
        for near in [401, 450, 500, 599] {
            let e = anchor(t + near).unwrap_err();
            assert!(e.contains("too near half a second"), "{near}: {e}");
        }
        assert!(anchor(t + 600).is_ok() && anchor(t + 400).is_ok());
        assert!(anchor(0).unwrap_err().contains("logDateTime 0"));
    }

    #[test]
    fn start_in_is_a_duration_from_zero_to_a_day() {
        assert_eq!(parse_start_in("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_start_in("0s"), Ok(Duration::ZERO));
        assert!(parse_start_in("-5s").unwrap_err().contains("negative"));
        assert!(parse_start_in("25h").unwrap_err().contains("24 hours"));
        assert!(parse_start_in("soon")
            .unwrap_err()
            .contains("not a duration"));
    }
}
