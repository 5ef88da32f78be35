//! Resource sampling: what the seeds read off htop, recorded instead of eyeballed.
//!
//! A [`Sampler`] runs one background thread that, every interval (100 ms by default in the
//! bench), reads `/proc` once and records for each target its whole process tree's CPU (cores
//! used since the previous sample) and RSS, the generator's own CPU (this process) and each host
//! core's busy share. Trees are re-resolved at every sample, so workers forked after start (nginx,
//! php-fpm, gunicorn) are counted. [`Sampler::mark`] records step boundaries; [`Samples`] answers
//! per-step questions: a [`ResourceSummary`] per target and a bottleneck [`Bottleneck`].
//!
//! Memory stays bounded: the series holds at most `max_samples` entries ([`DEFAULT_MAX_SAMPLES`]
//! = one hour at 10 samples/s). When full, neighbouring samples are merged pairwise and the
//! sampling interval doubles, so any run length fits and the whole run stays covered, at a
//! coarser resolution (see [`Samples::interval_ms`]).
//!
//! CPU rates come from tick-granular counters (10 ms per tick at the usual 100 Hz), so a rate over
//! a very short interval is mostly rounding: a reading taken 1 ms after a late one would turn one
//! tick into 10 cores. A reading closer than [`Recorder::min_window`] to the previous one is
//! therefore skipped (its interval merges into the next), and a target's rate is capped at the
//! cores it may use (its CPU affinity, its cgroup's `cpu.max` quota, the host's cores).
//!
//! Accounting limits: CPU time of a process that exits between two samples is lost for its last
//! partial interval (at most one interval per exiting process); RSS sums resident pages per
//! process, so pages shared between workers (copy-on-write after fork) are counted once per
//! process, as htop's RES column does.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use procfs::process::Process;
use procfs::{CpuTime, CurrentSI, KernelStats};

pub use loadbench_model::resources::{
    Bottleneck, Mark, ResourceSummary, Sample, SampleError, Samples, TargetSample, Window,
    SATURATION_SHARE,
};

/// One hour of samples at 10 samples/s; beyond that the series is downsampled.
pub const DEFAULT_MAX_SAMPLES: usize = 36_000;

/// One process as read from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcEntry {
    pid: u32,
    ppid: u32,
    /// Start time in ticks since boot: with the pid it identifies a process across pid reuse.
    start_ticks: u64,
    cpu_ticks: u64,
    rss_pages: u64,
}

impl ProcEntry {
    fn read(process: &Process) -> Option<Self> {
        let stat = process.stat().ok()?;
        Some(Self {
            pid: u32::try_from(stat.pid).ok()?,
            ppid: u32::try_from(stat.ppid).unwrap_or(0),
            start_ticks: stat.starttime,
            cpu_ticks: stat.utime + stat.stime,
            rss_pages: stat.rss,
        })
    }
}

/// Every process on the host at one instant; read once per sample and shared by all targets.
#[derive(Debug, Default)]
struct ProcTable {
    entries: HashMap<u32, ProcEntry>,
    children: HashMap<u32, Vec<u32>>,
}

impl ProcTable {
    fn read() -> Self {
        let mut table = Self::default();
        let Ok(all) = procfs::process::all_processes() else {
            return table;
        };
        // Processes vanish between listing and reading: skip them.
        for entry in all.flatten().filter_map(|p| ProcEntry::read(&p)) {
            table
                .children
                .entry(entry.ppid)
                .or_default()
                .push(entry.pid);
            table.entries.insert(entry.pid, entry);
        }
        table
    }

    fn tree(&self, root: u32) -> Vec<ProcEntry> {
        let mut found = Vec::new();
        let mut stack = vec![root];
        while let Some(pid) = stack.pop() {
            let Some(entry) = self.entries.get(&pid) else {
                continue;
            };
            found.push(*entry);
            stack.extend(self.children.get(&pid).into_iter().flatten());
        }
        found
    }
}

/// The same processes read again from `/proc` (those gone since, or whose pid now names another
/// process, are left out).
fn reread(entries: Vec<ProcEntry>) -> Vec<ProcEntry> {
    entries
        .iter()
        .filter_map(|e| {
            let now = ProcEntry::read(&Process::new(i32::try_from(e.pid).ok()?).ok()?)?;
            (now.start_ticks == e.start_ticks).then_some(now)
        })
        .collect()
}

