//! The rules that turn evidence into findings: each rule reads one kind of evidence (kernel
//! counters, a target's threads or cgroup, CPU shares) and, past its threshold, says in one
//! sentence what limited the load, with its numbers, its usual fix and the figures it used.
//! docs/diagnostics.md lists every rule, what it reads and its threshold. Pure functions: the
//! runner and the harness collect the evidence, reports only render the [`Why`].

use crate::evidence::{KernelEvidence, TargetEvidence, ThreadShare};
use crate::histogram::Histo;
use crate::human as units;
use crate::queueing::Little;
use crate::resources::{Bottleneck, SATURATION_SHARE};
use crate::result::RunResult;
use crate::starved::{Starvation, StarvedCause};
use crate::why::{Finding, FindingKind, Why};
use crate::LoadShape;
use std::collections::BTreeMap;

/// A thread at or above this share of a core counts as saturated (a single-threaded target
/// on a shared 2-core host gets about 0.87 of a core when it never waits).
pub const HOT_THREAD_SHARE: f64 = 0.8;
/// A thread runnable (on a CPU or waiting for one) at least this share of the time never
/// waited for work: it is saturated even when a busy host gave it less than a core.
pub const RUNNABLE_SHARE: f64 = 0.9;
/// The other threads of a target with a hot thread used at most this many cores in total.
pub const IDLE_OTHERS_CORES: f64 = 0.25;
/// Cores a target must have left unused for one saturated thread to be named the limit.
pub const SPARE_CORES: f64 = 0.5;
/// Share of the quota periods throttled from which a cgroup's quota is named the limit.
pub const THROTTLED_SHARE: f64 = 0.1;
/// Share of the ephemeral port range in use from which ports are near exhaustion.
pub const PORTS_SHARE: f64 = 0.8;
/// Share of the fd limit open from which the limit is near.
pub const FDS_SHARE: f64 = 0.8;
/// Resets (established resets + failed attempts) from which they are reported.
pub const RESETS_MIN: u64 = 10;
/// Retransmitted segments (SYNs aside) from which they are reported.
pub const RETRANSMITS_MIN: u64 = 10;
/// Host-wide retransmits are the load's only when the window's count is at least this many
/// times the host's background over as long (and [`RETRANSMITS_MIN`] above it).
pub const RETRANSMITS_OVER_BACKGROUND: f64 = 3.0;
/// The kernel's minimum retransmission timeout (200 ms), µs.
pub const RTO_MIN_US: f64 = 200_000.0;
/// CPU used by other processes, in cores, from which the host counts as busy (and at least
/// [`BUSY_HOST_SHARE`] of the host's cores).
pub const BUSY_HOST_CORES: f64 = 0.5;
/// Share of the host's cores used by other processes from which the host counts as busy.
pub const BUSY_HOST_SHARE: f64 = 0.25;
/// A generator thread runnable but off a CPU at least this share of the time shared its core:
/// something else ran where it wanted to.
pub const SHARED_CORE_WAIT: f64 = 0.25;
/// Share of an open load's schedule sent from which the generator kept the offered rate.
pub const ON_SCHEDULE_SHARE: f64 = 0.99;
/// A request must take at least this long on average (µs) for a wait to be named as what
/// set the rate: below it, loopback, the generator and the scheduler make up the latency.
pub const WAIT_MIN_US: f64 = 5_000.0;
/// Requests in service (Little's law) must be at least this share of the connections: every
/// connection always had a request waiting at the target, none held back by the generator.
pub const WAIT_IN_SERVICE_SHARE: f64 = 0.8;
/// The targets' CPU must stay under this share of their cores for a wait, not CPU, to be
/// what set the rate.
pub const WAIT_MAX_CPU_SHARE: f64 = 0.5;

/// CPU used and allowed, in cores, over the window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuView {
    /// The generator's mean CPU.
    pub generator_used: f64,
    /// Cores the generator could use.
    pub generator_cores: f64,
    /// All targets' mean CPU together (0 when the targets are not known, as in `run`).
    pub targets_used: f64,
    /// Cores the targets could use together (0: targets not judged).
    pub target_cores: f64,
    /// CPU used by processes other than the targets and the generator (0 when unknown).
    pub other_used: f64,
    /// The host's cores.
    pub host_cores: f64,
    /// Whether `other_used` leaves the targets out when `target_cores` is 0: `run` found the
    /// target's process on this host, or the target is elsewhere. Without it a busy host is
    /// judged only when the targets are known (a bench step).
    pub others_known: bool,
}

