//! `loadbench bench` end to end: the real binary starts real nginx and HAProxy in front of the
//! reference backend, runs the matrix, and the saved result is checked round by round; limits
//! are enforced and recorded (or warned about); SIGKILLing loadbench leaves no target behind;
//! bad scenario files each give one line naming the file, the key and the fix. Traffic goes
//! only to 127.0.0.1.

use crate::support::{bin, have, tempdir, text as output_text};
use loadbench_model::{BenchResult, Verdict};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const NGINX: &str = r#"
[[target]]
name = "nginx"
command = "/usr/sbin/nginx"
args = ["-p", "{dir}", "-c", "{dir}/nginx.conf", "-e", "stderr"]
proxy_to = "backend"
stop_signal = "QUIT"
[[target.config]]
path = "nginx.conf"
template = """
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log stderr;
events { worker_connections 1024; }
http {
  access_log off;
  upstream be { server {upstream}; keepalive 16; }
  server {
    listen 127.0.0.1:{port};
    location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
"""
[target.ready]
http = "http://127.0.0.1:{port}/"
"#;

const HAPROXY: &str = r#"
[[target]]
name = "haproxy"
command = "/usr/sbin/haproxy"
args = ["-db", "-f", "{dir}/haproxy.cfg"]
proxy_to = "backend"
[[target.config]]
path = "haproxy.cfg"
template = """
global
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:{port}
  default_backend be
backend be
  http-reuse always
  server s1 {upstream}
"""
"#;

const BACKEND: &str = r#"
[[target]]
name = "backend"
kind = "upstream"
[target.upstream]
threads = 1
"#;

/// Writes `text` as a scenario file in `dir`.
fn scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `loadbench bench FILE ARGS --results DIR -q`; returns the output and the saved result.
pub(crate) fn bench(file: &Path, results: &Path, args: &[&str]) -> (Output, Option<BenchResult>) {
    let out = bin()
        .arg("bench")
        .arg(file)
        .arg("--results")
        .arg(results)
        .args(args)
        .arg("--quiet")
        .output()
        .expect("loadbench runs");
    (out, saved(results))
}

/// The result.json of the (only) run folder under `results`.
fn saved(results: &Path) -> Option<BenchResult> {
    let dir = run_folder(results)?;
    let text = std::fs::read_to_string(dir.join("result.json")).ok()?;
    Some(BenchResult::from_json(&text).expect("the saved bench result reads back"))
}

fn run_folder(results: &Path) -> Option<PathBuf> {
    std::fs::read_dir(results)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
}

