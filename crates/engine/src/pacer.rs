//! The open model's pacer: walks the rate schedule for one worker (every T-th request of the
//! global sequence, so the total rate is exact for any T), and wakes the worker on time with a
//! timerfd, because epoll's own timeout only has millisecond resolution.

use loadbench_plan::{Cursor, Schedule};
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use timerfd::{SetTimeFlags, TimerFd, TimerState};

/// The token of the pacer's timer in the worker's poll; connections use indices below it.
pub const TIMER: Token = Token(usize::MAX);

/// What one worker needs to pace its share of an open-model run.
#[derive(Debug, Clone, Copy)]
pub struct Pacing<'a> {
    /// The whole schedule, warm-up lead included; time 0 is `origin`.
    pub schedule: &'a Schedule,
    /// The instant the schedule's time 0 stands for (the start of the warm-up).
    pub origin: Instant,
    /// This worker's first request index in the global sequence.
    pub first: u64,
    /// The number of workers: this worker takes every `stride`-th request from `first` on.
    pub stride: u64,
    /// The most connections this worker may open.
    pub max_connections: usize,
}

/// Paces one worker's share of an open-model run: when its next request is due, and a
/// timerfd that wakes the worker's poll for it.
pub struct Pacer<'a> {
    pacing: Pacing<'a>,
    cursor: Cursor,
    next: u64,
    due: Option<Instant>,
    timer: TimerFd,
    armed: Option<Instant>,
}

impl<'a> Pacer<'a> {
    /// A pacer at this worker's first request, its timer registered in the worker's poll.
    pub fn new(pacing: Pacing<'a>, registry: &Registry) -> io::Result<Self> {
        let timer = TimerFd::new()?;
        registry.register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        let mut p = Pacer {
            pacing,
            cursor: Cursor::default(),
            next: pacing.first,
            due: None,
            timer,
            armed: None,
        };
        p.due = p.compute();
        Ok(p)
    }

    fn compute(&mut self) -> Option<Instant> {
        let s = self.pacing.schedule.due_from(&mut self.cursor, self.next)?;
        Some(self.pacing.origin + Duration::from_secs_f64(s))
    }

    /// When this worker's next request is due; `None` once the schedule is done.
    #[inline]
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// The due request was started; move to this worker's next one.
    #[inline]
    pub fn advance(&mut self) {
        self.next += self.pacing.stride;
        self.due = self.compute();
    }

    /// The most connections this worker may open.
    pub fn max_connections(&self) -> usize {
        self.pacing.max_connections
    }

    /// How long the worker may sleep, at most `limit`: until the next due request, with the
    /// timer armed for it when that is sooner than `limit` (epoll would round it to a ms).
    pub fn wait(&mut self, now: Instant, limit: Duration, can_send: bool) -> Duration {
        let Some(due) = self.due.filter(|_| can_send) else {
            return limit;
        };
        if due <= now {
            return Duration::ZERO;
        }
        if due.saturating_duration_since(now) < limit && self.armed != Some(due) {
            // Relative to a fresh clock read, so the time spent since `now` is not added.
            let until = due.saturating_duration_since(Instant::now());
            if until.is_zero() {
                return Duration::ZERO;
            }
            self.timer
                .set_state(TimerState::Oneshot(until), SetTimeFlags::Default);
            self.armed = Some(due);
        }
        limit
    }
}
