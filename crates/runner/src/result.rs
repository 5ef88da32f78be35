//! The run's result, built from the plan and what the engine measured: the configuration as it
//! ran (units resolved), the host, the wall-clock window, and the derived summary.

use crate::host;
use loadbench_engine::Outcome;
use loadbench_model::diagnose::{diagnose, CpuView, Inputs};
use loadbench_model::{
    KernelEvidence, ResultKind, RunConfig, RunResult, TargetEvidence, TlsSettings, SCHEMA_VERSION,
};
use loadbench_plan::{LoadShape, Plan, Schedule, Stop};
use std::net::IpAddr;

/// The result of one run of `plan`.
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
        shards: None,
        summary: None,
        stats: o.stats,
        evidence: None,
        why: Default::default(),
        gates: None,
        remote_write: None,
    };
    if let Some(v) = r.config.values.as_mut() {
        v.places = o.places;
    }
    r.finalize();
    r
}

/// Records the kernel's evidence of the run and the findings drawn from it and from the
/// generator's CPU (the target is not known to `run`: its CPU is judged by the bench).
pub(crate) fn explain(r: &mut RunResult, evidence: KernelEvidence) {
    r.evidence = Some(evidence);
    explain_with_generator(r, None);
}

/// Draws the run's findings again from its kernel evidence, its own figures and, when the
/// caller watched them (the CLI's `run`), the generator's threads: a generator thread that was
/// runnable yet off a CPU shared its core, and the run is then the generator's limit.
pub fn explain_with_generator(r: &mut RunResult, generator: Option<&TargetEvidence>) {
    let g = r.stats.generator;
    let threads = f64::from(r.config.threads.max(1));
    let host = r.evidence.as_ref().and_then(|e| e.host.as_ref());
    let cpu = (g.worker_us > 0).then(|| CpuView {
        generator_used: g.cpu_share() * threads,
        generator_cores: generator_cores(r),
        other_used: host.map_or(0.0, |h| h.other_cores),
        host_cores: host.map_or(0.0, |h| h.host_cores),
        others_known: host.is_some_and(|h| h.others_known),
        ..CpuView::default()
    });
    r.why = diagnose(&Inputs {
        kernel: r.evidence.as_ref(),
        generator,
        cpu,
        ..Inputs::of_run(r)
    });
}

/// Cores the run's generator could use: its threads, at most the host's cores.
pub fn generator_cores(r: &RunResult) -> f64 {
    f64::from(r.config.threads.max(1)).min(f64::from(r.host.cores.max(1)))
}

/// The configuration a plan runs with, as the result records it.
pub fn run_config(plan: &Plan) -> RunConfig {
    let (duration_ms, requests) = match plan.stop {
        Stop::Duration(d) => (Some(d.as_millis() as u64), None),
        Stop::Requests(n) => (None, Some(n)),
    };
    RunConfig {
        url: plan.target.url.clone(),
        address: match &plan.unix_socket {
            Some(p) => format!("unix:{}", p.display()),
            None => plan.target.addr.to_string(),
        },
        method: plan.request.method.clone(),
        headers: plan.request.headers.clone(),
        body_bytes: plan.request.body_len,
        connections: plan.connections,
        threads: plan.threads,
        send_window_us: send_window_us(plan),
        duration_ms,
        requests,
        warmup_ms: plan.warmup.as_millis() as u64,
        keepalive: plan.keepalive,
        timeout_ms: plan.timeout.as_millis() as u64,
        connect_timeout_ms: plan.connect_timeout.as_millis() as u64,
        source_addrs: address_ranges(&plan.source_addrs),
        tls: plan.tls.as_ref().map(tls_settings),
        unix_socket: plan.unix_socket.as_ref().map(|p| p.display().to_string()),
        connect_to: plan.connect_to.clone(),
        http2_streams: plan.http2,
        pipeline: plan.pipeline,
        ws_match: plan.ws_match.as_ref().map(|m| m.field.clone()),
        percentiles: plan.percentiles.clone(),
        load: plan.load.map_schedule(Schedule::rate_segments),
        values: plan.values.as_ref().map(|v| loadbench_model::ValuesRecord {
            seed: v.seed,
            data: v.spec.data.as_ref().map(|d| d.path.display().to_string()),
            rows: v.rows() as u64,
            first: v.spec.first,
            places: 0,
        }),
    }
}

/// The TLS settings as the result records them (paths, never the files' contents).
fn tls_settings(t: &loadbench_plan::TlsPlan) -> TlsSettings {
    TlsSettings {
        server_name: t.server_name.clone(),
        insecure: t.insecure,
        cacert: t.cacert.as_ref().map(|f| f.path.display().to_string()),
        client_cert: t.client.as_ref().map(|(c, _)| c.path.display().to_string()),
        // QUIC's handshakes are all full for now (no session tickets across connections).
        resumption: t.resume && !t.http3,
        quic: t.http3,
    }
}

/// Addresses as runs of consecutive ones: `127.0.0.2-127.0.0.9`, or one address alone.
fn address_ranges(addrs: &[IpAddr]) -> Vec<String> {
    let number = |ip: &IpAddr| match ip {
        IpAddr::V4(a) => u128::from(u32::from(*a)),
        IpAddr::V6(a) => u128::from(*a),
    };
    let mut runs: Vec<(IpAddr, IpAddr)> = Vec::new();
    for ip in addrs {
        match runs.last_mut() {
            Some((_, last)) if number(last).checked_add(1) == Some(number(ip)) => *last = *ip,
            _ => runs.push((*ip, *ip)),
        }
    }
    runs.iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect()
}

/// Open model: the send window the pacer used, µs; `None` for the closed model.
fn send_window_us(plan: &Plan) -> Option<u64> {
    match plan.load {
        LoadShape::Open { .. } => Some(plan.pacing.send_window.as_micros() as u64),
        LoadShape::Closed { .. } | LoadShape::FindMax { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::address_ranges;

    #[test]
    fn source_addresses_are_recorded_as_runs() {
        let ips = |l: &[&str]| l.iter().map(|a| a.parse().unwrap()).collect::<Vec<_>>();
        let runs = address_ranges(&ips(&["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.9"]));
        assert_eq!(runs, vec!["127.0.0.2-127.0.0.4", "127.0.0.9"]);
        assert_eq!(address_ranges(&ips(&["::1", "::2"])), vec!["::1-::2"]);
        assert!(address_ranges(&[]).is_empty());
    }
}