/// A process and all its descendants, resolved through the `ppid` links in `/proc/*/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessTree {
    /// The process the tree hangs from (the target's pid).
    pub root: u32,
    /// The root first (if it is alive), then descendants; empty when the root is gone.
    pub pids: Vec<u32>,
}

impl ProcessTree {
    /// Resolves the tree now; call again to see processes forked since.
    pub fn of(root: u32) -> Self {
        let pids = ProcTable::read().tree(root).iter().map(|e| e.pid).collect();
        Self { root, pids }
    }
}

/// Cumulative counters at one instant; two of them make a [`Sample`].
#[derive(Debug)]
struct Reading {
    at: Instant,
    /// Per target: CPU ticks per process, keyed by (pid, start time) to survive pid reuse.
    targets: Vec<HashMap<(u32, u64), u64>>,
    rss_pages: Vec<(u64, u32)>,
    generator_ticks: u64,
    cores: Vec<CoreTicks>,
    /// Per target: the cores its root process may use (0 when it is gone).
    allowed: Vec<f64>,
    /// The cores this process (the generator) may use.
    generator_allowed: f64,
}

/// Finds the targets' process trees. Reading every process on the host ten times a second
/// cost the generator's core about 2% at 100k req/s (a `/proc/PID/stat` read per process), so
/// the trees are found from every process once a second (a new child shows up within that),
/// and in between only the processes already found are read again.
#[derive(Debug, Default)]
struct TreeFinder {
    trees: Vec<Vec<ProcEntry>>,
    last_scan: Option<Instant>,
    /// Per root, then the generator: the cores each may use (affinity and cgroup quota), read
    /// again at each scan.
    allowed: Vec<f64>,
}

/// How often the sampler reads every process to find the targets' trees.
const SCAN_EVERY: Duration = Duration::from_secs(1);

impl TreeFinder {
    /// Each root's tree, each process read now.
    fn read(&mut self, roots: &[u32]) -> &[Vec<ProcEntry>] {
        let due = self.last_scan.is_none_or(|t| t.elapsed() >= SCAN_EVERY);
        if due || self.trees.len() != roots.len() {
            let table = ProcTable::read();
            self.trees = roots.iter().map(|&r| table.tree(r)).collect();
            self.allowed = roots.iter().map(|&r| allowed_cores(r)).collect();
            self.allowed.push(allowed_cores(std::process::id()));
            self.last_scan = Some(Instant::now());
        }
        // Reading every process can be held up for seconds on a busy host (a `/proc` read may
        // wait on another process): the targets' own counters are read again now, so that
        // they and the reading's `at` are of the same instant.
        for tree in &mut self.trees {
            *tree = reread(std::mem::take(tree));
        }
        &self.trees
    }
}

impl Reading {
    fn take(roots: &[u32], finder: &mut TreeFinder) -> Self {
        finder.read(roots);
        let trees = &finder.trees;
        let (allowed, generator_allowed) = match finder.allowed.split_last() {
            Some((generator, targets)) => (targets.to_vec(), *generator),
            None => (Vec::new(), 0.0),
        };
        let generator = Process::myself().and_then(|p| p.stat());
        Self {
            at: Instant::now(),
            targets: trees
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|e| ((e.pid, e.start_ticks), e.cpu_ticks))
                        .collect()
                })
                .collect(),
            rss_pages: trees
                .iter()
                .map(|t| (t.iter().map(|e| e.rss_pages).sum(), t.len() as u32))
                .collect(),
            generator_ticks: generator.map_or(0, |s| s.utime + s.stime),
            cores: read_cores(),
            allowed,
            generator_allowed,
        }
    }
}

/// The cores process `pid` may use: its CPU affinity, capped by any `cpu.max` quota on its
/// cgroup (v2) or that cgroup's ancestors; 0 when the process is gone.
fn allowed_cores(pid: u32) -> f64 {
    let Ok(process) = Process::new(pid as i32) else {
        return 0.0;
    };
    let affinity = process
        .status()
        .ok()
        .and_then(|s| s.cpus_allowed_list)
        .map(|ranges| ranges.iter().map(|&(a, b)| f64::from(b - a + 1)).sum());
    let host = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let cores = affinity.unwrap_or(host);
    cgroup_quota(&process).map_or(cores, |q| cores.min(q))
}

