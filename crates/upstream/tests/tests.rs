//! The reference backend's one integration-test binary (`autotests = false` in Cargo.toml): each
//! file beside this one is a module, so the crate links one test executable instead of one per
//! file. Add a new test file by declaring it here; an undeclared file is not compiled.

mod h3;
mod login;
mod server;
