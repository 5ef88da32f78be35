//! The engine's one integration-test binary (`autotests = false` in Cargo.toml): each file beside
//! this one is a module, so the crate links one test executable instead of one per file. Add a
//! new test file by declaring it here; an undeclared file is not compiled.

mod connections;
mod h2_flow;
mod hostile;
mod hostile_h2;
mod hostile_ws;
mod listener;
mod merge;
mod pipeline;
mod pulse;
mod raw;
mod reasons;
mod source_addrs;
mod support;
mod tls_errors;
