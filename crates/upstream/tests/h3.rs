//! HTTP/3 beside TLS, checked with a real HTTP/3 client (quinn and hyperium's h3) that trusts
//! the server's generated certificate: the routes answer over h3 as over HTTP/1.1 and HTTP/2,
//! `/stats` counts every h3 request exactly (per route and under `protocols.h3`), the TLS
//! listener announces h3 with `Alt-Svc`, and without TLS (or with `h3` off) no UDP socket is
//! bound.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use hyper::header::HeaderMap;
use hyper::{Method, Request};
use loadbench_upstream::{Server, ServerConfig, TlsIdentity, UpstreamError};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every request and connection of these tests ends within this, or the test fails.
const TIMEOUT: Duration = Duration::from_secs(10);

fn tls_server(h3: bool) -> Server {
    Server::start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        h3,
        ..ServerConfig::ephemeral()
    })
    .unwrap()
}

/// A rustls client configuration trusting only the server's certificate, with `alpn`.
fn trusting(server: &Server, alpn: &[u8]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let pem = server.tls_cert_pem().expect("the server serves TLS");
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config
}

/// What an HTTP/3 request got back.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    trailers: Option<HeaderMap>,
}

impl Answer {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// One HTTP/3 connection to the server.
struct H3 {
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    base: String,
    _endpoint: quinn::Endpoint,
}

impl H3 {
    async fn connect(server: &Server) -> H3 {
        Self::connect_quic(server).await.0
    }

    /// A connection, and its QUIC handle (to close it).
    async fn connect_quic(server: &Server) -> (H3, quinn::Connection) {
        let addr = server.h3_addr().expect("the server serves HTTP/3");
        assert_eq!(addr, server.local_addr(), "h3 is on the TLS port");
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(trusting(server, b"h3"));
        let config = quinn::ClientConfig::new(Arc::new(crypto.unwrap()));
        let mut endpoint = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        endpoint.set_default_client_config(config);
        let connecting = endpoint.connect(addr, "localhost").unwrap();
        let quic = tokio::time::timeout(TIMEOUT, connecting).await;
        let quic = quic.expect("the handshake ends in time").unwrap();
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .unwrap();
        tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        let h3 = H3 {
            send,
            base: format!("https://localhost:{}", addr.port()),
            _endpoint: endpoint,
        };
        (h3, quic)
    }

    async fn get(&self, path: &str) -> Answer {
        self.request(Method::GET, path, &[], None).await.unwrap()
    }

