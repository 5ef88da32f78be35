//! The "why" section against real targets (issue 13): a single-threaded backend at full load
//! is target-bound by its one hot thread (also in the demo), a busy loop beside a bench is
//! named as a busy host, a target under a CPU quota is named as throttled, nginx loaded
//! by a generator pinned to one core is generator-bound with the generator's numbers, and a
//! target that asks for a profile gets a flame graph in its run folder and report. Each
//! finding's figures are checked against the evidence recorded beside it.

use crate::support::{bin, have, tempdir, text, BusyLoop};
use loadbench_model::diagnose::{generator_hot_thread, side};
use loadbench_model::{BenchResult, BenchRound, Bottleneck, Finding, FindingKind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// Runs `loadbench bench` on `scenario`, whatever its exit code: the process's output and the
/// saved result.
fn bench_whatever_the_exit(name: &str, scenario: &str) -> (BenchResult, std::process::Output) {
    let dir = tempdir(name);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, scenario).unwrap();
    let out = bin()
        .arg("bench")
        .arg(&file)
        .arg("--results")
        .arg(dir.join("results"))
        .arg("--quiet")
        .output()
        .expect("loadbench runs");
    let (stdout, stderr) = text(&out);
    let results = dir.join("results");
    assert!(results.exists(), "no result saved:\n{stdout}\n{stderr}");
    (saved(&results), out)
}

/// Runs `loadbench bench` on `scenario` and returns the saved result and the printed report.
fn bench(name: &str, scenario: &str) -> (BenchResult, String) {
    let (r, out) = bench_whatever_the_exit(name, scenario);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (r, stdout)
}

fn saved(results: &Path) -> BenchResult {
    let folder = std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .next()
        .unwrap();
    let text = std::fs::read_to_string(folder.path().join("result.json")).unwrap();
    BenchResult::from_json(&text).expect("the result reads back")
}

fn finding(round: &BenchRound, kind: FindingKind) -> Option<&Finding> {
    round.why.findings.iter().find(|f| f.kind == kind)
}

fn kinds(round: &BenchRound) -> Vec<FindingKind> {
    round.why.findings.iter().map(|f| f.kind).collect()
}

/// The backend on one thread, loaded by a generator of two threads: the backend's thread
/// never waits for work.
const SINGLE_THREADED: &str = "name = \"why\"\n[generator]\nthreads = 2\n\
     [[target]]\nname = \"backend\"\nkind = \"upstream\"\n[target.upstream]\nthreads = 1\n\
     [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [32]\n\
     duration = \"2s\"\nwarmup = \"500ms\"\n";

#[test]
fn a_single_threaded_backend_at_full_load_is_target_bound_by_its_hot_thread() {
    let _machine = crate::support::measuring();
    let (r, stdout) = bench("why-hot", SINGLE_THREADED);
    let round = &r.rounds[0];
    assert_saturated_thread_unless_the_host_was_busy(round);
    // No quota, no throttling finding; the kernel saw the backend's listener.
    assert!(finding(round, FindingKind::CpuThrottled).is_none());
    let evidence = round.evidence.as_ref().expect("evidence recorded");
    let kernel = evidence.kernel.as_ref().expect("kernel evidence");
    assert_eq!(kernel.ports, [r.targets[0].port]);
    assert!(kernel.sockets.backlog > 0, "{kernel:?}");
    assert!(kernel.sockets.established >= 32, "{kernel:?}");
    assert!(
        stdout.contains("why (per round, with fixes: the Markdown and HTML reports):\n  step 1: "),
        "{stdout}"
    );
    if let Some(hot) = finding(round, FindingKind::HotThread) {
        let target = &evidence.targets[0];
        let top = &target.busiest[0];
        assert_eq!(hot.figures["thread_cores"], top.cores);
        assert_eq!(hot.figures["thread_runnable"], top.runnable);
        assert!(top.cores >= 0.8 || top.runnable >= 0.9, "{target:?}");
        let named = format!("one thread ({}) of 'backend'", top.name);
        assert!(hot.text.contains(&named), "{}", hot.text);
        // Its other threads (the process's main thread) idle.
        assert!(target.cpu_cores - top.cores <= 0.25, "{target:?}");
    }
}