#[test]
fn proxy_scenario_runs_every_round_with_resources_statistics_and_verdicts() {
    let _machine = crate::support::loading();
    if !have("nginx") || !have("haproxy") {
        return;
    }
    let dir = tempdir("bench-proxies");
    let text = format!(
        "name = \"proxies\"\nrounds = 2\n{BACKEND}{NGINX}{HAPROXY}\n\
         [[load]]\nname = \"sweep\"\nmodel = \"closed\"\n\
         targets = [\"nginx\", \"haproxy\", \"backend\"]\nconnections = [2, 8]\n\n\
         [[load]]\nname = \"both\"\nmodel = \"open\"\ntargets = [\"nginx\", \"haproxy\"]\n\
         together = true\nrate = [300]\nmax_connections = 8\n"
    );
    let file = scenario(&dir, "proxies.toml", &text);
    let results = dir.join("results");
    let (out, result) = bench(
        &file,
        &results,
        &["--duration", "1s", "--warmup", "200ms", "--cooldown", "0s"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let r = result.expect("result.json saved");
    // 3 targets × 2 levels × 2 rounds, then 2 rounds of the together step.
    assert_eq!((r.steps_planned, r.steps_done), (14, 14));
    assert!(!r.interrupted);
    let names: Vec<&str> = r.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["backend", "nginx", "haproxy"],
        "backend starts first"
    );
    for target in ["nginx", "haproxy", "backend"] {
        for level in 0..2 {
            assert_sweep_cell(&r, target, level);
        }
    }
    assert_together_step(&r);
    assert!(r
        .relative
        .iter()
        .any(|x| x.baseline == "nginx" && x.target == "backend"));
    assert_resource_series(&r);
    assert_run_folder(&results, &r);
    assert!(
        stdout.contains("times"),
        "relative speed on stdout: {stdout}"
    );
}

/// The proxy scenario's sweep at one level of one target: both rounds measured without errors,
/// with resources, and the cell's statistics and one bottleneck verdict per round.
fn assert_sweep_cell(r: &BenchResult, target: &str, level: u32) {
    let rounds: Vec<_> = r.rounds_of(0, level, target).collect();
    assert_eq!(rounds.len(), 2, "{target} level {level}");
    for round in rounds {
        let run = round.result.as_ref().expect("a run result");
        assert!(run.stats.requests > 0, "{target}: no requests");
        assert_eq!(run.stats.errors.total(), 0, "{target}: errors");
        let res = round.resources.as_ref().expect("resources in the window");
        assert!(res.cpu_mean_cores > 0.0, "{target}: {res:?}");
        assert!(
            res.rss_start_bytes > 0 && res.rss_trough_bytes > 0,
            "{res:?}"
        );
        assert!(res.rss_peak_bytes >= res.rss_trough_bytes, "{res:?}");
        assert!(round.generator_cpu_mean_cores > 0.0);
    }
    let cell = r.cell_of(0, level, target).expect("a cell");
    let rps = cell.requests_per_sec.expect("req/s statistics");
    assert_eq!(rps.n, 2);
    assert!(rps.min <= rps.median && rps.median <= rps.max, "{rps:?}");
    assert!(
        rps.ci95_low <= rps.mean && rps.mean <= rps.ci95_high,
        "{rps:?}"
    );
    assert_eq!(cell.latency_us.len(), 4, "p50, p90, p99, p99.9");
    let counted =
        cell.bottlenecks.generator_bound + cell.bottlenecks.target_bound + cell.bottlenecks.neither;
    assert_eq!(counted, 2, "one verdict per round");
}

/// The together step: one round per target and a combined one that is their exact merge.
fn assert_together_step(r: &BenchResult) {
    let open = r.rounds.iter().find(|x| x.load == 1).unwrap();
    let config = &open.result.as_ref().unwrap().config;
    assert_eq!(
        config.load,
        loadbench_model::LoadShape::Open {
            schedule: vec![loadbench_model::RateSegment {
                duration_ms: 1000,
                from_rate: 300.0,
                to_rate: 300.0
            }],
            max_connections: 8
        },
        "the scenario's max_connections reaches the engine"
    );
    for round in 0..2 {
        let of = |t: &str| {
            r.rounds
                .iter()
                .find(|x| x.load == 1 && x.round == round && x.target == t)
                .and_then(|x| x.result.as_ref())
                .map(|x| x.stats.requests)
                .unwrap_or_else(|| panic!("no together round for {t}"))
        };
        assert_eq!(of("nginx+haproxy"), of("nginx") + of("haproxy"));
    }
}

/// The resource series covers the run, every target with memory.
fn assert_resource_series(r: &BenchResult) {
    assert!(r.resources.samples.len() >= 10);
    for (i, t) in r.resources.samples[0].targets.iter().enumerate() {
        let max_rss = r.resources.samples.iter().map(|s| s.targets[i].rss_bytes);
        assert!(max_rss.max().unwrap() > 0, "{}", t.name);
    }
    assert!(r.resources.marks.iter().any(|m| m.label == "step:14:end"));
}

/// The run folder keeps the scenario, the rendered configs and the logs.
fn assert_run_folder(results: &Path, r: &BenchResult) {
    let folder = run_folder(results).unwrap();
    assert!(folder.join("scenario.toml").is_file());
    let nginx = &r.targets[1];
    let conf = std::fs::read_to_string(folder.join(&nginx.configs[0])).unwrap();
    let backend_port = r.targets[0].port;
    assert!(
        conf.contains(&format!("server 127.0.0.1:{backend_port};")),
        "{conf}"
    );
    assert!(folder.join(&nginx.stderr_log).is_file());
}

#[test]
fn cpu_quota_and_memory_limit_are_enforced_and_recorded() {
    let _machine = crate::support::measuring();
    let dir = tempdir("bench-limits");
    // Two busy loops beside the backend would keep two cores busy; the quota allows half of one.
    let serve = format!(
        "(while :; do :; done) & (while :; do :; done) & exec {} serve --listen 127.0.0.1:{{port}}",
        env!("CARGO_BIN_EXE_loadbench")
    );
    let text = format!(
        "name = \"limits\"\n[[target]]\nname = \"busy\"\ncommand = \"/bin/sh\"\n\
         args = [\"-c\", \"{serve}\"]\n[target.limits]\ncpus = 0.5\nmemory = \"256MiB\"\n\
         [[load]]\nmodel = \"closed\"\ntargets = [\"busy\"]\nconnections = [2]\n"
    );
    let file = scenario(&dir, "limits.toml", &text);
    let (out, result) = bench(&file, &dir.join("results"), &["--duration", "2s"]);
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let r = result.expect("result saved");
    let limits = &r.targets[0].limits;
    if limits.cpu_quota_cores.is_none() {
        // A host without cgroup controllers we may use: the result must say so.
        assert!(
            r.warnings.iter().any(|w| w.contains("not enforced")),
            "{:?}",
            r.warnings
        );
        eprintln!("cgroup limits cannot be applied here; checked the warning instead");
        return;
    }
    assert_eq!(limits.cpu_quota_cores, Some(0.5));
    assert_eq!(limits.memory_bytes, Some(256 << 20));
    assert_eq!(limits.cores, 0.5);
    let res = r.rounds[0].resources.as_ref().unwrap();
    assert!(res.cpu_mean_cores <= 0.6, "the quota holds: {res:?}");
    assert!(res.cpu_mean_cores >= 0.2, "the loops were busy: {res:?}");
}

#[test]
fn a_cpu_set_that_cannot_be_applied_is_a_warning_in_the_result() {
    let dir = tempdir("bench-warn");
    let text = "name = \"warn\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
                [target.limits]\ncpuset = \"4095\"\n\
                [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [2]\n";
    let file = scenario(&dir, "warn.toml", text);
    let (out, result) = bench(&file, &dir.join("results"), &["--duration", "300ms"]);
    assert!(out.status.success(), "{:?}", output_text(&out));
    let r = result.unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("backend") && w.contains("CPU set 4095 not enforced")),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.targets[0].limits.cpuset, None);
}

