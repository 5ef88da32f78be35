//! GitHub-flavoured Markdown for pull requests and issues: a run as a
//! few tables a reviewer reads in the page — the headline figures, the latency percentiles,
//! status codes, errors by class — and the configuration and host as a short list. Everything
//! that came from the user (URL, headers, file names) goes into code spans, and every table
//! cell has its `|` escaped, so no input can break the layout. Pure functions of the result.

use crate::markup::markdown::{code, endpoint_table, escape_text, host_text, list, table, Align};
use crate::options::{RenderOptions, Renderer};
use crate::view::run::{
    close_code_rows, grpc, grpc_messages_text, grpc_status_rows, phase_duration, request_phases,
    websocket,
};
use crate::words::{counted as plural, document_length, pacing_text};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{Histo, LoadShape, RunResult, Starvation, Stats, Summary};
use std::io::Write;

/// The percentiles of the summary table; the full table follows `--percentiles`.
const SUMMARY_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// A run as Markdown.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown;

impl Renderer for Markdown {
    fn render(
        &self,
        result: &RunResult,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        out.write_all(render_run(result, opts).as_bytes())
    }
}

/// A run as Markdown, as a string.
pub fn render_run(r: &RunResult, opts: &RenderOptions) -> String {
    let summary = r.stats.summary();
    let mut out = format!(
        "## loadbench run: {}\n\n",
        code(&format!("{} {}", r.config.method, r.config.url))
    );
    if r.interrupted {
        let after = units::duration_us(r.stats.elapsed_us as f64);
        out += &format!("> **Interrupted** after {after}: partial results.\n\n");
    }
    if let Some(starved) = Starvation::of(&r.stats) {
        let said = starved.explain(starved.cause_in(&r.why));
        out += &format!("> **Warning:** {}.\n\n", escape_text(&said));
    }
    if let Some(note) = r.config.transport_note() {
        let lead = if r.config.insecure() {
            "> **Warning:** "
        } else {
            "> "
        };
        out += &format!("{lead}{}.\n\n", escape_text(&note));
    }
    if let Some(short) = loadbench_model::Shortfall::of_run(r) {
        let text = escape_text(&short.to_string());
        out += &format!("> **Short of the target rate:** {text}.\n\n");
    }
    out += &summary_table(r, &summary);
    out += &format!("\n{}\n", model_note(r));
    if let Some(delay) = crate::words::generator_delay_text(&r.stats) {
        out += &format!("\nGenerator delay (its own wait to send a due request with a free connection; not in the latency): {delay}.\n");
    }
    if let Some(gates) = &r.gates {
        out += &crate::gates::markdown_section(gates);
    }
    if let Some(goaway) = crate::words::goaway_text(&r.stats.h2) {
        out += &format!("\nHTTP/2: {}.\n", escape_text(&goaway));
    }
    out += &percentile_table(&r.stats, &opts.percentiles);
    out += &phase_table(&r.stats);
    out += &status_table(r);
    out += &error_table(r);
    out += &websocket_section(r);
    out += &grpc_section(r);
    out += &endpoint_table(r);
    let why = crate::why::markdown_list(&r.why);
    if !why.is_empty() {
        out += &format!("\n### Why\n\n{why}");
    }
    out += "\n### Configuration\n\n";
    out += &list(&configuration(r));
    out
}

fn summary_table(r: &RunResult, sum: &Summary) -> String {
    let h = &r.stats.latency.hist;
    let mut head = vec!["requests".to_string(), "req/s".to_string()];
    let mut row = vec![
        r.stats.requests.to_string(),
        units::rate(sum.requests_per_sec),
    ];
    if let Some(target) = sum.target_per_sec {
        head.extend(["target/s", "sent/s"].map(String::from));
        row.extend([units::rate(target), units::rate(sum.sent_per_sec)]);
    }
    for p in SUMMARY_PERCENTILES {
        head.push(format!("p{p}"));
        row.push(latency(h, p));
    }
    let failed = if r.stats.grpc.is_empty() {
        "non-2xx/3xx"
    } else {
        "non-2xx/3xx or non-OK"
    };
    head.extend(["errors", failed].map(String::from));
    row.push(errors_cell(sum.errors, r.stats.attempts()));
    row.push(sum.non_success_responses.to_string());
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    table(&head, &vec![Align::Right; head.len()], &[row])
}

