//! The view of a `loadbench find-max` result, for every format: the latency columns the SLO
//! names, each step's phase and verdict in words, the wait after a failed step, the one-line
//! summaries of a step printed live while the search goes on, and the closing sentence with
//! the maximum sustainable rate and why the search stopped. Pure functions of
//! [`FindMaxResult`].

use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{FailReason, FindMaxResult, FindMaxStep, SloStat, StopReason, Verdict};

/// One line about a finished step, for live output while the search goes on; its rates whole
/// and grouped (`17,240 sent/s`), as a person reads them while the search goes on.
pub fn find_max_step_line(step: &FindMaxStep) -> String {
    let p99 = step.p99_us.map_or(MISSING.to_string(), units::duration_us);
    format!(
        "step {} ({}): {} req/s offered, {} sent/s, {} completed/s, p99 {p99}, errors {}: {}",
        step.step,
        phase_name(step),
        units::rate_grouped(step.target_rate),
        units::rate_grouped(step.achieved_rate),
        units::rate_grouped(step.completed_rate),
        units::percent(step.error_share),
        verdict_text(step)
    )
}

/// One line about the wait after a failed step, once it is over.
pub fn find_max_recovery_line(step: &FindMaxStep) -> Option<String> {
    recovery_text(step).map(|r| format!("after step {}: target {r}", step.step))
}

/// The latency columns of every find-max format: p50 and p99, then every other statistic the
/// SLO names, once each.
pub(crate) fn slo_columns(r: &FindMaxResult) -> Vec<SloStat> {
    let mut cols = vec![
        SloStat::Percentile { percentile: 50.0 },
        SloStat::Percentile { percentile: 99.0 },
    ];
    for c in &r.slo.conditions {
        if !cols.contains(&c.stat) {
            cols.push(c.stat);
        }
    }
    cols
}

/// `exponential` or `bisect`.
pub(crate) fn phase_name(step: &FindMaxStep) -> &'static str {
    match step.phase {
        loadbench_model::SearchPhase::Exponential => "exponential",
        loadbench_model::SearchPhase::Bisect => "bisect",
    }
}

/// A step's verdict: `pass`, `interrupted`, or `fail: slo (p99 2.31ms > 2.00ms; …)`.
pub(crate) fn verdict_text(step: &FindMaxStep) -> String {
    match (step.verdict, step.reason) {
        (Verdict::Pass, _) => "pass".to_string(),
        (Verdict::Interrupted, _) => "interrupted".to_string(),
        (Verdict::Fail, reason) => {
            let name = reason.map_or("fail", reason_name);
            let recovery = recovery_text(step).map_or(String::new(), |r| format!("; {r}"));
            format!("fail: {name} ({}{recovery})", step.detail)
        }
    }
}

/// How long the target took to work off a failed step's backlog: `recovered in 2.41s (9
/// probes)`, or `not recovered after 60.0s (last probe 2.31s > 20.0ms)`.
pub(crate) fn recovery_text(step: &FindMaxStep) -> Option<String> {
    let r = step.recovery.as_ref()?;
    let waited = units::duration_us(r.waited_ms as f64 * 1e3);
    let probes = format!("{} probe{}", r.probes, if r.probes == 1 { "" } else { "s" });
    Some(if r.recovered {
        format!("recovered in {waited} ({probes})")
    } else {
        let last = r
            .last_probe_us
            .map_or("no answer".to_string(), units::duration_us);
        format!(
            "not recovered after {waited} (last probe {last} > {})",
            units::duration_us(r.threshold_us)
        )
    })
}

fn reason_name(reason: FailReason) -> &'static str {
    reason.name()
}

/// `maximum sustainable rate: N req/s (within P%), stopped because …`, or why no rate held.
pub(crate) fn conclusion(r: &FindMaxResult) -> String {
    let Some(reason) = r.stop_reason else {
        return "search in progress: no conclusion yet".to_string();
    };
    match r.max_rate {
        Some(max) => format!(
            "{}, stopped because {}",
            found(r, max, reason),
            why(r, reason)
        ),
        None => no_rate(r, reason),
    }
}

