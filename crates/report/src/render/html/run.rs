//! A self-contained HTML page of a run: one file that works offline and
//! reads on a laptop or a phone. What needs attention comes first (errors, an interrupted run, a
//! generator that fell behind), then the headline figures, the charts (SVG drawn by
//! [`crate::charts`], inline), the details, and last the scenario and the host. Pure: the page is
//! a `String`; [`write_chart_files`] is the one function here that touches the disk, so that the
//! same charts can be pasted into documents.

use crate::charts::{self, Chart};
use crate::markup::html::{
    self as page, alert, endpoints_table, esc, footer, key_values, row, section, Alert, Level, Row,
};
use crate::options::{RenderOptions, Renderer};
use crate::view::run::{
    close_code_rows, grpc, grpc_messages_text, grpc_status_rows, phase_cells, request_phases,
    websocket, NO_GRPC_STATUS,
};
use crate::words::{host_facts, pacing_text};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{Histo, LoadShape, RunResult, Starvation, Stats, Summary};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The HTML page of a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

impl Renderer for Html {
    fn render(
        &self,
        result: &RunResult,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        out.write_all(render_run(result, opts).as_bytes())
    }
}

/// Writes a run's charts as `NAME.svg` files into `dir` (beside the page) and returns their
/// paths. Charts with nothing to show (no response completed) are not written.
pub fn write_chart_files(result: &RunResult, dir: &Path) -> io::Result<Vec<PathBuf>> {
    charts::write_files(&charts::run_charts(result), dir)
}

/// The page of a run, as a string.
pub fn render_run(result: &RunResult, opts: &RenderOptions) -> String {
    run_page(result, opts, &charts::run_charts(result))
}

/// The page of a run around its charts, drawn once for the page and the files beside it.
pub(crate) fn run_page(r: &RunResult, opts: &RenderOptions, charts: &[Chart]) -> String {
    // Recomputed rather than trusted: a hand-built result may carry a stale summary.
    let summary = r.stats.summary();
    let mut body = header(r);
    body += &page::alerts(&run_alerts(r, &summary));
    if let Some(gates) = &r.gates {
        body += &crate::gates::html_section(gates);
    }
    body += &summary_section(r, &summary, opts);
    let why = crate::why::html_list(&r.why);
    if !why.is_empty() {
        body += &section("why", "Why", &why);
    }
    body += &section("charts", "Charts", &page::figures(charts));
    body += &endpoints_section(r);
    body += &details_section(r);
    body += &section("scenario", "Scenario", &key_values(&scenario(r)));
    body += &section("host", "Host", &key_values(&host(r)));
    body += &footer(&r.loadbench_version);
    page::document(&format!("loadbench: {}", target_line(r)), &body)
}

fn is_open(r: &RunResult) -> bool {
    matches!(r.config.load, LoadShape::Open { .. })
}

/// `GET http://…`.
fn target_line(r: &RunResult) -> String {
    format!("{} {}", r.config.method, r.config.url)
}

fn header(r: &RunResult) -> String {
    let c = &r.config;
    let length = match (c.requests, c.duration_ms) {
        (Some(n), _) => format!("{n} requests"),
        (None, Some(ms)) => format!("{} test", units::duration_ms_short(ms)),
        (None, None) => "test".to_string(),
    };
    let up_to = if is_open(r) { "up to " } else { "" };
    let mut shape = format!(
        "{length}, {} threads, {up_to}{} connections ({}, {}",
        c.threads,
        c.connections,
        model_name(r, &c.load),
        if c.keepalive {
            "keep-alive"
        } else {
            "no keep-alive"
        }
    );
    if let Some(p) = c.pipelined() {
        shape += &format!(", {p}");
    }
    shape.push(')');
    if let Some(pacing) = pacing_text(r) {
        shape += &format!("; {pacing}");
    }
    format!(
        "<header>\n<h1>loadbench run</h1>\n<p class=\"target mono\">{}</p>\n<p class=\"muted\">{} · started {}</p>\n</header>\n",
        esc(&target_line(r)),
        esc(&shape),
        esc(&r.started_at)
    )
}

fn model_name(r: &RunResult, load: &LoadShape) -> String {
    match load {
        LoadShape::Closed { .. } => "closed model".to_string(),
        LoadShape::Open { schedule, .. } => format!(
            "open model, {}",
            crate::words::run_schedule_text(r, schedule)
        ),
        LoadShape::FindMax { slo, .. } => format!("find-max search, {}", slo.text),
    }
}

