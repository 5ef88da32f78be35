//! Per-target limits: CPU quota, memory limit, CPU affinity, and warnings when nothing applies.
//!
//! On a host without usable cgroup controllers the quota/memory tests check that the warning
//! appears instead of the limit.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use loadbench_harness::limits::{
    self, apply_to_pid, join_in_child, peak_memory, prepare, prepare_at, read_memory_max,
    set_affinity, Applied, CgroupGuard,
};
use loadbench_harness::scenario::{CpuSet, Limits};

use crate::cpu_exclusive;

const MIB: u64 = 1 << 20;

/// Kills the child's whole process group and reaps it on drop.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let pgid = self.0.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(script: &str, name: &str, guard: Option<&CgroupGuard>, applied: &mut Applied) -> Kill {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    join_in_child(&mut cmd, guard, applied.cpuset.as_deref());
    let child = cmd.spawn().expect("spawn sh");
    apply_to_pid(name, guard, applied, child.id());
    Kill(child)
}

/// utime + stime of `pid` in clock ticks (CLK_TCK = 100).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn has_warning(applied: &Applied, what: &str) -> bool {
    applied
        .warnings
        .iter()
        .any(|w| w.contains(what) && w.contains("not enforced"))
}

#[test]
fn cpu_quota_half_core_caps_busy_loop() {
    let _cpu = cpu_exclusive();
    let lim = Limits {
        cpus: Some(0.5),
        ..Limits::default()
    };
    let (guard, mut applied) = prepare("busy", &lim);
    if applied.cpu_quota_cores.is_none() {
        eprintln!("no CPU quota on this host: {:?}", applied.warnings);
        assert!(has_warning(&applied, "CPU quota 0.5 cores"), "{applied:?}");
        return;
    }
    let guard = guard.expect("guard when quota applied");
    let child = spawn("while :; do :; done", "busy", Some(&guard), &mut applied);
    assert_eq!(applied.cpu_quota_cores, Some(0.5), "{applied:?}");
    let pid = child.0.id();
    thread::sleep(Duration::from_millis(200));
    let (t0, s0) = (Instant::now(), cpu_ticks(pid));
    thread::sleep(Duration::from_secs(2));
    let (t1, s1) = (Instant::now(), cpu_ticks(pid));
    let cores = (s1 - s0) as f64 / 100.0 / (t1 - t0).as_secs_f64();
    eprintln!("busy loop under 0.5-core quota used {cores:.3} cores");
    assert!(cores <= 0.6, "used {cores} cores under a 0.5-core quota");
    assert!(cores > 0.2, "used only {cores} cores");
    drop(child);
    drop(guard);
}

#[test]
fn memory_limit_visible_and_enforced() {
    let _cpu = cpu_exclusive(); // the allocating pipeline keeps a core busy until it is killed
    let lim = Limits {
        memory: Some(64 * MIB),
        ..Limits::default()
    };
    let (guard, mut applied) = prepare("mem", &lim);
    if applied.memory_bytes.is_none() {
        eprintln!("no memory limit on this host: {:?}", applied.warnings);
        assert!(has_warning(&applied, "memory limit 64MiB"), "{applied:?}");
        return;
    }
    let guard = guard.expect("guard when memory limit applied");
    assert_eq!(read_memory_max(&guard), Some(64 * MIB));
    let json = serde_json::to_string(&applied).unwrap();
    assert!(
        json.contains(&format!("\"memory_bytes\":{}", 64 * MIB)),
        "{json}"
    );

    // tail -c N on a pipe keeps N bytes in memory: 200 MiB under a 64 MiB limit.
    let mut child = spawn(
        "head -c 209715200 /dev/zero | tail -c 209715200 >/dev/null",
        "mem",
        Some(&guard),
        &mut applied,
    );
    assert_eq!(applied.memory_bytes, Some(64 * MIB), "{applied:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "allocating child was not stopped"
        );
        thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !status.success(),
        "200 MiB under 64 MiB succeeded: {status}"
    );
    if let Some(peak) = peak_memory(&guard) {
        assert!(peak <= 65 * MIB, "peak {peak} above the limit");
    }
    drop(child);
    drop(guard);
}

