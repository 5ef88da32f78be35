//! The targets' on-CPU profiles (scenario `profile = true`) in a bench's reports: the text and
//! Markdown name each flame graph's file; the HTML shows it (inlined as a `data:` image when the
//! run folder is readable, the page's policy loading nothing else) and links the SVG itself,
//! which opens with perf's frames searchable and zoomable.

use crate::html::page::esc;
use crate::markdown::{code, escape_text};
use loadbench_model::{BenchResult, BenchTarget, TargetProfile};
use std::fmt::Write as _;
use std::path::Path;

/// The profiled targets with their profiles.
fn profiled(r: &BenchResult) -> impl Iterator<Item = (&BenchTarget, &TargetProfile)> {
    r.targets
        .iter()
        .filter_map(|t| t.profile.as_ref().map(|p| (t, p)))
}

/// `412 samples at 99 Hz over 2.0 s of load closed-1 at c=64`.
fn what(r: &BenchResult, p: &TargetProfile) -> String {
    let load = r.loads.get(p.load as usize);
    let (name, level) = load.map_or((String::new(), String::new()), |l| {
        (l.name.clone(), l.level_label(p.level as usize))
    });
    format!(
        "{} samples at {} Hz over {:.1} s of load {name} at {level}",
        p.samples,
        p.frequency_hz,
        p.duration_ms as f64 / 1000.0
    )
}

/// The flame graph's path: in the run folder.
fn path(r: &BenchResult, p: &TargetProfile) -> String {
    Path::new(&r.run_dir).join(&p.svg).display().to_string()
}

/// Text lines (empty without profiles).
pub(crate) fn text_lines(r: &BenchResult) -> Vec<String> {
    let mut lines: Vec<String> = profiled(r)
        .map(|(t, p)| format!("  {}: {} ({})", t.name, path(r, p), what(r, p)))
        .collect();
    if !lines.is_empty() {
        lines.insert(0, format!("profiles (on-CPU flame graphs, {NOTE}):"));
    }
    lines
}

/// Where the samples come from, for every report.
const NOTE: &str = "perf during one extra, unmeasured run of the target's last load";

/// The Markdown section (empty without profiles).
pub(crate) fn markdown(r: &BenchResult) -> String {
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

/// The HTML section's body (empty without profiles).
pub(crate) fn html(r: &BenchResult) -> String {
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

    fn with_profile(dir: &Path) -> BenchResult {
        let mut r = fixtures::bench();
        r.run_dir = dir.display().to_string();
        r.targets[0].profile = Some(TargetProfile {
            svg: "profile-direct.svg".into(),
            folded: "profile-direct.folded".into(),
            load: 0,
            level: 0,
            duration_ms: 2000,
            frequency_hz: 99,
            samples: 412,
        });
        r
    }

    #[test]
    fn every_report_names_the_flame_graph_and_the_html_shows_it() {
        let dir = std::env::temp_dir().join(format!("lb-report-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("profile-direct.svg"),
            "<svg xmlns=\"http://www.w3.org/2000/svg\"><title>ngx_http_process # 100%</title></svg>",
        )
        .unwrap();
        let r = with_profile(&dir);
        let name = r.targets[0].name.clone();
        let file = dir.join("profile-direct.svg").display().to_string();
        let text = text_lines(&r).join("\n");
        assert!(
            text.contains(&format!(
                "  {name}: {file} (412 samples at 99 Hz over 2.0 s of load"
            )),
            "{text}"
        );
        assert!(
            markdown(&r).contains(&format!("`{file}`")),
            "{}",
            markdown(&r)
        );
        let html = html(&r);
        assert!(html.contains("<a href=\"profile-direct.svg\">"), "{html}");
        assert!(html.contains("src=\"data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22%3E%3Ctitle%3Engx_http_process %23 100%25"), "{html}");
        // Without the file (a result read elsewhere), the link and the caption remain.
        std::fs::remove_dir_all(&dir).unwrap();
        let html = super::html(&r);
        assert!(
            !html.contains("<img") && html.contains("412 samples"),
            "{html}"
        );
    }

    #[test]
    fn no_profile_no_section() {
        let r = fixtures::bench();
        assert!(text_lines(&r).is_empty() && markdown(&r).is_empty() && html(&r).is_empty());
    }
}
