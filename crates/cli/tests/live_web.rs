//! The live web page (`--live-web`) of `loadbench run` against the reference backend: headless
//! Chromium loads the page twice while the run goes and sees its figures move, its title and
//! its status (`running, 1.2 s of 60 s`) and connections open; the page refreshes itself while
//! live and not once final (the run is ended by SIGINT, as Ctrl-C), and the final page says
//! `finished` and is, that status block cut out, the `--html` report byte for byte, its numbers
//! those of the saved result. In a bench the page is titled with the target's name and the
//! step (load, level, round), says `between steps` between them and never shows an error
//! banner. A non-loopback address without `--live-web-public` is refused with one line before
//! anything runs. Nothing here depends on the machine's speed: changes and equalities, never
//! rates or how long a state lasts (a state only brief on a busy machine is waited for, not
//! timed). Without Chromium the browser test is skipped with a message, except under CI (env
//! `CI` set), where it fails.

use crate::support::{bin, tempdir, text};
use loadbench_model::RunResult;
use loadbench_upstream::{Server, ServerConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// A bound for a hung browser, not a speed check: a cold headless Chromium on a loaded 2-core
/// machine has taken over a minute.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(150);

/// Debian's chromium, or None (after saying why) outside CI.
pub(crate) fn chromium() -> Option<PathBuf> {
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
pub(crate) fn dump_dom(browser: &Path, url: &str) -> String {
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

/// The page with its live status block (`<!-- live -->…<!-- /live -->`) cut out.
fn without_live_block(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(page.to_vec()).expect("the page is UTF-8");
    let start = text
        .find("<!-- live -->")
        .expect("the page has a live block");
    let end = text.find("<!-- /live -->\n").expect("the live block ends") + 15;
    format!("{}{}", &text[..start], &text[end..]).into_bytes()
}

/// A final page: it says `finished`; returned with its live status block cut out.
fn finished_report(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(page.to_vec()).expect("the page is UTF-8");
    let status = element_text(&text, "live-status");
    assert_eq!(status.as_deref(), Some("finished"), "{text:.2000}");
    without_live_block(page)
}

/// The text of the element with `id` (`<p id="live-status"><strong>running…`), tags dropped.
fn element_text(page: &str, id: &str) -> Option<String> {
    let key = format!("id=\"{id}\">");
    let start = page.find(&key)? + key.len();
    let end = start + page[start..].find("</p>")?;
    Some(
        page[start..end]
            .replace("<strong>", "")
            .replace("</strong>", ""),
    )
}

/// The `<title>` of a page.
fn title(page: &str) -> Option<&str> {
    let start = page.find("<title>")? + "<title>".len();
    Some(&page[start..start + page[start..].find("</title>")?])
}

/// A raw `GET /` of the page: (response head, body).
fn get(url: &str) -> (String, Vec<u8>) {
    try_get(url).expect("the live page answers")
}

/// [`get`], or None when the page cannot be read (the process has exited).
fn try_get(url: &str) -> Option<(String, Vec<u8>)> {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut all = Vec::new();
    s.read_to_end(&mut all).ok()?;
    let split = all.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let body = all.split_off(split);
    Some((String::from_utf8_lossy(&all).into_owned(), body))
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

/// What Chromium rendered of a live run page: the title names the command and the target, the
/// status says the run is live and how far along (never past its 60 s), 2 connections are open.
fn assert_live_run_page(page: &str, target: &str) {
    assert_eq!(
        title(page),
        Some(format!("loadbench run: {target}").as_str())
    );
    let status = element_text(page, "live-status").expect("a status");
    let of = status
        .strip_prefix("running, ")
        .and_then(|s| s.strip_suffix(" of 60 s"))
        .unwrap_or_else(|| panic!("running, N s of 60 s: {status}"));
    let secs: f64 = of.trim_end_matches(" s").parse().expect("seconds");
    assert!((0.0..=60.0).contains(&secs), "{status}");
    let open = element_text(page, "live-connections").expect("connections");
    assert!(open.starts_with("open connections 2 "), "{open}");
    let opened = figure(page, "Connections opened").expect("connections opened");
    assert!(opened >= 2, "2 connections are open: {page:.3000}");
    assert!(!page.contains("No response completed"), "{page:.3000}");
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
    let (second, page) = poll_page("no live figures", || {
        let page = dump_dom(&browser, &url);
        match figure(&page, "Requests completed") {
            Some(n) if n > 0 => Ok((n, page)),
            _ => Err(page),
        }
    });
    assert!(
        second > first,
        "the live page did not move: {first} then {second}"
    );
    assert_live_run_page(&page, &target);
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
    let body = finished_report(&body);
    let written = std::fs::read(&html).expect("--html was written");
    assert!(
        body == written,
        "the final page, its status cut out, is the --html report byte for byte"
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

/// The pages of a live web page polled every 100 ms, every one kept.
struct Watch {
    url: String,
    pages: Vec<String>,
}

impl Watch {
    /// Polls (at most 60 s) until a page satisfies `ok`, and returns it.
    fn until(&mut self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some((_, body)) = try_get(&self.url) {
                let page = String::from_utf8(body).unwrap();
                self.pages.push(page.clone());
                if ok(&page) {
                    return page;
                }
            }
            let last = self.pages.last().map_or("", String::as_str);
            assert!(Instant::now() < until, "{what}: {last:.1500}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls until `child` has exited (the command is bounded by its scenario; this by 120 s).
    fn until_exit(&mut self, child: &mut Child) {
        let until = Instant::now() + Duration::from_secs(120);
        while child.try_wait().expect("wait").is_none() {
            assert!(
                Instant::now() < until,
                "the command did not end within 120 s"
            );
            if let Some((_, body)) = try_get(&self.url) {
                self.pages.push(String::from_utf8(body).unwrap());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Whether `page` is bench step `n` (of 2, level `level`) running with figures.
fn step_running(page: &str, n: u32, level: &str) -> bool {
    let want = format!("loadbench bench web: up, closed {level}, round 1 of 1 (step {n} of 2)");
    title(page) == Some(want.as_str())
        && element_text(page, "live-status").is_some_and(|s| s.starts_with("running"))
        && figure(page, "Requests completed").is_some_and(|n| n > 0)
}

/// The last page a bench served is the final one: `finished`, and, its status block cut out,
/// the run folder's report.html (named by stderr's `saved_line`) byte for byte.
fn assert_final_is_report(last: &str, saved_line: &str, dir: &Path) {
    assert_eq!(
        element_text(last, "live-status").as_deref(),
        Some("finished")
    );
    let folder = Path::new(saved_line.trim_start_matches("result saved to "))
        .parent()
        .unwrap()
        .to_path_buf();
    let report = std::fs::read(folder.join("report.html")).unwrap();
    let body = without_live_block(last.as_bytes());
    if body != report {
        std::fs::write(dir.join("served.html"), &body).unwrap();
    }
    assert!(
        body == report,
        "the final page, its status cut out, is the bench's report.html byte for byte: {dir:?}"
    );
}

const WEB_BENCH: &str = "name = \"web\"\nrounds = 1\ncooldown = \"2s\"\n\
    [[target]]\nname = \"up\"\nkind = \"upstream\"\n\
    [[load]]\nname = \"closed\"\nmodel = \"closed\"\ntargets = [\"up\"]\n\
    connections = [1, 2]\nduration = \"4s\"\n";

/// A two-step bench (c=1 then c=2, 4 s each, 2 s apart), its page polled from start to exit:
/// every page is titled with the target's name and the step, none shows an error banner
/// (between the steps it says so), the connections open show while a step runs, and the
/// final page is the bench's report.html.
#[test]
fn bench_page_names_the_target_and_step_and_shows_no_error_between_steps() {
    let _busy = crate::support::loading();
    let dir = tempdir("live-web-bench");
    let file = dir.join("web.toml");
    std::fs::write(&file, WEB_BENCH).unwrap();
    let mut command = bin();
    command
        .args(["bench", "--live-web"])
        .arg(&file)
        .arg("--results")
        .arg(dir.join("results"));
    let (mut child, rx, url) = spawn_live(&mut command);
    let mut w = Watch {
        url: url.clone(),
        pages: Vec::new(),
    };
    // The steps and the state between them, each waited for, whatever the machine's speed.
    let first = w.until("no page of step 1", |p| step_running(p, 1, "c=1"));
    assert!(get(&url).0.contains("\r\nRefresh: 1\r\n"));
    assert!(
        first.contains("<h1>loadbench bench web: up, closed c=1"),
        "{first:.2000}"
    );
    let open = element_text(&first, "live-connections").expect("connections");
    assert!(open.starts_with("open connections 1 "), "{open}");
    let opened = figure(&first, "Connections opened").expect("connections opened");
    assert!(opened >= 1, "{first:.3000}");
    let between = w.until("no page between the steps", |p| {
        element_text(p, "live-status").is_some_and(|s| s.starts_with("between steps"))
    });
    assert!(
        title(&between).is_some_and(|t| t.contains("(step 1 of 2)")),
        "{between:.2000}"
    );
    w.until("no page of step 2", |p| step_running(p, 2, "c=2"));
    w.until_exit(&mut child);
    let status = wait_or_kill(&mut child, Duration::from_secs(15), "loadbench bench");
    assert!(status.success(), "{status:?}");
    for page in &w.pages {
        assert!(
            !page.contains("alert error") && !page.contains("No response completed"),
            "a bench page with an error banner: {page:.3000}"
        );
        assert!(!page.contains("<h1>loadbench run"), "{page:.2000}");
    }
    // The process has exited: the last page it served was the final one.
    let saved_line = line_with(&rx, "result saved to ");
    assert_final_is_report(w.pages.last().unwrap(), &saved_line, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 32: the live page of a `-d 3s` run of the login flow, fetched while it goes, shows
/// the per-step table with each step's name, method and path, and the flow's line once
/// iterations have completed; the count it showed is at most the saved result's.
#[test]
fn a_flow_run_page_shows_its_steps_and_iterations() {
    let _busy = crate::support::loading();
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let dir = tempdir("live-web-flow");
    let (save, flow) = (dir.join("r.json"), dir.join("login.toml"));
    std::fs::write(&flow, crate::flows::LOGIN).unwrap();
    let target = format!("http://{}", server.local_addr());
    let mut command = bin();
    command
        .args([
            "run",
            &target,
            "-c",
            "2",
            "-d",
            "3s",
            "--live-web",
            "--flow",
        ])
        .arg(&flow)
        .arg("--save")
        .arg(&save);
    let (mut child, _rx, url) = spawn_live(&mut command);
    let completed = |page: &str| {
        let line = element_text(page, "live-flow")?;
        let n = line.strip_prefix("flow login: ")?.split(' ').next()?;
        n.parse::<u64>().ok()
    };
    let mut watch = Watch {
        url,
        pages: Vec::new(),
    };
    let page = watch.until("the flow's steps and iterations", |p| {
        element_text(p, "live-status").is_some_and(|s| s.starts_with("running"))
            && completed(p).is_some_and(|n| n > 0)
    });
    let line = element_text(&page, "live-flow").unwrap();
    assert!(
        line.contains(" iterations completed (") && line.contains(" broken, "),
        "{line}"
    );
    let table = &page[page
        .find("<table id=\"live-endpoints\"")
        .expect("the step table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("per step (flow login)"), "{table}");
    for label in ["login: POST /login", "me: GET /me", "me-again: GET /me"] {
        assert!(
            table.contains(&format!(">{label}</td>")),
            "{label}: {table}"
        );
    }
    let shown = completed(&page).unwrap();
    watch.until_exit(&mut child);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let saved = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let f = saved.stats.flow.as_ref().expect("a flow's result");
    assert!(f.completed >= shown, "shown {shown}, saved {}", f.completed);
    let _ = std::fs::remove_dir_all(&dir);
}
