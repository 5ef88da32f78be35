//! cgroup v1: one hierarchy per controller (`cpu`, `memory`), each target's directory made
//! under loadbench's own cgroup of that hierarchy, so limits set on loadbench itself still
//! apply. Fills in the [`Files`] and [`Hierarchy`] that the shared steps in `mod.rs` use.

use super::{
    create_dir, no_cgroup_reason, CgroupVersion, Controller, Files, Hierarchy, AS_ROOT,
    CPU_PERIOD_US,
};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(super) static FILES: Files = Files {
    version: CgroupVersion::V1,
    cpu_quota: |quota| {
        vec![
            ("cpu.cfs_period_us", CPU_PERIOD_US.to_string()),
            ("cpu.cfs_quota_us", quota.to_string()),
        ]
    },
    memory_max: "memory.limit_in_bytes",
    // Memory + swap capped at the memory limit: no room to swap.
    no_swap: |bytes| ("memory.memsw.limit_in_bytes", bytes.to_string()),
    memory_peak: "memory.max_usage_in_bytes",
    cpu_usage: ("cpuacct.usage", |text| {
        text.trim().parse::<u64>().ok().map(|ns| ns / 1000)
    }),
};

/// The `cpu` and `memory` hierarchies mounted under `root`, if any.
pub(super) fn mounts(root: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
    let cpu = [root.join("cpu,cpuacct"), root.join("cpu")]
        .into_iter()
        .find(|d| d.join("cpu.cfs_quota_us").is_file());
    let memory = Some(root.join("memory")).filter(|d| d.join("memory.limit_in_bytes").is_file());
    (cpu, memory)
}

/// One target's directories in the v1 hierarchies, made when a limit needs them.
pub(super) struct V1 {
    cpu: Option<PathBuf>,
    memory: Option<PathBuf>,
    leaf: String,
    created: Vec<PathBuf>,
}

impl V1 {
    /// `cpu` and `memory` are the mounted hierarchies ([`mounts`]); `leaf` the target's name.
    pub(super) fn new(cpu: Option<PathBuf>, memory: Option<PathBuf>, leaf: &str) -> V1 {
        V1 {
            cpu,
            memory,
            leaf: leaf.to_string(),
            created: Vec::new(),
        }
    }
}

impl Hierarchy for V1 {
    fn files(&self) -> &'static Files {
        &FILES
    }

    fn dir(&mut self, controller: Controller) -> Result<PathBuf, String> {
        let mount = match controller {
            Controller::Cpu => &self.cpu,
            Controller::Memory => &self.memory,
        };
        let (c, key) = (controller.name(), controller.key());
        let Some(mount) = mount else {
            return Err(format!(
                "no cgroup v1 {c} hierarchy is mounted and cgroup v2 has no {c} controller; run \
                 without `{key}` or enable the {c} controller"
            ));
        };
        let dir = make_dir(mount, c, &self.leaf).map_err(|why| format!("{why}; {AS_ROOT}"))?;
        self.created.push(dir.clone());
        Ok(dir)
    }

    fn created(&self) -> Vec<PathBuf> {
        self.created.clone()
    }
}

/// Creates `<base>/loadbench/<leaf>` in a v1 hierarchy, where base is loadbench's own cgroup of
/// controller `controller` when it exists under `mount`, else the mount itself.
fn make_dir(mount: &Path, controller: &str, leaf: &str) -> Result<PathBuf, String> {
    let own = own_cgroup(controller)
        .map(|p| mount.join(p.trim_start_matches('/')))
        .filter(|p| p.is_dir());
    let base = own.unwrap_or_else(|| mount.to_path_buf());
    let dir = base.join("loadbench").join(leaf);
    let mut last = None;
    // Another target's guard may remove `loadbench/` between our mkdirs: retry.
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
fn own_cgroup(controller: &str) -> Option<String> {
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
