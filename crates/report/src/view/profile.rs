//! The targets' on-CPU profiles (scenario `profile = true`) in a bench's reports: which
//! targets were profiled, what each profile sampled, and where its flame graph is. The text and
//! Markdown name each flame graph's file; the HTML shows it and links the SVG itself.

use loadbench_model::{BenchResult, BenchTarget, TargetProfile};
use std::path::Path;

/// The profiled targets with their profiles.
pub(crate) fn profiled(r: &BenchResult) -> impl Iterator<Item = (&BenchTarget, &TargetProfile)> {
    r.targets
        .iter()
        .filter_map(|t| t.profile.as_ref().map(|p| (t, p)))
}

/// `412 samples at 99 Hz over 2.0 s of load closed-1 at c=64`.
pub(crate) fn what(r: &BenchResult, p: &TargetProfile) -> String {
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
pub(crate) fn path(r: &BenchResult, p: &TargetProfile) -> String {
    Path::new(&r.run_dir).join(&p.svg).display().to_string()
}

/// Where the samples come from, for every report.
pub(crate) const NOTE: &str = "perf during one extra, unmeasured run of the target's last load";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::render::html::bench::profiles as html_section;
    use crate::render::markdown::bench::profiles as markdown;
    use crate::render::text::bench::profile_lines as text_lines;

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
        let html = html_section(&r);
        assert!(html.contains("<a href=\"profile-direct.svg\">"), "{html}");
        assert!(html.contains("src=\"data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22%3E%3Ctitle%3Engx_http_process %23 100%25"), "{html}");
        // Without the file (a result read elsewhere), the link and the caption remain.
        std::fs::remove_dir_all(&dir).unwrap();
        let html = html_section(&r);
        assert!(
            !html.contains("<img") && html.contains("412 samples"),
            "{html}"
        );
    }

    #[test]
    fn no_profile_no_section() {
        let r = fixtures::bench();
        assert!(
            text_lines(&r).is_empty() && markdown(&r).is_empty() && html_section(&r).is_empty()
        );
    }
}
