//! A find-max search as Markdown: the SLO, the conclusion, a row per step, a mix's per-request
//! table at the step that matters, and the search's settings and host.

use crate::markup::markdown::{code, endpoint_table, escape_text, host_text, list, table, Align};
use crate::options::RenderOptions;
use crate::view::endpoints;
use crate::view::find_max::{conclusion_line, recovery_text, slo_columns};
use crate::words::counted as plural;
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{FailReason, FindMaxResult, FindMaxStep, SloStat, Verdict};

/// A find-max search as Markdown: the conclusion, a row per step, the search and the host.
pub fn render(r: &FindMaxResult, _opts: &RenderOptions) -> String {
    let mut out = format!("## loadbench find-max: {}\n\n", code(&r.url));
    out += &format!(
        "SLO {} (latency from the intended send time), errors at most {}.\n\n",
        code(&r.slo.text),
        units::percent(r.max_error_share)
    );
    if r.interrupted {
        out += "> **Interrupted:** the finished steps are kept.\n\n";
    }
    if let Some(delay) = crate::words::find_max_generator_delay(r) {
        out += &format!(
            "Generator delay, all steps (its own wait to send; not in the latencies): {delay}.\n\n"
        );
    }
    if let Some(note) = r.transport_note() {
        let lead = if r.insecure() {
            "> **Warning:** "
        } else {
            "> "
        };
        out += &format!("{lead}{}.\n\n", escape_text(&note));
    }
    let conclusion = conclusion_line(r);
    out += &format!("**{}**\n\n", escape_text(&conclusion));
    if let Some(lost) = r.remote_write.as_ref().and_then(|p| p.lost_line()) {
        out += &format!("> {}.\n\n", escape_text(&lost));
    }
    out += &steps_table(r);
    if let Some(step) = endpoints::find_max_step(r) {
        let title = endpoints::find_max_title(step);
        out += &endpoint_table(&step.run).replace("Per request (mix)", &title);
    }
    out += "\n### Configuration\n\n";
    out += &list(&search_items(r));
    out
}

fn steps_table(r: &FindMaxResult) -> String {
    if r.steps.is_empty() {
        return "No step finished.\n".to_string();
    }
    let cols = slo_columns(r);
    let mut head: Vec<String> = ["#", "phase", "target/s", "sent/s", "completed/s"]
        .map(String::from)
        .to_vec();
    head.extend(cols.iter().map(|c| c.label()));
    head.extend(["errors", "verdict"].map(String::from));
    let mut align = vec![Align::Right; head.len()];
    align[1] = Align::Left;
    align[head.len() - 1] = Align::Left;
    let rows: Vec<Vec<String>> = r.steps.iter().map(|s| step_row(s, &cols)).collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    table(&head, &align, &rows)
}

fn step_row(s: &FindMaxStep, cols: &[SloStat]) -> Vec<String> {
    let phase = match s.phase {
        loadbench_model::SearchPhase::Exponential => "exponential",
        loadbench_model::SearchPhase::Bisect => "bisect",
    };
    let mut row = vec![
        s.step.to_string(),
        phase.to_string(),
        units::rate_short(s.target_rate),
        units::rate(s.achieved_rate),
        units::rate(s.completed_rate),
    ];
    let hist = &s.run.stats.latency.hist;
    row.extend(cols.iter().map(|c| {
        c.measure_us(hist)
            .map_or(MISSING.to_string(), units::duration_us)
    }));
    row.push(units::percent(s.error_share));
    row.push(match s.verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Interrupted => "interrupted".to_string(),
        Verdict::Fail => {
            let reason = match s.reason {
                Some(FailReason::Slo) => " (slo)",
                Some(FailReason::Errors) => " (errors)",
                Some(FailReason::Generator) => " (generator)",
                Some(FailReason::Throughput) => " (throughput)",
                None => "",
            };
            let recovery = recovery_text(s).map_or(String::new(), |r| format!("; {r}"));
            format!(
                "**fail**{reason}: {}{}",
                escape_text(&s.detail),
                escape_text(&recovery)
            )
        }
    });
    row
}

fn search_items(r: &FindMaxResult) -> Vec<(&'static str, String)> {
    let s = &r.search;
    vec![
        (
            "Search",
            format!(
                "start {} req/s, max {} req/s, precision {}, at most {} steps",
                units::rate_short(s.start_rate),
                units::rate_short(s.max_rate),
                units::percent(s.precision),
                s.max_steps
            ),
        ),
        (
            "Steps",
            format!(
                "{} each{}, {}",
                units::duration_ms_short(s.step_duration_ms),
                units::after_warmup(s.warmup_ms),
                plural(u64::from(s.threads), "thread")
            ),
        ),
        (
            "Started",
            format!("{}, loadbench {}", r.started_at, r.loadbench_version),
        ),
        ("Host", host_text(&r.host)),
    ]
}