/// Everything the rules may read; absent evidence silences its rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The kernel's view of the window.
    pub kernel: Option<&'a KernelEvidence>,
    /// Each target's process tree.
    pub targets: &'a [TargetEvidence],
    /// The generator's own threads (a saturated one makes the generator the limit).
    pub generator: Option<&'a TargetEvidence>,
    /// CPU shares.
    pub cpu: Option<CpuView>,
    /// The slowest connect of the run, µs (explains SYN retries).
    pub connect_max_us: Option<f64>,
    /// The slowest request of the run, µs: retransmits (counted host-wide) are the run's only
    /// when some request waited at least [`RTO_MIN_US`].
    pub latency_max_us: Option<f64>,
    /// Requests of the load that failed (connect errors, resets, timeouts); `Some(0)` silences
    /// the host-wide reset counters, which then counted someone else's connections.
    pub failed_requests: Option<u64>,
    /// Connections the target left without an answer for at least half the run.
    pub starvation: Option<Starvation>,
    /// Little's law over the run (throughput, mean latency and service time).
    pub little: Option<Little>,
    /// The connections of a closed load (`None` for an open one): with [`Inputs::little`],
    /// whether a fixed wait set the rate.
    pub closed_connections: Option<u32>,
    /// An open load that sent at least [`ON_SCHEDULE_SHARE`] of its schedule: the generator kept
    /// the offered rate, so its threads' waits for a CPU delayed sends without limiting them,
    /// and only its CPU share (not a thread that shared its core) can make it the limit.
    pub kept_schedule: bool,
    /// The load went to a loopback address: no packet crossed a network, so host-wide
    /// retransmits were drops on this host, not a network path's.
    pub loopback: bool,
}

impl Inputs<'_> {
    /// The inputs a run's own result gives: its slowest connect and request, its failures.
    pub fn of_run(run: &RunResult) -> Inputs<'static> {
        let max_us = |h: &Histo| (!h.is_empty()).then(|| h.max_ns() as f64 / 1e3);
        Inputs {
            connect_max_us: max_us(&run.stats.connect.hist),
            latency_max_us: max_us(&run.stats.service.hist),
            failed_requests: Some(run.stats.errors.total()),
            starvation: Starvation::of(&run.stats),
            little: Little::of(run),
            closed_connections: matches!(run.config.load, LoadShape::Closed { .. })
                .then_some(run.config.connections),
            kept_schedule: run
                .stats
                .scheduled
                .is_some_and(|n| n > 0 && run.stats.sent as f64 >= ON_SCHEDULE_SHARE * n as f64),
            loopback: run
                .config
                .address
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.ip().is_loopback()),
            ..Inputs::default()
        }
    }
}

/// Runs every rule and ranks the findings; when none names a limit, one "no clear
/// bottleneck" finding says what was looked at.
pub fn diagnose(inputs: &Inputs<'_>) -> Why {
    let mut findings: Vec<Finding> = Vec::new();
    if let Some(k) = inputs.kernel {
        findings.extend(kernel_findings(k, inputs));
    }
    let overflowed = findings
        .iter()
        .any(|f| f.kind == FindingKind::AcceptQueueOverflow);
    if let Some(s) = &inputs.starvation {
        findings.extend(connection_limit(s, s.cause(overflowed)));
        let accept = findings
            .iter_mut()
            .find(|f| f.kind == FindingKind::AcceptQueueOverflow);
        if let Some(f) = accept {
            f.text += &format!(
                "; {} of {} connections were still waiting to be served at the end",
                s.starved, s.connections
            );
            f.figures.insert("starved".into(), s.starved as f64);
        }
    }
    for t in inputs.targets {
        findings.extend(target_findings(t));
    }
    if let Some(cpu) = inputs.cpu {
        let generator = inputs.generator.filter(|_| !inputs.kept_schedule);
        findings.extend(cpu_findings(&cpu, inputs.targets, generator));
    }
    let looked_at = looked_at(inputs);
    if findings.iter().all(|f| f.kind == FindingKind::BusyHost) {
        match latency_bound(inputs) {
            Some(f) => findings.push(f),
            None => findings.push(no_clear_bottleneck(&looked_at)),
        }
    }
    Why::new(findings, looked_at)
}

