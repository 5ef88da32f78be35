//! The open model's pacer: walks the rate schedule for one worker (every T-th request of the
//! global sequence, so the total rate is exact for any T), and wakes the worker with a
//! timerfd, because epoll's own timeout only has millisecond resolution.
//!
//! Wake-ups are batched by the send window: the timer is armed for the end of the window the
//! next request falls in (windows are counted from the schedule's origin), or sooner, for
//! the time the batch's cap of requests is due (`--send-batch`, 4 by default), and that
//! wake-up sends every request due by then. A request therefore leaves up to one window after its intended time. That wait is
//! the generator's own: it is recorded apart, as the generator's delay, and taken out of the
//! latency ([`crate::recorder::Recorder::sent`]); a wait for a busy connection stays in it.
//! The batch's cap keeps the requests that leave together few, so a fast target is not
//! handed bursts that queue behind each other (which would be in the latency, and be ours).
//! A window of zero arms the timer for each request's own time.

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
    /// Wake-ups are at most this far apart; each sends what is due (zero: one per request).
    pub window: Duration,
    /// Connections this worker opens before the schedule starts.
    pub initial: usize,
    /// Connects this worker may have in progress at once.
    pub connect_limit: usize,
    /// The end of the measured window (timed runs): a send window reaching it releases each
    /// of its requests at its own time, so every request due before the end is sent.
    pub end: Option<Instant>,
    /// A batch leaves once this many requests are due, before its window ends (0: only at
    /// the window's end); `--send-batch`, 4 by default (`loadbench_plan::DEFAULT_SEND_BATCH`:
    /// against nginx a batch of 4 added 31 µs to the median at 10,000 req/s and 19 µs at
    /// 40,000, where 8 added about 80 µs at 10,000 on a busy machine; docs/performance.md).
    pub batch: u64,
}

/// The walk along the schedule alone, without a timer: when this worker's next request is
/// due, and when the window it falls in ends (so it can be tested without a poll).
#[derive(Debug, Clone)]
pub struct Walk<'a> {
    pacing: Pacing<'a>,
    cursor: Cursor,
    next: u64,
    due: Option<Instant>,
    /// When the batch of the next due request may leave (see [`Walk::next_release`]).
    release: Option<Instant>,
}

impl<'a> Walk<'a> {
    /// At this worker's first request.
    pub fn new(pacing: Pacing<'a>) -> Self {
        let mut w = Walk {
            pacing,
            cursor: Cursor::default(),
            next: pacing.first,
            due: None,
            release: None,
        };
        w.refresh();
        w
    }

    fn compute(&mut self) -> Option<Instant> {
        let s = self.pacing.schedule.due_from(&mut self.cursor, self.next)?;
        Some(self.pacing.origin + Duration::from_secs_f64(s))
    }

    /// The next due request and when its batch may leave: its window's end, or the time the
    /// batch's cap is due, whichever comes first.
    fn refresh(&mut self) {
        self.due = self.compute();
        self.release = self.due.map(|due| {
            let end = self.release(due);
            match self.pacing.batch {
                b if b > 1 && end > due => self.peek(b - 1).map_or(end, |full| full.min(end)),
                _ => end,
            }
        });
    }

    /// When the next due request's batch may leave (`None`: the schedule has ended).
    #[inline]
    pub fn next_release(&self) -> Option<Instant> {
        self.release
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
        self.refresh();
    }

    /// Moves `k` requests on at once (`k` ≥ 1): those `k` are accounted for by the caller.
    pub fn skip(&mut self, k: u64) {
        self.next += k * self.pacing.stride;
        self.refresh();
    }

    /// When a request due at `due` may leave: the end of its send window (windows are
    /// counted from the origin), or `due` itself with a zero window or in a window that
    /// reaches the run's end (the worker stops there, so a later release would never come).
    #[inline]
    pub fn release(&self, due: Instant) -> Instant {
        let w = self.pacing.window.as_nanos();
        if w == 0 {
            return due;
        }
        let offset = due.saturating_duration_since(self.pacing.origin).as_nanos();
        let windows = offset.div_ceil(w);
        let at = u64::try_from(windows * w).unwrap_or(u64::MAX);
        let at = self.pacing.origin + Duration::from_nanos(at);
        match self.pacing.end {
            Some(end) if at >= end => due,
            _ => at,
        }
    }

    /// The `k`-th request after the next one (0: the next one), without moving: how many
    /// requests wait for a connection.
    pub fn peek(&self, k: u64) -> Option<Instant> {
        if k == 0 {
            return self.due;
        }
        let mut cursor = self.cursor;
        let i = self.next + k * self.pacing.stride;
        let s = self.pacing.schedule.due_from(&mut cursor, i)?;
        Some(self.pacing.origin + Duration::from_secs_f64(s))
    }

    /// Moves the origin (and the end) later by `by` (the initial pool took that long to open).
    pub fn delay(&mut self, by: Duration) {
        self.pacing.origin += by;
        self.pacing.end = self.pacing.end.map(|e| e + by);
        self.due = self.due.map(|d| d + by);
        self.release = self.release.map(|r| r + by);
    }
}

