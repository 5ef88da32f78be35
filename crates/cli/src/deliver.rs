//! The start and the end that `run`, `find-max` and `bench` share, around their flattened
//! output flags ([`OutputArgs`]): before the load, [`OutputArgs::start`] checks `--live-web` and
//! `--html`, starts the live page and says what stderr shows; after it (and after each command
//! saved its own files), [`deliver`] gives the live page the final result, writes `--html` and
//! prints the result in `-o`'s format. The exit code is the command's.

use crate::args::OutputArgs;
use crate::progress::Shown;
use crate::UserError;
use anyhow::Result;
use loadbench_live::web::LiveWeb;
use loadbench_model::SavedResult;
use loadbench_report::Format;
use loadbench_report::RenderOptions;
use std::sync::Arc;

impl OutputArgs {
    /// Before the load: `--live-web` and `--html` checked, the live page started when asked
    /// for, and what stderr shows while `command` runs (nothing with `-q`, the dashboard unless
    /// `--no-live`, the page beside it).
    pub(crate) fn start(
        &self,
        command: &'static str,
        opts: &RenderOptions,
    ) -> Result<(Option<Arc<LiveWeb>>, Shown), UserError> {
        let addr = crate::live::web::asked(&self.live_web)?;
        crate::output::check_writable("--html", self.html.as_deref())?;
        crate::output::check_writable("--junit", self.junit.as_deref())?;
        let web = crate::live::web::start(addr, opts, command)?;
        let shown = Shown::live(self.quiet, !self.no_live, command).with_web(web.clone());
        Ok((web, shown))
    }
}

/// The common end of `run`, `find-max` and `bench`, once each has saved its own files: the live
/// page takes the final result, `--html` is written (and said on stderr when `announce_html`),
/// and the result is printed to stdout in `-o`'s format. The command then says its exit code
/// ([`crate::live::web::conclude`]).
pub(crate) fn deliver(
    saved: &SavedResult,
    out: &OutputArgs,
    opts: &RenderOptions,
    web: Option<&LiveWeb>,
    announce_html: bool,
) -> Result<()> {
    if let Some(web) = web {
        web.finish(saved);
    }
    if let Some(path) = &out.html {
        crate::output::write(path, saved, Format::Html, opts)?;
        if announce_html {
            eprintln!("HTML report written to {}", path.display());
        }
    }
    if let Some(path) = &out.junit {
        crate::output::write(path, saved, Format::Junit, opts)?;
        if announce_html {
            eprintln!("JUnit report written to {}", path.display());
        }
    }
    crate::output::print(saved, out.output, opts)
}
