//! The report a wrk, ab, hey or berf user reads at a glance on stdout: what ran, the headline
//! numbers, latency (summary, percentiles, hey's histogram), statuses and errors, the per-second
//! rate and the connection phases. Each section is a function returning lines, so the order is
//! one list and an empty measurement prints `-` instead of garbage.

use crate::markup::text::{endpoint_table, width};
use crate::options::{RenderOptions, Renderer};
use crate::view::distribution::{self, Bar};
use crate::view::run::{phase_cells, request_phases};
use crate::words::{document_length, pacing_text, plural};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{ErrorKind, Histo, LoadShape, RunResult, Starvation, Summary};
use std::io::Write;

/// Longest bar of the response-time histogram, in characters.
const BAR_WIDTH: u64 = 40;
const INDENT: &str = "  ";

/// The human-readable report.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextRenderer;

impl Renderer for TextRenderer {
    fn render(
        &self,
        result: &RunResult,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let report = Report::new(result, opts);
        let sections = SECTIONS
            .iter()
            .map(|section| section(&report))
            .filter(|lines| !lines.is_empty());
        for (i, lines) in sections.enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            lines.iter().try_for_each(|line| writeln!(out, "{line}"))?;
        }
        Ok(())
    }
}

type Section = fn(&Report) -> Vec<String>;

const SECTIONS: [Section; 12] = [
    header,
    summary,
    gates,
    latency,
    percentiles,
    histogram,
    status_codes,
    errors,
    endpoints,
    per_second_rate,
    phases,
    why,
];

/// Each `--slo` gate with its measured value and pass/fail; nothing without gates.
fn gates(rep: &Report) -> Vec<String> {
    rep.r
        .gates
        .as_ref()
        .map_or_else(Vec::new, crate::gates::text_lines)
}

/// The findings that apply to this run (kernel evidence, the generator's CPU).
fn why(rep: &Report) -> Vec<String> {
    crate::why::text_lines(&rep.r.why)
}

/// Everything a section needs, computed once.
struct Report<'a> {
    r: &'a RunResult,
    opts: &'a RenderOptions,
    summary: Summary,
    paint: Paint,
}

impl<'a> Report<'a> {
    fn new(r: &'a RunResult, opts: &'a RenderOptions) -> Self {
        // Recomputed rather than trusted: a hand-built result may carry a stale summary.
        let summary = r.stats.summary();
        Report {
            r,
            opts,
            summary,
            paint: Paint(opts.color),
        }
    }

    fn title(&self, text: &str) -> String {
        self.paint.bold(&format!("{text}:"))
    }
}

/// ANSI styling, or none.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn code(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn bold(self, text: &str) -> String {
        self.code("1", text)
    }

    fn red(self, text: &str) -> String {
        self.code("31", text)
    }

    /// Red when `n` is non-zero: something failed.
    fn alarm(self, n: u64) -> String {
        if n == 0 {
            n.to_string()
        } else {
            self.red(&n.to_string())
        }
    }
}

fn header(rep: &Report) -> Vec<String> {
    let c = &rep.r.config;
    let mut lines = Vec::new();
    if rep.r.interrupted {
        let elapsed = units::duration_us(rep.r.stats.elapsed_us as f64);
        let line = format!("INTERRUPTED after {elapsed}: partial results");
        lines.push(rep.paint.code("1;33", &line));
    }
    let target = if c.method == "GET" {
        c.url.clone()
    } else {
        format!("{} {}", c.method, c.url)
    };
    lines.push(format!("Running {} @ {target}", run_length(rep)));
    lines.push(format!("{INDENT}{}", shape(rep)));
    lines.push(format!("{INDENT}{}", headline(rep)));
    if let Some(shards) = &rep.r.shards {
        lines.push(format!("{INDENT}Distributed: {}", shards.describe()));
    }
    if let Some(note) = c.transport_note() {
        let line = format!("{INDENT}{note}");
        lines.push(if c.insecure() {
            rep.paint.code("1;33", &line)
        } else {
            line
        });
    }
    if let Some(starved) = Starvation::of(&rep.r.stats) {
        let said = starved.explain(starved.cause_in(&rep.r.why));
        lines.push(rep.paint.code("1;33", &format!("WARNING: {said}")));
    }
    lines
}