/// What needs attention before the figures are read.
fn run_alerts(r: &RunResult, sum: &Summary) -> Vec<Alert> {
    let s = &r.stats;
    let mut list = Vec::new();
    if r.interrupted {
        let after = units::duration_us(s.elapsed_us as f64);
        list.push(alert(
            Level::Warn,
            format!("Interrupted after {after}: these are partial results."),
        ));
    }
    if let Some(starved) = Starvation::of(s) {
        let said = starved.explain(starved.cause_in(&r.why));
        list.push(alert(Level::Error, format!("{said}.")));
    }
    if let Some(note) = r.config.transport_note() {
        let level = if r.config.insecure() {
            Level::Warn
        } else {
            Level::Note
        };
        list.push(alert(level, format!("{note}.")));
    }
    if s.requests == 0 {
        list.push(alert(
            Level::Error,
            "No response completed: there is no latency to report.",
        ));
    }
    if sum.errors > 0 {
        list.push(alert(Level::Error, errors_text(s, sum.errors)));
    }
    if sum.non_success_responses > 0 {
        list.push(alert(
            Level::Warn,
            statuses_text(s, sum.non_success_responses),
        ));
    }
    list.extend(generator_alert(s, sum));
    if s.abandoned > 0 {
        let n = s.abandoned;
        let were = if n == 1 { "was" } else { "were" };
        list.push(alert(Level::Note, format!("{} {were} still in flight when the run ended; {} counted neither as completed nor as failed.", units::counted(n, "request"), if n == 1 { "it is" } else { "they are" })));
    }
    list.push(alert(Level::Note, model_note(r)));
    list
}

fn errors_text(s: &Stats, errors: u64) -> String {
    let share = units::percent(errors as f64 / s.attempts().max(1) as f64);
    let kinds: Vec<String> = s
        .errors
        .0
        .iter()
        .map(|(k, n)| format!("{n} {}", k.describe()))
        .collect();
    format!(
        "{errors} requests failed ({share} of attempts): {}.",
        kinds.join(", ")
    )
}

fn statuses_text(s: &Stats, n: u64) -> String {
    let codes: Vec<String> = s
        .status
        .0
        .iter()
        .filter(|(c, _)| !(200..400).contains(*c))
        .map(|(c, n)| format!("{n} × {c}"))
        .collect();
    let calls = s.grpc.failed();
    if calls == 0 {
        return format!(
            "{n} responses had a status outside 200–399: {}.",
            codes.join(", ")
        );
    }
    let statuses = if codes.is_empty() {
        String::new()
    } else {
        format!(" (HTTP {})", codes.join(", "))
    };
    let grpc = s.grpc.text().unwrap_or_default();
    format!("{n} answers failed{statuses}; gRPC calls by status: {grpc}.")
}

/// Open model: the generator sent less than the schedule asked for, or sent late.
fn generator_alert(s: &Stats, sum: &Summary) -> Option<Alert> {
    let target = sum.target_per_sec?;
    let short = target > 0.0 && sum.sent_per_sec < target * 0.99;
    if !short && s.sent_late == 0 {
        return None;
    }
    let share = if target > 0.0 {
        sum.sent_per_sec / target
    } else {
        0.0
    };
    let late = s.sent_late;
    Some(alert(
        Level::Warn,
        format!(
            "The generator fell behind: it sent {} req/s of the {} req/s target ({}), and {late} requests went out more than 1 ms after their intended time. Latency still counts from the intended time, but the target load was not offered as planned: add threads or cores, or lower the rate.",
            units::rate(sum.sent_per_sec),
            units::rate(target),
            units::percent(share),
        ),
    ))
}

fn model_note(r: &RunResult) -> &'static str {
    match &r.config.load {
        LoadShape::Closed { .. } => "Closed model: each connection waits for its response before sending the next, so stalls are understated (coordinated omission); --rate runs the open model.",
        LoadShape::Open { .. } | LoadShape::FindMax { .. } if r.stats.generator_delay.is_empty() => "Open model: latency counts from each request's intended send time (no coordinated omission); service time counts from the actual send.",
        LoadShape::Open { .. } | LoadShape::FindMax { .. } => "Open model: latency counts from each request's intended send time, waits for a busy connection included (no coordinated omission), less the generator's own delay in sending it (shown apart); service time counts from the actual send.",
    }
}

