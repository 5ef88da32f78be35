//! The terminal dashboard of `loadbench run`, driven for real inside a detached tmux session
//! (100×30) against the reference backend: its numbers move while the run goes, the last ones
//! it showed agree with the saved result, `q` and Ctrl-C stop the run and keep it, and the
//! terminal is left usable. With stderr not a terminal nothing of it appears. No assertion
//! depends on the machine's speed: changes and consistency, never rates. Without tmux the
//! tmux tests are skipped with a message, except under CI (env `CI` set), where they fail.

use crate::support::{bin, tempdir};
use loadbench_model::{FindMaxResult, RunResult, Verdict};
use loadbench_upstream::{parse_delay, Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const PROMPT: &str = "lbprompt> ";

/// A tmux server of its own (`-L`), with one 100×30 session running `sh`; killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// None (after saying why) when tmux is missing outside CI.
    fn start() -> Option<Tmux> {
        let have = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !have {
            assert!(
                std::env::var_os("CI").is_none(),
                "tmux is needed for the dashboard tests under CI"
            );
            eprintln!("skipped: tmux is not installed (apt-get install tmux)");
            return None;
        }
        let t = Tmux {
            socket: format!("loadbench-live-{}", crate::support::unique()),
        };
        let shell = format!("env -i PATH=/usr/bin:/bin TERM=xterm-256color PS1='{PROMPT}' sh -i");
        t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "100",
            "-y",
            "30",
            &shell,
        ]);
        t.wait_for("the shell prompt", Duration::from_secs(10), |p| {
            p.contains(PROMPT.trim_end())
        });
        Some(t)
    }

    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn capture(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }

    /// The main screen's last 500 lines: what scrolled off the pane too (a dashboard on the
    /// alternate screen never reaches it).
    fn scrollback(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t", "-S", "-500"])
    }

    /// Types `text` and presses Enter.
    fn line(&self, text: &str) {
        self.cmd(&["send-keys", "-t", "t", "-l", text]);
        self.cmd(&["send-keys", "-t", "t", "Enter"]);
    }

    /// The pane once `ok` holds for it, polled every 200 ms; fails after `limit`.
    fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let pane = self.capture();
            if ok(&pane) {
                return pane;
            }
            assert!(
                start.elapsed() < limit,
                "no {what} after {limit:?}:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn format(&self, f: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", "t", f])
            .trim()
            .to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// What the dashboard showed: total requests, and the last closed second's number, completed
/// and sent counts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shown {
    requests: u64,
    second: Option<(usize, u64, u64)>,
}

fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Parses the dashboard's counts block; None when the pane does not show the dashboard.
fn shown(pane: &str) -> Option<Shown> {
    if !pane.contains("q or Ctrl-C") && !pane.contains("Ctrl-C again") {
        return None;
    }
    let requests = number_after(pane, "requests ")?;
    let second = pane
        .lines()
        .find(|l| l.contains(" completed, "))
        .and_then(|line| {
            let line = &line[line.find("second ")?..];
            let n = number_after(line, "second ")?;
            let done = number_after(line, ": ")?;
            let sent = number_after(line, "completed, ")?;
            Some((n as usize, done, sent))
        });
    Some(Shown { requests, second })
}

struct Launched {
    tmux: Tmux,
    save: PathBuf,
    dir: PathBuf,
}

/// Starts `loadbench run URL -c 2 -t 1 ARGS --save FILE` in the pane, then `echo lbexit=$?`.
fn launch(server: &Server, args: &str) -> Option<Launched> {
    launch_command(server, "run", &format!("-c 2 -t 1 {args}"))
}

/// Starts `loadbench COMMAND URL ARGS --save FILE` in the pane, then `echo lbexit=$?`.
fn launch_command(server: &Server, command: &str, args: &str) -> Option<Launched> {
    let tmux = Tmux::start()?;
    let dir = tempdir("live");
    let save = dir.join("r.json");
    tmux.line(&format!(
        "{} {command} http://{}/ {args} --save {}; echo lbexit=$?",
        env!("CARGO_BIN_EXE_loadbench"),
        server.local_addr(),
        save.display()
    ));
    Some(Launched { tmux, save, dir })
}

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