fn run_length(rep: &Report) -> String {
    let c = &rep.r.config;
    match (c.requests, c.duration_ms) {
        (Some(n), _) if rep.r.stats.flow.is_some() => {
            format!("{n} {} of a flow", plural(n, "iteration"))
        }
        (Some(n), _) => format!("{n} {}", plural(n, "request")),
        (None, Some(ms)) => format!("{} test", units::duration_ms_short(ms)),
        (None, None) => "test".to_string(),
    }
}

/// `2 threads and 50 connections (closed model, keep-alive), warm-up 2s` (and
/// `, pipelined ×16` after keep-alive with `--pipeline 16`).
fn shape(rep: &Report) -> String {
    let c = &rep.r.config;
    let model = match &c.load {
        LoadShape::Closed { .. } => "closed model".to_string(),
        LoadShape::Open { schedule, .. } => format!(
            "open model, {}",
            crate::words::run_schedule_text(rep.r, schedule)
        ),
        LoadShape::FindMax { slo, .. } => format!("find-max search, {}", slo.text),
    };
    let mut keepalive = if c.keepalive {
        "keep-alive"
    } else {
        "no keep-alive"
    }
    .to_string();
    if let Some(p) = c.pipelined() {
        keepalive += &format!(", {p}");
    }
    let threads = u64::from(c.threads);
    let conns = u64::from(c.connections);
    let up_to = if matches!(c.load, LoadShape::Open { .. }) {
        "up to "
    } else {
        ""
    };
    let mut text = format!(
        "{threads} {} and {up_to}{conns} {} ({model}, {keepalive})",
        plural(threads, "thread"),
        plural(conns, "connection")
    );
    if c.warmup_ms > 0 {
        text += &format!(", warm-up {}", units::duration_ms_short(c.warmup_ms));
    }
    if let Some(pacing) = pacing_text(rep.r) {
        text += &format!("; {pacing}");
    }
    text
}

/// wrk's headline in one line, each figure formatted as in the sections below:
/// `82704 requests in 2.00s: 41352.00 req/s, p50 90.81µs, p99 211.20µs, 0 errors`.
fn headline(rep: &Report) -> String {
    let s = &rep.r.stats;
    let mut rate = format!("{} req/s", units::rate(rep.summary.requests_per_sec));
    if let Some(target) = rep.summary.target_per_sec {
        let unit = crate::view::endpoints::target_unit(rep.r);
        rate += &format!(" (target {} {unit})", units::rate(target));
    }
    let h = &s.latency.hist;
    let latency = if h.is_empty() {
        "no completed requests, so no p50/p99".to_string()
    } else {
        let p = |p: f64| duration_or_missing(h, h.percentile_ns(p) as f64);
        format!("p50 {}, p99 {}", p(50.0), p(99.0))
    };
    format!(
        "{} {} in {}: {rate}, {latency}, {}",
        s.requests,
        plural(s.requests, "request"),
        units::duration_us(s.elapsed_us as f64),
        headline_errors(rep)
    )
}

/// `0 errors`, `12 errors (0.01%)`: the count and share of attempts of the Errors line.
fn headline_errors(rep: &Report) -> String {
    let errors = rep.summary.errors;
    let count = format!("{} {}", rep.paint.alarm(errors), plural(errors, "error"));
    match errors_share(rep) {
        Some(share) => format!("{count} ({share})"),
        None => count,
    }
}

/// Errors as a share of attempts, or `None` when there were none.
fn errors_share(rep: &Report) -> Option<String> {
    let (errors, attempts) = (rep.summary.errors, rep.r.stats.attempts());
    (errors > 0).then(|| units::percent(errors as f64 / attempts as f64))
}

/// Requests cut off when the run stopped: expected when a timed run ends, so said calmly.
fn in_flight_at_end(rep: &Report) -> String {
    let n = rep.r.stats.abandoned;
    if rep.r.config.duration_ms.is_some() && !rep.r.interrupted {
        format!("{n} (normal for a timed run)")
    } else {
        n.to_string()
    }
}