fn summary_section(r: &RunResult, sum: &Summary, opts: &RenderOptions) -> String {
    let left = format!("<div>\n{}</div>\n", key_values(&headline(r, sum)));
    let right = format!(
        "<div>\n<h3>Latency distribution</h3>\n{}</div>\n",
        percentile_table(r, opts)
    );
    section(
        "summary",
        "Summary",
        &format!("<div class=\"grid\">\n{left}{right}</div>\n"),
    )
}

fn headline(r: &RunResult, sum: &Summary) -> Vec<(&'static str, String)> {
    let (s, h) = (&r.stats, &r.stats.latency.hist);
    let mut pairs = vec![("Requests/sec", units::rate(sum.requests_per_sec))];
    if let Some(target) = sum.target_per_sec {
        let unit = crate::view::endpoints::target_unit(r);
        pairs.push(("Target rate", format!("{} {unit}", units::rate(target))));
        let mut sent = format!("{} req/s", units::rate(sum.sent_per_sec));
        if let Some(started) = crate::view::endpoints::flow_started(r, target) {
            sent += &format!("; {started}");
        }
        pairs.push(("Achieved rate (sent)", sent));
    }
    for (label, p) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9)] {
        pairs.push((label, at(h, p)));
    }
    pairs.push(("Max", ns_or_missing(h, h.max_ns() as f64)));
    pairs.push(("Errors", errors_cell(s, sum.errors)));
    pairs.push((
        crate::words::failed_answers_label(s),
        sum.non_success_responses.to_string(),
    ));
    pairs.push(("Requests completed", s.requests.to_string()));
    pairs.push(("Elapsed", units::duration_us(s.elapsed_us as f64)));
    pairs.push((
        "Transfer/sec",
        format!(
            "{}/s read, {}/s written",
            units::bytes(sum.read_bytes_per_sec),
            units::bytes(sum.written_bytes_per_sec)
        ),
    ));
    pairs.push(("Connections opened", s.connections_opened.to_string()));
    let c = &s.per_connection;
    if c.connections() > 0 {
        pairs.push((
            "Connections without a response",
            format!("{} of {}", c.starved, c.connections()),
        ));
        pairs.push((
            "Completed per connection (min / median / max)",
            format!("{} / {} / {}", c.min(), c.median(), c.max()),
        ));
    }
    if c.oldest_in_flight_us > 0 {
        let age = units::duration_us(c.oldest_in_flight_us as f64);
        pairs.push(("Oldest request in flight at end", age));
    }
    if s.waiting > 0 {
        pairs.push(("Waiting for a connection at end", s.waiting.to_string()));
    }
    if let Some(goaway) = crate::words::goaway_text(&s.h2) {
        pairs.push(("HTTP/2 GOAWAY", goaway));
    }
    if is_open(r) {
        pairs.push(("Sent late (>1ms)", s.sent_late.to_string()));
        if let Some(delay) = crate::words::generator_delay_text(s) {
            pairs.push(("Generator delay (not in latency)", delay));
        }
    }
    pairs
}

fn errors_cell(s: &Stats, errors: u64) -> String {
    if errors == 0 {
        return "0".to_string();
    }
    let share = errors as f64 / s.attempts().max(1) as f64;
    format!("{errors} ({} of attempts)", units::percent(share))
}

fn at(h: &Histo, p: f64) -> String {
    ns_or_missing(h, h.percentile_ns(p) as f64)
}

fn ns_or_missing(h: &Histo, ns: f64) -> String {
    if h.is_empty() {
        MISSING.to_string()
    } else {
        units::duration_ns(ns)
    }
}

