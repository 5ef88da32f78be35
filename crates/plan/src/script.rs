//! `--script FILE` (docs/coming-from.md, "wrk scripts"): a wrk Lua script builds the requests.
//! The plan only carries where the script is and its arguments, and refuses what a script
//! cannot be combined with; the Lua side is the `loadbench-script` crate.

use crate::{invalid, LoadSpec, PlanError};
use std::path::PathBuf;

/// A wrk script and the arguments its `init(args)` gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSpec {
    /// The Lua file.
    pub path: PathBuf,
    /// What `init(args)` receives (`run --script FILE URL -- ARGS…`, a scenario's
    /// `script_args`).
    pub args: Vec<String>,
}

/// Refuses what a script cannot be combined with: it builds every request itself, over
/// HTTP/1.1, one batch of requests at a time per connection.
pub(crate) fn check(spec: &LoadSpec) -> Result<(), PlanError> {
    let Some(script) = &spec.script else {
        return Ok(());
    };
    let shown = script.path.display();
    let t = &spec.transport;
    let clash = if t.http2 || t.http3 {
        Some("--http2 or --http3 (a wrk script's requests are HTTP/1.1)")
    } else if t.pipeline > 1 {
        Some("--pipeline (a script pipelines by returning several requests from request())")
    } else if spec.flow.is_some() {
        Some("--flow")
    } else if !spec.mix.is_empty() {
        Some("a request mix (-u, --requests-file, --curl, --har, --targets)")
    } else if spec.values.data.is_some() {
        Some("--data")
    } else {
        None
    };
    match clash {
        Some(what) => Err(invalid(format!(
            "--script {shown} cannot be combined with {what}: the script builds the requests; leave one of them out"
        ))),
        None => Ok(()),
    }
}
