//! `ws://` and `wss://` URLs: what a WebSocket load can be combined with. Each connection upgrades once,
//! then each request is one message (the body) and its answer the next message received, so
//! everything that shapes HTTP requests per request, or another protocol, is refused here with
//! one line naming the fix.

use crate::{invalid, LoadSpec, PlanError};

/// The most idle connections `--ws-idle` may ask for.
pub(crate) const MAX_IDLE: u32 = 1_000_000;

/// `-c 0 --ws-idle N`: the idle connections are held beside at least one active one.
pub(crate) fn check_idle_beside(spec: &LoadSpec) -> Result<(), PlanError> {
    match spec.load {
        crate::LoadShape::Closed { connections: 0 } if spec.transport.ws_idle > 0 => Err(invalid(
            "-c 0 with --ws-idle: the idle connections are held beside at least one active one; give -c 1",
        )),
        _ => Ok(()),
    }
}

/// Refuses what a WebSocket load cannot do (yet); nothing for other URLs.
pub(crate) fn check(spec: &LoadSpec, websocket: bool) -> Result<(), PlanError> {
    if !websocket {
        if spec.transport.ws_idle > 0 {
            return Err(invalid(
                "--ws-idle holds idle WebSocket connections: use it with a ws:// or wss:// URL, or leave it out",
            ));
        }
        if spec.mix.iter().any(|e| is_websocket(&e.url)) {
            return Err(invalid(
                "a mix of WebSocket (ws://, wss://) and HTTP URLs: one load speaks one protocol; give only WebSocket URLs or none",
            ));
        }
        return Ok(());
    }
    let t = &spec.transport;
    let clash = if !spec.mix.is_empty() {
        Some("a request mix (one WebSocket URL per load)")
    } else if t.http2 {
        Some("--http2")
    } else if t.pipeline > 1 {
        Some("--pipeline")
    } else if t.unix_socket.is_some() {
        Some("--unix-socket")
    } else if !spec.keepalive {
        Some("--no-keepalive (a WebSocket connection carries every message)")
    } else if spec.flow.is_some() {
        Some("a flow")
    } else if spec.script.is_some() {
        Some("--script")
    } else {
        None
    };
    if spec.transport.ws_idle > MAX_IDLE {
        return Err(invalid(format!(
            "--ws-idle {} is above {MAX_IDLE} idle connections: give fewer (each needs a file descriptor and a local port)",
            spec.transport.ws_idle
        )));
    }
    match clash {
        Some(what) => Err(invalid(format!(
            "{what} cannot be used with a WebSocket (ws://, wss://) URL: leave it out (docs/transport.md, WebSocket)"
        ))),
        None => Ok(()),
    }
}

/// A `ws://` or `wss://` URL.
fn is_websocket(url: &str) -> bool {
    let url = url.trim_start().to_ascii_lowercase();
    url.starts_with("ws://") || url.starts_with("wss://")
}
