//! The open model's pool growth policy: when a request that found every connection busy
//! becomes a reason to open another one. Opening at once (as soon as any request waited) turns
//! the start of a run, or a server's short hiccup, into a storm of connects although an
//! in-use connection would have freed within a fraction of a millisecond; never opening one
//! starves the schedule. So a waiting request first waits a threshold, and only then is it a
//! reason to connect. Pure logic, without a clock of its own, so it is tested with a simulated
//! one.
//!
//! The threshold is the larger of the send window and a running average (EWMA) of recent
//! connect times. Waiting as long as the alternative costs and then paying for it is the
//! classic rent-or-buy rule: if a busy connection frees before the threshold, no connect was
//! spent; if not, the request waited at most twice what the better choice in hindsight would
//! have cost it (the threshold plus a connect). Connect times are measured directly and move
//! the right way under stress: when the server accepts slowly (a full accept queue, the storm
//! the issue saw at 40k req/s with connects of 187 ms), more connects would not help, and the
//! threshold grows with them. The send window is the floor because a request that waited less
//! than one window cannot tell a slow pool from the batch it was sent in.

use std::time::{Duration, Instant};

/// The weight of the newest connect time in the running average (TCP's 1/8 for its RTT).
const WEIGHT: f64 = 0.125;

/// The pool grows at most by its own size in this time (it at most doubles), so a stall of a
/// few tens of ms, after which every held-up request is past the threshold, adds a fraction of
/// the pool instead of a connection for each, while a server past its capacity (whose queue
/// grows for as long as the step lasts) gets its connections within a few hundred ms.
const DOUBLING: Duration = Duration::from_millis(100);

/// The least pool the doubling rule counts with, so a pool of 2 is not held to 2 at a time.
const SMALL_POOL: f64 = 16.0;

/// When the pool may grow for a waiting request (see the module's text).
#[derive(Debug, Clone)]
pub struct Growth {
    /// The send window: the threshold's floor.
    window: Duration,
    /// The running average of connect times, ns; `None` before the first connect.
    connect_ns: Option<f64>,
    /// Connects the doubling rule allows now (fractional; refilled with time).
    allowance: Option<f64>,
    /// When `allowance` was last refilled.
    refilled_at: Option<Instant>,
}

impl Growth {
    /// A policy for a worker with this send window, before any connect.
    pub fn new(window: Duration) -> Self {
        Growth {
            window,
            connect_ns: None,
            allowance: None,
            refilled_at: None,
        }
    }

