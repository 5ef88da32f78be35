//! `loadbench run`: resolve the plan, check the target, run the engine with live progress and
//! Ctrl-C handling, then print and save the result. The exit code is decided at the end.

use crate::args::{RequestArgs, RunArgs};
use crate::load_flags::{closed_stop, open_schedule, OpenFlags};
use crate::UserError;
use anyhow::Result;
use loadbench_model::RunResult;
use loadbench_plan::{
    Body, EndpointSpec, LoadShape, LoadSpec, OpenPacing, RequestSpec, TransportSpec,
};
use loadbench_report::{Format, RenderOptions};
use loadbench_runner::RunError;
use std::process::ExitCode;

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    one_malloc_arena();
    let spec = spec(&args)?;
    let gates = run_gates(&args)?;
    let shard = crate::dist::shard_spec(&args.dist, &crate::dist::process_env)?;
    let shard_file = match (&args.dist.results_dir, &shard) {
        (Some(dir), Some(sh)) => Some(crate::dist::results_path(dir, sh)),
        _ => None,
    };
    crate::output::check_writable("--save", args.save.as_deref())?;
    crate::output::check_writable("--hlog", args.hlog.as_deref())?;
    crate::output::check_writable("--results-dir", shard_file.as_deref())?;
    let results_url = crate::dist::results_url(&args.dist)?;
    let opts = RenderOptions {
        percentiles: spec.percentiles.clone(),
        color: false,
    };
    let id = crate::deliver::PushId {
        run_id: shard.as_ref().map(|sh| sh.run_id.clone()),
        shard: shard.as_ref().map(|sh| sh.shard.to_string()),
    };
    let (served, shown) = args.out.start("run", &opts, &id)?;
    let recorder = args.out.history.recorder(None)?;
    let quiet = args.out.quiet;
    // The generator's own threads over the run: one runnable but off a CPU shared its core.
    let generator = loadbench_harness::generator::GeneratorWatch::start();
    let mut result = crate::progress::controlled_as(shown, |ctl| match &shard {
        Some(sh) => loadbench_runner::run_shard(&spec, sh, ctl).map_err(shard_error),
        None => loadbench_runner::run(&spec, ctl).map_err(run_error),
    })??;
    // The pushes are over (the observer ended them with the loads): their counts go in the
    // result.
    result.remote_write = served.remote_write();
    let threads = generator.finish(loadbench_runner::generator_cores(&result));
    loadbench_runner::explain_with_generator(&mut result, Some(&threads));
    result.gates = gates.map(|g| g.judge(&result.stats, args.gates.slo_allow_unjudged));
    // Files first: a stdout that fails (a closed pipe, a full disk) must not lose the run.
    let mut in_place = true;
    let json = || loadbench_report::render_to_string(Format::Json, &result, &Default::default());
    if let Some(path) = &args.save {
        in_place = save_json(path, "run", &json(), quiet);
    }
    for path in shard_file
        .iter()
        .filter(|p| Some(p.as_path()) != args.save.as_deref())
    {
        let saved = save_json(path, "shard", &json(), true);
        if saved && !quiet {
            eprintln!("shard result saved to {}", path.display());
        }
        in_place &= saved;
    }
    if let (Some(url), Some(sh)) = (&results_url, &shard) {
        in_place &= crate::dist::upload(url, sh, &json(), quiet);
    }
    if let Some(path) = &args.hlog {
        crate::dist::write_hlog(path, &result)?;
    }
    // Moved, not cloned: at 5,000 connections the result's histograms are about 1 MiB, which
    // a copy added to the run's peak memory.
    let saved = loadbench_model::SavedResult::from(result);
    crate::deliver::deliver(&saved, &args.out, &opts, served.web(), !quiet)?;
    crate::history_cmd::record(recorder, &saved, quiet)?;
    // The exit code after the report: it prints the error line that ends the output.
    let result = saved.as_run().expect("saved from a run");
    let code = exit_code(result);
    Ok(crate::live::web::conclude(&served, in_place, code))
}

