//! The page of a find-max search: the conclusion (the maximum sustainable rate, worded as in
//! the text report), every step with its verdict, the rate and latency charts against the
//! offered rate with the SLO limits drawn in, then the search's settings and the host.

use crate::charts::{self, Chart};
use crate::markup::html::{
    self as page, alert, endpoints_table, esc, footer, key_values, section, Alert, Level, Row,
};
use crate::options::RenderOptions;
use crate::view::endpoints;
use crate::view::find_max::{conclusion_line, recovery_text, slo_columns};
use crate::words::host_facts;
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{
    FailReason, FindMaxResult, FindMaxStep, SearchPhase, SloStat, StopReason, Verdict,
};
use std::io;
use std::path::{Path, PathBuf};

/// The page of a find-max search, as a string. No option changes it yet; `_opts` keeps the
/// signature of the run page.
pub fn render_find_max(result: &FindMaxResult, _opts: &RenderOptions) -> String {
    find_max_page(result, &charts::find_max_charts(result))
}

/// Writes a find-max search's charts as `NAME.svg` files into `dir` (beside the page) and
/// returns their paths; charts with nothing to show are not written.
pub fn write_find_max_chart_files(result: &FindMaxResult, dir: &Path) -> io::Result<Vec<PathBuf>> {
    charts::write_files(&charts::find_max_charts(result), dir)
}

/// The page of a search around its charts, drawn once for the page and the files beside it.
pub(crate) fn find_max_page(r: &FindMaxResult, charts: &[Chart]) -> String {
    let mut body = header(r);
    body += &page::alerts(&alerts(r));
    body += &conclusion(r);
    body += &section("steps", "Steps", &steps_table(r));
    if let Some(step) = endpoints::find_max_step(r) {
        let title = endpoints::find_max_title(step);
        body += &section("endpoints", &title, &endpoints_table(&step.run));
    }
    body += &section("charts", "Charts", &page::figures(charts));
    body += &section("scenario", "Search", &key_values(&settings(r)));
    body += &section("host", "Host", &key_values(&host(r)));
    body += &footer(&r.loadbench_version);
    page::document(&format!("loadbench find-max: {}", r.url), &body)
}

fn header(r: &FindMaxResult) -> String {
    format!(
        "<header>\n<h1>loadbench find-max</h1>\n<p class=\"target mono\">{}</p>\n<p class=\"muted\">SLO {} (latency from the intended send time), errors at most {} · started {}</p>\n</header>\n",
        esc(&r.url),
        esc(&r.slo.text),
        esc(&units::percent(r.max_error_share)),
        esc(&r.started_at)
    )
}

fn alerts(r: &FindMaxResult) -> Vec<Alert> {
    let mut list = Vec::new();
    if r.interrupted {
        list.push(alert(
            Level::Warn,
            "Interrupted (Ctrl-C): the finished steps are kept, the search is incomplete.",
        ));
    }
    if let Some(note) = r.transport_note() {
        let level = if r.insecure() {
            Level::Warn
        } else {
            Level::Note
        };
        list.push(alert(level, format!("{note}.")));
    }
    if let Some(delay) = crate::words::find_max_generator_delay(r) {
        list.push(alert(
            Level::Note,
            format!(
                "Generator delay, all steps (its own wait to send; not in the latencies): {delay}."
            ),
        ));
    }
    match r.stop_reason {
        None => list.push(alert(
            Level::Warn,
            "The search was still going on when this file was saved: there is no conclusion yet.",
        )),
        Some(StopReason::NoRateHeld) => list.push(alert(
            Level::Error,
            "No rate held: even the first step failed.",
        )),
        Some(StopReason::Generator) => list.push(alert(
            Level::Warn,
            "The generator could not keep up: higher rates would have measured loadbench, not the target.",
        )),
        Some(StopReason::TargetNotRecovered) => list.push(alert(
            Level::Error,
            "The target did not recover from a failed step within the recovery timeout: no maximum is reported, since later steps would have measured its backlog.",
        )),
        Some(_) => {}
    }
    let late = r.steps.iter().filter(|s| s.run.stats.sent_late > 0).count();
    if late > 0 {
        list.push(alert(
            Level::Note,
            format!("{late} steps sent some requests more than 1 ms late; their latency counts from the intended send time all the same."),
        ));
    }
    list
}

/// The text report's closing sentence, in a box.
fn conclusion(r: &FindMaxResult) -> String {
    let last = conclusion_line(r);
    let class = if r.max_rate.is_some() {
        "conclusion"
    } else {
        "conclusion none"
    };
    format!("<p class=\"{class}\">{}</p>\n", esc(&last))
}

fn steps_table(r: &FindMaxResult) -> String {
    if r.steps.is_empty() {
        return "<p class=\"muted\">No step finished.</p>\n".to_string();
    }
    let stats = slo_columns(r);
    let mut head: Vec<String> = ["#", "Phase", "Target/s", "Sent/s", "Completed/s"]
        .map(String::from)
        .to_vec();
    head.extend(stats.iter().map(|s| s.label()));
    head.extend(["Errors", "Generator CPU", "Verdict"].map(String::from));
    let rows: Vec<Row> = r.steps.iter().map(|s| step_row(s, &stats)).collect();
    page::table("steps", &head, &rows)
}

