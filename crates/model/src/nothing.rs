//! Why a measurement completed nothing ("no silent zero"): the one judgement that `run`, the
//! bench cells and find-max quote, so a zero always comes with its reason.
//!
//! [`Stats::nothing_completed`] looks at one run's counters: every request failed, nothing was
//! sent (and which limit held it), or requests were sent and never answered.

use crate::human::counted;
use crate::Stats;
use std::fmt;

/// Why a run completed no response. Its `Display` is one line, without a leading `error:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NothingCompleted {
    /// Every attempt failed: the errors say how.
    Failed {
        /// Failed requests.
        errors: u64,
    },
    /// No request was sent.
    NotSent {
        /// What held the requests back.
        held: Held,
        /// GOAWAY frames received (HTTP/2).
        goaways: u64,
    },
    /// Requests were sent and none was answered within the run.
    Unanswered {
        /// Requests sent.
        sent: u64,
        /// Requests still in flight at the end.
        in_flight: u64,
        /// GOAWAY frames received (HTTP/2).
        goaways: u64,
    },
}

/// What kept every request from being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// The server allowed no HTTP/2 stream (SETTINGS_MAX_CONCURRENT_STREAMS 0) on this many
    /// connections.
    ZeroStreams(u64),
    /// This many requests waited for a connection the whole run.
    Waiting(u64),
    /// Every connection still waited, at the end, for the answer to a request sent before
    /// the window (in the warm-up): this many connections, the oldest request this old (µs).
    Busy {
        /// Connections whose request was still in flight at the end.
        connections: u64,
        /// Age at the end of the oldest request still in flight, µs.
        oldest_us: u64,
    },
    /// No connection could take a request (none opened, or none in time).
    NoConnection,
}

impl Stats {
    /// Why this run completed no response; `None` when at least one did.
    pub fn nothing_completed(&self) -> Option<NothingCompleted> {
        if self.requests > 0 {
            return None;
        }
        let errors = self.errors.total();
        let goaways = self.h2.goaways;
        Some(if errors > 0 {
            NothingCompleted::Failed { errors }
        } else if self.sent == 0 {
            let held = if self.h2.zero_streams > 0 {
                Held::ZeroStreams(self.h2.zero_streams)
            } else if self.waiting > 0 {
                Held::Waiting(self.waiting)
            } else if self.per_connection.starved > 0 {
                Held::Busy {
                    connections: self.per_connection.starved,
                    oldest_us: self.per_connection.oldest_in_flight_us,
                }
            } else {
                Held::NoConnection
            };
            NothingCompleted::NotSent { held, goaways }
        } else {
            NothingCompleted::Unanswered {
                sent: self.sent,
                in_flight: self.abandoned,
                goaways,
            }
        })
    }
}

impl fmt::Display for NothingCompleted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let goaway = |f: &mut fmt::Formatter<'_>, n: u64| match n {
            0 => Ok(()),
            1 => write!(f, "; the server sent GOAWAY once"),
            n => write!(f, "; the server sent GOAWAY {n} times"),
        };
        match *self {
            NothingCompleted::Failed { errors } => {
                write!(
                    f,
                    "every request failed ({}, none completed)",
                    counted(errors, "error")
                )
            }
            NothingCompleted::NotSent { held, goaways } => {
                write!(f, "nothing was sent: ")?;
                match held {
                    Held::ZeroStreams(n) => write!(
                        f,
                        "the server allowed no HTTP/2 stream (SETTINGS_MAX_CONCURRENT_STREAMS 0 on {})",
                        counted(n, "connection")
                    )?,
                    Held::Waiting(n) => {
                        write!(
                            f,
                            "{} waited for a connection the whole run",
                            counted(n, "request")
                        )?
                    }
                    Held::Busy {
                        connections,
                        oldest_us,
                    } => write!(
                        f,
                        "{} still waited for the answer to a request sent before the measured window (the oldest {} old at the end): the server did not respond within the run; give it a longer warm-up or duration, or look at the server",
                        counted(connections, "connection"),
                        crate::human::duration_us(oldest_us as f64)
                    )?,
                    Held::NoConnection => {
                        write!(f, "no connection could take a request within the run")?
                    }
                }
                goaway(f, goaways)
            }
            NothingCompleted::Unanswered {
                sent,
                in_flight,
                goaways,
            } => {
                let none = match sent {
                    1 => "the 1 request sent was not".to_string(),
                    n => format!("none of the {n} requests sent was"),
                };
                write!(
                    f,
                    "{none} answered ({in_flight} still in flight at the end): the server did not respond within the run; give it a longer duration or timeout, or look at the server"
                )?;
                goaway(f, goaways)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::starved::PerConnection;
    use crate::ErrorKind;

    fn sent(n: u64) -> Stats {
        Stats {
            sent: n,
            ..Stats::default()
        }
    }

    #[test]
    fn a_run_that_completed_something_has_no_reason() {
        let s = Stats {
            requests: 1,
            ..sent(5)
        };
        assert_eq!(s.nothing_completed(), None);
    }

    #[test]
    fn every_request_failing_is_said_before_anything_else() {
        let mut s = sent(4);
        s.errors.add(ErrorKind::ReadTimeout, 4);
        s.h2.goaways = 2;
        let why = s.nothing_completed().unwrap();
        assert_eq!(why, NothingCompleted::Failed { errors: 4 });
        assert_eq!(
            why.to_string(),
            "every request failed (4 errors, none completed)"
        );
    }

    #[test]
    fn nothing_sent_names_zero_streams_first_then_waiting_then_no_connection() {
        let mut s = sent(0);
        s.h2.zero_streams = 3;
        s.waiting = 7;
        s.h2.goaways = 5;
        let why = s.nothing_completed().unwrap();
        assert_eq!(
            why,
            NothingCompleted::NotSent {
                held: Held::ZeroStreams(3),
                goaways: 5
            }
        );
        assert_eq!(
            why.to_string(),
            "nothing was sent: the server allowed no HTTP/2 stream (SETTINGS_MAX_CONCURRENT_STREAMS 0 on 3 connections); the server sent GOAWAY 5 times"
        );
        s.h2.zero_streams = 0;
        let why = s.nothing_completed().unwrap();
        assert_eq!(
            why.to_string(),
            "nothing was sent: 7 requests waited for a connection the whole run; the server sent GOAWAY 5 times"
        );
        s.waiting = 0;
        s.h2.goaways = 0;
        s.per_connection.add(0, Some(1_500_000));
        s.per_connection.add(0, Some(900_000));
        assert_eq!(
            s.nothing_completed().unwrap().to_string(),
            "nothing was sent: 2 connections still waited for the answer to a request sent before the measured window (the oldest 1.50s old at the end): the server did not respond within the run; give it a longer warm-up or duration, or look at the server"
        );
        s.per_connection = PerConnection::default();
        assert_eq!(
            s.nothing_completed().unwrap().to_string(),
            "nothing was sent: no connection could take a request within the run"
        );
    }

    #[test]
    fn sent_and_never_answered_gives_the_counts() {
        let s = Stats {
            abandoned: 4,
            ..sent(9)
        };
        let why = s.nothing_completed().unwrap();
        assert_eq!(
            why,
            NothingCompleted::Unanswered {
                sent: 9,
                in_flight: 4,
                goaways: 0
            }
        );
        assert!(
            why.to_string().starts_with(
                "none of the 9 requests sent was answered (4 still in flight at the end)"
            ),
            "{why}"
        );
    }
}
