//! `keep_abandoned`: work that goes on after its client has gone, as in Tomcat or Go's
//! net/http. hyper drops a request's service future when its connection closes, which cancels
//! the wait for a slot and the delay: by default an overload leaves no backlog behind once its
//! clients give up. With `keep_abandoned`, the wait and the service run as a task of their own
//! that owns what it needs, and the service future only waits for the answer. When the client
//! leaves, the task still keeps its place in line and its slot until its (nominal) end; its
//! answer is then discarded and counted (`abandoned_completed` in `/stats`).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::routes::Outcome;

/// Counts the answers finished for clients that had gone.
#[derive(Debug, Default)]
pub(crate) struct Abandoned {
    completed: AtomicU64,
}

impl Abandoned {
    /// Starts `work` as its own task, which runs to its end even if the returned future is
    /// dropped. The future yields the answer, or `None` if the task was cancelled (the server
    /// stopped past its grace period).
    pub(crate) fn keep(
        self: &Arc<Self>,
        work: impl Future<Output = Outcome> + Send + 'static,
    ) -> impl Future<Output = Option<Outcome>> + Send + 'static {
        let (answer, answered) = oneshot::channel();
        let counts = Arc::clone(self);
        tokio::spawn(async move {
            if answer.send(work.await).is_err() {
                counts.completed.fetch_add(1, Ordering::Relaxed);
            }
        });
        async move { answered.await.ok() }
    }

    /// Answers finished after their client had gone, since start or the last reset.
    pub(crate) fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    /// Zeroes the count and returns what it held.
    pub(crate) fn reset(&self) -> u64 {
        self.completed.swap(0, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use hyper::Response;

    use crate::body::ResponseBody;

    async fn answer_after(ms: u64) -> Outcome {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(Response::new(ResponseBody::from_static(b"done")))
    }

    #[tokio::test]
    async fn work_goes_on_when_its_waiter_is_dropped() {
        let abandoned = Arc::new(Abandoned::default());
        let answer = abandoned.keep(answer_after(1)).await;
        assert!(matches!(answer, Some(Ok(_))));
        assert_eq!(abandoned.completed(), 0, "its client got the answer");
        drop(abandoned.keep(answer_after(20)));
        drop(abandoned.keep(answer_after(20)));
        // Had dropping cancelled the work, nothing would ever be counted.
        for _ in 0..5000 {
            if abandoned.completed() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(abandoned.reset(), 2);
        assert_eq!(abandoned.completed(), 0);
    }
}