/// `run`'s `--slo` gates; a ratio between bench targets is refused (exit 2).
/// glibc gives each thread that allocates its own arena (a heap of its own, kept after the
/// thread frees into it): with the workers' start-up allocations and the end's merge in
/// different arenas, a run held about 0.5 MiB more per worker (docs/performance.md,
/// "Memory"). The workers never allocate per request, so one arena costs no contention on the
/// hot path. Only the load generator asks for it; `serve` keeps glibc's default.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn one_malloc_arena() {
    // SAFETY: mallopt only sets a malloc parameter; called before the workers start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn one_malloc_arena() {}

fn run_gates(args: &RunArgs) -> Result<Option<loadbench_model::Gates>, UserError> {
    let gates = args.gates.gates();
    if let Some(ratio) = gates.iter().flat_map(|g| &g.gates).find(|g| g.is_ratio()) {
        return Err(UserError(format!(
            "--slo '{}' compares two bench targets: use it with loadbench bench, or give run a gate such as 'p99<50ms', 'errors<1%' or 'rps>1000'",
            ratio.text
        )));
    }
    Ok(gates)
}

/// A load that could not start: the user's mistake (exit 2) or not (exit 1).
pub(crate) fn run_error(e: RunError) -> anyhow::Error {
    if e.is_user_error() {
        UserError(e.to_string()).into()
    } else {
        anyhow::anyhow!(e)
    }
}

/// A shard that could not start: the user's mistake (exit 2) or not (exit 1).
fn shard_error(e: loadbench_runner::ShardRunError) -> anyhow::Error {
    if e.is_user_error() {
        UserError(e.to_string()).into()
    } else {
        anyhow::anyhow!(e)
    }
}

/// Saves a result (of `kind`: run, find-max) as `json` to `path`; when that fails, to a
/// fallback file, with one line on stderr naming both. Returns whether it went to `path`.
pub(crate) fn save_json(path: &std::path::Path, kind: &str, json: &str, quiet: bool) -> bool {
    match loadbench_runner::save::write_or_fallback(path, kind, json.as_bytes()) {
        Ok(()) => {
            if !quiet {
                eprintln!("result saved to {}", path.display());
            }
            true
        }
        Err(fallback) => {
            eprintln!("error: {fallback}");
            false
        }
    }
}

/// The request and connection options shared with `find-max`, on the closed model's defaults;
/// with `-u` or `--requests-file`, a request mix.
pub(crate) fn request_spec(url: Option<&str>, r: &RequestArgs) -> Result<LoadSpec, UserError> {
    if let Some(spec) = crate::grpc::request_spec(url, r)? {
        return Ok(spec);
    }
    let body = match (&r.body, &r.body_file) {
        (Some(b), _) => Body::Bytes(b.clone().into_bytes()),
        (None, Some(p)) => Body::File(p.clone()),
        (None, None) => Body::None,
    };
    let request = RequestSpec {
        method: r.method.clone(),
        headers: r.headers.clone(),
        body,
    };
    let imported = crate::imports::read(url, r, &request)?;
    let transport = imported.transport(transport_spec(&r.transport));
    let mix = mix(url, r, &request, imported.endpoints)?;
    let url = match (url, mix.first()) {
        (Some(u), _) => u.to_string(),
        (None, Some(e)) => e.url.clone(),
        (None, None) => {
            return Err(UserError(
                "no URL to load: give one (loadbench run http://127.0.0.1:8080/), or a mix with -u, --requests-file, --curl, --har or --targets".into(),
            ))
        }
    };
    let flow = match &r.flow {
        Some(path) => Some(read_flow(path)?),
        None => None,
    };
    Ok(LoadSpec {
        request,
        mix,
        flow,
        ..connection_spec(&url, r, transport)
    })
}

