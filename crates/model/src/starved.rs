//! Starved connections: what a run says about requests that never got an answer. A server that
//! serves at most N connections at once (a thread per connection, a pool limit) leaves the
//! others waiting in its accept queue for the whole run, and the completed requests alone then
//! look healthy. The engine counts completions per connection ([`PerConnection`]) and censors
//! every unanswered request at its age ([`crate::Stats::latency_censored`]); [`Starvation`] is
//! the sentence that reports it, with how the server's concurrency was estimated.

use crate::histogram::Histo;
use crate::human as units;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Requests completed per connection over the measured window, merged exactly across workers,
/// rounds and shards: starved connections are counted, the others' completion counts kept in
/// an HDR histogram (bounded however many connections there are).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerConnection {
    /// Connections left waiting at the end that never completed a request in the window.
    pub starved: u64,
    /// Completed requests of each connection that completed at least one.
    pub completed: Histo,
    /// Age at the end of the oldest request still in flight, µs (0: none).
    pub oldest_in_flight_us: u64,
}

impl PerConnection {
    /// One connection at the end of a run: `completed` requests, and the age of its request
    /// still in flight, if any.
    pub fn add(&mut self, completed: u64, in_flight_us: Option<u64>) {
        if let Some(age) = in_flight_us {
            self.oldest_in_flight_us = self.oldest_in_flight_us.max(age);
        }
        if completed > 0 {
            self.completed.record_ns(completed);
        } else if in_flight_us.is_some() {
            self.starved += 1;
        }
    }

    /// Counts add, histograms add, the oldest age is the larger: associative.
    pub fn merge(&mut self, o: &PerConnection) {
        self.starved += o.starved;
        self.completed.merge(&o.completed);
        self.oldest_in_flight_us = self.oldest_in_flight_us.max(o.oldest_in_flight_us);
    }

    /// Connections that completed a request or were left waiting.
    pub fn connections(&self) -> u64 {
        self.starved + self.served()
    }

    /// Connections that completed at least one request.
    pub fn served(&self) -> u64 {
        self.completed.len()
    }

    /// Fewest requests completed by one connection (0 when one starved).
    pub fn min(&self) -> u64 {
        if self.starved > 0 {
            0
        } else {
            self.completed.min_ns()
        }
    }

    /// Most requests completed by one connection.
    pub fn max(&self) -> u64 {
        self.completed.max_ns()
    }

    /// The median connection's completed requests, starved ones counted as 0.
    pub fn median(&self) -> u64 {
        let (all, starved) = (self.connections() as f64, self.starved as f64);
        if self.served() == 0 || starved >= all / 2.0 {
            return 0;
        }
        let p = (all / 2.0 - starved) / (all - starved) * 100.0;
        self.completed.percentile_ns(p.clamp(0.0, 100.0))
    }
}

#[derive(Serialize)]
struct PerConnectionOut<'a> {
    connections: u64,
    starved: u64,
    completed_min: u64,
    completed_median: u64,
    completed_max: u64,
    oldest_in_flight_us: u64,
    hdr: &'a Histo,
}

#[derive(Deserialize)]
struct PerConnectionIn {
    starved: u64,
    oldest_in_flight_us: u64,
    hdr: Histo,
}

impl Serialize for PerConnection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PerConnectionOut {
            connections: self.connections(),
            starved: self.starved,
            completed_min: self.min(),
            completed_median: self.median(),
            completed_max: self.max(),
            oldest_in_flight_us: self.oldest_in_flight_us,
            hdr: &self.completed,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PerConnection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = PerConnectionIn::deserialize(d)?;
        Ok(PerConnection {
            starved: raw.starved,
            completed: raw.hdr,
            oldest_in_flight_us: raw.oldest_in_flight_us,
        })
    }
}

/// Connections a server left waiting for at least half the run: the finding, and the
/// server's concurrency estimated from the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Starvation {
    /// Connections that never completed a request.
    pub starved: u64,
    /// Connections the run used.
    pub connections: u64,
    /// The measured window, µs.
    pub window_us: u64,
    /// Connections that completed requests: the server's concurrency as observed.
    pub served: u64,
    /// Little's law: completed rate × mean service time = requests in service on average.
    pub in_service: f64,
    /// Completed requests per second.
    pub rate: f64,
    /// Mean service time of completed requests, µs.
    pub mean_service_us: f64,
    /// Requests completed by the median connection among those that completed any.
    pub served_median: u64,
}

/// What left connections without an answer, as the evidence reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StarvedCause {
    /// The server serves a fixed number of connections at once (thread-per-connection, a pool
    /// or connection limit): the served ones completed many requests each, the others none,
    /// though a request takes far less than the starved ones waited.
    ConnectionLimit,
    /// The connections were still connecting: SYN retries behind an overflowing accept queue.
    AcceptQueue,
    /// Answers were slow (a busy host, a slow target): the served connections completed only
    /// a few requests each, no sign of a fixed limit.
    SlowAnswers,
}

/// A served connection must have completed at least this many requests (the median one) for
/// the starvation to read as a connection limit.
pub const LIMIT_MIN_SERVED_REQUESTS: u64 = 3;
/// ... and a request must take at most this share of the window (the starved ones waited at
/// least half of it): answers far shorter than the wait.
pub const LIMIT_MAX_SERVICE_SHARE: f64 = 0.05;

