//! A run as JUnit XML: one test case per `--slo` gate (a failure says the measured value and
//! the limit), or without gates one case, `run completed`, that fails when the run completed
//! nothing. The headline figures go into the suite's properties and output.

use crate::markup::junit::{document, Case, Outcome, Suite};
use crate::options::{RenderOptions, Renderer};
use loadbench_model::human as units;
use loadbench_model::RunResult;
use std::io::Write;

/// JUnit XML of a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct JunitRenderer;

impl Renderer for JunitRenderer {
    fn render(
        &self,
        result: &RunResult,
        _: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        out.write_all(render(result).as_bytes())
    }
}

/// The test case name of a run without gates.
pub(crate) const COMPLETED: &str = "run completed";

/// JUnit XML of a run, as a string.
pub(crate) fn render(r: &RunResult) -> String {
    let s = &r.stats;
    let sum = s.summary();
    let time = s.elapsed_secs();
    let cases = match &r.gates {
        Some(gates) => crate::gates::junit_cases(gates, "loadbench.run"),
        None => vec![Case {
            classname: "loadbench.run".into(),
            name: COMPLETED.into(),
            time,
            outcome: match s.nothing_completed() {
                Some(why) => Outcome::Failed {
                    message: why.to_string(),
                    kind: "run",
                    detail: why.to_string(),
                },
                None => Outcome::Passed,
            },
        }],
    };
    let latency = |p: f64| {
        if s.latency.hist.is_empty() {
            units::MISSING.to_string()
        } else {
            units::duration_ns(s.latency.hist.percentile_ns(p) as f64)
        }
    };
    let properties = vec![
        ("url".to_string(), r.config.url.clone()),
        ("requests".into(), s.requests.to_string()),
        ("requests_per_sec".into(), units::rate(sum.requests_per_sec)),
        (
            "errors".into(),
            (sum.errors + sum.non_success_responses).to_string(),
        ),
        ("p50".into(), latency(50.0)),
        ("p99".into(), latency(99.0)),
        ("interrupted".into(), r.interrupted.to_string()),
    ];
    let out = format!(
        "{} {}: {} requests in {}, {} req/s, p99 {}",
        r.config.method,
        r.config.url,
        s.requests,
        units::duration_us(s.elapsed_us as f64),
        units::rate(sum.requests_per_sec),
        latency(99.0)
    );
    document(&Suite {
        name: format!("loadbench run {}", r.config.url),
        started_at: r.started_at.clone(),
        time,
        hostname: r.host.hostname.clone(),
        properties,
        cases,
        out,
    })
}
