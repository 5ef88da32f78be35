//! Wording shared by the reports of several kinds or formats, so a run's shape, a schedule or a
//! host reads the same in the text, the Markdown and the HTML: counted nouns, the open model's
//! schedule and pacing, the document length, the host's facts. Plain text: each format escapes
//! it on its own. The findings' wording is [`crate::why`]'s.

use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{BodySizes, H2Stats, HostInfo, RateSegment, RunResult};

/// Open model: the send window and the pool, as the run had them: `send window 1.00ms,
/// initial pool 40 connections, at most 64 connects at once, 52 connects in all, 47 in the
/// first second`. `None` for the closed model and for files written before these were
/// recorded.
pub(crate) fn pacing_text(r: &RunResult) -> Option<String> {
    let mut parts = Vec::new();
    match r.config.send_window_us {
        Some(0) => parts.push("send window 0 (a wake-up per request)".to_string()),
        Some(us) => parts.push(format!("send window {}", units::duration_us(us as f64))),
        None => {}
    }
    let pool = &r.stats.pool;
    if !pool.is_empty() {
        parts.push(format!(
            "initial pool {} {}, at most {} connects at once",
            pool.initial,
            plural(pool.initial, "connection"),
            pool.connect_limit
        ));
        if pool.first_second > 0 {
            parts.push(format!(
                "{} {} in all, {} in the first second",
                pool.connects,
                plural(pool.connects, "connect"),
                pool.first_second
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// [`schedule_text`] of a run: a flow's schedule starts iterations (`100 iterations/s for
/// 10s`).
pub(crate) fn run_schedule_text(
    r: &loadbench_model::RunResult,
    segments: &[RateSegment],
) -> String {
    let text = schedule_text(segments);
    if r.stats.flow.is_some() {
        text.replace(" req/s", " iterations/s")
    } else {
        text
    }
}

/// `1000 req/s`, `1000→5000 req/s over 30s, then …`.
pub(crate) fn schedule_text(segments: &[RateSegment]) -> String {
    let parts: Vec<String> = segments
        .iter()
        .map(|s| {
            let d = units::duration_ms_short(s.duration_ms);
            if s.from_rate == s.to_rate {
                format!("{} req/s for {d}", units::rate_short(s.from_rate))
            } else {
                let (a, b) = (units::rate_short(s.from_rate), units::rate_short(s.to_rate));
                format!("{a}→{b} req/s over {d}")
            }
        })
        .collect();
    parts.join(", then ")
}

/// `thread` or `threads`: the word for `n` of it.
/// The label of the count of failed answers (`Summary::non_success_responses`): a gRPC run's
/// also holds the calls answered with a `grpc-status` other than `OK`.
pub(crate) fn failed_answers_label(s: &loadbench_model::Stats) -> &'static str {
    if s.grpc.is_empty() {
        "Non-2xx/3xx responses"
    } else {
        "Non-2xx/3xx or non-OK calls"
    }
}

pub(crate) fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// ab's "Document Length" / hey's "Size/request": the mean body, and its range if it varied.
pub(crate) fn document_length(b: &BodySizes) -> String {
    let Some(mean) = b.mean() else {
        return MISSING.to_string();
    };
    let mean = format!("{} bytes", units::rate_short(mean));
    if b.varied() {
        format!("{mean} mean (varied {}–{})", b.min, b.max)
    } else {
        mean
    }
}

/// `--http2`: the GOAWAY frames the server sent and what they cost, `None` when it sent none:
/// Open model: the generator's own delay in sending, as `p50 40 µs, p99 180 µs, max 1.2 ms`
/// (from when a request was due and had a free connection to when it left: the send
/// window's batching and the worker's own work; taken out of the latency). `None` for the
/// closed model and for files saved before it was recorded.
pub(crate) fn generator_delay_text(s: &loadbench_model::Stats) -> Option<String> {
    delay_text(&s.generator_delay.hist)
}

/// find-max: the generator delay over every step (see [`generator_delay_text`]).
pub(crate) fn find_max_generator_delay(r: &loadbench_model::FindMaxResult) -> Option<String> {
    let mut all = loadbench_model::Histo::new();
    for step in &r.steps {
        all.merge(&step.run.stats.generator_delay.hist);
    }
    delay_text(&all)
}

fn delay_text(h: &loadbench_model::Histo) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    let at = |ns: u64| units::duration_ns(ns as f64);
    Some(format!(
        "p50 {}, p99 {}, max {}",
        at(h.percentile_ns(50.0)),
        at(h.percentile_ns(99.0)),
        at(h.max_ns())
    ))
}

/// `the server sent GOAWAY 12 times (each ends its connection: no new streams on it, which is
/// re-opened); 34 requests above its last stream id, never processed, sent again on a new
/// connection`.
pub(crate) fn goaway_text(h2: &H2Stats) -> Option<String> {
    if h2.goaways == 0 {
        return None;
    }
    let times = if h2.goaways == 1 { "once" } else { "times" };
    let count = if h2.goaways == 1 {
        String::new()
    } else {
        format!("{} ", h2.goaways)
    };
    let resent = match h2.goaway_retries {
        0 => "no request had to be sent again".to_string(),
        n => format!(
            "{} above its last stream id, never processed, sent again on a new connection",
            counted(n, "request")
        ),
    };
    Some(format!(
        "the server sent GOAWAY {count}{times} (each ends its connection: no new streams on it, which is re-opened); {resent}"
    ))
}

/// A WebSocket run's counts in one line, as the text report's `WebSocket` row and the
/// Markdown's sentence say them: `4 upgraded, 12 pings answered; close frames by code:
/// 1000 ×3, 4000 ×1` (`none` when the server sent no close).
pub(crate) fn ws_text(ws: &loadbench_model::WsStats) -> String {
    let closes = ws.close_text().unwrap_or_else(|| "none".into());
    format!(
        "{} upgraded, {} pings answered; close frames by code: {closes}",
        ws.upgrades, ws.pings
    )
}

/// `1 thread`, `2 threads`.
pub(crate) use loadbench_model::human::counted;

/// The host as label–value pairs: name, OS, kernel, architecture, CPU, cores.
pub(crate) fn host_facts(h: &HostInfo) -> Vec<(&'static str, String)> {
    vec![
        ("Hostname", h.hostname.clone()),
        ("OS", h.os.clone()),
        ("Kernel", h.kernel.clone()),
        ("Architecture", h.arch.clone()),
        ("CPU", h.cpu_model.clone()),
        ("Cores", cores_text(h)),
    ]
}

/// `2`, or `1 usable of 2 online` when the process was confined to fewer than the machine has.
pub(crate) fn cores_text(h: &HostInfo) -> String {
    if h.host_cores > 0 && h.host_cores != h.cores {
        format!("{} usable of {} online", h.cores, h.host_cores)
    } else {
        h.cores.to_string()
    }
}