fn summary(rep: &Report) -> Vec<String> {
    let (s, sum, paint) = (&rep.r.stats, &rep.summary, rep.paint);
    let mut pairs = vec![
        ("Elapsed", units::duration_us(s.elapsed_us as f64)),
        ("Requests completed", s.requests.to_string()),
        ("Requests/sec", units::rate(sum.requests_per_sec)),
        ("Time per request", time_per_request(rep)),
        (
            "Transfer/sec",
            read_written(sum.read_bytes_per_sec, sum.written_bytes_per_sec, "/s"),
        ),
        (
            "Total transferred",
            read_written(s.bytes_read as f64, s.bytes_written as f64, ""),
        ),
        ("Errors", errors_total(rep)),
        (
            crate::words::failed_answers_label(s),
            paint.alarm(sum.non_success_responses),
        ),
        ("Success ratio", success_ratio(rep)),
        ("Connections opened", s.connections_opened.to_string()),
    ];
    if s.body.responses == s.requests {
        // Files saved before these fields existed have no body counts: leave them out.
        pairs.push(("Keep-alive requests", s.keepalive_requests.to_string()));
        pairs.push(("Document length", document_length(&s.body)));
    }
    if s.abandoned > 0 {
        pairs.push(("In flight when run stopped", in_flight_at_end(rep)));
    }
    pairs.extend(unanswered_pairs(s, paint));
    pairs.extend(reconnect_pairs(s));
    if let Some(ws) = crate::view::run::websocket(rep.r) {
        pairs.push(("WebSocket", crate::words::ws_text(ws)));
        if !ws.idle.is_empty() {
            pairs.push(("WebSocket idle (--ws-idle)", ws.idle.text()));
        }
        if let Some(matched) = crate::view::run::ws_match_text(rep.r) {
            pairs.push(("WebSocket --ws-match", matched));
        }
    }
    if let Some(messages) = crate::view::run::grpc_messages_text(rep.r) {
        pairs.push(("gRPC messages", messages));
    }
    if let Some(target) = sum.target_per_sec {
        pairs.extend(open_model_pairs(rep.r, target, sum.sent_per_sec));
        if let Some(short) = loadbench_model::Shortfall::of_run(rep.r) {
            pairs.push(("Why short of the target", short.to_string()));
        }
    }
    let mut lines = vec![rep.title("Summary")];
    lines.extend(key_values(&pairs));
    lines.push(format!("{INDENT}{}", model_note(rep)));
    lines
}

/// Dead keep-alive connections (retried or dropped, never errors), why the server made
/// connections be re-opened, HTTP/2 GOAWAYs and the requests they sent again, and the closed
/// model's connect backoff, shown only when they happened.
fn reconnect_pairs(s: &loadbench_model::Stats) -> Vec<(&'static str, String)> {
    let mut pairs = Vec::new();
    if s.stale_retries + s.stale_closes > 0 {
        let what = format!(
            "{} requests resent on a new connection, {} idle connections dropped",
            s.stale_retries, s.stale_closes
        );
        pairs.push(("Closed by the server while idle", what));
    }
    if s.pipeline_resent > 0 {
        let what = format!(
            "{} written behind a response that ended the connection, sent again on a new one",
            s.pipeline_resent
        );
        pairs.push(("Pipelined requests resent", what));
    }
    if let Some(why) = s.reopen_reasons.describe() {
        let what = format!("{} by the server: {why}", s.reopen_reasons.total());
        pairs.push(("Connections re-opened", what));
    }
    if let Some(what) = crate::words::goaway_text(&s.h2) {
        pairs.push(("HTTP/2 GOAWAY", what));
    }
    if let Some(calls) = s.grpc.text() {
        pairs.push(("gRPC status", calls));
    }

    if s.connect_backoffs > 0 {
        let what = format!(
            "{} waits after failed connects, {} in all",
            s.connect_backoffs,
            units::duration_us(s.backoff_us as f64)
        );
        pairs.push(("Connect backoff", what));
    }
    pairs
}

