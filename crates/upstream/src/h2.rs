//! HTTP/2 in the reference backend, so loadbench's HTTP/2 client (and h2load) can be tested
//! without outside servers: h2c with prior knowledge on the cleartext TCP listener (a
//! connection that opens with the HTTP/2 preface), and HTTP/2 over TLS when ALPN chose `h2`,
//! or on the Unix socket (both detected by hyper-util's auto builder, which reads the preface).
//!
//! The cleartext TCP path keeps hyper's HTTP/1.1 connection as it was (the fault routes need
//! its raw socket back): the only cost added to an HTTP/1.1 connection is one `peek` of its
//! first bytes, once per connection, never per request. Over HTTP/2 a fault route only resets
//! its stream (the service's error), like a fault over TLS only ends the connection.

use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::server::TlsStream;

use crate::conn::{stopped, Handler};
use crate::rewind::Rewind;
use crate::routes::App;

/// What every HTTP/2 client sends first (RFC 9113, 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a client that sent part of the preface may take to send the rest before the
/// connection is treated as HTTP/1.1 (whose parser then refuses it).
const PREFACE_WAIT: Duration = Duration::from_secs(5);

/// The HTTP/2 settings of the cleartext listener's h2c connections.
pub(crate) fn h2_builder() -> http2::Builder<TokioExecutor> {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder.max_concurrent_streams(1024);
    builder
}

/// The settings of TLS and Unix-socket connections: HTTP/1.1 (as on the TCP listener) or
/// HTTP/2, whichever the client's first bytes speak.
pub(crate) fn auto_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().keep_alive(true).pipeline_flush(true);
    builder.http2().max_concurrent_streams(1024);
    builder
}

/// What a cleartext connection's first bytes speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// HTTP/1.1 (or nothing, or garbage: hyper's parser answers it).
    Http1,
    /// The HTTP/2 preface: h2c with prior knowledge.
    H2c,
    /// `GET /ws`: the WebSocket echo (`ws.rs`).
    WebSocket,
}

