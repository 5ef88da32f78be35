//! The "Gates" section in every format, from one [`GateReport`] through the rows of
//! [`crate::view::gates`]: each gate with its measured value, its limit and pass/fail. Run and
//! bench reports call these, so the wording is the same everywhere. JSON needs nothing here:
//! the `gates` field is the serialized report. JUnit: one test case per verdict.

use crate::markup::csv::quote;
use crate::markup::html::{esc, row as html_row, section, table as html_table, Row};
use crate::markup::junit::{Case, Outcome};
use crate::markup::markdown::{escape_text, table as md_table, Align};
use crate::markup::text::aligned;
use crate::view::gates::{headline, rows};
use loadbench_model::{GateOutcome, GateReport, GateVerdict};

/// One verdict in one line: `p99<10ms: measured 52.10ms, limit < 10.00ms`.
pub fn verdict_line(v: &GateVerdict) -> String {
    crate::view::gates::line(v)
}

/// The section for the terminal: a title with the counts, then one aligned line per gate.
pub fn text_lines(r: &GateReport) -> Vec<String> {
    let mut lines = vec![format!("Gates ({})", headline(r))];
    let table: Vec<Vec<String>> = rows(r)
        .into_iter()
        .map(|g| {
            let mut cells = vec![g.word.to_string(), g.gate];
            if !g.cell.is_empty() {
                cells.push(g.cell);
            }
            cells.push(format!("measured {}", g.measured));
            cells.push(format!("limit {}", g.limit));
            if let Some(why) = g.reason {
                cells.push(format!("({why})"));
            }
            cells
        })
        .collect();
    lines.extend(aligned(&table, &[0, 1, 2, 3, 4, 5]));
    lines
}

/// The section in Markdown: a heading, the counts, a table.
pub fn markdown_section(r: &GateReport) -> String {
    let bench = r.verdicts.iter().any(|v| v.cell.is_some());
    let table: Vec<Vec<String>> = rows(r)
        .into_iter()
        .map(|g| {
            let word = if g.ok {
                g.word.to_string()
            } else {
                format!("**{}**", g.word)
            };
            let mut cells = vec![word, format!("`{}`", g.gate)];
            if bench {
                cells.push(escape_text(&g.cell));
            }
            cells.extend([
                g.measured,
                escape_text(&g.limit),
                escape_text(g.reason.as_deref().unwrap_or("")),
            ]);
            cells
        })
        .collect();
    let (head, align): (Vec<&str>, Vec<Align>) = if bench {
        (
            vec!["Result", "Gate", "Cell", "Measured", "Limit", "Note"],
            vec![
                Align::Left,
                Align::Left,
                Align::Left,
                Align::Right,
                Align::Right,
                Align::Left,
            ],
        )
    } else {
        (
            vec!["Result", "Gate", "Measured", "Limit", "Note"],
            vec![
                Align::Left,
                Align::Left,
                Align::Right,
                Align::Right,
                Align::Left,
            ],
        )
    };
    format!(
        "\n### Gates\n\n{}.\n\n{}",
        escape_text(&headline(r)),
        md_table(&head, &align, &table)
    )
}

/// The section in HTML: the counts, then a table whose failing rows are marked `fail`.
pub fn html_section(r: &GateReport) -> String {
    let bench = r.verdicts.iter().any(|v| v.cell.is_some());
    let table: Vec<Row> = rows(r)
        .into_iter()
        .map(|g| {
            let mut cells = vec![g.gate];
            if bench {
                cells.push(g.cell);
            }
            cells.extend([
                g.measured,
                g.limit,
                g.reason.unwrap_or_default(),
                g.word.to_string(),
            ]);
            Row {
                class: if g.ok { "pass" } else { "fail" },
                ..html_row(cells)
            }
        })
        .collect();
    let mut head = vec!["Gate".to_string()];
    if bench {
        head.push("Cell".into());
    }
    head.extend(["Measured", "Limit", "Note", "Result"].map(String::from));
    let body = format!(
        "<p>{}</p>\n{}",
        esc(&headline(r)),
        html_table("gates", &head, &table)
    );
    section("gates", "Gates", &body)
}

/// The gates as a CSV table of their own (header, one row per verdict), for after a blank
/// line below a report's main table.
pub fn csv_table(r: &GateReport) -> String {
    let mut out = "gate,cell,op,limit,measured,outcome,reason\n".to_string();
    for v in &r.verdicts {
        let cells = [
            quote(&v.gate.text),
            quote(v.cell.as_deref().unwrap_or("")),
            v.gate.op.symbol().to_string(),
            v.gate.limit.to_string(),
            v.measured.map_or(String::new(), |m| m.to_string()),
            v.outcome.to_string(),
            quote(v.reason.as_deref().unwrap_or("")),
        ];
        out += &cells.join(",");
        out += "\n";
    }
    out
}

