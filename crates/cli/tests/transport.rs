//! `--unix-socket` and `--connect-to` end to end against the reference backend: the requests
//! reach the server the flag names, and its `/stats` counts what loadbench counted.

use crate::support::{tempdir, Run};
use loadbench_upstream::{Server, ServerConfig, TlsIdentity};

#[test]
fn unix_socket_requests_are_all_counted_by_the_server() {
    let dir = tempdir("unix-socket");
    let sock = dir.join("backend.sock");
    let server = Server::start(ServerConfig {
        unix: Some(sock.clone()),
        ..ServerConfig::ephemeral()
    })
    .expect("the backend starts");
    let r = Run::new("http://localhost/json")
        .args([
            "-n",
            "400",
            "-c",
            "4",
            "--unix-socket",
            &sock.display().to_string(),
        ])
        .ok();
    assert_eq!(r.stats.requests, 400);
    assert_eq!(r.stats.status.0.get(&200), Some(&400));
    assert_eq!(server.stats().route("/json"), 400, "/stats agrees");
    assert_eq!(r.config.address, format!("unix:{}", sock.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_unix_socket_nobody_listens_on_is_refused_before_the_load() {
    let dir = tempdir("unix-none");
    let sock = dir.join("nothing.sock").display().to_string();
    let ran = Run::new("http://localhost/")
        .args(["-n", "5", "-c", "1", "--unix-socket", &sock])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--unix-socket"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The URL names a host that does not resolve; `--connect-to` sends its connections to the
/// backend, whose `/stats` counts them.
#[test]
fn connect_to_sends_the_urls_host_to_another_address() {
    let server = Server::start(ServerConfig::ephemeral()).expect("the backend starts");
    let to = format!(
        "backend.invalid:8080:127.0.0.1:{}",
        server.local_addr().port()
    );
    let r = Run::new("http://backend.invalid:8080/json")
        .args(["-n", "200", "-c", "2", "--connect-to", &to])
        .ok();
    assert_eq!(r.stats.requests, 200);
    assert_eq!(server.stats().route("/json"), 200, "/stats agrees");
    assert_eq!(r.config.address, server.local_addr().to_string());
    assert_eq!(r.config.connect_to, vec![to]);
}

/// Over TLS the URL's host stays the SNI and the name checked: `localhost` is in the backend's
/// certificate, and the connection goes to 127.0.0.1 at the backend's port.
#[test]
fn connect_to_keeps_the_urls_host_as_the_tls_server_name() {
    let dir = tempdir("connect-to-tls");
    let server = Server::start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, server.tls_cert_pem().unwrap()).unwrap();
    let to = format!("localhost:443:127.0.0.1:{}", server.local_addr().port());
    let r = Run::new("https://localhost/")
        .args(["-n", "100", "-c", "2", "--connect-to", &to])
        .args(["--cacert", &cert.display().to_string()])
        .ok();
    assert_eq!(r.stats.requests, 100);
    assert_eq!(server.stats().route("/"), 100, "/stats agrees");
    assert_eq!(r.config.tls.as_ref().unwrap().server_name, "localhost");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A certificate that does not name the URL's host is refused before the load, in one line.
#[test]
fn a_certificate_for_another_name_is_refused_by_the_preflight() {
    let dir = tempdir("tls-wrong-name");
    let server = Server::start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, server.tls_cert_pem().unwrap()).unwrap();
    let to = format!("::127.0.0.1:{}", server.local_addr().port());
    let ran = Run::new("https://api.example.com/")
        .args(["-n", "5", "-c", "1", "--connect-to", &to])
        .args(["--cacert", &cert.display().to_string()])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("does not name this host"), "{stderr}");
    assert_eq!(server.stats().route("/"), 0);
    let _ = std::fs::remove_dir_all(&dir);
}