/// The connection options of `r` on the closed model's defaults, for a load of `url`.
pub(crate) fn connection_spec(url: &str, r: &RequestArgs, transport: TransportSpec) -> LoadSpec {
    LoadSpec {
        keepalive: !r.no_keepalive,
        timeout: r.timeout,
        connect_timeout: r.connect_timeout,
        source_addrs: r.source_addrs.clone().map(|s| s.0).unwrap_or_default(),
        transport,
        values: r.values.spec(),
        ..LoadSpec::closed(url, 50, std::time::Duration::from_secs(10))
    }
}

/// A `--flow` file, typed; a mistake is one line naming the file (and the line, for TOML).
fn read_flow(path: &std::path::Path) -> Result<loadbench_plan::FlowSpec, UserError> {
    let shown = path.display();
    let text = loadbench_plan::InputFile::FLOW
        .read_to_string(path)
        .map_err(|e| UserError(e.to_string()))?;
    let file: loadbench_plan::FlowFile = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start].matches('\n').count() + 1)
            .map_or(String::new(), |l| format!(" line {l}"));
        let msg = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        UserError(format!(
            "--flow {shown}{line}: {msg}; fix the file (docs/flows.md)"
        ))
    })?;
    file.typed(&format!("--flow {shown}")).map_err(UserError)
}

/// The requests of a mix, in order: the URL argument, each `-u`, each line of the requests
/// file, then the `imported` ones (`--curl`, `--har`, `--targets`). Empty without any of them
/// but the URL argument (which alone is no mix).
fn mix(
    url: Option<&str>,
    r: &RequestArgs,
    defaults: &RequestSpec,
    imported: Vec<EndpointSpec>,
) -> Result<Vec<EndpointSpec>, UserError> {
    if r.urls.is_empty() && r.requests_file.is_none() && imported.is_empty() {
        return Ok(Vec::new());
    }
    let here = std::path::Path::new("");
    let mut out: Vec<EndpointSpec> = url
        .iter()
        .map(|u| EndpointSpec {
            url: u.to_string(),
            request: defaults.clone(),
            weight: 1,
        })
        .collect();
    for u in &r.urls {
        let e = loadbench_plan::parse_request_line(u, defaults, here)
            .map_err(|e| UserError(format!("-u '{u}': {e}")))?;
        out.push(e);
    }
    if let Some(path) = &r.requests_file {
        let lines = loadbench_plan::read_requests_file(path, defaults)
            .map_err(|e| UserError(e.to_string()))?;
        out.extend(lines);
    }
    out.extend(imported);
    Ok(out)
}

/// The TLS, Unix socket and --connect-to flags.
pub(crate) fn transport_spec(t: &crate::args::TransportArgs) -> TransportSpec {
    TransportSpec {
        insecure: t.insecure,
        cacert: t.cacert.clone(),
        cert: t.cert.clone(),
        key: t.key.clone(),
        tls_resume: !t.no_tls_resume,
        unix_socket: t.unix_socket.clone(),
        connect_to: t.connect_to.clone(),
        http2: t.http2,
        http3: t.http3,
        streams: t.streams,
        pipeline: t.pipeline,
        ws_idle: t.ws_idle,
        ws_match: t.ws_match.clone(),
    }
}

