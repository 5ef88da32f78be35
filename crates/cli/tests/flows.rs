//! Flows end to end (issue 32, docs/flows.md): `loadbench run URL --flow FILE` and a scenario's
//! `[load.flow]` against the reference backend's login routes, checked on both sides: what
//! loadbench reports (every output format) and what the backend counted per token (the token a
//! virtual user captured in its first step was in each of its later requests). Failed checks,
//! missing captures, think time, and bad flow files (one line, exit 2, no request sent).

use crate::support::{bin, tempdir, text, Ran, Run};
use loadbench_model::{ErrorKind, FlowStats, RunResult};
use loadbench_upstream::{Logins, Server, ServerConfig};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Log in as `u{{seq}}`, then `/me` twice with the token: the second sees its second request.
pub(crate) const LOGIN: &str = r#"
name = "login"

[[steps]]
name = "login"
method = "POST"
path = "/login"
headers = { Content-Type = "application/json" }
body = '{"user":"u{{seq}}"}'
capture = { token = "json:/token" }
check = { status = 200, json = { "/user" = "u{{seq}}" } }

[[steps]]
name = "me"
path = "/me"
headers = { Authorization = "Bearer {{token}}" }
check = { status = 200, body_contains = "{{token}}" }

[[steps]]
name = "me-again"
path = "/me"
headers = { Authorization = "Bearer {{token}}" }
check = { status = 200, json = { "/requests" = 2 } }
"#;

/// The login flow's step names, in order.
pub(crate) const STEPS: [&str; 3] = ["login", "me", "me-again"];

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

fn url(server: &Server) -> String {
    format!("http://{}", server.local_addr())
}

