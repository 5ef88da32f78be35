//! The Markdown view of a bench, for a pull request: warnings as quotes, then per load a table
//! of every target × level with req/s (median ± the 95% confidence interval's half-width),
//! p50/p90/p99/p99.9, errors, CPU, memory and the bottleneck verdict, the relative speeds, the
//! queueing view of a sweep, the findings, the profiles, and the targets with their limits.

use crate::markup::markdown::{code, escape_text, table, Align};
use crate::view::bench::{
    cell_row, generator_delay_lines, headline, limits_text, load_cells, load_line, relative_lines,
    warnings, Severity, GENERATOR_DELAY_TITLE,
};
use crate::view::endpoints;
use crate::view::profile::{path, profiled, what, NOTE};
use crate::view::queueing;
use loadbench_model::BenchResult;

const HEAD: [&str; 15] = [
    "target",
    "level",
    "req/s",
    "95% CI",
    "best",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "errors",
    "CPU (cores)",
    "RSS start",
    "RSS peak / trough",
    "verdict",
    "relative (mean req/s)",
];

pub(crate) fn render(r: &BenchResult) -> String {
    let mut out = format!("## loadbench bench {}\n\n", escape_text(&headline(r)));
    out += &format!(
        "Started {}, ended {}; results in {}.\n",
        escape_text(&r.started_at),
        escape_text(&r.ended_at),
        code(&r.run_dir)
    );
    for (s, w) in warnings(r) {
        let word = match s {
            Severity::Error => "Error",
            Severity::Warn => "Warning",
        };
        out += &format!("\n> **{word}:** {}\n", escape_text(&w));
    }
    if let Some(gates) = &r.gates {
        out += &crate::gates::markdown_section(gates);
    }
    for li in 0..r.loads.len() as u32 {
        out += &load_section(r, li);
    }
    out += &crate::why::bench_markdown(r);
    out += &profiles(r);
    out += "\n### Targets\n\n";
    for t in &r.targets {
        out += &format!(
            "- **{}** ({}): {} at {}; limits: {}\n",
            escape_text(&t.name),
            escape_text(&t.kind),
            code(&t.command),
            code(&t.url),
            escape_text(&limits_text(&t.limits))
        );
    }
    out
}

fn load_section(r: &BenchResult, li: u32) -> String {
    let load = &r.loads[li as usize];
    let mut out = format!(
        "\n### Load {}\n\n{}\n\n",
        escape_text(&load.name),
        escape_text(&load_line(load))
    );
    let rows: Vec<Vec<String>> = load_cells(r, li)
        .into_iter()
        .map(|c| {
            let row = cell_row(r, c);
            let mut cells = vec![row.target, row.level, row.rps, row.rps_ci, row.rps_best];
            cells.extend(row.latency);
            cells.extend([
                row.errors,
                row.cpu,
                row.rss_start,
                format!("{} / {}", row.rss_peak, row.rss_trough),
                row.verdict,
                row.relative,
            ]);
            cells
        })
        .collect();
    if rows.is_empty() {
        return out + "No round finished.\n";
    }
    let mut align = vec![Align::Left, Align::Left];
    align.extend([Align::Right; 11]);
    align.extend([Align::Left, Align::Left]);
    out += &table(&HEAD, &align, &rows);
    let relative = relative_lines(r, li);
    if !relative.is_empty() {
        out += "\nRelative speed (mean req/s):\n\n";
        for l in relative {
            out += &format!("- {}\n", escape_text(&l));
        }
    }
    let delay = generator_delay_lines(r, li);
    if !delay.is_empty() {
        let title = GENERATOR_DELAY_TITLE;
        out += &format!(
            "\n{}{}:\n\n",
            title[..1].to_uppercase(),
            escape_text(&title[1..])
        );
        for l in delay {
            out += &format!("- {}\n", escape_text(&l));
        }
    }
    out + &mix_table(r, li) + &queueing_section(r, li)
}

/// The load's queueing table and sentences, each with its fix.
fn queueing_section(r: &BenchResult, li: u32) -> String {
    let rows = queueing::rows(r, li);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!("\n#### Queueing\n\n{}.\n\n", escape_text(queueing::INTRO));
    let mut align = vec![Align::Left, Align::Left];
    align.extend([Align::Right; 5]);
    out += &table(&queueing::HEAD, &align, &rows);
    out += "\n";
    for s in queueing::sentences(r, li) {
        out += &format!("- {}", escape_text(&s.text));
        if let Some(fix) = s.fix {
            out += &format!(" — fix: {}", escape_text(&fix));
        }
        out += "\n";
    }
    out
}

/// A load's requests, per target and level over all rounds; nothing without a mix.
fn mix_table(r: &BenchResult, li: u32) -> String {
    use endpoints::{BENCH_HEAD, BENCH_TEXT};
    let rows = endpoints::bench_rows(r, li);
    if rows.is_empty() {
        return String::new();
    }
    let align: Vec<Align> = (0..BENCH_HEAD.len())
        .map(|i| {
            if BENCH_TEXT.contains(&i) {
                Align::Left
            } else {
                Align::Right
            }
        })
        .collect();
    format!(
        "\n{}:\n\n{}",
        escape_text(&endpoints::bench_title(r, li)),
        table(&BENCH_HEAD, &align, &rows)
    )
}

/// The profiles' section (empty without profiles).
pub(crate) fn profiles(r: &BenchResult) -> String {
    let items: String = profiled(r)
        .map(|(t, p)| {
            format!(
                "- **{}**: {} ({})\n",
                escape_text(&t.name),
                code(&path(r, p)),
                escape_text(&what(r, p))
            )
        })
        .collect();
    if items.is_empty() {
        return items;
    }
    format!("\n### Profiles\n\nOn-CPU flame graphs: {NOTE}.\n\n{items}")
}
