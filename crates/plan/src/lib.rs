//! Turns what the user asked for into a validated [`Plan`].
//!
//! In: a [`RunSpec`], the raw options of `loadbench run` (strings as typed, files not yet read).
//! Out: a [`Plan`]: units resolved, the host resolved once to a socket address, the request
//! bytes rendered once, every limit checked. Every mistake becomes a [`PlanError`] whose message is
//! one line naming the problem and the fix.
//! Neighbours: the CLI builds the spec; the engine executes the plan. No dependency on our crates.

mod request;
mod schedule;
mod target;
mod units;

pub use request::RequestTemplate;
pub use schedule::{parse_rate, parse_stages, Cursor, Schedule, Segment};
pub use target::Target;
pub use units::{parse_duration, parse_percentiles};

use std::time::Duration;

/// Default percentiles of the text report.
pub const DEFAULT_PERCENTILES: &str = "50,75,90,95,99,99.9,99.99";

/// The options of one run, as the user gave them.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub url: String,
    pub connections: u32,
    pub threads: Option<u32>,
    pub duration: Option<String>,
    pub requests: Option<u64>,
    pub warmup: Option<String>,
    pub method: String,
    pub headers: Vec<String>,
    pub body: Option<String>,
    pub body_file: Option<std::path::PathBuf>,
    pub keepalive: bool,
    pub timeout: String,
    pub connect_timeout: String,
    pub percentiles: String,
    /// Open model: total requests per second (`1000`), or a range for `ramp` (`1000..20000`).
    pub rate: Option<String>,
    /// Open model: how long the ramp over the `rate` range takes.
    pub ramp: Option<String>,
    /// Open model: stages `10s@1000,30s@5000`, each holding its rate for its duration.
    pub stages: Option<String>,
    /// Open model: the most connections (= requests in flight) over all workers.
    pub max_connections: u32,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            url: String::new(),
            connections: 50,
            threads: None,
            duration: None,
            requests: None,
            warmup: None,
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            body_file: None,
            keepalive: true,
            timeout: "10s".into(),
            connect_timeout: "5s".into(),
            percentiles: DEFAULT_PERCENTILES.into(),
            rate: None,
            ramp: None,
            stages: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Default cap on connections in the open model.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10_000;

/// How load is offered.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Each connection sends its next request when the previous response arrived.
    Closed,
    /// Requests are sent on `schedule` (measured part; the warm-up runs at its first rate),
    /// whether or not earlier ones returned, on up to `max_connections` connections.
    Open {
        schedule: Schedule,
        max_connections: u32,
    },
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this long (measured after the warm-up).
    Duration(Duration),
    /// After exactly this many requests have finished (completed or failed).
    Requests(u64),
}

/// A validated, fully resolved run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub load: Load,
    pub target: Target,
    pub request: RequestTemplate,
    pub connections: u32,
    pub threads: u32,
    pub stop: Stop,
    pub warmup: Duration,
    pub keepalive: bool,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub percentiles: Vec<f64>,
}

/// A mistake in the options; the message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn invalid(msg: impl Into<String>) -> PlanError {
    PlanError::Invalid(msg.into())
}

impl Plan {
    /// Validates the spec and resolves everything the run needs.
    pub fn resolve(spec: &RunSpec) -> Result<Plan, PlanError> {
        let load = resolve_load(spec)?;
        let stop = match &load {
            Load::Closed => resolve_stop(spec)?,
            Load::Open { schedule, .. } => open_stop(spec, schedule),
        };
        let connections = match &load {
            Load::Closed => check_connections(spec.connections, stop)?,
            Load::Open {
                max_connections, ..
            } => *max_connections,
        };
        let threads = resolve_threads(spec.threads, connections)?;
        let target = Target::parse(&spec.url)?;
        let body = read_body(spec)?;
        let request =
            RequestTemplate::render(&target, &spec.method, &spec.headers, body, spec.keepalive)?;
        Ok(Plan {
            load,
            target,
            request,
            connections,
            threads,
            stop,
            warmup: optional_duration("--warmup", spec.warmup.as_deref())?.unwrap_or_default(),
            keepalive: spec.keepalive,
            timeout: positive_duration("--timeout", &spec.timeout)?,
            connect_timeout: positive_duration("--connect-timeout", &spec.connect_timeout)?,
            percentiles: parse_percentiles(&spec.percentiles)?,
        })
    }
}