/// Per connection: completed requests' spread, those left without an answer, the oldest
/// request in flight and (open model) the requests still waiting for a connection.
fn unanswered_pairs(s: &loadbench_model::Stats, paint: Paint) -> Vec<(&'static str, String)> {
    let c = &s.per_connection;
    let mut pairs = Vec::new();
    if c.connections() > 0 {
        let spread = format!("{} / {} / {}", c.min(), c.median(), c.max());
        pairs.push(("Completed per connection min / median / max", spread));
        let starved = format!("{} of {}", paint.alarm(c.starved), c.connections());
        pairs.push(("Connections without a response", starved));
    }
    if c.oldest_in_flight_us > 0 {
        let age = units::duration_us(c.oldest_in_flight_us as f64);
        pairs.push(("Oldest request in flight at end", age));
    }
    if s.waiting > 0 {
        let waiting = format!(
            "{} (no free connection; never sent)",
            paint.red(&s.waiting.to_string())
        );
        pairs.push(("Waiting for a connection at end", waiting));
    }
    pairs
}

/// The open model's own figures: target vs achieved rate and how late sends were.
fn open_model_pairs(r: &RunResult, target: f64, sent: f64) -> Vec<(&'static str, String)> {
    let s = &r.stats;
    let lag = &s.send_lag.hist;
    let share = if target > 0.0 { sent / target } else { 0.0 };
    let unit = crate::view::endpoints::target_unit(r);
    let achieved = match crate::view::endpoints::flow_started(r, target) {
        Some(started) => format!("{} req/s (the flow's steps); {started}", units::rate(sent)),
        None => format!(
            "{} req/s ({} of target)",
            units::rate(sent),
            units::percent(share)
        ),
    };
    let mut pairs = vec![
        ("Target rate", format!("{} {unit}", units::rate(target))),
        ("Achieved rate (sent)", achieved),
        ("Sent late (>1ms)", s.sent_late.to_string()),
        (
            "Send lag p50 / p99 / max",
            format!(
                "{} / {} / {}",
                duration_or_missing(lag, lag.percentile_ns(50.0) as f64),
                duration_or_missing(lag, lag.percentile_ns(99.0) as f64),
                duration_or_missing(lag, lag.max_ns() as f64)
            ),
        ),
    ];
    if let Some(delay) = crate::words::generator_delay_text(s) {
        pairs.push((
            "Generator delay (not in latency)",
            format!("{delay}: its own wait to send a due request with a free connection"),
        ));
    }
    pairs
}

/// How latency was measured, so nobody mistakes a closed-model figure for an open one.
fn model_note(rep: &Report) -> String {
    match rep.r.config.load {
        LoadShape::Closed { .. } => "Closed model: each connection waits for its response, so stalls are understated (coordinated omission); --rate runs the open model.".to_string(),
        LoadShape::Open { .. } | LoadShape::FindMax { .. } if rep.r.stats.generator_delay.is_empty() => "Open model: latency counts from each request's intended send time (no coordinated omission); service time is in Phases.".to_string(),
        LoadShape::Open { .. } | LoadShape::FindMax { .. } => "Open model: latency counts from each request's intended send time, waits for a busy connection included (no coordinated omission), less the generator's own delay in sending it (shown apart); service time is in Phases.".to_string(),
    }
}

/// ab's "Time per request (mean, across all concurrent requests)": elapsed / requests.
fn time_per_request(rep: &Report) -> String {
    let s = &rep.r.stats;
    if s.requests == 0 {
        return MISSING.to_string();
    }
    let us = s.elapsed_us as f64 / s.requests as f64;
    let across = format!(
        "{} (mean, across all concurrent requests)",
        units::duration_us(us)
    );
    match time_per_user(rep) {
        Some(user) => format!("{across}, {user} per connection"),
        None => across,
    }
}

/// ab's "Time per request (mean)" per user: connections × elapsed / requests. Only the closed
/// model has a fixed number of users.
fn time_per_user(rep: &Report) -> Option<String> {
    let s = &rep.r.stats;
    match (
        &rep.r.config.load,
        s.time_per_request_us(rep.r.config.connections),
    ) {
        (LoadShape::Closed { .. }, Some(us)) => Some(units::duration_us(us)),
        _ => None,
    }
}

fn read_written(read: f64, written: f64, suffix: &str) -> String {
    format!(
        "{}{suffix} read, {}{suffix} written",
        units::bytes(read),
        units::bytes(written)
    )
}

