//! The "why" section in every format, from one [`Why`]: the findings strongest first, each its
//! sentence and its usual fix, and for "no clear bottleneck" what was looked at. The run
//! reports and the bench reports (per round) call these, so the wording is the same
//! everywhere. JSON needs nothing here: the `why` field is the serialized [`Why`].

use crate::markup::html::esc;
use crate::markup::markdown::escape_text;
use loadbench_model::{BenchResult, BenchRound, Finding, FindingKind, Why};

/// The findings in the order they are shown (strongest first, as [`Why::new`] ranked them).
fn shown(why: &Why) -> Vec<&Finding> {
    why.findings.iter().collect()
}

/// One finding as plain text: the sentence, then the fix after a dash.
pub fn finding_text(f: &Finding) -> String {
    match &f.fix {
        Some(fix) => format!("{} — {fix}", f.text),
        None => f.text.clone(),
    }
}

/// The section's lines for the terminal: a title, then one numbered line per finding; empty
/// when there is nothing to say.
pub fn text_lines(why: &Why) -> Vec<String> {
    let findings = shown(why);
    if findings.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["Why".to_string()];
    for (i, f) in findings.iter().enumerate() {
        lines.push(format!("  {}. {}", i + 1, finding_text(f)));
    }
    lines
}

/// The findings as a Markdown list (no heading), one item per finding; empty when none.
pub fn markdown_list(why: &Why) -> String {
    shown(why)
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let fix = f
                .fix
                .as_deref()
                .map(|x| format!(" — *{}*", escape_text(x)))
                .unwrap_or_default();
            format!("{}. {}{fix}\n", i + 1, escape_text(&f.text))
        })
        .collect()
}

/// The findings as an HTML ordered list; each item carries its kind as a class (`why-hot_thread`)
/// and `data-strength`, so a reader (and a test) can pick them out. Empty when none.
pub fn html_list(why: &Why) -> String {
    let findings = shown(why);
    if findings.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ol class=\"why\">\n");
    for f in findings {
        let fix = f
            .fix
            .as_deref()
            .map(|x| format!(" <span class=\"fix\">— {}</span>", esc(x)))
            .unwrap_or_default();
        out += &format!(
            "<li class=\"why-{}\" data-strength=\"{:.2}\">{}{fix}</li>\n",
            kind_id(f.kind),
            f.strength,
            esc(&f.text)
        );
    }
    out + "</ol>\n"
}

/// Which round a bench's findings belong to: `step 3, plaintext c=32, direct, round 1`.
pub fn round_label(r: &BenchResult, round: &BenchRound) -> String {
    let load = r.loads.get(round.load as usize);
    let (name, level) = load.map_or((String::new(), String::new()), |l| {
        (l.name.clone(), l.level_label(round.level as usize))
    });
    format!(
        "step {}, {name} {level}, {}, round {}",
        round.step,
        round.target,
        round.round + 1
    )
}

/// The rounds of a bench that have findings, in the order they ran.
pub fn bench_rounds(r: &BenchResult) -> impl Iterator<Item = &BenchRound> {
    r.rounds.iter().filter(|round| !round.why.is_empty())
}

/// A round's findings without the busy host, which the bench reports say once at the top
/// ([`bench_busy_host`]) instead of on every step.
pub fn without_busy_host(why: &Why) -> Why {
    Why {
        findings: why
            .findings
            .iter()
            .filter(|f| f.kind != FindingKind::BusyHost)
            .cloned()
            .collect(),
        looked_at: why.looked_at.clone(),
    }
}

/// The busy-host findings of a bench said once: the steps where the host was busy and the
/// busiest one's sentence and fix; `None` when no step found it.
pub fn bench_busy_host(r: &BenchResult) -> Option<String> {
    let busy: Vec<(&BenchRound, &Finding)> = r
        .rounds
        .iter()
        .filter_map(|round| {
            let f = round
                .why
                .findings
                .iter()
                .find(|f| f.kind == FindingKind::BusyHost)?;
            Some((round, f))
        })
        .collect();
    let other = |f: &Finding| f.figures.get("other_cores").copied().unwrap_or(0.0);
    let (_, worst) = busy
        .iter()
        .max_by(|a, b| other(a.1).total_cmp(&other(b.1)))?;
    let steps: Vec<String> = busy
        .iter()
        .map(|(round, _)| round.step.to_string())
        .collect();
    Some(format!(
        "busy host in {} of {} steps (step {}); at its busiest, {}",
        busy.len(),
        r.rounds.len(),
        steps.join(", "),
        finding_text(worst)
    ))
}

