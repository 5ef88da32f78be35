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
//! Layout: the steps are the same for both versions and written once here (`write_limits`:
//! find the controller's directory, write the limit, turn swap off, record it or warn); what
//! differs is behind `Hierarchy` and a table of `Files`, filled in by `v1.rs` and `v2.rs`.
//! `affinity.rs` holds the process side: CPU affinity and joining the cgroup before exec.
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

mod affinity;
mod v1;
mod v2;

pub use affinity::{join_in_child, set_affinity};

use std::ffi::CString;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
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
    /// One hierarchy per controller.
    V1,
    /// The unified hierarchy.
    V2,
}

/// The files of one cgroup version that hold limits and usage; `v1.rs` and `v2.rs` fill one in.
#[derive(Debug)]
struct Files {
    version: CgroupVersion,
    /// The writes, in order, that set a quota of this many µs per [`CPU_PERIOD_US`].
    cpu_quota: fn(u64) -> Vec<(&'static str, String)>,
    /// The memory limit in bytes (written, and read back).
    memory_max: &'static str,
    /// The write that keeps a target with this memory limit from swapping (made when the file
    /// exists).
    no_swap: fn(u64) -> (&'static str, String),
    /// Peak memory use in bytes.
    memory_peak: &'static str,
    /// The file with the CPU time used, and how to read microseconds from it.
    cpu_usage: (&'static str, fn(&str) -> Option<u64>),
}

/// A controller a limit needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controller {
    Cpu,
    Memory,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Memory => "memory",
        }
    }

    /// The scenario key whose limit needs this controller.
    fn key(self) -> &'static str {
        match self {
            Controller::Cpu => "cpus",
            Controller::Memory => "memory",
        }
    }
}

/// Where one cgroup version keeps a target's controller directories.
trait Hierarchy {
    fn files(&self) -> &'static Files;
    /// The directory with `controller`'s files for this target (created on first use), or why
    /// there is none: one clause ending in what to do.
    fn dir(&mut self, controller: Controller) -> Result<PathBuf, String>;
    /// Every directory created so far (removed again by the guard).
    fn created(&self) -> Vec<PathBuf>;
}

/// A cgroup created for one target; drop kills what is left in it and removes it.
#[derive(Debug)]
pub struct CgroupGuard {
    files: &'static Files,
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
        self.files.version
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

