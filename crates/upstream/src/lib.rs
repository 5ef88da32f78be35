//! The reference backend of loadbench: a small, fast HTTP/1.1, HTTP/2 and HTTP/3 server with
//! known answers (over TCP, where h2c with prior knowledge is detected by its preface, TLS with a
//! generated or given certificate and ALPN `h2`/`http/1.1`, HTTP/3 over QUIC on the TLS port
//! number over UDP (ALPN `h3`, announced by `Alt-Svc`; `ServerConfig::h3`, on by default with
//! TLS), and a Unix socket), used by `loadbench serve`, `loadbench demo` and the tests of the
//! other crates. Every protocol's requests go through the same route table below.
//!
//! In: a [`ServerConfig`] (address, threads, default delay/body size/status, fail rate,
//! concurrency limit, hiccup, whether abandoned work is finished). Out: a running [`Server`] with its bound address and per-route
//! [`Stats`], or a blocking [`run_until_signal`] for the CLI. The settings of `loadbench serve`
//! are one typed [`ServeSettings`]: its clap flags (the CLI flattens them), its checks
//! ([`ServeSettings::check`], naming the key) and the flags that give it back
//! ([`ServeSettings::to_args`], for a harness starting `loadbench serve` as a child); a scenario's
//! `[target.upstream]` is read into it with [`parse_delay`], [`parse_size`] and [`parse_hiccup`].
//! Of the other loadbench crates this one depends only on `loadbench-units`.
//!
//! Routes (every route also accepts `?delay=SPEC`, a server-wide `delay` applies otherwise; and
//! `?hiccup=STALL/EVERY`, see below):
//!
//! | route | answer |
//! |---|---|
//! | `/` | `hello world` (text/plain), or the configured body size and status |
//! | `/json` | `{"message":"OK","status":200,"data":1}` (application/json) |
//! | `/bytes/{size}` | `size` bytes (`1k` = 1000, `1KiB` = 1024; at most 1 GiB, else 400) |
//! | `/chunked/{size}` | `size` bytes with chunked transfer encoding, in four or more chunks |
//! | `/delay/{spec}` | `hello world` after `200ms`, `uniform:10ms..50ms`, `exp:20ms`, `normal:50ms,10ms` |
//! | `/status/{code}` | that status (200..=599) with its reason phrase as the body |
//! | `/echo` | the request as JSON: method, path, query, version, headers, body, body_len (the first 256 are also kept: `Server::echoed`) |
//! | `POST /login` | a fresh token: `{"token":"t1-…","user":…}` and `X-Token`; the user is a JSON body's `"user"`, a form's `user=`, else `anonymous` (other methods: 405) |
//! | `/me` | with `Authorization: Bearer <token>` from `/login`: `{"user":…,"token":…,"requests":N}`, N counting this token's authorised requests; else 401 with `WWW-Authenticate: Bearer` (counts: `Server::logins`, the newest [`TOKENS_KEPT`] tokens kept) |
//! | `/ws` (TCP or TLS, the connection's first request) | a WebSocket echo: text and binary messages sent back, each counted under `/ws`; pings answered; `?close_after=N&close_code=C` closes after N echoes (see `ws.rs`) |
//! | any path, a gRPC call (HTTP/2 or HTTP/3 `POST`, `content-type: application/grpc`) | a gRPC echo: the request's message back, then `grpc-status: 0`; metadata `x-stream-count: N` streams it N times, `x-grpc-status: N` answers that status, `x-delay-ms: N` waits (see `grpc.rs`); counted under `grpc` |
//! | `/stats`, `POST /stats/reset` | requests per route pattern as JSON (not counting `/stats`), per protocol (`protocols`: `http1`, `h2`, `h3`), with `in_service`, `queued`, `abandoned_completed` and `ws_open` (WebSocket connections open now) |
//! | `/fault/reset` | a TCP RST instead of a response |
//! | `/fault/close` | FIN before any response byte |
//! | `/fault/stall` | nothing, until the client closes or the server stops |
//! | `/fault/malformed` | `HTTX/9 abc` as status line, then close |
//! | `/fault/short` | `Content-Length: 100` with 10 body bytes, then close |
//! | `/fault/slow?bps=N&size=S` | `S` bytes (default 1 KiB) at `N` (default 1 KiB) bytes per second |
//!
//! Over TLS and HTTP/2 a fault route only ends its connection or resets its stream (the
//! misbehaviours above need a raw TCP socket); over HTTP/3 `/fault/close` closes the QUIC
//! connection (`H3_NO_ERROR`), `/fault/stall` never answers, and the others reset their stream
//! (`H3_INTERNAL_ERROR`), a
//! `code=` query picking another code; `/ws` is a 404 there as over HTTP/2.
//!
//! `fail_rate` turns that fraction of ordinary (non-fault) answers into 500s, drawn from a
//! seeded generator so rates are reproducible.
//!
//! Open-model (fixed-rate) tests need a backend whose capacity and stalls are known exactly:
//!
//! - **Concurrency limit** (`max_concurrency: Some(n)`): at most `n` ordinary requests are in
//!   service at once across the whole server; the others wait for a slot in arrival order
//!   (FIFO) and are never rejected. A request takes its slot before its delay and gives it back
//!   once its response is produced (the transfer of the body to the client is not counted).
//!   With a fixed delay `d` the capacity is exactly `n / d` requests per second: `n = 4` with
//!   `10ms` serves 400 req/s, and a faster arrival rate builds a queue. (Timers fire up to about
//!   a millisecond late, so a queued request starts its delay when the slot was due to be free,
//!   not when it was actually freed; otherwise the lateness would add up, and 4 × 10ms would
//!   serve only about 350 req/s.) [`Stats::in_service`] (`in_service` in `/stats`) shows the
//!   slots taken, [`Stats::queued`] (`queued`) the requests waiting for one.
//! - **Abandoned work** (`keep_abandoned: true`): by default a request whose client closes the
//!   connection is dropped at once, giving up its place in line or its slot, so an overload
//!   leaves no backlog once its clients time out. Real servers such as Tomcat or Go's
//!   net/http keep working on such requests. With `keep_abandoned`, every answer that waits (a
//!   slot, a delay, a stall) runs to its end as its own task, holding its place and its slot
//!   as if the client were still there; the answer is then discarded and counted in
//!   [`Stats::abandoned_completed`]. The capacity stays `n / d`, and a request arriving after
//!   an overload waits for the backlog to be worked off first.
//! - **Hiccups** (`hiccup: Some(Hiccup { every, stall })`, or [`parse_hiccup`]`("300ms/1s")`,
//!   written `STALL/EVERY`): a periodic server-wide stall, like a GC pause. Time since server
//!   start ([`Server::started_at`]) is cut into periods of `every`; during the first `stall` of
//!   each period no ordinary answer is sent, and every answer that falls due in the window (a
//!   request that arrives in it, or finishes its delay in it) is sent when the window ends. So
//!   a request arriving as a window opens waits about `stall`, and one arriving outside a window
//!   is not delayed. `?hiccup=300ms/1s` applies the same server-clock-aligned windows to one
//!   request, in place of the server's hiccup. A slot of the concurrency limit stays taken
//!   during the stall.
//!
//! - **Served connections** (`max_served_conns: Some(n)`): at most `n` connections are served
//!   at once, like a thread-per-connection server or a blocking servlet pool: each accepted
//!   connection holds a worker for its whole life, and the others wait, unread, in the kernel's
//!   accept queue until a served one closes. Against keep-alive clients the extra connections
//!   get no answer at all: the behaviour loadbench reports as starved connections.
//!
//! Fault routes, `/stats` and 400s for malformed parameters bypass the limit and hiccups. With
//! neither set, an answer takes no lock and allocates nothing more than before; without
//! `keep_abandoned`, no answer spawns a task.

mod abandon;
mod body;
mod conn;
mod echoed;
mod error;
mod grpc;
mod h2;
mod hiccup;
mod http3;
mod limit;
mod login;
mod rewind;
mod rng;
mod routes;
mod server;
mod settings;
mod stats;
mod tls;
mod units;
mod ws;

pub use echoed::{Echoed, ECHOED_KEPT};
pub use error::UpstreamError;
pub use hiccup::{parse_hiccup, Hiccup};
pub use login::{Logins, Session, TOKENS_KEPT};
pub use routes::MAX_BODY;
pub use server::{run_until_signal, Server, ServerConfig};
pub use settings::{ServeSettings, SettingError};
pub use stats::Stats;
pub use tls::TlsIdentity;
pub use units::{parse_delay, parse_size, DelaySpec, MAX_DELAY};