/// The one judgement of a step, read from its ranked findings so the verdict column, the why
/// section and the warnings never disagree: the strongest finding that names a side decides
/// (a connection limit, a quota, a hot thread, the target's CPU or its queues: the target; the
/// generator's CPU or ports: the generator); findings that name no side (a busy host, host-wide
/// counters, a fixed wait, nothing found) leave it `neither`.
pub fn judge(why: &Why) -> Bottleneck {
    why.findings
        .iter()
        .find_map(|f| side(f.kind))
        .unwrap_or(Bottleneck::Neither)
}

/// The side a finding of this kind blames, if any.
pub fn side(kind: FindingKind) -> Option<Bottleneck> {
    use FindingKind as K;
    match kind {
        K::AcceptQueueOverflow
        | K::TargetDied
        | K::CpuThrottled
        | K::MemoryPressure
        | K::HotThread
        | K::FdLimit
        | K::WorkerPool
        | K::ConnectionLimit
        | K::TargetBound => Some(Bottleneck::TargetBound),
        K::GeneratorBound | K::EphemeralPorts => Some(Bottleneck::GeneratorBound),
        K::SynRetransmits
        | K::Retransmits
        | K::Resets
        | K::Knee
        | K::Scalability
        | K::LatencyBound
        | K::BusyHost
        | K::NoClearBottleneck => None,
    }
}

/// Starved connections behind a fixed limit: the limit's size by Little's law and the fix.
/// Starvation with another cause (the accept queue, slow answers) is not a limit: the accept
/// queue's finding explains the first, the warning the second.
fn connection_limit(s: &Starvation, cause: StarvedCause) -> Option<Finding> {
    if cause != StarvedCause::ConnectionLimit {
        return None;
    }
    let text = format!(
        "the target serves about {:.0} connections at once: {} of {} got no response in {} while {} were served, and by Little's law {:.0} req/s × {} mean = {:.1} requests in service",
        s.in_service,
        s.starved,
        s.connections,
        units::duration_us(s.window_us as f64),
        s.served,
        s.rate,
        units::duration_us(s.mean_service_us),
        s.in_service
    );
    let fix = format!(
        "raise the target's connection or worker limit (threads, a pool, max connections) to the {} connections it gets, or send at most {} at once: the others only wait",
        s.connections, s.served
    );
    let figures = [
        ("pool_size", s.in_service),
        ("served", s.served as f64),
        ("starved", s.starved as f64),
        ("connections", s.connections as f64),
        ("requests_per_sec", s.rate),
        ("mean_service_us", s.mean_service_us),
    ];
    Some(finding(
        FindingKind::ConnectionLimit,
        0.9,
        text,
        Some(&fix),
        &figures,
    ))
}

/// A closed load whose every connection always had a request at the target, each waiting at
/// least [`WAIT_MIN_US`] on average, while the targets' CPU stayed under
/// [`WAIT_MAX_CPU_SHARE`] of their cores and the generator was not saturated: a fixed wait
/// set the rate. Needs the targets' CPU (a bench step): `run` cannot tell a wait from a busy
/// target.
fn latency_bound(inputs: &Inputs<'_>) -> Option<Finding> {
    let cpu = inputs.cpu?;
    let l = inputs.little?;
    let n = f64::from(inputs.closed_connections?);
    let idle = cpu.target_cores > 0.0 && cpu.targets_used < WAIT_MAX_CPU_SHARE * cpu.target_cores;
    let all_in = l.in_target() >= WAIT_IN_SERVICE_SHARE * n;
    if !idle || !all_in || l.mean_service_us < WAIT_MIN_US || inputs.starvation.is_some() {
        return None;
    }
    let text = format!(
        "the wait sets the rate: each request took {} while the targets used {:.2} of their {}, so throughput = {n:.0} connections ÷ {} = {:.0} req/s (Little's law; measured {:.0} req/s)",
        units::duration_us(l.mean_service_us),
        cpu.targets_used,
        cores_text(cpu.target_cores),
        units::duration_us(l.mean_service_us),
        n * 1e6 / l.mean_service_us,
        l.requests_per_sec
    );
    let figures = [
        ("connections", n),
        ("mean_service_us", l.mean_service_us),
        ("requests_per_sec", l.requests_per_sec),
        ("in_service", l.in_target()),
        ("targets_cores", cpu.targets_used),
        ("target_cores", cpu.target_cores),
    ];
    let fix = "more concurrency is the lever, not CPU: more connections (or a shorter wait: what the target waits on, a sleep, a downstream call)";
    Some(finding(
        FindingKind::LatencyBound,
        0.5,
        text,
        Some(fix),
        &figures,
    ))
}