/// Pids of live processes whose working directory lies under `dir`.
fn processes_in(dir: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cwd = std::fs::read_link(entry.path().join("cwd"));
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        if cwd.is_ok_and(|c| c.starts_with(dir)) && !zombie {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn sigkill_of_loadbench_mid_run_leaves_no_target_behind() {
    let _machine = crate::support::loading();
    if !have("nginx") {
        return;
    }
    let dir = tempdir("bench-kill");
    let text = format!(
        "name = \"kill\"\n{BACKEND}{NGINX}\n[[load]]\nmodel = \"closed\"\n\
         targets = [\"nginx\"]\nconnections = [4]\nduration = \"60s\"\n"
    );
    let file = scenario(&dir, "kill.toml", &text);
    let results = dir.join("results");
    let mut child = bin()
        .arg("bench")
        .arg(&file)
        .arg("--results")
        .arg(&results)
        .arg("--quiet")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // result.json appears once every target is ready; then the load runs for a minute.
    let deadline = Instant::now() + Duration::from_secs(20);
    let folder = loop {
        if let Some(f) = run_folder(&results).filter(|f| f.join("result.json").is_file()) {
            break f;
        }
        assert!(Instant::now() < deadline, "targets never became ready");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(folder.starts_with(&dir));
    // Targets run in the scenario's folder (which holds the run folder too).
    let folder = std::fs::canonicalize(&dir).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let before = processes_in(&folder);
    assert!(before.len() >= 2, "nginx and the backend run: {before:?}");
    child.kill().unwrap(); // SIGKILL: no handler, no cleanup in loadbench
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_in(&folder);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "targets outlived loadbench: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a bad scenario: exit code 2 and one line naming the file, the key and the fix.
fn rejected(name: &str, text: &str, key: &str, words: &str) {
    let dir = tempdir(name);
    let file = scenario(&dir, &format!("{name}.toml"), text);
    let (out, _) = bench(&file, &dir.join("results"), &["--duration", "300ms"]);
    let (_, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(
        line.contains(&format!("{name}.toml")),
        "names the file: {line}"
    );
    assert!(line.contains(key), "names {key}: {line}");
    assert!(line.contains("fix:"), "names the fix: {line}");
    assert!(line.contains(words), "says {words}: {line}");
    assert!(!line.contains("panicked"), "{line}");
}

const LOAD: &str = "[[load]]\nmodel = \"closed\"\ntargets = [\"t\"]\nconnections = [1]\n";

#[test]
fn bad_scenarios_give_one_line_with_file_key_and_fix() {
    rejected(
        "unknown-key",
        &format!("name = \"x\"\n[[target]]\nname = \"t\"\nkind = \"upstream\"\ncolour = 1\n{LOAD}"),
        "target[0].colour",
        "unknown field",
    );
    rejected(
        "no-command",
        &format!("name = \"x\"\n[[target]]\nname = \"t\"\n{LOAD}"),
        "target[0].command",
        "missing",
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    rejected(
        "port-clash",
        &format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\nkind = \"upstream\"\nport = {port}\n{LOAD}"
        ),
        "target[0].port",
        &format!("port {port} is not free"),
    );
    rejected(
        "exits-at-once",
        &format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\ncommand = \"/bin/sh\"\n\
             args = [\"-c\", \"echo cannot bind >&2; exit 3\"]\n{LOAD}"
        ),
        "target[0].command",
        "cannot bind",
    );
    rejected(
        "never-ready",
        &format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\ncommand = \"/bin/sleep\"\nargs = [\"30\"]\n\
             [target.ready]\ntimeout = \"700ms\"\n{LOAD}"
        ),
        "target[0].ready",
        "not ready after",
    );
    rejected(
        "ready-404",
        &format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\nkind = \"upstream\"\n\
             [target.upstream]\nstatus = 404\n\
             [target.ready]\nhttp = \"http://127.0.0.1:{{port}}/\"\ntimeout = \"700ms\"\n{LOAD}"
        ),
        "target[0].ready",
        "last status 404",
    );
    // Issue 11: an IPv4 source for an ::1 target is caught on load, before any target starts.
    rejected(
        "source-family",
        &format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\nkind = \"upstream\"\n\
             url = \"http://[::1]:{{port}}/\"\n{LOAD}source_addrs = \"127.0.0.2\"\n"
        ),
        "load[0].source_addrs",
        "127.0.0.2 is IPv4 but the target is IPv6",
    );
}

/// A find-max load in a bench searches the target and its cell holds what the search found.
/// The backend serves 4 requests at once, 10 ms each: 400 req/s, enforced by construction, so
/// no step above 440/s can hold a 100 ms p99 for a second (the queue it leaves grows past
/// 100 ms) on any machine. On a quiet host the search finds at least half of it; on a host
/// the steps themselves found busy, a step's p99 may break the SLO at any rate (even the first,
/// then no rate held), and the result says so rather than blaming the target.
#[test]
fn find_max_load_searches_each_target_and_the_cell_holds_the_maximum() {
    let _machine = crate::support::measuring();
    let dir = tempdir("bench-find-max");
    let text = "name = \"fm\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
                [target.upstream]\ndelay = \"10ms\"\nmax_concurrency = 4\n\
                [[load]]\nmodel = \"find-max\"\ntargets = [\"backend\"]\nslo = \"p99<100ms\"\n";
    let file = scenario(&dir, "fm.toml", text);
    let (out, result) = bench(
        &file,
        &dir.join("results"),
        &["--duration", "1s", "--warmup", "300ms"],
    );
    assert!(out.status.success(), "{:?}", output_text(&out));
    let r = result.unwrap();
    let round = &r.rounds[0];
    assert!(round.resources.is_some());
    let search = round.find_max.as_ref().expect("a find-max result");
    assert!(!search.steps.is_empty());
    let cell = r.cell_of(0, 0, "backend").unwrap();
    let busy = search.steps.iter().any(|s| s.run.why.busy_host().is_some());
    let Some(max) = search.max_rate else {
        assert!(busy, "no rate held on a host not found busy: {search:#?}");
        assert_eq!(cell.requests_per_sec, None, "{cell:?}");
        return;
    };
    assert!(max <= 460.0, "max {max} for a 400 req/s backend");
    assert!(
        busy || (max >= 200.0 && search.steps.len() >= 3),
        "max {max} in {} steps for a 400 req/s backend on a host not found busy",
        search.steps.len()
    );
    assert_eq!(cell.requests_per_sec.unwrap().median, max);
    // Latency and requests come from the step at that rate.
    assert_eq!(cell.latency_us.len(), 4);
    let held = search
        .steps
        .iter()
        .rev()
        .find(|s| s.target_rate == max)
        .unwrap();
    assert_eq!(cell.requests, held.run.stats.requests);
}

/// The reference backend serving at most 20 requests at once, 100 ms each (a capacity of
/// exactly 200 req/s), swept over 5 to 80 connections.
const POOL: &str = r#"
name = "pool"
cooldown = "0s"
[[target]]
name = "backend"
kind = "upstream"
[target.upstream]
delay = "100ms"
max_concurrency = 20
[[load]]
name = "sweep"
model = "closed"
targets = ["backend"]
connections = [5, 10, 20, 40, 80]
"#;

#[test]
fn a_sweep_of_a_twenty_slot_backend_finds_a_pool_of_about_twenty_and_the_knee_at_200_per_second() {
    let _machine = crate::support::measuring();
    let dir = tempdir("bench-pool");
    let file = scenario(&dir, "pool.toml", POOL);
    let results = dir.join("results");
    let args = ["--duration", "1s", "--warmup", "500ms", "--rounds", "1"];
    let (out, result) = bench(&file, &results, &args);
    assert!(out.status.success(), "{:?}", output_text(&out));
    let r = result.unwrap();
    assert_eq!(r.steps_done, 5);
    let a = r.queueing_of(0, "backend").expect("a queueing view");
    assert_eq!(a.levels.len(), 5, "{a:#?}");
    // Little's law on real runs: a closed load keeps its connections in flight, and with the
    // queue inside the backend, they are all in the target (within a request per connection
    // of what a 1 s round can count, on a busy machine).
    for p in &a.levels {
        let close = |n: f64| (n - p.value).abs() <= (0.15 * p.value).max(1.0);
        assert!(close(p.in_generator), "in the generator: {p:?}");
        assert!(close(p.in_target), "in the target: {p:?}");
        // Throughput counts what was sent (one request per answer): at least what was both
        // sent and answered within the round.
        let round = r.rounds_of(0, p.level, "backend").next().unwrap();
        let stats = &round.result.as_ref().unwrap().stats;
        let sent = stats.sent as f64 / stats.elapsed_secs();
        assert!((p.requests_per_sec - sent).abs() < 1e-9, "{p:?}");
        assert!(stats.sent >= stats.requests);
    }
    // The backend's capacity is 200 req/s from c=20 on; a busy machine adds a few ms to every
    // request, which can leave c=20 more than 10% short of it and move the knee to c=40.
    let knee = a.knee.expect("a knee");
    assert!([20.0, 40.0].contains(&knee.value), "{knee:?}");
    assert!((170.0..=215.0).contains(&knee.requests_per_sec), "{knee:?}");
    let pool = a.pool.expect("a pool");
    assert!((17..=24).contains(&pool.workers), "{pool:?}");
    assert!(
        (0.100e6..0.130e6).contains(&pool.low_load_service_us),
        "a request is held 100 ms: {pool:?}"
    );
    let x_s = pool.requests_per_sec * pool.low_load_service_us / 1e6;
    assert!((pool.estimate - x_s).abs() < 1e-9, "{pool:?}");
    let fit = a.usl.expect("five levels are fitted");
    assert_eq!(fit.points, 5);
    assert!(
        fit.sigma >= 0.0 && fit.kappa >= 0.0 && fit.r_squared > 0.5,
        "{fit:?}"
    );
    assert_pool_report(&run_folder(&results).unwrap(), pool.workers, &knee);
}

/// `loadbench report` of the saved result says what the model found.
fn assert_pool_report(dir: &Path, workers: u32, knee: &loadbench_model::queueing::Knee) {
    let out = bin()
        .arg("report")
        .arg(dir.join("result.json"))
        .output()
        .unwrap();
    let (text, _) = output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "backend behaves like a pool of about {workers} workers"
        )),
        "{text}"
    );
    let knee_text = format!(
        "backend: throughput stopped growing at c={} ({:.0} req/s)",
        knee.value, knee.requests_per_sec
    );
    assert!(text.contains(&knee_text), "{text}");
    assert!(text.contains("Universal Scalability Law fit"), "{text}");
    println!("{text}");
}

