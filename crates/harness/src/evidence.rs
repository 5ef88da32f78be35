//! A target's own evidence over a bench step, read from `/proc` and its cgroup at the step's
//! start and end: its threads' CPU (busiest first, with their `comm` names), open files
//! against the limit, context switches, and the cgroup's throttling and memory events. Two
//! readings per step, nothing per request; the sampler keeps measuring CPU and memory on its own.

use crate::sampler::ProcessTree;
use loadbench_model::evidence::BUSIEST_THREADS;
use loadbench_model::{CgroupEvidence, TargetEvidence, ThreadShare};
use procfs::process::{LimitValue, Process};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One thread's cumulative counters.
#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub(crate) comm: String,
    pub(crate) cpu_ns: u64,
    /// `None` where schedstat is not available.
    pub(crate) wait_ns: Option<u64>,
}

impl Thread {
    /// CPU and wait from `schedstat` (ns), else CPU from the tick counters of `stat`.
    pub(crate) fn read(task: &procfs::process::Task) -> Option<(u32, Thread)> {
        let stat = task.stat().ok()?;
        let tick_ns = 1e9 / procfs::ticks_per_second() as f64;
        let ticks_ns = ((stat.utime + stat.stime) as f64 * tick_ns) as u64;
        let (cpu_ns, wait_ns) = task.schedstat().map_or((ticks_ns, None), |s| {
            (s.sum_exec_runtime, Some(s.run_delay))
        });
        let tid = u32::try_from(stat.pid).ok()?;
        Some((
            tid,
            Thread {
                comm: stat.comm,
                cpu_ns,
                wait_ns,
            },
        ))
    }
}

/// Cumulative counters of one target's process tree at one instant.
#[derive(Debug, Clone)]
pub struct TargetReading {
    at: Instant,
    /// Per thread id: its `comm`, CPU time and run-queue wait, ns.
    threads: HashMap<u32, Thread>,
    voluntary: u64,
    involuntary: u64,
    /// The process nearest its fd limit: (open, soft limit).
    fds: (u64, Option<u64>),
    cgroup: Option<CgroupEvidence>,
}

impl TargetReading {
    /// Reads the tree hanging from `root` and the cgroup directories `cgroup` (none: no cgroup).
    pub fn take(root: u32, cgroup: &[PathBuf]) -> TargetReading {
        let mut r = TargetReading {
            at: Instant::now(),
            threads: HashMap::new(),
            voluntary: 0,
            involuntary: 0,
            fds: (0, None),
            cgroup: (!cgroup.is_empty()).then(|| cgroup_counters(cgroup)),
        };
        for pid in ProcessTree::of(root).pids {
            if let Ok(p) = Process::new(pid as i32) {
                r.add_process(&p);
            }
        }
        r
    }

    /// The thread ids read (a process's PID is its main thread's id).
    pub(crate) fn tids(&self) -> impl Iterator<Item = u32> + '_ {
        self.threads.keys().copied()
    }

    fn add_process(&mut self, p: &Process) {
        if let Ok(tasks) = p.tasks() {
            for task in tasks.flatten() {
                if let Some((tid, thread)) = Thread::read(&task) {
                    self.threads.insert(tid, thread);
                }
                if let Ok(status) = task.status() {
                    self.voluntary += status.voluntary_ctxt_switches.unwrap_or(0);
                    self.involuntary += status.nonvoluntary_ctxt_switches.unwrap_or(0);
                }
            }
        }
        let open = p.fd_count().map_or(0, |n| n as u64);
        let limit = p
            .limits()
            .ok()
            .and_then(|l| match l.max_open_files.soft_limit {
                LimitValue::Value(v) => Some(v),
                LimitValue::Unlimited => None,
            });
        if fd_share(open, limit) >= fd_share(self.fds.0, self.fds.1) {
            self.fds = (open, limit);
        }
    }
}

fn fd_share(open: u64, limit: Option<u64>) -> f64 {
    limit
        .filter(|&l| l > 0)
        .map_or(0.0, |l| open as f64 / l as f64)
}

/// The evidence of target `name` between two readings; `allowed` is the cores it may use.
pub fn target_evidence(
    name: &str,
    start: &TargetReading,
    end: &TargetReading,
    allowed: f64,
) -> TargetEvidence {
    let wall_ns = end.at.duration_since(start.at).as_nanos() as f64;
    let share = |ns: u64| {
        if wall_ns > 0.0 {
            ns as f64 / wall_ns
        } else {
            0.0
        }
    };
    let mut busiest: Vec<ThreadShare> = end
        .threads
        .iter()
        .map(|(&tid, now)| {
            let before = start.threads.get(&tid);
            let cpu = now.cpu_ns.saturating_sub(before.map_or(0, |b| b.cpu_ns));
            let wait = now
                .wait_ns
                .map(|w| w.saturating_sub(before.and_then(|b| b.wait_ns).unwrap_or(0)));
            ThreadShare {
                name: now.comm.clone(),
                tid,
                cores: share(cpu),
                runnable: wait.map_or(0.0, |w| share(cpu + w).min(1.0)),
            }
        })
        .collect();
    busiest.sort_by(|a, b| b.cores.total_cmp(&a.cores).then(a.tid.cmp(&b.tid)));
    let cpu_cores = busiest.iter().map(|t| t.cores).sum();
    busiest.truncate(BUSIEST_THREADS);
    TargetEvidence {
        target: name.to_string(),
        threads: end.threads.len() as u32,
        busiest,
        cpu_cores,
        allowed_cores: allowed,
        open_fds: end.fds.0,
        fd_limit: end.fds.1,
        voluntary_switches: end.voluntary.saturating_sub(start.voluntary),
        involuntary_switches: end.involuntary.saturating_sub(start.involuntary),
        cgroup: match (&start.cgroup, &end.cgroup) {
            (Some(a), Some(b)) => Some(b.since(a)),
            _ => None,
        },
        exited: None,
        oom_killed: Vec::new(),
    }
}