/// The tightest `cpu.max` quota (in cores) on the process's v2 cgroup path, if any.
fn cgroup_quota(process: &Process) -> Option<f64> {
    let groups = process.cgroups().ok()?;
    let path = groups.0.iter().find(|g| g.hierarchy == 0)?.pathname.clone();
    let mut dir = std::path::PathBuf::from("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let mut tightest: Option<f64> = None;
    loop {
        let text = std::fs::read_to_string(dir.join("cpu.max")).unwrap_or_default();
        if let Some(q) = parse_cpu_max(&text) {
            tightest = Some(tightest.map_or(q, |t| t.min(q)));
        }
        if dir == std::path::Path::new("/sys/fs/cgroup") || !dir.pop() {
            return tightest;
        }
    }
}

/// Cores granted by a `cpu.max` line ("quota period"); `None` for "max" or unreadable text.
fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let quota: f64 = parts.next()?.parse().ok()?;
    let period: f64 = parts.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

/// Caps a rate at the cores allowed; an unknown allowance (0) leaves it as is.
fn capped(rate: f64, allowed: f64) -> f64 {
    if allowed > 0.0 {
        rate.min(allowed)
    } else {
        rate
    }
}

/// Host constants for turning counters into units.
#[derive(Debug, Clone, Copy)]
struct Units {
    ticks_per_second: f64,
    page_bytes: u64,
}

impl Units {
    fn host() -> Self {
        Self {
            ticks_per_second: procfs::ticks_per_second() as f64,
            page_bytes: procfs::page_size(),
        }
    }

    fn cores(self, ticks: u64, wall: Duration) -> f64 {
        let secs = wall.as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        ticks as f64 / self.ticks_per_second / secs
    }
}

/// Ticks a tree spent since `prev`; processes not seen before count from zero (they started
/// after `prev`), processes gone since are dropped.
fn tree_ticks_since(prev: &HashMap<(u32, u64), u64>, now: &HashMap<(u32, u64), u64>) -> u64 {
    now.iter()
        .map(|(key, &ticks)| ticks.saturating_sub(prev.get(key).copied().unwrap_or(0)))
        .sum()
}

/// Busy and total ticks of one core; iowait counts as idle, as in htop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CoreTicks {
    busy: u64,
    total: u64,
    /// Interrupt and softirq ticks (part of `busy`).
    irq: u64,
}

impl CoreTicks {
    fn of(c: &CpuTime) -> Self {
        let idle = c.idle + c.iowait.unwrap_or(0);
        let irq = c.irq.unwrap_or(0) + c.softirq.unwrap_or(0);
        let busy = c.user + c.nice + c.system + irq + c.steal.unwrap_or(0);
        Self {
            busy,
            total: busy + idle,
            irq,
        }
    }
}

fn read_cores() -> Vec<CoreTicks> {
    let stats = KernelStats::current();
    stats.map_or_else(
        |_| Vec::new(),
        |k| k.cpu_time.iter().map(CoreTicks::of).collect(),
    )
}

fn core_busy(prev: &[CoreTicks], now: &[CoreTicks]) -> Vec<f64> {
    prev.iter()
        .zip(now)
        .map(|(p, n)| core_share(p, n, |c| c.busy))
        .collect()
}

/// Interrupt and softirq time over all cores since `prev`, in cores.
fn irq_cores(prev: &[CoreTicks], now: &[CoreTicks]) -> f64 {
    prev.iter()
        .zip(now)
        .map(|(p, n)| core_share(p, n, |c| c.irq))
        .sum()
}

/// The share of one core's ticks since `p` that `field` counts.
fn core_share(p: &CoreTicks, n: &CoreTicks, field: impl Fn(&CoreTicks) -> u64) -> f64 {
    let total = n.total.saturating_sub(p.total);
    if total == 0 {
        return 0.0;
    }
    field(n).saturating_sub(field(p)) as f64 / total as f64
}

