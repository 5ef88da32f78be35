//! Per-request values in WebSocket messages and `--ws-match` (replies matched by a JSON id):
//! against the reference backend's echo (`loadbench serve`'s `/ws`) and a python3-websockets
//! server that records every message it received and, before each reply, pushes messages
//! that are not the reply (no id, the id as a string, another id).

use super::{have_websockets, ws_url, PyServer};
use crate::support::{refused, tempdir, Run};
use loadbench_model::{ErrorKind, ErrorReason, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The pushing server: for each message (JSON with an `id`), PUSHES messages first, in turn
/// `{"push": k}` (no id), `{"id": "<id>"}` (the id as a string: a string is not the number)
/// and `{"id": <id + 1000000>}` (another id), then the reply `{"id": <id>, "ok": true}`; every
/// SKIP-th id (0: none) gets its pushes and no reply. It writes
/// `{"msgs": [...], "pushes": N, "replies": N}` after each message.
const PUSH_PY: &str = r#"
import asyncio, json, os, sys, websockets

port, out, pushes, skip = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
state = {"msgs": [], "pushes": 0, "replies": 0}

def save():
    with open(out + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(out + ".tmp", out)

async def handler(ws, path=None):
    async for msg in ws:
        state["msgs"].append(msg)
        sent = json.loads(msg)["id"]
        for k in range(pushes):
            push = [{"push": k}, {"id": str(sent)}, {"id": sent + 1000000}][k % 3]
            await ws.send(json.dumps(push))
            state["pushes"] += 1
        if skip == 0 or sent % skip != 0:
            await ws.send(json.dumps({"id": sent, "ok": True}))
            state["replies"] += 1
        save()

async def main():
    async with websockets.serve(handler, "127.0.0.1", port):
        await asyncio.Future()

asyncio.run(main())
"#;

/// The [`PUSH_PY`] server, killed when dropped.
struct PyPush(PyServer);

impl PyPush {
    fn start(dir: &Path, pushes: u32, skip: u32) -> PyPush {
        let args = [pushes.to_string(), skip.to_string()];
        PyPush(PyServer::start(dir, ("push", PUSH_PY), "state.json", &args))
    }

    fn url(&self) -> String {
        self.0.url()
    }

    fn state(&self) -> serde_json::Value {
        self.0
            .state(serde_json::json!({"msgs": [], "pushes": 0, "replies": 0}))
    }

    /// Its counts once it has handled `messages` (it saves after each; at most 5 s):
    /// (messages, pushes, replies).
    fn counts(&self, messages: usize) -> (usize, u64, u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let s = self.state();
            let n = s["msgs"].as_array().map_or(0, Vec::len);
            if n >= messages || Instant::now() > deadline {
                let num = |k: &str| s[k].as_u64().unwrap_or(0);
                return (n, num("pushes"), num("replies"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every message it received, parsed.
    fn messages(&self) -> Vec<serde_json::Value> {
        let s = self.state();
        s["msgs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| serde_json::from_str(m.as_str().unwrap()).unwrap())
            .collect()
    }

    /// The `id`s it received, sorted.
    fn ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .messages()
            .iter()
            .map(|m| m["id"].as_i64().unwrap())
            .collect();
        ids.sort_unstable();
        ids
    }
}

/// A fresh folder for a test against python3-websockets; `None` (the test is skipped) without
/// it.
fn python_dir(name: &str) -> Option<PathBuf> {
    have_websockets().then(|| tempdir(name))
}

/// Digits of 1..=n, summed: the echo's payload lengths vary with `{{seq}}`'s digits.
fn digits_up_to(n: u64) -> u64 {
    (1..=n).map(|i| i.to_string().len() as u64).sum()
}

fn assert_no_errors(r: &RunResult) {
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.sent, r.stats.requests);
}

/// `{{seq}}` in the message against the reference echo, both models, with and without
/// `--ws-match id`: every message rendered with its own place (the echoed bytes add up to
/// exactly the lengths of ids 1..=N), the echo's count equals loadbench's, and with
/// `--ws-match` nothing is unmatched (the echo answers each message with itself).
#[test]
fn values_in_messages_are_rendered_per_message_on_the_reference_echo() {
    let _busy = crate::support::loading();
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = ws_url(&server, "/ws");
    let body = r#"{"id":{{seq}},"m":"x"}"#;
    let closed = ["-c", "4", "-n", "200"];
    let open = ["--rate", "400", "-n", "200"];
    for (load, matching) in [(closed, true), (open, true), (closed, false)] {
        server.reset_stats();
        let mut run = Run::new(&url).args(["--body", body]).args(load);
        if matching {
            run = run.args(["--ws-match", "id"]);
        }
        let r = run.ok();
        assert_no_errors(&r);
        assert_eq!(r.stats.requests, 200, "{load:?}");
        assert_eq!(server.stats().route("/ws"), 200, "the echo's count agrees");
        // `{"id":N,"m":"x"}` is 15 bytes and N's digits.
        assert_eq!(r.stats.body.total, 200 * 15 + digits_up_to(200), "{load:?}");
        assert_eq!(r.stats.ws.unmatched, 0, "{:?}", r.stats.ws);
        assert_eq!(r.config.ws_match.is_some(), matching);
        assert!(r.config.values.is_some());
    }
}

/// Against python3-websockets, which records what it received: with `-n 300` the ids are
/// exactly 1..=300, once each, over 3 connections; two shards of `-n 100` send exactly
/// 1..=100 between them; `--seed` repeats the random values.
#[test]
fn every_rendered_message_is_distinct_and_shards_split_the_sequence() {
    let _busy = crate::support::loading();
    let Some(dir) = python_dir("ws-values-python") else {
        return;
    };
    let py = PyPush::start(&dir, 0, 0);
    let body = r#"{"id":{{seq}},"r":{{int(1,1000000000)}}}"#;
    let r = Run::new(&py.url())
        .args(["--body", body, "-c", "3", "-n", "300", "--ws-match", "id"])
        .ok();
    assert_no_errors(&r);
    assert_eq!(r.stats.requests, 300);
    assert_eq!(py.counts(300), (300, 0, 300));
    assert_eq!(py.ids(), (1..=300).collect::<Vec<i64>>(), "each id once");
    drop(py);

    let py = PyPush::start(&dir, 0, 0);
    for i in 0..2 {
        let shard = format!("{i}/2");
        let r = Run::new(&py.url())
            .args(["--body", body, "-c", "2", "-n", "100", "--ws-match", "id"])
            .args(["--shard", &shard, "--run-id", "wsv"])
            .ok();
        assert_no_errors(&r);
        assert_eq!(r.stats.requests, 50, "shard {shard}'s share");
    }
    py.counts(100);
    assert_eq!(
        py.ids(),
        (1..=100).collect::<Vec<i64>>(),
        "the shards interleave"
    );
    drop(py);

    // One connection, one thread: the same seed draws the same values in the same order.
    let py = PyPush::start(&dir, 0, 0);
    let seeded = ["-c", "1", "-t", "1", "-n", "20", "--seed", "7"];
    for _ in 0..2 {
        Run::new(&py.url()).args(["--body", body]).args(seeded).ok();
    }
    py.counts(40);
    let rs: Vec<i64> = py
        .messages()
        .iter()
        .map(|m| m["r"].as_i64().unwrap())
        .collect();
    assert_eq!(rs.len(), 40);
    assert_eq!(rs[..20], rs[20..], "--seed repeats the values");
    assert!(rs[..20].windows(2).any(|w| w[0] != w[1]), "random: {rs:?}");
    drop(py);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ws-match id` against a server that pushes three messages before each reply (one
/// without an id, one with the id as a string, one with another id): loadbench's answers
/// equal the server's replies and its unmatched count the server's pushes, in both models,
/// with no error; the answers' body bytes are the replies' alone.
#[test]
fn pushes_before_each_reply_are_counted_as_unmatched_not_answers() {
    let _busy = crate::support::loading();
    let Some(dir) = python_dir("ws-match-python") else {
        return;
    };
    let py = PyPush::start(&dir, 3, 0);
    let body = r#"{"id":{{seq}},"m":"x"}"#;
    let r = Run::new(&py.url())
        .args(["--body", body, "-c", "3", "-n", "300", "--ws-match", "id"])
        .ok();
    assert_no_errors(&r);
    let (received, pushes, replies) = py.counts(300);
    assert_eq!((received, replies), (300, 300));
    assert_eq!(
        r.stats.requests, replies,
        "answers are the server's replies"
    );
    assert_eq!(r.stats.ws.unmatched, pushes, "{:?}", r.stats.ws);
    assert_eq!(pushes, 900);
    // `{"id": N, "ok": true}`: 20 bytes and N's digits.
    assert_eq!(r.stats.body.total, 300 * 20 + digits_up_to(300));
    assert!(r.stats.ws.unmatched_bytes > 900 * 10, "{:?}", r.stats.ws);
    assert_eq!(r.stats.ws.unmatched_too_large, 0);
    assert_eq!(py.ids(), (1..=300).collect::<Vec<i64>>());

    // The open model: each message on an idle connection, its pushes counted the same.
    let r = Run::new(&py.url())
        .args([
            "--body",
            body,
            "--rate",
            "300",
            "-n",
            "150",
            "--ws-match",
            "id",
        ])
        .ok();
    assert_no_errors(&r);
    let (received, pushes, replies) = py.counts(450);
    assert_eq!((received, replies, pushes), (450, 450, 1350));
    assert_eq!(r.stats.requests, 150);
    assert_eq!(r.stats.ws.unmatched, 450, "{:?}", r.stats.ws);
    drop(py);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A message whose reply never comes (only its pushes): a read timeout with the reason
/// `ws_no_match`, the others answered.
#[test]
fn a_message_without_a_matching_reply_times_out_with_its_reason() {
    let _busy = crate::support::loading();
    let Some(dir) = python_dir("ws-match-timeout") else {
        return;
    };
    let py = PyPush::start(&dir, 1, 10);
    let r = Run::new(&py.url())
        .args(["--body", r#"{"id":{{seq}}}"#, "--ws-match", "id"])
        .args(["-c", "2", "-n", "20", "--timeout", "1s"])
        .ok();
    assert_eq!(r.stats.requests, 18, "{:?}", r.stats.errors);
    assert_eq!(r.stats.errors.get(ErrorKind::ReadTimeout), 2);
    assert_eq!(r.stats.errors.total(), 2, "{:?}", r.stats.errors);
    assert_eq!(
        r.stats.error_reasons.0.get(&ErrorReason::WsNoMatch),
        Some(&2)
    );
    assert_eq!(r.stats.ws.unmatched, 20, "one push per message");
    drop(py);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rendered message without the field (a data row with an empty id makes `{"id":}`, not
/// JSON) is not sent: counted as `ws_unmatchable`, the load goes on; the first message is
/// checked before the load, so the first row must be good.
#[test]
fn later_messages_without_the_field_are_counted_and_not_sent() {
    let _busy = crate::support::loading();
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let dir = tempdir("ws-unmatchable");
    let rows = dir.join("rows.csv");
    std::fs::write(&rows, "id,n\n1,a\n,b\n3,c\n,d\n").unwrap();
    let r = Run::new(&ws_url(&server, "/ws"))
        .args(["--body", r#"{"id":{{row.id}}}"#, "--ws-match", "id"])
        .args(["--data", rows.to_str().unwrap(), "-c", "1", "-n", "8"])
        .ok();
    assert_eq!(r.stats.requests, 4, "{:?}", r.stats.errors);
    assert_eq!(r.stats.errors.get(ErrorKind::WsUnmatchable), 4);
    assert_eq!(r.stats.errors.total(), 4);
    assert_eq!(r.stats.sent, 4, "the unmatchable ones were not sent");
    assert_eq!(server.stats().route("/ws"), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input, one line and exit code 2 before any load: `--ws-match` with an http:// URL;
/// a fixed message that is not JSON or lacks the field; a first rendered message without it;
/// a bad FIELD; values in a WebSocket URL.
#[test]
fn ws_match_misused_is_one_line_and_exit_2_before_any_load() {
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let ws = ws_url(&server, "/ws");
    let http = format!("http://{}/", server.local_addr());
    let n = ["-c", "1", "-n", "5"];
    let cases: [(&str, &[&str], &str); 6] = [
        (
            &http,
            &["--ws-match", "id"],
            "use it with a ws:// or wss:// URL",
        ),
        (&ws, &["--body", "hello", "--ws-match", "id"], "is not JSON"),
        (
            &ws,
            &["--body", r#"{"m":1}"#, "--ws-match", "id"],
            "has no field id",
        ),
        (
            &ws,
            &["--body", r#"{"m":{{seq}}}"#, "--ws-match", "id"],
            "the first message as rendered ('{\"m\":1}') has no field id",
        ),
        (
            &ws,
            &["--body", r#"{"id":1}"#, "--ws-match", "a..b"],
            "an empty key",
        ),
        (
            &format!("{ws}?n={{{{seq}}}}"),
            &["--body", "x"],
            "in a WebSocket URL or header",
        ),
    ];
    for (url, args, want) in cases {
        refused(Run::new(url).args(args).args(n), want);
    }
    assert_eq!(server.stats().total, 0, "nothing reached the server");
}

/// `ws_match` in a scenario file is `--ws-match`: a closed load of messages with a `{{seq}}` id
/// against the reference echo, every answer matched to its message, the echo's count equal to
/// the messages sent.
#[test]
fn a_scenario_load_matches_the_echos_answers_by_id() {
    let _busy = crate::support::loading();
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let addr = server.local_addr();
    let dir = tempdir("ws-match-scenario");
    let (url, addr) = (format!("ws://{addr}"), addr.to_string());
    let target = crate::support::placeholder_target("echo", &url, &addr);
    let scenario = format!(
        r#"name = "ws-match"
{target}
[[load]]
model = "closed"
targets = ["echo"]
connections = 2
duration = "1s"
ws_match = "id"
[load.request]
path = "/ws"
body = '{{"id": {{{{seq}}}}, "m": "x"}}'
"#
    );
    let file = dir.join("ws.toml");
    std::fs::write(&file, scenario).unwrap();
    let (out, result) = crate::bench::bench(&file, &dir.join("results"), &[]);
    let (_, stderr) = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let b = result.expect("a saved bench result");
    let r = b.rounds[0].result.as_ref().expect("the round ran");
    assert!(r.stats.requests > 0, "{:?}", r.stats);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.ws.unmatched, 0, "{:?}", r.stats.ws);
    assert_eq!(r.stats.requests + r.stats.abandoned, r.stats.sent);
    // Messages in flight when the round ended reach the echo just after.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.stats().route("/ws") != r.stats.sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.stats().route("/ws"), r.stats.sent);
}