/// The verdict of a step: [`Bottleneck`] from CPU shares, where a target counts as saturated
/// also when one of its threads is (a single-threaded target cannot use more cores), and the
/// generator when one of its threads is (see [`generator_hot_thread`]).
pub fn verdict(
    cpu: &CpuView,
    targets: &[TargetEvidence],
    generator: Option<&TargetEvidence>,
) -> Bottleneck {
    let generator = saturated(cpu.generator_used, cpu.generator_cores)
        || generator.and_then(generator_hot_thread).is_some();
    let hot = targets.iter().any(|t| hot_thread(t).is_some());
    let target = saturated(cpu.targets_used, cpu.target_cores) || hot;
    match (generator, target) {
        (true, false) => Bottleneck::GeneratorBound,
        (false, true) => Bottleneck::TargetBound,
        // A thread that never waits for work cannot serve more, however busy the generator:
        // the target is the limit (CPU shares alone cannot tell when both sides are full).
        (true, true) if hot => Bottleneck::TargetBound,
        _ => Bottleneck::Neither,
    }
}

fn saturated(used: f64, cores: f64) -> bool {
    cores > 0.0 && used >= SATURATION_SHARE * cores
}

/// The target's busiest thread when it is saturated (≥ [`HOT_THREAD_SHARE`] of a core, or
/// runnable ≥ [`RUNNABLE_SHARE`] of the time) while its other threads idle and the target
/// could have used at least [`SPARE_CORES`] more.
pub fn hot_thread(t: &TargetEvidence) -> Option<&ThreadShare> {
    let top = t.busiest.first()?;
    let others = (t.cpu_cores - top.cores).max(0.0);
    let saturated = thread_saturated(top);
    // With less than half a core left to use, the cores are the limit, not the one thread.
    let room = t.allowed_cores - t.cpu_cores >= SPARE_CORES;
    (saturated && others <= IDLE_OTHERS_CORES && room).then_some(top)
}

/// The generator's busiest saturated thread (≥ [`HOT_THREAD_SHARE`] of a core, or runnable
/// ≥ [`RUNNABLE_SHARE`] of the time), or one that shared its core (runnable yet off a CPU at
/// least [`SHARED_CORE_WAIT`] of the time), if any. Unlike a target's, it needs neither idle
/// siblings nor spare cores: a generator thread that never waits for the network cannot send
/// its connections' requests sooner, whatever else the host has free; and runnable time counts
/// on a shared host where that thread got less than a whole core.
pub fn generator_hot_thread(g: &TargetEvidence) -> Option<&ThreadShare> {
    g.busiest
        .iter()
        .find(|t| thread_saturated(t) || shared_core(t))
}

/// A generator thread that waited for a CPU a good part of the time.
fn shared_core(t: &ThreadShare) -> bool {
    t.runnable - t.cores >= SHARED_CORE_WAIT
}

fn thread_saturated(t: &ThreadShare) -> bool {
    t.cores >= HOT_THREAD_SHARE || t.runnable >= RUNNABLE_SHARE
}

fn looked_at(inputs: &Inputs<'_>) -> Vec<String> {
    let mut seen = Vec::new();
    if inputs.kernel.is_some() {
        seen.extend(
            [
                "listen queues",
                "SYN and segment retransmits",
                "resets",
                "ephemeral ports",
            ]
            .map(String::from),
        );
    }
    if !inputs.targets.is_empty() {
        seen.extend(["target threads", "open files"].map(String::from));
    }
    if inputs.targets.iter().any(|t| t.cgroup.is_some()) {
        seen.extend(["cgroup CPU throttling", "cgroup memory events"].map(String::from));
    }
    if let Some(cpu) = inputs.cpu {
        seen.push("generator CPU".into());
        if inputs.generator.is_some() {
            seen.push("generator threads".into());
        }
        if cpu.target_cores > 0.0 {
            seen.push("target CPU".into());
        }
        if cpu.host_cores > 0.0 && cpu.target_cores > 0.0 {
            seen.push("other processes' CPU".into());
        }
    }
    seen
}

fn no_clear_bottleneck(looked_at: &[String]) -> Finding {
    let what = if looked_at.is_empty() {
        "no evidence was collected".to_string()
    } else {
        format!("looked at {}", looked_at.join(", "))
    };
    finding(
        FindingKind::NoClearBottleneck,
        0.1,
        format!("no clear bottleneck: {what}"),
        None,
        &[],
    )
}