/// Runs `examples/NAME.toml` briefly; checks that every planned step ran and every closed/open
/// round measured requests without errors, with the target's resources.
pub(crate) fn run_example(name: &str, programs: &[&str]) -> Option<BenchResult> {
    run_example_rounds(name, programs, 1)
}

/// `run_example` with `rounds` rounds of each step.
pub(crate) fn run_example_rounds(
    name: &str,
    programs: &[&str],
    rounds: u32,
) -> Option<BenchResult> {
    if !programs.iter().all(|p| have(p)) {
        return None;
    }
    let _machine = crate::support::loading();
    Some(run_example_for(name, "1s", "500ms", rounds))
}

/// `run_example` without the check for programs or the machine lock (the caller holds one),
/// each step `duration` long after `warmup`, `rounds` times.
fn run_example_for(name: &str, duration: &str, warmup: &str, rounds: u32) -> BenchResult {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/{name}.toml"));
    let dir = tempdir(&format!("example-{name}"));
    let rounds = rounds.to_string();
    let args = [
        "--duration",
        duration,
        "--warmup",
        warmup,
        "--rounds",
        &rounds,
        "--cooldown",
        "0s",
    ];
    let (out, result) = bench(&file, &dir.join("results"), &args);
    let (stdout, stderr) = output_text(&out);
    let r = result.unwrap_or_else(|| panic!("{name}: no result saved: {stdout}\n{stderr}"));
    if !out.status.success() {
        assert_empty_cells_explained(name, &r, out.status.code(), (&stdout, &stderr));
    }
    assert_eq!(r.steps_done, r.steps_planned, "{name}");
    for round in r.rounds.iter().filter(|x| !x.combined) {
        assert!(round.error.is_none(), "{name}: {:?}", round.error);
        if let Some(run) = &round.result {
            // A target on a busy host (a JVM sharing its core with builds), or cold JVMs
            // sharing one core, may answer nothing in a short window: then the run must count
            // the requests it left unanswered (and the bench say why on stderr, see
            // `assert_empty_cells_explained`), never show an empty cell as a measurement.
            let explained = run.stats.unanswered() > 0;
            assert!(
                run.stats.requests > 0 || explained,
                "{name}: {} measured nothing and counted nothing unanswered: {:#?}",
                round.target,
                round.why
            );
            let errors = &run.stats.errors;
            assert_eq!(errors.total(), 0, "{name}: {}: {errors:?}", round.target);
            assert!(round.resources.is_some(), "{name}: {}", round.target);
        } else {
            assert!(round.find_max.is_some(), "{name}: {}", round.target);
        }
    }
    r
}

