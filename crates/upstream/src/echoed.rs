//! What `/echo` received, kept for tests: the first [`ECHOED_KEPT`] requests to `/echo` (method,
//! path, query, headers, body), read with `Server::echoed`. The answer to the client is the
//! same JSON as always; keeping a copy costs one lock per `/echo` request while the log has
//! room and an atomic load after, so a long load on `/echo` does not grow memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// How many `/echo` requests the log keeps (the first ones).
pub const ECHOED_KEPT: usize = 256;

/// One request as `/echo` received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echoed {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The path, e.g. `/echo`.
    pub path: String,
    /// The query after `?`, if any.
    pub query: Option<String>,
    /// The headers in arrival order, names lower-case (as hyper gives them).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Echoed {
    /// The values of one header (case-insensitive), in order.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// The first `/echo` requests; full once it holds [`ECHOED_KEPT`].
#[derive(Debug, Default)]
pub(crate) struct EchoLog {
    kept: Mutex<Vec<Echoed>>,
    full: AtomicBool,
}

impl EchoLog {
    pub(crate) fn keep(&self, make: impl FnOnce() -> Echoed) {
        if self.full.load(Ordering::Relaxed) {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < ECHOED_KEPT {
            kept.push(make());
        }
        if kept.len() >= ECHOED_KEPT {
            self.full.store(true, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<Echoed> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