fn resolve_stop(spec: &RunSpec) -> Result<Stop, PlanError> {
    match (&spec.duration, spec.requests) {
        (Some(_), Some(_)) => Err(invalid(
            "-d/--duration and -n/--requests both given: use one of them",
        )),
        (None, Some(0)) => Err(invalid("-n 0 sends nothing: give -n 1 or more")),
        (None, Some(n)) => Ok(Stop::Requests(n)),
        (Some(d), None) => Ok(Stop::Duration(positive_duration("-d/--duration", d)?)),
        (None, None) => Ok(Stop::Duration(Duration::from_secs(10))),
    }
}

/// The open model's schedule from `--rate`/`--ramp`/`--stages` (with `-d`/`-n`), or the closed
/// model when none of them is given.
fn resolve_load(spec: &RunSpec) -> Result<Load, PlanError> {
    if spec.rate.is_none() && spec.stages.is_none() {
        if spec.ramp.is_some() {
            return Err(invalid(
                "--ramp needs a --rate range such as --rate 1000..20000",
            ));
        }
        return Ok(Load::Closed);
    }
    if spec.max_connections == 0 {
        return Err(invalid(
            "--max-connections 0 allows no request: give 1 or more",
        ));
    }
    let schedule = match (&spec.rate, &spec.stages) {
        (Some(_), Some(_)) => {
            return Err(invalid("--rate and --stages both given: use one of them"))
        }
        (None, Some(stages)) => stages_schedule(spec, stages)?,
        (Some(rate), None) => rate_schedule(spec, rate)?,
        (None, None) => unreachable!("checked above"),
    };
    Ok(Load::Open {
        schedule,
        max_connections: spec.max_connections,
    })
}

fn stages_schedule(spec: &RunSpec, stages: &str) -> Result<Schedule, PlanError> {
    if spec.duration.is_some() || spec.requests.is_some() || spec.ramp.is_some() {
        return Err(invalid(
            "--stages sets the duration itself: drop -d, -n and --ramp",
        ));
    }
    parse_stages(stages)
}

fn rate_schedule(spec: &RunSpec, rate: &str) -> Result<Schedule, PlanError> {
    let (from, to) = parse_rate(rate)?;
    let ramp = optional_duration("--ramp", spec.ramp.as_deref())?;
    if from == 0.0 && to.is_none_or(|t| t == 0.0) {
        return Err(invalid(
            "--rate 0 sends nothing: give a positive rate such as 1000",
        ));
    }
    match (to, ramp) {
        (Some(_), None) => Err(invalid(format!(
            "--rate {rate} is a range: add --ramp DURATION, or give one rate"
        ))),
        (None, Some(_)) => Err(invalid(format!(
            "--ramp needs a --rate range such as --rate {rate}..{}",
            from * 2.0
        ))),
        (None, None) => constant_schedule(spec, from),
        (Some(to), Some(ramp)) => ramp_schedule(spec, from, to, ramp),
    }
}

fn constant_schedule(spec: &RunSpec, rate: f64) -> Result<Schedule, PlanError> {
    let duration = match (&spec.duration, spec.requests) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "-d/--duration and -n/--requests both given: use one of them",
            ))
        }
        (_, Some(0)) => return Err(invalid("-n 0 sends nothing: give -n 1 or more")),
        (_, Some(n)) => Duration::from_secs_f64(n as f64 / rate),
        (Some(d), None) => positive_duration("-d/--duration", d)?,
        (None, None) => Duration::from_secs(10),
    };
    if rate == 0.0 {
        return Err(invalid(
            "--rate 0 sends nothing: give a positive rate such as 1000",
        ));
    }
    Ok(Schedule::constant(rate, duration))
}

