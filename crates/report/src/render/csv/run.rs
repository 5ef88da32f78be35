//! One flat CSV row per run, for spreadsheets and `loadbench bench` tables: a header row and a
//! data row with fixed units in the column names. Every error class always has its column, so
//! files from different runs line up; only the percentile columns follow `--percentiles`.

use crate::markup::csv::{col, endpoint_columns, error_slug, latency_columns, quote};
use crate::options::{RenderOptions, Renderer};
use crate::view::{self, endpoints};
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
        endpoint_table(result, opts, out)?;
        close_code_table(result, out)?;
        grpc_status_table(result, out)?;
        idle_table(result, out)?;
        if let Some(gates) = &result.gates {
            writeln!(out)?;
            out.write_all(crate::gates::csv_table(gates).as_bytes())?;
        }
        Ok(())
    }
}

/// A request mix: after a blank line, a second table with one row per request (its own
/// header); nothing for a single-request run, so such files keep their one table.
fn endpoint_table(r: &RunResult, opts: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let endpoints = endpoints::of(r);
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
    flow_table(r, out)
}

/// A flow: after the per-step table and a blank line, one more table of one row: the
/// flow's iterations completed, per second, broken, and their time (µs).
fn flow_table(r: &RunResult, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(f) = &r.stats.flow else {
        return Ok(());
    };
    let h = &f.duration.hist;
    let us = |p: f64| {
        if h.is_empty() {
            String::new()
        } else {
            format!("{:.1}", h.percentile_ns(p) as f64 / 1000.0)
        }
    };
    let cols = [
        col("flow", &f.name),
        col("steps", f.steps),
        col("completed", f.completed),
        col(
            "completed_per_sec",
            format!("{:.2}", f.per_sec(r.stats.elapsed_secs())),
        ),
        col("broken", f.broken),
        col("duration_p50_us", us(50.0)),
        col("duration_p99_us", us(99.0)),
    ];
    let (header, row): (Vec<String>, Vec<String>) = cols.into_iter().unzip();
    writeln!(out)?;
    writeln!(out, "{}", line(&header))?;
    writeln!(out, "{}", line(&row))
}

/// `(name, value)` pairs in column order.
fn columns(r: &RunResult, opts: &RenderOptions) -> Vec<(String, String)> {
    let mut cols = run_columns(r);
    cols.extend(latency_columns(&r.stats.latency.hist, &opts.percentiles));
    cols.extend(error_columns(r));
    cols.extend(status_columns(r));
    cols.extend(phase_columns(r));
    cols.extend(generator_delay_columns(&r.stats));
    cols.extend(websocket_columns(r));
    cols.extend(grpc_columns(r));
    cols.push(col("started_at", &r.started_at));
    cols.push(col("interrupted", r.interrupted));
    cols
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

/// Open model: the generator's own delay in sending (not in the latency), µs; empty cells
/// for the closed model and for results saved before it was recorded.
fn generator_delay_columns(s: &loadbench_model::Stats) -> Vec<(String, String)> {
    let h = &s.generator_delay.hist;
    let cell = |p: f64| {
        if h.is_empty() {
            String::new()
        } else {
            format!("{:.3}", h.percentile_ns(p) as f64 / 1e3)
        }
    };
    vec![
        col("generator_delay_p50_us", cell(50.0)),
        col("generator_delay_p99_us", cell(99.0)),
    ]
}

/// A WebSocket run's upgrades, pings answered and close frames (all codes), and with
/// `--ws-match` the unmatched messages, their bytes and those over 64 KiB; empty cells for
/// an HTTP run (and the unmatched ones without `--ws-match`), so the columns line up in
/// every file.
fn websocket_columns(r: &RunResult) -> Vec<(String, String)> {
    let cells = match view::run::websocket(r) {
        Some(ws) => [ws.upgrades, ws.pings, ws.closes()].map(|n| n.to_string()),
        None => Default::default(),
    };
    let unmatched = match (view::run::websocket(r), &r.config.ws_match) {
        (Some(ws), Some(_)) => {
            [ws.unmatched, ws.unmatched_bytes, ws.unmatched_too_large].map(|n| n.to_string())
        }
        _ => Default::default(),
    };
    let [upgrades, pings, closes] = cells;
    let [unmatched, unmatched_bytes, too_large] = unmatched;
    vec![
        col("ws_upgrades", upgrades),
        col("ws_pings", pings),
        col("ws_closes", closes),
        col("ws_unmatched", unmatched),
        col("ws_unmatched_bytes", unmatched_bytes),
        col("ws_unmatched_too_large", too_large),
    ]
}

/// A WebSocket run whose server sent close frames: after a blank line, one row per close
/// code with its name and count (the codes are open-ended: 4000–4999 are each application's).
fn close_code_table(r: &RunResult, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(ws) = view::run::websocket(r) else {
        return Ok(());
    };
    let rows = view::run::close_code_rows(ws);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "ws_close_code,meaning,closes")?;
    for (code, meaning, n) in rows {
        writeln!(
            out,
            "{}",
            line(&[code.to_string(), meaning.into(), n.to_string()])
        )?;
    }
    Ok(())
}