/// `run`'s flags as one typed load; contradictory flags are the user's mistake.
pub(crate) fn spec(a: &RunArgs) -> Result<LoadSpec, UserError> {
    if a.request.body.is_some() && a.request.body_file.is_some() {
        return Err(UserError(
            "--body and --body-file both given: use one of them".into(),
        ));
    }
    if a.request.values.stops_at_end() && (a.duration.is_some() || a.requests.is_some()) {
        return Err(UserError(
            "--data-end stop runs each row of --data once (the rows are the request count): leave -d/-n out, or give --data-end wrap".into(),
        ));
    }
    let open = OpenFlags {
        rate: a.rate.map(|r| (r.0, r.1)),
        ramp: a.ramp,
        stages: a.stages.clone(),
        duration: a.duration,
        requests: a.requests,
        max_connections: a
            .max_connections
            .or(a.connections)
            .unwrap_or(loadbench_plan::DEFAULT_MAX_CONNECTIONS),
    };
    let (load, stop) = match open_schedule(&open)? {
        Some((schedule, stop)) => {
            let max_connections = open.max_connections;
            let load = LoadShape::Open {
                schedule,
                max_connections,
            };
            (load, stop)
        }
        None => {
            closed_only(a)?;
            let connections = a.connections.unwrap_or(DEFAULT_CONNECTIONS);
            let load = LoadShape::Closed { connections };
            (load, closed_stop(a.duration, a.requests)?)
        }
    };
    let script = match (&a.script, a.script_args.is_empty()) {
        (Some(path), _) => Some(loadbench_plan::ScriptSpec {
            path: path.clone(),
            args: a.script_args.clone(),
        }),
        (None, true) => None,
        (None, false) => {
            return Err(UserError(format!(
                "'{}' after --: the arguments after -- are for a script's init(args); give --script FILE, or leave them out",
                a.script_args.join(" ")
            )))
        }
    };
    Ok(LoadSpec {
        load,
        script,
        pacing: pacing(a),
        stop,
        threads: a.threads,
        warmup: a.warmup.unwrap_or_default(),
        percentiles: a.percentiles.0.clone(),
        ..request_spec(a.url.as_deref(), &a.request)?
    })
}

/// `-c` of the closed model when not given.
const DEFAULT_CONNECTIONS: u32 = 50;

/// The open model's pacing flags: `-c` is the initial pool, `--send-window` and
/// `--connect-limit` as given (their defaults otherwise). The closed model has none (they are
/// refused there by [`closed_only`]).
fn pacing(a: &RunArgs) -> OpenPacing {
    let d = OpenPacing::default();
    OpenPacing {
        send_window: a.send_window.unwrap_or(d.send_window),
        send_batch: a.send_batch.unwrap_or(d.send_batch),
        initial_connections: a.connections,
        connect_limit: a.connect_limit.unwrap_or(d.connect_limit),
    }
}

/// The open model's pacing flags given without --rate or --stages.
fn closed_only(a: &RunArgs) -> Result<(), UserError> {
    let given = [
        ("--send-window", a.send_window.is_some()),
        ("--send-batch", a.send_batch.is_some()),
        ("--connect-limit", a.connect_limit.is_some()),
    ];
    match given.iter().find(|(_, g)| *g) {
        Some((flag, _)) => Err(UserError(format!(
            "{flag} is for the open model: add --rate (or --stages), or leave {flag} out"
        ))),
        None => Ok(()),
    }
}

/// 0 when something succeeded; 1 when every request failed or none completed (no silent
/// zero, the reason from [`loadbench_model::Stats::nothing_completed`]); 130 when interrupted;
/// 4 when a `--slo` gate failed ([`gates_code`]).
fn exit_code(r: &RunResult) -> ExitCode {
    use loadbench_model::NothingCompleted;
    match r.stats.nothing_completed() {
        Some(why @ NothingCompleted::Failed { .. }) => {
            eprintln!("error: {why}: see the errors above");
            ExitCode::from(1)
        }
        _ if r.interrupted => ExitCode::from(130),
        Some(why) => {
            eprintln!("error: {why}");
            ExitCode::from(1)
        }
        None => gates_code(r.gates.as_ref()),
    }
}

/// Exit code of a load that otherwise succeeded: 4 with one `gate failed:` line on stderr per
/// gate that failed (or could not be judged without `--slo-allow-unjudged`), else 0.
pub(crate) fn gates_code(gates: Option<&loadbench_model::GateReport>) -> ExitCode {
    let Some(gates) = gates else {
        return ExitCode::SUCCESS;
    };
    let mut failed = 0;
    for v in gates.failed() {
        eprintln!("gate failed: {}", loadbench_report::gates::verdict_line(v));
        failed += 1;
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(GATE_FAILED)
    }
}

/// The exit code when a gate failed (README "Exit codes").
pub(crate) const GATE_FAILED: u8 = 4;