/// The user's percentiles: latency, service time beside it in the open model, and when some
/// requests never got an answer, the censored distribution (a lower bound) with a caption.
fn percentile_table(r: &RunResult, opts: &RenderOptions) -> String {
    let s = &r.stats;
    let unanswered = s.unanswered();
    let mut head = vec!["Percentile".to_string(), "Latency".to_string()];
    if is_open(r) {
        head.push("Service time".to_string());
    }
    if unanswered > 0 {
        head.push("Incl. in flight (lower bound)".to_string());
    }
    let rows: Vec<Row> = opts
        .percentiles
        .iter()
        .map(|&p| {
            let mut cells = vec![units::percentile_label(p), at(&s.latency.hist, p)];
            if is_open(r) {
                cells.push(at(&s.service.hist, p));
            }
            if unanswered > 0 {
                cells.push(format!("≥ {}", at(&s.latency_censored.hist, p)));
            }
            row(cells)
        })
        .collect();
    let table = page::table("percentiles", &head, &rows);
    if unanswered == 0 {
        return table;
    }
    format!(
        "<p class=\"censored\">Latency counts completed requests. The last column is the \
         distribution including the {} still in flight (censored at run end): each counts \
         at its age when the run ended, so it is a lower bound.</p>\n{table}",
        units::counted(unanswered, "request")
    )
}

/// A request mix: one row per request (nothing for a single-request run); requests with errors
/// or a non-2xx/3xx status are marked.
fn endpoints_section(r: &RunResult) -> String {
    let table = endpoints_table(r);
    if table.is_empty() {
        return String::new();
    }
    let flow = crate::view::endpoints::flow_line(r).map_or(String::new(), |l| {
        format!("<p class=\"flow\">{}</p>\n", crate::markup::html::esc(&l))
    });
    section(
        "endpoints",
        &crate::view::endpoints::title(r),
        &format!("{flow}{table}"),
    )
}

/// Status codes, errors by class, and each phase's distribution.
fn details_section(r: &RunResult) -> String {
    let s = &r.stats;
    let statuses: Vec<Row> = s
        .status
        .0
        .iter()
        .map(|(&code, &n)| {
            let class = if (200..400).contains(&code) {
                ""
            } else {
                "bad"
            };
            Row {
                class,
                cells: vec![code.to_string(), n.to_string()],
            }
        })
        .collect();
    let errors: Vec<Row> = s
        .errors
        .0
        .iter()
        .map(|(k, &n)| Row {
            class: "bad",
            cells: vec![k.describe().to_string(), n.to_string()],
        })
        .collect();
    let mut body = String::from("<div class=\"grid\">\n<div>\n<h3>Status codes</h3>\n");
    body += &counts_table(&["Status", "Responses"], &statuses);
    body += "</div>\n<div>\n<h3>Errors</h3>\n";
    body += &counts_table(&["Error", "Requests"], &errors);
    body += "</div>\n</div>\n";
    body += &websocket_details(r);
    body += &grpc_details(r);
    body += "<h3>Phases</h3>\n";
    body += &phases_table(r);
    section("details", "Details", &body)
}

/// A WebSocket run: upgrades, pings answered and close frames beside the server's close
/// frames by code (what the text report's `WebSocket` line says).
fn websocket_details(r: &RunResult) -> String {
    let Some(ws) = websocket(r) else {
        return String::new();
    };
    let mut counts = vec![
        ("Connections upgraded", ws.upgrades.to_string()),
        ("Pings answered", ws.pings.to_string()),
        ("Close frames from the server", ws.closes().to_string()),
    ];
    if !ws.idle.is_empty() {
        counts.push(("Idle connections (--ws-idle)", ws.idle.text()));
    }
    if let Some(matched) = crate::view::run::ws_match_text(r) {
        counts.push(("Answers (--ws-match)", matched));
    }
    let closes: Vec<Row> = close_code_rows(ws)
        .into_iter()
        .map(|(code, meaning, n)| row(vec![code.to_string(), meaning.to_string(), n.to_string()]))
        .collect();
    let mut body = String::from("<div class=\"grid\">\n<div>\n<h3>WebSocket</h3>\n");
    body += &key_values(&counts);
    body += "</div>\n<div>\n<h3>Close codes</h3>\n";
    body += &counts_table(&["Close code", "Meaning", "Closes"], &closes);
    body + "</div>\n</div>\n"
}

/// A gRPC run: its calls by `grpc-status`, like the HTTP status table (a status other than
/// `OK` is a failed call).
fn grpc_details(r: &RunResult) -> String {
    let Some(g) = grpc(r) else {
        return String::new();
    };
    let rows: Vec<Row> = grpc_status_rows(g)
        .into_iter()
        .map(|(code, name, n)| Row {
            class: if name == "OK" || name == NO_GRPC_STATUS {
                ""
            } else {
                "bad"
            },
            cells: vec![name.to_string(), code, n.to_string()],
        })
        .collect();
    let mut body = String::from("<h3>gRPC status</h3>\n");
    body += &counts_table(&["grpc-status", "Code", "Calls"], &rows);
    if let Some(messages) = grpc_messages_text(r) {
        body += &key_values(&[("Response messages", messages)]);
    }
    body
}