    /// One request on a stream of its own (a clone of the sender: requests may run at once,
    /// as tasks of their own).
    fn request(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Bytes>,
    ) -> impl std::future::Future<Output = Result<Answer, h3::error::StreamError>> + Send + 'static
    {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let mut send = self.send.clone();
        let exchange = async move {
            let mut stream = send.send_request(req.body(()).unwrap()).await?;
            if let Some(body) = body {
                stream.send_data(body).await?;
            }
            stream.finish().await?;
            let response = stream.recv_response().await?;
            let mut body = Vec::new();
            while let Some(mut chunk) = stream.recv_data().await? {
                while chunk.has_remaining() {
                    let part = chunk.chunk();
                    body.extend_from_slice(part);
                    let n = part.len();
                    chunk.advance(n);
                }
            }
            let trailers = stream.recv_trailers().await?;
            Ok(Answer {
                status: response.status().as_u16(),
                headers: response.headers().clone(),
                body,
                trailers,
            })
        };
        async move {
            tokio::time::timeout(TIMEOUT, exchange)
                .await
                .expect("the answer comes in time")
        }
    }
}

/// 50 requests, ten at a time on one connection, to `/`, a sized route and a status route:
/// each answer's status and length are right, and both `/stats` (read over h3 itself) and
/// `Server::stats` count exactly those, all under `h3`.
#[tokio::test]
async fn h3_answers_the_routes_and_stats_count_them_exactly() {
    let server = tls_server(true);
    let client = H3::connect(&server).await;
    // (path, status, body length), the rounds of 10 requests take them in turn.
    let routes = [
        ("/", 200, 11),
        ("/bytes/100KiB", 200, 102_400),
        ("/status/503", 503, "Service Unavailable".len()),
        ("/chunked/10k", 200, 10_000),
        ("/json", 200, 38),
    ];
    const REQUESTS: usize = 50;
    let mut tasks = tokio::task::JoinSet::new();
    for round in 0..REQUESTS / 10 {
        for i in 0..10 {
            let (path, status, len) = routes[(round * 10 + i) % routes.len()];
            let answer = client.request(Method::GET, path, &[], None);
            tasks.spawn(async move { (path, status, len, answer.await.unwrap()) });
        }
        while let Some(done) = tasks.join_next().await {
            let (path, status, len, answer) = done.unwrap();
            assert_eq!(answer.status, status, "{path}");
            assert_eq!(answer.body.len(), len, "{path}");
            if path == "/bytes/100KiB" {
                assert_eq!(answer.headers["content-length"], "102400");
            }
            if path == "/chunked/10k" {
                assert!(answer.headers.get("content-length").is_none(), "{path}");
            }
        }
    }
    let stats = client.get("/stats").await;
    assert_eq!(stats.status, 200);
    let json = stats.json();
    let each = REQUESTS as u64 / routes.len() as u64;
    for (path, route) in [
        ("/", "/"),
        ("/bytes", "/bytes"),
        ("/status", "/status"),
        ("/chunked", "/chunked"),
        ("/json", "/json"),
    ] {
        assert_eq!(json["routes"][route], each, "{path}: {json}");
    }
    assert_eq!(json["total"], REQUESTS, "{json}");
    let protocols = serde_json::json!({"http1": 0, "h2": 0, "h3": REQUESTS});
    assert_eq!(json["protocols"], protocols, "{json}");
    let s = server.stats();
    assert_eq!((s.total, s.h3, s.h2), (REQUESTS as u64, REQUESTS as u64, 0));
}

/// The routes that read the request, or answer with trailers, or misbehave, over h3: `/echo`
/// sees the body and the version, `POST /login` then `/me` authorise, HEAD gets the length
/// and no body, the gRPC echo streams its messages and ends with `grpc-status: 0` in the
/// trailers, a fault route resets only its stream, `/ws` is a 404; all counted.
#[tokio::test]
async fn h3_reads_bodies_sends_trailers_and_resets_faulted_streams() {
    let server = tls_server(true);
    let client = H3::connect(&server).await;

    let echo = client
        .request(Method::POST, "/echo?x=1", &[], Some(Bytes::from("ping")))
        .await
        .unwrap();
    let json = echo.json();
    assert_eq!((echo.status, &json["version"]), (200, &"HTTP/3.0".into()));
    assert_eq!(
        (&json["body"], &json["query"]),
        (&"ping".into(), &"x=1".into())
    );

    let login = Bytes::from(r#"{"user":"quic"}"#);
    let headers = [("content-type", "application/json")];
    let login = client.request(Method::POST, "/login", &headers, Some(login));
    let token = login.await.unwrap().json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let bearer = format!("Bearer {token}");
    let me = client.request(Method::GET, "/me", &[("authorization", &bearer)], None);
    let me = me.await.unwrap();
    assert_eq!(me.json()["user"], "quic");

    let head = client.request(Method::HEAD, "/bytes/5000", &[], None).await;
    let head = head.unwrap();
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(head.headers["content-length"], "5000");

    let message = Bytes::from_static(&[0, 0, 0, 0, 2, 8, 1]);
    let grpc_headers = [
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("x-stream-count", "3"),
    ];
    let call = client.request(Method::POST, "/echo.Echo/Say", &grpc_headers, Some(message));
    let call = call.await.unwrap();
    assert_eq!((call.status, call.body.len()), (200, 21));
    let trailers = call.trailers.expect("the gRPC status comes in trailers");
    assert_eq!(trailers["grpc-status"], "0");

    let reset = client.request(Method::GET, "/fault/reset", &[], None).await;
    assert!(reset.is_err(), "the stream is reset: {reset:?}");
    assert_eq!(client.get("/ws").await.status, 404);
    assert_eq!(client.get("/").await.status, 200, "the connection lives on");

    let s = server.stats();
    let counted = [
        ("/echo", 1),
        ("/login", 1),
        ("/me", 1),
        ("/bytes", 1),
        ("grpc", 1),
        ("/fault/reset", 1),
        ("unmatched", 1),
        ("/", 1),
    ];
    for (route, n) in counted {
        assert_eq!(s.route(route), n, "{route}: {s:?}");
    }
    assert_eq!((s.total, s.h3), (8, 8));
}

/// One HTTP/1.1 GET over TLS to the server's TCP port: its response head.
async fn tls_tcp_head(server: &Server) -> String {
    let config = trusting(server, b"http/1.1");
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.local_addr()).await;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp.unwrap()).await.unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    tls.write_all(request).await.unwrap();
    let mut response = String::new();
    let read = tls.read_to_string(&mut response);
    let _ = tokio::time::timeout(TIMEOUT, read).await.expect("in time");
    let head = response.split("\r\n\r\n").next().unwrap_or_default();
    head.to_ascii_lowercase()
}

