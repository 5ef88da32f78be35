//! The optional on-CPU profile of a target (`profile = true`): after the measured rounds, the
//! target's last closed or open load runs once more, unmeasured, and `perf record` samples the
//! target's process tree over that run's measured part (after its warm-up). `perf script`'s
//! stacks are folded and drawn as a flame graph (the `inferno` crate) into the run folder as
//! `profile-<target>.svg`, beside the folded stacks `profile-<target>.folded`. perf's own cost
//! thus never touches a measured round. Without perf, or where the kernel does not let it
//! record, one warning line says why and the bench goes on.

use crate::bench::Matrix;
use crate::sampler::ProcessTree;
use inferno::collapse::perf::Folder;
use inferno::collapse::Collapse;
use inferno::flamegraph;
use loadbench_model::TargetProfile;
use loadbench_plan::Stop;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Sampling frequency: off the kernel's timer tick, so samples do not beat with it.
pub(crate) const FREQUENCY_HZ: u32 = 99;

/// Profiles every target that asks for it; returns each profile by target name, and one
/// warning line per target that could not be profiled.
pub(crate) fn profile_targets(
    m: &Matrix<'_>,
    run_dir: &Path,
) -> (Vec<(String, TargetProfile)>, Vec<String>) {
    let asked: Vec<&str> = m
        .scenario
        .targets
        .iter()
        .filter(|t| t.profile)
        .map(|t| t.name.as_str())
        .collect();
    let (mut done, mut warnings) = (Vec::new(), Vec::new());
    if asked.is_empty() {
        return (done, warnings);
    }
    let perf = match find_perf() {
        Ok(p) => p,
        Err(e) => {
            let names = asked.join("', '");
            warnings.push(format!("profile of '{names}' skipped: {e}"));
            return (done, warnings);
        }
    };
    for name in asked {
        if m.stop.load(Ordering::Relaxed) {
            break;
        }
        match profile_one(m, &perf, name, run_dir) {
            Ok(p) => done.push((name.to_string(), p)),
            Err(e) => warnings.push(format!("profile of '{name}' skipped: {e}")),
        }
    }
    (done, warnings)
}

/// `perf` on the PATH.
fn find_perf() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("perf"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "perf is not installed (apt install linux-perf, or linux-tools-$(uname -r) on Ubuntu)"
                .to_string()
        })
}

/// One target: the extra run with perf recording, then the flame graph.
fn profile_one(
    m: &Matrix<'_>,
    perf: &Path,
    name: &str,
    run_dir: &Path,
) -> Result<TargetProfile, String> {
    let (load, level, spec) = m
        .profile_load(name)
        .ok_or("no closed or open load runs it")?;
    let root = m
        .targets
        .get(name)
        .ok_or("it is not running")?
        .process
        .pid();
    let pids = ProcessTree::of(root).pids;
    if pids.is_empty() {
        return Err("it is no longer running".into());
    }
    let record_for = match spec.stop {
        Stop::Duration(d) => d,
        Stop::Requests(_) => Duration::from_secs(5),
    };
    let data = run_dir.join(format!("profile-{name}.perf.data"));
    std::thread::sleep(m.scenario.cooldown);
    let (ran, recorded) = std::thread::scope(|scope| {
        let recorder = scope.spawn(|| {
            std::thread::sleep(spec.warmup);
            record(perf, &pids, record_for, &data)
        });
        let ran = m.run_unmeasured(&spec);
        let recorded = recorder
            .join()
            .unwrap_or_else(|_| Err("the perf thread failed".into()));
        (ran, recorded)
    });
    ran.map_err(|e| format!("its load failed: {e}"))?;
    recorded?;
    let stacks = script(perf, &data);
    let _ = std::fs::remove_file(&data);
    let title = format!("on-CPU profile of '{name}' (perf, {FREQUENCY_HZ} Hz)");
    let drawn = draw(&stacks?, run_dir, name, &title)?;
    Ok(TargetProfile {
        load: load as u32,
        level: level as u32,
        duration_ms: record_for.as_millis() as u64,
        frequency_hz: FREQUENCY_HZ,
        ..drawn
    })
}

/// `perf record -g` of `pids` (with the threads they start) for `span`.
fn record(perf: &Path, pids: &[u32], span: Duration, data: &Path) -> Result<(), String> {
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let out = Command::new(perf)
        .args(["record", "-F", &FREQUENCY_HZ.to_string(), "-g", "-o"])
        .arg(data)
        .args(["-p", &list.join(","), "--", "sleep"])
        .arg(format!("{:.3}", span.as_secs_f64()))
        .output()
        .map_err(|e| format!("perf did not start: {e}"))?;
    if out.status.success() && data.is_file() {
        return Ok(());
    }
    let said = last_line(&out.stderr);
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Err(format!(
        "perf record failed ({said}); kernel.perf_event_paranoid is {paranoid}: run as root or lower it (sysctl kernel.perf_event_paranoid=1)"
    ))
}

