//! HTTP/3 beside TLS: with a TLS identity (and `ServerConfig::h3`, on by default) the backend
//! also listens on UDP, on the port number of its TCP listener, and answers HTTP/3 over QUIC
//! (quinn, rustls with the ring provider, ALPN `h3`; hyperium's h3 for the framing). The TLS
//! responses over TCP announce it with `Alt-Svc: h3=":PORT"`, as Caddy does.
//!
//! Every request goes through the one [`App::handle`] that HTTP/1.1 and HTTP/2 use: the h3
//! request becomes an `http::Request` (version `HTTP/3.0`) whose body reads the QUIC stream,
//! and the response's body frames are sent back as they come (trailers too, so the gRPC echo
//! answers over HTTP/3 as over HTTP/2). So `/stats` counts h3 requests per route, and under
//! `protocols.h3`. What differs from HTTP/2: `/fault/close` closes the whole QUIC connection
//! with `H3_NO_ERROR` (over HTTP/1.1 it ends the TCP connection), `/fault/stall` leaves its
//! stream open without an answer, and every other fault route (`/fault/reset`, `malformed`,
//! `short`) resets its stream with `H3_INTERNAL_ERROR`,
//! as HTTP/2 resets its stream; a `code=` query (`?code=0x10c`) picks another code for either,
//! so a client's count by code can be checked; `/ws` answers 404, as over HTTP/2 (the
//! WebSocket echo needs an HTTP/1.1 upgrade).
//!
//! A request is dropped at once when its connection closes; a client that only cancels its
//! stream has its answer produced and discarded (the server sees that only when it sends).

use std::net::UdpSocket;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::server::{RequestResolver, RequestStream};
use hyper::body::{Body, Frame};
use hyper::header::{HeaderValue, CONTENT_LENGTH};
use hyper::{Method, Response, StatusCode};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::body::ResponseBody;
use crate::conn::{stopped, Fault};
use crate::routes::App;
use crate::server::{take_worker, Held};

/// Streams (requests) one connection may have open at once, as over HTTP/2 (`h2.rs`).
pub(crate) const MAX_STREAMS: u32 = 1024;

/// The code of a connection closed without error (RFC 9114, 8.1).
const H3_NO_ERROR: quinn::VarInt = quinn::VarInt::from_u32(0x100);

/// How long a connection stays open for its client to read the last answers once the server
/// stops (an idle HTTP/3 client does not close on GOAWAY, so this is the usual wait).
const LINGER: Duration = Duration::from_millis(250);

/// How long closing connections get to tell their clients once the grace period is over.
const CLOSE_WAIT: Duration = Duration::from_millis(100);

type Resolver = RequestResolver<h3_quinn::Connection, Bytes>;
type SendHalf = RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;
type RecvHalf = RequestStream<h3_quinn::RecvStream, Bytes>;

/// The `Alt-Svc` value the TLS listener's responses carry: HTTP/3 on the same port, for 30 days
/// (what Caddy sends).
pub(crate) fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::from_str(&format!("h3=\":{port}\"; ma=2592000")).expect("ASCII")
}

/// Accepts QUIC connections on `socket` until the server stops, then gives them the grace
/// period to finish their requests (after a GOAWAY) and closes what is left. With a limit on
/// served connections (`served`), a connection takes a worker before it is accepted, like the
/// TCP listener's.
pub(crate) async fn accept_loop(
    socket: UdpSocket,
    config: quinn::ServerConfig,
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    served: Option<Arc<Semaphore>>,
) {
    let runtime = Arc::new(quinn::TokioRuntime);
    let endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        runtime,
    );
    let Ok(endpoint) = endpoint else {
        return;
    };
    // Every connection and request task holds a sender; `recv` yields `None` once all ended.
    let (alive, mut all_done) = mpsc::channel::<()>(1);
    loop {
        let accepted = tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            accepted = async {
                let worker = take_worker(served.as_ref()).await;
                (endpoint.accept().await, worker)
            } => accepted,
        };
        let (Some(incoming), Ok(worker)) = accepted else {
            break;
        };
        let (app, stop, held) = (Arc::clone(&app), stop.clone(), (alive.clone(), worker));
        tokio::spawn(serve_connection(incoming, app, stop, held));
    }
    drop(alive);
    let _ = tokio::time::timeout(grace, all_done.recv()).await;
    endpoint.close(H3_NO_ERROR, b"");
    let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
}

