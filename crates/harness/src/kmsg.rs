//! The kernel log's OOM kills over a bench step: `/dev/kmsg` opened at the step's start and
//! moved to its end (so only records logged during the step are read), read without blocking
//! at the step's end. A kill belongs to a target when the log names one of its PIDs or its
//! cgroup (`task_memcg=` of the `oom-kill:` line). Reading the log needs root or
//! `kernel.dmesg_restrict = 0`; where it is not readable, nothing is read and the cgroup's
//! counters are the only OOM evidence.

use loadbench_model::OomKill;
use std::collections::HashSet;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The kernel log from a step's start.
#[derive(Debug)]
pub(crate) struct KernelLog {
    file: Option<File>,
    /// Time since boot at the start, µs: the log's timestamps count from boot too.
    start_us: u64,
}

/// A kill as the log tells it, before it is matched to a target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoggedKill {
    pub(crate) pid: u32,
    pub(crate) comm: String,
    /// The log's timestamp, µs since boot (monotonic).
    pub(crate) at_us: u64,
    /// The `task_memcg=` of the `oom-kill:` line before it, when there was one.
    pub(crate) memcg: Option<String>,
    pub(crate) line: String,
}

impl KernelLog {
    /// Opens the log at its end; an unreadable log reads as empty.
    pub(crate) fn open() -> KernelLog {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f))
            .ok();
        KernelLog {
            file,
            start_us: monotonic_us(),
        }
    }

    /// The OOM kills logged since [`KernelLog::open`]; never blocks.
    pub(crate) fn kills(&mut self) -> Vec<LoggedKill> {
        let Some(file) = self.file.as_mut() else {
            return Vec::new();
        };
        let mut records = Vec::new();
        // One record per read; a buffer shorter than a record fails with EINVAL.
        let mut buf = vec![0u8; 8192];
        for _ in 0..100_000 {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => records.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                // Records overwritten before they were read: the next read goes on.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        parse_kills(records.iter().map(String::as_str), self.start_us)
    }

    /// Seconds from the step's start to a log timestamp.
    pub(crate) fn secs_since_start(&self, at_us: u64) -> f64 {
        at_us.saturating_sub(self.start_us) as f64 / 1e6
    }
}

/// Time since boot, µs, from `/proc/uptime` (10 ms steps; the log's clock also counts from
/// boot); 0 when unreadable (then every record counts as the window's).
fn monotonic_us() -> u64 {
    let text = std::fs::read_to_string("/proc/uptime").unwrap_or_default();
    let secs: f64 = text
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    (secs * 1e6) as u64
}

/// The kills in `records` (`/dev/kmsg` records: `PRI,SEQ,TS_US,FLAGS;MESSAGE` then
/// continuation lines) logged at or after `from_us`.
pub(crate) fn parse_kills<'a>(
    records: impl Iterator<Item = &'a str>,
    from_us: u64,
) -> Vec<LoggedKill> {
    let mut kills = Vec::new();
    let mut memcg: Option<(u32, String)> = None;
    for record in records {
        let Some((head, message)) = record.split_once(';') else {
            continue;
        };
        let message = message.lines().next().unwrap_or_default().trim();
        let Some(at_us) = head.split(',').nth(2).and_then(|t| t.parse::<u64>().ok()) else {
            continue;
        };
        if at_us < from_us {
            continue;
        }
        if let Some(rest) = message.strip_prefix("oom-kill:") {
            let field = |key: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(key).map(str::to_string))
            };
            memcg = field("pid=")
                .and_then(|p| p.parse().ok())
                .zip(field("task_memcg="));
            continue;
        }
        let Some(after) = message.split_once("Killed process ").map(|(_, a)| a) else {
            continue;
        };
        let Some((pid, rest)) = after.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let comm = rest
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .map_or_else(String::new, |(c, _)| c.to_string());
        kills.push(LoggedKill {
            pid,
            comm,
            at_us,
            memcg: memcg.take().filter(|(p, _)| *p == pid).map(|(_, m)| m),
            line: message.to_string(),
        });
    }
    kills
}

/// The kills of one target: its PIDs (`pids`, `main` its main process) or its cgroup `dirs`.
pub(crate) fn kills_of(
    log: &KernelLog,
    kills: &[LoggedKill],
    pids: &HashSet<u32>,
    main: u32,
    dirs: &[PathBuf],
) -> Vec<OomKill> {
    kills
        .iter()
        .filter(|k| {
            pids.contains(&k.pid)
                || k.memcg
                    .as_deref()
                    .is_some_and(|m| dirs.iter().any(|d| in_cgroup(d, m)))
        })
        .map(|k| OomKill {
            pid: k.pid,
            comm: k.comm.clone(),
            at_secs: log.secs_since_start(k.at_us),
            main: k.pid == main,
            line: k.line.clone(),
        })
        .collect()
}

