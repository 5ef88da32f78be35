//! The login flow of the reference backend against the real server on loopback: `POST /login`
//! issues a token, `/me` answers with it and counts per token, and without a token it is a
//! 401; over HTTP/1.1 (raw, incl. pipelining), and over h2c and h2 over TLS with curl.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;

use loadbench_upstream::{ServerConfig, TlsIdentity};

use crate::server::{connect, read_response, server, start, Resp};

/// One request on a kept-alive connection.
fn request(stream: &mut TcpStream, method: &str, path: &str, headers: &[&str], body: &str) -> Resp {
    write_request(stream, method, path, headers, body);
    read_response(&mut BufReader::new(stream))
}

fn write_request(stream: &mut TcpStream, method: &str, path: &str, headers: &[&str], body: &str) {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
}

fn login(addr: SocketAddr, headers: &[&str], body: &str) -> (String, String) {
    let resp = request(&mut connect(addr), "POST", "/login", headers, body);
    assert_eq!(resp.status, 200, "{resp:?}");
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let json = resp.json();
    let token = json["token"].as_str().unwrap().to_string();
    assert_eq!(resp.header("x-token"), Some(token.as_str()));
    (token, json["user"].as_str().unwrap().to_string())
}

fn me(stream: &mut TcpStream, token: &str) -> Resp {
    let auth = format!("Authorization: Bearer {token}");
    request(stream, "GET", "/me", &[&auth], "")
}

