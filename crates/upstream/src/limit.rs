//! The concurrency limit: `n` slots, taken in arrival order (tokio's semaphore is FIFO).
//!
//! Timers fire late (tokio rounds up to the next millisecond, plus wake-up latency), so if a
//! freed slot simply passed to the next waiter at the moment it was freed, every hand-over would
//! lose about a millisecond: 4 slots of 10ms would serve about 350 req/s instead of 400. So each
//! slot also remembers when it became free *nominally* (its holder's start + delay, or the end
//! of a stall), and a waiter that queued for it starts its service then instead of at the late
//! moment it woke up. Lateness does not accumulate, and the capacity is exactly `n / delay`;
//! in real time no more than `n` requests ever hold a slot.
//!
//! It also counts the requests waiting in line (the `queued` gauge of `/stats`): two atomic
//! adds per limited request, which already waits for a lock and a timer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

#[derive(Debug)]
pub(crate) struct Limit {
    permits: Semaphore,
    max: usize,
    /// Requests waiting in line for a slot right now.
    queued: AtomicUsize,
    /// When the free slots became free, nominally (earliest first). Slots never used have no
    /// entry; a holder pushes its entry before it gives its permit back.
    free_since: Mutex<BinaryHeap<Reverse<Instant>>>,
}

/// A slot held by one request; given back (with its nominal end) when dropped.
pub(crate) struct Slot<'a> {
    limit: &'a Limit,
    _permit: SemaphorePermit<'a>,
    start: Instant,
    end: Option<Instant>,
}

impl Limit {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            permits: Semaphore::new(max),
            max,
            queued: AtomicUsize::new(0),
            free_since: Mutex::new(BinaryHeap::new()),
        }
    }

    /// Slots taken right now.
    pub(crate) fn in_service(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// Requests waiting in line for a slot right now.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Takes a slot and gives it back at once, for an answer that is complete: true when one
    /// is free and nobody queues for one.
    pub(crate) fn pass_now(&self) -> bool {
        self.permits.try_acquire().is_ok()
    }

    /// Waits in line for a slot. The service of a request that `arrived` then starts at the
    /// later of its arrival and the moment the slot nominally became free.
    pub(crate) async fn acquire(&self, arrived: Instant) -> Slot<'_> {
        let in_line = InLine::join(&self.queued);
        let permit = match self.permits.acquire().await {
            Ok(permit) => permit,
            Err(_) => unreachable!("the limit's semaphore is never closed"),
        };
        drop(in_line);
        let free_since = self.heap().pop().map(|Reverse(at)| at);
        Slot {
            limit: self,
            _permit: permit,
            start: free_since.map_or(arrived, |at| at.max(arrived)),
            end: None,
        }
    }

    fn heap(&self) -> std::sync::MutexGuard<'_, BinaryHeap<Reverse<Instant>>> {
        self.free_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One place in the `queued` count, left when dropped (served, or the request abandoned).
struct InLine<'a>(&'a AtomicUsize);

impl<'a> InLine<'a> {
    fn join(queued: &'a AtomicUsize) -> Self {
        queued.fetch_add(1, Ordering::Relaxed);
        Self(queued)
    }
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Slot<'_> {
    /// When this request's service (nominally) started.
    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// Sets when the service nominally ended, which the next holder may start from.
    pub(crate) fn finish(&mut self, end: Instant) {
        self.end = Some(end);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        // An abandoned request (the client left) frees its slot now.
        let end = self.end.unwrap_or_else(Instant::now);
        self.limit.heap().push(Reverse(end));
        // The permit is released after this, so the next holder finds the entry.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn queued_holders_start_when_the_slot_nominally_freed() {
        let limit = Limit::new(1);
        let t0 = Instant::now();
        let mut first = limit.acquire(t0).await;
        assert_eq!((first.start(), limit.in_service()), (t0, 1));
        assert!(!limit.pass_now());
        first.finish(t0 + Duration::from_millis(10));
        drop(first);
        // Arrived before the slot was free: starts when it was, not when it woke up.
        let second = limit.acquire(t0 + Duration::from_millis(1)).await;
        assert_eq!(second.start(), t0 + Duration::from_millis(10));
        drop(second);
        // Arrived after: starts on arrival.
        let late = t0 + Duration::from_secs(1);
        assert_eq!(limit.acquire(late).await.start(), late);
        assert_eq!(limit.in_service(), 0);
        assert!(limit.pass_now());
    }

    #[tokio::test]
    async fn waiters_are_counted_until_served_or_gone() {
        let limit = Limit::new(1);
        let t0 = Instant::now();
        let first = limit.acquire(t0).await;
        assert_eq!(limit.queued(), 0, "a free slot means no wait");
        let mut waiting = Box::pin(limit.acquire(t0));
        let polled_once = tokio::time::timeout(Duration::ZERO, &mut waiting).await;
        assert!(polled_once.is_err() && limit.queued() == 1);
        let mut gone = Box::pin(limit.acquire(t0));
        let _ = tokio::time::timeout(Duration::ZERO, &mut gone).await;
        assert_eq!(limit.queued(), 2);
        drop(first);
        let served = waiting.await;
        assert_eq!((limit.queued(), limit.in_service()), (1, 1));
        drop(gone);
        assert_eq!(limit.queued(), 0, "an abandoned waiter leaves the line");
        drop(served);
    }
}
