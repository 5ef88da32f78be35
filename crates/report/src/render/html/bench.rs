//! The page of a bench: the warnings first (generator-bound steps, errors, noisy cells, limits
//! that were not enforced), then per load a summary table of every target × level with the
//! relative speeds, the queueing view of each sweep (Little's law per level and the findings:
//! worker pool, knee, scalability fit), the charts (req/s with confidence intervals, latency percentiles, CPU and
//! memory over the whole run with the steps shaded), and last the scenario, the targets with
//! their commands and limits, and the host.

use crate::charts::{self, Chart};
use crate::markup::html::{
    self as page, alert, esc, footer, key_values, section, Alert, Level, Row,
};
use crate::view::bench::{
    cell_row, cpus, generator_delay_lines, headline, limits_text, load_cells, load_line,
    recomputed, relative_lines, warnings, Severity, GENERATOR_DELAY_TITLE,
};
use crate::view::endpoints;
use crate::view::profile::{profiled, what, NOTE};
use crate::view::queueing;
use crate::words::host_facts;
use loadbench_model::human as units;
use loadbench_model::resources::Bottleneck;
use loadbench_model::{BenchLoad, BenchResult, BenchTarget};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// The page of a bench, as a string; `cells` and `relative` are recomputed from the rounds.
pub fn render_bench(result: &BenchResult) -> String {
    let r = recomputed(result);
    bench_page(&r, &charts::bench_charts(&r))
}

/// Writes a bench's charts as `NAME.svg` files into `dir` (beside the page) and returns their
/// paths; charts with nothing to show are not written.
pub fn write_bench_chart_files(result: &BenchResult, dir: &Path) -> io::Result<Vec<PathBuf>> {
    charts::write_files(&charts::bench_charts(result), dir)
}

/// The page of a bench (already recomputed) around its charts, drawn once for the page and the
/// files beside it.
pub(crate) fn bench_page(r: &BenchResult, charts: &[Chart]) -> String {
    // The headline, then what makes every figure doubtful (a busy host, said once), then why
    // the load was limited, and only then the other warnings and the tables.
    let mut body = header(r);
    if let Some(busy) = crate::why::bench_busy_host(r) {
        body += &page::alerts(&[alert(Level::Warn, format!("{busy}."))]);
    }
    let why = crate::why::bench_html(r);
    if !why.is_empty() {
        body += &section("why", "Why", &why);
    }
    body += &page::alerts(&alerts(r));
    if let Some(gates) = &r.gates {
        body += &crate::gates::html_section(gates);
    }
    body += &section("summary", "Summary", &summary(r));
    if !r.queueing.is_empty() {
        body += &section("queueing", "Queueing", &queueing_section(r));
    }
    let profiles = profiles(r);
    if !profiles.is_empty() {
        body += &section("profiles", "Profiles", &profiles);
    }
    body += &section("charts", "Charts", &page::figures(charts));
    body += &section("scenario", "Scenario", &scenario(r));
    body += &section("host", "Host", &key_values(&host(r)));
    body += &footer(&r.loadbench_version);
    page::document(&format!("loadbench bench: {}", r.scenario.name), &body)
}

fn header(r: &BenchResult) -> String {
    let description = r
        .scenario
        .description
        .as_deref()
        .map_or(String::new(), |d| format!("<p>{}</p>\n", esc(d)));
    format!(
        "<header>\n<h1>loadbench bench</h1>\n<p class=\"target mono\">{}</p>\n{description}<p class=\"muted\">started {} · ended {}</p>\n</header>\n",
        esc(&headline(r)),
        esc(&r.started_at),
        esc(&r.ended_at)
    )
}

fn alerts(r: &BenchResult) -> Vec<Alert> {
    let mut list: Vec<Alert> = warnings(r)
        .into_iter()
        .map(|(s, w)| {
            let level = match s {
                Severity::Error => Level::Error,
                Severity::Warn => Level::Warn,
            };
            alert(level, w)
        })
        .collect();
    list.push(alert(
        Level::Note,
        "Figures are medians over the rounds; the 95% confidence interval is of the mean req/s (Student's t; n/a from a single round) and relative speed is the ratio of mean req/s. The verdict says who ran out of CPU in most rounds: generator-bound throughput is loadbench's limit, not the target's.",
    ));
    list
}

