//! Per-request values end to end (issue 32, docs/request-values.md): `{{ … }}` in the URL, a
//! header and the body of `loadbench run`, checked against what a real server received: nginx's
//! access log (`$request_uri`, `$http_x_id`, `$content_length`, `$request_body`) and the
//! reference backend's `/echo` log. The sequence gives each number once, over HTTP/1.1,
//! pipelined, HTTP/2, TLS, the open model and three shards; random values stay in range; a data
//! file's rows (CSV or JSON Lines, `| url` encoding a cell) go in order, once each with
//! `--data-end stop`, or in a permutation that repeats with `--seed`; a templated body's
//! Content-Length is right for each request; and bad input is one line and exit code 2 before
//! any request is sent.

use crate::support::nginx::Nginx;
use crate::support::{have, tempdir, Run};
use crate::tls::{make_pki, path};
use loadbench_model::RunResult;
use loadbench_upstream::{Echoed, Server, ServerConfig};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// nginx answering `/v/…` with `ok`, logging `URI X-ID` per request (`-` for no header);
/// `listen_tail` as in [`Nginx::start_with`] (`http2;`, `ssl; ssl_certificate …`).
fn serving_v(listen_tail: &str) -> Nginx {
    serving_v_with(listen_tail, "")
}

/// [`serving_v`] with `extra` in nginx's server block.
fn serving_v_with(listen_tail: &str, extra: &str) -> Nginx {
    Nginx::start_logging(
        "escape=none '$request_uri $http_x_id'",
        listen_tail,
        &format!("location /v/ {{ return 200 \"ok\"; }}\n    {extra}"),
    )
}

/// The logged URIs and X-Id headers, once nginx has logged every request.
fn logged(nginx: &Nginx) -> Vec<(String, String)> {
    nginx.logged_requests();
    nginx
        .log_lines()
        .iter()
        .map(|l| {
            let (uri, id) = l.split_once(' ').unwrap_or((l, ""));
            (uri.to_string(), id.to_string())
        })
        .collect()
}

/// The numbers after `/v/` in the logged URIs, in log order.
fn numbers(nginx: &Nginx) -> Vec<u64> {
    logged(nginx)
        .iter()
        .map(|(uri, _)| {
            uri.strip_prefix("/v/")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("not /v/NUMBER: {uri}"))
        })
        .collect()
}

/// Asserts `got` holds each of `1..=n` exactly once.
fn assert_once_each(mut got: Vec<u64>, n: u64, what: &str) {
    got.sort_unstable();
    assert_eq!(got, (1..=n).collect::<Vec<_>>(), "{what}");
}

/// `loadbench run` that must succeed and complete every request without an error.
fn clean(run: Run, requests: u64) -> RunResult {
    let r = run.ok();
    assert_eq!(r.stats.requests, requests);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    r
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// A CSV with columns `id,name`: ids `first..first+rows`, names `n<id>`.
fn rows_csv(dir: &Path, first: u64, rows: u64) -> String {
    let mut csv = String::from("id,name\n");
    for id in first..first + rows {
        csv.push_str(&format!("{id},n{id}\n"));
    }
    path(&write(dir, "rows.csv", &csv))
}

#[test]
fn seq_in_the_path_and_a_header_gives_each_number_once() {
    if !have("nginx") {
        return;
    }
    let nginx = serving_v("");
    clean(
        Run::new(&nginx.url("/v/{{seq}}"))
            .args(["-H", "X-Id: id-{{seq(100, 10)}}"])
            .args(["-n", "200", "-c", "4", "-t", "2"]),
        200,
    );
    let log = logged(&nginx);
    assert_eq!(log.len(), 200);
    for (uri, id) in &log {
        // One draw per request: the path's seq and the header's seq(100, 10) agree.
        let n: u64 = uri[3..].parse().unwrap();
        assert_eq!(id, &format!("id-{}", 100 + 10 * (n - 1)), "{uri}");
    }
    assert_once_each(numbers(&nginx), 200, "seq over 4 connections, 2 threads");
}

#[test]
fn int_and_pick_stay_in_their_range_and_reach_every_value() {
    if !have("nginx") {
        return;
    }
    let nginx = serving_v("");
    clean(
        Run::new(&nginx.url("/v/{{int(5,7)}}"))
            .args(["-H", "X-Id: {{pick(a,b,c)}}"])
            .args(["-n", "300", "-c", "2"]),
        300,
    );
    let log = logged(&nginx);
    assert_eq!(log.len(), 300);
    let ints: BTreeSet<u64> = numbers(&nginx).into_iter().collect();
    assert_eq!(ints, BTreeSet::from([5, 6, 7]));
    let picks: BTreeSet<&str> = log.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(picks, BTreeSet::from(["a", "b", "c"]));
}

#[test]
fn data_rows_go_in_order_and_wrap() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("values-rows");
    let data = rows_csv(&dir, 10, 3);
    let nginx = serving_v("");
    clean(
        Run::new(&nginx.url("/v/{{row.id}}"))
            .args(["-H", "X-Id: {{row.name}}", "--data", &data])
            .args(["-n", "7", "-c", "1", "-t", "1"]),
        7,
    );
    assert_eq!(numbers(&nginx), [10, 11, 12, 10, 11, 12, 10]);
    let names: Vec<String> = logged(&nginx).into_iter().map(|(_, id)| id).collect();
    assert_eq!(names, ["n10", "n11", "n12", "n10", "n11", "n12", "n10"]);
}

