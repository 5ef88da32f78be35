//! The open model's pacing and pool settings, beside its schedule: how often the pacer may
//! wake to send what is due (the send window), how many connections to open before the
//! schedule starts, and how many connects may be in progress at once. They change how the
//! generator works, never what the schedule asks for: latency still counts from each
//! request's intended time, less the generator's own delay in sending it (reported apart).

use crate::{invalid, PlanError};
use std::time::Duration;

/// The default send window: the pacer wakes at most about once a millisecond, as wrk2 and oha
/// do (sooner once a batch's cap of requests is due), and each wake-up sends every request
/// due by then.
pub const DEFAULT_SEND_WINDOW: Duration = Duration::from_millis(1);

/// The default cap of a send window's batch: it leaves once this many requests are due,
/// before the window ends (`--send-batch`).
pub const DEFAULT_SEND_BATCH: u32 = 4;

/// The largest batch cap accepted.
pub const MAX_SEND_BATCH: u32 = 1024;

/// The widest send window accepted: beyond it the window would be the latency.
pub const MAX_SEND_WINDOW: Duration = Duration::from_millis(100);

/// The default limit on connects in progress at once, over all workers.
pub const DEFAULT_CONNECT_LIMIT: u32 = 64;

/// How an open-model load paces its sends and grows its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenPacing {
    /// Each wake-up sends every request due by then; wake-ups are at most this far apart.
    /// Zero: each request on a wake-up of its own, at its intended time.
    pub send_window: Duration,
    /// A batch leaves once this many requests are due, before its window ends
    /// (`--send-batch`; 1: each request at its own time, as a zero window).
    pub send_batch: u32,
    /// `-c` with `--rate`: connections to open before the schedule starts. `None`: sized
    /// from the rate and the preflight's round trip.
    pub initial_connections: Option<u32>,
    /// Connects in progress at once, over all workers (`--connect-limit`).
    pub connect_limit: u32,
}

impl Default for OpenPacing {
    fn default() -> Self {
        OpenPacing {
            send_window: DEFAULT_SEND_WINDOW,
            send_batch: DEFAULT_SEND_BATCH,
            initial_connections: None,
            connect_limit: DEFAULT_CONNECT_LIMIT,
        }
    }
}

impl OpenPacing {
    /// Checks the values against each other and the connection cap.
    pub fn check(&self, max_connections: u32) -> Result<(), PlanError> {
        if self.send_window > MAX_SEND_WINDOW {
            return Err(invalid(format!(
                "--send-window {:?} is longer than {}ms: give 1ms (the default), or 0 for a wake-up per request",
                self.send_window,
                MAX_SEND_WINDOW.as_millis()
            )));
        }
        if !(1..=MAX_SEND_BATCH).contains(&self.send_batch) {
            return Err(invalid(format!(
                "--send-batch {} is out of range: give 1 to {MAX_SEND_BATCH} requests (default {DEFAULT_SEND_BATCH})",
                self.send_batch
            )));
        }
        if self.connect_limit == 0 {
            return Err(invalid(
                "--connect-limit 0 allows no connect: give 1 or more (default 64)",
            ));
        }
        match self.initial_connections {
            Some(0) => Err(invalid("-c 0 opens no connection: give -c 1 or more")),
            Some(c) if c > max_connections => Err(invalid(format!(
                "-c {c} is above --max-connections {max_connections}: lower -c or raise --max-connections"
            ))),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_the_fix() {
        let ok = OpenPacing::default();
        assert!(ok.check(10).is_ok());
        let wide = OpenPacing {
            send_window: Duration::from_secs(1),
            ..ok
        };
        assert!(wide.check(10).unwrap_err().to_string().contains("1ms"));
        for bad in [0, MAX_SEND_BATCH + 1] {
            let batch = OpenPacing {
                send_batch: bad,
                ..ok
            };
            let e = batch.check(10).unwrap_err().to_string();
            assert!(e.contains("give 1 to 1024 requests"), "{e}");
        }
        let none = OpenPacing {
            connect_limit: 0,
            ..ok
        };
        assert!(none
            .check(10)
            .unwrap_err()
            .to_string()
            .contains("1 or more"));
        let above = OpenPacing {
            initial_connections: Some(20),
            ..ok
        };
        let e = above.check(10).unwrap_err().to_string();
        assert!(e.contains("-c 20 is above --max-connections 10"), "{e}");
    }
}
