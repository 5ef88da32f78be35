//! Evidence from the kernel and the targets, recorded per run and per bench step so the "why"
//! section can name what limited a load instead of guessing from CPU alone. Kernel counters
//! are deltas over the window (host-wide: the kernel counts them for every socket of the
//! network namespace); sockets and the listen queue are read at the sampler's pace and keep
//! their peak. Pure data: the readers of `/proc` and netlink live in the runner (kernel) and
//! the harness (targets).

use serde::{Deserialize, Serialize};

/// TCP counters of the kernel (`/proc/net/netstat` TcpExt, `/proc/net/snmp` Tcp): cumulative
/// when read, deltas over a window once [`TcpCounters::since`] is applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpCounters {
    /// `TcpExt ListenOverflows`: connections completed while the accept queue was full.
    #[serde(default)]
    pub listen_overflows: u64,
    /// `TcpExt ListenDrops`: SYNs or completed connections a listener dropped (overflows
    /// included).
    #[serde(default)]
    pub listen_drops: u64,
    /// `TcpExt TCPSynRetrans`: SYNs sent again because no SYN-ACK came in time.
    #[serde(default)]
    pub syn_retransmits: u64,
    /// `Tcp RetransSegs`: segments retransmitted (SYNs included).
    #[serde(default)]
    pub retransmitted_segments: u64,
    /// `Tcp OutRsts`: resets sent.
    #[serde(default)]
    pub resets_sent: u64,
    /// `Tcp EstabResets`: established connections reset.
    #[serde(default)]
    pub established_resets: u64,
    /// `Tcp AttemptFails`: connects that failed (reset in SYN-SENT or SYN-RECV).
    #[serde(default)]
    pub attempt_fails: u64,
}

impl TcpCounters {
    /// The change from `earlier` to `self` (a counter that went back counts as 0).
    pub fn since(&self, earlier: &TcpCounters) -> TcpCounters {
        TcpCounters {
            listen_overflows: self
                .listen_overflows
                .saturating_sub(earlier.listen_overflows),
            listen_drops: self.listen_drops.saturating_sub(earlier.listen_drops),
            syn_retransmits: self.syn_retransmits.saturating_sub(earlier.syn_retransmits),
            retransmitted_segments: self
                .retransmitted_segments
                .saturating_sub(earlier.retransmitted_segments),
            resets_sent: self.resets_sent.saturating_sub(earlier.resets_sent),
            established_resets: self
                .established_resets
                .saturating_sub(earlier.established_resets),
            attempt_fails: self.attempt_fails.saturating_sub(earlier.attempt_fails),
        }
    }
}

/// The target port's sockets at their peak over the window (each state's own peak).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortSockets {
    /// Established connections on the target's side of the port.
    #[serde(default)]
    pub established: u64,
    /// Half-open connections (SYN received, handshake not finished).
    #[serde(default)]
    pub syn_recv: u64,
    /// Connections in TIME-WAIT on either side of the port.
    #[serde(default)]
    pub time_wait: u64,
    /// The listener's backlog (`listen(fd, backlog)` capped by `net.core.somaxconn`); 0 when no
    /// listener was seen (the target is on another host or network namespace).
    #[serde(default)]
    pub backlog: u64,
    /// The longest accept queue seen (connections completed, not yet accepted).
    #[serde(default)]
    pub accept_queue_peak: u64,
    /// Readings taken (sampler ticks); 0 when sockets could not be read.
    #[serde(default)]
    pub readings: u64,
}

impl PortSockets {
    /// Keeps each figure's peak of `self` and `other` (readings add).
    pub fn peak(&mut self, other: &PortSockets) {
        self.established = self.established.max(other.established);
        self.syn_recv = self.syn_recv.max(other.syn_recv);
        self.time_wait = self.time_wait.max(other.time_wait);
        self.backlog = self.backlog.max(other.backlog);
        self.accept_queue_peak = self.accept_queue_peak.max(other.accept_queue_peak);
        self.readings += other.readings;
    }
}

/// The generator's ephemeral ports toward the target: in use at the peak, against the range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EphemeralPorts {
    /// Most sockets seen at once toward the target's port (any state but LISTEN, TIME-WAIT
    /// included: a port in TIME-WAIT cannot be reused for the same peer).
    #[serde(default)]
    pub in_use_peak: u64,
    /// `net.ipv4.ip_local_port_range`, low end.
    #[serde(default)]
    pub range_low: u16,
    /// `net.ipv4.ip_local_port_range`, high end.
    #[serde(default)]
    pub range_high: u16,
}

impl EphemeralPorts {
    /// Ports in the range (0 when the range is unknown).
    pub fn range_size(&self) -> u64 {
        if self.range_high < self.range_low || self.range_high == 0 {
            return 0;
        }
        u64::from(self.range_high - self.range_low) + 1
    }
}

