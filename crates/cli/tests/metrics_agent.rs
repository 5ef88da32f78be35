//! Live metrics of the xxl-job agent and lost pushes in saved results (issue 39,
//! docs/metrics.md): three agents, each pushing to a real Prometheus (Debian's `prometheus`;
//! skipped without it unless CI is set), run the shards of one broadcast trigger driven over the
//! executor protocol; the pushed series add up per run id to the merged shards, and one agent's
//! `--metrics-listen`, scraped during and after the trigger, gives its shard's saved totals,
//! kept until the next trigger starts. A find-max whose receiver is killed after the start
//! records the lost pushes in its saved JSON. Bad input to the agent (listen address, port in
//! use, push URL) and a push interval out of range are one line and exit 2, the agent never
//! registering.

use crate::support::admin::{call, trigger, Admin, Agent, TOKEN};
use crate::support::prometheus::{get, Prometheus};
use crate::support::{bin, free_port, have, loading, tempdir, text};
use loadbench_model::{FindMaxResult, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

/// The sum of every `series{…}` sample of an exposition whose labels contain `with`.
fn sum_of(body: &str, series: &str, with: &str) -> f64 {
    body.lines()
        .filter(|l| l.starts_with(&format!("{series}{{")) && l.contains(with))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The agent's exposition at `port` (`None` while it cannot be had).
fn scrape(port: u16) -> Option<String> {
    match get(port, "/metrics")? {
        (200, body) => Some(body),
        _ => None,
    }
}

/// The shard result files of run `prefix…` in `dir`, sorted by name.
fn shard_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(prefix) && name.ends_with(".json")
        })
        .collect();
    files.sort();
    files
}