/// Writes a flow file `name` into a fresh directory.
fn flow_file(name: &str, text: &str) -> PathBuf {
    let path = tempdir("flow").join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `loadbench run URL --flow FILE ARGS`, its result saved, whatever the exit code.
fn run_flow(server: &Server, flow: &Path, args: &[&str]) -> Ran {
    Run::new(&url(server))
        .args(["--flow", flow.to_str().unwrap()])
        .args(args)
        .json()
}

/// `loadbench run URL --flow FILE ARGS --quiet`, its stdout and stderr as they are.
fn output(server: &Server, flow: &Path, args: &[&str]) -> Output {
    bin()
        .args(["run", &url(server), "--flow", flow.to_str().unwrap()])
        .args(args)
        .arg("--quiet")
        .output()
        .expect("the loadbench binary runs")
}

fn flow_of(r: &RunResult) -> &FlowStats {
    r.stats.flow.as_ref().expect("a flow's run has stats.flow")
}

/// Each step's name and measured requests, in order.
fn steps_of(r: &RunResult) -> Vec<(String, u64)> {
    (r.stats.endpoints.iter())
        .map(|e| (e.name.clone().unwrap_or_default(), e.requests))
        .collect()
}

/// One step's count of error `kind`.
fn step_errors(r: &RunResult, step: usize, kind: ErrorKind) -> u64 {
    r.stats.endpoints[step].errors.get(kind)
}

/// The backend's tokens issued since `before`: each one's user and authorised `/me` requests.
fn new_sessions(logins: &Logins, before: &Logins) -> Vec<(String, u64)> {
    (logins.tokens.iter())
        .filter(|(t, _)| !before.tokens.contains_key(*t))
        .map(|(_, s)| (s.user.clone(), s.requests))
        .collect()
}

/// The backend side of one run of the login flow of `iterations` complete iterations: that
/// many tokens, for the users u1..=iterations, each with exactly 2 authorised `/me` requests
/// (so each virtual user sent its own token in both later steps), none refused.
fn assert_logins(server: &Server, before: &Logins, iterations: u64, what: &str) {
    let logins = server.logins();
    assert_eq!(logins.issued - before.issued, iterations, "{what}: tokens");
    assert_eq!(logins.unauthorized, before.unauthorized, "{what}: 401s");
    let sessions = new_sessions(&logins, before);
    assert_eq!(sessions.len() as u64, iterations, "{what}: {sessions:?}");
    assert!(
        sessions.iter().all(|(_, n)| *n == 2),
        "{what}: each token has 2 /me requests: {sessions:?}"
    );
    let users: BTreeSet<String> = sessions.into_iter().map(|(u, _)| u).collect();
    let want: BTreeSet<String> = (1..=iterations).map(|i| format!("u{i}")).collect();
    assert_eq!(users, want, "{what}: one {{{{seq}}}} per iteration");
}

/// `-c 4 -n 40` of the login flow: with a flow `-n` counts iterations, so 40 iterations of
/// 3 steps, 120 requests.
const ARGS: [&str; 4] = ["-c", "4", "-n", "40"];

/// Issue 32: 4 virtual users, 40 iterations of 3 steps = 120 requests, every check passing,
/// and the backend saw each token in exactly the 2 later requests of its virtual user. Every
/// output format shows the per-step table with the steps' names and the flow's line.
#[test]
fn login_flow_carries_each_token_to_its_later_steps_in_every_format() {
    let server = backend();
    let flow = flow_file("login.toml", LOGIN);
    let before = server.logins();
    assert_saved(&server, &flow);
    assert_logins(&server, &before, 40, "saved result");
    let before = server.logins();
    assert_json(&stdout_of(&server, &flow, &["-o", "json"]));
    assert_logins(&server, &before, 40, "-o json");
    let before = server.logins();
    assert_csv(&stdout_of(&server, &flow, &["-o", "csv"]));
    assert_logins(&server, &before, 40, "-o csv");
    for format in ["md", "text"] {
        let before = server.logins();
        let stdout = stdout_of(&server, &flow, &["-o", format]);
        assert!(
            stdout.contains("Per step (flow login)"),
            "{format}: {stdout}"
        );
        for step in ["login: POST /login", "me: GET /me", "me-again: GET /me"] {
            assert!(stdout.contains(step), "{format}: {step}: {stdout}");
        }
        let line = (stdout.lines())
            .find(|l| l.contains("Flow login: 3 steps;"))
            .unwrap_or_else(|| panic!("{format}: the flow's line: {stdout}"));
        assert!(
            line.contains("; 40 iterations completed ("),
            "{format}: {line}"
        );
        assert!(line.contains(", 0 broken"), "{format}: {line}");
        assert!(line.contains("an iteration took p50 "), "{format}: {line}");
        assert_logins(&server, &before, 40, format);
    }
    // --html FILE: the same section and line in the page.
    let before = server.logins();
    let page = tempdir("flow-html").join("report.html");
    stdout_of(&server, &flow, &["--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).expect("the page is written");
    assert!(html.contains("Per step (flow login)"), "the section title");
    assert!(html.contains("me-again: GET /me"), "the last step's name");
    assert!(
        html.contains("Flow login: 3 steps; 40 iterations completed ("),
        "the flow's line"
    );
    assert_logins(&server, &before, 40, "--html");
}

/// Issue 32, the open model: `--rate` is iterations started per second and `-n` counts
/// iterations; every step goes out (each timed from its own intended start), each token is
/// in exactly its iteration's 2 later requests, and the report words the target in
/// iterations.
#[test]
fn the_open_model_starts_iterations_on_schedule_and_runs_each_to_its_end() {
    let server = backend();
    let flow = flow_file("login.toml", LOGIN);
    let before = server.logins();
    let ran = run_flow(&server, &flow, &["--rate", "100", "-n", "30"]);
    assert!(ran.out.status.success(), "{:?}", ran.text());
    let r = ran.result();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests, 90);
    let f = flow_of(&r);
    assert_eq!((f.started, f.completed, f.broken), (30, 30, 0));
    let want: Vec<(String, u64)> = STEPS.iter().map(|s| (s.to_string(), 30)).collect();
    assert_eq!(steps_of(&r), want);
    assert_logins(&server, &before, 30, "--rate 100 -n 30");
    let stdout = stdout_of(&server, &flow, &["--rate", "100", "-o", "text"]);
    assert!(
        stdout.contains("open model, 100 iterations/s for 400"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Running 40 iterations of a flow @"),
        "{stdout}"
    );
    assert!(stdout.contains(" iterations/s), p50"), "{stdout}");
    assert!(stdout.contains("iterations/s started ("), "{stdout}");
}

/// The login flow run with [`ARGS`] and `extra`; it must succeed. Its stdout.
fn stdout_of(server: &Server, flow: &Path, extra: &[&str]) -> String {
    let out = output(server, flow, &[&ARGS[..], extra].concat());
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{extra:?}: {stderr}");
    stdout
}

/// The saved result: 120 answers of 200, 40 per step, 40 completed iterations.
fn assert_saved(server: &Server, flow: &Path) {
    let ran = run_flow(server, flow, &ARGS);
    assert!(ran.out.status.success(), "{:?}", ran.text());
    let r = ran.result();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests, 120);
    assert_eq!(r.stats.status.0.get(&200), Some(&120));
    let f = flow_of(&r);
    assert_eq!((f.name.as_str(), f.steps), ("login", 3));
    assert_eq!((f.completed, f.broken), (40, 0));
    assert_eq!(
        f.duration.hist.len(),
        40,
        "one time per completed iteration"
    );
    let want: Vec<(String, u64)> = STEPS.iter().map(|s| (s.to_string(), 40)).collect();
    assert_eq!(steps_of(&r), want);
    for (i, e) in r.stats.endpoints.iter().enumerate() {
        assert_eq!(e.errors.total(), 0, "step {i}: {:?}", e.errors);
        assert_eq!(e.status.0.get(&200), Some(&40), "step {i}");
    }
    assert!(r.stats.endpoints[0].url.ends_with("/login"));
    assert_eq!(r.stats.endpoints[0].method, "POST");
    assert!(r.stats.endpoints[2].url.ends_with("/me"));
}

/// `-o json`: `stats.flow` and each step's name in `stats.endpoints`.
fn assert_json(stdout: &str) {
    let json: serde_json::Value = serde_json::from_str(stdout).expect("-o json is JSON");
    let stats = &json["stats"];
    assert_eq!(stats["flow"]["name"], "login");
    assert_eq!(stats["flow"]["steps"], 3);
    assert_eq!(stats["flow"]["completed"], 40);
    assert_eq!(stats["flow"]["broken"], 0);
    assert_eq!(stats["flow"]["duration"]["count"], 40);
    let names: Vec<&str> = (stats["endpoints"].as_array().unwrap().iter())
        .map(|e| e["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, STEPS);
}

/// `-o csv`: the step column of the per-step table, and the flow's table.
fn assert_csv(stdout: &str) {
    let tables: Vec<&str> = stdout.split("\n\n").map(str::trim).collect();
    let per_step = (tables.iter())
        .find(|t| t.starts_with("endpoint,step,"))
        .unwrap_or_else(|| panic!("a per-step table with a step column: {stdout}"));
    let header: Vec<&str> = per_step.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = (per_step.lines().skip(1))
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 3, "{per_step}");
    for (row, step) in rows.iter().zip(STEPS) {
        assert_eq!(row[col("step")], step, "{per_step}");
        assert_eq!(row[col("requests")], "40", "{per_step}");
        assert_eq!(row[col("errors")], "0", "{per_step}");
        assert_eq!(row[col("err_check_failed")], "0", "{per_step}");
    }
    let flow_table = (tables.iter())
        .find(|t| t.starts_with("flow,"))
        .unwrap_or_else(|| panic!("a flow table: {stdout}"));
    let mut lines = flow_table.lines();
    assert_eq!(
        lines.next(),
        Some("flow,steps,completed,completed_per_sec,broken,duration_p50_us,duration_p99_us")
    );
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!((row[0], row[1], row[2], row[4]), ("login", "3", "40", "0"));
    assert_eq!(lines.next(), None, "{flow_table}");
}

/// A check that never passes: every answer of its step is `check_failed`, every iteration is
/// broken, the next step is never sent, nothing completes.
#[test]
fn a_failed_check_breaks_every_iteration_at_its_step() {
    let server = backend();
    let flow = flow_file(
        "check.toml",
        "name = \"strict\"\n\
         [[steps]]\nname = \"json\"\npath = \"/json\"\ncheck = { status = 201 }\n\
         [[steps]]\nname = \"root\"\npath = \"/\"\n",
    );
    let r = run_flow(&server, &flow, &["-c", "2", "-n", "30"]).result();
    assert_eq!(r.stats.errors.get(ErrorKind::CheckFailed), 30);
    assert_eq!(r.stats.errors.total(), 30, "{:?}", r.stats.errors);
    assert_eq!(step_errors(&r, 0, ErrorKind::CheckFailed), 30);
    assert_eq!(r.stats.endpoints[0].errors.total(), 30);
    assert_eq!(
        steps_of(&r),
        [("json".to_string(), 0), ("root".to_string(), 0)],
        "a failed check is an error, not a response; the next step never ran"
    );
    assert_eq!(r.stats.endpoints[1].errors.total(), 0);
    let f = flow_of(&r);
    assert_eq!((f.completed, f.broken), (0, 30));
    let stats = server.stats();
    assert_eq!(
        (stats.route("/json"), stats.route("/")),
        (30, 0),
        "the backend answered each /json (with 200) and never saw step 2"
    );
}

/// A capture that cannot match: `capture_missing` on its step, the iteration broken, and the
/// step that would use it never sent (the backend saw no `/me`).
#[test]
fn a_missing_capture_breaks_the_iteration_before_the_step_that_uses_it() {
    let server = backend();
    let flow = flow_file(
        "capture.toml",
        "name = \"lost\"\n\
         [[steps]]\nname = \"login\"\nmethod = \"POST\"\npath = \"/login\"\n\
         capture = { token = \"json:/nothere\" }\n\
         [[steps]]\nname = \"me\"\npath = \"/me\"\n\
         headers = { Authorization = \"Bearer {{token}}\" }\n",
    );
    let r = run_flow(&server, &flow, &["-c", "2", "-n", "12"]).result();
    assert_eq!(step_errors(&r, 0, ErrorKind::CaptureMissing), 12);
    assert_eq!(r.stats.errors.total(), 12, "{:?}", r.stats.errors);
    assert_eq!(
        steps_of(&r),
        [("login".to_string(), 0), ("me".to_string(), 0)]
    );
    assert_eq!(r.stats.endpoints[1].errors.total(), 0);
    let f = flow_of(&r);
    assert_eq!((f.completed, f.broken), (0, 12));
    let logins = server.logins();
    assert_eq!(logins.issued, 12, "each login was answered");
    assert_eq!(
        (
            logins.authorised(),
            logins.unauthorized,
            server.stats().route("/me")
        ),
        (0, 0, 0),
        "no /me was sent"
    );
}

/// `header:` and `regex:` captures: the token from the `X-Token` header authorises `/me`, the
/// one a regex took from the login's body is the same token (the `/me` body holds it).
#[test]
fn header_and_regex_captures_carry_the_token() {
    let server = backend();
    let flow = flow_file(
        "header.toml",
        r#"
name = "by-header"
[[steps]]
name = "login"
method = "POST"
path = "/login"
body = "user=h{{seq}}"
capture = { tok = "header:X-Token", from_body = 'regex:"token":"(t[0-9]+-[0-9a-f]+)"' }
[[steps]]
name = "me"
path = "/me"
headers = { Authorization = "Bearer {{tok}}" }
check = { status = 200, body_contains = '"token":"{{from_body}}"', json = { "/requests" = 1, "/user" = "h{{seq}}" } }
"#,
    );
    let r = run_flow(&server, &flow, &["-c", "2", "-n", "10"]).result();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(
        steps_of(&r),
        [("login".to_string(), 10), ("me".to_string(), 10)]
    );
    assert_eq!((flow_of(&r).completed, flow_of(&r).broken), (10, 0));
    let logins = server.logins();
    assert_eq!((logins.issued, logins.unauthorized), (10, 0));
    assert!(
        logins.tokens.values().all(|s| s.requests == 1),
        "{:?}",
        logins.tokens
    );
}

/// `think = "50ms"` after the first of two steps: one virtual user for 1 s completes at most
/// 21 iterations (an upper bound from the sleeps, whatever the machine's speed), and some; an
/// iteration's time holds its think time.
#[test]
fn think_time_paces_a_virtual_user() {
    let server = backend();
    let flow = flow_file(
        "think.toml",
        "name = \"slow\"\n\
         [[steps]]\nname = \"json\"\npath = \"/json\"\nthink = \"50ms\"\n\
         [[steps]]\nname = \"root\"\npath = \"/\"\n",
    );
    let r = run_flow(&server, &flow, &["-c", "1", "-d", "1s"]).result();
    let f = flow_of(&r);
    assert!(
        (1..=21).contains(&f.completed),
        "50 ms of thinking per iteration: {}",
        f.completed
    );
    assert_eq!(f.broken, 0);
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    let sent = server.stats().route("/json");
    assert!((f.completed..=21).contains(&sent), "{sent} logins");
    // 50 ms and a request, less the histogram's precision (3 digits: 50 µs at 50 ms).
    assert!(
        f.duration.hist.min_ns() >= 49_950_000,
        "an iteration's time includes its think time: {}",
        f.duration.hist.min_ns()
    );
}

/// Bad input: exit 2, one line on stderr holding each of `words`, and the backend saw nothing.
fn refused(server: &Server, flow: &Path, args: &[&str], words: &[&str]) {
    let out = output(server, flow, &[&["-n", "10"], args].concat());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    let line = stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    for w in words {
        assert!(line.contains(w), "says {w}: {line}");
    }
    assert!(!line.contains("panicked"), "{line}");
    assert_eq!(server.stats().total, 0, "no request was sent: {line}");
}

/// Bad flow files: each names the file (or the step) and the key.
#[test]
fn bad_flow_files_are_one_line_before_any_request() {
    let server = backend();
    let login = "[[steps]]\nname = \"login\"\nmethod = \"POST\"\npath = \"/login\"\n";
    let cases: [(&str, String, &[&str]); 4] = [
        (
            "undefined.toml",
            "[[steps]]\nname = \"me\"\npath = \"/me\"\n\
             headers = { Authorization = \"Bearer {{token}}\" }\n"
                .to_string(),
            &[
                "--flow ",
                "undefined.toml step 'me'",
                "Authorization",
                "'{{token}}' is not defined",
                "capture it in an earlier step",
            ],
        ),
        (
            "pointer.toml",
            format!("{login}capture = {{ token = \"json:token\" }}\n"),
            &[
                "pointer.toml",
                "steps[0] (login)",
                "json:token",
                "not a JSON pointer",
                "start it with / (e.g. /token",
            ],
        ),
        (
            "group.toml",
            format!("{login}capture = {{ id = 'regex:\\d+' }}\n"),
            &[
                "group.toml",
                "steps[0] (login)",
                r"regex:\d+",
                "no group",
                "put the part to capture in ( )",
            ],
        ),
        (
            "unknown.toml",
            format!("name = \"x\"\n{login}timeout = \"1s\"\n"),
            &[
                "unknown.toml line 6",
                "unknown field `timeout`",
                "fix the file",
            ],
        ),
    ];
    for (name, text, words) in cases {
        refused(&server, &flow_file(name, &text), &[], words);
    }
    let missing = tempdir("flow-missing").join("nowhere.toml");
    refused(
        &server,
        &missing,
        &[],
        &["cannot read --flow", "nowhere.toml", "check the path"],
    );
    assert_eq!(server.logins().issued, 0);
}

/// What a flow cannot run with: the open model, HTTP/2, a mix, pipelining.
#[test]
fn options_a_flow_cannot_run_with_are_one_line_before_any_request() {
    let server = backend();
    let good = flow_file("login.toml", LOGIN);
    refused(
        &server,
        &good,
        &["--http2"],
        &["HTTP/1.1", "leave out --http2"],
    );
    let other = format!("{}/json", url(&server));
    refused(
        &server,
        &good,
        &["-u", &other],
        &["a flow and a request mix", "give one of them"],
    );
    refused(
        &server,
        &good,
        &["--pipeline", "4"],
        &["leave out --pipeline"],
    );
    assert_eq!(server.logins().issued, 0);
}

/// The reference backend as a scenario target, loaded by a `[load.flow]`.
const SCENARIO: &str = r#"
name = "flows"
[[target]]
name = "backend"
kind = "upstream"
[target.upstream]
threads = 1
[[load]]
model = "closed"
targets = ["backend"]
connections = [2]
duration = "400ms"
warmup = "0s"
[load.flow]
name = "login"
[[load.flow.steps]]
name = "login"
method = "POST"
path = "/login"
body = '{"user":"u{{seq}}"}'
capture = { token = "json:/token" }
check = { status = 200, json = { "/user" = "u{{seq}}" } }
[[load.flow.steps]]
name = "me"
path = "/me"
headers = { Authorization = "Bearer {{token}}" }
check = { status = 200, body_contains = "{{token}}" }
"#;

#[test]
fn a_scenario_load_runs_its_flow_against_the_backend() {
    let dir = tempdir("flow-bench");
    let file = dir.join("flows.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let (out, result) = crate::bench::bench(&file, &dir.join("results"), &[]);
    assert!(out.status.success(), "{:?}", text(&out));
    let r = result.expect("the bench result is saved");
    let round = r.rounds[0].result.as_ref().expect("the round ran");
    assert_eq!(round.stats.errors.total(), 0, "{:?}", round.stats.errors);
    let f = flow_of(round);
    assert_eq!((f.name.as_str(), f.steps, f.broken), ("login", 2, 0));
    assert!(f.completed > 0, "{f:?}");
    let steps = steps_of(round);
    assert_eq!(steps[0].0, "login");
    assert_eq!(steps[1].0, "me");
    // A run ends mid-iteration: each step ran once per completed iteration, the login at most
    // once more per virtual user.
    assert_eq!(steps[1].1, f.completed, "{steps:?}");
    assert!(
        (f.completed..=f.completed + 2).contains(&steps[0].1),
        "{steps:?}"
    );
}

/// A flow using a variable no earlier step captures fails when the scenario loads: exit 2,
/// one line naming the load's key and the variable, and the target never starts.
#[test]
fn a_scenario_flow_with_an_undefined_variable_starts_no_target() {
    let dir = tempdir("flow-bench-bad");
    let marker = dir.join("started");
    let text_of = SCENARIO
        .replace(
            "kind = \"upstream\"\n[target.upstream]\nthreads = 1\n",
            &format!(
                "command = \"/bin/sh\"\nargs = [\"-c\", \"touch '{}'; exec sleep 30\"]\n",
                marker.display()
            ),
        )
        .replace("\"Bearer {{token}}\"", "\"Bearer {{tokn}}\"");
    assert!(text_of.contains("{{tokn}}") && text_of.contains("/bin/sh"));
    let file = dir.join("bad.toml");
    std::fs::write(&file, text_of).unwrap();
    let (out, result) = crate::bench::bench(&file, &dir.join("results"), &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    for words in ["bad.toml", "load[0].", "'{{tokn}}' is not defined", "fix:"] {
        assert!(line.contains(words), "says {words}: {line}");
    }
    assert!(line.contains("load[0].flow"), "{line}");
    assert!(result.is_none());
    assert!(!marker.exists(), "the target was started");
}