/// One QUIC connection: its handshake, then each request stream in a task of its own, until the
/// client leaves or the server stops (then GOAWAY, the requests in flight finish, and the
/// connection closes).
async fn serve_connection(
    incoming: quinn::Incoming,
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
    held: Held,
) {
    let quic = tokio::select! {
        biased;
        () = stopped(&mut stop) => return,
        quic = incoming => quic,
    };
    let Ok(quic) = quic else {
        return;
    };
    let built = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(quic.clone()))
        .await;
    let Ok(mut conn) = built else {
        return;
    };
    // Every request task of this connection holds a sender; `recv` yields `None` once all ended.
    let (in_flight, mut all_answered) = mpsc::channel::<()>(1);
    let stopping = loop {
        let next = tokio::select! {
            biased;
            () = stopped(&mut stop) => break true,
            next = conn.accept() => next,
        };
        let Ok(Some(resolver)) = next else {
            break false;
        };
        let (app, quic, in_flight) = (Arc::clone(&app), quic.clone(), in_flight.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = answer(resolver, app, &quic) => {}
                // The client has gone: its answers are dropped, as over TCP.
                _ = quic.closed() => {}
            }
            drop(in_flight);
        });
    };
    if stopping {
        // GOAWAY: no new request on this connection.
        let _ = conn.shutdown(0).await;
    }
    drop(in_flight);
    let _ = all_answered.recv().await;
    if stopping {
        // Closing discards what the client has not read yet: give it a moment to read the
        // last answers (or to close first, seeing the GOAWAY).
        let _ = tokio::time::timeout(LINGER, quic.closed()).await;
    }
    quic.close(H3_NO_ERROR, b"");
    drop(held);
}

/// Reads one request's head, answers it through [`App::handle`], and sends the response back.
async fn answer(resolver: Resolver, app: Arc<App>, quic: &quinn::Connection) {
    let Ok((req, stream)) = resolver.resolve_request().await else {
        return;
    };
    let (mut send, recv) = stream.split();
    let head = req.method() == Method::HEAD;
    let code = fault_code(req.uri().query());
    let req = req.map(|()| RequestBody(recv));
    match app.handle(req).await {
        Ok(response) => {
            let _ = respond(&mut send, response, head).await;
        }
        // `/fault/close` ends the whole connection, as it ends the TCP connection over
        // HTTP/1.1 (with `H3_NO_ERROR` unless `code=` says otherwise).
        Err(Fault::Close) => {
            let code = code.and_then(|c| quinn::VarInt::from_u64(c).ok());
            quic.close(code.unwrap_or(H3_NO_ERROR), b"fault: close");
        }
        // `/fault/stall` never answers: its stream stays open until the client gives up on
        // it (then its connection's end, or the server's stop, ends this task).
        Err(Fault::Stall) => std::future::pending().await,
        // Every other fault route resets its stream, as over HTTP/2 (`H3_INTERNAL_ERROR`
        // unless `code=` says otherwise).
        Err(_) => send.stop_stream(code.map_or(Code::H3_INTERNAL_ERROR, Code::from)),
    }
}

/// The error code a fault route's `code=` query asks for (`code=0x10c` or `code=268`), if
/// any; a code QUIC cannot carry (2^62 or more) is ignored.
fn fault_code(query: Option<&str>) -> Option<u64> {
    let value = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("code="))?;
    let code = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => value.parse().ok()?,
    };
    (code < 1 << 62).then_some(code)
}

/// Sends the response's head (with `content-length` when its body's size is known, as hyper
/// does), then its body frames as the body yields them (none for HEAD), then its trailers.
async fn respond(
    send: &mut SendHalf,
    response: Response<ResponseBody>,
    head: bool,
) -> Result<(), h3::error::StreamError> {
    let (mut parts, mut body) = response.into_parts();
    let bodiless = matches!(
        parts.status,
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
    );
    if let (Some(len), false) = (body.size_hint().exact(), bodiless) {
        parts.headers.entry(CONTENT_LENGTH).or_insert(len.into());
    }
    send.send_response(Response::from_parts(parts, ())).await?;
    if head || bodiless {
        return send.finish().await;
    }
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(frame) = frame;
        match frame.into_data() {
            Ok(data) => send.send_data(data).await?,
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    send.send_trailers(trailers).await?;
                }
            }
        }
    }
    send.finish().await
}

/// An HTTP/3 request's body, read by the routes (`/echo`, `/login`, gRPC) as hyper's.
struct RequestBody(RecvHalf);

impl Body for RequestBody {
    type Data = Bytes;
    type Error = h3::error::StreamError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match std::task::ready!(self.get_mut().0.poll_recv_data(cx)) {
            Ok(Some(mut data)) => {
                let bytes = data.copy_to_bytes(data.remaining());
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }
}
