//! `grpc://` loads at the edge (docs/transport.md, "gRPC"): `--proto` (or, without it, the
//! server's reflection service) and `--grpc-method` read and checked, the JSON message of
//! `--body` encoded once, all before any load; the
//! result is an ordinary `LoadSpec` whose request is the framed message, which the plan
//! sends as a gRPC call over HTTP/2.

use crate::args::RequestArgs;
use crate::run::{connection_spec, transport_spec};
use crate::UserError;
use loadbench_engine::h2::once::call_once;
use loadbench_engine::tls::TlsClient;
use loadbench_model::grpc_code_name;
use loadbench_plan::{Body, GrpcCall, InputFile, LoadSpec, Plan, RequestSpec, REFLECTION_PATHS};

/// The load of a `grpc://` URL; `None` for any other URL (where the gRPC flags are refused).
pub(crate) fn request_spec(
    url: Option<&str>,
    r: &RequestArgs,
) -> Result<Option<LoadSpec>, UserError> {
    let url = url
        .map(str::trim)
        .filter(|u| u.starts_with("grpc://") || u.starts_with("grpcs://"));
    let Some(url) = url else {
        if r.proto.is_some() || r.grpc_method.is_some() {
            return Err(UserError(
                "--proto and --grpc-method are for grpc:// URLs: give grpc://HOST:PORT, or leave them out".into(),
            ));
        }
        return Ok(None);
    };
    let Some(method) = &r.grpc_method else {
        return Err(UserError(
            "a grpc:// load needs --grpc-method package.Service/Method (and the request as JSON in --body; --proto FILE.proto when the server offers no reflection)".into(),
        ));
    };
    refuse_mix(r)?;
    let json = match (&r.body, &r.body_file) {
        (Some(b), _) => b.clone(),
        (None, Some(p)) => InputFile::BODY
            .read_to_string(p)
            .map_err(|e| UserError(e.to_string()))?,
        (None, None) => "{}".into(),
    };
    let invalid = |e: loadbench_plan::PlanError| UserError(e.to_string());
    let call = match &r.proto {
        Some(proto) => GrpcCall::load(proto, method, &json).map_err(invalid)?,
        None => reflect(url, r, method, &json)?,
    };
    let full = call.url(url).map_err(invalid)?;
    let request = RequestSpec {
        method: "POST".into(),
        headers: r.headers.clone(),
        body: Body::Bytes(call.framed),
    };
    let spec = LoadSpec {
        request,
        ..connection_spec(&full, r, transport_spec(&r.transport))
    };
    Ok(Some(spec))
}

/// Without `--proto`: the call's descriptors from the server's reflection service (v1, then
/// v1alpha), asked once over a connection of its own with the load's address, TLS and
/// headers, before any load.
fn reflect(url: &str, r: &RequestArgs, method: &str, json: &str) -> Result<GrpcCall, UserError> {
    let base = url.trim().trim_end_matches('/');
    let mut unimplemented = false;
    for path in REFLECTION_PATHS {
        let ask = GrpcCall::reflection(path, method);
        let spec = LoadSpec {
            request: RequestSpec {
                method: "POST".into(),
                headers: r.headers.clone(),
                body: Body::Bytes(ask.framed),
            },
            ..connection_spec(&format!("{base}/{path}"), r, transport_spec(&r.transport))
        };
        let plan = Plan::resolve(&spec).map_err(|e| UserError(e.to_string()))?;
        let tls = plan.tls.as_ref().map(TlsClient::new).transpose();
        let tls = tls.map_err(|e| UserError(format!("{url}: {e}")))?;
        let wait = plan.timeout.max(plan.connect_timeout);
        let answer = call_once(plan.target.addr, tls.as_ref(), &plan.request.bytes, wait)
            .map_err(|e| no_reflection(url, &format!("could not be asked: {e}")))?;
        match answer.grpc_status {
            Some(0) => {
                return GrpcCall::from_reflection(&answer.body, base, method, json)
                    .map_err(|e| UserError(e.to_string()))
            }
            // UNIMPLEMENTED: no such service (try the older one).
            Some(12) => unimplemented = true,
            other => {
                let why = match other {
                    Some(code) => format!("answered {}", grpc_code_name(code)),
                    None => format!("answered HTTP {} without a grpc-status", answer.status),
                };
                return Err(no_reflection(url, &why));
            }
        }
    }
    debug_assert!(unimplemented);
    Err(no_reflection(url, "is not offered (UNIMPLEMENTED)"))
}

fn no_reflection(url: &str, why: &str) -> UserError {
    UserError(format!(
        "{url}: the server's gRPC reflection {why}: give the service's .proto file with --proto (docs/transport.md, gRPC)"
    ))
}

/// A gRPC load calls one method: the flags that make a mix or a flow are refused.
fn refuse_mix(r: &RequestArgs) -> Result<(), UserError> {
    let what = if !r.urls.is_empty() {
        "-u"
    } else if r.requests_file.is_some() {
        "--requests-file"
    } else if !r.curls.is_empty() {
        "--curl"
    } else if r.har.is_some() {
        "--har"
    } else if r.targets.is_some() {
        "--targets"
    } else if r.flow.is_some() {
        "--flow"
    } else {
        return Ok(());
    };
    Err(UserError(format!(
        "{what} cannot be used with a grpc:// URL (one method per load): leave it out (docs/transport.md, gRPC)"
    )))
}