#[test]
fn login_issues_unique_tokens_and_me_counts_each() {
    let s = server();
    let addr = s.local_addr();
    let json = ["Content-Type: application/json"];
    let (ann, user) = login(addr, &json, r#"{"user":"ann","password":"x"}"#);
    assert_eq!(user, "ann");
    let form = ["Content-Type: application/x-www-form-urlencoded"];
    let (bob, user) = login(addr, &form, "user=bob+b&pw=1");
    assert_eq!(user, "bob b");
    let (anon, user) = login(addr, &[], "");
    assert_eq!(user, "anonymous");
    assert!(
        ann != bob && bob != anon && ann != anon,
        "{ann} {bob} {anon}"
    );

    let mut stream = connect(addr);
    for n in 1..=3 {
        let resp = me(&mut stream, &ann);
        assert_eq!(resp.status, 200, "{resp:?}");
        let expected = serde_json::json!({"user": "ann", "token": ann, "requests": n});
        assert_eq!(resp.json(), expected);
    }
    // Any method, and the scheme name in any case.
    let auth = format!("Authorization: bearer {bob}");
    let resp = request(&mut stream, "POST", "/me", &[&auth], "{}");
    assert_eq!(
        (resp.status, resp.json()["requests"].clone()),
        (200, 1.into())
    );

    let logins = s.logins();
    assert_eq!((logins.issued, logins.unauthorized), (3, 0));
    assert_eq!(logins.requests(&ann), Some(3));
    assert_eq!(logins.requests(&bob), Some(1));
    assert_eq!(logins.requests(&anon), Some(0));
    assert_eq!(logins.tokens[&bob].user, "bob b");
    let stats = s.stats();
    assert_eq!((stats.route("/login"), stats.route("/me")), (3, 4));
}

#[test]
fn me_without_a_token_it_issued_is_401() {
    let s = server();
    let addr = s.local_addr();
    let (token, _) = login(addr, &[], "");
    let mut stream = connect(addr);
    // The same id with another secret, as a token of an earlier run would be.
    let last = if token.ends_with('0') { '1' } else { '0' };
    let other_run = format!("{}{last}", &token[..token.len() - 1]);
    let cases: [&[&str]; 5] = [
        &[],
        &["Authorization: Bearer t999-0123456789abcdef"],
        &["Authorization: Bearer nonsense"],
        &[&format!("Authorization: Basic {token}")],
        &[&format!("Authorization: Bearer {other_run}")],
    ];
    for headers in cases {
        let resp = request(&mut stream, "GET", "/me", headers, "");
        assert_eq!(resp.status, 401, "{headers:?}: {resp:?}");
        let challenge = resp.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        assert!(resp.json()["error"].is_string(), "{resp:?}");
    }
    let logins = s.logins();
    assert_eq!(logins.unauthorized, 5);
    assert_eq!(logins.requests(&token), Some(0));
    // The real token still works on the same connection after the refusals.
    assert_eq!(me(&mut stream, &token).status, 200);
    assert_eq!(s.logins().requests(&token), Some(1));
}

#[test]
fn login_takes_post_only() {
    let s = server();
    let resp = request(&mut connect(s.local_addr()), "GET", "/login", &[], "");
    assert_eq!((resp.status, resp.header("allow")), (405, Some("POST")));
    assert_eq!(s.logins().issued, 0);
}

#[test]
fn pipelined_me_requests_are_counted_in_order() {
    let s = server();
    let mut stream = connect(s.local_addr());
    let login = request(&mut stream, "POST", "/login", &[], r#"{"user":"p"}"#);
    let token = login.json()["token"].as_str().unwrap().to_string();
    let auth = format!("Authorization: Bearer {token}");
    for _ in 0..5 {
        write_request(&mut stream, "GET", "/me", &[&auth], "");
    }
    let mut reader = BufReader::new(stream);
    let counts: Vec<_> = (0..5)
        .map(|_| {
            read_response(&mut reader).json()["requests"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(counts, [1, 2, 3, 4, 5]);
    assert_eq!(s.logins().requests(&token), Some(5));
}

/// curl's status line and body for one request (`-w` puts the HTTP version and status last).
fn curl(flags: &[&str], url: &str) -> (String, serde_json::Value) {
    let out = Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "10",
            "-w",
            "\n%{http_version} %{http_code}",
        ])
        .args(flags)
        .arg(url)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').expect("curl printed a status");
    let json = serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
    (status.to_string(), json)
}

fn have_curl() -> bool {
    Command::new("curl").arg("--version").output().is_ok()
}

/// Login then `/me` twice and once without a token, over HTTP/2 with `flags`.
fn login_flow_over_h2(base: &str, flags: &[&str]) -> String {
    let body = ["-X", "POST", "-H", "Content-Type: application/json"];
    let data = [&body[..], &["-d", r#"{"user":"h2"}"#], flags].concat();
    let (status, json) = curl(&data, &format!("{base}/login"));
    assert_eq!(status, "2 200", "{json}");
    assert_eq!(json["user"], "h2");
    let token = json["token"].as_str().unwrap().to_string();
    let auth = format!("Authorization: Bearer {token}");
    for n in 1..=2 {
        let (status, json) = curl(
            &[&["-H", auth.as_str()], flags].concat(),
            &format!("{base}/me"),
        );
        assert_eq!(status, "2 200", "{json}");
        assert_eq!(
            (json["requests"].as_u64(), json["user"].as_str()),
            (Some(n), Some("h2"))
        );
    }
    let (status, json) = curl(flags, &format!("{base}/me"));
    assert_eq!(status, "2 401", "{json}");
    token
}

#[test]
fn login_flow_works_over_h2c_and_h2_over_tls() {
    if !have_curl() {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let s = server();
    let token = login_flow_over_h2(
        &format!("http://{}", s.local_addr()),
        &["--http2-prior-knowledge"],
    );
    let logins = s.logins();
    assert_eq!((logins.requests(&token), logins.unauthorized), (Some(2), 1));
    assert_eq!(s.stats().h2, 4);

    let tls = start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        ..ServerConfig::ephemeral()
    });
    let token = login_flow_over_h2(&format!("https://{}", tls.local_addr()), &["-k", "--http2"]);
    assert_eq!(tls.logins().requests(&token), Some(2));
    assert_eq!(tls.stats().h2, 4);
}