fn saved(path: &Path) -> RunResult {
    RunResult::from_json(&std::fs::read_to_string(path).expect("the result was saved"))
        .expect("the saved result reads back")
}

/// Waits for the dashboard to show a closed second, and returns what it showed.
fn first_view(t: &Tmux) -> Shown {
    let pane = t.wait_for(
        "dashboard with a closed second",
        Duration::from_secs(60),
        |p| shown(p).is_some_and(|s| s.second.is_some()),
    );
    shown(&pane).unwrap()
}

/// After the run: the summary and the exit line are in the pane, the prompt is back, no escape
/// code shows, the alternate screen is left, the cursor shows and the shell reads lines again
/// (a terminal left in raw mode would not run the `echo`).
fn assert_terminal_usable(t: &Tmux, exit: &str, summary: &str) -> String {
    // The echo's own line, not the typed command (`echo lbexit=$?`) on the main screen.
    let pane = t.wait_for("exit line", Duration::from_secs(60), |p| {
        p.lines().any(|l| l.starts_with("lbexit="))
    });
    assert!(pane.contains(&format!("lbexit={exit}")), "{pane}");
    // The summary may have scrolled off the pane (a bench prints its warnings and why after it).
    let back = t.scrollback();
    assert!(back.contains(summary), "the summary is printed: {back}");
    assert!(
        !pane.contains('\u{1b}') && !pane.contains("^["),
        "stray escapes: {pane}"
    );
    assert!(
        !pane.contains("[?25") && !pane.contains("[?1049"),
        "stray escapes: {pane}"
    );
    assert_eq!(t.format("#{alternate_on}"), "0", "alternate screen left");
    assert_eq!(t.format("#{cursor_flag}"), "1", "cursor shown");
    t.line("echo typed-$((40+2))");
    t.wait_for("echo output", Duration::from_secs(10), |p| {
        p.contains("typed-42")
    });
    let pane = t.capture();
    let last = pane
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert_eq!(
        last.trim_end(),
        PROMPT.trim_end(),
        "the prompt is back: {pane}"
    );
    pane
}

