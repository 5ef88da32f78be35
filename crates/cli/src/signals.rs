//! Ctrl-C and SIGTERM: the first one raises the process-wide stop flag, so runs end within a
//! second and keep what they measured; a second Ctrl-C exits at once.

use anyhow::Result;
use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process-wide stop flag, with the signal handlers installed on first use.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>> {
    if let Some(flag) = STOP.get() {
        return Ok(Arc::clone(flag));
    }
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGINT, Arc::clone(&flag))?;
    signal_hook::flag::register(SIGTERM, Arc::clone(&flag))?;
    Ok(Arc::clone(STOP.get_or_init(|| flag)))
}
