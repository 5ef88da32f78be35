//! A stand-in xxl-job admin for the agent's tests: a small HTTP server that records every call
//! an executor makes (`/api/registry`, `/api/registryRemove`, `/api/callback`) with its token
//! header and JSON body, answers with the admin's envelope (and the admin's wrong-token
//! envelope), and an HTTP client for the admin-to-executor calls (`/run`, `/kill`, ...).
//! Plus [`Agent`], one `loadbench agent xxl-job` process stopped with SIGTERM on drop.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The admin's token in these tests.
pub(crate) const TOKEN: &str = "s3cret-token";
/// The admin's context path, as on xxl-job 2.x.
pub(crate) const CONTEXT: &str = "/xxl-job-admin";

/// One call an executor made.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub path: String,
    pub token: Option<String>,
    pub content_type: Option<String>,
    pub body: Value,
}

/// The stand-in admin; stops accepting on drop.
pub(crate) struct Admin {
    pub addr: SocketAddr,
    calls: Arc<Mutex<Vec<Call>>>,
    stop: Arc<AtomicBool>,
}

impl Admin {
    /// An admin on loopback, port 0.
    pub(crate) fn start() -> Admin {
        Admin::on(TcpListener::bind("127.0.0.1:0").unwrap())
    }

    /// An admin on a listener bound elsewhere (inside a network namespace).
    pub(crate) fn on(listener: TcpListener) -> Admin {
        listener.set_nonblocking(true).unwrap();
        let admin = Admin {
            addr: listener.local_addr().unwrap(),
            calls: Arc::default(),
            stop: Arc::default(),
        };
        let (calls, stop) = (Arc::clone(&admin.calls), Arc::clone(&admin.stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let calls = Arc::clone(&calls);
                        std::thread::spawn(move || serve_one(stream, &calls));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        admin
    }

    /// The `--admin` URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}{CONTEXT}", self.addr)
    }

    /// Every call so far.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Waits (at most `secs`) until `done` holds over the calls, and returns them.
    pub(crate) fn wait(&self, secs: u64, what: &str, done: impl Fn(&[Call]) -> bool) -> Vec<Call> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let calls = self.calls();
            if done(&calls) {
                return calls;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {calls:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The distinct executor addresses registered so far, once there are `n`.
    pub(crate) fn executors(&self, n: usize) -> Vec<String> {
        let calls = self.wait(30, "registrations", |c| addresses(c, "registry").len() >= n);
        addresses(&calls, "registry")
    }

    /// The callback entries so far (each callback is an array of them).
    pub(crate) fn callbacks(&self) -> Vec<Value> {
        callbacks(&self.calls())
    }

    /// Waits for the callback of `log_id` and returns it.
    pub(crate) fn callback_of(&self, log_id: i64, secs: u64) -> Value {
        let calls = self.wait(secs, &format!("the callback of log {log_id}"), |c| {
            callbacks(c).iter().any(|e| e["logId"] == log_id)
        });
        callbacks(&calls)
            .into_iter()
            .find(|e| e["logId"] == log_id)
            .unwrap()
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn addresses(calls: &[Call], op: &str) -> Vec<String> {
    let mut out: Vec<String> = calls
        .iter()
        .filter(|c| c.path == format!("{CONTEXT}/api/{op}"))
        .filter_map(|c| c.body["registryValue"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn callbacks(calls: &[Call]) -> Vec<Value> {
    calls
        .iter()
        .filter(|c| c.path == format!("{CONTEXT}/api/callback"))
        .flat_map(|c| c.body.as_array().cloned().unwrap_or_default())
        .collect()
}

/// Reads one request, records it, answers like the admin.
fn serve_one(mut stream: TcpStream, calls: &Mutex<Vec<Call>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let Some((head, body)) = read_request(&mut stream) else {
        return;
    };
    let mut lines = head.lines();
    let path = lines
        .next()
        .unwrap_or("")
        .split(' ')
        .nth(1)
        .unwrap_or("")
        .to_string();
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let call = Call {
        path,
        token: header("XXL-JOB-ACCESS-TOKEN"),
        content_type: header("Content-Type"),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    if !call.path.starts_with(&format!("{CONTEXT}/api/")) {
        // As the real admin: nothing is served outside its context path.
        calls.lock().unwrap().push(call);
        let _ = write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    let answer = if call.token.as_deref() == Some(TOKEN) {
        json!({"code": 200, "msg": null})
    } else {
        json!({"code": 500, "msg": "The access token is wrong."})
    };
    calls.lock().unwrap().push(call);
    let body = answer.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Head and body of one HTTP/1.1 request with a Content-Length.
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).ok().filter(|&n| n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let n = stream.read(&mut buf).ok().filter(|&n| n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    }
    Some((head, raw[head_end..head_end + length].to_vec()))
}

/// An admin-to-executor call: POST `body` to `{executor}{op}` with `token`; the JSON answer.
pub(crate) fn call(executor: &str, op: &str, token: Option<&str>, body: &Value) -> Value {
    let rest = executor.trim_start_matches("http://");
    let (authority, _) = rest.split_once('/').unwrap_or((rest, ""));
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let body = body.to_string();
    let mut head = format!(
        "POST /{op} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(t) = token {
        head.push_str(&format!("XXL-JOB-ACCESS-TOKEN: {t}\r\n"));
    }
    write!(stream, "{head}\r\n{body}").unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{op}: {raw}");
    let (_, answer) = raw.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(answer).unwrap_or_else(|e| panic!("{op}: {e}: {answer}"))
}

/// A plain HTTP/1.0 request (no chunking, no keep-alive) to `addr`; the answer's JSON body.
pub(crate) fn http(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Option<Value> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).ok()?;
    let (_, answer) = raw.split_once("\r\n\r\n")?;
    serde_json::from_str(answer).ok()
}

/// A trigger (TriggerParam) with every field of the classic protocol.
pub(crate) fn trigger(job_id: i64, log_id: i64, params: &str, shard: (i64, i64)) -> Value {
    json!({
        "jobId": job_id,
        "executorHandler": "loadbench",
        "executorParams": params,
        "executorBlockStrategy": "SERIAL_EXECUTION",
        "executorTimeout": 0,
        "logId": log_id,
        "logDateTime": 1_795_540_000_000i64 + log_id,
        "glueType": "BEAN",
        "glueSource": "",
        "glueUpdatetime": 1_795_540_000_000i64,
        "broadcastIndex": shard.0,
        "broadcastTotal": shard.1,
    })
}

/// One `loadbench agent xxl-job` process; SIGTERM and wait on drop.
pub(crate) struct Agent {
    pub child: Child,
    pub log: PathBuf,
}

impl Agent {
    /// An agent of `admin_url` listening on `listen`, results into `results`; `prefix` runs it
    /// under another program (`ip netns exec NAME`). The token comes from the environment
    /// (`LOADBENCH_XXL_JOB_TOKEN`), as it would on a host where `ps` must not show it.
    pub(crate) fn start(prefix: &[&str], admin_url: &str, listen: &str, results: &Path) -> Agent {
        Agent::spawn(None, prefix, admin_url, listen, results)
    }

    /// [`Agent::start`] with another token, given by `--access-token`.
    pub(crate) fn with_token(
        token: &str,
        prefix: &[&str],
        admin_url: &str,
        listen: &str,
        results: &Path,
    ) -> Agent {
        Agent::spawn(Some(token), prefix, admin_url, listen, results)
    }

    fn spawn(
        flag: Option<&str>,
        prefix: &[&str],
        admin_url: &str,
        listen: &str,
        results: &Path,
    ) -> Agent {
        Agent::spawn_with(flag, prefix, admin_url, listen, results, &[])
    }

    /// An agent with `--access-token token` and more flags (`extra`).
    pub(crate) fn with_flags(
        token: &str,
        admin_url: &str,
        listen: &str,
        results: &Path,
        extra: &[&str],
    ) -> Agent {
        Agent::spawn_with(Some(token), &[], admin_url, listen, results, extra)
    }

    fn spawn_with(
        flag: Option<&str>,
        prefix: &[&str],
        admin_url: &str,
        listen: &str,
        results: &Path,
        extra: &[&str],
    ) -> Agent {
        let log = results.join(format!("agent-{}.log", super::unique()));
        let bin = env!("CARGO_BIN_EXE_loadbench");
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = std::process::Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => std::process::Command::new(bin),
        };
        cmd.args([
            "agent",
            "xxl-job",
            "--admin",
            admin_url,
            "--app-name",
            "lbtest",
        ])
        .args(["--listen", listen, "--results-dir"])
        .arg(results)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
        match flag {
            Some(token) => cmd.args(["--access-token", token]),
            None => cmd.env("LOADBENCH_XXL_JOB_TOKEN", TOKEN),
        };
        Agent {
            child: cmd.spawn().expect("the agent starts"),
            log,
        }
    }

    /// Sends SIGTERM and waits (at most 10 s) for a clean exit.
    pub(crate) fn stop(&mut self) -> std::process::ExitStatus {
        self.terminate()
            .expect("the agent stops within 10 s of SIGTERM")
    }

    /// SIGTERM, then at most 10 s for the exit; SIGKILL after that (`None`).
    fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) on our own child's pid has no memory-safety implications.
        unsafe {
            libc::kill(i32::try_from(self.child.id()).unwrap(), libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }

    /// Its stderr so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.terminate();
        }
    }
}
