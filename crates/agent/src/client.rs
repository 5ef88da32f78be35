//! The agent's few calls to the admin (`/api/registry`, `/api/registryRemove`, `/api/callback`):
//! one blocking HTTP/1.1 POST each, on a fresh connection, with short timeouts. A small client of
//! our own, written before the agent used hyper's client for uploads ([`crate::upload`]); these
//! calls are rare and tiny, and their error lines are tested word for word.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long any one admin call may take to connect, and then to answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// An admin base URL split into what a request needs: `http://host:port/base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminUrl {
    /// `host:port`, for connecting and for the Host header.
    pub authority: String,
    /// The context path without a trailing `/` (may be empty).
    pub base: String,
}

impl AdminUrl {
    /// Parses `http://host[:port][/path]`; https is not spoken (one line naming the fix).
    pub fn parse(url: &str) -> Result<AdminUrl, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("--admin {url}: give the admin's plain http:// URL, e.g. http://127.0.0.1:8080/xxl-job-admin")
        })?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(format!("--admin {url}: the URL has no host"));
        }
        let has_port = if authority.starts_with('[') {
            authority.contains("]:")
        } else {
            authority.contains(':')
        };
        let authority = if has_port {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let base = path.trim_end_matches('/');
        let base = if base.is_empty() {
            String::new()
        } else {
            format!("/{base}")
        };
        Ok(AdminUrl { authority, base })
    }

    /// The full URL of one of the admin's APIs, base path included, for error lines:
    /// `http://127.0.0.1:8080/xxl-job-admin/api/registry`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}{path}", self.authority, self.base)
    }
}

/// A call that failed: unreachable, not HTTP, or the admin's `code` was not 200.
pub type CallError = String;

/// POSTs `body` as JSON to `{admin}{path}` with the token header; Ok when the admin's envelope
/// says `code` 200.
pub fn post(
    admin: &AdminUrl,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Result<Value, CallError> {
    let url = admin.url(path);
    let answer =
        exchange(admin, &request(admin, path, token, body)).map_err(|e| format!("{url}: {e}"))?;
    let envelope: Value = serde_json::from_slice(&answer)
        .map_err(|e| format!("{url}: the answer is not JSON ({e})"))?;
    match envelope.get("code").and_then(Value::as_i64) {
        Some(200) => Ok(envelope),
        _ => Err(format!("{url}: admin answered {envelope}")),
    }
}

fn request(admin: &AdminUrl, path: &str, token: Option<&str>, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    let mut head = format!(
        "POST {}{path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        admin.base,
        admin.authority,
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("XXL-JOB-ACCESS-TOKEN: {token}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// Sends one request and returns the response body (after de-chunking).
fn exchange(admin: &AdminUrl, request: &[u8]) -> Result<Vec<u8>, String> {
    let addr = admin
        .authority
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(io_text)?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(io_text)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(io_text)?;
    stream.write_all(request).map_err(io_text)?;
    let mut raw = Vec::new();
    stream
        .take(1 << 20)
        .read_to_end(&mut raw)
        .map_err(io_text)?;
    response_body(&raw)
}

/// An I/O failure in words: a socket timeout (which Linux reports as "Resource temporarily
/// unavailable") says how long was waited.
fn io_text(e: std::io::Error) -> String {
    use std::io::ErrorKind::{TimedOut, WouldBlock};
    match e.kind() {
        TimedOut | WouldBlock => format!("timed out after {} s", TIMEOUT.as_secs()),
        _ => e.to_string(),
    }
}

/// The body of a complete HTTP/1.1 response read to the connection's end.
fn response_body(raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("the answer ended early".into()),
        Err(e) => return Err(format!("not an HTTP answer ({e})")),
    };
    if response.code != Some(200) {
        return Err(format!("HTTP status {}", response.code.unwrap_or(0)));
    }
    let chunked = response.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            && String::from_utf8_lossy(h.value)
                .to_ascii_lowercase()
                .contains("chunked")
    });
    let body = &raw[head_len..];
    if chunked {
        dechunk(body)
    } else {
        Ok(body.to_vec())
    }
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size line is cut")?;
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "a bad chunk size")?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = body.get(..size).ok_or("a chunk is cut")?;
        out.extend_from_slice(chunk);
        body = body.get(size + 2..).ok_or("a chunk is cut")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_urls_keep_their_context_path_and_default_port() {
        let a = AdminUrl::parse("http://10.0.0.1:8080/xxl-job-admin/").unwrap();
        assert_eq!(a.authority, "10.0.0.1:8080");
        assert_eq!(a.base, "/xxl-job-admin");
        let b = AdminUrl::parse("http://admin").unwrap();
        assert_eq!((b.authority.as_str(), b.base.as_str()), ("admin:80", ""));
        assert!(AdminUrl::parse("https://admin")
            .unwrap_err()
            .contains("http://"));
        assert_eq!(
            a.url("/api/registry"),
            "http://10.0.0.1:8080/xxl-job-admin/api/registry"
        );
        assert_eq!(b.url("/api/callback"), "http://admin:80/api/callback");
    }

    #[test]
    fn chunked_and_plain_answers_give_their_body() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(response_body(plain).unwrap(), b"{}");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(response_body(chunked).unwrap(), b"{\"a\":1}");
        assert!(response_body(b"HTTP/1.1 404 No\r\n\r\n")
            .unwrap_err()
            .contains("404"));
    }
}
