//! gRPC end to end (`grpc://` URLs): `loadbench run` against a real grpc-go server built from
//! the Go module proxy (examples/targets/grpc-go: grpc-go's own health service, with an
//! interceptor that counts the calls by status code and prints the counts when it stops).
//! The calls are `grpc.health.v1.Health/Check` from the health.proto fixture: a known service
//! answers OK, an unknown one NOT_FOUND. In the closed and the open model, loadbench's count
//! per status must equal the server's; bad input (an unknown service or method, a message
//! that does not match, no --proto) is one line and exit code 2, before any load.

use crate::support::nginx::Nginx;
use crate::support::{free_port, have, refused, tempdir, Run};
use crate::tls::{make_pki, path};
use loadbench_model::{grpc_code_name, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

/// The service the server knows (Check answers SERVING, status OK).
const KNOWN: &str = r#"{"service": "loadbench.ok"}"#;
/// A service it does not know (Check answers the status NOT_FOUND).
const UNKNOWN: &str = r#"{"service": "no.such.Service"}"#;
const CHECK: &str = "grpc.health.v1.Health/Check";

pub(crate) fn proto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc/health.proto")
}

/// The server-streaming service's fixture (its messages are the well-known wrapper types).
fn stream_proto() -> PathBuf {
    proto().with_file_name("stream.proto")
}

/// Count: N StringValue messages for a UInt32Value N.
const COUNT: &str = "loadbench.test.Stream/Count";

/// The grpc-go server, stopped (SIGKILL) when dropped.
pub(crate) struct GrpcGo {
    child: Child,
    out: BufReader<ChildStdout>,
    addr: String,
}