    /// Total CPU time used by the cgroup in microseconds, when the CPU is limited.
    pub fn cpu_usage_usec(&self) -> Option<u64> {
        let (file, read) = self.files.cpu_usage;
        read(&fs::read_to_string(self.cpu_dir.as_ref()?.join(file)).ok()?)
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
    let v = read_u64(&guard.memory_dir.as_ref()?.join(guard.files.memory_max))?;
    // v1 reports "unlimited" as a huge page-aligned number.
    (v < (1 << 62)).then_some(v)
}

/// Peak memory use of the cgroup (`memory.peak` on v2, `memory.max_usage_in_bytes` on v1).
pub fn peak_memory(guard: &CgroupGuard) -> Option<u64> {
    read_u64(&guard.memory_dir.as_ref()?.join(guard.files.memory_peak))
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
        applied.cpuset = affinity::check_cpuset(&label, cpus, &mut applied.warnings);
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
    let need = needed(limits);
    let guard = match pick(root, &need) {
        Ok(Pick::V2(v2)) => v2::prepare(&v2, &leaf, &need, &label, limits, &mut applied),
        Ok(Pick::V1 { cpu, memory }) => {
            let mut h = v1::V1::new(cpu, memory, &leaf);
            write_limits(&mut h, &label, limits, &mut applied)
        }
        Err(why) => {
            warn_cgroup_limits(&label, limits, &why, &mut applied.warnings);
            None
        }
    };
    if let Some(g) = &guard {
        applied.cgroup = g.dirs.first().cloned();
    }
    (guard, applied)
}

/// The controllers `limits` need.
fn needed(limits: &Limits) -> Vec<Controller> {
    let mut need = Vec::new();
    if limits.cpus.is_some() {
        need.push(Controller::Cpu);
    }
    if limits.memory.is_some() {
        need.push(Controller::Memory);
    }
    need
}

/// Which cgroup version serves a target.
enum Pick {
    /// The v2 root, offering every needed controller.
    V2(PathBuf),
    /// The v1 `cpu` and `memory` hierarchies that are mounted.
    V1 {
        cpu: Option<PathBuf>,
        memory: Option<PathBuf>,
    },
}

/// v2 when its root offers every controller in `need`, else v1 when one of its hierarchies is
/// mounted, else why neither can be used.
fn pick(root: &Path, need: &[Controller]) -> Result<Pick, String> {
    let v2_root = [root.to_path_buf(), root.join("unified")]
        .into_iter()
        .find(|r| r.join("cgroup.controllers").is_file());
    let offered = |r: &Path| fs::read_to_string(r.join("cgroup.controllers")).unwrap_or_default();
    if let Some(r) = &v2_root {
        let ctl = offered(r);
        if need
            .iter()
            .all(|n| ctl.split_whitespace().any(|c| c == n.name()))
        {
            return Ok(Pick::V2(r.clone()));
        }
    }
    let (cpu, memory) = v1::mounts(root);
    if cpu.is_some() || memory.is_some() {
        return Ok(Pick::V1 { cpu, memory });
    }
    Err(match &v2_root {
        Some(r) => format!(
            "cgroup v2 at {} offers controllers [{}], not [{}], and no cgroup v1 cpu/memory \
             hierarchy is mounted under {}",
            r.display(),
            offered(r).trim(),
            need.iter().map(|c| c.name()).collect::<Vec<_>>().join(" "),
            root.display()
        ),
        None => format!(
            "no cgroup filesystem (v1 or v2) found at {}",
            root.display()
        ),
    })
}

/// Writes the CPU quota and the memory limit through `h`, the same steps for both versions:
/// what holds goes into `applied`, every failure becomes a warning. Returns the guard of the
/// directories created, if any.
fn write_limits(
    h: &mut dyn Hierarchy,
    label: &str,
    limits: &Limits,
    applied: &mut Applied,
) -> Option<CgroupGuard> {
    let files = h.files();
    let (mut cpu_dir, mut memory_dir) = (None, None);
    if let Some(cores) = limits.cpus {
        let writes = (files.cpu_quota)(quota_us(cores));
        match write_in(h, Controller::Cpu, &writes) {
            Ok(dir) => {
                applied.cpu_quota_cores = Some(cores);
                cpu_dir = Some(dir);
            }
            Err(why) => applied.warnings.push(format!(
                "{label}: CPU quota {cores} cores not enforced: {why}"
            )),
        }
    }
    if let Some(bytes) = limits.memory {
        let writes = [(files.memory_max, bytes.to_string())];
        match write_in(h, Controller::Memory, &writes) {
            Ok(dir) => {
                applied.memory_bytes = Some(bytes);
                turn_swap_off(&dir, files, bytes, label, &mut applied.warnings);
                memory_dir = Some(dir);
            }
            Err(why) => applied.warnings.push(format!(
                "{label}: memory limit {} not enforced: {why}",
                human_bytes(bytes)
            )),
        }
    }
    let dirs = h.created();
    (!dirs.is_empty()).then_some(CgroupGuard {
        files,
        dirs,
        memory_dir,
        cpu_dir,
    })
}

/// Makes `controller`'s directory and writes `writes` there; returns it, or why not.
fn write_in(
    h: &mut dyn Hierarchy,
    controller: Controller,
    writes: &[(&str, String)],
) -> Result<PathBuf, String> {
    let dir = h.dir(controller)?;
    for (file, value) in writes {
        let path = dir.join(file);
        write_file(&path, value).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// A memory limit the target could dodge by swapping is not the limit asked for.
fn turn_swap_off(dir: &Path, files: &Files, bytes: u64, label: &str, warnings: &mut Vec<String>) {
    let (file, value) = (files.no_swap)(bytes);
    let path = dir.join(file);
    if !path.is_file() {
        return;
    }
    if let Err(e) = write_file(&path, &value) {
        warnings.push(format!(
            "{label}: swap not disabled for memory limit {}: cannot write {}: {e}; the target \
             may swap instead of hitting the limit",
            human_bytes(bytes),
            path.display()
        ));
    }
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

/// The suffix of a reason that no cgroup could be made.
const AS_ROOT: &str = "run as root or without limits";

fn warn_cgroup_limits(label: &str, limits: &Limits, why: &str, warnings: &mut Vec<String>) {
    if let Some(cores) = limits.cpus {
        warnings.push(format!(
            "{label}: CPU quota {cores} cores not enforced: {why}; {AS_ROOT}"
        ));
    }
    if let Some(bytes) = limits.memory {
        warnings.push(format!(
            "{label}: memory limit {} not enforced: {why}; {AS_ROOT}",
            human_bytes(bytes)
        ));
    }
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

/// Creates `dir`; one that exists already is fine (another target made it).
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A hierarchy in a plain directory holding the version's files, so the shared steps can be
    /// watched writing them (real cgroups need root and a kernel with that version).
    struct Fake {
        dir: PathBuf,
        files: &'static Files,
    }

    impl Hierarchy for Fake {
        fn files(&self) -> &'static Files {
            self.files
        }
        fn dir(&mut self, _: Controller) -> Result<PathBuf, String> {
            Ok(self.dir.clone())
        }
        fn created(&self) -> Vec<PathBuf> {
            vec![self.dir.clone()]
        }
    }

    /// Writes a 0.5-core quota and a 64 MiB limit through `files`; returns what each file holds,
    /// the memory limit read back and the CPU time read from `usage` (the usage file's text).
    fn written(files: &'static Files, usage: &str) -> (BTreeMap<String, String>, u64, u64) {
        let base = std::env::temp_dir().join(format!(
            "lb-limits-files-{}-{:?}",
            std::process::id(),
            files.version
        ));
        let dir = base.join("leaf");
        fs::create_dir_all(&dir).unwrap();
        let (swap, _) = (files.no_swap)(0);
        let mut names: Vec<&str> = (files.cpu_quota)(0).into_iter().map(|(f, _)| f).collect();
        names.extend([files.memory_max, swap]);
        for name in &names {
            fs::write(dir.join(name), "").unwrap();
        }
        fs::write(dir.join(files.cpu_usage.0), usage).unwrap();
        let limits = Limits {
            cpus: Some(0.5),
            memory: Some(64 << 20),
            cpuset: None,
        };
        let mut applied = Applied::default();
        let mut fake = Fake { dir, files };
        let guard = write_limits(&mut fake, "target 't'", &limits, &mut applied).unwrap();
        assert_eq!(applied.warnings, Vec::<String>::new());
        assert_eq!(
            (applied.cpu_quota_cores, applied.memory_bytes),
            (Some(0.5), Some(64 << 20))
        );
        let read = |n: &&str| (n.to_string(), fs::read_to_string(fake.dir.join(n)).unwrap());
        let out = (
            names.iter().map(read).collect(),
            read_memory_max(&guard).unwrap(),
            guard.cpu_usage_usec().unwrap(),
        );
        drop(guard);
        let _ = fs::remove_dir_all(&base);
        out
    }

    #[test]
    fn v1_and_v2_write_the_same_limits_to_their_own_files() {
        let pairs = |p: &[(&str, &str)]| -> BTreeMap<String, String> {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let (v1, max1, cpu1) = written(&v1::FILES, "7000000\n");
        assert_eq!(
            v1,
            pairs(&[
                ("cpu.cfs_period_us", "100000"),
                ("cpu.cfs_quota_us", "50000"),
                ("memory.limit_in_bytes", "67108864"),
                ("memory.memsw.limit_in_bytes", "67108864"),
            ])
        );
        let (v2, max2, cpu2) = written(&v2::FILES, "usage_usec 7000\nuser_usec 5000\n");
        assert_eq!(
            v2,
            pairs(&[
                ("cpu.max", "50000 100000"),
                ("memory.max", "67108864"),
                ("memory.swap.max", "0"),
            ])
        );
        assert_eq!((max1, max2), (64 << 20, 64 << 20));
        assert_eq!((cpu1, cpu2), (7000, 7000));
    }
}
