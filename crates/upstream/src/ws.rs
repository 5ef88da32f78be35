//! The WebSocket echo at `/ws`, so loadbench's WebSocket client (`ws://` and `wss://` URLs)
//! has a target in the tests and the demo. A connection whose first bytes are `GET /ws ` or
//! `GET /ws?` (on cleartext TCP, read with the same one `peek` that looks for the HTTP/2
//! preface; over TLS, read and put back; see `h2.rs`) is handed to tokio-tungstenite, which answers the upgrade (101, `Sec-WebSocket-Accept`) and
//! does the framing. Then every text or binary message is sent back as it came and counted
//! once under `/ws` in `/stats`; pings are answered with pongs and a close with a close (by
//! tungstenite itself).
//!
//! Query parameters of the upgrade request: `close_after=N` ends the connection with a close
//! frame after the N-th echo, with code `close_code=C` (default 1000), so a client's count of
//! close codes can be checked.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use crate::conn::stopped;
use crate::routes::{App, Route};

/// What a connection's first bytes must be for the echo to take it (then one more byte, a
/// space or `?`, ends the path).
pub(crate) const OPENING: &[u8; 7] = b"GET /ws";

/// Whether `first` (the peeked opening of a connection) is a request for `/ws`: `Some(true)`
/// yes, `Some(false)` no, `None` not known yet (a prefix of it so far).
pub(crate) fn is_ws_opening(first: &[u8]) -> Option<bool> {
    let n = first.len().min(OPENING.len());
    if first[..n] != OPENING[..n] {
        return Some(false);
    }
    match first.get(OPENING.len()) {
        Some(b' ' | b'?') => Some(true),
        Some(_) => Some(false),
        None => None,
    }
}

/// When to end a connection with a close frame: after `after` echoes, with `code`.
#[derive(Debug, Clone, Copy)]
struct CloseAfter {
    after: u64,
    code: u16,
}

/// `close_after=N` and `close_code=C` from the upgrade request's query.
fn close_after(query: Option<&str>) -> Option<CloseAfter> {
    let mut after = None;
    let mut code = 1000;
    for pair in query.unwrap_or("").split('&') {
        match pair.split_once('=') {
            Some(("close_after", v)) => after = v.parse().ok(),
            Some(("close_code", v)) => code = v.parse().unwrap_or(1000),
            _ => {}
        }
    }
    after.map(|after| CloseAfter { after, code })
}

/// One upgraded connection in the `ws_open` gauge while it lives.
struct OpenWs<'a>(&'a App);

impl<'a> OpenWs<'a> {
    fn new(app: &'a App) -> Self {
        app.counters.ws_open(true);
        OpenWs(app)
    }
}

impl Drop for OpenWs<'_> {
    fn drop(&mut self) {
        self.0.counters.ws_open(false);
    }
}

/// Serves one WebSocket connection: the handshake, then echoes until the client closes, the
/// connection fails or the server stops (then it sends a close, 1001 going away).
// The handshake callback's error type is tungstenite's `ErrorResponse` (never returned here).
#[allow(clippy::result_large_err)]
pub(crate) async fn serve_ws<S>(stream: S, app: Arc<App>, mut stop: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut close = None;
    let callback = |req: &Request, resp: Response| {
        close = close_after(req.uri().query());
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    let _open = OpenWs::new(&app);
    let mut echoed = 0u64;
    loop {
        let msg = tokio::select! {
            biased;
            () = stopped(&mut stop) => {
                let _ = ws.close(Some(frame(1001))).await;
                return;
            }
            msg = ws.next() => msg,
        };
        let msg = match msg {
            Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => m,
            // Pings are answered and closes returned by tungstenite as it reads.
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return,
        };
        app.counters.hit(Route::Ws);
        if ws.send(msg).await.is_err() {
            return;
        }
        echoed += 1;
        if let Some(c) = close.filter(|c| echoed >= c.after) {
            let _ = ws.close(Some(frame(c.code))).await;
            // Waits for the client's close (or its leaving), which ends the stream.
            while let Some(Ok(_)) = ws.next().await {}
            return;
        }
    }
}

fn frame(code: u16) -> CloseFrame {
    CloseFrame {
        code: CloseCode::from(code),
        reason: "".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_of_a_ws_request_is_told_apart() {
        assert_eq!(is_ws_opening(b"GET /ws HTTP/1.1\r\n"), Some(true));
        assert_eq!(is_ws_opening(b"GET /ws?close_after=2 "), Some(true));
        assert_eq!(is_ws_opening(b"GET /wsx HTTP/1.1"), Some(false));
        assert_eq!(is_ws_opening(b"GET / HTTP/1.1"), Some(false));
        assert_eq!(is_ws_opening(b"PRI * HTTP/2.0"), Some(false));
        assert_eq!(is_ws_opening(b"GET /w"), None);
        assert_eq!(is_ws_opening(b"GET /ws"), None);
    }

    #[test]
    fn close_after_reads_the_query() {
        assert!(close_after(None).is_none());
        let c = close_after(Some("close_after=3&close_code=4000")).unwrap();
        assert_eq!((c.after, c.code), (3, 4000));
        assert_eq!(close_after(Some("close_after=1")).unwrap().code, 1000);
    }
}
