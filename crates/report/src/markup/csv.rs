//! CSV for every CSV report: RFC 4180 quoting, `(name, value)` columns, an enum as the JSON
//! spells it, and the per-request columns of a mix (label, counts, rate, latency, errors by
//! class, statuses), which a run, a find-max step and a bench round all write.

use crate::view::endpoints;
use loadbench_model::{EndpointStats, ErrorKind, Histo, RunResult};

/// One request of a mix: its label, counts, rate, latency, errors by class and status codes
/// (`200=300;404=2`).
pub(crate) fn endpoint_columns(
    r: &RunResult,
    e: &EndpointStats,
    percentiles: &[f64],
) -> Vec<(String, String)> {
    let mut cols = vec![col("endpoint", e.index)];
    if let Some(step) = &e.name {
        cols.push(col("step", step));
    }
    cols.extend([
        col("method", &e.method),
        col("url", &e.url),
        col("weight", e.weight),
        col("requests", e.requests),
        col("errors", e.errors.total()),
        col(
            "requests_per_sec",
            format!("{:.2}", endpoints::per_sec(r, e.requests)),
        ),
    ]);
    cols.extend(latency_columns(&e.latency.hist, percentiles));
    cols.extend(
        ErrorKind::ALL
            .iter()
            .map(|&k| col(format!("err_{}", error_slug(k)), e.errors.get(k))),
    );
    cols.push(col("status", endpoints::status_list(e, "=", ";")));
    cols
}

/// A `(name, value)` column.
pub(crate) fn col(name: impl Into<String>, value: impl ToString) -> (String, String) {
    (name.into(), value.to_string())
}

/// Latency in µs; empty cells when nothing was recorded, since 0 would read as a measurement.
pub(crate) fn latency_columns(h: &Histo, percentiles: &[f64]) -> Vec<(String, String)> {
    let us = |ns: f64| {
        if h.is_empty() {
            String::new()
        } else {
            format!("{:.3}", ns / 1e3)
        }
    };
    let mut cols = vec![
        col("latency_min_us", us(h.min_ns() as f64)),
        col("latency_mean_us", us(h.mean_ns())),
        col("latency_stdev_us", us(h.stdev_ns())),
        col("latency_max_us", us(h.max_ns() as f64)),
    ];
    let pct = percentiles
        .iter()
        .map(|&p| col(percentile_column(p), us(h.percentile_ns(p) as f64)));
    cols.extend(pct);
    cols
}

/// `p50_us`, `p99_9_us`, `p99_99_us`.
pub(crate) fn percentile_column(p: f64) -> String {
    format!("p{}_us", p.to_string().replace('.', "_"))
}

/// The serde name of an error class, so CSV and JSON agree.
pub(crate) fn error_slug(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| kind.describe().replace(' ', "_"))
}

/// RFC 4180: a field holding a comma, a quote or a line break is quoted, quotes doubled.
pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// An enum value as the JSON spells it (`closed`, `generator_bound`), so both files agree.
pub(crate) fn json_name(value: impl serde::Serialize) -> String {
    let v = serde_json::to_value(value).unwrap_or_default();
    v.as_str().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_fields_that_need_it() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
        assert_eq!(quote("cr\r"), "\"cr\r\"");
        assert_eq!(quote(""), "");
    }
}