fn finding(
    kind: FindingKind,
    strength: f64,
    text: String,
    fix: Option<&str>,
    figures: &[(&str, f64)],
) -> Finding {
    Finding {
        kind,
        strength,
        text,
        fix: fix.map(String::from),
        figures: figures
            .iter()
            .map(|&(k, v)| (k.to_string(), v))
            .collect::<BTreeMap<_, _>>(),
    }
}

fn kernel_findings(k: &KernelEvidence, inputs: &Inputs<'_>) -> Vec<Finding> {
    let accept = accept_queue(k, inputs.connect_max_us);
    let syn = if accept.is_none() {
        syn_retransmits(k)
    } else {
        None
    };
    let resets = if inputs.failed_requests == Some(0) {
        None
    } else {
        resets(k)
    };
    // A full accept queue also makes the server resend SYN-ACKs: explained there too.
    let waited = inputs.latency_max_us.is_none_or(|us| us >= RTO_MIN_US);
    let retransmits = if waited && accept.is_none() {
        retransmits(k, inputs.loopback)
    } else {
        None
    };
    [accept, syn, retransmits, resets, ephemeral_ports(k)]
        .into_iter()
        .flatten()
        .collect()
}

/// Overflows counted host-wide are the target's when its own listener was seen full, or when
/// no listener was visible (a remote target): then weaker.
fn accept_queue(k: &KernelEvidence, connect_max_us: Option<f64>) -> Option<Finding> {
    let overflows = k.tcp.listen_overflows.max(k.tcp.listen_drops);
    let s = &k.sockets;
    let seen = s.backlog > 0;
    let full = seen && s.accept_queue_peak >= s.backlog;
    if overflows == 0 || (seen && !full) {
        return None;
    }
    let backlog = if seen {
        format!(
            " (backlog {}, queue peak {})",
            s.backlog, s.accept_queue_peak
        )
    } else {
        " (host-wide; the target's listener was not visible)".into()
    };
    let connect = connect_max_us
        .filter(|&us| us >= 900_000.0)
        .map(|us| format!("; the slowest connect took {:.1} s", us / 1e6))
        .unwrap_or_default();
    let text = format!(
        "accept queue overflowed {} times{backlog}: connects waited for SYN retries (1 s, then 3 s){connect}",
        count(overflows)
    );
    let figures = [
        ("listen_overflows", k.tcp.listen_overflows as f64),
        ("listen_drops", k.tcp.listen_drops as f64),
        ("syn_retransmits", k.tcp.syn_retransmits as f64),
        (
            "retransmitted_segments",
            k.tcp.retransmitted_segments as f64,
        ),
        ("backlog", s.backlog as f64),
        ("accept_queue_peak", s.accept_queue_peak as f64),
        ("connect_max_us", connect_max_us.unwrap_or(0.0)),
    ];
    let fix = "raise the server's listen backlog and net.core.somaxconn, or accept faster";
    let strength = if full { 0.9 } else { 0.5 };
    Some(finding(
        FindingKind::AcceptQueueOverflow,
        strength,
        text,
        Some(fix),
        &figures,
    ))
}

fn syn_retransmits(k: &KernelEvidence) -> Option<Finding> {
    let n = k.tcp.syn_retransmits;
    (n > 0).then(|| {
        finding(
            FindingKind::SynRetransmits,
            0.35,
            format!(
                "{} SYNs were retransmitted (host-wide): each such connect waited at least 1 s",
                count(n)
            ),
            Some("look for a full listen queue, SYN drops by a firewall, or packet loss"),
            &[("syn_retransmits", n as f64)],
        )
    })
}

/// Retransmitted segments (SYNs aside), host-wide: reported from [`RETRANSMITS_MIN`], and when
/// the host's background was read, only above [`RETRANSMITS_OVER_BACKGROUND`] times it (plus
/// [`RETRANSMITS_MIN`]): a busy host retransmits for others too.
fn retransmits(k: &KernelEvidence, loopback: bool) -> Option<Finding> {
    let n = k
        .tcp
        .retransmitted_segments
        .saturating_sub(k.tcp.syn_retransmits);
    let background = k.background_retransmits.unwrap_or(0.0);
    let above = n as f64 >= RETRANSMITS_OVER_BACKGROUND * background + RETRANSMITS_MIN as f64;
    (n >= RETRANSMITS_MIN && above).then(|| {
        let against = k
            .background_retransmits
            .map(|b| format!(", against {b:.0} at the host's background over as long"))
            .unwrap_or_default();
        // Over loopback nothing crosses a network: a segment is resent when this host dropped
        // it (a full socket or backlog queue), or it was another connection's.
        let (what, fix) = if loopback {
            (
                "this load ran over loopback, so this host dropped them (a full queue) or they were other connections'",
                "look at this host: receive-queue drops (nstat TcpExtTCPRcvQDrop, TcpExtTCPBacklogDrop), net.core.netdev_max_backlog, or other traffic on it",
            )
        } else {
            (
                "packets were lost or late",
                "check the network path (loss, a full queue, a rate limit)",
            )
        };
        finding(
            FindingKind::Retransmits,
            0.3,
            format!(
                "{} segments were retransmitted (host-wide{against}): {what}",
                count(n)
            ),
            Some(fix),
            &[
                ("retransmitted_segments", n as f64),
                ("background_retransmits", background),
            ],
        )
    })
}

