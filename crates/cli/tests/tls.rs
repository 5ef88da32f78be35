//! HTTPS end to end: `loadbench run` against the reference backend serving TLS (in process,
//! and `loadbench serve --tls` as a process) and against a real nginx with certificates made
//! at test time (rcgen): counts checked on both sides, the preflight's one line for an
//! untrusted certificate, mutual TLS, and session resumption counted.

use crate::support::nginx::Nginx;
use crate::support::{bin, have, tempdir, text, Run};
use loadbench_model::RunResult;
use loadbench_upstream::{Server, ServerConfig, TlsIdentity};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The reference backend over TLS with a fresh self-signed certificate, written to `dir`.
pub(crate) fn tls_backend(dir: &Path) -> (Server, PathBuf) {
    let cfg = ServerConfig {
        tls: Some(TlsIdentity::self_signed().expect("a certificate is generated")),
        ..ServerConfig::ephemeral()
    };
    let server = Server::start(cfg).expect("the TLS backend starts");
    let cert = dir.join("server.pem");
    std::fs::write(&cert, server.tls_cert_pem().expect("it serves TLS")).unwrap();
    (server, cert)
}

/// Every connection opened in the window made one TLS handshake, timed and counted.
pub(crate) fn assert_handshakes_counted(r: &RunResult) {
    let tls = &r.stats.tls;
    assert_eq!(
        tls.full + tls.resumed,
        r.stats.connections_opened,
        "{tls:?}"
    );
    assert_eq!(tls.handshake.hist.len(), r.stats.connections_opened);
    assert!(tls.handshake.hist.min_ns() > 0, "a handshake takes time");
}

