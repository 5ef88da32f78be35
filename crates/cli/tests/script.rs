//! `run --script FILE` (issue 37, docs/coming-from.md "wrk scripts"): wrk's Lua scripts run
//! unchanged. Each hook and field of wrk's API is checked against what a real server received
//! (nginx's access log, the reference backend's `/echo` log and `/stats` counts) and against
//! the saved result; bad scripts are one line naming the file and line, exit code 2, before
//! any request is sent.

use crate::support::nginx::Nginx;
use crate::support::{have, tempdir, Run};
use crate::tls::{make_pki, path};
use loadbench_model::{ErrorKind, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Writes `lua` to a fresh file and returns its path.
fn script(lua: &str) -> PathBuf {
    let p = tempdir("script").join("s.lua");
    std::fs::write(&p, lua).unwrap();
    p
}

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

fn url(server: &Server, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

/// nginx answering every path with `ok`, logging `METHOD URI X-A` per request.
fn nginx() -> Nginx {
    Nginx::start_logging(
        "escape=none '$request_method $request_uri $http_x_a'",
        "",
        "location / { return 200 \"ok\"; }",
    )
}

/// `--script FILE` and the run's other flags.
fn scripted(url: &str, file: &Path, args: &[&str]) -> Run {
    Run::new(url)
        .args(["--script", &file.display().to_string()])
        .args(args)
}

/// `loadbench run URL --script FILE ARGS --save F -- SCRIPT_ARGS`: its saved result (exit 0).
fn with_script_args(url: &str, file: &Path, args: &[&str], script_args: &[&str]) -> RunResult {
    let dir = tempdir("script-args");
    let save = dir.join("r.json");
    let out = crate::support::bin()
        .args(["run", url, "--quiet", "--script"])
        .arg(file)
        .args(args)
        .arg("--save")
        .arg(&save)
        .arg("--")
        .args(script_args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", crate::support::text(&out));
    RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap()
}

fn stdout_of(r: &crate::support::Ran) -> String {
    r.text().0
}

/// A script that only sets wrk's fields: nothing runs per request, every request is what
/// the fields say (method, path, headers, body, Host), and the backend counts what we count.
#[test]
fn a_script_setting_only_wrk_fields_sends_that_request() {
    let server = backend();
    let s = script(
        r#"
wrk.method = "POST"
wrk.path = "/echo"
wrk.body = "a=1&b=2"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["X-Static"] = "yes"
"#,
    );
    let r = scripted(&url(&server, "/"), &s, &["-n", "20", "-c", "2", "-t", "1"]).ok();
    assert_eq!(r.stats.requests, 20);
    assert_eq!(server.stats().route("/echo"), 20);
    assert_eq!(server.stats().total, 20, "nothing else was sent");
    let echoed = server.echoed();
    assert_eq!(echoed.len(), 20);
    for e in echoed {
        assert_eq!((e.method.as_str(), e.path.as_str()), ("POST", "/echo"));
        assert_eq!(e.body, b"a=1&b=2");
        assert_eq!(e.header("x-static"), ["yes"]);
        assert_eq!(e.header("content-length"), ["7"]);
        assert_eq!(e.header("host"), [server.local_addr().to_string().as_str()]);
    }
}

/// `request()` builds each request: a path of its own per call, method and header from
/// `wrk.format`; nginx logged exactly those, each once.
#[test]
fn request_builds_every_request() {
    if !have("nginx") {
        return;
    }
    let nginx = nginx();
    let s = script(
        r#"
local n = 0
math.randomseed(7)
function request()
  n = n + 1
  return wrk.format("PATCH", "/r/" .. n .. "/" .. math.random(1000, 9999), { ["X-A"] = "built" })
end
"#,
    );
    let r = scripted(&nginx.url("/"), &s, &["-n", "30", "-c", "3", "-t", "1"]).ok();
    assert_eq!(r.stats.requests, 30);
    assert_eq!(nginx.logged_requests(), 30);
    let mut seen = Vec::new();
    for line in nginx.log_lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!((parts[0], parts[2]), ("PATCH", "built"), "{line}");
        let n: u64 = parts[1].split('/').nth(2).unwrap().parse().unwrap();
        seen.push(n);
    }
    seen.sort_unstable();
    assert_eq!(
        seen,
        (1..=30).collect::<Vec<_>>(),
        "each call once, the first included"
    );
}

/// `response(status, headers, body)` sees every answer; the counts it keeps per thread,
/// read in `done` through `thread:get`, equal ours.
#[test]
fn response_sees_each_answer_and_done_reads_the_threads() {
    let server = backend();
    let s = script(
        r#"
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
local i = 0
function request()
  i = i + 1
  if i % 3 == 0 then return wrk.format("GET", "/status/503") end
  return wrk.format("GET", "/")
end
counts = {}
bodies_ok = 0
function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
  if (status == 200 and body == "hello world") or (status == 503 and headers["content-length"] == tostring(#body)) then
    bodies_ok = bodies_ok + 1
  end
end
function done(summary, latency, requests)
  local total, ok = {}, 0
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("counts")) do total[status] = (total[status] or 0) + n end
    ok = ok + t:get("bodies_ok")
  end
  print("status 200 " .. (total[200] or 0))
  print("status 503 " .. (total[503] or 0))
  print("bodies " .. ok)
end
"#,
    );
    let ran = scripted(&url(&server, "/"), &s, &["-n", "60", "-c", "4", "-t", "2"]).json();
    let out = stdout_of(&ran);
    let r = ran.result();
    assert_eq!(r.stats.requests, 60);
    let ours = |code| r.stats.status.0.get(&code).copied().unwrap_or(0);
    assert!(ours(503) > 0 && ours(200) > 0, "{:?}", r.stats.status);
    assert!(
        out.contains(&format!("status 200 {}\n", ours(200))),
        "{out}"
    );
    assert!(
        out.contains(&format!("status 503 {}\n", ours(503))),
        "{out}"
    );
    assert!(out.contains("bodies 60\n"), "{out}");
    assert_eq!(server.stats().total, 60);
}

/// `done(summary, latency, requests)` gets wrk's fields: the same numbers as the result.
#[test]
fn done_prints_the_numbers_of_the_result() {
    let server = backend();
    let s = script(
        r#"
wrk.path = "/status/404"
function done(summary, latency, requests)
  local e = summary.errors
  print(string.format("summary %d %d %d %d %d %d %d %d", summary.duration, summary.requests,
    summary.bytes, e.connect, e.read, e.write, e.status, e.timeout))
  print(string.format("latency %.3f %.3f %.3f", latency.min, latency.max, latency:percentile(50)))
  local v, c = latency(1)
  print(string.format("first %.3f %d %d", v, c, #latency))
  print(string.format("requests %.3f %.3f", requests.min, requests.max))
end
"#,
    );
    let ran = scripted(&url(&server, "/"), &s, &["-n", "40", "-c", "2", "-t", "1"]).json();
    let out = stdout_of(&ran);
    let r = ran.result();
    let s = &r.stats;
    let want = format!(
        "summary {} {} {} 0 0 0 40 0",
        s.elapsed_us, s.requests, s.bytes_read
    );
    assert!(out.contains(&want), "{want} in {out}");
    let h = &s.latency.hist;
    let us = |ns: u64| format!("{:.3}", ns as f64 / 1000.0);
    let want = format!("latency {} {} ", us(h.min_ns()), us(h.max_ns()));
    assert!(out.contains(&want), "{want} in {out}");
    let (v, c) = h.recorded_buckets().next().unwrap();
    let buckets = h.recorded_buckets().count();
    assert!(
        out.contains(&format!("first {} {c} {buckets}", us(v))),
        "{out}"
    );
    assert!(out.contains("requests "), "{out}");
}

/// `setup(thread)`: `thread:set` reaches the worker's state (its `init` reads it), `init`
/// gets the arguments after `--`, and `thread.addr` sends the thread's connections
/// elsewhere (found with `wrk.lookup`, checked with `wrk.connect`).
#[test]
fn setup_set_init_args_and_thread_addr() {
    let (a, b) = (backend(), backend());
    let closed = crate::support::free_port();
    let s = script(&format!(
        r#"
local n = 0
function setup(thread)
  n = n + 1
  thread:set("id", n)
  local addrs = wrk.lookup("127.0.0.1", "{b}")
  assert(wrk.connect(addrs[1]), "the second backend accepts")
  assert(not wrk.connect(wrk.lookup("127.0.0.1", {closed})[1]), "nothing listens there")
  thread.addr = addrs[1]
  assert(tostring(thread.addr) == "127.0.0.1:{b}")
end
function init(args)
  wrk.path = "/echo"
  wrk.headers["X-Id"] = id .. "-" .. args[1] .. "-" .. #args
end
"#,
        b = b.local_addr().port()
    ));
    let r = with_script_args(
        &url(&a, "/"),
        &s,
        &["-n", "20", "-c", "2", "-t", "2"],
        &["foo", "bar"],
    );
    assert_eq!(r.stats.requests, 20);
    assert_eq!(a.stats().total, 0, "no request went to the URL's backend");
    assert_eq!(b.stats().route("/echo"), 20);
    let ids: BTreeMap<String, usize> = b.echoed().iter().fold(BTreeMap::new(), |mut m, e| {
        *m.entry(e.header("x-id").join(",")).or_default() += 1;
        m
    });
    let keys: Vec<&str> = ids.keys().map(String::as_str).collect();
    assert_eq!(keys, ["1-foo-2", "2-foo-2"], "{ids:?}");
}

/// A `request()` returning three requests at once (wrk's pipeline.lua): each is answered
/// and counted, and `-n` counts requests.
#[test]
fn pipelined_requests_are_each_counted() {
    let server = backend();
    let s = script(
        r#"
function init(args)
  local r = {}
  r[1] = wrk.format(nil, "/")
  r[2] = wrk.format(nil, "/json")
  r[3] = wrk.format("POST", "/echo", nil, "x")
  req = table.concat(r)
end
function request()
  return req
end
"#,
    );
    let r = scripted(&url(&server, "/"), &s, &["-n", "30", "-c", "2", "-t", "1"]).ok();
    assert_eq!((r.stats.requests, r.stats.sent), (30, 30));
    let st = server.stats();
    assert_eq!(
        (st.route("/"), st.route("/json"), st.route("/echo")),
        (10, 10, 10)
    );
}

/// `delay()` waits before each request of a connection: one connection waiting 200 ms
/// between requests completes at most 6 in a second, however fast the target is.
#[test]
fn delay_spaces_a_connections_requests() {
    let server = backend();
    let s = script("function delay() return 200 end\n");
    let r = scripted(&url(&server, "/"), &s, &["-d", "1s", "-c", "1", "-t", "1"]).ok();
    assert!(
        (1..=6).contains(&r.stats.requests),
        "{} requests",
        r.stats.requests
    );
    assert!(server.stats().total <= 7);
}

/// The open model calls `request()` at each intended send time; HTTPS works too.
#[test]
fn request_in_the_open_model_and_over_tls() {
    if !have("nginx") {
        return;
    }
    let dir = tempdir("script-tls");
    let pki = make_pki(&dir);
    let nginx = Nginx::start_logging(
        "escape=none '$request_method $request_uri $http_x_a'",
        &format!(
            "ssl;\n    ssl_certificate {};\n    ssl_certificate_key {};",
            path(&pki.server_cert),
            path(&pki.server_key)
        ),
        "location / { return 200 \"ok\"; }",
    );
    let s = script(
        "local n = 0\nfunction request() n = n + 1 return wrk.format('GET', '/o/' .. n) end\n",
    );
    let file = s.display().to_string();
    let r = Run::new(&nginx.https_url("/"))
        .args(["--script", &file, "--cacert", &path(&pki.ca)])
        .args(["--rate", "40", "-d", "1s", "-t", "1"])
        .ok();
    assert!(r.stats.requests > 0);
    let logged = nginx.logged_requests();
    assert_eq!(logged, r.stats.sent, "every sent request was logged");
    assert!(nginx.log_lines().iter().all(|l| l.starts_with("GET /o/")));
}

/// A `request()` that fails on some calls: those are the `script` error class (nothing
/// sent), the load goes on, and the first failure's message names the file and line.
#[test]
fn a_failing_request_is_the_script_error_class() {
    let server = backend();
    let s = script(
        "local n = 0\nfunction request()\n  n = n + 1\n  if n % 2 == 0 then error('boom ' .. n) end\n  return wrk.format(nil, '/')\nend\n",
    );
    let ran = scripted(&url(&server, "/"), &s, &["-n", "20", "-c", "1", "-t", "1"]).json();
    let err = ran.text().1;
    let r: RunResult = ran.result();
    assert_eq!(r.stats.errors.get(ErrorKind::Script), 10);
    assert_eq!(r.stats.requests, 10);
    assert_eq!(server.stats().total, 10);
    let file = s.display().to_string();
    assert!(err.contains(&format!("{file}:4: boom 2")), "{err}");
}

/// What `run_bad` checks: one line on stderr containing `want`, exit code 2, and nothing
/// sent to the backend.
fn refused(lua: Option<&str>, extra: &[&str], want: &dyn Fn(&str) -> String) {
    let server = backend();
    let file = match lua {
        Some(l) => script(l),
        None => tempdir("script").join("missing.lua"),
    };
    let ran = scripted(
        &url(&server, "/"),
        &file,
        &[&["-n", "10", "-c", "1"][..], extra].concat(),
    )
    .json();
    let err = ran.text().1;
    let shown = file.display().to_string();
    let want = want(&shown);
    assert_eq!(ran.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(&want), "{want} in {err}");
    assert_eq!(server.stats().total, 0, "nothing sent");
}

#[test]
fn bad_scripts_are_one_line_with_the_place_before_any_load() {
    refused(Some("wrk.path = \n"), &[], &|f| format!("{f}:2:"));
    refused(
        Some("function setup(t)\n  local x = nil\n  x.y = 1\nend\n"),
        &[],
        &|f| format!("setup: {f}:3:"),
    );
    refused(
        Some("function init(args)\n  error('no')\nend\n"),
        &[],
        &|f| format!("init: {f}:2: no"),
    );
    refused(
        Some("\nfunction request()\n  return nil\nend\n"),
        &[],
        &|f| format!("{f}:2: request() returned a nil, not a string"),
    );
    refused(
        Some("function request() return 'hello' end\n"),
        &[],
        &|_| "request() returned an incomplete request".into(),
    );
    refused(None, &[], &|f| f.to_string());
    refused(
        Some("function delay() return 10 end\n"),
        &["--rate", "10"],
        &|_| "delay()".into(),
    );
    refused(Some("wrk.path = '/'\n"), &["--http2"], &|_| {
        "--http2".into()
    });
    refused(
        Some("wrk.path = '/'\n"),
        &["-u", "GET http://127.0.0.1:1/json"],
        &|_| "cannot be combined with".into(),
    );
}

/// Shards run the script too: each shard's share of `-n`, every request the script's.
#[test]
fn each_shard_runs_the_script() {
    let server = backend();
    let s = script("function request() return wrk.format('PUT', '/echo', nil, 'x') end\n");
    let mut total = 0;
    for i in 0..2 {
        let shard = format!("{i}/2");
        let r = scripted(&url(&server, "/"), &s, &["-n", "20", "-c", "2", "-t", "1"])
            .args(["--shard", &shard, "--run-id", "s37"])
            .ok();
        assert_eq!(r.stats.requests, 10, "shard {shard}");
        total += r.stats.requests;
    }
    assert_eq!(server.stats().route("/echo"), total);
    assert!(server
        .echoed()
        .iter()
        .all(|e| e.method == "PUT" && e.body == b"x"));
}

/// `wrk.thread:stop()` from `response()` stops its thread: no request after it, and a timed
/// run whose only thread stopped ends then, not at its deadline.
#[test]
fn thread_stop_ends_the_threads_requests() {
    let server = backend();
    let s = script(
        "local n = 0\nfunction response(status, headers, body)\n  n = n + 1\n  if n == 5 then wrk.thread:stop() end\nend\n",
    );
    let r = scripted(&url(&server, "/"), &s, &["-d", "20s", "-c", "1", "-t", "1"]).ok();
    assert_eq!(r.stats.requests, 5);
    assert_eq!(server.stats().total, 5);
    assert!(r.stats.elapsed_us < 15_000_000, "{} µs", r.stats.elapsed_us);
}
