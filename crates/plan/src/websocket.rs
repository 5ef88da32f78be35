//! `ws://` and `wss://` URLs: what a WebSocket load can be combined with. Each connection upgrades once,
//! then each request is one message (the body) and its answer the next message received, so
//! everything that shapes HTTP requests per request, or another protocol, is refused here with
//! one line naming the fix.

use crate::{invalid, LoadSpec, Plan, PlanError, WsMatch};
use std::sync::atomic::AtomicU64;

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
        if let Some(field) = &spec.transport.ws_match {
            return Err(invalid(format!(
                "--ws-match {field} matches WebSocket answers by a JSON field: use it with a ws:// or wss:// URL, or leave it out"
            )));
        }
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

/// `--ws-match FIELD`: the field parsed, and the message checked before any load: the fixed
/// one, or with per-request values the first one as rendered (later ones without the field
/// are counted as `ws_unmatchable` errors and not sent).
pub(crate) fn resolve_match(spec: &LoadSpec, plan: &Plan) -> Result<Option<WsMatch>, PlanError> {
    let Some(field) = &spec.transport.ws_match else {
        return Ok(None);
    };
    let m = WsMatch::parse(field)?;
    let req = &plan.request;
    let body = &req.bytes[req.bytes.len() - req.body_len as usize..];
    match plan.values.as_ref().filter(|v| v.templated(0)) {
        None => m.check_sent(body, "the message (--body)")?,
        Some(values) => {
            let counter = AtomicU64::new(values.spec.first);
            let mut source = crate::Source::new(values, &counter, 0);
            let mut first = Vec::new();
            let draw = source.draw();
            source.assemble(0, draw, 0, &[], &mut first);
            m.check_sent(&first, "the first message as rendered")?;
        }
    }
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use crate::{Body, LoadSpec, Plan};
    use std::time::Duration;

    fn ws(body: &str, url_tail: &str, field: Option<&str>) -> Result<Plan, String> {
        let mut s = LoadSpec::closed(
            &format!("ws://127.0.0.1:9/ws{url_tail}"),
            2,
            Duration::from_secs(1),
        );
        s.request.body = Body::Bytes(body.as_bytes().to_vec());
        s.transport.ws_match = field.map(str::to_string);
        Plan::resolve(&s).map_err(|e| e.to_string())
    }

    #[test]
    fn a_websocket_message_takes_values_and_is_compiled_alone() {
        let p = ws(r#"{"id":{{seq}}}"#, "", Some("id")).unwrap();
        let v = p.values.as_ref().expect("values");
        assert!(v.templated(0));
        let counter = std::sync::atomic::AtomicU64::new(0);
        let mut src = crate::Source::new(v, &counter, 0);
        let mut out = Vec::new();
        for _ in 0..2 {
            let d = src.draw();
            src.assemble(0, d, 0, &[], &mut out);
        }
        assert_eq!(
            out, br#"{"id":1}{"id":2}"#,
            "the message alone, no HTTP head"
        );
        assert_eq!(p.ws_match.unwrap().field, "id");

        let e = ws("x", "?n={{seq}}", None).unwrap_err();
        assert!(e.contains("in a WebSocket URL or header"), "{e}");
        let e = ws(r#"{"n":{{seq}}}"#, "", Some("id")).unwrap_err();
        assert!(e.contains("first message as rendered"), "{e}");
        assert!(ws(r#"{"id":"a"}"#, "", Some("id")).is_ok());
        let e = ws("plain", "", Some("id")).unwrap_err();
        assert!(e.contains("is not JSON"), "{e}");
    }

    #[test]
    fn ws_match_needs_a_websocket_url() {
        let mut s = LoadSpec::closed("http://127.0.0.1:9/", 1, Duration::from_secs(1));
        s.transport.ws_match = Some("id".into());
        let e = Plan::resolve(&s).unwrap_err().to_string();
        assert!(e.contains("use it with a ws:// or wss:// URL"), "{e}");
    }
}
