//! The process side of limits: CPU affinity (which CPUs of a CPU set exist, pinning a running
//! process) and the `pre_exec` hook that joins the cgroup and pins the target between fork and
//! exec, so that nothing it forks escapes. The unsafe calls of limits live here.

use super::CgroupGuard;
use crate::scenario::CpuSet;
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Keeps the CPUs of `cpus` that are online; warns about the others.
pub(super) fn check_cpuset(
    label: &str,
    cpus: &[usize],
    warnings: &mut Vec<String>,
) -> Option<Vec<usize>> {
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
/// because of limits): call [`apply_to_pid`](super::apply_to_pid) after spawn to check and
/// record them.
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