/// A gRPC run's calls answered `OK`, answered with another `grpc-status` (failed calls),
/// and answered without one, and the response messages received; empty cells for other runs,
/// so the columns line up.
fn grpc_columns(r: &RunResult) -> Vec<(String, String)> {
    let cells = match view::run::grpc(r) {
        Some(g) => [g.count("OK"), g.failed(), g.no_status, g.messages].map(|n| n.to_string()),
        None => Default::default(),
    };
    let [ok, failed, no_status, messages] = cells;
    vec![
        col("grpc_ok", ok),
        col("grpc_failed", failed),
        col("grpc_no_status", no_status),
        col("grpc_messages", messages),
    ]
}

/// A gRPC run that got answers: after a blank line, one row per `grpc-status` counted (the
/// code, empty for `OTHER` and `no grpc-status`; its name; the calls).
fn grpc_status_table(r: &RunResult, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(g) = view::run::grpc(r) else {
        return Ok(());
    };
    let rows = view::run::grpc_status_rows(g);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "grpc_code,grpc_status,calls")?;
    for (code, name, n) in rows {
        writeln!(out, "{}", line(&[code, name.into(), n.to_string()]))?;
    }
    Ok(())
}

/// `--ws-idle`: after a blank line, the idle connections' counts, one row each: requested,
/// opened, failed to open (and by error class), closed early by the server (and by close
/// code), held to the end, still opening at the end.
fn idle_table(r: &RunResult, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(ws) = view::run::websocket(r).filter(|ws| !ws.idle.is_empty()) else {
        return Ok(());
    };
    let idle = &ws.idle;
    let mut rows = vec![
        ("requested".to_string(), idle.requested),
        ("opened".into(), idle.opened),
        ("failed_to_open".into(), idle.failures()),
    ];
    for (&kind, &n) in &idle.failed {
        rows.push((format!("failed_{}", error_slug(kind)), n));
    }
    rows.push(("closed_early".into(), idle.closed()));
    for (code, &n) in &idle.closed_early {
        rows.push((format!("closed_early_{code}"), n));
    }
    rows.push(("held".into(), idle.held));
    rows.push(("still_opening".into(), idle.unopened));
    writeln!(out)?;
    writeln!(out, "ws_idle,connections")?;
    for (what, n) in rows {
        writeln!(out, "{}", line(&[what, n.to_string()]))?;
    }
    Ok(())
}

fn error_columns(r: &RunResult) -> Vec<(String, String)> {
    let errors = &r.stats.errors;
    ErrorKind::ALL
        .iter()
        .map(|&k| col(format!("err_{}", error_slug(k)), errors.get(k)))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markup::csv::percentile_column;
    use crate::{fixtures, render_to_string, Format};

    fn render(r: &RunResult, opts: &RenderOptions) -> String {
        render_to_string(Format::Csv, r, opts)
    }

    #[test]
    fn snapshot_busy() {
        insta::assert_snapshot!(render(&fixtures::busy(), &RenderOptions::default()));
    }

    /// Issue 41: a WebSocket run's counts and its close codes, one row per code.
    #[test]
    fn snapshot_websocket() {
        insta::assert_snapshot!(render(&fixtures::websocket(), &RenderOptions::default()));
    }

    #[test]
    fn snapshot_empty() {
        insta::assert_snapshot!(render(&fixtures::empty(), &RenderOptions::default()));
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