#[test]
fn json_lines_rows_and_the_url_filter_reach_the_server_encoded() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("values-jsonl");
    let data = write(
        &dir,
        "rows.jsonl",
        "{\"id\":1,\"q\":\"a b/c\"}\n{\"id\":2,\"q\":\"ü&x\"}\n",
    );
    let nginx = serving_v("");
    clean(
        Run::new(&nginx.url("/v/{{row.id}}?q={{row.q | url}}")).args([
            "--data",
            &path(&data),
            "-n",
            "4",
            "-c",
            "1",
            "-t",
            "1",
        ]),
        4,
    );
    let uris: Vec<String> = logged(&nginx).into_iter().map(|(uri, _)| uri).collect();
    let want = ["/v/1?q=a%20b%2Fc", "/v/2?q=%C3%BC%26x"];
    assert_eq!(uris, [want[0], want[1], want[0], want[1]]);
}

#[test]
fn data_end_stop_sends_each_row_once() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("values-stop");
    let data = rows_csv(&dir, 1, 25);
    let nginx = serving_v("");
    clean(
        Run::new(&nginx.url("/v/{{row.id}}")).args([
            "--data",
            &data,
            "--data-end",
            "stop",
            "-c",
            "3",
            "-t",
            "2",
        ]),
        25,
    );
    assert_once_each(numbers(&nginx), 25, "each row once");
}

#[test]
fn a_random_row_order_is_a_permutation_per_pass_and_repeats_with_its_seed() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("values-random");
    let data = rows_csv(&dir, 1, 20);
    let order = |seed: &str| {
        let nginx = serving_v("");
        clean(
            Run::new(&nginx.url("/v/{{row.id}}"))
                .args(["--data", &data, "--data-order", "random", "--seed", seed])
                .args(["-n", "40", "-c", "1", "-t", "1"]),
            40,
        );
        numbers(&nginx)
    };
    let first = order("1");
    assert_eq!(first.len(), 40);
    for pass in first.chunks(20) {
        assert_once_each(pass.to_vec(), 20, &format!("one pass: {pass:?}"));
    }
    assert_ne!(
        first[..20],
        (1..=20).collect::<Vec<_>>(),
        "not in file order"
    );
    assert_eq!(order("1"), first, "the same seed, the same order");
    assert_ne!(order("2")[..20], first[..20], "another seed, another order");
}

#[test]
fn seq_is_unique_pipelined() {
    if !have("nginx") {
        return;
    }
    // nginx closes each connection after 50 requests: those pipelined behind the 50th are
    // written again on a new connection, with the values they drew the first time.
    let nginx = serving_v_with("", "keepalive_requests 50;");
    let r = clean(
        Run::new(&nginx.url("/v/{{seq}}"))
            .args(["-H", "X-Id: {{seq}}"])
            .args(["-n", "300", "-c", "2", "-t", "1", "--pipeline", "4"]),
        300,
    );
    assert!(r.stats.pipeline_resent > 0, "some requests were resent");
    for (uri, id) in logged(&nginx) {
        assert_eq!(uri[3..], id, "one draw per pipelined request");
    }
    assert_once_each(numbers(&nginx), 300, "pipelined, resent");
}

#[test]
fn seq_is_unique_over_http2_streams() {
    if !have("nginx") {
        return;
    }
    // A GOAWAY after 40 requests on a connection: streams above its last stream id are sent
    // again on a new connection, with the values they drew the first time.
    let nginx = Nginx::start_logging(
        "escape=none '$request_uri $http_x_id $server_protocol'",
        "http2;",
        "location /v/ { return 200 \"ok\"; }\n    keepalive_requests 40;",
    );
    let r = clean(
        Run::new(&nginx.url("/v/{{seq}}"))
            .args(["-H", "X-Id: {{seq}}"])
            .args(["--http2", "--streams", "4", "-n", "300", "-c", "2"]),
        300,
    );
    assert!(r.stats.h2.goaways > 0, "{:?}", r.stats.h2);
    for (uri, rest) in logged(&nginx) {
        assert_eq!(rest, format!("{} HTTP/2.0", &uri[3..]), "{uri}");
    }
    assert_once_each(numbers(&nginx), 300, "h2c, 4 streams");
}