fn resets(k: &KernelEvidence) -> Option<Finding> {
    let t = &k.tcp;
    let n = t.established_resets + t.attempt_fails;
    (n >= RESETS_MIN).then(|| {
        let text = format!(
            "{} connections were reset (established {}, failed connects {}, resets sent {}; host-wide)",
            count(n),
            count(t.established_resets),
            count(t.attempt_fails),
            count(t.resets_sent)
        );
        let figures = [
            ("established_resets", t.established_resets as f64),
            ("attempt_fails", t.attempt_fails as f64),
            ("resets_sent", t.resets_sent as f64),
        ];
        let fix = "see the target's log: a full backlog with tcp_abort_on_overflow, a crash, or a connection limit";
        finding(FindingKind::Resets, 0.3, text, Some(fix), &figures)
    })
}

fn ephemeral_ports(k: &KernelEvidence) -> Option<Finding> {
    let e = &k.ephemeral;
    let range = e.range_size();
    if range == 0 || (e.in_use_peak as f64) < PORTS_SHARE * range as f64 {
        return None;
    }
    let text = format!(
        "the generator had {} of its {} ephemeral ports in use toward the target: new connects were about to fail",
        count(e.in_use_peak),
        count(range)
    );
    let figures = [
        ("ports_in_use_peak", e.in_use_peak as f64),
        ("port_range", range as f64),
        ("time_wait", k.sockets.time_wait as f64),
    ];
    let fix = "use keep-alive, widen net.ipv4.ip_local_port_range, or spread connects over --source-addrs";
    Some(finding(
        FindingKind::EphemeralPorts,
        0.8,
        text,
        Some(fix),
        &figures,
    ))
}

