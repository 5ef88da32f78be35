//! The request, rendered once into the exact bytes every connection writes.

use crate::target::Target;
use crate::{invalid, PlanError};

/// The bytes of one request, ready to write, and what the response reader must know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    /// The whole request as written to the socket: request line, headers and body.
    pub bytes: Vec<u8>,
    /// The HTTP method, upper-case.
    pub method: String,
    /// A HEAD request: the response has no body whatever its headers say.
    pub head: bool,
    /// The headers as given by the user (`Name: value`), for the record.
    pub headers: Vec<String>,
    /// Length of the body, bytes.
    pub body_len: u64,
}

impl RequestTemplate {
    /// Renders the request line, `Host` (unless given), default `User-Agent` and `Accept`
    /// (unless given), `Content-Length` for a body, `Connection: close` without keep-alive, the
    /// user's headers and the body.
    pub fn render(
        target: &Target,
        method: &str,
        headers: &[(String, String)],
        body: Option<Vec<u8>>,
        keepalive: bool,
    ) -> Result<RequestTemplate, PlanError> {
        let method = check_method(method)?;
        let parsed = headers
            .iter()
            .map(|(n, v)| check_header(n, v))
            .collect::<Result<Vec<_>, _>>()?;
        let has = |name: &str| parsed.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let mut out = format!("{method} {} HTTP/1.1\r\n", target.path);
        if !has("host") {
            out.push_str(&format!("Host: {}\r\n", target.authority));
        }
        if !has("user-agent") {
            out.push_str(concat!(
                "User-Agent: loadbench/",
                env!("CARGO_PKG_VERSION"),
                "\r\n"
            ));
        }
        if !has("accept") {
            out.push_str("Accept: */*\r\n");
        }
        let body = body.unwrap_or_default();
        let wants_length = !body.is_empty() || matches!(method.as_str(), "POST" | "PUT" | "PATCH");
        if wants_length && !has("content-length") && !has("transfer-encoding") {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if !keepalive && !has("connection") {
            out.push_str("Connection: close\r\n");
        }
        for (name, value) in &parsed {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&body);
        Ok(RequestTemplate {
            bytes,
            head: method == "HEAD",
            method,
            headers: parsed.iter().map(|(n, v)| format!("{n}: {v}")).collect(),
            body_len: body.len() as u64,
        })
    }
}

fn check_method(method: &str) -> Result<String, PlanError> {
    let ok = !method.is_empty() && method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-');
    if !ok {
        return Err(invalid(format!(
            "-m '{method}' is not an HTTP method: use GET, POST, PUT, DELETE, HEAD, …"
        )));
    }
    Ok(method.to_ascii_uppercase())
}

/// A header pair built in code (not through [`loadbench_units::header`]) is checked the same way.
fn check_header(name: &str, value: &str) -> Result<(String, String), PlanError> {
    loadbench_units::header(&format!("{name}: {value}")).map_err(|e| invalid(format!("-H {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8080/x?y=1").unwrap()
    }

    fn pair(n: &str, v: &str) -> (String, String) {
        (n.to_string(), v.to_string())
    }

    fn text(r: &RequestTemplate) -> String {
        String::from_utf8(r.bytes.clone()).unwrap()
    }

    #[test]
    fn renders_get_with_defaults() {
        let r = RequestTemplate::render(&target(), "get", &[], None, true).unwrap();
        let t = text(&r);
        assert!(
            t.starts_with("GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{t}"
        );
        assert!(t.ends_with("Accept: */*\r\n\r\n"));
        assert!(!t.contains("Content-Length"));
        assert!(!r.head);
    }

    #[test]
    fn host_header_overrides_and_body_gets_length() {
        let h = vec![pair("Host", "example.test"), pair("X-A", " 1 ")];
        let r =
            RequestTemplate::render(&target(), "POST", &h, Some(b"{}".to_vec()), false).unwrap();
        let t = text(&r);
        assert!(!t.contains("127.0.0.1:8080"));
        assert!(t.contains("Host: example.test\r\n"));
        assert!(t.contains("X-A: 1\r\n"));
        assert!(t.contains("Content-Length: 2\r\n"));
        assert!(t.contains("Connection: close\r\n"));
        assert!(t.ends_with("\r\n\r\n{}"));
    }

    #[test]
    fn rejects_bad_headers_and_methods() {
        let bad = |n: &str| RequestTemplate::render(&target(), "GET", &[pair(n, "x")], None, true);
        assert!(bad("").unwrap_err().to_string().contains("'Name: value'"));
        assert!(bad("Bad Name").is_err());
        assert!(RequestTemplate::render(&target(), "G T", &[], None, true).is_err());
        let head = RequestTemplate::render(&target(), "HEAD", &[], None, true).unwrap();
        assert!(head.head);
    }
}