fn summary(r: &BenchResult) -> String {
    let mut out = String::new();
    for (li, load) in r.loads.iter().enumerate() {
        let _ = write!(
            out,
            "<h3>Load {}</h3>\n<p class=\"muted\">{}</p>\n",
            esc(&load.name),
            esc(&load_line(load))
        );
        out += &load_table(r, li as u32);
        let rel = relative_lines(r, li as u32);
        if !rel.is_empty() {
            out += "<ul class=\"relative\">\n";
            for l in rel {
                let _ = writeln!(out, "<li>{}</li>", esc(&l));
            }
            out += "</ul>\n";
        }
        let delay = generator_delay_lines(r, li as u32);
        if !delay.is_empty() {
            let _ = writeln!(
                out,
                "<p>{}:</p>\n<ul class=\"relative\">",
                esc(GENERATOR_DELAY_TITLE)
            );
            for l in delay {
                let _ = writeln!(out, "<li>{}</li>", esc(&l));
            }
            out += "</ul>\n";
        }
        out += &mix_table(r, li as u32);
    }
    if r.loads.is_empty() {
        out += "<p class=\"muted\">The scenario has no load.</p>\n";
    }
    out
}

const HEAD: [&str; 18] = [
    "Target",
    "Level",
    "Rounds",
    "req/s (median)",
    "95% CI (mean)",
    "Best of rounds",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "Errors",
    "CPU (cores)",
    "RSS start",
    "RSS peak",
    "RSS trough",
    "Verdict",
    "Relative (mean req/s)",
    "Noisy",
];

fn load_table(r: &BenchResult, li: u32) -> String {
    let cells = load_cells(r, li);
    if cells.is_empty() {
        return "<p class=\"muted\">No round of this load finished.</p>\n".to_string();
    }
    let rows: Vec<Row> = cells
        .into_iter()
        .map(|c| {
            let row = cell_row(r, c);
            let mut cells = vec![
                row.target,
                row.level,
                row.rounds,
                row.rps,
                row.rps_range,
                row.rps_best,
            ];
            cells.extend(row.latency);
            cells.extend([
                row.errors,
                row.cpu,
                row.rss_start,
                row.rss_peak,
                row.rss_trough,
                row.verdict,
                row.relative,
                if c.noisy { "noisy" } else { "" }.to_string(),
            ]);
            let class = if c.bottlenecks.majority() == Bottleneck::GeneratorBound {
                "fail"
            } else {
                ""
            };
            Row { class, cells }
        })
        .collect();
    page::table("bench", &HEAD.map(String::from), &rows)
}

/// Per load with a sweep: the Little's-law table and the findings, each with its fix.
fn queueing_section(r: &BenchResult) -> String {
    let mut out = format!("<p class=\"muted\">{}.</p>\n", esc(queueing::INTRO));
    for (li, load) in r.loads.iter().enumerate() {
        let rows = queueing::rows(r, li as u32);
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "<h3>Load {}</h3>", esc(&load.name));
        let rows: Vec<Row> = rows.into_iter().map(page::row).collect();
        out += &page::table("queueing", &queueing::HEAD.map(String::from), &rows);
        out += "<ul class=\"findings\">\n";
        for s in queueing::sentences(r, li as u32) {
            let fix = s.fix.map_or(String::new(), |f| {
                format!(" <span class=\"muted\">Fix: {}</span>", esc(&f))
            });
            let _ = writeln!(out, "<li>{}{fix}</li>", esc(&s.text));
        }
        out += "</ul>\n";
    }
    out
}

/// A load's requests, per target and level over all rounds; nothing without a mix.
fn mix_table(r: &BenchResult, li: u32) -> String {
    let rows = endpoints::bench_rows(r, li);
    if rows.is_empty() {
        return String::new();
    }
    let head = endpoints::BENCH_HEAD.map(String::from);
    let rows: Vec<Row> = rows.into_iter().map(page::row).collect();
    format!(
        "<h4>{}</h4>\n{}",
        page::esc(&endpoints::bench_title(r, li)),
        page::table("endpoints", &head, &rows)
    )
}

fn scenario(r: &BenchResult) -> String {
    let s = &r.scenario;
    let mut pairs = vec![("Name", s.name.clone()), ("File", s.file.clone())];
    if let Some(d) = &s.description {
        pairs.push(("Description", d.clone()));
    }
    pairs.extend([
        ("Rounds", s.rounds.to_string()),
        ("Cool-down", units::duration_ms_short(s.cooldown_ms)),
        (
            "Generator CPUs",
            s.generator_cpuset
                .as_deref()
                .map_or("all".to_string(), cpus),
        ),
        ("Generator threads", s.generator_threads.to_string()),
        ("Generator cores", format!("{}", s.generator_cores)),
        ("Results folder", r.run_dir.clone()),
    ]);
    let mut out = key_values(&pairs);
    out += "<h3>Targets</h3>\n";
    for t in &r.targets {
        let _ = write!(out, "<h4>{}</h4>\n{}", esc(&t.name), key_values(&target(t)));
    }
    out += "<h3>Loads</h3>\n";
    for l in &r.loads {
        let _ = write!(out, "<h4>{}</h4>\n{}", esc(&l.name), key_values(&load(l)));
    }
    out
}

