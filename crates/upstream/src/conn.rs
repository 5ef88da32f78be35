//! One accepted TCP connection. hyper serves it (keep-alive, pipelining) until a fault route
//! needs the raw socket: the service then fails with a `Fault` as its error, which ends hyper's
//! connection future without touching the socket; the driver takes the socket back with
//! `into_parts` and misbehaves on it (RST, FIN, stall, garbage, short body). Normal requests
//! pay nothing for this: the side channel is the error path hyper already has.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALT_SVC};
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::body::ResponseBody;
use crate::routes::{App, Reply};

const MALFORMED: &[u8] = b"HTTX/9 abc\r\n\r\n";
const SHORT: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\n0123456789";

/// A misbehaviour asked for by a `/fault/...` route, carried out on the raw socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fault {
    /// TCP RST instead of a response.
    #[error("fault: reset")]
    Reset,
    /// FIN before any response byte.
    #[error("fault: close")]
    Close,
    /// No answer until the client or the server gives up.
    #[error("fault: stall")]
    Stall,
    /// An invalid status line, then close.
    #[error("fault: malformed")]
    Malformed,
    /// `Content-Length: 100` with 10 body bytes, then close.
    #[error("fault: short")]
    Short,
}

/// The hyper service of one connection: a handle on the shared app, and the `Alt-Svc` header
/// its responses carry (TLS connections while HTTP/3 is served beside them).
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) app: Arc<App>,
    pub(crate) alt_svc: Option<HeaderValue>,
}

impl Handler {
    /// A connection's service without `Alt-Svc`.
    pub(crate) fn new(app: Arc<App>) -> Handler {
        Handler { app, alt_svc: None }
    }
}

impl Service<Request<Incoming>> for Handler {
    type Response = Response<ResponseBody>;
    type Error = Fault;
    type Future = Reply;

    fn call(&self, req: Request<Incoming>) -> Reply {
        let reply = self.app.handle(req);
        match &self.alt_svc {
            None => reply,
            Some(value) => reply.with_header(ALT_SVC, value.clone()),
        }
    }
}

/// The hyper settings every connection uses.
pub(crate) fn http_builder() -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder.keep_alive(true).pipeline_flush(true);
    builder
}

/// Serves one connection until the client leaves, a fault ends it, or the server stops
/// (then in-flight requests finish and idle keep-alive connections close).
pub(crate) async fn serve(
    stream: TcpStream,
    app: Arc<App>,
    http: &http1::Builder,
    mut stop: watch::Receiver<bool>,
) {
    let mut conn = http.serve_connection(TokioIo::new(stream), Handler::new(app));
    let result = tokio::select! {
        biased;
        result = &mut conn => result,
        () = stopped(&mut stop) => {
            std::pin::Pin::new(&mut conn).graceful_shutdown();
            (&mut conn).await
        }
    };
    let fault = result
        .err()
        .and_then(|e| e.source()?.downcast_ref::<Fault>().copied());
    if let Some(fault) = fault {
        let stream = conn.into_parts().io.into_inner();
        misbehave(fault, stream, stop).await;
    }
}

/// Resolves once the server is stopping (or gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|&stopping| stopping).await;
}

async fn misbehave(fault: Fault, stream: TcpStream, stop: watch::Receiver<bool>) {
    match fault {
        Fault::Reset => reset(stream),
        Fault::Close => close(stream).await,
        Fault::Stall => stall(stream, stop).await,
        Fault::Malformed => write_then_close(stream, MALFORMED).await,
        Fault::Short => write_then_close(stream, SHORT).await,
    }
}

/// `SO_LINGER` 0 makes `close` discard the connection with an RST (and never block).
fn reset(stream: TcpStream) {
    let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
    drop(stream);
}

async fn close(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
}

async fn write_then_close(mut stream: TcpStream, bytes: &[u8]) {
    if stream.write_all(bytes).await.is_ok() {
        close(stream).await;
    }
}

/// Holds the connection, discarding input, until the client closes it or the server stops,
/// so a stalled connection never outlives both.
async fn stall(mut stream: TcpStream, mut stop: watch::Receiver<bool>) {
    let mut sink = [0u8; 1024];
    let client_gone = async { while let Ok(1..) = stream.read(&mut sink).await {} };
    tokio::select! {
        () = client_gone => {}
        () = stopped(&mut stop) => {}
    }
}
