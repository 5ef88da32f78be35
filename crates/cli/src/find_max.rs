//! `loadbench find-max`: the flags as a typed search ([`FindMaxSpec`]), the search run by the
//! runner library (steps, verdicts, recovery waits, saving after every step), the result
//! printed. Exit 0 when a rate held, 1 when none did, 130 when interrupted.

use crate::args::FindMaxArgs;
use crate::UserError;
use anyhow::Result;
use loadbench_model::FindMaxResult;
use loadbench_runner::find_max::{self, FindMaxError, FindMaxSpec};
use std::process::ExitCode;

pub(crate) fn find_max(args: FindMaxArgs) -> Result<ExitCode> {
    crate::run::one_malloc_arena();
    let spec = spec(&args)?;
    crate::output::check_writable("--save", args.save.as_deref())?;
    let opts = Default::default();
    let (served, shown) = args.out.start("find-max", &opts, &Default::default())?;
    let recorder = args.out.history.recorder(None)?;
    let mut result = crate::progress::controlled_as(shown, |ctl| find_max::search(&spec, ctl))?
        .map_err(search_error)?;
    // The pushes are over (the observer ended them with the search): their counts go in the
    // result.
    result.remote_write = served.remote_write();
    // The search saved after every step; the final write is checked here, with a fallback.
    let mut in_place = true;
    if let Some(path) = &args.save {
        let json = serde_json::to_string_pretty(&result).unwrap_or_default();
        in_place = crate::run::save_json(path, "find-max", &json, true);
    }
    let code = exit_code(&result);
    let saved = loadbench_model::SavedResult::from(result);
    crate::deliver::deliver(&saved, &args.out, &opts, served.web(), false)?;
    crate::history_cmd::record(recorder, &saved, args.out.quiet)?;
    Ok(crate::live::web::conclude(&served, in_place, code))
}

/// The flags as a search; `--slo` is required.
fn spec(a: &FindMaxArgs) -> Result<FindMaxSpec, UserError> {
    let slo = a.slo.clone().ok_or_else(|| {
        UserError("--slo is required: give conditions such as --slo 'p99<50ms'".into())
    })?;
    if a.request.values.stops_at_end() {
        return Err(UserError(
            "--data-end stop runs each row once, but find-max runs many steps: give --data-end wrap".into(),
        ));
    }
    let base = loadbench_plan::LoadSpec {
        threads: a.threads,
        warmup: a.warmup,
        ..crate::run::request_spec(a.url.as_deref(), &a.request)?
    };
    let spec = FindMaxSpec {
        max_error_share: a.max_errors,
        start_rate: a.start_rate,
        max_rate: a.max_rate,
        precision: a.precision,
        max_steps: a.max_steps,
        step_duration: a.step_duration,
        max_connections: a.max_connections,
        recovery_timeout: a.recovery_timeout,
        save: a.save.clone(),
        ..FindMaxSpec::new(base, slo)
    };
    spec.check().map_err(|e| UserError(flag_names(&e)))?;
    Ok(spec)
}

/// The library names values in words; the command line says which flag to change.
fn flag_names(problem: &str) -> String {
    problem
        .replace("the start rate", "--start-rate")
        .replace("the max rate", "--max-rate")
        .replace("max steps 0", "--max-steps 0")
        .replace("a precision of 0", "--precision 0")
        .replace("the step duration", "--step-duration")
}

fn search_error(e: FindMaxError) -> anyhow::Error {
    if e.is_user_error() {
        UserError(e.to_string()).into()
    } else {
        anyhow::anyhow!(e)
    }
}

/// 0: a maximum was found; 1: no rate held; 130: interrupted.
fn exit_code(r: &FindMaxResult) -> ExitCode {
    if r.interrupted {
        ExitCode::from(130)
    } else if r.max_rate.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