#[test]
fn seq_is_unique_over_tls_with_http1_and_http2() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("values-tls");
    let pki = make_pki(&dir);
    let certs = format!(
        "ssl_certificate {};\n    ssl_certificate_key {};",
        path(&pki.server_cert),
        path(&pki.server_key)
    );
    for (tail, extra) in [
        ("ssl;", &[][..]),
        ("ssl http2;", &["--http2", "--streams", "4"]),
    ] {
        let nginx = serving_v(&format!("{tail}\n    {certs}"));
        clean(
            Run::new(&nginx.https_url("/v/{{seq}}"))
                .args(["--cacert", &path(&pki.ca), "-n", "200", "-c", "2"])
                .args(extra),
            200,
        );
        assert_once_each(numbers(&nginx), 200, tail);
    }
}

#[test]
fn seq_is_unique_in_the_open_model_and_counts_what_completed() {
    if !have("nginx") {
        return;
    }
    let nginx = serving_v("");
    let r = Run::new(&nginx.url("/v/{{seq}}"))
        .args(["--rate", "200", "-d", "1s", "-c", "4"])
        .ok();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.error_reasons);
    assert!(r.stats.requests > 0);
    let got = numbers(&nginx);
    let unique: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(unique.len(), got.len(), "no number twice: {got:?}");
    let s = &r.stats;
    if s.abandoned == 0 && s.waiting == 0 {
        // Every request sent completed: the log holds exactly the first places.
        assert_eq!(s.sent, s.requests);
        assert_once_each(got, s.requests, "the first places, no gap");
    } else {
        // A request in flight at the end may or may not have reached nginx's log.
        let logged = got.len() as u64;
        assert!(
            (s.requests..=s.sent).contains(&logged),
            "{logged} logged, {} sent, {} completed",
            s.sent,
            s.requests
        );
        assert!(unique.iter().all(|&n| n <= s.sent + s.waiting), "{got:?}");
    }
}

/// The reference backend; `/echo` keeps the first 256 requests it received.
fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

