//! The open model's start line: every worker opens its initial pool before the schedule
//! starts, then all start together, the schedule and the measured window moved by the time
//! the pools took (so no request is due while its worker is still connecting). The closed
//! model needs none: its workers connect as they start, as they always did.

use mio::Events;
use std::io;
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

/// A worker of either protocol as the start line sees it.
pub(crate) trait Pooled {
    /// Opens the initial pool before the schedule starts.
    fn open_pool(&mut self) -> io::Result<()>;
    /// Moves the schedule and the measured window `by` later.
    fn delay(&mut self, by: Duration);
}

/// What opening an initial pool needs of a worker (either protocol).
pub(crate) trait PoolSteps {
    /// Begins connects toward the initial pool at `now`, at most the connect limit in
    /// progress; whether the pool is complete (every connect ended).
    fn begin_connects(&mut self, now: Instant) -> bool;
    /// Polls for up to `timeout` and hands the events to the connections.
    fn poll_events(&mut self, events: &mut Events, timeout: Duration) -> io::Result<()>;
    /// The initial pool is opening (`true`: its connects stay out of the per-second series)
    /// or open.
    fn set_opening(&mut self, opening: bool);
}

/// Opens an initial pool: connects begun and events handled until the pool is complete or
/// `deadline` (the connect timeout) has passed; one still pending then joins when it opens.
pub(crate) fn open_until<W: PoolSteps>(w: &mut W, deadline: Instant) -> io::Result<()> {
    w.set_opening(true);
    let opened = open_loop(w, deadline);
    w.set_opening(false);
    opened
}

fn open_loop<W: PoolSteps>(w: &mut W, deadline: Instant) -> io::Result<()> {
    let mut events = Events::with_capacity(256);
    loop {
        let now = Instant::now();
        if w.begin_connects(now) || now >= deadline {
            return Ok(());
        }
        w.poll_events(&mut events, deadline - now)?;
    }
}

/// Two barriers and the delay agreed between them.
pub(crate) struct StartLine {
    ready: Barrier,
    go: Barrier,
    delay: OnceLock<Duration>,
    start: Instant,
}

impl StartLine {
    /// For `workers` worker threads and the engine's own thread; `start`: the schedule's
    /// origin before the delay.
    pub(crate) fn new(workers: usize, start: Instant) -> Self {
        StartLine {
            ready: Barrier::new(workers + 1),
            go: Barrier::new(workers + 1),
            delay: OnceLock::new(),
            start,
        }
    }

    /// A worker thread: opens its pool, waits for every other, and moves its clocks by the
    /// agreed delay. An error is returned only after the barriers, so no thread waits for
    /// one that gave up.
    pub(crate) fn worker<W: Pooled>(&self, worker: io::Result<W>) -> io::Result<W> {
        let worker = worker.and_then(|mut w| w.open_pool().map(|()| w));
        self.ready.wait();
        self.go.wait();
        let mut worker = worker?;
        worker.delay(self.delay());
        Ok(worker)
    }

    /// The engine's thread: waits until every pool is open, fixes the delay, lets them go.
    pub(crate) fn release(&self) {
        self.ready.wait();
        let _ = self.delay.set(self.start.elapsed());
        self.go.wait();
    }

    /// How much later than planned the schedule starts.
    pub(crate) fn delay(&self) -> Duration {
        self.delay.get().copied().unwrap_or_default()
    }
}
