//! Requests brought from other tools into a request mix (docs/request-mix.md): a curl command
//! line ([`parse_curl`]), a HAR 1.2 file ([`read_har`]) and vegeta's targets, its `http` and
//! `json` formats ([`read_vegeta_targets`]). Each becomes [`EndpointSpec`]s of weight 1 with
//! its own method, headers and body, read here (body files too), before any load starts. A
//! mistake is one line naming the fix.

mod curl;
mod har;
mod vegeta;

pub use curl::{parse_curl, CurlRequest};
pub use har::read_har;
pub use vegeta::read_vegeta_targets;

use crate::{EndpointSpec, RequestSpec};

/// One imported request: weight 1.
fn endpoint(
    method: &str,
    url: &str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
) -> EndpointSpec {
    EndpointSpec {
        url: url.to_string(),
        request: RequestSpec {
            method: method.to_string(),
            headers,
            body: if body.is_empty() {
                crate::Body::None
            } else {
                crate::Body::Bytes(body)
            },
        },
        weight: 1,
    }
}

/// A header as an imported file gives it, checked like `-H`.
fn header(name: &str, value: &str) -> Result<(String, String), String> {
    loadbench_units::header(&format!("{name}: {value}")).map_err(|e| e.to_string())
}
