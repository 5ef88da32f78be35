//! A bench as CSV: one flat row per round (target × load × level × round), in the order the
//! rounds ran, with plain numbers in the units the column names say, for a spreadsheet.

use crate::markup::csv::{endpoint_columns, json_name, quote};
use crate::view::endpoints;
use loadbench_model::{BenchResult, BenchRound};

const HEAD: [&str; 25] = [
    "step",
    "load",
    "model",
    "level",
    "level_value",
    "target",
    "combined",
    "round",
    "requests_per_sec",
    "latency_p50_us",
    "latency_p90_us",
    "latency_p99_us",
    "latency_p99_9_us",
    "generator_delay_p50_us",
    "generator_delay_p99_us",
    "requests",
    "errors",
    "cpu_mean_cores",
    "cpu_max_cores",
    "rss_start_bytes",
    "rss_peak_bytes",
    "rss_trough_bytes",
    "generator_cpu_mean_cores",
    "bottleneck",
    "error",
];

pub(crate) fn render(r: &BenchResult) -> String {
    let mut out = line(&HEAD.map(String::from));
    for round in &r.rounds {
        out += &line(&fields(r, round));
    }
    out += &endpoint_rows(r);
    if let Some(gates) = &r.gates {
        out += "\n";
        out += &crate::gates::csv_table(gates);
    }
    out
}

/// A request mix: after a blank line, a second table with one row per round and request
/// (`step`, `round`, `target`, then the run CSV's per-request columns); nothing without a mix.
fn endpoint_rows(r: &BenchResult) -> String {
    let percentiles = [50.0, 90.0, 99.0, 99.9];
    let mut out = String::new();
    for round in &r.rounds {
        let Some(run) = &round.result else { continue };
        for e in endpoints::of(run) {
            let mut cols = vec![
                ("step".to_string(), round.step.to_string()),
                ("round".to_string(), round.round.to_string()),
                ("target".to_string(), round.target.clone()),
            ];
            cols.extend(endpoint_columns(run, e, &percentiles));
            let (head, row): (Vec<String>, Vec<String>) = cols.into_iter().unzip();
            if out.is_empty() {
                out = format!("\n{}", line(&head));
            }
            out += &line(&row);
        }
    }
    out
}

fn line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    quoted.join(",") + "\n"
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn fields(r: &BenchResult, round: &BenchRound) -> Vec<String> {
    let load = r.loads.get(round.load as usize);
    let run = round.result.as_ref();
    let hist = run.map(|x| &x.stats.latency.hist).filter(|h| !h.is_empty());
    let pct = |p: f64| opt(hist.map(|h| h.percentile_ns(p) as f64 / 1e3));
    let own = run
        .map(|x| &x.stats.generator_delay.hist)
        .filter(|h| !h.is_empty());
    let own = |p: f64| opt(own.map(|h| h.percentile_ns(p) as f64 / 1e3));
    let res = round.resources.as_ref();
    let errors = run.map(|x| x.stats.errors.total() + x.stats.failed_answers());
    vec![
        round.step.to_string(),
        opt(load.map(|l| l.name.clone())),
        opt(load.map(|l| l.model_name())),
        opt(load.map(|l| l.level_label(round.level as usize))),
        opt(load.and_then(|l| l.levels.get(round.level as usize)?.amount())),
        round.target.clone(),
        round.combined.to_string(),
        round.round.to_string(),
        opt(round.throughput().map(|v| format!("{v:.2}"))),
        pct(50.0),
        pct(90.0),
        pct(99.0),
        pct(99.9),
        own(50.0),
        own(99.0),
        opt(run.map(|x| x.stats.requests)),
        opt(errors),
        opt(res.map(|x| format!("{:.3}", x.cpu_mean_cores))),
        opt(res.map(|x| format!("{:.3}", x.cpu_max_cores))),
        opt(res.map(|x| x.rss_start_bytes)),
        opt(res.map(|x| x.rss_peak_bytes)),
        opt(res.map(|x| x.rss_trough_bytes)),
        format!("{:.3}", round.generator_cpu_mean_cores),
        json_name(round.bottleneck),
        round.error.clone().unwrap_or_default(),
    ]
}
