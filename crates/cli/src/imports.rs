//! `--curl`, `--har` and `--targets`: requests brought from curl, a browser's HAR export and
//! vegeta into the request mix (docs/request-mix.md), read by `loadbench_plan` before any
//! load starts. They come after the URL argument, `-u` and `--requests-file`, in this order;
//! `-H` headers are added before each one's own.

use crate::args::RequestArgs;
use crate::UserError;
use loadbench_plan::{Body, EndpointSpec, RequestSpec, TransportSpec};

/// The imported requests and what their curl commands said of the connection.
#[derive(Debug, Default)]
pub(crate) struct Imported {
    pub(crate) endpoints: Vec<EndpointSpec>,
    /// A `--curl` with `-k` on an `https://` URL.
    insecure: bool,
    /// The `--curl`s carry `--http2`.
    http2: bool,
}

impl Imported {
    /// The load's transport with the curl commands' `-k` and `--http2` added.
    pub(crate) fn transport(&self, mut t: TransportSpec) -> TransportSpec {
        t.insecure |= self.insecure;
        t.http2 |= self.http2;
        t
    }
}

/// Reads every `--curl`, `--har` and `--targets`. `url` is the URL argument: `--body` and
/// `--body-file` apply to it and to `-u`, never to an imported request, which has its own.
pub(crate) fn read(
    url: Option<&str>,
    r: &RequestArgs,
    defaults: &RequestSpec,
) -> Result<Imported, UserError> {
    let mut out = Imported::default();
    if r.curls.is_empty() && r.har.is_none() && r.targets.is_none() {
        return Ok(out);
    }
    let own = url.is_some() || !r.urls.is_empty() || r.requests_file.is_some();
    if !own && defaults.body != Body::None {
        return Err(UserError(
            "--body and --body-file apply to the URL argument and -u, and an imported request (--curl, --har, --targets) has its own body: leave them out".into(),
        ));
    }
    let mut http2 = Vec::new();
    for (i, cmd) in r.curls.iter().enumerate() {
        let c = loadbench_plan::parse_curl(cmd)
            .map_err(|e| UserError(format!("--curl #{}: {e}", i + 1)))?;
        out.insecure |= c.insecure;
        http2.push(c.http2);
        out.endpoints.push(c.endpoint);
    }
    if http2.iter().any(|h| *h != http2[0]) {
        return Err(UserError(
            "some --curl commands have --http2 and some not: one load speaks one protocol; give --http2 to every one or to none".into(),
        ));
    }
    out.http2 = http2.first().copied().unwrap_or(false);
    let user = |e: loadbench_plan::PlanError| UserError(e.to_string());
    if let Some(path) = &r.har {
        out.endpoints
            .extend(loadbench_plan::read_har(path).map_err(user)?);
    }
    if let Some(path) = &r.targets {
        out.endpoints
            .extend(loadbench_plan::read_vegeta_targets(path).map_err(user)?);
    }
    for e in &mut out.endpoints {
        e.request
            .headers
            .splice(0..0, defaults.headers.iter().cloned());
    }
    Ok(out)
}
