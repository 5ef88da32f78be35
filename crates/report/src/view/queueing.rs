//! The queueing section of the bench reports, worked out once for every format: per load, a
//! row per target × level with throughput, mean latency and service time and Little's-law
//! concurrency in the target and in the generator, then the sentences of the analysis (the
//! worker pool, the knee, the Universal Scalability Law fit, each with its usual fix, or why
//! there is no fit). The figures are the model's (`BenchResult::queueing`), formatted here.

use crate::view::bench::load_of;
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::queueing::SweepAnalysis;
use loadbench_model::BenchResult;

/// The columns of the queueing table.
pub(crate) const HEAD: [&str; 7] = [
    "target",
    "level",
    "throughput",
    "mean latency",
    "mean service",
    "in target",
    "in generator",
];

/// What the section says first: where its concurrency figures come from.
pub(crate) const INTRO: &str = "Little's law: requests at once = throughput × mean time (service time in the target; latency from the intended send in the generator); throughput is requests sent per second in the closed model (one per answer, so not shortened by the requests in flight when a round ends, as req/s is) and answered per second in the open one; medians over rounds";

/// The analyses of one load, in the load's target order.
pub(crate) fn of_load(r: &BenchResult, li: u32) -> Vec<&SweepAnalysis> {
    let Some(load) = load_of(r, li) else {
        return Vec::new();
    };
    load.targets
        .iter()
        .filter_map(|t| r.queueing_of(li, t))
        .collect()
}

/// One row per target × level, every figure formatted.
pub(crate) fn rows(r: &BenchResult, li: u32) -> Vec<Vec<String>> {
    let label =
        |level: u32| load_of(r, li).map_or(MISSING.to_string(), |l| l.level_label(level as usize));
    of_load(r, li)
        .into_iter()
        .flat_map(|a| {
            a.levels.iter().map(move |p| {
                vec![
                    a.target.clone(),
                    label(p.level),
                    format!("{:.0}", p.requests_per_sec),
                    units::duration_us(p.mean_latency_us),
                    units::duration_us(p.mean_service_us),
                    format!("{:.1}", p.in_target),
                    format!("{:.1}", p.in_generator),
                ]
            })
        })
        .collect()
}

/// A sentence of the analysis and its usual fix, if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sentence {
    pub text: String,
    pub fix: Option<String>,
}

/// The findings of every target of the load (strongest first within a target), then what
/// was not found: no knee, no fit and why; then every level a target measured nothing at,
/// which the table leaves out (never silently).
pub(crate) fn sentences(r: &BenchResult, li: u32) -> Vec<Sentence> {
    let mut out = Vec::new();
    for a in of_load(r, li) {
        out.extend(a.findings.iter().map(|f| Sentence {
            text: f.text.clone(),
            fix: f.fix.clone(),
        }));
        out.extend(
            absent(a)
                .into_iter()
                .map(|text| Sentence { text, fix: None }),
        );
    }
    let label =
        |level: u32| load_of(r, li).map_or(MISSING.to_string(), |l| l.level_label(level as usize));
    out.extend(
        r.empty_cells()
            .filter(|(c, _)| c.load == li && !c.combined)
            .map(|(c, why)| Sentence {
                text: format!(
                    "{} at {}: left out, it measured nothing: {why}",
                    c.target,
                    label(c.level)
                ),
                fix: None,
            }),
    );
    out
}

fn absent(a: &SweepAnalysis) -> Vec<String> {
    let mut list = Vec::new();
    if a.knee.is_none() && a.pool.is_none() {
        let grew = a
            .levels
            .windows(2)
            .all(|w| w[1].requests_per_sec > w[0].requests_per_sec);
        list.push(if grew {
            format!(
                "{}: no knee: throughput grew at every level measured",
                a.target
            )
        } else {
            let (first, last) = (&a.levels[0], &a.levels[a.levels.len() - 1]);
            format!(
                "{}: no knee, yet throughput did not grow at every level ({:.0} → {:.0} req/s): the answered requests' mean latency did not climb with the levels",
                a.target, first.requests_per_sec, last.requests_per_sec
            )
        });
    }
    if let Some(note) = &a.usl_note {
        list.push(format!("{}: no scalability fit: {note}", a.target));
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use loadbench_model::queueing::sig3;

    /// Issue 35 point 3: a target that measured nothing at a level is named, with the reason,
    /// not left out of the section silently.
    #[test]
    fn a_level_that_measured_nothing_is_named_with_its_reason() {
        let sweep = fixtures::bench_sweep();
        let last = sweep.loads[0].levels.len() as u32 - 1;
        let r = fixtures::never_answered(sweep, |x| x.level == last, 7);
        let said: Vec<String> = sentences(&r, 0).into_iter().map(|s| s.text).collect();
        let label = r.loads[0].level_label(last as usize);
        let expected = format!("backend at {label}: left out, it measured nothing: none of the 7 requests sent was answered");
        assert!(said.iter().any(|s| s.starts_with(&expected)), "{said:?}");
        assert!(
            rows(&r, 0).iter().all(|row| row[1] != label),
            "not a row of zeros"
        );
    }

    #[test]
    fn rows_show_the_models_figures_for_every_level() {
        let r = fixtures::bench_sweep();
        let a = r.queueing_of(0, "backend").unwrap();
        let rows = rows(&r, 0);
        assert_eq!(rows.len(), a.levels.len());
        for (row, p) in rows.iter().zip(&a.levels) {
            assert_eq!(row[1], format!("c={}", p.value));
            assert_eq!(row[2], format!("{:.0}", p.requests_per_sec));
            assert_eq!(row[3], units::duration_us(p.mean_latency_us));
            assert_eq!(row[5], format!("{:.1}", p.in_target));
        }
        // 20 slots of 100 ms: 200 req/s from c=20 on, 20 requests in the target at most.
        assert_eq!(rows[2][2], "200");
        assert_eq!(
            rows[4][5], "80.0",
            "the closed model's queue is in the target"
        );
    }

    #[test]
    fn sentences_are_the_findings_then_what_is_missing() {
        let r = fixtures::bench_sweep();
        let a = r.queueing_of(0, "backend").unwrap();
        let s = sentences(&r, 0);
        assert_eq!(s.len(), 3);
        assert!(s[0].text.contains("pool of about 20 workers"), "{s:?}");
        assert!(s[1].text.contains("stopped growing at c=20 (200 req/s)"));
        let usl = a.usl.unwrap();
        assert!(s[2].text.contains(&format!("σ = {}", sig3(usl.sigma))));
        assert!(s[2].text.contains(&format!("R² {:.3}", usl.r_squared)));
        assert!(s.iter().all(|x| x.fix.is_some()));
    }
}
