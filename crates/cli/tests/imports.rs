//! Requests imported into the mix (docs/request-mix.md): `--curl`, `--har` and `--targets`
//! (vegeta's http and JSON formats) against the reference backend, whose `/echo` keeps what it
//! received (`Server::echoed`): each request's method, query, headers and body must arrive as
//! the import gave them. A curl's `-k --http2` must reach an HTTPS backend over h2. Bad input
//! exits 2 with one line before anything is sent. The text report's success ratio is checked
//! here too, on a mix with a known share of 500s.

use crate::support::{tempdir, Ran, Run};
use loadbench_upstream::{Echoed, Server, ServerConfig, TlsIdentity};
use std::path::Path;

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

fn base(server: &Server) -> String {
    format!("http://{}", server.local_addr())
}

/// The one value of header `name`; fails on none or several.
fn one<'a>(e: &'a Echoed, name: &str) -> &'a str {
    match e.header(name).as_slice() {
        [v] => v,
        other => panic!("{name}: {other:?} in {:?}", e.headers),
    }
}

fn refused(ran: &Ran) -> String {
    assert_eq!(ran.code(), Some(2), "{:?}", ran.text());
    assert!(ran.saved.is_none());
    let err = ran.text().1;
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn curl_commands_send_their_method_headers_and_body() {
    let server = backend();
    let b = base(&server);
    let dir = tempdir("imports-curl");
    let data = file(&dir, "order.json", "{\"order\": 42,\n \"items\": [1, 2]}\n");
    let put = format!(
        "curl -sSL -o /dev/null -X PUT '{b}/echo?x=1' \\\n  -H 'X-Trace: a b' -H 'Content-Type: application/json' \\\n  -d @{data} -u 'al:p w' -A agent/1 -e http://ref/ -b 'sid=1; t=2' --compressed"
    );
    let json = format!(r#"curl --json '{{"k": 2}}' {b}/echo"#);
    let r = Run::without_url()
        .args(["--curl", &put, "--curl", &json, "-H", "X-All: yes"])
        .args(["-n", "20", "-c", "1"])
        .ok();
    let e = &r.stats.endpoints;
    let got: Vec<(&str, u64)> = e.iter().map(|e| (e.method.as_str(), e.requests)).collect();
    assert_eq!(got, [("PUT", 10), ("POST", 10)]);
    let seen = server.echoed();
    assert_eq!(seen.len(), 20);
    let (puts, posts): (Vec<&Echoed>, Vec<&Echoed>) = seen.iter().partition(|s| s.method == "PUT");
    assert_eq!((puts.len(), posts.len()), (10, 10));
    for p in &puts {
        assert_eq!(
            (p.path.as_str(), p.query.as_deref()),
            ("/echo", Some("x=1"))
        );
        assert_eq!(one(p, "x-trace"), "a b");
        assert_eq!(one(p, "content-type"), "application/json");
        assert_eq!(one(p, "authorization"), "Basic YWw6cCB3");
        assert_eq!(one(p, "user-agent"), "agent/1");
        assert_eq!(one(p, "referer"), "http://ref/");
        assert_eq!(one(p, "cookie"), "sid=1; t=2");
        assert_eq!(one(p, "accept-encoding"), "deflate, gzip");
        assert_eq!(one(p, "x-all"), "yes");
        // -d @file drops the file's line breaks, as curl does.
        assert_eq!(p.body, b"{\"order\": 42, \"items\": [1, 2]}");
    }
    for p in &posts {
        assert_eq!(p.query, None);
        assert_eq!(one(p, "content-type"), "application/json");
        assert_eq!(one(p, "accept"), "application/json");
        assert_eq!(one(p, "x-all"), "yes");
        assert!(p.header("authorization").is_empty() && p.header("x-trace").is_empty());
        assert_eq!(p.body, br#"{"k": 2}"#);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_curl_is_the_whole_load_and_its_k_and_http2_reach_an_https_backend() {
    let server = backend();
    let b = base(&server);
    let r = Run::without_url()
        .args(["--curl", &format!("curl -X DELETE {b}/echo -H 'X-Id: 7'")])
        .args(["-n", "5", "-c", "1"])
        .ok();
    assert!(r.stats.endpoints.is_empty(), "one request is no mix");
    let seen = server.echoed();
    assert_eq!(seen.len(), 5);
    assert!(seen
        .iter()
        .all(|s| s.method == "DELETE" && one(s, "x-id") == "7"));

    let tls = Server::start(ServerConfig {
        tls: Some(TlsIdentity::self_signed().unwrap()),
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let url = format!("https://{}/echo", tls.local_addr());
    let r = Run::without_url()
        .args(["--curl", &format!("curl -k --http2 -d hi {url}")])
        .args(["-n", "4", "-c", "1"])
        .ok();
    assert_eq!(r.stats.requests, 4);
    let stats = tls.stats();
    assert_eq!((stats.total, stats.h2), (4, 4), "over h2: {stats:?}");
    assert!(tls
        .echoed()
        .iter()
        .all(|s| s.body == b"hi" && s.method == "POST"));
    // Without -k the self-signed certificate is refused: -k is what made it work.
    let ran = Run::without_url()
        .args(["--curl", &format!("curl --http2 {url}")])
        .args(["-n", "2", "-c", "1"])
        .json();
    assert_ne!(ran.code(), Some(0), "{:?}", ran.text());
}

#[test]
fn a_har_file_sends_its_entries_in_order() {
    let server = backend();
    let b = base(&server);
    let dir = tempdir("imports-har");
    // Content-Length 999 and the pseudo-headers would break the requests if they were sent.
    let har = serde_json::json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
    "entries": [
        {"request": {"method": "GET", "url": format!("{b}/echo?page=1"), "httpVersion": "HTTP/2",
            "headers": [{"name": ":authority", "value": "x"}, {"name": ":method", "value": "GET"},
                {"name": "accept", "value": "text/html"}, {"name": "Connection", "value": "keep-alive"},
                {"name": "x-har", "value": "first"}]},
         "response": {"status": 200}},
        {"request": {"method": "PATCH", "url": format!("{b}/echo"),
            "headers": [{"name": "Content-Type", "value": "application/json"},
                {"name": "Content-Length", "value": "999"}, {"name": "x-har", "value": "second"}],
            "postData": {"mimeType": "application/json", "text": "{\"patch\": true}"}},
         "response": {"status": 200}}
    ]}});
    let path = file(&dir, "session.har", &har.to_string());
    let r = Run::without_url()
        .args(["--har", &path, "-n", "10", "-c", "1"])
        .ok();
    let e = &r.stats.endpoints;
    let got: Vec<(&str, u32, u64)> = e
        .iter()
        .map(|e| (e.method.as_str(), e.weight, e.requests))
        .collect();
    assert_eq!(got, [("GET", 1, 5), ("PATCH", 1, 5)]);
    let seen = server.echoed();
    assert_eq!(seen.len(), 10);
    for s in &seen {
        match s.method.as_str() {
            "GET" => {
                assert_eq!(s.query.as_deref(), Some("page=1"));
                assert_eq!((one(s, "accept"), one(s, "x-har")), ("text/html", "first"));
                assert!(s.body.is_empty());
            }
            "PATCH" => {
                assert_eq!(one(s, "content-type"), "application/json");
                assert_eq!(one(s, "content-length"), "15");
                assert_eq!(one(s, "x-har"), "second");
                assert_eq!(s.body, b"{\"patch\": true}");
            }
            m => panic!("{m}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vegeta_targets_in_both_formats() {
    let server = backend();
    let b = base(&server);
    let dir = tempdir("imports-vegeta");
    let body = file(&dir, "thing.json", "{\"thing\": 1}");
    let http = file(
        &dir,
        "targets.txt",
        &format!(
            "# vegeta http format\nGET {b}/echo?a=1\nX-Account-ID: 8675309\n\nPOST {b}/echo\nContent-Type: application/json\n@{body}\n"
        ),
    );
    let r = Run::without_url()
        .args(["--targets", &http, "-n", "8", "-c", "1"])
        .ok();
    assert_eq!(r.stats.endpoints.len(), 2);
    let seen = server.echoed();
    assert_eq!(seen.len(), 8);
    for s in &seen {
        if s.method == "GET" {
            assert_eq!(s.query.as_deref(), Some("a=1"));
            assert_eq!(one(s, "x-account-id"), "8675309");
            assert!(s.body.is_empty());
        } else {
            assert_eq!(s.method, "POST");
            assert_eq!(one(s, "content-type"), "application/json");
            assert_eq!(s.body, b"{\"thing\": 1}");
        }
    }
    let json_server = backend();
    let jb = base(&json_server);
    let lines = format!(
        "{{\"method\": \"PUT\", \"url\": \"{jb}/echo\", \"header\": {{\"X-A\": [\"1\", \"2\"]}}, \"body\": \"aGVsbG8=\"}}\n"
    );
    let json = file(&dir, "targets.json", &lines);
    Run::without_url()
        .args(["--targets", &json, "-n", "3", "-c", "1"])
        .ok();
    let seen = json_server.echoed();
    assert_eq!(seen.len(), 3);
    for s in &seen {
        assert_eq!(
            (s.method.as_str(), s.body.as_slice()),
            ("PUT", &b"hello"[..])
        );
        assert_eq!(s.header("x-a"), ["1", "2"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_imports_exit_2_in_one_line_before_anything_is_sent() {
    let server = backend();
    let b = base(&server);
    let dir = tempdir("imports-bad");
    let run = |args: &[&str]| {
        refused(
            &Run::without_url()
                .args(args)
                .args(["-n", "5", "-c", "1"])
                .json(),
        )
    };
    let echo = format!("{b}/echo");
    let curl_f = format!("curl -F a=b {echo}");
    assert!(run(&["--curl", &curl_f]).contains("'-F'"));
    let quote = format!("curl '{echo}");
    assert!(run(&["--curl", &quote]).contains("not closed"));
    let one_h2 = format!("curl --http2 {echo}");
    let plain = format!("curl {echo}");
    assert!(run(&["--curl", &one_h2, "--curl", &plain]).contains("--http2 to every one"));
    let err = run(&["--curl", &plain, "--body", "x"]);
    assert!(err.contains("has its own body"), "{err}");
    let bad_json = file(&dir, "bad.har", "{\"log\": ");
    assert!(run(&["--har", &bad_json]).contains("is not a HAR file"));
    let empty = file(
        &dir,
        "empty.har",
        r#"{"log": {"version": "1.2", "entries": []}}"#,
    );
    assert!(run(&["--har", &empty]).contains("holds no request"));
    let targets = file(&dir, "t.txt", &format!("GET {echo}\nnot a header\n"));
    assert!(run(&["--targets", &targets]).contains("t.txt:2:"));
    let elsewhere = format!("curl http://127.0.0.1:{}/", crate::support::free_port());
    let err = run(&["--curl", &plain, "--curl", &elsewhere]);
    assert!(err.contains("separate loads"), "{err}");
    assert_eq!(server.stats().total, 0, "nothing was sent");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_text_report_has_a_success_ratio() {
    let server = backend();
    let b = base(&server);
    let ran = Run::without_url()
        .args([
            "-u",
            &format!("{b}/ weight=3"),
            "-u",
            &format!("{b}/status/500"),
        ])
        .args(["-n", "40", "-c", "1"])
        .json();
    assert_eq!(ran.code(), Some(0), "{:?}", ran.text());
    let out = ran.text().0;
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("Success ratio:"))
        .unwrap_or_else(|| panic!("no success ratio line in {out}"));
    assert!(
        line.contains("75.00% (30 of 40 attempts got a 2xx/3xx response)"),
        "{line}"
    );
}