/// The cgroup's counters, summed over its directories (one on v2, one per hierarchy on v1).
fn cgroup_counters(dirs: &[PathBuf]) -> CgroupEvidence {
    let mut c = CgroupEvidence::default();
    for dir in dirs {
        let cpu = read_keyed(&dir.join("cpu.stat"));
        c.nr_periods += value(&cpu, "nr_periods");
        c.nr_throttled += value(&cpu, "nr_throttled");
        // v2 counts µs, v1 ns.
        c.throttled_usec += value(&cpu, "throttled_usec") + value(&cpu, "throttled_time") / 1000;
        let events = read_keyed(&dir.join("memory.events"));
        c.memory_high += value(&events, "high");
        c.memory_max += value(&events, "max");
        c.memory_oom += value(&events, "oom");
        c.oom_kills += value(&events, "oom_kill");
        // v1: hits of the limit, and OOM kills.
        c.memory_max += read_number(&dir.join("memory.failcnt"));
        c.oom_kills += value(&read_keyed(&dir.join("memory.oom_control")), "oom_kill");
    }
    c
}

/// `key value` lines of a cgroup file (empty when absent).
fn read_keyed(path: &Path) -> HashMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn value(map: &HashMap<String, u64>, key: &str) -> u64 {
    map.get(key).copied().unwrap_or(0)
}

fn read_number(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.trim().parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_files_of_both_versions_add_up() {
        let dir = std::env::temp_dir().join(format!("lb-evidence-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |f: &str, t: &str| std::fs::write(dir.join(f), t).unwrap();
        // cgroup v2's files with every key the kernel's cgroup-v2 documentation lists for them
        // (Documentation/admin-guide/cgroup-v2.rst), in its order: this machine's memory
        // controller is on v1, so v2 is read here from its documented contents.
        write(
            "cpu.stat",
            "usage_usec 10\nuser_usec 6\nsystem_usec 4\nnr_periods 50\nnr_throttled 19\nthrottled_usec 700\nnr_bursts 0\nburst_usec 0\n",
        );
        write(
            "memory.events",
            "low 0\nhigh 2\nmax 1\noom 1\noom_kill 1\noom_group_kill 0\n",
        );
        let c = cgroup_counters(std::slice::from_ref(&dir));
        assert_eq!(
            (c.nr_periods, c.nr_throttled, c.throttled_usec),
            (50, 19, 700)
        );
        assert_eq!(
            (c.memory_high, c.memory_max, c.memory_oom, c.oom_kills),
            (2, 1, 1, 1)
        );
        write(
            "cpu.stat",
            "nr_periods 5\nnr_throttled 1\nthrottled_time 3000000\n",
        );
        std::fs::remove_file(dir.join("memory.events")).unwrap();
        write("memory.failcnt", "4\n");
        write(
            "memory.oom_control",
            "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
        );
        let c = cgroup_counters(std::slice::from_ref(&dir));
        assert_eq!((c.nr_throttled, c.throttled_usec), (1, 3000));
        assert_eq!((c.memory_max, c.memory_oom, c.oom_kills), (4, 0, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_busy_thread_is_found_by_name_and_share() {
        let spin = std::thread::Builder::new()
            .name("lb-spin".into())
            .spawn(|| {
                let until = Instant::now() + std::time::Duration::from_millis(1500);
                let mut n = 0u64;
                while Instant::now() < until {
                    n = n.wrapping_add(1);
                }
                n
            })
            .unwrap();
        let me = std::process::id();
        let start = TargetReading::take(me, &[]);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let end = TargetReading::take(me, &[]);
        spin.join().unwrap();
        let e = target_evidence("me", &start, &end, 2.0);
        let spinner = e
            .busiest
            .iter()
            .find(|t| t.name == "lb-spin")
            .expect("named");
        // On a loaded host it gets less than a core, but it never waits for work: it is
        // runnable (on a CPU or in a run queue) the whole window.
        assert!(spinner.cores > 0.05 && spinner.runnable > 0.8, "{e:?}");
        // Ranked by CPU above this test's own (sleeping) thread; other tests of this binary may
        // run busy children (a sampler test's `sh` loop) that rank higher still.
        let rank = |name: &str| e.busiest.iter().position(|t| t.name.starts_with(name));
        let (spin, me) = (rank("lb-spin"), rank("evidence::tests"));
        assert!(me.is_none() || spin < me, "{e:?}");
        assert!(
            e.threads >= 2 && e.open_fds > 0 && e.fd_limit.is_some(),
            "{e:?}"
        );
        assert!(e.cgroup.is_none());
    }
}
