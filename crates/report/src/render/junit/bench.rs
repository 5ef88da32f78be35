//! A bench as JUnit XML: with gates, one test case per gate and cell (target × load × level)
//! and per ratio gate and load × level, a failure saying the measured value and the limit;
//! without gates, one case per cell that fails when the cell measured nothing. The suite's
//! output lists every cell's median req/s and errors.

use crate::markup::junit::{document, Case, Outcome, Suite};
use crate::view::bench::{cell_name, cell_row, headline};
use loadbench_model::BenchResult;

/// JUnit XML of a bench.
pub(crate) fn render(r: &BenchResult) -> String {
    let cases = match &r.gates {
        Some(gates) => crate::gates::junit_cases(gates, "loadbench.bench"),
        None => r
            .cells
            .iter()
            .map(|c| Case {
                classname: "loadbench.bench".into(),
                name: format!("{} completed", cell_name(r, c)),
                time: 0.0,
                outcome: match &c.nothing {
                    Some(why) => Outcome::Failed {
                        message: format!("measured nothing: {why}"),
                        kind: "bench",
                        detail: why.clone(),
                    },
                    None => Outcome::Passed,
                },
            })
            .collect(),
    };
    let mut out = headline(r);
    for c in &r.cells {
        let row = cell_row(r, c);
        out += &format!(
            "\n{}: median {} req/s over {} rounds, errors {}",
            cell_name(r, c),
            row.rps,
            row.rounds,
            row.errors
        );
    }
    document(&Suite {
        name: format!("loadbench bench {}", r.scenario.name),
        started_at: r.started_at.clone(),
        time: 0.0,
        hostname: r.host.hostname.clone(),
        properties: vec![
            ("scenario".to_string(), r.scenario.name.clone()),
            ("run_dir".into(), r.run_dir.clone()),
            ("interrupted".into(), r.interrupted.to_string()),
        ],
        cases,
        out,
    })
}
