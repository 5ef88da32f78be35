//! `run`'s load flags, already parsed by the value parsers, combined into a schedule and a
//! stop: `-d`/`-n` for the closed model; `--rate` (a rate or a range), `--ramp` and `--stages`
//! for the open model. Only the combinations are checked here (each message names the flags
//! to change); every value is typed already. `run` builds the load's shape from the result.

use crate::UserError;
use loadbench_plan::{Schedule, Segment, Shard, Stop};
use std::time::Duration;

/// A mistake in how the flags combine: one line naming the fix.
fn invalid(msg: impl Into<String>) -> UserError {
    UserError(msg.into())
}

/// The closed model's stop: `-d` or `-n` (not both), 10 s when neither is given.
pub(crate) fn closed_stop(
    duration: Option<Duration>,
    requests: Option<u64>,
) -> Result<Stop, UserError> {
    match (duration, requests) {
        (Some(_), Some(_)) => Err(both_d_and_n()),
        (None, Some(0)) => Err(invalid("-n 0 sends nothing: give -n 1 or more")),
        (None, Some(n)) => Ok(Stop::Requests(n)),
        (Some(d), None) if d.is_zero() => Err(invalid(
            "-d/--duration is zero: give a positive duration such as 10s",
        )),
        (Some(d), None) => Ok(Stop::Duration(d)),
        (None, None) => Ok(Stop::Duration(Duration::from_secs(10))),
    }
}

fn both_d_and_n() -> UserError {
    invalid("-d/--duration and -n/--requests both given: use one of them")
}

/// The open model's flags as given (each already parsed).
#[derive(Debug, Clone, Default)]
pub(crate) struct OpenFlags {
    /// `--rate`: one rate, or a range for `--ramp`.
    pub(crate) rate: Option<(f64, Option<f64>)>,
    /// `--ramp`.
    pub(crate) ramp: Option<Duration>,
    /// `--stages`.
    pub(crate) stages: Option<Schedule>,
    /// `-d`.
    pub(crate) duration: Option<Duration>,
    /// `-n`.
    pub(crate) requests: Option<u64>,
    /// `--max-connections`.
    pub(crate) max_connections: u32,
}

/// The open model's schedule and stop from its flags; `None` when no open-model flag is given
/// (the closed model).
pub(crate) fn open_schedule(f: &OpenFlags) -> Result<Option<(Schedule, Stop)>, UserError> {
    let schedule = match (&f.rate, &f.stages) {
        (None, None) if f.ramp.is_some() => {
            return Err(invalid(
                "--ramp needs a --rate range such as --rate 1000..20000",
            ))
        }
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(invalid("--rate and --stages both given: use one of them"))
        }
        (None, Some(stages)) => stages_schedule(f, stages)?,
        (Some(rate), None) => rate_schedule(f, *rate)?,
    };
    if f.max_connections == 0 {
        return Err(invalid(
            "--max-connections 0 allows no request: give 1 or more",
        ));
    }
    let stop = match f.requests {
        Some(n) if f.rate.is_some() => Stop::Requests(n),
        _ => Stop::Duration(schedule.duration()),
    };
    Ok(Some((schedule, stop)))
}

fn stages_schedule(f: &OpenFlags, stages: &Schedule) -> Result<Schedule, UserError> {
    if f.duration.is_some() || f.requests.is_some() || f.ramp.is_some() {
        return Err(invalid(
            "--stages sets the duration itself: drop -d, -n and --ramp",
        ));
    }
    Ok(stages.clone())
}

fn rate_schedule(f: &OpenFlags, (from, to): (f64, Option<f64>)) -> Result<Schedule, UserError> {
    if from == 0.0 && to.is_none_or(|t| t == 0.0) {
        return Err(invalid(
            "--rate 0 sends nothing: give a positive rate such as 1000",
        ));
    }
    match (to, f.ramp) {
        (Some(to), None) => Err(invalid(format!(
            "--rate {from}..{to} is a range: add --ramp DURATION, or give one rate"
        ))),
        (None, Some(_)) => Err(invalid(format!(
            "--ramp needs a --rate range such as --rate {from}..{}",
            from * 2.0
        ))),
        (None, None) => constant_schedule(f, from),
        (Some(to), Some(ramp)) => ramp_schedule(f, from, to, ramp),
    }
}