fn ramp_schedule(
    spec: &RunSpec,
    from: f64,
    to: f64,
    ramp: Duration,
) -> Result<Schedule, PlanError> {
    if spec.requests.is_some() {
        return Err(invalid(
            "-n does not combine with --ramp: give -d (or nothing: the ramp's length)",
        ));
    }
    if ramp.is_zero() {
        return Err(invalid("--ramp 0s is no ramp: give a duration such as 60s"));
    }
    let total = optional_duration("-d/--duration", spec.duration.as_deref())?.unwrap_or(ramp);
    if total < ramp {
        return Err(invalid(format!(
            "-d {} is shorter than --ramp {}: make -d at least as long as the ramp",
            spec.duration.as_deref().unwrap_or_default(),
            spec.ramp.as_deref().unwrap_or_default()
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
    Ok(Schedule { segments })
}

/// In the open model the schedule ends the run; `-n` sizes it to exactly n requests.
fn open_stop(spec: &RunSpec, schedule: &Schedule) -> Stop {
    match spec.requests {
        Some(n) if spec.rate.is_some() => Stop::Requests(n),
        _ => Stop::Duration(schedule.duration()),
    }
}

fn check_connections(connections: u32, stop: Stop) -> Result<u32, PlanError> {
    if connections == 0 {
        return Err(invalid("-c 0 opens no connection: give -c 1 or more"));
    }
    if let Stop::Requests(n) = stop {
        if n < u64::from(connections) {
            return Err(invalid(format!(
                "-n {n} is below -c {connections}: every connection needs a request; raise -n or lower -c"
            )));
        }
    }
    Ok(connections)
}

fn resolve_threads(threads: Option<u32>, connections: u32) -> Result<u32, PlanError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    match threads {
        Some(0) => Err(invalid("-t 0 runs no worker: give -t 1 or more")),
        Some(t) => Ok(t.min(connections)),
        None => Ok(cores.min(connections)),
    }
}

fn read_body(spec: &RunSpec) -> Result<Option<Vec<u8>>, PlanError> {
    match (&spec.body, &spec.body_file) {
        (Some(_), Some(_)) => Err(invalid(
            "--body and --body-file both given: use one of them",
        )),
        (Some(text), None) => Ok(Some(text.clone().into_bytes())),
        (None, Some(path)) => std::fs::read(path).map(Some).map_err(|e| {
            invalid(format!(
                "cannot read --body-file {}: {e}; check the path and its permissions",
                path.display()
            ))
        }),
        (None, None) => Ok(None),
    }
}

fn positive_duration(flag: &str, text: &str) -> Result<Duration, PlanError> {
    let d = parse_duration(flag, text)?;
    if d.is_zero() {
        return Err(invalid(format!(
            "{flag} {text} is zero: give a positive duration such as 10s"
        )));
    }
    Ok(d)
}

fn optional_duration(flag: &str, text: Option<&str>) -> Result<Option<Duration>, PlanError> {
    text.map(|t| parse_duration(flag, t)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str) -> RunSpec {
        RunSpec {
            url: url.into(),
            ..RunSpec::default()
        }
    }

    fn err(s: RunSpec) -> String {
        Plan::resolve(&s).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_ten_seconds_and_threads_capped_by_connections() {
        let p = Plan::resolve(&RunSpec {
            connections: 1,
            ..spec("http://127.0.0.1:8080/")
        })
        .unwrap();
        assert_eq!(p.stop, Stop::Duration(Duration::from_secs(10)));
        assert_eq!(p.threads, 1);
        assert_eq!(p.percentiles.len(), 7);
    }

    #[test]
    fn rejects_contradictions_with_the_fix() {
        let both = RunSpec {
            duration: Some("5s".into()),
            requests: Some(100),
            ..spec("http://127.0.0.1/")
        };
        assert!(err(both).contains("use one of them"));
        let c0 = RunSpec {
            connections: 0,
            ..spec("http://127.0.0.1/")
        };
        assert!(err(c0).contains("-c 1 or more"));
        let n_below_c = RunSpec {
            requests: Some(10),
            ..spec("http://127.0.0.1/")
        };
        assert!(err(n_below_c).contains("raise -n or lower -c"));
    }

    #[test]
    fn unreadable_body_file_names_the_path() {
        let s = RunSpec {
            body_file: Some("/nonexistent/body.json".into()),
            ..spec("http://127.0.0.1/")
        };
        assert!(err(s).contains("/nonexistent/body.json"));
    }
}
