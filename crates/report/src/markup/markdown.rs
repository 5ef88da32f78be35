//! Markdown for every Markdown report (GitHub-flavoured): tables whose cells have their `|`
//! escaped, code spans that hold any text, plain text with the inline syntax escaped, `- **k:**
//! v` lists, and the two pieces every kind's report shares (a mix's per-request table, the host
//! line). Everything that came from the user goes through [`code`] or [`escape_text`], so no
//! input can break the layout.

use crate::view::endpoints;
use crate::words::cores_text;
use loadbench_model::RunResult;

/// A request mix: one row per request; nothing for a single-request run.
pub(crate) fn endpoint_table(r: &RunResult) -> String {
    use endpoints::{HEAD, NUMERIC};
    let rows = endpoints::rows(r);
    if rows.is_empty() {
        return String::new();
    }
    let align = NUMERIC.map(|n| if n { Align::Right } else { Align::Left });
    let flow =
        endpoints::flow_line(r).map_or(String::new(), |l| format!("\n{}\n", escape_text(&l)));
    format!(
        "\n### {}\n\n{}{flow}",
        escape_text(&endpoints::title(r)),
        table(&HEAD, &align, &rows)
    )
}

pub(crate) fn host_text(h: &loadbench_model::HostInfo) -> String {
    format!(
        "{}: {} {} ({}), {}, {} cores",
        code(&h.hostname),
        escape_text(&h.os),
        escape_text(&h.kernel),
        escape_text(&h.arch),
        escape_text(&h.cpu_model),
        cores_text(h)
    )
}

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text columns: names, labels, verdicts.
    Left,
    /// Number columns, so digits line up.
    Right,
}

/// A GFM table. Cells are escaped here (`|`, line breaks); they may hold inline Markdown.
pub fn table(head: &[&str], align: &[Align], rows: &[Vec<String>]) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(head.iter().map(|h| cell(h)).collect());
    let rule: Vec<&str> = align
        .iter()
        .map(|a| match a {
            Align::Left => ":---",
            Align::Right => "---:",
        })
        .collect();
    out += &format!("|{}|\n", rule.join("|"));
    for row in rows {
        out += &line(row.iter().map(|c| cell(c)).collect());
    }
    out
}

/// A table cell: a `|` would end the cell (even inside a code span), a line break the row.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// An inline code span that holds any text: the fence is longer than any run of backticks in
/// it, and padded when the text starts or ends with one.
pub fn code(text: &str) -> String {
    let text = text.replace(['\r', '\n'], " ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Plain text with Markdown's inline syntax characters escaped, so it renders as written.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~'
        ) {
            out.push('\\');
        }
        out.push(if c == '\n' || c == '\r' { ' ' } else { c });
    }
    out
}

/// `- **Label:** value` lines.
pub(crate) fn list(items: &[(&str, String)]) -> String {
    items
        .iter()
        .map(|(k, v)| format!("- **{k}:** {v}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_pipes_and_line_breaks() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        let t = table(&["x|y"], &[Align::Left], &[vec!["1|2".into()]]);
        assert_eq!(t, "| x\\|y |\n|:---|\n| 1\\|2 |\n");
    }

    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(code("plain"), "`plain`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("two\nlines"), "`two lines`");
    }

    #[test]
    fn text_escapes_inline_syntax() {
        assert_eq!(
            escape_text("a_b *c* <d> [e]"),
            "a\\_b \\*c\\* \\<d\\> \\[e\\]"
        );
    }
}