/// A bench that exited non-zero: exit 1, and every empty cell explained. A find-max search
/// may hold no rate on a busy host (its first step failed), and a target sharing its core with
/// builds or with other cold JVMs may answer nothing in a short window (the requests its
/// connections sent in the warm-up still unanswered at the end): each with its reason on
/// stderr. Anything else fails.
fn assert_empty_cells_explained(
    name: &str,
    r: &BenchResult,
    code: Option<i32>,
    (stdout, stderr): (&str, &str),
) {
    assert_eq!(code, Some(1), "{name}: {stdout}\n{stderr}");
    let empty: Vec<_> = r.empty_cells().collect();
    assert!(!empty.is_empty(), "{name}: {stdout}\n{stderr}");
    for (cell, why) in empty {
        let mut rounds = r.rounds_of(cell.load, cell.level, &cell.target);
        let explained = rounds.all(|x| {
            let unanswered = x.result.as_ref().is_some_and(|run| {
                run.stats.requests == 0
                    && run.stats.errors.total() == 0
                    && run.stats.unanswered() > 0
            });
            // Requests sent and left unanswered, each counted, with the reason on stderr: a
            // busy host, or the server itself (four cold JVMs sharing one core in a JIT
            // warm-up cut to 5 s answered nothing in CI).
            x.find_max.is_some() || unanswered
        });
        assert!(
            explained,
            "{name}: {} measured nothing without its requests counted unanswered: {why}",
            cell.target
        );
        assert!(
            stderr.contains(why),
            "{name}: {why} not on stderr:\n{stderr}"
        );
        eprintln!("{name}: {} measured nothing: {why}", cell.target);
    }
}

#[test]
fn example_reverse_proxies_runs_nginx_haproxy_and_caddy_end_to_end() {
    let Some(r) = run_example("reverse-proxies", &["nginx", "haproxy", "caddy"]) else {
        return;
    };
    let names: Vec<&str> = r.targets.iter().map(|t| t.name.as_str()).collect();
    for t in ["nginx", "haproxy", "caddy", "backend"] {
        assert!(names.contains(&t), "{names:?}");
        assert!(
            r.cells.iter().any(|c| c.target == t && c.rounds == 1),
            "{t}"
        );
    }
    assert!(r.relative.iter().any(|x| x.target == "caddy"));
}

/// Whether the proxies of `examples/six-proxies.toml` without a Debian package are already
/// fetched or built (`examples/targets/proxies/NAME.sh --cached`): building Traefik and Spire
/// takes minutes, so the test runs only where someone built them (`NAME.sh --fetch-only`).
fn six_proxies_cached() -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/targets/proxies");
    let missing: Vec<&str> = ["traefik", "envoy", "spire"]
        .into_iter()
        .filter(|p| {
            let script = dir.join(format!("{p}.sh"));
            let cached = std::process::Command::new(script).arg("--cached").output();
            !cached.is_ok_and(|o| o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "skipping: {missing:?} not built; build with examples/targets/proxies/NAME.sh --fetch-only"
        );
    }
    missing.is_empty()
}

#[test]
fn example_six_proxies_measures_every_proxy_with_its_memory() {
    if !six_proxies_cached() {
        return;
    }
    let Some(r) = run_example("six-proxies", &["nginx", "haproxy", "caddy"]) else {
        return;
    };
    let proxies = ["nginx", "haproxy", "caddy", "traefik", "envoy", "spire"];
    for t in proxies.iter().chain(["backend"].iter()) {
        let rounds: Vec<_> = r.rounds.iter().filter(|x| x.target == *t).collect();
        assert_eq!(rounds.len(), 3, "{t}: one round per level");
        for round in rounds {
            let mem = round.resources.as_ref().expect("memory sampled");
            assert!(
                mem.rss_trough_bytes > 0 && mem.rss_trough_bytes <= mem.rss_peak_bytes,
                "{t}: {mem:?}"
            );
        }
    }
    // Every proxy ran under the same limits: CPU 1 and, where cgroups can be used, 512 MiB.
    for t in r
        .targets
        .iter()
        .filter(|t| proxies.contains(&t.name.as_str()))
    {
        assert_eq!(
            t.limits.cpuset.as_deref(),
            Some(&[1usize][..]),
            "{}",
            t.name
        );
        if t.limits.cgroup.is_some() {
            assert_eq!(t.limits.memory_bytes, Some(512 << 20), "{}", t.name);
        }
    }
}

#[test]
fn example_gateway_overhead_adds_nginx_before_a_200ms_backend() {
    let Some(r) = run_example("gateway-overhead", &["nginx"]) else {
        return;
    };
    // Like the seed's ab without -k: a new connection for every request.
    assert!(r.loads.iter().all(|l| !l.keepalive), "{:?}", r.loads);
    for round in &r.rounds {
        let p50 = round
            .result
            .as_ref()
            .unwrap()
            .stats
            .latency
            .hist
            .percentile_ns(50.0);
        assert!(p50 >= 200_000_000, "{}: p50 {p50} ns", round.target);
    }
}

#[test]
fn example_scale_out_spreads_load_over_three_backends() {
    let Some(r) = run_example("scale-out", &["nginx"]) else {
        return;
    };
    // While lb-3 is loaded, each of its three backends works.
    let lb3: Vec<_> = r.rounds.iter().filter(|x| x.target == "lb-3").collect();
    assert!(!lb3.is_empty());
    let index = |name: &str| {
        r.resources.samples[0]
            .targets
            .iter()
            .position(|t| t.name == name)
            .unwrap()
    };
    for backend in ["backend-1", "backend-2", "backend-3"] {
        let i = index(backend);
        let busy = lb3.iter().all(|round| {
            r.resources
                .samples
                .iter()
                .filter(|s| s.t_ms > round.window.from_ms && s.t_ms <= round.window.to_ms)
                .any(|s| s.targets[i].cpu_cores > 0.0)
        });
        assert!(busy, "{backend} did no work behind lb-3");
    }
}

#[test]
fn example_concurrency_sweep_shows_the_serializing_app_saturate() {
    let Some(r) = run_example("concurrency-sweep", &[]) else {
        return;
    };
    // One request at a time, 7 ms each: never much above 143 req/s, whatever the concurrency.
    for level in 0..4 {
        let cell = r.cell_of(0, level, "app").unwrap();
        let rps = cell.requests_per_sec.unwrap().median;
        assert!(rps <= 160.0, "app at level {level}: {rps} req/s");
    }
}

#[test]
fn example_find_max_searches_each_target() {
    let Some(r) = run_example("find-max", &["nginx"]) else {
        return;
    };
    for round in &r.rounds {
        let search = round.find_max.as_ref().unwrap();
        assert!(!search.steps.is_empty(), "{}", round.target);
        assert_eq!(search.steps[0].target_rate, search.search.start_rate);
        // A step that passed met the SLO (p99 < 20 ms).
        for step in search.steps.iter().filter(|s| s.verdict == Verdict::Pass) {
            assert!(step.p99_us.is_some_and(|p| p < 20_000.0), "{step:?}");
        }
    }
}

