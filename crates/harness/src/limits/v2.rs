//! cgroup v2: one directory per target under `<root>/loadbench/`, the controllers enabled in the
//! parents' `cgroup.subtree_control`, and the CPU set also written to `cpuset.cpus` when that
//! controller is offered. Fills in the [`Files`] and [`Hierarchy`] that the shared steps in
//! `mod.rs` use.

use super::{
    create_dir, no_cgroup_reason, write_file, write_limits, Applied, CgroupGuard, CgroupVersion,
    Controller, Files, Hierarchy, AS_ROOT, CPU_PERIOD_US,
};
use crate::scenario::{CpuSet, Limits};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(super) static FILES: Files = Files {
    version: CgroupVersion::V2,
    cpu_quota: |quota| vec![("cpu.max", format!("{quota} {CPU_PERIOD_US}"))],
    memory_max: "memory.max",
    no_swap: |_| ("memory.swap.max", "0".to_string()),
    memory_peak: "memory.peak",
    cpu_usage: ("cpu.stat", |text| {
        text.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse().ok())
    }),
};

/// A target's v2 cgroup: its directory (or why it could not be made) and the controllers it got.
struct V2 {
    dir: Result<PathBuf, String>,
    controllers: String,
}

impl Hierarchy for V2 {
    fn files(&self) -> &'static Files {
        &FILES
    }

    fn dir(&mut self, controller: Controller) -> Result<PathBuf, String> {
        let dir = self
            .dir
            .as_ref()
            .map_err(|why| format!("{why}; {AS_ROOT}"))?;
        let c = controller.name();
        if !self.controllers.split_whitespace().any(|x| x == c) {
            return Err(format!(
                "the {c} controller could not be enabled in {}",
                dir.display()
            ));
        }
        Ok(dir.clone())
    }

    fn created(&self) -> Vec<PathBuf> {
        self.dir.iter().cloned().collect()
    }
}

/// Makes the target's cgroup under the v2 root `v2`, writes its limits and its CPU set.
pub(super) fn prepare(
    v2: &Path,
    leaf: &str,
    need: &[Controller],
    label: &str,
    limits: &Limits,
    applied: &mut Applied,
) -> Option<CgroupGuard> {
    let mut wanted: Vec<&str> = need.iter().map(|c| c.name()).collect();
    let offered = fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
    let with_cpuset = applied.cpuset.is_some() && offered.split_whitespace().any(|c| c == "cpuset");
    if with_cpuset {
        wanted.push("cpuset");
    }
    let dir = v2.join("loadbench").join(leaf);
    let mut h = V2 {
        dir: create(v2, &dir, &wanted)
            .map(|()| dir.clone())
            .map_err(|e| no_cgroup_reason(&dir, &e)),
        controllers: fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default(),
    };
    let mut guard = write_limits(&mut h, label, limits, applied);
    if let Some(g) = guard.as_mut() {
        // CPU time is accounted in every v2 cgroup, limited or not.
        g.cpu_dir = Some(dir.clone());
    }
    let cpus = applied.cpuset.as_ref();
    if let (true, true, Some(cpus)) = (with_cpuset, h.dir.is_ok(), cpus) {
        if h.controllers.split_whitespace().any(|c| c == "cpuset") {
            // Affinity already enforces the set; the cgroup cpuset is a second fence.
            let _ = write_file(&dir.join("cpuset.cpus"), &CpuSet(cpus.clone()).to_string());
        }
    }
    guard
}

/// Creates `<v2>/loadbench/<leaf>` (= `dir`) with the `wanted` controllers enabled above it.
fn create(v2: &Path, dir: &Path, wanted: &[&str]) -> io::Result<()> {
    let parent = v2.join("loadbench");
    // Another target's guard may remove `loadbench/` between our mkdirs: retry.
    let mut result = Err(io::Error::other("not tried"));
    for _ in 0..3 {
        result = create_once(v2, &parent, dir, wanted);
        if !result
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
        {
            break;
        }
    }
    result
}

fn create_once(v2: &Path, parent: &Path, dir: &Path, wanted: &[&str]) -> io::Result<()> {
    create_dir(parent)?;
    for c in wanted {
        // Ignored when already enabled or refused; the leaf's controllers tell.
        let _ = write_file(&v2.join("cgroup.subtree_control"), &format!("+{c}"));
        let _ = write_file(&parent.join("cgroup.subtree_control"), &format!("+{c}"));
    }
    create_dir(dir)?;
    if !dir.join("cgroup.procs").is_file() {
        let _ = fs::remove_dir(dir);
        return Err(io::Error::other(format!(
            "{} is not a cgroup filesystem",
            v2.display()
        )));
    }
    Ok(())
}