fn latency(h: &Histo, p: f64) -> String {
    if h.is_empty() {
        MISSING.to_string()
    } else {
        units::duration_ns(h.percentile_ns(p) as f64)
    }
}

fn errors_cell(errors: u64, attempts: u64) -> String {
    if errors == 0 {
        return "0".to_string();
    }
    let share = units::percent(errors as f64 / attempts as f64);
    format!("{errors} ({share})")
}

fn model_note(r: &RunResult) -> &'static str {
    match &r.config.load {
        LoadShape::Closed { .. } => "Closed model: each connection waits for its response, so latency under overload is understated (coordinated omission).",
        LoadShape::Open { .. } | LoadShape::FindMax { .. } if r.stats.generator_delay.is_empty() => "Open model: latency counts from each request's intended send time (no coordinated omission).",
        LoadShape::Open { .. } | LoadShape::FindMax { .. } => "Open model: latency counts from each request's intended send time, waits for a busy connection included (no coordinated omission), less the generator's own delay in sending it.",
    }
}

/// Completed requests' percentiles; when some never got an answer, a second column with
/// them counted at their age at the end (a lower bound), and the per-connection figures.
fn percentile_table(s: &Stats, percentiles: &[f64]) -> String {
    if percentiles.is_empty() {
        return String::new();
    }
    let (h, censored) = (&s.latency.hist, &s.latency_censored.hist);
    let unanswered = s.unanswered();
    if unanswered == 0 {
        let rows: Vec<Vec<String>> = percentiles
            .iter()
            .map(|&p| vec![units::percentile_label(p), latency(h, p)])
            .collect();
        let table = table(&["percentile", "latency"], &[Align::Right; 2], &rows);
        return format!("\n### Latency percentiles\n\n{table}");
    }
    let rows: Vec<Vec<String>> = percentiles
        .iter()
        .map(|&p| {
            let bound = format!("≥ {}", latency(censored, p));
            vec![units::percentile_label(p), latency(h, p), bound]
        })
        .collect();
    let head = ["percentile", "completed", "incl. in flight (lower bound)"];
    let table = table(&head, &[Align::Right; 3], &rows);
    let c = &s.per_connection;
    let mut text = format!(
        "Completed requests, and including the {} still in flight (censored at run end: each \
         counted at its age, a lower bound).",
        plural(unanswered, "request")
    );
    // Per connection and the oldest age only when the run recorded them: a request that waited
    // for a connection was never in flight on one.
    let mut facts = Vec::new();
    if c.connections() > 0 {
        facts.push(format!(
            "{} of {} got no response; completed per connection min / median / max: {} / {} / {}",
            c.starved,
            plural(c.connections(), "connection"),
            c.min(),
            c.median(),
            c.max()
        ));
    }
    if c.oldest_in_flight_us > 0 {
        facts.push(format!(
            "oldest request in flight: {}",
            units::duration_us(c.oldest_in_flight_us as f64)
        ));
    }
    if !facts.is_empty() {
        text += &format!(" {}.", facts.join("; "));
    }
    format!("\n### Latency percentiles\n\n{text}\n\n{table}")
}

fn status_table(r: &RunResult) -> String {
    let status = &r.stats.status.0;
    if status.is_empty() {
        return "\n### Status codes\n\nnone\n".to_string();
    }
    let total: u64 = status.values().sum();
    let rates = r.stats.summary().status_per_sec;
    let rate = |code: &u16| units::rate(rates.get(code).copied().unwrap_or(0.0));
    let rows: Vec<Vec<String>> = status
        .iter()
        .map(|(code, &n)| vec![code.to_string(), n.to_string(), rate(code), share(n, total)])
        .collect();
    let table = table(
        &["status", "responses", "req/s", "share"],
        &[Align::Left, Align::Right, Align::Right, Align::Right],
        &rows,
    );
    format!("\n### Status codes\n\n{table}{}", connection_reuse(r))
}