fn step_row(step: &FindMaxStep, stats: &[SloStat]) -> Row {
    let mut cells = vec![
        step.step.to_string(),
        match step.phase {
            SearchPhase::Exponential => "exponential",
            SearchPhase::Bisect => "bisect",
        }
        .to_string(),
        units::rate_short(step.target_rate),
        units::rate(step.achieved_rate),
        units::rate(step.completed_rate),
    ];
    let hist = &step.run.stats.latency.hist;
    cells.extend(stats.iter().map(|s| {
        s.measure_us(hist)
            .map_or(MISSING.to_string(), units::duration_us)
    }));
    cells.push(units::percent(step.error_share));
    cells.push(
        step.generator_cpu_share
            .map_or(MISSING.to_string(), units::percent),
    );
    cells.push(verdict(step));
    let class = match step.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Interrupted => "interrupted",
    };
    Row { class, cells }
}

fn verdict(step: &FindMaxStep) -> String {
    match step.verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Interrupted => "interrupted".to_string(),
        Verdict::Fail => {
            let reason = match step.reason {
                Some(FailReason::Slo) => "slo",
                Some(FailReason::Errors) => "errors",
                Some(FailReason::Generator) => "generator",
                Some(FailReason::Throughput) => "throughput",
                None => "fail",
            };
            let detail = [Some(step.detail.clone()), recovery_text(step)]
                .into_iter()
                .flatten()
                .filter(|d| !d.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            if detail.is_empty() {
                format!("fail: {reason}")
            } else {
                format!("fail: {reason} ({detail})")
            }
        }
    }
}

/// The SLO, the search's parameters and the request every step sent.
fn settings(r: &FindMaxResult) -> Vec<(&'static str, String)> {
    let s = &r.search;
    let mut pairs: Vec<(&'static str, String)> = vec![("URL", r.url.clone())];
    pairs.extend(r.slo.conditions.iter().map(|c| ("SLO", c.text.clone())));
    pairs.extend([
        ("Errors at most", units::percent(r.max_error_share)),
        (
            "Start rate",
            format!("{} req/s", units::rate_short(s.start_rate)),
        ),
        (
            "Max rate",
            format!("{} req/s", units::rate_short(s.max_rate)),
        ),
        ("Precision", units::percent(s.precision)),
        ("Max steps", s.max_steps.to_string()),
        (
            "Step duration",
            units::duration_ms_short(s.step_duration_ms),
        ),
        ("Warm-up per step", units::duration_ms_short(s.warmup_ms)),
        ("Threads", s.threads.to_string()),
    ]);
    if let Some(first) = r.steps.first() {
        let c = &first.run.config;
        pairs.push(("Method", c.method.clone()));
        pairs.extend(c.headers.iter().map(|h| ("Header", h.clone())));
        pairs.push(("Body", units::bytes(c.body_bytes as f64)));
        pairs.push(("Max connections", c.connections.to_string()));
        pairs.push(("Keep-alive", if c.keepalive { "yes" } else { "no" }.into()));
        pairs.push(("Timeout", units::duration_ms_short(c.timeout_ms)));
    }
    pairs
}

fn host(r: &FindMaxResult) -> Vec<(&'static str, String)> {
    let mut pairs = host_facts(&r.host);
    pairs.push(("Started", r.started_at.clone()));
    pairs.push(("Ended", r.ended_at.clone()));
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::render::html::run::tests::{figure, polylines};

    /// The shared find-max fixture, with a URL that must come out escaped.
    fn result() -> FindMaxResult {
        let mut r = fixtures::find_max();
        r.url = "http://127.0.0.1:8080/<script>x</script>".into();
        r
    }

    fn page(r: &FindMaxResult) -> String {
        render_find_max(r, &RenderOptions::default())
    }

    #[test]
    fn page_has_the_conclusion_the_steps_and_both_charts() {
        let html = page(&result());
        assert!(html.contains("<p class=\"conclusion\">maximum sustainable rate: 150 req/s"));
        assert_eq!(html.matches("<tr class=\"pass\">").count(), 2);
        assert_eq!(html.matches("<tr class=\"fail\">").count(), 1);
        assert!(html.contains("<td>fail: slo (p99.9 5.00ms &gt;= 50ms)</td>"));
        assert!(html.contains("<th scope=\"col\">p99.9</th>"));
        let rate = figure(&html, "find-max-rate");
        assert!(polylines(rate).contains(&3), "{:?}", polylines(rate));
        let latency = figure(&html, "find-max-latency");
        assert!(
            latency.contains("SLO p99.9&lt;50ms"),
            "the SLO line is labelled"
        );
        assert!(latency.contains("max sustainable: 150 req/s"));
        assert!(html.find("id=\"steps\"") < html.find("id=\"charts\""));
    }

    #[test]
    fn url_is_escaped_and_unfinished_searches_say_so() {
        let mut r = result();
        r.stop_reason = None;
        r.interrupted = true;
        let html = page(&r);
        assert!(!html.contains("<script"));
        assert!(html.contains("/&lt;script&gt;x&lt;/script&gt;"));
        assert!(html.contains("still going on when this file was saved"));
        assert!(html.contains("Interrupted (Ctrl-C)"));
    }

    #[test]
    fn no_step_means_notes_instead_of_charts() {
        let mut r = result();
        r.steps.clear();
        r.max_rate = None;
        r.stop_reason = Some(StopReason::Interrupted);
        let html = page(&r);
        assert!(html.contains("No step finished."));
        assert_eq!(html.matches("class=\"chart empty\"").count(), 2);
        assert!(html.contains("<p class=\"conclusion none\">"));
    }
}
