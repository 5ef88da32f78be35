//! The bench harness (work in progress): what `loadbench bench scenario.toml` is built from.
//!
//! In: a scenario file. Out: validated scenarios ([`scenario`]), target processes that never
//! outlive loadbench ([`process`]), and CPU/RSS samples of process trees and the host
//! ([`sampler`]). Neighbours: the CLI will drive rounds with the engine and save the results in
//! the model; this crate may depend on plan, engine and model, never on the CLI.

pub mod bench;
pub use loadbench_model::bench_stats;
pub mod guardian;
pub mod limits;
pub mod process;
pub mod sampler;
pub mod scenario;
pub mod targets;
