//! The generator's own threads over a bench step: which of this process's threads were busy,
//! on a CPU and runnable, so a generator thread that never waited for the network makes the
//! step generator-bound (`diagnose::generator_hot_thread`). The engine's worker threads start
//! and end inside the step, so two readings at its edges would miss them: a light thread reads
//! `/proc/self/task` every [`INTERVAL`] and keeps each thread's first and last reading; a
//! thread's shares are over the span it was seen. loadbench's helper threads (`loadbench-*`:
//! the sampler, the kernel watch, this watcher) are left out: they are not the load's, and on
//! an overloaded host one that sleeps most of the time can still wait long enough in the run
//! queue to look runnable all the time.

use crate::evidence::Thread;
use loadbench_model::evidence::BUSIEST_THREADS;
use loadbench_model::{TargetEvidence, ThreadShare};
use procfs::process::Process;
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the threads are read.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// The watcher's own thread name.
const WATCHER: &str = "loadbench-gen";
/// The name prefix of loadbench's helper threads, left out of the evidence.
const HELPERS: &str = "loadbench-";

/// A thread's first and last reading.
#[derive(Debug, Clone)]
struct Span {
    comm: String,
    first: (Instant, Thread),
    last: (Instant, Thread),
}

impl Span {
    fn share(&self) -> ThreadShare {
        let wall = self.last.0.duration_since(self.first.0).as_nanos() as f64;
        let of = |ns: u64| if wall > 0.0 { ns as f64 / wall } else { 0.0 };
        let cpu = self.last.1.cpu_ns.saturating_sub(self.first.1.cpu_ns);
        let wait = match (self.first.1.wait_ns, self.last.1.wait_ns) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        ThreadShare {
            name: self.comm.clone(),
            tid: 0,
            cores: of(cpu),
            runnable: wait.map_or(0.0, |w| of(cpu + w).min(1.0)),
        }
    }
}

/// Watches this process's threads from [`GeneratorWatch::start`] to
/// [`GeneratorWatch::finish`].
#[derive(Debug)]
pub struct GeneratorWatch {
    started: Instant,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<HashMap<u32, Span>>>,
}

impl GeneratorWatch {
    /// Reads the threads now and then every [`INTERVAL`] until finished.
    pub fn start() -> GeneratorWatch {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(WATCHER.into())
            .spawn(move || watch(&rx))
            .ok();
        GeneratorWatch {
            started: Instant::now(),
            stop: Some(tx),
            thread,
        }
    }

    /// Stops watching; the generator's evidence, named `generator`, against `allowed` cores.
    pub fn finish(mut self, allowed: f64) -> TargetEvidence {
        drop(self.stop.take());
        let spans = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        evidence(&spans, self.started.elapsed(), allowed)
    }
}

fn watch(stop: &mpsc::Receiver<()>) -> HashMap<u32, Span> {
    let mut spans = HashMap::new();
    loop {
        read_into(&mut spans);
        match stop.recv_timeout(INTERVAL) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => break,
        }
    }
    read_into(&mut spans);
    spans
}

fn read_into(spans: &mut HashMap<u32, Span>) {
    let Ok(tasks) = Process::myself().and_then(|p| p.tasks()) else {
        return;
    };
    let now = Instant::now();
    for (tid, t) in tasks.flatten().filter_map(|t| Thread::read(&t)) {
        if t.comm.starts_with(HELPERS) {
            continue;
        }
        spans
            .entry(tid)
            .and_modify(|s| s.last = (now, t.clone()))
            .or_insert_with(|| Span {
                comm: t.comm.clone(),
                first: (now, t.clone()),
                last: (now, t),
            });
    }
}

/// The threads seen at least twice, busiest first; the total CPU over the whole window.
fn evidence(spans: &HashMap<u32, Span>, window: Duration, allowed: f64) -> TargetEvidence {
    let mut busiest: Vec<ThreadShare> = spans
        .iter()
        .filter(|(_, s)| s.last.0 > s.first.0)
        .map(|(&tid, s)| ThreadShare { tid, ..s.share() })
        .collect();
    busiest.sort_by(|a, b| b.cores.total_cmp(&a.cores).then(a.tid.cmp(&b.tid)));
    let cpu_ns: u64 = spans
        .values()
        .map(|s| s.last.1.cpu_ns.saturating_sub(s.first.1.cpu_ns))
        .sum();
    let wall = window.as_nanos() as f64;
    busiest.truncate(BUSIEST_THREADS);
    TargetEvidence {
        target: "generator".into(),
        threads: spans.len() as u32,
        busiest,
        cpu_cores: if wall > 0.0 {
            cpu_ns as f64 / wall
        } else {
            0.0
        },
        allowed_cores: allowed,
        ..TargetEvidence::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_spins_and_ends_inside_the_window_is_seen_busy() {
        let watch = GeneratorWatch::start();
        std::thread::sleep(Duration::from_millis(150));
        // Like an engine worker: born after the start, gone before the finish.
        std::thread::Builder::new()
            .name("lb-test-spin".into())
            .spawn(|| {
                let until = Instant::now() + Duration::from_millis(900);
                let mut n = 0u64;
                while Instant::now() < until {
                    n = n.wrapping_add(1);
                }
                n
            })
            .unwrap()
            .join()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150));
        let e = watch.finish(2.0);
        let spin = e
            .busiest
            .iter()
            .find(|t| t.name == "lb-test-spin")
            .unwrap_or_else(|| panic!("the ended thread is kept: {e:?}"));
        // On a loaded host it gets less than a core, but it never waits for work.
        assert!(spin.runnable >= 0.9, "{e:?}");
        assert!(spin.cores > 0.05 && spin.cores <= 1.05, "{e:?}");
        assert_eq!(e.target, "generator");
        assert_eq!(e.allowed_cores, 2.0);
        assert!(e.busiest.iter().all(|t| t.name != WATCHER), "{e:?}");
        assert!(
            e.busiest.iter().all(|t| !t.name.starts_with(HELPERS)),
            "{e:?}"
        );
        assert!(e.cpu_cores >= spin.cores * 0.5, "{e:?}");
    }
}