fn target(t: &BenchTarget) -> Vec<(&'static str, String)> {
    let mut pairs = vec![
        ("Kind", t.kind.clone()),
        ("Command", t.command.clone()),
        ("URL", t.url.clone()),
    ];
    if let Some(p) = &t.proxy_to {
        pairs.push(("Proxies to", p.clone()));
    }
    pairs.push(("Limits", limits_text(&t.limits)));
    if let Some(cg) = &t.limits.cgroup {
        pairs.push(("cgroup", cg.clone()));
    }
    pairs.push(("Ready after", units::duration_ms_short(t.ready_ms)));
    pairs.push(("Logs", format!("{}, {}", t.stdout_log, t.stderr_log)));
    pairs.extend(t.configs.iter().map(|c| ("Config", c.clone())));
    pairs
}

fn load(l: &BenchLoad) -> Vec<(&'static str, String)> {
    vec![("Shape", load_line(l)), ("Targets", l.targets.join(", "))]
}

fn host(r: &BenchResult) -> Vec<(&'static str, String)> {
    let mut pairs = host_facts(&r.host);
    pairs.push(("Started", r.started_at.clone()));
    pairs.push(("Ended", r.ended_at.clone()));
    pairs.push(("loadbench", r.loadbench_version.clone()));
    pairs
}

/// The profiles' section body (empty without profiles).
pub(crate) fn profiles(r: &BenchResult) -> String {
    let mut out = String::new();
    for (t, p) in profiled(r) {
        let _ = writeln!(
            out,
            "<figure class=\"profile\" id=\"profile-{}\">",
            esc(&t.name)
        );
        if let Ok(svg) = std::fs::read_to_string(Path::new(&r.run_dir).join(&p.svg)) {
            let _ = writeln!(
                out,
                "<img alt=\"on-CPU flame graph of {}\" style=\"width:100%\" src=\"data:image/svg+xml,{}\">",
                esc(&t.name),
                data_uri_escape(&svg)
            );
        }
        let _ = writeln!(
            out,
            "<figcaption><b>{}</b>: {} · <a href=\"{}\">{}</a> (zoomable, in the run folder)</figcaption>\n</figure>",
            esc(&t.name),
            esc(&what(r, p)),
            esc(&p.svg),
            esc(&p.svg)
        );
    }
    if out.is_empty() {
        return out;
    }
    format!("<p class=\"muted\">On-CPU flame graphs: {NOTE}.</p>\n{out}")
}

