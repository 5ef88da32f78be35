//! The find-max search for the terminal: the search's header, a table of every step (rate
//! offered, sent and completed, the latency percentiles the SLO names, errors, verdict), a
//! mix's per-request table at the step that matters, and the closing line with the maximum
//! sustainable rate and why the search stopped.

use crate::markup::text::endpoint_table;
use crate::view::endpoints;
use crate::view::find_max::{conclusion, phase_name, slo_columns, verdict_text};
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{FindMaxResult, FindMaxStep, SloStat};

/// The report people read: header, the step table, a mix's per-request table, the conclusion.
pub fn render(result: &FindMaxResult) -> String {
    let mut lines = header(result);
    lines.push(String::new());
    lines.extend(table(result));
    lines.push(String::new());
    if let Some(step) = endpoints::find_max_step(result) {
        lines.push(format!("{}:", endpoints::find_max_title(step)));
        lines.extend(endpoint_table(&step.run));
        lines.push(String::new());
    }
    lines.push(conclusion(result));
    let lost = result.remote_write.as_ref().and_then(|p| p.lost_line());
    lines.extend(lost);
    lines.join("\n") + "\n"
}

fn header(r: &FindMaxResult) -> Vec<String> {
    let s = &r.search;
    let mut lines = vec![
        format!(
            "find-max {}: SLO {} (latency from the intended send time), errors at most {}",
            r.url,
            r.slo.text,
            units::percent(r.max_error_share)
        ),
        format!(
            "  steps of {}{}, {} generator thread{}; start {} req/s, max {} req/s, precision {}, at most {} steps",
            units::duration_ms_short(s.step_duration_ms),
            units::after_warmup(s.warmup_ms),
            s.threads,
            if s.threads == 1 { "" } else { "s" },
            units::rate_short(s.start_rate),
            units::rate_short(s.max_rate),
            units::percent(s.precision),
            s.max_steps
        ),
    ];
    if r.interrupted {
        lines.push("  INTERRUPTED: the finished steps are kept".to_string());
    }
    if let Some(note) = r.transport_note() {
        lines.push(format!("  {note}"));
    }
    if let Some(delay) = crate::words::find_max_generator_delay(r) {
        lines.push(format!(
            "  generator delay, all steps: {delay} (its own wait to send; not in the latencies)"
        ));
    }
    lines
}

fn table(r: &FindMaxResult) -> Vec<String> {
    let cols = slo_columns(r);
    let mut head = format!(
        "  {:>3}  {:<11} {:>10} {:>11} {:>11}",
        "#", "phase", "target/s", "sent/s", "completed/s"
    );
    for c in &cols {
        head += &format!(" {:>10}", c.label());
    }
    head += &format!(" {:>8}  verdict", "errors");
    let mut lines = vec![head];
    for step in &r.steps {
        lines.push(row(step, &cols));
    }
    if r.steps.is_empty() {
        lines.push("  (no step finished)".to_string());
    }
    lines
}

fn row(step: &FindMaxStep, cols: &[SloStat]) -> String {
    let mut line = format!(
        "  {:>3}  {:<11} {:>10} {:>11} {:>11}",
        step.step,
        phase_name(step),
        units::rate_short(step.target_rate),
        units::rate(step.achieved_rate),
        units::rate(step.completed_rate)
    );
    let hist = &step.run.stats.latency.hist;
    for c in cols {
        let value = c
            .measure_us(hist)
            .map_or(MISSING.to_string(), units::duration_us);
        line += &format!(" {value:>10}");
    }
    line += &format!(
        " {:>8}  {}",
        units::percent(step.error_share),
        verdict_text(step)
    );
    line
}