fn errors_total(rep: &Report) -> String {
    let count = rep.paint.alarm(rep.summary.errors);
    match errors_share(rep) {
        Some(share) => format!("{count} ({share} of attempts)"),
        None => count,
    }
}

/// vegeta's "Success": the share of attempts that got a 2xx/3xx response, `-` without any.
fn success_ratio(rep: &Report) -> String {
    let attempts = rep.r.stats.attempts();
    let ok = (rep.r.stats.requests).saturating_sub(rep.summary.non_success_responses);
    if attempts == 0 {
        return MISSING.to_string();
    }
    let share = units::percent(ok as f64 / attempts as f64);
    let what = if rep.r.stats.grpc.is_empty() {
        "a 2xx/3xx response"
    } else {
        "an OK answer"
    };
    format!("{share} ({ok} of {attempts} attempts got {what})")
}

fn latency(rep: &Report) -> Vec<String> {
    let h = &rep.r.stats.latency.hist;
    let header = ["Min", "Mean", "Stdev", "Max", "+/- Stdev"]
        .map(String::from)
        .to_vec();
    let within = distribution::within_stdev(h).map_or(MISSING.to_string(), units::percent);
    let mut row = spread_cells(h);
    row.push(within);
    let mut lines = vec![rep.title("Latency")];
    lines.extend(table(&[header, row], false));
    lines
}

/// Min, mean, stdev and max of a histogram, or dashes when it is empty.
fn spread_cells(h: &Histo) -> Vec<String> {
    let values = [
        h.min_ns() as f64,
        h.mean_ns(),
        h.stdev_ns(),
        h.max_ns() as f64,
    ];
    values
        .iter()
        .map(|&ns| duration_or_missing(h, ns))
        .collect()
}

fn duration_or_missing(h: &Histo, ns: f64) -> String {
    if h.is_empty() {
        MISSING.to_string()
    } else {
        units::duration_ns(ns)
    }
}

/// The percentiles of completed requests; when some never got an answer, beside them those
/// of the censored distribution (each unanswered request at its age: a lower bound).
fn percentiles(rep: &Report) -> Vec<String> {
    let s = &rep.r.stats;
    let (h, censored) = (&s.latency.hist, &s.latency_censored.hist);
    if rep.opts.percentiles.is_empty() {
        return Vec::new();
    }
    let unanswered = s.unanswered();
    let cell = |h: &Histo, p: f64| duration_or_missing(h, h.percentile_ns(p) as f64);
    let mut rows: Vec<Vec<String>> = rep
        .opts
        .percentiles
        .iter()
        .map(|&p| {
            let mut row = vec![units::percentile_label(p), cell(h, p)];
            if unanswered > 0 {
                row.push(cell(censored, p));
            }
            row
        })
        .collect();
    let mut lines = vec![rep.title("Latency distribution")];
    if unanswered > 0 {
        lines.push(format!(
            "{INDENT}completed requests, and including the {unanswered} {} still in flight \
             (censored at run end: a lower bound)",
            plural(unanswered, "request")
        ));
        let head = ["", "completed", "incl. in flight (≥)"].map(String::from);
        rows.insert(0, head.to_vec());
    }
    lines.extend(table(&rows, false));
    lines
}

fn histogram(rep: &Report) -> Vec<String> {
    let bars = distribution::bars(&rep.r.stats.latency.hist);
    let mut lines = vec![rep.title("Response time histogram")];
    if bars.is_empty() {
        lines.push(format!("{INDENT}{MISSING}"));
        return lines;
    }
    lines.extend(bar_lines(&bars));
    lines
}

/// hey's `  1.23ms [12345] |■■■■■■■■`, bars proportional to the fullest bucket.
fn bar_lines(bars: &[Bar]) -> Vec<String> {
    let labels: Vec<String> = bars
        .iter()
        .map(|b| units::duration_ns(b.upper_ns as f64))
        .collect();
    let counts: Vec<String> = bars.iter().map(|b| format!("[{}]", b.count)).collect();
    let (label_w, count_w) = (width(&labels), width(&counts));
    let most = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let rows = bars.iter().zip(labels.iter().zip(&counts));
    rows.map(|(bar, (label, count))| {
        let len = (bar.count * BAR_WIDTH / most) as usize;
        format!(
            "{INDENT}{label:>label_w$} {count:<count_w$} |{}",
            "■".repeat(len)
        )
    })
    .collect()
}

