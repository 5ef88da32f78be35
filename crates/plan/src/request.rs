//! The request, rendered once into the exact bytes every connection writes.

use crate::target::Target;
use crate::{invalid, PlanError};

/// The bytes of one request, ready to write, and what the response reader must know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    pub bytes: Vec<u8>,
    pub method: String,
    /// A HEAD request: the response has no body whatever its headers say.
    pub head: bool,
    /// The headers as given by the user, for the record.
    pub headers: Vec<String>,
    pub body_len: u64,
}

impl RequestTemplate {
    /// Renders the request line, `Host` (unless given), default `User-Agent` and `Accept`
    /// (unless given), `Content-Length` for a body, `Connection: close` without keep-alive, the
    /// user's headers and the body.
    pub fn render(
        target: &Target,
        method: &str,
        headers: &[String],
        body: Option<Vec<u8>>,
        keepalive: bool,
    ) -> Result<RequestTemplate, PlanError> {
        let method = check_method(method)?;
        let parsed = headers
            .iter()
            .map(|h| split_header(h))
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
            headers: headers.to_vec(),
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

fn split_header(h: &str) -> Result<(String, String), PlanError> {
    let bad = || {
        invalid(format!(
            "-H '{h}' is not a header: write it as 'Name: value'"
        ))
    };
    let (name, value) = h.split_once(':').ok_or_else(bad)?;
    let name = name.trim();
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) || value.contains(['\r', '\n']) {
        return Err(bad());
    }
    Ok((name.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8080/x?y=1").unwrap()
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
        let h = vec!["Host: example.test".to_string(), "X-A:  1 ".to_string()];
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
        let bad = |h: &str| RequestTemplate::render(&target(), "GET", &[h.to_string()], None, true);
        assert!(bad("NoColon")
            .unwrap_err()
            .to_string()
            .contains("'Name: value'"));
        assert!(bad("Bad Name: x").is_err());
        assert!(RequestTemplate::render(&target(), "G T", &[], None, true).is_err());
        let head = RequestTemplate::render(&target(), "HEAD", &[], None, true).unwrap();
        assert!(head.head);
    }
}
