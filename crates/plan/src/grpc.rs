//! `grpc://` loads (docs/transport.md, "gRPC"): the call read from a `.proto` file at run
//! time (protox parses it, prost-reflect's dynamic messages turn the JSON request into
//! protobuf; nothing is generated), encoded and framed once, and what a gRPC load cannot be
//! combined with. Every call is an HTTP/2 POST to `/package.Service/Method` whose body is the
//! framed message; the engine's HTTP/2 client sends it and reads `grpc-status`.

use crate::{invalid, InputFile, LoadSpec, PlanError};
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use std::path::Path;

mod reflection;
pub use reflection::PATHS as REFLECTION_PATHS;
use std::time::Duration;

/// One call (unary or server-streaming: one request message), ready to send: its path and
/// its framed request message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcCall {
    /// `package.Service/Method`, as the URL's path names it (without the leading `/`).
    pub method: String,
    /// The request message, encoded and framed (the 5-byte gRPC prefix, uncompressed).
    pub framed: Vec<u8>,
}

impl GrpcCall {
    /// Reads `proto` (its imports from its own folder), finds `method`
    /// (`package.Service/Method`) and encodes `json` as its input message. Every mistake is
    /// one line naming the fix.
    pub fn load(proto: &Path, method: &str, json: &str) -> Result<GrpcCall, PlanError> {
        let pool = compile(proto)?;
        Self::from_pool(&pool, &proto.display().to_string(), method, json)
    }

    /// [`GrpcCall::load`] from the descriptors a server's reflection service gave (`answer`:
    /// the body of its answer to [`GrpcCall::reflection`], at `url`).
    pub fn from_reflection(
        answer: &[u8],
        url: &str,
        method: &str,
        json: &str,
    ) -> Result<GrpcCall, PlanError> {
        let pool = reflection::pool(answer, url, method)?;
        let source = format!("the reflection of {url}");
        Self::from_pool(&pool, &source, method, json)
    }

    /// The reflection call asking for the file that defines `method`'s service (with the files
    /// it imports): a `ServerReflectionInfo` request of one message, at `path`.
    pub fn reflection(path: &str, method: &str) -> GrpcCall {
        GrpcCall {
            method: path.to_string(),
            framed: frame(&reflection::request(service_of(method))),
        }
    }

    fn from_pool(
        pool: &DescriptorPool,
        source: &str,
        method: &str,
        json: &str,
    ) -> Result<GrpcCall, PlanError> {
        let found = find_method(pool, source, method)?;
        // A server-streaming call sends one message too: its answer's messages are counted.
        if found.is_client_streaming() {
            return Err(invalid(format!(
                "--grpc-method {method} is a client-streaming method: loadbench sends one request message per call; give a unary or server-streaming method of {source} (docs/transport.md, gRPC)"
            )));
        }
        let input = found.input();
        let mut de = serde_json::Deserializer::from_str(json);
        let message = DynamicMessage::deserialize(input.clone(), &mut de)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| {
                invalid(format!(
                    "--body does not match {} (the input of {method}): {e}; give the message as JSON with its fields (docs/transport.md, gRPC)",
                    input.full_name()
                ))
            })?;
        Ok(GrpcCall {
            method: format!("{}/{}", found.parent_service().full_name(), found.name()),
            framed: frame(&message.encode_to_vec()),
        })
    }

    /// The URL of the call: `base` (`grpc://HOST:PORT` or `grpcs://HOST:PORT`) with the
    /// method as its path.
    pub fn url(&self, base: &str) -> Result<String, PlanError> {
        let parsed = url::Url::parse(base.trim()).map_err(|e| {
            invalid(format!(
                "invalid URL '{base}' ({e}): give grpc://HOST:PORT (grpcs:// over TLS)"
            ))
        })?;
        if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() {
            return Err(invalid(format!(
                "'{base}' has a path: give {}://HOST:PORT and the call with --grpc-method package.Service/Method",
                parsed.scheme()
            )));
        }
        Ok(format!(
            "{}/{}",
            base.trim().trim_end_matches('/'),
            self.method
        ))
    }
}

/// The `.proto` file compiled with its imports; a parse error names the file and the fix.
fn compile(proto: &Path) -> Result<DescriptorPool, PlanError> {
    InputFile::PROTO
        .read(proto)
        .map_err(|e| invalid(e.to_string()))?;
    let shown = proto.display();
    // Its imports are looked up in its own folder.
    let full = proto
        .canonicalize()
        .map_err(|e| invalid(format!("--proto {shown}: {e}; give a readable .proto file")))?;
    let dir = full.parent().unwrap_or(Path::new("/"));
    let compiled = protox::Compiler::new([dir]).and_then(|mut c| {
        c.include_imports(true).open_file(&full)?;
        Ok(c.descriptor_pool())
    });
    compiled.map_err(|e| {
        let e = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        invalid(format!("--proto {shown}: {e}; fix the file"))
    })
}