/// Paces one worker's share of an open-model run: when its next request is due, and a
/// timerfd that wakes the worker's poll for it.
pub struct Pacer<'a> {
    walk: Walk<'a>,
    timer: TimerFd,
    armed: Option<Instant>,
}

impl<'a> Pacer<'a> {
    /// A pacer at this worker's first request, its timer registered in the worker's poll.
    pub fn new(pacing: Pacing<'a>, registry: &Registry) -> io::Result<Self> {
        let timer = TimerFd::new()?;
        registry.register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
        Ok(Pacer {
            walk: Walk::new(pacing),
            timer,
            armed: None,
        })
    }

    /// When this worker's next request is due; `None` once the schedule is done.
    #[inline]
    pub fn due(&self) -> Option<Instant> {
        self.walk.due()
    }

    /// Whether a batch may be sent at `now`: the first waiting request's window has ended.
    /// Then every request due by `now` leaves (see [`Pacer::due`]).
    #[inline]
    pub fn open(&self, now: Instant) -> bool {
        self.walk.next_release().is_some_and(|r| r <= now)
    }

    /// The due request was started; move to this worker's next one.
    #[inline]
    pub fn advance(&mut self) {
        self.walk.advance();
    }

    /// See [`Walk::peek`].
    pub fn peek(&self, k: u64) -> Option<Instant> {
        self.walk.peek(k)
    }

    /// See [`Walk::skip`].
    pub fn skip(&mut self, k: u64) {
        self.walk.skip(k);
    }

    /// See [`Walk::delay`].
    pub fn delay(&mut self, by: Duration) {
        self.walk.delay(by);
    }

