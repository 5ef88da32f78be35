//! `done(summary, latency, requests)`'s arguments from a run's merged result, in wrk's units:
//! `summary` (`duration` µs, `requests`, `bytes`, `errors` by wrk's five classes), `latency`
//! (µs) and `requests` (completed per second, over the run's whole seconds), both with
//! `min`, `max`, `mean`, `stdev`, `percentile(p)`, `#` and `(i)` (the i-th distinct value
//! and its count, ascending).

use loadbench_model::{ErrorKind, RunResult};
use mlua::{Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods};

/// A distribution as wrk's `stats` object: distinct values (ascending) and their counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dist {
    values: Vec<(f64, u64)>,
    min: f64,
    max: f64,
    mean: f64,
    stdev: f64,
}

impl Dist {
    fn of(values: Vec<(f64, u64)>) -> Dist {
        let n: u64 = values.iter().map(|v| v.1).sum();
        if n == 0 {
            return Dist::default();
        }
        let mean = values.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / n as f64;
        let var = values
            .iter()
            .map(|(v, c)| (v - mean).powi(2) * *c as f64)
            .sum::<f64>()
            / n as f64;
        Dist {
            min: values.first().map_or(0.0, |v| v.0),
            max: values.last().map_or(0.0, |v| v.0),
            mean,
            stdev: var.sqrt(),
            values,
        }
    }

    /// The smallest value at or above which `p`% of the counts lie below or at.
    fn percentile(&self, p: f64) -> f64 {
        let n: u64 = self.values.iter().map(|v| v.1).sum();
        if n == 0 {
            return 0.0;
        }
        let want = ((p.clamp(0.0, 100.0) / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (v, c) in &self.values {
            seen += c;
            if seen >= want {
                return *v;
            }
        }
        self.max
    }
}

impl UserData for Dist {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("min", |_, d| Ok(d.min));
        fields.add_field_method_get("max", |_, d| Ok(d.max));
        fields.add_field_method_get("mean", |_, d| Ok(d.mean));
        fields.add_field_method_get("stdev", |_, d| Ok(d.stdev));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("percentile", |_, d, p: f64| Ok(d.percentile(p)));
        methods.add_meta_method(MetaMethod::Len, |_, d, ()| Ok(d.values.len()));
        methods.add_meta_method(MetaMethod::Call, |_, d, i: usize| {
            Ok(match i.checked_sub(1).and_then(|i| d.values.get(i)) {
                Some(&(v, c)) => (Some(v), Some(c)),
                None => (None, None),
            })
        });
    }
}

/// The latency distribution in µs, with the histogram's own min, max, mean and stdev.
fn latency(r: &RunResult) -> Dist {
    let h = &r.stats.latency.hist;
    let values = h
        .recorded_buckets()
        .map(|(ns, c)| (ns as f64 / 1000.0, c))
        .collect();
    let mut d = Dist::of(values);
    if !h.is_empty() {
        d.min = h.min_ns() as f64 / 1000.0;
        d.max = h.max_ns() as f64 / 1000.0;
        d.mean = h.mean_ns() / 1000.0;
        d.stdev = h.stdev_ns() / 1000.0;
    }
    d
}

/// Completed requests in each whole second of the run.
fn per_second(r: &RunResult) -> Dist {
    let mut counts: Vec<u64> = r.stats.series.0.iter().map(|p| p.requests).collect();
    counts.sort_unstable();
    let mut values: Vec<(f64, u64)> = Vec::new();
    for c in counts {
        match values.last_mut() {
            Some((v, n)) if *v == c as f64 => *n += 1,
            _ => values.push((c as f64, 1)),
        }
    }
    Dist::of(values)
}

/// `summary`: wrk's fields, its error classes from ours (connect: the connect classes;
/// read: reads that failed, were reset, cut short or malformed; write; status: answers with
/// a status of 400 or more; timeout).
fn summary(lua: &Lua, r: &RunResult) -> mlua::Result<Table> {
    let s = &r.stats;
    let e = &s.errors;
    let count = |kinds: &[ErrorKind]| kinds.iter().map(|k| e.get(*k)).sum::<u64>();
    let errors = lua.create_table()?;
    errors.set(
        "connect",
        count(&[
            ErrorKind::ConnectRefused,
            ErrorKind::ConnectTimeout,
            ErrorKind::ConnectError,
            ErrorKind::AddrNotAvailable,
            ErrorKind::TlsHandshake,
        ]),
    )?;
    errors.set(
        "read",
        count(&[
            ErrorKind::ReadError,
            ErrorKind::Reset,
            ErrorKind::ClosedBeforeResponseComplete,
            ErrorKind::MalformedResponse,
        ]),
    )?;
    errors.set("write", count(&[ErrorKind::WriteError]))?;
    let status: u64 = s.status.0.range(400..).map(|(_, n)| n).sum();
    errors.set("status", status)?;
    errors.set("timeout", count(&[ErrorKind::ReadTimeout]))?;
    let t = lua.create_table()?;
    t.set("duration", s.elapsed_us)?;
    t.set("requests", s.requests)?;
    t.set("bytes", s.bytes_read)?;
    t.set("errors", errors)?;
    Ok(t)
}

/// `done`'s three arguments.
pub(crate) fn arguments(lua: &Lua, r: &RunResult) -> mlua::Result<(Table, Dist, Dist)> {
    Ok((summary(lua, r)?, latency(r), per_second(r)))
}