fn make_sample(
    names: &[String],
    units: Units,
    start: Instant,
    prev: &Reading,
    now: &Reading,
) -> Sample {
    let wall = now.at.duration_since(prev.at);
    let targets = names
        .iter()
        .enumerate()
        .map(|(i, name)| TargetSample {
            name: name.clone(),
            cpu_cores: capped(
                units.cores(tree_ticks_since(&prev.targets[i], &now.targets[i]), wall),
                now.allowed[i].max(prev.allowed[i]),
            ),
            rss_bytes: now.rss_pages[i].0 * units.page_bytes,
            processes: now.rss_pages[i].1,
        })
        .collect();
    Sample {
        t_ms: now.at.duration_since(start).as_millis() as u64,
        targets,
        generator_cpu_cores: capped(
            units.cores(
                now.generator_ticks.saturating_sub(prev.generator_ticks),
                wall,
            ),
            now.generator_allowed,
        ),
        core_busy: core_busy(&prev.cores, &now.cores),
        irq_cores: irq_cores(&prev.cores, &now.cores),
    }
}

/// Merges two neighbouring samples into the later one: CPU figures are averaged weighted by the
/// time each covers, memory keeps the later instant's value.
fn merge_pair(prev_t_ms: u64, a: &Sample, mut b: Sample) -> Sample {
    let wa = a.t_ms.saturating_sub(prev_t_ms) as f64;
    let wb = b.t_ms.saturating_sub(a.t_ms) as f64;
    let blend = |x: f64, y: f64| {
        if wa + wb > 0.0 {
            (x * wa + y * wb) / (wa + wb)
        } else {
            y
        }
    };
    b.generator_cpu_cores = blend(a.generator_cpu_cores, b.generator_cpu_cores);
    for (tb, ta) in b.targets.iter_mut().zip(&a.targets) {
        tb.cpu_cores = blend(ta.cpu_cores, tb.cpu_cores);
    }
    for (cb, ca) in b.core_busy.iter_mut().zip(&a.core_busy) {
        *cb = blend(*ca, *cb);
    }
    b.irq_cores = blend(a.irq_cores, b.irq_cores);
    b
}

/// Halves a full series by merging pairs; an odd last sample stays as it is.
fn downsample(samples: &mut Vec<Sample>) {
    let old = std::mem::take(samples);
    let mut prev_t = 0;
    let mut iter = old.into_iter();
    while let Some(a) = iter.next() {
        let merged = match iter.next() {
            Some(b) => merge_pair(prev_t, &a, b),
            None => a,
        };
        prev_t = merged.t_ms;
        samples.push(merged);
    }
}

/// What the sampling thread is asked to do besides sampling.
enum Request {
    /// Send a copy of the series so far (for results saved while the run goes on).
    Snapshot(mpsc::Sender<(Vec<Sample>, Duration)>),
    Stop,
}

/// What the sampling thread owns.
struct Recorder {
    names: Vec<String>,
    roots: Vec<u32>,
    units: Units,
    start: Instant,
    interval: Duration,
    max_samples: usize,
    samples: Vec<Sample>,
    latest: LatestSample,
}

/// The sampler's newest sample, shared: a live view (the bench dashboard) reads it while a
/// round runs, without asking the sampler thread. Updated once per sample, under a lock held
/// only to copy it.
#[derive(Debug, Clone, Default)]
pub struct LatestSample(Arc<Mutex<Option<Sample>>>);

impl LatestSample {
    /// The newest sample, if one was taken yet.
    pub fn get(&self) -> Option<Sample> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, sample: &Sample) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(sample.clone());
    }
}

impl Recorder {
    fn run(mut self, requests: mpsc::Receiver<Request>) -> (Vec<Sample>, Duration) {
        let mut finder = TreeFinder::default();
        let mut prev = Reading::take(&self.roots, &mut finder);
        let mut next = prev.at + self.interval;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match requests.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Request::Snapshot(reply)) => {
                    let _ = reply.send((self.samples.clone(), self.interval));
                    continue;
                }
                Ok(Request::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    return (self.samples, self.interval);
                }
            }
            self.observe(&mut prev, Reading::take(&self.roots, &mut finder));
            // Absolute deadlines keep the rate steady; after a stall, resume one interval on.
            next = (next + self.interval).max(Instant::now() + self.interval / 2);
        }
    }

    /// The shortest interval a CPU rate is computed over: half the sampling interval, and at
    /// least 5 clock ticks, so tick rounding stays small beside the rate.
    fn min_window(&self) -> Duration {
        let ticks = Duration::from_secs_f64(5.0 / self.units.ticks_per_second);
        (self.interval / 2).max(ticks)
    }

    /// Records a sample from `prev` to `now`, or skips `now` when it is too close to `prev` (the
    /// next reading then covers both intervals).
    fn observe(&mut self, prev: &mut Reading, now: Reading) {
        if now.at.duration_since(prev.at) < self.min_window() {
            return;
        }
        let sample = make_sample(&self.names, self.units, self.start, prev, &now);
        self.push(sample);
        *prev = now;
    }

    fn push(&mut self, sample: Sample) {
        if self.samples.len() >= self.max_samples {
            downsample(&mut self.samples);
            self.interval *= 2;
        }
        self.latest.set(&sample);
        self.samples.push(sample);
    }
}