fn status_codes(rep: &Report) -> Vec<String> {
    let status = &rep.r.stats.status.0;
    let mut lines = vec![rep.title("Status codes")];
    if status.is_empty() {
        lines.push(format!("{INDENT}none"));
        return lines;
    }
    let counts_w = width(&status.values().map(u64::to_string).collect::<Vec<_>>());
    let words_w = width(
        &status
            .values()
            .map(|&n| plural(n, "response"))
            .collect::<Vec<_>>(),
    );
    let rates = &rep.summary.status_per_sec;
    lines.extend(status.iter().map(|(&code, &n)| {
        let rate = units::rate(rates.get(&code).copied().unwrap_or(0.0));
        let word = plural(n, "response");
        let line = format!("{INDENT}[{code}] {n:>counts_w$} {word:<words_w$}  {rate}/s");
        if (200..400).contains(&code) {
            line
        } else {
            rep.paint.red(&line)
        }
    }));
    lines
}

fn errors(rep: &Report) -> Vec<String> {
    let errors = &rep.r.stats.errors.0;
    let mut lines = vec![rep.title("Errors")];
    if errors.is_empty() {
        lines.push(format!("{INDENT}none"));
        return lines;
    }
    let pairs: Vec<(&str, String)> = errors
        .iter()
        .map(|(&k, &n)| (k.describe(), error_cell(rep, k, n)))
        .collect();
    lines.extend(key_values(&pairs));
    lines
}

/// A class's count and, when known, why: `118 (bad chunk size 116, head over 64 KiB 2)`, or
/// the limit a timeout hit.
fn error_cell(rep: &Report, kind: ErrorKind, n: u64) -> String {
    let count = rep.paint.red(&n.to_string());
    let c = &rep.r.config;
    let why = match kind {
        ErrorKind::ReadTimeout => Some(format!(
            "--timeout {}",
            units::duration_us(c.timeout_ms as f64 * 1e3)
        )),
        ErrorKind::ConnectTimeout => Some(format!(
            "--connect-timeout {}",
            units::duration_us(c.connect_timeout_ms as f64 * 1e3)
        )),
        _ => rep.r.stats.error_reasons.describe(kind),
    };
    match why {
        Some(why) => format!("{count} ({why})"),
        None => count,
    }
}

/// A request mix: one row per request (none for a single-request run).
fn endpoints(rep: &Report) -> Vec<String> {
    let table = endpoint_table(rep.r);
    if table.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![rep.title(&crate::view::endpoints::title(rep.r))];
    lines.extend(table);
    lines.extend(crate::view::endpoints::flow_line(rep.r).map(|l| format!("  {l}")));
    lines
}

/// berf's per-second rate: omitted unless there are at least two seconds to compare.
fn per_second_rate(rep: &Report) -> Vec<String> {
    let series = &rep.r.stats.series;
    let elapsed = rep.r.stats.elapsed_secs();
    let whole = (elapsed.floor() as usize).min(series.0.len());
    let Some(spread) = series.rate_stats(elapsed).filter(|_| whole >= 2) else {
        return Vec::new();
    };
    let header = ["Min", "Mean", "Stdev", "Max"].map(String::from).to_vec();
    let row = [spread.min, spread.mean, spread.stdev, spread.max]
        .map(units::si)
        .to_vec();
    let title = format!("Requests per second, over {whole} whole seconds");
    let mut lines = vec![rep.title(&title)];
    lines.extend(table(&[header, row], false));
    lines
}