impl Starvation {
    /// The finding of `stats`, or `None` when no connection waited for half the window.
    pub fn of(stats: &crate::Stats) -> Option<Starvation> {
        let c = &stats.per_connection;
        let waited_long = c.oldest_in_flight_us.saturating_mul(2) >= stats.elapsed_us;
        if c.starved == 0 || stats.elapsed_us == 0 || !waited_long {
            return None;
        }
        let rate = stats.requests as f64 / stats.elapsed_secs();
        let mean_service_us = stats.service.hist.mean_ns() / 1000.0;
        Some(Starvation {
            starved: c.starved,
            connections: c.connections(),
            window_us: stats.elapsed_us,
            served: c.served(),
            in_service: rate * mean_service_us / 1e6,
            rate,
            mean_service_us,
            served_median: c.completed.percentile_ns(50.0),
        })
    }

    /// What left the connections waiting: the accept queue when it overflowed (the kernel's
    /// own count, `accept_queue_overflowed`), a connection limit when the served connections
    /// completed at least [`LIMIT_MIN_SERVED_REQUESTS`] each and a request took at most
    /// [`LIMIT_MAX_SERVICE_SHARE`] of the window, else slow answers.
    pub fn cause(&self, accept_queue_overflowed: bool) -> StarvedCause {
        let quick = self.mean_service_us <= LIMIT_MAX_SERVICE_SHARE * self.window_us as f64;
        if accept_queue_overflowed {
            StarvedCause::AcceptQueue
        } else if self.served > 0 && self.served_median >= LIMIT_MIN_SERVED_REQUESTS && quick {
            StarvedCause::ConnectionLimit
        } else {
            StarvedCause::SlowAnswers
        }
    }

    /// The cause as the run's findings judged it (see [`Starvation::cause`]).
    pub fn cause_in(&self, why: &crate::Why) -> StarvedCause {
        let overflowed = why
            .findings
            .iter()
            .any(|f| f.kind == crate::FindingKind::AcceptQueueOverflow);
        self.cause(overflowed)
    }

    /// The warning, worded for its cause: the connection limit with Little's law, or what
    /// else kept them waiting.
    pub fn explain(&self, cause: StarvedCause) -> String {
        let head = format!(
            "{} of {} got no response in {}",
            self.starved,
            units::counted(self.connections, "connection"),
            units::duration_us(self.window_us as f64)
        );
        match cause {
            StarvedCause::ConnectionLimit => self.to_string(),
            StarvedCause::AcceptQueue => format!(
                "{head}: they were still connecting, waiting for SYN retries behind the target's overflowing accept queue (see why), not a connection limit"
            ),
            StarvedCause::SlowAnswers => format!(
                "{head}: answers were slow ({} mean, {} per served connection at the median), not a connection limit",
                units::duration_us(self.mean_service_us),
                self.served_median
            ),
        }
    }

    /// The short form for a table cell, worded for its cause.
    pub fn short_for(&self, cause: StarvedCause) -> String {
        match cause {
            StarvedCause::ConnectionLimit => self.short(),
            StarvedCause::AcceptQueue => format!(
                "{} of {} conns got no response: accept queue overflowed",
                self.starved, self.connections
            ),
            StarvedCause::SlowAnswers => format!(
                "{} of {} conns got no response: slow answers",
                self.starved, self.connections
            ),
        }
    }

    /// The short form for a table cell: `24 of 32 conns starved: serves ≤8 at once`.
    pub fn short(&self) -> String {
        if self.served == 0 {
            return format!(
                "{} of {} conns got no response",
                self.starved, self.connections
            );
        }
        format!(
            "{} of {} conns got no response: serves at most {} at once",
            self.starved, self.connections, self.served
        )
    }
}

impl fmt::Display for Starvation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let window = units::duration_us(self.window_us as f64);
        write!(
            f,
            "{} of {} got no response in {window}",
            self.starved,
            units::counted(self.connections, "connection")
        )?;
        if self.served == 0 {
            return write!(f, ": the server answered none of them");
        }
        write!(
            f,
            ": the server serves at most {} at once (thread-per-connection or a \
             pool limit); estimated from the {} that completed requests, and by \
             Little's law {} req/s × {} mean = {:.1} requests in service",
            units::counted(self.served, "connection"),
            units::counted(self.served, "connection"),
            units::rate(self.rate),
            units::duration_us(self.mean_service_us),
            self.in_service
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_counts_starved_connections_as_zero() {
        let mut c = PerConnection::default();
        (0..8).for_each(|_| c.add(80, Some(10)));
        (0..24).for_each(|_| c.add(0, Some(4_000_000)));
        c.add(0, None);
        assert_eq!((c.connections(), c.starved, c.served()), (32, 24, 8));
        assert_eq!((c.min(), c.median(), c.max()), (0, 0, 80));
        assert_eq!(c.oldest_in_flight_us, 4_000_000);
        let mut even = PerConnection::default();
        [3, 5, 7, 100].into_iter().for_each(|n| even.add(n, None));
        even.add(0, Some(1));
        assert_eq!((even.min(), even.median(), even.max()), (0, 5, 100));
    }

    #[test]
    fn json_round_trips_and_shows_the_spread() {
        let mut c = PerConnection::default();
        [1, 2, 3].into_iter().for_each(|n| c.add(n, Some(7)));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["connections"], 3);
        assert_eq!(json["completed_median"], 2);
        assert_eq!(json["oldest_in_flight_us"], 7);
        let back: PerConnection = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
    }
}