/// What the kernel saw during a run or a step (the generator's host and network namespace).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelEvidence {
    /// How long the counters were watched, ms.
    #[serde(default)]
    pub window_ms: u64,
    /// The target's port(s), from the URL.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Counter deltas over the window, host-wide.
    #[serde(default)]
    pub tcp: TcpCounters,
    /// The target ports' sockets, peaks over the window.
    #[serde(default)]
    pub sockets: PortSockets,
    /// The generator's side: ephemeral ports toward the target.
    #[serde(default)]
    pub ephemeral: EphemeralPorts,
    /// The host's background: segments retransmitted (SYNs aside) host-wide at the rate seen
    /// right after the window, with the load stopped, scaled to the window's length. Read only
    /// when the window's count was worth judging; `None` when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_retransmits: Option<f64>,
    /// The host's CPU over the window, and who used it: the generator, the target when it
    /// runs on this host, everything else. Recorded by `run` and `find-max` (a bench samples
    /// the host itself); absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLoad>,
}

/// The host's CPU over a run's window, read from `/proc/stat` and `/proc/PID/stat` at the
/// window's edges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// The host's online cores.
    pub host_cores: f64,
    /// Every core's busy time over the window, in cores (interrupt and softirq time left out:
    /// on loopback that is the load's own network work).
    pub busy_cores: f64,
    /// This process (the generator and its helper threads), in cores.
    pub generator_cores: f64,
    /// The target when it listens on this host: the processes owning the listening socket of
    /// the target's port, and their children. `None` when the target is not on loopback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<LocalTarget>,
    /// `busy_cores` minus the generator's and the target's, never below 0: what other
    /// processes used. Counts the target too when `others_known` is false.
    pub other_cores: f64,
    /// False when the target is on loopback but its process could not be found (another
    /// user's process without the right to read its descriptors, another network namespace):
    /// then `other_cores` includes the target's CPU and the host is not judged.
    pub others_known: bool,
}

/// The target's processes on this host, found through its listening socket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalTarget {
    /// The listening process's `comm` (`nginx`, `java`), of the lowest pid.
    pub name: String,
    /// How many processes were counted (the listeners and their children).
    pub processes: u32,
    /// Their CPU over the window, in cores.
    pub cores: f64,
}

impl HostLoad {
    /// Whether other processes used enough of the host to make the figures unreliable: at
    /// least [`crate::diagnose::BUSY_HOST_CORES`] and [`crate::diagnose::BUSY_HOST_SHARE`] of
    /// its cores, and only when what they used is known (the target was found or is remote).
    pub fn busy(&self) -> bool {
        let threshold = crate::diagnose::BUSY_HOST_CORES
            .max(crate::diagnose::BUSY_HOST_SHARE * self.host_cores);
        self.others_known && self.host_cores > 0.0 && self.other_cores >= threshold
    }
}

/// One thread of a target and its CPU over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadShare {
    /// The thread's `comm` (`nginx`, `http-nio-8080-exec-1`, `tokio-runtime-w`).
    pub name: String,
    /// Its thread id.
    pub tid: u32,
    /// CPU used over the window, in cores (1.0 = a whole core all the time).
    pub cores: f64,
    /// Share of the window the thread was runnable: on a CPU or waiting in a run queue for
    /// one (`/proc/…/schedstat`). Near 1, the thread never waited for work: it would have used
    /// a whole core had the host given it one. 0 where schedstat is not available.
    #[serde(default)]
    pub runnable: f64,
}

/// What a target's cgroup counted over the window (deltas), when the harness set a limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupEvidence {
    /// `cpu.stat nr_periods`: quota periods in which the group ran.
    #[serde(default)]
    pub nr_periods: u64,
    /// `cpu.stat nr_throttled`: periods in which the quota ran out.
    #[serde(default)]
    pub nr_throttled: u64,
    /// `cpu.stat throttled_usec`: time the group waited for its next period, µs.
    #[serde(default)]
    pub throttled_usec: u64,
    /// `memory.events high`: times usage went over `memory.high` (reclaim forced).
    #[serde(default)]
    pub memory_high: u64,
    /// `memory.events max`: times usage hit `memory.max`.
    #[serde(default)]
    pub memory_max: u64,
    /// `memory.events oom`: times the group ran out of memory.
    #[serde(default)]
    pub memory_oom: u64,
    /// Processes of the group the kernel's OOM killer killed: `memory.events oom_kill` (v2),
    /// `memory.oom_control oom_kill` (v1, where the limit counters may stay at 0 even then).
    #[serde(default)]
    pub oom_kills: u64,
}

impl CgroupEvidence {
    /// The change from `earlier` to `self`.
    pub fn since(&self, earlier: &CgroupEvidence) -> CgroupEvidence {
        CgroupEvidence {
            nr_periods: self.nr_periods.saturating_sub(earlier.nr_periods),
            nr_throttled: self.nr_throttled.saturating_sub(earlier.nr_throttled),
            throttled_usec: self.throttled_usec.saturating_sub(earlier.throttled_usec),
            memory_high: self.memory_high.saturating_sub(earlier.memory_high),
            memory_max: self.memory_max.saturating_sub(earlier.memory_max),
            memory_oom: self.memory_oom.saturating_sub(earlier.memory_oom),
            oom_kills: self.oom_kills.saturating_sub(earlier.oom_kills),
        }
    }
}