/// hey's "details" / ab's "Connection Times": each phase's distribution (hey's avg, fastest
/// and slowest are the Mean, Min and Max columns).
fn phases(rep: &Report) -> Vec<String> {
    let s = &rep.r.stats;
    let header = ["", "Min", "Mean", "Stdev", "P50", "P99", "Max"]
        .map(String::from)
        .to_vec();
    let mut rows = vec![("connect", &s.connect.hist)];
    if !s.tls.is_empty() {
        rows.push(("TLS handshake", &s.tls.handshake.hist));
    }
    rows.push(("first byte", &s.first_byte.hist));
    rows.extend(request_phases(s));
    if matches!(rep.r.config.load, LoadShape::Open { .. }) {
        rows.push(("send lag", &s.send_lag.hist));
        if !s.generator_delay.is_empty() {
            rows.push(("generator delay", &s.generator_delay.hist));
        }
        rows.push(("service", &s.service.hist));
    }
    rows.push(("total", &s.latency.hist));
    let mut table_rows = vec![header];
    table_rows.extend(rows.iter().map(|&(name, h)| phase_row(name, h)));
    let mut lines = vec![rep.title("Phases")];
    lines.extend(table(&table_rows, true));
    if !s.tls.is_empty() {
        let (full, resumed) = (s.tls.full, s.tls.resumed);
        lines.push(format!(
            "{INDENT}TLS handshakes: {full} full, {resumed} resumed"
        ));
    }
    lines
}

fn phase_row(name: &str, h: &Histo) -> Vec<String> {
    let mut cells = vec![name.to_string()];
    cells.extend(phase_cells(h));
    cells
}

/// `label   value` lines with the values in one column.
fn key_values(pairs: &[(&str, String)]) -> Vec<String> {
    let w = pairs
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        + 1;
    pairs
        .iter()
        .map(|(k, v)| format!("{INDENT}{:<w$} {v}", format!("{k}:")))
        .collect()
}

/// Right-aligned columns (the first left-aligned when `labelled`), two spaces apart.
fn table(rows: &[Vec<String>], labelled: bool) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            width(
                &rows
                    .iter()
                    .filter_map(|r| r.get(c).cloned())
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    rows.iter()
        .map(|row| table_row(row, &widths, labelled))
        .collect()
}

