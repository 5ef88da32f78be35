//! One flat CSV row per run, for spreadsheets and `loadbench bench` tables: a header row and a
//! data row with fixed units in the column names. Every error class always has its column, so
//! files from different runs line up; only the percentile columns follow `--percentiles`.

use crate::{RenderOptions, Renderer};
use loadbench_model::{ErrorKind, Histo, LoadShape, RunResult};
use std::io::Write;

/// Header + one row, RFC 4180 quoting, `\n` line ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvRenderer;

impl Renderer for CsvRenderer {
    fn render(
        &self,
        result: &RunResult,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let (header, row): (Vec<String>, Vec<String>) = columns(result, opts).into_iter().unzip();
        writeln!(out, "{}", line(&header))?;
        writeln!(out, "{}", line(&row))?;
        endpoint_table(result, opts, out)
    }
}

/// A request mix: after a blank line, a second table with one row per request (its own
/// header); nothing for a single-request run, so such files keep their one table.
fn endpoint_table(r: &RunResult, opts: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let endpoints = crate::endpoints::of(r);
    for (i, e) in endpoints.iter().enumerate() {
        let (header, row): (Vec<String>, Vec<String>) = endpoint_columns(r, e, &opts.percentiles)
            .into_iter()
            .unzip();
        if i == 0 {
            writeln!(out)?;
            writeln!(out, "{}", line(&header))?;
        }
        writeln!(out, "{}", line(&row))?;
    }
    Ok(())
}

/// One request of a mix: its label, counts, rate, latency, errors by class and status codes
/// (`200=300;404=2`).
pub(crate) fn endpoint_columns(
    r: &RunResult,
    e: &loadbench_model::EndpointStats,
    percentiles: &[f64],
) -> Vec<(String, String)> {
    let mut cols = vec![
        col("endpoint", e.index),
        col("method", &e.method),
        col("url", &e.url),
        col("weight", e.weight),
        col("requests", e.requests),
        col("errors", e.errors.total()),
        col(
            "requests_per_sec",
            format!("{:.2}", crate::endpoints::per_sec(r, e.requests)),
        ),
    ];
    cols.extend(latency_columns(&e.latency.hist, percentiles));
    cols.extend(
        ErrorKind::ALL
            .iter()
            .map(|&k| col(format!("err_{}", error_slug(k)), e.errors.get(k))),
    );
    cols.push(col("status", crate::endpoints::status_list(e, "=", ";")));
    cols
}

/// `(name, value)` pairs in column order.
fn columns(r: &RunResult, opts: &RenderOptions) -> Vec<(String, String)> {
    let mut cols = run_columns(r);
    cols.extend(latency_columns(&r.stats.latency.hist, &opts.percentiles));
    cols.extend(error_columns(r));
    cols.extend(status_columns(r));
    cols.extend(phase_columns(r));
    cols.push(col("started_at", &r.started_at));
    cols.push(col("interrupted", r.interrupted));
    cols
}

fn col(name: impl Into<String>, value: impl ToString) -> (String, String) {
    (name.into(), value.to_string())
}

fn run_columns(r: &RunResult) -> Vec<(String, String)> {
    let (c, s, sum) = (&r.config, &r.stats, r.stats.summary());
    vec![
        col("url", &c.url),
        col("method", &c.method),
        col("model", model_name(&c.load)),
        col("connections", c.connections),
        col("threads", c.threads),
        col("duration_s", format!("{:.3}", s.elapsed_secs())),
        col("requests", s.requests),
        col("errors", sum.errors),
        col("requests_per_sec", format!("{:.2}", sum.requests_per_sec)),
        col("bytes_read", s.bytes_read),
        col("bytes_written", s.bytes_written),
        col(
            "read_bytes_per_sec",
            format!("{:.2}", sum.read_bytes_per_sec),
        ),
    ]
}

fn model_name(model: &LoadShape) -> &'static str {
    match model {
        LoadShape::Closed { .. } => "closed",
        LoadShape::Open { .. } => "open",
        LoadShape::FindMax { .. } => "find_max",
    }
}