/// `package.Service/Method` (a leading `/` or a `.` before the method accepted) in `pool`.
fn find_method(
    pool: &DescriptorPool,
    source: &str,
    method: &str,
) -> Result<MethodDescriptor, PlanError> {
    let (service, rpc) = split_method(method).ok_or_else(|| {
        invalid(format!(
            "--grpc-method '{method}' names no service: give package.Service/Method"
        ))
    })?;
    let services = || {
        pool.services()
            .map(|s| s.full_name().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(svc) = pool.get_service_by_name(service) else {
        return Err(invalid(format!(
            "--grpc-method {method}: {source} has no service {service}; give one of: {}",
            services()
        )));
    };
    let found = svc.methods().find(|m| m.name() == rpc);
    found.ok_or_else(|| {
        let names: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        invalid(format!(
            "--grpc-method {method}: service {service} has no method {rpc}; give one of: {}",
            names.join(", ")
        ))
    })
}

/// `package.Service/Method` (a leading `/`, or a `.` before the method, accepted) as the
/// service's and the method's names.
fn split_method(method: &str) -> Option<(&str, &str)> {
    let name = method.trim().trim_start_matches('/');
    name.rsplit_once('/').or_else(|| name.rsplit_once('.'))
}

/// The service of `package.Service/Method` (the whole text when it names no method).
fn service_of(method: &str) -> &str {
    split_method(method).map_or(method.trim(), |(service, _)| service)
}

/// A message as one gRPC length-prefixed frame: not compressed (0), its length (4 bytes, big
/// endian), the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The `grpc-timeout` value of `timeout`: at most 8 digits and a unit, in milliseconds while
/// they fit, else in seconds (rounded up, so the server never gives up first).
pub fn timeout_value(timeout: Duration) -> String {
    let ms = timeout.as_millis().max(1);
    if ms < 100_000_000 {
        return format!("{ms}m");
    }
    format!("{}S", ms.div_ceil(1000).min(99_999_999))
}

/// A call's request, rendered once: a POST of the framed message with [`headers`].
pub(crate) fn render(
    target: &crate::Target,
    user: &[(String, String)],
    body: Option<Vec<u8>>,
    spec: &LoadSpec,
) -> Result<crate::RequestTemplate, PlanError> {
    check_framed(body.as_deref())?;
    let headers = headers(user, spec.timeout);
    crate::RequestTemplate::render(target, "POST", &headers, body, spec.keepalive)
}

/// The plan's HTTP/2 streams: for gRPC (HTTP/2 with prior knowledge) `--http2` is implied,
/// `--streams` as given; other loads as their flags say.
pub(crate) fn http2(
    t: &crate::TransportSpec,
    grpc: bool,
    open: bool,
    keepalive: bool,
) -> Result<Option<u32>, PlanError> {
    if !grpc {
        return crate::transport::check_http2(t, open, keepalive);
    }
    let h2 = crate::TransportSpec {
        http2: true,
        ..t.clone()
    };
    crate::transport::check_http2(&h2, open, keepalive)
}

/// The headers of every call besides the user's: the content type gRPC servers require, `te:
/// trailers`, and the deadline from `--timeout`.
pub(crate) fn headers(user: &[(String, String)], timeout: Duration) -> Vec<(String, String)> {
    let mut out = vec![
        ("Content-Type".to_string(), "application/grpc".to_string()),
        ("TE".to_string(), "trailers".to_string()),
        ("grpc-timeout".to_string(), timeout_value(timeout)),
    ];
    out.extend(user.iter().cloned());
    out
}

/// The body of a `grpc://` load must be one framed message ([`GrpcCall::load`] makes it):
/// raw bytes (a scenario's `grpc://` URL, a library caller's body) are refused.
pub(crate) fn check_framed(body: Option<&[u8]>) -> Result<(), PlanError> {
    let framed = match body {
        Some([0, a, b, c, d, message @ ..]) => {
            u32::from_be_bytes([*a, *b, *c, *d]) as usize == message.len()
        }
        _ => false,
    };
    if framed {
        return Ok(());
    }
    Err(invalid(
        "a grpc:// load sends one framed protobuf message: give --proto FILE.proto, --grpc-method package.Service/Method and the message as JSON in --body (loadbench run; docs/transport.md, gRPC)",
    ))
}

/// Refuses what a `grpc://` load cannot do (yet); nothing for other URLs.
pub(crate) fn check(spec: &LoadSpec, grpc: bool) -> Result<(), PlanError> {
    if !grpc {
        return Ok(());
    }
    let t = &spec.transport;
    let clash = if !spec.mix.is_empty() {
        Some("a request mix (one gRPC method per load)")
    } else if t.pipeline > 1 {
        Some("--pipeline")
    } else if spec.flow.is_some() {
        Some("a flow")
    } else if spec.script.is_some() {
        Some("--script")
    } else if spec.request.method != "GET" && spec.request.method != "POST" {
        Some("-m/--method (every call is a POST)")
    } else {
        None
    };
    match clash {
        Some(what) => Err(invalid(format!(
            "{what} cannot be used with a grpc:// URL: leave it out (docs/transport.md, gRPC)"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn health() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures/grpc/health.proto")
    }

    fn err(method: &str, json: &str) -> String {
        GrpcCall::load(&health(), method, json)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_json_request_is_encoded_and_framed_once() {
        let call = GrpcCall::load(
            &health(),
            "grpc.health.v1.Health/Check",
            r#"{"service": "ab"}"#,
        )
        .unwrap();
        assert_eq!(call.method, "grpc.health.v1.Health/Check");
        // Field 1, wire type 2 (0x0a), length 2, "ab"; behind the 5-byte prefix.
        assert_eq!(call.framed, [0, 0, 0, 0, 4, 0x0a, 2, b'a', b'b']);
        let empty = GrpcCall::load(&health(), "/grpc.health.v1.Health.Check", "{}").unwrap();
        assert_eq!(empty.framed, [0, 0, 0, 0, 0]);
        assert_eq!(
            call.url("grpc://127.0.0.1:50051/").unwrap(),
            "grpc://127.0.0.1:50051/grpc.health.v1.Health/Check"
        );
        assert!(call.url("grpc://127.0.0.1:1/x").is_err());
    }

    #[test]
    fn unknown_services_methods_and_mismatched_json_are_one_line_each() {
        let e = err("grpc.health.v1.Nope/Check", "{}");
        assert!(
            e.contains("no service grpc.health.v1.Nope") && e.contains("grpc.health.v1.Health"),
            "{e}"
        );
        let e = err("grpc.health.v1.Health/Chek", "{}");
        assert!(
            e.contains("no method Chek") && e.contains("Check, Watch"),
            "{e}"
        );
        // Server-streaming: one request message, as a unary call's.
        let watch = GrpcCall::load(&health(), "grpc.health.v1.Health/Watch", "{}").unwrap();
        assert_eq!(watch.framed, [0, 0, 0, 0, 0]);
        let stream = health().with_file_name("stream.proto");
        let e = GrpcCall::load(&stream, "loadbench.test.Stream/Gather", "5").unwrap_err();
        assert!(
            e.to_string().contains("is a client-streaming method"),
            "{e}"
        );
        // The well-known types' JSON mapping: a UInt32Value is a bare number.
        let count = GrpcCall::load(&stream, "loadbench.test.Stream/Count", "5").unwrap();
        assert_eq!(count.framed, [0, 0, 0, 0, 2, 0x08, 5]);
        let e = err("Check", "{}");
        assert!(e.contains("names no service"), "{e}");
        for json in [r#"{"svc": "x"}"#, r#"{"service": 5}"#, "{", "{} {}"] {
            let e = err("grpc.health.v1.Health/Check", json);
            assert!(
                e.contains("--body does not match grpc.health.v1.HealthCheckRequest"),
                "{json}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_missing_or_broken_proto_names_the_file() {
        let e = GrpcCall::load(Path::new("/nonexistent/x.proto"), "a.B/C", "{}").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.proto"), "{e}");
        let dir = std::env::temp_dir().join(format!("lb-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.proto");
        std::fs::write(&bad, "syntax = \"proto3\";\nmessage {\n").unwrap();
        let e = GrpcCall::load(&bad, "a.B/C", "{}").unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.starts_with("--proto ") && e.contains("bad.proto") && !e.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn only_a_framed_message_is_a_grpc_body() {
        assert!(check_framed(Some(&[0, 0, 0, 0, 0])).is_ok());
        assert!(check_framed(Some(&frame(b"abc"))).is_ok());
        for bad in [&b"{}"[..], &[0, 0, 0, 0, 2, 1], &[1, 0, 0, 0, 0]] {
            assert!(check_framed(Some(bad)).is_err(), "{bad:?}");
        }
        assert!(check_framed(None).is_err());
    }

    #[test]
    fn the_deadline_header_fits_eight_digits() {
        assert_eq!(timeout_value(Duration::from_secs(10)), "10000m");
        assert_eq!(timeout_value(Duration::from_micros(10)), "1m");
        assert_eq!(timeout_value(Duration::from_secs(200_000)), "200000S");
    }
}
