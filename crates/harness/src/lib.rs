//! The bench harness: what `loadbench bench scenario.toml` and `loadbench demo` run.
//!
//! In: a scenario (file or text). Out: a [`loadbench_model::BenchResult`] from
//! [`run::run_scenario`], saved in its run folder after every step.
//! Inside: validated scenarios ([`scenario`]), target processes that never outlive loadbench
//! ([`process`], [`guardian`]), their limits ([`limits`]), CPU/RSS samples of process trees and
//! the host ([`sampler`]), each step's kernel and target evidence ([`evidence`], the kernel log's OOM kills) and the generator's threads
//! ([`generator`]), and the matrix of loads × levels × rounds ([`bench`]), every load
//! run through the runner library.
//! Neighbours: runner (loads), plan (typed loads), model (results); never the CLI.

pub mod bench;
pub mod evidence;
pub mod generator;
pub use loadbench_model::bench_stats;
pub mod guardian;
pub(crate) mod kmsg;
pub mod limits;
pub mod process;
pub(crate) mod profile;
pub mod run;
pub mod sampler;
pub mod scenario;
pub mod targets;
