//! Facts about the generator's host, recorded in every result so figures can be compared
//! knowing where they came from.

use loadbench_model::HostInfo;
use std::fs;

/// This host as a result records it.
pub fn detect() -> HostInfo {
    HostInfo {
        hostname: read_trimmed("/proc/sys/kernel/hostname"),
        os: os_name(),
        arch: std::env::consts::ARCH.to_string(),
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        cpu_model: cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
    }
}

fn read_trimmed(path: &str) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn os_name() -> String {
    let release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

fn cpu_model() -> String {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}