#[test]
fn affinity_to_cpu0_shows_in_status() {
    let lim = Limits {
        cpuset: Some(CpuSet(vec![0])),
        ..Limits::default()
    };
    let (guard, mut applied) = prepare("pin", &lim);
    assert!(guard.is_none(), "no cgroup needed for a CPU set alone");
    assert_eq!(applied.cpuset, Some(vec![0]), "{applied:?}");
    let child = spawn("sleep 30", "pin", None, &mut applied);
    assert!(applied.warnings.is_empty(), "{applied:?}");
    let status = fs::read_to_string(format!("/proc/{}/status", child.0.id())).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");

    // set_affinity on its own, and refusing nonsense.
    set_affinity(child.0.id(), &[0]).unwrap();
    assert!(set_affinity(child.0.id(), &[]).is_err());
}

#[test]
fn nonexistent_cpus_warn() {
    let lim = Limits {
        cpuset: Some(CpuSet(vec![4000])),
        ..Limits::default()
    };
    let (guard, applied) = prepare("ghost", &lim);
    assert!(guard.is_none());
    assert_eq!(applied.cpuset, None);
    assert!(
        has_warning(&applied, "target 'ghost': CPU set 4000"),
        "{applied:?}"
    );
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lb-limits-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

#[test]
fn no_cgroup_root_gives_warnings() {
    let lim = Limits {
        cpus: Some(1.5),
        memory: Some(8 << 30),
        cpuset: None,
    };
    let root = temp_dir("missing").join("nope");
    let (guard, applied) = prepare_at(&root, "nginx", &lim);
    assert!(guard.is_none());
    assert_eq!(applied.cpu_quota_cores, None);
    assert_eq!(applied.memory_bytes, None);
    assert!(
        has_warning(&applied, "target 'nginx': CPU quota 1.5 cores"),
        "{applied:?}"
    );
    assert!(
        has_warning(&applied, "target 'nginx': memory limit 8GiB"),
        "{applied:?}"
    );
}

#[test]
fn fake_cgroup_dirs_give_warnings() {
    // Looks like cgroup v2 (and a read-only v1 layout), but is a plain directory: even root can
    // write it, so the kernel's missing files must be noticed.
    let root = temp_dir("fake");
    fs::create_dir_all(root.join("memory")).unwrap();
    fs::write(root.join("cgroup.controllers"), "cpu memory\n").unwrap();
    fs::write(root.join("memory").join("memory.limit_in_bytes"), "0\n").unwrap();
    let lim = Limits {
        cpus: Some(0.5),
        memory: Some(64 * MIB),
        cpuset: None,
    };
    let (guard, applied) = prepare_at(&root, "fake", &lim);
    assert!(guard.is_none(), "{applied:?}");
    assert!(has_warning(&applied, "CPU quota 0.5 cores"), "{applied:?}");
    assert!(has_warning(&applied, "memory limit 64MiB"), "{applied:?}");
    let left: Vec<_> = fs::read_dir(root.join("loadbench"))
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "leaf dirs left behind: {left:?}");

    // v1 layout only, read-only directory.
    let ro = temp_dir("ro");
    fs::create_dir_all(ro.join("memory")).unwrap();
    fs::write(ro.join("memory").join("memory.limit_in_bytes"), "0\n").unwrap();
    let mut perm = fs::metadata(ro.join("memory")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o555);
    fs::set_permissions(ro.join("memory"), perm).unwrap();
    let (guard, applied) = prepare_at(&ro, "ro", &lim);
    assert!(guard.is_none(), "{applied:?}");
    assert!(has_warning(&applied, "memory limit 64MiB"), "{applied:?}");
    assert!(has_warning(&applied, "CPU quota 0.5 cores"), "{applied:?}");
    let _ = fs::remove_dir_all(&root);
    let mut perm = fs::metadata(ro.join("memory")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    let _ = fs::set_permissions(ro.join("memory"), perm);
    let _ = fs::remove_dir_all(&ro);
}

#[test]
fn cgroup_removed_on_drop() {
    let lim = Limits {
        cpus: Some(1.0),
        memory: Some(128 * MIB),
        cpuset: None,
    };
    let (guard, mut applied) = prepare("cleanup", &lim);
    let Some(guard) = guard else {
        assert!(!applied.warnings.is_empty(), "{applied:?}");
        return;
    };
    let dirs = guard.dirs().to_vec();
    assert!(dirs.iter().all(|d| d.is_dir()));
    // A child still running in the cgroup is killed by the guard.
    let child = spawn("sleep 30", "cleanup", Some(&guard), &mut applied);
    assert!(guard.pids().contains(&child.0.id()));
    drop(guard);
    assert!(dirs.iter().all(|d| !d.exists()), "left behind: {dirs:?}");
    drop(child);
    assert_eq!(limits::human_bytes(8 << 30), "8GiB");
}
