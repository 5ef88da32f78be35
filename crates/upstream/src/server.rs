//! Starting and stopping the backend. `Server::start` binds synchronously (so a busy port is an
//! immediate, typed error), then runs a tokio runtime on its own thread, so sync tests and the
//! sync CLI can use it. One task accepts; each connection gets its own task. Stopping stops
//! accepting, lets in-flight requests finish within the grace period, then drops the rest.
//! With TLS, HTTP/3 is served on the same port number over UDP (`http3.rs`) unless turned off.

use std::net::{SocketAddr, TcpListener as StdListener, UdpSocket};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::header::HeaderValue;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::conn;
use crate::h2::{self, Builders};
use crate::routes::{App, Options};
use crate::{DelaySpec, Hiccup, Stats, TlsIdentity, UpstreamError};

/// How the backend listens and answers. `Default` listens on 127.0.0.1:8080 with one worker
/// thread per core and no delay, default body or injected failures.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen; port 0 picks a free port (see `Server::local_addr`).
    pub listen: SocketAddr,
    /// Tokio worker threads; 1 runs a current-thread runtime.
    pub threads: usize,
    /// Delay before every answer unless the request sets its own (`/delay/..`, `delay=`).
    pub delay: Option<DelaySpec>,
    /// Body size of `/` instead of `hello world`.
    pub body_size: Option<u64>,
    /// Status of `/` instead of 200 (200..=599).
    pub status: Option<u16>,
    /// Fraction (0..=1) of ordinary (non-fault) answers replaced by a 500.
    pub fail_rate: f64,
    /// How long `shutdown` waits for in-flight requests before dropping them.
    pub grace: Duration,
    /// At most this many ordinary requests are served at once, server-wide; the others wait
    /// in arrival order (never rejected). A slot is held from before the delay until the
    /// response is produced, so with a fixed delay `d` the capacity is `n / d` requests per
    /// second. Fault routes, `/stats` and malformed-parameter 400s bypass it. `None`: no limit.
    pub max_concurrency: Option<usize>,
    /// A periodic server-wide stall (see [`Hiccup`]): ordinary answers due inside a window
    /// wait for its end. `?hiccup=` on a request replaces it for that request.
    pub hiccup: Option<Hiccup>,
    /// Keep working on requests whose client has gone, like Tomcat or Go's net/http: an
    /// answer that waits (for a slot, its delay or a stall) keeps its place in line and its
    /// slot until it is done, then is discarded and counted in
    /// [`Stats::abandoned_completed`]. So an overload leaves a backlog behind. `false` (the
    /// default): a request whose client leaves gives up its place at once.
    pub keep_abandoned: bool,
    /// Serve at most this many connections at once, like a thread-per-connection server or a
    /// blocking servlet pool: each accepted connection holds a worker for its whole life, and
    /// the others wait unserved in the accept queue until one closes. The HTTP/3 listener has
    /// as many workers of its own for its QUIC connections. `None`: no limit.
    pub max_served_conns: Option<usize>,
    /// Serve HTTPS on `listen` with this identity (fault routes then only end the connection).
    pub tls: Option<TlsIdentity>,
    /// With `tls`: also serve HTTP/3 (QUIC) over UDP on the port number of `listen`, announced
    /// by `Alt-Svc: h3=":PORT"` on the TLS responses. On by default (as Caddy does); without
    /// `tls` nothing listens on UDP whatever this says.
    pub h3: bool,
    /// Also listen on this Unix socket (plain HTTP; a stale socket file is replaced).
    pub unix: Option<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            threads: cores,
            delay: None,
            body_size: None,
            status: None,
            fail_rate: 0.0,
            grace: Duration::from_secs(5),
            max_concurrency: None,
            hiccup: None,
            keep_abandoned: false,
            max_served_conns: None,
            tls: None,
            h3: true,
            unix: None,
        }
    }
}

impl ServerConfig {
    /// Loopback, a free port, one thread: what tests and `loadbench demo` want.
    pub fn ephemeral() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 1,
            ..Self::default()
        }
    }

    fn validate(&self) -> Result<(), UpstreamError> {
        self.settings()
            .check()
            .map_err(|e| UpstreamError::InvalidConfig(e.problem))
    }

    fn options(&self) -> Options {
        Options {
            delay: self.delay,
            body_size: self.body_size,
            status: self.status,
            fail_rate: self.fail_rate,
            max_concurrency: self.max_concurrency,
            hiccup: self.hiccup,
            keep_abandoned: self.keep_abandoned,
        }
    }
}

