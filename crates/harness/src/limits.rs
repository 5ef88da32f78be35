//! Per-target resource limits, like docker's `--cpuset-cpus`, `--cpus` and `--memory`.
//!
//! In: a target name and its [`Limits`]. Out: an [`Applied`] record (what is enforced, plus one
//! warning per limit that is *not* enforced, ready to be saved in the results) and, when a cgroup
//! was created, a [`CgroupGuard`] that removes it on drop.
//!
//! How limits are enforced (Linux):
//! - CPU set: CPU affinity (`sched_setaffinity`) of the target, inherited by everything it forks;
//!   on cgroup v2 also `cpuset.cpus` when the `cpuset` controller is available;
//! - CPU quota: `cpu.max` (v2) or `cpu.cfs_quota_us`/`cpu.cfs_period_us` (v1), period 100 ms;
//! - memory: `memory.max` + `memory.swap.max = 0` (v2) or `memory.limit_in_bytes` +
//!   `memory.memsw.limit_in_bytes` (v1).
//!
//! The cgroup is `<hierarchy>/loadbench/<name>-<pid>-<n>`: on v2 under the cgroup root (the
//! controllers are enabled in the parents' `cgroup.subtree_control`), on v1 under loadbench's own
//! cgroup of each hierarchy (so limits set on loadbench itself still apply). v2 is used when its
//! root offers every needed controller, otherwise the v1 `cpu` and `memory` hierarchies.
//!
//! Process side: [`join_in_child`] adds a `pre_exec` hook so the target is in the cgroup and has
//! its affinity *before* exec (nothing it forks escapes); [`apply_to_pid`] does the same from the
//! parent right after spawn (idempotent; failures become warnings).
//!
//! Nothing here stops a run: a limit that cannot be applied becomes a warning string.
//!
//! Limits of this module: the cgroup root is assumed at `/sys/fs/cgroup` (v1 hierarchies under
//! it, v2 at it or at `unified/`); the v1 cpuset controller is not used (affinity does the job);
//! processes that call `sched_setaffinity` themselves can widen their own CPU set.

use std::ffi::CString;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::scenario::{CpuSet, Limits};

/// The CFS period used for CPU quotas (microseconds).
pub const CPU_PERIOD_US: u64 = 100_000;
/// Default root of the cgroup filesystems.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// How long drop waits for the cgroup's processes to vanish after `SIGKILL`.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// What was enforced for one target, and what was not (one warning each).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Applied {
    /// CPUs the target is pinned to (affinity); `None` when no CPU set is enforced.
    pub cpuset: Option<Vec<usize>>,
    /// CPU quota in cores enforced through the cgroup.
    pub cpu_quota_cores: Option<f64>,
    /// Memory limit in bytes enforced through the cgroup.
    pub memory_bytes: Option<u64>,
    /// The cgroup directory (v2) or the first of the v1 directories.
    pub cgroup: Option<PathBuf>,
    /// One line per limit that is not (fully) enforced, saying what and why.
    pub warnings: Vec<String>,
}

/// Which cgroup version a guard uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

/// A cgroup created for one target; drop kills what is left in it and removes it.
#[derive(Debug)]
pub struct CgroupGuard {
    version: CgroupVersion,
    /// Every directory of this cgroup (one on v2; one per hierarchy on v1).
    dirs: Vec<PathBuf>,
    /// Directory holding the memory files, when memory is limited.
    memory_dir: Option<PathBuf>,
    /// Directory holding the CPU files, when the CPU is limited.
    cpu_dir: Option<PathBuf>,
}