#[test]
fn a_target_that_dies_mid_run_fails_its_later_rounds_and_keeps_the_finished_ones() {
    let _machine = crate::support::loading();
    let dir = tempdir("bench-dies");
    let script = format!(
        "{} serve --listen 127.0.0.1:{{port}} & pid=$!; sleep 2; kill $pid; wait",
        env!("CARGO_BIN_EXE_loadbench")
    );
    let text = format!(
        "name = \"dies\"\nrounds = 3\n[[target]]\nname = \"t\"\ncommand = \"/bin/sh\"\n\
         args = [\"-c\", \"{script}\"]\n\
         [[load]]\nmodel = \"closed\"\ntargets = [\"t\"]\nconnections = [2]\nduration = \"1200ms\"\n"
    );
    let file = scenario(&dir, "dies.toml", &text);
    let (out, result) = bench(&file, &dir.join("results"), &[]);
    let (_, stderr) = output_text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed round exits 1: {stderr}"
    );
    let r = result.expect("the result is kept");
    assert_eq!(r.steps_done, 3);
    let first = r.rounds[0]
        .result
        .as_ref()
        .expect("round 1 ran while the target lived");
    assert!(first.stats.requests > 0);
    let last = &r.rounds[2];
    assert!(last.result.is_none(), "{last:?}");
    let error = last.error.as_deref().unwrap_or_default();
    assert!(error.contains("no longer running"), "{error}");
    assert!(
        r.warnings.iter().any(|w| w.contains("step 3")),
        "{:?}",
        r.warnings
    );
}

/// nginx started through `sh`, which first writes its working directory; it serves the files of
/// `site/` beside the scenario (named with `{scenario_dir}`) and logs, per request, nginx's
/// connection number, the requests that connection carried so far, and the URI.
const NGINX_PER_CONNECTION: &str = r#"
name = "per-connection"
[[target]]
name = "nginx"
command = "/bin/sh"
args = ["-c", "pwd > {dir}/cwd.txt && exec /usr/sbin/nginx -p {dir} -c {dir}/nginx.conf -e stderr"]
stop_signal = "QUIT"
[[target.config]]
path = "nginx.conf"
template = """
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log stderr;
events { worker_connections 1024; }
http {
  log_format per_connection '$connection $connection_requests $request_uri';
  access_log {dir}/access.log per_connection;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:{port};
    root {scenario_dir}/site;
  }
}
"""
[target.ready]
http = "http://127.0.0.1:{port}/index.html"

[[load]]
name = "no keep-alive"
model = "closed"
targets = ["nginx"]
connections = [2]
keepalive = false
[load.request]
path = "/index.html?keepalive=off"

[[load]]
name = "keep-alive"
model = "closed"
targets = ["nginx"]
connections = [2]
[load.request]
path = "/index.html?keepalive=on"
"#;

/// `(connection, requests on it so far)` of every logged request whose URI ends with `tag`.
fn logged(log: &str, tag: &str) -> Vec<(u64, u64)> {
    log.lines()
        .filter(|l| l.ends_with(tag))
        .map(|l| {
            let f: Vec<u64> = l.split(' ').take(2).map(|x| x.parse().unwrap()).collect();
            (f[0], f[1])
        })
        .collect()
}

#[test]
fn keep_alive_off_opens_a_connection_per_request_and_targets_run_in_the_scenario_folder() {
    if !have("nginx") {
        return;
    }
    let _machine = crate::support::loading();
    let dir = tempdir("bench-keepalive");
    std::fs::create_dir(dir.join("site")).unwrap();
    std::fs::write(dir.join("site/index.html"), "hello\n").unwrap();
    let file = scenario(&dir, "per-connection.toml", NGINX_PER_CONNECTION);
    let results = dir.join("results");
    let args = [
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--rounds",
        "1",
        "--cooldown",
        "0s",
    ];
    let (out, result) = bench(&file, &results, &args);
    assert!(out.status.success(), "{:?}", output_text(&out));
    let r = result.expect("result.json saved");
    let keepalive: Vec<bool> = r.loads.iter().map(|l| l.keepalive).collect();
    assert_eq!(keepalive, [false, true]);
    for round in &r.rounds {
        let stats = &round.result.as_ref().expect("a run").stats;
        // Every request found the file named through {scenario_dir}.
        assert!(stats.requests > 0, "{}", round.load);
        assert_eq!(stats.errors.total(), 0, "load {}", round.load);
    }
    let target_dir = run_folder(&results).unwrap().join("targets/nginx");
    let cwd = std::fs::read_to_string(target_dir.join("cwd.txt")).unwrap();
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap();
    assert_eq!(canonical(Path::new(cwd.trim())), canonical(&dir));
    let log = std::fs::read_to_string(target_dir.join("access.log")).unwrap();
    let off = logged(&log, "keepalive=off");
    assert!(off.len() >= 10, "{} requests without keep-alive", off.len());
    assert!(off.iter().all(|&(_, n)| n == 1), "{off:?}");
    let connections: std::collections::HashSet<u64> = off.iter().map(|&(c, _)| c).collect();
    assert_eq!(connections.len(), off.len());
    // The same count with keep-alive on finds connections that carried many requests.
    let on = logged(&log, "keepalive=on");
    assert!(on.iter().any(|&(_, n)| n > 1), "{on:?}");
}

#[test]
fn a_target_not_ready_in_time_says_how_to_raise_its_ready_timeout() {
    rejected(
        "slow-start",
        &format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\ncommand = \"/bin/sleep\"\nargs = [\"30\"]\n\
             [target.ready]\ntimeout = \"500ms\"\n{LOAD}"
        ),
        "target[0].ready",
        "raise target[0].ready.timeout: add timeout = \"60s\" under the [target.ready] of 't'",
    );
}