/// How a cleartext client opened: the HTTP/2 preface, a request for `/ws`, or anything else.
/// Only peeks: nothing is consumed, so an HTTP/1.1 connection goes to its parser untouched. A
/// request line differs from the preface by its second byte at the latest (`PUT`, `POST`), and
/// from `GET /ws ` by its eighth, so the wait for more bytes happens only for a real (or
/// truncated) preface or `/ws` request.
pub(crate) async fn opening(stream: &TcpStream) -> Opening {
    let mut buf = [0u8; PREFACE.len()];
    let started = tokio::time::Instant::now();
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return Opening::Http1,
            Ok(n) => n,
        };
        let h2 = buf[..n] == PREFACE[..n];
        if h2 && n == PREFACE.len() {
            return Opening::H2c;
        }
        let ws = crate::ws::is_ws_opening(&buf[..n]);
        if ws == Some(true) {
            return Opening::WebSocket;
        }
        if !h2 && ws == Some(false) {
            return Opening::Http1;
        }
        // A prefix so far: peek returns at once while those bytes wait, so poll gently.
        if started.elapsed() > PREFACE_WAIT {
            return Opening::Http1;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The protocol settings of every connection, made once per listener.
pub(crate) struct Builders {
    /// HTTP/1.1 on the cleartext TCP listener (faults on the raw socket).
    pub(crate) http1: hyper::server::conn::http1::Builder,
    /// h2c with prior knowledge on the cleartext TCP listener.
    pub(crate) h2: http2::Builder<TokioExecutor>,
    /// TLS and Unix-socket connections: whichever the client speaks.
    pub(crate) auto: auto::Builder<TokioExecutor>,
}

impl Builders {
    pub(crate) fn new() -> Builders {
        Builders {
            http1: crate::conn::http_builder(),
            h2: h2_builder(),
            auto: auto_builder(),
        }
    }
}

/// Serves a cleartext TCP connection: h2c when it opens with the preface, the WebSocket echo
/// when it asks for `/ws`, else HTTP/1.1 as before. A client that has sent nothing when the server stops is dropped.
pub(crate) async fn serve_tcp(
    stream: TcpStream,
    app: Arc<App>,
    http: &Builders,
    mut stop: watch::Receiver<bool>,
) {
    let opening = tokio::select! {
        biased;
        () = stopped(&mut stop) => return,
        opening = opening(&stream) => opening,
    };
    match opening {
        Opening::H2c => serve_h2c(stream, app, &http.h2, stop).await,
        Opening::WebSocket => crate::ws::serve_ws(stream, app, stop).await,
        Opening::Http1 => crate::conn::serve(stream, app, &http.http1, stop).await,
    }
}

/// Serves a TLS connection: HTTP/2 when ALPN chose `h2`; else its first bytes are read (a
/// TLS stream cannot be peeked) until they tell a `GET /ws` request apart, and the WebSocket
/// echo or hyper's HTTP/1.1 takes the connection, reading those bytes again first. A client
/// that has sent nothing when the server stops is dropped.
pub(crate) async fn serve_tls(
    mut stream: TlsStream<TcpStream>,
    app: Arc<App>,
    http: &auto::Builder<TokioExecutor>,
    alt_svc: Option<HeaderValue>,
    mut stop: watch::Receiver<bool>,
) {
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        return serve_auto(stream, app, http, alt_svc, stop).await;
    }
    let first = tokio::select! {
        biased;
        () = stopped(&mut stop) => return,
        first = first_bytes(&mut stream) => first,
    };
    let Ok(first) = first else {
        return;
    };
    let ws = crate::ws::is_ws_opening(&first) == Some(true);
    let stream = Rewind::new(first, stream);
    if ws {
        crate::ws::serve_ws(stream, app, stop).await;
    } else {
        serve_auto(stream, app, http, alt_svc, stop).await;
    }
}

/// The opening bytes of a stream, as many as tell a `GET /ws` request apart (at most 8), or
/// fewer when it ends first.
async fn first_bytes<S: AsyncRead + Unpin>(s: &mut S) -> std::io::Result<Vec<u8>> {
    let mut first = Vec::new();
    let mut chunk = [0u8; crate::ws::OPENING.len() + 1];
    while crate::ws::is_ws_opening(&first).is_none() {
        let room = chunk.len() - first.len();
        let n = s.read(&mut chunk[..room]).await?;
        if n == 0 {
            break;
        }
        first.extend_from_slice(&chunk[..n]);
    }
    Ok(first)
}

/// Serves one h2c connection until the client leaves or the server stops (then open streams
/// finish and the connection ends with GOAWAY).
pub(crate) async fn serve_h2c(
    stream: TcpStream,
    app: Arc<App>,
    h2: &http2::Builder<TokioExecutor>,
    mut stop: watch::Receiver<bool>,
) {
    let mut conn = h2.serve_connection(TokioIo::new(stream), Handler::new(app));
    tokio::select! {
        biased;
        _ = &mut conn => {}
        () = stopped(&mut stop) => {
            std::pin::Pin::new(&mut conn).graceful_shutdown();
            let _ = (&mut conn).await;
        }
    }
}

/// Serves a TLS or Unix-socket connection over HTTP/1.1 or HTTP/2 (a fault route only ends
/// its connection or stream: the misbehaviours need a raw TCP socket), every response with
/// `alt_svc` when given (TLS beside HTTP/3).
pub(crate) async fn serve_auto<I>(
    io: I,
    app: Arc<App>,
    http: &auto::Builder<TokioExecutor>,
    alt_svc: Option<HeaderValue>,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = http.serve_connection(TokioIo::new(io), Handler { app, alt_svc });
    tokio::pin!(conn);
    tokio::select! {
        biased;
        _ = &mut conn => {}
        () = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            let _ = (&mut conn).await;
        }
    }
}