    /// The settings this pacer runs with.
    pub fn pacing(&self) -> &Pacing<'a> {
        &self.walk.pacing
    }

    /// The most connections this worker may open.
    pub fn max_connections(&self) -> usize {
        self.walk.pacing.max_connections
    }

    /// The initial pool: connections to open before the schedule starts (within the cap),
    /// and the connects allowed in progress at once.
    pub fn initial_pool(&self) -> (usize, usize) {
        let p = &self.walk.pacing;
        (p.initial.min(p.max_connections), p.connect_limit.max(1))
    }

    /// How long the worker may sleep, at most `limit`: until the next batch may leave, with
    /// the timer armed for it when that is sooner than `limit` (epoll would round it to a
    /// ms). The timer is set once per batch, not per request.
    pub fn wait(&mut self, now: Instant, limit: Duration, can_send: bool) -> Duration {
        let Some(release) = self.walk.next_release().filter(|_| can_send) else {
            return limit;
        };
        self.wake_at(now, release, limit)
    }

    /// How long the worker may sleep outside its poll until the next batch may leave, at most
    /// `limit`; `None` when no request is to go (then only the poll may wait). No timer is
    /// armed: the worker sleeps this long, then polls without waiting, so the responses that
    /// arrived meanwhile are read at once, timed by their kernel stamps (`Ctx::stamped`).
    pub fn nap(&self, limit: Duration) -> Option<Duration> {
        let release = self.walk.next_release()?;
        Some(release.saturating_duration_since(Instant::now()).min(limit))
    }

    /// When the next due request may leave (`None`: the schedule has ended).
    pub fn next_release(&self) -> Option<Instant> {
        self.walk.next_release()
    }

    /// When the request due at `due` may leave (see [`Walk::release`]).
    pub fn release(&self, due: Instant) -> Instant {
        self.walk.release(due)
    }

    /// How long the worker may sleep, at most `limit`, to wake at `at` (the timer armed for
    /// it when that is sooner than `limit`): a blocked worker wakes when the pool may grow.
    pub fn wake_at(&mut self, now: Instant, at: Instant, limit: Duration) -> Duration {
        if at <= now {
            return Duration::ZERO;
        }
        if at.saturating_duration_since(now) < limit && self.armed != Some(at) {
            // Relative to a fresh clock read, so the time spent since `now` is not added.
            let until = at.saturating_duration_since(Instant::now());
            if until.is_zero() {
                return Duration::ZERO;
            }
            self.timer
                .set_state(TimerState::Oneshot(until), SetTimeFlags::Default);
            self.armed = Some(at);
        }
        limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(schedule: &Schedule, origin: Instant, window: Duration) -> Pacing<'_> {
        Pacing {
            schedule,
            origin,
            first: 0,
            stride: 1,
            max_connections: 10,
            window,
            initial: 1,
            connect_limit: 1,
            end: None,
            batch: 0,
        }
    }

    /// Simulates one worker's second: a wake-up at each batch's release sends every request
    /// due by then. Returns the wake-ups, and each request's intended time and send time.
    fn simulate(rate: f64, window: Duration) -> (usize, Vec<(Instant, Instant)>) {
        simulate_batched(rate, window, 0)
    }

    fn simulate_batched(
        rate: f64,
        window: Duration,
        batch: u64,
    ) -> (usize, Vec<(Instant, Instant)>) {
        let schedule = Schedule::constant(rate, Duration::from_secs(1));
        let origin = Instant::now();
        let mut pacing = pacing(&schedule, origin, window);
        pacing.batch = batch;
        let mut walk = Walk::new(pacing);
        let (mut wakes, mut sent) = (0, Vec::new());
        while walk.due().is_some() {
            let now = walk
                .next_release()
                .expect("a release while a request is due");
            wakes += 1;
            while let Some(due) = walk.due().filter(|&d| d <= now) {
                sent.push((due, now));
                walk.advance();
            }
        }
        (wakes, sent)
    }

    #[test]
    fn a_window_batches_wake_ups_and_keeps_every_intended_time_exact() {
        let ms = Duration::from_millis;
        for (rate, window) in [(10_000.0, ms(1)), (40_000.0, ms(1)), (10_000.0, ms(5))] {
            let (wakes, sent) = simulate(rate, window);
            let per_window = 1000 / window.as_millis() as usize;
            assert!(
                wakes <= per_window + 2,
                "{rate}/s, {window:?}: {wakes} wake-ups"
            );
            assert_eq!(
                sent.len(),
                rate as usize,
                "every request of the second is sent"
            );
            let origin = sent[0].0;
            for (i, &(intended, at)) in sent.iter().enumerate() {
                let exact = Duration::from_secs_f64(i as f64 / rate);
                let off = intended.duration_since(origin).abs_diff(exact);
                assert!(off < Duration::from_nanos(2), "request {i}: {off:?} off");
                assert!(at >= intended && at - intended <= window, "request {i}");
            }
        }
    }

    /// Issue 36: a batch leaves once `batch` requests are due, before its window ends, so at
    /// high rates no more than that many leave at once; at low rates the window decides.
    #[test]
    fn a_batch_leaves_when_its_cap_is_due_or_its_window_ends() {
        let ms = Duration::from_millis;
        // 40,000/s in 1 ms windows: 40 a window unbatched, 8 a wake-up with the cap.
        let (wakes, sent) = simulate_batched(40_000.0, ms(1), 8);
        assert_eq!(sent.len(), 40_000);
        assert!((4_990..=5_010).contains(&wakes), "{wakes} wake-ups");
        let mut per_wake = std::collections::BTreeMap::new();
        for &(_, at) in &sent {
            *per_wake.entry(at).or_insert(0u32) += 1;
        }
        assert!(
            per_wake.values().all(|&n| n <= 8),
            "never more than 8 at once"
        );
        // The batch's last request leaves at its own time, the first waits 7 intervals.
        for &(intended, at) in &sent {
            assert!(at >= intended && at - intended <= Duration::from_micros(176));
        }
        // 500/s: one request a window, released at the window's end as without a cap.
        let (wakes, sent) = simulate_batched(500.0, ms(1), 8);
        assert_eq!((wakes, sent.len()), (500, 500));
        let lags = |sent: &[(Instant, Instant)]| -> Vec<Duration> {
            sent.iter().map(|&(intended, at)| at - intended).collect()
        };
        assert_eq!(lags(&sent), lags(&simulate(500.0, ms(1)).1));
    }

    #[test]
    fn a_zero_window_wakes_for_each_request_at_its_own_time() {
        let (wakes, sent) = simulate(1000.0, Duration::ZERO);
        assert_eq!(wakes, 1000);
        assert!(sent.iter().all(|&(intended, at)| intended == at));
    }

    #[test]
    fn peek_looks_ahead_without_moving_and_delay_moves_everything() {
        let schedule = Schedule::constant(100.0, Duration::from_secs(1));
        let origin = Instant::now();
        let mut walk = Walk::new(pacing(&schedule, origin, Duration::from_millis(1)));
        assert_eq!(walk.peek(3), Some(origin + Duration::from_millis(30)));
        assert_eq!(walk.due(), Some(origin));
        walk.delay(Duration::from_millis(7));
        assert_eq!(walk.due(), Some(origin + Duration::from_millis(7)));
        walk.advance();
        assert_eq!(walk.due(), Some(origin + Duration::from_millis(17)));
        assert_eq!(
            walk.release(origin + Duration::from_micros(7_500)),
            origin + Duration::from_millis(8)
        );
    }

    #[test]
    fn every_request_due_before_the_end_leaves_before_it() {
        let schedule = Schedule::constant(10_000.0, Duration::from_secs(1));
        let origin = Instant::now();
        // The end on a window's edge (the usual case: whole seconds), and inside a window.
        for end_us in [1_000_000, 999_500] {
            let end = origin + Duration::from_micros(end_us);
            let mut pacing = pacing(&schedule, origin, Duration::from_millis(1));
            pacing.end = Some(end);
            let mut walk = Walk::new(pacing);
            let (mut before, mut late) = (0, 0);
            while let Some(due) = walk.due().filter(|&d| d < end) {
                let release = walk.release(due);
                assert!(release >= due, "never early");
                if release < end {
                    before += 1;
                } else {
                    late += 1;
                }
                walk.advance();
            }
            assert_eq!(late, 0, "end {end_us} µs: {before} sent in time");
            assert_eq!(before, end_us.div_ceil(100) as usize);
        }
    }
}