/// An open load's `send_window` and `connect_limit` reach its run: the result records the
/// window and the limit, connects in progress stayed under it, and every request sent is
/// accounted for.
#[test]
fn an_open_loads_send_window_and_connect_limit_reach_its_run() {
    let _machine = crate::support::measuring();
    let dir = tempdir("bench-pacing");
    let text = format!(
        "name = \"paced\"\n{BACKEND}\n[[load]]\nmodel = \"open\"\ntargets = [\"backend\"]\n\
         rate = [200]\nsend_window = \"0\"\nconnect_limit = 3\n"
    );
    let file = scenario(&dir, "paced.toml", &text);
    let args = ["--duration", "1s", "--warmup", "0s", "--cooldown", "0s"];
    let (out, result) = bench(&file, &dir.join("results"), &args);
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let r = result.expect("result.json saved");
    let run = r.rounds[0].result.as_ref().expect("the round measured");
    let s = &run.stats;
    assert_eq!(run.config.send_window_us, Some(0), "the scenario's window");
    assert_eq!(s.pool.connect_limit, 3, "{:?}", s.pool);
    assert!((1..=3).contains(&s.pool.connects_peak), "{:?}", s.pool);
    assert_eq!(s.requests + s.errors.total() + s.abandoned, s.sent, "{s:?}");
    assert!(s.sent >= 190, "sent {} of 200", s.sent);
}

/// Scenario values a run cannot use fail when the file loads: exit 2, one line naming the key,
/// and the target (which would create a marker file) never starts.
#[test]
fn bad_load_values_fail_before_any_target_starts() {
    let dir = tempdir("bad-values");
    let marker = dir.join("started");
    let cases = [
        ("model = \"find-max\"\nslo = \"p99 < fast\"", "load[0].slo"),
        (
            "model = \"closed\"\nconnections = [1000000]",
            "load[0].connections",
        ),
        (
            "model = \"closed\"\nconnections = [1]\nduration = \"1000000h\"",
            "load[0].duration",
        ),
        ("model = \"open\"\nrate = [-5]", "load[0].rate"),
        // Issue 33: above what the engine can schedule (it once passed and started the target).
        ("model = \"open\"\nrate = [1e300]", "load[0].rate"),
        ("model = \"open\"\nrate = [100, 2e7]", "load[0].rate"),
        (
            "model = \"open\"\nrate = [5]\nsend_window = \"1s\"",
            "load[0].send_window",
        ),
        (
            "model = \"open\"\nrate = [5]\nconnect_limit = 0",
            "load[0].connect_limit",
        ),
        (
            "model = \"closed\"\nconnections = [1]\nhttp2 = true\npipeline = 4",
            "load[0].pipeline",
        ),
        (
            "model = \"open\"\nrate = [10]\nmax_connections = 4\nhttp2 = true\nkeepalive = false",
            "load[0].http2",
        ),
        (
            "model = \"closed\"\nconnections = [1]\nstreams = 4",
            "load[0].streams",
        ),
    ];
    for (i, (load, key)) in cases.iter().enumerate() {
        let text = format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\ncommand = \"/bin/sh\"\n\
             args = [\"-c\", \"touch '{}'; exec sleep 30\"]\n\
             [[load]]\ntargets = [\"t\"]\n{load}\n",
            marker.display()
        );
        let file = scenario(&dir, &format!("bad-{i}.toml"), &text);
        let (out, _) = bench(&file, &dir.join(format!("results-{i}")), &[]);
        let (_, stderr) = output_text(&out);
        assert_eq!(out.status.code(), Some(2), "{key}: {stderr}");
        let line = stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        assert!(line.contains(key), "names {key}: {line}");
        assert!(line.contains("fix:"), "{line}");
        assert!(!line.contains("--") && !line.contains(" -c"), "{line}");
        assert!(!marker.exists(), "{key}: the target was started");
    }
}

/// Issue 31: a `[target.upstream]` value the reference backend would refuse is refused when
/// the file loads, by the backend's own parsers and checks: exit 2, one line naming
/// `target[0].upstream.<key>`, and no target started (no run folder, no log, nothing listening
/// on the backend's fixed port).
#[test]
fn bad_upstream_settings_fail_at_load_and_start_no_target() {
    let dir = tempdir("bad-upstream");
    let cases = [
        ("max_served_conns = 0", "max_served_conns", "at least 1"),
        ("delay = \"bogus\"", "delay", "invalid delay \"bogus\""),
        ("hiccup = \"x\"", "hiccup", "STALL/EVERY"),
    ];
    for (i, (setting, key, words)) in cases.iter().enumerate() {
        let port = crate::support::free_port();
        let text = format!(
            "name = \"x\"\n[[target]]\nname = \"t\"\nkind = \"upstream\"\nport = {port}\n\
             [target.upstream]\n{setting}\n{LOAD}"
        );
        let file = scenario(&dir, &format!("bad-{i}.toml"), &text);
        let results = dir.join(format!("results-{i}"));
        let (out, _) = bench(&file, &results, &[]);
        let (_, stderr) = output_text(&out);
        let line = stderr.trim_end();
        assert_eq!(out.status.code(), Some(2), "{key}: {line}");
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        assert!(line.contains(&format!("bad-{i}.toml")), "{line}");
        let key = format!("target[0].upstream.{key}");
        assert!(line.contains(&format!(": {key}: ")), "names {key}: {line}");
        assert!(line.contains(words) && line.contains("; fix: "), "{line}");
        assert!(
            run_folder(&results).is_none(),
            "{key}: a run folder was made, so the run began"
        );
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let probe = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500));
        assert!(probe.is_err(), "{key}: something listens on {port}");
    }
}