/// The closing line of the text report, which the Markdown and HTML reports quote: the last
/// line of [`conclusion`] (a step's detail could hold a line break).
pub(crate) fn conclusion_line(r: &FindMaxResult) -> String {
    let text = conclusion(r) + "\n";
    text.lines().last().unwrap_or_default().to_string()
}

fn found(r: &FindMaxResult, max: f64, reason: StopReason) -> String {
    let label = if reason == StopReason::Interrupted {
        "maximum sustainable rate so far"
    } else {
        "maximum sustainable rate"
    };
    match r.precision_reached {
        Some(p) => format!(
            "{label}: {} req/s (within {})",
            units::rate_short(max),
            units::percent(p)
        ),
        None => format!("{label}: at least {} req/s", units::rate_short(max)),
    }
}

fn why(r: &FindMaxResult, reason: StopReason) -> String {
    let s = &r.search;
    match reason {
        StopReason::Precision => format!(
            "the highest pass and the lowest fail are within --precision {}",
            units::percent(s.precision)
        ),
        StopReason::MaxRatePassed => format!(
            "--max-rate {} req/s passed; raise --max-rate to search higher",
            units::rate_short(s.max_rate)
        ),
        StopReason::MaxSteps => format!(
            "--max-steps {} was reached; raise it to narrow the result",
            s.max_steps
        ),
        StopReason::Generator => generator_limit(r),
        StopReason::NoRateHeld => "no rate held".to_string(),
        StopReason::Interrupted => "it was interrupted (Ctrl-C)".to_string(),
        StopReason::TargetNotRecovered => not_recovered(r),
    }
}

/// Why a search that could not wait out a backlog reports no maximum.
fn not_recovered(r: &FindMaxResult) -> String {
    let last = r.steps.iter().rev().find(|s| s.recovery.is_some());
    let held = r
        .steps
        .iter()
        .filter(|s| s.verdict == Verdict::Pass)
        .map(|s| s.target_rate)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let mut text = match last {
        Some(step) => format!(
            "the target did not recover after step {} ({}; --recovery-timeout {})",
            step.step,
            recovery_text(step).unwrap_or_default(),
            units::duration_ms_short(r.search.recovery_timeout_ms)
        ),
        None => "the target did not recover after a failed step".to_string(),
    };
    if let Some(held) = held {
        text += &format!(
            "; {} req/s held before, but later steps would have measured the backlog",
            units::rate_short(held)
        );
    }
    text
}

fn no_rate(r: &FindMaxResult, reason: StopReason) -> String {
    let first = r.steps.first();
    match (reason, first) {
        (StopReason::Interrupted, _) | (_, None) => {
            "no maximum found: interrupted (Ctrl-C) before any step passed".to_string()
        }
        (StopReason::Generator, _) => format!(
            "no rate held: {}; or lower --start-rate",
            generator_limit(r)
        ),
        (StopReason::TargetNotRecovered, _) => format!("no maximum found: {}", not_recovered(r)),
        (_, Some(step)) => {
            // A busy host fails a step by itself: the advice is a quiet host, not a lower rate.
            let advice = match step.run.why.busy_host() {
                Some(f) => format!("{}: rerun on a quiet host", f.text),
                None => "try a lower --start-rate".to_string(),
            };
            format!(
                "no rate held: the first step, {} req/s, failed ({}); {advice}",
                units::rate_short(step.target_rate),
                verdict_text(step)
            )
        }
    }
}

