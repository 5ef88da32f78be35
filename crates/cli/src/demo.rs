//! `loadbench demo`: the zero-setup first run. Starts the reference backend in-process on a
//! free loopback port, loads a few of its routes, prints the report of the first and a
//! comparison of all, and saves every result as JSON.

use crate::run::{execute, save_json};
use anyhow::Result;
use loadbench_model::RunResult;
use loadbench_plan::{Plan, RunSpec};
use loadbench_report::{units, Format, RenderOptions};
use loadbench_upstream::{Server, ServerConfig};
use std::path::PathBuf;
use std::process::ExitCode;

/// One load of the demo: a route of the backend and how to load it.
struct Step {
    name: &'static str,
    path: &'static str,
    connections: u32,
    duration: &'static str,
}

const STEPS: [Step; 3] = [
    Step {
        name: "plaintext",
        path: "/",
        connections: 32,
        duration: "3s",
    },
    Step {
        name: "json",
        path: "/json",
        connections: 32,
        duration: "3s",
    },
    Step {
        name: "delay-20ms",
        path: "/delay/20ms",
        connections: 50,
        duration: "2s",
    },
];

pub fn demo(quiet: bool) -> Result<ExitCode> {
    let server = Server::start(ServerConfig::ephemeral())?;
    let base = format!("http://{}", server.local_addr());
    let dir = results_dir();
    eprintln!(
        "reference backend listening on {base} (in-process); results go to {}",
        dir.display()
    );
    let stop = crate::signals::stop_flag()?;
    let mut done: Vec<(&Step, RunResult)> = Vec::new();
    for step in &STEPS {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        eprintln!(
            "\n== {}: {} connections on {}{} for {}",
            step.name, step.connections, base, step.path, step.duration
        );
        let plan = Plan::resolve(&spec(&base, step)).map_err(|e| anyhow::anyhow!(e))?;
        let result = execute(&plan, &stop, quiet)?;
        save_json(&dir.join(format!("{}.json", step.name)), &result)?;
        if done.is_empty() {
            print!(
                "{}",
                loadbench_report::render_to_string(
                    Format::Text,
                    &result,
                    &RenderOptions::default()
                )
            );
        }
        done.push((step, result));
    }
    print_comparison(&done);
    println!(
        "\nJSON results saved in {}/ (schema: docs/result-schema.md)",
        dir.display()
    );
    server.shutdown();
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

fn spec(base: &str, step: &Step) -> RunSpec {
    RunSpec {
        url: format!("{base}{}", step.path),
        connections: step.connections,
        threads: Some(1),
        duration: Some(step.duration.into()),
        warmup: Some("500ms".into()),
        ..RunSpec::default()
    }
}

fn results_dir() -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    PathBuf::from("results").join(format!("{stamp}-demo"))
}

fn print_comparison(done: &[(&Step, RunResult)]) {
    println!("\nComparison (reference backend, 1 generator thread, closed model):");
    println!(
        "  {:<12} {:>6} {:>12} {:>10} {:>10} {:>8}",
        "route", "conns", "req/s", "p50", "p99", "errors"
    );
    for (step, r) in done {
        let h = &r.stats.latency.hist;
        println!(
            "  {:<12} {:>6} {:>12} {:>10} {:>10} {:>8}",
            step.path,
            step.connections,
            units::rate(r.stats.summary().requests_per_sec),
            units::duration_ns(h.percentile_ns(50.0) as f64),
            units::duration_ns(h.percentile_ns(99.0) as f64),
            r.stats.errors.total()
        );
    }
}
