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
        cores: usable_cores(),
        host_cores: fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| count_cpu_list(&t))
            .unwrap_or_else(usable_cores),
    }
}

fn usable_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The number of CPUs in a kernel CPU list such as `0-3,6,8-9` (7); `None` if it does not
/// read as one.
fn count_cpu_list(text: &str) -> Option<u32> {
    let mut n = 0;
    for part in text.trim().split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<u32>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => part.parse::<u32>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
    }

    #[test]
    fn host_cores_are_at_least_the_usable_ones() {
        let h = detect();
        assert!(h.cores >= 1 && h.host_cores >= h.cores, "{h:?}");
    }
}
