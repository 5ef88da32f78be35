//! Value parsers for clap: every flag's text is parsed here, once, by the shared [`units`]
//! functions, so `run`, `find-max`, `bench` and `serve` accept the same spellings as scenario
//! files. Each message starts with the flag, so the one line the user sees names it.

use loadbench_model::Slo;
use loadbench_plan::units::{self, UnitError};
use loadbench_plan::Schedule;
use std::time::Duration;

/// Wraps a unit parser so that its error names the flag: `-d 'soon' is not a duration: …`.
fn flagged<T: 'static>(
    flag: &'static str,
    parse: fn(&str) -> Result<T, UnitError>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| parse(text).map_err(|e| format!("{flag} {e}"))
}

/// A duration (`10s`, `1m30s`, `250ms`, a bare number of seconds) for `flag`.
pub(crate) fn duration(
    flag: &'static str,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync {
    flagged(flag, units::duration)
}

/// `--prometheus-push-interval`: a duration from 1 s to 5 min.
pub(crate) fn push_interval(text: &str) -> Result<Duration, String> {
    let d = units::duration(text).map_err(|e| format!("--prometheus-push-interval {e}"))?;
    let range = loadbench_live::remote_write::PUSH_EVERY_RANGE;
    if range.contains(&d) {
        Ok(d)
    } else {
        Err(format!(
            "--prometheus-push-interval {text} is out of range: give 1s to 5m, e.g. 15s"
        ))
    }
}

/// A share (`0.1%` or `0.001`) for `flag`; the message offers `example` (the flag's default).
pub(crate) fn share(
    flag: &'static str,
    example: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text: &str| {
        units::share(text).map_err(|_| {
            format!("{flag} '{text}' is not a share: give a percentage such as {example} or a fraction from 0 to 1")
        })
    }
}

/// A positive rate (`100`, `5k`) for `flag`; ranges are not rates.
pub(crate) fn positive_rate(
    flag: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text: &str| match units::rate(text) {
        Ok(r) if r > 0.0 => Ok(r),
        _ => Err(format!(
            "{flag} '{text}' is not a rate: give requests per second above 0, such as 100 or 5k"
        )),
    }
}

/// `--rate`: one rate or a range for `--ramp`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RateArg(pub f64, pub Option<f64>);

/// Parses `--rate`.
pub(crate) fn rate(text: &str) -> Result<RateArg, String> {
    units::rate_range(text)
        .map(|(a, b)| RateArg(a, b))
        .map_err(|e| format!("--rate {e}"))
}

/// Parses `--stages`.
pub(crate) fn stages(text: &str) -> Result<Schedule, String> {
    loadbench_plan::parse_stages(text).map_err(|e| format!("--stages {e}"))
}

/// Parses `-H`.
pub(crate) fn header(text: &str) -> Result<(String, String), String> {
    units::header(text).map_err(|e| format!("-H {e}"))
}

/// `--percentiles` as one value (a list).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Percentiles(pub Vec<f64>);

/// Parses `--percentiles`.
pub(crate) fn percentiles(text: &str) -> Result<Percentiles, String> {
    units::percentiles(text)
        .map(Percentiles)
        .map_err(|e| format!("--percentiles {e}"))
}

/// Parses `--slo`.
pub(crate) fn slo(text: &str) -> Result<Slo, String> {
    loadbench_plan::parse_slo(text).map_err(|e| format!("--slo {e}"))
}

/// Parses `--slo` of `run` and `bench` (gates).
pub(crate) fn gates(text: &str) -> Result<loadbench_model::Gates, String> {
    loadbench_plan::parse_gates(text).map_err(|e| format!("--slo {e}"))
}

/// `--source-addrs` as one value (a list).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SourceAddrs(pub Vec<std::net::IpAddr>);

/// Parses `--source-addrs`.
pub(crate) fn source_addrs(text: &str) -> Result<SourceAddrs, String> {
    units::source_addrs(text)
        .map(SourceAddrs)
        .map_err(|e| format!("--source-addrs {e}"))
}

/// Parses `--shard I/N`.
pub(crate) fn shard(text: &str) -> Result<loadbench_plan::Shard, String> {
    text.parse().map_err(|e| format!("--shard {e}"))
}

/// `--connect-to HOST1:PORT1:HOST2:PORT2`.
pub(crate) fn connect_to(text: &str) -> Result<loadbench_plan::ConnectTo, String> {
    loadbench_plan::ConnectTo::parse(text)
}

/// Parses `--label key=value`.
pub(crate) fn label(text: &str) -> Result<(String, String), String> {
    loadbench_history::Labels::parse_one(text).map_err(|e| e.to_string())
}

/// Parses `--kind run|find-max|bench`.
pub(crate) fn history_kind(text: &str) -> Result<loadbench_history::Kind, String> {
    loadbench_history::Kind::parse(text).ok_or_else(|| {
        format!("--kind '{text}' is not a kind of result: give run, find-max or bench")
    })
}
