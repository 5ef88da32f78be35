//! A find-max search as CSV: one row per step, in the order the steps ran, with the columns of
//! the step table (rate offered, sent and completed, p50, p99 and every other statistic the SLO names,
//! errors, verdict) as plain numbers in the units their names say, for a spreadsheet.

use crate::markup::csv::{endpoint_columns, json_name, quote};
use crate::view::endpoints;
use crate::view::find_max::slo_columns;
use loadbench_model::{FindMaxResult, FindMaxStep, SloStat};

pub(crate) fn render(r: &FindMaxResult) -> String {
    let cols = slo_columns(r);
    let mut out = line(&head(&cols));
    for step in &r.steps {
        out += &line(&fields(step, &cols));
    }
    out + &endpoint_rows(r)
}

/// A request mix: after a blank line, a second table with one row per step and request (the
/// run CSV's per-request columns after `step`); nothing without a mix.
fn endpoint_rows(r: &FindMaxResult) -> String {
    let percentiles = [50.0, 90.0, 99.0, 99.9];
    let mut out = String::new();
    for step in &r.steps {
        for e in endpoints::of(&step.run) {
            let mut cols = vec![("step".to_string(), step.step.to_string())];
            cols.extend(endpoint_columns(&step.run, e, &percentiles));
            let (head, row): (Vec<String>, Vec<String>) = cols.into_iter().unzip();
            if out.is_empty() {
                out = format!("\n{}", line(&head));
            }
            out += &line(&row);
        }
    }
    out
}

fn head(cols: &[SloStat]) -> Vec<String> {
    let mut head: Vec<String> = [
        "step",
        "phase",
        "target_per_sec",
        "sent_per_sec",
        "completed_per_sec",
    ]
    .map(String::from)
    .to_vec();
    head.extend(cols.iter().map(|c| stat_column(*c)));
    head.extend(
        [
            "error_share",
            "generator_cpu_share",
            "verdict",
            "reason",
            "detail",
        ]
        .map(String::from),
    );
    head
}

/// `latency_p99_us`, `latency_p99_9_us`, `latency_mean_us`: the names of the bench CSV.
fn stat_column(stat: SloStat) -> String {
    format!("latency_{}_us", stat.label().replace('.', "_"))
}

fn fields(step: &FindMaxStep, cols: &[SloStat]) -> Vec<String> {
    let hist = &step.run.stats.latency.hist;
    let mut row = vec![
        step.step.to_string(),
        json_name(step.phase),
        format!("{:.2}", step.target_rate),
        format!("{:.2}", step.achieved_rate),
        format!("{:.2}", step.completed_rate),
    ];
    // Empty, not 0, when no response completed: 0 would read as a measurement.
    row.extend(cols.iter().map(|c| {
        c.measure_us(hist)
            .map_or(String::new(), |us| format!("{us:.3}"))
    }));
    row.extend([
        format!("{:.6}", step.error_share),
        step.generator_cpu_share
            .map_or(String::new(), |s| format!("{s:.4}")),
        json_name(step.verdict),
        step.reason.map_or(String::new(), json_name),
        step.detail.clone(),
    ]);
    row
}

fn line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    quoted.join(",") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn one_row_per_step_with_the_step_tables_columns() {
        let r = fixtures::find_max();
        let csv = render(&r);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + r.steps.len(), "{csv}");
        assert_eq!(
            lines[0],
            "step,phase,target_per_sec,sent_per_sec,completed_per_sec,latency_p50_us,latency_p99_us,latency_p99_9_us,error_share,generator_cpu_share,verdict,reason,detail"
        );
        let widths: Vec<usize> = lines.iter().map(|l| l.split(',').count()).collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{csv}");
        assert!(lines[1].starts_with("1,exponential,100.00,"), "{csv}");
        assert!(
            lines[2].ends_with(",fail,slo,p99.9 5.00ms >= 50ms"),
            "{csv}"
        );
    }

    #[test]
    fn latency_is_empty_when_no_response_completed() {
        let mut r = fixtures::find_max();
        r.steps.truncate(1);
        r.steps[0].run.stats = Default::default();
        let csv = render(&r);
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(&row[5..8], &["", "", ""], "{csv}");
    }
}
