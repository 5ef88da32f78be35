//! The harness's one integration-test binary (`autotests = false` in Cargo.toml): each file
//! beside this one is a module, so the crate links one test executable instead of one per file.
//! Add a new test file by declaring it here; an undeclared file is not compiled.
//!
//! All modules share one process. What that changes, and how it is kept correct:
//! - tests that measure CPU, or keep a core busy, take [`cpu_exclusive`], so busy loops of one
//!   module do not skew the measurements of another (as separate binaries, cargo ran them one
//!   after another);
//! - `process::sigkilled_parent_leaves_no_target_behind` re-executes this binary to run one
//!   test by its full name, `process::helper_parent_holding_a_target`.

use std::sync::{Mutex, MutexGuard};

mod examples;
mod limits;
mod orders;
mod orders_targets;
mod process;
mod sampler;

/// Tests that measure or burn CPU run one at a time, so they do not compete for the 2 cores.
static CPU: Mutex<()> = Mutex::new(());

/// Holds the CPU for one measuring test; a test that panicked while holding it does not poison
/// the others.
pub fn cpu_exclusive() -> MutexGuard<'static, ()> {
    CPU.lock().unwrap_or_else(|e| e.into_inner())
}
