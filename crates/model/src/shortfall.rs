//! Why an open-model run sent less than its schedule asked: the engine measures, per worker
//! thread, how long the connection pool was full while a request was due and how much CPU the
//! thread used ([`GeneratorTime`]); [`Shortfall`] turns them into the sentence printed beside
//! the achieved rate.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Time accounts of the generator's worker threads, summed over workers (merge adds), µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratorTime {
    /// Wall time the workers ran, summed over workers.
    pub worker_us: u64,
    /// CPU time the worker threads used (from /proc/thread-self/schedstat); 0 when unknown.
    pub cpu_us: u64,
    /// Open model: time with a request due while every allowed connection was busy, summed
    /// over workers.
    pub pool_full_us: u64,
}

impl GeneratorTime {
    /// Adds another worker's (or shard's) accounts.
    pub fn merge(&mut self, o: &GeneratorTime) {
        self.worker_us += o.worker_us;
        self.cpu_us += o.cpu_us;
        self.pool_full_us += o.pool_full_us;
    }

    /// Share of the workers' time with the pool full (0 when nothing was measured).
    pub fn pool_full_share(&self) -> f64 {
        share(self.pool_full_us, self.worker_us)
    }

    /// Share of the workers' time spent on a CPU (0 when nothing was measured).
    pub fn cpu_share(&self) -> f64 {
        share(self.cpu_us, self.worker_us)
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64).min(1.0)
}

/// An open-model run below its target rate, and what the generator saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall {
    /// Rate sent over rate asked.
    pub reached: f64,
    /// Share of the time the connection pool was full while a request was due.
    pub pool_full: f64,
    /// Share of the worker threads' time spent on a CPU.
    pub cpu: f64,
    /// The most connections the run could open.
    pub max_connections: u32,
}

/// What limited a short run, as far as the generator can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Requests were due while every allowed connection waited for a response.
    PoolFull,
    /// The worker threads were on a CPU nearly all the time.
    GeneratorBusy,
    /// Neither: the pool had room and the threads had time.
    NotTheGenerator,
}

impl Cause {
    /// The cause in a few words, for a table cell.
    pub fn label(self) -> &'static str {
        match self {
            Cause::PoolFull => "connection pool full",
            Cause::GeneratorBusy => "generator busy",
            Cause::NotTheGenerator => "not the generator",
        }
    }
}

/// Below this share of the target rate a run is called short.
const SHORT: f64 = 0.95;
/// A pool full this share of the time explains a shortfall.
const POOL_CAUSE: f64 = 0.2;
/// Worker threads on a CPU this share of the time were the limit.
const CPU_CAUSE: f64 = 0.85;

impl Shortfall {
    /// The finding for a run that sent `sent_per_sec` of `target_per_sec`, or `None` when it
    /// reached at least 95% of the target.
    pub fn of(
        g: &GeneratorTime,
        sent_per_sec: f64,
        target_per_sec: f64,
        max_connections: u32,
    ) -> Option<Shortfall> {
        if target_per_sec <= 0.0 || sent_per_sec >= SHORT * target_per_sec {
            return None;
        }
        Some(Shortfall {
            reached: sent_per_sec / target_per_sec,
            pool_full: g.pool_full_share(),
            cpu: g.cpu_share(),
            max_connections,
        })
    }

    /// The finding for a run result: open model only, against its average target rate.
    pub fn of_run(r: &crate::RunResult) -> Option<Shortfall> {
        let crate::LoadShape::Open {
            max_connections, ..
        } = r.config.load
        else {
            return None;
        };
        let sum = r.stats.summary();
        let target = sum.target_per_sec?;
        Self::of(
            &r.stats.generator,
            sum.sent_per_sec,
            target,
            max_connections,
        )
    }

    /// What limited the run: a full pool when it was full a fifth of the time or more (and
    /// more often than the threads were busy), else busy threads, else neither.
    pub fn cause(&self) -> Cause {
        let pool = self.pool_full >= POOL_CAUSE;
        if pool && self.pool_full >= self.cpu {
            Cause::PoolFull
        } else if self.cpu >= CPU_CAUSE {
            Cause::GeneratorBusy
        } else if pool {
            Cause::PoolFull
        } else {
            Cause::NotTheGenerator
        }
    }
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (pool, cpu) = (pct(self.pool_full), pct(self.cpu));
        let reached = pct(self.reached);
        match self.cause() {
            Cause::PoolFull => write!(
                f,
                "reached {reached} of the target rate because the connection pool was full \
                 {pool} of the time: all {} allowed connections were waiting for responses \
                 (raise --max-connections, or the target is slower than this rate needs); \
                 generator CPU {cpu}",
                self.max_connections
            ),
            Cause::GeneratorBusy => write!(
                f,
                "reached {reached} of the target rate because the generator was busy: its \
                 threads were on a CPU {cpu} of the time (add --threads, free the generator's \
                 cores, or add a load host); connection pool full {pool}"
            ),
            Cause::NotTheGenerator => write!(
                f,
                "reached {reached} of the target rate, though the connection pool was full \
                 only {pool} of the time and the generator's CPU {cpu}: look at connect errors \
                 and backoff"
            ),
        }
    }
}

fn pct(x: f64) -> String {
    crate::human::percent(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(worker_us: u64, cpu_us: u64, pool_full_us: u64) -> GeneratorTime {
        GeneratorTime {
            worker_us,
            cpu_us,
            pool_full_us,
        }
    }

    #[test]
    fn a_run_at_its_rate_has_no_shortfall() {
        assert_eq!(Shortfall::of(&time(10, 9, 9), 96.0, 100.0, 8), None);
        assert_eq!(Shortfall::of(&time(10, 9, 9), 0.0, 0.0, 8), None);
    }

    #[test]
    fn a_full_pool_is_named_with_the_limit() {
        let s = Shortfall::of(&time(1_000, 300, 920), 43.79, 100.0, 1500).unwrap();
        assert_eq!(s.cause(), Cause::PoolFull);
        let text = s.to_string();
        assert!(
            text.starts_with("reached 43.79% of the target rate"),
            "{text}"
        );
        assert!(text.contains("full 92.00% of the time"), "{text}");
        assert!(text.contains("all 1500 allowed connections"), "{text}");
        assert!(text.contains("generator CPU 30.00%"), "{text}");
    }

    #[test]
    fn a_busy_generator_is_named_when_the_pool_was_free() {
        let s = Shortfall::of(&time(1_000, 990, 10), 50.0, 100.0, 1500).unwrap();
        assert_eq!(s.cause(), Cause::GeneratorBusy);
        assert!(s.to_string().contains("on a CPU 99.00% of the time"));
    }

    #[test]
    fn neither_cause_says_so() {
        let s = Shortfall::of(&time(1_000, 100, 10), 50.0, 100.0, 64).unwrap();
        assert_eq!(s.cause(), Cause::NotTheGenerator);
        assert!(s.to_string().contains("only 1.00% of the time"));
    }

    #[test]
    fn shares_merge_over_workers() {
        let mut a = time(1_000, 500, 1_000);
        a.merge(&time(1_000, 100, 0));
        assert_eq!(a.pool_full_share(), 0.5);
        assert!((a.cpu_share() - 0.3).abs() < 1e-12);
        assert_eq!(GeneratorTime::default().cpu_share(), 0.0);
    }
}
