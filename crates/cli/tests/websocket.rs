//! WebSocket end to end (`ws://` URLs): `loadbench run` against the reference backend's echo
//! (`loadbench serve`'s `/ws`, tokio-tungstenite) and against a third-party server, Debian's
//! python3-websockets (a small echo script written by the test, started on a free loopback
//! port, counting the messages it received and pinging every client often). Each server's
//! count of messages must equal loadbench's; pings are answered (the Python server drops a
//! client whose pong does not come); close codes are counted; and a URL whose server answers
//! 200 instead of 101 is one line and exit code 2, before any load.

mod matching;

use crate::support::{bin, free_port, tempdir, text, Run};
use crate::tls::assert_handshakes_counted;
use loadbench_model::{ErrorKind, RunResult};
use loadbench_upstream::{Server, ServerConfig, TlsIdentity};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's interpreter: python3-websockets installs into its dist-packages (a python3 first
/// on PATH, such as a pyenv one, may not see it).
const PYTHON: &str = "/usr/bin/python3";

/// Whether Debian's python3-websockets is installed; under CI it must be (.ci/run installs it).
fn have_websockets() -> bool {
    let found = Command::new(PYTHON)
        .args(["-c", "import websockets"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("CI").is_some() {
        panic!("python3-websockets is not installed, but CI must install it (see .ci/run)");
    }
    if !found {
        eprintln!("skipping: python3-websockets is not installed");
    }
    found
}

/// The echo server: every text or binary message sent back and counted (the count written
/// to a file after each one); a ping to each client every 50 ms, the client dropped if its
/// pong is not back within 2 s; the subprotocol `chat` chosen when offered; over TLS when
/// given a certificate and key (PEM files).
const ECHO_PY: &str = r#"
import asyncio, ssl, sys, websockets

port, count_file = int(sys.argv[1]), sys.argv[2]
count = 0
tls = None
if len(sys.argv) > 4:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[3], sys.argv[4])

async def echo(ws, path=None):
    global count
    async for msg in ws:
        count += 1
        with open(count_file, "w") as f:
            f.write(str(count))
        await ws.send(msg)

async def main():
    async with websockets.serve(echo, "127.0.0.1", port, ping_interval=0.05,
                                ping_timeout=2, subprotocols=["chat"], ssl=tls):
        await asyncio.Future()

asyncio.run(main())
"#;

/// Writes `text` to `script` and runs it with a free loopback port and `args`; returns once
/// the port accepts connections (at most 15 s).
fn start_python(script: &Path, text: &str, args: &[PathBuf]) -> (Child, u16) {
    std::fs::write(script, text).unwrap();
    let port = free_port();
    let child = Command::new(PYTHON)
        .arg(script)
        .arg(port.to_string())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 starts");
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Python server {} did not start",
            script.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}

/// The Python echo server, killed when dropped.
struct PyEcho {
    child: Child,
    port: u16,
    count_file: PathBuf,
}

impl PyEcho {
    fn start(dir: &Path) -> PyEcho {
        PyEcho::start_with(dir, &[])
    }

    /// Over TLS with the certificate and key of `tls` (written to `dir`).
    fn start_tls(dir: &Path, tls: &TlsIdentity) -> PyEcho {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, &tls.cert_pem).unwrap();
        std::fs::write(&key, &tls.key_pem).unwrap();
        PyEcho::start_with(dir, &[cert, key])
    }

    fn start_with(dir: &Path, tls: &[PathBuf]) -> PyEcho {
        let count_file = dir.join("count");
        let mut args = vec![count_file.clone()];
        args.extend_from_slice(tls);
        let (child, port) = start_python(&dir.join("echo.py"), ECHO_PY, &args);
        PyEcho {
            child,
            port,
            count_file,
        }
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    /// Messages it received so far.
    fn count(&self) -> u64 {
        std::fs::read_to_string(&self.count_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for PyEcho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ws_url(server: &Server, path: &str) -> String {
    format!("ws://{}{path}", server.local_addr())
}

fn assert_clean(r: &RunResult, n: u64) {
    assert_eq!(r.stats.requests, n);
    assert_eq!(r.stats.sent, n);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.latency.hist.len(), n, "a latency per message");
    assert!(r.stats.latency.hist.min_ns() > 0);
}

/// [`assert_clean`], and the reference backend echoed exactly as many messages.
fn assert_clean_on(server: &Server, r: &RunResult, n: u64) {
    assert_clean(r, n);
    let echoed = server.stats().route("/ws");
    assert_eq!(echoed, n, "the server's count agrees");
}

#[test]
fn the_reference_echo_answers_every_message_text_and_binary() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = ws_url(&server, "/ws");
    let r = Run::new(&url)
        .args(["--body", "hello", "-c", "4", "-n", "200"])
        .ok();
    assert_clean_on(&server, &r, 200);
    assert_eq!(r.stats.ws.upgrades, 4, "one upgrade per connection");
    assert_eq!(
        r.stats.body.total,
        200 * 5,
        "each answer is the 5-byte echo"
    );

    // A body that is not UTF-8 goes as binary frames, echoed as they are.
    let dir = tempdir("ws-binary");
    let file = dir.join("bin");
    std::fs::write(&file, [0xFFu8, 0x00, 0x80, 0x7F]).unwrap();
    let r = Run::new(&url)
        .args(["--body-file", file.to_str().unwrap(), "-c", "2", "-n", "50"])
        .ok();
    assert_clean(&r, 50);
    assert_eq!(server.stats().route("/ws"), 250);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn close_codes_the_server_sends_are_counted_and_reported() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = ws_url(&server, "/ws?close_after=5&close_code=4000");
    let ran = Run::new(&url)
        .args(["--body", "x", "-c", "1", "-n", "20", "-o", "text"])
        .json();
    let (stdout, stderr) = ran.text();
    assert_eq!(ran.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("close frames by code: 4000 ×"),
        "the text report shows the close codes: {stdout}"
    );
    let r = ran.result();
    let closes = r.stats.ws.close_codes.get(&4000).copied().unwrap_or(0);
    // A close every 5 echoes: at least 3 in 20 messages (a message sent behind a close,
    // before it arrived, fails as closed before its answer and takes one of the 20).
    assert!(closes >= 3, "{:?}", r.stats.ws);
    assert_eq!(r.stats.ws.close_codes.len(), 1, "{:?}", r.stats.ws);
    let failed = r.stats.errors.get(ErrorKind::ClosedBeforeResponseComplete);
    assert_eq!(r.stats.errors.total(), failed, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests + failed, 20);
    assert_eq!(server.stats().route("/ws"), r.stats.requests);
    // A new connection after each close, but for a close that ended the last message.
    let upgrades = r.stats.ws.upgrades;
    assert!(
        upgrades == closes + 1 || upgrades == closes,
        "{upgrades} upgrades, {closes} closes"
    );
}

#[test]
fn the_open_model_sends_each_message_when_due_on_an_idle_connection() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let r = Run::new(&ws_url(&server, "/ws"))
        .args(["--body", "tick", "--rate", "400", "-n", "200"])
        .ok();
    assert_clean_on(&server, &r, 200);
    assert!(r.stats.ws.upgrades >= 1, "{:?}", r.stats.ws);

    // Closes behind answers: an idle connection the server closed connects again when the
    // next message takes it; every message is answered or failed, none waits for a timeout.
    server.reset_stats();
    let url = ws_url(&server, "/ws?close_after=5&close_code=1001");
    let r = Run::new(&url)
        .args(["--body", "tick", "--rate", "400", "-n", "60"])
        .ok();
    let failed = r.stats.errors.get(ErrorKind::ClosedBeforeResponseComplete);
    assert_eq!(r.stats.errors.total(), failed, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests + failed, 60);
    assert_eq!(server.stats().route("/ws"), r.stats.requests);
    assert!(
        r.stats.ws.close_codes.get(&1001).copied().unwrap_or(0) >= 6,
        "{:?}",
        r.stats.ws
    );
}

#[test]
fn python_websockets_counts_what_loadbench_sent_and_its_pings_are_answered() {
    if !have_websockets() {
        return;
    }
    let dir = tempdir("ws-python");
    let echo = PyEcho::start(&dir);
    let proto = "Sec-WebSocket-Protocol: chat";
    let r = Run::new(&echo.url())
        .args(["--body", "ping?", "-H", proto, "-c", "3", "-n", "300"])
        .ok();
    assert_clean(&r, 300);
    assert_eq!(echo.count(), 300, "the server's count agrees");
    assert_eq!(r.stats.ws.upgrades, 3);

    // For a second, with the server pinging every 50 ms: each ping answered (else it would
    // drop the connection), every message the server received was sent by loadbench.
    let r = Run::new(&echo.url())
        .args(["--body", "ping?", "-c", "2", "-d", "1s"])
        .ok();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert!(r.stats.ws.pings > 0, "{:?}", r.stats.ws);
    assert!(r.stats.ws.close_codes.is_empty(), "{:?}", r.stats.ws);
    assert!(r.stats.requests > 0);
    assert_eq!(r.stats.requests + r.stats.abandoned, r.stats.sent);
    // The first run's 300, then the second's sends (the last ones may reach the server
    // just after loadbench stopped: the count settles within a few seconds).
    let want = 300 + r.stats.sent;
    let deadline = Instant::now() + Duration::from_secs(5);
    while echo.count() != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(echo.count(), want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_ws_url_answered_with_200_is_one_line_and_exit_2_before_any_load() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let ran = Run::new(&ws_url(&server, "/"))
        .args(["-c", "2", "-n", "10"])
        .json();
    let (_, stderr) = ran.text();
    assert_eq!(ran.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("instead of 101 Switching Protocols")
            && stderr.contains("point the URL at the server's WebSocket endpoint"),
        "{stderr}"
    );
    assert!(ran.saved.is_none(), "no load, no result");
    assert!(server.stats().total <= 1, "only the preflight's upgrade");
    server.reset_stats();

    // What a ws:// load cannot be combined with yet: one line, exit code 2.
    let addr = server.local_addr();
    for (url, extra) in [
        (
            format!("ws://{addr}/ws"),
            vec!["--pipeline", "2", "-c", "1", "-n", "2"],
        ),
        (
            format!("ws://{addr}/ws"),
            vec!["--http2", "-c", "1", "-n", "1"],
        ),
    ] {
        let out = bin().args(["run", &url]).args(&extra).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{url} {extra:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("ws://"), "{stderr}");
    }
    assert_eq!(server.stats().total, 0, "nothing reached the server");
}

/// The reference backend over TLS (its certificate written to `dir`), and that file's path.
fn tls_echo(dir: &Path) -> (Server, String) {
    let (server, cert) = crate::tls::tls_backend(dir);
    (server, cert.display().to_string())
}

/// `wss://`: WebSocket over the engine's TLS (rustls, ALPN http/1.1) against the reference
/// backend's TLS listener, whose `/ws` is the same echo: every message counted on both
/// sides, in both models, with `--cacert` and with `--insecure`; close codes over TLS.
#[test]
fn wss_against_the_reference_echo_over_tls_in_both_models() {
    let dir = tempdir("wss-backend");
    let (server, cacert) = tls_echo(&dir);
    let url = format!("wss://{}/ws", server.local_addr());
    let r = Run::new(&url)
        .args([
            "--body", "hello", "-c", "3", "-n", "300", "--cacert", &cacert,
        ])
        .ok();
    assert_clean_on(&server, &r, 300);
    assert_eq!(r.stats.ws.upgrades, 3, "one upgrade per connection");
    assert_eq!(r.stats.body.total, 300 * 5);
    assert_handshakes_counted(&r);
    assert_eq!(r.config.tls.as_ref().map(|t| t.insecure), Some(false));

    server.reset_stats();
    let r = Run::new(&url)
        .args(["--body", "tick", "--rate", "300", "-n", "150", "--insecure"])
        .ok();
    assert_clean_on(&server, &r, 150);
    assert_handshakes_counted(&r);

    server.reset_stats();
    let closing = format!("{url}?close_after=4&close_code=4001");
    let r = Run::new(&closing)
        .args(["--body", "x", "-c", "1", "-n", "20", "--cacert", &cacert])
        .ok();
    let failed = r.stats.errors.get(ErrorKind::ClosedBeforeResponseComplete);
    assert_eq!(r.stats.errors.total(), failed, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests + failed, 20);
    assert_eq!(server.stats().route("/ws"), r.stats.requests);
    let closes = r.stats.ws.close_codes.get(&4001).copied().unwrap_or(0);
    assert!(closes >= 3, "{:?}", r.stats.ws);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wss://` against a third-party TLS WebSocket server (python3-websockets with an ssl
/// context): its count equals loadbench's, the subprotocol is chosen, its pings answered.
#[test]
fn wss_against_python_websockets_over_tls_counts_agree() {
    if !have_websockets() {
        return;
    }
    let dir = tempdir("wss-python");
    let tls = TlsIdentity::self_signed().unwrap();
    let echo = PyEcho::start_tls(&dir, &tls);
    let url = format!("wss://127.0.0.1:{}/", echo.port);
    let cacert = dir.join("cert.pem").display().to_string();
    let proto = "Sec-WebSocket-Protocol: chat";
    let r = Run::new(&url)
        .args([
            "--body", "hi", "-H", proto, "-c", "2", "-n", "200", "--cacert", &cacert,
        ])
        .ok();
    assert_clean(&r, 200);
    assert_eq!(echo.count(), 200, "the server's count agrees");
    assert_eq!(r.stats.ws.upgrades, 2);
    assert_handshakes_counted(&r);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An untrusted certificate fails the preflight's TLS handshake: one line naming --cacert
/// and --insecure, exit code 2, no message sent.
#[test]
fn wss_with_an_untrusted_certificate_is_one_line_and_exit_2() {
    let dir = tempdir("wss-untrusted");
    let (server, _) = tls_echo(&dir);
    let url = format!("wss://{}/ws", server.local_addr());
    let out = bin()
        .args(["run", &url, "-c", "1", "-n", "5"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--cacert") && stderr.contains("--insecure"),
        "{stderr}"
    );
    assert_eq!(server.stats().route("/ws"), 0, "no message sent");

    // Served over TLS, a plain route is still a refused upgrade (the echo is at /ws only).
    let url = format!("wss://{}/", server.local_addr());
    let out = bin()
        .args(["run", &url, "--insecure", "-c", "1", "-n", "5"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("instead of 101 Switching Protocols"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A closed and an open WebSocket load against the echo at `ADDR` (a placeholder target
/// process, `sleep`, whose `url` and `ready.tcp` name it).
const WS_SCENARIO: &str = r#"name = "ws"
[[target]]
name = "echo"
command = "sleep"
args = ["300"]
url = "ws://ADDR"
[target.ready]
tcp = "ADDR"

[[load]]
name = "closed"
model = "closed"
targets = ["echo"]
connections = 2
duration = "1s"
[load.request]
path = "/ws"
body = "hello"
headers = { "Sec-WebSocket-Protocol" = "chat" }

[[load]]
name = "open"
model = "open"
targets = ["echo"]
rate = 200
duration = "1s"
[load.request]
path = "/ws"
body = "tick"
"#;

/// A scenario file whose target URL is `ws://`: each load's `[load.request]` body is the
/// message and its headers (a subprotocol offered) go into the upgrade; a closed and an open
/// load against the reference echo. The echo runs in this test's process so its count can be
/// read after the bench has stopped its targets: the scenario's target is a placeholder
/// process (`sleep`) whose `url` and `ready.tcp` name the echo.
#[test]
fn a_scenario_with_a_ws_url_sends_its_body_as_messages_and_the_echo_counts_them() {
    let _busy = crate::support::loading();
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let addr = server.local_addr();
    let dir = tempdir("ws-scenario");
    let file = dir.join("ws.toml");
    let scenario = WS_SCENARIO.replace("ADDR", &addr.to_string());
    std::fs::write(&file, scenario).unwrap();
    let (out, result) = crate::bench::bench(&file, &dir.join("results"), &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let b = result.expect("a saved bench result");
    assert_eq!(b.rounds.len(), 2, "one round per load");
    let mut sent = 0;
    for round in &b.rounds {
        let r = round.result.as_ref().expect("each round ran");
        assert!(r.config.url.starts_with("ws://"), "{}", r.config.url);
        assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
        assert!(
            r.stats.requests > 0 && r.stats.ws.upgrades > 0,
            "{:?}",
            r.stats.ws
        );
        assert_eq!(r.stats.requests + r.stats.abandoned, r.stats.sent);
        let want = if round.load == 0 { 5 } else { 4 };
        let body = &r.stats.body;
        assert_eq!(
            (body.min, body.max),
            (want, want),
            "each answer echoes the body"
        );
        sent += r.stats.sent;
    }
    // Messages in flight when a round ended reach the echo just after: its count settles.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.stats().route("/ws") != sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.stats().route("/ws"), sent, "the echo's count agrees");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-idle`: runs `args` against `url` on a thread, and meanwhile waits (at most until the
/// run ends) for `server_open()` to be `want`; the run's result (exit code 0, the text report
/// on stdout) and whether the server saw `want` open.
fn run_watching(
    url: &str,
    args: &[&str],
    want: u64,
    server_open: impl Fn() -> u64,
) -> (RunResult, String, bool) {
    let run = Run::new(url).args(args).args(["-o", "text"]);
    let handle = std::thread::spawn(move || run.json());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = false;
    while !seen && !handle.is_finished() && Instant::now() < deadline {
        seen = server_open() == want;
        std::thread::sleep(Duration::from_millis(20));
    }
    let ran = handle.join().expect("the run's thread");
    let (stdout, stderr) = ran.text();
    assert_eq!(ran.code(), Some(0), "{stderr}");
    (ran.result(), stdout, seen)
}

/// Waits (at most 10 s) for `open()` to be 0: every connection closed at the run's end.
fn wait_all_closed(open: impl Fn() -> u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    while open() != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    open()
}

/// `--ws-idle 50` beside one active connection against the reference echo: the server holds
/// 51 WebSocket connections during the run (its `ws_open` gauge), loadbench reports 50
/// opened and 50 held, apart from the active connection's one upgrade and its messages (the
/// echo's count equals loadbench's), and all are closed at the end.
#[test]
fn idle_connections_are_held_beside_the_active_one_on_the_reference_echo() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = ws_url(&server, "/ws");
    let args = ["--body", "hi", "-c", "1", "--ws-idle", "50", "-d", "3s"];
    let (r, stdout, seen) = run_watching(&url, &args, 51, || server.stats().ws_open);
    assert!(seen, "the server held 51 connections during the run");
    let idle = &r.stats.ws.idle;
    assert_eq!(
        (idle.requested, idle.opened, idle.held),
        (50, 50, 50),
        "{idle:?}"
    );
    assert_eq!((idle.failures(), idle.closed(), idle.unopened), (0, 0, 0));
    assert_eq!(
        r.stats.ws.upgrades, 1,
        "the idle ones' upgrades are not the active one's"
    );
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert!(r.stats.requests > 0);
    assert!(
        stdout.contains("50 requested: 50 opened, 0 failed to open, 0 closed early by the server, 50 held to the end"),
        "{stdout}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.stats().route("/ws") != r.stats.sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        server.stats().route("/ws"),
        r.stats.sent,
        "only the active one sent"
    );
    assert_eq!(wait_all_closed(|| server.stats().ws_open), 0);
}

/// A python3-websockets server for `--ws-idle`: echoes a client's messages; pings every
/// 0.1 s (a client whose pong is not back within 1 s is dropped); with `close` as its third
/// argument, closes with 1001 (going away) a connection that sent nothing within 0.5 s (with
/// `abort`, drops it without a close frame: a TCP reset). It
/// writes `{"open": N, "peak": N, "codes": {code: n}}` (connections open now, the most at
/// once, the close codes the clients sent) to its file after each change.
const IDLE_PY: &str = r#"
import asyncio, json, sys, websockets

port, out, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
state = {"open": 0, "peak": 0, "codes": {}}

def save():
    with open(out + ".tmp", "w") as f:
        json.dump(state, f)
    import os
    os.replace(out + ".tmp", out)

async def handler(ws, path=None):
    state["open"] += 1
    state["peak"] = max(state["peak"], state["open"])
    save()
    try:
        try:
            first = await asyncio.wait_for(ws.recv(), None if mode == "hold" else 0.5)
            await ws.send(first)
        except asyncio.TimeoutError:
            if mode == "abort":
                ws.transport.abort()
            else:
                await ws.close(1001)
            return
        async for msg in ws:
            await ws.send(msg)
    except websockets.ConnectionClosed:
        pass
    finally:
        await ws.wait_closed()
        code = str(ws.close_code)
        state["codes"][code] = state["codes"].get(code, 0) + 1
        state["open"] -= 1
        save()

async def main():
    async with websockets.serve(handler, "127.0.0.1", port, ping_interval=0.1,
                                ping_timeout=1):
        await asyncio.Future()

asyncio.run(main())
"#;

/// A Python server of a test that writes its state as JSON to a file; killed when dropped.
struct PyServer {
    child: Child,
    port: u16,
    state: PathBuf,
}

impl PyServer {
    /// Runs `text` as `dir/NAME.py` with its state file `dir/STATE` and `args` after it.
    fn start(dir: &Path, (name, text): (&str, &str), state: &str, args: &[String]) -> PyServer {
        let state = dir.join(state);
        let mut all = vec![state.clone()];
        all.extend(args.iter().map(PathBuf::from));
        let (child, port) = start_python(&dir.join(format!("{name}.py")), text, &all);
        PyServer { child, port, state }
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    /// What it wrote last; `empty` before it wrote anything.
    fn state(&self, empty: serde_json::Value) -> serde_json::Value {
        std::fs::read_to_string(&self.state)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(empty)
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The [`IDLE_PY`] server, killed when dropped.
struct PyIdle(PyServer);

impl PyIdle {
    fn start(dir: &Path, mode: &str) -> PyIdle {
        let state = format!("state-{mode}.json");
        PyIdle(PyServer::start(
            dir,
            ("idle", IDLE_PY),
            &state,
            &[mode.into()],
        ))
    }

    fn url(&self) -> String {
        self.0.url()
    }

    /// What it wrote last (all zero before its first connection).
    fn state(&self) -> serde_json::Value {
        self.0
            .state(serde_json::json!({"open": 0, "peak": 0, "codes": {}}))
    }

    fn open(&self) -> u64 {
        self.state()["open"].as_u64().unwrap_or(0)
    }

    /// Connections the clients closed with `code`.
    fn closed_with(&self, code: u16) -> u64 {
        self.state()["codes"][code.to_string()]
            .as_u64()
            .unwrap_or(0)
    }
}

/// `--ws-idle` against python3-websockets: 50 idle connections held for 2 s while it pings
/// them (answered, or it would drop them), the server counting 51 open at once and 50
/// closed by the client with 1000 at the end.
#[test]
fn idle_connections_against_python_websockets_are_held_and_answer_pings() {
    if !have_websockets() {
        return;
    }
    let dir = tempdir("ws-idle-python");
    let py = PyIdle::start(&dir, "hold");
    let args = ["--body", "hi", "-c", "1", "--ws-idle", "50", "-d", "2s"];
    let (r, _, seen) = run_watching(&py.url(), &args, 51, || py.open());
    assert!(
        seen,
        "the server held 51 connections at once: {}",
        py.state()
    );
    let idle = &r.stats.ws.idle;
    assert_eq!(
        (idle.requested, idle.opened, idle.held),
        (50, 50, 50),
        "{idle:?}"
    );
    assert_eq!((idle.failures(), idle.closed()), (0, 0), "{idle:?}");
    assert!(
        idle.pings > 0,
        "its pings on the idle ones were answered: {idle:?}"
    );
    assert_eq!(r.stats.ws.upgrades, 1);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(wait_all_closed(|| py.open()), 0, "{}", py.state());
    assert_eq!(py.closed_with(1000), 50, "closed cleanly: {}", py.state());
    drop(py);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-idle` against python3-websockets servers that end silent connections after 0.5 s:
/// with a close frame of 1001, all 20 idle ones are counted as closed early with 1001, none
/// held, the active connection untouched; without a close frame (a reset), closed early with
/// 1006.
#[test]
fn idle_connections_closed_by_python_websockets_are_counted_by_close_code() {
    if !have_websockets() {
        return;
    }
    let dir = tempdir("ws-idle-python-close");
    let py = PyIdle::start(&dir, "close");
    let args = ["--body", "hi", "-c", "1", "--ws-idle", "20", "-d", "2s"];
    let (r, stdout, _) = run_watching(&py.url(), &args, 21, || py.open());
    let idle = &r.stats.ws.idle;
    assert_eq!(
        (idle.requested, idle.opened, idle.held),
        (20, 20, 0),
        "{idle:?}"
    );
    assert_eq!(idle.closed_early.get(&1001), Some(&20), "{idle:?}");
    assert!(
        r.stats.ws.close_codes.is_empty(),
        "not the active one's: {:?}",
        r.stats.ws
    );
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert!(r.stats.requests > 0);
    assert!(
        stdout.contains("20 closed early by the server (1001 ×20), 0 held to the end"),
        "{stdout}"
    );
    drop(py);

    // Dropped without a close frame: closed early with 1006 (abnormal closure).
    let py = PyIdle::start(&dir, "abort");
    let args = ["--body", "hi", "-c", "1", "--ws-idle", "10", "-d", "2s"];
    let (r, _, _) = run_watching(&py.url(), &args, 11, || py.open());
    let idle = &r.stats.ws.idle;
    assert_eq!((idle.opened, idle.held), (10, 0), "{idle:?}");
    assert_eq!(idle.closed_early.get(&1006), Some(&10), "{idle:?}");
    assert_eq!(
        r.stats.errors.total(),
        0,
        "not the active one's: {:?}",
        r.stats.errors
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-idle` with an http:// URL, or with `-c 0`: one line naming the fix, exit code 2,
/// nothing sent.
#[test]
fn ws_idle_misused_is_one_line_and_exit_2_before_any_load() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let addr = server.local_addr();
    for (url, c, fix) in [
        (format!("http://{addr}/"), "1", "ws:// or wss:// URL"),
        (format!("ws://{addr}/ws"), "0", "give -c 1"),
    ] {
        let out = bin()
            .args(["run", &url, "-c", c, "--ws-idle", "5", "-d", "1s"])
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--ws-idle") && stderr.contains(fix),
            "{stderr}"
        );
    }
    assert_eq!(server.stats().total, 0, "nothing reached the server");
    assert_eq!(server.stats().ws_open, 0);
}