/// One target's process tree over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetEvidence {
    /// The target's name, as in the scenario.
    pub target: String,
    /// Threads in the tree at the end of the window.
    #[serde(default)]
    pub threads: u32,
    /// The busiest threads by CPU over the window, busiest first (at most
    /// [`BUSIEST_THREADS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busiest: Vec<ThreadShare>,
    /// CPU of all the tree's threads over the window, in cores.
    #[serde(default)]
    pub cpu_cores: f64,
    /// Cores the target could use (its CPU set or quota, else the host's).
    #[serde(default)]
    pub allowed_cores: f64,
    /// Open file descriptors of the process closest to its limit, at the end.
    #[serde(default)]
    pub open_fds: u64,
    /// That process's soft `RLIMIT_NOFILE`; `None` when unlimited or unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd_limit: Option<u64>,
    /// Voluntary context switches over the window (waits: I/O, locks, sleeps), all threads.
    #[serde(default)]
    pub voluntary_switches: u64,
    /// Involuntary context switches over the window (preempted: more runnable threads than
    /// cores, or a quota), all threads.
    #[serde(default)]
    pub involuntary_switches: u64,
    /// The cgroup's counters, when the harness put the target in one with a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupEvidence>,
    /// How the target's main process ended, when it ended during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited: Option<TargetExit>,
    /// The kernel log's OOM kills of the target's processes (its PIDs or its cgroup) during
    /// the window, in order (`/dev/kmsg`; empty where it is not readable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_killed: Vec<OomKill>,
}

/// One process the kernel's OOM killer killed, as its log says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OomKill {
    /// The killed process's PID.
    pub pid: u32,
    /// Its name, as the kernel logged it.
    pub comm: String,
    /// When, in seconds from the start of the window (the log's monotonic timestamp).
    pub at_secs: f64,
    /// Whether it was the target's main process.
    #[serde(default)]
    pub main: bool,
    /// The kernel's line, as logged (`Memory cgroup out of memory: Killed process …`).
    pub line: String,
}

/// How a target's main process ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetExit {
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that killed it, when one did (9: SIGKILL, as the OOM killer sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

impl std::fmt::Display for TargetExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (_, Some(9)) => write!(f, "killed by SIGKILL"),
            (_, Some(s)) => write!(f, "killed by signal {s}"),
            (Some(c), None) => write!(f, "exit code {c}"),
            (None, None) => write!(f, "gone"),
        }
    }
}

/// Threads kept in [`TargetEvidence::busiest`].
pub const BUSIEST_THREADS: usize = 5;

/// A bench step's evidence: the kernel's and each target's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepEvidence {
    /// The kernel's view over the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelEvidence>,
    /// Each target loaded in the step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetEvidence>,
    /// The generator's own threads (the loadbench process, its targets left out), named
    /// `generator`; absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<TargetEvidence>,
    /// Mean CPU used on the host by processes other than the targets and the generator over
    /// the measured window, in cores (all cores' busy time minus ours).
    #[serde(default)]
    pub other_cpu_cores: f64,
    /// The host's cores.
    #[serde(default)]
    pub host_cores: f64,
    /// The cores the step's targets could use together, as the verdict counted them: the
    /// union of their CPU sets (the cores the bench could use when one has none), capped by
    /// their quotas; 0 in files written before it was recorded.
    #[serde(default)]
    pub target_cores: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_subtract_and_never_go_negative() {
        let a = TcpCounters {
            listen_overflows: 5,
            syn_retransmits: 2,
            ..Default::default()
        };
        let b = TcpCounters {
            listen_overflows: 12,
            syn_retransmits: 1,
            ..Default::default()
        };
        let d = b.since(&a);
        assert_eq!((d.listen_overflows, d.syn_retransmits), (7, 0));
    }

    #[test]
    fn port_range_size_counts_both_ends() {
        let e = EphemeralPorts {
            in_use_peak: 0,
            range_low: 32768,
            range_high: 60999,
        };
        assert_eq!(e.range_size(), 28232);
        assert_eq!(EphemeralPorts::default().range_size(), 0);
    }

    #[test]
    fn socket_peaks_keep_the_highest_of_each() {
        let mut a = PortSockets {
            established: 3,
            accept_queue_peak: 9,
            readings: 1,
            ..Default::default()
        };
        let b = PortSockets {
            established: 7,
            accept_queue_peak: 2,
            backlog: 128,
            readings: 1,
            ..Default::default()
        };
        a.peak(&b);
        assert_eq!(
            (a.established, a.accept_queue_peak, a.backlog, a.readings),
            (7, 9, 128, 2)
        );
    }
}