#[test]
fn the_demos_single_threaded_backend_at_full_load_is_target_bound() {
    let _machine = crate::support::measuring();
    let dir = tempdir("why-demo");
    let out = bin()
        .args(["demo", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let r = saved(&dir.join("results"));
    let plaintext = r
        .rounds
        .iter()
        .filter(|x| x.load == 0 && x.target == "direct");
    for round in plaintext {
        assert_saturated_thread_unless_the_host_was_busy(round);
    }
}

/// A saturated single-threaded backend: target-bound with a hot-thread finding. When other
/// processes took most of the host's cores (the tests share a 2-core machine), the round must
/// say so instead, with the numbers of the evidence: then the verdict is not judged.
fn assert_saturated_thread_unless_the_host_was_busy(round: &BenchRound) {
    if let Some(busy) = finding(round, FindingKind::BusyHost) {
        let evidence = round.evidence.as_ref().expect("evidence recorded");
        assert_eq!(busy.figures["other_cores"], evidence.other_cpu_cores);
        assert!(evidence.other_cpu_cores >= 0.5, "{evidence:?}");
        eprintln!(
            "step {}: busy host, verdict not judged: {}",
            round.step, busy.text
        );
        return;
    }
    assert_eq!(
        round.bottleneck,
        Bottleneck::TargetBound,
        "{:#?}",
        round.why
    );
    assert!(
        kinds(round).contains(&FindingKind::HotThread),
        "{:#?}",
        round.why
    );
}

#[test]
fn a_busy_loop_beside_the_bench_is_named_as_a_busy_host() {
    let _machine = crate::support::measuring();
    let _busy = BusyLoop::start();
    // A light load: the backend sleeps, so the busy loop is most of the host's CPU.
    let scenario = "name = \"busy\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
                    [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [4]\n\
                    duration = \"2s\"\nwarmup = \"300ms\"\n[load.request]\npath = \"/delay/20ms\"\n";
    let (r, stdout) = bench("why-busy", scenario);
    let round = &r.rounds[0];
    let busy = finding(round, FindingKind::BusyHost).expect("a busy-host finding");
    let evidence = round.evidence.as_ref().unwrap();
    assert_eq!(busy.figures["other_cores"], evidence.other_cpu_cores);
    assert!(evidence.other_cpu_cores >= 0.5, "{evidence:?}");
    assert_eq!(busy.figures["host_cores"], evidence.host_cores);
    assert!(
        busy.text.contains("every figure is unreliable"),
        "{}",
        busy.text
    );
    assert!(stdout.contains("other processes used"), "{stdout}");
}

#[test]
fn a_fifth_of_a_core_quota_under_load_is_named_as_throttling() {
    let _machine = crate::support::measuring();
    // The backend under load, beside a busy loop in its own process tree: the tree wants more
    // than a fifth of a core however busy the host is, so the quota runs out in most periods.
    // (With half a core, a host at a load average of 10 gave the tree's cgroup, one scheduling
    // entity among ten, under 0.4 cores: the quota never ran out.)
    let serve = format!(
        "(while :; do :; done) & exec {} serve --listen 127.0.0.1:{{port}} --threads 1",
        env!("CARGO_BIN_EXE_loadbench")
    );
    let scenario = format!(
        "name = \"quota\"\n[[target]]\nname = \"backend\"\ncommand = \"/bin/sh\"\n\
         args = [\"-c\", \"{serve}\"]\n[target.limits]\ncpus = 0.2\n\
         [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [8]\n\
         duration = \"2s\"\nwarmup = \"300ms\"\n"
    );
    let (r, stdout) = bench("why-quota", &scenario);
    if r.targets[0].limits.cpu_quota_cores.is_none() {
        // Not enforced (the result's warnings say why): nothing to throttle. Where the quota
        // is enforced, CI included, the checks below must hold.
        eprintln!(
            "skipping: cgroup CPU quotas are not usable here ({:?})",
            r.warnings
        );
        return;
    }
    let round = &r.rounds[0];
    let cgroup = round.evidence.as_ref().unwrap().targets[0]
        .cgroup
        .expect("cgroup evidence of a limited target");
    let throttled = finding(round, FindingKind::CpuThrottled).expect("a throttling finding");
    assert!(cgroup.nr_throttled > 0 && cgroup.nr_periods >= cgroup.nr_throttled);
    assert_eq!(
        throttled.figures["nr_throttled"],
        cgroup.nr_throttled as f64
    );
    assert_eq!(throttled.figures["nr_periods"], cgroup.nr_periods as f64);
    let share = cgroup.nr_throttled as f64 / cgroup.nr_periods as f64;
    assert!(share >= 0.1, "{cgroup:?}");
    let percent = format!("in {:.0}% of periods", share * 100.0);
    assert!(throttled.text.contains(&percent), "{}", throttled.text);
    // One judgement: the verdict blames the target the quota limited, never `neither`.
    // (Only a generator-bound finding ranked above the quota's could blame the generator.)
    let blamed = round.why.findings.iter().find_map(|f| side(f.kind));
    assert_eq!(Some(round.bottleneck), blamed, "{:#?}", round.why);
    assert_ne!(round.bottleneck, Bottleneck::Neither, "{:#?}", round.why);
    let row = stdout
        .lines()
        .find(|l| l.contains("backend") && l.contains("c=8"))
        .unwrap_or_else(|| panic!("no row:\n{stdout}"));
    assert!(!row.contains("neither"), "{row}");
    if round.bottleneck == Bottleneck::TargetBound {
        assert!(row.contains("target-bound"), "{row}");
    }
}

/// nginx serving plaintext from two workers on any core (each its own listener, so the 64
/// connections split between them), loaded by a generator of one thread pinned to core 0:
/// nginx answers faster than one generator thread sends and reads.
const PINNED_GENERATOR: &str = r#"
name = "pinned"
[generator]
cpuset = "0"
threads = 1
[[target]]
name = "nginx"
command = "/usr/sbin/nginx"
args = ["-p", "{dir}", "-c", "{dir}/nginx.conf", "-e", "stderr"]
stop_signal = "QUIT"
[[target.config]]
path = "nginx.conf"
template = """
daemon off;
worker_processes 2;
pid {dir}/nginx.pid;
error_log stderr;
events { worker_connections 1024; }
http {
  access_log off;
  server {
    listen 127.0.0.1:{port} reuseport;
    location / { default_type text/plain; return 200 "Hello, World!"; }
  }
}
"""
[[load]]
model = "closed"
targets = ["nginx"]
connections = [64]
duration = "2s"
warmup = "500ms"
"#;

#[test]
fn nginx_loaded_by_a_generator_pinned_to_one_core_is_generator_bound_with_its_numbers() {
    if !have("nginx") {
        return;
    }
    let _machine = crate::support::measuring();
    let (r, stdout) = bench("why-pinned", PINNED_GENERATOR);
    assert_eq!(
        r.scenario.generator_cpuset,
        Some(vec![0]),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.scenario.generator_cores, 1.0);
    let round = &r.rounds[0];
    let run = round.result.as_ref().expect("the round ran");
    assert!(
        run.stats.requests > 0 && run.stats.errors.total() == 0,
        "{:?}",
        run.stats.errors
    );
    let evidence = round.evidence.as_ref().expect("evidence recorded");
    let generator = evidence
        .generator
        .as_ref()
        .expect("the generator's threads");
    // nginx has no CPU set: the verdict gives it every core the bench could use, not the one
    // the generator was pinned to (regression: it once read the pinned thread's affinity).
    assert_eq!(
        evidence.target_cores,
        f64::from(r.host.cores),
        "{evidence:?}"
    );
    if round.bottleneck != Bottleneck::GeneratorBound {
        // Only a host whose cores other processes took may read otherwise, and it says so.
        let busy = finding(round, FindingKind::BusyHost)
            .unwrap_or_else(|| panic!("{:?}\n{:#?}\n{generator:#?}", round.bottleneck, round.why));
        eprintln!("step 1: busy host, verdict not judged: {}", busy.text);
        return;
    }
    let f = finding(round, FindingKind::GeneratorBound).expect("a generator-bound finding");
    // Its numbers are the round's: the generator's CPU share of its one core, ...
    let used = round.generator_cpu_mean_cores;
    assert_eq!(f.figures["generator_cores_used"], used);
    assert_eq!(f.figures["generator_cores"], 1.0);
    let share = format!("the generator used {:.0}% of its 1 core", 100.0 * used);
    assert!(f.text.starts_with(&share), "{}", f.text);
    assert!(f
        .text
        .ends_with("these numbers are loadbench's limit, not the target's"));
    // ... and what made it the limit: nearly all of its core, or a thread that never waited
    // for nginx (runnable, on a CPU or in a run queue, at least 90% of the time).
    let hot = generator_hot_thread(generator);
    assert!(used >= 0.9 || hot.is_some(), "{generator:#?}");
    if let Some(t) = hot {
        assert_eq!(f.figures["generator_thread_runnable"], t.runnable);
        assert_eq!(f.figures["generator_thread_cores"], t.cores);
        let named = format!("its busiest thread ({}) was on a CPU", t.name);
        assert!(f.text.contains(&named), "{}", f.text);
    }
    // nginx's workers shared the load and had time to spare: neither is a hot thread.
    assert!(
        finding(round, FindingKind::HotThread).is_none(),
        "{:#?}",
        round.why
    );
    assert!(stdout.contains(&share), "{stdout}");
}

/// Whether `perf record` works here (installed, and allowed by the kernel).
fn perf_works() -> bool {
    let data = tempdir("perf-probe").join("probe.data");
    Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_profiled_backend_gets_a_flame_graph_in_its_run_folder_and_report() {
    let _machine = crate::support::measuring();
    let scenario = "name = \"profiled\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
                    profile = true\n[target.upstream]\nthreads = 1\n\
                    [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [8]\n\
                    duration = \"2s\"\nwarmup = \"300ms\"\n";
    let (r, stdout) = bench("why-profile", scenario);
    // The profile's run is extra: the rounds are the planned ones.
    assert_eq!((r.rounds.len(), r.steps_done), (1, 1));
    let Some(p) = &r.targets[0].profile else {
        let warning = r
            .warnings
            .iter()
            .find(|w| w.starts_with("profile of 'backend' skipped: "))
            .expect("one warning says why there is no profile");
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!(ci && perf_works()), "perf works here, yet: {warning}");
        eprintln!("skipping: {warning}");
        return;
    };
    let dir = PathBuf::from(&r.run_dir);
    let svg = std::fs::read_to_string(dir.join(&p.svg)).expect("the flame graph");
    assert_eq!(p.svg, "profile-backend.svg");
    assert!(
        svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    // Frames of the backend's own code (loadbench serve: tokio, hyper, loadbench_upstream).
    let frames: Vec<&str> = svg
        .split("<title>")
        .skip(1)
        .filter_map(|t| t.split(" (").next())
        .collect();
    assert!(
        frames.iter().any(|f| ["loadbench", "hyper", "tokio"]
            .iter()
            .any(|n| f.contains(n))),
        "{frames:?}"
    );
    let folded = std::fs::read_to_string(dir.join(&p.folded)).expect("the folded stacks");
    let counted: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    assert_eq!(counted, p.samples);
    assert!(
        p.samples > 0 && p.frequency_hz == 99 && p.duration_ms == 2000,
        "{p:?}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("<a href=\"profile-backend.svg\">"),
        "no link in the report"
    );
    assert!(
        html.contains("src=\"data:image/svg+xml,"),
        "no flame graph in the report"
    );
    let line = format!("  backend: {}", dir.join(&p.svg).display());
    assert!(stdout.contains(&line), "{stdout}");
}

#[test]
fn the_socket_watch_of_run_can_be_switched_off_for_measuring_its_cost() {
    use loadbench_model::RunResult;
    use loadbench_runner::kernel::NO_SOCKET_WATCH_ENV;
    use loadbench_upstream::{Server, ServerConfig};
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let url = format!("http://{}/", server.local_addr());
    let readings = |off: bool| {
        let save = tempdir("socket-watch").join("run.json");
        let mut cmd = bin();
        cmd.args([
            "run", &url, "-c", "2", "-t", "1", "-n", "200", "--quiet", "--save",
        ])
        .arg(&save);
        if off {
            cmd.env(NO_SOCKET_WATCH_ENV, "1");
        }
        let out = cmd.output().expect("loadbench runs");
        assert!(out.status.success(), "{:?}", text(&out));
        let r = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
        assert_eq!((r.stats.requests, r.stats.errors.total()), (200, 0));
        r.evidence.expect("the kernel's counters").sockets.readings
    };
    // On: one reading at the start at least. Off: none, the counters still read.
    assert!(readings(false) >= 1);
    assert_eq!(readings(true), 0);
}

/// The backend answering every request after a fixed 50 ms (no pool, no CPU), swept over four
/// levels of connections.
const FIXED_WAIT: &str = "name = \"wait\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
     [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [2, 4, 8, 16]\n\
     duration = \"1500ms\"\nwarmup = \"300ms\"\n[load.request]\npath = \"/delay/50ms\"\n";

#[test]
fn a_fixed_wait_is_named_as_what_sets_the_rate_and_no_fit_claims_a_limit() {
    let _machine = crate::support::measuring();
    let (r, stdout) = bench("why-wait", FIXED_WAIT);
    let a = r.queueing_of(0, "backend").expect("the sweep is analysed");
    let sweep: Vec<FindingKind> = a.findings.iter().map(|f| f.kind).collect();
    assert_eq!(sweep, [FindingKind::LatencyBound], "{:#?}", a);
    let f = &a.findings[0];
    let service = f.figures["mean_service_us"];
    assert!((50_000.0..150_000.0).contains(&service), "{f:?}");
    assert!(
        f.text.contains("throughput = connections ÷ latency"),
        "{}",
        f.text
    );
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .starts_with("more concurrency is the lever"));
    // The fit proposes no "serial part" its limit never came near: not enough evidence.
    assert!(a.usl.is_none(), "{:?}", a.usl);
    let note = a.usl_note.as_deref().unwrap();
    assert!(note.starts_with("not enough evidence"), "{note}");
    assert!(stdout.contains("the wait sets the rate"), "{stdout}");
    assert!(!stdout.contains("serial part"), "{stdout}");
    // Each step: the wait, neither side blamed, never "no clear bottleneck".
    for round in &r.rounds {
        let ks = kinds(round);
        assert!(ks.contains(&FindingKind::LatencyBound), "{:#?}", round.why);
        assert!(!ks.contains(&FindingKind::NoClearBottleneck), "{ks:?}");
        assert_eq!(round.bottleneck, Bottleneck::Neither, "{:#?}", round.why);
    }
    assert!(!stdout.contains("no clear bottleneck"), "{stdout}");
}

#[test]
fn run_names_a_generator_that_shares_its_core_with_a_busy_loop() {
    use loadbench_model::RunResult;
    use loadbench_upstream::{Server, ServerConfig};
    let _machine = crate::support::measuring();
    let server = Server::start(ServerConfig::ephemeral()).expect("reference backend starts");
    let url = format!("http://{}/", server.local_addr());
    // A busy loop and the generator on core 0 only: the scheduler splits the core between them.
    let _busy = BusyLoop::of(
        Command::new("taskset")
            .args(["-c", "0", "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset"),
    );
    let save = tempdir("shared-core").join("run.json");
    let out = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_loadbench")])
        .args(["run", &url, "-c", "8", "-t", "1", "-d", "2s", "--save"])
        .arg(&save)
        .output()
        .expect("loadbench runs");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let r = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let f = r
        .why
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::GeneratorBound)
        .unwrap_or_else(|| panic!("{:#?}", r.why));
    let waiting = f.figures["generator_thread_waiting"];
    assert!(waiting >= 0.25, "{f:?}");
    let (on_cpu, runnable) = (
        f.figures["generator_thread_cores"],
        f.figures["generator_thread_runnable"],
    );
    assert!((runnable - on_cpu - waiting).abs() < 1e-9, "{f:?}");
    assert!(
        f.text.contains("something else shares its core"),
        "{}",
        f.text
    );
    assert!(f.fix.as_deref().unwrap().contains("cores of its own"));
    // The busy loop is also another process's CPU: a busy host may rank first, blaming no side.
    assert_eq!(
        r.why
            .findings
            .iter()
            .find(|f| f.kind != FindingKind::BusyHost)
            .map(|f| f.kind),
        Some(FindingKind::GeneratorBound),
        "{:#?}",
        r.why
    );
    assert!(!stdout.contains("no clear bottleneck"), "{stdout}");
    assert!(
        stdout.contains("something else shares its core"),
        "{stdout}"
    );
}

#[test]
fn a_target_killed_for_memory_is_said_to_have_died_and_later_steps_fail() {
    let _machine = crate::support::measuring();
    // The backend as the target's main process, first in line for the OOM killer
    // (oom_score_adj 1000), beside a pipe that fills the 64 MiB limit 2.5 s after the start:
    // the kernel kills the backend mid-step.
    let serve = format!(
        "(sleep 2.5; head -c 400M /dev/zero | tail) & echo 1000 > /proc/self/oom_score_adj; exec {} serve --listen 127.0.0.1:{{port}} --threads 1",
        env!("CARGO_BIN_EXE_loadbench")
    );
    let scenario = format!(
        "name = \"oom\"\n[[target]]\nname = \"backend\"\ncommand = \"/bin/sh\"\n\
         args = [\"-c\", \"{serve}\"]\n[target.limits]\nmemory = \"64MiB\"\n\
         [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [4, 8]\n\
         duration = \"4s\"\nwarmup = \"300ms\"\n"
    );
    // A step fails (the target is gone): the exit code is not the point, the result is.
    let (r, out) = bench_whatever_the_exit("why-oom", &scenario);
    let (stdout, stderr) = text(&out);
    if r.targets[0].limits.memory_bytes.is_none() {
        eprintln!(
            "skipping: cgroup memory limits are not usable here ({:?})",
            r.warnings
        );
        return;
    }
    let first = &r.rounds[0];
    let died = finding(first, FindingKind::TargetDied)
        .unwrap_or_else(|| panic!("{:#?}\n{stdout}\n{stderr}", first.why));
    assert!(died.figures["oom_kills"] >= 1.0, "{died:?}");
    assert_eq!(died.figures["signal"], 9.0, "{died:?}");
    assert!(died.text.starts_with("'backend' died "), "{}", died.text);
    assert!(
        died.text
            .contains(" (killed by SIGKILL): the kernel's OOM killer killed"),
        "{}",
        died.text
    );
    assert!(died
        .fix
        .as_deref()
        .unwrap()
        .starts_with("raise the target's memory limit"));
    assert_eq!(first.why.findings[0].kind, FindingKind::TargetDied);
    assert_eq!(first.bottleneck, Bottleneck::TargetBound);
    let evidence = &first.evidence.as_ref().unwrap().targets[0];
    let cgroup = evidence.cgroup.unwrap();
    assert!(
        died.figures["oom_kills"] >= cgroup.oom_kills as f64,
        "{died:?}"
    );
    assert_eq!(
        died.figures["logged_oom_kills"],
        evidence.oom_killed.len() as f64
    );
    assert_the_kernel_log_says_when(died, evidence);
    // The memory finding names only the counters that moved (v1 keeps the limit's at 0).
    if let Some(m) = finding(first, FindingKind::MemoryPressure) {
        assert!(!m.text.contains(" 0 "), "{}", m.text);
        assert!(m.text.contains("OOM kills"), "{}", m.text);
    }
    // The next step has no figures of a target that is not running: it failed, and says why.
    let second = &r.rounds[1];
    assert!(second.result.is_none(), "{second:#?}");
    let error = second.error.as_deref().unwrap_or_default();
    assert!(error.contains("no longer running"), "{error}");
    let said = died.text.split(" (killed by").next().unwrap();
    assert!(stdout.contains(said), "{said}\n{stdout}");
}

/// The kernel log (root reads /dev/kmsg) names the backend itself, killed mid-step: when, and
/// the kernel's own line, in the finding.
fn assert_the_kernel_log_says_when(died: &Finding, evidence: &loadbench_model::TargetEvidence) {
    if !is_root() {
        return;
    }
    let main = evidence
        .oom_killed
        .iter()
        .find(|k| k.main)
        .unwrap_or_else(|| panic!("{:#?}", evidence.oom_killed));
    assert!(
        main.line.starts_with(&format!(
            "Memory cgroup out of memory: Killed process {} (",
            main.pid
        )),
        "{main:?}"
    );
    // Killed after the pipe began to fill (2.5 s after the target started, before the
    // step), and within the step.
    assert!(main.at_secs > 0.0 && main.at_secs < 4.3 + 2.0, "{main:?}");
    assert_eq!(died.figures["died_at_secs"], main.at_secs);
    assert!(
        died.text.starts_with(&format!(
            "'backend' died {:.1} s into the step (killed by SIGKILL): the kernel's OOM killer killed",
            main.at_secs
        )),
        "{}",
        died.text
    );
    assert!(
        died.text.contains(&format!(
            "(kernel log: \"Memory cgroup out of memory: Killed process {} (",
            main.pid
        )),
        "{}",
        died.text
    );
}

/// Whether this test runs as root (who reads the kernel log, `/dev/kmsg`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap_or(false)
}

/// The reference backend at 200 requests a second: both sides mostly idle.
const IDLE_BACKEND: &str = "name = \"idle\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
     [[load]]\nmodel = \"open\"\ntargets = [\"backend\"]\nrate = [200]\nmax_connections = 8\n\
     duration = \"2s\"\nwarmup = \"300ms\"\n";

/// nginx (one worker) at 200 requests a second: both sides mostly idle.
const IDLE_NGINX: &str = r#"
name = "idle-nginx"
[[target]]
name = "nginx"
command = "/usr/sbin/nginx"
args = ["-p", "{dir}", "-c", "{dir}/nginx.conf", "-e", "stderr"]
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
  server {
    listen 127.0.0.1:{port};
    location / { default_type text/plain; return 200 "Hello, World!"; }
  }
}
"""
[[load]]
model = "open"
targets = ["nginx"]
rate = [200]
max_connections = 8
duration = "2s"
warmup = "300ms"
"#;

#[test]
fn a_healthy_target_on_a_busy_host_gets_only_the_busy_host_warning() {
    let _machine = crate::support::measuring();
    // Two shells spinning on a 2-core host: other processes use at least 0.5 cores whatever
    // else runs (what they lose to others is other processes' too), and the light load cannot
    // take more than 1.5.
    let _busy = BusyLoop::spin(2);
    only_the_busy_host_is_said(bench("why-idle", IDLE_BACKEND));
}

#[test]
fn a_healthy_nginx_on_a_busy_host_gets_only_the_busy_host_warning() {
    if !have("nginx") {
        return;
    }
    let _machine = crate::support::measuring();
    let _busy = BusyLoop::spin(2);
    only_the_busy_host_is_said(bench("why-idle-nginx", IDLE_NGINX));
}

/// The busy host is named, and nothing else is blamed: no limit, no host-wide counter, no verdict.
/// One exception, itself checked: when the host was so busy that the generator fell behind its
/// schedule (sent under 99% of it), the generator is the limit, and that is all that is said.
fn only_the_busy_host_is_said((r, stdout): (BenchResult, String)) {
    let round = &r.rounds[0];
    let run = round.result.as_ref().expect("the round ran");
    assert!(
        run.stats.requests > 0 && run.stats.errors.total() == 0,
        "{:?}",
        run.stats.errors
    );
    assert!(
        finding(round, FindingKind::BusyHost).is_some(),
        "{:#?}",
        round.why
    );
    let scheduled = run
        .stats
        .scheduled
        .expect("an open load counts its schedule");
    let kept = run.stats.sent as f64 >= 0.99 * scheduled as f64;
    let ks = kinds(round);
    if kept {
        assert!(
            ks.iter()
                .all(|k| matches!(k, FindingKind::BusyHost | FindingKind::NoClearBottleneck)),
            "{:#?}",
            round.why
        );
        assert_eq!(round.bottleneck, Bottleneck::Neither);
        assert!(!stdout.contains("generator-bound"), "{stdout}");
    } else {
        eprintln!(
            "the generator sent {} of {scheduled} on this busy host: it was the limit",
            run.stats.sent
        );
        assert!(
            ks.iter()
                .all(|k| matches!(k, FindingKind::BusyHost | FindingKind::GeneratorBound)),
            "{:#?}",
            round.why
        );
        assert_eq!(round.bottleneck, Bottleneck::GeneratorBound);
    }
}

/// Enough busy loops to make any host busy by the rule (other processes using at least a
/// quarter of the cores and half a core): one more than a quarter of the cores.
fn busy_loops() -> BusyLoop {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    BusyLoop::spin(cores / 4 + 2)
}

#[test]
fn a_run_on_a_busy_host_says_so_and_compare_gives_no_verdict_without_ignore_host() {
    use loadbench_model::RunResult;
    use std::io::{BufRead, BufReader};
    let _machine = crate::support::measuring();
    // The backend as its own process (the busy loops are this test's children, not its), and
    // sleeping: the load itself uses little CPU, the busy loops most of the host.
    let listen = format!("127.0.0.1:{}", crate::support::free_port());
    let mut serve = bin()
        .args(["serve", "--listen", &listen])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("loadbench serve starts");
    let stderr = serve.stderr.take().expect("stderr");
    let _serve = BusyLoop::of(serve);
    let mut line = String::new();
    BufReader::new(stderr)
        .read_line(&mut line)
        .expect("serve says where it listens");
    assert!(line.contains(&listen), "{line}");
    let url = format!("http://{listen}/delay/20ms");
    let dir = tempdir("busy-compare");
    let (base, new) = (dir.join("base.json"), dir.join("new.json"));
    let run = |save: &Path| {
        bin()
            .args(["run", &url, "-c", "2", "-d", "2s", "--save"])
            .arg(save)
            .output()
            .expect("loadbench runs")
    };
    let out = run(&base);
    assert!(out.status.success(), "{:?}", text(&out));
    let busy = busy_loops();
    let out = run(&new);
    drop(busy);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let r = RunResult::from_json(&std::fs::read_to_string(&new).unwrap()).unwrap();
    // The run recorded who used the host: the target (this test process, found by its
    // listening socket), the generator, and the busy loops as other processes.
    let host = r
        .evidence
        .as_ref()
        .and_then(|e| e.host.clone())
        .expect("host load recorded");
    let target = host
        .target
        .as_ref()
        .expect("the backend found as the target");
    assert_eq!(
        (target.name.as_str(), target.processes),
        ("loadbench", 1),
        "{host:?}"
    );
    assert!(host.others_known && host.busy(), "{host:?}");
    let f = r.why.busy_host().unwrap_or_else(|| panic!("{:#?}", r.why));
    assert_eq!(f.figures["other_cores"], host.other_cores);
    assert!(stdout.contains("other processes used"), "{stdout}");
    assert_compare_gives_no_verdict_without_ignore_host(&base, &new);
}

/// `compare BASE NEW`, NEW measured on a busy host: no verdict (exit 3) with the table still
/// printed, a verdict with `--ignore-host`, and one as before once the finding is removed.
fn assert_compare_gives_no_verdict_without_ignore_host(base: &Path, new: &Path) {
    use loadbench_model::RunResult;
    let compare = |extra: &[&str]| {
        bin()
            .arg("compare")
            .arg(base)
            .arg(new)
            .args(extra)
            .output()
            .expect("loadbench compare runs")
    };
    let out = compare(&[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("req/s"),
        "the table is still printed: {stdout}"
    );
    assert!(
        stderr.contains("not judged (exit 3): measured on a busy host")
            && stderr.contains(&format!("{}: other processes used", new.display()))
            && stderr.contains("--ignore-host"),
        "{stderr}"
    );
    let out = compare(&["--ignore-host"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "judged with --ignore-host: {:?}",
        text(&out)
    );
    // The same files without the busy-host finding are judged as before.
    for path in [base, new] {
        let mut r = RunResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
        r.why.findings.retain(|f| f.kind != FindingKind::BusyHost);
        std::fs::write(path, serde_json::to_string(&r).unwrap()).unwrap();
    }
    let out = compare(&[]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "judged without the finding: {:?}",
        text(&out)
    );
}

/// A TCP stream that loses packets, beside the bench, in network namespaces of its own making:
/// the bench's namespace `a` (its loopback for the bench's target) and `b`, joined through a
/// bridge in `h` whose port toward `b` is a 2 Mbit/s token bucket with an 8 KiB queue. Python
/// senders in `a` push 8 connections of 500 KB/s each toward `b`; the bucket drops what
/// overflows it, so `a`'s kernel retransmits steadily (about 160 segments a second on the
/// project's VM) for as long as they run: host-wide retransmits that are none of the load's.
/// Everything goes on drop (the namespaces, their links and processes); each process ends by
/// itself after a minute.
struct LossyHost {
    prefix: String,
    processes: Vec<Child>,
}

const LOSSY_PY: &str = r#"
import socket, sys, time, threading
end = time.monotonic() + 60
if sys.argv[1] == "serve":
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 19999)); srv.listen(64); srv.settimeout(60)
    def drain(c):
        c.settimeout(60)
        try:
            while c.recv(65536) and time.monotonic() < end: pass
        except OSError: pass
    while time.monotonic() < end:
        try: c, _ = srv.accept()
        except OSError: break
        threading.Thread(target=drain, args=(c,), daemon=True).start()
else:
    cs = []
    while len(cs) < 8 and time.monotonic() < end:
        try: cs.append(socket.create_connection(("10.213.7.2", 19999), timeout=5))
        except OSError: time.sleep(0.1)
    for c in cs:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); c.setblocking(False)
    while time.monotonic() < end:
        for c in cs:
            try: c.send(b"x" * 1000)
            except BlockingIOError: pass
        time.sleep(0.002)
"#;

impl LossyHost {
    fn ns(&self, n: &str) -> String {
        format!("{}{n}", self.prefix)
    }

    fn ip(args: &[&str]) -> Result<(), String> {
        let out = Command::new("ip")
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        out.status.success().then_some(()).ok_or_else(|| {
            format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
    }

    /// Sets it up, or says why it cannot be (not root, no tbf, no python3).
    fn start() -> Result<LossyHost, String> {
        if !have("ip") || !have("tc") || !have("python3") {
            return Err("ip, tc and python3 are needed".into());
        }
        let mut host = LossyHost {
            prefix: format!(
                "lbl{}x{}",
                std::process::id() % 100_000,
                crate::support::unique() % 1000
            ),
            processes: Vec::new(),
        };
        for n in ["a", "h", "b"] {
            Self::ip(&["netns", "add", &host.ns(n)])?;
            Self::ip(&["-n", &host.ns(n), "link", "set", "lo", "up"])?;
        }
        let h = host.ns("h");
        Self::ip(&["-n", &h, "link", "add", "br0", "type", "bridge"])?;
        Self::ip(&["-n", &h, "link", "set", "br0", "up"])?;
        for (n, addr) in [("a", "10.213.7.1/24"), ("b", "10.213.7.2/24")] {
            let (port, ns) = (format!("v{n}"), host.ns(n));
            Self::ip(&[
                "-n", &h, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            Self::ip(&["-n", &h, "link", "set", &port, "master", "br0", "up"])?;
            Self::ip(&["-n", &ns, "addr", "add", addr, "dev", "eth0"])?;
            Self::ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        let tbf = [
            "-n", &h, "qdisc", "add", "dev", "vb", "root", "tbf", "rate", "2mbit", "burst", "4k",
            "limit", "8k",
        ];
        let out = Command::new("tc")
            .args(tbf)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "tc: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let script = tempdir("lossy").join("lossy.py");
        std::fs::write(&script, LOSSY_PY).unwrap();
        for (n, role) in [("b", "serve"), ("a", "send")] {
            let child = Command::new("ip")
                .args(["netns", "exec", &host.ns(n), "python3"])
                .arg(&script)
                .arg(role)
                .spawn()
                .map_err(|e| e.to_string())?;
            host.processes.push(child);
        }
        host.wait_until_retransmitting();
        Ok(host)
    }

    /// `Tcp RetransSegs` of namespace `a`.
    fn retransmitted(&self) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns("a"), "cat", "/proc/net/snmp"])
            .output()
            .expect("ip netns exec");
        let snmp = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
        let (names, values) = (tcp.next().unwrap_or(""), tcp.next().unwrap_or(""));
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(n, _)| *n == "RetransSegs")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }

    /// Waits (at most 30 s: Python starts slowly on a loaded host) until the stream has
    /// retransmitted 20 segments in a second: the test's premise, checked, not assumed.
    fn wait_until_retransmitting(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut last = self.retransmitted();
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let now = self.retransmitted();
            if now.saturating_sub(last) >= 20 {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the lossy stream retransmits {} segments a second, not 20",
                now - last
            );
            last = now;
        }
    }

    /// `loadbench bench` on `scenario` in namespace `a`, beside the lossy stream.
    fn bench(&self, name: &str, scenario: &str) -> (BenchResult, String) {
        let dir = tempdir(name);
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, scenario).unwrap();
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns("a"),
                env!("CARGO_BIN_EXE_loadbench"),
                "bench",
            ])
            .arg(&file)
            .arg("--results")
            .arg(dir.join("results"))
            .arg("--quiet")
            .output()
            .expect("loadbench runs");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        (saved(&dir.join("results")), stdout)
    }
}

impl Drop for LossyHost {
    fn drop(&mut self) {
        for c in &mut self.processes {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in ["a", "h", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(n)])
                .status();
        }
    }
}

/// Issue 34, point 8: the reference backend answering every request after 250 ms (so some
/// request always waited a retransmission timeout, 200 ms, the old rule's only test), on a
/// host made busy by two spinning shells, while another program's stream retransmits steadily
/// in the bench's network namespace. The retransmits are the host's background, read after the
/// step, and blame nothing: only the busy host is said.
#[test]
fn host_wide_retransmits_at_their_background_blame_nothing_on_a_busy_host() {
    let _machine = crate::support::measuring();
    let lossy = match LossyHost::start() {
        Ok(l) => l,
        Err(e) if std::env::var_os("CI").is_some() => panic!("needed under CI (root): {e}"),
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let _busy = BusyLoop::spin(2);
    let scenario = "name = \"lossy\"\n[[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
        [target.upstream]\ndelay = \"250ms\"\n\
        [[load]]\nmodel = \"open\"\ntargets = [\"backend\"]\nrate = [40]\nmax_connections = 64\n\
        duration = \"2s\"\nwarmup = \"300ms\"\n";
    let (r, stdout) = lossy.bench("why-lossy", scenario);
    let round = &r.rounds[0];
    let kernel = round.evidence.as_ref().unwrap().kernel.as_ref().unwrap();
    let retransmitted = kernel.tcp.retransmitted_segments - kernel.tcp.syn_retransmits;
    // What the old rule read, both true by construction: retransmits (the lossy stream's) and
    // a request that waited at least 200 ms (every answer took 250 ms).
    assert!(retransmitted >= 10, "{kernel:?}");
    let run = round.result.as_ref().unwrap();
    assert!(
        run.stats.latency.hist.max_ns() >= 200_000_000,
        "{:?}",
        run.stats.latency
    );
    let background = kernel
        .background_retransmits
        .expect("read after a window that retransmitted");
    assert!(background > 0.0, "{kernel:?}");
    eprintln!("{retransmitted} segments retransmitted in the step, {background:.0} at the background over as long");
    assert!(
        finding(round, FindingKind::Retransmits).is_none(),
        "{:#?}",
        round.why
    );
    assert!(!stdout.contains("retransmitted"), "{stdout}");
    only_the_busy_host_is_said((r, stdout));
}