/// A running backend. Dropping it shuts it down too, like `shutdown`.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    /// The UDP address HTTP/3 is served on (the port of `addr`), `None` without it.
    h3_addr: Option<SocketAddr>,
    /// The certificate served over TLS (PEM), to trust as a client's `--cacert`.
    tls_cert_pem: Option<String>,
    app: Arc<App>,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `cfg.listen` and starts serving on background threads.
    pub fn start(cfg: ServerConfig) -> Result<Server, UpstreamError> {
        cfg.validate()?;
        let tls = cfg.tls.as_ref().map(TlsIdentity::acceptor).transpose()?;
        let quic = (cfg.tls.as_ref().filter(|_| cfg.h3))
            .map(TlsIdentity::quic)
            .transpose()?;
        let (listener, udp) = bind_tcp_and_udp(cfg.listen, quic.is_some())?;
        let addr = listener.local_addr().map_err(UpstreamError::Runtime)?;
        let h3_addr = udp.as_ref().map(|_| addr);
        let tls = tls.map(|acceptor| Tls {
            acceptor,
            alt_svc: h3_addr.map(|a| crate::http3::alt_svc(a.port())),
        });
        let unix = cfg.unix.as_deref().map(bind_unix).transpose()?;
        let runtime = runtime(cfg.threads).map_err(UpstreamError::Runtime)?;
        let app = Arc::new(App::new(cfg.options()));
        let (stop, stop_rx) = watch::channel(false);
        let shared = Arc::clone(&app);
        let thread = std::thread::Builder::new()
            .name("upstream".into())
            .spawn(move || {
                let listeners = Listeners {
                    tcp: listener,
                    tls,
                    h3: udp.zip(quic),
                    unix,
                };
                let limits = (cfg.grace, cfg.max_served_conns);
                run(runtime, listeners, shared, stop_rx, limits)
            })
            .map_err(UpstreamError::Runtime)?;
        Ok(Server {
            addr,
            h3_addr,
            tls_cert_pem: cfg.tls.map(|t| t.cert_pem),
            app,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address (with the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The UDP address HTTP/3 is served on (the port of [`Server::local_addr`]), `None` without
    /// TLS or with `h3` off.
    pub fn h3_addr(&self) -> Option<SocketAddr> {
        self.h3_addr
    }

    /// The certificate served over TLS (PEM), `None` without TLS.
    pub fn tls_cert_pem(&self) -> Option<&str> {
        self.tls_cert_pem.as_deref()
    }

    /// Requests served so far, per route pattern, and those in service now.
    pub fn stats(&self) -> Stats {
        self.app.snapshot()
    }

    /// The first requests `/echo` received (at most [`crate::ECHOED_KEPT`]), in arrival order:
    /// what a test checks the client sent.
    pub fn echoed(&self) -> Vec<crate::Echoed> {
        self.app.echoed.snapshot()
    }

    /// What the login routes saw: every kept token (the newest [`crate::TOKENS_KEPT`]) with
    /// its user and its authorised `/me` requests, and the count of 401s from `/me`.
    pub fn logins(&self) -> crate::Logins {
        self.app.sessions.snapshot()
    }

    /// Zeroes the statistics and returns what they held (same as `POST /stats/reset`).
    pub fn reset_stats(&self) -> Stats {
        self.app.reset()
    }

    /// When the server started: hiccup windows open at this instant and every period after.
    pub fn started_at(&self) -> std::time::Instant {
        self.app.epoch.into_std()
    }

    /// Stops accepting, waits up to the grace period for in-flight requests, then returns.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// A listening socket with a deep backlog; `SO_REUSEADDR` lets a restart reuse a port whose
/// old connections linger in TIME_WAIT, while a live listener still yields `AddrInUse`.
fn bind(addr: SocketAddr) -> Result<StdListener, UpstreamError> {
    let setup = || -> std::io::Result<Socket> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        Ok(socket)
    };
    let socket = setup().map_err(UpstreamError::Runtime)?;
    socket
        .bind(&addr.into())
        .and_then(|()| socket.listen(1024))
        .map_err(|e| UpstreamError::from_bind(addr, e))?;
    Ok(socket.into())
}

/// The TCP listener, and with `udp` a UDP socket on the same port number for HTTP/3. With port
/// 0 the port the kernel picked for TCP may be taken on UDP: another is picked then (the
/// listeners that could not be used are kept until the end, so the kernel does not give their
/// port again), a few times.
fn bind_tcp_and_udp(
    addr: SocketAddr,
    udp: bool,
) -> Result<(StdListener, Option<UdpSocket>), UpstreamError> {
    const TRIES: usize = 8;
    let mut unusable = Vec::new();
    loop {
        let tcp = bind(addr)?;
        if !udp {
            return Ok((tcp, None));
        }
        let bound = tcp.local_addr().map_err(UpstreamError::Runtime)?;
        let socket = UdpSocket::bind(bound).and_then(|s| s.set_nonblocking(true).map(|()| s));
        match socket {
            Ok(socket) => return Ok((tcp, Some(socket))),
            Err(e)
                if addr.port() == 0
                    && e.kind() == std::io::ErrorKind::AddrInUse
                    && unusable.len() < TRIES =>
            {
                unusable.push(tcp);
            }
            Err(cause) => return Err(UpstreamError::H3Listen { addr: bound, cause }),
        }
    }
}

/// A Unix listening socket; a stale socket file left by an earlier server is replaced, any
/// other file at the path is kept and refused.
fn bind_unix(path: &std::path::Path) -> Result<StdUnixListener, UpstreamError> {
    use std::os::unix::fs::FileTypeExt;
    let fail = |cause| UpstreamError::Unix {
        path: path.display().to_string(),
        cause,
    };
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        std::fs::remove_file(path).map_err(fail)?;
    }
    let listener = StdUnixListener::bind(path).map_err(fail)?;
    listener.set_nonblocking(true).map_err(fail)?;
    Ok(listener)
}

fn runtime(threads: usize) -> std::io::Result<Runtime> {
    let mut builder = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    };
    builder.enable_all().thread_name("upstream-worker").build()
}

/// What the server listens on: TCP (with TLS when an acceptor is given), UDP for HTTP/3 (with
/// its QUIC configuration) and a Unix socket.
struct Listeners {
    tcp: StdListener,
    tls: Option<Tls>,
    h3: Option<(UdpSocket, quinn::ServerConfig)>,
    unix: Option<StdUnixListener>,
}

/// TLS on the TCP listener: the handshake, and the `Alt-Svc` its responses carry when HTTP/3
/// is served beside it.
#[derive(Clone)]
struct Tls {
    acceptor: TlsAcceptor,
    alt_svc: Option<HeaderValue>,
}

/// The body of the server thread.
fn run(
    runtime: Runtime,
    listeners: Listeners,
    app: Arc<App>,
    stop: watch::Receiver<bool>,
    (grace, max_served_conns): (Duration, Option<usize>),
) {
    // The TCP and the QUIC listener each serve at most `max_served_conns` connections: a
    // listener waiting to accept holds a worker, so a shared pool of one would starve the other.
    let served = || max_served_conns.map(|n| Arc::new(Semaphore::new(n)));
    runtime.block_on(async move {
        let unix = listeners
            .unix
            .map(|l| tokio::spawn(unix_accept_loop(l, Arc::clone(&app), stop.clone(), grace)));
        let h3 = listeners.h3.map(|(socket, quic)| {
            let (app, stop) = (Arc::clone(&app), stop.clone());
            tokio::spawn(crate::http3::accept_loop(
                socket,
                quic,
                app,
                stop,
                grace,
                served(),
            ))
        });
        let tcp = (listeners.tcp, listeners.tls);
        let task = tokio::spawn(accept_loop(tcp, app, stop, grace, served()));
        let _ = task.await;
        for other in [unix, h3].into_iter().flatten() {
            let _ = other.await;
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
}

async fn accept_loop(
    (listener, tls): (StdListener, Option<Tls>),
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    served: Option<Arc<Semaphore>>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    let http = Arc::new(Builders::new());
    // Every connection task holds a sender; `recv` yields `None` once all have finished.
    let (alive, mut all_done) = mpsc::channel::<()>(1);
    loop {
        // With a connection limit, a worker is taken before accepting, so connections beyond
        // it stay in the kernel's accept queue (their requests sent, never read).
        let accepted = tokio::select! {
            biased;
            () = conn::stopped(&mut stop) => break,
            accepted = accept(&listener, served.as_ref()) => accepted,
        };
        match accepted {
            Ok((stream, worker)) => {
                let held = (alive.clone(), worker);
                match &tls {
                    None => spawn_connection(stream, &app, &http, &stop, held),
                    Some(t) => spawn_tls_connection(stream, t, &app, &http, &stop, held),
                }
            }
            // Out of file descriptors or similar: back off instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    drop((listener, alive));
    let _ = tokio::time::timeout(grace, all_done.recv()).await;
}

/// Takes a worker (when connections are limited), then accepts the next connection.
async fn accept(
    listener: &TcpListener,
    served: Option<&Arc<Semaphore>>,
) -> std::io::Result<(TcpStream, Option<OwnedSemaphorePermit>)> {
    let worker = take_worker(served).await?;
    let (stream, _) = listener.accept().await?;
    Ok((stream, worker))
}

/// A worker for the next connection when connections are limited (waiting for one to be free),
/// `None` when they are not.
pub(crate) async fn take_worker(
    served: Option<&Arc<Semaphore>>,
) -> std::io::Result<Option<OwnedSemaphorePermit>> {
    match served {
        Some(s) => (Arc::clone(s).acquire_owned().await)
            .map(Some)
            .map_err(std::io::Error::other),
        None => Ok(None),
    }
}

/// What a connection task holds until it ends: its place among the live connections, and
/// its worker when connections are limited.
pub(crate) type Held = (mpsc::Sender<()>, Option<OwnedSemaphorePermit>);

fn spawn_connection(
    stream: TcpStream,
    app: &Arc<App>,
    http: &Arc<Builders>,
    stop: &watch::Receiver<bool>,
    alive: Held,
) {
    let _ = stream.set_nodelay(true);
    let (app, http, stop) = (Arc::clone(app), Arc::clone(http), stop.clone());
    tokio::spawn(async move {
        h2::serve_tcp(stream, app, &http, stop).await;
        drop(alive);
    });
}

/// A TLS connection: the handshake, then HTTP/1.1, HTTP/2 (ALPN `h2`) or the WebSocket echo
/// (`GET /ws`) over it; a failed handshake just closes it.
fn spawn_tls_connection(
    stream: TcpStream,
    tls: &Tls,
    app: &Arc<App>,
    http: &Arc<Builders>,
    stop: &watch::Receiver<bool>,
    alive: Held,
) {
    let _ = stream.set_nodelay(true);
    let (tls, app, http, stop) = (tls.clone(), Arc::clone(app), Arc::clone(http), stop.clone());
    tokio::spawn(async move {
        if let Ok(stream) = tls.acceptor.accept(stream).await {
            h2::serve_tls(stream, app, &http.auto, tls.alt_svc, stop).await;
        }
        drop(alive);
    });
}

/// Accepts on the Unix socket until the server stops, then gives its connections the grace
/// period, like the TCP loop.
async fn unix_accept_loop(
    listener: StdUnixListener,
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
) {
    let Ok(listener) = UnixListener::from_std(listener) else {
        return;
    };
    let http = Arc::new(Builders::new());
    let (alive, mut all_done) = mpsc::channel::<()>(1);
    loop {
        let accepted = tokio::select! {
            biased;
            () = conn::stopped(&mut stop) => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let (app, http, stop, held) = (
            Arc::clone(&app),
            Arc::clone(&http),
            stop.clone(),
            alive.clone(),
        );
        tokio::spawn(async move {
            h2::serve_auto(stream, app, &http.auto, None, stop).await;
            drop(held);
        });
    }
    drop((listener, alive));
    let _ = tokio::time::timeout(grace, all_done.recv()).await;
}

/// Runs the backend until SIGTERM or Ctrl-C, then shuts down gracefully. Prints
/// `listening on http://ADDR` (or `https://`) to stderr once the signal handlers are in place,
/// then `listening on udp:ADDR (HTTP/3)` and `listening on unix:PATH` when it serves them.
pub fn run_until_signal(cfg: ServerConfig) -> Result<(), UpstreamError> {
    use tokio::signal::unix::{signal, SignalKind};
    let unix = cfg.unix.clone();
    let server = Server::start(cfg)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(UpstreamError::Runtime)?;
    runtime.block_on(async {
        let mut term = signal(SignalKind::terminate()).map_err(UpstreamError::Runtime)?;
        let mut interrupt = signal(SignalKind::interrupt()).map_err(UpstreamError::Runtime)?;
        let scheme = if server.tls_cert_pem().is_some() {
            "https"
        } else {
            "http"
        };
        let mut listening = format!("listening on {scheme}://{}\n", server.local_addr());
        if let Some(addr) = server.h3_addr() {
            listening.push_str(&format!("listening on udp:{addr} (HTTP/3)\n"));
        }
        if let Some(path) = &unix {
            listening.push_str(&format!("listening on unix:{}\n", path.display()));
        }
        // One write: a parent that reads the first line and closes the pipe never makes a
        // later line fail (a failed `eprintln!` panics).
        eprint!("{listening}");
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
        Ok::<(), UpstreamError>(())
    })?;
    server.shutdown();
    Ok(())
}
