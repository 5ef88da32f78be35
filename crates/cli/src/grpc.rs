//! `grpc://` loads at the edge (docs/transport.md, "gRPC"): `--proto` and `--grpc-method`
//! read and checked, the JSON message of `--body` encoded once, all before any load; the
//! result is an ordinary `LoadSpec` whose request is the framed message, which the plan
//! sends as a gRPC call over HTTP/2.

use crate::args::RequestArgs;
use crate::run::{connection_spec, transport_spec};
use crate::UserError;
use loadbench_plan::{Body, GrpcCall, InputFile, LoadSpec, RequestSpec};

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
    let (Some(proto), Some(method)) = (&r.proto, &r.grpc_method) else {
        return Err(UserError(
            "a grpc:// load needs --proto FILE.proto and --grpc-method package.Service/Method (and the request as JSON in --body)".into(),
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
    let call = GrpcCall::load(proto, method, &json).map_err(invalid)?;
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
