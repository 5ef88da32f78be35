//! The sampler against real processes: busy, idle, forking and memory-hungry children.
//!
//! The machine has 2 cores and may be busy with other work, so CPU bounds are loose: they check
//! that CPU is attributed to the right tree, not how fast the machine is.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loadbench_harness::sampler::{Bottleneck, ProcessTree, Sampler, Samples};

use crate::cpu_exclusive;

const INTERVAL: Duration = Duration::from_millis(100);
const MIB: u64 = 1 << 20;

/// A child in its own process group; the whole group is killed on drop, even when an assertion
/// fails, so no busy loop outlives the test.
struct Guard(Child);

impl Guard {
    fn spawn(program: &str, args: &[&str]) -> Self {
        use std::os::unix::process::CommandExt;
        let child = Command::new(program)
            .args(args)
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawning a test child");
        Self(child)
    }

    fn sh(script: &str) -> Self {
        Self::spawn("sh", &["-c", script])
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Waits for the child to print a line (its "ready" signal).
    fn wait_line(&mut self) -> String {
        let stdout = self.0.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("reading child output");
        line
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Samples `pid` as target "t" for `duration` between marks "from" and "to".
fn sample_for(pid: u32, duration: Duration) -> Samples {
    let sampler = Sampler::start(vec![("t".into(), pid)], INTERVAL);
    sampler.mark("from");
    std::thread::sleep(duration);
    sampler.mark("to");
    sampler.stop()
}

/// Samples `pid`'s tree like [`sample_for`] and also measures the truth independently: the CPU
/// the tree's processes used between the two marks (from /proc, in cores). On a busy machine a
/// busy loop may get far less than a core; the sampler must still report what it really got.
fn sample_with_truth(pid: u32, duration: Duration) -> (Samples, f64) {
    let pids = ProcessTree::of(pid).pids;
    let sampler = Sampler::start(vec![("t".into(), pid)], INTERVAL);
    let (t0, cpu0) = (Instant::now(), cpu_seconds(&pids));
    sampler.mark("from");
    std::thread::sleep(duration);
    sampler.mark("to");
    let (t1, cpu1) = (Instant::now(), cpu_seconds(&pids));
    (sampler.stop(), (cpu1 - cpu0) / (t1 - t0).as_secs_f64())
}

/// User + system CPU seconds of `pids`, from field 14 and 15 of /proc/PID/stat.
fn cpu_seconds(pids: &[u32]) -> f64 {
    let tick = procfs::ticks_per_second() as f64;
    let ticks: u64 = pids
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .map(|stat| {
            let after = &stat[stat.rfind(')').expect("comm ends with )") + 2..];
            let f: Vec<&str> = after.split(' ').collect();
            f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
        })
        .sum();
    ticks as f64 / tick
}

/// The sampler's mean agrees with the truth measured from /proc: within a tenth of a core plus
/// 30% (the sampler's window edges fall on its samples, not exactly on the marks).
fn assert_agrees(sampled: f64, truth: f64) {
    assert!(
        (sampled - truth).abs() <= 0.1 + 0.3 * truth,
        "sampler {sampled:.3} cores, /proc says {truth:.3}"
    );
}

/// Polls until the tree of `pid` has `n` processes, or gives up after 3 s.
fn wait_for_tree(pid: u32, n: usize) -> ProcessTree {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let tree = ProcessTree::of(pid);
        if tree.pids.len() >= n || Instant::now() > deadline {
            return tree;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn busy_child_uses_about_one_core() {
    let _cpu = cpu_exclusive();
    let child = Guard::sh("while :; do :; done");
    let (samples, truth) = sample_with_truth(child.pid(), Duration::from_millis(1200));
    let summary = samples.summary("t", "from", "to").unwrap();
    // A busy loop takes at most one core; on a loaded machine it may get much less, so the
    // sampler is checked against what /proc says it got, not against a speed.
    assert!(truth > 0.0, "the busy loop got no CPU at all");
    assert_agrees(summary.cpu_mean_cores, truth);
    assert!(summary.cpu_mean_cores < 1.1, "{summary:?}");
    assert!(summary.rss_trough_bytes > 0, "{summary:?}");
    assert!(
        samples.samples.len() >= 8,
        "{} samples",
        samples.samples.len()
    );
}

#[test]
fn idle_child_uses_no_cpu() {
    let _cpu = cpu_exclusive();
    let child = Guard::spawn("sleep", &["30"]);
    let samples = sample_for(child.pid(), Duration::from_millis(800));
    let summary = samples.summary("t", "from", "to").unwrap();
    assert!(summary.cpu_mean_cores < 0.05, "{summary:?}");
    assert!(summary.rss_start_bytes > 0, "{summary:?}");
}

#[test]
fn forked_children_are_part_of_the_tree() {
    let child = Guard::sh("sleep 30 & sleep 30 & wait");
    let tree = wait_for_tree(child.pid(), 3);
    assert_eq!(tree.pids.len(), 3, "{tree:?}");
    assert_eq!(tree.pids[0], child.pid());
    let samples = sample_for(child.pid(), Duration::from_millis(300));
    let last = samples.samples.last().expect("samples");
    assert_eq!(last.targets[0].processes, 3);
}

#[test]
fn cpu_of_busy_grandchildren_is_counted() {
    let _cpu = cpu_exclusive();
    let child = Guard::sh("(while :; do :; done) & (while :; do :; done) & wait");
    assert_eq!(wait_for_tree(child.pid(), 3).pids.len(), 3);
    let (samples, truth) = sample_with_truth(child.pid(), Duration::from_millis(1500));
    let summary = samples.summary("t", "from", "to").unwrap();
    // The shell itself only waits: the CPU /proc reports is the grandchildren's. Two free
    // cores would show ~2.0; a busy machine gives less, and the sampler must say what it got.
    assert!(truth > 0.0, "the busy grandchildren got no CPU at all");
    assert_agrees(summary.cpu_mean_cores, truth);
    assert!(summary.cpu_mean_cores < 2.2, "{summary:?}");
}

#[test]
fn memory_hungry_child_shows_rss_between_marks() {
    let script = "import sys, time\n\
                  b = bytearray(b'\\x01') * (100 * 2**20)\n\
                  print('ready', flush=True)\n\
                  time.sleep(30)";
    let mut child = Guard::spawn("python3", &["-c", script]);
    let sampler = Sampler::start(vec![("py".into(), child.pid())], INTERVAL);
    assert_eq!(child.wait_line().trim(), "ready");
    std::thread::sleep(2 * INTERVAL);
    sampler.mark("ready");
    std::thread::sleep(5 * INTERVAL);
    sampler.mark("load:end");
    let samples = sampler.stop();
    let summary = samples.summary("py", "ready", "load:end").unwrap();
    assert!(summary.rss_start_bytes >= 90 * MIB, "{summary:?}");
    assert!(summary.rss_trough_bytes >= 90 * MIB, "{summary:?}");
    assert!(
        summary.rss_peak_bytes >= summary.rss_trough_bytes,
        "{summary:?}"
    );
}

#[test]
fn generator_cpu_and_core_busy_are_recorded() {
    let _cpu = cpu_exclusive();
    let sampler = Sampler::start(vec![], INTERVAL);
    let me = [std::process::id()];
    let (t0, cpu0) = (Instant::now(), cpu_seconds(&me));
    sampler.mark("spin:start");
    let until = Instant::now() + Duration::from_millis(800);
    let mut x = 0u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    sampler.mark("spin:end");
    let truth = (cpu_seconds(&me) - cpu0) / t0.elapsed().as_secs_f64();
    let samples = sampler.stop();
    let window = samples.window("spin:start", "spin:end").unwrap();
    let inside: Vec<_> = samples
        .samples
        .iter()
        .filter(|s| s.t_ms > window.from_ms && s.t_ms <= window.to_ms)
        .collect();
    assert!(!inside.is_empty());
    let mean = inside.iter().map(|s| s.generator_cpu_cores).sum::<f64>() / inside.len() as f64;
    // The spin got what the machine gave it; the sampler must report that, not a speed.
    assert!(truth > 0.0, "the spinning test got no CPU at all");
    assert_agrees(mean, truth);
    assert!(mean < 1.2, "generator mean {mean}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for s in &inside {
        assert!(s.core_busy.len() >= cores, "{:?}", s.core_busy);
        assert!(s.core_busy.iter().all(|b| (0.0..=1.0).contains(b)));
    }
    // The spinning generator on a 2-core host cannot leave a zero-target step target-bound.
    assert_ne!(
        samples.bottleneck(1.0, 1.0, window),
        Bottleneck::TargetBound
    );
}

#[test]
fn vanished_target_reads_as_empty() {
    let mut child = Guard::spawn("true", &[]);
    let pid = child.pid();
    child.0.wait().unwrap();
    assert!(ProcessTree::of(pid).pids.is_empty());
    let samples = sample_for(pid, Duration::from_millis(250));
    let last = samples.samples.last().expect("samples");
    assert_eq!(
        (last.targets[0].processes, last.targets[0].rss_bytes),
        (0, 0)
    );
}

#[test]
fn samples_round_trip_through_json() {
    let child = Guard::spawn("sleep", &["30"]);
    let samples = sample_for(child.pid(), Duration::from_millis(250));
    let json = serde_json::to_string(&samples).unwrap();
    assert!(json.contains("\"rss_bytes\"") && json.contains("\"cpu_cores\""));
    let back: Samples = serde_json::from_str(&json).unwrap();
    // Floats may differ in the last bit after parsing; the structure must not.
    assert_eq!(back.marks, samples.marks);
    let times = |s: &Samples| s.samples.iter().map(|x| x.t_ms).collect::<Vec<_>>();
    assert_eq!(times(&back), times(&samples));
}

#[test]
fn snapshot_returns_the_series_so_far_and_sampling_goes_on() {
    let child = Guard::spawn("sleep", &["30"]);
    let sampler = Sampler::start(vec![("t".into(), child.pid())], Duration::from_millis(20));
    sampler.mark("a");
    std::thread::sleep(Duration::from_millis(200));
    let early = sampler.snapshot();
    assert!(!early.samples.is_empty(), "{early:?}");
    assert_eq!(early.marks.len(), 1);
    std::thread::sleep(Duration::from_millis(200));
    let end = sampler.stop();
    assert!(end.samples.len() > early.samples.len());
    assert_eq!(end.samples[..early.samples.len()], early.samples[..]);
}

#[test]
fn the_latest_sample_is_shared_while_sampling_goes_on() {
    let child = Guard::spawn("sleep", &["30"]);
    let sampler = Sampler::start(vec![("t".into(), child.pid())], Duration::from_millis(20));
    let latest = sampler.latest();
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while latest.get().is_none() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let first = latest.get().expect("a sample within 10 s");
    assert_eq!(first.targets[0].name, "t");
    assert!(first.targets[0].rss_bytes > 0, "{first:?}");
    while latest.get().is_some_and(|s| s.t_ms == first.t_ms) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let end = sampler.stop();
    let last = latest.get().unwrap();
    assert!(last.t_ms > first.t_ms, "it moves while sampling goes on");
    assert_eq!(
        end.samples.last(),
        Some(&last),
        "the newest is the series' last"
    );
}