/// Percent-encodes what a `data:` URL in an attribute cannot hold as is.
fn data_uri_escape(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len() + svg.len() / 8);
    for b in svg.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => out.push(b as char),
            b' ' | b'-' | b'_' | b'.' | b'/' | b':' | b'=' | b';' | b',' | b'(' | b')' => {
                out.push(b as char)
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::render::html::run::tests::{figure, polylines};

    fn page() -> String {
        render_bench(&fixtures::bench())
    }

    #[test]
    fn warnings_come_before_the_summary_and_the_facts_last() {
        let html = page();
        let warn = html.find("alert warn").unwrap();
        assert!(warn < html.find("id=\"summary\"").unwrap());
        assert!(html.contains("throughput is loadbench&#39;s limit, not the target&#39;s"));
        assert!(html.contains("noisy, req/s varies"));
        assert!(html.contains("<strong>Error:</strong> nginx at c=200 (load closed): 45 errors"));
        assert!(html.contains("memory limit 256MiB not enforced"));
        assert!(html.find("id=\"charts\"") < html.find("id=\"scenario\""));
        assert!(html.find("id=\"scenario\"") < html.find("id=\"host\""));
        assert!(html.contains("haproxy -f results/20261122T100000Z-proxies/haproxy.cfg"));
    }

    #[test]
    fn the_why_section_comes_first_and_a_busy_host_is_said_once() {
        use loadbench_model::{Finding, FindingKind, Why};
        let mut r = fixtures::bench();
        let f = |kind, strength, text: &str| Finding {
            kind,
            strength,
            text: text.to_string(),
            fix: Some("the fix".to_string()),
            figures: Default::default(),
        };
        for round in &mut r.rounds {
            round.why = Why::new(
                vec![
                    f(
                        FindingKind::BusyHost,
                        0.95,
                        "other processes used 1.90 of 2 cores",
                    ),
                    f(
                        FindingKind::HotThread,
                        0.85,
                        "one thread of the target is saturated",
                    ),
                ],
                vec![],
            );
        }
        let html = render_bench(&r);
        assert_eq!(html.matches("other processes used").count(), 1);
        let why = html.find("id=\"why\"").unwrap();
        assert!(why < html.find("alert error").unwrap());
        assert!(why < html.find("id=\"summary\"").unwrap());
        assert!(html.find("busy host in ").unwrap() < why);
        // One line for the kind with every step, its fix beside it; each round folded below.
        let fixed = html.matches("one thread of the target is saturated — the fix");
        assert_eq!(fixed.count(), 1);
        let said = html.matches("one thread of the target is saturated");
        assert_eq!(said.count(), 1 + r.rounds.len());
    }

    #[test]
    fn summary_has_a_row_per_target_and_level_with_relative_speed() {
        let html = page();
        assert!(html.matches("<tr><th scope=\"row\">").count() >= 5);
        assert_eq!(
            html.matches("<tr class=\"fail\">").count(),
            0,
            "the majority of haproxy's rounds at c=200 were target-bound"
        );
        let table = &html[html.find("<table class=\"bench\">").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr").count(), 1 + 6);
        assert!(table.contains("<td>baseline</td>"));
        assert!(table.contains("<td>noisy</td>"));
        assert!(html.contains("<li>c=200: haproxy:"));
    }

    #[test]
    fn every_chart_is_drawn_with_data() {
        let html = page();
        let rps = figure(&html, "bench-rps-closed");
        assert!(rps.contains("<rect"), "bars are drawn");
        assert!(
            rps.contains("c=50") && rps.contains("c=200"),
            "levels label the bars"
        );
        for level in [1, 2] {
            let lat = figure(&html, &format!("bench-latency-closed-{level}"));
            assert!(
                polylines(lat).iter().filter(|&&n| n == 4).count() >= 3,
                "{:?}",
                polylines(lat)
            );
        }
        for name in ["bench-cpu", "bench-rss"] {
            let chart = figure(&html, name);
            assert!(
                polylines(chart).iter().any(|&n| n > 100),
                "{name}: {:?}",
                polylines(chart)
            );
            assert!(
                chart.matches("<rect").count() >= 18,
                "{name}: steps are shaded"
            );
        }
        assert!(figure(&html, "bench-cpu").contains("generator (loadbench)"));
        assert!(!html.contains("class=\"chart empty\""));
    }

    #[test]
    fn a_sweep_has_a_queueing_section_with_the_computed_figures_and_a_fit_chart() {
        let r = fixtures::bench_sweep();
        let html = render_bench(&r);
        let a = r.queueing_of(0, "backend").unwrap();
        let section = &html[html.find("id=\"queueing\"").unwrap()..];
        let section = &section[..section.find("</section>").unwrap()];
        assert!(html.find("id=\"summary\"") < html.find("id=\"queueing\""));
        let table = &section[section.find("<table class=\"queueing\">").unwrap()..];
        assert_eq!(
            table.matches("<tr><th scope=\"row\">backend</th>").count(),
            5
        );
        for p in &a.levels {
            let row = format!(
                "<td>c={}</td><td>{:.0}</td><td>{}</td>",
                p.value,
                p.requests_per_sec,
                crate::units::duration_us(p.mean_latency_us)
            );
            assert!(table.contains(&row), "{row}");
        }
        for f in &a.findings {
            assert!(section.contains(&esc(&f.text)), "{}", f.text);
        }
        assert!(section.contains("pool of about 20 workers"));
        let chart = figure(&html, "bench-usl-sweep");
        assert!(
            chart.contains("backend (USL fit)"),
            "the fitted curve is drawn"
        );
        assert!(chart.contains("backend (measured)"));
    }

    #[test]
    fn no_queueing_section_without_a_sweep() {
        let html = page();
        assert!(!html.contains("id=\"queueing\""));
        assert!(!html.contains("bench-usl"));
    }

    #[test]
    fn text_from_the_result_is_escaped() {
        let mut r = fixtures::bench();
        r.targets[0].command = "<script>x</script>".into();
        r.scenario.name = "<b>".into();
        let html = render_bench(&r);
        assert!(!html.contains("<script>x"));
        assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"));
        assert!(!html.contains("<b>"));
    }
}