/// Whether the cgroup directory `dir` (a path under the mount) is the log's `memcg` (a path
/// from the hierarchy's root).
fn in_cgroup(dir: &Path, memcg: &str) -> bool {
    let memcg = memcg.trim_start_matches('/');
    !memcg.is_empty() && dir.ends_with(memcg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records as this machine's kernel (6.x, cgroup v1) logged an OOM kill in a memory-limited
    /// cgroup, with the lines between them cut.
    const RECORDS: [&str; 5] = [
        "4,3700,21931632976,-;head invoked oom-killer: gfp_mask=0x500cc2(GFP_HIGHUSER|__GFP_ACCOUNT), order=0, oom_score_adj=0\n",
        "6,3710,21931633288,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/lb/loadbench/mem-4563-4,task_memcg=/lb/loadbench/mem-4563-4,task=tail,pid=4597,uid=0\n",
        "3,3711,21931633308,-;Memory cgroup out of memory: Killed process 4597 (tail) total-vm:67616kB, anon-rss:64640kB, file-rss:1596kB, shmem-rss:0kB, UID:0 pgtables:180kB oom_score_adj:0\n",
        "3,3712,21931640000,-;Out of memory: Killed process 812 (my server) total-vm:1000kB, anon-rss:900kB\n SUBSYSTEM=memory\n",
        "6,3713,21931650000,-;a line about something else\n",
    ];

    #[test]
    fn kills_are_read_with_their_pid_name_time_and_cgroup() {
        let kills = parse_kills(RECORDS.iter().copied(), 0);
        assert_eq!(kills.len(), 2, "{kills:?}");
        assert_eq!(
            (kills[0].pid, kills[0].comm.as_str(), kills[0].at_us),
            (4597, "tail", 21_931_633_308)
        );
        assert_eq!(kills[0].memcg.as_deref(), Some("/lb/loadbench/mem-4563-4"));
        assert!(kills[0]
            .line
            .starts_with("Memory cgroup out of memory: Killed process 4597 (tail)"));
        // A name with a space, no oom-kill line before it (an older kernel's order).
        assert_eq!((kills[1].pid, kills[1].comm.as_str()), (812, "my server"));
        assert_eq!(kills[1].memcg, None);
        // Only the window's records.
        assert_eq!(
            parse_kills(RECORDS.iter().copied(), 21_931_635_000).len(),
            1
        );
    }

    #[test]
    fn a_kill_is_a_targets_by_its_pids_or_its_cgroup() {
        let log = KernelLog {
            file: None,
            start_us: 21_931_000_000,
        };
        let kills = parse_kills(RECORDS.iter().copied(), 0);
        let dirs = [PathBuf::from(
            "/sys/fs/cgroup/memory/lb/loadbench/mem-4563-4",
        )];
        // By its cgroup: a process born during the step, in no reading of the tree.
        let of = kills_of(&log, &kills, &HashSet::new(), 4590, &dirs);
        assert_eq!(of.len(), 1);
        assert_eq!((of[0].pid, of[0].main), (4597, false));
        assert!((of[0].at_secs - 0.633308).abs() < 1e-9, "{of:?}");
        // By its PID: the main process, outside any cgroup.
        let of = kills_of(&log, &kills, &HashSet::from([812]), 812, &[]);
        assert_eq!((of.len(), of[0].main), (1, true));
        // Neither: another program's kill.
        let other = [PathBuf::from(
            "/sys/fs/cgroup/memory/lb/loadbench/mem-4563-40",
        )];
        assert!(kills_of(&log, &kills, &HashSet::from([1]), 1, &other).is_empty());
    }

    #[test]
    fn the_log_opens_at_its_end_and_reads_without_blocking() {
        let mut log = KernelLog::open();
        let root = procfs::process::Process::myself()
            .and_then(|p| p.status())
            .is_ok_and(|s| s.euid == 0);
        if root {
            assert!(log.file.is_some(), "root reads /dev/kmsg");
        }
        // Returns (an empty log would block a blocking read), with the window's records only.
        let kills = log.kills();
        assert!(kills.iter().all(|k| k.at_us >= log.start_us), "{kills:?}");
    }
}