fn counts_table(head: &[&str], rows: &[Row]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">none</p>\n".to_string();
    }
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    page::table("counts", &head, rows)
}

fn phases_table(r: &RunResult) -> String {
    let s = &r.stats;
    let head = ["Phase", "Min", "Mean", "Stdev", "p50", "p99", "Max"].map(String::from);
    let mut phases = vec![
        ("connect", &s.connect.hist),
        ("first byte", &s.first_byte.hist),
    ];
    phases.extend(request_phases(s));
    if is_open(r) {
        phases.push(("send lag", &s.send_lag.hist));
        if !s.generator_delay.is_empty() {
            phases.push(("generator delay", &s.generator_delay.hist));
        }
        phases.push(("service", &s.service.hist));
    }
    phases.push(("total", &s.latency.hist));
    let rows: Vec<Row> = phases
        .iter()
        .map(|&(name, h)| {
            let mut cells = vec![name.to_string()];
            cells.extend(phase_cells(h));
            row(cells)
        })
        .collect();
    page::table("phases", &head, &rows)
}

/// The run's configuration, as resolved.
fn scenario(r: &RunResult) -> Vec<(&'static str, String)> {
    let c = &r.config;
    let mut pairs = vec![
        ("URL", c.url.clone()),
        ("Address", c.address.clone()),
        ("Method", c.method.clone()),
    ];
    pairs.extend(c.headers.iter().map(|h| ("Header", h.clone())));
    pairs.push(("Body", units::bytes(c.body_bytes as f64)));
    pairs.push(("Load model", model_name(r, &c.load)));
    let conns = if is_open(r) {
        "Max connections"
    } else {
        "Connections"
    };
    pairs.push((conns, c.connections.to_string()));
    pairs.push(("Threads", c.threads.to_string()));
    if let Some(n) = c.requests {
        pairs.push(("Requests", n.to_string()));
    }
    if let Some(ms) = c.duration_ms {
        pairs.push(("Duration", units::duration_ms_short(ms)));
    }
    pairs.push(("Warm-up", units::duration_ms_short(c.warmup_ms)));
    pairs.push((
        "Keep-alive",
        if c.keepalive { "yes" } else { "no" }.to_string(),
    ));
    pairs.push(("Timeout", units::duration_ms_short(c.timeout_ms)));
    pairs.push((
        "Connect timeout",
        units::duration_ms_short(c.connect_timeout_ms),
    ));
    pairs
}