    /// Whether a pool of `pool` connections may begin one more connect at `now` under the
    /// doubling rule ([`DOUBLING`]); if so, the connect is counted. If not, `Err` says when.
    pub fn take_connect(&mut self, pool: usize, now: Instant) -> Result<(), Instant> {
        let size = (pool as f64).max(SMALL_POOL);
        let per_sec = size / DOUBLING.as_secs_f64();
        let since = self
            .refilled_at
            .map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64());
        let allowance = self
            .allowance
            .map_or(size, |a| (a + since * per_sec).min(size));
        self.refilled_at = Some(now);
        if allowance >= 1.0 {
            self.allowance = Some(allowance - 1.0);
            return Ok(());
        }
        self.allowance = Some(allowance);
        Err(now + Duration::from_secs_f64((1.0 - allowance) / per_sec))
    }

    /// A connect (TCP, to established) took `took`.
    pub fn connected(&mut self, took: Duration) {
        let ns = took.as_nanos() as f64;
        self.connect_ns = Some(match self.connect_ns {
            None => ns,
            Some(avg) => avg + WEIGHT * (ns - avg),
        });
    }

    /// How long a request waits for a connection to free before it may open one.
    pub fn threshold(&self) -> Duration {
        let estimate = Duration::from_nanos(self.connect_ns.unwrap_or(0.0) as u64);
        self.window.max(estimate)
    }

    /// For a request waiting for a connection since `waiting_since`: `None` if at `now` it
    /// may be the reason for a new connect, else the instant from which it may. The
    /// connections' state is only as fresh as the last poll (`polled_at`): a connection may
    /// have freed since, its answer unread. So the threshold must have passed by that poll,
    /// not only by `now`; when it passed after it, the answer is `now`: poll again first.
    /// Without this, a worker that was not scheduled for a while (its answers waiting in the
    /// kernel) would wake, find every request past the threshold and every connection
    /// seemingly busy, and open a connection for each.
    pub fn not_before(
        &self,
        waiting_since: Instant,
        now: Instant,
        polled_at: Instant,
    ) -> Option<Instant> {
        let at = waiting_since + self.threshold();
        if at > now {
            return Some(at);
        }
        (at > polled_at).then_some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_threshold_is_the_window_until_connects_take_longer() {
        let mut g = Growth::new(us(1000));
        assert_eq!(g.threshold(), us(1000), "no connect seen yet");
        g.connected(us(80));
        assert_eq!(g.threshold(), us(1000));
        for _ in 0..40 {
            g.connected(us(5000));
        }
        let t = g.threshold();
        assert!(t > us(4900) && t <= us(5000), "{t:?}");
        let mut zero = Growth::new(Duration::ZERO);
        zero.connected(us(80));
        assert_eq!(
            zero.threshold(),
            us(80),
            "a zero window leaves the connect time"
        );
    }

    #[test]
    fn one_slow_connect_moves_the_average_by_an_eighth() {
        let mut g = Growth::new(Duration::ZERO);
        g.connected(us(100));
        g.connected(us(900));
        assert_eq!(g.threshold(), us(200));
    }

    #[test]
    fn a_request_may_grow_the_pool_once_it_waited_the_threshold() {
        let g = Growth::new(us(1000));
        let t0 = Instant::now();
        assert_eq!(g.not_before(t0, t0, t0), Some(t0 + us(1000)));
        assert_eq!(
            g.not_before(t0, t0 + us(999), t0 + us(999)),
            Some(t0 + us(1000))
        );
        assert_eq!(g.not_before(t0, t0 + us(1000), t0 + us(1000)), None);
    }

    /// A pool of 100 may add 100 connects at once, then 1 per ms (its size per 100 ms).
    #[test]
    fn the_pool_at_most_doubles_every_100_ms() {
        let mut g = Growth::new(us(1000));
        let t0 = Instant::now();
        let burst = (0..500)
            .take_while(|_| g.take_connect(100, t0).is_ok())
            .count();
        assert_eq!(burst, 100);
        let next = g.take_connect(100, t0).unwrap_err();
        assert_eq!(next, t0 + us(1000));
        assert!(g.take_connect(100, t0 + us(999)).is_err());
        assert!(g.take_connect(100, t0 + us(1000)).is_ok());
        // 40 ms later (a stall): 40 more, not one per held-up request.
        let later = t0 + Duration::from_millis(41);
        let after = (0..500)
            .take_while(|_| g.take_connect(100, later).is_ok())
            .count();
        assert_eq!(after, 40);
        // A pool of 2 counts as 16.
        let mut small = Growth::new(us(1000));
        let n = (0..50)
            .take_while(|_| small.take_connect(2, t0).is_ok())
            .count();
        assert_eq!(n, 16);
    }

    /// A worker that slept past the threshold without polling (descheduled, its answers
    /// unread) is told to poll first (`Some(now)`), and may grow only once a poll after the
    /// threshold found nothing free.
    #[test]
    fn knowledge_older_than_the_threshold_means_poll_first() {
        let g = Growth::new(us(1000));
        let t0 = Instant::now();
        let late = t0 + us(40_000);
        assert_eq!(g.not_before(t0, late, t0 + us(500)), Some(late));
        assert_eq!(g.not_before(t0, late, t0 + us(1000)), None);
        assert_eq!(g.not_before(t0, late, late), None);
    }

    /// One worker over a simulated second: requests due every `gap`, sent at the end of their
    /// 1 ms window on a free connection; each connection stays busy `service`; a connect takes
    /// `connect`. Returns the connections opened besides the `start` ones.
    fn simulate(gap: Duration, service: Duration, start: usize, grow_at_once: bool) -> usize {
        let connect = us(60);
        let window = us(1000);
        let mut g = Growth::new(window);
        g.connected(connect);
        let t0 = Instant::now();
        let mut free_at = vec![t0; start];
        let mut pending: Vec<Instant> = Vec::new();
        let mut due = t0;
        let release = |d: Instant| {
            let w = d.duration_since(t0).as_nanos().div_ceil(window.as_nanos());
            t0 + Duration::from_nanos((w * window.as_nanos()) as u64)
        };
        let mut now = t0;
        while now < t0 + Duration::from_secs(1) {
            // Every connect in progress done by now joins the pool.
            let (done, rest) = pending.iter().partition(|&&at| at <= now);
            free_at.extend::<Vec<Instant>>(done);
            pending = rest;
            while release(due) <= now {
                let Some(c) = free_at.iter_mut().find(|f| **f <= now) else {
                    break;
                };
                *c = now + service;
                due += gap;
            }
            // One connect per waiting request not covered by a pending one, once allowed.
            loop {
                let waiting = release(due + gap * pending.len() as u32);
                let allowed = grow_at_once || g.not_before(waiting, now, now).is_none();
                if waiting > now || !allowed {
                    break;
                }
                pending.push(now + connect);
            }
            now += us(10);
        }
        free_at.len() + pending.len() - start
    }

    /// 40k req/s of 200 µs each, sent 40 at a time (a 1 ms window), is served by 10
    /// connections within the window: a connection frees every 20 µs, well inside the
    /// threshold, so the pool opens nothing more; connecting for every waiting request at once
    /// (the storm) opens three times the pool.
    #[test]
    fn requests_that_a_busy_connection_serves_soon_open_nothing() {
        let (gap, service) = (us(25), us(200));
        assert_eq!(simulate(gap, service, 10, false), 0);
        let eager = simulate(gap, service, 10, true);
        assert!(eager >= 25, "{eager} opened at once");
    }

    /// From a pool of 2, the same rate grows once, for the requests of the one window that
    /// waited past the threshold, and then holds.
    #[test]
    fn a_pool_too_small_grows_once_for_the_requests_that_waited() {
        let opened = simulate(us(25), us(200), 2, false);
        assert!((8..=40).contains(&opened), "{opened} opened");
    }

    /// 1k req/s of 20 ms each needs 20 connections: requests wait longer than the threshold,
    /// so the pool grows to what the rate needs, and not twice that.
    #[test]
    fn requests_that_wait_longer_than_the_threshold_grow_the_pool() {
        let opened = simulate(us(1000), us(20_000), 2, false);
        assert!((18..=40).contains(&opened), "{opened} opened");
    }
}