/// hey's request write / response wait / response read split: mean, fastest, slowest. Left
/// out for results saved before it was recorded.
fn phase_table(s: &Stats) -> String {
    let rows: Vec<Vec<String>> = request_phases(s)
        .into_iter()
        .map(|(name, h)| {
            let cells = [h.mean_ns(), h.min_ns() as f64, h.max_ns() as f64];
            let mut row = vec![name.to_string()];
            row.extend(cells.map(|ns| phase_duration(h, ns)));
            row
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let head = ["phase", "mean", "fastest", "slowest"];
    let align = [Align::Left, Align::Right, Align::Right, Align::Right];
    format!("\n### Request phases\n\n{}", table(&head, &align, &rows))
}

/// ab's keep-alive, document-length and per-user time figures, as one compact line.
fn connection_reuse(r: &RunResult) -> String {
    let s = &r.stats;
    if s.body.responses != s.requests {
        return String::new(); // saved before these fields existed
    }
    let mut line = format!(
        "\nKeep-alive requests: {} · document length: {}",
        s.keepalive_requests,
        document_length(&s.body)
    );
    if let (LoadShape::Closed { .. }, Some(us)) =
        (&r.config.load, s.time_per_request_us(r.config.connections))
    {
        line += &format!(
            " · time per request per connection: {}",
            units::duration_us(us)
        );
    }
    line + "\n"
}

fn error_table(r: &RunResult) -> String {
    let errors = &r.stats.errors.0;
    if errors.is_empty() {
        return "\n### Errors\n\nnone\n".to_string();
    }
    let attempts = r.stats.attempts();
    let rows: Vec<Vec<String>> = errors
        .iter()
        .map(|(&k, &n)| vec![error_name(r, k), n.to_string(), share(n, attempts)])
        .collect();
    let table = table(
        &["error", "count", "share of attempts"],
        &[Align::Left, Align::Right, Align::Right],
        &rows,
    );
    format!("\n### Errors\n\n{table}")
}

/// A WebSocket run: upgrades and pings in a sentence, the server's close frames by code.
fn websocket_section(r: &RunResult) -> String {
    let Some(ws) = websocket(r) else {
        return String::new();
    };
    let mut out = format!(
        "\n### WebSocket\n\n{} upgraded, {} answered, {} from the server.\n",
        plural(ws.upgrades, "connection"),
        plural(ws.pings, "ping"),
        plural(ws.closes(), "close frame")
    );
    if !ws.idle.is_empty() {
        out += &format!("\nIdle connections (`--ws-idle`): {}.\n", ws.idle.text());
    }
    if let Some(matched) = crate::view::run::ws_match_text(r) {
        out += &format!("\nWith `--ws-match`: {matched}.\n");
    }
    let rows: Vec<Vec<String>> = close_code_rows(ws)
        .into_iter()
        .map(|(code, meaning, n)| {
            vec![
                code.to_string(),
                meaning.to_string(),
                n.to_string(),
                share(n, ws.closes()),
            ]
        })
        .collect();
    if !rows.is_empty() {
        let head = ["close code", "meaning", "closes", "share"];
        let align = [Align::Left, Align::Left, Align::Right, Align::Right];
        out += &format!("\n{}", table(&head, &align, &rows));
    }
    out
}

/// A gRPC run: its calls by `grpc-status`, with their rate and share (what the text
/// report's `gRPC status` line says).
fn grpc_section(r: &RunResult) -> String {
    let Some(g) = grpc(r) else {
        return String::new();
    };
    let rows = grpc_status_rows(g);
    if rows.is_empty() {
        return "\n### gRPC status\n\nnone\n".to_string();
    }
    let total: u64 = rows.iter().map(|(_, _, n)| n).sum();
    let rate = |n: u64| units::rate(r.stats.per_sec(n));
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(code, name, n)| {
            vec![
                code,
                name.to_string(),
                n.to_string(),
                rate(n),
                share(n, total),
            ]
        })
        .collect();
    let head = ["code", "grpc-status", "calls", "calls/s", "share"];
    let align = [
        Align::Right,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
    ];
    let mut out = format!("\n### gRPC status\n\n{}", table(&head, &align, &rows));
    if let Some(messages) = grpc_messages_text(r) {
        out += &format!("\nResponse messages: {messages}.\n");
    }
    out
}

/// The class, with its reasons when counted: `malformed response (bad chunk size 3)`.
fn error_name(r: &RunResult, kind: loadbench_model::ErrorKind) -> String {
    match r.stats.error_reasons.describe(kind) {
        Some(why) => format!("{} ({why})", kind.describe()),
        None => kind.describe().to_string(),
    }
}

fn share(n: u64, total: u64) -> String {
    if total == 0 {
        MISSING.to_string()
    } else {
        units::percent(n as f64 / total as f64)
    }
}

/// `(label, value)` pairs for the configuration list; values are Markdown already.
fn configuration(r: &RunResult) -> Vec<(&'static str, String)> {
    let c = &r.config;
    let mut items = vec![
        (
            "Target",
            format!("{} at {}", code(&c.url), code(&c.address)),
        ),
        ("Load", load_text(r)),
        ("Length", length_text(r)),
        (
            "Timeouts",
            format!(
                "request {}, connect {}",
                units::duration_ms_short(c.timeout_ms),
                units::duration_ms_short(c.connect_timeout_ms)
            ),
        ),
    ];
    if !c.headers.is_empty() || c.body_bytes > 0 {
        let mut parts = vec![c.method.clone()];
        if !c.headers.is_empty() {
            let headers: Vec<String> = c.headers.iter().map(|h| code(h)).collect();
            parts.push(format!("headers {}", headers.join(" ")));
        }
        if c.body_bytes > 0 {
            parts.push(format!("body {}", units::bytes(c.body_bytes as f64)));
        }
        items.push(("Request", parts.join(", ")));
    }
    items.push((
        "Started",
        format!("{}, loadbench {}", r.started_at, r.loadbench_version),
    ));
    items.push(("Host", host_text(&r.host)));
    items
}

fn load_text(r: &RunResult) -> String {
    let c = &r.config;
    let threads = plural(u64::from(c.threads), "thread");
    let mut keepalive = if c.keepalive {
        "keep-alive"
    } else {
        "no keep-alive"
    }
    .to_string();
    if let Some(p) = c.pipelined() {
        keepalive += &format!(", {p}");
    }
    match &c.load {
        LoadShape::Closed { .. } => format!(
            "closed model, {}, {threads}, {keepalive}",
            plural(u64::from(c.connections), "connection")
        ),
        LoadShape::Open {
            schedule,
            max_connections,
            ..
        } => {
            let mut text = format!(
                "open model, {}, up to {max_connections} connections, {threads}, {keepalive}",
                crate::words::run_schedule_text(r, schedule)
            );
            if let Some(pacing) = pacing_text(r) {
                text += &format!(", {pacing}");
            }
            text
        }
        LoadShape::FindMax { slo, .. } => {
            format!("find-max search, {}, {threads}, {keepalive}", slo.text)
        }
    }
}

fn length_text(r: &RunResult) -> String {
    let c = &r.config;
    let planned = match (c.requests, c.duration_ms) {
        (Some(n), _) => format!("{n} requests"),
        (None, Some(ms)) => units::duration_ms_short(ms),
        (None, None) => MISSING.to_string(),
    };
    let measured = units::duration_us(r.stats.elapsed_us as f64);
    let mut text = format!("{planned} (measured {measured})");
    if c.warmup_ms > 0 {
        text += &format!(", warm-up {}", units::duration_ms_short(c.warmup_ms));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fixtures, render_to_string, Format};

    fn render(r: &RunResult) -> String {
        render_to_string(Format::Markdown, r, &RenderOptions::default())
    }

    #[test]
    fn snapshot_busy() {
        insta::assert_snapshot!(render(&fixtures::busy()));
    }

    #[test]
    fn goaway_is_a_line_under_the_summary_only_when_the_server_sent_one() {
        let mut r = fixtures::busy();
        assert!(!render(&r).contains("GOAWAY"));
        r.stats.h2.goaways = 3;
        r.stats.h2.goaway_retries = 5;
        let md = render(&r);
        let line = md.lines().find(|l| l.contains("GOAWAY")).unwrap();
        assert!(
            line.starts_with("HTTP/2: the server sent GOAWAY 3 times ("),
            "{line}"
        );
        assert!(
            line.ends_with("5 requests above its last stream id, never processed, sent again on a new connection."),
            "{line}"
        );
        assert!(
            md.find(line) < md.find("### Latency"),
            "under the summary: {md}"
        );
    }

    /// Issue 41: a WebSocket run's counts and its close codes, one row per code.
    #[test]
    fn snapshot_websocket() {
        insta::assert_snapshot!(render(&fixtures::websocket()));
    }

    #[test]
    fn snapshot_empty() {
        insta::assert_snapshot!(render(&fixtures::empty()));
    }

    fn unescaped_pipes(line: &str) -> usize {
        let bytes = line.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\'))
            .count()
    }

    #[test]
    fn every_table_row_has_as_many_cells_as_its_header() {
        let mut r = fixtures::busy();
        r.config.url = "http://h/a|b?x=`1`".into();
        r.config.headers = vec!["X-Pipe: a|b".into()];
        let md = render(&r);
        let mut columns = None;
        for line in md.lines() {
            if !line.starts_with('|') {
                columns = None;
                continue;
            }
            let n = unescaped_pipes(line);
            assert_eq!(*columns.get_or_insert(n), n, "{line}\n{md}");
        }
        assert!(
            md.contains("## loadbench run: `` GET http://h/a|b?x=`1` ``"),
            "{md}"
        );
        assert!(
            md.contains("- **Request:** GET, headers `X-Pipe: a|b`\n"),
            "{md}"
        );
    }

    /// The busy run as an open-model run at 3,500 req/s for 10 s that sent `sent`.
    fn open_run(sent: u64) -> RunResult {
        let mut r = fixtures::busy();
        r.config.load = LoadShape::Open {
            schedule: vec![loadbench_model::RateSegment {
                duration_ms: 10_000,
                from_rate: 3_500.0,
                to_rate: 3_500.0,
            }],
            max_connections: 100,
        };
        r.stats.scheduled = Some(35_000);
        r.stats.sent = sent;
        r
    }

    #[test]
    fn open_model_shows_target_and_sent_rates() {
        let r = open_run(34_900);
        let md = render(&r);
        assert!(
            md.contains("| requests | req/s | target/s | sent/s | p50 |"),
            "{md}"
        );
        assert!(md.contains("| 3500.00 | 3490.00 |"), "{md}");
        assert!(
            md.contains("open model, 3500 req/s for 10s, up to 100 connections"),
            "{md}"
        );
        assert!(md.contains("Open model: latency counts from"), "{md}");
        assert!(
            !md.contains("Short of the target rate"),
            "99.7% is not short: {md}"
        );
    }

    /// Issue 36: the generator's own delay is shown apart, with its own figures (not the
    /// send lag's), in the Markdown, text, HTML and CSV reports; absent when not recorded.
    #[test]
    fn the_generator_delay_is_shown_with_its_own_figures_in_every_format() {
        let mut r = open_run(34_900);
        for _ in 0..99 {
            r.stats.generator_delay.hist.record_ns(200_000);
            r.stats.send_lag.hist.record_ns(700_000);
        }
        r.stats.generator_delay.hist.record_ns(3_000_000);
        r.stats.send_lag.hist.record_ns(9_000_000);
        let md = render(&r);
        let line = md
            .lines()
            .find(|l| l.starts_with("Generator delay"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(line.contains("p50 200"), "{line}");
        assert!(line.contains("max 3.00ms"), "{line}");
        assert!(!line.contains("700") && !line.contains("9.00ms"), "{line}");
        let text = render_to_string(Format::Text, &r, &RenderOptions::default());
        let row = text
            .lines()
            .find(|l| l.contains("Generator delay (not in latency)"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            row.contains("p50 200") && row.contains("max 3.00ms"),
            "{row}"
        );
        assert!(text
            .lines()
            .any(|l| l.trim_start().starts_with("generator delay")));
        let html = render_to_string(Format::Html, &r, &RenderOptions::default());
        assert!(
            html.contains("Generator delay (not in latency)"),
            "no HTML row"
        );
        let csv = render_to_string(Format::Csv, &r, &RenderOptions::default());
        let mut rows = csv.lines();
        let (head, row) = (rows.next().unwrap(), rows.next().unwrap());
        let at = head
            .split(',')
            .position(|c| c == "generator_delay_p50_us")
            .expect("a generator delay column");
        let cell: f64 = row.split(',').nth(at).unwrap().parse().unwrap();
        assert!((199.0..=201.0).contains(&cell), "{cell}");
        // A closed run has none: no line, empty cells.
        let closed = fixtures::busy();
        assert!(!render(&closed).contains("Generator delay"));
    }

    #[test]
    fn an_open_run_short_of_its_rate_says_why() {
        let mut r = open_run(17_500);
        r.stats.generator = loadbench_model::GeneratorTime {
            worker_us: 20_000_000,
            cpu_us: 2_000_000,
            pool_full_us: 18_000_000,
        };
        let md = render(&r);
        assert!(
            md.contains("> **Short of the target rate:** reached 50.00% of the target rate because the connection pool was full 90.00% of the time: all 100 allowed connections"),
            "{md}"
        );
        assert!(md.contains("generator CPU 10.00%"), "{md}");
    }

    /// The busy run with `unanswered` requests censored at `age_us`, `starved` of `conns`
    /// connections without a response, the oldest in flight `oldest_us` (0: none recorded).
    fn censored(unanswered: u64, age_us: u64, conns: u64, oldest_us: u64) -> RunResult {
        let mut r = fixtures::busy();
        let s = &mut r.stats;
        s.latency_censored = s.latency.clone();
        s.latency_censored
            .hist
            .record_ns_n(age_us * 1_000, unanswered);
        for i in 0..conns {
            let in_flight = (i == 0 && oldest_us > 0).then_some(oldest_us);
            s.per_connection.add(u64::from(i > 0), in_flight);
        }
        r
    }

    /// Issue 35 point 8: the count is said once ("the 50 requests", never "the 50 50
    /// requests"), and the oldest age in flight is printed only when it was recorded.
    #[test]
    fn censored_requests_are_counted_once_and_a_zero_oldest_age_is_not_printed() {
        let md = render(&censored(50, 725_000, 0, 0));
        assert!(
            md.contains("including the 50 requests still in flight"),
            "{md}"
        );
        assert!(!md.contains("50 50"), "{md}");
        assert!(!md.contains("oldest request in flight"), "{md}");
        assert!(!md.contains("0 of 0 connections"), "{md}");
        assert!(md.contains("≥ 725"), "{md}");

        let md = render(&censored(1, 4_000_000, 4, 4_000_000));
        assert!(
            md.contains("including the 1 request still in flight"),
            "{md}"
        );
        assert!(
            md.contains("1 of 4 connections got no response; completed per connection"),
            "{md}"
        );
        assert!(md.contains("oldest request in flight: 4.00s."), "{md}");
    }

    #[test]
    fn interrupted_runs_say_so_first() {
        let mut r = fixtures::busy();
        r.interrupted = true;
        let md = render(&r);
        let second_block = md.split("\n\n").nth(1).unwrap();
        assert!(
            second_block.starts_with("> **Interrupted** after 10.00s"),
            "{md}"
        );
    }
}