/// Latency in µs; empty cells when nothing was recorded, since 0 would read as a measurement.
fn latency_columns(h: &Histo, percentiles: &[f64]) -> Vec<(String, String)> {
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

/// hey's request phases as it prints them: mean, fastest and slowest, µs; empty cells for
/// results saved before the split was recorded.
fn phase_columns(r: &RunResult) -> Vec<(String, String)> {
    let p = &r.stats.phases;
    let us = |h: &Histo, ns: f64| {
        if h.is_empty() {
            String::new()
        } else {
            format!("{:.3}", ns / 1e3)
        }
    };
    let phases = [
        ("req_write", &p.write.hist),
        ("resp_wait", &p.wait.hist),
        ("resp_read", &p.read.hist),
    ];
    phases
        .iter()
        .flat_map(|&(name, h)| {
            [
                col(format!("{name}_mean_us"), us(h, h.mean_ns())),
                col(format!("{name}_min_us"), us(h, h.min_ns() as f64)),
                col(format!("{name}_max_us"), us(h, h.max_ns() as f64)),
            ]
        })
        .collect()
}

/// `p50_us`, `p99_9_us`, `p99_99_us`.
pub fn percentile_column(p: f64) -> String {
    format!("p{}_us", p.to_string().replace('.', "_"))
}

fn error_columns(r: &RunResult) -> Vec<(String, String)> {
    let errors = &r.stats.errors;
    ErrorKind::ALL
        .iter()
        .map(|&k| col(format!("err_{}", error_slug(k)), errors.get(k)))
        .collect()
}

/// The serde name of an error class, so CSV and JSON agree.
fn error_slug(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| kind.describe().replace(' ', "_"))
}

fn status_columns(r: &RunResult) -> Vec<(String, String)> {
    (2..=5u16)
        .map(|class| {
            let n: u64 = r
                .stats
                .status
                .0
                .iter()
                .filter(|(&code, _)| code / 100 == class)
                .map(|(_, &n)| n)
                .sum();
            col(format!("status_{class}xx"), n)
        })
        .collect()
}

fn line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| quote(f))
        .collect::<Vec<_>>()
        .join(",")
}

/// RFC 4180: a field holding a comma, a quote or a line break is quoted, quotes doubled.
pub fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fixtures, render_to_string, Format};

    fn render(r: &RunResult, opts: &RenderOptions) -> String {
        render_to_string(Format::Csv, r, opts)
    }

    #[test]
    fn snapshot_busy() {
        insta::assert_snapshot!(render(&fixtures::busy(), &RenderOptions::default()));
    }

    #[test]
    fn snapshot_empty() {
        insta::assert_snapshot!(render(&fixtures::empty(), &RenderOptions::default()));
    }

    #[test]
    fn quotes_only_fields_that_need_it() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
        assert_eq!(quote("cr\r"), "\"cr\r\"");
        assert_eq!(quote(""), "");
    }

    #[test]
    fn url_with_comma_and_quote_stays_one_field() {
        let mut r = fixtures::busy();
        r.config.url = "http://h/q?a=1,2&b=\"x\"".into();
        let text = render(&r, &RenderOptions::default());
        let row = text.lines().nth(1).unwrap();
        assert!(
            row.starts_with("\"http://h/q?a=1,2&b=\"\"x\"\"\",GET,"),
            "{row}"
        );
    }

    #[test]
    fn header_and_row_have_the_same_width_and_stable_error_columns() {
        let text = render(&fixtures::empty(), &RenderOptions::default());
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header.len(), lines.next().unwrap().split(',').count());
        assert!(header.contains(&"err_connect_refused"));
        assert!(header.contains(&"err_closed_before_response_complete"));
        assert_eq!(
            header.iter().filter(|h| h.starts_with("err_")).count(),
            ErrorKind::ALL.len()
        );
    }

    #[test]
    fn percentile_columns_follow_the_options() {
        assert_eq!(percentile_column(50.0), "p50_us");
        assert_eq!(percentile_column(99.9), "p99_9_us");
        let opts = RenderOptions {
            percentiles: vec![99.99],
            color: false,
        };
        let text = render(&fixtures::busy(), &opts);
        assert!(text.contains(",latency_max_us,p99_99_us,err_"), "{text}");
    }
}