/// A bench's "why" lines for the terminal, kept short: one line per kind of finding that
/// names a limit, the text of its strongest round with that round's step and the other steps
/// where it was found; the steps where nothing stood out share one line. The per-round detail
/// and the fixes are in the Markdown, HTML and JSON.
pub fn bench_text_lines(r: &BenchResult) -> Vec<String> {
    let mut lines = grouped(r, false, |_| true);
    if !lines.is_empty() {
        lines.insert(
            0,
            "why (per round, with fixes: the Markdown and HTML reports):".to_string(),
        );
    }
    lines
}

/// One line per kind of finding that `keep` keeps (see [`bench_text_lines`]).
fn grouped(r: &BenchResult, with_fix: bool, keep: impl Fn(&Finding) -> bool) -> Vec<String> {
    let mut groups: Vec<(&Finding, Vec<u32>)> = Vec::new();
    let mut unclear = Vec::new();
    for round in bench_rounds(r) {
        let mut named = false;
        for f in round
            .why
            .findings
            .iter()
            .filter(|f| f.kind != FindingKind::NoClearBottleneck && keep(f))
        {
            named = true;
            match groups.iter_mut().find(|(g, _)| g.kind == f.kind) {
                Some((g, steps)) => {
                    steps.push(round.step);
                    if f.strength > g.strength {
                        *g = f;
                        steps.rotate_right(1);
                    }
                }
                None => groups.push((f, vec![round.step])),
            }
        }
        if !named {
            unclear.push(round.step.to_string());
        }
    }
    groups.sort_by(|a, b| b.0.strength.total_cmp(&a.0.strength));
    let mut lines: Vec<String> = groups
        .iter()
        .map(|(f, steps)| group_line(f, steps, with_fix))
        .collect();
    if !unclear.is_empty() {
        lines.push(format!(
            "  step {}: no clear bottleneck",
            unclear.join(", ")
        ));
    }
    lines
}

/// `  step 3 (also 1, 5): TEXT`: the first step is the one whose text is shown.
fn group_line(f: &Finding, steps: &[u32], with_fix: bool) -> String {
    let also: Vec<String> = steps.iter().skip(1).map(u32::to_string).collect();
    let also = if also.is_empty() {
        String::new()
    } else {
        format!(" (also {})", also.join(", "))
    };
    let text = if with_fix {
        finding_text(f)
    } else {
        f.text.clone()
    };
    format!("  step {}{also}: {text}", steps[0])
}

/// A bench's "why" section in Markdown (empty when no round has findings).
pub fn bench_markdown(r: &BenchResult) -> String {
    let mut out = String::new();
    if let Some(busy) = bench_busy_host(r) {
        out += &format!("\n> **Warning:** {}.\n", escape_text(&busy));
    }
    for round in bench_rounds(r) {
        let why = without_busy_host(&round.why);
        if why.is_empty() {
            continue;
        }
        out += &format!(
            "\n**{}**\n\n{}",
            escape_text(&round_label(r, round)),
            markdown_list(&why)
        );
    }
    if out.is_empty() {
        return out;
    }
    format!("\n### Why\n{out}")
}

/// A bench's "why" section body in HTML (empty when no round has findings): first one line
/// per kind of finding with the steps it was found in (as the terminal shows), then each
/// round's findings with their fixes, folded. The busy host is left out: the page says it once
/// at the top.
pub fn bench_html(r: &BenchResult) -> String {
    let rounds: Vec<(&BenchRound, Why)> = bench_rounds(r)
        .map(|round| (round, without_busy_host(&round.why)))
        .filter(|(_, why)| !why.is_empty())
        .collect();
    if rounds.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"why-summary\">\n");
    for line in grouped(r, true, |f| f.kind != FindingKind::BusyHost) {
        out += &format!("<li>{}</li>\n", esc(line.trim_start()));
    }
    out += "</ul>\n<details class=\"why-rounds\"><summary>Every round's findings, with fixes</summary>\n";
    for (round, why) in rounds {
        out += &format!(
            "<h3>{}</h3>\n{}",
            esc(&round_label(r, round)),
            html_list(&why)
        );
    }
    out + "</details>\n"
}

