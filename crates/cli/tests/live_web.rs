//! The live web page (`--live-web`) of `loadbench run` against the reference backend: headless
//! Chromium loads the page twice while the run goes and sees its figures move, the page
//! refreshes itself while live and not once final (the run is ended by SIGINT, as Ctrl-C), and the final page is the `--html` report
//! byte for byte, its numbers those of the saved result. A non-loopback address without
//! `--live-web-public` is refused with one line before anything runs. Nothing here depends on
//! the machine's speed: changes and equalities, never rates. Without Chromium the browser test
//! is skipped with a message, except under CI (env `CI` set), where it fails.

use crate::support::{bin, tempdir, text};
use loadbench_model::RunResult;
use loadbench_upstream::{Server, ServerConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

/// Debian's chromium, or None (after saying why) outside CI.
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is needed for the live page test under CI"
        );
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
    }
    found
}

/// The page at `url` as headless Chromium has it after loading it (`--dump-dom`).
fn dump_dom(browser: &Path, url: &str) -> String {
    let profile = tempdir("chromium-profile");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    wait_or_kill(&mut child, BROWSER_TIMEOUT, "chromium");
    let _ = std::fs::remove_dir_all(&profile);
    reader.join().unwrap()
}

/// Waits for `child`, killing it (by its own pid) and failing after `limit`.
fn wait_or_kill(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The number in the summary row `name` of a report page (`<th scope="row">NAME</th><td>N`).
fn figure(page: &str, name: &str) -> Option<u64> {
    let key = format!("<th scope=\"row\">{name}</th><td>");
    let start = page.find(&key)? + key.len();
    let digits: String = page[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A raw `GET /` of the page: (response head, body).
fn get(url: &str) -> (String, Vec<u8>) {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).expect("the live page answers");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = all.split_off(split);
    (String::from_utf8_lossy(&all).into_owned(), body)
}

/// The lines of the child's stderr as they come.
fn lines(child: &mut Child) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// The next stderr line containing `what`, within 30 s.
fn line_with(rx: &Receiver<String>, what: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
        if line.contains(what) {
            return line;
        }
        seen.push(line);
    }
    panic!("stderr never said {what:?}, only {seen:?}");
}

/// Starts `command` (a loadbench run with `--live-web`) with stderr piped: the child, its stderr
/// lines, and the live page's address from its "live report: " line.
fn spawn_live(command: &mut Command) -> (Child, Receiver<String>, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loadbench runs");
    let rx = lines(&mut child);
    let url = line_with(&rx, "live report: ")
        .trim_start_matches("live report: ")
        .to_string();
    (child, rx, url)
}

/// Polls `look` (every 200 ms, at most 30 s) until it finds what it looks for; the panic
/// shows the last thing it saw.
fn poll_page<T>(what: &str, mut look: impl FnMut() -> Result<T, String>) -> T {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        match look() {
            Ok(found) => return found,
            Err(seen) => assert!(Instant::now() < until, "{what}: {seen:.500}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The live page's completed requests, loaded by Chromium until the run has some.
fn live_requests(browser: &Path, url: &str) -> u64 {
    poll_page("no live figures", || {
        let page = dump_dom(browser, url);
        match figure(&page, "Requests completed") {
            Some(n) if n > 0 => Ok(n),
            _ => Err(page),
        }
    })
}

/// The head of the first page served once a load runs (before, a plain-text note).
fn first_live_page(url: &str) -> String {
    poll_page("no live page", || {
        let (head, _) = get(url);
        if head.contains("text/html") {
            Ok(head)
        } else {
            Err(head)
        }
    })
}

#[test]
fn live_page_moves_during_the_run_and_ends_as_the_saved_report() {
    let Some(browser) = chromium() else { return };
    let _busy = crate::support::loading();
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let dir = tempdir("live-web");
    let (save, html) = (dir.join("r.json"), dir.join("r.html"));
    let target = format!("http://{}/", server.local_addr());
    let mut command = bin();
    command
        .args(["run", &target, "-c", "2", "-d", "60s", "--live-web"])
        .arg("--save")
        .arg(&save)
        .arg("--html")
        .arg(&html);
    let (mut child, rx, url) = spawn_live(&mut command);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let head = first_live_page(&url);
    assert!(
        head.contains("\r\nRefresh: 1\r\n"),
        "a live page reloads: {head}"
    );
    let first = live_requests(&browser, &url);
    std::thread::sleep(Duration::from_millis(1200));
    let second = live_requests(&browser, &url);
    assert!(
        second > first,
        "the live page did not move: {first} then {second}"
    );
    // SIGINT (as Ctrl-C) ends the run early and keeps the result (exit 130), so none of the
    // loads above can have been the final page.
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(killed.success());
    line_with(&rx, "HTML report written to");
    let (head, body) = get(&url);
    let status = wait_or_kill(&mut child, Duration::from_secs(15), "loadbench run");
    assert_eq!(status.code(), Some(130), "interrupted, result kept");
    assert!(!head.contains("Refresh"), "the final page stays: {head}");
    let written = std::fs::read(&html).expect("--html was written");
    assert!(
        body == written,
        "the final page is the --html report byte for byte"
    );
    let saved = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert!(saved.interrupted);
    let page = String::from_utf8(body).unwrap();
    assert_eq!(
        figure(&page, "Requests completed"),
        Some(saved.stats.requests)
    );
    assert!(saved.stats.requests >= second);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_public_address_needs_the_flag_and_is_refused_before_any_load() {
    for cmd in [
        vec!["run", "http://127.0.0.1:1/", "--live-web=0.0.0.0:0"],
        vec![
            "find-max",
            "http://127.0.0.1:1/",
            "--slo",
            "p99<50ms",
            "--live-web=0.0.0.0:0",
        ],
    ] {
        let out = bin().args(&cmd).output().expect("loadbench runs");
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains("--live-web-public"), "{stderr}");
        assert!(stdout.is_empty());
    }
    let out = bin()
        .args(["run", "http://127.0.0.1:1/", "--live-web=nowhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("IP:PORT"));
}

#[test]
fn bench_serves_the_running_load_and_ends_as_its_report() {
    let _busy = crate::support::loading();
    let dir = tempdir("live-web-bench");
    let file = dir.join("web.toml");
    std::fs::write(
        &file,
        "name = \"web\"\nrounds = 1\n[[target]]\nname = \"up\"\nkind = \"upstream\"\n\
         [[load]]\nname = \"closed\"\nmodel = \"closed\"\ntargets = [\"up\"]\n\
         connections = [2]\nduration = \"4s\"\n",
    )
    .unwrap();
    let mut command = bin();
    command
        .args(["bench", "--live-web"])
        .arg(&file)
        .arg("--results")
        .arg(dir.join("results"));
    let (mut child, rx, url) = spawn_live(&mut command);
    let live = poll_page("no live figures", || {
        let (head, body) = get(&url);
        let page = String::from_utf8(body).unwrap();
        match figure(&page, "Requests completed") {
            Some(n) if n > 0 => Ok(head),
            _ => Err(page),
        }
    });
    assert!(live.contains("\r\nRefresh: 1\r\n"), "{live}");
    let saved_line = line_with(&rx, "result saved to ");
    let (head, body) = get(&url);
    let status = wait_or_kill(&mut child, Duration::from_secs(15), "loadbench bench");
    assert!(status.success(), "{status:?}");
    assert!(!head.contains("Refresh"), "{head}");
    let folder = Path::new(saved_line.trim_start_matches("result saved to "))
        .parent()
        .unwrap()
        .to_path_buf();
    let report = std::fs::read(folder.join("report.html")).unwrap();
    if body != report {
        std::fs::write(dir.join("served.html"), &body).unwrap();
    }
    assert!(
        body == report,
        "the final page is the bench's report.html byte for byte: {dir:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
