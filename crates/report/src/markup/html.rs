//! The building blocks of the HTML pages: escaping, tables, alerts, chart figures, a mix's
//! per-request table, the footer and the page itself with its inline stylesheet. Every piece
//! of text from a result passes through [`esc`] here, so the page builders only ever hand over
//! plain text. The page loads nothing: its
//! Content-Security-Policy forbids every fetch and every script, so it works offline and a
//! hostile URL or header in a result can do nothing but print.

use crate::charts::Chart;
use crate::view::endpoints;
use loadbench_model::RunResult;
use std::fmt::Write as _;

/// Text made safe for HTML element content and attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// How serious an alert at the top of the page is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Something failed: errors, nothing completed.
    Error,
    /// The figures need care: interrupted, the generator fell behind, odd statuses.
    Warn,
    /// How to read the figures.
    Note,
}

impl Level {
    fn class(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Note => "note",
        }
    }

    fn word(self) -> &'static str {
        match self {
            Level::Error => "Error",
            Level::Warn => "Warning",
            Level::Note => "Note",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alert {
    pub level: Level,
    pub text: String,
}

pub(crate) fn alert(level: Level, text: impl Into<String>) -> Alert {
    Alert {
        level,
        text: text.into(),
    }
}

/// The alerts, most serious first; nothing when there are none.
pub(crate) fn alerts(list: &[Alert]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&Alert> = list.iter().collect();
    sorted.sort_by_key(|a| a.level as u8);
    let mut out = String::from("<ul class=\"alerts\">\n");
    for a in sorted {
        let _ = writeln!(
            out,
            "<li class=\"alert {}\"><strong>{}:</strong> {}</li>",
            a.level.class(),
            a.level.word(),
            esc(&a.text)
        );
    }
    out + "</ul>\n"
}

/// A row of a table: its cells as plain text, and a CSS class (`""`, `fail`, `pass`, `bad`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub class: &'static str,
    pub cells: Vec<String>,
}

pub(crate) fn row(cells: Vec<String>) -> Row {
    Row { class: "", cells }
}

/// A table that scrolls sideways on a narrow screen instead of squeezing its columns.
pub(crate) fn table(class: &str, head: &[String], rows: &[Row]) -> String {
    let mut out = format!("<div class=\"table-wrap\"><table class=\"{class}\">\n");
    if !head.is_empty() {
        out += "<thead><tr>";
        for h in head {
            let _ = write!(out, "<th scope=\"col\">{}</th>", esc(h));
        }
        out += "</tr></thead>\n";
    }
    out += "<tbody>\n";
    for r in rows {
        out += &table_row(r);
    }
    out + "</tbody></table></div>\n"
}

fn table_row(r: &Row) -> String {
    let mut out = if r.class.is_empty() {
        "<tr>".to_string()
    } else {
        format!("<tr class=\"{}\">", r.class)
    };
    for (i, cell) in r.cells.iter().enumerate() {
        let tag = if i == 0 { "th scope=\"row\"" } else { "td" };
        let close = if i == 0 { "th" } else { "td" };
        let _ = write!(out, "<{tag}>{}</{close}>", esc(cell));
    }
    out + "</tr>\n"
}

/// Label–value pairs as a two-column table.
pub(crate) fn key_values(pairs: &[(&str, String)]) -> String {
    let rows: Vec<Row> = pairs
        .iter()
        .map(|(k, v)| row(vec![(*k).to_string(), v.clone()]))
        .collect();
    table("kv", &[], &rows)
}

/// `<section>` with a heading; `body` is HTML built by this module.
pub(crate) fn section(id: &str, title: &str, body: &str) -> String {
    format!(
        "<section id=\"{id}\">\n<h2>{}</h2>\n{body}</section>\n",
        esc(title)
    )
}

/// Every chart as a figure with its SVG inline, or the note saying why it is empty.
pub(crate) fn figures(charts: &[Chart]) -> String {
    let mut out = String::from("<div class=\"charts\">\n");
    for c in charts {
        let name = &c.name;
        match &c.svg {
            Ok(drawn) => {
                let labelled = format!("<svg role=\"img\" aria-label=\"{}\" ", esc(&c.title));
                let wide = drawn.wide.replacen("<svg ", &labelled, 1);
                let compact = drawn.compact.replacen("<svg ", &labelled, 1);
                let _ = writeln!(
                    out,
                    "<figure class=\"chart\" id=\"chart-{name}\" data-chart=\"{name}\">\n<div class=\"wide\">\n{wide}</div>\n<div class=\"compact\">\n{compact}</div>\n</figure>"
                );
            }
            Err(note) => {
                let _ = writeln!(
                    out,
                    "<figure class=\"chart empty\" id=\"chart-{name}\" data-chart=\"{name}\"><figcaption>{}</figcaption><p>{}</p></figure>",
                    esc(&c.title),
                    esc(note)
                );
            }
        }
    }
    out + "</div>\n"
}

/// The whole document: `body` is HTML built by this module.
pub(crate) fn document(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
<meta name=\"generator\" content=\"loadbench\">\n\
<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        esc(title)
    )
}

/// The per-request table of a mix; empty without one.
pub(crate) fn endpoints_table(r: &RunResult) -> String {
    let endpoints = endpoints::of(r);
    if endpoints.is_empty() {
        return String::new();
    }
    let head = endpoints::HEAD.map(String::from);
    let rows: Vec<Row> = endpoints::rows(r)
        .into_iter()
        .zip(endpoints)
        .map(|(cells, e)| {
            let bad = e.errors.total() > 0 || e.status.non_success() > 0;
            Row {
                class: if bad { "bad" } else { "" },
                cells,
            }
        })
        .collect();
    table("endpoints", &head, &rows)
}