impl GrpcGo {
    /// Builds (cached by build.sh) and starts it on a free loopback port; `None` (a skip)
    /// when there is no Go toolchain outside CI.
    pub(crate) fn start() -> Option<GrpcGo> {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/targets/grpc-go/build.sh");
        let built = Command::new(script).output().expect("build.sh runs");
        let stderr = String::from_utf8_lossy(&built.stderr);
        if !built.status.success() {
            let no_go = built.status.code() == Some(2);
            if no_go && std::env::var_os("CI").is_none() {
                eprintln!("skipping: {stderr}");
                return None;
            }
            panic!("grpc-go did not build (CI must install Go, see .ci/run): {stderr}");
        }
        let bin = String::from_utf8_lossy(&built.stdout).trim().to_string();
        let mut child = Command::new(bin)
            .args(["-listen", "127.0.0.1:0", "-serving", "loadbench.ok"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("grpc-go starts");
        let mut out = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        out.read_line(&mut line)
            .expect("grpc-go says where it listens");
        let addr = line
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("grpc-go said {line:?}"))
            .trim()
            .to_string();
        Some(GrpcGo { child, out, addr })
    }

    pub(crate) fn url(&self) -> String {
        format!("grpc://{}", self.addr)
    }

    /// Stops it (SIGTERM: calls in flight finish) and reads the calls it counted by status
    /// code, named as loadbench names them.
    pub(crate) fn stop(self) -> BTreeMap<String, u64> {
        self.stop_with_messages().0
    }

    /// [`Self::stop`], and the messages its server-streaming calls sent.
    fn stop_with_messages(self) -> (BTreeMap<String, u64>, u64) {
        let (by_name, messages, _) = self.stop_all();
        (by_name, messages)
    }

    /// [`Self::stop`], the messages its server-streaming calls sent, and the reflection
    /// calls it answered (not among the calls).
    fn stop_all(mut self) -> (BTreeMap<String, u64>, u64, u64) {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(killed.is_ok_and(|s| s.success()));
        let mut rest = String::new();
        self.out
            .read_to_string(&mut rest)
            .expect("grpc-go's counts");
        let last = rest.lines().last().unwrap_or_default();
        let by_code: BTreeMap<u16, u64> =
            serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {rest:?}"));
        let messages = rest
            .lines()
            .find_map(|l| l.strip_prefix("messages "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no messages line: {rest:?}"));
        let reflections = rest
            .lines()
            .find_map(|l| l.strip_prefix("reflections "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no reflections line: {rest:?}"));
        let by_name = by_code
            .into_iter()
            .map(|(code, n)| (grpc_code_name(code).to_string(), n))
            .collect();
        (by_name, messages, reflections)
    }
}

impl Drop for GrpcGo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `loadbench run` of Check with `json` as the request, and `args`.
fn check(url: &str, json: &str, args: &[&str]) -> Run {
    let proto = proto();
    Run::new(url)
        .args(["--proto", proto.to_str().unwrap(), "--grpc-method", CHECK])
        .args(["--body", json])
        .args(args)
}

/// `n` calls, all answered (no error class) with HTTP/2 200 and counted under `code` only.
fn assert_calls(r: &RunResult, code: &str, n: u64) {
    assert_eq!(r.stats.requests, n, "{:?}", r.stats.errors);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.status.0.get(&200), Some(&n), "{:?}", r.stats.status);
    assert_eq!(r.stats.grpc.count(code), n, "{:?}", r.stats.grpc);
    assert_eq!(r.stats.grpc.calls.len(), 1, "{:?}", r.stats.grpc);
    assert_eq!(r.stats.grpc.no_status, 0);
    // A unary call answered OK brings its one response message; the others none.
    let messages = if code == "OK" { n } else { 0 };
    assert_eq!(r.stats.grpc.messages, messages, "{:?}", r.stats.grpc);
    // Each call that failed by gRPC is a failed answer of the second it came in.
    let failed: u64 = r.stats.series.0.iter().map(|p| p.failed).sum();
    assert_eq!(failed, n - messages, "{:?}", r.stats.series);
    assert!(
        r.config.url.ends_with("/grpc.health.v1.Health/Check"),
        "{}",
        r.config.url
    );
}

/// The server's counts by status name.
fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn closed_model_counts_per_status_equal_grpc_gos() {
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let url = server.url();
    let slo = ["--slo", "errors<1%"];
    let ok = check(&url, KNOWN, &["-c", "4", "-n", "300", "--streams", "4"]);
    let ok = ok.args(slo).ok();
    assert_calls(&ok, "OK", 300);
    assert!(ok.stats.h2.max_streams_in_flight > 1, "{:?}", ok.stats.h2);
    assert_eq!(
        ok.summary.as_ref().map(|s| s.non_success_responses),
        Some(0)
    );
    // A call answered NOT_FOUND is a failed answer, though its HTTP status is a 200: the
    // error gate fails (exit 4) and the report counts it beside non-2xx/3xx responses.
    let ran = check(&url, UNKNOWN, &["-c", "2", "-n", "100", "-o", "text"]);
    let ran = ran.args(slo).json();
    let (stdout, stderr) = ran.text();
    assert_eq!(ran.code(), Some(4), "{stdout}{stderr}");
    for want in [
        "NOT_FOUND 100",
        "Non-2xx/3xx or non-OK calls",
        "0 of 100 attempts got an OK answer",
    ] {
        assert!(stdout.contains(want), "{want}: {stdout}");
    }
    let missing = ran.result();
    assert_calls(&missing, "NOT_FOUND", 100);
    assert_eq!(
        missing.summary.as_ref().map(|s| s.non_success_responses),
        Some(100)
    );
    assert_eq!(server.stop(), counts(&[("OK", 300), ("NOT_FOUND", 100)]));
}

#[test]
fn open_model_counts_per_status_equal_grpc_gos() {
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let url = server.url();
    let ok = check(&url, KNOWN, &["--rate", "200", "-n", "200"]).ok();
    assert_calls(&ok, "OK", 200);
    assert_eq!(ok.config.load.model_name(), "open");
    let missing = check(
        &url,
        UNKNOWN,
        &["--rate", "100", "-n", "60", "--streams", "8"],
    )
    .ok();
    assert_calls(&missing, "NOT_FOUND", 60);
    assert_eq!(server.stop(), counts(&[("OK", 200), ("NOT_FOUND", 60)]));
}

/// Issue 41: `--timeout` is each call's deadline, sent as `grpc-timeout`. grpc-go delays a
/// call by its `x-delay-ms` metadata (an `-H` header) and answers DEADLINE_EXCEEDED at once
/// when the deadline it got is sooner: a 2 s call under a 500 ms deadline ends so, a 300 ms
/// call under a 1 s deadline ends OK (so the deadline it got was neither too short nor long).
#[test]
fn timeout_is_the_deadline_grpc_go_sees() {
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let url = server.url();
    let slow = |delay_ms: u32, timeout: &str, n: &str| {
        let delay = format!("x-delay-ms: {delay_ms}");
        check(&url, KNOWN, &["-c", "2", "-n", n, "--timeout", timeout])
            .args(["-H", &delay])
            .ok()
    };
    let late = slow(2000, "500ms", "20");
    assert_calls(&late, "DEADLINE_EXCEEDED", 20);
    assert_eq!(late.summary.map(|s| s.non_success_responses), Some(20));
    let in_time = slow(300, "1s", "10");
    assert_calls(&in_time, "OK", 10);
    // Each call waited its delay (a lower bound whatever the machine's load; the histogram
    // keeps 3 significant digits, so a little below).
    let fastest = in_time.stats.latency.hist.min_ns();
    assert!(fastest >= 299_000_000, "{fastest} ns");
    assert_eq!(
        server.stop(),
        counts(&[("OK", 10), ("DEADLINE_EXCEEDED", 20)])
    );
}

/// Issue 41: a server-streaming call's every response message is counted, and the call
/// ends with the stream's trailers. Count with 5 brings 5 messages a call: loadbench's
/// messages are 5 × its calls, and equal to what grpc-go sent, in both models; a call whose
/// messages come 100 ms apart lasts from the first to the last.
#[test]
fn server_streaming_counts_every_message_grpc_go_sent() {
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let url = server.url();
    let proto = stream_proto();
    let count = |n: &str, args: &[&str]| {
        let proto = proto.to_str().unwrap();
        Run::new(&url)
            .args(["--proto", proto, "--grpc-method", COUNT, "--body", n])
            .args(args)
            .ok()
    };
    let closed = count("5", &["-c", "2", "-n", "40", "--streams", "2"]);
    let open = count("5", &["--rate", "100", "-n", "30", "--streams", "4"]);
    // 10000 messages a call: streams longer than a flow-control window, split anywhere.
    let long = count("10000", &["-c", "1", "-n", "3"]);
    // 100 ms between two messages: a call lasts to its trailers, 4 pauses at least (a lower
    // bound whatever the machine's load; the histogram keeps 3 significant digits).
    let paused = count("5", &["-c", "2", "-n", "4", "-H", "x-delay-ms: 100"]);
    let fastest = paused.stats.latency.hist.min_ns();
    assert!(fastest >= 399_000_000, "{fastest} ns");
    let runs = [
        (&closed, 40, 5),
        (&open, 30, 5),
        (&long, 3, 10_000),
        (&paused, 4, 5),
    ];
    for (r, calls, each) in runs {
        assert_eq!(r.stats.requests, calls, "{:?}", r.stats.errors);
        assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
        assert_eq!(r.stats.grpc.count("OK"), calls, "{:?}", r.stats.grpc);
        assert_eq!(r.stats.grpc.messages, each * calls, "{:?}", r.stats.grpc);
        assert!(r.config.url.ends_with("/loadbench.test.Stream/Count"));
    }
    let (by_status, sent) = server.stop_with_messages();
    assert_eq!(by_status, counts(&[("OK", 77)]));
    assert_eq!(sent, 5 * 74 + 30_000);
}

/// The calls by gRPC status that a report in `format` (md, html, csv) shows, read back from
/// its gRPC status table.
fn rendered_counts(format: &str, out: &str) -> BTreeMap<String, u64> {
    let number = |cell: &str| -> u64 {
        let digits: String = cell.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or_else(|_| panic!("{cell:?}: {out}"))
    };
    let mut seen = BTreeMap::new();
    match format {
        "md" => {
            let table = &out[out.find("### gRPC status").expect("a gRPC section")..];
            for line in table.lines().skip(4).take_while(|l| l.starts_with('|')) {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                seen.insert(cells[2].to_string(), number(cells[3]));
            }
        }
        "html" => {
            let table = &out[out.find("<h3>gRPC status</h3>").expect("a gRPC table")..];
            let body = &table[..table.find("</table>").expect("its end")];
            for row in body.split("<th scope=\"row\">").skip(1) {
                let (name, rest) = row.split_once("</th>").expect("a row header");
                let calls = rest.split("<td>").nth(2).expect("a calls cell");
                seen.insert(name.to_string(), number(calls));
            }
        }
        _ => {
            let table = &out[out
                .find("grpc_code,grpc_status,calls\n")
                .expect("a gRPC table")..];
            for line in table.lines().skip(1).take_while(|l| !l.is_empty()) {
                let cells: Vec<&str> = line.split(',').collect();
                seen.insert(cells[1].to_string(), number(cells[2]));
            }
        }
    }
    seen
}

/// Issue 41: the calls by gRPC status are in every report format, and what each shows adds
/// up to grpc-go's own per-code counts.
#[test]
fn every_report_format_shows_the_calls_by_status_grpc_go_counted() {
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let url = server.url();
    let mut shown: BTreeMap<String, u64> = BTreeMap::new();
    for (json, n) in [(KNOWN, "30"), (UNKNOWN, "20")] {
        for format in ["md", "html", "csv"] {
            let ran = check(&url, json, &["-c", "2", "-n", n, "-o", format]).json();
            let (stdout, stderr) = ran.text();
            assert!(ran.saved.is_some(), "{format}: {stderr}");
            let counts = rendered_counts(format, &stdout);
            assert_eq!(counts, ran.result().stats.grpc.calls, "{format}");
            for (name, calls) in counts {
                *shown.entry(name).or_default() += calls;
            }
        }
    }
    assert_eq!(shown, counts(&[("OK", 90), ("NOT_FOUND", 60)]));
    assert_eq!(server.stop(), shown);
}

/// One line on stderr, exit code 2, and it holds `want`.
#[test]
fn bad_grpc_input_is_one_line_and_exit_2_before_any_load() {
    // Nothing listens there: a load that started would fail to connect, not exit 2 so.
    let url = format!("grpc://127.0.0.1:{}", free_port());
    let proto = proto();
    let proto = proto.to_str().unwrap();
    let method =
        |m: &str| Run::new(&url).args(["--proto", proto, "--grpc-method", m, "-n", "5", "-c", "1"]);
    refused(
        method("grpc.health.v1.Nope/Check"),
        "has no service grpc.health.v1.Nope; give one of: grpc.health.v1.Health",
    );
    refused(method("grpc.health.v1.Health/Chek"), "has no method Chek");
    let stream = stream_proto();
    let stream = stream.to_str().unwrap();
    refused(
        Run::new(&url).args([
            "--proto",
            stream,
            "--grpc-method",
            "loadbench.test.Stream/Gather",
        ]),
        "is a client-streaming method",
    );
    refused(
        method(CHECK).args(["--body", r#"{"servce": "x"}"#]),
        "--body does not match grpc.health.v1.HealthCheckRequest",
    );
    refused(
        Run::new(&url).args(["--proto", proto, "-n", "5"]),
        "needs --grpc-method package.Service/Method",
    );
    // Without --proto the server's reflection is asked first: nothing answers here.
    refused(
        Run::new(&url).args(["--grpc-method", CHECK, "-n", "5"]),
        "reflection could not be asked: Connection refused (os error 111): give the service's .proto file with --proto",
    );
    refused(
        Run::new("http://127.0.0.1:1/").args(["--proto", proto]),
        "are for grpc:// URLs",
    );
    refused(
        Run::new("grpc://127.0.0.1/").args(["--proto", proto, "--grpc-method", CHECK]),
        "no port",
    );
}

/// `grpcs://`: gRPC over TLS (ALPN h2) through a real proxy. nginx terminates TLS
/// (`listen … ssl http2`) and passes the calls on with `grpc_pass` to grpc-go: loadbench's
/// counts per status equal grpc-go's, and nginx logged every call. A `200` without a
/// `grpc-status` (nginx answering itself) is a failed answer. An untrusted certificate, and a
/// TLS listener without HTTP/2, are each one line and exit code 2 before any load.
#[test]
fn grpcs_through_nginx_counts_equal_grpc_gos() {
    if !have("nginx") {
        return;
    }
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let pki = make_pki(&tempdir("grpcs"));
    let tls = format!(
        "ssl_certificate {};\n    ssl_certificate_key {};",
        path(&pki.server_cert),
        path(&pki.server_key)
    );
    let pass = format!("location / {{ grpc_pass grpc://{}; }}", server.addr);
    let nginx = Nginx::start_logging("'$status'", &format!("ssl http2;\n    {tls}"), &pass);
    let url = format!("grpcs://127.0.0.1:{}", nginx.port);
    let ca = path(&pki.ca);
    let ok = check(&url, KNOWN, &["--cacert", &ca, "-c", "2", "-n", "120"]).ok();
    assert_calls(&ok, "OK", 120);
    let tls_stats = &ok.stats.tls;
    assert_eq!(tls_stats.full + tls_stats.resumed, 2, "{tls_stats:?}");
    let open = ["--cacert", &ca, "--rate", "100", "-n", "40"];
    let missing = check(&url, UNKNOWN, &open).ok();
    assert_calls(&missing, "NOT_FOUND", 40);
    refused(check(&url, KNOWN, &["-c", "1", "-n", "5"]), "--cacert");
    // An HTTP/2 server that is no gRPC server: its 200s carry no grpc-status, and a gRPC
    // client takes such an answer as a failure.
    let not_grpc = Nginx::start_with(
        &format!("ssl http2;\n    {tls}"),
        "location / { return 200 'not grpc'; }",
    );
    let url_200 = format!("grpcs://127.0.0.1:{}", not_grpc.port);
    let r = check(&url_200, KNOWN, &["--cacert", &ca, "-c", "1", "-n", "10"]).ok();
    assert_eq!(
        r.stats.status.0.get(&200),
        Some(&10),
        "{:?}",
        r.stats.status
    );
    assert_eq!(r.stats.grpc.no_status, 10, "{:?}", r.stats.grpc);
    assert_eq!(r.stats.grpc.failed_http_ok, Some(10), "{:?}", r.stats.grpc);
    let failed = r.summary.as_ref().map(|s| s.non_success_responses);
    assert_eq!(failed, Some(10));
    let plain = Nginx::start_tls(&tls);
    let no_h2 = format!("grpcs://127.0.0.1:{}", plain.port);
    refused(
        check(&no_h2, KNOWN, &["--cacert", &ca, "-c", "1", "-n", "5"]),
        "did not negotiate HTTP/2",
    );
    // The preflights make a TLS handshake, no call: every call came from the runs.
    assert_eq!(server.stop(), counts(&[("OK", 120), ("NOT_FOUND", 40)]));
    assert_eq!(nginx.logged_requests(), 160);
}

/// The reference backend answers gRPC (`loadbench serve`, so the demo and tests have a gRPC
/// target): a call's own message comes back with `OK`; the metadata `x-grpc-status` answers
/// that status and `x-stream-count` streams the message that many times. Over TLS too
/// (`serve --tls`, ALPN h2, a `grpcs://` URL). Its `/stats` count of calls equals loadbench's.
#[test]
fn the_reference_backend_answers_unary_and_streaming_grpc_calls() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = format!("grpc://{}", server.local_addr());
    let ok = check(&url, KNOWN, &["-c", "2", "-n", "100", "--streams", "4"]).ok();
    assert_calls(&ok, "OK", 100);
    // The echo is the request's own message: 5 bytes of prefix and 14 of message.
    assert_eq!(ok.stats.body.total, 100 * (5 + 14), "{:?}", ok.stats.body);
    let asked = ["-c", "1", "-n", "30", "-H", "x-grpc-status: 14"];
    assert_calls(&check(&url, KNOWN, &asked).ok(), "UNAVAILABLE", 30);
    let proto = stream_proto();
    let stream = Run::new(&url)
        .args(["--proto", proto.to_str().unwrap(), "--grpc-method", COUNT])
        .args([
            "--body",
            "3",
            "-H",
            "x-stream-count: 4",
            "--rate",
            "50",
            "-n",
            "20",
        ])
        .ok();
    assert_eq!(stream.stats.grpc.count("OK"), 20, "{:?}", stream.stats.grpc);
    assert_eq!(stream.stats.grpc.messages, 80, "{:?}", stream.stats.grpc);
    assert_eq!(server.stats().route("grpc"), 150);

    let (tls, cert) = crate::tls::tls_backend(&tempdir("grpcs-serve"));
    let url = format!("grpcs://{}", tls.local_addr());
    let args = ["--cacert", cert.to_str().unwrap(), "-c", "2", "-n", "40"];
    assert_calls(&check(&url, KNOWN, &args).ok(), "OK", 40);
    assert_eq!(tls.stats().route("grpc"), 40);
}

/// The live metrics count the calls by grpc-status as grpc-go and the saved result do:
/// Prometheus scrapes `loadbench_grpc_calls_total` while calls answered NOT_FOUND go (a
/// failed answer under HTTP 200), and its last values equal both, as do the per-second
/// series' failed answers.
#[test]
fn prometheus_counts_the_calls_by_status_as_grpc_go_does() {
    if !have("prometheus") {
        return;
    }
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let _machine = crate::support::loading();
    let port = free_port();
    let prom = crate::support::prometheus::Prometheus::start(&[format!("127.0.0.1:{port}")]);
    // A count, not a duration: a timed run's calls in flight at its end are answered by the
    // server but not counted by loadbench.
    let r = check(&server.url(), UNKNOWN, &["--rate", "1000", "-n", "3000"])
        .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
        .json()
        .result();
    let failed = r.stats.grpc.count("NOT_FOUND");
    assert_eq!(failed, 3000, "{:?}", r.stats.grpc);
    let q = "sum(last_over_time(loadbench_grpc_calls_total[10m]))";
    assert_eq!(
        prom.settle(q, failed as f64, 20),
        Some(failed as f64),
        "{}",
        prom.log()
    );
    let scraped = crate::metrics::by(&prom, "loadbench_grpc_calls_total", "code");
    assert_eq!(scraped, r.stats.grpc.calls);
    assert_eq!(server.stop(), counts(&[("NOT_FOUND", failed)]));
    let series: u64 = r.stats.series.0.iter().map(|p| p.failed).sum();
    assert_eq!(series, failed);
}

/// Without `--proto`, the call's descriptors come from grpc-go's reflection service, asked
/// once before the load: the calls then count per status as grpc-go counted them, as with the
/// file. A server without reflection (the reference backend), or a service its reflection does
/// not know, is one line naming `--proto`, exit 2, before any load.
#[test]
fn without_proto_the_call_is_read_from_the_servers_reflection() {
    let _busy = crate::support::loading();
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let url = server.url();
    let reflected = |json: &str, method: &str, args: &[&str]| {
        Run::new(&url)
            .args(["--grpc-method", method, "--body", json])
            .args(args)
    };
    let ok = reflected(KNOWN, CHECK, &["-c", "2", "-n", "120"]).ok();
    assert_calls(&ok, "OK", 120);
    let missing = reflected(UNKNOWN, CHECK, &["--rate", "100", "-n", "30"]).ok();
    assert_calls(&missing, "NOT_FOUND", 30);
    // The reflection knows the message: a field it does not have is refused.
    let bad = reflected(r#"{"nope": 1}"#, CHECK, &["-n", "5"]);
    refused(bad, "does not match grpc.health.v1.HealthCheckRequest");
    let unknown = reflected(KNOWN, "no.such.Service/Call", &["-n", "5"]);
    refused(unknown, "does not know no.such.Service");
    let (calls, _, reflections) = server.stop_all();
    assert_eq!(calls, counts(&[("OK", 120), ("NOT_FOUND", 30)]));
    assert_eq!(reflections, 4, "one reflection call before each run");
    let backend = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = format!("grpc://{}", backend.local_addr());
    let none = Run::new(&url).args(["--grpc-method", CHECK, "--body", KNOWN, "-n", "5"]);
    refused(none, "give the service's .proto file with --proto");
    // Its gRPC echo answered the reflection ask (with the ask itself): that one call, no load.
    assert_eq!(backend.stats().route("grpc"), 1, "{:?}", backend.stats());
    // Over TLS the ask goes with the load's TLS options (here its CA): the echo got it.
    let (tls, cert) = crate::tls::tls_backend(&tempdir("grpcs-reflect"));
    let url = format!("grpcs://{}", tls.local_addr());
    let ca = ["--cacert", cert.to_str().unwrap()];
    let none = Run::new(&url)
        .args(["--grpc-method", CHECK, "-n", "5"])
        .args(ca);
    refused(none, "give the service's .proto file with --proto");
    assert_eq!(tls.stats().route("grpc"), 1, "{:?}", tls.stats());
}

/// A scenario load against a `grpc://` target names its call with `proto` and `grpc_method`
/// (its `body` the JSON message): a closed and an open load of Check against grpc-go, whose
/// count per status equals the bench's. The target is a placeholder process whose `url` and
/// `ready.tcp` name grpc-go (running in this test, so its counts are read afterwards).
#[test]
fn a_scenario_loads_grpc_go_with_the_call_of_its_proto() {
    let _busy = crate::support::loading();
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let addr = server.url().trim_start_matches("grpc://").to_string();
    let dir = tempdir("grpc-scenario");
    std::fs::copy(proto(), dir.join("health.proto")).unwrap();
    let scenario = grpc_scenario(&addr);
    let file = dir.join("grpc.toml");
    std::fs::write(&file, scenario).unwrap();
    let (out, result) = crate::bench::bench(&file, &dir.join("results"), &[]);
    let (_, stderr) = crate::support::text(&out);
    let b = result.unwrap_or_else(|| panic!("a saved bench result: {stderr}"));
    let (mut seen, mut in_flight): (BTreeMap<String, u64>, u64) = (BTreeMap::new(), 0);
    for round in &b.rounds {
        let r = round.result.as_ref().expect("each round ran");
        assert!(r.config.url.ends_with(CHECK), "{}", r.config.url);
        let code = if round.load == 0 { "OK" } else { "NOT_FOUND" };
        assert!(r.stats.grpc.count(code) > 0, "{:?}", r.stats.grpc);
        assert_eq!(
            r.stats.grpc.answered(),
            r.stats.requests,
            "{:?}",
            r.stats.grpc
        );
        for (name, n) in &r.stats.grpc.calls {
            *seen.entry(name.clone()).or_default() += n;
        }
        in_flight += r.stats.abandoned;
    }
    // Every call counted was counted so by grpc-go; the calls in flight when a round ended
    // reached it too (answered, or cancelled by the round's end) but are not in the result.
    let got = server.stop();
    for (code, n) in &seen {
        let theirs = got.get(code).copied().unwrap_or(0);
        assert!(
            (*n..=n + in_flight).contains(&theirs),
            "{got:?} {seen:?} {in_flight}"
        );
    }
    let extra = got.values().sum::<u64>() - seen.values().sum::<u64>();
    assert!(extra <= in_flight, "{got:?} {seen:?} {in_flight}");
}

/// A scenario of two loads of Check against grpc-go at `addr`: a closed one of a known
/// service (OK), an open one of an unknown one (NOT_FOUND).
fn grpc_scenario(addr: &str) -> String {
    let target = crate::support::placeholder_target("grpc-go", &format!("grpc://{addr}"), addr);
    format!(
        r#"name = "grpc"
{target}
[[load]]
name = "known"
model = "closed"
targets = ["grpc-go"]
connections = 2
duration = "1s"
[load.request]
proto = "health.proto"
grpc_method = "{CHECK}"
body = '{KNOWN}'

[[load]]
name = "unknown"
model = "open"
targets = ["grpc-go"]
rate = 100
duration = "1s"
[load.request]
proto = "health.proto"
grpc_method = "{CHECK}"
body = '{UNKNOWN}'
"#
    )
}
