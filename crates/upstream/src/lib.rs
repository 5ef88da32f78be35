//! The reference backend of loadbench: a small, fast HTTP/1.1 server with known answers, used by
//! `loadbench serve`, `loadbench demo` and the tests of the other crates.
//!
//! In: a [`ServerConfig`] (address, threads, default delay/body size/status, fail rate). Out: a
//! running [`Server`] with its bound address and per-route [`Stats`], or a blocking
//! [`run_until_signal`] for the CLI. Also [`parse_delay`] and [`parse_size`], which the CLI
//! reuses for its flags. This crate depends on none of the other loadbench crates.
//!
//! Routes (every route also accepts `?delay=SPEC`; a server-wide `delay` applies otherwise):
//!
//! | route | answer |
//! |---|---|
//! | `/` | `hello world` (text/plain), or the configured body size and status |
//! | `/json` | `{"message":"OK","status":200,"data":1}` (application/json) |
//! | `/bytes/{size}` | `size` bytes (`1k` = 1000, `1KiB` = 1024; at most 1 GiB, else 400) |
//! | `/chunked/{size}` | `size` bytes with chunked transfer encoding, in four or more chunks |
//! | `/delay/{spec}` | `hello world` after `200ms`, `uniform:10ms..50ms`, `exp:20ms`, `normal:50ms,10ms` |
//! | `/status/{code}` | that status (200..=599) with its reason phrase as the body |
//! | `/echo` | the request as JSON: method, path, query, version, headers, body, body_len |
//! | `/stats`, `POST /stats/reset` | requests per route pattern as JSON (not counting `/stats`) |
//! | `/fault/reset` | a TCP RST instead of a response |
//! | `/fault/close` | FIN before any response byte |
//! | `/fault/stall` | nothing, until the client closes or the server stops |
//! | `/fault/malformed` | `HTTX/9 abc` as status line, then close |
//! | `/fault/short` | `Content-Length: 100` with 10 body bytes, then close |
//! | `/fault/slow?bps=N&size=S` | `S` bytes (default 1 KiB) at `N` (default 1 KiB) bytes per second |
//!
//! `fail_rate` turns that fraction of ordinary (non-fault) answers into 500s, drawn from a
//! seeded generator so rates are reproducible.

mod body;
mod conn;
mod error;
mod rng;
mod routes;
mod server;
mod stats;
mod units;

pub use error::UpstreamError;
pub use routes::MAX_BODY;
pub use server::{run_until_signal, Server, ServerConfig};
pub use stats::Stats;
pub use units::{parse_delay, parse_size, DelaySpec, MAX_DELAY};