impl CgroupGuard {
    /// The cgroup version in use.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Every directory of this cgroup.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Moves process `pid` (and the threads of it) into this cgroup; what it forks afterwards
    /// inherits it.
    pub fn attach(&self, pid: u32) -> io::Result<()> {
        for dir in &self.dirs {
            write_file(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Pids currently in this cgroup (union over the directories).
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = Vec::new();
        for dir in &self.dirs {
            if let Ok(text) = fs::read_to_string(dir.join("cgroup.procs")) {
                pids.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Total CPU time used by the cgroup in microseconds, when the CPU is accounted.
    pub fn cpu_usage_usec(&self) -> Option<u64> {
        let dir = self.cpu_dir.as_ref()?;
        match self.version {
            CgroupVersion::V2 => {
                let stat = fs::read_to_string(dir.join("cpu.stat")).ok()?;
                stat.lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .and_then(|v| v.trim().parse().ok())
            }
            CgroupVersion::V1 => {
                let ns: u64 = read_u64(&dir.join("cpuacct.usage"))?;
                Some(ns / 1000)
            }
        }
    }

    fn procs_paths(&self) -> Vec<CString> {
        self.dirs
            .iter()
            .filter_map(|d| CString::new(d.join("cgroup.procs").as_os_str().as_bytes()).ok())
            .collect()
    }
}

impl Drop for CgroupGuard {
    fn drop(&mut self) {
        // Only the target's processes can be in this cgroup: kill them, then remove it.
        let deadline = Instant::now() + DRAIN_TIMEOUT;
        loop {
            let pids = self.pids();
            if pids.is_empty() || Instant::now() >= deadline {
                break;
            }
            for pid in pids {
                kill(pid, libc::SIGKILL);
            }
            thread::sleep(Duration::from_millis(20));
        }
        for dir in &self.dirs {
            let _ = fs::remove_dir(dir);
            // The shared `loadbench` parent goes too when no other target uses it.
            if let Some(parent) = dir.parent() {
                let _ = fs::remove_dir(parent);
            }
        }
    }
}

/// The memory limit the cgroup actually has (read back from the kernel), `None` when unlimited
/// or not limited by this guard.
pub fn read_memory_max(guard: &CgroupGuard) -> Option<u64> {
    let dir = guard.memory_dir.as_ref()?;
    let v = match guard.version {
        CgroupVersion::V2 => read_u64(&dir.join("memory.max"))?,
        CgroupVersion::V1 => read_u64(&dir.join("memory.limit_in_bytes"))?,
    };
    // v1 reports "unlimited" as a huge page-aligned number.
    (v < (1 << 62)).then_some(v)
}

/// Peak memory use of the cgroup (`memory.peak` on v2, `memory.max_usage_in_bytes` on v1).
pub fn peak_memory(guard: &CgroupGuard) -> Option<u64> {
    let dir = guard.memory_dir.as_ref()?;
    match guard.version {
        CgroupVersion::V2 => read_u64(&dir.join("memory.peak")),
        CgroupVersion::V1 => read_u64(&dir.join("memory.max_usage_in_bytes")),
    }
}

/// Creates the cgroup for target `name` under [`CGROUP_ROOT`] and writes its limits.
pub fn prepare(name: &str, limits: &Limits) -> (Option<CgroupGuard>, Applied) {
    prepare_at(Path::new(CGROUP_ROOT), name, limits)
}

/// [`prepare`] with another cgroup root (tests point it at directories that are not cgroups).
pub fn prepare_at(root: &Path, name: &str, limits: &Limits) -> (Option<CgroupGuard>, Applied) {
    let mut applied = Applied::default();
    let label = format!("target '{name}'");

    if let Some(CpuSet(cpus)) = &limits.cpuset {
        applied.cpuset = check_cpuset(&label, cpus, &mut applied.warnings);
    }
    if limits.cpus.is_none() && limits.memory.is_none() {
        return (None, applied);
    }

    let leaf = format!(
        "{}-{}-{}",
        sanitize(name),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut need = Vec::new();
    if limits.cpus.is_some() {
        need.push("cpu");
    }
    if limits.memory.is_some() {
        need.push("memory");
    }

    let v2_root = [root.to_path_buf(), root.join("unified")]
        .into_iter()
        .find(|r| r.join("cgroup.controllers").is_file());
    let v2_ok = v2_root.as_ref().is_some_and(|r| {
        let ctl = fs::read_to_string(r.join("cgroup.controllers")).unwrap_or_default();
        need.iter().all(|n| ctl.split_whitespace().any(|c| c == *n))
    });
    let v1_cpu = [root.join("cpu,cpuacct"), root.join("cpu")]
        .into_iter()
        .find(|d| d.join("cpu.cfs_quota_us").is_file());
    let v1_mem = Some(root.join("memory")).filter(|d| d.join("memory.limit_in_bytes").is_file());

    let guard = if let (true, Some(v2)) = (v2_ok, v2_root.as_ref()) {
        prepare_v2(v2, &leaf, &label, limits, &mut applied)
    } else if v1_cpu.is_some() || v1_mem.is_some() {
        prepare_v1(v1_cpu, v1_mem, &leaf, &label, limits, &mut applied)
    } else {
        let why = match &v2_root {
            Some(r) => {
                let ctl = fs::read_to_string(r.join("cgroup.controllers")).unwrap_or_default();
                format!(
                    "cgroup v2 at {} offers controllers [{}], not [{}], and no cgroup v1 \
                     cpu/memory hierarchy is mounted under {}",
                    r.display(),
                    ctl.trim(),
                    need.join(" "),
                    root.display()
                )
            }
            None => format!(
                "no cgroup filesystem (v1 or v2) found at {}",
                root.display()
            ),
        };
        warn_cgroup_limits(&label, limits, &why, true, true, &mut applied.warnings);
        None
    };
    if let Some(g) = &guard {
        applied.cgroup = g.dirs.first().cloned();
    }
    (guard, applied)
}

fn prepare_v2(
    v2: &Path,
    leaf: &str,
    label: &str,
    limits: &Limits,
    applied: &mut Applied,
) -> Option<CgroupGuard> {
    let parent = v2.join("loadbench");
    let dir = parent.join(leaf);
    let mut wanted = Vec::new();
    if limits.cpus.is_some() {
        wanted.push("cpu");
    }
    if limits.memory.is_some() {
        wanted.push("memory");
    }
    let root_ctl = fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
    let with_cpuset =
        applied.cpuset.is_some() && root_ctl.split_whitespace().any(|c| c == "cpuset");
    if with_cpuset {
        wanted.push("cpuset");
    }

    // Another target's guard may remove `loadbench/` between our mkdirs: retry.
    let mut result = Err(io::Error::other("not tried"));
    for _ in 0..3 {
        result = (|| {
            create_dir(&parent)?;
            for c in &wanted {
                // Ignored when already enabled or refused; checked on the leaf below.
                let _ = write_file(&v2.join("cgroup.subtree_control"), &format!("+{c}"));
                let _ = write_file(&parent.join("cgroup.subtree_control"), &format!("+{c}"));
            }
            create_dir(&dir)?;
            if !dir.join("cgroup.procs").is_file() {
                let _ = fs::remove_dir(&dir);
                return Err(io::Error::other(format!(
                    "{} is not a cgroup filesystem",
                    v2.display()
                )));
            }
            Ok(())
        })();
        if result
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
        {
            continue;
        }
        break;
    }
    if let Err(e) = result {
        let why = no_cgroup_reason(&dir, &e);
        warn_cgroup_limits(label, limits, &why, true, true, &mut applied.warnings);
        return None;
    }
    let leaf_ctl = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let has = |c: &str| leaf_ctl.split_whitespace().any(|x| x == c);
    let guard = CgroupGuard {
        version: CgroupVersion::V2,
        dirs: vec![dir.clone()],
        memory_dir: limits.memory.map(|_| dir.clone()),
        cpu_dir: Some(dir.clone()),
    };

    if let Some(cores) = limits.cpus {
        let quota = quota_us(cores);
        let res = if has("cpu") {
            write_file(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))
        } else {
            Err(io::Error::other("the cpu controller could not be enabled"))
        };
        match res {
            Ok(()) => applied.cpu_quota_cores = Some(cores),
            Err(e) => applied.warnings.push(format!(
                "{label}: CPU quota {cores} cores not enforced: cannot write {}: {e}",
                dir.join("cpu.max").display()
            )),
        }
    }
    if let Some(bytes) = limits.memory {
        let res = if has("memory") {
            write_file(&dir.join("memory.max"), &bytes.to_string())
        } else {
            Err(io::Error::other(
                "the memory controller could not be enabled",
            ))
        };
        match res {
            Ok(()) => {
                applied.memory_bytes = Some(bytes);
                let swap = dir.join("memory.swap.max");
                if swap.is_file() {
                    if let Err(e) = write_file(&swap, "0") {
                        applied.warnings.push(format!(
                            "{label}: swap not disabled for memory limit {}: cannot write {}: \
                             {e}; the target may swap instead of hitting the limit",
                            human_bytes(bytes),
                            swap.display()
                        ));
                    }
                }
            }
            Err(e) => applied.warnings.push(format!(
                "{label}: memory limit {} not enforced: cannot write {}: {e}",
                human_bytes(bytes),
                dir.join("memory.max").display()
            )),
        }
    }
    if let (true, Some(cpus)) = (with_cpuset && has("cpuset"), applied.cpuset.as_ref()) {
        // Affinity already enforces the set; the cgroup cpuset is a second fence.
        let _ = write_file(&dir.join("cpuset.cpus"), &CpuSet(cpus.clone()).to_string());
    }
    Some(guard)
}

fn prepare_v1(
    cpu_mount: Option<PathBuf>,
    mem_mount: Option<PathBuf>,
    leaf: &str,
    label: &str,
    limits: &Limits,
    applied: &mut Applied,
) -> Option<CgroupGuard> {
    let mut guard = CgroupGuard {
        version: CgroupVersion::V1,
        dirs: Vec::new(),
        memory_dir: None,
        cpu_dir: None,
    };

    if let Some(cores) = limits.cpus {
        match &cpu_mount {
            None => applied.warnings.push(format!(
                "{label}: CPU quota {cores} cores not enforced: no cgroup v1 cpu hierarchy is \
                 mounted and cgroup v2 has no cpu controller; run without `cpus` or enable the \
                 cpu controller"
            )),
            Some(mount) => match make_v1_dir(mount, "cpu", leaf) {
                Err(why) => applied.warnings.push(format!(
                    "{label}: CPU quota {cores} cores not enforced: {why}; run as root or \
                     without limits"
                )),
                Ok(dir) => {
                    guard.dirs.push(dir.clone());
                    guard.cpu_dir = Some(dir.clone());
                    let res =
                        write_file(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())
                            .and_then(|()| {
                                write_file(
                                    &dir.join("cpu.cfs_quota_us"),
                                    &quota_us(cores).to_string(),
                                )
                            });
                    match res {
                        Ok(()) => applied.cpu_quota_cores = Some(cores),
                        Err(e) => applied.warnings.push(format!(
                            "{label}: CPU quota {cores} cores not enforced: cannot write \
                             {}: {e}",
                            dir.join("cpu.cfs_quota_us").display()
                        )),
                    }
                }
            },
        }
    }
    if let Some(bytes) = limits.memory {
        let human = human_bytes(bytes);
        match &mem_mount {
            None => applied.warnings.push(format!(
                "{label}: memory limit {human} not enforced: no cgroup v1 memory hierarchy is \
                 mounted and cgroup v2 has no memory controller; run without `memory` or enable \
                 the memory controller"
            )),
            Some(mount) => match make_v1_dir(mount, "memory", leaf) {
                Err(why) => applied.warnings.push(format!(
                    "{label}: memory limit {human} not enforced: {why}; run as root or without \
                     limits"
                )),
                Ok(dir) => {
                    guard.dirs.push(dir.clone());
                    match write_file(&dir.join("memory.limit_in_bytes"), &bytes.to_string()) {
                        Ok(()) => {
                            applied.memory_bytes = Some(bytes);
                            guard.memory_dir = Some(dir.clone());
                            let memsw = dir.join("memory.memsw.limit_in_bytes");
                            if memsw.is_file() {
                                if let Err(e) = write_file(&memsw, &bytes.to_string()) {
                                    applied.warnings.push(format!(
                                        "{label}: swap not disabled for memory limit {human}: \
                                         cannot write {}: {e}; the target may swap instead of \
                                         hitting the limit",
                                        memsw.display()
                                    ));
                                }
                            }
                        }
                        Err(e) => applied.warnings.push(format!(
                            "{label}: memory limit {human} not enforced: cannot write {}: {e}",
                            dir.join("memory.limit_in_bytes").display()
                        )),
                    }
                }
            },
        }
    }
    if guard.dirs.is_empty() {
        None
    } else {
        Some(guard)
    }
}

/// Creates `<base>/loadbench/<leaf>` in a v1 hierarchy, where base is loadbench's own cgroup of
/// controller `controller` when it exists under `mount`, else the mount itself.
fn make_v1_dir(mount: &Path, controller: &str, leaf: &str) -> Result<PathBuf, String> {
    let own = own_v1_cgroup(controller)
        .map(|p| mount.join(p.trim_start_matches('/')))
        .filter(|p| p.is_dir());
    let base = own.unwrap_or_else(|| mount.to_path_buf());
    let dir = base.join("loadbench").join(leaf);
    let mut last = None;
    for _ in 0..3 {
        match create_dir(&base.join("loadbench")).and_then(|()| create_dir(&dir)) {
            Ok(()) => {
                if dir.join("cgroup.procs").is_file() {
                    return Ok(dir);
                }
                let _ = fs::remove_dir(&dir);
                return Err(format!("{} is not a cgroup filesystem", mount.display()));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => last = Some(e),
            Err(e) => return Err(no_cgroup_reason(&dir, &e)),
        }
    }
    let e = last.unwrap_or_else(|| io::Error::other("unknown error"));
    Err(no_cgroup_reason(&dir, &e))
}

/// Loadbench's own cgroup path in the v1 hierarchy that has `controller` (from /proc/self/cgroup).
fn own_v1_cgroup(controller: &str) -> Option<String> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let _id = parts.next()?;
        let ctls = parts.next()?;
        let path = parts.next()?;
        ctls.split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })
}

fn no_cgroup_reason(dir: &Path, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => format!(
            "no writable cgroup (cannot create {}: permission denied)",
            dir.display()
        ),
        _ if e.raw_os_error() == Some(libc::EROFS) => format!(
            "no writable cgroup (cannot create {}: the cgroup filesystem is read-only)",
            dir.display()
        ),
        _ => format!("cannot create cgroup {}: {e}", dir.display()),
    }
}

fn warn_cgroup_limits(
    label: &str,
    limits: &Limits,
    why: &str,
    cpu: bool,
    mem: bool,
    warnings: &mut Vec<String>,
) {
    if let (true, Some(cores)) = (cpu, limits.cpus) {
        warnings.push(format!(
            "{label}: CPU quota {cores} cores not enforced: {why}; run as root or without limits"
        ));
    }
    if let (true, Some(bytes)) = (mem, limits.memory) {
        warnings.push(format!(
            "{label}: memory limit {} not enforced: {why}; run as root or without limits",
            human_bytes(bytes)
        ));
    }
}

/// Keeps the CPUs of `cpus` that are online; warns about the others.
fn check_cpuset(label: &str, cpus: &[usize], warnings: &mut Vec<String>) -> Option<Vec<usize>> {
    let set = CpuSet(cpus.to_vec());
    let online: Option<Vec<usize>> = fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| t.trim().parse::<CpuSet>().ok())
        .map(|c| c.0);
    let Some(online) = online else {
        return Some(cpus.to_vec());
    };
    let (ok, missing): (Vec<usize>, Vec<usize>) = cpus.iter().partition(|c| online.contains(c));
    let online_s = CpuSet(online).to_string();
    if ok.is_empty() {
        warnings.push(format!(
            "{label}: CPU set {set} not enforced: none of these CPUs exist on this host (online: \
             {online_s}); fix `cpuset`"
        ));
        return None;
    }
    if !missing.is_empty() {
        warnings.push(format!(
            "{label}: CPU set {set} only partly enforced: CPUs {} do not exist on this host \
             (online: {online_s}); pinned to {}",
            CpuSet(missing),
            CpuSet(ok.clone())
        ));
    }
    Some(ok)
}

/// Puts process `pid` in the cgroup and pins it to `applied.cpuset`; failures become warnings
/// in `applied` (the limit is then recorded as not enforced). Call right after spawn.
pub fn apply_to_pid(name: &str, guard: Option<&CgroupGuard>, applied: &mut Applied, pid: u32) {
    if let Some(g) = guard {
        if let Err(e) = g.attach(pid) {
            applied.warnings.push(format!(
                "target '{name}': cgroup limits not enforced: cannot move pid {pid} into {}: {e}",
                g.dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            applied.cpu_quota_cores = None;
            applied.memory_bytes = None;
        }
    }
    if let Some(cpus) = applied.cpuset.clone() {
        if let Err(e) = set_affinity(pid, &cpus) {
            applied.warnings.push(format!(
                "target '{name}': CPU set {} not enforced: sched_setaffinity({pid}) failed: {e}",
                CpuSet(cpus)
            ));
            applied.cpuset = None;
        }
    }
}

/// Sets the CPU affinity of process `pid` (0 = the caller) to `cpus`; its future children
/// inherit it.
pub fn set_affinity(pid: u32, cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad pid"))?;
    sched_setaffinity(pid, &set)
}

/// Adds a `pre_exec` hook to `cmd` that, in the child before exec, joins the cgroup of `guard`
/// and pins the child to `cpus`. Errors in the child are ignored (the spawn must not fail
/// because of limits): call [`apply_to_pid`] after spawn to check and record them.
pub fn join_in_child(cmd: &mut Command, guard: Option<&CgroupGuard>, cpus: Option<&[usize]>) {
    let paths = guard.map(CgroupGuard::procs_paths).unwrap_or_default();
    let set = cpus.and_then(|c| cpu_set(c).ok());
    if paths.is_empty() && set.is_none() {
        return;
    }
    add_pre_exec(cmd, paths, set);
}

#[allow(unsafe_code)]
fn add_pre_exec(cmd: &mut Command, paths: Vec<CString>, set: Option<libc::cpu_set_t>) {
    // SAFETY: the hook runs between fork and exec, where only async-signal-safe calls are
    // allowed. It calls open(2), write(2), close(2) and sched_setaffinity(2) only, on data
    // prepared before fork (NUL-terminated paths, a filled cpu_set_t), and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            for path in &paths {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    let _ = libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
            }
            if let Some(set) = &set {
                let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
            }
            Ok(())
        });
    }
}

#[allow(unsafe_code)]
fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= max) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU list must be non-empty with CPUs below {max}"),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is the empty set; CPU_SET is
    // only called with indexes checked above to be inside the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        Ok(set)
    }
}

#[allow(unsafe_code)]
fn sched_setaffinity(pid: libc::pid_t, set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t borrowed for the call, and its size is passed.
    let rc = unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[allow(unsafe_code)]
fn kill(pid: u32, signal: i32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        if pid > 1 {
            // SAFETY: kill(2) takes plain integers; pid > 1 addresses one process.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }
}

fn quota_us(cores: f64) -> u64 {
    // The kernel refuses quotas under 1 ms.
    ((cores * CPU_PERIOD_US as f64).round() as u64).max(1000)
}

fn create_dir(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        r => r,
    }
}

/// Writes `value` to an existing (cgroup) file; never creates files.
fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("t{s}")
    } else {
        s
    }
}

/// `8GiB`, `512MiB`, `4KiB` or `N bytes`.
pub fn human_bytes(bytes: u64) -> String {
    let mut s = String::new();
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes.is_multiple_of(size) {
            let _ = write!(s, "{}{unit}", bytes / size);
            return s;
        }
    }
    format!("{bytes} bytes")
}
