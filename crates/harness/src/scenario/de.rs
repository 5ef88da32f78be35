//! Values that serde cannot read on its own: durations, sizes, stop signals, CPU lists, ports,
//! SLOs and load levels (one or a list), each parsed once here with the shared rules of
//! [`loadbench_plan::units`], so that toml reports a bad value with its line and key.

use super::{CpuSet, PortSpec};
use serde::de::{self, Deserializer, IntoDeserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

impl std::str::FromStr for CpuSet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}' is not a CPU list; write it like 0-1,3");
        let mut cpus = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b > 4095 {
                return Err(bad());
            }
            cpus.extend(a..=b);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet(cpus))
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            let sep = if first { "" } else { "," };
            if i == j {
                write!(f, "{sep}{}", self.0[i])?;
            } else {
                write!(f, "{sep}{}-{}", self.0[i], self.0[j])?;
            }
            first = false;
            i = j + 1;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for PortSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PortSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a port number 1-65535 or \"auto\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PortSpec, E> {
                match u16::try_from(v) {
                    Ok(p) if p > 0 => Ok(PortSpec::Fixed(p)),
                    _ => Err(E::custom(format!(
                        "port {v} is out of range; use 1-65535 or \"auto\""
                    ))),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortSpec, E> {
                match v {
                    "auto" => Ok(PortSpec::Auto),
                    _ => Err(E::custom(format!(
                        "port '{v}' is not a number; use 1-65535 or \"auto\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses `10s`, `1m30s`, `250ms` or a bare number of seconds (the shared rule of
/// [`loadbench_plan::units`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    loadbench_plan::units::duration(text).map_err(|e| e.to_string())
}

/// Parses sizes such as `512MiB`, `8GiB`, `1.5G`, `4096` (bytes); k/M/G are powers of 1000.
pub fn parse_size(text: &str) -> Result<u64, String> {
    loadbench_plan::units::size(text).map_err(|e| e.to_string())
}

/// A load's `slo`: gates (closed and open loads) or, when it is a latency SLO, a find-max
/// load's search SLO too. A text that is neither fails here, with its line.
pub(super) fn opt_load_slo<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<(Option<loadbench_model::Slo>, loadbench_model::Gates)>, D::Error> {
    let text = String::deserialize(d)?;
    let gates =
        loadbench_plan::parse_gates(&text).map_err(|e| de::Error::custom(format!("slo {e}")))?;
    Ok(Some((loadbench_plan::parse_slo(&text).ok(), gates)))
}

/// A target's `slo`: gates for every cell of that target (docs/gates.md).
pub(super) fn opt_gates<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<loadbench_model::Gates>, D::Error> {
    loadbench_plan::parse_gates(&String::deserialize(d)?)
        .map(Some)
        .map_err(|e| de::Error::custom(format!("slo {e}")))
}

/// A list of levels, or one level alone: `connections = 10` is `connections = [10]`.
pub(super) fn opt_levels<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_any(OneOrMany(PhantomData)).map(Some)
}

struct OneOrMany<T>(PhantomData<T>);

impl<T> OneOrMany<T> {
    fn one<'de, E: de::Error, V: IntoDeserializer<'de, E>>(v: V) -> Result<Vec<T>, E>
    where
        T: Deserialize<'de>,
    {
        T::deserialize(v.into_deserializer()).map(|x| vec![x])
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for OneOrMany<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or a list of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut levels = Vec::new();
        while let Some(level) = seq.next_element()? {
            levels.push(level);
        }
        Ok(levels)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<T>, E> {
        Self::one(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<T>, E> {
        Self::one(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Vec<T>, E> {
        Self::one(v)
    }
}

/// `[target.upstream]` as written: each key of `loadbench serve`'s settings read with the
/// backend's own parser into its own type, so a bad value is refused with its line and key.
/// The ranges are checked after ([`loadbench_upstream::ServeSettings::check`], `validate.rs`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UpstreamFile {
    #[serde(default)]
    routes: Vec<String>,
    #[serde(default, deserialize_with = "backend_delay")]
    delay: Option<loadbench_upstream::DelaySpec>,
    #[serde(default, deserialize_with = "backend_size")]
    body_size: Option<u64>,
    #[serde(default)]
    threads: Option<usize>,
    #[serde(default)]
    max_concurrency: Option<usize>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    fail_rate: f64,
    #[serde(default, deserialize_with = "backend_hiccup")]
    hiccup: Option<loadbench_upstream::Hiccup>,
    #[serde(default)]
    keep_abandoned: bool,
    #[serde(default)]
    max_served_conns: Option<usize>,
}

impl From<UpstreamFile> for super::UpstreamSpec {
    fn from(f: UpstreamFile) -> Self {
        let serve = loadbench_upstream::ServeSettings {
            threads: f.threads,
            delay: f.delay,
            body_size: f.body_size,
            status: f.status,
            fail_rate: f.fail_rate,
            max_concurrency: f.max_concurrency,
            hiccup: f.hiccup,
            keep_abandoned: f.keep_abandoned,
            max_served_conns: f.max_served_conns,
        };
        Self {
            routes: f.routes,
            serve,
        }
    }
}

/// A string read by one of the backend's parsers, its error as the message.
fn backend<'de, D, T, E>(d: D, parse: fn(&str) -> Result<T, E>) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    E: fmt::Display,
{
    parse(&String::deserialize(d)?)
        .map(Some)
        .map_err(de::Error::custom)
}

fn backend_delay<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<loadbench_upstream::DelaySpec>, D::Error> {
    backend(d, loadbench_upstream::parse_delay)
}

fn backend_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    backend(d, loadbench_upstream::parse_size)
}

fn backend_hiccup<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<loadbench_upstream::Hiccup>, D::Error> {
    backend(d, loadbench_upstream::parse_hiccup)
}

/// `source_addrs = "127.0.0.2-127.0.0.9"`: a range or comma list, as `--source-addrs`.
pub(super) fn source_addrs<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<std::net::IpAddr>, D::Error> {
    loadbench_plan::units::source_addrs(&String::deserialize(d)?).map_err(de::Error::custom)
}

pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    parse_duration(&String::deserialize(d)?).map_err(de::Error::custom)
}

pub(super) fn opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

pub(super) fn opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    parse_size(&String::deserialize(d)?)
        .map(Some)
        .map_err(de::Error::custom)
}

pub(super) fn signal<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let s = String::deserialize(d)?;
    let name = s.trim().to_ascii_uppercase();
    match name.strip_prefix("SIG").unwrap_or(&name) {
        "TERM" => Ok(libc::SIGTERM),
        "INT" => Ok(libc::SIGINT),
        "QUIT" => Ok(libc::SIGQUIT),
        "HUP" => Ok(libc::SIGHUP),
        "KILL" => Ok(libc::SIGKILL),
        "USR1" => Ok(libc::SIGUSR1),
        "USR2" => Ok(libc::SIGUSR2),
        _ => Err(de::Error::custom(format!(
            "'{s}' is not a stop signal; use TERM, INT, QUIT, HUP, KILL, USR1 or USR2"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse() {
        assert_eq!("0-1,3".parse::<CpuSet>().unwrap(), CpuSet(vec![0, 1, 3]));
        assert_eq!(CpuSet(vec![0, 1, 3, 5, 6]).to_string(), "0-1,3,5-6");
        assert!("3-1".parse::<CpuSet>().is_err());
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("1.5k").unwrap(), 1500);
        assert!(parse_size("8 gallons").is_err());
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    }
}