fn generator_limit(r: &FindMaxResult) -> String {
    let step = r
        .steps
        .iter()
        .rev()
        .find(|s| s.reason == Some(FailReason::Generator));
    let Some(step) = step else {
        return "the generator could not keep up".to_string();
    };
    let cpu = step
        .generator_cpu_share
        .map_or(MISSING.to_string(), units::percent);
    let stats = &step.run.stats;
    let pool_full = stats.generator.pool_full_share();
    let fix = if pool_full > 0.0 {
        format!(
            "every allowed connection was busy {} of the step: raise --max-connections",
            units::percent(pool_full)
        )
    } else if step.generator_cpu_share.is_some_and(|c| c > 0.9) {
        "give it more threads (-t) or cores, or split the load over several generator hosts"
            .to_string()
    } else {
        "its CPU was not saturated, so the host was likely busy or stalled: run on a quieter host or lower --start-rate".to_string()
    };
    let sent = match stats.scheduled {
        Some(scheduled) => format!("{} of {scheduled} scheduled", stats.sent),
        None => format!("{}/s", units::rate(step.achieved_rate)),
    };
    format!(
        "the generator could not keep up at {} req/s (it sent {sent}, using {cpu} of its {} thread{}): higher rates would measure loadbench, not the target; {fix}",
        units::rate_short(step.target_rate),
        r.search.threads,
        if r.search.threads == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::{find_max_json, find_max_text};
    use loadbench_model::FindMaxResult;

    /// Issue 35 point 8: the live step line's rates are whole and grouped: `17,240 sent/s`,
    /// never `17239.50 sent/s`.
    #[test]
    fn the_step_line_groups_whole_rates() {
        let mut step = fixtures::find_max().steps[0].clone();
        step.target_rate = 17_500.0;
        step.achieved_rate = 17_239.5;
        step.completed_rate = 17_100.25;
        let line = find_max_step_line(&step);
        assert!(
            line.contains(": 17,500 req/s offered, 17,240 sent/s, 17,100 completed/s,"),
            "{line}"
        );
        assert!(!line.contains("17239"), "{line}");
    }

    fn result() -> FindMaxResult {
        fixtures::find_max()
    }

    #[test]
    fn text_has_a_row_per_step_the_slo_column_and_the_conclusion() {
        let text = find_max_text(&result());
        let rows = text
            .lines()
            .filter(|l| l.contains(" exponential ") || l.contains(" bisect "))
            .count();
        assert_eq!(rows, 3, "{text}");
        assert!(text.contains("p99.9"), "{text}");
        assert!(text.contains("fail: slo (p99.9 5.00ms >= 50ms)"), "{text}");
        assert_eq!(text.lines().filter(|l| l.ends_with("pass")).count(), 2);
        assert!(
            text.contains("maximum sustainable rate: 150 req/s (within 33.33%), stopped because --max-steps 20 was reached"),
            "{text}"
        );
    }

    /// A search whose only step (200 req/s) failed: no rate held.
    fn first_step_failed() -> FindMaxResult {
        let mut r = result();
        r.steps.truncate(2);
        r.steps.remove(0);
        r.max_rate = None;
        r.precision_reached = None;
        r.stop_reason = Some(StopReason::NoRateHeld);
        r
    }

    #[test]
    fn text_says_when_no_rate_held() {
        let r = first_step_failed();
        let text = find_max_text(&r);
        assert!(
            text.contains("no rate held: the first step, 200 req/s, failed"),
            "{text}"
        );
        assert!(text.contains("lower --start-rate"), "{text}");
    }

    /// Each way a search ends without a rate has its one line in the JSON; a rate that held,
    /// or a search still going on, has none.
    #[test]
    fn no_rate_names_the_first_failure_a_target_not_recovered_or_an_interruption() {
        let mut r = result();
        assert_eq!(r.no_rate_reason(), None, "150 req/s held");
        r.steps.truncate(2);
        r.steps.remove(0);
        (r.max_rate, r.precision_reached, r.stop_reason) = (None, None, None);
        assert_eq!(r.no_rate_reason(), None, "still searching");
        r.stop_reason = Some(StopReason::NoRateHeld);
        assert_eq!(
            r.no_rate_reason().unwrap(),
            "no rate held: the first step, 200 req/s, failed (slo: p99.9 5.00ms >= 50ms)"
        );
        r.stop_reason = Some(StopReason::TargetNotRecovered);
        assert!(r.no_rate_reason().unwrap().starts_with(
            "no maximum: the target did not recover within the recovery timeout after step 2"
        ));
        r.stop_reason = Some(StopReason::Interrupted);
        assert_eq!(
            r.no_rate_reason().unwrap(),
            "interrupted (Ctrl-C) before any step passed"
        );
        let back = FindMaxResult::from_json(&find_max_json(&r)).unwrap();
        assert_eq!(
            back.no_rate.as_deref(),
            Some("interrupted (Ctrl-C) before any step passed"),
            "recomputed on load"
        );
    }

    #[test]
    fn a_first_step_failed_on_a_busy_host_asks_for_a_quiet_host_not_a_lower_rate() {
        use loadbench_model::why::{Finding, FindingKind, Why};
        let mut r = first_step_failed();
        let busy = Finding {
            kind: FindingKind::BusyHost,
            strength: 0.95,
            text: "other processes used 1.40 of the host's 2 cores: every figure is unreliable"
                .to_string(),
            fix: None,
            figures: Default::default(),
        };
        r.steps[0].run.why = Why::new(vec![busy], Vec::new());
        let text = find_max_text(&r);
        assert!(
            text.contains("failed; other processes used 1.40 of the host's 2 cores: every figure is unreliable: rerun on a quiet host")
                || text.contains("); other processes used 1.40 of the host's 2 cores: every figure is unreliable: rerun on a quiet host"),
            "{text}"
        );
        assert!(!text.contains("lower --start-rate"), "{text}");
    }

    #[test]
    fn text_names_the_generator_limit() {
        let mut r = result();
        r.steps[1].reason = Some(FailReason::Generator);
        r.steps[1].generator_cpu_share = Some(0.97);
        r.precision_reached = None;
        r.max_rate = Some(100.0);
        r.steps.truncate(2);
        r.stop_reason = Some(StopReason::Generator);
        let text = find_max_text(&r);
        assert!(text.contains("at least 100 req/s"), "{text}");
        assert!(text.contains("could not keep up at 200 req/s"), "{text}");
        assert!(text.contains("97.00%"), "{text}");
        assert!(text.contains("more threads (-t)"), "{text}");
    }

    /// Issue 35 point 9: a generator held back with an idle CPU is not told to add threads;
    /// held by the connection limit, it is told which flag; and the JSON says why no rate held.
    #[test]
    fn a_short_send_names_the_connection_limit_or_the_busy_host_not_more_threads() {
        let mut r = result();
        r.steps.truncate(1);
        let step = &mut r.steps[0];
        step.verdict = Verdict::Fail;
        step.reason = Some(FailReason::Generator);
        step.generator_cpu_share = Some(0.04);
        step.detail = "the generator sent 54 of 100 scheduled".into();
        step.run.stats.sent = 54;
        step.run.stats.scheduled = Some(100);
        (r.max_rate, r.precision_reached) = (None, None);
        r.stop_reason = Some(StopReason::Generator);
        let idle = find_max_text(&r);
        assert!(idle.contains("it sent 54 of 100 scheduled"), "{idle}");
        assert!(idle.contains("host was likely busy"), "{idle}");
        assert!(!idle.contains("more threads"), "{idle}");
        r.steps[0].run.stats.generator.worker_us = 1_000_000;
        r.steps[0].run.stats.generator.pool_full_us = 500_000;
        let held = find_max_text(&r);
        assert!(
            held.contains("busy 50.00% of the step: raise --max-connections"),
            "{held}"
        );
        r.no_rate = r.no_rate_reason();
        let v: serde_json::Value = serde_json::from_str(&find_max_json(&r)).unwrap();
        assert_eq!(
            v["no_rate"],
            "no rate held: the generator could not offer the load: step 1, 100 req/s, failed (generator: the generator sent 54 of 100 scheduled)"
        );
    }

    #[test]
    fn json_round_trips() {
        let r = result();
        let text = find_max_json(&r);
        let back = FindMaxResult::from_json(&text).unwrap();
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["kind"], "find_max");
        assert_eq!(v["steps"][1]["reason"], "slo");
        assert_eq!(v["stop_reason"], "max_steps");
    }
}