#[test]
fn https_against_the_reference_backend_with_cacert_and_with_insecure() {
    let dir = tempdir("tls-backend");
    let (server, cert) = tls_backend(&dir);
    let url = format!("https://{}/", server.local_addr());
    let cacert = cert.display().to_string();
    let r = Run::new(&url)
        .args(["-n", "300", "-c", "3", "--cacert", &cacert])
        .ok();
    assert_eq!(r.stats.requests, 300);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(server.stats().route("/"), 300, "/stats agrees");
    assert_handshakes_counted(&r);
    let tls = r.config.tls.as_ref().expect("the config records TLS");
    assert!(!tls.insecure);
    assert_eq!(tls.cacert.as_deref(), Some(cacert.as_str()));
    assert_eq!(tls.server_name, "127.0.0.1");

    let r = Run::new(&url)
        .args(["-n", "200", "-c", "2", "--insecure"])
        .ok();
    assert_eq!(r.stats.requests, 200);
    assert_eq!(server.stats().route("/"), 500, "/stats agrees");
    assert!(r.config.tls.as_ref().is_some_and(|t| t.insecure));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn insecure_is_said_in_the_text_markdown_and_html_reports() {
    let dir = tempdir("tls-insecure");
    let (server, _) = tls_backend(&dir);
    let url = format!("https://{}/", server.local_addr());
    for format in ["text", "md", "html"] {
        let out = bin()
            .args([
                "run",
                &url,
                "-n",
                "20",
                "-c",
                "1",
                "--insecure",
                "-o",
                format,
            ])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{format}: {stderr}");
        assert!(
            stdout.contains("certificate NOT verified (--insecure)"),
            "{format}: {stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_untrusted_certificate_fails_the_preflight_in_one_line_naming_the_fixes() {
    let dir = tempdir("tls-untrusted");
    let (server, _) = tls_backend(&dir);
    let ran = Run::new(&format!("https://{}/", server.local_addr()))
        .args(["-n", "10", "-c", "1"])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // Without system roots (no ca-certificates) the line says so instead; both name the fixes.
    assert!(
        stderr.contains("--cacert") && stderr.contains("--insecure"),
        "{stderr}"
    );
    assert_eq!(server.stats().route("/"), 0, "nothing was sent");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tls_flags_on_an_http_url_are_refused_in_one_line() {
    let ran = Run::new("http://127.0.0.1:9/").args(["--insecure"]).json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert!(stderr.contains("https:// URLs only"), "{stderr}");
}

/// `loadbench serve --tls` as a process, started on a free port: the address its first stderr
/// line names, the child, and its stderr for the lines after.
fn serve_tls(
    extra: &[&str],
) -> (
    String,
    std::process::Child,
    BufReader<std::process::ChildStderr>,
) {
    let mut child = bin()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--tls",
        ])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on https://");
    let addr = addr.unwrap_or_else(|| panic!("{line}")).to_string();
    (addr, child, stderr)
}

/// `loadbench serve --tls --tls-cert-out FILE` as a process: the written certificate is the
/// one it serves, so `--cacert FILE` verifies it; its `/stats` (read with curl, trusting the
/// same file) counts what the run sent.
#[test]
fn serve_tls_writes_the_certificate_a_client_trusts() {
    let dir = tempdir("serve-tls");
    let cert = dir.join("cert.pem");
    let cert_out = cert.display().to_string();
    let (addr, mut child, stderr) = serve_tls(&["--tls-cert-out", &cert_out]);
    // A parent that reads the first line and closes the pipe: the server lives on.
    drop(stderr);
    let cacert = cert.display().to_string();
    let r = Run::new(&format!("https://{addr}/json"))
        .args(["-n", "150", "-c", "3", "--cacert", &cacert])
        .ok();
    assert_eq!(r.stats.requests, 150);
    assert_eq!(r.stats.status.0.get(&200), Some(&150));
    if have("curl") {
        let out = std::process::Command::new("curl")
            .args(["-sf", "--cacert", &cacert, &format!("https://{addr}/stats")])
            .output()
            .unwrap();
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(stats["routes"]["/json"], 150, "{stats}");
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `loadbench serve --tls` serves HTTP/3 by default: it says so on stderr, holds the UDP port of
/// its TCP port, and announces it with `Alt-Svc` (read with curl when installed); `--no-h3`
/// holds no UDP port and sends no `Alt-Svc`; `--no-h3` without `--tls` is one line, exit 2.
/// (The HTTP/3 answers themselves are checked by the backend's tests, crates/upstream/tests/h3.rs.)
#[test]
fn serve_tls_serves_http3_beside_it_unless_no_h3() {
    let alt_svc = |addr: &str| -> Option<String> {
        if !have("curl") {
            return None;
        }
        let url = format!("https://{addr}/");
        let out = std::process::Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-D", "-", &url])
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
        assert!(head.starts_with("http/"), "{head}");
        Some(head)
    };
    let (addr, mut child, mut stderr) = serve_tls(&[]);
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), format!("listening on udp:{addr} (HTTP/3)"));
    assert!(
        std::net::UdpSocket::bind(&addr).is_err(),
        "HTTP/3 holds UDP {addr}"
    );
    if let Some(head) = alt_svc(&addr) {
        let port = addr.rsplit(':').next().unwrap();
        assert!(head.contains(&format!("alt-svc: h3=\":{port}\"")), "{head}");
    }
    let _ = child.kill();
    let _ = child.wait();

    let (addr, mut child, _stderr) = serve_tls(&["--no-h3"]);
    std::net::UdpSocket::bind(&addr).expect("--no-h3 leaves the UDP port free");
    if let Some(head) = alt_svc(&addr) {
        assert!(!head.contains("alt-svc"), "{head}");
    }
    let _ = child.kill();
    let _ = child.wait();

    let out = bin().args(["serve", "--no-h3"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--tls"), "{stderr}");
}

/// A CA, a server certificate it signed (localhost, 127.0.0.1) and a client certificate it
/// signed, as PEM files in `dir`; and a second, unrelated CA.
pub(crate) struct Pki {
    pub(crate) ca: PathBuf,
    pub(crate) other_ca: PathBuf,
    pub(crate) server_cert: PathBuf,
    pub(crate) server_key: PathBuf,
    pub(crate) client_cert: PathBuf,
    pub(crate) client_key: PathBuf,
}

fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert, key)
}

pub(crate) fn make_pki(dir: &Path) -> Pki {
    let (ca_cert, ca_key) = ca("loadbench test CA");
    let (other, _) = ca("some other CA");
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca_cert, &ca_key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_pem, server_key) = leaf(vec!["localhost".into(), "127.0.0.1".into()]);
    let (client_pem, client_key) = leaf(vec!["loadbench-client".into()]);
    let write = |name: &str, pem: &str| {
        let p = dir.join(name);
        std::fs::write(&p, pem).unwrap();
        p
    };
    Pki {
        ca: write("ca.pem", &ca_cert.pem()),
        other_ca: write("other-ca.pem", &other.pem()),
        server_cert: write("server.pem", &server_pem),
        server_key: write("server.key", &server_key),
        client_cert: write("client.pem", &client_pem),
        client_key: write("client.key", &client_key),
    }
}

fn nginx_tls(pki: &Pki, more: &str) -> Nginx {
    Nginx::start_tls(&format!(
        "ssl_certificate {};\n    ssl_certificate_key {};\n    {more}",
        pki.server_cert.display(),
        pki.server_key.display()
    ))
}

pub(crate) fn path(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn https_against_nginx_counts_what_nginx_logged_and_refuses_an_unknown_ca() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("nginx-tls");
    let pki = make_pki(&dir);
    let nginx = nginx_tls(&pki, "");
    let r = Run::new(&nginx.https_url("/"))
        .args(["-n", "400", "-c", "4", "--cacert", &path(&pki.ca)])
        .ok();
    assert_eq!(r.stats.requests, 400);
    assert_eq!(r.stats.status.0.get(&200), Some(&400));
    assert_eq!(nginx.logged_requests(), 400, "nginx's access log agrees");
    assert_handshakes_counted(&r);

    for trust in [vec![], vec!["--cacert".to_string(), path(&pki.other_ca)]] {
        let ran = Run::new(&nginx.https_url("/"))
            .args(["-n", "10", "-c", "1"])
            .args(&trust)
            .json();
        let (_, stderr) = ran.text();
        assert_eq!(ran.code(), Some(2), "{trust:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--cacert") && stderr.contains("--insecure"),
            "{stderr}"
        );
        if !trust.is_empty() {
            assert!(stderr.contains("not trusted (UnknownIssuer"), "{stderr}");
        }
    }
    assert_eq!(
        nginx.logged_requests(),
        400,
        "the refused runs sent nothing"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// nginx with `ssl_verify_client on`: with `--cert/--key` every request is answered 200; without
/// them the handshake completes (TLS 1.3 sends the client's empty certificate after the
/// server's Finished) and nginx refuses each request with a 400, which loadbench counts as
/// non-success responses. Both sides' counts agree.
#[test]
fn mutual_tls_with_nginx_succeeds_with_a_client_certificate_and_is_refused_without() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("nginx-mtls");
    let pki = make_pki(&dir);
    let verify = format!(
        "ssl_client_certificate {};\n    ssl_verify_client on;",
        pki.ca.display()
    );
    let nginx = nginx_tls(&pki, &verify);
    let ca = path(&pki.ca);
    let r = Run::new(&nginx.https_url("/"))
        .args(["-n", "200", "-c", "2", "--cacert", &ca])
        .args([
            "--cert",
            &path(&pki.client_cert),
            "--key",
            &path(&pki.client_key),
        ])
        .ok();
    assert_eq!(r.stats.status.0.get(&200), Some(&200));
    assert!(r
        .config
        .tls
        .as_ref()
        .is_some_and(|t| t.client_cert.is_some()));
    let refused = Run::new(&nginx.https_url("/"))
        .args(["-n", "100", "-c", "2", "--cacert", &ca])
        .ok();
    assert_eq!(
        refused.stats.status.0.get(&400),
        Some(&100),
        "{:?}",
        refused.stats.status
    );
    assert_eq!(nginx.logged_requests(), 300);
    let logged_400 = nginx
        .log_lines()
        .iter()
        .filter(|l| l.contains("\" 400 "))
        .count();
    assert_eq!(logged_400, 100, "nginx logged the refusals");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With a new connection per request, sessions are resumed by default (tickets from nginx's
/// earlier handshakes) and never with `--no-tls-resume`.
#[test]
fn tls_sessions_resume_by_default_and_not_with_no_tls_resume() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("nginx-resume");
    let pki = make_pki(&dir);
    let nginx = nginx_tls(
        &pki,
        "ssl_session_cache builtin:1000;\n    ssl_session_tickets on;",
    );
    let ca = path(&pki.ca);
    let run = |extra: &[&str]| {
        Run::new(&nginx.https_url("/"))
            .args(["-n", "100", "-c", "2", "--no-keepalive", "--cacert", &ca])
            .args(extra)
            .ok()
    };
    let resumed = run(&[]);
    assert_eq!(resumed.stats.requests, 100);
    assert_handshakes_counted(&resumed);
    assert!(resumed.stats.tls.resumed > 0, "{:?}", resumed.stats.tls);
    let full = run(&["--no-tls-resume"]);
    assert_eq!(full.stats.requests, 100);
    assert_handshakes_counted(&full);
    assert_eq!(full.stats.tls.resumed, 0);
    assert_eq!(full.stats.tls.full, full.stats.connections_opened);
    assert!(full.config.tls.as_ref().is_some_and(|t| !t.resumption));
    assert_eq!(nginx.logged_requests(), 200);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The open model opens its TLS connections on demand, each through the handshake phase; with
/// a new connection per request every request pays one, and the backend counts them all.
#[test]
fn https_in_the_open_model_without_keepalive_hands_every_request_its_own_handshake() {
    let dir = tempdir("tls-open");
    let (server, cert) = tls_backend(&dir);
    let r = Run::new(&format!("https://{}/", server.local_addr()))
        .args(["--rate", "400", "-n", "200", "--no-keepalive"])
        .args(["--cacert", &cert.display().to_string()])
        .ok();
    assert_eq!(r.stats.requests, 200);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(server.stats().route("/"), 200, "/stats agrees");
    assert_eq!(r.stats.connections_opened, 200);
    assert_handshakes_counted(&r);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bodies far larger than the worker's 64 KiB read buffer, plain and chunked, read whole over
/// TLS (records decrypted until the socket would block), every response complete.
#[test]
fn large_and_chunked_bodies_arrive_whole_over_tls() {
    let dir = tempdir("tls-bodies");
    let (server, cert) = tls_backend(&dir);
    let cacert = cert.display().to_string();
    for (path, route, body) in [
        ("/bytes/1MiB", "/bytes", 1 << 20),
        ("/chunked/300KiB", "/chunked", 300 << 10),
    ] {
        let r = Run::new(&format!("https://{}{path}", server.local_addr()))
            .args(["-n", "20", "-c", "2", "--cacert", &cacert])
            .ok();
        assert_eq!(r.stats.status.0.get(&200), Some(&20), "{path}");
        assert_eq!(r.stats.body.total, 20 * body, "{path}: {:?}", r.stats.body);
        assert_eq!(server.stats().route(route), 20, "{path}: /stats agrees");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A find-max search over TLS with `--insecure` says so in its text report too.
#[test]
fn find_max_with_insecure_says_so() {
    let dir = tempdir("tls-find-max");
    let (server, _) = tls_backend(&dir);
    let out = bin()
        .args(["find-max", &format!("https://{}/", server.local_addr())])
        .args(["--insecure", "--slo", "p99<500ms", "--start-rate", "20"])
        .args([
            "--max-rate",
            "40",
            "--step-duration",
            "500ms",
            "--max-steps",
            "2",
        ])
        .args(["--quiet", "-o", "text"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("certificate NOT verified (--insecure)"),
        "{stdout}"
    );
    assert!(server.stats().route("/") > 0);
    let _ = std::fs::remove_dir_all(&dir);
}
