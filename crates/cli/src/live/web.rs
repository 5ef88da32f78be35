//! The CLI's side of the live web page (`--live-web [ADDR]`): the flags checked before anything
//! runs, the page started, and a command's end (the page lingers for its last reader, then the
//! exit code). The page itself is `loadbench_live::web`.

use crate::UserError;
use loadbench_live::web::LiveWeb;
use loadbench_report::RenderOptions;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

/// The address asked for with `--live-web`, checked (before anything runs), if any.
pub(crate) fn asked(args: &crate::args::LiveWebArgs) -> Result<Option<SocketAddr>, UserError> {
    args.live_web
        .as_deref()
        .map(|text| loadbench_live::web::parse_addr(text, args.live_web_public))
        .transpose()
        .map_err(|e| UserError(e.to_string()))
}

/// Starts the page of `command` at `addr` when one was asked for.
pub(crate) fn start(
    addr: Option<SocketAddr>,
    opts: &RenderOptions,
    command: &str,
) -> Result<Option<Arc<LiveWeb>>, UserError> {
    addr.map(|a| LiveWeb::start(a, opts.clone(), command))
        .transpose()
        .map_err(|e| UserError(e.to_string()))
}

/// The end of a command that ran a load: lets the live page (when one was served) take the final
/// result and the metrics endpoint (when one was scraped) its last scrape, then returns `code`,
/// or 1 when the result went to a fallback file instead of the asked path (`in_place` false:
/// nothing is lost, but the user's file is not there).
pub(crate) fn conclude(
    served: &crate::deliver::Served,
    in_place: bool,
    code: ExitCode,
) -> ExitCode {
    if let Some(web) = served.web() {
        web.linger();
    }
    if let Some(metrics) = served.metrics() {
        metrics.linger();
    }
    if in_place {
        code
    } else {
        ExitCode::from(1)
    }
}