/// The kind's JSON identifier (`accept_queue_overflow`).
pub fn kind_id(kind: FindingKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// True when some finding names a limit (anything but "no clear bottleneck").
pub fn names_a_limit(why: &Why) -> bool {
    why.findings
        .iter()
        .any(|f| f.kind != FindingKind::NoClearBottleneck)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn why() -> Why {
        let f = |kind, strength, text: &str, fix: Option<&str>| Finding {
            kind,
            strength,
            text: text.into(),
            fix: fix.map(String::from),
            figures: BTreeMap::new(),
        };
        Why::new(
            vec![
                f(FindingKind::Resets, 0.3, "12 connections were reset", None),
                f(
                    FindingKind::AcceptQueueOverflow,
                    0.9,
                    "accept queue overflowed 12,400 times (backlog 128)",
                    Some("raise the server's backlog and net.core.somaxconn"),
                ),
            ],
            vec!["listen queues".into()],
        )
    }

    #[test]
    fn text_numbers_findings_strongest_first_with_their_fix() {
        assert_eq!(
            text_lines(&why()),
            [
                "Why",
                "  1. accept queue overflowed 12,400 times (backlog 128) — raise the server's backlog and net.core.somaxconn",
                "  2. 12 connections were reset",
            ]
        );
        assert!(text_lines(&Why::default()).is_empty());
    }

    #[test]
    fn a_runs_why_is_in_every_format() {
        let mut run = crate::fixtures::busy();
        run.why = why();
        let opts = crate::RenderOptions::default();
        let text = crate::render_to_string(crate::Format::Text, &run, &opts);
        assert!(
            text.contains("\nWhy\n  1. accept queue overflowed 12,400 times (backlog 128) — raise"),
            "{text}"
        );
        let md = crate::markdown::render_run(&run, &opts);
        assert!(
            md.contains("### Why\n\n1. accept queue overflowed 12,400 times"),
            "{md}"
        );
        let html = crate::html::render_run(&run, &opts);
        assert!(
            html.contains("<section id=\"why\">\n<h2>Why</h2>\n<ol class=\"why\">"),
            "{html}"
        );
        let json: serde_json::Value = serde_json::to_value(&run).unwrap();
        assert_eq!(json["why"]["findings"][0]["kind"], "accept_queue_overflow");
        assert_eq!(json["why"]["looked_at"][0], "listen queues");
        // Without findings, no section at all.
        let plain = crate::fixtures::busy();
        assert!(!crate::render_to_string(crate::Format::Text, &plain, &opts).contains("\nWhy\n"));
        assert!(!crate::html::render_run(&plain, &opts).contains("id=\"why\""));
    }

    #[test]
    fn a_benchs_why_names_each_round() {
        let mut b = crate::fixtures::bench();
        b.rounds[1].why = why();
        let label = round_label(&b, &b.rounds[1]);
        assert!(
            label.starts_with(&format!("step {}, ", b.rounds[1].step)),
            "{label}"
        );
        let text = crate::render::text::bench::render(&b);
        let head = "why (per round, with fixes: the Markdown and HTML reports):\n";
        let step = b.rounds[1].step;
        let lines = format!(
            "{head}  step {step}: accept queue overflowed 12,400 times (backlog 128)\n  step {step}: 12 connections were reset\n"
        );
        assert!(text.contains(&lines), "{text}");
        // The same kind in another round: one line, the strongest round's text first.
        let mut stronger = why();
        stronger.findings[0].strength = 0.95;
        stronger.findings[0].text = "accept queue overflowed 99 times".into();
        b.rounds[3].why = stronger;
        let other = b.rounds[3].step;
        let text = crate::render::text::bench::render(&b);
        let grouped = format!("  step {other} (also {step}): accept queue overflowed 99 times\n");
        assert!(text.contains(&grouped), "{text}");
        // A round where nothing stood out shares one line with the others like it.
        b.rounds[0].why = Why::new(
            vec![Finding {
                kind: FindingKind::NoClearBottleneck,
                strength: 0.1,
                text: "no clear bottleneck: looked at listen queues".into(),
                fix: None,
                figures: BTreeMap::new(),
            }],
            vec![],
        );
        let text = crate::render::text::bench::render(&b);
        let unclear = format!("  step {}: no clear bottleneck\n", b.rounds[0].step);
        assert!(text.contains(&unclear), "{text}");
        let md = crate::render::markdown::bench::render(&b);
        assert!(md.contains("### Why\n"), "{md}");
        let html = crate::html::render_bench(&b);
        assert!(html.contains("<section id=\"why\">"), "{html}");
        // One list per round with findings, in Markdown and HTML alike.
        assert_eq!(html.matches("<ol class=\"why\">").count(), 3);
        assert_eq!(md.matches("\n1. ").count(), 3, "{md}");
    }

    #[test]
    fn markdown_escapes_and_html_marks_each_kind() {
        let md = markdown_list(&why());
        assert!(md.starts_with("1. accept queue overflowed 12,400 times (backlog 128) — *raise the server's backlog and net.core.somaxconn*\n"), "{md}");
        let html = html_list(&why());
        assert!(html.contains("<li class=\"why-accept_queue_overflow\" data-strength=\"0.90\">accept queue overflowed 12,400 times (backlog 128) <span class=\"fix\">— raise the server&#39;s backlog"), "{html}");
        assert!(html.contains("class=\"why-resets\""));
        assert_eq!(kind_id(FindingKind::HotThread), "hot_thread");
    }
}
