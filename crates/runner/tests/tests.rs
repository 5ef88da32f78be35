//! The runner library driven in-process against the reference backend (also in-process):
//! one load, and find-max searches, through the same API the CLI, the harness and (later) the
//! agent use. One integration-test binary for the crate; a module per subject.

mod evidence;
mod find_max;
mod run;
mod shard;