/// TLS over TCP announces h3 on its own port with `Alt-Svc`; with `h3` off it does not, and
/// the UDP port is free.
#[tokio::test]
async fn tls_announces_h3_with_alt_svc_unless_turned_off() {
    let server = tls_server(true);
    let port = server.local_addr().port();
    let head = tls_tcp_head(&server).await;
    let alt_svc = format!("alt-svc: h3=\":{port}\"");
    assert!(head.contains(&alt_svc), "{head}");
    assert!(
        UdpSocket::bind(server.local_addr()).is_err(),
        "h3 holds UDP"
    );

    let off = tls_server(false);
    assert_eq!(off.h3_addr(), None);
    let head = tls_tcp_head(&off).await;
    assert!(
        head.starts_with("http/1.1 200") && !head.contains("alt-svc"),
        "{head}"
    );
    UdpSocket::bind(off.local_addr()).expect("no UDP socket on the port without h3");
}

/// Without TLS, h3 (on by default) serves nothing: no UDP socket is bound, no `Alt-Svc` sent.
#[test]
fn without_tls_no_udp_socket_is_bound() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    assert_eq!(server.h3_addr(), None);
    UdpSocket::bind(server.local_addr()).expect("the UDP port is free");
    let mut tcp = std::net::TcpStream::connect(server.local_addr()).unwrap();
    tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
    use std::io::{Read, Write};
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("alt-svc"),
        "{response}"
    );
}

/// A UDP port already taken is refused as the server starts, naming the way out; with h3 off
/// the same address serves.
#[test]
fn a_taken_udp_port_is_a_clear_error() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap();
    let start = |h3| {
        Server::start(ServerConfig {
            listen,
            tls: Some(TlsIdentity::self_signed().unwrap()),
            h3,
            ..ServerConfig::ephemeral()
        })
    };
    let error = start(true).unwrap_err();
    assert!(matches!(error, UpstreamError::H3Listen { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("--no-h3") && message.contains("UDP"),
        "{message}"
    );
    let server = start(false).expect("TCP alone is free");
    assert_eq!(server.local_addr(), listen);
}

/// Stopping the server lets an h3 request in flight finish (its answer arrives whole), then
/// closes the connection, within the grace period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_finishes_the_h3_requests_in_flight() {
    let server = tls_server(true);
    let client = H3::connect(&server).await;
    let slow = client.request(Method::GET, "/delay/300ms?x=1", &[], None);
    let slow = tokio::spawn(slow);
    // The request is in service once the server counted it.
    let counted = async {
        while server.stats().route("/delay") == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, counted)
        .await
        .expect("counted");
    let stopping = tokio::task::spawn_blocking(move || server.shutdown());
    let answer = slow
        .await
        .unwrap()
        .expect("answered before the connection closes");
    assert_eq!((answer.status, answer.body.len()), (200, 11));
    tokio::time::timeout(TIMEOUT, stopping)
        .await
        .expect("the server stops within its grace period")
        .unwrap();
    let after = client.request(Method::GET, "/", &[], None).await;
    assert!(after.is_err(), "the connection is closed: {after:?}");
}

/// `max_served_conns` holds QUIC connections like TCP ones: with 1, a second h3 connection is
/// not accepted while the first is open, and is served once it closes. (The TCP listener has
/// its own workers, so an idle TCP listener does not starve HTTP/3.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_served_conns_holds_h3_connections_too() {
    let server = Server::start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        max_served_conns: Some(1),
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let server = Arc::new(server);
    let (first, quic) = H3::connect_quic(&server).await;
    assert_eq!(first.get("/").await.status, 200);
    let second = {
        let server = Arc::clone(&server);
        tokio::spawn(async move { H3::connect(&server).await.get("/json").await.status })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "the second connection waits for a worker"
    );
    quic.close(0u32.into(), b"done");
    let status = tokio::time::timeout(TIMEOUT, second).await;
    assert_eq!(status.expect("served once the first closed").unwrap(), 200);
    assert_eq!(
        (server.stats().route("/"), server.stats().route("/json")),
        (1, 1)
    );
}