/// `perf script` of the recording: the sampled stacks as text, one count per sample.
fn script(perf: &Path, data: &Path) -> Result<Vec<u8>, String> {
    let out = Command::new(perf)
        // Without the period, each stack counts once: the graph's counts are samples.
        .args(["script", "--no-inline", "-F", "-period", "-i"])
        .arg(data)
        .output()
        .map_err(|e| format!("perf script did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!("perf script failed ({})", last_line(&out.stderr)));
    }
    Ok(out.stdout)
}

/// Folds `stacks`, writes the folded file and the flame graph; their names and the samples.
fn draw(stacks: &[u8], run_dir: &Path, name: &str, title: &str) -> Result<TargetProfile, String> {
    let mut folded = Vec::new();
    Folder::default()
        .collapse(stacks, &mut folded)
        .map_err(|e| format!("its stacks could not be folded: {e}"))?;
    let folded = String::from_utf8_lossy(&folded).into_owned();
    let samples = samples(&folded);
    if samples == 0 {
        return Err("perf recorded no samples (the target did not run on a CPU)".into());
    }
    let (svg, folded_name) = (
        format!("profile-{name}.svg"),
        format!("profile-{name}.folded"),
    );
    let written = std::fs::write(run_dir.join(&folded_name), &folded);
    written.map_err(|e| format!("cannot write {folded_name}: {e}"))?;
    let file = std::fs::File::create(run_dir.join(&svg))
        .map_err(|e| format!("cannot write {svg}: {e}"))?;
    let mut opts = flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    flamegraph::from_lines(&mut opts, folded.lines(), std::io::BufWriter::new(file))
        .map_err(|e| format!("the flame graph could not be drawn: {e}"))?;
    Ok(TargetProfile {
        svg,
        folded: folded_name,
        samples,
        ..TargetProfile::default()
    })
}

/// Samples in folded stacks: the sum of each line's trailing count.
fn samples(folded: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<u64>().ok())
        .sum()
}

/// The last non-empty line of a command's stderr.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two samples as `perf script -F -period` prints them (perf 6).
    const SCRIPT: &str = "loadbench 4242 100.000001: cpu-clock:ppp: \n\
        \t    55d0c0de1000 loadbench_upstream::conn::serve+0x10 (/usr/bin/loadbench)\n\
        \t    55d0c0de2000 tokio::runtime::task::poll+0x20 (/usr/bin/loadbench)\n\
        \t    7f0000001000 start_thread+0x30 (/usr/lib/libc.so.6)\n\
        \n\
        loadbench 4242 100.010001: cpu-clock:ppp: \n\
        \t    55d0c0de1000 loadbench_upstream::conn::serve+0x10 (/usr/bin/loadbench)\n\
        \t    55d0c0de2000 tokio::runtime::task::poll+0x20 (/usr/bin/loadbench)\n\
        \t    7f0000001000 start_thread+0x30 (/usr/lib/libc.so.6)\n\n";

    #[test]
    fn stacks_fold_and_draw_into_a_flame_graph_with_their_frames() {
        let dir = std::env::temp_dir().join(format!("lb-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = draw(SCRIPT.as_bytes(), &dir, "backend", "on-CPU profile").unwrap();
        assert_eq!(p.samples, 2);
        assert_eq!(
            (p.svg.as_str(), p.folded.as_str()),
            ("profile-backend.svg", "profile-backend.folded")
        );
        let folded = std::fs::read_to_string(dir.join(&p.folded)).unwrap();
        assert_eq!(
            folded.trim(),
            "loadbench;start_thread;tokio::runtime::task::poll;loadbench_upstream::conn::serve 2"
        );
        let svg = std::fs::read_to_string(dir.join(&p.svg)).unwrap();
        assert!(svg.contains("<svg"), "{svg}");
        assert!(svg.contains("loadbench_upstream::conn::serve"), "{svg}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_samples_is_an_error_not_an_empty_graph() {
        let dir = std::env::temp_dir().join(format!("lb-profile-none-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = draw(b"", &dir, "idle", "t").unwrap_err();
        assert!(e.contains("no samples"), "{e}");
        assert!(!dir.join("profile-idle.svg").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn counts_add_up_over_folded_lines() {
        assert_eq!(samples("a;b 3\na;c 4\n\n"), 7);
        assert_eq!(last_line(b"first\nlast one\n\n"), "last one");
    }
}