fn table_row(row: &[String], widths: &[usize], labelled: bool) -> String {
    let cells = row.iter().zip(widths).enumerate().map(|(i, (cell, &w))| {
        if i == 0 && labelled {
            format!("{cell:<w$}")
        } else {
            format!("{cell:>w$}")
        }
    });
    format!("{INDENT}{}", cells.collect::<Vec<_>>().join("  "))
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::pacing_text;
    use crate::{fixtures, render_to_string, Format};

    #[test]
    fn the_header_states_the_send_window_and_the_initial_pool_when_recorded() {
        let mut r = fixtures::busy();
        assert_eq!(pacing_text(&r), None, "a closed run, or an older file");
        r.config.send_window_us = Some(1000);
        r.stats.pool = loadbench_model::PoolCounts {
            initial: 40,
            connects: 52,
            connects_peak: 9,
            connect_limit: 64,
            first_second: 47,
        };
        let text = render(&r, &RenderOptions::default());
        assert!(
            text.contains(
                "send window 1.00ms, initial pool 40 connections, at most 64 connects at once, \
                 52 connects in all, 47 in the first second"
            ),
            "{text}"
        );
        r.config.send_window_us = Some(0);
        let zero = pacing_text(&r).unwrap();
        assert!(
            zero.starts_with("send window 0 (a wake-up per request)"),
            "{zero}"
        );
    }

    fn render(r: &RunResult, opts: &RenderOptions) -> String {
        render_to_string(Format::Text, r, opts)
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
    fn snapshot_interrupted_count_run() {
        let mut r = fixtures::busy();
        r.interrupted = true;
        r.stats.elapsed_us = 3_200_000;
        r.config.requests = Some(100_000);
        r.config.warmup_ms = 0;
        r.config.keepalive = false;
        r.config.method = "POST".into();
        r.stats.series.0.truncate(1);
        insta::assert_snapshot!(render(&r, &RenderOptions::default()));
    }

    #[test]
    fn error_reasons_follow_their_class() {
        use loadbench_model::{ErrorKind, ErrorReason};
        let mut r = fixtures::busy();
        r.stats.errors.add(ErrorKind::MalformedResponse, 120);
        r.stats.error_reasons.add(ErrorReason::HeadOver64KiB, 2);
        r.stats.error_reasons.add(ErrorReason::BadChunkSize, 118);
        let text = render(&r, &RenderOptions::default());
        let line = text
            .lines()
            .find(|l| l.contains("malformed response"))
            .unwrap();
        assert!(
            line.ends_with("120 (bad chunk size 118, head over 64 KiB 2)"),
            "{line}"
        );
    }

    /// An HTTP/2 run whose server sent GOAWAY: `n` frames, `resent` requests sent again.
    fn goaway_run(n: u64, resent: u64) -> RunResult {
        let mut r = fixtures::busy();
        r.config.http2_streams = Some(8);
        r.stats.protocols.h2 = r.stats.connections_opened;
        r.stats.h2.max_streams_in_flight = 8;
        r.stats.h2.goaways = n;
        r.stats.h2.goaway_retries = resent;
        r
    }

    #[test]
    fn snapshot_http2_goaway() {
        insta::assert_snapshot!(render(&goaway_run(12, 34), &RenderOptions::default()));
    }

    #[test]
    fn goaway_is_shown_with_its_resends_only_when_the_server_sent_one() {
        let text = render(&goaway_run(0, 0), &RenderOptions::default());
        assert!(!text.contains("GOAWAY"), "{text}");
        let text = render(&goaway_run(12, 34), &RenderOptions::default());
        let line = text.lines().find(|l| l.contains("HTTP/2 GOAWAY")).unwrap();
        assert!(
            line.ends_with(
                "the server sent GOAWAY 12 times (each ends its connection: no new streams on \
                 it, which is re-opened); 34 requests above its last stream id, never \
                 processed, sent again on a new connection"
            ),
            "{line}"
        );
        let text = render(&goaway_run(1, 0), &RenderOptions::default());
        let line = text.lines().find(|l| l.contains("HTTP/2 GOAWAY")).unwrap();
        assert!(line.contains("sent GOAWAY once ("), "{line}");
        assert!(line.ends_with("no request had to be sent again"), "{line}");
    }

    #[test]
    fn reopen_reasons_are_one_line_most_frequent_first() {
        use loadbench_model::ReopenReason;
        let mut r = fixtures::busy();
        let text = render(&r, &RenderOptions::default());
        assert!(!text.contains("Connections re-opened"), "{text}");
        r.stats.reopen_reasons.add(ReopenReason::ExtraBytes, 3);
        r.stats
            .reopen_reasons
            .add(ReopenReason::ClosedAfterResponse, 40);
        let text = render(&r, &RenderOptions::default());
        let line = text
            .lines()
            .find(|l| l.contains("Connections re-opened"))
            .unwrap();
        let want = "43 by the server: closed after the response without Connection: close 40, \
                    bytes after the body (Content-Length shorter than the body) 3";
        assert!(line.ends_with(want), "{line}");
    }

    #[test]
    fn interrupted_line_comes_first() {
        let mut r = fixtures::busy();
        r.interrupted = true;
        r.stats.elapsed_us = 3_200_000;
        let text = render(&r, &RenderOptions::default());
        assert!(
            text.starts_with("INTERRUPTED after 3.20s: partial results\n"),
            "{text}"
        );
    }

    #[test]
    fn no_escape_codes_unless_asked() {
        let r = fixtures::busy();
        assert!(!render(&r, &RenderOptions::default()).contains('\x1b'));
        let coloured = RenderOptions {
            color: true,
            ..RenderOptions::default()
        };
        assert!(render(&r, &coloured).contains("\x1b[1mSummary:\x1b[0m"));
    }

    #[test]
    fn empty_result_prints_dashes_not_garbage() {
        let text = render(&fixtures::empty(), &RenderOptions::default());
        assert!(text.contains("Time per request:"));
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(!text.contains("Requests per second, over"));
        assert!(text.contains("Status codes:\n  none"));
    }

    #[test]
    fn table_aligns_by_characters_not_bytes() {
        let rows = vec![
            vec!["a".into(), "1.00µs".into()],
            vec!["bbb".into(), "10ns".into()],
        ];
        assert_eq!(table(&rows, true), vec!["  a    1.00µs", "  bbb    10ns"]);
    }
}