fn constant_schedule(f: &OpenFlags, rate: f64) -> Result<Schedule, UserError> {
    let duration = match (f.duration, f.requests) {
        (Some(_), Some(_)) => return Err(both_d_and_n()),
        (_, Some(0)) => return Err(invalid("-n 0 sends nothing: give -n 1 or more")),
        (_, Some(n)) => Duration::from_secs_f64(n as f64 / rate),
        (Some(d), None) if d.is_zero() => {
            return Err(invalid(
                "-d/--duration is zero: give a positive duration such as 10s",
            ))
        }
        (Some(d), None) => d,
        (None, None) => Duration::from_secs(10),
    };
    Ok(Schedule::constant(rate, duration))
}

fn ramp_schedule(f: &OpenFlags, from: f64, to: f64, ramp: Duration) -> Result<Schedule, UserError> {
    if f.requests.is_some() {
        return Err(invalid(
            "-n does not combine with --ramp: give -d (or nothing: the ramp's length)",
        ));
    }
    if ramp.is_zero() {
        return Err(invalid("--ramp 0s is no ramp: give a duration such as 60s"));
    }
    let total = f.duration.unwrap_or(ramp);
    if total < ramp {
        return Err(invalid(format!(
            "-d {} is shorter than --ramp {}: make -d at least as long as the ramp",
            units_text(total),
            units_text(ramp)
        )));
    }
    let mut segments = vec![Segment {
        duration: ramp,
        from,
        to,
    }];
    if total > ramp {
        segments.push(Segment {
            duration: total - ramp,
            from: to,
            to,
        });
    }
    Ok(Schedule {
        segments,
        shard: Shard::WHOLE,
    })
}

fn units_text(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(rate: Option<(f64, Option<f64>)>) -> OpenFlags {
        OpenFlags {
            rate,
            max_connections: 100,
            ..OpenFlags::default()
        }
    }

    #[test]
    fn no_open_flag_is_the_closed_model() {
        assert!(open_schedule(&open(None)).unwrap().is_none());
        let e = closed_stop(Some(Duration::from_secs(1)), Some(5)).unwrap_err();
        assert!(e.to_string().contains("use one of them"));
        assert_eq!(
            closed_stop(None, None).unwrap(),
            Stop::Duration(Duration::from_secs(10))
        );
    }

    #[test]
    fn rate_with_n_sizes_the_schedule_and_ranges_need_a_ramp() {
        let mut f = open(Some((100.0, None)));
        f.requests = Some(50);
        let (schedule, stop) = open_schedule(&f).unwrap().unwrap();
        assert_eq!(stop, Stop::Requests(50));
        assert_eq!(schedule.duration(), Duration::from_millis(500));
        let range = open_schedule(&open(Some((1.0, Some(2.0))))).unwrap_err();
        assert!(range.to_string().contains("add --ramp"));
        let zero = open_schedule(&open(Some((0.0, None)))).unwrap_err();
        assert!(zero.to_string().contains("--rate 0"));
    }

    #[test]
    fn ramp_holds_the_last_rate_until_the_duration_ends() {
        let f = OpenFlags {
            ramp: Some(Duration::from_secs(2)),
            duration: Some(Duration::from_secs(5)),
            ..open(Some((10.0, Some(20.0))))
        };
        let (schedule, stop) = open_schedule(&f).unwrap().unwrap();
        assert_eq!(stop, Stop::Duration(Duration::from_secs(5)));
        assert_eq!(schedule.segments.len(), 2);
        assert_eq!(schedule.rate_at(4.0), 20.0);
    }
}
