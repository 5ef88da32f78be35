//! `run`'s load flags, already parsed by the CLI's value parsers, combined into a load and a
//! stop: `-d`/`-n` for the closed model; `--rate` (a rate or a range), `--ramp` and `--stages`
//! for the open model. Only the combinations are checked here; every value is typed already.

use crate::{invalid, Load, PlanError, Schedule, Segment, Shard, Stop};
use loadbench_units as units;
use std::time::Duration;

/// The closed model's stop: `-d` or `-n` (not both), 10 s when neither is given.
pub fn closed_stop(duration: Option<Duration>, requests: Option<u64>) -> Result<Stop, PlanError> {
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

fn both_d_and_n() -> PlanError {
    invalid("-d/--duration and -n/--requests both given: use one of them")
}

/// The open model's flags as given (each already parsed).
#[derive(Debug, Clone, Default)]
pub struct OpenFlags {
    /// `--rate`: one rate, or a range for `--ramp`.
    pub rate: Option<(f64, Option<f64>)>,
    /// `--ramp`.
    pub ramp: Option<Duration>,
    /// `--stages`.
    pub stages: Option<Schedule>,
    /// `-d`.
    pub duration: Option<Duration>,
    /// `-n`.
    pub requests: Option<u64>,
    /// `--max-connections`.
    pub max_connections: u32,
}

/// The open model's load and stop from its flags; `None` when no open-model flag is given
/// (the closed model).
pub fn open_load(f: &OpenFlags) -> Result<Option<(Load, Stop)>, PlanError> {
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
    let load = Load::Open {
        schedule,
        max_connections: f.max_connections,
        pacing: crate::OpenPacing::default(),
    };
    Ok(Some((load, stop)))
}

fn stages_schedule(f: &OpenFlags, stages: &Schedule) -> Result<Schedule, PlanError> {
    if f.duration.is_some() || f.requests.is_some() || f.ramp.is_some() {
        return Err(invalid(
            "--stages sets the duration itself: drop -d, -n and --ramp",
        ));
    }
    Ok(stages.clone())
}

fn rate_schedule(f: &OpenFlags, (from, to): (f64, Option<f64>)) -> Result<Schedule, PlanError> {
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

fn constant_schedule(f: &OpenFlags, rate: f64) -> Result<Schedule, PlanError> {
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

fn ramp_schedule(f: &OpenFlags, from: f64, to: f64, ramp: Duration) -> Result<Schedule, PlanError> {
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

/// Parses `--stages '10s@1000,30s@5000,10s@0'`: each stage holds its rate for its duration.
pub fn parse_stages(text: &str) -> Result<Schedule, PlanError> {
    let bad = |item: &str| {
        invalid(format!(
            "'{item}' is not DURATION@RATE: write stages like '10s@1000,30s@5000,10s@0'"
        ))
    };
    let mut segments = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (d, r) = item.split_once('@').ok_or_else(|| bad(item))?;
        segments.push(Segment {
            duration: units::duration(d).map_err(|_| bad(item))?,
            from: units::rate(r).map_err(|_| bad(item))?,
            to: units::rate(r).map_err(|_| bad(item))?,
        });
    }
    if segments.is_empty() || segments.iter().all(|s| s.duration.is_zero()) {
        return Err(bad(text));
    }
    Ok(Schedule {
        segments,
        shard: Shard::WHOLE,
    })
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
    fn stages_parse_with_clear_errors() {
        let st = parse_stages("10s@1000,30s@5k,10s@0").unwrap();
        assert_eq!(st.duration(), Duration::from_secs(50));
        assert_eq!(st.rate_at(15.0), 5000.0);
        assert!(parse_stages("10s")
            .unwrap_err()
            .to_string()
            .contains("DURATION@RATE"));
        assert!(parse_stages("").is_err());
    }

    #[test]
    fn no_open_flag_is_the_closed_model() {
        assert!(open_load(&open(None)).unwrap().is_none());
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
        let (load, stop) = open_load(&f).unwrap().unwrap();
        assert_eq!(stop, Stop::Requests(50));
        let Load::Open { schedule, .. } = load else {
            panic!("open")
        };
        assert_eq!(schedule.duration(), Duration::from_millis(500));
        let range = open_load(&open(Some((1.0, Some(2.0))))).unwrap_err();
        assert!(range.to_string().contains("add --ramp"));
        let zero = open_load(&open(Some((0.0, None)))).unwrap_err();
        assert!(zero.to_string().contains("--rate 0"));
    }

    #[test]
    fn ramp_holds_the_last_rate_until_the_duration_ends() {
        let f = OpenFlags {
            ramp: Some(Duration::from_secs(2)),
            duration: Some(Duration::from_secs(5)),
            ..open(Some((10.0, Some(20.0))))
        };
        let (Load::Open { schedule, .. }, stop) = open_load(&f).unwrap().unwrap() else {
            panic!("open")
        };
        assert_eq!(stop, Stop::Duration(Duration::from_secs(5)));
        assert_eq!(schedule.segments.len(), 2);
        assert_eq!(schedule.rate_at(4.0), 20.0);
    }
}
