//! A worker's per-request hooks (`request()`, `response()`, `delay()`) as the engine's
//! [`ScriptHooks`], and the check that a `request()` result is HTTP/1.1 requests.

use crate::message;
use loadbench_engine::script::{Batch, ScriptFailed, ScriptHooks};
use mlua::{Function, Lua, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most requests one `request()` may return at once.
pub const MAX_BATCH: u32 = 1024;

/// Failures of the hooks during the load: how many, and the first one's message.
#[derive(Debug, Default)]
pub struct ErrorLog {
    count: AtomicU64,
    any: AtomicBool,
    first: Mutex<Option<String>>,
}

impl ErrorLog {
    /// Counts a failure; keeps its message if it is the first.
    pub(crate) fn failed(&self, what: &str, msg: impl FnOnce() -> String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        if !self.any.swap(true, Ordering::Relaxed) {
            let text = format!("{what}: {}", msg());
            *self.first.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
        }
    }

    /// Failures counted (all workers, measured or not) and the first one's message.
    pub fn first(&self) -> Option<(u64, String)> {
        let first = self
            .first
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        Some((self.count.load(Ordering::Relaxed), first))
    }
}

/// One worker's hooks, in its own state.
pub(crate) struct LuaHooks {
    /// The worker's state, whose functions these are.
    pub(crate) lua: Lua,
    pub(crate) request: Option<Function>,
    pub(crate) response: Option<Function>,
    pub(crate) delay: Option<Function>,
    /// What the check before the load got from `request()`: the first request sent.
    pub(crate) first: Option<(Vec<u8>, Batch)>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) errors: Arc<ErrorLog>,
}

impl ScriptHooks for LuaHooks {
    fn builds_requests(&self) -> bool {
        self.request.is_some()
    }

    fn reads_responses(&self) -> bool {
        self.response.is_some()
    }

    fn delays(&self) -> bool {
        self.delay.is_some()
    }

    fn request(&mut self, out: &mut Vec<u8>) -> Result<Batch, ScriptFailed> {
        let Some(f) = &self.request else {
            return Err(ScriptFailed);
        };
        if let Some((bytes, batch)) = self.first.take() {
            out.extend_from_slice(&bytes);
            return Ok(batch);
        }
        match call_request(f, out) {
            Ok(batch) => Ok(batch),
            Err(e) => {
                self.errors.failed("request()", || e);
                Err(ScriptFailed)
            }
        }
    }

    fn response(&mut self, status: u16, head: &[u8], body: &[u8]) -> Result<(), ScriptFailed> {
        let Some(f) = &self.response else {
            return Ok(());
        };
        let called = (|| {
            let headers = headers_table(&self.lua, head)?;
            let body = self.lua.create_string(body)?;
            f.call::<()>((status, headers, body))
        })();
        called.map_err(|e| {
            self.errors.failed("response()", || message(&e));
            ScriptFailed
        })
    }