/// A running background sampler; [`Sampler::stop`] ends it and returns the series. Dropping it
/// without `stop` also ends the thread.
pub struct Sampler {
    start: Instant,
    marks: Arc<Mutex<Vec<Mark>>>,
    latest: LatestSample,
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<(Vec<Sample>, Duration)>>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Starts sampling `targets` (name, root pid) every `interval`, keeping at most
    /// [`DEFAULT_MAX_SAMPLES`] samples.
    pub fn start(targets: Vec<(String, u32)>, interval: Duration) -> Self {
        Self::start_with_capacity(targets, interval, DEFAULT_MAX_SAMPLES)
    }

    /// As [`Sampler::start`], with an explicit cap on the series (at least 2).
    pub fn start_with_capacity(
        targets: Vec<(String, u32)>,
        interval: Duration,
        max_samples: usize,
    ) -> Self {
        let max_samples = max_samples.max(2);
        let start = Instant::now();
        let (names, roots) = targets.into_iter().unzip();
        let latest = LatestSample::default();
        let recorder = Recorder {
            latest: latest.clone(),
            names,
            roots,
            units: Units::host(),
            start,
            interval: interval.max(Duration::from_millis(1)),
            max_samples,
            samples: Vec::with_capacity(max_samples.min(DEFAULT_MAX_SAMPLES)),
        };
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("loadbench-sampler".into())
            .spawn(move || recorder.run(rx))
            .expect("spawning the sampler thread");
        Self {
            start,
            marks: Arc::default(),
            latest,
            requests: Some(tx),
            thread: Some(thread),
        }
    }

    /// Records a step boundary now.
    pub fn mark(&self, label: impl Into<String>) {
        let t_ms = self.start.elapsed().as_millis() as u64;
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        marks.push(Mark {
            label: label.into(),
            t_ms,
        });
    }

    /// A handle on the newest sample, for a live view.
    pub fn latest(&self) -> LatestSample {
        self.latest.clone()
    }

    /// The series and marks so far, while sampling goes on.
    pub fn snapshot(&self) -> Samples {
        let (tx, rx) = mpsc::channel();
        let sent = self
            .requests
            .as_ref()
            .map(|r| r.send(Request::Snapshot(tx)));
        let (samples, interval) = match sent {
            Some(Ok(())) => rx.recv().unwrap_or_default(),
            _ => Default::default(),
        };
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Samples {
            interval_ms: interval.as_millis() as u64,
            samples,
            marks,
        }
    }

    /// Stops the thread and returns the series and marks.
    pub fn stop(mut self) -> Samples {
        let (samples, interval) = self.finish().unwrap_or_default();
        let marks = std::mem::take(&mut *self.marks.lock().unwrap_or_else(|e| e.into_inner()));
        Samples {
            interval_ms: interval.as_millis() as u64,
            samples,
            marks,
        }
    }