fn read_run(path: &Path) -> RunResult {
    RunResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Triggers shard `i` of 3 (log `10 + i`) of job 1 on each executor; polls agent 0's endpoint
/// until every callback came; returns whether a scrape saw the trigger running with counts.
fn trigger_and_watch(admin: &Admin, executors: &[String], params: &str, port: u16) -> bool {
    for (i, e) in executors.iter().enumerate() {
        let t = trigger(1, 10 + i as i64, params, (i as i64, 3));
        assert_eq!(call(e, "run", Some(TOKEN), &t)["code"], 200);
    }
    let mut seen_running = false;
    let until = Instant::now() + Duration::from_secs(90);
    while admin.callbacks().len() < 3 {
        assert!(Instant::now() < until, "callbacks: {:?}", admin.callbacks());
        if let Some(body) = scrape(port) {
            seen_running |= body
                .lines()
                .any(|l| l.starts_with("loadbench_running{") && l.ends_with("} 1"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for cb in admin.callbacks() {
        assert_eq!(cb["handleCode"], 200, "{cb}");
    }
    seen_running
}

/// Agent 0's endpoint, after the trigger: its shard's totals equal its saved result, under
/// the trigger's labels; `loadbench_running` is 0.
fn check_scrape_after(port: u16, shard0: &RunResult, run_id: &str) -> String {
    let body = scrape(port).expect("the agent still serves its series");
    let labels = format!("run_id=\"{run_id}\",shard=\"0/3\",job_id=\"1\",log_id=\"10\"");
    let responses = sum_of(&body, "loadbench_responses_total", &labels);
    assert_eq!(responses, shard0.stats.requests as f64, "{body}");
    let sent = sum_of(&body, "loadbench_sent_requests_total", &labels);
    assert_eq!(sent, shard0.stats.sent as f64, "{body}");
    let count = sum_of(&body, "loadbench_latency_seconds_count", &labels);
    assert_eq!(count, shard0.stats.latency.hist.len() as f64, "{body}");
    assert_eq!(sum_of(&body, "loadbench_running", &labels), 0.0, "{body}");
    body
}

/// Three agents pushing to `write` every second, the first also serving `listen`; their
/// executor addresses, the first's first.
fn start_agents(
    admin: &Admin,
    results: &Path,
    write: &str,
    listen: &str,
) -> (Vec<Agent>, Vec<String>) {
    let agents: Vec<Agent> = (0..3)
        .map(|i| {
            let mut extra = vec!["--prometheus-remote-write", write];
            extra.extend(["--prometheus-push-interval", "1s"]);
            if i == 0 {
                extra.extend(["--metrics-listen", listen]);
            }
            Agent::with_flags(TOKEN, &admin.url(), "127.0.0.1:0", results, &extra)
        })
        .collect();
    let mut executors = admin.executors(3);
    let first = executors
        .iter()
        .position(|e| {
            let agent_addr = e.trim_start_matches("http://").trim_end_matches('/');
            agents[0].stderr().contains(agent_addr)
        })
        .expect("agent 0 registered");
    executors.swap(0, first);
    (agents, executors)
}

/// The three shard results of job 1 and their run id; each pushed to `write`, none lost.
fn read_shards(results: &Path, write: &str) -> (Vec<RunResult>, String) {
    let files = shard_files(results, "job1-");
    assert_eq!(files.len(), 3, "{files:?}");
    let shards: Vec<RunResult> = files.iter().map(|f| read_run(f)).collect();
    let run_id = shards[0]
        .shards
        .as_ref()
        .expect("a shard result")
        .run_id
        .clone();
    for s in &shards {
        let pushed = s.remote_write.as_ref().expect("each result has its pushes");
        assert_eq!((pushed.lost, pushed.url.as_str()), (0, write), "{pushed:?}");
        assert!(pushed.sent >= 1, "{pushed:?}");
    }
    (shards, run_id)
}

/// The pushed series of `run_id` add up to `total`, one series per shard with its host.
fn check_pushed(prom: &Prometheus, run_id: &str, total: u64) {
    let q = format!(
        "sum by (run_id) (last_over_time(loadbench_responses_total{{run_id=\"{run_id}\"}}[10m]))"
    );
    let got = prom.settle(&q, total as f64, 30);
    assert_eq!(got, Some(total as f64), "{}", prom.log());
    let hosts = prom.query(&format!(
        "count by (shard, host) (last_over_time(loadbench_sent_requests_total{{run_id=\"{run_id}\"}}[10m]))"
    ));
    assert_eq!(
        hosts.map(|v| v.len()),
        Some(3),
        "one series per shard, with its host"
    );
}

/// The next trigger on `executor`: the finished one's series go, the new one's come.
fn check_next_trigger(admin: &Admin, executor: &str, url: &str, port: u16) {
    let t = trigger(2, 20, &format!("{url} -n 50 -c 1 -t 1"), (0, 1));
    assert_eq!(call(executor, "run", Some(TOKEN), &t)["code"], 200);
    assert_eq!(admin.callback_of(20, 60)["handleCode"], 200);
    let body = scrape(port).expect("the endpoint is up");
    assert!(!body.contains("log_id=\"10\""), "{body}");
    let responses = sum_of(&body, "loadbench_responses_total", "log_id=\"20\"");
    assert_eq!(responses, 50.0, "{body}");
}

#[test]
fn three_agents_push_one_triggers_shards_that_add_up_and_the_endpoint_serves_the_last() {
    if !have("prometheus") {
        return;
    }
    let _machine = loading();
    let server = backend();
    let admin = Admin::start();
    let prom = Prometheus::start(&[]);
    let results = tempdir("agent-metrics");
    let port = free_port();
    let write = prom.write_url();
    let (_agents, executors) = start_agents(&admin, &results, &write, &format!("127.0.0.1:{port}"));
    let url = format!("http://{}/", server.local_addr());
    // The open model: 300/s over the shards for 1200 requests, about 4 s.
    let params = format!("{url} --rate 300 -n 1200 -c 6 -t 1");
    let seen_running = trigger_and_watch(&admin, &executors, &params, port);
    assert!(seen_running, "a scrape during the trigger saw it running");
    let (shards, run_id) = read_shards(&results, &write);
    let merged = loadbench_model::merge_shards(&shards).expect("the shards merge");
    assert_eq!(merged.stats.requests, 1200);
    let shard0 = shards
        .iter()
        .find(|s| s.shards.as_ref().is_some_and(|r| r.shards[0].index == 0))
        .expect("shard 0");
    check_scrape_after(port, shard0, &run_id);
    check_pushed(&prom, &run_id, merged.stats.requests);
    check_next_trigger(&admin, &executors[0], &url, port);
}

/// `loadbench agent xxl-job` with `extra`: its exit code and stderr (within 60 s).
fn agent_refused(admin: &Admin, extra: &[&str]) -> (Option<i32>, String) {
    let results = tempdir("agent-refused");
    let mut agent = Agent::with_flags(TOKEN, &admin.url(), "127.0.0.1:0", &results, extra);
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = agent.child.try_wait().unwrap() {
            return (status.code(), agent.stderr());
        }
        assert!(
            Instant::now() < until,
            "the agent did not exit: {}",
            agent.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_agents_bad_metrics_flags_are_one_line_and_exit_2_before_it_registers() {
    let server = backend();
    let admin = Admin::start();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let in_use = taken.local_addr().unwrap().to_string();
    let closed = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let foreign = format!("http://{}/api/v1/write", server.local_addr());
    let cases: [(&[&str], &str); 6] = [
        (&["--metrics-listen", "0.0.0.0:0"], "--metrics-public"),
        (&["--metrics-listen", "nowhere"], "is not an address"),
        (&["--metrics-listen", &in_use], "cannot listen there"),
        (&["--prometheus-remote-write", &closed], "cannot connect"),
        (&["--prometheus-remote-write", &foreign], "404"),
        (&["--prometheus-push-interval", "10m"], "out of range"),
    ];
    for (extra, says) in cases {
        let (code, err) = agent_refused(&admin, extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let registered = admin
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("/api/registry"))
        .count();
    assert_eq!(registered, 0, "no agent registered: {:?}", admin.calls());
}

#[test]
fn a_push_interval_out_of_range_is_one_line_and_exit_2() {
    let server = backend();
    let url = format!("http://{}/", server.local_addr());
    for (value, says) in [
        ("500ms", "out of range"),
        ("6m", "out of range"),
        ("0s", "out of range"),
        ("soon", "--prometheus-push-interval"),
    ] {
        for command in [
            &["run", &url, "-d", "1s"][..],
            &["find-max", &url, "--slo", "p99<1s"][..],
        ] {
            let out = bin()
                .args(command)
                .args(["--prometheus-push-interval", value])
                .output()
                .unwrap();
            let (_, err) = text(&out);
            assert_eq!(out.status.code(), Some(2), "{value}: {err}");
            assert!(err.contains(says), "{value}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        }
    }
    assert_eq!(server.stats().total, 0, "no request reached the backend");
}

#[test]
fn a_find_max_whose_receiver_dies_saves_its_lost_pushes() {
    if !have("prometheus") {
        return;
    }
    let _machine = loading();
    let server = backend();
    let url = format!("http://{}/", server.local_addr());
    let mut prom = Prometheus::start(&[]);
    let dir = tempdir("find-max-push");
    let save = dir.join("search.json");
    let child = bin()
        .args(["find-max", &url, "--slo", "p99<1s", "--quiet", "-t", "1"])
        .args([
            "--start-rate",
            "100",
            "--max-rate",
            "400",
            "--step-duration",
            "2s",
        ])
        .args(["--max-steps", "3"])
        .args(["--prometheus-remote-write", &prom.write_url()])
        .args(["--prometheus-push-interval", "1s"])
        .arg("--save")
        .arg(&save)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs");
    let until = Instant::now() + Duration::from_secs(60);
    while server.stats().total == 0 {
        assert!(Instant::now() < until, "the search never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    prom.kill();
    let out = child.wait_with_output().unwrap();
    let (report, err) = text(&out);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let pushed = &json["remote_write"];
    assert_eq!(pushed["url"], prom.write_url().as_str(), "{pushed}");
    let n = |k: &str| {
        pushed[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {pushed}"))
    };
    assert!(n("lost") >= 1, "{pushed}");
    assert!(n("sent") + n("lost") <= n("pushes"), "{pushed}");
    let r: FindMaxResult = serde_json::from_value(json.clone()).unwrap();
    let line = format!("{} of {} pushes", n("lost"), n("pushes"));
    assert!(err.contains(&line), "stderr and the JSON agree: {err}");
    assert_eq!(r.remote_write.map(|p| p.lost), Some(n("lost")));
    let said = format!("remote write: {line} to {} were lost", prom.write_url());
    assert_eq!(
        report.matches(&said).count(),
        1,
        "once in the report: {report}"
    );
}

/// A bench of one upstream target at 200/s for 4 s.
const BENCH: &str = "name = \"p\"\nrounds = 1\ncooldown = \"1s\"\n\
    [[target]]\nname = \"up\"\nkind = \"upstream\"\n\
    [[load]]\nname = \"paced\"\nmodel = \"open\"\ntargets = [\"up\"]\n\
    rate = [200]\nduration = \"4s\"\n";

#[test]
fn a_bench_whose_receiver_dies_saves_its_lost_pushes_in_result_json() {
    if !have("prometheus") {
        return;
    }
    let _machine = loading();
    let mut prom = Prometheus::start(&[]);
    let dir = tempdir("bench-push");
    let file = dir.join("p.toml");
    std::fs::write(&file, BENCH).unwrap();
    let results = dir.join("results");
    let mut child = bin()
        .args(["bench", "--quiet"])
        .arg(&file)
        .arg("--results")
        .arg(&results)
        .args(["--prometheus-remote-write", &prom.write_url()])
        .args(["--prometheus-push-interval", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the loadbench binary runs");
    // The probe has passed once the run folder exists.
    let until = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(&results).map_or(true, |mut d| d.next().is_none()) {
        assert!(Instant::now() < until, "the bench never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    prom.kill();
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "the bench did not end");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    let run_dir = std::fs::read_dir(&results)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("result.json")).unwrap())
            .unwrap();
    let pushed = &json["remote_write"];
    assert_eq!(pushed["url"], prom.write_url().as_str(), "{pushed}");
    assert!(pushed["lost"].as_u64().is_some_and(|n| n >= 1), "{pushed}");
    assert!(
        json["rounds"].as_array().is_some_and(|r| r.len() == 1),
        "the bench is complete"
    );
}