    fn delay(&mut self) -> Result<Duration, ScriptFailed> {
        let Some(f) = &self.delay else {
            return Ok(Duration::ZERO);
        };
        match f.call::<Value>(()) {
            Ok(v) => delay_of(&v).map_err(|e| {
                self.errors.failed("delay()", || e);
                ScriptFailed
            }),
            Err(e) => {
                self.errors.failed("delay()", || message(&e));
                Err(ScriptFailed)
            }
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// `request()` once: its bytes appended to `out`, checked and counted.
pub(crate) fn call_request(f: &Function, out: &mut Vec<u8>) -> Result<Batch, String> {
    match f.call::<Value>(()) {
        Ok(Value::String(s)) => {
            let bytes = s.as_bytes();
            let batch = count_requests(&bytes)?;
            out.extend_from_slice(&bytes);
            Ok(batch)
        }
        Ok(other) => Err(format!(
            "returned a {}, not a string (return wrk.format(...) or wrk.request())",
            other.type_name()
        )),
        Err(e) => Err(message(&e)),
    }
}

/// `delay()`'s answer, in milliseconds.
fn delay_of(v: &Value) -> Result<Duration, String> {
    let ms = match v {
        Value::Integer(i) => *i as f64,
        Value::Number(n) => *n,
        Value::Nil => 0.0,
        other => {
            return Err(format!(
                "returned a {}, not a number of milliseconds",
                other.type_name()
            ))
        }
    };
    if !ms.is_finite() || ms < 0.0 {
        return Err(format!("returned {ms}, not a number of milliseconds ≥ 0"));
    }
    Ok(Duration::from_secs_f64(ms.min(3_600_000.0) / 1000.0))
}

/// An answer's header lines as a Lua table, name → value (a repeated name: its last value).
fn headers_table(lua: &Lua, head: &[u8]) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    for line in head.split(|&b| b == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = lua.create_string(line[..colon].trim_ascii())?;
        let value = lua.create_string(line[colon + 1..].trim_ascii())?;
        t.raw_set(name, value)?;
    }
    Ok(t)
}

/// How many HTTP/1.1 requests `bytes` holds (each a head and the body its Content-Length
/// gives), and whether the first is a HEAD; why not, when they are not whole requests.
pub fn count_requests(bytes: &[u8]) -> Result<Batch, String> {
    let mut at = 0;
    let mut count = 0u32;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let end = memchr::memmem::find(rest, b"\r\n\r\n").ok_or_else(|| {
            "returned an incomplete request: its head does not end with an empty line (\\r\\n\\r\\n); build it with wrk.format(...)".to_string()
        })?;
        let head = &rest[..end];
        check_request_line(head)?;
        let body = content_length(head)?;
        at += end + 4 + body;
        if at > bytes.len() {
            return Err(format!(
                "returned a request whose body is shorter than its Content-Length ({body})"
            ));
        }
        count += 1;
        if count > MAX_BATCH {
            return Err(format!("returned more than {MAX_BATCH} requests at once"));
        }
    }
    if count == 0 {
        return Err("returned an empty string, not a request".into());
    }
    Ok(Batch {
        count,
        head: bytes.starts_with(b"HEAD "),
    })
}

/// `METHOD target HTTP/1.x`.
fn check_request_line(head: &[u8]) -> Result<(), String> {
    let line = head.split(|&b| b == b'\r').next().unwrap_or(head);
    let mut parts = line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    let version = parts.next().unwrap_or_default();
    let ok = !method.is_empty()
        && method
            .iter()
            .all(|b| b.is_ascii_alphabetic() || *b == b'-' || *b == b'_')
        && !target.is_empty()
        && version.starts_with(b"HTTP/1.")
        && parts.next().is_none();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "returned '{}', not an HTTP/1.1 request line (METHOD /path HTTP/1.1)",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        ))
    }
}

/// The body length a request head gives (0 without Content-Length); chunked bodies are
/// refused.
fn content_length(head: &[u8]) -> Result<usize, String> {
    let mut len = 0;
    for line in head.split(|&b| b == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = &line[..colon];
        let value = line[colon + 1..].trim_ascii();
        if name.eq_ignore_ascii_case(b"content-length") {
            len = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    format!(
                        "returned a request with Content-Length '{}', not a number",
                        String::from_utf8_lossy(value)
                    )
                })?;
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Err("returned a request with Transfer-Encoding: give its body whole, with a Content-Length (wrk.format does)".into());
        }
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::count_requests;

    #[test]
    fn requests_are_counted_by_their_heads_and_bodies() {
        let one = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(count_requests(one).unwrap().count, 1);
        let post = b"POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\n\r\n\r\n";
        assert_eq!(
            count_requests(post).unwrap().count,
            1,
            "a body holding CRLFCRLF"
        );
        let three = [&one[..], post, b"HEAD / HTTP/1.1\r\n\r\n"].concat();
        let b = count_requests(&three).unwrap();
        assert_eq!((b.count, b.head), (3, false));
        assert!(count_requests(b"HEAD / HTTP/1.1\r\n\r\n").unwrap().head);
        assert!(count_requests(b"").is_err());
        assert!(count_requests(b"GET / HTTP/1.1\r\n").is_err());
        assert!(count_requests(b"hello\r\n\r\n").is_err());
        assert!(count_requests(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab").is_err());
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert!(count_requests(chunked).is_err());
    }
}