/// The page's last line: which loadbench made it, and that it loads nothing.
pub(crate) fn footer(version: &str) -> String {
    format!(
        "<footer>Generated by loadbench {}. Charts are SVG drawn by loadbench; this page loads nothing from the network.</footer>\n",
        esc(version)
    )
}

/// Nothing may be fetched or run; the stylesheet is inline.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const CSS: &str = r#":root { color-scheme: light; --fg: #1d2127; --muted: #5b6470; --line: #dde1e6;
  --soft: #f4f6f8; --red: #b42318; --red-bg: #fef3f2; --amber: #b54708; --amber-bg: #fffaeb;
  --green: #067647; --green-bg: #ecfdf3; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 20px 32px; }
h1 { font-size: 1.5rem; margin: 0.3em 0 0.1em; }
h2 { font-size: 1.15rem; margin: 1.8em 0 0.5em; padding-bottom: 0.2em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1.2em 0 0.3em; }
h4 { font-size: 0.95rem; margin: 1em 0 0.2em; }
ul.relative { margin: 0.3em 0 1em; padding-left: 1.2em; }
table.bench :is(th, td):nth-child(2), table.bench :is(th, td):nth-last-child(-n+3) { text-align: left; }
/* The bench summary has ~18 columns: headers wrap and cells pack so that errors, CPU, memory and
   the verdict show without a horizontal scroll at laptop width. */
table.bench { font-size: 0.8rem; }
table.bench :is(th, td) { padding: 0.3em 0.25em; }
table.bench thead th { white-space: normal; vertical-align: bottom; }
table.bench td:is(:nth-child(5), :nth-last-child(-n+3)) { white-space: normal; }
/* The verdict may name starved connections and their cause: it wraps in a column of its own. */
table.bench td:nth-last-child(3) { min-width: 11em; }
ul.why-summary { margin: 0.3em 0 0.6em; padding-left: 1.2em; }
details.why-rounds > summary { cursor: pointer; color: var(--muted); }
p { margin: 0.3em 0; }
code, .mono { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 0.92em; }
.target { font-size: 1.05rem; word-break: break-all; }
.muted { color: var(--muted); }
.alerts { list-style: none; padding: 0; margin: 1em 0; }
.alert { border-left: 4px solid; border-radius: 4px; padding: 0.5em 0.8em; margin: 0.4em 0; }
.alert.error { border-color: var(--red); background: var(--red-bg); }
.alert.warn { border-color: var(--amber); background: var(--amber-bg); }
.alert.note { border-color: #98a2b3; background: var(--soft); }
.conclusion { font-size: 1.05rem; border-radius: 6px; padding: 0.6em 0.9em; margin: 1em 0;
  background: var(--green-bg); border-left: 4px solid var(--green); }
.conclusion.none { background: var(--red-bg); border-color: var(--red); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 340px), 1fr)); gap: 0 28px; }
.table-wrap { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.4em 0 0.8em; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 0.3em 0.6em; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: var(--soft); font-weight: 600; }
tbody th { font-weight: 500; }
/* Labels wrap at spaces and values keep a readable width, so that on a phone a long label
   ("Completed per connection (min / median / max)") never squeezes its value to a character
   per line; a long URL still breaks anywhere. */
table.kv th { width: 40%; color: var(--muted); font-weight: 500; white-space: normal; }
table.kv td { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 9em; }
tr.bad td { color: var(--red); font-weight: 600; }
tr.fail td, tr.fail th { background: var(--red-bg); }
tr.fail td:last-child { color: var(--red); }
tr.pass td:last-child { color: var(--green); font-weight: 600; }
tr.interrupted td:last-child { color: var(--amber); }
table.steps :is(th, td):nth-child(2), table.steps :is(th, td):last-child { text-align: left; }
table.steps td:last-child { white-space: normal; min-width: 18em; }
.charts { display: grid; gap: 18px; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 6px; background: #fff; }
figure.chart svg { display: block; width: 100%; height: auto; }
figure.chart.empty { padding: 0.8em 1em; color: var(--muted); }
figure.chart.empty figcaption { font-weight: 600; color: var(--fg); }
footer { margin-top: 2.5em; color: var(--muted); font-size: 0.85rem; }
@media (min-width: 1000px) { figure.chart svg { max-width: 960px; margin: 0 auto; } }
@media (min-width: 1200px) { main { max-width: 1260px; } }
figure.chart .compact { display: none; }
@media (max-width: 600px) {
  body { font-size: 14px; }
  main { padding: 10px 12px 24px; }
  h1 { font-size: 1.3rem; }
  figure.chart { padding: 2px; }
  figure.chart .wide { display: none; }
  figure.chart .compact { display: block; }
}
@media print {
  figure.chart .wide { display: block; }
  figure.chart .compact { display: none; }
  figure.chart, table { break-inside: avoid; }
  .table-wrap { overflow: visible; }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<script>alert("x&y")</script> it's"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt; it&#39;s"
        );
    }

    #[test]
    fn alerts_put_errors_first() {
        let html = alerts(&[alert(Level::Note, "n"), alert(Level::Error, "e")]);
        assert!(html.find("alert error").unwrap() < html.find("alert note").unwrap());
        assert_eq!(alerts(&[]), "");
    }

    #[test]
    fn table_cells_are_escaped() {
        let html = table(
            "t",
            &["<h>".into()],
            &[row(vec!["a&b".into(), "<i>".into()])],
        );
        assert!(html.contains("<th scope=\"col\">&lt;h&gt;</th>"), "{html}");
        assert!(
            html.contains("<th scope=\"row\">a&amp;b</th><td>&lt;i&gt;</td>"),
            "{html}"
        );
    }
}
