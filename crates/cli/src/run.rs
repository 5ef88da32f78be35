//! `loadbench run`: resolve the plan, check the target, run the engine with live progress and
//! Ctrl-C handling, then print and save the result. The exit code is decided at the end.

use crate::args::{RequestArgs, RunArgs};
use crate::progress::{Goal, Progress};
use crate::{host, save, UserError};
use anyhow::Result;
use loadbench_engine::{Engine, Outcome};
use loadbench_model::{LoadModel, RateSegment, ResultKind, RunConfig, RunResult, SCHEMA_VERSION};
use loadbench_plan::{Load, Plan, RunSpec, Stop};
use loadbench_report::{Format, RenderOptions};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let plan = Plan::resolve(&spec(&args)).map_err(|e| UserError(e.to_string()))?;
    let result = execute(&plan, &crate::signals::stop_flag()?, args.quiet)?;
    let opts = RenderOptions {
        percentiles: plan.percentiles.clone(),
        color: false,
    };
    let saved = loadbench_model::SavedResult::from(result.clone());
    crate::output::print(&saved, args.output, &opts)?;
    if let Some(path) = &args.save {
        save_json(path, &result)?;
        if !args.quiet {
            eprintln!("result saved to {}", path.display());
        }
    }
    if let Some(path) = &args.html {
        crate::output::write(path, &saved, crate::output::OutputFormat::Html, &opts)?;
        if !args.quiet {
            eprintln!("HTML report written to {}", path.display());
        }
    }
    Ok(exit_code(&result))
}

/// Checks the target, runs the plan with live progress, and builds the result.
pub fn execute(plan: &Plan, stop: &Arc<AtomicBool>, quiet: bool) -> Result<RunResult> {
    let engine = Engine::with_stop(plan.clone(), Arc::clone(stop));
    engine.preflight().map_err(|e| UserError(e.to_string()))?;
    let goal = match plan.stop {
        Stop::Duration(d) => Goal::Duration(d),
        Stop::Requests(n) => Goal::Requests(n),
    };
    let progress = Progress::start(engine.live(), goal, plan.warmup, quiet);
    let outcome = engine.run();
    progress.finish();
    Ok(build_result(plan, outcome?))
}

pub fn save_json(path: &std::path::Path, result: &RunResult) -> Result<()> {
    let json = loadbench_report::render_to_string(Format::Json, result, &RenderOptions::default());
    save::write_atomic(path, json.as_bytes())
}

/// The request and connection options shared with `find-max`, on top of the defaults.
pub fn request_spec(r: &RequestArgs) -> RunSpec {
    RunSpec {
        method: r.method.clone(),
        headers: r.headers.clone(),
        body: r.body.clone(),
        body_file: r.body_file.clone(),
        keepalive: !r.no_keepalive,
        timeout: r.timeout.clone(),
        connect_timeout: r.connect_timeout.clone(),
        ..RunSpec::default()
    }
}

fn spec(a: &RunArgs) -> RunSpec {
    RunSpec {
        url: a.url.clone(),
        connections: a.connections,
        threads: a.threads,
        duration: a.duration.clone(),
        requests: a.requests,
        warmup: a.warmup.clone(),
        percentiles: a.percentiles.clone(),
        rate: a.rate.clone(),
        ramp: a.ramp.clone(),
        stages: a.stages.clone(),
        max_connections: a.max_connections,
        ..request_spec(&a.request)
    }
}

pub fn run_config(plan: &Plan) -> RunConfig {
    let (duration_ms, requests) = match plan.stop {
        Stop::Duration(d) => (Some(d.as_millis() as u64), None),
        Stop::Requests(n) => (None, Some(n)),
    };
    RunConfig {
        url: plan.target.url.clone(),
        address: plan.target.addr.to_string(),
        method: plan.request.method.clone(),
        headers: plan.request.headers.clone(),
        body_bytes: plan.request.body_len,
        connections: plan.connections,
        threads: plan.threads,
        duration_ms,
        requests,
        warmup_ms: plan.warmup.as_millis() as u64,
        keepalive: plan.keepalive,
        timeout_ms: plan.timeout.as_millis() as u64,
        connect_timeout_ms: plan.connect_timeout.as_millis() as u64,
        percentiles: plan.percentiles.clone(),
        load: load_model(&plan.load),
    }
}

fn load_model(load: &Load) -> LoadModel {
    match load {
        Load::Closed => LoadModel::Closed,
        Load::Open {
            schedule,
            max_connections,
        } => LoadModel::Open {
            schedule: schedule
                .segments
                .iter()
                .map(|s| RateSegment {
                    duration_ms: s.duration.as_millis() as u64,
                    from_rate: s.from,
                    to_rate: s.to,
                })
                .collect(),
            max_connections: *max_connections,
        },
    }
}

pub fn build_result(plan: &Plan, o: Outcome) -> RunResult {
    let mut r = RunResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::Run,
        loadbench_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host::detect(),
        config: run_config(plan),
        started_at: humantime::format_rfc3339_millis(o.started_at).to_string(),
        ended_at: humantime::format_rfc3339_millis(o.ended_at).to_string(),
        interrupted: o.interrupted,
        summary: None,
        stats: o.stats,
    };
    r.finalize();
    r
}

/// 0 when something succeeded; 1 when every request failed; 130 when interrupted.
fn exit_code(r: &RunResult) -> ExitCode {
    let errors = r.stats.errors.total();
    if r.stats.requests == 0 && errors > 0 {
        eprintln!(
            "error: every request failed ({errors} errors, none completed): see the errors above"
        );
        return ExitCode::from(1);
    }
    if r.interrupted {
        return ExitCode::from(130);
    }
    ExitCode::SUCCESS
}