/// The templated body's run: `-n 150` POSTs of `{"id":{{seq}},"n":"{{pick(x,y)}}"}` (bodies
/// of 16 to 18 bytes) to `url`.
fn post_bodies(url: &str, extra: &[&str]) -> Run {
    Run::new(url)
        .args(["-m", "POST", "-H", "Content-Type: application/json"])
        .args(["--body", r#"{"id":{{seq}},"n":"{{pick(x,y)}}"}"#])
        .args(["-n", "150", "-c", "3", "-t", "1"])
        .args(extra)
}

/// Every echoed request had one Content-Length, equal to its body's length, and the bodies
/// were each id of 1..=150 once with a pick of x or y.
fn assert_bodies(echoed: &[Echoed], what: &str) {
    assert_eq!(echoed.len(), 150, "{what}");
    let mut ids = Vec::new();
    for e in echoed {
        let body = String::from_utf8(e.body.clone()).unwrap();
        assert_eq!(
            e.header("content-length"),
            [body.len().to_string()],
            "{what}: {body}"
        );
        let id = body
            .strip_prefix(r#"{"id":"#)
            .and_then(|r| r.split_once(','))
            .and_then(|(id, rest)| Some((id.parse::<u64>().ok()?, rest)));
        let (id, rest) = id.unwrap_or_else(|| panic!("{what}: {body}"));
        assert!(
            rest == r#""n":"x"}"# || rest == r#""n":"y"}"#,
            "{what}: {body}"
        );
        assert_eq!(
            e.query.as_deref(),
            Some(format!("id={id}").as_str()),
            "{what}"
        );
        ids.push(id);
    }
    assert_once_each(ids, 150, what);
}

#[test]
fn a_templated_body_has_its_own_content_length_per_request() {
    for (what, extra) in [
        ("HTTP/1.1", &[][..]),
        ("pipelined", &["--pipeline", "4"]),
        ("HTTP/2", &["--http2", "--streams", "4"]),
    ] {
        let server = backend();
        let url = format!("http://{}/echo?id={{{{seq}}}}", server.local_addr());
        clean(post_bodies(&url, extra), 150);
        assert_bodies(&server.echoed(), what);
    }
}

#[test]
fn nginx_reads_each_templated_body_by_its_content_length() {
    if !have("nginx") {
        return;
    }
    let server = backend();
    // nginx reads the body (so logs $request_body) to pass it on to the backend's /echo.
    let nginx = Nginx::start_logging(
        "escape=none '$request_uri $content_length $request_body'",
        "",
        &format!(
            "location /echo {{ proxy_pass http://{}; }}",
            server.local_addr()
        ),
    );
    clean(post_bodies(&nginx.url("/echo?id={{seq}}"), &[]), 150);
    assert_eq!(nginx.logged_requests(), 150);
    let lines = nginx.log_lines();
    assert_eq!(lines.len(), 150);
    for l in &lines {
        let mut f = l.splitn(3, ' ');
        let (uri, len, body) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        assert_eq!(len, body.len().to_string(), "{l}");
        let id = uri.strip_prefix("/echo?id=").unwrap();
        assert!(body.starts_with(&format!(r#"{{"id":{id},"n":""#)), "{l}");
    }
    assert_bodies(&server.echoed(), "through nginx");
}

/// Runs shard `i` of 3 of `args` against `url`, which must complete `expect` requests.
fn shard(url: &str, i: u32, args: &[&str], expect: u64) {
    let dir = tempdir("values-shard");
    clean(
        Run::new(url)
            .args(["--shard", &format!("{i}/3"), "--run-id", "v32"])
            .args(["--results-dir", &path(&dir)])
            .args(args),
        expect,
    );
}

#[test]
fn three_shards_share_the_sequence_and_the_rows() {
    if !have("nginx") {
        return;
    }
    let nginx = serving_v("");
    for i in 0..3 {
        shard(&nginx.url("/v/{{seq}}"), i, &["-n", "30", "-c", "3"], 10);
    }
    assert_once_each(numbers(&nginx), 30, "the shards' union");

    let dir = tempdir("values-shard-rows");
    let data = rows_csv(&dir, 1, 10);
    let nginx = serving_v("");
    let split = [
        "--data",
        &data,
        "--data-split",
        "split",
        "--data-end",
        "stop",
    ];
    // 10 rows over 3 shards: 4, 3 and 3.
    for (i, rows) in [(0, 4), (1, 3), (2, 3)] {
        shard(
            &nginx.url("/v/{{row.id}}"),
            i,
            &[&split[..], &["-c", "3"]].concat(),
            rows,
        );
    }
    assert_once_each(numbers(&nginx), 10, "every row once across the shards");
}

/// `loadbench run BACKEND/PATH ARGS -n 5 -c 1` is refused: exit code 2, one line on stderr
/// holding each of `says`, and no request reached the backend.
fn assert_refused(path: &str, args: &[&str], says: &[&str]) {
    let server = backend();
    let ran = Run::new(&format!("http://{}{path}", server.local_addr()))
        .args(args)
        .args(["-n", "5", "-c", "1"])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    for s in says {
        assert!(stderr.contains(s), "{s:?} not in {stderr}");
    }
    assert_eq!(server.stats().total, 0, "no request was sent: {stderr}");
}

#[test]
fn bad_values_are_one_line_naming_where_and_exit_2_before_any_request() {
    assert_refused(
        "/{{int(9,1)}}",
        &[],
        &["the URL", "min 9 is above its max 1", "MIN ≤ MAX"],
    );
    let body = "{\n  \"a\": {{nope}}\n}";
    assert_refused(
        "/echo",
        &["-m", "POST", "--body", body],
        &["the body, line 2 column 8: '{{nope}}' is not a value"],
    );
    assert_refused(
        "/{{seq",
        &[],
        &[
            "the URL",
            "column 24: a {{ without its }}: close it, or write {{'{{'}} for a literal {{",
        ],
    );
    assert_refused(
        "/{{row.id}}",
        &[],
        &["{{row.id}} reads a data file", "give --data FILE"],
    );
}

#[test]
fn bad_data_files_and_flags_are_one_line_and_exit_2_before_any_request() {
    let dir = tempdir("values-bad");
    let data = rows_csv(&dir, 1, 3);
    let empty = path(&write(&dir, "empty.csv", ""));
    let header_only = path(&write(&dir, "header.csv", "id,name\n"));
    assert_refused(
        "/{{row.missing}}",
        &["--data", &data],
        &["has no column \"missing\"; its columns: id, name"],
    );
    assert_refused(
        "/{{row.id}}",
        &["--data", "/no/such.csv"],
        &["cannot read --data /no/such.csv", "check the path"],
    );
    assert_refused("/{{row.id}}", &["--data", &empty], &[&empty, "is empty"]);
    assert_refused(
        "/{{row.id}}",
        &["--data", &header_only],
        &[&header_only, "has a header but no rows: add rows"],
    );
    assert_refused(
        "/{{row.id}}",
        &["--data", &data, "--data-end", "stop"],
        &["--data-end stop", "leave -d/-n out"],
    );
    // clap's own refusal, made one line naming the missing flag.
    assert_refused(
        "/{{seq}}",
        &["--data-order", "random"],
        &["not provided: --data <FILE>"],
    );
}