fn target_findings(t: &TargetEvidence) -> Vec<Finding> {
    [
        died(t),
        throttled(t),
        memory_pressure(t),
        fd_limit(t),
        hot_thread_finding(t),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn throttled(t: &TargetEvidence) -> Option<Finding> {
    let c = t.cgroup?;
    if c.nr_periods == 0 {
        return None;
    }
    let share = c.nr_throttled as f64 / c.nr_periods as f64;
    (share >= THROTTLED_SHARE).then(|| {
        let text = format!(
            "cgroup throttled '{}' in {:.0}% of periods ({:.1} s throttled): its CPU quota, not its code, limited throughput",
            t.target,
            share * 100.0,
            c.throttled_usec as f64 / 1e6
        );
        let figures = [
            ("nr_periods", c.nr_periods as f64),
            ("nr_throttled", c.nr_throttled as f64),
            ("throttled_usec", c.throttled_usec as f64),
            ("throttled_share", share),
        ];
        let fix = "raise or remove the target's CPU quota if production gives it more";
        finding(FindingKind::CpuThrottled, (0.5 + share / 2.0).min(0.95), text, Some(fix), &figures)
    })
}

/// The target's main process ended during the step: when the kernel's OOM killer killed
/// processes of it in the window (its cgroup's counter, or the kernel log's lines naming its
/// PIDs or cgroup), that is named as the cause, with the log's time and line.
fn died(t: &TargetEvidence) -> Option<Finding> {
    let exit = t.exited?;
    let logged = t.oom_killed.len() as u64;
    let kills = t.cgroup.map_or(0, |c| c.oom_kills).max(logged);
    // The main process's kill says when it died; else the first kill of its tree.
    let kill = t
        .oom_killed
        .iter()
        .find(|k| k.main)
        .or(t.oom_killed.first());
    let when = kill.map_or_else(
        || "during the step".to_string(),
        |k| format!("{:.1} s into the step", k.at_secs),
    );
    let cause = if kills > 0 {
        let of = if t.cgroup.is_some_and(|c| c.oom_kills > 0)
            || kill.is_some_and(|k| k.line.starts_with("Memory cgroup"))
        {
            "of its cgroup at its memory limit"
        } else {
            "of it: the host ran out of memory"
        };
        let line = kill.map_or_else(String::new, |k| {
            // The line up to its first figure list: who, and its size.
            let short = k.line.split(", ").next().unwrap_or(&k.line);
            format!(" (kernel log: \"{short}\")")
        });
        format!(
            ": the kernel's OOM killer killed {} process{} {of}{line}",
            count(kills),
            if kills == 1 { "" } else { "es" }
        )
    } else {
        String::new()
    };
    let text = format!(
        "'{}' died {when} ({exit}){cause}; the figures from then on are of a target that was not running, and later steps fail until it is restarted",
        t.target
    );
    let mut figures = vec![
        ("oom_kills", kills as f64),
        ("logged_oom_kills", logged as f64),
        ("exit_code", exit.code.map_or(-1.0, f64::from)),
        ("signal", exit.signal.map_or(0.0, f64::from)),
    ];
    if let Some(k) = kill {
        figures.push(("died_at_secs", k.at_secs));
    }
    let fix = if kills > 0 {
        "raise the target's memory limit, or lower its memory use (caches, pools, per-connection buffers)"
    } else {
        "see the target's log under logs/ for why it ended"
    };
    Some(finding(
        FindingKind::TargetDied,
        1.0,
        text,
        Some(fix),
        &figures,
    ))
}

fn memory_pressure(t: &TargetEvidence) -> Option<Finding> {
    let c = t.cgroup?;
    if c.memory_high + c.memory_max + c.memory_oom + c.oom_kills == 0 {
        return None;
    }
    // Only the counters that moved: on cgroup v1 with both limits set, the limit counters
    // stay at 0 even at an OOM kill.
    let said: Vec<String> = [
        (c.memory_high, "over memory.high"),
        (c.memory_max, "at memory.max"),
        (c.memory_oom, "out-of-memory"),
        (c.oom_kills, "OOM kills"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{} {what}", count(*n)))
    .collect();
    let text = format!(
        "'{}' hit its cgroup's memory limit: {}",
        t.target,
        said.join(", ")
    );
    let figures = [
        ("memory_high", c.memory_high as f64),
        ("memory_max", c.memory_max as f64),
        ("memory_oom", c.memory_oom as f64),
        ("oom_kills", c.oom_kills as f64),
    ];
    let strength = if c.memory_oom + c.oom_kills > 0 {
        0.9
    } else {
        0.6
    };
    let fix = "raise the memory limit or lower the target's caches and pools";
    Some(finding(
        FindingKind::MemoryPressure,
        strength,
        text,
        Some(fix),
        &figures,
    ))
}

fn fd_limit(t: &TargetEvidence) -> Option<Finding> {
    let limit = t.fd_limit.filter(|&l| l > 0)?;
    ((t.open_fds as f64) >= FDS_SHARE * limit as f64).then(|| {
        let text = format!(
            "'{}' had {} of its {} file descriptors open: new connections are refused at the limit",
            t.target,
            count(t.open_fds),
            count(limit)
        );
        let figures = [("open_fds", t.open_fds as f64), ("fd_limit", limit as f64)];
        let fix = "raise the target's RLIMIT_NOFILE (ulimit -n, LimitNOFILE=)";
        finding(FindingKind::FdLimit, 0.7, text, Some(fix), &figures)
    })
}

fn hot_thread_finding(t: &TargetEvidence) -> Option<Finding> {
    let top = hot_thread(t)?;
    let runnable = if top.runnable > 0.0 {
        format!(", runnable {:.0}% of the time,", top.runnable * 100.0)
    } else {
        String::new()
    };
    let text = format!(
        "one thread ({}) of '{}' at {:.0}% of a core{runnable} while the target used {:.2} of the {} it may use: it is saturated",
        top.name,
        t.target,
        top.cores * 100.0,
        t.cpu_cores,
        cores_text(t.allowed_cores)
    );
    let figures = [
        ("thread_cores", top.cores),
        ("thread_runnable", top.runnable),
        ("target_cores", t.cpu_cores),
        ("allowed_cores", t.allowed_cores),
        ("threads", f64::from(t.threads)),
    ];
    let fix =
        "the work runs on one thread: add workers or threads (or instances) to use the other cores";
    Some(finding(
        FindingKind::HotThread,
        0.85,
        text,
        Some(fix),
        &figures,
    ))
}

fn cpu_findings(
    cpu: &CpuView,
    targets: &[TargetEvidence],
    generator: Option<&TargetEvidence>,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = busy_host(cpu).into_iter().collect();
    let hot = targets.iter().any(|t| hot_thread(t).is_some());
    match verdict(cpu, targets, generator) {
        Bottleneck::GeneratorBound => out.push(generator_bound(cpu, generator)),
        Bottleneck::TargetBound if !hot => out.push(target_bound(cpu)),
        _ => {}
    }
    out
}

fn busy_host(cpu: &CpuView) -> Option<Finding> {
    let threshold = BUSY_HOST_CORES.max(BUSY_HOST_SHARE * cpu.host_cores);
    let known = cpu.target_cores > 0.0 || cpu.others_known;
    if cpu.host_cores <= 0.0 || !known || cpu.other_used < threshold {
        return None;
    }
    let text = format!(
        "other processes used {:.2} of the host's {}: every figure is unreliable",
        cpu.other_used,
        cores_text(cpu.host_cores)
    );
    let figures = [
        ("other_cores", cpu.other_used),
        ("host_cores", cpu.host_cores),
        ("generator_cores", cpu.generator_used),
        ("targets_cores", cpu.targets_used),
    ];
    let fix = "run on a quiet host, or pin the targets and the generator away from the busy cores";
    Some(finding(
        FindingKind::BusyHost,
        0.95,
        text,
        Some(fix),
        &figures,
    ))
}

/// The generator's share of its cores and, when one of its threads was saturated, that
/// thread's CPU and runnable shares (the figures that made it the limit on a shared host).
fn generator_bound(cpu: &CpuView, generator: Option<&TargetEvidence>) -> Finding {
    let hot = generator.and_then(|g| generator_hot_thread(g).map(|t| (g, t)));
    let shared = hot.is_some_and(|(_, t)| shared_core(t));
    let thread = hot.map_or(String::new(), |(_, t)| {
        let waited = if shared {
            format!(
                " (it waited for a CPU {:.0}% of the time: something else shares its core)",
                (t.runnable - t.cores) * 100.0
            )
        } else {
            String::new()
        };
        format!(
            "; its busiest thread ({}) was on a CPU {:.0}% and runnable {:.0}% of the time{waited}",
            t.name,
            t.cores * 100.0,
            t.runnable * 100.0
        )
    });
    let text = format!(
        "the generator used {:.0}% of its {}{thread}: these numbers are loadbench's limit, not the target's",
        100.0 * cpu.generator_used / cpu.generator_cores,
        cores_text(cpu.generator_cores)
    );
    let mut figures = vec![
        ("generator_cores_used", cpu.generator_used),
        ("generator_cores", cpu.generator_cores),
        ("targets_cores", cpu.targets_used),
    ];
    if let Some((g, t)) = hot {
        figures.extend([
            ("generator_thread_cores", t.cores),
            ("generator_thread_runnable", t.runnable),
            ("generator_threads", f64::from(g.threads)),
            ("generator_thread_waiting", (t.runnable - t.cores).max(0.0)),
        ]);
    }
    let fix = if shared {
        "give the generator cores of its own (stop or move what runs beside it, pin it with taskset or a cpuset) or run it on another host"
    } else {
        "give the generator more cores (-t, its cpuset) or run it on another host"
    };
    finding(FindingKind::GeneratorBound, 0.8, text, Some(fix), &figures)
}

fn target_bound(cpu: &CpuView) -> Finding {
    let text = format!(
        "the targets used {:.2} of the {} they may use: CPU limited throughput",
        cpu.targets_used,
        cores_text(cpu.target_cores)
    );
    let figures = [
        ("targets_cores", cpu.targets_used),
        ("target_cores", cpu.target_cores),
        ("generator_cores_used", cpu.generator_used),
    ];
    let fix = "give the target more cores, or make each request cheaper";
    finding(FindingKind::TargetBound, 0.75, text, Some(fix), &figures)
}

/// `2 cores`, `1 core` for whole cores, `0.50 cores` otherwise.
fn cores_text(cores: f64) -> String {
    if (cores - cores.round()).abs() < 1e-9 {
        let n = cores.round().max(0.0) as u64;
        crate::human::counted(n, "core")
    } else {
        format!("{cores:.2} cores")
    }
}

/// 12400 → `12,400`.
fn count(n: u64) -> String {
    crate::human::grouped(n)
}

#[cfg(test)]
mod tests;
