//! A find-max search as JUnit XML: one test case, "a rate held under the SLO", that passes
//! when the search found a maximum sustainable rate and fails with why none held; the
//! conclusion goes into the suite's output.

use crate::markup::junit::{document, Case, Outcome, Suite};
use crate::view::find_max::conclusion;
use loadbench_model::human as units;
use loadbench_model::FindMaxResult;

/// JUnit XML of a search.
pub(crate) fn render(r: &FindMaxResult) -> String {
    let said = conclusion(r);
    let time: f64 = r.steps.iter().map(|s| s.run.stats.elapsed_secs()).sum();
    let outcome = match r.max_rate {
        Some(_) => Outcome::Passed,
        None => Outcome::Failed {
            message: said.lines().last().unwrap_or_default().to_string(),
            kind: "find-max",
            detail: said.clone(),
        },
    };
    let mut properties = vec![
        ("url".to_string(), r.url.clone()),
        ("slo".into(), r.slo.text.clone()),
        ("steps".into(), r.steps.len().to_string()),
    ];
    if let Some(max) = r.max_rate {
        properties.push(("max_rate".into(), units::rate_short(max)));
    }
    document(&Suite {
        name: format!("loadbench find-max {}", r.url),
        started_at: r.started_at.clone(),
        time,
        hostname: r.host.hostname.clone(),
        properties,
        cases: vec![Case {
            classname: "loadbench.find_max".into(),
            name: format!("a rate held under the SLO {}", r.slo.text),
            time,
            outcome,
        }],
        out: said,
    })
}