/// Whether the JVM example project `examples/targets/PROJECT` can run here: java and mvn are
/// installed and its Maven build (`build.sh`, cached: a built jar is not rebuilt) succeeds.
/// Skipped with the reason on a machine without them; under CI (.ci/run installs both) a missing
/// tool or a failed build fails the test.
fn jvm_example_built(project: &str) -> bool {
    let on_path = |p: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let under_ci = std::env::var_os("CI").is_some();
    if let Some(missing) = ["java", "mvn"].into_iter().find(|p| !on_path(p)) {
        let why =
            format!("{missing} is not installed (apt-get install openjdk-17-jdk-headless maven)");
        assert!(!under_ci, "{why}; .ci/run installs it");
        eprintln!("skipping: {why}");
        return false;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/targets");
    let out = std::process::Command::new(examples.join("spring-boot/build.sh"))
        .arg(examples.join(project))
        .output()
        .expect("build.sh runs");
    if !out.status.success() {
        let (_, stderr) = output_text(&out);
        let why = format!("the Maven build of examples/targets/{project} failed (is Maven Central reachable?): {stderr}");
        assert!(!under_ci, "{why}");
        eprintln!("skipping: {why}");
    }
    out.status.success()
}

/// p50 of a round's measured requests, in nanoseconds.
fn round_p50(round: &loadbench_model::BenchRound) -> u64 {
    round
        .result
        .as_ref()
        .unwrap()
        .stats
        .latency
        .hist
        .percentile_ns(50.0)
}

#[test]
fn example_spring_boot_runs_every_instance_and_setting() {
    if !jvm_example_built("spring-boot") {
        return;
    }
    // Four JVMs starting on one core: alone, or beside the nginx examples they measure nothing.
    let _machine = crate::support::measuring();
    let r = run_example_for("spring-boot", "2s", "5s", 1);
    for t in ["app", "app-2", "app-keepalive", "app-backlog"] {
        let measured = r.rounds.iter().filter(|x| x.target == t && !x.combined);
        assert!(measured.count() >= 2, "{t} measured in warm-up and a load");
    }
    // The two instances were loaded at once: one round each plus the combined round.
    let together = r
        .loads
        .iter()
        .position(|l| l.name == "two instances at once");
    let together = together.expect("the two-instance load");
    assert!(r
        .rounds
        .iter()
        .any(|x| x.load as usize == together && x.combined));
    let backlog = r.loads.iter().find(|l| l.name == "accept backlog");
    assert!(!backlog.expect("the accept-backlog load").keepalive);
    // Every answer was the seed's 200 with {"message":"OK","status":200,"data":1} (38 bytes).
    for round in &r.rounds {
        let stats = &round.result.as_ref().expect("a closed-load result").stats;
        assert_eq!(stats.status.non_success(), 0, "{}", round.target);
        if stats.requests == 0 {
            continue; // a busy host's (checked by run_example_for): no body to check
        }
        assert_eq!(
            (stats.body.min, stats.body.max),
            (38, 38),
            "{}",
            round.target
        );
    }
}

#[test]
fn example_zuul_and_spring_cloud_gateway_cannot_beat_the_200ms_backend() {
    if !jvm_example_built("zuul") || !jvm_example_built("spring-cloud-gateway") {
        return;
    }
    let _machine = crate::support::measuring();
    let r = run_example_for("zuul", "5s", "5s", 1);
    let gateway = r.loads.iter().position(|l| l.name == "gateway vs direct");
    let gateway = gateway.expect("the gateway load");
    for t in ["zuul-200", "zuul-1000", "scg", "backend"] {
        let round = r
            .rounds
            .iter()
            .find(|x| x.load as usize == gateway && x.target == t);
        let round = round.unwrap_or_else(|| panic!("{t} measured"));
        if round.result.as_ref().unwrap().stats.requests == 0 {
            continue; // a busy host's (checked by run_example_for): no latency to bound
        }
        let p50 = round_p50(round);
        assert!(p50 >= 200_000_000, "{t}: p50 {p50} ns");
        // 300 connections, each waiting 200 ms per answer: at most 1500 req/s (+5% for timing).
        let rps = round.throughput().expect("a closed-load result");
        assert!(rps <= 1500.0 * 1.05, "{t}: {rps} req/s");
    }
    assert_report_names(&r, "scg");
}

/// The run folder's report.html shows target `name`.
fn assert_report_names(r: &BenchResult, name: &str) {
    let html = Path::new(&r.run_dir).join("report.html");
    let html = std::fs::read_to_string(&html).expect("report.html written");
    assert!(
        html.contains(&format!(">{name}<")),
        "{name} not in the report"
    );
}

/// Issue 35 point 3, issue 33 "no silent zero": beside a backend that answers, one that takes
/// every request and never answers (a delay of an hour, ready on TCP). Its cell says why it
/// measured nothing in the table and in the JSON (`cells[].nothing`), one `error:` line per
/// such cell goes to stderr, and the bench exits 1. The answering target's cell says nothing
/// of the kind.
#[test]
fn a_target_that_never_answers_is_a_cell_that_says_why_and_exit_1() {
    let _machine = crate::support::loading();
    let dir = tempdir("bench-silent");
    let text = "name = \"silent\"\n\
                [[target]]\nname = \"quick\"\nkind = \"upstream\"\n[target.upstream]\nthreads = 1\n\
                [[target]]\nname = \"silent\"\nkind = \"upstream\"\nready.tcp = \"127.0.0.1:{port}\"\n\
                [target.upstream]\nthreads = 1\ndelay = \"1h\"\n\
                [[load]]\nname = \"closed\"\nmodel = \"closed\"\ntargets = [\"quick\", \"silent\"]\n\
                connections = [2]\nduration = \"1s\"\nwarmup = \"0s\"\n";
    let file = scenario(&dir, "silent.toml", text);
    let results = dir.join("results");
    let (out, result) = bench(&file, &results, &[]);
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("measured nothing"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("error: silent at c=2 (load closed) measured nothing: none of the "),
        "{stderr}"
    );
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("silent "))
        .unwrap_or_else(|| panic!("no row for silent:\n{stdout}"));
    assert!(
        row.contains("measured nothing: none of the ")
            && row.contains("requests sent was answered"),
        "{row}"
    );
    let r = result.expect("the result is saved");
    assert!(r.cell_of(0, 0, "quick").unwrap().nothing.is_none());
    let json = std::fs::read_to_string(run_folder(&results).unwrap().join("result.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cells = v["cells"].as_array().unwrap();
    let silent = cells.iter().find(|c| c["target"] == "silent").unwrap();
    let why = silent["nothing"]
        .as_str()
        .expect("the file holds the reason");
    assert!(why.contains("requests sent was answered"), "{why}");
    assert!(lines[0].ends_with(why), "{}", lines[0]);
    let quick = cells.iter().find(|c| c["target"] == "quick").unwrap();
    assert!(quick.get("nothing").is_none(), "{quick}");
}
