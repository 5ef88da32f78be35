//! What a worker sees of a request-building script (`--script`, the `loadbench-script`
//! crate): "the next request's bytes", "here is a response", "how long to wait". The engine
//! knows nothing of Lua; a script that needs no per-request call gives the worker only its
//! request bytes, written like any fixed request.

use std::net::SocketAddr;
use std::time::Duration;

/// A worker's per-request script hooks, run in the worker's own script state.
pub trait ScriptHooks: Send {
    /// The script builds each request (wrk's `request()`).
    fn builds_requests(&self) -> bool;
    /// The script reads each response (wrk's `response()`): the worker keeps each answer.
    fn reads_responses(&self) -> bool;
    /// The script waits before each request (wrk's `delay()`, closed model only).
    fn delays(&self) -> bool;
    /// Appends the next request's bytes to `out` (one request, or several to pipeline);
    /// returns how many requests they are and whether the first is a HEAD. `Err`: the
    /// script failed (its message is kept by the script), nothing is sent.
    fn request(&mut self, out: &mut Vec<u8>) -> Result<Batch, ScriptFailed>;
    /// A complete response: its status, its head (status line and headers) and its body
    /// (de-chunked). `Err`: the script failed on it.
    fn response(&mut self, status: u16, head: &[u8], body: &[u8]) -> Result<(), ScriptFailed>;
    /// How long to wait before the next request. `Err`: the script failed (no wait).
    fn delay(&mut self) -> Result<Duration, ScriptFailed>;
    /// The script asked its thread to stop (wrk's `thread:stop()`).
    fn stopped(&self) -> bool;
}

/// A hook failed; the script keeps its message (the engine counts the failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptFailed;

/// What one `request()` call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// Requests in the bytes (pipelined when more than one): each is answered and counted.
    pub count: u32,
    /// The first request is a HEAD (its answer has no body); the batch's answers are read so.
    pub head: bool,
}

/// One worker's part of a script, given to [`crate::Engine::with_scripts`].
pub struct WorkerScript {
    /// The request this worker writes when the script has no per-request hook (wrk formats
    /// it once per thread, after `init`); with a `request()` hook, unused.
    pub request: Vec<u8>,
    /// `request` is a HEAD.
    pub head: bool,
    /// Where this worker's connections go instead of the target (wrk's `thread.addr`).
    pub addr: Option<SocketAddr>,
    /// The per-request hooks; `None` when the script defines none of them.
    pub hooks: Option<Box<dyn ScriptHooks>>,
}

impl std::fmt::Debug for WorkerScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerScript")
            .field("request", &String::from_utf8_lossy(&self.request))
            .field("addr", &self.addr)
            .field("hooks", &self.hooks.is_some())
            .finish()
    }
}
