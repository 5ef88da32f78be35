//! A run's figures that several formats show beside the latency and the endpoints.

use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{GrpcStats, Histo, RunResult, Stats, WsStats, GRPC_CODES};

/// hey's "req write", "resp wait" and "resp read" rows; none for results saved before the
/// split was recorded.
pub(crate) fn request_phases(s: &Stats) -> Vec<(&'static str, &Histo)> {
    let p = &s.phases;
    if p.count() == 0 {
        return Vec::new();
    }
    vec![
        ("req write", &p.write.hist),
        ("resp wait", &p.wait.hist),
        ("resp read", &p.read.hist),
    ]
}

/// Below this a phase's time is under what a request's clock readings resolve (a response read
/// in one call records 0, kept as the histogram's 1 ns floor).
const PHASE_RESOLUTION_NS: f64 = 1_000.0;

/// One figure of the phase tables: `-` when nothing was measured, `< 1µs` below the clock's
/// useful resolution (never `1ns` for a phase that took no measurable time), else the
/// duration.
pub(crate) fn phase_duration(h: &Histo, ns: f64) -> String {
    if h.is_empty() || !ns.is_finite() {
        MISSING.to_string()
    } else if ns < PHASE_RESOLUTION_NS {
        "< 1µs".to_string()
    } else {
        units::duration_ns(ns)
    }
}

/// A phase table's row of figures: min, mean, stdev, p50, p99, max, each as
/// [`phase_duration`] says it.
pub(crate) fn phase_cells(h: &Histo) -> [String; 6] {
    [
        h.min_ns() as f64,
        h.mean_ns(),
        h.stdev_ns(),
        h.percentile_ns(50.0) as f64,
        h.percentile_ns(99.0) as f64,
        h.max_ns() as f64,
    ]
    .map(|ns| phase_duration(h, ns))
}

/// A WebSocket run's own counts (`ws://`, `wss://`), which every format shows: `None` for
/// an HTTP run. A WebSocket run whose connections never upgraded still has them (all zero).
pub(crate) fn websocket(r: &RunResult) -> Option<&WsStats> {
    let url = r.config.url.to_ascii_lowercase();
    let ws = url.starts_with("ws://") || url.starts_with("wss://");
    (ws || !r.stats.ws.is_empty()).then_some(&r.stats.ws)
}

/// `--ws-match FIELD`: how the answers were matched and the messages that were not
/// answers, in words (`answers matched by JSON field id; 12 unmatched messages (570 bytes)`);
/// `None` when each answer was simply the next message.
pub(crate) fn ws_match_text(r: &RunResult) -> Option<String> {
    let field = r.config.ws_match.as_deref()?;
    Some(r.stats.ws.match_text(field))
}

/// A gRPC run's calls by `grpc-status` (`grpc://`), which every format shows: `None` for
/// other runs. A gRPC run that got no answer still has them (no rows).
pub(crate) fn grpc(r: &RunResult) -> Option<&GrpcStats> {
    let grpc = r.config.url.to_ascii_lowercase().starts_with("grpc://");
    (grpc || !r.stats.grpc.is_empty()).then_some(&r.stats.grpc)
}

/// The calls by status, one row per status counted in the protocol's order: the code (empty
/// for `OTHER` and for the answers without a `grpc-status`), its name, how many calls.
pub(crate) fn grpc_status_rows(g: &GrpcStats) -> Vec<(String, &'static str, u64)> {
    let mut rows: Vec<(String, &'static str, u64)> = GRPC_CODES
        .iter()
        .enumerate()
        .filter_map(|(code, &name)| g.calls.get(name).map(|&n| (code.to_string(), name, n)))
        .collect();
    let other = g.count(loadbench_model::grpc::GRPC_OTHER);
    if other > 0 {
        rows.push((String::new(), loadbench_model::grpc::GRPC_OTHER, other));
    }
    if g.no_status > 0 {
        rows.push((String::new(), NO_GRPC_STATUS, g.no_status));
    }
    rows
}

/// A gRPC run's response messages: `1500 messages received, 5.00 per call, 750.00/s`; `None`
/// when none came (a run of failed calls, or one saved before they were counted).
pub(crate) fn grpc_messages_text(r: &RunResult) -> Option<String> {
    let g = grpc(r)?;
    (g.messages > 0).then(|| {
        format!(
            "{} messages received, {:.2} per call, {}/s",
            g.messages,
            g.messages_per_call(),
            units::rate(r.stats.per_sec(g.messages))
        )
    })
}

/// The name [`grpc_status_rows`] gives the answers without a `grpc-status` (judged by their
/// HTTP status alone, not failed calls).
pub(crate) const NO_GRPC_STATUS: &str = "no grpc-status";

/// The close frames the server sent, one row per code: the code, what RFC 6455 (and the
/// IANA registry) names it, and how many came.
pub(crate) fn close_code_rows(ws: &WsStats) -> Vec<(u16, &'static str, u64)> {
    ws.close_codes
        .iter()
        .map(|(&code, &n)| (code, close_code_meaning(code), n))
        .collect()
}

/// A close code's name: RFC 6455 section 7.4.1 and the IANA WebSocket close code registry;
/// 3000–3999 are libraries' and frameworks', 4000–4999 the application's own.
pub(crate) fn close_code_meaning(code: u16) -> &'static str {
    match code {
        1000 => "normal closure",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1005 => "no status code",
        1006 => "abnormal closure",
        1007 => "invalid payload data",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "mandatory extension",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        1014 => "bad gateway",
        3000..=3999 => "library or framework code",
        4000..=4999 => "application code",
        _ => "unassigned",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35 point 8: a phase read in one call (0, recorded as 1 ns) reads `< 1µs`, an
    /// empty one `-`, a measured one its duration.
    #[test]
    fn phases_below_a_microsecond_read_less_than_one_not_1ns() {
        let mut h = Histo::default();
        assert_eq!(phase_duration(&h, 0.0), "-");
        h.record_ns(0);
        assert_eq!(phase_duration(&h, h.max_ns() as f64), "< 1µs");
        assert_eq!(phase_duration(&h, h.mean_ns()), "< 1µs");
        h.record_ns(250_000);
        assert_eq!(phase_duration(&h, 250_000.0), "250.00µs");
    }
}