#[test]
fn dashboard_moves_and_its_last_numbers_match_the_saved_result() {
    let _machine = crate::support::loading();
    let server = backend();
    let Some(run) = launch(&server, "-d 6s") else {
        return;
    };
    let t = &run.tmux;
    let a = first_view(t);
    std::thread::sleep(Duration::from_millis(1100));
    let b = shown(&t.capture()).expect("still on the dashboard a second later");
    assert!(
        b.requests > a.requests,
        "request count moved: {a:?} then {b:?}"
    );
    // The req/s shown is the last closed second's: wait (generously) for the next one.
    let c = t.wait_for("a later second", Duration::from_secs(30), |p| {
        shown(p).is_some_and(|s| s.second.map(|x| x.0) > a.second.map(|x| x.0))
    });
    assert!(shown(&c).unwrap().second.is_some());
    // Keep the last dashboard the pane showed until the run ends.
    let mut last = shown(&c).unwrap();
    loop {
        let pane = t.capture();
        match shown(&pane) {
            Some(s) => last = s,
            None if pane.contains("lbexit=") => break,
            None => {}
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_terminal_usable(t, "0", "Status codes:");
    let r = saved(&run.save);
    let (second, done, sent) = last.second.unwrap();
    let point = &r.stats.series.0[second];
    assert_eq!(
        (point.requests, point.sent),
        (done, sent),
        "second {second}"
    );
    let closed: u64 = r.stats.series.0[..=second].iter().map(|p| p.requests).sum();
    assert!(
        (closed..=r.stats.requests).contains(&last.requests),
        "shown {} requests: between the closed seconds' {closed} and the result's {}",
        last.requests,
        r.stats.requests
    );
    let _ = std::fs::remove_dir_all(&run.dir);
}

/// `key` (tmux's name) stops a 60 s run early; the result is saved and marked interrupted.
fn stops_early_with(key: &str, resize: bool) {
    let _machine = crate::support::loading();
    let server = backend();
    let Some(run) = launch(&server, "-d 60s") else {
        return;
    };
    let t = &run.tmux;
    let before = first_view(t);
    if resize {
        t.cmd(&["resize-window", "-t", "t", "-x", "70", "-y", "20"]);
        let small = t.wait_for("one line", Duration::from_secs(20), |p| {
            p.lines()
                .next()
                .is_some_and(|l| l.contains(" req/s ") && l.contains("q: stop"))
        });
        assert!(!small.contains("open connections"), "{small}");
        t.cmd(&["resize-window", "-t", "t", "-x", "100", "-y", "30"]);
        t.wait_for("the full view", Duration::from_secs(20), |p| {
            shown(p).is_some()
        });
    }
    t.cmd(&["send-keys", "-t", "t", key]);
    assert_terminal_usable(t, "130", "Status codes:");
    let r = saved(&run.save);
    assert!(r.interrupted, "the result says it was interrupted");
    assert!(
        r.stats.requests >= before.requests,
        "every shown request kept"
    );
    assert!(r.stats.elapsed_secs() < 50.0, "{}", r.stats.elapsed_secs());
    let _ = std::fs::remove_dir_all(&run.dir);
}

#[test]
fn q_stops_the_run_and_keeps_the_result() {
    stops_early_with("q", false);
}

/// Shrunk below 80×24 the dashboard is one line; grown back, the full view returns.
#[test]
fn resizing_below_80x24_gives_one_line_and_back() {
    stops_early_with("q", true);
}

#[test]
fn ctrl_c_stops_the_run_and_keeps_the_result() {
    stops_early_with("C-c", false);
}

/// The iterations completed on the dashboard's flow line (`flow login: N iterations
/// completed`), when the pane shows it.
fn flow_completed(pane: &str) -> Option<u64> {
    number_after(pane, "flow login: ")
}

/// Issue 32: a `-d 3s` run of the login flow shows, while it goes, the per-step block with
/// each step's name and method and path, and the flow's line once iterations have completed;
/// the last count it showed is at most the saved result's.
#[test]
fn a_flow_run_shows_its_steps_and_iterations_on_the_dashboard() {
    let _machine = crate::support::loading();
    let server = backend();
    let flow = tempdir("live-flow").join("login.toml");
    std::fs::write(&flow, crate::flows::LOGIN).unwrap();
    let Some(run) = launch(&server, &format!("-d 3s --flow {}", flow.display())) else {
        return;
    };
    let t = &run.tmux;
    let labels = ["login: POST /login", "me: GET /me", "me-again: GET /me"];
    let pane = t.wait_for(
        "the flow's steps and iterations",
        Duration::from_secs(60),
        |p| {
            shown(p).is_some()
                && p.contains(" per step (flow login) ")
                && labels.iter().all(|l| p.contains(l))
                && flow_completed(p).is_some_and(|n| n > 0)
        },
    );
    let line = pane.lines().find(|l| l.contains("flow login: ")).unwrap();
    assert!(
        line.contains(" iterations completed (") && line.contains(" broken, "),
        "{line}"
    );
    let shown_completed = flow_completed(&pane).unwrap();
    assert_terminal_usable(t, "0", "Status codes:");
    let r = saved(&run.save);
    let f = r.stats.flow.as_ref().expect("a flow's result");
    assert!(
        f.completed >= shown_completed,
        "shown {shown_completed} iterations, saved {}",
        f.completed
    );
    let names: Vec<_> = r.stats.endpoints.iter().map(|e| e.name.clone()).collect();
    assert_eq!(names, crate::flows::STEPS.map(|s| Some(s.to_string())));
    let _ = std::fs::remove_dir_all(&run.dir);
    let _ = std::fs::remove_dir_all(flow.parent().unwrap());
}

/// A request mix (`-u` besides the URL) shows its per-request block: each request's method
/// and path and its responses so far, which move while the run goes.
#[test]
fn a_mix_run_shows_each_request_on_the_dashboard() {
    let _machine = crate::support::loading();
    let server = backend();
    let json = format!("http://{}/json", server.local_addr());
    let Some(run) = launch(&server, &format!("-d 3s -u {json}")) else {
        return;
    };
    let t = &run.tmux;
    // The `GET /json` row's responses: the number after its label.
    let json_requests = |p: &str| -> Option<u64> {
        let line = p.lines().find(|l| l.contains("GET /json "))?;
        let rest = line[line.find("GET /json ")? + "GET /json ".len()..].trim_start();
        rest.split(' ').next()?.parse().ok()
    };
    let pane = t.wait_for("the mix's requests", Duration::from_secs(60), |p| {
        shown(p).is_some()
            && p.contains(" per request (mix) ")
            && p.lines()
                .any(|l| l.contains("│GET /  ") || l.contains("│GET / "))
            && json_requests(p).is_some_and(|n| n > 0)
    });
    assert!(!pane.contains("flow "), "a mix has no flow line: {pane}");
    let first = json_requests(&pane).unwrap();
    assert_terminal_usable(t, "0", "Status codes:");
    let r = saved(&run.save);
    let json_saved = r.stats.endpoints.iter().find(|e| e.url.ends_with("/json"));
    assert!(
        json_saved.is_some_and(|e| e.requests >= first),
        "shown {first}: {:?}",
        r.stats
            .endpoints
            .iter()
            .map(|e| (&e.url, e.requests))
            .collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&run.dir);
}

/// stderr not a terminal (a file here): exactly today's lines, no escape code, no dashboard,
/// even without `--no-live`.
#[test]
fn stderr_not_a_terminal_gets_the_plain_lines_only() {
    let _machine = crate::support::loading();
    let server = backend();
    let dir = tempdir("live-plain");
    let (save, err) = (dir.join("r.json"), dir.join("stderr.txt"));
    let out = bin()
        .args(["run", &format!("http://{}/", server.local_addr())])
        .args(["-c", "2", "-t", "1", "-d", "1s", "--save"])
        .arg(&save)
        .stderr(std::fs::File::create(&err).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = std::fs::read(&err).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&stderr),
        format!("result saved to {}\n", save.display())
    );
    assert!(!out.stdout.contains(&0x1b), "no escape code on stdout");
    assert!(saved(&save).stats.requests > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The step table's rows the pane shows: `(step, verdict word)`.
fn step_rows(pane: &str) -> Vec<(u32, String)> {
    let Some(start) = pane.find("step  offered") else {
        return Vec::new();
    };
    pane[start..]
        .lines()
        .skip(1)
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .map_while(|l| {
            let mut words = l.split_whitespace();
            let step = words.next()?.parse().ok()?;
            Some((step, words.nth(4)?.to_string()))
        })
        .collect()
}

/// find-max on the dashboard: the step table grows while the search runs, its last rows are
/// the saved steps with their verdicts (and a failed step's recovery wait), and the plain
/// step lines are printed once the dashboard has closed.
#[test]
fn find_max_step_table_grows_and_matches_the_saved_steps() {
    let _machine = crate::support::loading();
    // 2 slots of 10 ms: 200 req/s at most, so the search fails a step well above it.
    let server = Server::start(ServerConfig {
        max_concurrency: Some(2),
        delay: Some(parse_delay("10ms").unwrap()),
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts");
    let args = "--slo 'p99<1s' --step-duration 1s --start-rate 50 --max-steps 4 -t 1";
    let Some(run) = launch_command(&server, "find-max", args) else {
        return;
    };
    let t = &run.tmux;
    let first = t.wait_for("a step row", Duration::from_secs(90), |p| {
        !step_rows(p).is_empty()
    });
    let first = step_rows(&first);
    let mut last = first.clone();
    loop {
        let pane = t.capture();
        let rows = step_rows(&pane);
        if !rows.is_empty() {
            last = rows;
        } else if pane.contains("lbexit=") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        last.len() > first.len(),
        "the table grew: {first:?} then {last:?}"
    );
    let pane = assert_terminal_usable(t, "0", "maximum sustainable rate");
    assert!(
        pane.contains("step 1 (exponential)"),
        "plain step lines follow: {pane}"
    );
    let r = FindMaxResult::from_json(&std::fs::read_to_string(&run.save).unwrap()).unwrap();
    for (step, verdict) in &last {
        let saved = &r.steps[*step as usize - 1];
        let word = match saved.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Interrupted => "interrupted",
        };
        assert_eq!(verdict, word, "step {step}");
    }
    // The last step is judged as the search ends and the dashboard closes: a capture may
    // miss its row (within one refresh), never an earlier one.
    let (shown_last, saved_last) = (last.last().unwrap().0, r.steps.last().unwrap().step);
    assert!(
        (saved_last.saturating_sub(1)..=saved_last).contains(&shown_last),
        "shown up to step {shown_last}, saved {saved_last}"
    );
    let plain = format!("step {saved_last} (");
    assert!(
        pane.contains(&plain),
        "every step's line printed after: {pane}"
    );
    let _ = std::fs::remove_dir_all(&run.dir);
}

/// `name: CPU 0.12 cores, memory 9.50MiB of 512.00MiB` from a pane: (CPU text, memory text).
fn resources_shown(pane: &str, target: &str) -> Option<(String, String)> {
    let line = pane
        .lines()
        .find(|l| l.contains(&format!("{target}: CPU ")))?;
    let cpu = line
        .split("CPU ")
        .nth(1)?
        .split(" cores")
        .next()?
        .to_string();
    let mem = line
        .split("memory ")
        .nth(1)?
        .split(" of")
        .next()?
        .to_string();
    Some((cpu, mem))
}

/// Watches the bench's dashboard until the exit line: the last resources it showed (from
/// `first`) and every matrix row seen.
fn watch_bench(t: &Tmux, first: (String, String)) -> ((String, String), Vec<String>) {
    let mut last = first;
    let mut rows = Vec::new();
    loop {
        let pane = t.capture();
        if let Some(r) = resources_shown(&pane, "up") {
            last = r;
        }
        if let Some(row) = pane.lines().find(|l| l.contains("closed c=2: ")) {
            rows.push(row.trim_matches(|c| c == '│' || c == ' ').to_string());
        }
        if pane.contains("lbexit=") {
            return (last, rows);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `loadbench bench` on `scenario` (written into a fresh folder `name`, the results
/// under it) in a tmux pane, then `echo lbexit=$?`: the pane and the folder.
/// Two readings of the dashboard's counts 1.1 s apart within the same round of the matrix row
/// that starts with `row` (a few tries). The counts move while a round runs; a round that ends
/// between two readings starts the next from zero.
fn two_readings_of_one_round(t: &Tmux, row: &str) -> (Shown, Shown) {
    let round = |p: &str| {
        let at = p.find(row)? + row.len();
        p[at..].split_whitespace().next().map(str::to_string)
    };
    let mut readings = Vec::new();
    let pair = (0..5).find_map(|_| {
        let before = t.capture();
        std::thread::sleep(Duration::from_millis(1100));
        let after = t.capture();
        let (a, b) = (shown(&before)?, shown(&after)?);
        readings.push((a.requests, b.requests, round(&before), round(&after)));
        // The matrix row can lag a round's start by a redraw: a reading whose second went
        // back (the next round's second 0) is across the boundary, whatever the row says.
        let same_second_run = b.second.map(|s| s.0) >= a.second.map(|s| s.0);
        let same_round = round(&before).is_some() && round(&before) == round(&after);
        (same_round && same_second_run).then_some((a, b))
    });
    pair.unwrap_or_else(|| panic!("no two readings in one round: {readings:?}"))
}

fn launch_bench(name: &str, scenario: &str) -> Option<(Tmux, PathBuf)> {
    let tmux = Tmux::start()?;
    let dir = tempdir(name);
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    tmux.line(&format!(
        "{} bench {} --results {}; echo lbexit=$?",
        env!("CARGO_BIN_EXE_loadbench"),
        file.display(),
        dir.join("results").display()
    ));
    Some((tmux, dir))
}

const BENCH: &str = r#"
name = "live"
rounds = 2
cooldown = "0s"
[generator]
threads = 1
[[target]]
name = "up"
kind = "upstream"
limits = { memory = "512MiB" }
[[load]]
name = "closed"
model = "closed"
targets = ["up"]
connections = [2]
duration = "3s"
"#;

#[test]
fn bench_dashboard_shows_the_matrix_and_the_targets_cpu_and_memory() {
    let _machine = crate::support::loading();
    let Some((tmux, dir)) = launch_bench("live-bench", BENCH) else {
        return;
    };
    let t = &tmux;
    let pane = t.wait_for(
        "the matrix with a sampled target",
        Duration::from_secs(60),
        |p| p.contains("bench matrix") && resources_shown(p, "up").is_some() && shown(p).is_some(),
    );
    assert!(pane.contains("of 512.00MiB"), "the limit beside it: {pane}");
    assert!(
        pane.contains("up closed c=2: >."),
        "round 1 running, round 2 left: {pane}"
    );
    let (a, b) = two_readings_of_one_round(t, "up closed c=2: ");
    assert!(
        b.requests > a.requests,
        "the load's counts moved: {a:?} then {b:?}"
    );
    let (last, rows) = watch_bench(t, resources_shown(&pane, "up").unwrap());
    assert!(
        rows.iter().any(|r| r.ends_with("closed c=2: #>")),
        "round 1 done, round 2 running: {rows:?}"
    );
    assert_terminal_usable(t, "0", "[2/2]");
    // The report under them may push the first round line off the pane.
    let history = t.scrollback();
    assert!(
        history.contains("[1/2]"),
        "round lines printed after: {history}"
    );
    let folder = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(folder.join("result.json")).unwrap();
    let r = loadbench_model::BenchResult::from_json(&text).unwrap();
    let sampled = r.resources.samples.iter().any(|s| {
        s.targets.iter().any(|x| {
            x.name == "up"
                && format!("{:.2}", x.cpu_cores) == last.0
                && loadbench_model::human::bytes(x.rss_bytes as f64) == last.1
        })
    });
    assert!(
        sampled,
        "the CPU and memory shown last ({last:?}) are a saved sample's"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bench's dashboard is headed by the target's name and the step (never the random port
/// of the upstream target), and its matrix labels each level's cells (`c=1: #  c=2: >`).
#[test]
fn bench_dashboard_names_the_target_the_step_and_the_levels() {
    let _machine = crate::support::loading();
    // BENCH with one round of two levels.
    let levels = BENCH
        .replace("rounds = 2", "rounds = 1")
        .replace("connections = [2]", "connections = [1, 2]")
        .replace("duration = \"3s\"", "duration = \"4s\"");
    let Some((tmux, dir)) = launch_bench("live-levels", &levels) else {
        return;
    };
    let t = &tmux;
    let heading = |n: u32, level: &str| {
        format!("loadbench bench live: up, closed {level}, round 1 of 1 (step {n} of 2)")
    };
    // A capture can catch a frame half drawn: each wait is for the heading and the row together.
    let first = t.wait_for("step 1 on the dashboard", Duration::from_secs(60), |p| {
        p.lines()
            .next()
            .is_some_and(|l| l.trim_end() == heading(1, "c=1"))
            && p.contains("up closed c=1: >  c=2: .")
    });
    assert!(
        !first.lines().next().unwrap().contains("127.0.0.1"),
        "the target's name, not its port: {first}"
    );
    // Step 1 done, step 2 running.
    t.wait_for("step 2 on the dashboard", Duration::from_secs(60), |p| {
        p.lines()
            .next()
            .is_some_and(|l| l.trim_end() == heading(2, "c=2"))
            && p.contains("up closed c=1: #  c=2: >")
    });
    assert_terminal_usable(t, "0", "[2/2]");
    let _ = std::fs::remove_dir_all(&dir);
}