/// One JUnit test case per verdict: a failure carries the measured value against the limit;
/// an unjudged gate is a failure, or skipped when `--slo-allow-unjudged` allowed it.
pub(crate) fn junit_cases(r: &GateReport, classname: &str) -> Vec<Case> {
    r.verdicts
        .iter()
        .map(|v| {
            let line = verdict_line(v);
            let outcome = match v.outcome {
                GateOutcome::Pass => Outcome::Passed,
                GateOutcome::Fail => Outcome::Failed {
                    message: line.clone(),
                    kind: "gate",
                    detail: line,
                },
                GateOutcome::Unjudged if r.allow_unjudged => Outcome::Skipped { message: line },
                GateOutcome::Unjudged => Outcome::Failed {
                    message: line.clone(),
                    kind: "unjudged",
                    detail: format!("{line} (give --slo-allow-unjudged to let it pass)"),
                },
            };
            let name = match &v.cell {
                Some(cell) => format!("{} at {cell}", v.gate.text),
                None => v.gate.text.clone(),
            };
            Case {
                classname: classname.to_string(),
                name,
                time: 0.0,
                outcome,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::fixtures;
    use crate::{render_bench, Format};
    use loadbench_model::{BenchGates, GateOutcome};

    /// The fixture bench (direct, nginx, haproxy at c=50 and c=200) with a gate every cell
    /// passes, one nginx fails (`rps>1000000`), and two ratio gates: nginx against direct.
    fn gated() -> loadbench_model::BenchResult {
        let mut r = fixtures::bench();
        r.recompute();
        let gates = loadbench_plan::parse_gates("errors<=100%,nginx/direct>0.01,nginx/direct>100")
            .unwrap()
            .gates;
        let (all, ratios) = gates.split_at(1);
        let mut bench = BenchGates {
            all: all.to_vec(),
            loads: vec![ratios.to_vec()],
            ..Default::default()
        };
        bench.targets.insert(
            "nginx".into(),
            loadbench_plan::parse_gates("rps>1000000").unwrap().gates,
        );
        r.gates = Some(bench.judge(&r, false));
        r
    }

    #[test]
    fn bench_gates_are_judged_per_cell_and_ratios_per_level() {
        let r = gated();
        let v = &r.gates.as_ref().unwrap().verdicts;
        // 6 cells × errors, 2 nginx cells × rps, 2 levels × 2 ratios.
        assert_eq!(v.len(), 6 + 2 + 4);
        let of = |gate: &'static str| v.iter().filter(move |x| x.gate.text == gate);
        assert!(of("errors<=100%").all(|x| x.outcome == GateOutcome::Pass));
        let rps: Vec<_> = of("rps>1000000").collect();
        assert!(rps.iter().all(|x| x.outcome == GateOutcome::Fail));
        assert_eq!(rps[0].cell.as_deref(), Some("nginx · closed · c=50"));
        let cell = r
            .cells
            .iter()
            .find(|c| c.target == "nginx" && c.level == 0)
            .unwrap();
        assert_eq!(rps[0].measured, cell.requests_per_sec.map(|s| s.median));
        let low: Vec<_> = of("nginx/direct>0.01").collect();
        assert_eq!(low.len(), 2);
        assert!(low.iter().all(|x| x.outcome == GateOutcome::Pass));
        assert_eq!(low[1].cell.as_deref(), Some("closed · c=200"));
        let rel = r
            .relative
            .iter()
            .find(|x| x.target == "nginx" && x.level == 0)
            .unwrap();
        assert!((low[0].measured.unwrap() - rel.ratio).abs() < 1e-9);
        assert!(of("nginx/direct>100").all(|x| x.outcome == GateOutcome::Fail));
        assert!(!r.gates.as_ref().unwrap().passed());
    }

    #[test]
    fn every_format_shows_the_bench_gates() {
        let r = gated();
        let text = render_bench(Format::Text, &r);
        assert!(
            text.contains("Gates (12 gates: 8 passed, 4 failed)"),
            "{text}"
        );
        let line = text.lines().find(|l| l.contains("rps>1000000")).unwrap();
        assert!(line.trim_start().starts_with("FAIL") && line.contains("nginx · closed · c=50"));
        let md = render_bench(Format::Markdown, &r);
        assert!(
            md.contains("| Result | Gate | Cell | Measured | Limit | Note |"),
            "{md}"
        );
        assert!(
            md.contains("| **FAIL** | `nginx/direct>100` | closed · c=50 |"),
            "{md}"
        );
        let html = render_bench(Format::Html, &r);
        assert!(html.contains("<section id=\"gates\">"));
        assert!(html.contains(
            "<tr class=\"fail\"><th scope=\"row\">nginx/direct&gt;100</th><td>closed · c=50</td>"
        ));
        let csv = render_bench(Format::Csv, &r);
        assert!(
            csv.contains("\ngate,cell,op,limit,measured,outcome,reason\n"),
            "{csv}"
        );
        assert!(
            csv.contains("nginx/direct>100,closed · c=200,>,100,"),
            "{csv}"
        );
        let json = render_bench(Format::Json, &r);
        let back = loadbench_model::BenchResult::from_json(&json).unwrap();
        assert_eq!(back.gates, r.gates);
        let junit = render_bench(Format::Junit, &r);
        assert_eq!(junit.matches("<testcase ").count(), 12);
        assert_eq!(junit.matches("<failure ").count(), 4);
    }
}