    fn finish(&mut self) -> Option<(Vec<Sample>, Duration)> {
        if let Some(r) = self.requests.take() {
            let _ = r.send(Request::Stop);
        }
        self.thread.take()?.join().ok()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_forked_between_scans_is_found_and_a_gone_one_dropped() {
        use std::io::Write;
        let mut parent = std::process::Command::new("sh")
            .args(["-c", "read x; sleep 5 & read y"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let root = parent.id();
        let mut finder = TreeFinder::default();
        assert_eq!(finder.read(&[root])[0].len(), 1);
        let mut stdin = parent.stdin.take().unwrap();
        stdin.write_all(b"\n").unwrap();
        let found = |finder: &mut TreeFinder| {
            let t0 = Instant::now();
            while t0.elapsed() < SCAN_EVERY * 3 {
                if finder.read(&[root])[0].len() == 2 {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        };
        assert!(found(&mut finder), "{:?}", finder.trees);
        // The parent exits (the sleeping child stays, reparented): it is gone at once, without
        // waiting for a scan.
        stdin.write_all(b"\n").unwrap();
        parent.wait().unwrap();
        let tree = &finder.read(&[root])[0];
        assert!(tree.iter().all(|e| e.pid != root), "{tree:?}");
    }

    fn sample(t_ms: u64, generator: f64, target: f64, rss: u64) -> Sample {
        Sample {
            t_ms,
            targets: vec![TargetSample {
                name: "app".into(),
                cpu_cores: target,
                rss_bytes: rss,
                processes: 1,
            }],
            generator_cpu_cores: generator,
            core_busy: vec![generator, target],
            irq_cores: 0.0,
        }
    }

    fn series(points: &[(f64, f64)]) -> Samples {
        let samples = points
            .iter()
            .enumerate()
            .map(|(i, &(g, t))| sample(100 * (i as u64 + 1), g, t, 1000 + i as u64))
            .collect();
        Samples {
            interval_ms: 100,
            samples,
            marks: vec![],
        }
    }

    const WHOLE: Window = Window {
        from_ms: 0,
        to_ms: u64::MAX,
    };

    #[test]
    fn generator_saturated_target_not_is_generator_bound() {
        let s = series(&[(0.95, 0.3), (0.98, 0.4), (0.9, 0.2)]);
        assert_eq!(s.bottleneck(1.0, 1.0, WHOLE), Bottleneck::GeneratorBound);
    }

    #[test]
    fn target_saturated_generator_not_is_target_bound() {
        let s = series(&[(0.5, 1.9), (0.6, 1.95), (0.4, 1.85)]);
        assert_eq!(s.bottleneck(1.0, 2.0, WHOLE), Bottleneck::TargetBound);
    }

    #[test]
    fn neither_or_both_saturated_is_neither() {
        assert_eq!(
            series(&[(0.5, 0.5)]).bottleneck(1.0, 1.0, WHOLE),
            Bottleneck::Neither
        );
        assert_eq!(
            series(&[(0.99, 0.99)]).bottleneck(1.0, 1.0, WHOLE),
            Bottleneck::Neither
        );
        assert_eq!(series(&[]).bottleneck(1.0, 1.0, WHOLE), Bottleneck::Neither);
    }

    #[test]
    fn bottleneck_only_looks_inside_the_window() {
        let s = series(&[(1.0, 0.1), (1.0, 0.1), (0.1, 1.0), (0.1, 1.0)]);
        let late = Window {
            from_ms: 200,
            to_ms: 400,
        };
        assert_eq!(s.bottleneck(1.0, 1.0, late), Bottleneck::TargetBound);
    }

    #[test]
    fn summary_uses_sample_before_window_as_start() {
        let mut s = series(&[(0.0, 0.1), (0.0, 0.5), (0.0, 1.5)]);
        s.samples[2].targets[0].rss_bytes = 900;
        s.marks = vec![
            Mark {
                label: "load:start".into(),
                t_ms: 150,
            },
            Mark {
                label: "load:end".into(),
                t_ms: 300,
            },
        ];
        let sum = s.summary("app", "load:start", "load:end").unwrap();
        assert_eq!(sum.rss_start_bytes, 1000);
        assert_eq!((sum.rss_peak_bytes, sum.rss_trough_bytes), (1001, 900));
        assert!((sum.cpu_mean_cores - 1.0).abs() < 1e-9);
        assert!((sum.cpu_max_cores - 1.5).abs() < 1e-9);
    }

    #[test]
    fn summary_reports_unknown_names() {
        let s = series(&[(0.0, 0.1)]);
        assert_eq!(
            s.summary("nope", "a", "b"),
            Err(SampleError::UnknownMark("a".into()))
        );
        assert_eq!(
            s.summary_in("nope", WHOLE),
            Err(SampleError::UnknownTarget("nope".into()))
        );
    }

    #[test]
    fn downsample_halves_and_weights_cpu_by_time() {
        let mut samples = series(&[(1.0, 0.0), (0.0, 1.0), (0.5, 0.5)]).samples;
        downsample(&mut samples);
        assert_eq!(
            samples.iter().map(|s| s.t_ms).collect::<Vec<_>>(),
            vec![200, 300]
        );
        assert!((samples[0].generator_cpu_cores - 0.5).abs() < 1e-9);
        assert!((samples[0].targets[0].cpu_cores - 0.5).abs() < 1e-9);
    }

    #[test]
    fn full_recorder_downsamples_and_doubles_interval() {
        let mut rec = Recorder {
            names: vec!["app".into()],
            roots: vec![],
            units: Units::host(),
            start: Instant::now(),
            interval: Duration::from_millis(100),
            max_samples: 4,
            latest: LatestSample::default(),
            samples: vec![],
        };
        for s in series(&[(0.0, 0.0); 9]).samples {
            rec.push(s);
        }
        assert!(rec.samples.len() <= 4);
        // Three halvings (at the 5th, 7th and 9th push): 100 ms → 800 ms.
        assert_eq!(rec.interval, Duration::from_millis(800));
        assert_eq!(rec.samples.last().unwrap().t_ms, 900);
    }

    fn reading(at: Instant, ticks: u64, allowed: f64) -> Reading {
        Reading {
            at,
            targets: vec![HashMap::from([((7, 1), ticks)])],
            rss_pages: vec![(10, 1)],
            generator_ticks: ticks,
            cores: vec![],
            allowed: vec![allowed],
            generator_allowed: allowed,
        }
    }

    fn recorder() -> Recorder {
        Recorder {
            names: vec!["app".into()],
            roots: vec![],
            units: Units {
                ticks_per_second: 100.0,
                page_bytes: 4096,
            },
            start: Instant::now(),
            interval: Duration::from_millis(100),
            max_samples: 100,
            latest: LatestSample::default(),
            samples: vec![],
        }
    }

    #[test]
    fn a_reading_just_after_a_late_one_does_not_spike() {
        let mut rec = recorder();
        let t0 = rec.start;
        let mut prev = reading(t0, 0, 8.0);
        // A late reading (150 ms, one core busy), then one 1 ms later holding one more tick.
        rec.observe(&mut prev, reading(t0 + Duration::from_millis(150), 15, 8.0));
        rec.observe(&mut prev, reading(t0 + Duration::from_millis(151), 16, 8.0));
        rec.observe(&mut prev, reading(t0 + Duration::from_millis(250), 25, 8.0));
        for s in &rec.samples {
            assert!(s.targets[0].cpu_cores <= 1.05, "{:?}", s.targets[0]);
            assert!(s.generator_cpu_cores <= 1.05, "{s:?}");
        }
        assert_eq!(rec.samples.len(), 2);
        assert_eq!(rec.samples[1].t_ms, 250);
    }

    #[test]
    fn rates_never_exceed_the_cores_the_target_may_use() {
        let mut rec = recorder();
        let t0 = rec.start;
        let mut prev = reading(t0, 0, 1.0);
        // 11 ticks in 100 ms reads as 1.1 cores on a target limited to one core.
        rec.observe(&mut prev, reading(t0 + Duration::from_millis(100), 11, 1.0));
        assert_eq!(rec.samples[0].targets[0].cpu_cores, 1.0);
        assert_eq!(rec.samples[0].generator_cpu_cores, 1.0);
    }

    #[test]
    fn cpu_max_quota_reads_as_cores() {
        assert_eq!(parse_cpu_max("100000 100000\n"), Some(1.0));
        assert_eq!(parse_cpu_max("50000 100000"), Some(0.5));
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn a_busy_child_never_reads_above_the_host_cores() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done"])
            .spawn()
            .expect("sh");
        let sampler = Sampler::start(vec![("busy".into(), child.id())], Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(800));
        let samples = sampler.stop();
        let _ = child.kill();
        let _ = child.wait();
        let host = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let max = samples
            .samples
            .iter()
            .map(|s| s.targets[0].cpu_cores)
            .fold(0.0, f64::max);
        assert!(!samples.samples.is_empty());
        assert!(max <= host, "max {max} cores on a {host}-core host");
    }

    #[test]
    fn core_busy_is_share_of_non_idle_ticks_and_irq_time_is_told_apart() {
        let at = |busy, idle, irq| CoreTicks {
            busy,
            total: busy + idle,
            irq,
        };
        let (before, after) = ([at(0, 0, 0), at(0, 0, 0)], [at(30, 10, 10), at(8, 12, 4)]);
        assert_eq!(core_busy(&before, &after), vec![0.75, 0.4]);
        // 10 of core 0's 40 ticks and 4 of core 1's 20 were interrupts and softirqs.
        assert!((irq_cores(&before, &after) - 0.45).abs() < 1e-12);
    }
}