fn host(r: &RunResult) -> Vec<(&'static str, String)> {
    let mut pairs = host_facts(&r.host);
    pairs.push(("Started", r.started_at.clone()));
    pairs.push(("Ended", r.ended_at.clone()));
    pairs.push((
        "Interrupted",
        if r.interrupted { "yes" } else { "no" }.to_string(),
    ));
    pairs
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{fixtures, render_to_string, Format};
    use loadbench_model::{ErrorKind, RateSegment};

    /// The HTML of one chart's `<figure>`.
    pub(crate) fn figure<'a>(html: &'a str, name: &str) -> &'a str {
        let start = html
            .find(&format!("data-chart=\"{name}\""))
            .unwrap_or_else(|| panic!("no chart {name}"));
        let end = start + html[start..].find("</figure>").unwrap();
        &html[start..end]
    }

    /// The point counts of every `<polyline>` in some SVG.
    pub(crate) fn polylines(svg: &str) -> Vec<usize> {
        svg.split("<polyline")
            .skip(1)
            .map(|p| {
                let points = p.split("points=\"").nth(1).unwrap();
                points[..points.find('"').unwrap()]
                    .split_whitespace()
                    .count()
            })
            .collect()
    }

    fn page(r: &RunResult) -> String {
        render_run(r, &RenderOptions::default())
    }

    /// The busy fixture as an open-model run: a target per second, service time, late sends.
    fn open_run() -> RunResult {
        let mut r = fixtures::busy();
        r.config.load = LoadShape::Open {
            schedule: vec![RateSegment {
                duration_ms: 10_000,
                from_rate: 4_000.0,
                to_rate: 4_000.0,
            }],
            max_connections: 500,
        };
        r.stats.scheduled = Some(40_000);
        r.stats.sent = 35_200;
        r.stats.sent_late = 1_234;
        r.stats.service = r.stats.first_byte.clone();
        for p in &mut r.stats.series.0 {
            p.target = Some(4_000);
            p.sent = p.requests + 20;
        }
        r.finalize();
        r
    }

    #[test]
    fn page_has_the_summary_percentile_detail_scenario_and_host_tables() {
        let html = page(&fixtures::busy());
        for needle in [
            "<!DOCTYPE html>",
            "<section id=\"summary\">",
            "<table class=\"kv\">",
            "<table class=\"percentiles\">",
            "<th scope=\"row\">99.9%</th>",
            "<table class=\"phases\">",
            "<section id=\"scenario\">",
            "<section id=\"host\">",
            "<th scope=\"row\">CPU</th><td>Test CPU</td>",
            "<th scope=\"row\">Requests/sec</th><td>3512.00</td>",
            "<th scope=\"row\">p99.9</th>",
        ] {
            assert!(html.contains(needle), "missing {needle}");
        }
        assert!(html.find("id=\"summary\"") < html.find("id=\"charts\""));
        assert!(html.find("id=\"charts\"") < html.find("id=\"scenario\""));
        assert!(html.find("id=\"scenario\"") < html.find("id=\"host\""));
    }

    /// hey's split shows as three rows of the phases table, and not at all for a result saved
    /// before it was recorded.
    #[test]
    fn phases_table_has_hey_request_write_wait_and_read_rows_when_recorded() {
        let rows = ["req write", "resp wait", "resp read"];
        let html = page(&fixtures::busy());
        let table = &html[html.find("<table class=\"phases\">").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        for row in rows {
            assert!(table.contains(&format!(">{row}</th>")), "{row}: {table}");
        }
        let mut old = fixtures::busy();
        old.stats.phases = Default::default();
        let html = page(&old);
        assert!(rows.iter().all(|row| !html.contains(row)));
    }

    #[test]
    fn every_run_chart_is_inline_svg_with_its_data_points() {
        let html = page(&fixtures::busy());
        let spectrum = polylines(figure(&html, "latency-spectrum"));
        assert!(spectrum.iter().any(|&n| n > 200), "{spectrum:?}");
        for name in ["rate-over-time", "latency-over-time"] {
            let f = figure(&html, name);
            assert!(f.contains("<svg role=\"img\""), "{name}");
            assert!(polylines(f).contains(&10), "{name}: {:?}", polylines(f));
            assert!(
                f.matches("<circle").count() >= 10,
                "{name}: a dot per second"
            );
        }
        assert!(figure(&html, "latency-spectrum").contains(">\n99.9%\n</text>"));
    }

    #[test]
    fn open_model_charts_show_service_time_and_the_target() {
        let html = page(&open_run());
        let spectrum = figure(&html, "latency-spectrum");
        let long = polylines(spectrum).iter().filter(|&&n| n > 200).count();
        assert_eq!(
            long,
            2 * 2,
            "two lines, in the wide and the compact drawing"
        );
        assert!(spectrum.contains("service time (from actual send)"));
        let rate = figure(&html, "rate-over-time");
        assert!(rate.contains("target/s") && rate.contains("sent/s"));
        assert!(html.contains("<th scope=\"col\">Service time</th>"));
        assert!(!rate.contains("connects/s"), "none recorded: no line");
        let mut r = open_run();
        r.stats.series.0[0].connects = 40;
        let html = page(&r);
        assert!(figure(&html, "rate-over-time").contains("connects/s"));
    }

    #[test]
    fn warnings_come_first_for_errors_statuses_interruption_and_a_slow_generator() {
        let mut r = open_run();
        r.interrupted = true;
        let html = page(&r);
        let alerts = &html[..html.find("id=\"summary\"").unwrap()];
        for needle in [
            "class=\"alert error\"",
            "5 requests failed",
            "3 connect refused, 2 read timeout",
            "20 responses had a status outside 200–399",
            "Interrupted after 10.00s",
            "The generator fell behind",
            "1234 requests went out more than 1 ms after",
        ] {
            assert!(alerts.contains(needle), "missing {needle} in {alerts}");
        }
        assert!(alerts.find("alert error") < alerts.find("alert warn"));
    }

    #[test]
    fn goaway_is_in_the_summary_only_when_the_server_sent_one() {
        let mut r = fixtures::busy();
        assert!(!page(&r).contains("GOAWAY"));
        r.stats.h2.goaways = 2;
        r.stats.h2.goaway_retries = 7;
        let html = page(&r);
        let summary = &html[html.find("<section id=\"summary\">").unwrap()..];
        let summary = &summary[..summary.find("</section>").unwrap()];
        assert!(
            summary.contains(
                "<th scope=\"row\">HTTP/2 GOAWAY</th><td>the server sent GOAWAY 2 times ("
            ),
            "{summary}"
        );
        assert!(
            summary.contains("7 requests above its last stream id, never processed, sent again on a new connection</td>"),
            "{summary}"
        );
    }

    #[test]
    fn a_clean_run_has_only_the_model_note() {
        let mut r = fixtures::busy();
        r.stats.errors = Default::default();
        r.stats.status = Default::default();
        r.stats.status.add(200, r.stats.requests);
        r.stats.abandoned = 0;
        let html = page(&r);
        assert_eq!(html.matches("<li class=\"alert").count(), 1, "{html}");
        assert!(html.contains("alert note\"><strong>Note:</strong> Closed model"));
    }

    #[test]
    fn user_text_is_escaped() {
        let mut r = fixtures::busy();
        r.config.url = "http://127.0.0.1:8080/<script>alert('x')</script>?a=1&b=2".into();
        r.config.headers = vec!["X-Evil: \"><img src=x onerror=alert(1)>".into()];
        r.host.hostname = "<b>host</b>".into();
        r.stats.errors.add(ErrorKind::Reset, 1);
        let html = page(&r);
        assert!(!html.contains("<script"), "a script tag got through");
        assert!(!html.contains("<img"), "an img tag got through");
        assert!(!html.contains("<b>host"));
        assert!(html.contains("/&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;?a=1&amp;b=2"));
        assert!(html.contains("X-Evil: &quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
    }

    #[test]
    fn the_page_loads_nothing() {
        let html = page(&open_run());
        for banned in [
            "<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import",
        ] {
            assert!(!html.contains(banned), "{banned}");
        }
        assert!(html.contains(&format!("content=\"{}\"", page::CSP)));
        let outside = html.matches("http").count();
        let allowed = html.matches("http://www.w3.org/2000/svg").count()
            + html.matches("http-equiv").count()
            + html.matches("http://127.0.0.1:8080/").count();
        assert_eq!(outside, allowed);
    }

    #[test]
    fn an_empty_run_explains_its_empty_charts() {
        let html = page(&fixtures::empty());
        assert_eq!(html.matches("class=\"chart empty\"").count(), 3);
        assert!(html.contains("No response completed"));
        assert!(!html.contains("<svg"));
    }

    #[test]
    fn the_renderer_writes_the_page() {
        let r = fixtures::busy();
        assert_eq!(
            render_to_string(Format::Html, &r, &RenderOptions::default()),
            page(&r)
        );
    }

    #[test]
    fn chart_files_are_the_inline_charts() {
        let dir = std::env::temp_dir().join(format!("loadbench-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = fixtures::busy();
        let paths = write_chart_files(&r, &dir).unwrap();
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let svgs: Vec<&String> = names.iter().filter(|n| n.ends_with(".svg")).collect();
        assert_eq!(
            svgs,
            [
                "latency-spectrum.svg",
                "rate-over-time.svg",
                "latency-over-time.svg"
            ]
        );
        // A PNG beside each SVG, drawn at twice the size, wherever a font is installed.
        let pngs: Vec<&String> = names.iter().filter(|n| n.ends_with(".png")).collect();
        if !pngs.is_empty() || std::env::var_os("CI").is_some() {
            assert_eq!(
                pngs,
                [
                    "latency-spectrum.png",
                    "rate-over-time.png",
                    "latency-over-time.png"
                ]
            );
            let png = std::fs::read(dir.join("latency-spectrum.png")).unwrap();
            assert_eq!(&png[1..4], b"PNG");
            assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 1600);
        }
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(svg.starts_with("<svg width=\"800\" height=\"420\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(write_chart_files(&fixtures::empty(), &dir)
            .unwrap()
            .is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
