//! gRPC at any path: a `POST /package.Service/Method` over HTTP/2 (or HTTP/3, whose trailers
//! carry the status the same way) with a `content-type` of
//! `application/grpc…` is answered by a gRPC echo, so the demo and the tests have a gRPC
//! target without a gRPC server of their own. Every method answers with the request's own
//! message (a unary echo: the bytes go back as they came, so no `.proto` is read here and any
//! method whose input and output types are the same decodes on the client), then the trailers
//! `grpc-status: 0`. The request's metadata steers it:
//!
//! - `x-stream-count: N` sends the message N times (a server stream; at most 100,000);
//! - `x-grpc-status: N` (not 0) answers that status instead, trailers-only, with no message;
//! - `x-delay-ms: N` waits N ms (at most a minute) before answering.
//!
//! Calls count under the route `grpc` of `/stats`.

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode, Version};
use std::time::Duration;

use crate::body::ResponseBody;

/// The largest request message read (its frame included).
const LIMIT: usize = 4 << 20;
/// The most messages one call streams back.
const MAX_STREAM: u64 = 100_000;
/// The longest `x-delay-ms` honoured.
const MAX_DELAY_MS: u64 = 60_000;

/// A gRPC call: HTTP/2 (or HTTP/3), `POST`, `content-type: application/grpc` (or
/// `application/grpc+…`).
pub(crate) fn is_grpc<B>(req: &Request<B>) -> bool {
    matches!(req.version(), Version::HTTP_2 | Version::HTTP_3)
        && req.method() == Method::POST
        && req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc"))
}

/// The answer to one call (see the module's text).
pub(crate) async fn answer(
    req: Request<impl crate::routes::RequestBody>,
) -> Response<ResponseBody> {
    let (parts, body) = req.into_parts();
    let meta = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let (delay, status) = (meta("x-delay-ms"), meta("x-grpc-status"));
    let count = meta("x-stream-count").unwrap_or(1).min(MAX_STREAM);
    let message = crate::routes::read_limited(body, LIMIT, "gRPC: at most 4 MiB").await;
    if let Some(ms) = delay {
        tokio::time::sleep(Duration::from_millis(ms.min(MAX_DELAY_MS))).await;
    }
    let message = match message {
        Ok(m) => m,
        // RESOURCE_EXHAUSTED: the message is over the limit.
        Err(e) => return trailers_only(8, &e),
    };
    if !framed(&message) {
        // INTERNAL: not one length-prefixed message.
        return trailers_only(13, "the request is not one gRPC length-prefixed message");
    }
    if let Some(code) = status.filter(|&c| c != 0) {
        return trailers_only(code.min(u64::from(u16::MAX)), "as x-grpc-status asked");
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let body = ResponseBody::grpc(Bytes::from(message), count, trailers);
    grpc_response(body)
}

/// One uncompressed message with its 5-byte prefix, exactly.
fn framed(bytes: &[u8]) -> bool {
    match bytes {
        [0, a, b, c, d, message @ ..] => {
            u32::from_be_bytes([*a, *b, *c, *d]) as usize == message.len()
        }
        _ => false,
    }
}

fn grpc_response(body: ResponseBody) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    response
}

/// A trailers-only answer: the status in the one header block, no message.
fn trailers_only(code: u64, message: &str) -> Response<ResponseBody> {
    let mut response = grpc_response(ResponseBody::from_static(b""));
    let headers = response.headers_mut();
    headers.insert("grpc-status", HeaderValue::from(code));
    if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
        headers.insert("grpc-message", v);
    }
    response
}

/// `grpc-message` is percent-encoded (the gRPC protocol over HTTP/2): bytes outside printable
/// ASCII, and `%`, become `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_told_apart_by_version_method_and_content_type() {
        let call = |v, m: Method, ct: &str| {
            let req = Request::builder()
                .version(v)
                .method(m)
                .header(CONTENT_TYPE, ct)
                .body(())
                .unwrap();
            is_grpc(&req)
        };
        assert!(call(Version::HTTP_2, Method::POST, "application/grpc"));
        assert!(call(
            Version::HTTP_2,
            Method::POST,
            "application/grpc+proto"
        ));
        assert!(call(Version::HTTP_3, Method::POST, "application/grpc"));
        assert!(!call(Version::HTTP_11, Method::POST, "application/grpc"));
        assert!(!call(Version::HTTP_2, Method::GET, "application/grpc"));
        assert!(!call(Version::HTTP_2, Method::POST, "application/json"));
    }

    #[test]
    fn a_message_is_framed_when_its_prefix_gives_its_length() {
        assert!(framed(&[0, 0, 0, 0, 2, 8, 1]));
        assert!(framed(&[0, 0, 0, 0, 0]));
        assert!(!framed(&[0, 0, 0, 0, 3, 8, 1]));
        assert!(!framed(&[1, 0, 0, 0, 0]), "compressed");
        assert!(!framed(b"{}"));
        assert_eq!(percent_encode("50% ok\n"), "50%25 ok%0A");
    }
}
